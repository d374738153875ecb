//! The baselines of kim2013 IV-E: best-fit and worst-fit decreasing bin
//! packing combined with conventional cache partitioning. The given
//! partitions are split evenly over the cores up front; tasks are sorted by
//! decreasing utilization at the per-core partition count; each core gives
//! its tasks private partitions (no sharing), sized by MinCacheAlloc without
//! sharing so that the core's Eq. (1) utilization is least.

use super::assignment::{Algorithm, Assignment, Unplaced};
use super::cata::diagnose;
use super::instance::{INFEASIBLE, Instance};
use super::mincache::{CoreAllocation, SearchOptions};
use super::solver::Solver;

/// Which core a task goes to among those that can schedule it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Fit {
    /// The fullest core (least 1 − util left): BFD.
    Best,
    /// The emptiest core: WFD.
    Worst,
}

/// Partitions per core when `budget` is split evenly: the first
/// `budget mod N_C` cores get one more.
pub fn even_split(budget: u32, cores: u32) -> Vec<u32> {
    let cores = cores.max(1);
    (0..cores)
        .map(|j| budget / cores + u32::from(j < budget % cores))
        .collect()
}

/// BFD or WFD with `budget` partitions (ties go to the lower core number).
pub fn bin_pack(inst: &Instance, fit: Fit, budget: u32, options: &SearchOptions) -> Assignment {
    let budget = budget.min(inst.partitions);
    let split = even_split(budget, inst.cores);
    let options = options.without_sharing();
    let mut solver = Solver::new(inst, options);
    let per_core = split.first().copied().unwrap_or(0);
    let utilization: Vec<f64> = inst
        .tasks
        .iter()
        .map(|t| {
            let c = match t.wcet_at(per_core.max(t.min_partitions)) {
                INFEASIBLE => t.wcet_at(t.min_partitions),
                c => c,
            };
            c as f64 / t.period as f64
        })
        .collect();
    let mut order: Vec<usize> = (0..inst.tasks.len()).collect();
    order.sort_by(|&a, &b| utilization[b].total_cmp(&utilization[a]));

    let mut tasks: Vec<Vec<usize>> = vec![Vec::new(); split.len()];
    let mut allocations: Vec<CoreAllocation> =
        split.iter().map(|&p| CoreAllocation::empty(p)).collect();
    let mut unplaced = Vec::new();
    for &task in &order {
        let mut chosen: Option<(usize, CoreAllocation)> = None;
        for (j, members) in tasks.iter().enumerate() {
            let mut with_task = members.clone();
            with_task.push(task);
            let Some(allocation) = solver.solve(&with_task, split[j], None) else {
                continue;
            };
            let wins = match (&chosen, fit) {
                (None, _) => true,
                (Some((_, c)), Fit::Best) => allocation.utilization > c.utilization,
                (Some((_, c)), Fit::Worst) => allocation.utilization < c.utilization,
            };
            if wins {
                chosen = Some((j, allocation));
            }
        }
        match chosen {
            Some((j, allocation)) => {
                tasks[j].push(task);
                allocations[j] = allocation;
            }
            None => {
                let reason = diagnose(&mut solver, task, &tasks, &split, 0, false);
                unplaced.push(Unplaced { task, reason });
            }
        }
    }
    Assignment {
        algorithm: match fit {
            Fit::Best => Algorithm::Bfd,
            Fit::Worst => Algorithm::Wfd,
        },
        budget,
        cores: allocations,
        unplaced,
        exact: solver.exact,
        nodes: solver.nodes,
    }
}
