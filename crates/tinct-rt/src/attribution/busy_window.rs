//! A job's busy window on its CPU and what ran in it: where the window
//! starts (the level-i busy period, [`BUSY_GAP_NS`]), the time its CPU ran
//! none of the jobs of its priority or above, and how far the jobs that
//! could delay it ran beyond their modelled C.

use super::ms;
use crate::record::JobRecord;
use crate::runtime::{RunResult, TaskRun};
use tinct_sys::sched::Policy;

/// Two jobs of one CPU closer than this belong to one busy stretch (the
/// switch between them takes microseconds).
pub const BUSY_GAP_NS: u64 = 100_000;

/// The priority a task's jobs run at (FIFO/RR priority, else 0).
pub(super) fn priority(task: &TaskRun) -> u8 {
    match task.spec.scheduling.policy {
        Policy::Fifo(p) | Policy::RoundRobin(p) => p,
        _ => 0,
    }
}

/// A finished job that started and ended on one CPU: (cpu, start, finish).
fn on_one_cpu(r: &JobRecord) -> Option<(u32, u64, u64)> {
    let finish = r.finish_ns?;
    (r.started() && r.cpu == r.cpu_end).then_some((r.cpu, r.start_ns, finish))
}

/// The start of job `r`'s busy window: its release, or the start of the
/// level-`prio` busy period on its CPU that was going on when it was
/// released: a stretch without a pause during which jobs of priority ≥
/// `prio` were pending (released and not finished). Pending, not running:
/// a job a stall kept from starting still holds up the jobs after it.
pub(super) fn window_start(result: &RunResult, r: &JobRecord, prio: u8) -> u64 {
    let intervals: Vec<(u64, u64)> = result
        .tasks
        .iter()
        .filter(|t| priority(t) >= prio)
        .flat_map(|t| &t.records)
        .filter_map(|other| {
            let (cpu, _, finish) = on_one_cpu(other)?;
            (cpu == r.cpu && other.release_ns < r.release_ns).then_some((other.release_ns, finish))
        })
        .collect();
    let mut begin = r.release_ns;
    // Walk back over the stretches that reach the current start.
    let mut changed = true;
    while changed {
        changed = false;
        for &(start, finish) in &intervals {
            if start < begin && finish.saturating_add(BUSY_GAP_NS) >= begin {
                begin = start;
                changed = true;
            }
        }
    }
    begin
}

/// The time between job `r`'s release and finish that its CPU spent on
/// none of the run's jobs of priority ≥ `prio` (its own included):
/// release latencies, context switches, the kernel's own work, the
/// sentinel; and how many dispatches of such jobs fell in that window
/// (each may carry one release latency).
pub(super) fn off_task_ns(result: &RunResult, r: &JobRecord, prio: u8) -> (u64, u64) {
    let Some(finish) = r.finish_ns else {
        return (0, 0);
    };
    let mut busy = r.exec_ns;
    let mut dispatches = 1u64;
    for (cpu, start, end, exec) in result
        .tasks
        .iter()
        .filter(|t| priority(t) >= prio)
        .flat_map(|t| &t.records)
        .filter(|other| !std::ptr::eq(*other, r))
        .filter_map(|other| on_one_cpu(other).map(|(c, s, e)| (c, s, e, other.exec_ns)))
    {
        let overlap = end.min(finish).saturating_sub(start.max(r.release_ns));
        if cpu == r.cpu && overlap > 0 {
            busy = busy.saturating_add(exec.min(overlap));
            dispatches += 1;
        }
    }
    (
        finish.saturating_sub(r.release_ns).saturating_sub(busy),
        dispatches,
    )
}

/// How much the jobs that could delay `r` executed beyond their modelled
/// C, in all: `r` itself, the earlier jobs of its task and the
/// higher-priority jobs that ran on its CPU within its busy window
/// `[from, finish]` (each ns above C delays `r` by as much), with the
/// largest of them in words; `None` when every one stayed within its C.
pub(super) fn exec_above_c(
    result: &RunResult,
    task: &TaskRun,
    r: &JobRecord,
    prio: u8,
    from: u64,
    finish: u64,
) -> Option<(u64, String)> {
    let mut total = 0u64;
    let mut largest: Option<(u64, String)> = None;
    let mut note = |excess: u64, words: String| {
        total = total.saturating_add(excess);
        if largest.as_ref().is_none_or(|(l, _)| excess > *l) {
            largest = Some((excess, words));
        }
    };
    if let Some(c) = task.spec.bound.map(|b| b.wcet_ns)
        && r.exec_ns > c
    {
        note(r.exec_ns - c, format!("{} > C {}", ms(r.exec_ns), ms(c)));
    }
    for t in result.tasks.iter().filter(|t| priority(t) >= prio) {
        let own = std::ptr::eq(t, task);
        if !own && priority(t) == prio {
            continue;
        }
        let Some(c) = t.spec.bound.map(|b| b.wcet_ns) else {
            continue;
        };
        for other in &t.records {
            let Some((cpu, start, end)) = on_one_cpu(other) else {
                continue;
            };
            let counts = !own || other.job != r.job;
            if counts && cpu == r.cpu && start < finish && end > from && other.exec_ns > c {
                note(
                    other.exec_ns - c,
                    format!(
                        "{} '{}' job {}: {} > C {}",
                        if own { "earlier" } else { "higher-priority" },
                        t.spec.name,
                        other.job,
                        ms(other.exec_ns),
                        ms(c)
                    ),
                );
            }
        }
    }
    let (_, words) = largest?;
    Some((
        total,
        format!("{} above C in all; the most: {words}", ms(total)),
    ))
}
