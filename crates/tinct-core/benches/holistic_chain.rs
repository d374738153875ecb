//! The holistic rounds of a one-core chain of data-triggered tasks (issue
//! 27): t0 (T = D = 100 ms) → t1 → … → t(n−1), C = 1 µs each, priorities
//! in chain order. Each task inherits its producer's response time as
//! jitter, so a round moves the jitters of most tasks below the first it
//! changes, and past t446 they pass the deadline: the tail misses, and each
//! round makes one more jitter unbounded (447 rounds).
//!
//! Side by side, on the same rounds, n = 1000 and 2000:
//! - `each move`: how the rounds ran before (`ReuseCheck::EachMove`, every
//!   round with its breakdowns): every task checked against each moved
//!   task, each re-analysed task's breakdown summed over every term;
//! - `zones`: the moved tasks' release zones merged per period, the rounds
//!   before the last without breakdowns, the last with them.
//!
//! Both without cache terms (Δ = 0) and with them (Δ = 10 ns, every task
//! in partition 1). The results are checked equal before timing.
//! `tinct_core::analysis::analyze` of the whole set is timed too (after
//! only: it runs the `zones` rounds once per Δ, CInt and NoCInt).
//!
//! `cargo bench -p tinct-core --bench holistic_chain`

// criterion_main! defines an undocumented `pub fn main`.
#![allow(missing_docs)]

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use std::time::Duration;
use tinct_core::PartitionSet;
use tinct_core::analysis::rta::{CoreTask, JitterRounds, ResponseTime, ReuseCheck};

const PERIOD: u64 = 100_000_000;
const WCET: u64 = 1_000;

/// The chain's tasks, highest priority first, in `partitions`.
fn chain(n: usize, partitions: PartitionSet) -> Vec<CoreTask> {
    (0..n)
        .map(|_| CoreTask::new(WCET, PERIOD, PERIOD, partitions))
        .collect()
}

/// The holistic fixed point of the chain: J_k = R_{k−1} (unbounded when
/// t(k−1) misses), rounds until no jitter moves; the last round's results.
fn rounds(tasks: &[CoreTask], refill: u64, check: ReuseCheck) -> Vec<ResponseTime> {
    let mut tasks = tasks.to_vec();
    let mut core = JitterRounds::with_check(check);
    loop {
        let wcrts: Vec<Option<u64>> = match check {
            ReuseCheck::EachMove => core
                .response_times(&tasks, refill)
                .iter()
                .map(|r| r.wcrt_ns)
                .collect(),
            ReuseCheck::Zones => core.worst_case_response_times(&tasks, refill),
        };
        let mut moved = false;
        for k in 1..tasks.len() {
            let jitter = wcrts[k - 1].unwrap_or(u64::MAX);
            moved |= tasks[k].jitter != jitter;
            tasks[k].jitter = jitter;
        }
        if !moved {
            return core.response_times(&tasks, refill);
        }
    }
}

/// The same chain as a task-set file.
fn chain_file(n: usize, refill: u64, partitions: &str) -> String {
    let mut text = format!(
        "[platform]\ncores = 1\npartitions = 4\nmemory = \"4MiB\"\nrefill = \"{refill}ns\"\n"
    );
    for k in 0..n {
        let release = if k == 0 {
            format!("period = \"{PERIOD}ns\"\n")
        } else {
            "trigger = \"data\"\n".to_string()
        };
        text += &format!(
            "\n[[task]]\nname = \"t{k}\"\n{release}memory = \"1KiB\"\nwcet = \"{WCET}ns\"\n{partitions}"
        );
        if k > 0 {
            text += &format!(
                "\n[[edge]]\nfrom = \"t{}\"\nto = \"t{k}\"\nbuffer = \"1KiB\"\n",
                k - 1
            );
        }
    }
    text
}

fn bench(c: &mut Criterion) {
    let cases = [
        ("Δ = 0", 0, PartitionSet::EMPTY, ""),
        (
            "Δ = 10 ns, one shared partition",
            10,
            PartitionSet::range(1, 1),
            "partitions = [1]\n",
        ),
    ];
    // `cargo test --all-targets` runs each benchmark once, in a debug
    // build, to see that it works: there, chains of 200 and 500 tasks
    // (500 still passes t446, where the tail misses), not the minutes the
    // old rounds take on 2000 unoptimised.
    let sizes: &[usize] = if std::env::args().any(|a| a == "--bench") {
        &[1000, 2000]
    } else {
        &[200, 500]
    };
    for (name, refill, partitions, in_file) in cases {
        for &n in sizes {
            let tasks = chain(n, partitions);
            let zones = rounds(&tasks, refill, ReuseCheck::Zones);
            assert_eq!(zones, rounds(&tasks, refill, ReuseCheck::EachMove));
            let missed = zones.iter().filter(|r| r.wcrt_ns.is_none()).count();
            eprintln!("{name}, n = {n}: {missed} tasks miss");
            let set = tinct_core::format::parse(
                &chain_file(n, refill, in_file),
                "chain.toml",
                tinct_core::format::Syntax::Toml,
            )
            .expect("the chain parses");
            let mut group = c.benchmark_group(format!("holistic-chain {name}, n = {n}"));
            group.sample_size(10);
            group.warm_up_time(Duration::from_millis(500));
            group.measurement_time(Duration::from_secs(5));
            group.bench_function("each move (before)", |b| {
                b.iter(|| rounds(black_box(&tasks), refill, ReuseCheck::EachMove))
            });
            group.bench_function("zones (after)", |b| {
                b.iter(|| rounds(black_box(&tasks), refill, ReuseCheck::Zones))
            });
            group.bench_function("analyze() of the set (after)", |b| {
                b.iter(|| tinct_core::analysis::analyze(black_box(&set)))
            });
            group.finish();
        }
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
