//! Progress of a long measurement, reported to whoever runs the bench.
//!
//! The library only says how far it is; drawing (a terminal bar, a Python
//! callback, nothing) is the caller's business: the CLI implements
//! [`Progress`] with a progress bar, tests pass [`NoProgress`].

/// Receives a bench's progress. Every method has a do-nothing default.
pub trait Progress: Sync {
    /// A measurement of `total` steps labelled `label` starts.
    fn start(&self, total: u64, label: &str) {
        let _ = (total, label);
    }

    /// `n` more steps are done.
    fn inc(&self, n: u64) {
        let _ = n;
    }

    /// The total grows by `n` steps (work found out late).
    fn inc_length(&self, n: u64) {
        let _ = n;
    }

    /// What is being measured now (a size, a condition).
    fn set_message(&self, message: &str) {
        let _ = message;
    }

    /// The measurement is over.
    fn finish(&self) {}
}

/// Progress that goes nowhere (tests, library users who do not care).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoProgress;

impl Progress for NoProgress {}
