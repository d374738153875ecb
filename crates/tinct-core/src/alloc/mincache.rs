//! kim2013 Algorithm 1, MinCacheAlloc: the feasible assignment of a core's
//! N_P^j partitions to its tasks with the least Eq. (1) utilization.
//!
//! The paper leaves the generation of candidate allocations open. Here it is
//! an exact branch-and-bound over *sharing patterns* rather than subsets:
//! the partitions of one core are interchangeable, so an allocation is fully
//! described by how many partitions each set of tasks shares (a partition's
//! pattern). Tasks are placed in priority order, highest first. Placing task
//! k with |S(k)| = s splits every existing pattern class P (and the free
//! partitions) into "P with k" and "P without k"; only the counts matter.
//!
//! Why priority order makes this cheap (kim2013 Section III-B):
//! - Eq. (1)'s cache terms add up partition by partition: a partition with
//!   pattern P, |P| ≥ 2, costs Δ·(Σ_{i∈P} 1/T_i + Σ_{i∈P, i≠lowest(P)} 1/T_i)
//!   (ω_{i,n} counts i's shared partitions, γ_{i,n} those shared with a
//!   lower-priority task). Adding the new lowest task k to P raises the
//!   utilization by Δ·(1/T_k + 2/T_j) when P = {j}, else Δ·(1/T_k + 1/T_low(P)).
//! - Every cache term of Eq. (2) only grows when lower-priority tasks are
//!   added, so Eq. (2) on the tasks placed so far is a lower bound: a miss
//!   there prunes the whole subtree.
//! - Eq. (3) of a partition is fixed once its members are: a task joins a
//!   class only if M_k/s still fits (exact fractions).
//!
//! Bounds: the utilization so far plus, for each task still to place, its
//! least C^s/T plus 1/T·Δ per partition it must share beyond the free ones.
//! Dominance: giving a free partition to a task alone never hurts (C^p is
//! non-increasing, no cache term grows, Eq. (3) only eases), so only leaves
//! that use all N_P^j partitions are evaluated. The search starts from the
//! best allocation without sharing (itself found by the same search) and
//! from "everybody shares everything", so the bound bites from the start.
//!
//! With a node budget the search is *anytime*: it returns the best
//! allocation found so far and says it is not proven optimal.

use super::instance::{INFEASIBLE, Instance};
use crate::analysis::memory::{Fraction, MemoryDemand, fits};
use crate::analysis::rta::CoreTask;
use crate::analysis::utilization::core_utilization;
use crate::partitions::PartitionSet;
use serde::Serialize;
use std::sync::atomic::{AtomicBool, Ordering};

/// Slack for comparing utilizations summed in different orders.
const EPS: f64 = 1e-12;

/// How MinCacheAlloc searches.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SearchOptions {
    /// Let tasks share partitions (CATA); `false` gives every task private
    /// partitions (the conventional partitioning of BFD/WFD).
    pub sharing: bool,
    /// Require Eq. (2) and Eq. (1) ≤ 1; `false` checks Eq. (3) only (used to
    /// tell a memory failure from a timing failure).
    pub check_time: bool,
    /// Stop after this many search nodes and return the best allocation
    /// found (not proven optimal); `None` searches exhaustively.
    pub node_budget: Option<u64>,
}

impl Default for SearchOptions {
    /// [`SearchOptions::EXACT`].
    fn default() -> SearchOptions {
        SearchOptions::EXACT
    }
}

impl SearchOptions {
    /// Exhaustive search with sharing: the exact MinCacheAlloc.
    pub const EXACT: SearchOptions = SearchOptions {
        sharing: true,
        check_time: true,
        node_budget: None,
    };

    /// Anytime search with sharing, stopping after `nodes` nodes per call.
    pub fn budget(nodes: u64) -> SearchOptions {
        SearchOptions {
            node_budget: Some(nodes),
            ..SearchOptions::EXACT
        }
    }

    /// The search a front end's node-budget option asks for (`--node-budget`
    /// of `tinct plan` and `tinct experiment random` and `kim2013`, the
    /// Python package's `node_budget=`): `nodes` per call, where **0 means
    /// no budget** (exhaustive search, as `--exact`), the one meaning of 0
    /// everywhere.
    pub fn node_budget_option(nodes: u64) -> SearchOptions {
        SearchOptions {
            node_budget: (nodes > 0).then_some(nodes),
            ..SearchOptions::EXACT
        }
    }

    /// The same options without cache sharing.
    pub fn without_sharing(self) -> SearchOptions {
        SearchOptions {
            sharing: false,
            ..self
        }
    }
}

/// The partitions of one core assigned to its tasks.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CoreAllocation {
    /// The core's tasks (indices in the task set), highest priority first.
    pub tasks: Vec<usize>,
    /// S(i) of each task in `tasks`, numbered 1..=`partitions` within the core.
    pub sets: Vec<PartitionSet>,
    /// N_P^j: partitions reserved for the core.
    pub partitions: u32,
    /// Eq. (1) utilization of the core with this allocation.
    pub utilization: f64,
}

impl CoreAllocation {
    /// A core with partitions but no tasks.
    pub fn empty(partitions: u32) -> CoreAllocation {
        CoreAllocation {
            tasks: Vec::new(),
            sets: Vec::new(),
            partitions,
            utilization: 0.0,
        }
    }
}

/// What MinCacheAlloc found.
#[derive(Clone, Debug, PartialEq)]
pub struct MinCacheOutcome {
    /// φ_min, or `None` if no allocation is feasible (or none was found
    /// within the budget).
    pub allocation: Option<CoreAllocation>,
    /// The result is proven optimal (the search was not cut by its budget).
    pub exact: bool,
    /// Search nodes visited.
    pub nodes: u64,
    /// The search was stopped from outside (a timeout) before it finished.
    pub stopped: bool,
}

/// Algorithm 1: the feasible allocation of `partitions` partitions to
/// `tasks` (Eq. 2 and Eq. 3 hold, Eq. 1 ≤ 1) with the least Eq. (1)
/// utilization.
pub fn min_cache_alloc(
    inst: &Instance,
    tasks: &[usize],
    partitions: u32,
    options: &SearchOptions,
) -> MinCacheOutcome {
    min_cache_alloc_from(inst, tasks, partitions, options, None)
}

/// [`min_cache_alloc`] starting from a known feasible allocation of the same
/// tasks and partition count (e.g. [`extend_by_one`] of the previous
/// optimum), which only tightens the bound.
pub fn min_cache_alloc_from(
    inst: &Instance,
    tasks: &[usize],
    partitions: u32,
    options: &SearchOptions,
    incumbent: Option<CoreAllocation>,
) -> MinCacheOutcome {
    min_cache_alloc_until(inst, tasks, partitions, options, incumbent, None)
}

/// [`min_cache_alloc_from`] that also ends, like a cut search (anytime:
/// the best allocation found so far, not proven optimal), as soon as `stop`
/// is set (by a timeout, from another thread).
pub fn min_cache_alloc_until(
    inst: &Instance,
    tasks: &[usize],
    partitions: u32,
    options: &SearchOptions,
    incumbent: Option<CoreAllocation>,
    stop: Option<&AtomicBool>,
) -> MinCacheOutcome {
    let order = inst.by_priority(tasks);
    let answer = |allocation, exact| MinCacheOutcome {
        allocation,
        exact,
        nodes: 0,
        stopped: false,
    };
    if order.is_empty() {
        return answer(Some(CoreAllocation::empty(partitions)), true);
    }
    if partitions > crate::partitions::MAX_PARTITIONS {
        // Not a limit of the search: a core cannot have more partitions than
        // a platform (validation keeps N_P ≤ 256).
        return answer(None, true);
    }
    if !may_fit(inst, &order, partitions, options) {
        return answer(None, true);
    }
    let mut nodes = 0;
    let mut best = incumbent.filter(|a| a.tasks == order && a.partitions == partitions);
    if options.sharing {
        // Seed: the best private allocation, and everybody sharing everything.
        let private = Search::new(inst, &order, partitions, &options.without_sharing(), None)
            .until(stop)
            .run();
        nodes += private.nodes;
        best = better(best, private.allocation);
        let all = vec![PartitionSet::range(1, partitions); order.len()];
        best = better(
            best,
            evaluate(inst, &order, all, partitions, options.check_time),
        );
    }
    if let Some(budget) = options.node_budget {
        // Anytime mode: polish the seed before the budgeted search.
        best =
            best.map(|a| local_search(inst, a, options.check_time, budget / 4, &mut nodes, stop));
    }
    let mut outcome = Search::new(inst, &order, partitions, options, best)
        .until(stop)
        .run();
    if !outcome.exact
        && let (Some(budget), Some(found)) = (options.node_budget, outcome.allocation.take())
    {
        outcome.allocation = Some(local_search(
            inst,
            found,
            options.check_time,
            budget / 4,
            &mut nodes,
            stop,
        ));
    }
    MinCacheOutcome {
        nodes: nodes + outcome.nodes,
        stopped: outcome.stopped || stop.is_some_and(|s| s.load(Ordering::Relaxed)),
        ..outcome
    }
}

/// The heuristic half of the anytime mode: first-improvement local search
/// that adds or removes one partition of one task while Eq. (1) drops and
/// the allocation stays feasible, within `evaluations` analyses.
fn local_search(
    inst: &Instance,
    start: CoreAllocation,
    check_time: bool,
    evaluations: u64,
    nodes: &mut u64,
    stop: Option<&AtomicBool>,
) -> CoreAllocation {
    let mut current = start;
    let mut left = evaluations;
    loop {
        let mut improved = false;
        for k in 0..current.tasks.len() {
            for p in 1..=current.partitions {
                let stopped = || stop.is_some_and(|s| s.load(Ordering::Relaxed));
                if left == 0 || (left.is_multiple_of(256) && stopped()) {
                    return current;
                }
                left -= 1;
                *nodes += 1;
                let mut sets = current.sets.clone();
                if sets[k].contains(p) {
                    sets[k] = sets[k].iter().filter(|&q| q != p).collect();
                } else {
                    sets[k].insert(p);
                }
                if let Some(next) =
                    evaluate(inst, &current.tasks, sets, current.partitions, check_time)
                    && next.utilization < current.utilization - EPS
                {
                    current = next;
                    improved = true;
                }
            }
        }
        if !improved {
            return current;
        }
    }
}

/// Necessary conditions, checked before searching (they make hopeless
/// calls, like most of Algorithm 3's k-more-partitions loop, cheap):
/// every task can have |S| ≥ its minimum; the tasks' memory fits the core's
/// memory partitions in total (Eq. 3 summed over partitions); and with each
/// task at its best C^{N} and no cache terms, Eq. (2) holds and Eq. (1) ≤ 1
/// (cache terms and smaller sets only add time).
fn may_fit(inst: &Instance, order: &[usize], partitions: u32, options: &SearchOptions) -> bool {
    let tasks = || order.iter().map(|&i| &inst.tasks[i]);
    if tasks().any(|t| t.min_partitions > partitions || t.wcet_at(partitions) == INFEASIBLE) {
        return false;
    }
    if !options.sharing
        && tasks().map(|t| u64::from(t.min_partitions)).sum::<u64>() > u64::from(partitions)
    {
        return false;
    }
    let memory: u128 = tasks().map(|t| u128::from(t.memory)).sum();
    if memory * u128::from(inst.partitions) > u128::from(inst.total_memory) * u128::from(partitions)
    {
        return false;
    }
    if !options.check_time {
        return true;
    }
    let mut best_case = inst.core_tasks();
    best_case.extend(tasks().map(|t| t.core_task(t.wcet_at(partitions), PartitionSet::EMPTY)));
    core_utilization(&best_case, 0) <= 1.0 && inst.schedulable(&best_case, order, 0)
}

fn better(a: Option<CoreAllocation>, b: Option<CoreAllocation>) -> Option<CoreAllocation> {
    match (a, b) {
        (Some(a), Some(b)) => Some(if b.utilization < a.utilization - EPS {
            b
        } else {
            a
        }),
        (a, b) => a.or(b),
    }
}

/// The allocation of `order` (priority order) with sets `sets`, if it is
/// feasible: every |S| allowed, Eq. (3), and with `check_time` Eq. (2) and
/// Eq. (1) ≤ 1.
pub fn evaluate(
    inst: &Instance,
    order: &[usize],
    sets: Vec<PartitionSet>,
    partitions: u32,
    check_time: bool,
) -> Option<CoreAllocation> {
    let mut core_tasks = inst.core_tasks();
    let mut demands = Vec::with_capacity(order.len());
    for (&i, set) in order.iter().zip(&sets) {
        let task = &inst.tasks[i];
        let wcet = task.wcet_at(set.len());
        if set.len() < task.min_partitions || wcet == INFEASIBLE {
            return None;
        }
        core_tasks.push(task.core_task(wcet, *set));
        demands.push(MemoryDemand {
            memory: task.memory,
            partitions: *set,
        });
    }
    if !crate::analysis::memory::feasible(&demands, inst.total_memory, inst.partitions) {
        return None;
    }
    let utilization = core_utilization(&core_tasks, inst.refill);
    if check_time && (utilization > 1.0 || !inst.schedulable(&core_tasks, order, inst.refill)) {
        return None;
    }
    Some(CoreAllocation {
        tasks: order.to_vec(),
        sets,
        partitions,
        utilization,
    })
}

/// The allocation of `partitions + 1` partitions that gives the new
/// partition, unshared, to the task it helps most: feasible whenever
/// `allocation` is, so a good starting bound for the next search.
pub fn extend_by_one(
    inst: &Instance,
    allocation: &CoreAllocation,
    check_time: bool,
) -> Option<CoreAllocation> {
    let next = allocation.partitions + 1;
    let mut best = None;
    for k in 0..allocation.tasks.len() {
        let mut sets = allocation.sets.clone();
        sets[k].insert(next);
        best = better(
            best,
            evaluate(inst, &allocation.tasks, sets, next, check_time),
        );
    }
    best
}

/// The classes a task may join, with suffix sums for bounds.
#[derive(Default)]
struct Eligible {
    /// (class index, partitions in it, utilization per partition taken), cheapest first.
    classes: Vec<(usize, u32, f64)>,
    /// `capacity[e]`: partitions in classes e.. (one extra 0 at the end).
    capacity: Vec<u32>,
    /// `cheapest[e]`: least per-partition cost in classes e.. (∞ at the end).
    cheapest: Vec<f64>,
}

/// No class: the end of a membership chain.
const NO_CLASS: u32 = u32::MAX;

/// A group of partitions with the same sharing pattern.
///
/// Members are a chain: the class was split off `parent` when task `newest`
/// joined it (or made from free partitions, without a parent). Tasks join
/// in priority order, so `newest` is the lowest-priority member, and a
/// parent always sits at a smaller index of the class stack than its
/// children, which are removed first. No bitmask, so no limit on the
/// number of tasks of a core.
#[derive(Copy, Clone, Debug)]
struct Class {
    /// The class this one was split from, or [`NO_CLASS`].
    parent: u32,
    /// The lowest-priority member (position in the core's priority order).
    newest: u32,
    /// Number of members.
    size: u32,
    count: u32,
    /// Σ M_i/|S(i)| over the members: Eq. (3)'s left-hand side, exact
    /// (`None` once it needs more than 128 bits: the class then takes no
    /// further member, which can only reject a feasible allocation).
    load: Option<Fraction>,
    /// The same in floating point, to decide clear cases without u128 divisions.
    approx: f64,
}

struct Search<'a> {
    inst: &'a Instance,
    order: &'a [usize],
    partitions: u32,
    options: SearchOptions,
    /// Δ/T_i in priority order.
    weights: Vec<f64>,
    /// `rest_bound[k][f]`: least utilization tasks k.. can add with f free partitions.
    rest_bound: Vec<Vec<f64>>,
    sizes: Vec<u32>,
    classes: Vec<Class>,
    free: u32,
    limit: f64,
    accept_equal: bool,
    best: Option<CoreAllocation>,
    /// S(i) of the best allocation found by this search (priority order).
    best_sets: Option<Vec<PartitionSet>>,
    nodes: u64,
    cut: bool,
    stop: Option<&'a AtomicBool>,
    stopped: bool,
    sets: Vec<PartitionSet>,
    core_tasks: Vec<CoreTask>,
}

impl<'a> Search<'a> {
    fn new(
        inst: &'a Instance,
        order: &'a [usize],
        partitions: u32,
        options: &SearchOptions,
        incumbent: Option<CoreAllocation>,
    ) -> Search<'a> {
        let m = order.len();
        let weights: Vec<f64> = order
            .iter()
            .map(|&i| inst.refill as f64 / inst.tasks[i].period as f64)
            .collect();
        // A partition task k shares costs its own Δ/T_k and at least the
        // least Δ/T_j of the higher-priority tasks it can share with.
        let mut least_above = vec![0.0; m];
        for k in 1..m {
            least_above[k] = if k == 1 {
                weights[0]
            } else {
                least_above[k - 1].min(weights[k - 1])
            };
        }
        let mut rest_bound = vec![vec![0.0; partitions as usize + 1]; m + 1];
        for k in (0..m).rev() {
            let per_shared = weights[k] + least_above[k];
            let task = &inst.tasks[order[k]];
            for free in 0..=partitions {
                let least = (task.min_partitions..=partitions)
                    .filter(|&s| task.wcet_at(s) != INFEASIBLE)
                    .filter(|&s| options.sharing || s <= free)
                    .map(|s| {
                        task.wcet_at(s) as f64 / task.period as f64
                            + per_shared * s.saturating_sub(free) as f64
                    })
                    .fold(f64::INFINITY, f64::min);
                rest_bound[k][free as usize] = rest_bound[k + 1][free as usize] + least;
            }
        }
        let (limit, accept_equal) = match &incumbent {
            Some(a) => (a.utilization, false),
            None if options.check_time => (1.0, true),
            None => (f64::INFINITY, true),
        };
        Search {
            inst,
            order,
            partitions,
            options: *options,
            weights,
            rest_bound,
            sizes: vec![0; m],
            classes: Vec::with_capacity(4 * partitions as usize),
            free: partitions,
            limit,
            accept_equal,
            best: incumbent,
            best_sets: None,
            nodes: 0,
            cut: false,
            stop: None,
            stopped: false,
            sets: vec![PartitionSet::EMPTY; m],
            core_tasks: Vec::with_capacity(m),
        }
    }

    /// Ends the search when `stop` is set.
    fn until(mut self, stop: Option<&'a AtomicBool>) -> Self {
        self.stop = stop;
        self
    }

    fn run(mut self) -> MinCacheOutcome {
        self.place(0, 0.0);
        if let Some(sets) = self.best_sets.take() {
            // Re-evaluated with the analysis itself: the search's own
            // bookkeeping must agree with it (it can only differ in the last
            // bits of a float sum at Eq. (1) = 1; then the incumbent stays).
            let found = evaluate(
                self.inst,
                self.order,
                sets,
                self.partitions,
                self.options.check_time,
            );
            debug_assert!(
                found.is_some(),
                "search accepted an allocation the analysis rejects"
            );
            if found.is_some() {
                self.best = found;
            }
        }
        MinCacheOutcome {
            allocation: self.best,
            exact: !self.cut,
            nodes: self.nodes,
            stopped: self.stopped,
        }
    }

    /// Whether a subtree whose utilization is at least `bound` can be
    /// skipped: it cannot beat the incumbent (by more than float slack), or
    /// without an incumbent it cannot meet Eq. (1) ≤ 1.
    fn prunes(&self, bound: f64) -> bool {
        if self.accept_equal {
            bound > self.limit + EPS
        } else {
            bound >= self.limit - EPS
        }
    }

    /// Places task `k` (priority order) with every size and every split over
    /// the current classes; `util` is Eq. (1) of tasks 0..k as placed so far.
    fn place(&mut self, k: usize, util: f64) {
        if self.cut {
            return;
        }
        let m = self.order.len();
        if k == m {
            self.leaf(util);
            return;
        }
        let task = &self.inst.tasks[self.order[k]];
        let last = k + 1 == m;
        for s in (task.min_partitions..=self.partitions).rev() {
            let wcet = task.wcet_at(s);
            if wcet == INFEASIBLE
                || (!self.options.sharing && s > self.free)
                || (last && s < self.free)
            {
                continue;
            }
            let base = util + wcet as f64 / task.period as f64;
            if self.prunes(base + self.rest_bound[k + 1][self.free as usize]) {
                continue;
            }
            let share = Fraction::new(u128::from(task.memory), u128::from(s));
            let share_approx = task.memory as f64 / f64::from(s);
            let eligible = if self.options.sharing {
                self.eligible(k, share, share_approx)
            } else {
                Eligible::default()
            };
            let shareable = eligible.capacity.first().copied().unwrap_or(0);
            let most_free = self.free.min(s);
            let least_free = if last {
                self.free
            } else {
                s.saturating_sub(shareable)
            };
            if least_free > most_free {
                continue;
            }
            let mut takes = Vec::with_capacity(eligible.classes.len());
            for from_free in (least_free..=most_free).rev() {
                let after = (self.free - from_free) as usize;
                if self.prunes(base + self.rest_bound[k + 1][after]) {
                    continue;
                }
                self.spread(
                    k,
                    s,
                    (share, share_approx),
                    from_free,
                    &eligible,
                    0,
                    s - from_free,
                    base,
                    &mut takes,
                );
                if self.cut {
                    return;
                }
            }
        }
    }

    /// Chooses how many partitions task k takes from each eligible class
    /// (cheapest classes first).
    #[allow(clippy::too_many_arguments)]
    fn spread(
        &mut self,
        k: usize,
        size: u32,
        share: (Fraction, f64),
        from_free: u32,
        eligible: &Eligible,
        next: usize,
        remaining: u32,
        util: f64,
        takes: &mut Vec<(usize, u32)>,
    ) {
        if remaining == 0 {
            self.commit(k, size, share, from_free, takes, util);
            return;
        }
        if next == eligible.classes.len() || eligible.capacity[next] < remaining {
            return;
        }
        let after = (self.free - from_free) as usize;
        let rest = self.rest_bound[k + 1][after];
        let (c, count, per_partition) = eligible.classes[next];
        let least = remaining.saturating_sub(eligible.capacity[next + 1]);
        // Most from this (cheapest remaining) class first: the bound only
        // grows as x falls, so the first x that is pruned ends the loop.
        for x in (least..=count.min(remaining)).rev() {
            if !self.visit() {
                return;
            }
            let cost = util + per_partition * x as f64;
            // What is still to take costs at least the cheapest later class.
            let still = if remaining == x {
                0.0
            } else {
                f64::from(remaining - x) * eligible.cheapest[next + 1]
            };
            if self.prunes(cost + still + rest) {
                break;
            }
            if x > 0 {
                takes.push((c, x));
            }
            self.spread(
                k,
                size,
                share,
                from_free,
                eligible,
                next + 1,
                remaining - x,
                cost,
                takes,
            );
            if x > 0 {
                takes.pop();
            }
            if self.cut {
                return;
            }
        }
    }

    /// Applies a split, checks Eq. (2) on the tasks placed so far, recurses, undoes.
    /// Counts a search node; `false` once the budget is spent.
    fn visit(&mut self) -> bool {
        self.nodes += 1;
        if self.options.node_budget.is_some_and(|b| self.nodes > b) {
            self.cut = true;
        }
        // An atomic load every 1024 nodes costs nothing measurable.
        if self.nodes.is_multiple_of(1024) && self.stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
            self.cut = true;
            self.stopped = true;
        }
        !self.cut
    }

    fn commit(
        &mut self,
        k: usize,
        size: u32,
        share: (Fraction, f64),
        from_free: u32,
        takes: &[(usize, u32)],
        util: f64,
    ) {
        let (share, share_approx) = share;
        if !self.visit() {
            return;
        }
        let before = self.classes.len();
        let newest = k as u32;
        for &(c, x) in takes {
            let class = self.classes[c];
            self.classes[c].count -= x;
            self.classes.push(Class {
                parent: c as u32,
                newest,
                size: class.size + 1,
                count: x,
                load: class.load.and_then(|l| l.checked_add(share)),
                approx: class.approx + share_approx,
            });
        }
        if from_free > 0 {
            self.classes.push(Class {
                parent: NO_CLASS,
                newest,
                size: 1,
                count: from_free,
                load: Some(share),
                approx: share_approx,
            });
        }
        self.free -= from_free;
        self.sizes[k] = size;
        if !self.options.check_time || self.prefix_schedulable(k + 1) {
            self.place(k + 1, util);
        }
        self.free += from_free;
        self.classes.truncate(before);
        for &(c, x) in takes {
            self.classes[c].count += x;
        }
    }

    fn leaf(&mut self, util: f64) {
        if self.free != 0 {
            return;
        }
        let better = if self.accept_equal {
            util <= self.limit + EPS
        } else {
            util < self.limit - EPS
        };
        if better {
            self.limit = util;
            self.accept_equal = false;
            let placed = self.order.len();
            self.materialize(placed);
            self.best_sets = Some(self.sets.clone());
        }
    }

    /// The classes task k may join (Eq. 3 still holds), cheapest first, with
    /// the utilization each partition taken from them adds: Δ(1/T_k + 2/T_j)
    /// for a partition of task j alone, Δ(1/T_k + 1/T_low) for a shared one.
    fn eligible(&self, k: usize, share: Fraction, share_approx: f64) -> Eligible {
        let mut classes: Vec<(usize, u32, f64)> = (0..self.classes.len())
            .filter(|&c| {
                self.classes[c].count > 0 && self.fits_with(&self.classes[c], share, share_approx)
            })
            .map(|c| {
                let class = &self.classes[c];
                let low = class.newest as usize;
                let partner = if class.size == 1 { 2.0 } else { 1.0 };
                (
                    c,
                    class.count,
                    self.weights[k] + partner * self.weights[low],
                )
            })
            .collect();
        classes.sort_by(|a, b| a.2.total_cmp(&b.2).then(a.0.cmp(&b.0)));
        let n = classes.len();
        let mut capacity = vec![0; n + 1];
        let mut cheapest = vec![f64::INFINITY; n + 1];
        for e in (0..n).rev() {
            capacity[e] = capacity[e + 1] + classes[e].1;
            cheapest[e] = cheapest[e + 1].min(classes[e].2);
        }
        Eligible {
            classes,
            capacity,
            cheapest,
        }
    }

    /// Eq. (3) for a class joined by a task with per-partition share
    /// `share`: decided in floating point when the margin is clear, exactly otherwise.
    fn fits_with(&self, class: &Class, share: Fraction, share_approx: f64) -> bool {
        let capacity = self.inst.total_memory as f64 / f64::from(self.inst.partitions);
        let load = class.approx + share_approx;
        if load < capacity * (1.0 - 1e-9) {
            true
        } else if load > capacity * (1.0 + 1e-9) {
            false
        } else {
            class
                .load
                .and_then(|l| l.checked_add(share))
                .and_then(|l| fits(l, self.inst.total_memory, self.inst.partitions))
                .unwrap_or(false)
        }
    }

    /// Partition numbers for the classes in order; S(i) of tasks 0..placed.
    fn materialize(&mut self, placed: usize) {
        for set in &mut self.sets[..placed] {
            *set = PartitionSet::EMPTY;
        }
        let mut next = 1;
        for class in self.classes.iter().filter(|c| c.count > 0) {
            let range = PartitionSet::range(next, next + class.count - 1);
            next += class.count;
            let mut member = Some(*class);
            while let Some(m) = member {
                let b = m.newest as usize;
                if b < placed {
                    self.sets[b] = self.sets[b].union(&range);
                }
                member = (m.parent != NO_CLASS).then(|| self.classes[m.parent as usize]);
            }
        }
    }

    /// Eq. (2) for tasks 0..placed: a lower bound of their final response
    /// times, since tasks placed later only add cache terms.
    fn prefix_schedulable(&mut self, placed: usize) -> bool {
        self.materialize(placed);
        self.core_tasks.clear();
        self.core_tasks.extend(self.inst.tick);
        for k in 0..placed {
            let task = &self.inst.tasks[self.order[k]];
            self.core_tasks
                .push(task.core_task(task.wcet_at(self.sizes[k]), self.sets[k]));
        }
        self.inst
            .schedulable(&self.core_tasks, &self.order[..placed], self.inst.refill)
    }
}
