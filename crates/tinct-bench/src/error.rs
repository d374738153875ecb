//! The one error type of `tinct-bench`.

use std::path::PathBuf;
pub use tinct_base::InputError;

/// Everything that can go wrong while running a bench.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad input: an option or parameter out of range, a file the bench
    /// reads (maps to exit status 2 in the CLI). For a command-line option
    /// the field is the option (`--reps`) and the file is empty.
    #[error(transparent)]
    Input(#[from] InputError),
    /// An output file could not be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A CSV file could not be written.
    #[error("cannot write CSV {path}: {source}")]
    Csv {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: csv::Error,
    },
    /// A result could not be serialized.
    #[error("cannot serialize {what}: {source}")]
    Json {
        /// What was serialized.
        what: String,
        /// The underlying error.
        #[source]
        source: serde_json::Error,
    },
    /// A Linux fact could not be read or a syscall failed.
    #[error(transparent)]
    Sys(#[from] tinct_sys::Error),
    /// The measurement itself failed (memory could not be obtained, a thread died, ...).
    #[error("{0}")]
    Measurement(String),
}

impl Error {
    /// Bad value of the command-line option or parameter `option` (e.g.
    /// `--reps`): what was `expected`, what was `found`.
    pub fn option(
        option: impl Into<String>,
        expected: impl Into<String>,
        found: impl Into<String>,
    ) -> Self {
        Error::Input(InputError::new("", option, expected, found))
    }

    /// True if an output file could not be written (or serialized): a
    /// failure of its own, whatever stopped the bench, never the
    /// consequence of a Ctrl-C.
    pub fn is_output(&self) -> bool {
        matches!(
            self,
            Error::Write { .. } | Error::Csv { .. } | Error::Json { .. }
        )
    }
}

impl From<tinct_sys::color_source::ColorSourceError> for Error {
    /// Colour bits no source gives, or a source gives badly: bad input,
    /// at the source's file and field (unknown bits name `--color-bits`
    /// and the other ways to give them).
    fn from(e: tinct_sys::color_source::ColorSourceError) -> Self {
        use tinct_sys::color_source::{ColorSourceError, HOW_TO_GIVE};
        match e {
            ColorSourceError::Invalid { error, .. } => Error::Input(*error),
            ColorSourceError::MachineFile(error) => Error::Input(error),
            ColorSourceError::Unknown { why } => Error::option(
                "--color-bits",
                format!("known page-colour bits ({HOW_TO_GIVE})"),
                format!("none: the page-colour bits of this machine are unknown ({why})"),
            ),
        }
    }
}

/// Result with the crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_option_names_itself_what_was_expected_and_found() {
        let error = Error::option("--reps", "at least 1 repetition", "0");
        assert_eq!(
            error.to_string(),
            "--reps: expected at least 1 repetition, found 0"
        );
        assert!(matches!(error, Error::Input(InputError { ref field, .. }) if field == "--reps"));
    }

    #[test]
    fn only_files_that_cannot_be_written_are_output_failures() {
        let io = || std::io::Error::other("disk full");
        assert!(
            Error::Write {
                path: "a.json".into(),
                source: io()
            }
            .is_output()
        );
        let json = serde_json::from_str::<u8>("x").unwrap_err();
        assert!(
            Error::Json {
                what: "x".into(),
                source: json
            }
            .is_output()
        );
        assert!(!Error::Measurement("a worker was killed".into()).is_output());
        assert!(!Error::option("--reps", "at least 1", "0").is_output());
    }
}
