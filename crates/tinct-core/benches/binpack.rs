//! The BFD and WFD baselines (kim2013 IV-E) at scale: 2000 random tasks on
//! 64 cores with 256 partitions (4 private partitions per core), whole
//! plans through `alloc::plan`. Goal (issue 10): each plan under a second;
//! they used to be exponential in the tasks per core.
//!
//! `cargo bench -p tinct-core --bench binpack`
// criterion_main! defines an undocumented `pub fn main`.
#![allow(missing_docs)]

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use tinct_core::alloc::{Algorithm, PlanOptions, plan};
use tinct_core::generate::{RandomParams, random_task_set, rng_for};

fn bench(c: &mut Criterion) {
    let params = RandomParams {
        tasks: 2000,
        cores: 64,
        partitions: 256,
        total_memory: 64 << 30,
        ..RandomParams::default()
    };
    let set = random_task_set(&params, 32.0, &mut rng_for(1, 0)).expect("UUniFast draws");
    let mut group = c.benchmark_group("binpack-2000-tasks-64-cores");
    group.sample_size(10);
    for algorithm in [Algorithm::Bfd, Algorithm::Wfd] {
        let once = plan(&set, algorithm, &PlanOptions::default());
        let placed: usize = once.cores.iter().map(|c| c.tasks.len()).sum();
        eprintln!(
            "{}: {placed} of 2000 tasks placed, {} partitions used",
            algorithm.name(),
            once.partitions_used
        );
        group.bench_function(algorithm.name(), |b| {
            b.iter(|| black_box(plan(&set, algorithm, &PlanOptions::default())))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
