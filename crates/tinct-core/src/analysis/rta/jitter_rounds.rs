//! One core's response times kept from one holistic round to the next
//! ([`JitterRounds`]): a task is iterated again only when a moved release
//! jitter can change what its last iteration read.

use super::release_zones::ReleaseZones;
use super::{Core, CoreTask, ResponseTime, Term, TermParts};
use crate::partitions::PartitionSet;

/// What one task's last analysis in a [`JitterRounds`] read, so that an
/// analysis with other jitters can tell whether it would come out the same.
#[derive(Copy, Clone, Debug)]
struct Reading {
    /// The bound of "Start value" the task started from.
    start_free: Option<u64>,
    /// The bound it left for the next task.
    end_free: Option<u64>,
    /// The least and the largest iterate at which it read release counts.
    span: (u64, u64),
    /// w at convergence (`None`: the task missed).
    fixed_point: Option<u64>,
    /// Where the breakdown reads the counts ([`Core::breakdown`]).
    breakdown_at: u64,
    /// `result` holds the breakdown (else only what a round without
    /// breakdowns fills).
    has_breakdown: bool,
    result: ResponseTime,
}

/// The largest iterate up to which `task`'s release count is one under
/// both jitters (T − max J, 0 when none).
fn one_period_headroom(task: &CoreTask, before: u64, now: u64) -> u64 {
    task.period.saturating_sub(before.max(now))
}

/// Whether `task`'s release count is one value over the iterates
/// `low..=high` under both jitters: equal at both ends under both, and it
/// only grows with the iterate.
fn count_kept(task: &CoreTask, low: u64, high: u64, before: u64, now: u64) -> bool {
    let count = release_count(low, before, task.period);
    count == release_count(high, before, task.period)
        && count == release_count(low, now, task.period)
        && count == release_count(high, now, task.period)
}

/// max(1, ⌈(w + J)/T⌉), exactly: the release count a [`Term`] holds.
fn release_count(w: u64, jitter: u64, period: u64) -> u128 {
    (u128::from(w) + u128::from(jitter))
        .div_ceil(u128::from(period))
        .max(1)
}

/// How a [`JitterRounds`] tells which tasks a round's moved jitters leave
/// as they were. Both give the same results; they differ in cost only.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum ReuseCheck {
    /// The moved tasks' release zones merged per period
    /// (`release_zones`): a few lookups per task, whatever the number of
    /// moved tasks; and the breakdowns of consecutive tasks that read their
    /// counts at one iterate summed incrementally.
    #[default]
    Zones,
    /// Every task checked against each moved task in turn, each breakdown
    /// summed over every term: the straightforward way, quadratic in the
    /// tasks of a core per round, kept as the reference the property tests
    /// and the `holistic_chain` bench compare with.
    EachMove,
}

/// One core's response times kept from one analysis to the next, for
/// analyses that differ only in the tasks' release jitters (the rounds of
/// the holistic analysis, where a round usually leaves most results as
/// they were).
///
/// Each call equals [`super::response_times`] of the same tasks exactly,
/// breakdown and iteration counts included. A task is iterated again unless
/// nothing it read can have changed: its own jitter, the bound it starts
/// from, and, for every other task whose jitter moved and that interferes
/// with it, the release count ⌈(w + J)/T⌉ at every iterate w it read (its
/// iterates lie between the first and the last, and a count that is equal
/// under both jitters at both ends is equal between them: it only grows
/// with w). Then every iterate, and so the result, is the same. With
/// [`ReuseCheck::Zones`] a round costs a few lookups per task kept, plus
/// the iterations of the tasks whose results change.
#[derive(Clone, Debug, Default)]
pub struct JitterRounds {
    check: ReuseCheck,
    tasks: Vec<CoreTask>,
    refill: u64,
    /// Per task: what its last analysis read (`None`: analyze it).
    readings: Vec<Option<Reading>>,
    prefix: Vec<PartitionSet>,
    window: Vec<PartitionSet>,
    warmup_n: Vec<Option<u64>>,
    terms: Vec<Term>,
    parts: Vec<TermParts>,
    /// Per task: whether its higher-priority terms are representable
    /// ([`Core::hp_terms`], which no jitter changes), once known.
    terms_ok: Vec<Option<bool>>,
    /// (task, jitter before, jitter now) of the tasks whose jitter moved.
    moved: Vec<(usize, u64, u64)>,
    /// The release zones of the moved tasks a task's counts come from.
    zones: ReleaseZones,
}

impl JitterRounds {
    /// Nothing analyzed yet: the first call analyzes every task.
    pub fn new() -> JitterRounds {
        JitterRounds::default()
    }

    /// [`JitterRounds::new`] deciding reuse with `check`.
    pub fn with_check(check: ReuseCheck) -> JitterRounds {
        JitterRounds {
            check,
            ..JitterRounds::default()
        }
    }

    /// [`super::response_times`] of `tasks` (ordered by priority, highest
    /// first) with Δ = `refill`, reusing the previous call's results of the
    /// tasks whose result cannot have changed. Anything but a jitter that
    /// differs from the previous call (a task, its order, Δ) starts afresh.
    pub fn response_times(&mut self, tasks: &[CoreTask], refill: u64) -> Vec<ResponseTime> {
        self.round(tasks, refill, true)
    }

    /// The worst-case response times R_i (`None`: the task misses its
    /// deadline) of [`JitterRounds::response_times`], without the
    /// breakdowns: what a holistic round but the last needs. A task whose
    /// jitter alone passes its deadline then costs no pass over the
    /// higher-priority tasks, however often its result is taken again.
    pub fn worst_case_response_times(
        &mut self,
        tasks: &[CoreTask],
        refill: u64,
    ) -> Vec<Option<u64>> {
        self.round(tasks, refill, false)
            .into_iter()
            .map(|r| r.wcrt_ns)
            .collect()
    }

    /// The results of a round, with their breakdowns if `breakdowns` (else
    /// the breakdown fields are unspecified).
    fn round(&mut self, tasks: &[CoreTask], refill: u64, breakdowns: bool) -> Vec<ResponseTime> {
        let same_tasks = self.tasks.len() == tasks.len()
            && self.refill == refill
            && self.tasks.iter().zip(tasks).all(|(before, now)| {
                CoreTask {
                    jitter: now.jitter,
                    ..*before
                } == *now
            });
        self.moved.clear();
        if same_tasks {
            for (k, (before, now)) in self.tasks.iter().zip(tasks).enumerate() {
                if before.jitter != now.jitter {
                    self.moved.push((k, before.jitter, now.jitter));
                }
            }
        } else {
            let n = tasks.len();
            self.refill = refill;
            self.readings = vec![None; n];
            self.terms_ok = vec![None; n];
            self.prefix = vec![PartitionSet::EMPTY; n];
            self.window = vec![PartitionSet::EMPTY; n];
            self.warmup_n = vec![None; n];
            self.terms = vec![Term::default(); n];
            self.parts = vec![TermParts::default(); n];
        }
        self.tasks.clear();
        self.tasks.extend_from_slice(tasks);
        let mut core = Core::new(
            &self.tasks,
            refill,
            &mut self.prefix,
            &mut self.window,
            &mut self.warmup_n,
            &mut self.terms,
            &mut self.parts,
        );
        core.reuse_sums = self.check == ReuseCheck::Zones;
        core.prepare();
        let moved = &self.moved;
        let zones = &mut self.zones;
        zones.clear();
        // The moved tasks whose zones were added (a prefix of `moved`): only
        // when a task's span passes the headroom below, so a round whose
        // jitters all stay within the first period adds none.
        let mut zoned = 0;
        let all_moved_headroom = moved
            .iter()
            .map(|&(k, before, now)| one_period_headroom(&tasks[k], before, now))
            .min()
            .unwrap_or(u64::MAX);
        // The moved tasks above task i, and their least headroom.
        let mut above = 0;
        let mut above_headroom = u64::MAX;
        let mut results = Vec::with_capacity(tasks.len());
        for (i, reading) in self.readings.iter_mut().enumerate() {
            while above < moved.len() && moved[above].0 < i {
                let (k, before, now) = moved[above];
                above_headroom = above_headroom.min(one_period_headroom(&tasks[k], before, now));
                above += 1;
            }
            let own_moved = moved.get(above).is_some_and(|&(k, _, _)| k == i);
            let reused = reading.and_then(|r| {
                if r.start_free != core.previous_free {
                    return None;
                }
                let (low, high) = r.span;
                // The moved tasks whose counts task i reads (with release
                // interrupts every task reads every count).
                let (read, headroom) = if core.interrupts {
                    (&moved[..], all_moved_headroom)
                } else {
                    (&moved[..above], above_headroom)
                };
                // Within the first period under both jitters every count is
                // one: nothing to look up.
                let counts_kept = high <= headroom
                    || match self.check {
                        ReuseCheck::Zones => {
                            for &(k, before, now) in &read[zoned.min(read.len())..] {
                                zones.add(tasks[k].period, before, now);
                            }
                            zoned = zoned.max(read.len());
                            !zones.meets(low, high)
                        }
                        ReuseCheck::EachMove => read
                            .iter()
                            .all(|&(k, before, now)| count_kept(&tasks[k], low, high, before, now)),
                    };
                if !counts_kept {
                    return None;
                }
                if !own_moved {
                    return Some(r.result);
                }
                // Its own jitter moved: the same iterates, if none of them
                // passes the new D − J; R = J + w.
                let jitter = tasks[i].jitter;
                let w = r.fixed_point?;
                let limit = tasks[i].deadline.checked_sub(jitter)?;
                (high <= limit).then_some(ResponseTime {
                    wcrt_ns: Some(w + jitter),
                    jitter_ns: jitter,
                    ..r.result
                })
            });
            let result = match (reused, reading.as_mut()) {
                (Some(mut result), Some(r)) => {
                    // Without cache terms, task i − 1's term joins here.
                    if !core.cache_terms {
                        core.hp_terms(i);
                    }
                    if breakdowns && !r.has_breakdown {
                        if core.cache_terms {
                            core.hp_terms(i);
                        }
                        core.breakdown(i, r.breakdown_at, false, &mut result);
                        r.has_breakdown = true;
                    }
                    core.previous_free = r.end_free;
                    r.result = result;
                    result
                }
                _ => {
                    let start_free = core.previous_free;
                    let task = &tasks[i];
                    // A jitter alone past the deadline: no term is read
                    // without a breakdown (with cache terms, filling them
                    // is a pass over the tasks above).
                    let skip_terms = !breakdowns && core.cache_terms && task.jitter > task.deadline;
                    let terms_ok = match self.terms_ok[i] {
                        Some(ok) if skip_terms => ok,
                        _ => core.hp_terms(i),
                    };
                    self.terms_ok[i] = Some(terms_ok);
                    let result = core.task_with_terms(i, terms_ok, breakdowns);
                    *reading = core
                        .read_span
                        .zip(core.breakdown_at)
                        .map(|(span, breakdown_at)| Reading {
                            start_free,
                            end_free: core.previous_free,
                            span,
                            fixed_point: result.wcrt_ns.map(|r| r - result.jitter_ns),
                            breakdown_at,
                            has_breakdown: breakdowns,
                            result,
                        });
                    result
                }
            };
            results.push(result);
        }
        results
    }
}
