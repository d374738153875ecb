//! The named choices of the benches' parameters (`--cache data`,
//! `--code-order shuffled`, ...): each enum says its names and a one-line
//! description of each variant once, here in the library, so a front end
//! (the CLI's option parser, its `--help`) lists and parses them without a
//! copy of the enum.

/// An enum whose variants are chosen by name.
pub trait Choice: Copy + Sized + 'static {
    /// Every variant, in the order a help text lists them.
    const ALL: &'static [Self];

    /// The variant's name on the command line and in outputs.
    fn name(self) -> &'static str;

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

#[cfg(test)]
mod tests {
    use super::Choice;

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Colour {
        Red,
        DarkBlue,
    }

    impl Choice for Colour {
        const ALL: &'static [Self] = &[Colour::Red, Colour::DarkBlue];
        fn name(self) -> &'static str {
            match self {
                Colour::Red => "red",
                Colour::DarkBlue => "dark-blue",
            }
        }
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
}
