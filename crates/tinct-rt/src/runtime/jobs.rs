//! The job loop of one task: releases on its timer, runs each job's
//! steps, records every job, and on a stop records the releases already
//! due as aborted (see [`crate::spec`] for the release rules).

use super::result::WorkNote;
use crate::calibrate::Rates;
use crate::clock::{self, now_ns, thread_cpu_ns, thread_switches};
use crate::counters::JobCounters;
use crate::kernels::{JobWork, KernelState, Ran};
use crate::record::{JobRecord, Outcome};
use crate::shared_log::{InFlight, TaskLog};
use crate::spec::{Phase, Step, TaskSpec};
use crate::watchdog::{Shared, StopReason};
use std::sync::atomic::Ordering;

pub(super) struct Prepared<'a> {
    pub(super) state: KernelState<'a>,
    /// Per phase, per step: the iterations of kernel steps.
    pub(super) work: Vec<Vec<JobWork>>,
    pub(super) notes: Vec<WorkNote>,
    pub(super) rates: Option<Rates>,
    pub(super) log: TaskLog<'a>,
    pub(super) counters: JobCounters,
    /// The job that raises SIGSEGV (`TINCT_TEST_CRASH` test hook).
    pub(super) crash_at: Option<u64>,
}

/// The job loop of one task (see the module and [`crate::spec`] docs).
pub(super) fn release_jobs(
    index: usize,
    task: &TaskSpec,
    p: &mut Prepared,
    t0: u64,
    end: u64,
    shared: &Shared,
) {
    let monitor = &shared.monitors[index];
    let stop = &*shared.stop;
    // Instants are sums of t0 (a CLOCK_MONOTONIC reading) and times within
    // crate::limits, far below u64::MAX; saturating keeps a wrapped sum from
    // ever landing before the end of the run.
    let mut release = t0.saturating_add(task.offset_ns);
    let mut job = 0u64;
    let mut pass = 0u64;
    while task.loops.is_none_or(|l| pass < l) {
        for (phase_index, phase) in task.phases.iter().enumerate() {
            let deadline = task.deadline_of(phase);
            let phase_start = release;
            let backlog = Backlog {
                phase,
                phase_index,
                phase_start,
                deadline,
                end,
            };
            let mut k = 0u64;
            while phase.loops.is_none_or(|l| k < l) {
                if release >= end {
                    return;
                }
                if p.log.is_full() {
                    // Stop before releasing a job that could not be recorded.
                    shared.stop_for(StopReason::LogFull {
                        task: task.name.clone(),
                    });
                    return;
                }
                if !clock::sleep_until_or_stop(release, stop) {
                    // Stopped while waiting: a release already due (a
                    // backlog after a late job) was released all the same.
                    backlog.record(&mut p.log, job, k, release, true);
                    return;
                }
                let absolute_deadline = deadline.map_or(u64::MAX, |d| release.saturating_add(d));
                monitor.begin(job, release, deadline.unwrap_or(0));
                let start = now_ns();
                p.log.begin_job(&InFlight {
                    job,
                    phase: phase_index as u32,
                    release_ns: release,
                    deadline_ns: absolute_deadline,
                    start_ns: start,
                });
                if p.crash_at == Some(job) {
                    tinct_sys::supervise::raise_segfault();
                }
                let cpu = clock::current_cpu();
                let cpu0 = thread_cpu_ns();
                let switches0 = thread_switches();
                let counters0 = p.counters.read();
                let ran = run_steps(phase, &p.work[phase_index], &mut p.state, stop);
                let finish = now_ns();
                // Thread CPU time and switch counts only grow; saturating
                // turns an impossible step back into 0, never a wrap.
                let exec = thread_cpu_ns().saturating_sub(cpu0);
                let switches1 = thread_switches();
                let counters = p.counters.read().since(&counters0);
                monitor.end();
                let outcome = match ran {
                    Ran::Stopped => Outcome::Aborted,
                    Ran::Done if finish > absolute_deadline => Outcome::Missed,
                    Ran::Done => Outcome::Completed,
                };
                let record = JobRecord {
                    job,
                    phase: phase_index as u32,
                    release_ns: release,
                    deadline_ns: absolute_deadline,
                    start_ns: start,
                    finish_ns: finish,
                    exec_ns: exec,
                    cpu,
                    cpu_end: clock::current_cpu(),
                    preemptions: count_u32(
                        switches1.involuntary.saturating_sub(switches0.involuntary),
                    ),
                    voluntary_switches: count_u32(
                        switches1.voluntary.saturating_sub(switches0.voluntary),
                    ),
                    counters,
                    outcome,
                };
                p.log.push(record); // room was checked before the release
                p.log.end_job();
                job += 1;
                k += 1;
                release = next_release(phase, phase_start, k, release, finish);
                if ran == Ran::Stopped {
                    // Releases that came while the stopped job ran were
                    // released too (only a timer releases during a job).
                    backlog.record(&mut p.log, job, k, release, false);
                    return;
                }
            }
        }
        pass += 1;
    }
}

/// Where a phase stood when the run stopped.
struct Backlog<'a> {
    phase: &'a Phase,
    phase_index: usize,
    phase_start: u64,
    deadline: Option<u64>,
    end: u64,
}

impl Backlog<'_> {
    /// Records as never started the releases from `release` (job `job`,
    /// `k` jobs into the phase) that came before now and before the end of
    /// the run: the first one if `first_is_due` (any kind of release), the
    /// following ones only on an absolute timer's grid, which keeps
    /// releasing while a job runs late.
    fn record(
        &self,
        log: &mut TaskLog<'_>,
        mut job: u64,
        mut k: u64,
        mut release: u64,
        first_is_due: bool,
    ) {
        let stopped_at = now_ns().min(self.end.saturating_sub(1));
        let absolute = self.phase.timer.filter(|t| t.absolute);
        if !first_is_due && absolute.is_none() {
            return;
        }
        while self.phase.loops.is_none_or(|l| k < l) && release <= stopped_at {
            let deadline = self
                .deadline
                .map_or(u64::MAX, |d| release.saturating_add(d));
            if !log.push(JobRecord::never_started(
                job,
                self.phase_index as u32,
                release,
                deadline,
            )) {
                return;
            }
            let Some(timer) = absolute else { return };
            job += 1;
            k += 1;
            release = grid_release(self.phase_start, k, timer.period_ns);
        }
    }
}

/// The release of the next job of `phase` after `jobs_done` jobs, the last
/// released at `previous` and finished at `finish` (rt-app semantics):
/// absolute timers keep the grid `phase_start + k·T`; relative timers add T
/// to the previous release but restart from `finish` after a missed tick;
/// without a timer the next job is released when the previous one ends.
fn next_release(
    phase: &Phase,
    phase_start: u64,
    jobs_done: u64,
    previous: u64,
    finish: u64,
) -> u64 {
    match phase.timer {
        Some(t) if t.absolute => grid_release(phase_start, jobs_done, t.period_ns),
        Some(t) => previous.saturating_add(t.period_ns).max(finish),
        None => finish,
    }
}

/// A count in a record's 32-bit field, at most `u32::MAX` (4 billion
/// context switches in one job do not happen; if they did, the field says
/// "at least").
fn count_u32(count: impl TryInto<u32>) -> u32 {
    count.try_into().unwrap_or(u32::MAX)
}

/// Release `k` of an absolute timer's grid: `phase_start + k·T`, saturating
/// (an instant past the end of any run ends the task instead of wrapping).
fn grid_release(phase_start: u64, k: u64, period_ns: u64) -> u64 {
    phase_start.saturating_add(k.saturating_mul(period_ns))
}

fn run_steps(
    phase: &Phase,
    work: &[JobWork],
    state: &mut KernelState,
    stop: &std::sync::atomic::AtomicBool,
) -> Ran {
    for (step, w) in phase.steps.iter().zip(work) {
        let ran = match step {
            Step::Kernel { .. } => state.run(*w, stop),
            Step::Busy { duration_ns } => {
                let until = now_ns().saturating_add(*duration_ns);
                let mut ran = Ran::Done;
                while now_ns() < until {
                    if stop.load(Ordering::Relaxed) {
                        ran = Ran::Stopped;
                        break;
                    }
                    state.compute_steps(64);
                }
                ran
            }
            Step::Sleep { duration_ns } => {
                if clock::sleep_until_or_stop(now_ns().saturating_add(*duration_ns), stop) {
                    Ran::Done
                } else {
                    Ran::Stopped
                }
            }
        };
        if ran == Ran::Stopped {
            return Ran::Stopped;
        }
    }
    Ran::Done
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shared_log::SharedLog;
    use crate::spec::Timer;

    fn phase(timer: Option<Timer>) -> Phase {
        Phase {
            name: "p".into(),
            loops: None,
            steps: vec![],
            timer,
        }
    }

    fn recorded(phase: &Phase, release_ago_ns: u64, first_is_due: bool) -> Vec<JobRecord> {
        let now = now_ns();
        let backlog = Backlog {
            phase,
            phase_index: 0,
            phase_start: now - 100_000_000,
            deadline: Some(1_000_000),
            end: now + 1_000_000_000,
        };
        let log = SharedLog::new(&[1000]).unwrap();
        backlog.record(&mut log.writer(0), 5, 3, now - release_ago_ns, first_is_due);
        log.records(0)
    }

    #[test]
    fn an_absolute_timer_keeps_releasing_while_a_job_runs_late() {
        let absolute = phase(Some(Timer {
            period_ns: 10_000_000,
            absolute: true,
        }));
        // Phase started 100 ms ago with T = 10 ms; job 3 was due 70 ms ago:
        // releases at 30, 40, ..., 100 ms into the phase have all come.
        let r = recorded(&absolute, 70_000_000, false);
        assert_eq!(r.len(), 8, "{r:?}");
        assert!(
            r.iter()
                .all(|j| j.outcome == Outcome::Aborted && !j.started())
        );
        assert_eq!((r[0].job, r[7].job), (5, 12));
        assert_eq!(r[1].release_ns - r[0].release_ns, 10_000_000);
    }

    #[test]
    fn without_an_absolute_timer_only_a_due_release_counts() {
        for timer in [
            None,
            Some(Timer {
                period_ns: 10_000_000,
                absolute: false,
            }),
        ] {
            let p = phase(timer);
            assert_eq!(
                recorded(&p, 5_000_000, true).len(),
                1,
                "{timer:?}: the due release"
            );
            assert!(
                recorded(&p, 5_000_000, false).is_empty(),
                "{timer:?}: nothing releases during a job"
            );
        }
        let future = phase(None);
        let now = now_ns();
        let backlog = Backlog {
            phase: &future,
            phase_index: 0,
            phase_start: now,
            deadline: None,
            end: now + 1_000_000_000,
        };
        let log = SharedLog::new(&[4]).unwrap();
        backlog.record(&mut log.writer(0), 0, 0, now + 500_000_000, true);
        assert!(
            log.records(0).is_empty(),
            "a release still to come was not released"
        );
    }
}
