//! The random study over every core of a rayon pool (feature `parallel`).
//!
//! Why here and not in each front end: the work loop (which items, how
//! outcomes are counted, what a stop keeps) has one implementation, used by
//! `tinct experiment random` and by any other caller (a Python binding);
//! the rest of tinct-core stays free of threads, and a caller without the
//! feature uses the sequential [`super::random::compute`], which gives the
//! same counts.

use super::Hooks;
use super::random::{Computed, Params, Shard, run_set, tally, work_items};
use rayon::prelude::*;

/// [`super::random::compute`] with the sets spread over the current rayon
/// pool (install one to choose the thread count). Counts are identical:
/// they do not depend on the order in which sets finish.
pub fn compute(params: &Params, shard: Shard, hooks: Hooks) -> Computed {
    let items = work_items(params, shard);
    let outcomes: Vec<_> = items
        .par_iter()
        .filter_map(|&item| {
            if hooks.stopped() {
                return None;
            }
            let outcome = run_set(params, item);
            hooks.tick();
            Some(outcome)
        })
        .collect();
    Computed {
        done: outcomes.len() as u64,
        total: items.len() as u64,
        points: tally(params, outcomes),
    }
}
