//! The one error type of `tinct-mem`.

/// Everything that can go wrong in the pool, the mapping or the allocator.
#[derive(Debug, thiserror::Error)]
pub enum MemError {
    /// An address function, color list or partition mapping is invalid.
    #[error("invalid address mapping: {0}")]
    Mapping(String),
    /// A request that can never be served (bad color, zero size, ...).
    #[error("invalid request: {0}")]
    Request(String),
    /// Not enough free pages of the requested kind.
    #[error("out of memory: {0}")]
    Exhausted(String),
    /// A free of something the pool did not hand out (or freed twice).
    #[error("invalid free: {0}")]
    InvalidFree(String),
    /// Physical frame numbers cannot be read: colors are unknown.
    #[error(
        "physical frame numbers are not readable ({reason}); page colors, banks and controllers \
         cannot be known. Fix: run as root or grant CAP_SYS_ADMIN (e.g. `setcap \
         cap_sys_admin+ep <binary>`); or choose the explicit uncolored mode, which runs without \
         placement control and says so in its statistics"
    )]
    FramesUnreadable {
        /// What the kernel said.
        reason: String,
    },
    /// A system call failed.
    #[error("{call} failed: {source}")]
    Os {
        /// The call and its arguments.
        call: String,
        /// The errno.
        #[source]
        source: std::io::Error,
    },
    /// An error from `tinct-sys` (pagemap).
    #[error(transparent)]
    Sys(#[from] tinct_sys::Error),
}
