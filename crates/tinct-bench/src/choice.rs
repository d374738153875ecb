//! The named choices of the benches' parameters (`--cache data`,
//! `--code-order shuffled`, ...): each enum says its names and a one-line
//! description of each variant once, here in the library, so a front end
//! (the CLI's option parser, its `--help`) lists and parses them without a
//! copy of the enum.
//!
//! A variant's name is the one serde gives it (its `rename` or
//! `rename_all`), read by [`serde_name`]: the JSON, the CSV, the summary and
//! the command line cannot spell a variant two ways, and no enum repeats its
//! serde names in a hand-written `match`.

use serde::Serialize;

/// An enum whose variants are chosen by name.
pub trait Choice: Copy + Serialize + 'static {
    /// Every variant, in the order a help text lists them.
    const ALL: &'static [Self];

    /// The variant's name on the command line and in outputs: its serde
    /// name.
    fn name(self) -> &'static str {
        serde_name(&self)
    }

    /// One line saying what the variant does (for `--help`).
    fn doc(self) -> &'static str;

    /// The variant called `name`, if there is one.
    fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|c| c.name() == name)
    }

    /// The variant called `name`, or an error listing every name.
    fn parse_name(name: &str) -> Result<Self, String> {
        Self::from_name(name).ok_or_else(|| {
            let names: Vec<&str> = Self::ALL.iter().map(|c| c.name()).collect();
            format!("expected one of {}, found `{name}`", names.join(", "))
        })
    }
}

/// `Display` (the name) and `FromStr` ([`Choice::parse_name`]) of a
/// [`Choice`].
macro_rules! choice_text {
    ($choice:ty) => {
        impl std::fmt::Display for $choice {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str($crate::choice::Choice::name(*self))
            }
        }

        impl std::str::FromStr for $choice {
            type Err = String;

            fn from_str(name: &str) -> Result<Self, String> {
                <$choice as $crate::choice::Choice>::parse_name(name)
            }
        }
    };
}
pub(crate) use choice_text;

/// The name serde writes for `value`, a unit variant of an enum (its
/// `rename` or `rename_all` applied, read by the `serde_variant` crate):
/// how every enum of the reports names its variants in tables, JSON and
/// CSV.
///
/// # Panics
///
/// If `value` does not serialize as a unit variant: a type that is not a
/// field-less enum, a programming error the tests catch.
pub fn serde_name<T: Serialize>(value: &T) -> &'static str {
    serde_variant::to_variant_name(value)
        .unwrap_or_else(|_| panic!("{} is not a unit variant", std::any::type_name::<T>()))
}

#[cfg(test)]
mod tests {
    use super::{Choice, serde_name};
    use serde::Serialize;

    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
    #[serde(rename_all = "kebab-case")]
    enum Colour {
        Red,
        DarkBlue,
    }

    impl Choice for Colour {
        const ALL: &'static [Self] = &[Colour::Red, Colour::DarkBlue];
        fn doc(self) -> &'static str {
            "a colour"
        }
    }
    choice_text!(Colour);

    #[test]
    fn names_parse_back_and_unknown_names_are_refused_with_the_list() {
        for &c in Colour::ALL {
            assert_eq!(c.to_string().parse::<Colour>(), Ok(c));
        }
        assert_eq!(Colour::from_name("dark-blue"), Some(Colour::DarkBlue));
        assert_eq!(
            "Red".parse::<Colour>(),
            Err("expected one of red, dark-blue, found `Red`".to_string())
        );
    }

    /// Each of `values` is named as serde writes it.
    fn named_as_serde_writes<T: Serialize>(values: &[T]) {
        for value in values {
            assert_eq!(
                serde_json::to_value(value).unwrap(),
                serde_json::Value::from(serde_name(value))
            );
        }
    }

    #[test]
    fn every_enum_of_the_reports_is_named_as_serde_writes_it() {
        use crate::banks::{Allocation, kernels::Kernel};
        named_as_serde_writes(Colour::ALL);
        named_as_serde_writes(Kernel::ALL);
        named_as_serde_writes(crate::crpd::CacheKind::ALL);
        named_as_serde_writes(crate::crpd::CodeOrder::ALL);
        named_as_serde_writes(crate::isolation::reservation::ReservationChoice::ALL);
        named_as_serde_writes(&crate::isolation::Condition::ALL);
        named_as_serde_writes(&crate::coherence::placement::PlacementKind::ALL);
        named_as_serde_writes(&crate::wcet_profile::condition::Condition::ALL);
        named_as_serde_writes(&Allocation::TABLE2);
        named_as_serde_writes(&[
            Allocation::Default,
            Allocation::NodeLocal,
            Allocation::OwnBank,
        ]);
        assert_eq!(Allocation::NodeLocal.name(), "controller-local");
        assert_eq!(Colour::DarkBlue.name(), "dark-blue");
    }

    #[test]
    #[should_panic(expected = "not a unit variant")]
    fn a_value_that_is_no_unit_variant_has_no_name() {
        serde_name(&3u32);
    }
}
