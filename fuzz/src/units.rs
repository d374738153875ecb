//! Durations and sizes through `tinct_core::units::{parse_duration, parse_size}`.
//!
//! Every input is read as both. The parsers must agree with [`reference()`],
//! an exact big-integer reading of the documented syntax (a decimal number,
//! `_` allowed between digits, then a unit): the same strings accepted,
//! with the same value, and refused exactly when the value is not a whole
//! number of ns or bytes or does not fit in 64 bits. An accepted value
//! prints (`Display`) as a string that parses back to it.

use num_bigint::BigUint;
use tinct_core::units::{self, Bytes, Nanos};

/// The units of durations and their factors in ns (docs/FORMAT.md).
pub const DURATION_UNITS: &[(&str, u64)] = &[
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
];

/// The units of sizes and their factors in bytes (docs/FORMAT.md).
pub const SIZE_UNITS: &[(&str, u64)] = &[
    ("B", 1),
    ("KiB", 1 << 10),
    ("MiB", 1 << 20),
    ("GiB", 1 << 30),
    ("TiB", 1 << 40),
];

/// One kind of unit string: its units, its parser and its printer, in the
/// smallest unit (ns, bytes).
struct Kind {
    name: &'static str,
    units: &'static [(&'static str, u64)],
    parse: fn(&str) -> Option<u64>,
    print: fn(u64) -> String,
}

const KINDS: [Kind; 2] = [
    Kind {
        name: "duration",
        units: DURATION_UNITS,
        parse: |text| units::parse_duration(text).ok().map(|n| n.0),
        print: |ns| Nanos(ns).to_string(),
    },
    Kind {
        name: "size",
        units: SIZE_UNITS,
        parse: |text| units::parse_size(text).ok().map(|b| b.0),
        print: |bytes| Bytes(bytes).to_string(),
    },
];

/// The target.
pub fn check(data: &[u8]) {
    let Some(text) = crate::text(data) else {
        return;
    };
    for kind in &KINDS {
        let value = (kind.parse)(text);
        assert_eq!(
            value,
            reference(text, kind.units),
            "{} {text:?}: parsed or refused unlike the exact reading",
            kind.name
        );
        if let Some(value) = value {
            let printed = (kind.print)(value);
            assert_eq!(
                (kind.parse)(&printed),
                Some(value),
                "{} {text:?} = {value} prints as {printed:?}",
                kind.name
            );
        }
    }
}

/// The exact value of `text` in the smallest unit of `units`, or `None`
/// when it is not a number with one of `units`, not a whole number of the
/// smallest unit, or above `u64::MAX`.
///
/// Written from the syntax, not from the parser: the decimal number with
/// its point removed is one big integer `n` with `k` decimals, and the
/// value is `n · factor / 10^k`, exact or refused.
pub fn reference(text: &str, units: &[(&str, u64)]) -> Option<u64> {
    let text = text.trim();
    let number_end = text
        .char_indices()
        .find(|&(_, c)| !(c.is_ascii_digit() || c == '_' || c == '.'))
        .map_or(text.len(), |(i, _)| i);
    let (number, unit) = text.split_at(number_end);
    // A size may be a bare whole number of bytes (docs/FORMAT.md); a
    // duration may not (is `40` ms or ns?).
    let bare_bytes = units == SIZE_UNITS
        && unit.trim().is_empty()
        && !number.is_empty()
        && number.bytes().all(|b| b.is_ascii_digit());
    let factor = match units.iter().find(|(name, _)| *name == unit.trim()) {
        Some(&(_, factor)) => factor,
        None if bare_bytes => 1,
        None => return None,
    };
    let number: String = number.chars().filter(|&c| c != '_').collect();
    let (whole, decimals) = number.split_once('.').unwrap_or((&number, ""));
    if decimals.contains('.') || whole.len() + decimals.len() == 0 {
        return None;
    }
    let digits = format!("{whole}{decimals}");
    let n = BigUint::parse_bytes(digits.as_bytes(), 10)?;
    let scale = BigUint::from(10u32).pow(u32::try_from(decimals.len()).ok()?);
    let scaled = n * factor;
    if scaled.clone() % &scale != BigUint::ZERO {
        return None;
    }
    u64::try_from(scaled / scale).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_reads_the_documented_syntax() {
        assert_eq!(reference("45.3us", DURATION_UNITS), Some(45_300));
        assert_eq!(reference(" 1_000 ms ", DURATION_UNITS), Some(1_000_000_000));
        assert_eq!(reference(".5µs", DURATION_UNITS), Some(500));
        assert_eq!(reference("1.5KiB", SIZE_UNITS), Some(1536));
        assert_eq!(reference(" 4096 ", SIZE_UNITS), Some(4096));
        assert_eq!(reference("4096", DURATION_UNITS), None);
        assert_eq!(reference("4_096", SIZE_UNITS), None);
        assert_eq!(reference("40.5", SIZE_UNITS), None);
        assert_eq!(
            reference("18446744073709551615ns", DURATION_UNITS),
            Some(u64::MAX)
        );
        assert_eq!(reference("18446744073709551616ns", DURATION_UNITS), None);
        assert_eq!(reference("1.0001ns", DURATION_UNITS), None);
        assert_eq!(
            reference(
                "0.000000000000000000000000000000000000000000000000001s",
                DURATION_UNITS
            ),
            None
        );
        assert_eq!(reference("1..2ms", DURATION_UNITS), None);
        assert_eq!(reference(".ms", DURATION_UNITS), None);
        assert_eq!(reference("12", DURATION_UNITS), None);
        assert_eq!(reference("12MB", SIZE_UNITS), None);
    }

    #[test]
    fn the_check_passes_on_accepted_and_refused_strings() {
        for text in [
            "45.3us",
            "4KiB",
            "junk",
            "1.5s",
            "0.5B",
            "",
            "9999999999999999999999s",
        ] {
            check(text.as_bytes());
        }
    }
}
