//! Progress of a long measurement, reported to whoever runs the bench, and
//! the caller's request to stop it early.
//!
//! The library only says how far it is; drawing (a terminal bar, a Python
//! callback, nothing) is the caller's business: the CLI implements
//! [`Progress`] with a progress bar (which also answers
//! [`Progress::stop_requested`] from the Ctrl-C flag), tests pass
//! [`NoProgress`].

/// Receives a bench's progress, and tells it when to stop. Every method has
/// a do-nothing default.
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

    /// True once the caller asks the bench to stop (Ctrl-C): the bench
    /// ends at its next round boundary and returns, and writes, the rounds
    /// it finished, marked interrupted ([`super::RunHeader::record_rounds`]).
    /// Default: never.
    fn stop_requested(&self) -> bool {
        false
    }
}

/// Progress that goes nowhere and asks to stop once `steps` steps were
/// reported done (tests of a bench's interruption).
#[derive(Debug, Default)]
pub struct StopAfter {
    steps: u64,
    done: std::sync::atomic::AtomicU64,
}

impl StopAfter {
    /// Asks to stop once `steps` steps were reported done.
    pub fn new(steps: u64) -> Self {
        Self {
            steps,
            done: std::sync::atomic::AtomicU64::new(0),
        }
    }
}

impl Progress for StopAfter {
    fn inc(&self, n: u64) {
        self.done.fetch_add(n, std::sync::atomic::Ordering::SeqCst);
    }

    fn stop_requested(&self) -> bool {
        self.done.load(std::sync::atomic::Ordering::SeqCst) >= self.steps
    }
}

/// Progress that goes nowhere (tests, library users who do not care).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoProgress;

impl Progress for NoProgress {}
