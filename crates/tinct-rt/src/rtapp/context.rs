//! Reading an rt-app JSON value with errors that name the key path and its
//! line: the context every part of the reader shares.

use super::ordered_json::OrderedValue;
use crate::limits::MAX_TIME_NS;
use crate::{Result, RtError};
use tinct_base::InputError;
use tinct_core::units::Nanos;
use tinct_sys::system::DeadlinePeriodLimits;

pub(super) struct Ctx<'a> {
    pub(super) file: &'a str,
    pub(super) text: &'a str,
    /// The SCHED_DEADLINE periods this kernel accepts (values are checked
    /// against them when read, as the kernel would at the run's start).
    pub(super) deadline_periods: DeadlinePeriodLimits,
}

impl Ctx<'_> {
    /// Best-effort line of the key at `path` (each segment searched as a
    /// quoted string after the previous one, as written or JSON-escaped:
    /// a name holding a newline is written `\n`).
    pub(super) fn line_of(&self, path: &[&str]) -> Option<usize> {
        let mut from = 0;
        for segment in path {
            let plain = format!("\"{segment}\"");
            let escaped = serde_json::to_string(segment).unwrap_or_default();
            from += self.text[from..]
                .find(&plain)
                .or_else(|| self.text[from..].find(&escaped))?;
        }
        Some(self.text[..from].matches('\n').count() + 1)
    }

    pub(super) fn error(
        &self,
        path: &[&str],
        field: String,
        expected: impl Into<String>,
        found: impl Into<String>,
    ) -> RtError {
        RtError::Input(InputError {
            file: self.file.to_string(),
            line: self.line_of(path),
            field,
            expected: expected.into(),
            found: found.into(),
        })
    }

    pub(super) fn unknown(&self, path: &[&str], key: &str, allowed: &[&str]) -> RtError {
        let mut full = path.to_vec();
        full.push(key);
        self.error(
            &full,
            format!("key `{key}` in {}", where_(path)),
            format!(
                "one of the rt-app keys valid here: {} (a key tinct does not know is refused, \
                 never ignored: see docs/RT-APP.md)",
                allowed.join(", ")
            ),
            format!("`{key}`"),
        )
    }

    /// Bad input about the value of `key` in the object at `path`.
    pub(super) fn key_error(
        &self,
        path: &[&str],
        key: &str,
        expected: impl Into<String>,
        found: impl Into<String>,
    ) -> RtError {
        let mut full = path.to_vec();
        full.push(key);
        self.error(
            &full,
            format!("`{key}` in {}", where_(path)),
            expected,
            found,
        )
    }

    pub(super) fn int(
        &self,
        path: &[&str],
        key: &str,
        value: &OrderedValue,
        min: i64,
    ) -> Result<i64> {
        match value {
            OrderedValue::Int(i) if *i >= min => Ok(*i),
            other => Err(self.key_error(path, key, format!("an integer ≥ {min}"), other.kind())),
        }
    }

    /// An rt-app time in µs (an integer ≥ `min`) in ns: exact, or bad input
    /// naming the key when it is beyond [`MAX_TIME_NS`].
    pub(super) fn micros(
        &self,
        path: &[&str],
        key: &str,
        value: &OrderedValue,
        min: i64,
    ) -> Result<u64> {
        let us = self.int(path, key, value, min)?;
        let max_us = MAX_TIME_NS / 1_000;
        match u64::try_from(us).ok().filter(|&us| us <= max_us) {
            Some(us) => Ok(us * 1_000), // ≤ MAX_TIME_NS: cannot overflow
            None => Err(self.key_error(
                path,
                key,
                format!(
                    "µs from {min} to {max_us} (the limit of times in a run, {})",
                    Nanos(MAX_TIME_NS)
                ),
                us.to_string(),
            )),
        }
    }

    /// `true` or `false`.
    pub(super) fn boolean(&self, path: &[&str], key: &str, value: &OrderedValue) -> Result<bool> {
        match value {
            OrderedValue::Bool(b) => Ok(*b),
            other => Err(self.key_error(path, key, "true or false", other.kind())),
        }
    }

    /// An integer in `range`.
    pub(super) fn int_in(
        &self,
        path: &[&str],
        key: &str,
        value: &OrderedValue,
        range: std::ops::RangeInclusive<i64>,
        what: &str,
    ) -> Result<i64> {
        match value {
            OrderedValue::Int(i) if range.contains(i) => Ok(*i),
            other => Err(self.key_error(
                path,
                key,
                format!("{what} ({}..={})", range.start(), range.end()),
                other.kind(),
            )),
        }
    }

    pub(super) fn string<'v>(
        &self,
        path: &[&str],
        key: &str,
        value: &'v OrderedValue,
    ) -> Result<&'v str> {
        match value {
            OrderedValue::String(s) => Ok(s),
            other => Err(self.key_error(path, key, "a string", other.kind())),
        }
    }

    pub(super) fn object<'v>(
        &self,
        path: &[&str],
        key: &str,
        value: &'v OrderedValue,
    ) -> Result<&'v [(String, OrderedValue)]> {
        match value {
            OrderedValue::Object(entries) => Ok(entries),
            other => Err(self.key_error(path, key, "an object", other.kind())),
        }
    }
}

/// Why `name` cannot be part of a file name (a task's rt-app log
/// `<log_basename>-<task>.log`, the run directory `logdir/<log_basename>`):
/// a `/` would reach another directory, a control character (a newline)
/// would break the lines of the files that name it.
pub(super) fn file_name_problem(name: &str) -> Option<&'static str> {
    if name.contains('/') {
        Some("a `/`")
    } else if name.chars().any(char::is_control) {
        Some("a control character")
    } else {
        None
    }
}

pub(super) fn where_(path: &[&str]) -> String {
    if path.is_empty() {
        "the top level".into()
    } else {
        path.join(".")
    }
}
