//! Inputs the fuzz targets (fuzz/, `scripts/fuzz.sh`) found, with the
//! right outcome.

use tinct_core::units::{Bytes, Nanos, UnitError, parse_duration, parse_size};

/// fuzz target `units`: 28 decimals times 10^9 overflowed u128 (a panic in
/// debug builds, a wrapped and possibly wrong value in release).
#[test]
fn many_decimals_are_refused_not_wrapped() {
    assert!(matches!(
        parse_duration("1.67400700000000999999909999999999s"),
        Err(UnitError::TooPrecise(..))
    ));
    assert!(matches!(
        parse_size("0.99999999999999999999999999999999999999TiB"),
        Err(UnitError::TooPrecise(..))
    ));
}

/// The exact values behind long decimals are read, however long: 1 B is
/// 2^-40 TiB, 40 decimals; 4 B needed 38 decimals whose product with 2^40
/// passes 2^128.
#[test]
fn long_exact_decimals_are_read_exactly() {
    assert_eq!(
        parse_size("0.0000000000009094947017729282379150390625TiB"),
        Ok(Bytes(1))
    );
    assert_eq!(
        parse_size("0.00000000000363797880709171295166015625TiB"),
        Ok(Bytes(4))
    );
    assert_eq!(
        parse_duration("1.000000001000000000000000000000000000000000000s"),
        Ok(Nanos(1_000_000_001))
    );
    assert_eq!(parse_duration("0.001us"), Ok(Nanos(1)));
    assert!(matches!(
        parse_duration(&format!("0.{}1s", "0".repeat(100))),
        Err(UnitError::TooPrecise(..))
    ));
}
