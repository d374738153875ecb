//! Units: time in integer nanoseconds, memory in bytes.
//!
//! Both parse from and format to the human strings of task-set files
//! (`"45.3us"`, `"11.94ms"`, `"18MiB"`). Parsing is exact decimal arithmetic,
//! never floating point, and formatting is exact too, so a value survives a
//! write and a re-read unchanged. Every reader of a duration or a size in
//! tinct is [`parse_duration`] or [`parse_size`]: task-set files, rt-app
//! files, the command line, Python, and the shim's `TINCT_POOL` and
//! `TINCT_STACK_COLORED` (tinct-core re-exports this module as
//! `tinct_core::units`).
//!
//! Reports print times for people, rounded: [`ms`] is the one rule for a
//! time in milliseconds (two decimals, as kim2013 prints them), so a run's
//! terminal verdict, its HTML page, the explanations of late jobs and the
//! shim's summary print a number alike; [`ms_f64`] is the one conversion
//! for charts.
//!
//! ```
//! use tinct_base::units::{Bytes, Nanos, parse_duration, parse_size};
//!
//! assert_eq!(parse_duration("11.94ms"), Ok(Nanos(11_940_000)));
//! assert_eq!(parse_size("1.5KiB"), Ok(Bytes(1536)));
//! assert_eq!(Nanos(45_300).to_string(), "45.3us");
//! ```

use std::fmt;

/// A span of time in nanoseconds.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(transparent))]
pub struct Nanos(pub u64);

/// An amount of memory in bytes.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(transparent))]
pub struct Bytes(pub u64);

impl Nanos {
    /// Zero time.
    pub const ZERO: Nanos = Nanos(0);

    /// From microseconds.
    pub const fn from_us(us: u64) -> Nanos {
        Nanos(us * 1_000)
    }

    /// From milliseconds.
    pub const fn from_ms(ms: u64) -> Nanos {
        Nanos(ms * 1_000_000)
    }

    /// The value in milliseconds, for reporting only ([`ms_f64`]).
    pub fn as_ms_f64(self) -> f64 {
        ms_f64(self.0)
    }
}

impl Bytes {
    /// From kibibytes.
    pub const fn from_kib(k: u64) -> Bytes {
        Bytes(k << 10)
    }

    /// From mebibytes.
    pub const fn from_mib(m: u64) -> Bytes {
        Bytes(m << 20)
    }
}

/// Why a duration or size string could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnitError {
    /// The string has no number in front.
    #[error("no number in front of the unit")]
    NoNumber,
    /// The unit is missing or not one we know.
    #[error("unknown or missing unit `{0}` (expected one of {1})")]
    BadUnit(String, &'static str),
    /// More decimals than the unit can hold exactly.
    #[error("too many decimals: {0} cannot be expressed exactly in {1}")]
    TooPrecise(String, &'static str),
    /// The value does not fit in 64 bits; the largest value of its kind.
    #[error("value too large: the largest is {0}")]
    Overflow(&'static str),
}

const DURATION_UNITS: &[(&str, u64)] = &[
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
];
const DURATION_UNIT_NAMES: &str = "ns, us, ms, s";
/// The largest duration: 2^64 − 1 ns.
const LARGEST_DURATION: &str = "18446744073.709551615s (2^64 − 1 ns, about 584 years)";

const SIZE_UNITS: &[(&str, u64)] = &[
    ("B", 1),
    ("KiB", 1 << 10),
    ("MiB", 1 << 20),
    ("GiB", 1 << 30),
    ("TiB", 1 << 40),
];
const SIZE_UNIT_NAMES: &str = "B, KiB, MiB, GiB, TiB";
/// The largest size: 2^64 − 1 bytes.
const LARGEST_SIZE: &str = "18446744073709551615B (2^64 − 1 bytes, 16 EiB)";

/// Splits `"11.94ms"` into the decimal number and the unit, then scales the
/// number by the unit's factor exactly.
fn parse_scaled(
    text: &str,
    units: &[(&str, u64)],
    names: &'static str,
    largest: &'static str,
) -> Result<u64, UnitError> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let unit = unit.trim();
    let number: String = number.chars().filter(|&c| c != '_').collect();
    if number.is_empty() || number == "." {
        return Err(UnitError::NoNumber);
    }
    let factor = units
        .iter()
        .find(|(name, _)| *name == unit)
        .map(|&(_, f)| f)
        .ok_or_else(|| UnitError::BadUnit(unit.to_string(), names))?;
    let (int_part, frac_part) = match number.split_once('.') {
        Some((i, f)) => (i, f),
        None => (number.as_str(), ""),
    };
    if frac_part.contains('.') {
        return Err(UnitError::NoNumber);
    }
    let int: u64 = if int_part.is_empty() {
        0
    } else {
        int_part.parse().map_err(|_| UnitError::Overflow(largest))?
    };
    let mut value = int
        .checked_mul(factor)
        .ok_or(UnitError::Overflow(largest))?;
    let frac_digits = frac_part.trim_end_matches('0');
    if !frac_digits.is_empty() {
        let extra = fraction_times(frac_digits, factor)
            .ok_or_else(|| UnitError::TooPrecise(text.to_string(), names_smallest(units)))?;
        value = value
            .checked_add(extra)
            .ok_or(UnitError::Overflow(largest))?;
    }
    Ok(value)
}

/// `0.decimals × factor` exactly, or `None` when that is not a whole number.
///
/// With k decimals forming the number n, the value is n · factor / 10^k.
/// Cancelling gcd(10^k, factor) leaves n · f / d: whole exactly when d
/// divides n, and then (n / d) · f < factor. n itself can exceed any
/// integer type, so n / d and n mod d are built digit by digit.
///
/// `decimals` has no trailing zero, so n is not a multiple of 10 and d can
/// only divide it when d is a power of 2 alone or of 5 alone. Every unit
/// factor is 2^a · 5^b with a, b ≤ 40, and d = 2^(k−a)⁺ · 5^(k−b)⁺, so that
/// needs k ≤ 40 and d ≤ 5^40 < 10^28: a larger d never divides n, and
/// stopping there keeps every step below 2^128.
fn fraction_times(decimals: &str, factor: u64) -> Option<u64> {
    const NEVER_DIVIDES: u128 = 10u128.pow(28);
    let (mut f, mut d) = (u128::from(factor), 1u128);
    for _ in decimals.bytes() {
        // gcd(10, f)
        let common = if f.is_multiple_of(10) {
            10
        } else if f.is_multiple_of(5) {
            5
        } else if f.is_multiple_of(2) {
            2
        } else {
            1
        };
        f /= common;
        d *= 10 / common;
        if d >= NEVER_DIVIDES {
            return None;
        }
    }
    let (mut quotient, mut remainder) = (0u128, 0u128);
    for digit in decimals.bytes() {
        let partial = remainder * 10 + u128::from(digit - b'0');
        quotient = quotient * 10 + partial / d;
        remainder = partial % d;
    }
    (remainder == 0).then(|| u64::try_from(quotient * f).ok())?
}

fn names_smallest(units: &[(&str, u64)]) -> &'static str {
    if units[0].0 == "ns" {
        "whole nanoseconds"
    } else {
        "whole bytes"
    }
}

/// Parses a duration such as `"45.3us"`, `"11.94ms"`, `"2s"` or `"800ns"`.
pub fn parse_duration(text: &str) -> Result<Nanos, UnitError> {
    parse_scaled(text, DURATION_UNITS, DURATION_UNIT_NAMES, LARGEST_DURATION).map(Nanos)
}

/// Parses a size such as `"18MiB"`, `"4KiB"`, `"1GiB"`, `"4096B"`, or a
/// whole number of bytes, `"4096"` (sizes have one base unit, so a bare
/// number is not ambiguous, as it would be for a duration).
pub fn parse_size(text: &str) -> Result<Bytes, UnitError> {
    let digits = text.trim();
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        return parse_scaled(
            &format!("{digits}B"),
            SIZE_UNITS,
            SIZE_UNIT_NAMES,
            LARGEST_SIZE,
        )
        .map(Bytes);
    }
    parse_scaled(text, SIZE_UNITS, SIZE_UNIT_NAMES, LARGEST_SIZE).map(Bytes)
}

/// Writes `value / factor` exactly, trimming trailing zeros of the fraction.
fn write_exact(f: &mut fmt::Formatter<'_>, value: u64, factor: u64, unit: &str) -> fmt::Result {
    let int = value / factor;
    let mut frac = value % factor;
    if frac == 0 {
        return write!(f, "{int}{unit}");
    }
    let mut digits = String::new();
    let mut scale = factor;
    while frac != 0 {
        scale /= 10;
        digits.push(char::from(b'0' + (frac / scale) as u8));
        frac %= scale;
    }
    write!(f, "{int}.{digits}{unit}")
}

impl fmt::Display for Nanos {
    /// Exact and re-readable: `45300ns` prints as `45.3us`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.0;
        let (factor, unit) = if v >= 1_000_000_000 {
            (1_000_000_000, "s")
        } else if v >= 1_000_000 {
            (1_000_000, "ms")
        } else if v >= 1_000 {
            (1_000, "us")
        } else {
            (1, "ns")
        };
        write_exact(f, v, factor, unit)
    }
}

impl fmt::Display for Bytes {
    /// Exact and re-readable: the largest binary unit that divides the value.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.0;
        for &(unit, factor) in SIZE_UNITS.iter().rev() {
            if v >= factor && v.is_multiple_of(factor) {
                return write!(f, "{}{unit}", v / factor);
            }
        }
        write!(f, "{v}B")
    }
}

/// Nanoseconds in a millisecond.
pub const NS_PER_MS: u64 = 1_000_000;

/// Nanoseconds in a microsecond.
pub const NS_PER_US: u64 = 1_000;

/// `ns` in milliseconds as a float, for charts and reports only (never
/// read back: files keep integer nanoseconds).
pub fn ms_f64(ns: u64) -> f64 {
    ns as f64 / NS_PER_MS as f64
}

/// `ns` in milliseconds with two decimals, as kim2013 prints them
/// (`12.35`): tinct's one rule for a time in milliseconds, in every text
/// and page of every crate. The number alone, for table cells under an
/// `ms` header; [`ms_with_unit`] says the unit.
///
/// ```
/// use tinct_base::units::{ms, ms_with_unit};
///
/// assert_eq!(ms(11_940_000), "11.94");
/// assert_eq!(ms(150_000), "0.15");
/// assert_eq!(ms_with_unit(4_000_000), "4.00 ms");
/// ```
pub fn ms(ns: u64) -> String {
    format!("{:.2}", ms_f64(ns))
}

/// [`ms`] and its unit, for a time in a sentence: `12.35 ms`.
pub fn ms_with_unit(ns: u64) -> String {
    format!("{} ms", ms(ns))
}

/// `ns` in microseconds with one decimal (`45.3`): the rule for times
/// too short for [`ms`] to show (refill times, overheads).
pub fn us(ns: u64) -> String {
    format!("{:.1}", ns as f64 / NS_PER_US as f64)
}

/// Bytes in binary units with at most two decimals, for people (tinct's
/// one such formatter; [`Bytes`] is the exact, re-readable one):
/// `100 B`, `32 KiB`, `1.25 MiB`, `1.5 GiB`.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    let number = format!("{value:.2}");
    let number = number.trim_end_matches('0').trim_end_matches('.');
    format!("{number} {}", UNITS[unit])
}

/// Integer division rounding up.
pub const fn div_ceil_u64(a: u64, b: u64) -> u64 {
    a.div_ceil(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_bytes_units() {
        assert_eq!(human_bytes(100), "100 B");
        assert_eq!(human_bytes(32 << 10), "32 KiB");
        assert_eq!(human_bytes(3 << 19), "1.5 MiB");
        assert_eq!(human_bytes(1 << 30), "1 GiB");
        assert_eq!(human_bytes(3 << 29), "1.5 GiB");
        assert_eq!(human_bytes(1280 << 10), "1.25 MiB");
        assert_eq!(human_bytes(0), "0 B");
    }

    use proptest::prelude::*;

    #[test]
    fn parses_paper_values_exactly() {
        assert_eq!(parse_duration("45.3us"), Ok(Nanos(45_300)));
        assert_eq!(parse_duration("11.94ms"), Ok(Nanos(11_940_000)));
        assert_eq!(parse_duration("40ms"), Ok(Nanos(40_000_000)));
        assert_eq!(parse_duration("1.5s"), Ok(Nanos(1_500_000_000)));
        assert_eq!(parse_duration("800ns"), Ok(Nanos(800)));
        assert_eq!(parse_duration(".5ms"), Ok(Nanos(500_000)));
        assert_eq!(parse_size("18MiB"), Ok(Bytes(18 << 20)));
        assert_eq!(parse_size("1.5KiB"), Ok(Bytes(1536)));
        assert_eq!(parse_size("4096B"), Ok(Bytes(4096)));
        // A whole number of bytes, as docs/FORMAT.md says (`--pool 4096`
        // was once refused); not a fraction of a byte.
        assert_eq!(parse_size("4096"), Ok(Bytes(4096)));
        assert!(parse_size("40.5").is_err());
        assert!(parse_size("99999999999999999999").is_err());
    }

    #[test]
    fn rejects_bad_strings() {
        assert!(matches!(parse_duration("40"), Err(UnitError::BadUnit(..))));
        assert!(matches!(
            parse_duration("40 min"),
            Err(UnitError::BadUnit(..))
        ));
        assert!(matches!(parse_duration("ms"), Err(UnitError::NoNumber)));
        assert!(matches!(
            parse_duration("1.0001ns"),
            Err(UnitError::TooPrecise(..))
        ));
        assert!(matches!(parse_size("18MB"), Err(UnitError::BadUnit(..))));
        assert!(matches!(
            parse_duration("99999999999999999999s"),
            Err(UnitError::Overflow(_))
        ));
    }

    /// Regression: "value too large" did not say what the limit is.
    #[test]
    fn too_large_states_the_largest_value() {
        let e = parse_duration("99999999999s").unwrap_err();
        assert_eq!(
            e.to_string(),
            "value too large: the largest is 18446744073.709551615s (2^64 − 1 ns, about 584 years)"
        );
        assert_eq!(
            parse_duration("18446744073.709551615s"),
            Ok(Nanos(u64::MAX))
        );
        assert!(matches!(
            parse_duration("18446744073.709551616s"),
            Err(UnitError::Overflow(_))
        ));
        let e = parse_size("16777216TiB").unwrap_err();
        assert_eq!(
            e.to_string(),
            "value too large: the largest is 18446744073709551615B (2^64 − 1 bytes, 16 EiB)"
        );
        assert_eq!(parse_size("18446744073709551615"), Ok(Bytes(u64::MAX)));
    }

    /// The cases of the shim's size reader (`TINCT_POOL`), which was a copy
    /// of this one: spaces around and inside, `_` between digits, fractions
    /// that come to whole bytes, and every refusal with its reason.
    #[test]
    fn sizes_as_the_shim_reads_them() {
        assert_eq!(parse_size("512MiB"), Ok(Bytes(512 << 20)));
        assert_eq!(parse_size(" 1.5GiB "), Ok(Bytes(3 << 29)));
        assert_eq!(parse_size("1_024 KiB"), Ok(Bytes(1 << 20)));
        assert_eq!(parse_size(".5KiB"), Ok(Bytes(512)));
        assert!(matches!(
            parse_size("1.0001KiB"),
            Err(UnitError::TooPrecise(..))
        ));
        assert!(matches!(parse_size("16EiB"), Err(UnitError::BadUnit(..))));
        assert!(matches!(parse_size("MiB"), Err(UnitError::NoNumber)));
        assert!(parse_size("1.2.3B").is_err());
        assert!(matches!(
            parse_size("20000000TiB"),
            Err(UnitError::Overflow(_))
        ));
        assert_eq!(parse_size(&format!("{}B", u64::MAX)), Ok(Bytes(u64::MAX)));
        for bytes in [1, 4096, 4097, 3 << 19, 512 << 20, u64::MAX] {
            assert_eq!(parse_size(&Bytes(bytes).to_string()), Ok(Bytes(bytes)));
        }
        assert_eq!(Bytes(3 << 19).to_string(), "1536KiB");
    }

    #[test]
    fn formats_exactly() {
        assert_eq!(Nanos(45_300).to_string(), "45.3us");
        assert_eq!(Nanos(11_940_000).to_string(), "11.94ms");
        assert_eq!(Nanos(1_000_000_001).to_string(), "1.000000001s");
        assert_eq!(Bytes(18 << 20).to_string(), "18MiB");
        assert_eq!(Bytes(1536).to_string(), "1536B");
    }

    /// The one rule for a time in ms: two decimals, rounded (kim2013's
    /// tables print 12.30, 25.72, 101.36 and 273.78 ms), zero padded, the
    /// unit only where asked.
    #[test]
    fn milliseconds_print_with_two_decimals() {
        assert_eq!(ms(0), "0.00");
        assert_eq!(ms(12_300_000), "12.30");
        assert_eq!(ms(273_780_000), "273.78");
        assert_eq!(ms(101_356_000), "101.36", "rounded, not cut");
        assert_eq!(ms(4_000), "0.00", "below 5 µs rounds to zero");
        assert_eq!(ms(6_000), "0.01");
        assert_eq!(ms(u64::MAX), "18446744073709.55");
        assert_eq!(ms_with_unit(150_000), "0.15 ms");
        assert_eq!(ms_f64(11_940_000), 11.94);
        assert_eq!(Nanos(11_940_000).as_ms_f64(), ms_f64(11_940_000));
        assert_eq!(us(45_300), "45.3");
        assert_eq!(us(45_349), "45.3");
        assert_eq!(us(999), "1.0");
    }

    proptest! {
        #[test]
        fn duration_round_trips(v in 0u64..u64::MAX / 2) {
            prop_assert_eq!(parse_duration(&Nanos(v).to_string()), Ok(Nanos(v)));
        }

        #[test]
        fn size_round_trips(v in 0u64..u64::MAX / 2) {
            prop_assert_eq!(parse_size(&Bytes(v).to_string()), Ok(Bytes(v)));
        }
    }
}
