//! The exact fixed-priority RTA on one core at 10, 25, 50 and 100 tasks
//! (issue 17, item 4): random implicit-deadline sets (UUniFast at
//! utilization 0.8, log-uniform periods 1 ms - 1 s, rate-monotonic order,
//! no cache terms), 32 fixed seeded sets per size, each bench one pass
//! over all 32 (the reported time divided by 32 is the time per set).
//!
//! `cargo bench -p tinct-core --bench rta_scaling`

// criterion_main! defines an undocumented `pub fn main`.
#![allow(missing_docs)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::hint::black_box;
use tinct_core::PartitionSet;
use tinct_core::analysis::rta::{CoreTask, core_schedulable, response_times};
use tinct_core::generate::{log_uniform_period, uunifast_discard};

const SETS: usize = 32;

/// One core of `n` tasks at total utilization `u`, highest priority first.
fn random_core(n: usize, u: f64, rng: &mut ChaCha8Rng) -> Vec<CoreTask> {
    let utils = uunifast_discard(rng, n, u).expect("u < 1 never discards");
    let mut tasks: Vec<CoreTask> = utils
        .into_iter()
        .map(|u| {
            let period = log_uniform_period(rng, 1_000_000, 1_000_000_000);
            let wcet = ((u * period as f64) as u64).max(1);
            CoreTask::new(wcet, period, period, PartitionSet::EMPTY)
        })
        .collect();
    tasks.sort_by_key(|t| t.period);
    tasks
}

fn bench(c: &mut Criterion) {
    for n in [10usize, 25, 50, 100] {
        let mut rng = ChaCha8Rng::seed_from_u64(17 + n as u64);
        let sets: Vec<Vec<CoreTask>> = (0..SETS).map(|_| random_core(n, 0.8, &mut rng)).collect();
        let schedulable = sets.iter().filter(|s| core_schedulable(s, 0)).count();
        eprintln!("{n} tasks: {schedulable} of {SETS} sets schedulable");
        let mut group = c.benchmark_group(format!("rta-{n}-tasks"));
        group.throughput(Throughput::Elements(SETS as u64));
        group.bench_function("response_times (every task, breakdown)", |b| {
            b.iter(|| {
                for set in &sets {
                    black_box(response_times(black_box(set), 0));
                }
            })
        });
        group.bench_function("core_schedulable (stops at the first miss)", |b| {
            b.iter(|| {
                for set in &sets {
                    black_box(core_schedulable(black_box(set), 0));
                }
            })
        });
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
