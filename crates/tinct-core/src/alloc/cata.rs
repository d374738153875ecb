//! kim2013 Algorithm 2 FindBestFit and Algorithm 3 CacheAwareTaskAlloc
//! (CATA), as written, and the final step of Section III-D that hands each
//! remaining partition to the core with the largest utilization saving.

use super::assignment::{Algorithm, Assignment, Unplaced};
use super::diagnose::refusal;
use super::instance::Instance;
use super::mincache::{CoreAllocation, SearchOptions, extend_by_one};
use super::solver::Solver;
use std::sync::atomic::AtomicBool;

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
    cata_until(inst, budget, options, None)
}

/// [`cata`] that stops cleanly when `stop` is set (a timeout): tasks placed
/// so far keep their cores, the others are reported as not reached.
pub fn cata_until(
    inst: &Instance,
    budget: u32,
    options: &SearchOptions,
    stop: Option<&AtomicBool>,
) -> Assignment {
    let cores = inst.cores as usize;
    let mut solver = Solver::new(inst, *options, stop);
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
        if solver.stopped() {
            unplaced.push(Unplaced::stopped(task));
            continue;
        }
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
        } else if solver.stopped() {
            unplaced.push(Unplaced::stopped(task));
        } else {
            let refusals = (0..cores)
                .map(|j| {
                    let offered = partitions[j] + remaining;
                    let answer = solver.solve_outcome(&with(&tasks[j], task), offered, None);
                    refusal(&mut solver, task, &tasks[j], j as u32, offered, &answer)
                })
                .collect();
            unplaced.push(Unplaced::refused(task, refusals));
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

/// `members` with `task` appended.
fn with(members: &[usize], task: usize) -> Vec<usize> {
    let mut all = members.to_vec();
    all.push(task);
    all
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
    spend_leftover_until(inst, assignment, options, None)
}

/// [`spend_leftover`] that stops handing out partitions when `stop` is set.
pub fn spend_leftover_until(
    inst: &Instance,
    assignment: &mut Assignment,
    options: &SearchOptions,
    stop: Option<&AtomicBool>,
) -> u32 {
    let mut solver = Solver::new(inst, *options, stop);
    let mut left = assignment
        .budget
        .min(inst.partitions)
        .saturating_sub(assignment.partitions_used());
    let mut offers: Vec<Option<CoreAllocation>> = vec![None; assignment.cores.len()];
    let mut spent = 0;
    while left > 0 && !solver.stopped() {
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
