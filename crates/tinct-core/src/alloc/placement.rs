//! `plan --placement static` (demarchi): the affinity graph
//! partitioned offline onto cache domains.
//!
//! Every task gets a core so that the bytes handed over between cache
//! domains (Σ `buffer` over the edges whose two ends run in different
//! domains) is least, subject to a utilization bound per core
//! (Σ (C + 2δ + ε)/T ≤ `utilization_bound`) and to the analysis: the placed
//! set must be schedulable by [`crate::analysis::analyze`] — jitter,
//! blocking, overheads and the jitter data-triggered tasks inherit
//! included — and every chain bounded. Tasks that share a resource go to
//! one core (resources are analysed per core).
//!
//! The search is an exact branch-and-bound over task → core assignments:
//! tasks in decreasing order of the bytes on their edges, each tried on the
//! cores that add the fewest crossing bytes first; a branch is cut when its
//! crossing bytes reach the best placement's, when a core passes the bound,
//! or when a core's tasks miss a deadline among themselves with the jitter
//! they declare ([`crate::analysis::core_feasible_so_far`]: adding tasks or
//! inherited jitter only lengthens response times). Empty cores of one
//! domain, and empty domains of one size, are interchangeable, so only the
//! first of each is tried. A node budget makes the search anytime: past it
//! the best placement found is kept and reported as not proven optimal.
//!
//! The placement assigns cores, and priorities in the set's rank order
//! (none to a SCHED_DEADLINE reservation, which EDF orders; a core with
//! reservations is tested as the analysis tests it, the EDF test first).
//! A task's given partitions S(i) are kept, and tasks whose S(i) meet go
//! to one core (the analysis bounds no sharing across cores). With Δ > 0,
//! the tasks the input leaves without partitions get their core's block:
//! the partitions no task was given, split in equal consecutive blocks, one
//! per core (kim2013's cache reservation per core; [`reserve_blocks`]).
//! Where there are fewer such partitions than cores, they keep none, the
//! analysis charges them every partition
//! ([`crate::model::Task::charged_partitions`]), and they share one core
//! with every task that touches the cache.

use crate::analysis::rta::{CoreTask, utilization_numerators};
use crate::analysis::{Analysis, analyze_until, core_feasible_so_far};
use crate::model::TaskSet;
use crate::partitions::{MAX_PARTITIONS, PartitionSet};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use tinct_base::InputError;

/// How to place.
#[derive(Copy, Clone, Debug)]
pub struct PlacementOptions<'a> {
    /// The largest utilization a core may take.
    pub utilization_bound: f64,
    /// Search nodes before settling for the best placement found (`None`:
    /// exhaustive).
    pub node_budget: Option<u64>,
    /// Set from elsewhere (a timeout) to stop with the best placement so far.
    pub stop: Option<&'a AtomicBool>,
}

impl PlacementOptions<'_> {
    /// Refuses a utilization bound that is not a number above 0 (NaN would
    /// cap nothing).
    pub fn check(&self) -> Result<(), PlacementRefusal> {
        let bound = self.utilization_bound;
        if bound > 0.0 && bound.is_finite() {
            Ok(())
        } else {
            Err(PlacementRefusal::UtilizationBound(bound))
        }
    }
}

/// A placement request refused before any search: bad input, never a
/// verdict on the set.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PlacementRefusal {
    /// The utilization bound is not a number above 0.
    UtilizationBound(f64),
}

impl PlacementRefusal {
    /// The refusal as tinct's input error, `field` the front end's name of
    /// the option (`--utilization-bound`, `utilization_bound`).
    pub fn input_error(&self, field: &str) -> InputError {
        match self {
            PlacementRefusal::UtilizationBound(bound) => {
                InputError::new("", field, "a number above 0", bound.to_string())
            }
        }
    }
}

impl std::fmt::Display for PlacementRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.input_error("utilization bound").fmt(f)
    }
}

impl std::error::Error for PlacementRefusal {}

impl Default for PlacementOptions<'_> {
    fn default() -> Self {
        PlacementOptions {
            utilization_bound: 1.0,
            node_budget: Some(2_000_000),
            stop: None,
        }
    }
}

/// An edge whose ends run in different cache domains.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CrossingEdge {
    /// Producer (name).
    pub from: String,
    /// Consumer (name).
    pub to: String,
    /// Bytes per job.
    pub buffer: u64,
}

/// One core of a placement.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlacedCore {
    /// Core number.
    pub core: u32,
    /// Its cache domain (index into the platform's `cache_domains`).
    pub domain: usize,
    /// Σ (C + 2δ + ε)/T of its tasks.
    pub utilization: f64,
    /// Its tasks (names), highest priority first.
    pub tasks: Vec<String>,
    /// The partitions its tasks use: those given in the input, and its
    /// block ([`reserve_blocks`]) for the tasks given none.
    pub partitions: Vec<u32>,
    /// Its block of [`reserve_blocks`] gave partitions to tasks without any.
    pub reserved: bool,
}

/// How far a core's summed utilization may pass the bound and still be
/// within it: float sums depend on the order of their terms (0.12 + 0.42 +
/// 0.06 is above 0.6 by one ulp, 0.42 + 0.12 + 0.06 is not), and the order
/// the search adds tasks in must not decide a placement.
pub const UTILIZATION_TOLERANCE: f64 = 1e-9;

/// The result of [`place_static`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StaticPlacement {
    /// A placement was found (every task placed, the set schedulable).
    pub found: bool,
    /// Bytes per job crossing cache domains.
    pub crossing_bytes: u64,
    /// The edges that cross.
    pub crossing: Vec<CrossingEdge>,
    /// Per core.
    pub cores: Vec<PlacedCore>,
    /// The search was exhaustive: the placement is optimal (or none exists).
    pub exact: bool,
    /// Search nodes.
    pub nodes: u64,
    /// The search was stopped from outside (a timeout).
    pub stopped: bool,
    /// The bound used.
    pub utilization_bound: f64,
    /// Why no placement was found, when none was.
    pub reason: Option<String>,
    /// The set with `core` and `priority` filled in (partitions as given).
    #[serde(skip)]
    pub planned: Option<TaskSet>,
    /// Its analysis.
    #[serde(skip)]
    pub analysis: Option<Analysis>,
}

struct Search<'a> {
    set: &'a TaskSet,
    /// `set` with every task of [`Search::blocks`] given the first block:
    /// the blocks are disjoint, of one size and meet no given partition, so
    /// a core's schedulability does not depend on which block it has.
    feasibility: &'a TaskSet,
    /// Per core, the partitions its tasks without any get ([`reserve_blocks`]).
    blocks: Option<Vec<PartitionSet>>,
    /// Per task: the numerator of its utilization term, and its period.
    load: Vec<(u128, u64)>,
    /// Tasks in the order they are placed.
    order: Vec<usize>,
    /// Per task: (other end, bytes) of its edges.
    neighbours: Vec<Vec<(usize, u64)>>,
    /// Groups of tasks that must share a core ([`one_core_groups`]).
    groups: Vec<Vec<usize>>,
    /// Per task: its group.
    group_of: Vec<usize>,
    domain: Vec<usize>,
    domain_sizes: Vec<usize>,
    ranks: Vec<u32>,
    options: PlacementOptions<'a>,
    core_of: Vec<Option<u32>>,
    members: Vec<Vec<usize>>,
    utilization: Vec<f64>,
    nodes: u64,
    cut: bool,
    best: Option<(u64, Vec<u32>, Analysis)>,
}

/// Places `set`'s tasks on cores to minimise the bytes crossing cache
/// domains, as described in the module documentation. Refused before any
/// search when `options` are bad ([`PlacementOptions::check`]).
pub fn place_static(
    set: &TaskSet,
    options: &PlacementOptions,
) -> Result<StaticPlacement, PlacementRefusal> {
    options.check()?;
    let mut base = set.clone();
    let ranks = set.ranks();
    for (task, &rank) in base.tasks.iter_mut().zip(&ranks) {
        task.core = None;
        // A reservation has no priority: EDF orders its jobs.
        task.priority = (!task.is_deadline()).then_some(rank);
    }
    let n = base.tasks.len();
    let overheads = base.platform.overheads;
    let blocks = reserve_blocks(&base);
    let feasibility = blocks.as_ref().map(|blocks| with_block(&base, blocks[0]));
    // C as the analysis takes it: C^{|S(i)|}, the block's size included.
    let core_tasks: Vec<CoreTask> = feasibility
        .as_ref()
        .unwrap_or(&base)
        .tasks
        .iter()
        .map(|t| CoreTask {
            overhead: overheads.context_switch.0.saturating_mul(2),
            interrupt: overheads.tick.0,
            ..CoreTask::new(
                t.effective_wcet().unwrap_or_else(|| t.wcet.worst()).0,
                t.period.0,
                t.deadline.0,
                PartitionSet::EMPTY,
            )
        })
        .collect();
    let load = utilization_numerators(&core_tasks, 0)
        .into_iter()
        .zip(&base.tasks)
        .map(|(numerator, t)| (numerator, t.period.0))
        .collect();
    let mut neighbours = vec![Vec::new(); n];
    let mut bytes = vec![0u128; n];
    for edge in &base.edges {
        neighbours[edge.from].push((edge.to, edge.buffer.0));
        neighbours[edge.to].push((edge.from, edge.buffer.0));
        bytes[edge.from] += u128::from(edge.buffer.0);
        bytes[edge.to] += u128::from(edge.buffer.0);
    }
    let (groups, group_of) = one_core_groups(&base, blocks.is_some());
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(bytes[i]), ranks[i]));
    let domains = base.platform.cache_domains();
    let cores = base.platform.cores as usize;
    let mut search = Search {
        set: &base,
        feasibility: feasibility.as_ref().unwrap_or(&base),
        blocks,
        load,
        order,
        neighbours,
        groups,
        group_of,
        domain: base.platform.domain_of_cores(),
        domain_sizes: domains.iter().map(Vec::len).collect(),
        ranks: ranks.clone(),
        options: *options,
        core_of: vec![None; n],
        members: vec![Vec::new(); cores],
        utilization: vec![0.0; cores],
        nodes: 0,
        cut: false,
        best: None,
    };
    search.place(0, 0);
    let stopped = options.stop.is_some_and(|s| s.load(Ordering::Relaxed));
    let exact = !search.cut;
    let nodes = search.nodes;
    let domain = search.domain.clone();
    let load = search.load.clone();
    Ok(match search.best.take() {
        Some((crossing_bytes, assignment, analysis)) => {
            let core_of: Vec<Option<u32>> = assignment.iter().map(|&c| Some(c)).collect();
            let planned = search.planned(&core_of);
            let crossing = planned
                .edges
                .iter()
                .filter(|e| {
                    domain[assignment[e.from] as usize] != domain[assignment[e.to] as usize]
                })
                .map(|e| CrossingEdge {
                    from: planned.tasks[e.from].name.clone(),
                    to: planned.tasks[e.to].name.clone(),
                    buffer: e.buffer.0,
                })
                .collect();
            let cores = analysis
                .cores
                .iter()
                .map(|c| PlacedCore {
                    core: c.core,
                    domain: domain[c.core as usize],
                    utilization: c
                        .task_indices
                        .iter()
                        .map(|&i| load[i].0 as f64 / load[i].1 as f64)
                        .sum(),
                    tasks: c.tasks.clone(),
                    partitions: c.partitions.clone(),
                    reserved: c
                        .task_indices
                        .iter()
                        .any(|&i| search.set.tasks[i].partitions.is_none())
                        && search.blocks.is_some(),
                })
                .collect();
            StaticPlacement {
                found: true,
                crossing_bytes,
                crossing,
                cores,
                exact,
                nodes,
                stopped,
                utilization_bound: options.utilization_bound,
                reason: None,
                planned: Some(planned),
                analysis: Some(analysis),
            }
        }
        None => StaticPlacement {
            found: false,
            crossing_bytes: 0,
            crossing: Vec::new(),
            cores: Vec::new(),
            exact,
            nodes,
            stopped,
            utilization_bound: options.utilization_bound,
            reason: Some(if stopped {
                "stopped before a placement was found".to_string()
            } else if exact {
                let unpartitioned =
                    base.platform.refill.0 > 0 && base.tasks.iter().any(|t| t.partitions.is_none());
                format!(
                    "no placement on {} core(s) keeps every core within utilization {} with every task meeting its deadline (and tasks sharing a resource or a partition on one core){}",
                    base.platform.cores,
                    options.utilization_bound,
                    if unpartitioned {
                        "; with Δ > 0 a task without `partitions` may use every colour, so it shares \
                         its core with every task: give partitions (`--placement cata` assigns them) or Δ = 0"
                    } else {
                        ""
                    }
                )
            } else {
                format!("the search budget ran out ({nodes} nodes) before a placement was found")
            }),
            planned: None,
            analysis: None,
        },
    })
}

/// kim2013's cache reservation per core for the tasks `set` leaves without
/// partitions, when Δ > 0: the partitions no task was given, in equal
/// consecutive blocks of ⌊free / N_C⌋, one per core (the rest unused).
/// `None` when nothing needs a block (Δ = 0, or every task has partitions),
/// when there are fewer free partitions than cores, or when a task's WCET
/// table lists no C^p at the block's size.
pub fn reserve_blocks(set: &TaskSet) -> Option<Vec<PartitionSet>> {
    let platform = &set.platform;
    let unpartitioned: Vec<_> = set
        .tasks
        .iter()
        .filter(|t| t.partitions.is_none())
        .collect();
    if platform.refill.0 == 0 || unpartitioned.is_empty() {
        return None;
    }
    let given = set
        .tasks
        .iter()
        .filter_map(|t| t.partitions)
        .fold(PartitionSet::EMPTY, |acc, s| acc.union(&s));
    let free: Vec<u32> = (1..=platform.partitions.min(MAX_PARTITIONS))
        .filter(|&p| !given.contains(p))
        .collect();
    let per_core = free.len() / platform.cores.max(1) as usize;
    let size = u32::try_from(per_core).ok()?;
    if size == 0 || unpartitioned.iter().any(|t| t.wcet.at(size).is_none()) {
        return None;
    }
    Some(
        free.chunks_exact(per_core)
            .take(platform.cores as usize)
            .map(|block| {
                block.iter().fold(PartitionSet::EMPTY, |mut acc, &p| {
                    acc.insert(p);
                    acc
                })
            })
            .collect(),
    )
}

/// `set` with every task without partitions given `block`.
fn with_block(set: &TaskSet, block: PartitionSet) -> TaskSet {
    let mut out = set.clone();
    for task in out.tasks.iter_mut().filter(|t| t.partitions.is_none()) {
        task.partitions = Some(block);
    }
    out
}

/// The tasks that must run on one core, as groups and each task's group:
/// tasks that share a resource (resources are analysed per core) or a
/// charged partition (no sharing across cores is bounded), closed
/// transitively. Near linear: a union-find over each resource's and each
/// partition's users.
fn one_core_groups(set: &TaskSet, reserved: bool) -> (Vec<Vec<usize>>, Vec<usize>) {
    fn root(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    let n = set.tasks.len();
    let mut parent: Vec<usize> = (0..n).collect();
    let mut first_user: HashMap<(bool, usize), usize> = HashMap::new();
    for (i, task) in set.tasks.iter().enumerate() {
        // A task that gets its core's block shares it with no other core.
        let charged = match task.partitions {
            None if reserved => PartitionSet::EMPTY,
            _ => task.charged_partitions(&set.platform),
        };
        let partitions = charged.iter().map(|p| (true, p as usize));
        let resources = task.critical_sections.iter().map(|s| (false, s.resource));
        for key in partitions.chain(resources) {
            let first = *first_user.entry(key).or_insert(i);
            let (a, b) = (root(&mut parent, first), root(&mut parent, i));
            parent[a] = b;
        }
    }
    let mut index_of_root: HashMap<usize, usize> = HashMap::new();
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut group_of = Vec::with_capacity(n);
    for i in 0..n {
        let r = root(&mut parent, i);
        let g = *index_of_root.entry(r).or_insert_with(|| {
            groups.push(Vec::new());
            groups.len() - 1
        });
        groups[g].push(i);
        group_of.push(g);
    }
    (groups, group_of)
}

impl Search<'_> {
    /// The set placed as `core_of` says, each task without partitions given
    /// its core's block.
    fn planned(&self, core_of: &[Option<u32>]) -> TaskSet {
        let mut planned = self.set.clone();
        for (task, core) in planned.tasks.iter_mut().zip(core_of) {
            task.core = *core;
            if task.partitions.is_none()
                && let (Some(blocks), Some(core)) = (&self.blocks, core)
            {
                task.partitions = Some(blocks[*core as usize]);
            }
        }
        planned
    }

    /// Bytes added by placing `task` on `core` against the tasks placed.
    fn added_bytes(&self, task: usize, core: u32) -> u64 {
        let d = self.domain[core as usize];
        self.neighbours[task]
            .iter()
            .filter_map(|&(other, bytes)| {
                let c = self.core_of[other]?;
                (self.domain[c as usize] != d).then_some(bytes)
            })
            .fold(0u64, u64::saturating_add)
    }

    /// The cores worth trying for `task`: one empty core per domain, one
    /// empty domain per size; the core of a task of its group
    /// ([`one_core_groups`]) if one is placed.
    fn candidates(&self, task: usize) -> Vec<u32> {
        let group = &self.groups[self.group_of[task]];
        if let Some(core) = group.iter().find_map(|&o| self.core_of[o]) {
            return vec![core];
        }
        let mut seen_empty_domain_sizes = Vec::new();
        let mut empty_core_in_domain = vec![false; self.domain_sizes.len()];
        let mut out = Vec::new();
        for (d, cores) in self.set.platform.cache_domains().iter().enumerate() {
            let domain_empty = cores.iter().all(|&c| self.members[c as usize].is_empty());
            if domain_empty {
                if seen_empty_domain_sizes.contains(&cores.len()) {
                    continue;
                }
                seen_empty_domain_sizes.push(cores.len());
            }
            for &core in cores {
                if self.members[core as usize].is_empty() {
                    if empty_core_in_domain[d] {
                        continue;
                    }
                    empty_core_in_domain[d] = true;
                }
                out.push(core);
            }
        }
        out.sort_by(|&a, &b| {
            self.added_bytes(task, a)
                .cmp(&self.added_bytes(task, b))
                .then(self.utilization[a as usize].total_cmp(&self.utilization[b as usize]))
                .then(a.cmp(&b))
        });
        out
    }

    fn out_of_budget(&mut self) -> bool {
        let stopped = self.options.stop.is_some_and(|s| s.load(Ordering::Relaxed));
        if stopped || self.options.node_budget.is_some_and(|b| self.nodes >= b) {
            self.cut = true;
        }
        self.cut
    }

    fn place(&mut self, depth: usize, cost: u64) {
        if self.out_of_budget() {
            return;
        }
        self.nodes += 1;
        if self.best.as_ref().is_some_and(|(best, _, _)| cost >= *best) {
            return;
        }
        if depth == self.order.len() {
            self.leaf(cost);
            return;
        }
        let task = self.order[depth];
        let (numerator, period) = self.load[task];
        for core in self.candidates(task) {
            let c = core as usize;
            let utilization = self.utilization[c] + numerator as f64 / period as f64;
            if utilization > self.options.utilization_bound + UTILIZATION_TOLERANCE {
                continue;
            }
            let added = cost.saturating_add(self.added_bytes(task, core));
            if self
                .best
                .as_ref()
                .is_some_and(|(best, _, _)| added >= *best)
            {
                continue;
            }
            let before = self.utilization[c];
            self.core_of[task] = Some(core);
            let position = self.members[c].partition_point(|&o| self.ranks[o] < self.ranks[task]);
            self.members[c].insert(position, task);
            self.utilization[c] = utilization;
            if core_feasible_so_far(self.feasibility, &self.members[c]) {
                self.place(depth + 1, added);
            }
            self.members[c].remove(position);
            self.utilization[c] = before;
            self.core_of[task] = None;
            if self.cut {
                return;
            }
        }
    }

    /// A complete assignment: the whole analysis decides (a stop during
    /// it ends the search, like a stop between two nodes).
    fn leaf(&mut self, cost: u64) {
        let planned = self.planned(&self.core_of);
        let analysis = match analyze_until(&planned, self.options.stop) {
            Ok(Some(analysis)) => analysis,
            Ok(None) => {
                self.cut = true;
                return;
            }
            Err(_) => return,
        };
        if analysis.schedulable && analysis.chains.iter().all(|c| c.bound_ns.is_some()) {
            let assignment = self.core_of.iter().map(|c| c.unwrap_or(0)).collect();
            self.best = Some((cost, assignment, analysis));
        }
    }
}
