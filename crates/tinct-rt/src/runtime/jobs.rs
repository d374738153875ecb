//! The job loop of one thread: enters each phase (its CPUs, scheduling and
//! task group), releases jobs on the phase's timer, runs each job's steps
//! (the event engine: work, waits, synchronisation with other threads),
//! records every job with the policy read back from the kernel, and on a
//! stop records the releases already due as aborted (see [`crate::spec`]
//! for the release rules). Nothing here allocates or does I/O, except the
//! `iorun` step the workload asks for, and failure paths that end the run.

use super::objects::{Blocked, Objects, Until};
use super::result::WorkNote;
use crate::calibrate::Rates;
use crate::clock::{self, now_ns, thread_cpu_ns, thread_switches};
use crate::counters::JobCounters;
use crate::kernels::{JobWork, KernelState, Ran, splitmix64};
use crate::record::{Flow, JobRecord, Outcome};
use crate::shared_log::{InFlight, TaskLog};
use crate::spec::{Phase, Step, TaskSpec, WatchdogMode};
use crate::watchdog::{Shared, StopReason};
use std::sync::atomic::Ordering;
use tinct_sys::program::Reply;

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
    /// The buffer `iorun` writes from (empty without `iorun`).
    pub(super) io_buffer: Vec<u8>,
    /// Mutexes this thread holds, in locking order (capacity: all of them).
    pub(super) held: Vec<usize>,
    /// Every CPU the process may use (a phase without CPUs returns to it).
    pub(super) all_cpus: Vec<u32>,
    /// Open `cgroup.threads` files of the run's task groups, by name.
    pub(super) groups: &'a [(String, std::fs::File)],
    /// The cpuset `tasks` file of each partitioned deadline CPU.
    pub(super) partitions: &'a [(u32, std::fs::File)],
    /// State of the release-jitter generator.
    pub(super) jitter_state: u64,
    /// The task's program, when its body is one (started before the
    /// first release).
    pub(super) program: Option<tinct_sys::program::Program>,
    /// Its start-up in words (see [`super::ProgramRun::ready`]).
    pub(super) program_ready: String,
    /// The job being run (its line to the program says it).
    pub(super) job: u64,
}

/// What the job loop of one thread needs to know about the run.
pub(super) struct Context<'a> {
    pub(super) index: usize,
    pub(super) task: &'a TaskSpec,
    pub(super) shared: &'a Shared,
    pub(super) objects: &'a Objects,
    pub(super) watchdog: WatchdogMode,
    /// Timers used by this thread only (their grid is the thread's own).
    pub(super) own_timers: &'a [bool],
    pub(super) end: u64,
}

impl Context<'_> {
    fn until(&self) -> Until<'_> {
        Until {
            stop: &self.shared.stop,
            ending: &self.shared.ending,
        }
    }

    fn fail(&self, message: &str) {
        self.shared.stop_for(StopReason::TaskFailed {
            task: self.task.name.clone(),
            message: message.to_string(),
        });
    }
}

/// The program's own readings of a program step.
#[derive(Clone, Copy, Debug)]
struct ProgramGaps {
    /// When the program woke with the job (CLOCK_MONOTONIC ns).
    woke: u64,
    /// From the program's end to this thread seeing it.
    after_end: u64,
}

/// What a job measured besides its times.
#[derive(Default)]
struct JobStats {
    run_ns: u64,
    /// CPU time the task's program spent on the job (all its threads).
    program_cpu_ns: u64,
    /// How much of the program step was the program's own, by its own
    /// clock (the `futex` protocol reports its wake-up and end): the wait
    /// from the request to its wake-up, and from its end to this thread
    /// seeing it (CLOCK_MONOTONIC ns).
    program_gaps: Option<ProgramGaps>,
    /// When the program took a job released ahead and cut before its
    /// end (`futex`, [`tinct_sys::program::Program::withdraw_job`]).
    program_took: Option<u64>,
    slack_ns: i64,
    /// Its packets (hand-overs, the sample taken, a move).
    flow: Flow,
}

/// The job loop of one thread, from its first release `first` (see the
/// module and [`crate::spec`] docs).
pub(super) fn release_jobs(cx: &Context<'_>, p: &mut Prepared, first: u64) {
    let task = cx.task;
    let monitor = &cx.shared.monitors[cx.index];
    let stop = &*cx.shared.stop;
    // Instants are sums of t0 (a CLOCK_MONOTONIC reading) and times within
    // crate::limits, far below u64::MAX; saturating keeps a wrapped sum from
    // ever landing before the end of the run.
    let mut release = first;
    let mut job = 0u64;
    let mut pass = 0u64;
    let mut cpus_now: Option<&[u32]> = task.cpus.as_deref();
    let mut in_force = tinct_sys::sched::scheduling().unwrap_or(task.scheduling);
    while task.loops.is_none_or(|l| pass < l) {
        for (phase_index, phase) in task.phases.iter().enumerate() {
            if !enter_phase(cx, p, phase, &mut cpus_now) {
                return;
            }
            let deadline = task.deadline_of(phase);
            let grid = phase
                .release_timer()
                .filter(|(t, _)| cx.own_timers[*t] && cx.objects.timer_is_absolute(*t))
                .map(|(_, period)| period);
            let backlog = Backlog {
                phase,
                phase_index,
                grid,
                deadline,
                end: cx.end,
            };
            let data_triggered = phase.inputs().next().is_some();
            // Where the affinity placement last moved the task's program.
            let mut program_on: Option<u32> = None;
            let mut k = 0u64;
            while phase.loops.is_none_or(|l| k < l) {
                if release >= cx.end {
                    return;
                }
                if !data_triggered && now_ns() >= cx.end {
                    // The run ends at its duration, whatever the watchdog:
                    // releases still due behind a late job are recorded as
                    // released and never started, not run past the end
                    // (with `--watchdog off` a backlog once ran 20 s past a
                    // 2 s run).
                    backlog.record(&mut p.log, job, k, release, true);
                    return;
                }
                if p.log.is_full() {
                    // Stop before releasing a job that could not be recorded.
                    cx.shared.stop_for(StopReason::LogFull {
                        task: task.name.clone(),
                    });
                    return;
                }
                let mut stats = JobStats::default();
                if data_triggered {
                    // Released by its inputs' hand-over (taken here), at
                    // the last one's instant; nothing is taken, so nothing
                    // released, when the run ends first.
                    let handover = match cx.objects.receive(cx.index, phase.inputs(), cx.until()) {
                        Ok(handover) => handover,
                        Err(Blocked::Failed(message)) => return cx.fail(message),
                        Err(_) => return,
                    };
                    release = handover.at_ns;
                    stats.flow.sample = Some(handover.sample);
                    stats.flow.producer_cpu = Some(handover.producer_cpu);
                    // Placed by its producer before the hand-over woke it
                    // (the move off its response); else, or when another
                    // producer pinned it elsewhere since, it moves itself.
                    let target = handover
                        .placed
                        .or_else(|| cx.objects.affinity_target(handover.producer_cpu, cx.index));
                    if let Some(target) = target {
                        let t = now_ns();
                        let Ok(moved_itself) = cx.objects.pin_self(cx.index, target) else {
                            return cx.fail("sched_setaffinity refused the affinity placement");
                        };
                        let by_producers = cx.objects.take_moved_ns(cx.index);
                        // A program body does the job: it follows its task.
                        let program_moved = program_on != Some(target) && p.program.is_some();
                        if program_moved
                            && p.program
                                .as_ref()
                                .is_some_and(|program| program.set_affinity(&[target]).is_err())
                        {
                            return cx.fail(
                                "its program could not be moved with it (affinity placement): \
                                 the program exited, or sched_setaffinity refused",
                            );
                        }
                        program_on = Some(target);
                        if moved_itself || by_producers > 0 || program_moved {
                            stats.flow.move_ns =
                                Some(by_producers.saturating_add(now_ns().saturating_sub(t)));
                        }
                    }
                }
                let jitter = if task.jitter_ns > 0 {
                    splitmix64(&mut p.jitter_state) % task.jitter_ns.saturating_add(1)
                } else {
                    0
                };
                let released_at = release.saturating_add(jitter);
                // A `futex` program whose job opens the phase is released
                // ahead, for its instant: it sleeps until then on its own
                // timer, and this thread, instead of waking first and
                // waking it, waits for the job's end. Nothing of tinct lies
                // between the timer and the program.
                let ahead = !data_triggered
                    && matches!(phase.steps.first(), Some(Step::Program))
                    && p.program
                        .as_mut()
                        .is_some_and(|program| program.release_ahead(job, released_at));
                // The job starts at the first clock read after the wake-up,
                // as cyclictest counts a wake-up: nothing of tinct between.
                let start = if ahead {
                    now_ns()
                } else {
                    match clock::sleep_until_or_stop(released_at, stop) {
                        Some(woke) => woke,
                        None => {
                            // Stopped while waiting: a release already due
                            // (a backlog after a late job) was released all
                            // the same.
                            backlog.record(&mut p.log, job, k, release, true);
                            return;
                        }
                    }
                };
                if let Ok(now) = tinct_sys::sched::scheduling() {
                    in_force = now;
                }
                let absolute_deadline = deadline.map_or(u64::MAX, |d| release.saturating_add(d));
                let guarded = deadline.filter(|_| cx.watchdog.guards(in_force.policy));
                monitor.begin(job, release, guarded.unwrap_or(0));
                p.log.begin_job(&InFlight {
                    job,
                    phase: phase_index as u32,
                    release_ns: release,
                    deadline_ns: absolute_deadline,
                    // A job released ahead has not started yet (0): a
                    // crash now must not record a start, nor a sign of
                    // life, in the future.
                    start_ns: if ahead { 0 } else { start },
                });
                if p.crash_at == Some(job) {
                    tinct_sys::supervise::raise_segfault();
                }
                let cpu = clock::current_cpu();
                cx.objects.note_cpu(cx.index, cpu);
                p.job = job;
                let cpu0 = thread_cpu_ns();
                let switches0 = thread_switches();
                let counters0 = p.counters.read();
                let ran = run_steps(cx, p, phase_index, phase, first, &mut stats);
                if ahead && ran != Ran::Done {
                    // Cut before the program ended it: take the job back
                    // unless the program has it (one word decides, so a
                    // job recorded as never started is never run).
                    stats.program_took = p
                        .program
                        .as_mut()
                        .and_then(|program| program.withdraw_job(job));
                }
                // After the withdrawal: a take it lost to is before this.
                let mut finish = now_ns();
                if ahead && stats.program_took.is_none() && finish < released_at {
                    // Stopped before the instant it was released for, and
                    // taken back: recorded as a stop during the sleep
                    // records it (released and never started once its
                    // release, jitter aside, has come).
                    release_held(cx, p);
                    monitor.end();
                    p.log.end_job();
                    backlog.record(&mut p.log, job, k, release, true);
                    return;
                }
                // A program that reports its own wake-up and end (futex):
                // the job ends when the program ended it, not when this
                // thread saw it, and a job that opens with the program
                // starts when the program woke, so its release latency is
                // its own (futex wake-up included). A job released ahead
                // starts no earlier than its instant (this thread's `start`
                // may be read before it, or after the program woke for an
                // instant already past).
                let earliest = if ahead { released_at } else { start };
                let start = match stats.program_gaps.take() {
                    Some(gaps) if ran == Ran::Done => {
                        finish = finish.saturating_sub(gaps.after_end).max(earliest);
                        if matches!(phase.steps.first(), Some(Step::Program)) {
                            gaps.woke.max(earliest).min(finish)
                        } else {
                            start
                        }
                    }
                    // Cut before its end: started when the program took
                    // it, or not at all (0).
                    _ if ahead && ran != Ran::Done => stats
                        .program_took
                        .map_or(0, |took| took.max(earliest).min(finish.max(earliest))),
                    _ => earliest.min(finish.max(start)),
                };
                // Thread CPU time and switch counts only grow; saturating
                // turns an impossible step back into 0, never a wrap.
                let exec = thread_cpu_ns()
                    .saturating_sub(cpu0)
                    .saturating_add(stats.program_cpu_ns);
                let switches1 = thread_switches();
                let counters = p.counters.read().since(&counters0);
                monitor.end();
                let next = if ran == Ran::Done {
                    phase.release_timer().map(|(timer, period)| {
                        let (tick, slack) = cx.objects.tick(timer, period, first);
                        stats.slack_ns = slack;
                        tick
                    })
                } else {
                    release_held(cx, p);
                    None
                };
                // A job still in progress at the run's end was cut there:
                // it did not complete within the run, whatever came after
                // (a deadlocked job whose lock came at teardown "finished"
                // after the end).
                let finished = ran == Ran::Done && finish <= cx.end;
                let outcome = match ran {
                    _ if !finished => Outcome::Aborted,
                    _ if finish > absolute_deadline => Outcome::Missed,
                    _ => Outcome::Completed,
                };
                let record = JobRecord {
                    job,
                    phase: phase_index as u32,
                    release_ns: release,
                    jitter_ns: jitter,
                    deadline_ns: absolute_deadline,
                    start_ns: start,
                    finish_ns: finished.then_some(finish),
                    exec_ns: exec,
                    run_ns: stats.run_ns,
                    slack_ns: stats.slack_ns,
                    cpu,
                    cpu_end: clock::current_cpu(),
                    policy: in_force.policy,
                    nice: in_force.nice,
                    preemptions: count_u32(
                        switches1.involuntary.saturating_sub(switches0.involuntary),
                    ),
                    voluntary_switches: count_u32(
                        switches1.voluntary.saturating_sub(switches0.voluntary),
                    ),
                    counters,
                    flow: stats.flow,
                    outcome,
                };
                p.log.push(record); // room was checked before the release
                p.log.end_job();
                job += 1;
                k += 1;
                release = next.unwrap_or(finish);
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

/// Applies a phase's CPUs, scheduling and task group (rt-app changes them
/// at the start of the phase, and only what the phase sets). False when
/// the kernel refused (the run is stopped with the reason).
fn enter_phase<'t>(
    cx: &Context<'t>,
    p: &Prepared,
    phase: &'t Phase,
    cpus_now: &mut Option<&'t [u32]>,
) -> bool {
    let wanted = phase.cpus.as_deref().or(cx.task.cpus.as_deref());
    if wanted != *cpus_now {
        let target = wanted.unwrap_or(&p.all_cpus);
        if tinct_sys::sched::set_affinity(target).is_err() {
            cx.fail("sched_setaffinity refused the phase's cpus");
            return false;
        }
        // No longer where the affinity placement pinned it, if it did.
        cx.objects.unpinned(cx.index);
        *cpus_now = wanted;
    }
    if let Some(scheduling) = &phase.scheduling
        && let Err(e) =
            super::deadline::switch_policy(scheduling, wanted, p.partitions, &p.all_cpus)
    {
        cx.fail(&e);
        return false;
    }
    if let Some(group) = &phase.taskgroup
        && !join_group(p.groups, group)
    {
        cx.fail("moving the thread to its phase's task group failed");
        return false;
    }
    true
}

/// Moves the calling thread into task group `group` through its open
/// `cgroup.threads` (no allocation).
pub(super) fn join_group(groups: &[(String, std::fs::File)], group: &str) -> bool {
    groups
        .iter()
        .find(|(name, _)| name == group)
        .is_some_and(|(_, file)| tinct_sys::cgroup::join_thread(file).is_ok())
}

/// Unlocks, newest first, every mutex a stopped job still held (rt-app
/// runs the unlocks of an interrupted loop for the same reason).
fn release_held(cx: &Context<'_>, p: &mut Prepared) {
    while let Some(m) = p.held.pop() {
        let _ = cx.objects.unlock(m);
    }
}

/// Runs one job's steps (the phase's [`Phase::body`]). `first` is the
/// thread's first release (a timer's starting point at its first use).
fn run_steps(
    cx: &Context<'_>,
    p: &mut Prepared,
    phase_index: usize,
    phase: &Phase,
    first: u64,
    stats: &mut JobStats,
) -> Ran {
    let stop = &*cx.shared.stop;
    let until = cx.until();
    // The body starts after the inputs; work is kept per step of the phase.
    let skipped = phase.inputs().count();
    for (i, step) in (skipped..).zip(phase.body()) {
        let outcome = match *step {
            Step::Kernel { .. } => {
                let t = now_ns();
                let ran = p.state.run(p.work[phase_index][i], stop);
                stats.run_ns = stats.run_ns.saturating_add(now_ns().saturating_sub(t));
                ran.into()
            }
            Step::Busy { duration_ns } => {
                let t = now_ns();
                let until_ns = t.saturating_add(duration_ns);
                let mut ran = Blocked::Done;
                while now_ns() < until_ns {
                    if stop.load(Ordering::Relaxed) {
                        ran = Blocked::GaveUp;
                        break;
                    }
                    p.state.compute_steps(64);
                }
                stats.run_ns = stats.run_ns.saturating_add(now_ns().saturating_sub(t));
                ran
            }
            // Like a timer's wait, a sleep ends at the run's end too (the
            // job is aborted then): the run ends at its duration.
            Step::Sleep { duration_ns } => {
                sleep_until_or(now_ns().saturating_add(duration_ns), until)
            }
            Step::Timer { timer, period_ns } => {
                let (tick, slack) = cx.objects.tick(timer, period_ns, first);
                stats.slack_ns = slack;
                sleep_until_or(tick, until)
            }
            Step::Lock { mutex } => {
                // Blocked only when the mutex was held: its wait is timed.
                let locked = if cx.objects.try_lock(mutex) {
                    Blocked::Done
                } else {
                    let t = now_ns();
                    let locked = cx.objects.lock(mutex, until);
                    let waited = now_ns().saturating_sub(t);
                    stats.flow.blocked_ns = stats.flow.blocked_ns.saturating_add(waited);
                    locked
                };
                if locked == Blocked::Done && p.held.len() < p.held.capacity() {
                    p.held.push(mutex);
                }
                locked
            }
            Step::Unlock { mutex } => {
                let unlocked = cx.objects.unlock(mutex);
                if let Some(at) = p.held.iter().rposition(|&m| m == mutex) {
                    p.held.remove(at); // no allocation: shifts in place
                }
                unlocked
            }
            Step::Wait { cond, mutex } => cx.objects.wait(cond, mutex, until),
            Step::Signal { cond } => {
                cx.objects.signal(cond);
                Blocked::Done
            }
            Step::Broadcast { cond } => {
                cx.objects.broadcast(cond);
                Blocked::Done
            }
            Step::SignalWait { cond, mutex } => {
                cx.objects.signal(cond);
                cx.objects.wait(cond, mutex, until)
            }
            Step::Suspend { cond, mutex } => {
                locked(cx, p, mutex, until, |o| o.wait(cond, mutex, until))
            }
            Step::Resume { cond, mutex } => locked(cx, p, mutex, until, |o| {
                o.broadcast(cond);
                Blocked::Done
            }),
            Step::Barrier { barrier } => cx.objects.barrier(barrier, until),
            Step::Yield => {
                tinct_sys::sched::yield_now();
                Blocked::Done
            }
            Step::Fork { fork } => {
                if cx.objects.fork(fork) {
                    Blocked::Done
                } else {
                    Blocked::Failed("fork: every prepared thread of the forked task already runs")
                }
            }
            Step::Mem { bytes } => {
                p.state.write_bytes(bytes);
                Blocked::Done
            }
            Step::IoRun { bytes } => cx.objects.io_write(&p.io_buffer, bytes),
            Step::Send { channel } => match cx.objects.send(channel, clock::current_cpu(), until) {
                Ok((sample, replaced)) => {
                    stats.flow.sample = Some(sample);
                    stats.flow.lost = stats.flow.lost.saturating_add(u32::from(replaced));
                    Blocked::Done
                }
                Err(blocked) => blocked,
            },
            Step::Receive { .. } => {
                Blocked::Failed("a receive after a phase's first steps (only inputs release a job)")
            }
            Step::Program => program_job(p, &until, &cx.shared.monitors[cx.index], stats),
        };
        match outcome {
            Blocked::Done => {}
            Blocked::GaveUp => return Ran::Stopped,
            Blocked::Failed(message) => {
                cx.fail(message);
                return Ran::Stopped;
            }
            Blocked::IoFailed(errno) => {
                cx.fail(&cx.objects.io_failure(errno));
                return Ran::Stopped;
            }
        }
    }
    Ran::Done
}

/// Lock `mutex`, do `inside`, unlock (rt-app `suspend` and `resume`).
fn locked(
    cx: &Context<'_>,
    p: &mut Prepared,
    mutex: usize,
    until: Until<'_>,
    inside: impl FnOnce(&Objects) -> Blocked,
) -> Blocked {
    match cx.objects.lock(mutex, until) {
        Blocked::Done => {}
        other => return other,
    }
    p.held.push(mutex);
    let outcome = inside(cx.objects);
    p.held.pop();
    match cx.objects.unlock(mutex) {
        Blocked::Done => outcome,
        failed => failed,
    }
}

/// One job of the task's program: the job's number on a line to its
/// stdin and its line back (the `lines` protocol), or its release and end
/// on the futex page (`futex`), waiting while the run goes on; the
/// program's CPU time in between is the job's too. While it owes the job
/// its pid is on `monitor`, so that the watchdog can kill it when the run
/// ends without an answer (a program spinning at the task's priority
/// would keep this thread from ever seeing the end). Output it wrote
/// before it was asked is a protocol error of `lines`: it would be taken
/// for this job's answer. Nothing is allocated.
fn program_job(
    p: &mut Prepared,
    until: &Until<'_>,
    monitor: &crate::watchdog::Monitor,
    stats: &mut JobStats,
) -> Blocked {
    let Some(program) = p.program.as_mut() else {
        return Blocked::Failed("a program step in a task without a program");
    };
    if program.unasked_output() {
        return Blocked::Failed(
            "its program wrote to its stdout before it was asked for a job (the lines protocol: \
             one line per job, diagnostics on stderr)",
        );
    }
    let cpu0 = program.cpu_ns();
    monitor.program_owes_job(program.pid());
    let outcome = match program.ask_job(p.job) {
        Err(_) => Blocked::Failed(
            "its program no longer reads its stdin (it closed it or exited) when a job was released",
        ),
        Ok(()) => match program.wait_reply(&|| until.reached(), LOOK_AT_STOP) {
            Reply::Done => Blocked::Done,
            Reply::GaveUp => Blocked::GaveUp,
            Reply::Closed => Blocked::Failed(
                "its program exited (or closed its stdout) before it said the job was done",
            ),
            Reply::TooLong => Blocked::Failed(
                "its program wrote more than 64 KiB without a newline (the lines protocol: one \
                 line per job)",
            ),
        },
    };
    let returned = now_ns();
    monitor.program_owes_job(0);
    stats.program_cpu_ns = program.cpu_ns().saturating_sub(cpu0);
    // Its own readings, taken only when they lie in order inside this
    // step's span, from the job's hand-over (a release ahead's, before
    // the instant) to now (the same clock on both sides): anything else
    // (an old program that writes no times) leaves the thread's.
    let asked = program.asked_ns();
    stats.program_gaps = program
        .job_times()
        .filter(|&(woke, ended)| asked <= woke && woke <= ended && ended <= returned)
        .map(|(woke, ended)| ProgramGaps {
            woke,
            after_end: returned - ended,
        });

    outcome
}

/// How often a thread waiting for its program's answer looks whether the
/// run has ended.
const LOOK_AT_STOP: std::time::Duration = std::time::Duration::from_nanos(clock::STOP_POLL_NS);

fn sleep_until_or(instant: u64, until: Until<'_>) -> Blocked {
    loop {
        if until.reached() {
            return Blocked::GaveUp;
        }
        let now = now_ns();
        if now >= instant {
            return Blocked::Done;
        }
        clock::sleep_until(instant.min(now.saturating_add(clock::STOP_POLL_NS)));
    }
}

impl From<Ran> for Blocked {
    fn from(ran: Ran) -> Blocked {
        match ran {
            Ran::Done => Blocked::Done,
            Ran::Stopped => Blocked::GaveUp,
        }
    }
}

/// Where a phase stood when the run stopped.
struct Backlog<'a> {
    phase: &'a Phase,
    phase_index: usize,
    /// The period of the phase's release timer when it keeps this
    /// thread's own absolute grid (releases continue while a job runs late).
    grid: Option<u64>,
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
        if !first_is_due && self.grid.is_none() {
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
            let Some(period) = self.grid else { return };
            job += 1;
            k += 1;
            release = release.saturating_add(period);
        }
    }
}

/// A count in a record's 32-bit field, at most `u32::MAX` (4 billion
/// context switches in one job do not happen; if they did, the field says
/// "at least").
fn count_u32(count: impl TryInto<u32>) -> u32 {
    count.try_into().unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shared_log::SharedLog;

    fn phase() -> Phase {
        Phase::new("p", None, vec![])
    }

    fn recorded(grid: Option<u64>, release_ago_ns: u64, first_is_due: bool) -> Vec<JobRecord> {
        let now = now_ns();
        let p = phase();
        let backlog = Backlog {
            phase: &p,
            phase_index: 0,
            grid,
            deadline: Some(1_000_000),
            end: now + 1_000_000_000,
        };
        let log = SharedLog::new(&[1000]).unwrap();
        backlog.record(&mut log.writer(0), 5, 3, now - release_ago_ns, first_is_due);
        log.records(0)
    }

    #[test]
    fn an_absolute_timer_keeps_releasing_while_a_job_runs_late() {
        // T = 10 ms; job 3 was due 70 ms ago: releases at 0, 10, ..., 70 ms
        // ago have all come.
        let r = recorded(Some(10_000_000), 70_000_000, false);
        assert_eq!(r.len(), 8, "{r:?}");
        assert!(
            r.iter()
                .all(|j| j.outcome == Outcome::Aborted && !j.started() && j.finish_ns.is_none())
        );
        assert_eq!((r[0].job, r[7].job), (5, 12));
        assert_eq!(r[1].release_ns - r[0].release_ns, 10_000_000);
    }

    #[test]
    fn without_an_own_absolute_grid_only_a_due_release_counts() {
        assert_eq!(recorded(None, 5_000_000, true).len(), 1, "the due release");
        assert!(
            recorded(None, 5_000_000, false).is_empty(),
            "nothing releases during a job"
        );
        let future = phase();
        let now = now_ns();
        let backlog = Backlog {
            phase: &future,
            phase_index: 0,
            grid: None,
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
