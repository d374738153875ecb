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
    /// releases · T_j: the iterate may grow up to here before j releases
    /// again. Saturates at `u64::MAX`, exactly: a true horizon above that
    /// is above every representable iterate too.
    horizon: u64,
}

/// Stack space for the per-core loops; larger cores fall back to the heap.
const STACK_TASKS: usize = 16;

/// The result of Eq. (2) for one task, with its breakdown at the fixed point.
///
/// The breakdown terms are exact whenever the task meets its deadline (they
/// add up to `wcrt_ns`). When the iteration passed D, they are those of the
/// last iterate and saturate at `u64::MAX` where the true value is larger.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ResponseTime {
    /// The worst-case response time, or `None` once an iterate exceeds D
    /// (including an iterate above 2^64 − 1 ns, which exceeds every D).
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

/// A cache delay |set| · Δ (ω or γ), exactly: `None` if it exceeds 2^64 − 1 ns.
pub fn cache_delay(partitions: u32, refill: u64) -> Option<u64> {
    u64::from(partitions).checked_mul(refill)
}

/// Unions of S(k) over prefixes: `prefix[j]` = ⋃_{k<j} S(k).
fn prefix_unions(tasks: &[CoreTask], prefix: &mut [PartitionSet]) {
    let mut acc = PartitionSet::EMPTY;
    for (slot, task) in prefix.iter_mut().zip(tasks) {
        *slot = acc;
        acc = acc.union(&task.partitions);
    }
}

/// ω_{j,n} for every j: warm-up against all other tasks of the core
/// (`None` where |S ∩ others| · Δ exceeds 2^64 − 1 ns).
fn warmups_against_all(
    tasks: &[CoreTask],
    prefix: &[PartitionSet],
    refill: u64,
    out: &mut [Option<u64>],
) {
    let mut suffix = PartitionSet::EMPTY;
    for j in (0..tasks.len()).rev() {
        let others = prefix[j].union(&suffix);
        out[j] = cache_delay(tasks[j].partitions.intersection_len(&others), refill);
        suffix = suffix.union(&tasks[j].partitions);
    }
}

/// Fills the terms of every j ∈ hp(i) for task `i`. Returns `false` if some
/// term exceeds 2^64 − 1 ns: every such term is paid at least once by the
/// first release of j, so task i then certainly misses its deadline.
fn hp_terms(
    tasks: &[CoreTask],
    i: usize,
    prefix: &[PartitionSet],
    warmup_n: &[Option<u64>],
    refill: u64,
    out: &mut [HpTerms],
) -> bool {
    // `after` = ⋃_{k=j+1..=i} S(k) = ⋃ int(j, i).
    let mut after = PartitionSet::EMPTY;
    for j in (0..i).rev() {
        after = after.union(&tasks[j + 1].partitions);
        let own = &tasks[j].partitions;
        let terms = (|| {
            let warmup_n = warmup_n[j]?;
            let warmup_i = cache_delay(own.intersection_len(&prefix[j].union(&after)), refill)?;
            let crpd = cache_delay(own.intersection_len(&after), refill)?;
            let per_release = tasks[j].wcet.checked_add(warmup_i)?.checked_add(crpd)?;
            // ω_{j,i} ≤ ω_{j,n}: hep(i) is a subset of the whole core.
            let first_extra = warmup_n - warmup_i;
            // The first release pays C_j + ω_{j,n} + γ_{j,i}.
            per_release.checked_add(first_extra)?;
            Some(HpTerms {
                period: tasks[j].period,
                per_release,
                first_extra,
                wcet: tasks[j].wcet,
                warmup_i,
                warmup_n,
                crpd,
                releases: 0,
                horizon: 0,
            })
        })();
        match terms {
            Some(terms) => out[j] = terms,
            None => return false,
        }
    }
    true
}

/// The result for a task whose demand exceeds 2^64 − 1 ns before the first
/// iterate: it misses its deadline.
fn unrepresentable(task: &CoreTask, own_warmup: Option<u64>) -> ResponseTime {
    ResponseTime {
        wcrt_ns: None,
        iterations: 1,
        wcet_ns: task.wcet,
        warmup_ns: own_warmup.unwrap_or(u64::MAX),
        ..ResponseTime::default()
    }
}

impl HpTerms {
    /// Brings ⌈r/T_j⌉ up to `r` and returns how many releases were added.
    /// One period ahead is the common case (a compare and an add); a larger
    /// gap is closed with one division, so the work per iteration does not
    /// grow with R/T.
    fn catch_up(&mut self, r: u64) -> u64 {
        if r <= self.horizon {
            return 0;
        }
        let releases = if r - self.horizon <= self.period {
            self.releases + 1
        } else {
            r.div_ceil(self.period)
        };
        let added = releases - self.releases;
        self.releases = releases;
        self.horizon = releases.saturating_mul(self.period);
        added
    }
}

/// Iterates Eq. (2) for task `i` given its hp terms; stops once R > D.
///
/// The iterate only grows, so ⌈R/T_j⌉ is tracked incrementally: each j keeps
/// its release count and the horizon count·T_j, and a step usually only
/// compares and adds (no division), which is what makes millions of
/// analyses per second possible inside allocation searches. Every sum is
/// checked: a demand above 2^64 − 1 ns is above every deadline, so the
/// iteration stops there with R > D (exactly, never by wrapping).
fn iterate(task: &CoreTask, own_warmup: Option<u64>, hp: &mut [HpTerms]) -> ResponseTime {
    let Some(own_warmup_ns) = own_warmup else {
        return unrepresentable(task, own_warmup);
    };
    let mut demand = task.wcet.checked_add(own_warmup_ns);
    for h in hp.iter_mut() {
        // ⌈R/T_j⌉ ≥ 1 for any R > 0: every j is released once at the critical instant.
        h.releases = 1;
        h.horizon = h.period;
        demand = demand
            .and_then(|d| d.checked_add(h.first_extra))
            .and_then(|d| d.checked_add(h.per_release));
    }
    let Some(mut demand) = demand else {
        return unrepresentable(task, own_warmup);
    };
    let mut r = demand;
    let mut iterations = 1;
    let mut overflowed = false;
    'iterate: while r <= task.deadline {
        for h in hp.iter_mut() {
            let added = h.catch_up(r);
            if added == 0 {
                continue;
            }
            match added
                .checked_mul(h.per_release)
                .and_then(|extra| demand.checked_add(extra))
            {
                Some(next) => demand = next,
                None => {
                    overflowed = true;
                    break 'iterate;
                }
            }
        }
        if demand == r {
            break;
        }
        r = demand;
        iterations += 1;
    }
    let mut result = ResponseTime {
        wcrt_ns: (!overflowed && r <= task.deadline).then_some(r),
        iterations,
        wcet_ns: task.wcet,
        warmup_ns: own_warmup_ns,
        ..ResponseTime::default()
    };
    let (mut interference, mut hp_warmup, mut crpd) = (0u128, 0u128, 0u128);
    for h in hp.iter_mut() {
        // Bring ⌈r/T_j⌉ up to the last iterate (a no-op at a fixed point).
        h.catch_up(r);
        let releases = u128::from(h.releases);
        interference += releases * u128::from(h.wcet);
        hp_warmup += u128::from(h.warmup_n) + (releases - 1) * u128::from(h.warmup_i);
        crpd += releases * u128::from(h.crpd);
    }
    // Exact when R ≤ D (the terms add up to R); saturated only past D.
    let report = |v: u128| u64::try_from(v).unwrap_or(u64::MAX);
    result.interference_ns = report(interference);
    result.hp_warmup_ns = report(hp_warmup);
    result.crpd_ns = report(crpd);
    result
}

/// Runs `f` with scratch buffers sized for `n` tasks, on the stack when small.
fn with_scratch<R>(
    n: usize,
    f: impl FnOnce(&mut [PartitionSet], &mut [Option<u64>], &mut [HpTerms]) -> R,
) -> R {
    if n <= STACK_TASKS {
        let mut prefix = [PartitionSet::EMPTY; STACK_TASKS];
        let mut warmup = [None; STACK_TASKS];
        let mut hp = [HpTerms::default(); STACK_TASKS];
        f(&mut prefix[..n], &mut warmup[..n], &mut hp[..n])
    } else {
        let mut prefix = vec![PartitionSet::EMPTY; n];
        let mut warmup = vec![None; n];
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
                if hp_terms(tasks, i, prefix, warmup, refill, hp) {
                    iterate(&tasks[i], warmup[i], &mut hp[..i])
                } else {
                    unrepresentable(&tasks[i], warmup[i])
                }
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
            hp_terms(tasks, i, prefix, warmup, refill, hp)
                && iterate(&tasks[i], warmup[i], &mut hp[..i])
                    .wcrt_ns
                    .is_some()
        })
    })
}

/// γ_{i,n} for every task: the preemption delay each task can cause to all
/// lower-priority tasks of the core (used by Eq. (1)). Exact in u128 (at
/// most N_P · Δ).
pub fn crpd_caused(tasks: &[CoreTask], refill: u64) -> Vec<u128> {
    let mut below = PartitionSet::EMPTY;
    let mut out = vec![0; tasks.len()];
    for i in (0..tasks.len()).rev() {
        out[i] = u128::from(tasks[i].partitions.intersection_len(&below)) * u128::from(refill);
        below = below.union(&tasks[i].partitions);
    }
    out
}

/// ω_{i,n} for every task: warm-up against all other tasks of the core.
/// Exact in u128 (at most N_P · Δ).
pub fn warmup_delays(tasks: &[CoreTask], refill: u64) -> Vec<u128> {
    let mut prefix = vec![PartitionSet::EMPTY; tasks.len()];
    prefix_unions(tasks, &mut prefix);
    let mut suffix = PartitionSet::EMPTY;
    let mut out = vec![0; tasks.len()];
    for j in (0..tasks.len()).rev() {
        let others = prefix[j].union(&suffix);
        out[j] = u128::from(tasks[j].partitions.intersection_len(&others)) * u128::from(refill);
        suffix = suffix.union(&tasks[j].partitions);
    }
    out
}

/// C_i + ω_{i,n} + γ_{i,n} for every task, the numerator of its Eq. (1)
/// term, exactly (u128: C < 2^64 and each delay ≤ N_P · Δ).
pub fn utilization_numerators(tasks: &[CoreTask], refill: u64) -> Vec<u128> {
    let warmup = warmup_delays(tasks, refill);
    let crpd = crpd_caused(tasks, refill);
    tasks
        .iter()
        .zip(warmup.iter().zip(&crpd))
        .map(|(t, (w, g))| u128::from(t.wcet) + w + g)
        .collect()
}
