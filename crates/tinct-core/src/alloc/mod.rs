//! Cache-aware task and partition allocation: kim2013 Sections III-C, III-D
//! and IV-E.
//!
//! - [`mincache`]: Algorithm 1 MinCacheAlloc, an exact branch-and-bound over
//!   sharing patterns (anytime with a node budget);
//! - [`cata`]: Algorithm 2 FindBestFit and Algorithm 3 CacheAwareTaskAlloc,
//!   with the final step that hands leftover partitions to the core that
//!   saves the most utilization;
//! - [`binpack`]: the paper's baselines, best-fit and worst-fit decreasing
//!   with partitions split evenly over cores and no sharing;
//! - [`plan()`]: one call from a task set to a plan with its report
//!   (allocation, leftover step, the planned set and its analysis);
//! - [`placement`]: `plan --placement static`, the affinity graph
//!   partitioned onto cache domains;
//! - [`least_partitions`]: the least number of partitions each algorithm
//!   schedules a set with (the quantity of the paper's Figure 11).
//!
//! Everything here is deterministic: the same task set and options give the
//! same allocation, bit for bit.

pub mod assignment;
pub mod binpack;
pub mod cata;
mod diagnose;
pub mod instance;
pub mod mincache;
mod outcome;
pub mod placement;
pub mod plan;
mod private;
mod solver;

pub use assignment::{Algorithm, Assignment, CoreRefusal, Reason, Refusal, Unplaced};
pub use instance::{AllocTask, Instance};
pub use mincache::{CoreAllocation, MinCacheOutcome, SearchOptions, min_cache_alloc};
pub use outcome::{PlacementReport, PlanFailure, PlanReport};
pub use placement::{
    PlacementOptions, PlacementRefusal, StaticPlacement, UTILIZATION_TOLERANCE, place_static,
};
pub use plan::{
    Plan, PlanOptions, PlanRefusal, PlannedCore, PlannedTask, UnplacedTask, as_reservations,
    check_graph, check_request, partition_budget, plan, unsupported,
};

/// Runs `algorithm` with `budget` partitions (at most N_P). CATA spends no
/// leftover partitions here: see [`cata::spend_leftover`].
pub fn allocate(
    inst: &Instance,
    algorithm: Algorithm,
    budget: u32,
    options: &SearchOptions,
) -> Assignment {
    match algorithm {
        Algorithm::Cata => cata::cata(inst, budget, options),
        Algorithm::Bfd => binpack::bin_pack(inst, binpack::Fit::Best, budget, options),
        Algorithm::Wfd => binpack::bin_pack(inst, binpack::Fit::Worst, budget, options),
    }
}

/// The least number of partitions with which `algorithm` places every task
/// (kim2013 Figure 11), with that assignment; `None` if even N_P fails.
///
/// BFD and WFD are run with 1, 2, ..., N_P partitions split evenly over the
/// cores (their success is not monotone in the count, so every count is
/// tried in turn). CATA reserves partitions only as tasks need them, and a
/// run with a budget of at least what it reserves takes exactly the same
/// steps, so its reservation with all N_P partitions is its least count.
pub fn least_partitions(
    inst: &Instance,
    algorithm: Algorithm,
    options: &SearchOptions,
) -> Option<Assignment> {
    least_partitions_until(inst, algorithm, options, None)
}

/// [`least_partitions`] that ends as soon as `stop` is set (a timeout):
/// then `None`, since a stopped allocation places no more tasks.
pub fn least_partitions_until(
    inst: &Instance,
    algorithm: Algorithm,
    options: &SearchOptions,
    stop: Option<&std::sync::atomic::AtomicBool>,
) -> Option<Assignment> {
    let stopped = || stop.is_some_and(|s| s.load(std::sync::atomic::Ordering::Relaxed));
    let fit = match algorithm {
        Algorithm::Cata => {
            return Some(cata::cata_until(inst, inst.partitions, options, stop))
                .filter(|a| a.schedulable() && !stopped());
        }
        Algorithm::Bfd => binpack::Fit::Best,
        Algorithm::Wfd => binpack::Fit::Worst,
    };
    (1..=inst.partitions)
        .take_while(|_| !stopped())
        .map(|budget| binpack::bin_pack_until(inst, fit, budget, options, stop))
        .find(Assignment::schedulable)
        .filter(|_| !stopped())
}
