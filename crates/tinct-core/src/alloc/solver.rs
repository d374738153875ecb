//! MinCacheAlloc with a memo: allocation algorithms ask for the same core
//! (same tasks, same partition count) many times, e.g. every empty core in
//! the k-more-partitions loop of Algorithm 3.

use super::instance::Instance;
use super::mincache::{CoreAllocation, SearchOptions, min_cache_alloc_from};
use std::collections::HashMap;

pub(crate) struct Solver<'a> {
    pub inst: &'a Instance,
    pub options: SearchOptions,
    memo: HashMap<(Vec<usize>, u32), Option<CoreAllocation>>,
    pub nodes: u64,
    pub exact: bool,
}

impl<'a> Solver<'a> {
    pub fn new(inst: &'a Instance, options: SearchOptions) -> Solver<'a> {
        Solver {
            inst,
            options,
            memo: HashMap::new(),
            nodes: 0,
            exact: true,
        }
    }

    /// MinCacheAlloc(`tasks`, `partitions`), optionally seeded with a known
    /// feasible allocation of the same core.
    pub fn solve(
        &mut self,
        tasks: &[usize],
        partitions: u32,
        seed: Option<CoreAllocation>,
    ) -> Option<CoreAllocation> {
        let key = (self.inst.by_priority(tasks), partitions);
        if let Some(hit) = self.memo.get(&key) {
            return hit.clone();
        }
        let outcome = min_cache_alloc_from(self.inst, &key.0, partitions, &self.options, seed);
        self.nodes += outcome.nodes;
        self.exact &= outcome.exact;
        self.memo.insert(key, outcome.allocation.clone());
        outcome.allocation
    }

    /// The same question with other options (not memoized).
    pub fn solve_with(
        &mut self,
        tasks: &[usize],
        partitions: u32,
        options: SearchOptions,
    ) -> Option<CoreAllocation> {
        let outcome = min_cache_alloc_from(self.inst, tasks, partitions, &options, None);
        self.nodes += outcome.nodes;
        outcome.allocation
    }
}
