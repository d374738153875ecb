//! Why a core refused a task: the true reason, found by asking the cheapest
//! questions first (kim2013 Algorithm 2 only says "no core can schedule
//! τ_i"; `tinct plan` says which test failed, for which task, on which core).

use super::assignment::{CoreRefusal, Refusal};
use super::instance::{INFEASIBLE, Instance};
use super::mincache::SearchOptions;
use super::solver::{Solved, Solver};
use crate::analysis::rta::{CoreTask, response_times};
use crate::analysis::utilization::core_utilization;
use crate::partitions::PartitionSet;

/// The least p of task `task`'s C^p table.
fn first_listed_p(inst: &Instance, task: usize) -> u32 {
    let wcet = &inst.tasks[task].wcet;
    (1..wcet.len())
        .find(|&p| wcet[p] != INFEASIBLE)
        .unwrap_or(wcet.len()) as u32
}

/// ⌈M_i · N_P / M_total⌉: the partitions task `task`'s memory needs alone.
fn memory_minimum(inst: &Instance, task: usize) -> u32 {
    let needed = u128::from(inst.tasks[task].memory) * u128::from(inst.partitions);
    let whole = needed.div_ceil(u128::from(inst.total_memory.max(1)));
    u32::try_from(whole).unwrap_or(u32::MAX)
}

/// The refusal when some task of `tasks` needs more than `partitions` on
/// its own (memory minimum or first listed p), if any.
pub(crate) fn too_few_partitions(
    inst: &Instance,
    tasks: &[usize],
    core: u32,
    partitions: u32,
) -> Option<CoreRefusal> {
    if partitions == 0 && !tasks.is_empty() {
        return Some(CoreRefusal::on(core, Refusal::NoPartitionLeft));
    }
    tasks
        .iter()
        .find(|&&i| inst.tasks[i].min_partitions > partitions)
        .map(|&i| {
            if memory_minimum(inst, i) > partitions {
                CoreRefusal::on(core, Refusal::Memory { partitions })
            } else {
                CoreRefusal::on(
                    core,
                    Refusal::Partitions {
                        needed: first_listed_p(inst, i),
                        available: partitions,
                    },
                )
            }
        })
}

/// Eq. (2) and Eq. (1) (the EDF test, for reservations, and Eq. (2) for
/// the SCHED_FIFO tasks below them) with every task of `order` (priority
/// order) at C^{partitions} and no cache terms: the best any allocation
/// can do.
pub(crate) fn best_case(
    inst: &Instance,
    order: &[usize],
    core: u32,
    partitions: u32,
    wcet_of: impl Fn(usize) -> u64,
) -> Option<CoreRefusal> {
    let mut tasks: Vec<CoreTask> = inst.core_tasks();
    tasks.extend(
        order
            .iter()
            .map(|&i| inst.tasks[i].core_task(wcet_of(i), PartitionSet::EMPTY)),
    );
    // The EDF test has no per-task miss to name (a demand overload is the
    // core's); the SCHED_FIFO tasks below the reservations do.
    if inst.has_reservations(order) && !inst.reservations_fit(&tasks, order, 0) {
        return Some(CoreRefusal::on(core, Refusal::EdfDemand { partitions }));
    }
    let (tasks, fifo) = inst.fixed_priority_core(&tasks, order, true);
    let skip = tasks.len() - fifo.len();
    if let Some(k) = response_times(&tasks, 0)
        .iter()
        .skip(skip)
        .position(|r| r.wcrt_ns.is_none())
    {
        return Some(CoreRefusal::on(
            core,
            Refusal::Deadline {
                task: fifo[k],
                partitions,
            },
        ));
    }
    (core_utilization(&tasks, 0) > 1.0)
        .then(|| CoreRefusal::on(core, Refusal::Utilization { partitions }))
}

/// Why MinCacheAlloc (with the solver's options) found no allocation of
/// `partitions` partitions to `members` plus `task`; `answer` is what it
/// returned.
pub(crate) fn refusal(
    solver: &mut Solver,
    task: usize,
    members: &[usize],
    core: u32,
    partitions: u32,
    answer: &Solved,
) -> CoreRefusal {
    let inst = solver.inst;
    let mut with_task = members.to_vec();
    with_task.push(task);
    let order = inst.by_priority(&with_task);
    if let Some(refusal) = too_few_partitions(inst, &order, core, partitions) {
        return refusal;
    }
    let memory_only = SearchOptions {
        check_time: false,
        ..solver.options
    };
    let memory = solver.solve_with(&order, partitions, memory_only);
    if memory.allocation.is_none() && memory.exact {
        return CoreRefusal::on(core, Refusal::Memory { partitions });
    }
    if let Some(refusal) = best_case(inst, &order, core, partitions, |i| {
        inst.tasks[i].wcet_at(partitions)
    }) {
        return refusal;
    }
    if !answer.exact || !memory.exact {
        let nodes = solver.options.node_budget.unwrap_or(0);
        return CoreRefusal::on(core, Refusal::Budget { nodes });
    }
    CoreRefusal::on(core, Refusal::Interference { partitions })
}
