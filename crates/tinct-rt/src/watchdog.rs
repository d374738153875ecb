//! The watchdog: a thread above every task (SCHED_FIFO 99 in real-time
//! runs) that stops the run when a job overruns its deadline by a factor,
//! when the run outlives its duration, or when a signal or a failed task
//! asks for it. Stopping sets one flag that every job kernel looks at
//! between chunks; tinct never touches RT throttling
//! (`/proc/sys/kernel/sched_rt_runtime_us`), which stays the last line of
//! defence.

use crate::clock::now_ns;
use serde::Serialize;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Why a run ended.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum StopReason {
    /// Every task ran until the end of the run's duration (or its loops).
    Completed,
    /// SIGINT or SIGTERM.
    Signal,
    /// A job ran longer than `factor × deadline` past its release.
    Overrun {
        /// Task name.
        task: String,
        /// Job number.
        job: u64,
        /// Its relative deadline.
        deadline_ns: u64,
        /// The factor.
        factor: f64,
    },
    /// The run went past its duration plus the grace period.
    DurationExceeded {
        /// The hard limit that passed, relative to the common release.
        limit_ns: u64,
    },
    /// A task failed (setup error or panic).
    TaskFailed {
        /// Task name.
        task: String,
        /// What happened.
        message: String,
    },
    /// A task released more jobs than its log can hold.
    LogFull {
        /// Task name.
        task: String,
    },
}

impl StopReason {
    /// True if the run ended as planned.
    pub fn is_completed(&self) -> bool {
        matches!(self, StopReason::Completed)
    }

    /// One line for people.
    pub fn describe(&self) -> String {
        match self {
            StopReason::Completed => "completed".into(),
            StopReason::Signal => {
                "stopped by a signal (SIGINT/SIGTERM); the records so far were written".into()
            }
            StopReason::Overrun {
                task,
                job,
                deadline_ns,
                factor,
            } => format!(
                "WATCHDOG: task '{task}' job {job} ran past {factor} × its deadline of {}: run stopped",
                tinct_base::units::ms_with_unit(*deadline_ns)
            ),
            StopReason::DurationExceeded { limit_ns } => format!(
                "WATCHDOG: the run went past its duration plus grace ({:.3} s): run stopped",
                *limit_ns as f64 / 1e9
            ),
            StopReason::TaskFailed { task, message } => format!("task '{task}' failed: {message}"),
            StopReason::LogFull { task } => {
                format!("task '{task}' released more jobs than its log holds: run stopped")
            }
        }
    }
}

/// What the watchdog sees of one task: the release and deadline of the job
/// running now (release 0 when idle), and the pid of its program while
/// the program owes a job (0 otherwise).
#[derive(Debug, Default)]
pub struct Monitor {
    release_ns: AtomicU64,
    deadline_ns: AtomicU64,
    job: AtomicU64,
    program_in_job: std::sync::atomic::AtomicU32,
}

impl Monitor {
    /// The task's program `pid` was asked for a job (0: it answered).
    pub fn program_owes_job(&self, pid: u32) {
        self.program_in_job.store(pid, Ordering::Release);
    }

    /// A job with relative deadline `deadline_ns` (0: none) starts.
    pub fn begin(&self, job: u64, release_ns: u64, deadline_ns: u64) {
        self.job.store(job, Ordering::Relaxed);
        self.deadline_ns.store(deadline_ns, Ordering::Relaxed);
        self.release_ns.store(release_ns, Ordering::Release);
    }

    /// The job ended.
    pub fn end(&self) {
        self.release_ns.store(0, Ordering::Release);
    }
}

/// State shared by the tasks, the watchdog and the signal handlers.
#[derive(Debug)]
pub struct Shared {
    /// Set to stop everything.
    pub stop: Arc<AtomicBool>,
    /// Set by SIGINT/SIGTERM, or by the caller's stop flag.
    pub signaled: Arc<AtomicBool>,
    /// Set when the run reaches its end: threads blocked on each other
    /// (locks, conditions, barriers) give up then, as rt-app's shutdown
    /// wakes every waiter; running jobs finish.
    pub ending: AtomicBool,
    /// One per task.
    pub monitors: Vec<Monitor>,
    /// Task names, for reasons.
    pub names: Vec<String>,
    /// Task threads that have finished.
    pub finished: AtomicUsize,
    reason: Mutex<Option<StopReason>>,
}

impl Shared {
    /// State for tasks named `names`.
    pub fn new(names: Vec<String>) -> Shared {
        Shared::stopped_by(names, Arc::new(AtomicBool::new(false)))
    }

    /// State for tasks named `names` whose run also ends, as on SIGINT,
    /// when `signaled` is raised (a caller's stop flag, see
    /// [`crate::runtime::run_until`]).
    pub fn stopped_by(names: Vec<String>, signaled: Arc<AtomicBool>) -> Shared {
        Shared {
            stop: Arc::new(AtomicBool::new(false)),
            signaled,
            ending: AtomicBool::new(false),
            monitors: names.iter().map(|_| Monitor::default()).collect(),
            names,
            finished: AtomicUsize::new(0),
            reason: Mutex::new(None),
        }
    }

    /// Stops the run for `reason` (the first reason wins).
    pub fn stop_for(&self, reason: StopReason) {
        let mut slot = self.reason.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            *slot = Some(reason);
        }
        self.stop.store(true, Ordering::SeqCst);
    }

    /// True once a stop was asked for.
    pub fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// The reason the run ended.
    pub fn reason(&self) -> StopReason {
        if self.signaled.load(Ordering::SeqCst) {
            self.stop_for(StopReason::Signal);
        }
        let slot = self.reason.lock().unwrap_or_else(|p| p.into_inner());
        slot.clone().unwrap_or(StopReason::Completed)
    }
}

/// Limits the watchdog enforces.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Limits {
    /// A job may run until `release + factor × deadline`.
    pub overrun_factor: f64,
    /// Absolute CLOCK_MONOTONIC instant past which the run is stopped
    /// (`u64::MAX`: never, the watchdog is off).
    pub hard_limit_ns: u64,
    /// The end of the run, when blocked threads are let go.
    pub end_ns: u64,
    /// The common release, to report limits relative to it.
    pub start_ns: u64,
    /// How often to look.
    pub poll_ns: u64,
}

/// How often the watchdog looks while the threads wind down after a stop.
pub const STOPPING_POLL_NS: u64 = 1_000_000;

/// One look: the reason to stop now, if any.
pub fn check(shared: &Shared, limits: &Limits, now: u64) -> Option<StopReason> {
    if shared.signaled.load(Ordering::Relaxed) {
        return Some(StopReason::Signal);
    }
    for (i, monitor) in shared.monitors.iter().enumerate() {
        let release = monitor.release_ns.load(Ordering::Acquire);
        let deadline = monitor.deadline_ns.load(Ordering::Relaxed);
        if release == 0 || deadline == 0 {
            continue;
        }
        let allowed = (deadline as f64 * limits.overrun_factor) as u64;
        if now > release.saturating_add(allowed) {
            return Some(StopReason::Overrun {
                task: shared.names[i].clone(),
                job: monitor.job.load(Ordering::Relaxed),
                deadline_ns: deadline,
                factor: limits.overrun_factor,
            });
        }
    }
    if now > limits.hard_limit_ns {
        return Some(StopReason::DurationExceeded {
            limit_ns: limits.hard_limit_ns.saturating_sub(limits.start_ns),
        });
    }
    None
}

/// When the watchdog must look next: the earliest instant a running job
/// would overrun, but no later than `poll_ns` from now (a job that starts
/// meanwhile cannot overrun before factor × D after its release) nor the
/// hard limit.
pub fn next_look(shared: &Shared, limits: &Limits, now: u64) -> u64 {
    let mut wake = now
        .saturating_add(limits.poll_ns)
        .min(limits.hard_limit_ns.saturating_add(1));
    if now < limits.end_ns {
        wake = wake.min(limits.end_ns);
    }
    for monitor in &shared.monitors {
        let release = monitor.release_ns.load(Ordering::Acquire);
        let deadline = monitor.deadline_ns.load(Ordering::Relaxed);
        if release != 0 && deadline != 0 {
            // Saturating: an overrun instant past u64::MAX never comes.
            let overrun_at = release
                .saturating_add((deadline as f64 * limits.overrun_factor) as u64)
                .saturating_add(1);
            wake = wake.min(overrun_at.max(now.saturating_add(1)));
        }
    }
    wake
}

/// The watchdog loop: looks at [`next_look`] instants until every task has
/// finished or a stop was asked for, and tells `alive` the instant of every
/// look (the run's heartbeat, see [`crate::shared_log::SharedLog::beat`]).
pub fn watch(shared: &Shared, limits: Limits, alive: &dyn Fn(u64)) {
    // Since when the run has been ending or stopping.
    let mut winding_down: Option<u64> = None;
    loop {
        if shared.finished.load(Ordering::SeqCst) == shared.monitors.len() {
            return;
        }
        let now = now_ns();
        alive(now);
        if now >= limits.end_ns {
            shared.ending.store(true, Ordering::SeqCst);
        }
        if let Some(reason) = check(shared, &limits, now) {
            shared.stop_for(reason);
        }
        if shared.stopping() || shared.ending.load(Ordering::Relaxed) {
            let since = *winding_down.get_or_insert(now);
            if now.saturating_sub(since) >= PROGRAM_STOP_GRACE_NS {
                kill_programs_in_jobs(shared);
            }
        }
        if shared.stopping() {
            if shared.finished.load(Ordering::SeqCst) == shared.monitors.len() {
                return;
            }
            // The stop is asked for: the jobs still running may be overdue,
            // and a watchdog above them must not spin waiting for them (on
            // their CPU it would keep them from ever seeing the stop).
            crate::clock::sleep_until(now.saturating_add(STOPPING_POLL_NS));
            continue;
        }
        let mut wake = next_look(shared, &limits, now);
        if let Some(since) = winding_down {
            wake = wake.min(
                since
                    .saturating_add(PROGRAM_STOP_GRACE_NS)
                    .max(now.saturating_add(STOPPING_POLL_NS)),
            );
        }
        crate::clock::sleep_until(wake);
    }
}

/// How long after the run's end (or a stop) a program still owing a job is
/// left before it is killed: its task thread, which would see the end
/// within [`crate::clock::STOP_POLL_NS`], may be kept off its CPU by the
/// program itself (a program that spins at the task's priority on the
/// task's core).
pub const PROGRAM_STOP_GRACE_NS: u64 = 100_000_000;

/// Kills (SIGKILL) every program that owes a job, with its process
/// group (what it started for the job): the job is aborted anyway, and
/// its task thread can then end. The pid is the task thread's unreaped
/// child while it is published.
fn kill_programs_in_jobs(shared: &Shared) {
    for monitor in &shared.monitors {
        let pid = monitor.program_in_job.swap(0, Ordering::AcqRel);
        if pid != 0 {
            let _ = tinct_sys::supervise::ChildProcess::adopt(pid).signal(libc::SIGKILL);
            tinct_sys::program::kill_group(pid);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A program that owes a job when the run winds down is killed; one
    /// that answered (its pid taken back) is not touched.
    #[test]
    fn a_program_owing_a_job_is_killed_and_an_idle_one_is_left() {
        let spawn = || {
            std::process::Command::new("sleep")
                .arg("30")
                .spawn()
                .unwrap()
        };
        let (mut owing, mut idle) = (spawn(), spawn());
        let shared = Shared::new(vec!["a".into(), "b".into()]);
        shared.monitors[0].program_owes_job(owing.id());
        shared.monitors[1].program_owes_job(idle.id());
        shared.monitors[1].program_owes_job(0);
        kill_programs_in_jobs(&shared);
        let status = tinct_sys::testing::wait_within(
            &mut owing,
            std::time::Duration::from_secs(30),
            "sleep",
        );
        let idle_alive = idle.try_wait().unwrap().is_none();
        idle.kill().unwrap();
        idle.wait().unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(libc::SIGKILL));
        assert!(idle_alive);
    }

    fn limits() -> Limits {
        Limits {
            overrun_factor: 2.0,
            hard_limit_ns: 10_000,
            end_ns: 9_000,
            start_ns: 1_000,
            poll_ns: 1,
        }
    }

    #[test]
    fn an_overrun_by_the_factor_stops_and_names_the_task() {
        let shared = Shared::new(vec!["a".into(), "b".into()]);
        shared.monitors[1].begin(3, 1_000, 100);
        assert_eq!(
            check(&shared, &limits(), 1_200),
            None,
            "exactly 2 × D is still allowed"
        );
        match check(&shared, &limits(), 1_201) {
            Some(StopReason::Overrun { task, job, .. }) => {
                assert_eq!((task.as_str(), job), ("b", 3))
            }
            other => panic!("expected an overrun, got {other:?}"),
        }
        shared.monitors[1].end();
        assert_eq!(check(&shared, &limits(), 5_000), None);
    }

    #[test]
    fn the_hard_limit_and_signals_stop_the_run() {
        let shared = Shared::new(vec!["a".into()]);
        assert_eq!(
            check(&shared, &limits(), 10_001),
            Some(StopReason::DurationExceeded { limit_ns: 9_000 })
        );
        shared.signaled.store(true, Ordering::SeqCst);
        assert_eq!(check(&shared, &limits(), 2_000), Some(StopReason::Signal));
        assert_eq!(shared.reason(), StopReason::Signal);
    }

    #[test]
    fn the_watchdog_wakes_exactly_when_a_running_job_would_overrun() {
        let shared = Shared::new(vec!["a".into()]);
        let l = Limits {
            overrun_factor: 2.0,
            hard_limit_ns: 1_000_000,
            end_ns: 2_000_000,
            start_ns: 0,
            poll_ns: 5_000,
        };
        assert_eq!(
            next_look(&shared, &l, 100),
            5_100,
            "idle: the poll interval"
        );
        shared.monitors[0].begin(0, 1_000, 100);
        assert_eq!(
            next_look(&shared, &l, 1_050),
            1_201,
            "just past release + 2 × D"
        );
        assert_eq!(
            next_look(&shared, &l, 999_000),
            999_001,
            "already overdue: look again at once"
        );
        assert_eq!(
            next_look(&Shared::new(vec![]), &l, 999_999),
            1_000_001,
            "never past the hard limit"
        );
    }

    #[test]
    fn the_first_reason_wins() {
        let shared = Shared::new(vec!["a".into()]);
        shared.stop_for(StopReason::LogFull { task: "a".into() });
        shared.stop_for(StopReason::Completed);
        assert!(shared.stopping());
        assert_eq!(shared.reason(), StopReason::LogFull { task: "a".into() });
    }
}
