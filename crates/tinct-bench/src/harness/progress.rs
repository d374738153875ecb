//! Progress of a long measurement, reported to whoever runs the bench, and
//! the caller's request to stop it early.
//!
//! The library only says how far it is; drawing (a terminal bar, a Python
//! callback, nothing) is the caller's business: the CLI implements
//! [`Progress`] with a progress bar (which also answers
//! [`Progress::stop_requested`] from the Ctrl-C flag), tests pass
//! [`NoProgress`].

use tinct_sys::signals::StopFlag;

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

    /// The flag behind [`Progress::stop_requested`], when the caller has
    /// one: a measurement run by another engine (the runtime's
    /// release-latency run) watches it and stops inside that measurement,
    /// not only at its end. Default: none.
    fn stop_flag(&self) -> Option<StopFlag> {
        None
    }
}

/// Runs one step of a bench unless a stop was asked before it. `None`
/// when it was, or when the step failed after the stop came (a step cut
/// before its first round ended has nothing to give: it is absent from the
/// result). A file that cannot be written is an error all the same.
pub fn unless_stopped<T>(
    progress: &dyn Progress,
    step: impl FnOnce() -> crate::Result<T>,
) -> crate::Result<Option<T>> {
    if progress.stop_requested() {
        return Ok(None);
    }
    match step() {
        Ok(value) => Ok(Some(value)),
        Err(e) if progress.stop_requested() && !e.is_output() => Ok(None),
        Err(e) => Err(e),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;

    #[test]
    fn a_step_is_skipped_after_a_stop_and_absent_if_the_stop_cut_it() {
        let go = NoProgress;
        assert_eq!(unless_stopped(&go, || Ok(1)).unwrap(), Some(1));
        let failed = unless_stopped(&go, || Err::<u8, _>(Error::Measurement("x".into())));
        assert!(failed.is_err(), "no stop: the error stands");
        let stopped = StopAfter::new(0);
        let mut ran = false;
        let skipped = unless_stopped(&stopped, || {
            ran = true;
            Ok(1)
        });
        assert_eq!(skipped.unwrap(), None);
        assert!(!ran, "not started after the stop");
        let cut = StopAfter::new(1);
        let result = unless_stopped(&cut, || {
            cut.inc(1);
            Err::<u8, _>(Error::Measurement("no samples".into()))
        });
        assert_eq!(result.unwrap(), None, "cut by the stop: absent");
        let cut = StopAfter::new(1);
        let unwritable = unless_stopped(&cut, || {
            cut.inc(1);
            Err::<u8, _>(Error::Write {
                path: "a.json".into(),
                source: std::io::Error::other("disk full"),
            })
        });
        assert!(unwritable.is_err(), "an output failure is never absorbed");
    }
}
