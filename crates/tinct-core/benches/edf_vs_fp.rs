//! The exact EDF processor-demand test (QPA) beside the exact
//! fixed-priority RTA on the same one-core sets (issue 30's speed goal:
//! EDF within 10× of FP at n = 50): UUniFast at utilization 0.8,
//! log-uniform periods 1 ms - 1 s, constrained deadlines drawn from
//! [C + (T − C)/2, T], deadline-monotonic order for FP, no cache terms; 32
//! fixed seeded sets per size, each bench one pass over all 32. EDF is
//! timed twice: with the classic jitter model (busy-period horizon) and
//! with deadlines from the wake-up, as `analyze` decides SCHED_DEADLINE
//! tasks (horizon L_a or one hyperperiod). The benches run side by side in
//! one process; compare their medians.
//!
//! `cargo bench -p tinct-core --bench edf_vs_fp`

// criterion_main! defines an undocumented `pub fn main`.
#![allow(missing_docs)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::hint::black_box;
use tinct_core::PartitionSet;
use tinct_core::analysis::edf::{Demand, EdfTask, decide};
use tinct_core::analysis::rta::{CoreTask, core_schedulable};
use tinct_core::generate::{log_uniform_period, uunifast_discard};

const SETS: usize = 32;

/// One core of `n` tasks at utilization `u`: the FP view (deadline-
/// monotonic) and the EDF view of the same tasks.
fn random_core(n: usize, u: f64, rng: &mut ChaCha8Rng) -> (Vec<CoreTask>, Vec<EdfTask>) {
    let utils = uunifast_discard(rng, n, u).expect("u < 1 never discards");
    let mut tasks: Vec<CoreTask> = utils
        .into_iter()
        .map(|u| {
            let period = log_uniform_period(rng, 1_000_000, 1_000_000_000);
            let wcet = ((u * period as f64) as u64).max(1);
            let slack = period - wcet;
            let deadline = wcet + slack / 2 + (rng.random::<f64>() * (slack / 2) as f64) as u64;
            CoreTask::new(wcet, period, deadline, PartitionSet::EMPTY)
        })
        .collect();
    tasks.sort_by_key(|t| t.deadline);
    let edf = tasks
        .iter()
        .map(|t| EdfTask::new(t.wcet, t.deadline, t.period))
        .collect();
    (tasks, edf)
}

fn bench(c: &mut Criterion) {
    for n in [10usize, 25, 50] {
        let mut rng = ChaCha8Rng::seed_from_u64(30 + n as u64);
        let sets: Vec<(Vec<CoreTask>, Vec<EdfTask>)> =
            (0..SETS).map(|_| random_core(n, 0.8, &mut rng)).collect();
        let fp = sets
            .iter()
            .filter(|(fp, _)| core_schedulable(fp, 0))
            .count();
        let edf = sets
            .iter()
            .filter(|(_, edf)| matches!(decide(edf), Ok(Demand::Fits { .. })))
            .count();
        eprintln!("{n} tasks: schedulable {fp} of {SETS} under FP, {edf} under EDF");
        let mut group = c.benchmark_group(format!("edf-vs-fp-{n}-tasks"));
        group.throughput(Throughput::Elements(SETS as u64));
        group.bench_function("fp core_schedulable", |b| {
            b.iter(|| {
                for (set, _) in &sets {
                    black_box(core_schedulable(black_box(set), 0));
                }
            })
        });
        group.bench_function("edf decide (QPA)", |b| {
            b.iter(|| {
                for (_, set) in &sets {
                    black_box(decide(black_box(set)).ok());
                }
            })
        });
        let from_wake: Vec<Vec<EdfTask>> = sets
            .iter()
            .map(|(_, set)| {
                set.iter()
                    .map(|t| EdfTask {
                        deadline_from_wake: true,
                        ..*t
                    })
                    .collect()
            })
            .collect();
        group.bench_function(
            "edf decide, deadlines from the wake-up (SCHED_DEADLINE)",
            |b| {
                b.iter(|| {
                    for set in &from_wake {
                        black_box(decide(black_box(set)).ok());
                    }
                })
            },
        );
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
