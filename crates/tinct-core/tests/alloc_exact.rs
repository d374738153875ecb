//! MinCacheAlloc (kim2013 Algorithm 1) against brute force: on small cores
//! the exact search must find the same least Eq. (1) utilization as trying
//! every assignment of subsets S(i) ⊆ {1..N}, and agree on infeasibility.

mod common;

use proptest::prelude::*;
use std::collections::BTreeMap;
use tinct_core::PartitionSet;
use tinct_core::alloc::{Instance, SearchOptions, min_cache_alloc};
use tinct_core::analysis::memory::{MemoryDemand, feasible};
use tinct_core::analysis::rta::{CoreTask, core_schedulable};
use tinct_core::analysis::utilization::core_utilization;
use tinct_core::model::{Platform, Task, TaskSet, WcetTable};
use tinct_core::units::{Bytes, Nanos};

/// A task drawn by proptest: period in ms, worst C in permille of T, the
/// drop of C per extra partition, memory in memory partitions (tenths).
#[derive(Clone, Debug)]
struct Draw {
    period_ms: u64,
    worst_permille: u64,
    drops: Vec<u64>,
    memory_tenths: u64,
}

fn draw() -> impl Strategy<Value = Draw> {
    (
        5u64..60,
        50u64..450,
        prop::collection::vec(0u64..80, 6),
        1u64..25,
    )
        .prop_map(|(period_ms, worst_permille, drops, memory_tenths)| Draw {
            period_ms,
            worst_permille,
            drops,
            memory_tenths,
        })
}

/// N partitions of 1 MiB each (M_total = N MiB), Δ = 0.3 ms: cache terms
/// matter as much as the C^p curve, so sharing is a real trade-off.
fn task_set(draws: &[Draw], partitions: u32) -> TaskSet {
    let tasks = draws
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let period = d.period_ms * 1_000_000;
            let mut c = period * d.worst_permille / 1000;
            let mut listed = BTreeMap::new();
            for p in 1..=partitions {
                listed.insert(p, Nanos(c));
                c = c
                    .saturating_sub(period * d.drops[(p - 1) as usize] / 1000)
                    .max(1);
            }
            Task::periodic(
                format!("t{i}"),
                Nanos(period),
                Bytes((1 << 20) * d.memory_tenths / 10),
                WcetTable::new(listed),
            )
        })
        .collect();
    TaskSet::new(
        Platform {
            partitions,
            memory: Bytes(u64::from(partitions) << 20),
            refill: Nanos(300_000),
            ..common::platform(1)
        },
        tasks,
    )
}

/// The least Eq. (1) utilization over every assignment of subsets that
/// passes Eq. (2), Eq. (3) and Eq. (1) ≤ 1, using only the analysis module.
fn brute_force(set: &TaskSet, sharing: bool) -> Option<f64> {
    let n = set.platform.partitions;
    let priorities = set.priorities();
    let mut order: Vec<usize> = (0..set.tasks.len()).collect();
    order.sort_by_key(|&i| (priorities[i], i));
    let subsets = 1u32 << n;
    let total = u64::from(subsets).pow(order.len() as u32);
    let mut best: Option<f64> = None;
    for code in 0..total {
        let mut rest = code;
        let mut tasks = Vec::new();
        let mut demands = Vec::new();
        let mut union = 0u32;
        let mut ok = true;
        for &i in &order {
            let mask = (rest % u64::from(subsets)) as u32;
            rest /= u64::from(subsets);
            if !sharing && union & mask != 0 {
                ok = false;
                break;
            }
            union |= mask;
            let set_i: PartitionSet = (1..=n).filter(|p| mask & (1 << (p - 1)) != 0).collect();
            let task = &set.tasks[i];
            let Some(c) = task.wcet.at(set_i.len()).filter(|_| !set_i.is_empty()) else {
                ok = false;
                break;
            };
            tasks.push(CoreTask::new(c.0, task.period.0, task.deadline.0, set_i));
            demands.push(MemoryDemand {
                memory: task.memory.0,
                partitions: set_i,
            });
        }
        if !ok || !feasible(&demands, set.platform.memory.0, n) {
            continue;
        }
        // |S(i)| must also hold M_i: Eq. (3) on its own partitions covers it.
        let u = core_utilization(&tasks, set.platform.refill.0);
        if u <= 1.0 && core_schedulable(&tasks, set.platform.refill.0) && best.is_none_or(|b| u < b)
        {
            best = Some(u);
        }
    }
    best
}

fn check(draws: &[Draw], partitions: u32) -> Result<(), TestCaseError> {
    let set = task_set(draws, partitions);
    let inst = Instance::new(&set);
    let all: Vec<usize> = (0..set.tasks.len()).collect();
    for sharing in [true, false] {
        let options = if sharing {
            SearchOptions::EXACT
        } else {
            SearchOptions::EXACT.without_sharing()
        };
        let exact = min_cache_alloc(&inst, &all, partitions, &options);
        prop_assert!(exact.exact);
        let brute = brute_force(&set, sharing);
        match (&exact.allocation, brute) {
            (None, None) => {}
            (Some(a), Some(b)) => prop_assert!(
                (a.utilization - b).abs() < 1e-9,
                "sharing={sharing}: search {} vs brute force {b}: {:?}",
                a.utilization,
                a.sets
            ),
            (a, b) => prop_assert!(
                false,
                "sharing={sharing}: search {:?} vs brute force {:?}",
                a,
                b
            ),
        }
        // Any budget gives a feasible allocation no better than the optimum.
        let cheap = min_cache_alloc(
            &inst,
            &all,
            partitions,
            &SearchOptions {
                node_budget: Some(3),
                ..options
            },
        );
        if let (Some(c), Some(b)) = (&cheap.allocation, brute) {
            prop_assert!(c.utilization >= b - 1e-9);
        }
        if cheap.allocation.is_some() {
            prop_assert!(brute.is_some());
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn three_tasks_four_partitions(draws in prop::collection::vec(draw(), 1..=3)) {
        check(&draws, 4)?;
    }

    #[test]
    fn two_tasks_six_partitions(draws in prop::collection::vec(draw(), 1..=2)) {
        check(&draws, 6)?;
    }
}

/// The paper's Table II allocation (all four tasks on one core, 8
/// partitions) is optimal, and MinCacheAlloc finds an allocation with its
/// utilization.
#[test]
fn table_ii_is_an_optimum() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let table2 = tinct_core::format::load(&root.join("kim2013-table2.toml")).unwrap();
    let analysis = tinct_core::analysis::analyze(&table2).unwrap();
    let paper = analysis.cores[0].utilization;
    let set = tinct_core::format::load(&root.join("kim2013.toml")).unwrap();
    let inst = Instance::new(&set);
    let found = min_cache_alloc(&inst, &[0, 1, 2, 3], 8, &SearchOptions::EXACT);
    let found = found
        .allocation
        .expect("Table II shows a feasible allocation");
    assert!(
        (found.utilization - paper).abs() < 1e-12,
        "{} vs {paper}",
        found.utilization
    );
    let sizes: Vec<u32> = found.sets.iter().map(|s| s.len()).collect();
    assert_eq!(sizes, vec![8, 3, 8, 5]);
}

/// BFD/WFD split a core's private partitions by dynamic programming; on
/// every core they fill, the exhaustive private search (MinCacheAlloc
/// without sharing) finds exactly the same least Eq. (1) utilization.
fn check_private_split(draws: &[Draw], partitions: u32) -> Result<(), TestCaseError> {
    let mut set = task_set(draws, partitions);
    set.platform.cores = 2;
    let inst = Instance::new(&set);
    for algorithm in [
        tinct_core::alloc::Algorithm::Bfd,
        tinct_core::alloc::Algorithm::Wfd,
    ] {
        let assignment =
            tinct_core::alloc::allocate(&inst, algorithm, partitions, &SearchOptions::EXACT);
        for core in assignment.cores.iter().filter(|c| !c.tasks.is_empty()) {
            let exhaustive = min_cache_alloc(
                &inst,
                &core.tasks,
                core.partitions,
                &SearchOptions::EXACT.without_sharing(),
            );
            let best = exhaustive
                .allocation
                .expect("the DP's split is feasible, so the search finds one");
            prop_assert!(
                (best.utilization - core.utilization).abs() < 1e-9,
                "{algorithm:?}: search {} vs DP {}",
                best.utilization,
                core.utilization
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn private_split_is_the_least_utilization(draws in prop::collection::vec(draw(), 1..=5)) {
        check_private_split(&draws, 6)?;
    }
}
