//! Running a [`RunSpec`]: one thread per task, a common release, periodic
//! jobs, the watchdog and clean stops.
//!
//! As in kim2013 Section IV, every task is released at one common instant
//! (here with absolute-time `clock_nanosleep` on CLOCK_MONOTONIC rather than
//! hrtimers in the kernel) and each job's response time is measured from
//! its planned release.
//!
//! Order of a run: check privileges → allocate the shared job logs
//! ([`crate::shared_log`]) → (supervised: fork, the rest runs in the child)
//! → `mlockall` → the colored page pool and every task's working set from
//! its partitions' colors ([`crate::memory`]) → per task thread: pin, touch
//! the working set, calibrate, switch to its policy → barrier → common
//! release at `t0` → jobs → join → translate every working-set page again
//! and report its placement → `munlockall`. Setup failures and panics in a
//! task stop the whole run; the records already taken are kept. A crash
//! (a fatal signal) ends the run's process: under supervision
//! ([`RunOptions::supervise`], see [`crate::runtime_supervised`]) the parent
//! still reports every recorded job.
//!
//! Test hook: the environment variable `TINCT_TEST_CRASH=TASK:JOB`, read
//! once when a task is set up, makes task `TASK` raise SIGSEGV at the start
//! of its job number `JOB` (from 0), to test crash handling.

use crate::calibrate::{self, Rates};
use crate::clock::{self, now_ns, thread_cpu_ns, thread_switches};
use crate::counters::JobCounters;
use crate::kernels::{JobWork, Kernel, KernelState, Ran};
use crate::memory::{Backing, ColoredMemory, Placement, WorkingSet};
use crate::record::{JobRecord, Outcome};
use crate::shared_log::{InFlight, SharedLog, TaskLog};
use crate::spec::{Phase, Policy, RunSpec, Step, TaskSpec, WATCHDOG_PRIORITY};
use crate::watchdog::{self, Limits, Shared, StopReason};
use crate::{Result, RtError};
use serde::Serialize;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Barrier};
use tinct_core::model::Work;

/// How to run.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct RunOptions {
    /// Use the spec's real-time policies; false runs everything under
    /// SCHED_OTHER (`--no-rt`).
    pub realtime: bool,
    /// The watchdog stops a job at `release + factor × deadline`.
    pub watchdog_factor: f64,
    /// Stop cleanly on SIGINT and SIGTERM (a second signal kills at once).
    pub handle_signals: bool,
    /// Delay between the end of setup and the common release.
    pub release_margin_ns: u64,
    /// Accept working sets whose page colors cannot be controlled (frame
    /// numbers unreadable, not root): `--uncolored`. Otherwise such a run
    /// is refused.
    pub uncolored: bool,
    /// Run the tasks in a forked child supervised by this process, so that
    /// a crash in a task still leaves the records and a report
    /// ([`crate::runtime_supervised`]). Off by default: in-process runs
    /// keep the working sets inspectable and the allocator observable.
    pub supervise: bool,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            realtime: true,
            watchdog_factor: 3.0,
            handle_signals: true,
            release_margin_ns: 20_000_000,
            uncolored: false,
            supervise: false,
        }
    }
}

/// How a job's work was decided.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WorkNote {
    /// Phase name.
    pub phase: String,
    /// "calibrated" (a target time) or "fixed" (iterations as written).
    pub mode: &'static str,
    /// The target time, when calibrated.
    pub target_ns: Option<u64>,
    /// Iterations per job.
    pub work: JobWork,
}

/// What happened to one task.
#[derive(Clone, Debug, Serialize)]
pub struct TaskRun {
    /// The task as specified.
    pub spec: TaskSpec,
    /// Its jobs, in order.
    pub records: Vec<JobRecord>,
    /// Where its working set lived.
    pub placement: Placement,
    /// Measured iteration costs, when something was calibrated.
    pub rates: Option<Rates>,
    /// The work per job of each kernel step.
    pub work: Vec<WorkNote>,
    /// The policy it actually ran under.
    pub policy: Policy,
    /// Why hardware counters are missing from the records, if they are.
    pub counters_unavailable: Option<String>,
    /// Setup error or panic message, if any.
    pub error: Option<String>,
}

/// The result of a run.
#[derive(Clone, Debug, Serialize)]
pub struct RunResult {
    /// The common release, CLOCK_MONOTONIC ns.
    pub start_ns: u64,
    /// No job was released at or after this instant.
    pub end_ns: u64,
    /// Why the run ended.
    pub stop: StopReason,
    /// True when run under SCHED_FIFO; false for `--no-rt` (SCHED_OTHER).
    pub realtime: bool,
    /// Whether `mlockall` succeeded.
    pub memory_locked: bool,
    /// The kernel's RT throttling as found (tinct never changes it).
    pub rt_throttling: String,
    /// The watchdog's factor.
    pub watchdog_factor: f64,
    /// Per task, in spec order.
    pub tasks: Vec<TaskRun>,
}

/// Checks that the run can get what it needs before any thread starts.
pub fn check_privileges(spec: &RunSpec, options: &RunOptions) -> Result<()> {
    if options.realtime
        && spec.needs_rt()
        && let tinct_sys::privilege::Probe::Failed { message, .. } =
            tinct_sys::privilege::probe_sched_fifo()
    {
        return Err(RtError::Privilege {
            what: format!("SCHED_FIFO is not allowed for this process ({message})"),
            fix: "run as root, or give the binary CAP_SYS_NICE and CAP_IPC_LOCK \
                  (sudo setcap cap_sys_nice,cap_ipc_lock+ep $(command -v tinct)), \
                  or raise RLIMIT_RTPRIO (ulimit -r 99); or pass --no-rt to run under \
                  SCHED_OTHER without real-time guarantees"
                .into(),
        });
    }
    let allowed = tinct_sys::sched::affinity()?;
    for task in &spec.tasks {
        for cpu in task.cpus.iter().flatten() {
            if !allowed.contains(cpu) {
                return Err(RtError::Input {
                    file: spec.source.clone(),
                    line: None,
                    field: format!("task '{}' core/cpus", task.name),
                    expected: format!(
                        "a CPU this process may use ({})",
                        tinct_sys::format_cpu_list(&allowed)
                    ),
                    found: format!("CPU {cpu}"),
                });
            }
        }
    }
    Ok(())
}

/// Runs `spec` and returns every job record. Errors only before the
/// common release (privileges, bad CPUs, memory); later failures end the
/// run with a [`StopReason`] and keep the records.
pub fn run(spec: &RunSpec, options: RunOptions) -> Result<RunResult> {
    check_privileges(spec, &options)?;
    let mut spec = spec.clone();
    if let (Some(cpu), None) = (spec.calibration_cpu, spec.compute_ns_per_iteration) {
        spec.compute_ns_per_iteration = Some(compute_rate_on(cpu, &spec.source)?);
    }
    let log = SharedLog::new(&log_capacities(&spec))?;
    if options.supervise {
        crate::runtime_supervised::run(&spec, &options, &log)
    } else {
        run_here(&spec, &options, &log, &|_| {})
    }
}

/// Jobs each task's log must hold. A job without a timer or known step
/// time is assumed to take at least 50 µs (a run that releases more stops
/// cleanly with [`StopReason::LogFull`]).
pub fn log_capacities(spec: &RunSpec) -> Vec<usize> {
    spec.tasks
        .iter()
        .map(|task| task.max_jobs(spec.duration_ns, 50_000).min(2_000_000) as usize)
        .collect()
}

/// Runs `spec` in this process, recording into `log`. `on_setup` sees
/// every task's placement once the working sets exist, before any release.
pub(crate) fn run_here(
    spec: &RunSpec,
    options: &RunOptions,
    log: &SharedLog,
    on_setup: &dyn Fn(&[Placement]),
) -> Result<RunResult> {
    let memory_locked = spec.lock_memory && tinct_sys::sched::mlockall(true).is_ok();
    if spec.lock_memory && !memory_locked && options.realtime && spec.needs_rt() {
        return Err(RtError::Privilege {
            what: "mlockall failed".into(),
            fix: "run as root or give the binary CAP_IPC_LOCK, or raise RLIMIT_MEMLOCK (ulimit -l unlimited); or pass --no-rt".into(),
        });
    }
    let unlock = || {
        if memory_locked {
            let _ = tinct_sys::sched::munlockall();
        }
    };
    let colored = match ColoredMemory::for_spec(spec, options.uncolored) {
        Ok(colored) => colored,
        Err(e) => {
            unlock();
            return Err(e);
        }
    };
    let mut backings = Vec::with_capacity(spec.tasks.len());
    for task in &spec.tasks {
        match Backing::allocate(task, colored.as_ref()) {
            Ok(backing) => backings.push(backing),
            Err(e) => {
                drop(backings);
                unlock();
                return Err(e);
            }
        }
    }
    let placements: Vec<Placement> = backings
        .iter()
        .map(|b| b.verify(colored.as_ref()))
        .collect();
    on_setup(&placements);
    let shared = Arc::new(Shared::new(
        spec.tasks.iter().map(|t| t.name.clone()).collect(),
    ));
    let signal_ids = if options.handle_signals {
        register_signals(&shared)
    } else {
        Vec::new()
    };
    let working_sets: Vec<WorkingSet<'_>> = backings.iter_mut().map(Backing::working_set).collect();
    let mut result = std::thread::scope(|scope| {
        run_threads(
            scope,
            spec,
            options,
            &shared,
            memory_locked,
            working_sets,
            log,
        )
    });
    for (task, backing) in result.tasks.iter_mut().zip(&backings) {
        task.placement = backing.verify(colored.as_ref());
    }
    for id in signal_ids {
        signal_hook::low_level::unregister(id);
    }
    drop(backings);
    drop(colored);
    unlock();
    Ok(result)
}

/// Nanoseconds per compute iteration measured on `cpu` (rt-app
/// `calibration: "CPUn"`: one rate for every task).
fn compute_rate_on(cpu: u32, source: &str) -> Result<f64> {
    let measured = std::thread::spawn(move || {
        tinct_sys::sched::set_affinity(&[cpu]).map_err(|e| e.to_string())?;
        let mut state = KernelState::new(Kernel::Compute, crate::memory::WorkingSet::empty(), 1);
        Ok::<f64, String>(calibrate::measure(&mut state).compute_ns)
    })
    .join()
    .unwrap_or_else(|_| Err("the calibration thread panicked".into()));
    measured.map_err(|found| RtError::Input {
        file: source.to_string(),
        line: None,
        field: "global.calibration".into(),
        expected: format!("a CPU to calibrate on (CPU{cpu})"),
        found,
    })
}

fn register_signals(shared: &Shared) -> Vec<signal_hook::SigId> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let mut ids = Vec::new();
    for signal in [SIGINT, SIGTERM] {
        // A second signal (the flag already set) terminates at once.
        if let Ok(id) =
            signal_hook::flag::register_conditional_shutdown(signal, 130, shared.signaled.clone())
        {
            ids.push(id);
        }
        for flag in [&shared.signaled, &shared.stop] {
            if let Ok(id) = signal_hook::flag::register(signal, flag.clone()) {
                ids.push(id);
            }
        }
    }
    ids
}

struct Prepared<'a> {
    state: KernelState<'a>,
    /// Per phase, per step: the iterations of kernel steps.
    work: Vec<Vec<JobWork>>,
    notes: Vec<WorkNote>,
    rates: Option<Rates>,
    log: TaskLog<'a>,
    counters: JobCounters,
    /// The job that raises SIGSEGV (`TINCT_TEST_CRASH` test hook).
    crash_at: Option<u64>,
}

/// Environment variable of the crash test hook (see the module docs).
pub const TEST_CRASH_VAR: &str = "TINCT_TEST_CRASH";

/// The job of `task` that the `TINCT_TEST_CRASH=TASK:JOB` hook crashes.
fn test_crash_job(task: &str) -> Option<u64> {
    let value = std::env::var(TEST_CRASH_VAR).ok()?;
    let (name, job) = value.rsplit_once(':')?;
    (name == task).then(|| job.parse().ok()).flatten()
}

fn run_threads<'scope, 'env>(
    scope: &'scope std::thread::Scope<'scope, 'env>,
    spec: &'env RunSpec,
    options: &'env RunOptions,
    shared: &'env Arc<Shared>,
    memory_locked: bool,
    working_sets: Vec<WorkingSet<'env>>,
    log: &'env SharedLog,
) -> RunResult {
    let n = spec.tasks.len();
    let barrier = Arc::new(Barrier::new(n + 1));
    let start = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let handles: Vec<_> = spec
        .tasks
        .iter()
        .zip(working_sets)
        .enumerate()
        .map(|(index, (task, words))| {
            let (barrier, start) = (barrier.clone(), start.clone());
            let (duration, realtime) = (spec.duration_ns, options.realtime);
            let compute_ns = spec.compute_ns_per_iteration;
            let setup = TaskSetup {
                index,
                task,
                duration_ns: duration,
                realtime,
                compute_ns,
                words,
                log: log.writer(index),
            };
            std::thread::Builder::new()
                .name(format!("tinct-{}", task.name))
                .spawn_scoped(scope, move || task_thread(setup, &barrier, &start, shared))
        })
        .collect();

    let mut spawn_errors = vec![None; n];
    for (i, h) in handles.iter().enumerate() {
        if let Err(e) = h {
            spawn_errors[i] = Some(e.to_string());
            shared.stop_for(StopReason::TaskFailed {
                task: spec.tasks[i].name.clone(),
                message: e.to_string(),
            });
            shared.finished.fetch_add(1, Ordering::SeqCst);
        }
    }
    // Threads that could not be spawned are stood in for at the barrier.
    for _ in spawn_errors.iter().flatten() {
        let b = barrier.clone();
        std::thread::spawn(move || {
            b.wait();
            b.wait();
        });
    }

    barrier.wait(); // every task is set up
    let t0 = now_ns() + options.release_margin_ns;
    start.store(t0, Ordering::SeqCst);
    let end = t0 + spec.duration_ns;
    log.set_window(t0, end);
    let max_deadline = spec
        .tasks
        .iter()
        .flat_map(|t| t.phases.iter().filter_map(|p| t.deadline_of(p)))
        .max()
        .unwrap_or(0);
    let grace = ((max_deadline as f64 * options.watchdog_factor) as u64).max(1_000_000_000);
    let min_deadline = spec
        .tasks
        .iter()
        .flat_map(|t| t.phases.iter().filter_map(|p| t.deadline_of(p)))
        .min()
        .unwrap_or(100_000_000);
    let limits = Limits {
        overrun_factor: options.watchdog_factor,
        hard_limit_ns: end + grace,
        start_ns: t0,
        // Idle looks are rare (at least 10 ms apart) so the top-priority
        // watchdog barely disturbs the tasks; a running job is looked at
        // exactly when it would overrun (see `watchdog::next_look`).
        poll_ns: ((min_deadline as f64 * options.watchdog_factor / 2.0) as u64)
            .clamp(10_000_000, 100_000_000),
    };
    let watchdog = {
        let shared = shared.clone();
        let realtime = options.realtime;
        std::thread::Builder::new()
            .name("tinct-watchdog".into())
            .spawn_scoped(scope, move || {
                if realtime && let Err(e) = tinct_sys::sched::set_fifo(WATCHDOG_PRIORITY) {
                    // A watchdog below the tasks cannot guard them.
                    shared.stop_for(StopReason::TaskFailed {
                        task: "watchdog".into(),
                        message: e.to_string(),
                    });
                }
                watchdog::watch(&shared, limits);
            })
    };
    if let Err(e) = &watchdog {
        shared.stop_for(StopReason::TaskFailed {
            task: "watchdog".into(),
            message: e.to_string(),
        });
    }
    barrier.wait(); // t0 is published

    let mut tasks = Vec::with_capacity(n);
    for (i, handle) in handles.into_iter().enumerate() {
        let joined = match handle {
            Ok(h) => h.join().map_err(|panic| panic_message(&panic)),
            Err(_) => Err(spawn_errors[i].clone().unwrap_or_default()),
        };
        tasks.push(match joined {
            Ok(run) => run,
            Err(message) => {
                shared.stop_for(StopReason::TaskFailed {
                    task: spec.tasks[i].name.clone(),
                    message: message.clone(),
                });
                TaskRun {
                    spec: spec.tasks[i].clone(),
                    records: Vec::new(),
                    placement: Placement::None,
                    rates: None,
                    work: Vec::new(),
                    policy: Policy::Other,
                    counters_unavailable: None,
                    error: Some(message),
                }
            }
        });
        if let Some(run) = tasks.last_mut() {
            run.records = log.records(i);
        }
    }
    shared.stop.store(true, Ordering::SeqCst);
    if let Ok(w) = watchdog {
        let _ = w.join();
    }
    RunResult {
        start_ns: t0,
        end_ns: end,
        stop: shared.reason(),
        realtime: options.realtime,
        memory_locked,
        rt_throttling: rt_throttling(),
        watchdog_factor: options.watchdog_factor,
        tasks,
    }
}

/// RT throttling in words (read only: tinct never switches it off).
pub(crate) fn rt_throttling() -> String {
    match tinct_sys::system::RtThrottling::read(&tinct_sys::SysRoot::live()) {
        Ok(t) if t.is_disabled() => {
            "disabled (sched_rt_runtime_us = -1): only tinct's watchdog guards this run".into()
        }
        Ok(t) => format!(
            "{} µs of every {} µs for real-time tasks (left as is)",
            t.runtime_us, t.period_us
        ),
        Err(e) => format!("unknown ({e})"),
    }
}

fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        format!("panicked: {s}")
    } else if let Some(s) = panic.downcast_ref::<String>() {
        format!("panicked: {s}")
    } else {
        "panicked".into()
    }
}

/// What one task thread is given.
struct TaskSetup<'a> {
    index: usize,
    task: &'a TaskSpec,
    duration_ns: u64,
    realtime: bool,
    compute_ns: Option<f64>,
    words: WorkingSet<'a>,
    log: TaskLog<'a>,
}

fn task_thread(
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
                release_jobs(index, task, &mut p, t0, t0 + duration_ns, shared)
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

/// The job loop of one task (see the module and [`crate::spec`] docs).
fn release_jobs(
    index: usize,
    task: &TaskSpec,
    p: &mut Prepared,
    t0: u64,
    end: u64,
    shared: &Shared,
) {
    let monitor = &shared.monitors[index];
    let stop = &*shared.stop;
    let mut release = t0 + task.offset_ns;
    let mut job = 0u64;
    let mut pass = 0u64;
    while task.loops.is_none_or(|l| pass < l) {
        for (phase_index, phase) in task.phases.iter().enumerate() {
            let deadline = task.deadline_of(phase);
            let phase_start = release;
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
                    let backlog = Backlog {
                        phase,
                        phase_index,
                        phase_start,
                        deadline,
                        end,
                    };
                    backlog.record(&mut p.log, job, k, release, true);
                    return;
                }
                let absolute_deadline = deadline.map_or(u64::MAX, |d| release + d);
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
                let exec = thread_cpu_ns() - cpu0;
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
                    preemptions: (switches1.involuntary - switches0.involuntary) as u32,
                    voluntary_switches: (switches1.voluntary - switches0.voluntary) as u32,
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
                    let backlog = Backlog {
                        phase,
                        phase_index,
                        phase_start,
                        deadline,
                        end,
                    };
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
            let deadline = self.deadline.map_or(u64::MAX, |d| release + d);
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
            release = self.phase_start + k * timer.period_ns;
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
        Some(t) if t.absolute => phase_start + jobs_done * t.period_ns,
        Some(t) => (previous + t.period_ns).max(finish),
        None => finish,
    }
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
                let until = now_ns() + duration_ns;
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
                if clock::sleep_until_or_stop(now_ns() + duration_ns, stop) {
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
