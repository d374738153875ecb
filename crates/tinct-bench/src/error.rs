//! The one error type of `tinct-bench`.

use std::path::PathBuf;

/// Everything that can go wrong while running a bench.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An option or parameter is out of range (maps to exit status 2 in the CLI).
    #[error("{0}")]
    InvalidInput(String),
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

/// Result with the crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(!Error::InvalidInput("--reps".into()).is_output());
    }
}
