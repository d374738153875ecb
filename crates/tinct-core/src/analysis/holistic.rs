//! The response times of every task of every core, with the release
//! jitter data-triggered tasks inherit from their producers, iterated to a
//! fixed point: the holistic analysis of Tindell and Clark ("Holistic
//! schedulability analysis for distributed hard real-time systems", 1994).
//!
//! A data-triggered task is released when the last of its producers
//! completes. All timer-triggered tasks are released together at time 0
//! and producers of one consumer share its period, so measured from the
//! common nominal release its jobs arrive within [0, max_p R_p]: its release
//! jitter is J_c = max_p R_p plus its own declared jitter and the platform's
//! release latency (the best case of a producer is taken as 0, safe where
//! best-case response times are unknown). Jitter only grows the response
//! times of the tasks it interferes with, so starting from the declared
//! jitters and iterating "response times → inherited jitters" climbs to the
//! least fixed point. A producer that misses its deadline gives its
//! consumers an unbounded jitter (they miss too).
//!
//! A chain through n tasks takes n rounds, each an analysis of every core,
//! so the analysis polls a stop flag (a timeout) before each core of each
//! round and gives up with no result when it is set.

use super::blocking::{self, Blocking};
use super::rta::{self, CoreTask, ResponseTime};
use crate::model::{Overheads, TaskSet, Trigger};
use std::sync::atomic::{AtomicBool, Ordering};

/// Rounds of "response times → inherited jitters" before the jitters still
/// moving are taken as unbounded (each round is one analysis of every
/// core), at the least: a set of n tasks gets n + 2 when that is more,
/// since a jitter moves one edge per round and a chain through every task
/// needs n rounds to settle and one to see it has ([`max_rounds`]).
pub const MAX_ROUNDS: u32 = 1000;

/// The round limit for a set of `tasks` tasks: [`MAX_ROUNDS`], or
/// `tasks` + 2 when that is more.
pub fn max_rounds(tasks: usize) -> u32 {
    MAX_ROUNDS.max(u32::try_from(tasks).unwrap_or(u32::MAX).saturating_add(2))
}

/// One holistic fixed point, for one Δ (kim2013's CInt, or 0 for NoCInt).
#[derive(Clone, Debug)]
pub(super) struct Pass {
    /// Per task (file order): its response time.
    pub results: Vec<ResponseTime>,
    /// Per task: its blocking.
    pub blocking: Vec<Blocking>,
    /// Per task: J_i used, ns (`u64::MAX`: unbounded).
    pub jitter: Vec<u64>,
    /// Per task: the part of J_i inherited from producers, ns.
    pub inherited: Vec<u64>,
    /// Rounds until the jitters settled (1 without data-triggered tasks).
    pub rounds: u32,
    /// The jitters did not settle within [`max_rounds`].
    pub diverged: bool,
}

/// The top-priority task the periodic scheduler tick is, if it is charged
/// (Burns, Tindell and Wellings 1995).
fn tick_task(overheads: &Overheads) -> Option<CoreTask> {
    let period = overheads.tick_period?.0;
    Some(CoreTask::scheduler_tick(overheads.tick.0, period))
}

/// The SCHED_DEADLINE tasks of the set as the fixed-priority analysis
/// sees them: per core, higher-priority pseudo-tasks
/// ([`super::deadline::EdfCore::as_interference`]); and per such task its
/// result, which the rounds carry (a producer's response time feeds its
/// consumers' jitter). Empty for a set without them.
#[derive(Clone, Debug, Default)]
pub(super) struct Reservations {
    /// Per core (index = core number): pseudo-tasks above its SCHED_FIFO
    /// tasks.
    pub interference: Vec<Vec<CoreTask>>,
    /// (file index, result) of every SCHED_DEADLINE task.
    pub results: Vec<(usize, ResponseTime)>,
}

impl Reservations {
    /// The pseudo-tasks of the core `members` (SCHED_FIFO tasks, file
    /// indices) are on: none for an empty core.
    pub(super) fn of_core<'r>(&'r self, set: &TaskSet, members: &[usize]) -> &'r [CoreTask] {
        members
            .first()
            .and_then(|&i| {
                let core = set.tasks[i].core.unwrap_or(0) as usize;
                self.interference.get(core)
            })
            .map_or(&[], Vec::as_slice)
    }
}

/// The core's tasks as the recurrence takes them, with `jitter` and
/// `blocking` (both indexed like the set's tasks): the tick first when it
/// is charged, then the core's `reservations` (pseudo-tasks), then
/// `members`.
pub(super) fn core_tasks(
    set: &TaskSet,
    members: &[usize],
    jitter: &[u64],
    blocking: &[Blocking],
    reservations: &[CoreTask],
) -> Vec<CoreTask> {
    let overheads = &set.platform.overheads;
    // An empty core has nothing the tick could delay.
    let tick = tick_task(overheads).filter(|_| !members.is_empty());
    let reservations = if members.is_empty() {
        &[]
    } else {
        reservations
    };
    tick.into_iter()
        .chain(reservations.iter().copied())
        .chain(members.iter().map(|&i| {
            let t = &set.tasks[i];
            CoreTask {
                wcet: t.effective_wcet().map_or(u64::MAX, |c| c.0),
                period: t.period.0,
                deadline: t.deadline.0,
                partitions: t.charged_partitions(&set.platform),
                jitter: jitter[i],
                blocking: blocking[i].value(),
                blockers: blocking[i].blockers,
                shielded: blocking[i].shielded,
                // sebek2002: a job pays a switch in and a switch out.
                overhead: overheads.context_switch.0.saturating_mul(2),
                interrupt: overheads.tick.0,
                pseudo: false,
            }
        }))
        .collect()
}

/// How many pseudo-tasks [`core_tasks`] puts in front of the real ones.
pub(super) fn pseudo_tasks(set: &TaskSet, members: &[usize], reservations: &[CoreTask]) -> usize {
    if members.is_empty() {
        return 0;
    }
    usize::from(set.platform.overheads.tick_period.is_some()) + reservations.len()
}

/// Every task's declared jitter plus the platform's release latency
/// (saturated: above 2^64 − 1 ns it passes every deadline anyway).
fn base_jitters(set: &TaskSet) -> Vec<u64> {
    let latency = set.platform.overheads.release_latency.0;
    set.tasks
        .iter()
        .map(|t| t.jitter.0.saturating_add(latency))
        .collect()
}

/// What every round of the holistic analysis starts from.
struct RoundInputs {
    /// Per task: declared jitter plus release latency ([`base_jitters`]).
    base: Vec<u64>,
    /// Per data-triggered task: the producers it inherits jitter from.
    producers: Vec<Vec<usize>>,
    /// The data-triggered tasks.
    data_triggered: Vec<usize>,
    /// Per task: its blocking on its core.
    blocking: Vec<Blocking>,
}

impl RoundInputs {
    /// The inputs of `set` placed as `members` (core c's tasks in
    /// priority order), for Δ = `refill`.
    fn of(set: &TaskSet, members: &[Vec<usize>], refill: u64) -> RoundInputs {
        let n = set.tasks.len();
        let mut producers: Vec<Vec<usize>> = vec![Vec::new(); n];
        for edge in &set.edges {
            if set.tasks[edge.to].trigger == Trigger::Data {
                producers[edge.to].push(edge.from);
            }
        }
        let data_triggered = (0..n)
            .filter(|&i| set.tasks[i].trigger == Trigger::Data)
            .collect();
        let context_switch = set.platform.overheads.context_switch.0;
        let mut blocking = vec![Blocking::default(); n];
        for core in members {
            for (b, &i) in blocking::core_blocking(set, core, refill, context_switch)
                .into_iter()
                .zip(core)
            {
                blocking[i] = b;
            }
        }
        RoundInputs {
            base: base_jitters(set),
            producers,
            data_triggered,
            blocking,
        }
    }
}

/// The holistic fixed point for Δ = `refill`; `members[c]` are core c's
/// tasks in priority order. `None` when `stop` was set before it was
/// reached.
pub(super) fn analyze(
    set: &TaskSet,
    members: &[Vec<usize>],
    reservations: &Reservations,
    refill: u64,
    stop: Option<&AtomicBool>,
) -> Option<Pass> {
    let limit = max_rounds(set.tasks.len());
    analyze_within(set, members, reservations, refill, limit, stop)
}

/// Whether `stop` is set.
fn stopped(stop: Option<&AtomicBool>) -> bool {
    stop.is_some_and(|s| s.load(Ordering::Relaxed))
}

/// [`analyze`] with at most `limit` rounds.
fn analyze_within(
    set: &TaskSet,
    members: &[Vec<usize>],
    reservations: &Reservations,
    refill: u64,
    limit: u32,
    stop: Option<&AtomicBool>,
) -> Option<Pass> {
    let n = set.tasks.len();
    let RoundInputs {
        base,
        producers,
        data_triggered,
        blocking,
    } = RoundInputs::of(set, members, refill);
    let mut inherited = vec![0u64; n];
    let jitters = |inherited: &[u64]| -> Vec<u64> {
        (0..n)
            .map(|i| base[i].saturating_add(inherited[i]))
            .collect()
    };
    // One analysis per core kept from round to round: a round re-iterates
    // only the tasks whose result a moved jitter can change, and reads the
    // response times only; the breakdowns are those of the last round.
    let mut cores: Vec<CoreRounds> = members
        .iter()
        .map(|core| CoreRounds {
            tasks: core_tasks(set, core, &base, &blocking, reservations.of_core(set, core)),
            skip: pseudo_tasks(set, core, reservations.of_core(set, core)),
            rounds: rta::JitterRounds::new(),
        })
        .collect();
    let fixed = |results: &mut Vec<Option<u64>>| {
        for (i, r) in &reservations.results {
            results[*i] = r.wcrt_ns;
        }
    };
    let mut rounds = 0;
    loop {
        rounds += 1;
        let jitter = jitters(&inherited);
        let mut wcrts = per_core(set, members, &jitter, &mut cores, stop, |core, tasks| {
            core.worst_case_response_times(tasks, refill)
        })?;
        fixed(&mut wcrts);
        let mut next = inherited.clone();
        for &c in &data_triggered {
            next[c] = producers[c]
                .iter()
                .map(|&p| wcrts[p].unwrap_or(u64::MAX))
                .max()
                .unwrap_or(0);
        }
        let settled = next == inherited;
        if settled || rounds >= limit {
            let diverged = !settled;
            if diverged {
                // Whatever still moves is taken as unbounded: safe. A task
                // that then misses makes its consumers' jitter unbounded
                // too, also those that had settled: repeated until no
                // consumer of a missing producer is left (each pass turns
                // at least one more jitter unbounded).
                for &c in &data_triggered {
                    if next[c] != inherited[c] {
                        inherited[c] = u64::MAX;
                    }
                }
                loop {
                    let jitter = jitters(&inherited);
                    let mut wcrts =
                        per_core(set, members, &jitter, &mut cores, stop, |core, tasks| {
                            core.worst_case_response_times(tasks, refill)
                        })?;
                    fixed(&mut wcrts);
                    let mut widened = false;
                    for &c in &data_triggered {
                        let producer_misses = producers[c].iter().any(|&p| wcrts[p].is_none());
                        if producer_misses && inherited[c] != u64::MAX {
                            inherited[c] = u64::MAX;
                            widened = true;
                        }
                    }
                    if !widened {
                        break;
                    }
                }
            }
            // The last round once more, with the breakdowns: the same
            // jitters, so every result is taken as it was.
            let jitter = jitters(&inherited);
            let mut results = per_core(set, members, &jitter, &mut cores, stop, |core, tasks| {
                core.response_times(tasks, refill)
            })?;
            for (i, r) in &reservations.results {
                results[*i] = *r;
            }
            return Some(Pass {
                results,
                blocking,
                jitter,
                inherited,
                rounds,
                diverged,
            });
        }
        inherited = next;
    }
}

/// One core from round to round: its tasks as the recurrence takes them
/// ([`core_tasks`], only the jitters change) and its analysis.
struct CoreRounds {
    tasks: Vec<CoreTask>,
    /// The pseudo-tasks in front of the core's tasks.
    skip: usize,
    rounds: rta::JitterRounds,
}

/// `analyze_core` (Eq. (2) with jitter and blocking: response times or
/// their breakdowns) on every core with `jitter`, each core's analysis kept
/// from the previous round in `cores`; results in file order. `None` when
/// `stop` is set before a core.
fn per_core<T: Clone + Default>(
    set: &TaskSet,
    members: &[Vec<usize>],
    jitter: &[u64],
    cores: &mut [CoreRounds],
    stop: Option<&AtomicBool>,
    mut analyze_core: impl FnMut(&mut rta::JitterRounds, &[CoreTask]) -> Vec<T>,
) -> Option<Vec<T>> {
    let mut results = vec![T::default(); set.tasks.len()];
    for (
        core,
        CoreRounds {
            tasks,
            skip,
            rounds,
        },
    ) in members.iter().zip(cores)
    {
        if stopped(stop) {
            return None;
        }
        let skip = *skip;
        for (task, &i) in tasks[skip..].iter_mut().zip(core) {
            task.jitter = jitter[i];
        }
        for (r, &i) in analyze_core(rounds, tasks).into_iter().skip(skip).zip(core) {
            results[i] = r;
        }
    }
    Some(results)
}

#[cfg(test)]
mod straightforward;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{Syntax, parse};

    /// A chain t0 → t1 → t2 → t3 (t3 on core 1 above the timer task `p`),
    /// and `q` fed by `p` on core 2. Every task has C = 1 ms, T = 100 ms.
    const SET: &str = include_str!("../../tests/fixtures/chain_on_three_cores.toml");

    fn members(set: &TaskSet) -> Vec<Vec<usize>> {
        let ranks = set.ranks();
        (0..set.platform.cores)
            .map(|core| super::super::core_members(set, core, &ranks))
            .collect()
    }

    /// Cut short after two rounds, t2's and t3's jitters still move and
    /// are taken as unbounded; `p`, below t3 on core 1, then misses, so
    /// `q`'s jitter, settled since the first round, is unbounded too (it
    /// kept its settled value, a finite bound on a consumer of a task that
    /// misses).
    #[test]
    fn a_consumer_of_a_task_that_misses_after_the_cut_is_unbounded() {
        let set = parse(SET, "set.toml", Syntax::Toml).unwrap();
        let members = members(&set);
        let none = Reservations::default();
        let cut = analyze_within(&set, &members, &none, 0, 2, None).unwrap();
        assert!(cut.diverged);
        let index = |name: &str| set.tasks.iter().position(|t| t.name == name).unwrap();
        assert_eq!(cut.inherited[index("t3")], u64::MAX);
        assert_eq!(cut.results[index("p")].wcrt_ns, None);
        assert_eq!(cut.inherited[index("q")], u64::MAX);
        assert_eq!(cut.results[index("q")].wcrt_ns, None);
        // Given its rounds, the same set settles with every task bounded.
        let settled = analyze(&set, &members, &none, 0, None).unwrap();
        assert!(!settled.diverged);
        assert!(settled.results.iter().all(|r| r.wcrt_ns.is_some()));
        // R_p = C_p + one job of t3 above it.
        assert_eq!(settled.inherited[index("q")], 2_000_000);
    }

    /// A stop flag already set gives no pass, before any core is analyzed;
    /// one that stays clear changes nothing.
    #[test]
    fn a_set_stop_flag_gives_no_pass_and_a_clear_one_the_same_pass() {
        let set = parse(SET, "set.toml", Syntax::Toml).unwrap();
        let members = members(&set);
        let set_flag = AtomicBool::new(true);
        let none = Reservations::default();
        assert!(analyze(&set, &members, &none, 0, Some(&set_flag)).is_none());
        assert!(analyze_within(&set, &members, &none, 0, 2, Some(&set_flag)).is_none());
        let clear = AtomicBool::new(false);
        let with_flag = analyze(&set, &members, &none, 0, Some(&clear)).unwrap();
        let without = analyze(&set, &members, &none, 0, None).unwrap();
        assert_eq!(with_flag.results, without.results);
        assert_eq!(with_flag.rounds, without.rounds);
    }

    #[test]
    fn a_chain_through_every_task_gets_the_rounds_it_needs() {
        assert_eq!(max_rounds(10), MAX_ROUNDS);
        assert_eq!(max_rounds(1024), 1026);
    }
}
