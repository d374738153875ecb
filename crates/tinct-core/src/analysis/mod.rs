//! Cache-aware schedulability analysis of a task set whose tasks have cores
//! (and, usually, partition sets S(i)) assigned: kim2013 Section III-B/C.
//!
//! - [`rta`]: Eq. (2), response times with cache warm-up delay ω and
//!   cache-related preemption delay γ; with Δ = 0 the classic test of
//!   Joseph and Pandya (the paper's "NoCInt").
//! - [`utilization`]: Eq. (1), per-core utilization with ω and γ against
//!   the Liu-Layland bound (a sufficient test, reported alongside).
//! - [`memory`]: Eq. (3), memory feasibility of shared partitions;
//! - [`blocking`]: B_i from shared resources (priority ceiling, inheritance);
//! - `holistic`: the jitter data-triggered tasks inherit, iterated to a
//!   fixed point over all cores;
//! - [`chains`]: end-to-end latency bounds of the affinity graph's chains;
//! - [`edf`]: the exact processor-demand test of one core under EDF;
//! - [`edf_response`]: per-task response bounds under EDF (Spuri 1996);
//! - [`deadline`]: a core's SCHED_DEADLINE tasks (`policy = "deadline"`)
//!   under that test with the cache terms and overheads, and what they
//!   leave to the core's SCHED_FIFO tasks.
//!
//! The recurrence includes release jitter J_i, blocking B_i and the
//! platform's overheads (`[platform] overheads`): C' = C + 2δ per job
//! (sebek2002), the release latency added to every J_i, each release's
//! timer interrupt, and the scheduler tick as a top-priority task.
//!
//! A core is schedulable when every task meets its deadline by Eq. (2) and
//! every partition it uses satisfies Eq. (3); the set is schedulable when
//! every core is and no partition is used on two cores (cache reservation
//! gives each core its own partitions; sharing across cores is not bounded
//! by this analysis).
//!
//! With Δ > 0, a task without `partitions` is charged every partition
//! ([`crate::model::Task::charged_partitions`]): it runs in memory of every
//! colour, so on its core ω and γ count all N_P partitions, and beside a
//! task on another core the set cannot be schedulable. "No cache
//! information" never means "no cache cost"; only Δ = 0 drops the terms.

pub mod blocking;
pub mod chains;
pub mod deadline;
pub mod edf;
pub mod edf_response;
mod holistic;
mod input_error;
pub mod memory;
pub mod rta;
pub mod utilization;

pub use chains::ChainReport;
pub use deadline::{EdfReport, Overload};
pub use holistic::{MAX_ROUNDS, max_rounds};

use crate::model::{TaskPolicy, TaskSet, Trigger};
use crate::partitions::PartitionSet;
use memory::MemoryDemand;
use rta::ResponseTime;
use serde::{Deserialize, Serialize};
use std::sync::atomic::AtomicBool;

/// The analysis of one task.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskReport {
    /// Task name.
    pub name: String,
    /// Assigned core.
    pub core: u32,
    /// Effective priority (1 is the highest).
    pub priority: u32,
    /// S(i), empty when not assigned.
    pub partitions: Vec<u32>,
    /// |S(i)| as the cache terms charge it
    /// ([`crate::model::Task::charged_partitions`]): N_P for a task without
    /// partitions when Δ > 0.
    pub partition_count: u32,
    /// T_i.
    pub period_ns: u64,
    /// D_i.
    pub deadline_ns: u64,
    /// C_i^{|S(i)|} (or the worst listed C without S(i)).
    pub wcet_ns: u64,
    /// The overhead charged per job on top of C: 2δ (sebek2002).
    pub overhead_ns: u64,
    /// What releases the task: "timer" or "data".
    pub trigger: Trigger,
    /// J_i used (declared + the platform's release latency + inherited),
    /// ns; `null` when unbounded (a producer misses its deadline).
    // Required when read: a missing term is not "unbounded" (`null`).
    #[serde(deserialize_with = "Option::deserialize")]
    pub jitter_ns: Option<u64>,
    /// The part of J_i inherited from the task's producers (data-triggered);
    /// `null` when unbounded.
    // Required when read: a missing term is not "unbounded" (`null`).
    #[serde(deserialize_with = "Option::deserialize")]
    pub jitter_inherited_ns: Option<u64>,
    /// B_i used, ns; `null` when unbounded.
    // Required when read: a missing term is not "unbounded" (`null`).
    #[serde(deserialize_with = "Option::deserialize")]
    pub blocking_ns: Option<u64>,
    /// Where B_i comes from, in words.
    pub blocking_source: String,
    /// ω_{i,n}: the task's own cache warm-up delay per job.
    pub warmup_ns: u64,
    /// γ_{i,n}: the preemption delay one job can cause to lower-priority tasks.
    pub crpd_caused_ns: u64,
    /// Worst-case response time with cache interference (Eq. 2, "CInt");
    /// `null` when the iteration passed the deadline.
    // Required when read: a missing term is not "passed the deadline" (`null`).
    #[serde(deserialize_with = "Option::deserialize")]
    pub wcrt_ns: Option<u64>,
    /// Worst-case response time without cache interference (classic RTA, "NoCInt").
    // Required when read: a missing term is not "passed the deadline" (`null`).
    #[serde(deserialize_with = "Option::deserialize")]
    pub wcrt_nocint_ns: Option<u64>,
    /// Eq. (2) at its last iterate, term by term.
    pub breakdown: ResponseTime,
    /// Iterations of the classic recurrence.
    pub iterations_nocint: u32,
    /// R ≤ D with cache interference.
    pub schedulable: bool,
    /// R ≤ D without cache interference.
    pub schedulable_nocint: bool,
    /// Remarks, e.g. that no partitions were assigned.
    pub notes: Vec<String>,
    /// The task's scheduling policy.
    pub policy: TaskPolicy,
    /// A SCHED_DEADLINE task's runtime Q: the file's, or the one the
    /// analysis derived (C' plus the resumptions and interrupts a job may
    /// pay in its own time).
    pub runtime_ns: Option<u64>,
    /// A SCHED_DEADLINE task's kernel deadline D − J; `null` when its
    /// jitter reaches D.
    pub kernel_deadline_ns: Option<u64>,
}

/// Something the file says that the analysis did not use as written, to
/// be shown with the file and line (`tinct analyze` prints it on stderr
/// and in `--json`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputWarning {
    /// Index of the task in file order.
    pub task_index: usize,
    /// The line of the task's table in the file it was read from, if known.
    pub line: Option<usize>,
    /// The field, e.g. ``task 'a' field `blocking` ``.
    pub field: String,
    /// What the file gives, what the analysis found and which it used.
    pub message: String,
    /// For an explicit `blocking` below the derived B_i: both values.
    pub blocking: Option<blocking::ExplicitBelowDerived>,
}

impl InputWarning {
    /// `FILE:LINE: FIELD: MESSAGE`, the way input errors are worded.
    pub fn located(&self, file: &str) -> String {
        match self.line {
            Some(line) => format!("{file}:{line}: {}: {}", self.field, self.message),
            None => format!("{file}: {}: {}", self.field, self.message),
        }
    }
}

/// Eq. (3) for one partition.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PartitionUse {
    /// ρ.
    pub partition: u32,
    /// Σ M_i/|S(i)| over the tasks using ρ (bytes; rounded for reporting,
    /// the test itself is exact).
    pub used_bytes: f64,
    /// M_total / N_P.
    pub capacity_bytes: f64,
    /// Tasks using ρ.
    pub tasks: Vec<String>,
    /// Eq. (3) holds for ρ.
    pub feasible: bool,
}

/// The analysis of one core.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CoreReport {
    /// Core number.
    pub core: u32,
    /// Tasks on the core, highest priority first.
    pub tasks: Vec<String>,
    /// The same tasks as indices into [`Analysis::tasks`] (file order).
    pub task_indices: Vec<usize>,
    /// Partitions used on this core.
    pub partitions: Vec<u32>,
    /// Eq. (1): Σ (C_i + ω_{i,n} + γ_{i,n}) / T_i.
    pub utilization: f64,
    /// Σ C_i / T_i.
    pub utilization_nocint: f64,
    /// Liu-Layland bound n(2^{1/n} − 1) for the core's n tasks.
    pub utilization_bound: f64,
    /// Eq. (1) ≤ bound: sufficient, not necessary, for schedulability.
    pub utilization_test: bool,
    /// Eq. (3) holds for every partition of the core.
    pub memory_feasible: bool,
    /// Eq. (3) per partition.
    pub memory: Vec<PartitionUse>,
    /// Every task meets its deadline (Eq. 2) and memory is feasible (Eq. 3).
    pub schedulable: bool,
    /// Why not, in words.
    pub reasons: Vec<String>,
    /// The EDF analysis of the core's SCHED_DEADLINE tasks, if it has any.
    pub edf: Option<EdfReport>,
}

/// A partition used by tasks on more than one core.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CrossCoreShare {
    /// ρ.
    pub partition: u32,
    /// The cores using it.
    pub cores: Vec<u32>,
}

/// The platform overheads an analysis charged, ns.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OverheadsUsed {
    /// δ, per context switch (each job is charged 2δ).
    pub context_switch_ns: u64,
    /// The release latency added to every task's jitter.
    pub release_latency_ns: u64,
    /// One timer interrupt (each release, and each scheduler tick).
    pub tick_ns: u64,
    /// The scheduler tick's period, when it is charged periodically.
    pub tick_period_ns: Option<u64>,
}

/// The analysis of a whole task set, as `analysis.json` of a run
/// directory and `tinct analyze --json` hold it. It reads back what it
/// writes; a key added after the first version (here and in its parts)
/// takes its default when a file of an older tinct lacks it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Analysis {
    /// Every core schedulable, no partition shared across cores and every
    /// chain bounded.
    pub schedulable: bool,
    /// Δ used, ns.
    pub refill_ns: u64,
    /// The overheads charged (all zero: none).
    pub overheads: OverheadsUsed,
    /// Rounds of the holistic jitter iteration (1 without data-triggered
    /// tasks).
    pub holistic_rounds: u32,
    /// End-to-end bounds of the affinity graph's chains.
    pub chains: Vec<ChainReport>,
    /// Per task, in file order (index i is task i of the set).
    pub tasks: Vec<TaskReport>,
    /// Per core, 0..N_C.
    pub cores: Vec<CoreReport>,
    /// Partitions used on several cores (reservation violated).
    pub shared_across_cores: Vec<CrossCoreShare>,
    /// Why not schedulable, in words.
    pub reasons: Vec<String>,
    /// Inputs the analysis did not use as written (an explicit `blocking`
    /// below the derived B_i), in file order of their tasks.
    pub warnings: Vec<InputWarning>,
}

/// Why a task set cannot be analyzed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AnalysisError {
    /// A task has no core on a platform with several cores.
    #[error(
        "task '{task}' has no `core`: the analysis needs every task on a core of the platform's {cores} (run `tinct plan` to assign cores and partitions)"
    )]
    Unassigned {
        /// Index of the task in file order.
        index: usize,
        /// Its name.
        task: String,
        /// N_C.
        cores: u32,
    },
    /// A term of Eq. (1)-(2) of a task cannot be represented in 64-bit
    /// nanoseconds: the file asks for more than the analysis can decide
    /// exactly, so it is refused rather than wrapped.
    #[error("{quantity} of task '{task}' exceeds 2^64 ns ({value} ns): {}", cause.hint())]
    TermTooLarge {
        /// Index of the task in file order.
        index: usize,
        /// Its name.
        task: String,
        /// The term, e.g. "C + ω + γ".
        quantity: &'static str,
        /// Its exact value in ns.
        value: u128,
        /// The input that made it too large (the largest part of the sum).
        cause: TermCause,
    },
    /// A resource is used by tasks on two cores: tinct analyses resources
    /// local to a core only.
    #[error(
        "resource '{resource}' is used on core {} (task '{}') and core {} (task '{}'): tinct analyses resources local to one core (no multiprocessor locking protocol); put its users on one core",
        cores[0], tasks[0], cores[1], tasks[1]
    )]
    GlobalResource {
        /// Index of the second user in file order.
        index: usize,
        /// The resource.
        resource: String,
        /// Two users on different cores.
        tasks: [String; 2],
        /// Their cores.
        cores: [u32; 2],
    },
    /// The affinity graph has more paths than the analysis enumerates.
    #[error(
        "the affinity graph has more than {limit} chains (paths from a first producer to a last consumer): give fewer edges"
    )]
    TooManyChains {
        /// [`chains::MAX_CHAINS`].
        limit: usize,
    },
    /// The affinity graph has a cycle (a set built in code; files are
    /// checked when read).
    #[error(
        "the affinity graph has a cycle through tasks {tasks:?} (indices): chains are the paths of an acyclic graph"
    )]
    CyclicGraph {
        /// Task indices along the path that closes the cycle.
        tasks: Vec<usize>,
    },
    /// The EDF test of a core's SCHED_DEADLINE tasks cannot decide it
    /// within its limits.
    #[error("core {core}: the SCHED_DEADLINE tasks cannot be decided exactly: {reason}")]
    EdfUndecidable {
        /// The core.
        core: u32,
        /// Index in file order of the core's first SCHED_DEADLINE task.
        index: usize,
        /// Why, in words.
        reason: String,
    },
    /// Eq. (3) of a partition cannot be decided exactly in 128 bits (many
    /// tasks with different |S(i)| share it).
    #[error(
        "partition {partition}: the exact sum Σ M_i/|S(i)| of Eq. (3) over its {tasks} tasks needs more than 128 bits (too many different |S(i)| share it); give fewer distinct partition counts"
    )]
    MemoryLoadTooLarge {
        /// ρ.
        partition: u32,
        /// Tasks using ρ.
        tasks: usize,
        /// Index of the first of them in file order.
        first_task: usize,
    },
}

/// The part of a refused sum C + 2δ + ε + ω + γ that made it too large
/// (the largest one): the input a refusal blames, so that a huge context
/// switch is not reported as a huge refill time.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TermCause {
    /// C, the task's WCET (its `wcet` field).
    Wcet,
    /// 2δ, the platform's context switch charged twice per job
    /// (`overheads.context_switch`).
    ContextSwitch,
    /// ε, the platform's timer interrupt (`overheads.tick`).
    Tick,
    /// ω + γ, the refill time Δ times the partitions shared.
    CacheDelay,
}

impl TermCause {
    /// The largest of the parts of one task's sum `value` (C, 2δ, ε, and
    /// ω + γ the rest).
    fn of(task: &rta::CoreTask, value: u128) -> TermCause {
        let (wcet, overhead, interrupt) = (
            u128::from(task.wcet),
            u128::from(task.overhead),
            u128::from(task.interrupt),
        );
        let cache = value.saturating_sub(wcet + overhead + interrupt);
        [
            (cache, TermCause::CacheDelay),
            (interrupt, TermCause::Tick),
            (overhead, TermCause::ContextSwitch),
            (wcet, TermCause::Wcet),
        ]
        .into_iter()
        .max_by_key(|&(part, _)| part)
        .map_or(TermCause::CacheDelay, |(_, cause)| cause)
    }

    /// What to change, in words.
    pub fn hint(self) -> &'static str {
        match self {
            TermCause::Wcet => {
                "the task's WCET C, plus its cache delays and overheads, must stay below about 584 years"
            }
            TermCause::ContextSwitch => {
                "the context switch δ, charged twice to every job, plus C, must stay below about 584 years"
            }
            TermCause::Tick => "the timer interrupt ε, plus C, must stay below about 584 years",
            TermCause::CacheDelay => {
                "the refill time Δ times the partitions shared, plus C, must stay below about 584 years"
            }
        }
    }

    /// The platform overhead blamed (`context_switch` or `tick`), if the
    /// cause is one.
    pub fn overhead(self) -> Option<&'static str> {
        match self {
            TermCause::ContextSwitch => Some("context_switch"),
            TermCause::Tick => Some("tick"),
            TermCause::Wcet | TermCause::CacheDelay => None,
        }
    }
}

/// Refuses a core whose Eq. (1) numerators C_i + ω_{i,n} + γ_{i,n} (plus
/// the overheads 2δ + ε when charged) do not fit in 64-bit nanoseconds
/// (each term is at most that sum).
fn check_terms(
    set: &TaskSet,
    members: &[usize],
    core_tasks: &[rta::CoreTask],
    skip: usize,
    refill: u64,
) -> Result<(), AnalysisError> {
    let numerators = rta::utilization_numerators(core_tasks, refill);
    let overheads = &set.platform.overheads;
    let charged = overheads.context_switch.0 > 0 || overheads.tick.0 > 0;
    for ((&i, &value), task) in members
        .iter()
        .zip(&numerators[skip..])
        .zip(&core_tasks[skip..])
    {
        if value > u128::from(u64::MAX) {
            return Err(AnalysisError::TermTooLarge {
                index: i,
                task: set.tasks[i].name.clone(),
                quantity: if charged {
                    "C + 2δ + ε + ω + γ"
                } else {
                    "C + ω + γ"
                },
                value,
                cause: TermCause::of(task, value),
            });
        }
    }
    Ok(())
}

/// Whether `members` (one core's tasks in priority order, file indices)
/// meet their deadlines among themselves, with the jitter declared plus the
/// platform's release latency and no inherited jitter, and the blocking
/// their own sections cause: the core's SCHED_DEADLINE tasks by the EDF
/// test, then its SCHED_FIFO tasks below them, as [`analyze`] decides a
/// core. Adding tasks to the core or jitter to a task only lengthens
/// response times and adds demand, so a `false` here holds for every
/// placement that extends this one: the pruning test of placement
/// searches.
pub fn core_feasible_so_far(set: &TaskSet, members: &[usize]) -> bool {
    let overheads = &set.platform.overheads;
    let refill = set.platform.refill.0;
    let (reserved, fifo): (Vec<usize>, Vec<usize>) =
        members.iter().partition(|&&i| set.tasks[i].is_deadline());
    let reservations = if reserved.is_empty() {
        Vec::new()
    } else {
        match deadline::analyze_core(set, 0, &reserved, &fifo, refill) {
            Ok(Some(core)) if core.report.schedulable => core.as_interference(set),
            _ => return false,
        }
    };
    let jitter: Vec<u64> = set
        .tasks
        .iter()
        .map(|t| t.jitter.0.saturating_add(overheads.release_latency.0))
        .collect();
    let mut blocking = vec![blocking::Blocking::default(); set.tasks.len()];
    for (b, &i) in blocking::core_blocking(set, &fifo, refill, overheads.context_switch.0)
        .into_iter()
        .zip(&fifo)
    {
        blocking[i] = b;
    }
    let tasks = holistic::core_tasks(set, &fifo, &jitter, &blocking, &reservations);
    rta::core_schedulable(&tasks, refill)
}

/// The tasks of one core in priority order (highest first), as file
/// indices; `ranks` are [`TaskSet::ranks`].
pub fn core_members(set: &TaskSet, core: u32, ranks: &[u32]) -> Vec<usize> {
    let mut members: Vec<usize> = (0..set.tasks.len())
        .filter(|&i| set.tasks[i].core.unwrap_or(0) == core)
        .collect();
    members.sort_by_key(|&i| ranks[i]);
    members
}

/// Analyzes a task set with every task assigned to a core (on a one-core
/// platform, core 0 is implied).
pub fn analyze(set: &TaskSet) -> Result<Analysis, AnalysisError> {
    let analysis = analyze_until(set, None)?;
    Ok(analysis.expect("an analysis without a stop flag runs to its end"))
}

/// [`analyze`] that gives up as soon as `stop` is set (a timeout; the
/// holistic analysis polls it before each core of each round): `Ok(None)`
/// then. Without a flag, or with one that stays clear, it is [`analyze`].
pub fn analyze_until(
    set: &TaskSet,
    stop: Option<&AtomicBool>,
) -> Result<Option<Analysis>, AnalysisError> {
    let platform = &set.platform;
    if platform.cores > 1
        && let Some(index) = set.tasks.iter().position(|t| t.core.is_none())
    {
        return Err(AnalysisError::Unassigned {
            index,
            task: set.tasks[index].name.clone(),
            cores: platform.cores,
        });
    }
    blocking::check_local(set)?;
    let refill = platform.refill.0;
    let priorities = set.priorities();
    let ranks = set.ranks();
    let everyone: Vec<Vec<usize>> = (0..platform.cores)
        .map(|core| core_members(set, core, &ranks))
        .collect();
    // SCHED_FIFO tasks go through the fixed-priority analysis, each core's
    // SCHED_DEADLINE tasks through EDF's, which comes first: the FIFO
    // tasks see the reservations above them.
    let (members, reserved): (Vec<Vec<usize>>, Vec<Vec<usize>>) = everyone
        .iter()
        .map(|core| core.iter().partition(|&&i| !set.tasks[i].is_deadline()))
        .unzip();
    let edf_pass = |refill: u64| -> Result<Vec<Option<deadline::EdfCore>>, AnalysisError> {
        (0..platform.cores)
            .map(|core| {
                let c = core as usize;
                deadline::analyze_core(set, core, &reserved[c], &members[c], refill)
            })
            .collect()
    };
    let edf_cint = edf_pass(refill)?;
    let edf_nocint = if refill == 0 {
        edf_cint.clone()
    } else {
        edf_pass(0)?
    };
    let reservations_cint = reservations_of(set, &edf_cint);
    let reservations_nocint = reservations_of(set, &edf_nocint);
    let chain_paths = chains::enumerate(set)?;
    let demands: Vec<MemoryDemand> = set
        .tasks
        .iter()
        .map(|t| MemoryDemand {
            memory: t.memory.0,
            partitions: t.partitions.unwrap_or(PartitionSet::EMPTY),
        })
        .collect();
    // Eq. (1)-(2) terms must be representable before anything is iterated.
    let zero_jitter = vec![0; set.tasks.len()];
    let no_blocking = vec![blocking::Blocking::default(); set.tasks.len()];
    for core in &members {
        let above = reservations_cint.of_core(set, core);
        let core_tasks = holistic::core_tasks(set, core, &zero_jitter, &no_blocking, above);
        let skip = holistic::pseudo_tasks(set, core, above);
        check_terms(set, core, &core_tasks, skip, refill)?;
    }
    let Some(cint) = holistic::analyze(set, &members, &reservations_cint, refill, stop) else {
        return Ok(None);
    };
    // With Δ = 0 the two passes are one computation.
    let nocint = if refill == 0 {
        cint.clone()
    } else {
        let Some(nocint) = holistic::analyze(set, &members, &reservations_nocint, 0, stop) else {
            return Ok(None);
        };
        nocint
    };

    let mut task_reports: Vec<Option<TaskReport>> = vec![None; set.tasks.len()];
    let mut warnings = Vec::new();
    let mut cores = Vec::new();
    for (core, members) in (0..platform.cores).zip(&members) {
        let edf = edf_cint[core as usize].as_ref();
        let above = reservations_cint.of_core(set, members);
        let core_tasks = holistic::core_tasks(set, members, &cint.jitter, &cint.blocking, above);
        let skip = holistic::pseudo_tasks(set, members, above);
        // Each γ_{i,n} ≤ C + ω + γ < 2^64, checked above.
        let crpd: Vec<u64> = rta::crpd_caused(&core_tasks, refill)
            .into_iter()
            .skip(skip)
            .map(|g| u64::try_from(g).unwrap_or(u64::MAX))
            .collect();
        let mut reasons = Vec::new();
        for (k, &i) in members.iter().enumerate() {
            let t = &set.tasks[i];
            let result = cint.results[i];
            let mut notes = Vec::new();
            if t.partitions.is_none() {
                notes.push(if refill > 0 {
                    format!(
                        "no partitions assigned: C is the worst listed value, and the task runs in \
                         memory of every colour, so ω and γ charge it all {} partitions",
                        platform.partitions
                    )
                } else {
                    "no partitions assigned: C is the worst listed value (Δ = 0: no cache term)"
                        .to_string()
                });
            }
            let blocking = &cint.blocking[i];
            if let Some(below) = &blocking.explicit_below_derived {
                notes.push(below.describe());
                warnings.push(InputWarning {
                    task_index: i,
                    line: set.task_lines.get(i).copied(),
                    field: format!("task '{}' field `blocking`", t.name),
                    message: below.describe(),
                    blocking: Some(below.clone()),
                });
            }
            let jitter = cint.jitter[i];
            if result.wcrt_ns.is_none() {
                reasons.push(match edf.filter(|e| !e.report.schedulable) {
                    Some(_) => format!(
                        "task '{}' misses its deadline: the SCHED_DEADLINE reservations of core \
                         {core} are not schedulable, so nothing bounds the time they take from it",
                        t.name
                    ),
                    None => miss_reason(set, i, &result, blocking, &cint),
                });
            }
            task_reports[i] = Some(TaskReport {
                name: t.name.clone(),
                core,
                priority: priorities[i],
                partitions: t.partitions.map(|s| s.to_vec()).unwrap_or_default(),
                partition_count: t.charged_partitions(platform).len(),
                period_ns: t.period.0,
                deadline_ns: t.deadline.0,
                wcet_ns: core_tasks[skip + k].wcet,
                overhead_ns: core_tasks[skip + k].overhead,
                trigger: t.trigger,
                jitter_ns: (jitter != u64::MAX).then_some(jitter),
                jitter_inherited_ns: (cint.inherited[i] != u64::MAX).then_some(cint.inherited[i]),
                blocking_ns: blocking.blocking_ns,
                blocking_source: blocking.source.clone(),
                warmup_ns: result.warmup_ns,
                crpd_caused_ns: crpd[k],
                wcrt_ns: result.wcrt_ns,
                wcrt_nocint_ns: nocint.results[i].wcrt_ns,
                breakdown: result,
                iterations_nocint: nocint.results[i].iterations,
                schedulable: result.wcrt_ns.is_some(),
                schedulable_nocint: nocint.results[i].wcrt_ns.is_some(),
                notes,
                policy: TaskPolicy::Fifo,
                runtime_ns: None,
                kernel_deadline_ns: None,
            });
        }
        if let Some(edf) = edf {
            let nocint_core = edf_nocint[core as usize].as_ref();
            for r in &edf.reservations {
                task_reports[r.index] = Some(reservation_report(
                    set,
                    core,
                    r,
                    &cint.results[r.index],
                    &nocint.results[r.index],
                    nocint_core.is_some_and(|e| e.report.schedulable),
                    priorities[r.index],
                ));
            }
            reasons.extend(edf.report.reasons.iter().cloned());
        }
        let used = members
            .iter()
            .chain(edf.map_or(&[][..], |e| e.report.task_indices.as_slice()))
            .filter_map(|&i| set.tasks[i].partitions)
            .fold(PartitionSet::EMPTY, |acc, s| acc.union(&s));
        let memory = used
            .iter()
            .map(|rho| partition_use(set, &demands, rho))
            .collect::<Result<Vec<PartitionUse>, AnalysisError>>()?;
        for use_ in memory.iter().filter(|u| !u.feasible) {
            reasons.push(format!(
                "partition {} holds {:.0} B of task memory but a memory partition has {:.0} B (Eq. 3)",
                use_.partition, use_.used_bytes, use_.capacity_bytes
            ));
        }
        let memory_feasible = memory.iter().all(|u| u.feasible);
        // With reservations, Eq. (1) under EDF: U ≤ 1, exact when every
        // D = T and necessary otherwise.
        let (u, u_nocint, bound) = match (edf, edf_nocint[core as usize].as_ref()) {
            (Some(edf), Some(plain)) if members.is_empty() => {
                (edf.report.utilization, plain.report.utilization, 1.0)
            }
            (Some(_), _) => (
                utilization::core_utilization(&core_tasks, refill),
                utilization::core_utilization(&core_tasks, 0),
                1.0,
            ),
            _ => (
                utilization::core_utilization(&core_tasks, refill),
                utilization::core_utilization(&core_tasks, 0),
                utilization::liu_layland_bound(core_tasks.len()),
            ),
        };
        let reserved_first = edf.map_or(&[][..], |e| e.report.task_indices.as_slice());
        let order: Vec<usize> = reserved_first.iter().chain(members).copied().collect();
        cores.push(CoreReport {
            core,
            tasks: order.iter().map(|&i| set.tasks[i].name.clone()).collect(),
            task_indices: order,
            partitions: used.to_vec(),
            utilization: u,
            utilization_nocint: u_nocint,
            utilization_bound: bound,
            utilization_test: u <= bound,
            memory_feasible,
            memory,
            schedulable: reasons.is_empty(),
            reasons,
            edf: edf.map(|e| e.report.clone()),
        });
    }

    let shared_across_cores = cross_core_shares(set);
    let mut reasons: Vec<String> = cores
        .iter()
        .filter(|c| !c.schedulable)
        .map(|c| format!("core {} is not schedulable", c.core))
        .collect();
    for share in &shared_across_cores {
        reasons.push(format!(
            "partition {} is used on cores {:?}: cache reservation gives each core its own partitions, and interference across cores is not bounded",
            share.partition, share.cores
        ));
    }
    reasons.extend(unpartitioned_across_cores(set));
    warnings.sort_by_key(|w| w.task_index);
    let chains = chains::reports(set, &chain_paths, &cint.results, &nocint.results);
    // A chain whose tasks all meet their deadlines can still have no bound:
    // its end-to-end latency passes 2^64 − 1 ns. Every chain is bounded in
    // a SCHEDULABLE set.
    let overflowing = chains.iter().find(|c| {
        c.bound_ns.is_none()
            && c.task_indices
                .iter()
                .all(|&i| cint.results[i].wcrt_ns.is_some())
    });
    if let Some(chain) = overflowing {
        reasons.push(format!(
            "chain {} has no end-to-end bound: its latency passes 2^64 − 1 ns",
            chain.tasks.join(" → ")
        ));
    }
    let overheads = &platform.overheads;
    Ok(Some(Analysis {
        schedulable: reasons.is_empty(),
        refill_ns: refill,
        overheads: OverheadsUsed {
            context_switch_ns: overheads.context_switch.0,
            release_latency_ns: overheads.release_latency.0,
            tick_ns: overheads.tick.0,
            tick_period_ns: overheads.tick_period.map(|p| p.0),
        },
        holistic_rounds: cint.rounds,
        chains,
        tasks: task_reports.into_iter().flatten().collect(),
        cores,
        shared_across_cores,
        reasons,
        warnings,
    }))
}

/// The reservations of every core for the fixed-priority analysis.
fn reservations_of(set: &TaskSet, cores: &[Option<deadline::EdfCore>]) -> holistic::Reservations {
    holistic::Reservations {
        interference: cores
            .iter()
            .map(|c| c.as_ref().map_or_else(Vec::new, |c| c.as_interference(set)))
            .collect(),
        results: cores
            .iter()
            .flatten()
            .flat_map(|c| c.results(set))
            .collect(),
    }
}

/// The report of a SCHED_DEADLINE task: when its core's reservations are
/// schedulable, its bound is Spuri's (J plus the bound from its wake-up),
/// or its deadline when that was not found.
fn reservation_report(
    set: &TaskSet,
    core: u32,
    r: &deadline::Reservation,
    result: &ResponseTime,
    nocint: &ResponseTime,
    schedulable_nocint: bool,
    priority: u32,
) -> TaskReport {
    let t = &set.tasks[r.index];
    let platform = &set.platform;
    let mut notes = vec![format!(
        "SCHED_DEADLINE: runtime {}, kernel deadline D − J = {}, period {}; a job that meets \
         its kernel deadline meets D",
        crate::units::Nanos(r.runtime),
        r.kernel_deadline.map_or_else(
            || "none".to_string(),
            |d| crate::units::Nanos(d).to_string()
        ),
        t.period
    )];
    if result.wcrt_ns.is_some() && r.response_from_wake.is_none() {
        notes.push(
            "no response bound below D was found (the busy period has no fixed point, or its \
             release offsets are too many to try): the bound is D"
                .to_string(),
        );
    }
    if t.partitions.is_none() && platform.refill.0 > 0 {
        notes.push(format!(
            "no partitions assigned: C is the worst listed value, and ω and γ charge it all {} \
             partitions",
            platform.partitions
        ));
    }
    TaskReport {
        name: t.name.clone(),
        core,
        priority,
        partitions: t.partitions.map(|s| s.to_vec()).unwrap_or_default(),
        partition_count: t.charged_partitions(platform).len(),
        period_ns: t.period.0,
        deadline_ns: t.deadline.0,
        wcet_ns: r.wcet,
        overhead_ns: r.overhead,
        trigger: t.trigger,
        jitter_ns: Some(r.jitter),
        jitter_inherited_ns: Some(0),
        blocking_ns: Some(0),
        blocking_source: "none: no critical sections".to_string(),
        warmup_ns: r.warmup,
        crpd_caused_ns: r.crpd,
        wcrt_ns: result.wcrt_ns,
        wcrt_nocint_ns: nocint.wcrt_ns,
        breakdown: *result,
        iterations_nocint: 1,
        schedulable: result.wcrt_ns.is_some(),
        schedulable_nocint,
        notes,
        policy: TaskPolicy::Deadline,
        runtime_ns: Some(r.runtime),
        kernel_deadline_ns: r.kernel_deadline,
    }
}

/// Why task `i` misses its deadline, in words: unbounded blocking, an
/// unbounded inherited jitter, its own release jitter and demand passing D
/// without any interference, or Eq. (2) with the interference of the
/// higher-priority tasks passing D.
fn miss_reason(
    set: &TaskSet,
    i: usize,
    result: &ResponseTime,
    blocking: &blocking::Blocking,
    pass: &holistic::Pass,
) -> String {
    let t = &set.tasks[i];
    if blocking.blocking_ns.is_none() {
        return format!(
            "task '{}' misses its deadline: blocking {}",
            t.name, blocking.source
        );
    }
    if pass.inherited[i] == u64::MAX {
        let why = if pass.diverged {
            format!(
                "the jitter it inherits did not settle within {} rounds",
                pass.rounds
            )
        } else {
            "a producer misses its deadline, so its release jitter is unbounded".to_string()
        };
        return format!("task '{}' misses its deadline: {why}", t.name);
    }
    let (jitter_exact, jitter_words) = jitter_in_words(set, i, pass.inherited[i]);
    if jitter_exact >= u128::from(t.deadline.0) {
        return format!(
            "task '{}' misses its deadline {}: its release jitter {jitter_words} alone reaches it",
            t.name, t.deadline
        );
    }
    // J + C' + ω + B: what the task needs with no interference at all
    // (u128: exact, even past 2^64 ns).
    let own = u128::from(result.wcet_ns)
        + u128::from(result.overhead_ns)
        + u128::from(result.warmup_ns)
        + u128::from(result.blocking_ns);
    let alone = jitter_exact + own;
    if alone > u128::from(t.deadline.0) {
        let total = match u64::try_from(alone) {
            Ok(ns) => crate::units::Nanos(ns).to_string(),
            Err(_) => format!("{alone} ns, beyond 2^64 ns"),
        };
        return format!(
            "task '{}' misses its deadline {}: its release jitter {jitter_words} plus its own \
             C + 2δ + ω + B = {} come to {total} without any interference",
            t.name,
            t.deadline,
            u64::try_from(own).map_or_else(
                |_| format!("{own} ns"),
                |ns| crate::units::Nanos(ns).to_string()
            )
        );
    }
    format!(
        "task '{}' misses its deadline {} (Eq. 2 with the interference of higher-priority tasks \
         passed D after {} iterations)",
        t.name, t.deadline, result.iterations
    )
}

/// J_i exactly (u128: the recurrence saturates it at 2^64 − 1 ns) and in
/// words with its parts: declared, the platform's release latency,
/// inherited.
fn jitter_in_words(set: &TaskSet, i: usize, inherited: u64) -> (u128, String) {
    let declared = set.tasks[i].jitter;
    let latency = set.platform.overheads.release_latency;
    let exact = u128::from(declared.0) + u128::from(latency.0) + u128::from(inherited);
    let mut parts = vec![format!("its own `jitter` {declared}")];
    if latency.0 > 0 {
        parts.push(format!("the release latency {latency}"));
    }
    if inherited > 0 {
        parts.push(format!(
            "{} inherited from its producers",
            crate::units::Nanos(inherited)
        ));
    }
    let total = u64::try_from(exact).map_or_else(
        |_| format!("{exact} ns, beyond 2^64 ns"),
        |ns| crate::units::Nanos(ns).to_string(),
    );
    (exact, format!("J = {total} ({})", parts.join(" + ")))
}

/// Eq. (3) for partition `rho`, decided exactly or refused.
fn partition_use(
    set: &TaskSet,
    demands: &[MemoryDemand],
    rho: u32,
) -> Result<PartitionUse, AnalysisError> {
    let platform = &set.platform;
    let users: Vec<usize> = (0..set.tasks.len())
        .filter(|&i| demands[i].partitions.contains(rho))
        .collect();
    let too_large = || AnalysisError::MemoryLoadTooLarge {
        partition: rho,
        tasks: users.len(),
        first_task: users.first().copied().unwrap_or(0),
    };
    let load = memory::partition_load(rho, demands).ok_or_else(too_large)?;
    let feasible =
        memory::fits(load, platform.memory.0, platform.partitions).ok_or_else(too_large)?;
    Ok(PartitionUse {
        partition: rho,
        used_bytes: load.as_f64(),
        capacity_bytes: platform.memory.0 as f64 / f64::from(platform.partitions),
        tasks: users.iter().map(|&i| set.tasks[i].name.clone()).collect(),
        feasible,
    })
}

/// Why the set cannot be SCHEDULABLE when, with Δ > 0, a task without
/// `partitions` runs on one core and some task on another: the first may
/// use every colour ([`crate::model::Task::charged_partitions`]), so the
/// two share the last-level cache, and no term bounds interference across
/// cores. (On one core, Eq. 2's ω and γ charge it every partition.)
fn unpartitioned_across_cores(set: &TaskSet) -> Option<String> {
    if set.platform.refill.0 == 0 {
        return None;
    }
    let (task, other) = set.tasks.iter().find_map(|task| {
        let core = task.core.unwrap_or(0);
        let other = set.tasks.iter().find(|t| t.core.unwrap_or(0) != core)?;
        task.partitions.is_none().then_some((task, other))
    })?;
    Some(format!(
        "task '{}' (core {}) has no `partitions`: it may use every colour of the cache that '{}' \
         on core {} uses too, and interference across cores is not bounded (give every task \
         partitions of its own core's, as `tinct plan` does, or Δ = 0 for the analysis without \
         cache terms)",
        task.name,
        task.core.unwrap_or(0),
        other.name,
        other.core.unwrap_or(0)
    ))
}

fn cross_core_shares(set: &TaskSet) -> Vec<CrossCoreShare> {
    let mut shares = Vec::new();
    for rho in 1..=set.platform.partitions {
        let mut cores: Vec<u32> = set
            .tasks
            .iter()
            .filter(|t| t.partitions.is_some_and(|s| s.contains(rho)))
            .map(|t| t.core.unwrap_or(0))
            .collect();
        cores.sort_unstable();
        cores.dedup();
        if cores.len() > 1 {
            shares.push(CrossCoreShare {
                partition: rho,
                cores,
            });
        }
    }
    shares
}
