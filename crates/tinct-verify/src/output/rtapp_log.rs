//! rt-app-style per-thread logs, `<log_basename>-<thread>.log`, for tools
//! that read rt-app's: one row per finished job (rt-app: per loop), the
//! columns of rt-app's `log_timing`, times in µs:
//!
//! | column | here |
//! |---|---|
//! | idx | the thread's index in the run |
//! | perf | iterations of the job's `run` kernels (rt-app: calibration loops) |
//! | run | time spent in `run` and `runtime` events |
//! | period | from the job's start to the next job's start (its end if last) |
//! | start, end | CLOCK_MONOTONIC instants of that span |
//! | rel_st | start − the common release |
//! | slack | time left before the job's last timer tick (negative: late) |
//! | c_duration | the configured `run`/`runtime` of the phase |
//! | c_period | the sum of the phase's timer periods |
//! | wu_lat | the wake-up latency after the job's final timer |

use std::io::Write;
use tinct_rt::record::{JobRecord, Outcome};
use tinct_rt::runtime::{RunResult, TaskRun};
use tinct_rt::spec::Step;

pub use tinct_rt::rtapp::log_name;

/// The first words of a thread log (rt-app's header, which tinct's logs
/// keep).
const HEADER_START: &str = "# Policy : ";

/// True if `path` is a thread log: its first line is rt-app's header.
pub fn is_thread_log(path: &std::path::Path) -> bool {
    use std::io::Read;
    let mut start = [0u8; HEADER_START.len()];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut start))
        .is_ok_and(|()| start == *HEADER_START.as_bytes())
}

/// Writes the log of task `index` of `result` to `out`.
pub fn write_thread_log(
    out: &mut impl Write,
    result: &RunResult,
    index: usize,
) -> std::io::Result<()> {
    let task = &result.tasks[index];
    writeln!(
        out,
        "{HEADER_START}{} priority : {}",
        task.scheduling.policy.kernel_name(),
        match task.scheduling.policy {
            tinct_sys::sched::Policy::Fifo(p) | tinct_sys::sched::Policy::RoundRobin(p) => {
                i64::from(p)
            }
            _ => i64::from(task.scheduling.nice),
        }
    )?;
    writeln!(
        out,
        "#idx {:>8} {:>8} {:>8} {:>15} {:>15} {:>15} {:>10} {:>10} {:>10} {:>10}",
        "perf",
        "run",
        "period",
        "start",
        "end",
        "rel_st",
        "slack",
        "c_duration",
        "c_period",
        "wu_lat"
    )?;
    let records = &task.records;
    for (k, r) in records.iter().enumerate() {
        let Some(finish) = r.finish_ns.filter(|_| r.outcome != Outcome::Aborted) else {
            continue;
        };
        let next = records.get(k + 1).filter(|n| n.started());
        let end = next.map_or(finish, |n| n.start_ns.max(finish));
        let phase = &task.spec.phases[r.phase as usize];
        let wake_latency = match (next, phase.release_timer()) {
            (Some(n), Some(_)) => n.latency_ns().unwrap_or(0),
            _ => 0,
        };
        writeln!(
            out,
            "{:4} {:8} {:8} {:8} {:15} {:15} {:15} {:10} {:10} {:10} {:10}",
            index,
            perf(task, r),
            r.run_ns / 1000,
            end.saturating_sub(r.start_ns) / 1000,
            r.start_ns / 1000,
            end / 1000,
            r.start_ns.saturating_sub(result.start_ns) / 1000,
            r.slack_ns / 1000,
            configured_run_ns(&phase.steps) / 1000,
            phase.timer_periods_ns().unwrap_or(0) / 1000,
            wake_latency / 1000,
        )?;
    }
    Ok(())
}

/// Iterations of the kernels of the job's phase.
fn perf(task: &TaskRun, r: &JobRecord) -> u64 {
    let phase = &task.spec.phases[r.phase as usize].name;
    task.work
        .iter()
        .filter(|w| &w.phase == phase)
        .map(|w| w.work.memory.saturating_add(w.work.compute))
        .fold(0, u64::saturating_add)
}

/// The configured durations of `run` and `runtime` steps (rt-app `c_duration`).
fn configured_run_ns(steps: &[Step]) -> u64 {
    steps
        .iter()
        .map(|s| match s {
            Step::Kernel {
                work: tinct_core::model::Work::Target(t),
                ..
            } => t.0,
            Step::Busy { duration_ns } => *duration_ns,
            _ => 0,
        })
        .fold(0, u64::saturating_add)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::fixture::result;

    #[test]
    fn one_row_per_finished_job_with_rt_app_columns() {
        let r = result();
        let mut out = Vec::new();
        write_thread_log(&mut out, &r, 0).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "# Policy : SCHED_FIFO priority : 90");
        assert!(
            lines[1].starts_with("#idx     perf      run   period"),
            "{text}"
        );
        assert_eq!(
            lines.len(),
            2 + 3,
            "three finished jobs, the aborted one left out: {text}"
        );
        let columns: Vec<&str> = lines[2].split_whitespace().collect();
        assert_eq!(columns.len(), 11, "{text}");
        assert_eq!(log_name("rt-app1", "thread0"), "rt-app1-thread0.log");
    }
}
