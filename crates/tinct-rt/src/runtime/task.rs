//! One task thread: pin, prepare the working set and the work per job
//! (calibrating a target time), switch to its policy, wait for the common
//! release, then run the job loop ([`super::jobs`]).

use super::jobs::{Prepared, release_jobs};
use super::result::{TaskRun, WorkNote};
use crate::calibrate;
use crate::counters::JobCounters;
use crate::kernels::{JobWork, Kernel, KernelState};
use crate::memory::Placement;
use crate::shared_log::TaskLog;
use crate::spec::{Policy, Step, TaskSpec};
use crate::watchdog::{Shared, StopReason};
use crate::working_set::WorkingSet;
use std::sync::Barrier;
use std::sync::atomic::Ordering;
use tinct_core::model::Work;

/// Environment variable of the crash test hook (see the module docs).
pub const TEST_CRASH_VAR: &str = "TINCT_TEST_CRASH";

/// The job of `task` that the `TINCT_TEST_CRASH=TASK:JOB` hook crashes.
fn test_crash_job(task: &str) -> Option<u64> {
    let value = std::env::var(TEST_CRASH_VAR).ok()?;
    let (name, job) = value.rsplit_once(':')?;
    (name == task).then(|| job.parse().ok()).flatten()
}

pub(super) fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        format!("panicked: {s}")
    } else if let Some(s) = panic.downcast_ref::<String>() {
        format!("panicked: {s}")
    } else {
        "panicked".into()
    }
}

/// What one task thread is given.
pub(super) struct TaskSetup<'a> {
    pub(super) index: usize,
    pub(super) task: &'a TaskSpec,
    pub(super) duration_ns: u64,
    pub(super) realtime: bool,
    pub(super) compute_ns: Option<f64>,
    pub(super) words: WorkingSet<'a>,
    pub(super) log: TaskLog<'a>,
}

pub(super) fn task_thread(
    setup: TaskSetup<'_>,
    barrier: &Barrier,
    start: &std::sync::atomic::AtomicU64,
    shared: &Shared,
) -> TaskRun {
    let TaskSetup {
        index,
        task,
        duration_ns,
        realtime,
        compute_ns,
        words,
        log,
    } = setup;
    log.set_thread(tinct_sys::sched::gettid());
    // A panic during setup must still reach the barriers, or the run hangs.
    let prepared = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        prepare(task, words, log, compute_ns)
    }))
    .unwrap_or_else(|panic| Err(panic_message(&panic)));
    let policy = if realtime { task.policy } else { Policy::Other };
    let prepared = prepared.and_then(|p| {
        match policy {
            Policy::Fifo(priority) => {
                tinct_sys::sched::set_fifo(priority).map_err(|e| e.to_string())?
            }
            Policy::Other => {}
        }
        Ok(p)
    });
    if let Err(message) = &prepared {
        shared.stop_for(StopReason::TaskFailed {
            task: task.name.clone(),
            message: message.clone(),
        });
    }
    barrier.wait();
    barrier.wait();
    let t0 = start.load(Ordering::SeqCst);
    let mut run = TaskRun {
        spec: task.clone(),
        records: Vec::new(),
        placement: Placement::None,
        rates: None,
        work: Vec::new(),
        policy,
        counters_unavailable: None,
        error: None,
    };
    match prepared {
        Err(message) => run.error = Some(message),
        Ok(mut p) => {
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                release_jobs(
                    index,
                    task,
                    &mut p,
                    t0,
                    t0.saturating_add(duration_ns),
                    shared,
                )
            }));
            if let Err(panic) = outcome {
                let message = panic_message(&panic);
                shared.stop_for(StopReason::TaskFailed {
                    task: task.name.clone(),
                    message: message.clone(),
                });
                run.error = Some(message);
            }
            p.log.end_job();
            run.rates = p.rates;
            run.work = p.notes;
            run.counters_unavailable = p.counters.unavailable().map(str::to_string);
        }
    }
    let _ = tinct_sys::sched::set_other();
    shared.finished.fetch_add(1, Ordering::SeqCst);
    run
}

/// Everything a task needs before the common release.
fn prepare<'a>(
    task: &TaskSpec,
    words: WorkingSet<'a>,
    log: TaskLog<'a>,
    compute_ns: Option<f64>,
) -> std::result::Result<Prepared<'a>, String> {
    if let Some(cpus) = &task.cpus {
        tinct_sys::sched::set_affinity(cpus).map_err(|e| e.to_string())?;
    }
    let kernel = task.kernel().unwrap_or(Kernel::Compute);
    let mut state = KernelState::new(kernel, words, 0x7164_u64 ^ task.name.len() as u64);
    let needs_calibration = task.phases.iter().flat_map(|p| &p.steps).any(|s| {
        matches!(
            s,
            Step::Kernel {
                work: Work::Target(_),
                ..
            }
        )
    });
    let rates = needs_calibration.then(|| {
        let mut rates = calibrate::measure(&mut state);
        if let Some(fixed) = compute_ns {
            rates.compute_ns = fixed;
        }
        rates
    });
    let mut work = Vec::new();
    let mut notes = Vec::new();
    for phase in &task.phases {
        let mut per_step = Vec::new();
        for step in &phase.steps {
            let w = match step {
                Step::Kernel {
                    work,
                    memory_percent,
                    ..
                } => {
                    let w = calibrate::job_work(*work, *memory_percent, rates.as_ref());
                    notes.push(WorkNote {
                        phase: phase.name.clone(),
                        mode: if matches!(work, Work::Target(_)) {
                            "calibrated"
                        } else {
                            "fixed"
                        },
                        target_ns: match work {
                            Work::Target(t) => Some(t.0),
                            Work::Iterations(_) => None,
                        },
                        work: w,
                    });
                    w
                }
                _ => JobWork::default(),
            };
            per_step.push(w);
        }
        work.push(per_step);
    }
    Ok(Prepared {
        state,
        work,
        notes,
        rates,
        log,
        counters: JobCounters::open(),
        crash_at: test_crash_job(&task.name),
    })
}
