//! An in-process run: one thread per task, the common release, the
//! watchdog thread and the stop signals (see [`super`] for the order).

use super::result::{RunOptions, RunResult, TaskRun, rt_throttling};
use super::task::{TaskSetup, panic_message, task_thread};
use crate::clock::now_ns;
use crate::memory::{Backing, ColoredMemory, Placement};
use crate::shared_log::SharedLog;
use crate::spec::{Policy, RunSpec, WATCHDOG_PRIORITY};
use crate::watchdog::{self, Limits, Shared, StopReason};
use crate::working_set::WorkingSet;
use crate::{Result, RtError};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Barrier};

/// Runs `spec` in this process, recording into `log`. `on_setup` sees
/// every task's placement once the working sets exist, before any release.
pub(super) fn run_here(
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
    let t0 = now_ns().saturating_add(options.release_margin_ns);
    start.store(t0, Ordering::SeqCst);
    let end = t0.saturating_add(spec.duration_ns); // within limits: exact
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
        hard_limit_ns: end.saturating_add(grace),
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
                watchdog::watch(&shared, limits, &|now| log.beat(now));
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
