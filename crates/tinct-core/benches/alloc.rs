//! Allocation speed.
//!
//! - `cata-kim2013`: full CATA (kim2013 Algorithm 3 with exact MinCacheAlloc,
//!   then the leftover-partition step) on Table I duplicated to n = 16 tasks,
//!   N_C = 4, N_P = 32, M_total = 1024 and 2048 MiB. Goal: under 1 s.
//! - `min-cache-alloc`: Algorithm 1 alone on the Table II core (4 tasks, 8 partitions).
//! - `random-set`: one task set of `tinct experiment random`'s defaults
//!   (n = 8, N_C = 4, N_P = 32, node budget 20 000) through BFD, WFD and
//!   CATA, single-threaded: its inverse is task sets per second per core.
//!
//! Before measuring, it prints how far the budgeted (anytime) search lands
//! from the exact optimum on the kim2013 settings.
//!
//! `cargo bench -p tinct-core --bench alloc`
// criterion_main! defines an undocumented `pub fn main`.
#![allow(missing_docs)]

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use tinct_core::alloc::{Algorithm, Instance, SearchOptions, allocate, cata, min_cache_alloc};
use tinct_core::generate::{RandomParams, random_task_set, replicate, rng_for};
use tinct_core::units::Bytes;

fn kim2013(copies: usize, mib: u64) -> Instance {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/kim2013.toml");
    let mut set = replicate(&tinct_core::format::load(&path).unwrap(), copies);
    set.platform.memory = Bytes(mib << 20);
    Instance::new(&set)
}

fn full_cata(inst: &Instance, options: &SearchOptions) -> f64 {
    let mut a = allocate(inst, Algorithm::Cata, inst.partitions, options);
    cata::spend_leftover(inst, &mut a, options);
    a.total_utilization()
}

/// MinCacheAlloc alone: on every core of the exact full-CATA plans, the
/// budgeted search's utilization minus the exact optimum (worst case).
fn report_call_distance() {
    for budget in [100u64, 1_000, 10_000] {
        let (mut calls, mut worst, mut missed, mut sum, mut optimal) = (0, 0.0f64, 0, 0.0, 0);
        for copies in [1, 2, 3, 4] {
            for mib in [1024, 2048] {
                let inst = kim2013(copies, mib);
                let mut plan = allocate(
                    &inst,
                    Algorithm::Cata,
                    inst.partitions,
                    &SearchOptions::EXACT,
                );
                cata::spend_leftover(&inst, &mut plan, &SearchOptions::EXACT);
                for core in plan.cores.iter().filter(|c| !c.tasks.is_empty()) {
                    for n in 1..=core.partitions {
                        let exact = min_cache_alloc(&inst, &core.tasks, n, &SearchOptions::EXACT)
                            .allocation;
                        let cheap =
                            min_cache_alloc(&inst, &core.tasks, n, &SearchOptions::budget(budget))
                                .allocation;
                        match (exact, cheap) {
                            (Some(e), Some(c)) => {
                                calls += 1;
                                let gap = c.utilization - e.utilization;
                                worst = worst.max(gap);
                                sum += gap;
                                optimal += usize::from(gap < 1e-9);
                            }
                            (Some(_), None) => missed += 1,
                            _ => {}
                        }
                    }
                }
            }
        }
        eprintln!(
            "MinCacheAlloc budget {budget}: {calls} feasible core questions, {optimal} solved optimally, mean gap {:.5}, worst gap {worst:.5} (Eq. 1 above exact), {missed} feasible ones not found",
            sum / f64::from(calls.max(1))
        );
    }
}

fn report_budget_distance() {
    report_call_distance();
    for copies in [2, 3, 4] {
        for mib in [1024, 2048] {
            let inst = kim2013(copies, mib);
            let exact = full_cata(&inst, &SearchOptions::EXACT);
            let line: Vec<String> = [100u64, 1_000, 10_000]
                .iter()
                .map(|&b| {
                    format!(
                        "budget {b}: {:+.4}",
                        full_cata(&inst, &SearchOptions::budget(b)) - exact
                    )
                })
                .collect();
            eprintln!(
                "n={} M={mib} MiB: exact total utilization {exact:.4}; {}",
                copies * 4,
                line.join(", ")
            );
        }
    }
}

fn bench(c: &mut Criterion) {
    report_budget_distance();
    let mut group = c.benchmark_group("cata-kim2013");
    group.sample_size(10);
    for mib in [1024u64, 2048] {
        let inst = kim2013(4, mib);
        group.bench_function(format!("n16-M{mib}-exact"), |b| {
            b.iter(|| black_box(full_cata(&inst, &SearchOptions::EXACT)))
        });
    }
    group.finish();

    let table1 = kim2013(1, 1024);
    c.bench_function("min-cache-alloc/table2-core", |b| {
        b.iter(|| {
            black_box(min_cache_alloc(
                &table1,
                &[0, 1, 2, 3],
                8,
                &SearchOptions::EXACT,
            ))
        })
    });

    let params = RandomParams::default();
    let options = SearchOptions::budget(20_000);
    let mut group = c.benchmark_group("random-set");
    group.sample_size(10);
    for utilization in [1.0, 2.0, 3.0] {
        let sets: Vec<Instance> = (0..20)
            .filter_map(|k| random_task_set(&params, utilization, &mut rng_for(1, k)))
            .map(|s| Instance::new(&s))
            .collect();
        group.bench_function(format!("U{utilization}-20-sets-3-algorithms"), |b| {
            b.iter(|| {
                for inst in &sets {
                    for algorithm in Algorithm::ALL {
                        black_box(allocate(inst, algorithm, 32, &options).schedulable());
                    }
                }
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
