//! Durations and sizes as Python callers give them: a string with a unit
//! (`"45.3us"`, `"18MiB"`, parsed exactly by tinct-core's units) or a whole
//! number of nanoseconds / bytes. Floats are refused: every time inside
//! tinct is an integer number of nanoseconds.
//!
//! Also the one reading of every other plain argument (counts, text,
//! paths, numbers, flags): a value of the wrong type, text UTF-8 cannot
//! hold or a number out of range is `BadInput` naming the argument, what
//! was expected and what was found, never Python's TypeError,
//! OverflowError or UnicodeEncodeError.

use crate::errors::bad_argument;
use crate::json::{is_numpy, shown, type_name};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyInt, PyString};
use std::path::PathBuf;
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
pub(crate) fn count(
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

/// `BadInput` for `field`: `expected`, found `value` (its repr and type).
fn refused(field: &str, expected: &str, value: &Bound<'_, PyAny>) -> PyErr {
    refused_as(
        field,
        expected,
        format!("{} ({})", shown(value), type_name(value)),
    )
}

fn refused_as(field: &str, expected: &str, found: String) -> PyErr {
    crate::errors::BadInput::new_err((
        format!("{field}: expected {expected}, found {found}"),
        Option::<String>::None,
        Option::<usize>::None,
        field.to_string(),
        expected.to_string(),
        found,
    ))
}

/// `found` for a str holding a lone surrogate (which no UTF-8 text holds).
fn surrogate(value: &Bound<'_, PyAny>) -> String {
    format!(
        "{} (a lone surrogate, which UTF-8 cannot hold; from undecodable bytes?)",
        shown(value)
    )
}

/// A text argument (`str` only; `expected` says what it should say, e.g.
/// `"\"cata\", \"bfd\" or \"wfd\""`): anything else, bytes included,
/// or a str with a lone surrogate is `BadInput` naming `field`.
pub(crate) fn text(value: &Bound<'_, PyAny>, field: &str, expected: &str) -> PyResult<String> {
    let Ok(string) = value.cast::<PyString>() else {
        return Err(refused(field, &format!("{expected} (a str)"), value));
    };
    string
        .to_cow()
        .map(|t| t.into_owned())
        .map_err(|_| refused_as(field, &format!("{expected} (a str)"), surrogate(value)))
}

/// Lines of text (a list or tuple of str, e.g. `header=`), each read by
/// [`text`] as `field[i]`.
pub(crate) fn lines(value: &Bound<'_, PyAny>, field: &str) -> PyResult<Vec<String>> {
    let expected = "a list of lines (str)";
    if value.is_instance_of::<PyString>() || !value.hasattr("__iter__").unwrap_or(false) {
        return Err(refused(field, expected, value));
    }
    let items = value
        .try_iter()
        .map_err(|_| refused(field, expected, value))?;
    items
        .enumerate()
        .map(|(i, item)| text(&item?, &format!("{field}[{i}]"), "a line"))
        .collect()
}

/// A path argument: a str or an `os.PathLike` giving one (a name with
/// undecodable bytes, read by `os.fsdecode`, included). Bytes, other
/// types and lone surrogates that are no file-system bytes are `BadInput`
/// naming `field`.
pub(crate) fn path(value: &Bound<'_, PyAny>, field: &str) -> PyResult<PathBuf> {
    let expected = "a path (a str or os.PathLike)";
    let fspath = value
        .py()
        .import("os")?
        .call_method1("fspath", (value,))
        .map_err(|_| refused(field, expected, value))?;
    if !fspath.is_instance_of::<PyString>() {
        return Err(refused(field, expected, &fspath));
    }
    fspath
        .extract::<PathBuf>()
        .map_err(|_| refused_as(field, expected, surrogate(&fspath)))
}

/// A number argument (a float, an int or numpy's; never a bool or a str),
/// as Python's `float()` reads it; `BadInput` naming `field` else.
pub(crate) fn number(value: &Bound<'_, PyAny>, field: &str) -> PyResult<f64> {
    let expected = "a number (a float or an int)";
    if value.is_instance_of::<PyBool>() || value.is_instance_of::<PyString>() {
        return Err(refused(field, expected, value));
    }
    value.extract::<f64>().map_err(|_| {
        if value.is_instance_of::<PyInt>() {
            refused_as(
                field,
                expected,
                format!("{} (an int beyond any float)", shown(value)),
            )
        } else {
            refused(field, expected, value)
        }
    })
}

/// A flag argument: `True` or `False` (numpy's bool included); anything
/// else, an int or a str such as "yes" included, is `BadInput` naming
/// `field`.
pub(crate) fn flag(value: &Bound<'_, PyAny>, field: &str) -> PyResult<bool> {
    if let Ok(flag) = value.cast::<PyBool>() {
        return Ok(flag.is_true());
    }
    let kind = type_name(value);
    if is_numpy(value)
        && (kind == "numpy.bool" || kind == "numpy.bool_")
        && let Ok(flag) = value.extract::<bool>()
    {
        return Ok(flag);
    }
    Err(refused(field, "True or False", value))
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
    let text = self::text(text.as_any(), field, expected)?;
    parse(&text).map_err(|e| {
        bad_argument(
            field,
            format!("{field}: expected {expected}, found \"{text}\" ({e})"),
        )
    })
}

/// A duration in nanoseconds from `"10ms"` or an int of nanoseconds.
pub(crate) fn duration(value: &Bound<'_, PyAny>, field: &str) -> PyResult<u64> {
    quantity(
        value,
        field,
        "nanoseconds",
        "a duration such as \"10ms\" or \"45.3us\" (ns, us, ms, s) or whole nanoseconds",
        |text| parse_duration(text).map(|d| d.0),
    )
}

/// A size in bytes from `"18MiB"` or an int of bytes.
pub(crate) fn size(value: &Bound<'_, PyAny>, field: &str) -> PyResult<u64> {
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
pub(crate) fn parse_duration_ns(value: &Bound<'_, PyAny>) -> PyResult<u64> {
    duration(value, "duration")
}

/// `parse_size` for Python: `"18MiB"` → 18874368.
#[pyfunction]
pub(crate) fn parse_size_bytes(value: &Bound<'_, PyAny>) -> PyResult<u64> {
    size(value, "size")
}
