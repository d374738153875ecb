//! kim2013 Algorithm 2 FindBestFit and Algorithm 3 CacheAwareTaskAlloc
//! (CATA), as written, and the final step of Section III-D that hands each
//! remaining partition to the core with the largest utilization saving.

use super::assignment::{Algorithm, Assignment, Reason, Unplaced};
use super::instance::Instance;
use super::mincache::{CoreAllocation, SearchOptions, extend_by_one};
use super::solver::Solver;

/// Algorithm 2: the best-fit core for task `task`, i.e. the core that can
/// schedule it (MinCacheAlloc finds a feasible allocation) and has the least
/// space 1 − util left. As in the paper (`space ≥ 1 − util`), a later core
/// wins a tie.
fn find_best_fit(
    solver: &mut Solver,
    task: usize,
    tasks: &[Vec<usize>],
    partitions: &[u32],
) -> Option<(usize, CoreAllocation)> {
    let mut space = 1.0;
    let mut best = None;
    for (j, (members, &count)) in tasks.iter().zip(partitions).enumerate() {
        let mut with_task = members.clone();
        with_task.push(task);
        if let Some(allocation) = solver.solve(&with_task, count, None)
            && space >= 1.0 - allocation.utilization
        {
            space = 1.0 - allocation.utilization;
            best = Some((j, allocation));
        }
    }
    best
}

/// Algorithm 3 with `budget` partitions: tasks in decreasing average
/// utilization; each goes to its best-fit core; if none fits, every core is
/// offered k = 1, 2, ... more partitions (while k ≤ the partitions left) and
/// only the chosen core keeps its k. Tasks that fit nowhere are reported and
/// the algorithm goes on with the rest.
pub fn cata(inst: &Instance, budget: u32, options: &SearchOptions) -> Assignment {
    let cores = inst.cores as usize;
    let mut solver = Solver::new(inst, *options);
    let mut order: Vec<usize> = (0..inst.tasks.len()).collect();
    let average: Vec<f64> = inst.tasks.iter().map(|t| t.average_utilization()).collect();
    order.sort_by(|&a, &b| average[b].total_cmp(&average[a]));

    let mut tasks: Vec<Vec<usize>> = vec![Vec::new(); cores];
    let mut partitions = vec![0u32; cores];
    let mut allocations: Vec<CoreAllocation> =
        (0..cores).map(|_| CoreAllocation::empty(0)).collect();
    let mut remaining = budget.min(inst.partitions);
    let mut unplaced = Vec::new();

    for &task in &order {
        if let Some((j, allocation)) = find_best_fit(&mut solver, task, &tasks, &partitions) {
            tasks[j].push(task);
            allocations[j] = allocation;
            continue;
        }
        // Lines 9-18: try k = 1, 2, ... more partitions on every core.
        let found = (1..=remaining).find_map(|k| {
            let offered: Vec<u32> = partitions.iter().map(|p| p + k).collect();
            find_best_fit(&mut solver, task, &tasks, &offered)
                .map(|(j, allocation)| (k, j, allocation))
        });
        if let Some((k, j, allocation)) = found {
            tasks[j].push(task);
            allocations[j] = allocation;
            remaining -= k;
            partitions[j] += k;
        } else {
            let reason = diagnose(&mut solver, task, &tasks, &partitions, remaining, true);
            unplaced.push(Unplaced { task, reason });
        }
    }
    let mut assignment = Assignment {
        algorithm: Algorithm::Cata,
        budget,
        cores: allocations,
        unplaced,
        exact: solver.exact,
        nodes: solver.nodes,
    };
    assignment.relabel_cores(&order);
    assignment
}

/// Time or memory: could any core hold the task's memory (Eq. 3) with all
/// the partitions that are left, ignoring time?
pub(crate) fn diagnose(
    solver: &mut Solver,
    task: usize,
    tasks: &[Vec<usize>],
    partitions: &[u32],
    extra: u32,
    sharing: bool,
) -> Reason {
    let options = SearchOptions {
        sharing,
        check_time: false,
        ..solver.options
    };
    let fits_somewhere = tasks.iter().zip(partitions).any(|(members, &count)| {
        let mut with_task = members.clone();
        with_task.push(task);
        solver
            .solve_with(&with_task, count + extra, options)
            .is_some()
    });
    if fits_somewhere {
        Reason::Time
    } else {
        Reason::Memory
    }
}

/// The final step of kim2013 III-D: each partition CATA left over goes to
/// the core whose Eq. (1) utilization drops most with one more partition
/// (the lower core number on a tie). Stops early when no core gains, so
/// partitions that help nobody stay free. Returns the partitions spent.
pub fn spend_leftover(
    inst: &Instance,
    assignment: &mut Assignment,
    options: &SearchOptions,
) -> u32 {
    let mut solver = Solver::new(inst, *options);
    let mut left = assignment
        .budget
        .min(inst.partitions)
        .saturating_sub(assignment.partitions_used());
    let mut offers: Vec<Option<CoreAllocation>> = vec![None; assignment.cores.len()];
    let mut spent = 0;
    while left > 0 {
        for (j, core) in assignment.cores.iter().enumerate() {
            if offers[j].is_none() && !core.tasks.is_empty() {
                let seed = extend_by_one(inst, core, options.check_time);
                offers[j] = solver.solve(&core.tasks, core.partitions + 1, seed);
            }
        }
        let mut best: Option<(usize, f64)> = None;
        for (j, offer) in offers.iter().enumerate() {
            if let Some(offer) = offer {
                let saving = assignment.cores[j].utilization - offer.utilization;
                if saving > 1e-12 && best.is_none_or(|(_, s)| saving > s) {
                    best = Some((j, saving));
                }
            }
        }
        let Some((j, _)) = best else { break };
        assignment.cores[j] = offers[j].take().expect("offer exists");
        left -= 1;
        spent += 1;
    }
    assignment.exact &= solver.exact;
    assignment.nodes += solver.nodes;
    spent
}
