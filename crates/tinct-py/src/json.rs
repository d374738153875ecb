//! Results reach Python as the JSON the CLI prints, parsed by Python's
//! `json` module: the same field names and values as `tinct … --json`, and
//! every field tinct-core adds later reaches Python with no change here.
//! Integers stay exact (Python's ints are unbounded; floats round-trip).
//!
//! Python values handed to tinct as dicts (task sets, study parameters,
//! shards) go the other way through [`json_text`], the one conversion of
//! Python objects into tinct's input: anything JSON cannot say (bytes, a
//! set, a lone surrogate, NaN, nesting deeper than [`MAX_DEPTH`]) is
//! `BadInput` naming where it is, never Python's TypeError,
//! UnicodeEncodeError or RecursionError.

use crate::errors::{BadInput, bad_argument, failed};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyMapping, PyString, PyTuple};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// `value` as Python objects (dicts, lists, ints, floats, strings, None).
pub(crate) fn to_python<'py, T: Serialize>(
    py: Python<'py>,
    value: &T,
) -> PyResult<Bound<'py, PyAny>> {
    let text = serde_json::to_string(value).map_err(failed)?;
    py.import("json")?.call_method1("loads", (text,))
}

/// A Python object (dicts, lists, numbers, strings) read as `T` through
/// JSON; a mismatch is `BadInput` naming `what` and serde's reason (which
/// names the field).
pub(crate) fn from_python<T: DeserializeOwned>(
    value: &Bound<'_, PyAny>,
    what: &str,
) -> PyResult<T> {
    let text: String = json_text(value, what, None)?;
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

/// The deepest nesting of dicts and lists tinct reads from Python (a task
/// set needs 4 levels, a list of shards 5): deeper is refused here, before
/// Python's recursion limit or the JSON parser's is reached.
pub(crate) const MAX_DEPTH: usize = 32;

/// A Python object as JSON text, laid out as `json.dumps(value, indent=2)`
/// lays it out (so that a line number in a message points at one key).
///
/// Dicts (any mapping), lists, tuples, str, int, float, bool and None are
/// JSON's; numpy's scalars and arrays are read through their `tolist()`
/// (an integer scalar is an int, a float scalar a float). Dict keys are
/// text, or whole numbers (a WCET table's p), written as text. Anything
/// else is `BadInput` whose field is where it stands, e.g.
/// `params["generator"]["tasks"]` (`root` names the argument; `file`, if
/// any, is the file the message names, e.g. "<dict>").
pub(crate) fn json_text(
    value: &Bound<'_, PyAny>,
    root: &str,
    file: Option<&str>,
) -> PyResult<String> {
    let mut writer = Writer {
        out: String::new(),
        path: Vec::new(),
        root,
        file,
    };
    writer.value(value, 0, false)?;
    Ok(writer.out)
}

/// [`json_text`]'s state: the text so far and where it stands.
struct Writer<'a> {
    out: String,
    /// The keys and indices from the root to the value being written, as
    /// Python writes them: `["task"]`, `[0]`.
    path: Vec<String>,
    root: &'a str,
    file: Option<&'a str>,
}

/// `repr(value)`, cut to a readable length (a value may be huge).
pub(crate) fn shown(value: &Bound<'_, PyAny>) -> String {
    const LONGEST: usize = 80;
    let text = value
        .repr()
        .map_or_else(|_| "?".to_string(), |r| r.to_string_lossy().into_owned());
    match text.char_indices().nth(LONGEST) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

/// The name of `value`'s type, as Python prints it (`numpy.int64`, `set`).
pub(crate) fn type_name(value: &Bound<'_, PyAny>) -> String {
    let kind = value.get_type();
    let name = kind
        .qualname()
        .map_or_else(|_| "?".to_string(), |n| n.to_string_lossy().into_owned());
    match kind.module() {
        Ok(module) if module.to_string_lossy() != "builtins" => {
            format!("{}.{name}", module.to_string_lossy())
        }
        _ => name,
    }
}

/// A Python string as Rust text, or `None` when it holds a lone surrogate
/// (which no UTF-8 text can hold).
fn text(value: &Bound<'_, PyString>) -> Option<String> {
    value.to_cow().ok().map(|t| t.into_owned())
}

/// Whether `value` is numpy's (a scalar or an array), read through
/// `tolist()`.
pub(crate) fn is_numpy(value: &Bound<'_, PyAny>) -> bool {
    value
        .get_type()
        .module()
        .is_ok_and(|m| m.to_string_lossy().split('.').next() == Some("numpy"))
        && value.hasattr("tolist").unwrap_or(false)
}

/// An int's exact decimal digits (an int subclass, e.g. an IntEnum, as its
/// value).
fn int_digits(value: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(small) = value.extract::<i128>() {
        return Ok(small.to_string());
    }
    let py = value.py();
    py.get_type::<PyInt>()
        .call_method1("__repr__", (value,))?
        .extract::<String>()
}

impl Writer<'_> {
    /// `BadInput` at the current path: what was expected, what was found.
    fn refuse(&self, expected: &str, found: String) -> PyErr {
        // A path deep enough to be refused is cut in the middle.
        const SHOWN: usize = 8;
        let path = if self.path.len() > SHOWN {
            format!(
                "{}…{}",
                self.path[..SHOWN - 2].concat(),
                self.path[self.path.len() - 1]
            )
        } else {
            self.path.concat()
        };
        let field = format!("{}{path}", self.root);
        BadInput::new_err((
            format!("{field}: expected {expected}, found {found}"),
            self.file.map(str::to_string),
            Option::<usize>::None,
            field,
            expected.to_string(),
            found,
        ))
    }

    fn indent(&mut self, depth: usize) {
        self.out.push('\n');
        self.out.extend(std::iter::repeat_n(' ', 2 * depth));
    }

    /// Writes `value`, `depth` containers deep; `converted`: it is what a
    /// numpy object's `tolist()` gave (not converted again).
    fn value(&mut self, value: &Bound<'_, PyAny>, depth: usize, converted: bool) -> PyResult<()> {
        if value.is_none() {
            self.out.push_str("null");
        } else if let Ok(flag) = value.cast::<PyBool>() {
            self.out
                .push_str(if flag.is_true() { "true" } else { "false" });
        } else if value.is_instance_of::<PyInt>() {
            self.out.push_str(&int_digits(value)?);
        } else if let Ok(number) = value.cast::<PyFloat>() {
            let x = number.value();
            if !x.is_finite() {
                return Err(self.refuse(
                    "a finite number (JSON has no NaN or infinity)",
                    shown(value),
                ));
            }
            self.out
                .push_str(&serde_json::to_string(&x).map_err(failed)?);
        } else if let Ok(string) = value.cast::<PyString>() {
            let Some(text) = text(string) else {
                return Err(self.refuse(
                    "text (str) that UTF-8 can hold",
                    format!(
                        "{} (a lone surrogate, from undecodable bytes?)",
                        shown(value)
                    ),
                ));
            };
            self.out
                .push_str(&serde_json::to_string(&text).map_err(failed)?);
        } else if let Ok(mapping) = value.cast::<PyMapping>() {
            self.mapping(mapping, depth)?;
        } else if value.is_instance_of::<PyList>() || value.is_instance_of::<PyTuple>() {
            self.sequence(value, depth)?;
        } else if !converted && is_numpy(value) {
            let plain = value.call_method0("tolist")?;
            self.value(&plain, depth, true)?;
        } else {
            return Err(self.unsupported(value));
        }
        Ok(())
    }

    /// The refusal of a value JSON has no type for, with what to give.
    fn unsupported(&self, value: &Bound<'_, PyAny>) -> PyErr {
        let kind = type_name(value);
        match kind.as_str() {
            "set" | "frozenset" => self.refuse(
                "a list (a set has no order: give a list, e.g. sorted(s))",
                format!("{kind} {}", shown(value)),
            ),
            "bytes" | "bytearray" => self.refuse(
                "text (str; decode bytes first, e.g. b.decode())",
                format!("{kind} {}", shown(value)),
            ),
            _ => self.refuse(
                "a dict, list, tuple, str, int, float, bool or None",
                format!("{kind} {}", shown(value)),
            ),
        }
    }

    /// A container one level deeper than `depth`, refused past
    /// [`MAX_DEPTH`].
    fn deeper(&self, depth: usize) -> PyResult<usize> {
        if depth >= MAX_DEPTH {
            return Err(self.refuse(
                &format!("at most {MAX_DEPTH} levels of dicts and lists inside each other"),
                "deeper nesting (a list or dict that contains itself?)".into(),
            ));
        }
        Ok(depth + 1)
    }

    fn mapping(&mut self, mapping: &Bound<'_, PyMapping>, depth: usize) -> PyResult<()> {
        let inner = self.deeper(depth)?;
        let items = match mapping.cast::<PyDict>() {
            Ok(dict) => dict.items(),
            Err(_) => mapping.items()?,
        };
        if items.is_empty() {
            self.out.push_str("{}");
            return Ok(());
        }
        self.out.push('{');
        for (n, item) in items.iter().enumerate() {
            let (key, value): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item.extract()?;
            let key = self.key(&key)?;
            if n > 0 {
                self.out.push(',');
            }
            self.indent(inner);
            self.out
                .push_str(&serde_json::to_string(&key).map_err(failed)?);
            self.out.push_str(": ");
            self.path.push(format!("[{key:?}]"));
            self.value(&value, inner, false)?;
            self.path.pop();
        }
        self.indent(depth);
        self.out.push('}');
        Ok(())
    }

    /// A dict key as JSON's text: a str, or a whole number (a WCET table's
    /// p, which JSON writes as text).
    fn key(&self, key: &Bound<'_, PyAny>) -> PyResult<String> {
        let refused = |found: String| {
            self.refuse(
                "text keys (str), or whole numbers such as a WCET table's p",
                format!("the key {found}"),
            )
        };
        if let Ok(string) = key.cast::<PyString>() {
            return text(string).ok_or_else(|| {
                refused(format!(
                    "{} (a lone surrogate, which UTF-8 cannot hold)",
                    shown(key)
                ))
            });
        }
        if key.is_instance_of::<PyBool>() {
            return Err(refused(format!("{} ({})", shown(key), type_name(key))));
        }
        if key.is_instance_of::<PyInt>() {
            return int_digits(key);
        }
        if is_numpy(key) {
            let plain = key.call_method0("tolist")?;
            if plain.is_instance_of::<PyInt>() && !plain.is_instance_of::<PyBool>() {
                return int_digits(&plain);
            }
        }
        Err(refused(format!("{} ({})", shown(key), type_name(key))))
    }

    fn sequence(&mut self, sequence: &Bound<'_, PyAny>, depth: usize) -> PyResult<()> {
        let inner = self.deeper(depth)?;
        let items: Vec<Bound<'_, PyAny>> = sequence.try_iter()?.collect::<PyResult<_>>()?;
        if items.is_empty() {
            self.out.push_str("[]");
            return Ok(());
        }
        self.out.push('[');
        for (n, item) in items.iter().enumerate() {
            if n > 0 {
                self.out.push(',');
            }
            self.indent(inner);
            self.path.push(format!("[{n}]"));
            self.value(item, inner, false)?;
            self.path.pop();
        }
        self.indent(depth);
        self.out.push(']');
        Ok(())
    }
}
