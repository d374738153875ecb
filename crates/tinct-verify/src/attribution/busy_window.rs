//! A job's busy window on its CPU and what ran in it: where the window
//! starts (the level-i busy period, [`BUSY_GAP_NS`]), the time its CPU ran
//! none of the jobs of its priority or above, and how far the jobs that
//! could delay it ran beyond their modelled C. Each is a query of its
//! CPU's [`Level`] at its priority (`timeline`), not a pass over the run.

use super::timeline::{Level, on_one_cpu};
use tinct_base::units::ms_with_unit;
use tinct_rt::record::JobRecord;
use tinct_rt::runtime::{RunResult, TaskRun};
use tinct_sys::sched::Policy;

/// Two jobs of one CPU closer than this belong to one busy stretch (the
/// switch between them takes microseconds).
pub const BUSY_GAP_NS: u64 = 100_000;

/// The level above every SCHED_FIFO/RR priority (1..=99) that
/// SCHED_DEADLINE threads run at.
const DEADLINE_LEVEL: u8 = 100;

/// The priority a task's jobs run at: FIFO/RR priority; above them all
/// for a SCHED_DEADLINE reservation, which preempts every FIFO thread
/// (all reservations share the level: under EDF any of them can run
/// before another); else 0.
pub(super) fn priority(task: &TaskRun) -> u8 {
    match task.spec.scheduling.policy {
        Policy::Fifo(p) | Policy::RoundRobin(p) => p,
        Policy::Deadline => DEADLINE_LEVEL,
        _ => 0,
    }
}

/// The position of job `r` of task `task` in `level`, if it is there
/// (finished on the level's CPU, where it started).
fn position(level: &Level, task: usize, r: &JobRecord) -> Option<usize> {
    on_one_cpu(r)?;
    level.position(task, r.job, r.start_ns)
}

/// The start of job `r`'s busy window: its release, or the start of the
/// level-`prio` busy period on its CPU that was going on when it was
/// released: a stretch without a pause during which jobs of priority ≥
/// `prio` were pending (released and not finished). Pending, not running:
/// a job a stall kept from starting still holds up the jobs after it.
/// `level` is its CPU's at its priority.
pub(super) fn window_start(level: &Level, r: &JobRecord) -> u64 {
    level.window_start(r.release_ns)
}

/// The time between job `r`'s release and finish that its CPU spent on
/// none of the run's jobs of priority ≥ `prio` (its own included):
/// release latencies, context switches, the kernel's own work, the
/// sentinel; and how many dispatches of such jobs fell in that window
/// (each may carry one release latency). `r` is job of task `task`,
/// `level` its CPU's at its priority.
pub(super) fn off_task_ns(level: &Level, task: usize, r: &JobRecord) -> (u64, u64) {
    let Some(finish) = r.finish_ns else {
        return (0, 0);
    };
    let (others, dispatches) = level.busy_within(r.release_ns, finish, position(level, task, r));
    let busy = u128::from(r.exec_ns) + others;
    let window = u128::from(finish.saturating_sub(r.release_ns));
    (
        u64::try_from(window.saturating_sub(busy)).unwrap_or(u64::MAX),
        dispatches + 1,
    )
}

/// How much the jobs that could delay `r` executed beyond their modelled
/// C, in all: `r` itself, the earlier jobs of its task and the
/// higher-priority jobs that ran on its CPU within its busy window
/// `[from, finish]` (each ns above C delays `r` by as much), with the
/// largest of them in words; `None` when every one stayed within its C.
/// `r` is a job of `result.tasks[task]`, `level` its CPU's at its priority.
pub(super) fn exec_above_c(
    result: &RunResult,
    level: &Level,
    task: usize,
    r: &JobRecord,
    from: u64,
    finish: u64,
) -> Option<(u64, String)> {
    let own = &result.tasks[task];
    // Only its span on this CPU can delay it (a program's threads may
    // have run elsewhere meanwhile), as for the others' (`Entry::on_cpu`).
    let own_on_cpu = r.exec_ns.min(finish.saturating_sub(r.start_ns));
    let own_excess = own
        .spec
        .bound
        .map_or(0, |b| own_on_cpu.saturating_sub(b.wcet_ns));
    let (others, largest) = level.excess_within(task, position(level, task, r), from, finish);
    let total = u64::try_from(u128::from(own_excess) + others).unwrap_or(u64::MAX);
    if total == 0 {
        return None;
    }
    let words = match largest.filter(|&(value, _)| value > own_excess) {
        Some((_, p)) => {
            let e = &level.entries[p];
            let t = &result.tasks[e.task];
            let c = t.spec.bound.map_or(0, |b| b.wcet_ns);
            format!(
                "{} '{}' job {}: {} > C {}",
                if e.task == task {
                    "earlier"
                } else {
                    "higher-priority"
                },
                t.spec.name,
                e.job,
                ms_with_unit(e.exec),
                ms_with_unit(c)
            )
        }
        None => {
            let c = own.spec.bound.map_or(0, |b| b.wcet_ns);
            format!("{} > C {}", ms_with_unit(r.exec_ns), ms_with_unit(c))
        }
    };
    Some((
        total,
        format!("{} above C in all; the most: {words}", ms_with_unit(total)),
    ))
}
