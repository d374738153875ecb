//! tinct's errors as Python exceptions. The classes are defined in Python
//! (`tinct/errors.py`, with their docstrings and attributes); Rust raises
//! them by name.

use pyo3::PyErr;
use pyo3::import_exception;
use tinct_core::format::InputError;

import_exception!(tinct.errors, BadInput);
import_exception!(tinct.errors, Failed);

/// A task-set file (or any other input) that tinct refuses: `BadInput` with
/// the CLI's message and its parts (file, line, field, expected, found).
pub(crate) fn bad_input(e: &InputError) -> PyErr {
    BadInput::new_err((
        e.to_string(),
        e.file.clone(),
        e.line,
        e.field.clone(),
        e.expected.clone(),
        e.found.clone(),
    ))
}

/// Bad input that is not a task-set file (arguments, arrays, shard lists):
/// `BadInput` whose message names what was wrong; `field` says which
/// argument.
pub(crate) fn bad_argument(field: &str, message: impl Into<String>) -> PyErr {
    let message = message.into();
    BadInput::new_err((
        message,
        Option::<String>::None,
        Option::<usize>::None,
        field.to_string(),
    ))
}

/// The operation could not do its job (a file could not be written): the
/// CLI's exit status 1.
pub(crate) fn failed(message: impl std::fmt::Display) -> PyErr {
    Failed::new_err(message.to_string())
}

import_exception!(tinct.errors, Stopped);
