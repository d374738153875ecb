//! The baselines of kim2013 IV-E: best-fit and worst-fit decreasing bin
//! packing combined with conventional cache partitioning. The given
//! partitions are split evenly over the cores up front; tasks are sorted by
//! decreasing utilization at the per-core partition count; each core gives
//! its tasks private partitions (no sharing), sized by MinCacheAlloc without
//! sharing so that the core's Eq. (1) utilization is least.

use super::assignment::{Algorithm, Assignment, CoreRefusal, Refusal, Unplaced};
use super::diagnose::{best_case, too_few_partitions};
use super::instance::{INFEASIBLE, Instance};
use super::mincache::SearchOptions;
use super::private::PrivateCore;
use std::sync::atomic::{AtomicBool, Ordering};

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
/// Polynomial: O(n · N_C · N_P^j) to choose cores plus O(n · N_P^j²) for
/// the accepted tasks, each core's split by `alloc/private`. `options`
/// play no part (there is no search to budget); the signature matches the
/// other algorithms.
pub fn bin_pack(inst: &Instance, fit: Fit, budget: u32, options: &SearchOptions) -> Assignment {
    bin_pack_until(inst, fit, budget, options, None)
}

/// [`bin_pack`] that stops cleanly when `stop` is set.
pub fn bin_pack_until(
    inst: &Instance,
    fit: Fit,
    budget: u32,
    _options: &SearchOptions,
    stop: Option<&AtomicBool>,
) -> Assignment {
    let budget = budget.min(inst.partitions);
    let split = even_split(budget, inst.cores);
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

    let mut cores: Vec<PrivateCore> = split.iter().map(|&p| PrivateCore::new(p)).collect();
    let mut unplaced = Vec::new();
    for &task in &order {
        if stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
            unplaced.push(Unplaced::stopped(task));
            continue;
        }
        let mut chosen: Option<(usize, super::mincache::CoreAllocation)> = None;
        for (j, core) in cores.iter().enumerate() {
            let Ok(allocation) = core.with_task(inst, task) else {
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
            Some((j, allocation)) => cores[j].add(inst, task, allocation),
            None => {
                let refusals = cores
                    .iter()
                    .enumerate()
                    .map(|(j, core)| refusal(inst, core, j as u32, task))
                    .collect();
                unplaced.push(Unplaced::refused(task, refusals));
            }
        }
    }
    Assignment {
        algorithm: match fit {
            Fit::Best => Algorithm::Bfd,
            Fit::Worst => Algorithm::Wfd,
        },
        budget,
        cores: cores.into_iter().map(|c| c.allocation).collect(),
        unplaced,
        exact: true,
        nodes: 0,
    }
}

/// Why `core` (number `j`) cannot take `task` with private partitions.
fn refusal(inst: &Instance, core: &PrivateCore, j: u32, task: usize) -> CoreRefusal {
    let mut members = core.tasks.clone();
    members.push(task);
    if let Some(refusal) = too_few_partitions(inst, &[task], j, core.partitions) {
        return refusal;
    }
    let needed = core.least + inst.tasks[task].min_partitions;
    if needed > core.partitions {
        let memory: u32 = members
            .iter()
            .map(|&i| {
                let m = u128::from(inst.tasks[i].memory) * u128::from(inst.partitions);
                u32::try_from(m.div_ceil(u128::from(inst.total_memory.max(1)))).unwrap_or(u32::MAX)
            })
            .fold(0u32, u32::saturating_add);
        return CoreRefusal::on(
            j,
            Refusal::Full {
                needed,
                available: core.partitions,
                memory: memory > core.partitions,
            },
        );
    }
    // The least-utilization split failed Eq. (2) or Eq. (1): say which.
    let sizes: Vec<(usize, u32)> = match core.with_task(inst, task) {
        Err(Some(split)) => split
            .tasks
            .iter()
            .zip(&split.sets)
            .map(|(&i, s)| (i, s.len()))
            .collect(),
        _ => members
            .iter()
            .map(|&i| (i, inst.tasks[i].min_partitions))
            .collect(),
    };
    let order = inst.by_priority(&members);
    let size_of = |i: usize| sizes.iter().find(|(t, _)| *t == i).map_or(0, |&(_, s)| s);
    best_case(inst, &order, j, core.partitions, |i| {
        inst.tasks[i].wcet_at(size_of(i))
    })
    .unwrap_or(CoreRefusal::on(
        j,
        if inst.has_reservations(&order) {
            Refusal::EdfDemand {
                partitions: core.partitions,
            }
        } else {
            Refusal::Utilization {
                partitions: core.partitions,
            }
        },
    ))
}
