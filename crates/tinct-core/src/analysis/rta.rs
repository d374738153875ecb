//! Response-time analysis on one core, with and without intra-core cache
//! interference: kim2013 Eq. (2), and Joseph and Pandya's test when Δ = 0,
//! extended with release jitter, blocking and platform overheads.
//!
//! Notation (kim2013 Section III-B), tasks of one core indexed by priority,
//! 0 the highest, n the lowest:
//! - hep(i): tasks of priority higher than or equal to i's (i included);
//! - hp(i): tasks of priority strictly higher than i's;
//! - int(j, i): tasks of priority lower than j's and higher than or equal to
//!   i's, i.e. the tasks j can preempt while i is pending;
//! - blk(i): the lower-priority tasks that may run inside i's busy window
//!   because they hold a resource that blocks i (empty when B_i = 0);
//! - ω_{j,i} = |S(j) ∩ ⋃_{k ≠ j, k ∈ hep(i) ∪ blk(i, j)} S(k)| · Δ, cache warm-up delay;
//! - γ_{j,i} = |S(j) ∩ ⋃_{k ∈ int(j,i) ∪ blk(i, j)} S(k)| · Δ, cache-related preemption
//!   delay, where blk(i, j) is blk(i) when j can preempt the holders' sections
//!   and empty when it cannot (under the ceiling protocol, j at or below the
//!   ceiling: the holder ends before j's first job, whose ω_{j,n} counts it).
//!
//! kim2013 has no blocking, so its ω_{j,i} and γ_{j,i} range over hep(i)
//! and int(j,i) only. With blocking, a holder τ_l ∈ blk(i) runs its
//! section inside i's busy window: it can evict the partitions of a
//! higher-priority task between two of its jobs (ω) and be preempted by one
//! and reload what it evicted (γ). Leaving blk(i) out would understate
//! w_i, a wrong SCHEDULABLE; `CoreTask::blockers` names blk(i)'s partitions
//! ([`super::blocking`] derives them; unknown, every lower-priority task of
//! the core is assumed).
//!
//! Eq. (2) with release jitter J and blocking B (the jitter- and
//! blocking-aware recurrence of Audsley, Burns, Richardson, Tindell and
//! Wellings 1993, with kim2013's cache terms per release):
//!
//! w_i = B_i + C'_i + ω_{i,n} + Σ_{j∈hp(i)} ⌈(w_i + J_j)/T_j⌉ (C'_j + ω_{j,i} + γ_{j,i})
//!     + Σ_{j∈hp(i)} (ω_{j,n} − ω_{j,i}) + I(w_i),  R_i = J_i + w_i,
//!
//! schedulable iff R_i ≤ D_i. C'_j = C_j + the task's per-job overhead
//! (2δ, sebek2002), and I(w) = Σ_{k on the core} ⌈(w + J_k)/T_k⌉ ε_k the
//! timer interrupts that release jobs (each task's `interrupt` ε_k; the
//! periodic scheduler tick is a top-priority task the caller adds). With
//! J = B = 0 and no overheads this is kim2013's Eq. (2) exactly: grouping by
//! ⌈w/T_j⌉, each j contributes ⌈w/T_j⌉ (C_j + ω_{j,i} + γ_{j,i}) + (ω_{j,n} −
//! ω_{j,i}).
//!
//! The iteration is the usual monotone fixed point, in integer nanoseconds,
//! made fast in the manner of Davis, Zabos and Burns ("Efficient exact
//! schedulability tests for fixed priority real-time systems", IEEE TC
//! 2008): it starts from a lower bound of the fixed point — the response
//! time of the next higher-priority task plus C'_i (Sjödin and Hansson
//! 1998), which section "Start value" below proves valid with the cache
//! terms, jitter and blocking — and stops as soon as an iterate passes
//! D_i − J_i. The release counts ⌈(w + J_j)/T_j⌉ are tracked incrementally
//! across iterations and across the tasks of a core, so a step usually only
//! compares and adds.
//!
//! # Start value
//!
//! Let f_i be the right-hand side above and v_i the least fixed point of
//! f_i − B_i (task i without blocking). For x > 0, the terms of hp(i−1) in
//! f_i are at least those in f_{i−1} (ω_{j,i} ≥ ω_{j,i−1}, γ_{j,i} ≥
//! γ_{j,i−1} and ⌈·⌉ ≥ 1), task i−1's own term in f_i is at least C'_{i−1} +
//! ω_{i−1,n}, and I is the same function for every task, so
//! f_i(x) − B_i ≥ f_{i−1}(x) − B_{i−1} + C'_i + ω_{i,n}. Hence v_i ≥ v_{i−1} +
//! C'_i + ω_{i,n} and the least fixed point w_i ≥ v_i + B_i. Any iterate of
//! task i−1 is at most its fixed point, so when B_{i−1} = 0 its last
//! iterate bounds v_{i−1} from below; otherwise the start of task i−1 minus
//! B_{i−1} does. Starting anywhere at or below the least fixed point, the
//! monotone iteration reaches exactly that fixed point.
//!
//! With blocking, ω_{j,i} ≥ ω_{j,i−1} and γ_{j,i} ≥ γ_{j,i−1} need blk(i−1)
//! to be covered by τ_i and blk(i), which a plain mutex or an explicit
//! `blocking` does not promise. The bound does not need it: a last iterate
//! is carried only from a task with B_{i−1} = 0, whose blk(i−1) is empty,
//! and the chain otherwise adds C'_k + ω_{k,n}, which no blk changes. From
//! a task k with B_k = 0 the chain needs f_i's terms of hp(k) to be at
//! least f_k's, and they are: blk(k) is empty and hep(k) ⊆ hep(i).

use crate::partitions::PartitionSet;

mod jitter_rounds;
mod release_zones;

pub use jitter_rounds::{JitterRounds, ReuseCheck};

/// A task as the per-core analysis needs it.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct CoreTask {
    /// C_i at the task's number of partitions, ns.
    pub wcet: u64,
    /// T_i, ns.
    pub period: u64,
    /// D_i ≤ T_i, ns.
    pub deadline: u64,
    /// S(i); empty means "no partition information" (no cache terms).
    pub partitions: PartitionSet,
    /// J_i, release jitter, ns.
    pub jitter: u64,
    /// B_i, blocking by lower-priority tasks, ns (`u64::MAX`: unbounded).
    pub blocking: u64,
    /// ⋃ S(l) over blk(i), the lower-priority tasks that may run inside
    /// this task's busy window holding a resource that blocks it; read only
    /// when `blocking` > 0. `None`: not known, so every lower-priority task
    /// of the core is assumed (sound, possibly pessimistic).
    pub blockers: Option<PartitionSet>,
    /// How many of the tasks directly above this one cannot preempt a
    /// section that blocks it (under the ceiling protocol, those at or below
    /// the lowest ceiling of those sections): their ω and γ leave `blockers`
    /// out, since the holder ran before their first job (whose ω_{j,n}
    /// counts it) and does not run again in the window. 0: every task above
    /// can.
    pub shielded: u32,
    /// Execution overhead every job pays, ns (2δ: switched in and out).
    pub overhead: u64,
    /// ε_i: the timer interrupt that releases each job, ns; it interferes
    /// with every task of the core, lower-priority ones included.
    pub interrupt: u64,
    /// A pseudo-task (the scheduler tick): it interferes like a task, but
    /// its own response time is no requirement, so [`core_schedulable`]
    /// does not ask it to meet a deadline. Its interference ⌈w/T⌉·C in a
    /// level-i busy period holds whatever its response time: the window
    /// starts with no work of level i pending.
    pub pseudo: bool,
}

impl CoreTask {
    /// A task with no jitter, blocking or overheads: kim2013's model.
    pub fn new(wcet: u64, period: u64, deadline: u64, partitions: PartitionSet) -> CoreTask {
        CoreTask {
            wcet,
            period,
            deadline,
            partitions,
            ..CoreTask::default()
        }
    }

    /// The periodic scheduler tick as a top-priority pseudo-task of cost
    /// `cost` every `period` (Burns, Tindell and Wellings 1995).
    pub fn scheduler_tick(cost: u64, period: u64) -> CoreTask {
        CoreTask {
            pseudo: true,
            ..CoreTask::new(cost, period, period, PartitionSet::EMPTY)
        }
    }
}

/// The result of Eq. (2) for one task, with its breakdown at the fixed point.
///
/// The breakdown terms are exact whenever the task meets its deadline (they
/// add up to `wcrt_ns`). When the iteration passed D, they are those of the
/// last iterate and saturate at `u64::MAX` where the true value is larger.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ResponseTime {
    /// The worst-case response time R_i = J_i + w_i, or `None` once an
    /// iterate exceeds D_i − J_i (including an iterate above 2^64 − 1 ns,
    /// which exceeds every D).
    pub wcrt_ns: Option<u64>,
    /// Evaluations of the recurrence, from its start value until it
    /// converged or passed D.
    pub iterations: u32,
    /// C_i.
    pub wcet_ns: u64,
    /// The task's own per-job overhead (2δ).
    pub overhead_ns: u64,
    /// ω_{i,n}: the task's own warm-up delay.
    pub warmup_ns: u64,
    /// J_i: the release jitter the response time includes.
    pub jitter_ns: u64,
    /// B_i: the blocking the response time includes.
    pub blocking_ns: u64,
    /// Σ ⌈(w + J_j)/T_j⌉ C'_j over hp(i), at the last iterate.
    pub interference_ns: u64,
    /// Σ (ω_{j,n} + (⌈(w + J_j)/T_j⌉ − 1) ω_{j,i}) over hp(i), at the last iterate.
    pub hp_warmup_ns: u64,
    /// Σ ⌈(w + J_j)/T_j⌉ γ_{j,i} over hp(i), at the last iterate.
    pub crpd_ns: u64,
    /// I(w): timer interrupts of every task of the core, at the last iterate.
    pub interrupts_ns: u64,
}

/// A cache delay |set| · Δ (ω or γ), exactly: `None` if it exceeds 2^64 − 1 ns.
pub fn cache_delay(partitions: u32, refill: u64) -> Option<u64> {
    u64::from(partitions).checked_mul(refill)
}

/// One task of the core as a source of interference for the task under
/// analysis: a higher-priority task (its execution and cache terms) or,
/// for the others, only its release interrupts. Only what the iteration
/// reads; the parts of its cost are in [`TermParts`].
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
struct Term {
    period: u64,
    jitter: u64,
    /// Paid once per release in the window: C'_j + ε_j + ω_{j,i} + γ_{j,i}
    /// for hp(i), ε_k for the others.
    per_release: u64,
    /// ω_{j,n} − ω_{j,i}: the first release pays ω_{j,n} instead of ω_{j,i}.
    first_extra: u64,
    /// ⌈(w + J)/T⌉ at the current iterate w (`u64::MAX` where larger).
    releases: u64,
    /// releases · T − J: the iterate may grow up to here before the task
    /// releases again. Saturates at `u64::MAX`, exactly: a true horizon
    /// above that is above every representable iterate too.
    horizon: u64,
}

/// The parts of a [`Term`]'s cost, for the breakdown.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
struct TermParts {
    /// C'_j + ε_j: what a release costs when there are no cache terms
    /// (`None` above 2^64 − 1).
    plain: Option<u64>,
    /// C'_j.
    execution: u64,
    /// ε_j.
    interrupt: u64,
    warmup_i: u64,
    warmup_n: u64,
    crpd: u64,
}

impl Term {
    /// Whether the count is ⌈(w + J)/T⌉: (count − 1) · T < w + J ≤ count · T.
    fn is_current(&self, w: u64) -> bool {
        if self.releases == 0 || w > self.horizon {
            return false;
        }
        if self.horizon < u64::MAX {
            // horizon = count · T − J exactly.
            return self.horizon < self.period || w > self.horizon - self.period;
        }
        let x = u128::from(w) + u128::from(self.jitter);
        x > u128::from(self.releases - 1) * u128::from(self.period)
    }

    /// Sets ⌈(w + J)/T⌉ for iterate `w`: nothing to do when the count is
    /// current, a few steps when it is at most four periods behind, one
    /// division otherwise.
    #[inline]
    fn set_to(&mut self, w: u64) {
        if self.is_current(w) {
            return;
        }
        // A few periods behind: step (cheaper than a division).
        if self.releases > 0
            && w > self.horizon
            && w - self.horizon <= 4 * self.period.min(u64::MAX / 4)
        {
            while w > self.horizon {
                self.releases = self.releases.saturating_add(1);
                self.horizon = self.horizon.saturating_add(self.period);
            }
            return;
        }
        // ⌈(w + J)/T⌉ by one division, in 64 bits when w + J fits.
        if let Some(x) = w.checked_add(self.jitter) {
            let releases = x.div_ceil(self.period).max(1);
            self.releases = releases;
            self.horizon = match releases.checked_mul(self.period) {
                Some(end) => end - self.jitter,
                None => exact_horizon(releases, self.period, self.jitter),
            };
            return;
        }
        let x = u128::from(w) + u128::from(self.jitter);
        let t = u128::from(self.period);
        let releases = x.div_ceil(t).max(1);
        self.releases = u64::try_from(releases).unwrap_or(u64::MAX);
        self.horizon = u64::try_from(releases * t - u128::from(self.jitter)).unwrap_or(u64::MAX);
    }

    /// Brings the count up to iterate `w` (never below the current one) and
    /// returns how many releases were added. One period ahead is the common
    /// case (a compare and an add); a larger gap is closed with one
    /// division, so the work per iteration does not grow with w/T.
    #[inline]
    fn advance(&mut self, w: u64) -> u64 {
        if w <= self.horizon {
            return 0;
        }
        let before = self.releases;
        if w - self.horizon <= self.period {
            self.releases = before.saturating_add(1);
            self.horizon = self.horizon.saturating_add(self.period);
        } else {
            self.set_to(w);
        }
        self.releases.saturating_sub(before)
    }

    /// The count's contribution to the demand: releases · per_release +
    /// first_extra (`None` above 2^64 − 1).
    fn demand(&self) -> Option<u64> {
        self.releases
            .checked_mul(self.per_release)?
            .checked_add(self.first_extra)
    }
}

/// releases · T − J, saturated at `u64::MAX` (releases · T ≥ J).
fn exact_horizon(releases: u64, period: u64, jitter: u64) -> u64 {
    let end = u128::from(releases) * u128::from(period);
    u64::try_from(end - u128::from(jitter)).unwrap_or(u64::MAX)
}

/// Unions of S(k) over prefixes: `prefix[j]` = ⋃_{k<j} S(k).
fn prefix_unions(tasks: &[CoreTask], prefix: &mut [PartitionSet]) {
    let mut acc = PartitionSet::EMPTY;
    for (slot, task) in prefix.iter_mut().zip(tasks) {
        *slot = acc;
        acc = acc.union(&task.partitions);
    }
}

/// The partitions of blk(i) for every task (see [`CoreTask::blockers`]):
/// empty without blocking, else the given set, or every lower-priority
/// task's, always within the lower-priority tasks' partitions (so that
/// ω_{j,i} ≤ ω_{j,n} holds whatever a caller passes).
fn blocker_windows(tasks: &[CoreTask], out: &mut [PartitionSet]) {
    let mut below = PartitionSet::EMPTY;
    for i in (0..tasks.len()).rev() {
        let task = &tasks[i];
        out[i] = match (task.blocking, task.blockers) {
            (0, _) => PartitionSet::EMPTY,
            (_, Some(known)) => known.intersection(&below),
            (_, None) => below,
        };
        below = below.union(&task.partitions);
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

/// The per-core scratch state: prefix unions, ω_{j,n}, and one [`Term`]
/// per task whose release counts persist from task to task.
struct Core<'a> {
    tasks: &'a [CoreTask],
    refill: u64,
    prefix: &'a mut [PartitionSet],
    /// The partitions of blk(i) per task ([`blocker_windows`]).
    window: &'a mut [PartitionSet],
    warmup_n: &'a mut [Option<u64>],
    terms: &'a mut [Term],
    parts: &'a mut [TermParts],
    /// Some task has a release interrupt: every task's interrupts interfere.
    interrupts: bool,
    /// Δ > 0 and some task has partitions: ω and γ depend on the task
    /// under analysis. Without them a higher-priority task's term is the
    /// same for every task below it and is set once.
    cache_terms: bool,
    /// The first task whose C' + ε exceeds 2^64 − 1 ns (no cache terms).
    first_unrepresentable: usize,
    /// A lower bound of v_{i−1} (see "Start value"), if known.
    previous_free: Option<u64>,
    /// The first iterate of the last task's iteration, if it got one.
    first_iterate: Option<u64>,
    /// The least and the largest iterate at which the last task read its
    /// release counts (`None`: not known), for [`JitterRounds`].
    read_span: Option<(u64, u64)>,
    /// Where the last task's breakdown reads the counts (`None`: it has
    /// none, a term being above 2^64 − 1 ns): its fixed point, or the last
    /// iterate of a miss, at least 1.
    breakdown_at: Option<u64>,
    /// Whether a breakdown continues the sums of the previous one when both
    /// read the counts at one iterate ([`BreakdownPrefix`]); off, each
    /// breakdown sums every term afresh (the results are the same).
    reuse_sums: bool,
    /// The sums of the last breakdown without cache terms.
    breakdown_prefix: Option<BreakdownPrefix>,
    /// Σ ⌈(w + J_k)/T_k⌉ ε_k over every task of the core at iterate w, as
    /// (w, sum), for the breakdowns at w.
    interrupts_at: Option<(u64, u128)>,
}

/// Σ ⌈(w + J_j)/T_j⌉ C'_j over the terms 0..`upto` at iterate `at`: the
/// interference of a breakdown without cache terms, where a term's cost
/// does not depend on the task under analysis, so the next task's
/// breakdown at the same iterate only adds its own higher-priority terms.
/// (Tasks whose jitter alone passes their deadline all read their counts
/// at iterate 1: a long tail of them then costs one term each, not one
/// pass over the core each.) Valid until the next [`Core::prepare`].
#[derive(Copy, Clone, Debug)]
struct BreakdownPrefix {
    at: u64,
    upto: usize,
    interference: u128,
}

/// The outcome of one task's iteration.
enum Outcome {
    /// The least fixed point w.
    Converged(u64),
    /// An iterate passed D − J; the last iterate (a lower bound of w).
    Missed(u64),
    /// Some term or sum exceeds 2^64 − 1 ns: w does too.
    Unrepresentable,
}

impl Core<'_> {
    fn prepare(&mut self) {
        prefix_unions(self.tasks, self.prefix);
        blocker_windows(self.tasks, self.window);
        warmups_against_all(self.tasks, self.prefix, self.refill, self.warmup_n);
        self.interrupts = self.tasks.iter().any(|t| t.interrupt > 0);
        self.cache_terms = self.refill > 0 && self.tasks.iter().any(|t| !t.partitions.is_empty());
        self.first_unrepresentable = self.tasks.len();
        self.breakdown_prefix = None;
        self.interrupts_at = None;
        for (k, task) in self.tasks.iter().enumerate() {
            let execution = task.wcet.checked_add(task.overhead);
            let plain = execution.and_then(|e| e.checked_add(task.interrupt));
            if plain.is_none() {
                self.first_unrepresentable = self.first_unrepresentable.min(k);
            }
            self.terms[k] = Term {
                period: task.period,
                jitter: task.jitter,
                per_release: task.interrupt,
                ..Term::default()
            };
            self.parts[k] = TermParts {
                plain,
                execution: execution.unwrap_or(u64::MAX),
                interrupt: task.interrupt,
                ..TermParts::default()
            };
        }
    }

    /// Fills the terms of every j ∈ hp(i) for task `i`. Returns `false` if
    /// some term exceeds 2^64 − 1 ns: every such term is paid at least once
    /// by the first release of j, so task i then certainly misses.
    fn hp_terms(&mut self, i: usize) -> bool {
        if !self.cache_terms {
            // Terms 0..i−1 took their role for earlier tasks; i − 1 joins.
            if i > 0
                && let Some(plain) = self.parts[i - 1].plain
            {
                self.terms[i - 1].per_release = plain;
            }
            return self.first_unrepresentable >= i;
        }
        let tasks = self.tasks;
        let blockers = self.window[i];
        // `after` = ⋃_{k=j+1..=i} S(k) = ⋃ int(j, i).
        let mut after = PartitionSet::EMPTY;
        for j in (0..i).rev() {
            after = after.union(&tasks[j + 1].partitions);
            // What runs between j's jobs or after j preempts, below j: the
            // holders too, unless j cannot preempt their sections.
            let shielded = j + tasks[i].shielded as usize >= i;
            let evicting = if shielded {
                after
            } else {
                after.union(&blockers)
            };
            let own = &tasks[j].partitions;
            let prefix = self.prefix[j];
            let refill = self.refill;
            let warmup_n = self.warmup_n[j];
            let (term, parts) = (&mut self.terms[j], &mut self.parts[j]);
            let filled = (|| {
                let warmup_n = warmup_n?;
                let warmup_i = cache_delay(own.intersection_len(&prefix.union(&evicting)), refill)?;
                let crpd = cache_delay(own.intersection_len(&evicting), refill)?;
                let execution = tasks[j].wcet.checked_add(tasks[j].overhead)?;
                let per_release = execution
                    .checked_add(tasks[j].interrupt)?
                    .checked_add(warmup_i)?
                    .checked_add(crpd)?;
                // ω_{j,i} ≤ ω_{j,n}: hep(i) and blk(i) are tasks of the core.
                let first_extra = warmup_n - warmup_i;
                // The first release pays C'_j + ε_j + ω_{j,n} + γ_{j,i}.
                per_release.checked_add(first_extra)?;
                term.per_release = per_release;
                term.first_extra = first_extra;
                parts.execution = execution;
                parts.warmup_i = warmup_i;
                parts.warmup_n = warmup_n;
                parts.crpd = crpd;
                Some(())
            })();
            if filled.is_none() {
                return false;
            }
        }
        true
    }

    /// The terms interfering with task `i`: hp(i), and every other task's
    /// release interrupts when there are any.
    fn active(&self, i: usize) -> usize {
        if self.interrupts { self.tasks.len() } else { i }
    }

    /// B_i + C'_i + ω_{i,n}: the part of f_i that does not depend on w.
    fn base(&self, i: usize) -> Option<u64> {
        let task = &self.tasks[i];
        task.blocking
            .checked_add(task.wcet)?
            .checked_add(task.overhead)?
            .checked_add(self.warmup_n[i]?)
    }

    /// f_i(w): brings every active term's count to `w` and sums.
    fn demand_at(&mut self, base: u64, active: usize, w: u64) -> Option<u64> {
        self.terms[..active].iter_mut().try_fold(base, |sum, term| {
            term.set_to(w);
            sum.checked_add(term.demand()?)
        })
    }

    /// Iterates the recurrence of task `i` from the best known lower bound
    /// and stops once an iterate passes D_i − J_i.
    fn iterate(&mut self, i: usize, iterations: &mut u32) -> Outcome {
        let task = self.tasks[i];
        let active = self.active(i);
        let Some(base) = self.base(i) else {
            return Outcome::Unrepresentable;
        };
        let Some(limit) = task.deadline.checked_sub(task.jitter) else {
            // The jitter alone passes the deadline.
            return Outcome::Missed(0);
        };
        // Start from "0+" (every count at its least, ⌈J/T⌉ or one) or from
        // the bound of "Start value"; either is at most the fixed point.
        let chain = self.previous_free.and_then(|free| {
            free.checked_add(task.wcet)?
                .checked_add(task.overhead)?
                .checked_add(self.warmup_n[i]?)?
                .checked_add(task.blocking)
        });
        let start = chain.unwrap_or(1);
        self.first_iterate = Some(start);
        *iterations = 0;
        if start > limit {
            // The lower bound alone passes the deadline.
            return Outcome::Missed(start);
        }
        let Some(mut demand) = self.demand_at(base, active, start) else {
            return Outcome::Unrepresentable;
        };
        *iterations = 1;
        let mut r = start;
        loop {
            if demand == r {
                return Outcome::Converged(r);
            }
            r = demand;
            if r > limit {
                return Outcome::Missed(r);
            }
            *iterations += 1;
            for term in &mut self.terms[..active] {
                let added = term.advance(r);
                if added == 0 {
                    continue;
                }
                match added
                    .checked_mul(term.per_release)
                    .and_then(|extra| demand.checked_add(extra))
                {
                    Some(next) => demand = next,
                    None => return Outcome::Unrepresentable,
                }
            }
        }
    }

    /// Analyzes task `i` (tasks 0..i already done, in order); the breakdown
    /// is filled only `with_breakdown`.
    fn task(&mut self, i: usize, with_breakdown: bool) -> ResponseTime {
        let terms_ok = self.hp_terms(i);
        self.task_with_terms(i, terms_ok, with_breakdown)
    }

    /// [`Core::task`] once [`Core::hp_terms`] has filled task `i`'s terms,
    /// `terms_ok` saying whether it could. A task whose jitter alone
    /// passes its deadline reads no term, and no count without
    /// `with_breakdown`: for it the terms need not be filled.
    fn task_with_terms(&mut self, i: usize, terms_ok: bool, with_breakdown: bool) -> ResponseTime {
        let task = self.tasks[i];
        let mut result = ResponseTime {
            wcet_ns: task.wcet,
            overhead_ns: task.overhead,
            warmup_ns: self.warmup_n[i].unwrap_or(u64::MAX),
            jitter_ns: task.jitter,
            blocking_ns: task.blocking,
            iterations: 1,
            ..ResponseTime::default()
        };
        if !terms_ok {
            self.previous_free = None;
            self.read_span = None;
            self.breakdown_at = None;
            return result;
        }
        let start_free = self.previous_free;
        self.first_iterate = None;
        let outcome = self.iterate(i, &mut result.iterations);
        // Counts are read at every iterate, and the breakdown of a miss at
        // its last iterate (at least 1).
        self.read_span = match outcome {
            Outcome::Converged(w) | Outcome::Missed(w) => {
                let w = if matches!(outcome, Outcome::Missed(_)) {
                    w.max(1)
                } else {
                    w
                };
                let first = self.first_iterate.unwrap_or(w);
                Some((first.min(w), first.max(w)))
            }
            Outcome::Unrepresentable => None,
        };
        let last = match outcome {
            Outcome::Converged(w) => {
                result.wcrt_ns = Some(w + task.jitter);
                Some(w)
            }
            Outcome::Missed(w) => Some(w),
            Outcome::Unrepresentable => None,
        };
        // At a fixed point every count is already current.
        let converged = matches!(outcome, Outcome::Converged(_));
        self.breakdown_at = last.map(|w| if converged { w } else { w.max(1) });
        // A lower bound of v_i for task i + 1 ("Start value"): the chain
        // bound, or the last iterate when the task has no blocking.
        let chained = start_free.and_then(|free| {
            free.checked_add(task.wcet)?
                .checked_add(task.overhead)?
                .checked_add(self.warmup_n[i]?)
        });
        let iterated = last.filter(|_| task.blocking == 0);
        self.previous_free = chained.max(iterated);
        if with_breakdown && let Some(at) = self.breakdown_at {
            self.breakdown(i, at, converged, &mut result);
        }
        result
    }

    /// The terms of the recurrence with the counts at iterate `at`, exact
    /// (u128) and saturated only past D; the active counts are already at
    /// `at` when `current` (a fixed point just reached). Task `i`'s terms
    /// must be filled ([`Core::hp_terms`]).
    fn breakdown(&mut self, i: usize, at: u64, current: bool, result: &mut ResponseTime) {
        let report = |v: u128| u64::try_from(v).unwrap_or(u64::MAX);
        if self.cache_terms || !self.reuse_sums {
            let (interference, hp_warmup, crpd, interrupts) = self.breakdown_afresh(i, at, current);
            result.interference_ns = report(interference);
            result.hp_warmup_ns = report(hp_warmup);
            result.crpd_ns = report(crpd);
            result.interrupts_ns = report(interrupts);
            return;
        }
        // Without cache terms ω and γ are 0: only C' and ε are summed.
        let mut sums = match self.breakdown_prefix {
            Some(sums) if sums.at == at && sums.upto <= i => sums,
            _ => BreakdownPrefix {
                at,
                upto: 0,
                interference: 0,
            },
        };
        for (term, parts) in self.terms[sums.upto..i]
            .iter_mut()
            .zip(&self.parts[sums.upto..i])
        {
            term.set_to(at);
            sums.interference += u128::from(term.releases) * u128::from(parts.execution);
        }
        sums.upto = i;
        self.breakdown_prefix = Some(sums);
        let interrupts = if self.interrupts {
            self.interrupts_at(at)
        } else {
            0
        };
        result.interference_ns = report(sums.interference);
        result.hp_warmup_ns = 0;
        result.crpd_ns = 0;
        result.interrupts_ns = report(interrupts);
    }

    /// I(w) at iterate `at` with every task's release interrupts (the
    /// terms of every task are active), summed once per iterate.
    fn interrupts_at(&mut self, at: u64) -> u128 {
        if let Some((cached, sum)) = self.interrupts_at
            && cached == at
        {
            return sum;
        }
        let mut sum = 0u128;
        for (term, parts) in self.terms.iter_mut().zip(self.parts.iter()) {
            term.set_to(at);
            sum += u128::from(term.releases) * u128::from(parts.interrupt);
        }
        self.interrupts_at = Some((at, sum));
        sum
    }

    /// The breakdown's (interference, hp warm-up, CRPD, interrupts), every
    /// active term summed.
    fn breakdown_afresh(&mut self, i: usize, at: u64, current: bool) -> (u128, u128, u128, u128) {
        let active = self.active(i);
        let (mut interference, mut hp_warmup, mut crpd, mut interrupts) =
            (0u128, 0u128, 0u128, 0u128);
        for (k, (term, parts)) in self.terms[..active]
            .iter_mut()
            .zip(self.parts.iter())
            .enumerate()
        {
            if !current {
                term.set_to(at);
            }
            let releases = u128::from(term.releases);
            interrupts += releases * u128::from(parts.interrupt);
            if k < i {
                interference += releases * u128::from(parts.execution);
                hp_warmup +=
                    u128::from(parts.warmup_n) + (releases - 1) * u128::from(parts.warmup_i);
                crpd += releases * u128::from(parts.crpd);
            }
        }
        (interference, hp_warmup, crpd, interrupts)
    }

    /// Every task, highest priority first, with its breakdown.
    fn analyze_all(&mut self) -> Vec<ResponseTime> {
        self.prepare();
        (0..self.tasks.len()).map(|i| self.task(i, true)).collect()
    }

    /// Whether every task but the pseudo-tasks meets its deadline, stopping
    /// at the first miss (a pseudo-task is still analysed: the next task's
    /// start value chains from it).
    fn all_meet(&mut self) -> bool {
        self.prepare();
        (0..self.tasks.len()).all(|i| self.task(i, false).wcrt_ns.is_some() || self.tasks[i].pseudo)
    }
}

/// Stack space for the per-core loops; larger cores fall back to the heap.
const STACK_TASKS: usize = 16;

impl<'a> Core<'a> {
    /// A core of `tasks` with Δ = `refill` over the given scratch buffers
    /// (one slot per task), nothing analyzed yet.
    fn new(
        tasks: &'a [CoreTask],
        refill: u64,
        prefix: &'a mut [PartitionSet],
        window: &'a mut [PartitionSet],
        warmup_n: &'a mut [Option<u64>],
        terms: &'a mut [Term],
        parts: &'a mut [TermParts],
    ) -> Self {
        Core {
            tasks,
            refill,
            prefix,
            window,
            warmup_n,
            terms,
            parts,
            interrupts: false,
            cache_terms: false,
            first_unrepresentable: 0,
            previous_free: None,
            first_iterate: None,
            read_span: None,
            breakdown_at: None,
            reuse_sums: true,
            breakdown_prefix: None,
            interrupts_at: None,
        }
    }
}

/// Runs `f` on a [`Core`] with scratch buffers sized for `tasks`, on the
/// stack when small.
fn with_core<R>(tasks: &[CoreTask], refill: u64, f: impl FnOnce(&mut Core<'_>) -> R) -> R {
    let n = tasks.len();
    if n <= STACK_TASKS {
        let mut prefix = [PartitionSet::EMPTY; STACK_TASKS];
        let mut window = [PartitionSet::EMPTY; STACK_TASKS];
        let mut warmup_n = [None; STACK_TASKS];
        let mut terms = [Term::default(); STACK_TASKS];
        let mut parts = [TermParts::default(); STACK_TASKS];
        f(&mut Core::new(
            tasks,
            refill,
            &mut prefix[..n],
            &mut window[..n],
            &mut warmup_n[..n],
            &mut terms[..n],
            &mut parts[..n],
        ))
    } else {
        let mut prefix = vec![PartitionSet::EMPTY; n];
        let mut window = vec![PartitionSet::EMPTY; n];
        let mut warmup_n = vec![None; n];
        let mut terms = vec![Term::default(); n];
        let mut parts = vec![TermParts::default(); n];
        f(&mut Core::new(
            tasks,
            refill,
            &mut prefix,
            &mut window,
            &mut warmup_n,
            &mut terms,
            &mut parts,
        ))
    }
}

/// Eq. (2) with jitter, blocking and overheads for every task of one core;
/// `tasks` are ordered by priority, highest first. With `refill` = 0 and
/// no jitter, blocking or overheads this is Joseph and Pandya's classic
/// test (the paper's "NoCInt").
pub fn response_times(tasks: &[CoreTask], refill: u64) -> Vec<ResponseTime> {
    with_core(tasks, refill, |core| core.analyze_all())
}

/// Whether every task of the core meets its deadline (pseudo-tasks
/// excepted: [`CoreTask::pseudo`]), without allocating and stopping at the
/// first miss: the inner test of allocation searches.
pub fn core_schedulable(tasks: &[CoreTask], refill: u64) -> bool {
    with_core(tasks, refill, |core| core.all_meet())
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

/// C_i + overhead_i + ε_i + ω_{i,n} + γ_{i,n} for every task, the numerator
/// of its Eq. (1) term, exactly (u128: each part is below 2^64).
pub fn utilization_numerators(tasks: &[CoreTask], refill: u64) -> Vec<u128> {
    let warmup = warmup_delays(tasks, refill);
    let crpd = crpd_caused(tasks, refill);
    tasks
        .iter()
        .zip(warmup.iter().zip(&crpd))
        .map(|(t, (w, g))| {
            u128::from(t.wcet) + u128::from(t.overhead) + u128::from(t.interrupt) + w + g
        })
        .collect()
}
