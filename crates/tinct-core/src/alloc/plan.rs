//! One call from a task set to a plan: allocation (kim2013 Algorithm 3 or
//! the BFD/WFD baselines), CATA's final step that spends the leftover
//! partitions (end of Section III-D), the planned task set, its analysis
//! (Eq. 1-3, so a plan is never reported schedulable unless the analysis
//! agrees) and the report every front end prints.

use super::assignment::{Algorithm, Assignment, CoreRefusal, Reason};
use super::binpack::{Fit, bin_pack_until};
use super::cata::{cata_until, spend_leftover_until};
use super::instance::Instance;
use super::mincache::SearchOptions;
use crate::analysis::{Analysis, analyze_until};
use crate::format::InputError;
use crate::model::TaskSet;
use serde::{Deserialize, Serialize};
use std::sync::atomic::AtomicBool;

/// How to plan.
#[derive(Copy, Clone, Debug, Default)]
pub struct PlanOptions<'a> {
    /// Partitions the plan may use (at most N_P; `None`: all N_P).
    pub partitions: Option<u32>,
    /// MinCacheAlloc's search options (CATA; BFD/WFD do not search).
    pub search: SearchOptions,
    /// CATA only: keep partitions the allocation did not need free instead
    /// of giving each to the core whose utilization it lowers most.
    pub keep_free: bool,
    /// Set from elsewhere (a timeout) to stop cleanly: the plan then holds
    /// the tasks placed so far and says it was stopped.
    pub stop: Option<&'a AtomicBool>,
}

/// One task of a plan.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlannedTask {
    /// Index of the task in the task set.
    pub task: usize,
    /// Name.
    pub name: String,
    /// Priority rank, 1 the highest (0 for a reservation).
    pub priority: u32,
    /// SCHED_FIFO, or a SCHED_DEADLINE reservation ordered by EDF.
    pub policy: crate::model::TaskPolicy,
    /// S(i), global partition numbers.
    pub partitions: Vec<u32>,
    /// C^{|S(i)|}, ns.
    pub wcet_ns: u64,
    /// Eq. (2) worst-case response time, ns (`None` past D or not analyzed).
    pub wcrt_ns: Option<u64>,
    /// D, ns.
    pub deadline_ns: u64,
}

/// One core of a plan.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlannedCore {
    /// Core number.
    pub core: u32,
    /// Partitions reserved for the core (global numbers).
    pub partitions: Vec<u32>,
    /// Eq. (1) utilization.
    pub utilization: f64,
    /// Tasks, highest priority first.
    pub tasks: Vec<PlannedTask>,
}

/// A task the algorithm could not place.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UnplacedTask {
    /// Index of the task in the task set.
    pub task: usize,
    /// Name.
    pub name: String,
    /// Why, in one word.
    pub reason: Reason,
    /// Why each core refused it.
    pub refusals: Vec<CoreRefusal>,
    /// In words.
    pub message: String,
}

/// A plan and its report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// The algorithm.
    pub algorithm: Algorithm,
    /// Every task placed and the planned set analyzes as schedulable.
    pub schedulable: bool,
    /// Partitions the algorithm could use.
    pub budget: u32,
    /// Partitions reserved for cores.
    pub partitions_used: u32,
    /// Partitions the allocation needed before the leftover step.
    pub partitions_needed: u32,
    /// (Σ M_i) / ((M_total/N_P) · partitions used), kim2013 IV-E.
    pub memory_efficiency: f64,
    /// Σ over cores of Eq. (1).
    pub total_utilization: f64,
    /// Every MinCacheAlloc call was proven optimal.
    pub exact: bool,
    /// MinCacheAlloc search nodes, summed over all calls.
    pub nodes: u64,
    /// The plan was stopped before it finished (a timeout): it holds the
    /// tasks placed so far.
    pub stopped: bool,
    /// Per core.
    pub cores: Vec<PlannedCore>,
    /// Tasks that found no core.
    pub unplaced: Vec<UnplacedTask>,
    /// Why the placed plan does not analyze as schedulable (only if the
    /// analysis disagrees with the allocation, which is a bug).
    pub analysis_error: Option<String>,
    /// The task set with `core`, `priority` and `partitions` filled in
    /// (unplaced tasks keep none).
    #[serde(skip)]
    pub planned: Option<TaskSet>,
    /// The analysis of the planned set, when every task was placed.
    #[serde(skip)]
    pub analysis: Option<Analysis>,
}

/// The partitions a plan of `set` (read from `file`) may use: `requested`,
/// else all N_P; refused unless 1 to N_P, with what was expected and found
/// (the caller names its option).
pub fn partition_budget(
    set: &TaskSet,
    file: &str,
    requested: Option<u32>,
) -> Result<u32, InputError> {
    let n_p = set.platform.partitions;
    let budget = requested.unwrap_or(n_p);
    if budget == 0 || budget > n_p {
        return Err(InputError::new(
            "",
            "partitions",
            format!("1 to {n_p} (the platform's N_P in {file})"),
            budget.to_string(),
        ));
    }
    Ok(budget)
}

/// Why CATA, BFD and WFD cannot plan `set`, if they cannot: they place
/// tasks one by one, and do not keep the users of a shared resource on
/// one core, which the analysis of resources requires. Such a set is
/// planned with `place_static` (or its cores given by hand). Sets that mix
/// SCHED_DEADLINE reservations and SCHED_FIFO tasks are planned: a core is
/// tested as `tinct analyze` tests it ([`Instance::schedulable`]).
/// The error names the resource as its field and no file (the caller
/// knows it).
pub fn unsupported(set: &TaskSet) -> Option<InputError> {
    set.resources.iter().enumerate().find_map(|(r, resource)| {
        let users: Vec<&str> = set
            .tasks
            .iter()
            .filter(|t| t.critical_sections.iter().any(|s| s.resource == r))
            .map(|t| t.name.as_str())
            .collect();
        (users.len() > 1).then(|| {
            InputError::new(
                "",
                format!("resource '{}'", resource.name),
                "a resource of one task: CATA, BFD and WFD do not keep a resource's users on \
                 one core (use --placement static, or give the cores)",
                format!("shared by {}", users.join(", ")),
            )
        })
    })
}

/// `set` with every task a SCHED_DEADLINE reservation (`tinct plan
/// --policy deadline`): its `priority` dropped, its `runtime` kept. Refused
/// (with the task and the field, for the file `file`) for what a
/// reservation cannot have: a critical section, an explicit `blocking`, or
/// a data trigger.
pub fn as_reservations(set: &TaskSet, file: &str) -> Result<TaskSet, InputError> {
    let mut reservations = set.clone();
    for (i, task) in reservations.tasks.iter_mut().enumerate() {
        let refused = if !task.critical_sections.is_empty() {
            Some((
                "critical_sections",
                format!("{} critical section(s)", task.critical_sections.len()),
            ))
        } else if let Some(blocking) = task.blocking {
            Some(("blocking", blocking.to_string()))
        } else if task.trigger == crate::model::Trigger::Data {
            Some(("trigger", "\"data\"".to_string()))
        } else {
            None
        };
        if let Some((field, found)) = refused {
            return Err(InputError::new(
                file,
                format!("task '{}' field `{field}`", task.name),
                "none: --policy deadline makes every task a SCHED_DEADLINE reservation, which \
                 cannot have one (the analysis of reservations has no resources, blocking or \
                 data triggers)",
                found,
            )
            .at_line(set.task_lines.get(i).copied()));
        }
        task.policy = crate::model::TaskPolicy::Deadline;
        task.priority = None;
    }
    Ok(reservations)
}

/// Why a plan request is refused before any search (bad input for every
/// front end, which names its own option).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PlanRefusal {
    /// The set has what the allocators do not place: a resource shared
    /// between tasks ([`unsupported`]'s error, the file named).
    Unsupported(InputError),
    /// The partition budget is not 1 to N_P ([`partition_budget`]'s
    /// error; its field `partitions` is renamed by a front end that calls
    /// the option otherwise).
    Partitions(InputError),
    /// The affinity graph is one the analysis refuses ([`check_graph`]).
    Graph(InputError),
}

impl std::fmt::Display for PlanRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PlanRefusal::Unsupported(e) | PlanRefusal::Partitions(e) | PlanRefusal::Graph(e) => {
                e.fmt(f)
            }
        }
    }
}

impl std::error::Error for PlanRefusal {}

/// Refuses, as `tinct analyze` does, an affinity graph the analysis of a
/// plan could not enumerate (a cycle, more than
/// [`crate::analysis::chains::MAX_CHAINS`] chains): before any search,
/// rather than as a plan that fails to re-verify.
pub fn check_graph(set: &TaskSet, file: &str) -> Result<(), InputError> {
    crate::analysis::chains::enumerate(set)
        .map(drop)
        .map_err(|e| e.input_error(file, set))
}

/// The checks `tinct plan` and Python's `TaskSet.plan` make before
/// planning `set` (read from `file`) with CATA, BFD or WFD, in their
/// order: the graph can be analyzed ([`check_graph`]), the algorithms can
/// plan it ([`unsupported`]), and the budget `requested` is 1 to N_P
/// ([`partition_budget`]). Returns the budget.
pub fn check_request(
    set: &TaskSet,
    file: &str,
    requested: Option<u32>,
) -> Result<u32, PlanRefusal> {
    check_graph(set, file).map_err(PlanRefusal::Graph)?;
    if let Some(refused) = unsupported(set) {
        return Err(PlanRefusal::Unsupported(InputError {
            file: file.into(),
            ..refused
        }));
    }
    partition_budget(set, file, requested).map_err(PlanRefusal::Partitions)
}

/// Allocates `set` with `algorithm`, spends CATA's leftover partitions
/// (unless `keep_free`), writes the cores, priorities and partitions into a
/// copy of the set and analyzes it.
pub fn plan(set: &TaskSet, algorithm: Algorithm, options: &PlanOptions) -> Plan {
    let inst = Instance::new(set);
    let budget = options
        .partitions
        .unwrap_or(inst.partitions)
        .min(inst.partitions);
    let mut assignment = match algorithm {
        Algorithm::Cata => cata_until(&inst, budget, &options.search, options.stop),
        Algorithm::Bfd => bin_pack_until(&inst, Fit::Best, budget, &options.search, options.stop),
        Algorithm::Wfd => bin_pack_until(&inst, Fit::Worst, budget, &options.search, options.stop),
    };
    let needed = assignment.partitions_used();
    if algorithm == Algorithm::Cata && assignment.schedulable() && !options.keep_free {
        spend_leftover_until(&inst, &mut assignment, &options.search, options.stop);
    }
    report(set, &inst, &assignment, needed, options)
}

/// [`Plan::analysis_error`] of a plan whose analysis a stop cut short.
pub const ANALYSIS_STOPPED: &str = "stopped by --timeout before the analysis of the plan finished: every task was placed, but the plan is not verified";

fn report(
    set: &TaskSet,
    inst: &Instance,
    assignment: &Assignment,
    needed: u32,
    options: &PlanOptions,
) -> Plan {
    let planned = assignment.apply(set, inst);
    let (analysis, analysis_error) = if assignment.schedulable() {
        match analyze_until(&planned, options.stop) {
            Ok(Some(analysis)) => (Some(analysis), None),
            Ok(None) => (None, Some(ANALYSIS_STOPPED.to_string())),
            Err(e) => (None, Some(e.to_string())),
        }
    } else {
        (None, None)
    };
    let mut offset = 0;
    let cores = assignment
        .cores
        .iter()
        .enumerate()
        .map(|(j, core)| {
            let partitions: Vec<u32> = (offset + 1..=offset + core.partitions).collect();
            offset += core.partitions;
            let tasks = core
                .tasks
                .iter()
                .map(|&i| {
                    let t = &planned.tasks[i];
                    PlannedTask {
                        task: i,
                        name: t.name.clone(),
                        priority: t.priority.unwrap_or(0),
                        policy: t.policy,
                        partitions: t.partitions.map(|s| s.to_vec()).unwrap_or_default(),
                        wcet_ns: t.effective_wcet().map_or(0, |c| c.0),
                        // The analysis lists tasks in file order.
                        wcrt_ns: analysis
                            .as_ref()
                            .and_then(|a| a.tasks.get(i))
                            .and_then(|r| r.wcrt_ns),
                        deadline_ns: t.deadline.0,
                    }
                })
                .collect();
            PlannedCore {
                core: j as u32,
                partitions,
                utilization: core.utilization,
                tasks,
            }
        })
        .collect();
    let unplaced = assignment
        .unplaced
        .iter()
        .map(|u| UnplacedTask {
            task: u.task,
            name: set.tasks[u.task].name.clone(),
            reason: u.reason,
            refusals: u.refusals.clone(),
            message: u.describe(set),
        })
        .collect();
    let stopped = options
        .stop
        .is_some_and(|s| s.load(std::sync::atomic::Ordering::Relaxed));
    Plan {
        algorithm: assignment.algorithm,
        schedulable: analysis.as_ref().is_some_and(|a| a.schedulable),
        budget: assignment.budget,
        partitions_used: assignment.partitions_used(),
        partitions_needed: needed,
        memory_efficiency: assignment.memory_efficiency(inst),
        total_utilization: assignment.total_utilization(),
        exact: assignment.exact && !stopped,
        nodes: assignment.nodes,
        stopped,
        cores,
        unplaced,
        analysis_error,
        planned: Some(planned),
        analysis,
    }
}

#[cfg(test)]
mod tests {
    use super::{InputError, partition_budget};

    #[test]
    fn the_budget_is_all_partitions_or_one_to_n_p() {
        let set = crate::format::parse(
            "[platform]\ncores = 1\npartitions = 4\nmemory = \"64MiB\"\nrefill = \"1us\"\n\n\
             [[task]]\nname = \"a\"\nperiod = \"10ms\"\nmemory = \"1MiB\"\nwcet = \"1ms\"\n",
            "t.toml",
            crate::format::Syntax::Toml,
        )
        .unwrap();
        assert_eq!(partition_budget(&set, "t.toml", None), Ok(4));
        assert_eq!(partition_budget(&set, "t.toml", Some(2)), Ok(2));
        for bad in [0, 5] {
            assert_eq!(
                partition_budget(&set, "t.toml", Some(bad)),
                Err(InputError::new(
                    "",
                    "partitions",
                    "1 to 4 (the platform's N_P in t.toml)",
                    bad.to_string()
                ))
            );
        }
    }
}
