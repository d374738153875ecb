//! Results reach Python as the JSON the CLI prints, parsed by Python's
//! `json` module: the same field names and values as `tinct … --json`, and
//! every field tinct-core adds later reaches Python with no change here.
//! Integers stay exact (Python's ints are unbounded; floats round-trip).

use crate::errors::{bad_argument, failed};
use pyo3::prelude::*;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// `value` as Python objects (dicts, lists, ints, floats, strings, None).
pub fn to_python<'py, T: Serialize>(py: Python<'py>, value: &T) -> PyResult<Bound<'py, PyAny>> {
    let text = serde_json::to_string(value).map_err(failed)?;
    py.import("json")?.call_method1("loads", (text,))
}

/// A Python object (dicts, lists, numbers, strings) read as `T` through
/// JSON; a mismatch is `BadInput` naming `what` and serde's reason (which
/// names the field).
pub fn from_python<T: DeserializeOwned>(value: &Bound<'_, PyAny>, what: &str) -> PyResult<T> {
    let text: String = json_text(value)?;
    serde_json::from_str(&text).map_err(|e| {
        let reason = e.to_string();
        let reason = reason
            .rsplit_once(" at line ")
            .map_or(reason.as_str(), |(m, _)| m);
        bad_argument(
            what,
            format!("{what}: expected {what} as tinct writes it, found {reason}"),
        )
    })
}

/// `json.dumps(value, indent=2)`: a Python object as JSON text (indented, so
/// that a line number in a message points at one key).
pub fn json_text(value: &Bound<'_, PyAny>) -> PyResult<String> {
    let py = value.py();
    let kwargs = pyo3::types::PyDict::new(py);
    kwargs.set_item("indent", 2)?;
    py.import("json")?
        .call_method("dumps", (value,), Some(&kwargs))?
        .extract()
}
