//! The one error type of tinct-rt.

use tinct_base::InputError;

/// Everything that can go wrong while preparing, running or writing a run.
#[derive(Debug, thiserror::Error)]
pub enum RtError {
    /// A workload file (plan or rt-app), a run directory or another input
    /// that cannot be used: bad input at its file, line and field (the
    /// field e.g. ``tasks.thread0 key `barrier` ``).
    #[error(transparent)]
    Input(#[from] InputError),
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
    /// A file could not be read (e.g. a bench result of a directory a
    /// report page is made from).
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A task thread could not be started or failed during setup.
    #[error("task '{task}': {message}")]
    Task {
        /// Task name.
        task: String,
        /// What happened.
        message: String,
    },
}

/// `Result` with [`RtError`].
pub type Result<T> = std::result::Result<T, RtError>;
