//! The one error type of tinct-rt.

/// Everything that can go wrong while preparing, running or writing a run.
#[derive(Debug, thiserror::Error)]
pub enum RtError {
    /// A workload file (plan or rt-app) that cannot be used: bad input.
    #[error("{file}{}: {field}: expected {expected}, found {found}", line.map(|l| format!(":{l}")).unwrap_or_default())]
    Input {
        /// The file as the user named it.
        file: String,
        /// 1-based line, when known.
        line: Option<usize>,
        /// The key or field, e.g. ``tasks.thread0 key `barrier` ``.
        field: String,
        /// What was expected.
        expected: String,
        /// What was found.
        found: String,
    },
    /// The run needs a privilege the process does not have.
    #[error("{what}: {fix}")]
    Privilege {
        /// What failed.
        what: String,
        /// How to fix it.
        fix: String,
    },
    /// A system call failed while setting up the run.
    #[error(transparent)]
    Sys(#[from] tinct_sys::Error),
    /// Writing the run directory failed.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file.
        path: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The run colours memory and the colour bits cannot be had (unknown
    /// on this machine, or given in a form that cannot work): bad input,
    /// naming the ways to give them.
    #[error(transparent)]
    Colors(#[from] tinct_sys::color_source::ColorSourceError),
    /// A task thread could not be started or failed during setup.
    #[error("task '{task}': {message}")]
    Task {
        /// Task name.
        task: String,
        /// What happened.
        message: String,
    },
}

impl From<tinct_core::format::InputError> for RtError {
    fn from(e: tinct_core::format::InputError) -> Self {
        RtError::Input {
            file: e.file,
            line: e.line,
            field: e.field,
            expected: e.expected,
            found: e.found,
        }
    }
}

/// `Result` with [`RtError`].
pub type Result<T> = std::result::Result<T, RtError>;
