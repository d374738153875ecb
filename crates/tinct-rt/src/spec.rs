//! What a run executes, independent of where it was described (a planned
//! task-set file or an rt-app workload file): the one event engine both
//! front ends compile into.
//!
//! A task runs its [`Phase`]s in order (the whole sequence `loops` times, or
//! until the run ends). A phase runs its job `loops` times; a *job* is one
//! pass over the phase's [`Step`]s (rt-app: one loop of the phase's events).
//! Steps are rt-app's events: work (`run`, `runtime`, `mem`, `iorun`),
//! waits (`sleep`, `timer`), synchronisation between threads (`lock`,
//! `unlock`, `wait`, `signal`, `broad`, `sync`, `suspend`, `resume`,
//! `barrier`), `yield` and `fork`. Named objects — mutexes, condition
//! variables, barriers, timers, fork gates — are [`Resources`] of the run,
//! shared by every thread that names them.
//!
//! Releases follow rt-app's timers: a timer keeps `t_next`, initialised to
//! the first user's start instant, and each use adds its period (`t_next +=
//! period`, across phases and re-entered phases, and across the threads
//! that share the timer); an `absolute` timer keeps that grid even when a
//! job is late, a `relative` one restarts from now when it is already past.
//! A phase whose last step is a timer releases its next job at that
//! timer's `t_next`: the job is the steps before it, the timer is the wait
//! between jobs. Otherwise a job is released when the previous one ends.
//! A phase whose first steps are receives ([`Step::Receive`]) is
//! data-triggered: its job is released when every one of those one-packet
//! buffers ([`ChannelSpec`]) was handed over, at the instant of the last
//! hand-over, and takes their packets.
//! The relative deadline of a job is the task's, else the sum of the
//! periods of its phase's timers.

pub use tinct_sys::sched::{DeadlineParams, Policy, Scheduling};
pub use tinct_sys::sync::Protocol;

use serde::Serialize;
use tinct_core::model::{Kernel, Work};

/// The SCHED_FIFO priority of the watchdog: above every task.
pub const WATCHDOG_PRIORITY: u8 = 99;
/// The SCHED_FIFO priority of rank 1 (the highest task priority of a plan).
pub const TOP_TASK_PRIORITY: u8 = 90;

/// A [`Step::Timer`] index standing for "a timer of the task's own": tasks
/// built in code (plans, tests) use it and [`RunSpec::new`] gives each such
/// task one absolute timer.
pub const OWN_TIMER: usize = usize::MAX;

/// One step (event) of a job. Resource fields are indexes into the run's
/// [`Resources`].
#[derive(Copy, Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum Step {
    /// Run a kernel over the task's working set (rt-app `run`: calibrated work).
    Kernel {
        /// The kernel.
        kernel: Kernel,
        /// Memory share of the job's time for `mixed` (percent).
        memory_percent: u8,
        /// Fixed iterations or a calibrated target time.
        work: Work,
    },
    /// Spin until this much wall-clock time has passed (rt-app `runtime`).
    Busy {
        /// Nanoseconds of wall-clock time.
        duration_ns: u64,
    },
    /// Sleep this long (rt-app `sleep`).
    Sleep {
        /// Nanoseconds.
        duration_ns: u64,
    },
    /// Wait for the timer's next tick, `t_next += period` (rt-app `timer`).
    Timer {
        /// Index in [`Resources::timers`].
        timer: usize,
        /// Period of this use, nanoseconds.
        period_ns: u64,
    },
    /// Lock a mutex (rt-app `lock`).
    Lock {
        /// Index in [`Resources::mutexes`].
        mutex: usize,
    },
    /// Unlock a mutex held by this thread (rt-app `unlock`).
    Unlock {
        /// Index in [`Resources::mutexes`].
        mutex: usize,
    },
    /// Wait on a condition variable with `mutex` held (rt-app `wait`).
    Wait {
        /// Index in [`Resources::conds`].
        cond: usize,
        /// Index in [`Resources::mutexes`].
        mutex: usize,
    },
    /// Wake one waiter of a condition variable (rt-app `signal`).
    Signal {
        /// Index in [`Resources::conds`].
        cond: usize,
    },
    /// Wake every waiter (rt-app `broad`).
    Broadcast {
        /// Index in [`Resources::conds`].
        cond: usize,
    },
    /// Wake one waiter, then wait on the same condition (rt-app `sync`).
    SignalWait {
        /// Index in [`Resources::conds`].
        cond: usize,
        /// Index in [`Resources::mutexes`].
        mutex: usize,
    },
    /// Lock, wait, unlock: block until a `resume` (rt-app `suspend`).
    Suspend {
        /// Index in [`Resources::conds`].
        cond: usize,
        /// Index in [`Resources::mutexes`].
        mutex: usize,
    },
    /// Lock, broadcast, unlock (rt-app `resume`).
    Resume {
        /// Index in [`Resources::conds`].
        cond: usize,
        /// Index in [`Resources::mutexes`].
        mutex: usize,
    },
    /// Wait until every party arrived (rt-app `barrier`).
    Barrier {
        /// Index in [`Resources::barriers`].
        barrier: usize,
    },
    /// Give up the CPU (rt-app `yield`).
    Yield,
    /// Start one more thread of a task (rt-app `fork`).
    Fork {
        /// Index in [`Resources::forks`].
        fork: usize,
    },
    /// Write this many bytes of the task's buffer (rt-app `mem`).
    Mem {
        /// Bytes.
        bytes: u64,
    },
    /// Write this many bytes to the run's I/O device (rt-app `iorun`).
    IoRun {
        /// Bytes.
        bytes: u64,
    },
    /// Hand this job's packet over to a one-packet buffer (a task set's
    /// `[[edge]]`): a blocking channel waits until the consumer took the
    /// previous packet; an overwriting one replaces it, the replaced
    /// sample counted lost in this job's record.
    Send {
        /// Index in [`Resources::channels`].
        channel: usize,
    },
    /// Ask the task's program for one job and wait until it says the job
    /// is done ([`TaskSpec::program`], the `lines` protocol of
    /// docs/FORMAT.md).
    Program,
    /// Take the packet of a one-packet buffer. Only as a phase's first
    /// steps: the job is released when every such input was handed over
    /// (a data-triggered task, see the module docs).
    Receive {
        /// Index in [`Resources::channels`].
        channel: usize,
    },
}

impl Step {
    /// The timer period of a [`Step::Timer`].
    pub fn timer_period(&self) -> Option<u64> {
        match self {
            Step::Timer { period_ns, .. } => Some(*period_ns),
            _ => None,
        }
    }

    /// The mutex (index in [`Resources::mutexes`]) the step locks, if it
    /// locks one (`lock`, and the waits and `suspend`/`resume`, which lock
    /// theirs).
    pub fn locked_mutex(&self) -> Option<usize> {
        match *self {
            Step::Lock { mutex }
            | Step::Wait { mutex, .. }
            | Step::SignalWait { mutex, .. }
            | Step::Suspend { mutex, .. }
            | Step::Resume { mutex, .. } => Some(mutex),
            _ => None,
        }
    }

    /// True for steps that may block on another thread (they end when the
    /// run ends, not only when it is stopped).
    pub fn blocks_on_others(&self) -> bool {
        matches!(
            self,
            Step::Lock { .. }
                | Step::Wait { .. }
                | Step::SignalWait { .. }
                | Step::Suspend { .. }
                | Step::Resume { .. }
                | Step::Barrier { .. }
        )
    }
}

/// A sequence of jobs with the same steps.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Phase {
    /// Name (rt-app phase name, or "main").
    pub name: String,
    /// Jobs in the phase; `None` repeats until the run ends.
    pub loops: Option<u64>,
    /// The steps of one job, in order (a final [`Step::Timer`] is the wait
    /// for the next release, see the module docs).
    pub steps: Vec<Step>,
    /// Scheduling set when the phase starts; `None` keeps what is in force.
    pub scheduling: Option<Scheduling>,
    /// CPUs for this phase; `None`: the task's.
    pub cpus: Option<Vec<u32>>,
    /// Task group (cgroup) for this phase; `None` keeps the current one.
    pub taskgroup: Option<String>,
    /// The phase's line in its source file, when known (for messages).
    #[serde(skip)]
    pub line: Option<usize>,
}

impl Phase {
    /// A phase `name` of `steps`, with no settings of its own.
    pub fn new(name: &str, loops: Option<u64>, steps: Vec<Step>) -> Phase {
        Phase {
            name: name.into(),
            loops,
            steps,
            scheduling: None,
            cpus: None,
            taskgroup: None,
            line: None,
        }
    }

    /// Phase `main` repeating forever one kernel step, released every
    /// `period_ns` by a timer of the task's own ([`OWN_TIMER`]).
    pub fn periodic(kernel: Kernel, memory_percent: u8, work: Work, period_ns: u64) -> Phase {
        Phase::new(
            "main",
            None,
            vec![
                Step::Kernel {
                    kernel,
                    memory_percent,
                    work,
                },
                Step::Timer {
                    timer: OWN_TIMER,
                    period_ns,
                },
            ],
        )
    }

    /// The steps of a job: all but the leading receives (its release) and
    /// a final timer (the wait for the next release).
    pub fn body(&self) -> &[Step] {
        let steps = &self.steps[self.inputs().count()..];
        match steps.last() {
            Some(Step::Timer { .. }) => &steps[..steps.len() - 1],
            _ => steps,
        }
    }

    /// The channels whose hand-over releases a job: the leading
    /// [`Step::Receive`]s (none for a timer- or self-released phase).
    pub fn inputs(&self) -> impl Iterator<Item = usize> + Clone + '_ {
        self.steps.iter().map_while(|s| match s {
            Step::Receive { channel } => Some(*channel),
            _ => None,
        })
    }

    /// The final timer, the release of the next job.
    pub fn release_timer(&self) -> Option<(usize, u64)> {
        match self.steps.last() {
            Some(Step::Timer { timer, period_ns }) => Some((*timer, *period_ns)),
            _ => None,
        }
    }

    /// Sum of the periods of the phase's timers (rt-app's `c_period`), if
    /// it has any; saturating (limits keep each period far below 2^64).
    pub fn timer_periods_ns(&self) -> Option<u64> {
        let periods: Vec<u64> = self.steps.iter().filter_map(Step::timer_period).collect();
        (!periods.is_empty()).then(|| periods.iter().fold(0u64, |a, p| a.saturating_add(*p)))
    }
}

/// A named mutex.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MutexSpec {
    /// Name in the source file.
    pub name: String,
    /// Priority protocol.
    pub protocol: Protocol,
}

/// A named barrier.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BarrierSpec {
    /// Name in the source file.
    pub name: String,
    /// Arrivals that release it.
    pub parties: u64,
}

/// A named timer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TimerSpec {
    /// Name (a `unique` timer gets one per thread).
    pub name: String,
    /// Absolute mode: keep the grid when late; relative: restart from now.
    pub absolute: bool,
    /// Threads using it (one: the grid is the thread's own).
    pub users: u32,
}

/// A one-packet buffer from a producer to a data-triggered consumer (a
/// task set's `[[edge]]`, demarchi Section IV: "each buffer accommodates
/// just a single data packet").
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ChannelSpec {
    /// `producer->consumer`.
    pub name: String,
    /// Bytes of one packet (the edge's buffer).
    pub bytes: u64,
    /// True: a producer waits until the previous packet was taken (the
    /// benchmark's hand-over, nothing lost); false: it replaces an untaken
    /// packet and its record counts the replaced sample lost (a periodic
    /// producer never waits for its consumer).
    pub blocking: bool,
}

/// Threads a `fork` event can start: tasks prepared before the release
/// that wait for it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ForkSpec {
    /// The task forked.
    pub task: String,
    /// The tasks (indexes into [`RunSpec::tasks`]) waiting to be forked, in order.
    pub slots: Vec<usize>,
}

/// Named objects shared by the threads of a run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Resources {
    /// Mutexes.
    pub mutexes: Vec<MutexSpec>,
    /// Condition variables (names).
    pub conds: Vec<String>,
    /// Barriers.
    pub barriers: Vec<BarrierSpec>,
    /// Timers.
    pub timers: Vec<TimerSpec>,
    /// Fork gates.
    pub forks: Vec<ForkSpec>,
    /// One-packet buffers between producers and data-triggered consumers.
    pub channels: Vec<ChannelSpec>,
}

/// The analysis' prediction for a task, shown next to what was observed.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Bound {
    /// C at the task's partitions.
    pub wcet_ns: u64,
    /// WCRT with cache interference (kim2013 Eq. 2), if it converged
    /// within D (required when read, as the other terms: `null` is
    /// "unbounded", never a key left out).
    #[serde(deserialize_with = "Option::deserialize")]
    pub wcrt_ns: Option<u64>,
    /// WCRT without cache interference (classic RTA), if within D.
    #[serde(deserialize_with = "Option::deserialize")]
    pub wcrt_nocint_ns: Option<u64>,
    /// B_i, the blocking term of the analysis (the longest
    /// critical section of a lower-priority task that can block this one,
    /// or the task's explicit `blocking`); `None` when unbounded (required
    /// when read: a missing B_i is never taken for 0).
    #[serde(deserialize_with = "Option::deserialize")]
    pub blocking_ns: Option<u64>,
    /// Where a job meets that blocking at run time, from the protocols of
    /// the set's resources.
    pub blocking_shows: BlockingShows,
}

/// Where the blocking B_i of a task shows in a run's records.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BlockingShows {
    /// The set has no resources: there is no blocking to observe.
    #[default]
    Nowhere,
    /// Every resource is `pip` or `none`: a job waits at the lock, recorded
    /// as its `blocked_ns`, comparable with B_i.
    AtLock,
    /// Every resource is `pcp` (immediate ceiling): the holder runs at the
    /// ceiling, so a job is blocked before it starts (its release
    /// latency), never at the lock.
    BeforeStart,
    /// Resources of both kinds: part shows at the lock, part as release
    /// latency.
    Both,
}

impl BlockingShows {
    /// Where the blocking of a task set with resources of these
    /// protocols shows (`pcp`: whether each is the ceiling protocol).
    pub fn of_protocols(pcp: impl IntoIterator<Item = bool>) -> BlockingShows {
        let (mut ceiling, mut at_lock) = (false, false);
        for is_pcp in pcp {
            if is_pcp {
                ceiling = true;
            } else {
                at_lock = true;
            }
        }
        match (ceiling, at_lock) {
            (false, false) => BlockingShows::Nowhere,
            (false, true) => BlockingShows::AtLock,
            (true, false) => BlockingShows::BeforeStart,
            (true, true) => BlockingShows::Both,
        }
    }

    /// In words, for the summary and the printed verdict.
    pub fn describe(self) -> &'static str {
        match self {
            BlockingShows::Nowhere => "no shared resources",
            BlockingShows::AtLock => {
                "pip/none: blocking is the wait at the lock (blocked_ns; under pip it \
                 also holds the holder's preemptions by tasks above this one)"
            }
            BlockingShows::BeforeStart => {
                "pcp: blocking shows as release latency before the job starts, never at the \
                 lock (blocked_ns stays 0)"
            }
            BlockingShows::Both => {
                "pip/none resources block at the lock (blocked_ns); pcp ones show as release \
                 latency before the job starts"
            }
        }
    }
}

/// One thread.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TaskSpec {
    /// Unique name.
    pub name: String,
    /// CPUs the thread is pinned to (`None`: not pinned).
    pub cpus: Option<Vec<u32>>,
    /// Policy, priority or nice, deadline reservation, clamps.
    pub scheduling: Scheduling,
    /// Relative deadline of each job (`None`: the timer periods, or no deadline).
    pub deadline_ns: Option<u64>,
    /// First release after the common release (rt-app `delay`; 0 for
    /// plans, which release every task together as kim2013 Section IV does).
    pub offset_ns: u64,
    /// Release jitter: each job starts a seeded random offset in
    /// `[0, jitter_ns]` after its release (recorded per job).
    pub jitter_ns: u64,
    /// The phases, run in order.
    pub phases: Vec<Phase>,
    /// Passes over the phase sequence; `None` repeats until the run ends.
    pub loops: Option<u64>,
    /// Bytes of memory the kernels (and `mem`/`iorun`) touch.
    pub working_set: u64,
    /// Cache partitions S(i) the working set should come from (1-based).
    pub partitions: Vec<u32>,
    /// Task group (cgroup) from the start.
    pub taskgroup: Option<String>,
    /// Set for a thread that starts only when fork gate `n` forks it.
    pub forked_by: Option<usize>,
    /// The analysis' bound, when the spec came from an analysed task set.
    pub bound: Option<Bound>,
    /// The program whose jobs a [`Step::Program`] asks for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub program: Option<ProgramSpec>,
    /// The task's line in its source file, when known (for messages).
    #[serde(skip)]
    pub line: Option<usize>,
}

/// A program of the user's as a task's job body: started once before the
/// first release, pinned and at the task's scheduling.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ProgramSpec {
    /// The program (its path, resolved) and its arguments.
    pub command: Vec<String>,
    /// How its jobs are asked for.
    pub protocol: tinct_core::model::JobProtocol,
    /// Where its stderr goes (`None`: nowhere); set by the run directory.
    #[serde(skip)]
    pub stderr: Option<std::path::PathBuf>,
    /// Where the shim writes its heap's frame reports (`<path>.<pid>`);
    /// set by the run directory, else a private temporary directory.
    #[serde(skip)]
    pub frames: Option<std::path::PathBuf>,
    /// Its anonymous mappings coloured too (`body.mmap`).
    pub mmap: bool,
    /// Variables it is started with beside tinct's own environment (the
    /// shim and its settings: [`crate::program_heap::ProgramHeap::env`]).
    #[serde(skip)]
    pub env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
}

impl TaskSpec {
    /// The scheduling and CPUs in force in each phase, in order: a phase's
    /// scheduling stays in force in the phases after it until another sets
    /// one (rt-app), its CPUs only in the phase (else the task's).
    pub fn phase_placements(&self) -> Vec<(Scheduling, Option<&[u32]>)> {
        let mut in_force = self.scheduling;
        self.phases
            .iter()
            .map(|phase| {
                in_force = phase.scheduling.unwrap_or(in_force);
                (in_force, phase.cpus.as_deref().or(self.cpus.as_deref()))
            })
            .collect()
    }

    /// Whether the task may run under SCHED_DEADLINE on `cpu` in some
    /// phase: pinned to it alone, or with more CPUs (a deadline thread not
    /// pinned to one CPU is given its whole root domain).
    pub fn deadline_on(&self, cpu: u32) -> bool {
        self.phase_placements()
            .into_iter()
            .any(|(scheduling, cpus)| {
                scheduling.policy == Policy::Deadline
                    && match cpus {
                        Some(&[only]) => only == cpu,
                        _ => true,
                    }
            })
    }

    /// A task `name` under `scheduling` running `phases`, with everything
    /// else at its default: unpinned, the deadlines its phases give, no
    /// offset or jitter, unbounded loops, no working set or partitions, no
    /// task group, not forked, no analysis bound, no source line.
    pub fn new(name: &str, scheduling: Scheduling, phases: Vec<Phase>) -> TaskSpec {
        TaskSpec {
            name: name.into(),
            cpus: None,
            scheduling,
            deadline_ns: None,
            offset_ns: 0,
            jitter_ns: 0,
            phases,
            loops: None,
            working_set: 0,
            partitions: Vec::new(),
            taskgroup: None,
            forked_by: None,
            bound: None,
            program: None,
            line: None,
        }
    }

    /// Relative deadline of jobs of `phase`: the task's, else the sum of
    /// the phase's timer periods.
    pub fn deadline_of(&self, phase: &Phase) -> Option<u64> {
        self.deadline_ns.or(phase.timer_periods_ns())
    }

    /// The kernel of the first kernel step (what the working set is prepared for).
    pub fn kernel(&self) -> Option<Kernel> {
        self.phases
            .iter()
            .flat_map(|p| &p.steps)
            .find_map(|s| match s {
                Step::Kernel { kernel, .. } => Some(*kernel),
                _ => None,
            })
    }

    /// True if any phase of the task (or the task) uses a real-time policy.
    pub fn needs_rt(&self) -> bool {
        self.scheduling.policy.is_realtime()
            || self
                .phases
                .iter()
                .filter_map(|p| p.scheduling)
                .any(|s| s.policy.is_realtime() || s.nice < 0)
            || self.scheduling.nice < 0
    }

    /// An upper estimate of the jobs the task can release in `duration_ns`,
    /// used to size its log (each job takes at least `min_job_ns`).
    pub fn max_jobs(&self, duration_ns: u64, min_job_ns: u64) -> u64 {
        let mut total = 0u64;
        for phase in &self.phases {
            let step_time: u64 = phase
                .steps
                .iter()
                .map(|s| match s {
                    Step::Busy { duration_ns } | Step::Sleep { duration_ns } => *duration_ns,
                    Step::Timer { period_ns, .. } => *period_ns,
                    _ => 0,
                })
                // Saturating: a longer job only makes the estimate smaller.
                .fold(0u64, u64::saturating_add);
            let per_job = step_time.max(min_job_ns).max(1);
            // A relative timer restarts a late job at once, and a shared
            // timer's other users take ticks: count one extra release per
            // period as a margin.
            let by_time = (duration_ns / per_job).saturating_mul(2).saturating_add(2);
            let by_loops = match (phase.loops, self.loops) {
                (Some(jobs), Some(passes)) => Some(jobs.saturating_mul(passes)),
                _ => None,
            };
            total = total.saturating_add(by_loops.map_or(by_time, |l| l.min(by_time)));
        }
        total.saturating_add(self.phases.len() as u64)
    }
}

/// Which jobs the watchdog stops when they overrun.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WatchdogMode {
    /// No overrun stops (the run still ends at its duration).
    Off,
    /// Jobs running under SCHED_FIFO or SCHED_RR: the ones that can starve
    /// a CPU. SCHED_DEADLINE jobs are not guarded: the kernel's constant
    /// bandwidth server throttles a thread at its runtime every period, so
    /// an overloaded reservation runs late but cannot run away.
    #[default]
    Realtime,
    /// Every job (SCHED_DEADLINE and SCHED_OTHER included).
    All,
}

impl std::str::FromStr for WatchdogMode {
    type Err = String;

    /// `off`, `rt` (or `realtime`) or `all`.
    fn from_str(text: &str) -> Result<WatchdogMode, String> {
        match text {
            "off" => Ok(WatchdogMode::Off),
            "rt" | "realtime" => Ok(WatchdogMode::Realtime),
            "all" => Ok(WatchdogMode::All),
            other => Err(format!("expected off, rt or all, found {other:?}")),
        }
    }
}

impl WatchdogMode {
    /// True if a job running under `policy` (as the kernel reports it in
    /// force) is guarded.
    pub fn guards(self, policy: Policy) -> bool {
        match self {
            WatchdogMode::Off => false,
            WatchdogMode::Realtime => matches!(policy, Policy::Fifo(_) | Policy::RoundRobin(_)),
            WatchdogMode::All => true,
        }
    }
}

/// Global settings of a run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunSpec {
    /// Where it came from (file name).
    pub source: String,
    /// The threads.
    pub tasks: Vec<TaskSpec>,
    /// Named objects shared by the threads.
    pub resources: Resources,
    /// Run length: no job is released at or after `start + duration`.
    pub duration_ns: u64,
    /// `mlockall` the process.
    pub lock_memory: bool,
    /// N_P of the platform, when known (partitions → page colors).
    pub platform_partitions: Option<u32>,
    /// The platform's page-colour bits (a task set's `[platform]
    /// color_bits`), overriding the machine's colour rule; `None`: the
    /// machine's rule (see [`crate::memory::ColorLayout`]).
    pub color_bits: Option<Vec<u32>>,
    /// `tinct run --color-bits` as given (e.g. `12-16`): before the task
    /// set's and the machine's (`tinct_sys::color_source`).
    pub color_bits_flag: Option<String>,
    /// CPU to calibrate on for rt-app `calibration = "CPUn"`; `None`: each
    /// task calibrates on its own CPU.
    pub calibration_cpu: Option<u32>,
    /// Fixed nanoseconds per compute iteration (rt-app integer `calibration`).
    pub compute_ns_per_iteration: Option<f64>,
    /// File `iorun` writes to (rt-app `io_device`).
    pub io_device: String,
    /// The line of `io_device` in the source file, when known (for messages).
    #[serde(skip)]
    pub io_device_line: Option<usize>,
    /// Seed of the release jitter.
    pub seed: u64,
    /// Write rt-app-style per-thread logs `<basename>-<thread>.log` in the
    /// run directory (rt-app `log_basename`).
    pub rtapp_log: Option<String>,
    /// Where data-triggered tasks run (see [`crate::pipeline`]).
    pub placement: crate::pipeline::Placement,
    /// The LD_PRELOAD shim that colours a program body's heap
    /// ([`crate::program_heap`]), found by the caller (the CLI's one
    /// lookup); needed only by a program task with partitions.
    #[serde(skip)]
    pub preload_library: Option<std::path::PathBuf>,
}

impl RunSpec {
    /// A spec of `tasks` from `source` with every other setting at its
    /// default (memory locked, `/dev/null` for I/O, seed 0); every
    /// [`OWN_TIMER`] becomes an absolute timer of its task's own.
    pub fn new(source: &str, mut tasks: Vec<TaskSpec>, duration_ns: u64) -> RunSpec {
        let mut resources = Resources::default();
        for task in &mut tasks {
            let mut own = None;
            for step in task.phases.iter_mut().flat_map(|p| &mut p.steps) {
                if let Step::Timer { timer, .. } = step
                    && *timer == OWN_TIMER
                {
                    *timer = *own.get_or_insert_with(|| {
                        resources.timers.push(TimerSpec {
                            name: format!("{}.timer", task.name),
                            absolute: true,
                            users: 1,
                        });
                        resources.timers.len() - 1
                    });
                }
            }
        }
        RunSpec {
            source: source.into(),
            tasks,
            resources,
            duration_ns,
            lock_memory: true,
            platform_partitions: None,
            color_bits: None,
            color_bits_flag: None,
            calibration_cpu: None,
            compute_ns_per_iteration: None,
            io_device: "/dev/null".into(),
            io_device_line: None,
            seed: 0,
            rtapp_log: None,
            placement: crate::pipeline::Placement::Pinned,
            preload_library: None,
        }
    }

    /// True if a program body's heap is to be coloured (a program task
    /// with partitions): the run needs [`RunSpec::preload_library`].
    pub fn colours_programs(&self) -> bool {
        self.tasks
            .iter()
            .any(|t| t.program.is_some() && !t.partitions.is_empty())
    }

    /// The same spec with every task and phase under SCHED_OTHER (`--no-rt`).
    pub fn without_rt(mut self) -> RunSpec {
        for t in &mut self.tasks {
            t.scheduling = Scheduling::other();
            for p in &mut t.phases {
                p.scheduling = None;
            }
        }
        self
    }

    /// Removes every utilization clamp (for a kernel without them); true
    /// if there were any.
    pub fn without_util_clamps(&mut self) -> bool {
        let mut removed = false;
        for task in &mut self.tasks {
            let all = std::iter::once(&mut task.scheduling)
                .chain(task.phases.iter_mut().filter_map(|p| p.scheduling.as_mut()));
            for s in all {
                removed |= s.util_min.is_some() || s.util_max.is_some();
                s.util_min = None;
                s.util_max = None;
            }
        }
        removed
    }

    /// True if some task asks for a real-time policy or a negative nice.
    pub fn needs_rt(&self) -> bool {
        self.tasks.iter().any(TaskSpec::needs_rt)
    }

    /// The CPUs the run's threads may run on, sorted: the CPUs tasks and
    /// phases are pinned to, and every CPU of `allowed` if some task or
    /// phase is not pinned.
    pub fn cpus_used(&self, allowed: &[u32]) -> Vec<u32> {
        let mut cpus = Vec::new();
        for task in &self.tasks {
            let phases = task
                .phases
                .iter()
                .map(|p| p.cpus.as_ref().or(task.cpus.as_ref()));
            for pinned in phases.chain([task.cpus.as_ref()]) {
                match pinned {
                    Some(list) => cpus.extend(list.iter().copied()),
                    None => cpus.extend(allowed.iter().copied()),
                }
            }
        }
        cpus.sort_unstable();
        cpus.dedup();
        cpus
    }

    /// Every task group named by a task or phase, sorted, without repeats.
    pub fn taskgroups(&self) -> Vec<String> {
        let mut groups: Vec<String> = self
            .tasks
            .iter()
            .flat_map(|t| {
                t.taskgroup
                    .iter()
                    .chain(t.phases.iter().filter_map(|p| p.taskgroup.as_ref()))
            })
            .cloned()
            .collect();
        groups.sort();
        groups.dedup();
        groups
    }

    /// The CPUs that need a root domain of their own: each the one CPU of
    /// a task (or phase) that runs under SCHED_DEADLINE pinned to it, as a
    /// partitioned EDF plan does (see `tinct_sys::dl_partitions`). A
    /// deadline thread allowed more CPUs runs in the machine's root domain.
    pub fn deadline_cpus(&self) -> Vec<u32> {
        let mut cpus: Vec<u32> = self
            .tasks
            .iter()
            .flat_map(TaskSpec::phase_placements)
            .filter_map(|(scheduling, cpus)| match cpus {
                Some(&[cpu]) if scheduling.policy == Policy::Deadline => Some(cpu),
                _ => None,
            })
            .collect();
        cpus.sort_unstable();
        cpus.dedup();
        cpus
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_watchdog_guards_fifo_and_rr_but_not_deadline_or_other() {
        let guarded = |mode: WatchdogMode| {
            [
                Policy::Fifo(10),
                Policy::RoundRobin(10),
                Policy::Deadline,
                Policy::Other,
                Policy::Batch,
            ]
            .map(|p| mode.guards(p))
        };
        assert_eq!(
            guarded(WatchdogMode::default()),
            [true, true, false, false, false]
        );
        assert_eq!(guarded(WatchdogMode::All), [true; 5]);
        assert_eq!(guarded(WatchdogMode::Off), [false; 5]);
    }
}
