//! The task model of kim2013 Section II-C.
//!
//! A platform {N_C cores, N_P cache partitions, M_total memory, Δ refill time}
//! and periodic tasks τ_i = {C_i^p, T_i, D_i, M_i}, each with an optional
//! priority, core and partition set S(i). Values here are validated: a
//! [`TaskSet`] can only be built through [`crate::format`], which checks
//! every rule and names the file, line and field of a violation.
//!
//! Beyond kim2013: shared resources used in critical sections, release
//! jitter J_i and an explicit blocking term B_i, the platform's overheads
//! (context switch δ, release latency, timer tick), and an affinity graph
//! of producer → consumer edges with data-triggered tasks and the cache
//! domains placement works with (demarchi).

use crate::partitions::MAX_PARTITIONS;
use crate::units::{Bytes, Nanos};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

pub use crate::partitions::PartitionSet;

/// The machine as the analysis sees it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Platform {
    /// N_C: number of cores, numbered from 0.
    pub cores: u32,
    /// N_P: number of cache partitions (groups of page colors), numbered 1..=N_P.
    pub partitions: u32,
    /// M_total: memory divided into N_P memory partitions of M_total/N_P each.
    pub memory: Bytes,
    /// Δ: time to refill one cache partition.
    pub refill: Nanos,
    /// Physical address bits of the page colour (lowest first), when the
    /// file overrides the machine's rule (`[platform] color_bits`): 2^bits
    /// colours, split over the N_P partitions.
    pub color_bits: Option<Vec<u32>>,
    /// The DRAM mapping file named by `[platform] dram_map`, and what it says.
    pub dram_map: Option<PlatformDramMap>,
    /// The overheads the analysis charges (all zero when the file gives none).
    pub overheads: Overheads,
    /// Groups of cores that share their lowest cache level (`None`: every
    /// core its own domain); see [`Platform::cache_domains`].
    pub cache_domains: Option<Vec<Vec<u32>>>,
}

/// `[platform] dram_map = "FILE"`: the file as written (relative to the
/// task set) and the mapping read from it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PlatformDramMap {
    /// The path as the task set wrote it.
    pub path: String,
    /// The mapping.
    #[serde(skip)]
    pub map: crate::dram_map::DramMap,
}

/// The platform overheads the analysis charges (`[platform] overheads`).
///
/// - `context_switch` δ: every job pays two switches, in and out:
///   C' = C + 2δ (sebek2002). A preemption adds no switch of its own: it is
///   the arrival of a higher-priority job, whose two switches (to it and
///   back) that job already pays.
/// - `release_latency`: the delay from a job's timer to its thread running
///   on this machine, added to every task's release jitter J_i.
/// - `tick`: the cost of one timer interrupt. Every release of every task of
///   a core is one (its timer fires on that core), so each task on the core
///   interferes with ⌈(w + J_k)/T_k⌉ interrupts in a window w, lower-priority
///   tasks and the task itself included.
/// - `tick_period`: the period of the scheduler tick; when given, the tick
///   interferes with every task as a top-priority task of that period and
///   cost `tick` (Burns, Tindell and Wellings 1995).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Overheads {
    /// δ, one context switch.
    pub context_switch: Nanos,
    /// The release latency of this machine (added to every J_i).
    pub release_latency: Nanos,
    /// One timer interrupt.
    pub tick: Nanos,
    /// The scheduler tick's period, if it interferes periodically.
    pub tick_period: Option<Nanos>,
}

impl Overheads {
    /// No overheads at all (the analysis of kim2013 and of the classic RTA).
    pub const NONE: Overheads = Overheads {
        context_switch: Nanos::ZERO,
        release_latency: Nanos::ZERO,
        tick: Nanos::ZERO,
        tick_period: None,
    };

    /// True when nothing is charged.
    pub fn is_none(&self) -> bool {
        *self == Overheads::NONE
    }
}

impl Platform {
    /// Size of one memory partition, M_total / N_P (rounded down).
    pub fn partition_memory(&self) -> Bytes {
        Bytes(self.memory.0 / u64::from(self.partitions))
    }

    /// The least number of partitions whose memory partitions hold `memory`:
    /// ⌈M_i / (M_total / N_P)⌉, computed exactly as ⌈M_i · N_P / M_total⌉.
    pub fn min_partitions_for(&self, memory: Bytes) -> u32 {
        let needed = u128::from(memory.0) * u128::from(self.partitions);
        let whole = needed.div_ceil(u128::from(self.memory.0.max(1)));
        u32::try_from(whole).unwrap_or(u32::MAX)
    }

    /// The cache domains: groups of cores sharing their lowest cache level,
    /// as the file gives them, or every core its own domain.
    pub fn cache_domains(&self) -> Vec<Vec<u32>> {
        match &self.cache_domains {
            Some(domains) => domains.clone(),
            None => (0..self.cores).map(|core| vec![core]).collect(),
        }
    }

    /// The domain of every core (index into [`Platform::cache_domains`]).
    pub fn domain_of_cores(&self) -> Vec<usize> {
        let mut domain = vec![0; self.cores as usize];
        for (d, cores) in self.cache_domains().iter().enumerate() {
            for &core in cores {
                if let Some(slot) = domain.get_mut(core as usize) {
                    *slot = d;
                }
            }
        }
        domain
    }
}

/// C_i^p: worst-case execution time as a function of the number of cache
/// partitions p the task uses.
///
/// Files may list it sparsely. A p that is not listed takes the value of the
/// largest listed p below it (safe, because C^p is non-increasing in p); a p
/// below the first listed one is infeasible for the task.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WcetTable {
    listed: BTreeMap<u32, Nanos>,
}

impl WcetTable {
    /// A table from listed points. Validation (non-increasing, p within
    /// 1..=N_P, at least one point) is done by [`crate::format`].
    pub fn new(listed: BTreeMap<u32, Nanos>) -> WcetTable {
        WcetTable { listed }
    }

    /// A cache-insensitive task: the same WCET for every p ≥ 1.
    pub fn constant(wcet: Nanos) -> WcetTable {
        WcetTable {
            listed: BTreeMap::from([(1, wcet)]),
        }
    }

    /// C^p by the sparse rule; `None` if p is below the first listed point.
    pub fn at(&self, p: u32) -> Option<Nanos> {
        self.listed.range(..=p).next_back().map(|(_, &c)| c)
    }

    /// The smallest p with a value.
    pub fn first_p(&self) -> u32 {
        self.listed.keys().next().copied().unwrap_or(1)
    }

    /// The largest value: C at the first listed p (the table never increases).
    pub fn worst(&self) -> Nanos {
        self.listed.values().next().copied().unwrap_or(Nanos::ZERO)
    }

    /// The points as listed in the file.
    pub fn listed(&self) -> &BTreeMap<u32, Nanos> {
        &self.listed
    }
}

/// The kind of work a job body does when `tinct run` executes the task.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kernel {
    /// Pointer chase over a random cyclic permutation of the working set.
    Chase,
    /// Sequential read of the working set.
    Read,
    /// Sequential write of the working set.
    Write,
    /// Sequential read-modify-write of the working set.
    Rmw,
    /// Pure computation, no memory beyond registers.
    Compute,
    /// Alternating compute and pointer-chase phases (mimics the paper's PARSEC tasks).
    Mixed,
}

impl Kernel {
    /// All kernels with their file names.
    pub const ALL: [(&'static str, Kernel); 6] = [
        ("chase", Kernel::Chase),
        ("read", Kernel::Read),
        ("write", Kernel::Write),
        ("rmw", Kernel::Rmw),
        ("compute", Kernel::Compute),
        ("mixed", Kernel::Mixed),
    ];

    /// The name used in files.
    pub fn name(self) -> &'static str {
        Kernel::ALL
            .iter()
            .find(|(_, k)| *k == self)
            .map(|(n, _)| *n)
            .unwrap_or("?")
    }
}

/// How much work one job does.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Work {
    /// A target execution time, calibrated on the machine before the run.
    Target(Nanos),
    /// A fixed number of kernel iterations (memory accesses or compute steps).
    Iterations(u64),
}

/// What a job of the task does when `tinct run` executes it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Body {
    /// The kernel.
    pub kernel: Kernel,
    /// The memory the kernel touches, allocated from the task's partitions.
    /// Defaults to the task's memory requirement M_i.
    pub working_set: Option<Bytes>,
    /// How much work per job. Defaults to a calibrated target equal to the
    /// task's C at its number of partitions.
    pub work: Option<Work>,
    /// For `mixed`: the share of each job spent in the memory phase, in percent.
    pub memory_percent: Option<u8>,
}

/// What a job of the task does when it is a program of the user's: tinct
/// starts the program once before the first release and asks it for one
/// job per release through [`JobProtocol`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ProgramBody {
    /// The program and its arguments, as written (a relative path with a
    /// `/` is resolved against the task-set file's directory by the run).
    pub command: Vec<String>,
    /// How a job is asked for and reported done.
    pub protocol: JobProtocol,
    /// Its anonymous `mmap` coloured too, not only its heap (the shim's
    /// `TINCT_MMAP`).
    pub mmap: bool,
}

/// How tinct and a program body agree on jobs.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JobProtocol {
    /// One line on the program's stdin per release; the program does the
    /// job and writes one line on its stdout; end of file on stdin asks it
    /// to exit. Any language, no library.
    Lines,
    /// A page shared with tinct and one futex word per direction: the
    /// program blocks in `tinct_job_wait()` until the release and ends the
    /// job with `tinct_job_done()` (the tinct-job crate: a C header and
    /// library, a Rust API). No pipe, no line: the lower-overhead one.
    Futex,
}

impl JobProtocol {
    /// Every protocol with its name in files.
    pub const ALL: [(&'static str, JobProtocol); 2] =
        [("lines", JobProtocol::Lines), ("futex", JobProtocol::Futex)];

    /// The name in files.
    pub fn name(self) -> &'static str {
        match self {
            JobProtocol::Lines => "lines",
            JobProtocol::Futex => "futex",
        }
    }
}

/// How a resource's mutex is locked.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// The immediate priority ceiling protocol: a POSIX mutex with
    /// PTHREAD_PRIO_PROTECT at the resource's ceiling.
    Pcp,
    /// Priority inheritance: PTHREAD_PRIO_INHERIT.
    Pip,
    /// A plain mutex: priority inversion is not bounded by any protocol.
    None,
}

impl Protocol {
    /// All protocols with their file names.
    pub const ALL: [(&'static str, Protocol); 3] = [
        ("pcp", Protocol::Pcp),
        ("pip", Protocol::Pip),
        ("none", Protocol::None),
    ];

    /// The name used in files.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Pcp => "pcp",
            Protocol::Pip => "pip",
            Protocol::None => "none",
        }
    }
}

/// A shared resource (`[[resource]]`): a mutex tasks lock in critical sections.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Resource {
    /// Unique name.
    pub name: String,
    /// Its locking protocol.
    pub protocol: Protocol,
}

/// One critical section of a job: the resource held and for how long at
/// most. Sections are not nested; their order within a job is the
/// runtime's business, the analysis needs only their lengths.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CriticalSection {
    /// Index of the resource in [`TaskSet::resources`].
    pub resource: usize,
    /// The section's worst-case length (part of C).
    pub length: Nanos,
}

/// What releases a task's jobs.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Trigger {
    /// A periodic timer (the default).
    #[default]
    Timer,
    /// The arrival of its inputs: a job is released when every producer with
    /// an edge to the task has handed over its data. The period is then the
    /// producers' and the release jitter is inherited from them.
    Data,
}

/// The Linux scheduling policy a task's thread runs under (the file's
/// `policy`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskPolicy {
    /// SCHED_FIFO at the task's priority (the default): the fixed-priority
    /// analysis (kim2013 Eq. 2).
    #[default]
    Fifo,
    /// SCHED_DEADLINE: a reservation (runtime, deadline, period) the kernel
    /// schedules by earliest deadline (EDF + CBS), above every SCHED_FIFO
    /// thread of its CPU; the processor-demand analysis
    /// ([`crate::analysis::edf`]).
    Deadline,
}

impl TaskPolicy {
    /// The name a file gives the policy: `fifo` or `deadline`.
    pub fn name(self) -> &'static str {
        match self {
            TaskPolicy::Fifo => "fifo",
            TaskPolicy::Deadline => "deadline",
        }
    }
}

/// A producer → consumer edge of the affinity graph (`[[edge]]`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Edge {
    /// Index of the producer in [`TaskSet::tasks`].
    pub from: usize,
    /// Index of the consumer.
    pub to: usize,
    /// The bytes handed over per job (what crosses cache domains when the
    /// two run in different ones).
    pub buffer: Bytes,
}

/// One periodic task τ_i.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Task {
    /// Unique name.
    pub name: String,
    /// T_i.
    pub period: Nanos,
    /// D_i ≤ T_i (constrained deadline); defaults to the period.
    pub deadline: Nanos,
    /// M_i: memory requirement.
    pub memory: Bytes,
    /// C_i^p.
    pub wcet: WcetTable,
    /// Priority as written in the file (1 is the highest), if any.
    pub priority: Option<u32>,
    /// Core the task is assigned to (from 0), if any.
    pub core: Option<u32>,
    /// S(i): the cache partitions the task uses, if assigned.
    pub partitions: Option<PartitionSet>,
    /// What a job does under `tinct run`, if described as one of tinct's
    /// kernels.
    pub body: Option<Body>,
    /// What a job does when it is a program of the user's (the file's
    /// `body = { command = [...] }`); never together with `body`.
    pub program: Option<ProgramBody>,
    /// The critical sections of one job, in file order (Σ lengths ≤ C^p at
    /// every p).
    pub critical_sections: Vec<CriticalSection>,
    /// J_i, the release jitter the file declares (the platform's release
    /// latency and, for a data-triggered task, the jitter inherited from its
    /// producers are added by the analysis).
    pub jitter: Nanos,
    /// B_i given explicitly: overrides the blocking derived from resources.
    pub blocking: Option<Nanos>,
    /// What releases the task's jobs.
    pub trigger: Trigger,
    /// The scheduling policy of the task's thread.
    pub policy: TaskPolicy,
    /// Q, the SCHED_DEADLINE runtime the file asks for (a `deadline` task
    /// only); `None`: the analysis derives it from C and the costs every
    /// job pays ([`crate::analysis::deadline`]).
    pub runtime: Option<Nanos>,
}

impl Task {
    /// A timer-triggered task with D = T and nothing else assigned or
    /// declared (no priority, core, partitions, body, critical sections,
    /// jitter or explicit blocking).
    pub fn periodic(name: String, period: Nanos, memory: Bytes, wcet: WcetTable) -> Task {
        Task {
            name,
            period,
            deadline: period,
            memory,
            wcet,
            priority: None,
            core: None,
            partitions: None,
            body: None,
            program: None,
            critical_sections: Vec::new(),
            jitter: Nanos::ZERO,
            blocking: None,
            trigger: Trigger::Timer,
            policy: TaskPolicy::Fifo,
            runtime: None,
        }
    }

    /// Whether the task is a SCHED_DEADLINE reservation.
    pub fn is_deadline(&self) -> bool {
        self.policy == TaskPolicy::Deadline
    }

    /// The WCET the analysis uses: C^{|S(i)|} when S(i) is assigned,
    /// otherwise the worst listed value (no partition is reserved, so no
    /// benefit from the cache may be assumed).
    pub fn effective_wcet(&self) -> Option<Nanos> {
        match &self.partitions {
            Some(s) => self.wcet.at(s.len()),
            None => Some(self.wcet.worst()),
        }
    }

    /// S(i) as the cache analysis charges it (kim2013 Eq. 2's ω and γ, the
    /// blocking terms and the check across cores): the task's `partitions`,
    /// or, when it has none and the platform's Δ is above zero, every
    /// partition 1..=N_P. A task without partitions runs in memory of every
    /// colour, so it can occupy and evict any partition; charging it for
    /// none would make "no cache information" mean "no cache cost". With
    /// Δ = 0 nothing is charged for the cache and S(i) stays as given.
    pub fn charged_partitions(&self, platform: &Platform) -> PartitionSet {
        match self.partitions {
            Some(s) => s,
            None if platform.refill.0 > 0 && platform.partitions > 0 => {
                PartitionSet::range(1, platform.partitions.min(MAX_PARTITIONS))
            }
            None => PartitionSet::EMPTY,
        }
    }
}

/// A validated task set: the platform and its tasks in file order.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TaskSet {
    /// The platform.
    pub platform: Platform,
    /// The tasks, in file order.
    pub tasks: Vec<Task>,
    /// The shared resources, in file order.
    pub resources: Vec<Resource>,
    /// The affinity graph's edges, in file order.
    pub edges: Vec<Edge>,
    /// The line of each task's table in the file it was read from (empty for
    /// a set built in code), so later stages can still point at the source.
    #[serde(skip)]
    pub task_lines: Vec<usize>,
    /// The line of each task's `period` key (its table's when it has none),
    /// empty for a set built in code: `tinct run` refuses a period beyond
    /// its limits there.
    #[serde(skip)]
    pub period_lines: Vec<usize>,
}

impl TaskSet {
    /// A set of independent tasks: no resources, no edges, no source lines.
    pub fn new(platform: Platform, tasks: Vec<Task>) -> TaskSet {
        TaskSet {
            platform,
            tasks,
            resources: Vec::new(),
            edges: Vec::new(),
            task_lines: Vec::new(),
            period_lines: Vec::new(),
        }
    }

    /// The index of the task named `name`.
    pub fn task_index(&self, name: &str) -> Option<usize> {
        self.tasks.iter().position(|t| t.name == name)
    }

    /// Effective priority rank of every task (1 is the highest), in file order.
    ///
    /// Explicit priorities are used as written. Without them, priorities are
    /// deadline-monotonic with ties broken by file order, numbered 1..=n.
    /// SCHED_DEADLINE tasks (which have no priority) rank above every
    /// SCHED_FIFO task, as the kernel runs them: 0 beside explicit
    /// priorities, the first ranks otherwise.
    pub fn priorities(&self) -> Vec<u32> {
        let fifo = |t: &&Task| !t.is_deadline();
        if self.tasks.iter().filter(fifo).all(|t| t.priority.is_some()) {
            return self.tasks.iter().map(|t| t.priority.unwrap_or(0)).collect();
        }
        let keys: Vec<(bool, Nanos)> = self
            .tasks
            .iter()
            .map(|t| (!t.is_deadline(), t.deadline))
            .collect();
        dense_ranks(&keys)
    }

    /// Unique priority ranks 1..=n (1 the highest), in file order: the
    /// effective priorities of [`TaskSet::priorities`] with ties (explicit
    /// priorities may repeat across cores) broken by file order. The one
    /// total order every stage uses: the analysis orders each core by it,
    /// the allocators place tasks by it and a plan writes it, and `tinct run`
    /// maps it onto SCHED_FIFO priorities.
    pub fn ranks(&self) -> Vec<u32> {
        dense_ranks(&self.priorities())
    }
}

/// The rank (1-based) of every key in increasing order, ties broken by
/// position.
fn dense_ranks<K: Ord + Copy>(keys: &[K]) -> Vec<u32> {
    let mut order: Vec<usize> = (0..keys.len()).collect();
    order.sort_by_key(|&i| (keys[i], i));
    let mut ranks = vec![0; keys.len()];
    for (rank, &i) in order.iter().enumerate() {
        ranks[i] = u32::try_from(rank + 1).unwrap_or(u32::MAX);
    }
    ranks
}

impl fmt::Display for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
