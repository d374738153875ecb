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

use super::blocking::{self, Blocking};
use super::rta::{self, CoreTask, ResponseTime};
use crate::model::{Overheads, TaskSet, Trigger};
use crate::partitions::PartitionSet;

/// Rounds of "response times → inherited jitters" before the jitters still
/// moving are taken as unbounded (each round is one analysis of every core).
pub const MAX_ROUNDS: u32 = 1000;

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
    /// The jitters did not settle within [`MAX_ROUNDS`].
    pub diverged: bool,
}

/// The top-priority task the periodic scheduler tick is, if it is charged
/// (Burns, Tindell and Wellings 1995).
fn tick_task(overheads: &Overheads) -> Option<CoreTask> {
    let period = overheads.tick_period?.0;
    Some(CoreTask::new(
        overheads.tick.0,
        period,
        period,
        PartitionSet::EMPTY,
    ))
}

/// The core's tasks as the recurrence takes them, with `jitter` and
/// `blocking` (both indexed like the set's tasks), the tick first when it
/// is charged.
pub(super) fn core_tasks(
    set: &TaskSet,
    members: &[usize],
    jitter: &[u64],
    blocking: &[Blocking],
) -> Vec<CoreTask> {
    let overheads = &set.platform.overheads;
    // An empty core has nothing the tick could delay.
    let tick = tick_task(overheads).filter(|_| !members.is_empty());
    tick.into_iter()
        .chain(members.iter().map(|&i| {
            let t = &set.tasks[i];
            CoreTask {
                wcet: t.effective_wcet().map_or(u64::MAX, |c| c.0),
                period: t.period.0,
                deadline: t.deadline.0,
                partitions: t.partitions.unwrap_or(PartitionSet::EMPTY),
                jitter: jitter[i],
                blocking: blocking[i].value(),
                blockers: blocking[i].blockers,
                shielded: blocking[i].shielded,
                // sebek2002: a job pays a switch in and a switch out.
                overhead: overheads.context_switch.0.saturating_mul(2),
                interrupt: overheads.tick.0,
            }
        }))
        .collect()
}

/// How many pseudo-tasks [`core_tasks`] puts in front of the real ones.
pub(super) fn pseudo_tasks(set: &TaskSet, members: &[usize]) -> usize {
    usize::from(set.platform.overheads.tick_period.is_some() && !members.is_empty())
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

/// The holistic fixed point for Δ = `refill`; `members[c]` are core c's
/// tasks in priority order.
pub(super) fn analyze(set: &TaskSet, members: &[Vec<usize>], refill: u64) -> Pass {
    let n = set.tasks.len();
    let base = base_jitters(set);
    let mut producers: Vec<Vec<usize>> = vec![Vec::new(); n];
    for edge in &set.edges {
        if set.tasks[edge.to].trigger == Trigger::Data {
            producers[edge.to].push(edge.from);
        }
    }
    let data_triggered: Vec<usize> = (0..n)
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
    let mut inherited = vec![0u64; n];
    let mut rounds = 0;
    loop {
        rounds += 1;
        let jitter: Vec<u64> = (0..n)
            .map(|i| base[i].saturating_add(inherited[i]))
            .collect();
        let results = all_cores(set, members, &jitter, &blocking, refill);
        let mut next = inherited.clone();
        for &c in &data_triggered {
            next[c] = producers[c]
                .iter()
                .map(|&p| results[p].wcrt_ns.unwrap_or(u64::MAX))
                .max()
                .unwrap_or(0);
        }
        let settled = next == inherited;
        if settled || rounds >= MAX_ROUNDS {
            let diverged = !settled;
            if diverged {
                // Whatever still moves is taken as unbounded: safe.
                for &c in &data_triggered {
                    if next[c] != inherited[c] {
                        inherited[c] = u64::MAX;
                    }
                }
            }
            let jitter: Vec<u64> = (0..n)
                .map(|i| base[i].saturating_add(inherited[i]))
                .collect();
            let results = if diverged {
                all_cores(set, members, &jitter, &blocking, refill)
            } else {
                results
            };
            return Pass {
                results,
                blocking,
                jitter,
                inherited,
                rounds,
                diverged,
            };
        }
        inherited = next;
    }
}

/// Eq. (2) with jitter and blocking on every core, results in file order.
fn all_cores(
    set: &TaskSet,
    members: &[Vec<usize>],
    jitter: &[u64],
    blocking: &[Blocking],
    refill: u64,
) -> Vec<ResponseTime> {
    let mut results = vec![ResponseTime::default(); set.tasks.len()];
    for core in members {
        let skip = pseudo_tasks(set, core);
        let tasks = core_tasks(set, core, jitter, blocking);
        for (r, &i) in rta::response_times(&tasks, refill)
            .into_iter()
            .skip(skip)
            .zip(core)
        {
            results[i] = r;
        }
    }
    results
}
