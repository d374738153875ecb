//! One task thread: pin, prepare the working set and the work per job
//! (calibrating a target time), join its task group, switch to its
//! scheduling, wait for the common release (a forked thread: for its
//! fork), then run the job loop ([`super::jobs`]).

use super::deadline::switch_policy;
use super::jobs::{Context, Prepared, join_group, release_jobs};
use super::objects::Objects;
use super::result::{TaskRun, WorkNote};
use crate::calibrate::{self, Rates, SharedComputeRates};
use crate::clock::now_ns;
use crate::counters::JobCounters;
use crate::kernels::{JobWork, Kernel, KernelState};
use crate::memory::Placement;
use crate::shared_log::TaskLog;
use crate::spec::{Policy, Scheduling, Step, TaskSpec, WatchdogMode};
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
    pub(super) watchdog: WatchdogMode,
    pub(super) compute_ns: Option<f64>,
    /// The compute rate measured once per CPU set, shared by the run.
    pub(super) compute_rates: &'a SharedComputeRates,
    pub(super) words: WorkingSet<'a>,
    /// The stack of its colours its jobs run on (`None`: the thread's).
    pub(super) stack: Option<&'a mut [u8]>,
    pub(super) log: TaskLog<'a>,
    pub(super) objects: &'a Objects,
    pub(super) groups: &'a [(String, std::fs::File)],
    /// The cpuset `tasks` file of each partitioned deadline CPU.
    pub(super) partitions: &'a [(u32, std::fs::File)],
    /// Per timer of the run: used by this thread only.
    pub(super) own_timers: Vec<bool>,
    /// Mutexes of the run (the most this thread can hold).
    pub(super) mutexes: usize,
    pub(super) all_cpus: Vec<u32>,
    pub(super) seed: u64,
    /// For a forked thread: its gate and slot.
    pub(super) fork_slot: Option<(usize, usize)>,
}

pub(super) fn task_thread(
    setup: TaskSetup<'_>,
    barrier: &Barrier,
    ended: &Barrier,
    start: &std::sync::atomic::AtomicU64,
    shared: &Shared,
) -> TaskRun {
    let TaskSetup {
        index,
        task,
        duration_ns,
        realtime,
        watchdog,
        compute_ns,
        compute_rates,
        words,
        stack,
        log,
        objects,
        groups,
        partitions,
        own_timers,
        mutexes,
        all_cpus,
        seed,
        fork_slot,
    } = setup;
    let tid = tinct_sys::sched::gettid();
    log.set_thread(tid);
    objects.note_thread(index, tid);
    let scheduling = if realtime {
        task.scheduling
    } else {
        Scheduling::other()
    };
    // A panic during setup must still reach the barriers, or the run hangs.
    let prepared = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        prepare(
            task,
            words,
            log,
            compute_ns,
            compute_rates,
            groups,
            partitions,
            mutexes,
            &all_cpus,
            seed ^ index as u64,
        )
        .and_then(|mut p| {
            p.program = start_program(task, &scheduling)?;
            if let Some(program) = &p.program {
                // Above the program while it starts: one spinning at its
                // real-time priority on this CPU cannot starve the wait.
                p.program_ready = above_programs(realtime, || program_readiness(program))?;
            }
            Ok(p)
        })
    }))
    .unwrap_or_else(|panic| Err(panic_message(&panic)));
    let prepared = prepared.and_then(|p| {
        if let Some(group) = &task.taskgroup
            && !join_group(groups, group)
        {
            return Err(format!("could not move the thread into task group {group}"));
        }
        if scheduling != Scheduling::other() {
            switch_policy(&scheduling, task.cpus.as_deref(), partitions, &all_cpus)?;
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
    if let Some(frames) = task.program.as_ref().and_then(|p| p.frames.as_deref()) {
        crate::program_heap::set_aside_startup_reports(frames);
    }
    barrier.wait();
    // From here on, every way out passes the run's end (twice), a panic's
    // too: the main thread reads the footprint between the two.
    let at_end = PassesTheEnd(ended);
    let t0 = start.load(Ordering::SeqCst);
    let end = t0.saturating_add(duration_ns);
    let mut run = TaskRun {
        spec: task.clone(),
        tid,
        records: Vec::new(),
        placement: Placement::None,
        rates: None,
        work: Vec::new(),
        scheduling,
        counters_unavailable: None,
        error: None,
        program: None,
    };
    // What the jobs used, kept (mapped) until the footprint is read.
    let mut used = None;
    match prepared {
        Err(message) => run.error = Some(message),
        Ok(mut p) => {
            let cx = Context {
                index,
                task,
                shared,
                objects,
                watchdog: if realtime {
                    watchdog
                } else {
                    WatchdogMode::Off
                },
                own_timers: &own_timers,
                end,
            };
            let first = match fork_slot {
                None => Some(t0.saturating_add(task.offset_ns)),
                Some((gate, slot)) => wait_for_fork(objects, shared, gate, slot),
            };
            if let Some(first) = first {
                let mut jobs = || {
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        release_jobs(&cx, &mut p, first)
                    }))
                    .map_err(|panic| panic_message(&panic))
                };
                // On the stack of its colours, where it has one: the
                // lines a job's stack touches stay in its partitions.
                let outcome = match stack {
                    Some(stack) => {
                        tinct_sys::stack::run_on_stack(stack, jobs).unwrap_or_else(|e| {
                            Err(format!("cannot run its jobs on its coloured stack: {e}"))
                        })
                    }
                    None => jobs(),
                };
                if let Err(message) = outcome {
                    shared.stop_for(StopReason::TaskFailed {
                        task: task.name.clone(),
                        message: message.clone(),
                    });
                    run.error = Some(message);
                }
            }
            p.log.end_job();
            if let Some(program) = p.program.take() {
                let mut ended = finish_program(task, program);
                ended.ready = std::mem::take(&mut p.program_ready);
                run.program = Some(ended);
            }
            run.rates = p.rates;
            run.work = std::mem::take(&mut p.notes);
            run.counters_unavailable = p.counters.unavailable().map(str::to_string);
            used = Some(p);
        }
    }
    let _ = tinct_sys::sched::set_scheduling(&Scheduling::other());
    shared.finished.fetch_add(1, Ordering::SeqCst);
    // Alive, its stack and what its jobs used still mapped, while the
    // run's footprint is read.
    drop(at_end);
    drop(used);
    run
}

/// Waits twice at the run's end barrier when dropped: once when the task's
/// jobs have ended, once when the footprint has been read.
struct PassesTheEnd<'a>(&'a Barrier);

impl Drop for PassesTheEnd<'_> {
    fn drop(&mut self) {
        self.0.wait();
        self.0.wait();
    }
}

/// The task's program started: pinned to the task's CPUs, at
/// the scheduling its jobs run under, its stderr into its file of the run
/// directory. `None` for a task whose body is not a program.
fn start_program(
    task: &TaskSpec,
    scheduling: &Scheduling,
) -> std::result::Result<Option<tinct_sys::program::Program>, String> {
    let Some(program) = &task.program else {
        return Ok(None);
    };
    let stderr = match &program.stderr {
        Some(path) => std::fs::File::create(path).map_err(|e| {
            format!(
                "cannot create {} for its program's stderr: {e}",
                path.display()
            )
        })?,
        None => std::fs::File::create("/dev/null").map_err(|e| e.to_string())?,
    };
    let command: Vec<std::ffi::OsString> = program.command.iter().map(Into::into).collect();
    tinct_sys::program::Program::start(tinct_sys::program::ProgramStart {
        channel: match program.protocol {
            tinct_core::model::JobProtocol::Lines => tinct_sys::program::Channel::Lines,
            tinct_core::model::JobProtocol::Futex => tinct_sys::program::Channel::Futex,
        },
        command: &command,
        env_remove: &crate::program_heap::shim_variables(),
        env: &program.env,
        cpus: task.cpus.as_deref(),
        scheduling: Some(scheduling),
        stderr,
    })
    .map(Some)
    .map_err(|e| format!("cannot start its program {}: {e}", program.command[0]))
}

/// Runs `wait` at the watchdog's SCHED_FIFO priority when the run is real
/// time (and the kernel allows it), then back under SCHED_OTHER, where a
/// task's setup runs.
fn above_programs<T>(realtime: bool, wait: impl FnOnce() -> T) -> T {
    let raised = realtime
        && tinct_sys::sched::set_scheduling(&Scheduling::of(Policy::Fifo(
            crate::spec::WATCHDOG_PRIORITY,
        )))
        .is_ok();
    let out = wait();
    if raised {
        let _ = tinct_sys::sched::set_scheduling(&Scheduling::other());
    }
    out
}

/// How long the run waits for a program to finish starting up before the
/// common release.
const PROGRAM_READY_LIMIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Waits (before the common release) until the program waits for its
/// first job, so that its start-up does not count in job 0; its start-up
/// in words, or an error if it exited first.
fn program_readiness(program: &tinct_sys::program::Program) -> Result<String, String> {
    use tinct_sys::program::Readiness;
    let since = std::time::Instant::now();
    Ok(match program.wait_ready(PROGRAM_READY_LIMIT) {
        Readiness::Ready => format!(
            "ready {:.1} ms after its start",
            since.elapsed().as_secs_f64() * 1e3
        ),
        Readiness::Exited => {
            return Err("its program exited before it waited for its first job".into());
        }
        Readiness::NotReady => format!(
            "not seen waiting for its first job within {} s of its start (blocked reading its \
             stdin, or in tinct_job_wait): job 0 may count the rest of its start-up",
            PROGRAM_READY_LIMIT.as_secs()
        ),
        Readiness::Unknown(why) => {
            format!("its start-up's end is not known ({why}): job 0 may count part of it")
        }
    })
}

/// How long a program may take to exit once its input ended before it is
/// killed.
const PROGRAM_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

/// Ends the task's program (end of file on its stdin, then SIGKILL after
/// [`PROGRAM_GRACE`]) and says how it ended.
fn finish_program(task: &TaskSpec, program: tinct_sys::program::Program) -> super::ProgramRun {
    let pid = program.pid();
    let (status, killed) = program.finish(PROGRAM_GRACE);
    let ended = match status {
        None => "not known (it could not be waited for)".to_string(),
        Some(status) => {
            use std::os::unix::process::ExitStatusExt;
            match (status.code(), status.signal()) {
                (Some(code), _) => format!("exit status {code}"),
                (None, Some(signal)) => {
                    format!("killed by {}", tinct_sys::supervise::signal_name(signal))
                }
                _ => status.to_string(),
            }
        }
    };
    super::ProgramRun {
        command: task
            .program
            .as_ref()
            .map(|p| p.command.clone())
            .unwrap_or_default(),
        pid,
        ended,
        killed,
        ready: String::new(),
    }
}

/// A forked thread waits (polling every millisecond) until a `fork` event
/// gives it its slot; its first release is that instant. `None` if the
/// run ends first.
fn wait_for_fork(objects: &Objects, shared: &Shared, gate: usize, slot: usize) -> Option<u64> {
    let forked_at = &objects.forks[gate].forked_at[slot];
    loop {
        let at = forked_at.load(Ordering::Acquire);
        if at != 0 {
            return Some(at);
        }
        if shared.stopping() || shared.ending.load(Ordering::Relaxed) {
            return None;
        }
        crate::clock::sleep_until(now_ns().saturating_add(1_000_000));
    }
}

/// Everything a task needs before the common release.
#[allow(clippy::too_many_arguments)]
fn prepare<'a>(
    task: &TaskSpec,
    words: WorkingSet<'a>,
    log: TaskLog<'a>,
    compute_ns: Option<f64>,
    compute_rates: &SharedComputeRates,
    groups: &'a [(String, std::fs::File)],
    partitions: &'a [(u32, std::fs::File)],
    mutexes: usize,
    all_cpus: &[u32],
    seed: u64,
) -> std::result::Result<Prepared<'a>, String> {
    if let Some(cpus) = &task.cpus {
        tinct_sys::sched::set_affinity(cpus).map_err(|e| e.to_string())?;
    }
    let kernel = task.kernel().unwrap_or(Kernel::Compute);
    let io_bytes = task
        .phases
        .iter()
        .flat_map(|p| &p.steps)
        .any(|s| matches!(s, Step::IoRun { .. }))
        .then(|| usize::try_from(task.working_set.max(4096)).unwrap_or(4096));
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
    let rates = needs_calibration.then(|| Rates {
        memory_ns: calibrate::memory_rate(&mut state),
        compute_ns: compute_ns.unwrap_or_else(|| {
            compute_rates
                .get_or_measure(task.cpus.as_deref(), || calibrate::compute_rate(&mut state))
        }),
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
                        }
                        .into(),
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
        io_buffer: io_bytes.map_or_else(Vec::new, |n| vec![0x5a; n]),
        held: Vec::with_capacity(mutexes),
        all_cpus: all_cpus.to_vec(),
        groups,
        partitions,
        jitter_state: seed ^ 0x6a09_e667_f3bc_c909,
        program: None,
        program_ready: String::new(),
        job: 0,
    })
}
