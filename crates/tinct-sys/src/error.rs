//! The one error type of `tinct-sys`.

use std::path::PathBuf;

/// Everything that can go wrong while reading Linux facts or making a syscall.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file under the system root could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file (already joined with the root).
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A path under the system root is not a regular file (a FIFO, a
    /// device, a directory): sysfs and procfs facts are regular files.
    #[error("{path}: expected a regular file, found {found}")]
    NotRegularFile {
        /// The path (already joined with the root).
        path: PathBuf,
        /// What it is instead.
        found: &'static str,
    },
    /// A file under the system root is larger than any sysfs or procfs
    /// file doctor reads.
    #[error("{path}: expected a sysfs or procfs file, found one larger than {limit} bytes")]
    FileTooLarge {
        /// The path (already joined with the root).
        path: PathBuf,
        /// The limit in bytes.
        limit: u64,
    },
    /// A file was read but its content is not what the kernel writes
    /// there, or a file a user wrote (the machine file) cannot be used:
    /// bad input at its file (already joined with the root) and line.
    #[error(transparent)]
    Input(#[from] tinct_base::InputError),
    /// A CPU list such as `0-3,8` is malformed (tinct-base's list grammar).
    #[error("invalid CPU list {:?}: {}", .0.text, .0.reason)]
    CpuList(tinct_base::list::ListError),
    /// A system call failed.
    #[error("{call} failed: {source}")]
    Syscall {
        /// The call, e.g. `sched_setscheduler(SCHED_FIFO, 10)`.
        call: String,
        /// The errno, as an I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A caller passed an argument that cannot work (e.g. an empty CPU set).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
}

impl From<tinct_base::list::ListError> for Error {
    fn from(e: tinct_base::list::ListError) -> Self {
        Error::CpuList(e)
    }
}

/// `Result` with [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// A [`Error::Syscall`] from the current `errno`-style I/O error.
    pub(crate) fn syscall(call: impl Into<String>, source: std::io::Error) -> Self {
        Error::Syscall {
            call: call.into(),
            source,
        }
    }
}
