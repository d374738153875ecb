//! Cache-aware schedulability analysis of a task set whose tasks have cores
//! (and, usually, partition sets S(i)) assigned: kim2013 Section III-B/C.
//!
//! - [`rta`]: Eq. (2), response times with cache warm-up delay ω and
//!   cache-related preemption delay γ; with Δ = 0 the classic test of
//!   Joseph and Pandya (the paper's "NoCInt").
//! - [`utilization`]: Eq. (1), per-core utilization with ω and γ against
//!   the Liu-Layland bound (a sufficient test, reported alongside).
//! - [`memory`]: Eq. (3), memory feasibility of shared partitions.
//!
//! A core is schedulable when every task meets its deadline by Eq. (2) and
//! every partition it uses satisfies Eq. (3); the set is schedulable when
//! every core is and no partition is used on two cores (cache reservation
//! gives each core its own partitions; sharing across cores is not bounded
//! by this analysis).

mod input_error;
pub mod memory;
pub mod rta;
pub mod utilization;

use crate::model::TaskSet;
use crate::partitions::PartitionSet;
use memory::MemoryDemand;
use rta::{CoreTask, ResponseTime};
use serde::Serialize;

/// The analysis of one task.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TaskReport {
    /// Task name.
    pub name: String,
    /// Assigned core.
    pub core: u32,
    /// Effective priority (1 is the highest).
    pub priority: u32,
    /// S(i), empty when not assigned.
    pub partitions: Vec<u32>,
    /// |S(i)|.
    pub partition_count: u32,
    /// T_i.
    pub period_ns: u64,
    /// D_i.
    pub deadline_ns: u64,
    /// C_i^{|S(i)|} (or the worst listed C without S(i)).
    pub wcet_ns: u64,
    /// ω_{i,n}: the task's own cache warm-up delay per job.
    pub warmup_ns: u64,
    /// γ_{i,n}: the preemption delay one job can cause to lower-priority tasks.
    pub crpd_caused_ns: u64,
    /// Worst-case response time with cache interference (Eq. 2, "CInt");
    /// `null` when the iteration passed the deadline.
    pub wcrt_ns: Option<u64>,
    /// Worst-case response time without cache interference (classic RTA, "NoCInt").
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
}

/// Eq. (3) for one partition.
#[derive(Clone, Debug, PartialEq, Serialize)]
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
#[derive(Clone, Debug, PartialEq, Serialize)]
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
}

/// A partition used by tasks on more than one core.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CrossCoreShare {
    /// ρ.
    pub partition: u32,
    /// The cores using it.
    pub cores: Vec<u32>,
}

/// The analysis of a whole task set.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Analysis {
    /// Every core schedulable and no partition shared across cores.
    pub schedulable: bool,
    /// Δ used, ns.
    pub refill_ns: u64,
    /// Per task, in file order (index i is task i of the set).
    pub tasks: Vec<TaskReport>,
    /// Per core, 0..N_C.
    pub cores: Vec<CoreReport>,
    /// Partitions used on several cores (reservation violated).
    pub shared_across_cores: Vec<CrossCoreShare>,
    /// Why not schedulable, in words.
    pub reasons: Vec<String>,
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
    #[error("{quantity} of task '{task}' exceeds 2^64 ns ({value} ns): {hint}")]
    TermTooLarge {
        /// Index of the task in file order.
        index: usize,
        /// Its name.
        task: String,
        /// The term, e.g. "C + ω + γ".
        quantity: &'static str,
        /// Its exact value in ns.
        value: u128,
        /// What to change.
        hint: &'static str,
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

/// Refuses a core whose Eq. (1) numerators C_i + ω_{i,n} + γ_{i,n} do not
/// fit in 64-bit nanoseconds (each of ω and γ is at most that sum).
fn check_terms(
    set: &TaskSet,
    members: &[usize],
    core_tasks: &[CoreTask],
    refill: u64,
) -> Result<(), AnalysisError> {
    let numerators = rta::utilization_numerators(core_tasks, refill);
    for (&i, &value) in members.iter().zip(&numerators) {
        if value > u128::from(u64::MAX) {
            return Err(AnalysisError::TermTooLarge {
                index: i,
                task: set.tasks[i].name.clone(),
                quantity: "C + ω + γ",
                value,
                hint: "the refill time Δ times the partitions shared, plus C, must stay below about 584 years",
            });
        }
    }
    Ok(())
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
    let refill = platform.refill.0;
    let priorities = set.priorities();
    let ranks = set.ranks();
    let mut task_reports: Vec<Option<TaskReport>> = vec![None; set.tasks.len()];
    let mut cores = Vec::new();
    let demands: Vec<MemoryDemand> = set
        .tasks
        .iter()
        .map(|t| MemoryDemand {
            memory: t.memory.0,
            partitions: t.partitions.unwrap_or(PartitionSet::EMPTY),
        })
        .collect();

    for core in 0..platform.cores {
        let members = core_members(set, core, &ranks);
        let core_tasks: Vec<CoreTask> = members
            .iter()
            .map(|&i| {
                let t = &set.tasks[i];
                CoreTask {
                    wcet: t.effective_wcet().map_or(u64::MAX, |c| c.0),
                    period: t.period.0,
                    deadline: t.deadline.0,
                    partitions: t.partitions.unwrap_or(PartitionSet::EMPTY),
                }
            })
            .collect();
        check_terms(set, &members, &core_tasks, refill)?;
        let cint = rta::response_times(&core_tasks, refill);
        let nocint = rta::response_times(&core_tasks, 0);
        // Each γ_{i,n} ≤ C + ω + γ < 2^64, checked just above.
        let crpd: Vec<u64> = rta::crpd_caused(&core_tasks, refill)
            .into_iter()
            .map(|g| u64::try_from(g).unwrap_or(u64::MAX))
            .collect();
        let mut reasons = Vec::new();
        for (k, &i) in members.iter().enumerate() {
            let t = &set.tasks[i];
            let mut notes = Vec::new();
            if t.partitions.is_none() {
                notes.push(
                    "no partitions assigned: C is the worst listed value and cache interference is not modelled"
                        .to_string(),
                );
            }
            if cint[k].wcrt_ns.is_none() {
                reasons.push(format!(
                    "task '{}' misses its deadline {} (Eq. 2 passed D after {} iterations)",
                    t.name, t.deadline, cint[k].iterations
                ));
            }
            task_reports[i] = Some(TaskReport {
                name: t.name.clone(),
                core,
                priority: priorities[i],
                partitions: t.partitions.map(|s| s.to_vec()).unwrap_or_default(),
                partition_count: t.partitions.map_or(0, |s| s.len()),
                period_ns: t.period.0,
                deadline_ns: t.deadline.0,
                wcet_ns: core_tasks[k].wcet,
                warmup_ns: cint[k].warmup_ns,
                crpd_caused_ns: crpd[k],
                wcrt_ns: cint[k].wcrt_ns,
                wcrt_nocint_ns: nocint[k].wcrt_ns,
                breakdown: cint[k],
                iterations_nocint: nocint[k].iterations,
                schedulable: cint[k].wcrt_ns.is_some(),
                schedulable_nocint: nocint[k].wcrt_ns.is_some(),
                notes,
            });
        }
        let used = members
            .iter()
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
        let u = utilization::core_utilization(&core_tasks, refill);
        let bound = utilization::liu_layland_bound(core_tasks.len());
        cores.push(CoreReport {
            core,
            tasks: members.iter().map(|&i| set.tasks[i].name.clone()).collect(),
            task_indices: members.clone(),
            partitions: used.to_vec(),
            utilization: u,
            utilization_nocint: utilization::core_utilization(&core_tasks, 0),
            utilization_bound: bound,
            utilization_test: u <= bound,
            memory_feasible,
            memory,
            schedulable: reasons.is_empty(),
            reasons,
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
    Ok(Analysis {
        schedulable: reasons.is_empty(),
        refill_ns: refill,
        tasks: task_reports.into_iter().flatten().collect(),
        cores,
        shared_across_cores,
        reasons,
    })
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
