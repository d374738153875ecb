//! Durations and sizes as Python callers give them: a string with a unit
//! (`"45.3us"`, `"18MiB"`, parsed exactly by tinct-core's units) or a whole
//! number of nanoseconds / bytes. Floats are refused: every time inside
//! tinct is an integer number of nanoseconds.

use crate::errors::bad_argument;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyInt, PyString};
use tinct_core::units::{UnitError, parse_duration, parse_size};

/// A whole number in 0..=2^64 − 1, or `None` if `value` is not an int.
fn whole(value: &Bound<'_, PyAny>, field: &str, unit: &str) -> PyResult<Option<u64>> {
    if value.is_instance_of::<PyBool>() || !value.is_instance_of::<PyInt>() {
        return Ok(None);
    }
    let wide: i128 = value.extract().map_err(|_| {
        bad_argument(
            field,
            format!("{field}: expected whole {unit} from 0 to 2^64 − 1, found {value}"),
        )
    })?;
    u64::try_from(wide).map(Some).map_err(|_| {
        bad_argument(
            field,
            format!("{field}: expected whole {unit} from 0 to 2^64 − 1, found {wide}"),
        )
    })
}

/// A count given by the caller (copies, threads, partitions): any int,
/// numpy's included (read through `__index__`, never a float or a bool),
/// from `least` to `most`. Anything else, a negative number or one past
/// `most` included, is `BadInput` naming `field`, the range and `why` the
/// range is what it is (if not empty), never Python's OverflowError or
/// TypeError.
pub fn count(
    value: &Bound<'_, PyAny>,
    field: &str,
    (least, most): (u64, u64),
    why: &str,
) -> PyResult<u64> {
    let refused = |found: String| {
        let why = if why.is_empty() {
            String::new()
        } else {
            format!(" ({why})")
        };
        bad_argument(
            field,
            format!("{field}: expected a whole number from {least} to {most}{why}, found {found}"),
        )
    };
    let shown = || value.repr().map_or_else(|_| "?".into(), |r| r.to_string());
    if value.is_instance_of::<PyBool>() {
        return Err(refused(shown()));
    }
    let index = value
        .call_method0("__index__")
        .map_err(|_| refused(shown()))?;
    let wide: i128 = index.extract().map_err(|_| refused(shown()))?;
    u64::try_from(wide)
        .ok()
        .filter(|n| (least..=most).contains(n))
        .ok_or_else(|| refused(wide.to_string()))
}

/// A quantity from a string with a unit (read by `parse`) or an int.
fn quantity(
    value: &Bound<'_, PyAny>,
    field: &str,
    unit: &str,
    expected: &str,
    parse: fn(&str) -> Result<u64, UnitError>,
) -> PyResult<u64> {
    if let Some(whole) = whole(value, field, unit)? {
        return Ok(whole);
    }
    let Ok(text) = value.cast::<PyString>() else {
        return Err(bad_argument(
            field,
            format!("{field}: expected {expected}, found {}", value.repr()?),
        ));
    };
    let text = text.to_cow()?;
    parse(&text).map_err(|e| {
        bad_argument(
            field,
            format!("{field}: expected {expected}, found \"{text}\" ({e})"),
        )
    })
}

/// A duration in nanoseconds from `"10ms"` or an int of nanoseconds.
pub fn duration(value: &Bound<'_, PyAny>, field: &str) -> PyResult<u64> {
    quantity(
        value,
        field,
        "nanoseconds",
        "a duration such as \"10ms\" or \"45.3us\" (ns, us, ms, s) or whole nanoseconds",
        |text| parse_duration(text).map(|d| d.0),
    )
}

/// A size in bytes from `"18MiB"` or an int of bytes.
pub fn size(value: &Bound<'_, PyAny>, field: &str) -> PyResult<u64> {
    quantity(
        value,
        field,
        "bytes",
        "a size such as \"18MiB\" (B, KiB, MiB, GiB) or whole bytes",
        |text| parse_size(text).map(|b| b.0),
    )
}

/// `parse_duration` for Python: `"45.3us"` → 45300.
#[pyfunction]
pub fn parse_duration_ns(value: &Bound<'_, PyAny>) -> PyResult<u64> {
    duration(value, "duration")
}

/// `parse_size` for Python: `"18MiB"` → 18874368.
#[pyfunction]
pub fn parse_size_bytes(value: &Bound<'_, PyAny>) -> PyResult<u64> {
    size(value, "size")
}
