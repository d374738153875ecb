//! Allocation studies, as pure computation (files are the front end's job):
//!
//! - [`random`]: schedulability ratio vs utilization on random task sets,
//!   seeded per set, shardable, with a merge that equals the unsharded run;
//! - [`kim2013`]: the setting of kim2013 Figures 11-13 (Table I duplicated
//!   to n = 8, 12, 16, N_C = 4, N_P = 32, M_total = 1 and 2 GiB), BFD, WFD
//!   and CATA side by side with the paper's published comparisons;
//! - [`study`]: a random study as a person describes it, checked into
//!   [`random::Params`] for every front end;
//! - `parallel` (feature `parallel`): the random study over every core.
//!
//! Both report progress through a callback and stop cleanly through a flag
//! (a timeout), keeping what they computed.

pub mod kim2013;
#[cfg(feature = "parallel")]
pub mod parallel;
pub mod random;
pub mod shards;
pub mod study;

use std::sync::atomic::{AtomicBool, Ordering};

/// How a caller follows and stops a study.
#[derive(Copy, Clone, Default)]
pub struct Hooks<'a> {
    /// Called once per finished unit of work (a task set, a setting).
    pub progress: Option<&'a (dyn Fn() + Sync)>,
    /// Set from elsewhere (a timeout) to stop before the next unit.
    pub stop: Option<&'a AtomicBool>,
}

impl Hooks<'_> {
    /// Whether the stop flag is set.
    pub fn stopped(&self) -> bool {
        self.stop.is_some_and(|s| s.load(Ordering::Relaxed))
    }

    /// Reports one finished unit.
    pub fn tick(&self) {
        if let Some(progress) = self.progress {
            progress();
        }
    }
}

impl std::fmt::Debug for Hooks<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hooks")
            .field("progress", &self.progress.is_some())
            .field("stopped", &self.stopped())
            .finish()
    }
}
