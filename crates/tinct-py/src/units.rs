//! Durations and sizes as Python callers give them: a string with a unit
//! (`"45.3us"`, `"18MiB"`, parsed exactly by tinct-core's units) or a whole
//! number of nanoseconds / bytes. Floats are refused: every time inside
//! tinct is an integer number of nanoseconds.

use crate::errors::bad_argument;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyInt, PyString};
use tinct_core::units::{parse_duration, parse_size};

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

/// A duration in nanoseconds from `"10ms"` or an int of nanoseconds.
pub fn duration(value: &Bound<'_, PyAny>, field: &str) -> PyResult<u64> {
    if let Some(ns) = whole(value, field, "nanoseconds")? {
        return Ok(ns);
    }
    let expected = "a duration such as \"10ms\" or \"45.3us\" (ns, us, ms, s) or whole nanoseconds";
    match value.cast::<PyString>() {
        Ok(text) => {
            let text = text.to_cow()?;
            let text = text.as_ref();
            parse_duration(text).map(|d| d.0).map_err(|e| {
                bad_argument(
                    field,
                    format!("{field}: expected {expected}, found \"{text}\" ({e})"),
                )
            })
        }
        Err(_) => Err(bad_argument(
            field,
            format!("{field}: expected {expected}, found {}", value.repr()?),
        )),
    }
}

/// A size in bytes from `"18MiB"` or an int of bytes.
pub fn size(value: &Bound<'_, PyAny>, field: &str) -> PyResult<u64> {
    if let Some(bytes) = whole(value, field, "bytes")? {
        return Ok(bytes);
    }
    let expected = "a size such as \"18MiB\" (B, KiB, MiB, GiB) or whole bytes";
    match value.cast::<PyString>() {
        Ok(text) => {
            let text = text.to_cow()?;
            let text = text.as_ref();
            parse_size(text).map(|b| b.0).map_err(|e| {
                bad_argument(
                    field,
                    format!("{field}: expected {expected}, found \"{text}\" ({e})"),
                )
            })
        }
        Err(_) => Err(bad_argument(
            field,
            format!("{field}: expected {expected}, found {}", value.repr()?),
        )),
    }
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
