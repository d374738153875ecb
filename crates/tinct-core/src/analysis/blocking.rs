//! B_i, the blocking a task suffers from lower-priority tasks of its core
//! that hold shared resources.
//!
//! Resources are local to a core: a resource whose critical sections run
//! on two cores is refused (`AnalysisError::GlobalResource`), since no
//! multiprocessor locking protocol is analysed. On a core, the ceiling of a
//! resource is the highest priority among the tasks that use it. A critical
//! section of a lower-priority task τ_l can block τ_i when:
//!
//! - `pcp` (immediate priority ceiling, PTHREAD_PRIO_PROTECT): its
//!   resource's ceiling is at least τ_i's priority. τ_l runs the section at
//!   the ceiling, so τ_i cannot start before it ends, and once τ_i runs no
//!   lower-priority task can enter a section that could block it: τ_i is
//!   blocked at most once, by one section, before it starts (Sha, Rajkumar
//!   and Lehoczky 1990; Baker 1991). No context switch is added (the
//!   switch to τ_i is τ_i's own), nor a refill of τ_i's partitions (its
//!   warm-up ω_{i,n} already counts every task of the core).
//! - `pip` (priority inheritance, PTHREAD_PRIO_INHERIT): the same condition
//!   (direct blocking when τ_i uses the resource, push-through blocking when
//!   a higher-priority task does). τ_i may be blocked once by each
//!   lower-priority task and once per resource, so B_i is the smaller of the
//!   two sums of longest sections (Sha et al. 1990, Theorems 10 and 13).
//!   Each such blocking happens while τ_i is ready, so it also costs two
//!   context switches (2δ); and as τ_l inherits the priority of whichever
//!   task it blocks, it may run while any task of hep(i) is part-way through
//!   a job (blocked on the resource, or preempted by a task that is), each
//!   of which then reloads what τ_l evicted: Σ_{k∈hep(i)} |S(k) ∩ S(l)| · Δ.
//! - `none` (a plain mutex): only when τ_i uses the resource itself. Nothing
//!   raises τ_l's priority, so any task of priority between the two can
//!   preempt τ_l while τ_i waits: then the blocking is unbounded (priority
//!   inversion, Sha et al. 1990) and τ_i is unschedulable. When no task of
//!   the core lies between them it is bounded like `pip`, except that only
//!   τ_i is part-way through a job while τ_l runs (a task above τ_i that
//!   waited on the resource would itself be unbounded): 2δ + |S(i) ∩ S(l)| · Δ.
//!
//! When every section that can block τ_i is `pcp`, B_i is the longest of
//! them; otherwise the sums above apply. Sections are not nested.
//!
//! The cache, under every protocol: a section's `length` is, like C^p, its
//! time with the holder's partitions warm (kim2013's model). Other tasks
//! may have evicted them before the section runs, so each section costs
//! its length plus the holder's warm-up ω_{l,n} = |S(l) ∩ ⋃_{k≠l} S(k)| · Δ.
//! And while it runs inside τ_i's busy window, the holder evicts and is
//! preempted like the tasks of hep(i): the recurrence's ω_{j,i} and
//! γ_{j,i} count the partitions of every holder that can block τ_i
//! ([`Blocking::blockers`], see [`super::rta`]), for every τ_j that can
//! preempt the holder: under `pcp` only those above the ceiling
//! ([`Blocking::shielded`] counts the others). Without them a set where a
//! task above the ceiling shares partitions with a holder was certified
//! wrongly: the holder's reloads, and the reloads of the task it evicted,
//! lengthen τ_i's blocking beyond the section's length.
//!
//! A task's explicit `blocking` is used when it is at least the derived
//! B_i (it may cover blocking the task set does not model). Below it, or
//! when the derived B_i is unbounded, it would understate the blocking the
//! file's own sections cause: the derived value is used instead and the
//! analysis says so ([`ExplicitBelowDerived`]), since a smaller B_i could
//! only turn a miss into a wrong SCHEDULABLE.

use super::AnalysisError;
use crate::model::{Protocol, TaskSet};
use crate::partitions::PartitionSet;
use crate::units::Nanos;
use serde::{Deserialize, Serialize};

/// How B_i was found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Blocking {
    /// B_i in ns; `None` when it is unbounded (the task then misses).
    pub blocking_ns: Option<u64>,
    /// Where it comes from, in words.
    pub source: String,
    /// The task's explicit `blocking`, when it was below the derived B_i
    /// and so not used.
    pub explicit_below_derived: Option<ExplicitBelowDerived>,
    /// ⋃ S(l) of the holders whose sections can block the task (they run
    /// inside its busy window); `None` where B_i is the explicit
    /// `blocking`, whose holder is not known (the recurrence then assumes
    /// every lower-priority task of the core).
    #[serde(skip)]
    pub blockers: Option<PartitionSet>,
    /// How many of the tasks directly above it cannot preempt any of those
    /// sections ([`crate::analysis::rta::CoreTask::shielded`]).
    #[serde(skip)]
    pub shielded: u32,
}

/// An explicit `blocking` below the B_i the task set's own resources and
/// critical sections give: the analysis used the derived value.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExplicitBelowDerived {
    /// The explicit `blocking`, ns.
    pub explicit_ns: u64,
    /// The derived B_i, ns; `None` when unbounded.
    pub derived_ns: Option<u64>,
}

impl ExplicitBelowDerived {
    /// In words, with both values and the one used.
    pub fn describe(&self) -> String {
        let derived = match self.derived_ns {
            Some(ns) => format!("{}", crate::units::Nanos(ns)),
            None => "unbounded".to_string(),
        };
        format!(
            "the explicit `blocking` {} is below the B_i {derived} derived from the task set's \
             resources and critical sections; the analysis uses the larger, {derived}",
            crate::units::Nanos(self.explicit_ns)
        )
    }
}

impl Default for Blocking {
    /// No blocking (not unbounded).
    fn default() -> Blocking {
        Blocking {
            blocking_ns: Some(0),
            source: String::new(),
            explicit_below_derived: None,
            blockers: Some(PartitionSet::EMPTY),
            shielded: 0,
        }
    }
}

impl Blocking {
    /// B_i as the recurrence takes it: an unbounded blocking is above every
    /// deadline.
    pub fn value(&self) -> u64 {
        self.blocking_ns.unwrap_or(u64::MAX)
    }
}

/// Refuses a resource used by tasks on more than one core.
pub fn check_local(set: &TaskSet) -> Result<(), AnalysisError> {
    for (r, resource) in set.resources.iter().enumerate() {
        let mut first: Option<(usize, u32)> = None;
        for (i, task) in set.tasks.iter().enumerate() {
            if !task.critical_sections.iter().any(|s| s.resource == r) {
                continue;
            }
            let core = task.core.unwrap_or(0);
            match first {
                None => first = Some((i, core)),
                Some((j, other)) if other != core => {
                    return Err(AnalysisError::GlobalResource {
                        index: i,
                        resource: resource.name.clone(),
                        tasks: [set.tasks[j].name.clone(), task.name.clone()],
                        cores: [other, core],
                    });
                }
                Some(_) => {}
            }
        }
    }
    Ok(())
}

/// One section that can block the task under analysis.
struct Candidate {
    /// Position (priority order on the core) of the task holding it.
    holder: usize,
    resource: usize,
    /// What it costs τ_i, ns (u128: exact; compared with 2^64 later).
    cost: u128,
    pcp: bool,
}

/// B_i for every task of a core; `members` are the core's tasks in priority
/// order (file indices), `refill` Δ (0 for the classic analysis) and
/// `context_switch` δ.
pub fn core_blocking(
    set: &TaskSet,
    members: &[usize],
    refill: u64,
    context_switch: u64,
) -> Vec<Blocking> {
    let n_resources = set.resources.len();
    // Ceiling: the highest priority (lowest position) of the resource's users.
    let mut ceiling = vec![usize::MAX; n_resources];
    for (position, &i) in members.iter().enumerate() {
        for section in &set.tasks[i].critical_sections {
            ceiling[section.resource] = ceiling[section.resource].min(position);
        }
    }
    // ω_{l,n} of every member: the warm-up a section of l may pay.
    let partitions: Vec<PartitionSet> = members
        .iter()
        .map(|&i| set.tasks[i].charged_partitions(&set.platform))
        .collect();
    let warmup: Vec<u128> = (0..members.len())
        .map(|l| {
            let others = partitions
                .iter()
                .enumerate()
                .filter(|&(k, _)| k != l)
                .fold(PartitionSet::EMPTY, |acc, (_, s)| acc.union(s));
            u128::from(partitions[l].intersection_len(&others)) * u128::from(refill)
        })
        .collect();
    let core = Core {
        ceiling: &ceiling,
        partitions: &partitions,
        warmup: &warmup,
        refill,
        context_switch,
    };
    (0..members.len())
        .map(|k| {
            let derived = derived_blocking(set, members, k, &core);
            with_explicit(set.tasks[members[k]].blocking, derived)
        })
        .collect()
}

/// What every task's derived blocking on one core reads.
struct Core<'a> {
    /// Per resource, the position of its highest-priority user.
    ceiling: &'a [usize],
    /// Per position, S(l) (empty without `partitions`).
    partitions: &'a [PartitionSet],
    /// Per position, ω_{l,n} (ns, exact).
    warmup: &'a [u128],
    /// Δ.
    refill: u64,
    /// δ.
    context_switch: u64,
}

/// B_i as the analysis takes it: the task's explicit `blocking` when it is
/// at least the `derived` one, else the derived one, marked.
fn with_explicit(explicit: Option<Nanos>, derived: Blocking) -> Blocking {
    let Some(explicit) = explicit else {
        return derived;
    };
    match derived.blocking_ns {
        Some(ns) if ns <= explicit.0 => Blocking {
            blocking_ns: Some(explicit.0),
            source: "explicit `blocking`".into(),
            explicit_below_derived: None,
            blockers: None,
            shielded: 0,
        },
        derived_ns => Blocking {
            explicit_below_derived: Some(ExplicitBelowDerived {
                explicit_ns: explicit.0,
                derived_ns,
            }),
            source: format!(
                "{}; above the explicit `blocking` {explicit}, which is not used",
                derived.source
            ),
            ..derived
        },
    }
}

/// B_i from the task set's resources and critical sections alone.
fn derived_blocking(set: &TaskSet, members: &[usize], k: usize, core: &Core<'_>) -> Blocking {
    let (ceiling, refill, context_switch) = (core.ceiling, core.refill, core.context_switch);
    let task = &set.tasks[members[k]];
    let uses = |r: usize| task.critical_sections.iter().any(|s| s.resource == r);
    let own = task.charged_partitions(&set.platform);
    let mut candidates = Vec::new();
    for (holder, &l) in members.iter().enumerate().skip(k + 1) {
        let lower = &set.tasks[l];
        for section in &lower.critical_sections {
            let r = section.resource;
            let resource = &set.resources[r];
            // The section with its holder's partitions reloaded.
            let length = u128::from(section.length.0) + core.warmup[holder];
            let held = lower.charged_partitions(&set.platform);
            // Two switches and the refill of what τ_l evicted of τ_i.
            let while_ready = 2 * u128::from(context_switch)
                + u128::from(own.intersection_len(&held)) * u128::from(refill);
            // Under inheritance τ_l may also run while any task of hep(i)
            // is part-way through a job (blocked on the resource, or
            // preempted by one that is): each reloads what τ_l evicted.
            let mid_job = 2 * u128::from(context_switch)
                + (0..=k)
                    .map(|m| u128::from(core.partitions[m].intersection_len(&held)))
                    .sum::<u128>()
                    * u128::from(refill);
            let cost = match resource.protocol {
                Protocol::Pcp if ceiling[r] <= k => length,
                Protocol::Pip if ceiling[r] <= k => length + mid_job,
                Protocol::None if uses(r) => {
                    if holder > k + 1 {
                        let between = &set.tasks[members[k + 1]].name;
                        return Blocking {
                            blocking_ns: None,
                            source: format!(
                                "unbounded: lower-priority '{}' holds '{}' (protocol none, no priority boost) and '{between}' can preempt it while this task waits",
                                lower.name, resource.name
                            ),
                            explicit_below_derived: None,
                            blockers: None,
                            shielded: 0,
                        };
                    }
                    length + while_ready
                }
                _ => continue,
            };
            candidates.push(Candidate {
                holder,
                resource: r,
                cost,
                pcp: resource.protocol == Protocol::Pcp,
            });
        }
    }
    if candidates.is_empty() {
        return Blocking {
            blocking_ns: Some(0),
            source: "no lower-priority section can block it".into(),
            explicit_below_derived: None,
            blockers: Some(PartitionSet::EMPTY),
            shielded: 0,
        };
    }
    let describe = |c: &Candidate| {
        format!(
            "'{}' on '{}'",
            set.tasks[members[c.holder]].name, set.resources[c.resource].name
        )
    };
    let (value, source) = if candidates.iter().all(|c| c.pcp) {
        let longest = candidates.iter().max_by_key(|c| c.cost).expect("not empty");
        (
            longest.cost,
            format!("pcp: the longest section, {}", describe(longest)),
        )
    } else {
        let by_task = sum_of_maxima(&candidates, |c| c.holder);
        let by_resource = sum_of_maxima(&candidates, |c| c.resource);
        if by_task <= by_resource {
            (
                by_task,
                "pip: the longest section of each lower-priority task, summed".to_string(),
            )
        } else {
            (
                by_resource,
                "pip: the longest section on each resource, summed".to_string(),
            )
        }
    };
    let holders = candidates.iter().fold(PartitionSet::EMPTY, |acc, c| {
        acc.union(&set.tasks[members[c.holder]].charged_partitions(&set.platform))
    });
    // The tasks from the lowest ceiling down to τ_i cannot preempt a
    // ceiling-protocol section; under inheritance (or none) any task above
    // τ_i can preempt the holder.
    let lowest_ceiling = candidates
        .iter()
        .map(|c| if c.pcp { ceiling[c.resource] } else { k })
        .max()
        .unwrap_or(k);
    let shielded = u32::try_from(k - lowest_ceiling).unwrap_or(0);
    match u64::try_from(value) {
        Ok(ns) => Blocking {
            blocking_ns: Some(ns),
            source,
            explicit_below_derived: None,
            blockers: Some(holders),
            shielded,
        },
        Err(_) => Blocking {
            blocking_ns: None,
            source: format!("{source}, above 2^64 ns"),
            explicit_below_derived: None,
            blockers: Some(holders),
            shielded,
        },
    }
}

/// Σ over the groups of `key` of the largest cost in the group.
fn sum_of_maxima(candidates: &[Candidate], key: impl Fn(&Candidate) -> usize) -> u128 {
    let mut maxima: Vec<(usize, u128)> = Vec::new();
    for c in candidates {
        let k = key(c);
        match maxima.iter_mut().find(|(g, _)| *g == k) {
            Some((_, m)) => *m = (*m).max(c.cost),
            None => maxima.push((k, c.cost)),
        }
    }
    maxima.iter().map(|(_, m)| m).sum()
}
