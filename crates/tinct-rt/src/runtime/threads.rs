//! An in-process run: one thread per task, the common release, the
//! watchdog thread and the stop signals (see [`super`] for the order).

use super::Logs;
use super::objects::Objects;
use super::result::{Measured, RunOptions, RunResult, TaskRun, rt_throttling};
use super::task::{TaskSetup, panic_message, task_thread};
use crate::clock::now_ns;
use crate::memory::{Backing, ColoredMemory, Placement};
use crate::sentinel::{self, SentinelOptions, StallLog};
use crate::spec::{RunSpec, Scheduling, WATCHDOG_PRIORITY, WatchdogMode};
use crate::watchdog::{self, Limits, Shared, StopReason};
use crate::working_set::WorkingSet;
use crate::{Result, RtError};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Barrier};
use tinct_sys::signals::{SignalScope, StopFlag};

/// Runs `spec` in this process, recording into `log`, until its end or
/// `stop`. `on_setup` sees every task's placement once the working sets
/// exist, before any release.
pub(super) fn run_here(
    spec: &RunSpec,
    options: &RunOptions,
    logs: &Logs<'_>,
    stop: &StopFlag,
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
    let colored = match ColoredMemory::for_spec(
        spec,
        options.uncolored,
        options.uncolored || !options.realtime,
    ) {
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
    let objects = match Objects::new(spec) {
        Ok(objects) => objects,
        Err(e) => {
            drop(backings);
            unlock();
            return Err(e);
        }
    };
    let (mut run_groups, groups, mut notes) = match task_groups(spec) {
        Ok(groups) => groups,
        Err(e) => {
            drop(backings);
            unlock();
            return Err(e);
        }
    };
    let (mut dl_partitions, partition_files, dl_notes) =
        match super::deadline::partitions(spec, options.realtime) {
            Ok(partitions) => partitions,
            Err(e) => {
                drop(run_groups);
                drop(backings);
                unlock();
                return Err(e);
            }
        };
    notes.extend(dl_notes);
    let shared = Arc::new(Shared::stopped_by(
        spec.tasks.iter().map(|t| t.name.clone()).collect(),
        stop.shared(),
    ));
    // The first SIGINT/SIGTERM stops the run, a second ends the process.
    // "First" is counted on a flag of the run's own: `shared.signaled` may
    // be the caller's Ctrl-C flag, raised by the caller's handler before
    // this one runs, and the first Ctrl-C would then end the process.
    let signals = options.handle_signals.then(|| {
        SignalScope::stop_then_exit(
            &StopFlag::new(),
            &[
                &StopFlag::sharing(shared.signaled.clone()),
                &StopFlag::sharing(shared.stop.clone()),
            ],
        )
    });
    // What the footprint leaves out: the tasks' own placed memory and
    // the pool's pages (those no task was given are touched by none).
    let placed: Vec<std::ops::Range<usize>> = backings
        .iter()
        .flat_map(Backing::address_ranges)
        .chain(colored.iter().flat_map(|c| c.pool().address_ranges()))
        .collect();
    let lent: Vec<(WorkingSet<'_>, Option<&mut [u8]>)> =
        backings.iter_mut().map(Backing::lend).collect();
    let mut result = std::thread::scope(|scope| {
        run_threads(
            scope,
            spec,
            options,
            &shared,
            memory_locked,
            lent,
            &placed,
            logs,
            &objects,
            &groups,
            &partition_files,
        )
    });
    drop(groups);
    drop(partition_files);
    if let Some(partitions) = dl_partitions.as_mut()
        && let Err(e) = partitions.remove()
    {
        notes.push(format!(
            "removing the run's deadline partitions failed: {e}"
        ));
    }
    if let Some(run_groups) = run_groups.as_mut()
        && let Err(e) = run_groups.remove()
    {
        notes.push(format!("removing the run's task groups failed: {e}"));
    }
    if !memory_locked && let Some(reason) = colored.as_ref().and_then(|c| c.unlocked_reason()) {
        notes.push(format!(
            "the coloured pool is not locked ({reason}): the kernel may swap or migrate its \
             pages out of their colours"
        ));
    }
    result.notes.extend(notes);
    for (task, backing) in result.tasks.iter_mut().zip(&backings) {
        task.placement = backing.verify(colored.as_ref());
    }
    if signals.is_some() {
        // Armed before the run's handlers go (see `supervised`).
        tinct_sys::signals::stop_on_signals();
    }
    drop(signals);
    drop(backings);
    drop(colored);
    unlock();
    Ok(result)
}

/// The run's cgroup v2 task groups (rt-app `taskgroup`), created before
/// the release, and the open `cgroup.threads` file of each; plus notes.
#[allow(clippy::type_complexity)]
fn task_groups(
    spec: &RunSpec,
) -> Result<(
    Option<tinct_sys::cgroup::RunGroups>,
    Vec<(String, std::fs::File)>,
    Vec<String>,
)> {
    let names = spec.taskgroups();
    if names.is_empty() {
        return Ok((None, Vec::new(), Vec::new()));
    }
    let refused = |e: tinct_sys::Error| RtError::Privilege {
        what: format!(
            "the task groups {} need a writable cgroup v2 hierarchy: {e}",
            names.join(", ")
        ),
        fix: "run as root on a system with cgroup v2 mounted (mount -t cgroup2 none \
              /sys/fs/cgroup), or remove `taskgroup` from the file"
            .into(),
    };
    let groups = tinct_sys::cgroup::RunGroups::create(&names).map_err(refused)?;
    let mut files = Vec::with_capacity(names.len());
    for name in &names {
        let path = groups.dir_of(name).join("cgroup.threads");
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .map_err(|e| {
                refused(tinct_sys::Error::Io {
                    path: path.clone(),
                    source: e,
                })
            })?;
        files.push((name.clone(), file));
    }
    let mut notes = vec![format!(
        "task groups {} created as cgroup v2 groups under {} (removed after the run)",
        names.join(", "),
        groups.root().display()
    )];
    if !groups.cpu_controller() {
        notes.push(
            "the cgroup v2 CPU controller is not available here (it is bound to a cgroup v1 \
             hierarchy or disabled): the task groups hold their threads but do not change \
             CPU shares"
                .into(),
        );
    }
    Ok((Some(groups), files, notes))
}

#[allow(clippy::too_many_arguments)]
fn run_threads<'scope, 'env>(
    scope: &'scope std::thread::Scope<'scope, 'env>,
    spec: &'env RunSpec,
    options: &'env RunOptions,
    shared: &'env Arc<Shared>,
    memory_locked: bool,
    lent: Vec<(WorkingSet<'env>, Option<&'env mut [u8]>)>,
    placed: &[std::ops::Range<usize>],
    logs: &'env Logs<'env>,
    objects: &'env Objects,
    groups: &'env [(String, std::fs::File)],
    partitions: &'env [(u32, std::fs::File)],
) -> RunResult {
    let log = logs.jobs;
    let n = spec.tasks.len();
    let barrier = Arc::new(Barrier::new(n + 1));
    // Passed twice by every task thread and this one at the end, around
    // the reading of the run's footprint.
    let ended = Arc::new(Barrier::new(n + 1));
    let start = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let all_cpus = tinct_sys::sched::affinity().unwrap_or_default();
    let handles: Vec<_> = spec
        .tasks
        .iter()
        .zip(lent)
        .enumerate()
        .map(|(index, (task, (words, stack)))| {
            let (barrier, ended, start) = (barrier.clone(), ended.clone(), start.clone());
            let (duration, realtime) = (spec.duration_ns, options.realtime);
            let compute_ns = spec.compute_ns_per_iteration;
            let setup = TaskSetup {
                index,
                task,
                duration_ns: duration,
                realtime,
                watchdog: options.watchdog,
                compute_ns,
                compute_rates: &objects.compute_rates,
                words,
                stack,
                log: log.writer(index),
                objects,
                groups,
                partitions,
                own_timers: own_timers(spec, index),
                mutexes: spec.resources.mutexes.len(),
                all_cpus: all_cpus.clone(),
                seed: spec.seed,
                fork_slot: fork_slot(spec, index),
            };
            std::thread::Builder::new()
                .name(format!("tinct-{}", task.name))
                .spawn_scoped(scope, move || {
                    task_thread(setup, &barrier, &ended, &start, shared)
                })
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
        let (b, e) = (barrier.clone(), ended.clone());
        std::thread::spawn(move || {
            b.wait();
            b.wait();
            e.wait();
            e.wait();
        });
    }

    barrier.wait(); // every task is set up
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
    let (duration, factor, mode) = (spec.duration_ns, options.watchdog_factor, options.watchdog);
    let limits = move |t0: u64| {
        let end = t0.saturating_add(duration); // within limits: exact
        Limits {
            overrun_factor: factor,
            hard_limit_ns: if mode == WatchdogMode::Off {
                u64::MAX
            } else {
                end.saturating_add(grace)
            },
            end_ns: end,
            start_ns: t0,
            // Idle looks are rare (at least 10 ms apart) so the top-priority
            // watchdog barely disturbs the tasks; a running job is looked at
            // exactly when it would overrun (see `watchdog::next_look`).
            poll_ns: ((min_deadline as f64 * factor / 2.0) as u64).clamp(10_000_000, 100_000_000),
        }
    };
    // The guards (watchdog, sentinels) are spawned before the common
    // release is chosen: spawning allocates, and nothing may allocate once
    // the tasks run (tests/no_allocation.rs), however late this thread is
    // scheduled. Each waits for `start` to be published.
    let watchdog = {
        let shared = shared.clone();
        let start = start.clone();
        let realtime = options.realtime;
        std::thread::Builder::new()
            .name("tinct-watchdog".into())
            .spawn_scoped(scope, move || {
                if realtime
                    && let Err(e) = tinct_sys::sched::set_scheduling(&Scheduling::of(
                        tinct_sys::sched::Policy::Fifo(WATCHDOG_PRIORITY),
                    ))
                {
                    // A watchdog below the tasks cannot guard them.
                    shared.stop_for(StopReason::TaskFailed {
                        task: "watchdog".into(),
                        message: e.to_string(),
                    });
                }
                let t0 = published_start(&start);
                watchdog::watch(&shared, limits(t0), &|now| log.beat(now));
            })
    };
    if let Err(e) = &watchdog {
        shared.stop_for(StopReason::TaskFailed {
            task: "watchdog".into(),
            message: e.to_string(),
        });
    }
    if let (Some(stalls), Some(sentinel)) = (logs.stalls, options.sentinel) {
        spawn_sentinels(
            scope,
            stalls,
            sentinel,
            options.realtime,
            &start,
            shared,
            spec,
        );
    }
    let t0 = now_ns().saturating_add(options.release_margin_ns);
    let end = t0.saturating_add(spec.duration_ns); // within limits: exact
    log.set_window(t0, end);
    start.store(t0, Ordering::SeqCst); // the guards go
    barrier.wait(); // t0 is published to the tasks

    ended.wait(); // every task's jobs have ended
    // Unlocked, pages the jobs touched may have been reclaimed (or moved)
    // by now: what is resident is then no bound of what was touched.
    let footprint = if memory_locked {
        tinct_sys::footprint::of_self(placed).map_err(|e| e.to_string())
    } else {
        Err(
            "the run's memory was not locked, so the pages resident at its end need not be \
             all it touched"
                .into(),
        )
    };
    ended.wait();
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
                    tid: 0,
                    records: Vec::new(),
                    placement: Placement::None,
                    rates: None,
                    work: Vec::new(),
                    scheduling: Scheduling::other(),
                    counters_unavailable: None,
                    error: Some(message),
                    program: None,
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
    let measured = Measured {
        start_ns: t0,
        end_ns: end,
        stop: shared.reason(),
        memory_locked,
        rt_throttling: rt_throttling(),
        notes: Vec::new(),
        tasks,
    };
    RunResult {
        footprint,
        ..RunResult::assemble(spec, options, measured)
    }
}

/// The common release `t0` once the main thread publishes it in `start`
/// (it does right after spawning the guards that wait here), polled every
/// 20 µs: sleeping does not allocate.
fn published_start(start: &std::sync::atomic::AtomicU64) -> u64 {
    loop {
        match start.load(Ordering::SeqCst) {
            0 => std::thread::sleep(std::time::Duration::from_micros(20)),
            t0 => return t0,
        }
    }
}

/// One sentinel per watched CPU ([`crate::sentinel`]), on a grid half a
/// period after the common release `t0` (read from `start` once
/// published; so its wake-ups do not coincide with the releases of tasks
/// whose periods are multiples of its own), until every task thread has
/// finished. A sentinel that cannot be started leaves its CPU unwatched
/// (the report shows no wake-up there); the run goes on.
fn spawn_sentinels<'scope, 'env>(
    scope: &'scope std::thread::Scope<'scope, 'env>,
    stalls: &'env StallLog,
    options: SentinelOptions,
    realtime: bool,
    start: &Arc<std::sync::atomic::AtomicU64>,
    shared: &'env Arc<Shared>,
    spec: &RunSpec,
) {
    for (index, &cpu) in stalls.cpus().iter().enumerate() {
        let start = start.clone();
        // A SCHED_DEADLINE task may run above this sentinel.
        let below_reservations = realtime && spec.tasks.iter().any(|t| t.deadline_on(cpu));
        let _ = std::thread::Builder::new()
            .name(format!("tinct-sentinel-{cpu}"))
            .spawn_scoped(scope, move || {
                let writer = stalls.writer(index);
                writer.started(sentinel::prepare_thread(cpu, realtime));
                // No heap allocation, even on failure: this may run after
                // the tasks started.
                let delay = tinct_sys::usage::RunDelay::of_current_thread();
                if below_reservations && delay.is_none() {
                    // Its waits behind them could not be told from stalls:
                    // unwatched (no wake-up in the report, so no job there
                    // is blamed on a stall).
                    return;
                }
                let first = published_start(&start).saturating_add(options.period_ns / 2);
                let tasks = shared.monitors.len();
                // A failed read keeps the last one: a reset to 0 would
                // take nothing off one wake-up and everything off the next.
                let mut last = 0;
                let mut waited = || {
                    if let Some(ns) = delay.as_ref().and_then(|d| d.read_ns()) {
                        last = ns;
                    }
                    last
                };
                sentinel::watch(
                    &writer,
                    options,
                    first,
                    &|| shared.finished.load(Ordering::SeqCst) == tasks,
                    Some(&mut waited),
                );
            });
    }
}

/// Per timer of the run: true if task `index` is its only user (then its
/// releases form the thread's own grid).
fn own_timers(spec: &RunSpec, index: usize) -> Vec<bool> {
    let task = &spec.tasks[index];
    spec.resources
        .timers
        .iter()
        .enumerate()
        .map(|(t, timer)| {
            timer.users <= 1
                && task
                    .phases
                    .iter()
                    .flat_map(|p| &p.steps)
                    .any(|s| matches!(s, crate::spec::Step::Timer { timer, .. } if *timer == t))
        })
        .collect()
}

/// The fork gate and slot of task `index`, if a `fork` starts it.
fn fork_slot(spec: &RunSpec, index: usize) -> Option<(usize, usize)> {
    let gate = spec.tasks[index].forked_by?;
    let slot = spec
        .resources
        .forks
        .get(gate)?
        .slots
        .iter()
        .position(|&t| t == index)?;
    Some((gate, slot))
}
