//! MinCacheAlloc with a memo: allocation algorithms ask for the same core
//! (same tasks, same partition count) many times, e.g. every empty core in
//! the k-more-partitions loop of Algorithm 3.

use super::instance::Instance;
use super::mincache::{CoreAllocation, SearchOptions, min_cache_alloc_until};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};

/// One answer of MinCacheAlloc.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Solved {
    /// The allocation, if one was found.
    pub allocation: Option<CoreAllocation>,
    /// The answer is proven (the search was neither cut nor stopped).
    pub exact: bool,
}

pub(crate) struct Solver<'a> {
    pub inst: &'a Instance,
    pub options: SearchOptions,
    /// Set from outside (a `--timeout`) to stop every search at once.
    pub stop: Option<&'a AtomicBool>,
    memo: HashMap<(Vec<usize>, u32), Solved>,
    pub nodes: u64,
    pub exact: bool,
}

impl<'a> Solver<'a> {
    pub(super) fn new(
        inst: &'a Instance,
        options: SearchOptions,
        stop: Option<&'a AtomicBool>,
    ) -> Self {
        Solver {
            inst,
            options,
            stop,
            memo: HashMap::new(),
            nodes: 0,
            exact: true,
        }
    }

    /// Whether the stop flag is set.
    pub(super) fn stopped(&self) -> bool {
        self.stop.is_some_and(|s| s.load(Ordering::Relaxed))
    }

    /// MinCacheAlloc(`tasks`, `partitions`), optionally seeded with a known
    /// feasible allocation of the same core.
    pub(super) fn solve(
        &mut self,
        tasks: &[usize],
        partitions: u32,
        seed: Option<CoreAllocation>,
    ) -> Option<CoreAllocation> {
        self.solve_outcome(tasks, partitions, seed).allocation
    }

    /// [`Solver::solve`] with whether the answer is proven.
    pub(super) fn solve_outcome(
        &mut self,
        tasks: &[usize],
        partitions: u32,
        seed: Option<CoreAllocation>,
    ) -> Solved {
        let key = (self.inst.by_priority(tasks), partitions);
        if let Some(hit) = self.memo.get(&key) {
            return hit.clone();
        }
        let outcome = min_cache_alloc_until(
            self.inst,
            &key.0,
            partitions,
            &self.options,
            seed,
            self.stop,
        );
        self.nodes += outcome.nodes;
        self.exact &= outcome.exact;
        let solved = Solved {
            allocation: outcome.allocation,
            exact: outcome.exact,
        };
        // A stopped search is not an answer to remember.
        if !outcome.stopped {
            self.memo.insert(key, solved.clone());
        }
        solved
    }

    /// The same question with other options (not memoized).
    pub(super) fn solve_with(
        &mut self,
        tasks: &[usize],
        partitions: u32,
        options: SearchOptions,
    ) -> Solved {
        let outcome =
            min_cache_alloc_until(self.inst, tasks, partitions, &options, None, self.stop);
        self.nodes += outcome.nodes;
        Solved {
            allocation: outcome.allocation,
            exact: outcome.exact,
        }
    }
}
