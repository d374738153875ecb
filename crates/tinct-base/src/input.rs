//! [`InputError`]: the one type of bad input in tinct, wherever the input
//! comes from (a task set, an rt-app file, a run directory, the machine
//! file, a sysfs or procfs file, a flag, an environment variable, an
//! output path, a cache geometry): the file, the line when known, the
//! field, what was expected and what was found. The libraries' error types
//! wrap it (tinct-core's loaders return it, tinct-sys's `Error::Input`,
//! tinct-sim's `SimError::Input`, tinct-report's `ReportError::Input`,
//! tinct-rt's `RtError::Input`), so each names bad input the same way,
//! `file:line: field: expected …, found …`, and the CLI maps it to exit
//! status 2.
//!
//! ```
//! use tinct_base::InputError;
//!
//! let error = InputError::new("set.toml", "task 'a' field `period`", "a duration", "\"10\"")
//!     .at_line(Some(7));
//! assert_eq!(
//!     error.to_string(),
//!     "set.toml:7: task 'a' field `period`: expected a duration, found \"10\""
//! );
//! // Input that is not in a file names its place as the field.
//! let flag = InputError::new("", "--color-bits 12-x", "bits such as 12-16", "\"x\"");
//! assert_eq!(flag.to_string(), "--color-bits 12-x: expected bits such as 12-16, found \"x\"");
//! ```

use std::fmt;

/// Bad input: where it is (file, line, field), what was expected and what
/// was found. Serializable (with the `serde` feature), so that a process
/// can hand it to another (tinct-rt's supervised run sends it to its
/// parent).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct InputError {
    /// The file as the user named it (a path, `the environment`), or empty
    /// when the input is not in a file (a flag, a variable, a value).
    pub file: String,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// The field, e.g. ``task 'a' field `deadline` ``, `colors.bits`,
    /// `TINCT_COLOR_BITS=13-15`; empty when the file is the whole of it.
    pub field: String,
    /// What was expected.
    pub expected: String,
    /// What was found.
    pub found: String,
}

impl InputError {
    /// Bad input in `file` (empty if none) at `field`, no line known.
    pub fn new(
        file: impl Into<String>,
        field: impl Into<String>,
        expected: impl Into<String>,
        found: impl Into<String>,
    ) -> Self {
        Self {
            file: file.into(),
            line: None,
            field: field.into(),
            expected: expected.into(),
            found: found.into(),
        }
    }

    /// The same error at `line` (1-based; `None`: not known).
    pub fn at_line(self, line: Option<usize>) -> Self {
        Self { line, ..self }
    }
}

impl fmt::Display for InputError {
    /// `file:line: field: expected …, found …`; the file, line and field
    /// are left out when they are not known (with their separators).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.file.is_empty(), self.line) {
            (false, Some(line)) => write!(f, "{}:{line}: ", self.file)?,
            (false, None) => write!(f, "{}: ", self.file)?,
            (true, Some(line)) => write!(f, "line {line}: ")?,
            (true, None) => {}
        }
        if !self.field.is_empty() {
            write!(f, "{}: ", self.field)?;
        }
        write!(f, "expected {}, found {}", self.expected, self.found)
    }
}

impl std::error::Error for InputError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_file_line_and_field_leaving_out_what_is_unknown() {
        let full = InputError::new("plan.toml", "task 'a' field `period`", "T > 0", "0ns")
            .at_line(Some(12));
        assert_eq!(
            full.to_string(),
            "plan.toml:12: task 'a' field `period`: expected T > 0, found 0ns"
        );
        let no_line = InputError {
            line: None,
            ..full.clone()
        };
        assert_eq!(
            no_line.to_string(),
            "plan.toml: task 'a' field `period`: expected T > 0, found 0ns"
        );
        let no_field =
            InputError::new("/proc/1/maps", "", "an address range", "\"x\"").at_line(Some(2));
        assert_eq!(
            no_field.to_string(),
            "/proc/1/maps:2: expected an address range, found \"x\""
        );
        let no_file = InputError::new("", "geometry.ways", "1..=64", "0");
        assert_eq!(
            no_file.to_string(),
            "geometry.ways: expected 1..=64, found 0"
        );
        let only_line = InputError::new("", "", "BYTES KIND", "\"code 12\"").at_line(Some(3));
        assert_eq!(
            only_line.to_string(),
            "line 3: expected BYTES KIND, found \"code 12\""
        );
    }

    #[cfg(feature = "serde")]
    #[test]
    fn crosses_a_process_boundary_as_json_with_every_field() {
        let error = InputError::new("plan.toml", "task 'a' field `period`", "T > 0", "0ns")
            .at_line(Some(7));
        let json = serde_json::to_string(&error).unwrap();
        assert_eq!(
            json,
            r#"{"file":"plan.toml","line":7,"field":"task 'a' field `period`","expected":"T > 0","found":"0ns"}"#
        );
        assert_eq!(serde_json::from_str::<InputError>(&json).unwrap(), error);
    }
}
