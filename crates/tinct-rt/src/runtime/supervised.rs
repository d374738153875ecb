//! Supervised runs: the tasks run in a forked child, this process waits.
//!
//! A fatal signal in one real-time thread (SIGSEGV, SIGBUS, an abort) ends
//! its whole process, so a run in one process loses everything it
//! recorded. Here the run happens in a forked child ([`crate::runtime`]'s
//! in-process run, unchanged) whose job logs live in a [`SharedLog`]
//! mapped before the fork; the parent (the supervisor) only waits:
//!
//! - the child ends normally: it leaves a small report (stop reason,
//!   placements, calibration, errors; the records are in the shared log)
//!   and the parent builds the [`RunResult`] from both;
//! - the child dies (a signal, or an exit without a report): the parent
//!   builds the result from the shared log alone, names the signal and the
//!   task whose thread received it (noted by the child's fatal-signal
//!   handler, [`tinct_sys::supervise::record_fatal_signals`]), counts each
//!   task's job in flight, and the releases that came on an absolute
//!   timer's grid until the run's last sign of life (the heartbeat in the
//!   shared log, never the later moment the supervisor noticed the death),
//!   as aborted — so released = completed + missed + aborted still holds,
//!   and no job is invented — and stops with
//!   [`StopReason::TaskFailed`]. The working sets' placements are known
//!   too: the child leaves them before the common release.
//!
//! No thread survives: threads die with their process, and the child dies
//! with its parent (`PR_SET_PDEATHSIG`). Nor does a file: the child's
//! setup and report go to unnamed temporary files ([`Mailbox`]) opened
//! before the fork, which the kernel removes with their last descriptor,
//! so a SIGKILL of the supervisor leaves nothing in the temporary
//! directory. The child runs in its own process
//! group, so a terminal's Ctrl-C reaches only the supervisor, which
//! forwards SIGTERM (a clean stop) with SIGCONT (a stopped child must run
//! to stop) and, on a second signal or after [`STOP_GRACE_NS`] without an
//! end, SIGKILL: one SIGINT ends any run within the grace period.

use super::Logs;
use super::result::{Measured, RunOptions, RunResult, TaskRun, rt_throttling};
use super::threads::run_here;
use super::wire::{ChildReport, Report, WireError, WirePlacement};
use crate::Result;
use crate::clock::now_ns;
use crate::error::RtError;
use crate::memory::Placement;
use crate::record::JobRecord;
use crate::shared_log::{FATAL_WORD, SharedLog};
use crate::spec::{RunSpec, Scheduling};
use crate::watchdog::StopReason;
use tinct_sys::signals::{SignalScope, StopFlag};
use tinct_sys::supervise::{ChildExit, ChildProcess, Forked, exit_child, signal_name};

/// How often the supervisor looks at its child.
const POLL: std::time::Duration = std::time::Duration::from_millis(5);
/// Extra time the supervisor allows beyond twice the run's duration
/// before it kills a child that neither ends nor is stopped by its
/// watchdog (setup, calibration and the watchdog's grace included).
const BACKSTOP_NS: u64 = 120_000_000_000;
/// How long a child may take to stop cleanly after the first SIGINT or
/// SIGTERM before it is killed (what it recorded is kept either way).
pub const STOP_GRACE_NS: u64 = 3_000_000_000;

/// Runs `spec` in a forked child and supervises it (see the module docs).
pub(super) fn run(
    spec: &RunSpec,
    options: &RunOptions,
    logs: &Logs<'_>,
    stop: &StopFlag,
) -> Result<RunResult> {
    let mailbox = Mailbox::open()?;
    // Where the child's deadline partitions go, to be removed (and the
    // root's balancing put back) if it dies before it can.
    let cpuset_root = (options.realtime && !spec.deadline_cpus().is_empty())
        .then(tinct_sys::dl_partitions::v1_mount_point)
        .and_then(|root| root.ok());
    let child_options = RunOptions {
        supervise: false,
        // The run's process stops cleanly on the supervisor's SIGTERM (and
        // on a terminal's Ctrl-C, which reaches its process group too).
        handle_signals: true,
        ..*options
    };
    match tinct_sys::supervise::fork()? {
        Forked::Child => child(spec, &child_options, logs, &mailbox),
        Forked::Parent(child) => {
            let result = supervise(spec, options, logs.jobs, stop, &child, &mailbox);
            // Only once the child has ended (an error may come before).
            let ended = !std::path::Path::new(&format!("/proc/{}", child.pid())).exists();
            if let (Some(root), true) = (&cpuset_root, ended) {
                let _ = tinct_sys::dl_partitions::remove_leftovers(root, child.pid() as u32);
            }
            result
        }
    }
}

/// The child's side: run, leave the report, exit.
fn child(spec: &RunSpec, options: &RunOptions, logs: &Logs<'_>, mailbox: &Mailbox) -> ! {
    // Kept until `exit_child`; if it fails, crashes are still seen (the
    // exit status), only not attributed to a thread.
    let _notes =
        tinct_sys::supervise::record_fatal_signals(logs.jobs.shared_words(), FATAL_WORD).ok();
    let publish_setup = |placements: &[Placement]| {
        let wire: Vec<WirePlacement> = placements.iter().map(WirePlacement::of).collect();
        if let Ok(bytes) = serde_json::to_vec(&wire) {
            let _ = Mailbox::put(&mailbox.setup, &bytes);
        }
    };
    let report = match run_here(spec, options, logs, &StopFlag::new(), &publish_setup) {
        Ok(result) => Report::Ran(ChildReport::of(&result)),
        Err(error) => Report::Refused(WireError::of(error)),
    };
    let written = serde_json::to_vec(&report)
        .ok()
        .and_then(|bytes| Mailbox::put(&mailbox.report, &bytes).ok());
    exit_child(if written.is_some() { 0 } else { 3 })
}

/// The parent's side: wait, forward stop signals, read what was recorded.
fn supervise(
    spec: &RunSpec,
    options: &RunOptions,
    log: &SharedLog,
    stop: &StopFlag,
    child: &ChildProcess,
    mailbox: &Mailbox,
) -> Result<RunResult> {
    // Each SIGINT/SIGTERM is a request taken here: the first is forwarded
    // to the child as SIGTERM, the next kills it (this process keeps going
    // and reads what the child recorded). The caller's `stop` is a first
    // request.
    let signaled = StopFlag::new();
    let signals = options
        .handle_signals
        .then(|| SignalScope::raise_each_time(&signaled));
    let backstop = now_ns()
        .saturating_add(spec.duration_ns.saturating_mul(2))
        .saturating_add(BACKSTOP_NS);
    let mut forwarded = 0u32;
    let mut kill_at = u64::MAX;
    let mut killed_by_backstop = false;
    let exit = loop {
        if let Some(exit) = child.try_wait()? {
            break exit;
        }
        if signaled.take() || (forwarded == 0 && stop.is_raised()) {
            forwarded += 1;
            if forwarded == 1 {
                let _ = child.signal(libc::SIGTERM);
                let _ = child.signal(libc::SIGCONT);
                kill_at = now_ns().saturating_add(STOP_GRACE_NS);
            } else {
                let _ = child.signal(libc::SIGKILL);
            }
        }
        if now_ns() > kill_at {
            kill_at = u64::MAX;
            let _ = child.signal(libc::SIGKILL);
        }
        if !killed_by_backstop && now_ns() > backstop {
            killed_by_backstop = true;
            let _ = child.signal(libc::SIGKILL);
        }
        std::thread::sleep(POLL);
    };
    if signals.is_some() {
        // Armed before the run's handlers go, so no signal falls between:
        // while the result and the files are made, a first Ctrl-C lets
        // them be written and a second ends the process at once.
        tinct_sys::signals::stop_on_signals();
    }
    drop(signals);
    // Task groups a dead child could not remove (a clean child removed its own).
    let _ = tinct_sys::cgroup::remove_leftovers(child.pid() as u32);
    let report = Mailbox::take(&mailbox.report)
        .and_then(|bytes| serde_json::from_slice::<Report>(&bytes).ok());
    let setup = Mailbox::take(&mailbox.setup)
        .and_then(|bytes| serde_json::from_slice::<Vec<WirePlacement>>(&bytes).ok())
        .map(|wire| {
            wire.into_iter()
                .map(WirePlacement::into_placement)
                .collect()
        })
        .unwrap_or_default();
    match (exit, report) {
        (ChildExit::Exited(0), Some(Report::Ran(report))) => {
            let mut result = report.into_result(spec, options, log);
            // This process ran beside the tasks too (its loop above, on
            // any CPU): its pages join the child's residue.
            result.footprint = result.footprint.and_then(|mut footprint| {
                let mine = tinct_sys::footprint::of_self(&[]).map_err(|e| {
                    format!("the supervising process's own pages were not read: {e}")
                })?;
                footprint.merge(mine);
                Ok(footprint)
            });
            Ok(result)
        }
        (ChildExit::Exited(_), Some(Report::Refused(error))) => Err(error.into_error()),
        (exit, _) => {
            let cause = if killed_by_backstop {
                Cause::Backstop
            } else if forwarded > 0 {
                Cause::UserSignal
            } else {
                Cause::Died(exit)
            };
            Ok(recover(spec, options, log, cause, setup))
        }
    }
}

/// Why a child ended without a report.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Cause {
    /// It died on its own: a crash, or an exit without a report.
    Died(ChildExit),
    /// SIGINT/SIGTERM was forwarded and it did not end cleanly.
    UserSignal,
    /// It outlived the supervisor's backstop and was killed.
    Backstop,
}

/// Builds the result of a run whose process died, from the shared log.
fn recover(
    spec: &RunSpec,
    options: &RunOptions,
    log: &SharedLog,
    cause: Cause,
    placements: Vec<Placement>,
) -> RunResult {
    let (start_ns, end_ns) = log.window().unwrap_or((0, 0));
    let fatal = log.fatal_signal();
    let crashed = fatal.and_then(|f| (0..log.tasks()).find(|&i| log.tid(i) == f.tid));
    let thread = match (crashed, fatal) {
        (Some(i), _) => format!("task '{}'", spec.tasks[i].name),
        (None, Some(f)) => format!("a runtime thread (tid {})", f.tid),
        (None, None) => "no thread noted".into(),
    };
    let message = match cause {
        Cause::Died(ChildExit::Signaled(signal)) => format!(
            "the run's process died of {} ({thread}); the supervisor wrote the jobs recorded \
             until then, counting the jobs in flight as aborted",
            signal_name(signal)
        ),
        Cause::Died(ChildExit::Exited(code)) => format!(
            "the run's process exited with status {code} without a report; the supervisor wrote \
             the jobs recorded until then"
        ),
        Cause::UserSignal => "stopped by a signal; the run's process did not stop cleanly and was \
                              killed"
            .into(),
        Cause::Backstop => {
            "the run's process outlived the supervisor's time limit and was killed".into()
        }
    };
    let blamed = crashed.map_or_else(|| "runtime".to_string(), |i| spec.tasks[i].name.clone());
    let stop = match cause {
        Cause::UserSignal => StopReason::Signal,
        _ => StopReason::TaskFailed {
            task: blamed,
            message: message.clone(),
        },
    };
    let tasks = spec
        .tasks
        .iter()
        .enumerate()
        .map(|(i, task)| {
            let mut records = log.records(i);
            if start_ns != 0 {
                // The last sign of life, not the moment the death was noticed.
                let alive_until = log.heartbeat().unwrap_or(start_ns).min(end_ns);
                abort_unfinished(spec, log, i, &mut records, alive_until);
            }
            TaskRun {
                spec: task.clone(),
                tid: log.tid(i),
                records,
                placement: placements.get(i).cloned().unwrap_or(Placement::None),
                rates: None,
                work: Vec::new(),
                scheduling: if options.realtime {
                    task.scheduling
                } else {
                    Scheduling::other()
                },
                counters_unavailable: None,
                error: (crashed == Some(i)).then(|| message.clone()),
                program: None,
            }
        })
        .collect();
    let measured = Measured {
        start_ns,
        end_ns,
        stop,
        memory_locked: spec.lock_memory,
        rt_throttling: rt_throttling(),
        notes: Vec::new(),
        tasks,
    };
    RunResult {
        footprint: Err("not read: the run's process ended before it read its pages".into()),
        ..RunResult::assemble(spec, options, measured)
    }
}

/// Appends, as aborted, the job task `index` was running when its process
/// died and, on an absolute timer, the releases that came after it until
/// `until` (they were released, never started).
fn abort_unfinished(
    spec: &RunSpec,
    log: &SharedLog,
    index: usize,
    records: &mut Vec<JobRecord>,
    until: u64,
) {
    let Some(flight) = log.in_flight(index) else {
        return;
    };
    if records.iter().any(|r| r.job == flight.job) {
        return; // recorded just before the end, still marked in flight
    }
    if flight.release_ns > until {
        // Handed to its program ahead of an instant that came after the
        // last sign of life: never released.
        return;
    }
    let mut aborted = JobRecord::never_started(
        flight.job,
        flight.phase,
        flight.release_ns,
        flight.deadline_ns,
    );
    // Started, never finished: no finish time (a job handed to its
    // program ahead was in flight with no start: the program's page is
    // not seen from here, so it counts as never started).
    aborted.start_ns = flight.start_ns;
    records.push(aborted);
    let grid = spec.tasks[index]
        .phases
        .get(flight.phase as usize)
        .and_then(|p| p.release_timer())
        .filter(|(t, _)| {
            spec.resources
                .timers
                .get(*t)
                .is_some_and(|timer| timer.absolute && timer.users <= 1)
        })
        .map(|(_, period)| period);
    if let Some(period_ns) = grid {
        let relative_deadline = flight.deadline_ns.saturating_sub(flight.release_ns);
        let mut job = flight.job + 1;
        let mut release = flight.release_ns.saturating_add(period_ns);
        while release <= until {
            records.push(JobRecord::never_started(
                job,
                flight.phase,
                release,
                release.saturating_add(relative_deadline),
            ));
            job += 1;
            // Saturating: past u64::MAX it is past `until` and ends the loop.
            release = release.saturating_add(period_ns);
        }
    }
}

/// What the child leaves for the supervisor: its placements before the
/// release (`setup`) and its report at the end (`report`), each in an
/// unnamed temporary file (`O_TMPFILE`, or created and unlinked at once)
/// opened before the fork and shared by both processes. No name exists, so
/// nothing is left behind whichever process dies how.
struct Mailbox {
    /// The working sets' placements, written before the common release.
    setup: std::fs::File,
    /// The child's [`Report`], written as it exits.
    report: std::fs::File,
}

impl Mailbox {
    /// Opens both files in the temporary directory.
    fn open() -> Result<Mailbox> {
        let unnamed = || {
            tempfile::tempfile().map_err(|source| RtError::Write {
                path: format!(
                    "an unnamed temporary file in {} (the run's process reports through it)",
                    std::env::temp_dir().display()
                ),
                source,
            })
        };
        Ok(Mailbox {
            setup: unnamed()?,
            report: unnamed()?,
        })
    }

    /// Writes `bytes` from the file's start (positioned writes: the two
    /// processes share the file's offset, so none is used).
    fn put(file: &std::fs::File, bytes: &[u8]) -> std::io::Result<()> {
        file.set_len(0)?;
        std::os::unix::fs::FileExt::write_all_at(file, bytes, 0)
    }

    /// The file's whole content, `None` when empty or unreadable.
    fn take(file: &std::fs::File) -> Option<Vec<u8>> {
        let length = usize::try_from(file.metadata().ok()?.len()).ok()?;
        let mut bytes = vec![0; length];
        std::os::unix::fs::FileExt::read_exact_at(file, &mut bytes, 0).ok()?;
        (!bytes.is_empty()).then_some(bytes)
    }
}
