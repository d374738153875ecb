//! Response-time analysis on one core, with and without intra-core cache
//! interference: kim2013 Eq. (2), and Joseph and Pandya's test when Δ = 0.
//!
//! Notation (kim2013 Section III-B), tasks of one core indexed by priority,
//! 0 the highest, n the lowest:
//! - hep(i): tasks of priority higher than or equal to i's (i included);
//! - hp(i): tasks of priority strictly higher than i's;
//! - int(j, i): tasks of priority lower than j's and higher than or equal to
//!   i's, i.e. the tasks j can preempt while i is pending;
//! - ω_{j,i} = |S(j) ∩ ⋃_{k ≠ j, k ∈ hep(i)} S(k)| · Δ, cache warm-up delay;
//! - γ_{j,i} = |S(j) ∩ ⋃_{k ∈ int(j,i)} S(k)| · Δ, cache-related preemption delay.
//!
//! Eq. (2):
//! R_i^{k+1} = C_i + ω_{i,n} + Σ_{j∈hp(i)} ⌈R_i^k/T_j⌉ C_j
//!           + Σ_{j∈hp(i)} (ω_{j,n} + (⌈R_i^k/T_j⌉ − 1) ω_{j,i})
//!           + Σ_{j∈hp(i)} ⌈R_i^k/T_j⌉ γ_{j,i}.
//!
//! Grouping by ⌈R/T_j⌉, each higher-priority task j contributes
//! ⌈R/T_j⌉ · (C_j + ω_{j,i} + γ_{j,i}) + (ω_{j,n} − ω_{j,i}): a classic
//! response-time recurrence with inflated costs and a constant, so the
//! iteration is the usual monotone fixed point, in integer nanoseconds.

use crate::partitions::PartitionSet;

/// A task as the per-core analysis needs it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct CoreTask {
    /// C_i at the task's number of partitions, ns.
    pub wcet: u64,
    /// T_i, ns.
    pub period: u64,
    /// D_i ≤ T_i, ns.
    pub deadline: u64,
    /// S(i); empty means "no partition information" (no cache terms).
    pub partitions: PartitionSet,
}

/// The cache terms of one task against one higher-priority task.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
struct HpTerms {
    period: u64,
    /// C_j + ω_{j,i} + γ_{j,i}: paid once per release of j in the window.
    per_release: u64,
    /// ω_{j,n} − ω_{j,i}: the first release pays ω_{j,n} instead of ω_{j,i}.
    first_extra: u64,
    wcet: u64,
    warmup_i: u64,
    warmup_n: u64,
    crpd: u64,
    /// ⌈R/T_j⌉ at the current iterate.
    releases: u64,
    /// releases · T_j: the iterate may grow up to here before j releases again.
    horizon: u64,
}

/// Stack space for the per-core loops; larger cores fall back to the heap.
const STACK_TASKS: usize = 16;

/// The result of Eq. (2) for one task, with its breakdown at the fixed point.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ResponseTime {
    /// The worst-case response time, or `None` once an iterate exceeds D.
    pub wcrt_ns: Option<u64>,
    /// Iterations of the recurrence until it converged or passed D.
    pub iterations: u32,
    /// C_i.
    pub wcet_ns: u64,
    /// ω_{i,n}: the task's own warm-up delay.
    pub warmup_ns: u64,
    /// Σ ⌈R/T_j⌉ C_j over hp(i), at the last iterate.
    pub interference_ns: u64,
    /// Σ (ω_{j,n} + (⌈R/T_j⌉ − 1) ω_{j,i}) over hp(i), at the last iterate.
    pub hp_warmup_ns: u64,
    /// Σ ⌈R/T_j⌉ γ_{j,i} over hp(i), at the last iterate.
    pub crpd_ns: u64,
}

/// Unions of S(k) over prefixes: `prefix[j]` = ⋃_{k<j} S(k).
fn prefix_unions(tasks: &[CoreTask], prefix: &mut [PartitionSet]) {
    let mut acc = PartitionSet::EMPTY;
    for (slot, task) in prefix.iter_mut().zip(tasks) {
        *slot = acc;
        acc = acc.union(&task.partitions);
    }
}

/// ω_{j,n} for every j: warm-up against all other tasks of the core.
fn warmups_against_all(tasks: &[CoreTask], prefix: &[PartitionSet], refill: u64, out: &mut [u64]) {
    let mut suffix = PartitionSet::EMPTY;
    for j in (0..tasks.len()).rev() {
        let others = prefix[j].union(&suffix);
        out[j] = u64::from(tasks[j].partitions.intersection_len(&others)) * refill;
        suffix = suffix.union(&tasks[j].partitions);
    }
}

/// Fills the terms of every j ∈ hp(i) for task `i`.
fn hp_terms(
    tasks: &[CoreTask],
    i: usize,
    prefix: &[PartitionSet],
    warmup_n: &[u64],
    refill: u64,
    out: &mut [HpTerms],
) {
    // `after` = ⋃_{k=j+1..=i} S(k) = ⋃ int(j, i).
    let mut after = PartitionSet::EMPTY;
    for j in (0..i).rev() {
        after = after.union(&tasks[j + 1].partitions);
        let own = &tasks[j].partitions;
        let warmup_i = u64::from(own.intersection_len(&prefix[j].union(&after))) * refill;
        let crpd = u64::from(own.intersection_len(&after)) * refill;
        out[j] = HpTerms {
            period: tasks[j].period,
            per_release: tasks[j].wcet + warmup_i + crpd,
            first_extra: warmup_n[j] - warmup_i,
            wcet: tasks[j].wcet,
            warmup_i,
            warmup_n: warmup_n[j],
            crpd,
            releases: 0,
            horizon: 0,
        };
    }
}

/// Iterates Eq. (2) for task `i` given its hp terms; stops once R > D.
///
/// The iterate only grows, so ⌈R/T_j⌉ is tracked incrementally: each j keeps
/// its release count and the horizon count·T_j, and a step only compares
/// and adds (no division), which is what makes millions of analyses per
/// second possible inside allocation searches.
fn iterate(task: &CoreTask, own_warmup: u64, hp: &mut [HpTerms]) -> ResponseTime {
    let mut demand = task.wcet + own_warmup;
    for h in hp.iter_mut() {
        // ⌈R/T_j⌉ ≥ 1 for any R > 0: every j is released once at the critical instant.
        h.releases = 1;
        h.horizon = h.period;
        demand = demand
            .saturating_add(h.first_extra)
            .saturating_add(h.per_release);
    }
    let mut r = demand;
    let mut iterations = 1;
    while r <= task.deadline {
        for h in hp.iter_mut() {
            while r > h.horizon {
                h.releases += 1;
                h.horizon = h.horizon.saturating_add(h.period);
                demand = demand.saturating_add(h.per_release);
            }
        }
        if demand == r {
            break;
        }
        r = demand;
        iterations += 1;
    }
    let mut result = ResponseTime {
        wcrt_ns: (r <= task.deadline).then_some(r),
        iterations,
        wcet_ns: task.wcet,
        warmup_ns: own_warmup,
        ..ResponseTime::default()
    };
    for h in hp.iter_mut() {
        // Bring ⌈r/T_j⌉ up to the last iterate (a no-op at a fixed point).
        while r > h.horizon {
            h.releases += 1;
            h.horizon = h.horizon.saturating_add(h.period);
        }
        let releases = h.releases;
        result.interference_ns += releases * h.wcet;
        result.hp_warmup_ns += h.warmup_n + (releases - 1) * h.warmup_i;
        result.crpd_ns += releases * h.crpd;
    }
    result
}

/// Runs `f` with scratch buffers sized for `n` tasks, on the stack when small.
fn with_scratch<R>(
    n: usize,
    f: impl FnOnce(&mut [PartitionSet], &mut [u64], &mut [HpTerms]) -> R,
) -> R {
    if n <= STACK_TASKS {
        let mut prefix = [PartitionSet::EMPTY; STACK_TASKS];
        let mut warmup = [0u64; STACK_TASKS];
        let mut hp = [HpTerms::default(); STACK_TASKS];
        f(&mut prefix[..n], &mut warmup[..n], &mut hp[..n])
    } else {
        let mut prefix = vec![PartitionSet::EMPTY; n];
        let mut warmup = vec![0u64; n];
        let mut hp = vec![HpTerms::default(); n];
        f(&mut prefix, &mut warmup, &mut hp)
    }
}

/// Eq. (2) for every task of one core; `tasks` are ordered by priority,
/// highest first. With `refill` = 0 this is Joseph and Pandya's classic test
/// (the paper's "NoCInt").
pub fn response_times(tasks: &[CoreTask], refill: u64) -> Vec<ResponseTime> {
    with_scratch(tasks.len(), |prefix, warmup, hp| {
        prefix_unions(tasks, prefix);
        warmups_against_all(tasks, prefix, refill, warmup);
        (0..tasks.len())
            .map(|i| {
                hp_terms(tasks, i, prefix, warmup, refill, hp);
                iterate(&tasks[i], warmup[i], &mut hp[..i])
            })
            .collect()
    })
}

/// Whether every task of the core meets its deadline under Eq. (2), without
/// allocating and stopping at the first miss: the inner test of allocation
/// searches.
pub fn core_schedulable(tasks: &[CoreTask], refill: u64) -> bool {
    with_scratch(tasks.len(), |prefix, warmup, hp| {
        prefix_unions(tasks, prefix);
        warmups_against_all(tasks, prefix, refill, warmup);
        (0..tasks.len()).all(|i| {
            hp_terms(tasks, i, prefix, warmup, refill, hp);
            iterate(&tasks[i], warmup[i], &mut hp[..i])
                .wcrt_ns
                .is_some()
        })
    })
}

/// γ_{i,n} for every task: the preemption delay each task can cause to all
/// lower-priority tasks of the core (used by Eq. (1)).
pub fn crpd_caused(tasks: &[CoreTask], refill: u64) -> Vec<u64> {
    let mut below = PartitionSet::EMPTY;
    let mut out = vec![0; tasks.len()];
    for i in (0..tasks.len()).rev() {
        out[i] = u64::from(tasks[i].partitions.intersection_len(&below)) * refill;
        below = below.union(&tasks[i].partitions);
    }
    out
}

/// ω_{i,n} for every task: warm-up against all other tasks of the core.
pub fn warmup_delays(tasks: &[CoreTask], refill: u64) -> Vec<u64> {
    with_scratch(tasks.len(), |prefix, warmup, _| {
        prefix_unions(tasks, prefix);
        warmups_against_all(tasks, prefix, refill, warmup);
        warmup.to_vec()
    })
}
