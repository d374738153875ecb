//! How to run and what a run gives back.

use crate::calibrate::Rates;
use crate::colouring::Colouring;
use crate::kernels::JobWork;
use crate::memory::Placement;
use crate::record::JobRecord;
use crate::sentinel::{SentinelOptions, SentinelReport};
use crate::spec::{RunSpec, Scheduling, TaskSpec, WatchdogMode};
use crate::watchdog::StopReason;
use serde::Serialize;

/// How to run.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct RunOptions {
    /// Use the spec's real-time policies; false runs everything under
    /// SCHED_OTHER (`--no-rt`).
    pub realtime: bool,
    /// The watchdog stops a job at `release + factor × deadline`.
    pub watchdog_factor: f64,
    /// Which jobs the watchdog guards (default: real-time ones).
    pub watchdog: WatchdogMode,
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
    /// (see [`crate::runtime`]). Off by default: in-process runs
    /// keep the working sets inspectable and the allocator observable.
    pub supervise: bool,
    /// Watch every CPU of the run for host stalls ([`crate::sentinel`]);
    /// `None`: no sentinel (then no late job can be blamed on a stall).
    pub sentinel: Option<SentinelOptions>,
    /// What is known about page colouring here, for the attribution of
    /// late jobs (tinct-verify's `attribution`); the run itself does not
    /// probe.
    pub colouring: Colouring,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            realtime: true,
            watchdog_factor: 3.0,
            watchdog: WatchdogMode::Realtime,
            handle_signals: true,
            release_margin_ns: 20_000_000,
            uncolored: false,
            supervise: false,
            sentinel: Some(SentinelOptions::default()),
            colouring: Colouring::Unknown,
        }
    }
}

/// How a job's work was decided.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct WorkNote {
    /// Phase name.
    pub phase: String,
    /// "calibrated" (a target time) or "fixed" (iterations as written).
    pub mode: String,
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
    /// Its thread's kernel id (0 if it never started).
    pub tid: i32,
    /// Its jobs, in order.
    pub records: Vec<JobRecord>,
    /// Where its working set lived.
    pub placement: Placement,
    /// Measured iteration costs, when something was calibrated.
    pub rates: Option<Rates>,
    /// The work per job of each kernel step.
    pub work: Vec<WorkNote>,
    /// The scheduling it was started with (each job records the policy the
    /// kernel reported in force).
    pub scheduling: Scheduling,
    /// Why hardware counters are missing from the records, if they are.
    pub counters_unavailable: Option<String>,
    /// Setup error or panic message, if any.
    pub error: Option<String>,
    /// Its program, when its body is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub program: Option<ProgramRun>,
}

/// What became of a task's program.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct ProgramRun {
    /// The program and its arguments, as started.
    pub command: Vec<String>,
    /// Its process id.
    pub pid: u32,
    /// How it ended, in words: `exit status 0`, `killed by SIGKILL`, …
    pub ended: String,
    /// Its start-up, in words: `ready 142.3 ms after its start`, or why
    /// its readiness was not seen (job 0 then counts the rest of it).
    pub ready: String,
    /// True if it was killed for not ending within a second of the end of
    /// its input.
    pub killed: bool,
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
    /// Which jobs the watchdog guarded.
    pub watchdog: WatchdogMode,
    /// Write rt-app-style per-thread logs with this basename.
    pub rtapp_log: Option<String>,
    /// Notes on how the run was set up (task groups without a CPU
    /// controller, ...), for every output.
    pub notes: Vec<String>,
    /// Per task, in spec order.
    pub tasks: Vec<TaskRun>,
    /// What the stall sentinels saw (`None`: no sentinel ran).
    pub sentinel: Option<SentinelReport>,
    /// The CPU sets sharing one last-level cache (empty: unknown).
    pub llc_domains: Vec<Vec<u32>>,
    /// What was known about page colouring (from [`RunOptions::colouring`]).
    pub colouring: Colouring,
    /// The run's mutexes (the spec's [`crate::spec::Resources::mutexes`]):
    /// the summary names those used across CPUs.
    pub mutexes: Vec<crate::spec::MutexSpec>,
    /// The resident pages of the run's process outside the memory placed
    /// for its tasks, read when every task's jobs had ended: what any
    /// thread of the run can touch uncoloured (the isolation proof's
    /// residue); why it was not read, otherwise.
    #[serde(skip)]
    pub footprint: std::result::Result<tinct_sys::footprint::Footprint, String>,
}

/// What one way of running (threads, supervised processes) measured: the
/// parts of a [`RunResult`] that do not come from the spec or the options.
pub(super) struct Measured {
    pub start_ns: u64,
    pub end_ns: u64,
    pub stop: StopReason,
    pub memory_locked: bool,
    pub rt_throttling: String,
    pub notes: Vec<String>,
    pub tasks: Vec<TaskRun>,
}

impl RunResult {
    /// The result of running `spec` under `options`; the stall sentinels
    /// and LLC domains are filled in later by `runtime::run`.
    pub(super) fn assemble(spec: &RunSpec, options: &RunOptions, measured: Measured) -> RunResult {
        RunResult {
            start_ns: measured.start_ns,
            end_ns: measured.end_ns,
            stop: measured.stop,
            realtime: options.realtime,
            memory_locked: measured.memory_locked,
            rt_throttling: measured.rt_throttling,
            watchdog_factor: options.watchdog_factor,
            watchdog: options.watchdog,
            rtapp_log: spec.rtapp_log.clone(),
            notes: measured.notes,
            tasks: measured.tasks,
            sentinel: None,
            llc_domains: Vec::new(),
            colouring: options.colouring,
            mutexes: spec.resources.mutexes.clone(),
            footprint: Err("not read: the tasks ran in processes of their own".into()),
        }
    }
}

/// The CPU sets that share one last-level cache, from sysfs (empty if the
/// topology cannot be read).
pub(super) fn llc_domains() -> Vec<Vec<u32>> {
    let Ok(topology) = tinct_sys::topology::Topology::read(&tinct_sys::SysRoot::live()) else {
        return Vec::new();
    };
    let data =
        |c: &&tinct_sys::topology::Cache| c.kind != tinct_sys::topology::CacheType::Instruction;
    let Some(level) = topology.caches.iter().filter(data).map(|c| c.level).max() else {
        return Vec::new();
    };
    let mut domains: Vec<Vec<u32>> = topology
        .caches
        .iter()
        .filter(data)
        .filter(|c| c.level == level && !c.shared_cpus.is_empty())
        .map(|c| c.shared_cpus.clone())
        .collect();
    domains.sort();
    domains.dedup();
    domains
}

/// RT throttling in words (read only: tinct never switches it off).
pub(super) fn rt_throttling() -> String {
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
