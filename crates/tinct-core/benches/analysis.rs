//! How many 10-task core analyses per second the core does: the inner loop
//! of exhaustive allocation searches.
//!
//! `cargo bench -p tinct-core --bench analysis`
// criterion_main! defines an undocumented `pub fn main`.
#![allow(missing_docs)]

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use tinct_core::PartitionSet;
use tinct_core::analysis::rta::{CoreTask, core_schedulable, response_times};

/// Ten tasks on one core, sharing 16 partitions in overlapping windows;
/// utilization about 0.6 so every response-time iteration runs to a fixed point.
fn ten_tasks() -> Vec<CoreTask> {
    (0..10u32)
        .map(|i| {
            let period = 10_000_000 + u64::from(i) * 7_300_000;
            CoreTask::new(
                period * 6 / 100,
                period,
                period,
                PartitionSet::range(1 + i, 4 + i),
            )
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let tasks = ten_tasks();
    assert!(core_schedulable(&tasks, 45_300));
    let mut group = c.benchmark_group("analysis-10-tasks");
    group.throughput(Throughput::Elements(1));
    group.bench_function("core_schedulable (Eq. 2, early exit, no allocation)", |b| {
        b.iter(|| core_schedulable(black_box(&tasks), black_box(45_300)))
    });
    group.bench_function("response_times (Eq. 2 with breakdown)", |b| {
        b.iter(|| response_times(black_box(&tasks), black_box(45_300)))
    });
    group.bench_function("classic RTA (Δ = 0)", |b| {
        b.iter(|| core_schedulable(black_box(&tasks), black_box(0)))
    });
    group.finish();

    let set = tinct_core::format::load(std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/kim2013-table2.toml"
    )))
    .expect("example loads");
    c.bench_function("full analyze() of Table II (report structs)", |b| {
        b.iter_batched(
            || set.clone(),
            |s| tinct_core::analysis::analyze(&s),
            BatchSize::SmallInput,
        )
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
