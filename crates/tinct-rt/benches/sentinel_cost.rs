//! What the stall sentinel costs a busy task: the same periodic SCHED_FIFO
//! task (fixed compute work per job, about 5 ms, every 10 ms, pinned to the
//! last CPU) run with and without the sentinel, alternating in rounds of
//! 2 s so slow drifts of the shared machine favour neither; per job the
//! wall time from its start to its finish (the sentinel's preemptions
//! included, unlike the thread CPU time), pooled per series and reported
//! as median / p99 and the ratio of the medians, beside the sentinel's own
//! CPU time and wake-ups.
//!
//! ```sh
//! cargo bench -p tinct-rt --bench sentinel_cost
//! TINCT_SENTINEL_ROUNDS=10 cargo bench -p tinct-rt --bench sentinel_cost
//! ```
//!
//! Needs root (SCHED_FIFO, mlockall).

use tinct_core::model::{Kernel, Work};
use tinct_report::stats::nearest_rank;
use tinct_rt::runtime::RunOptions;
use tinct_rt::sentinel::SentinelOptions;
use tinct_rt::testing::{TaskBuilder, run_spec, test_options};

const MS: u64 = 1_000_000;
const ROUND_NS: u64 = 2_000 * MS;

/// Compute iterations of a job of about `target_ns` on this machine.
fn iterations(target_ns: u64) -> u64 {
    let mut state = tinct_rt::kernels::KernelState::new(
        Kernel::Compute,
        tinct_rt::working_set::WorkingSet::empty(),
        1,
    );
    let rates = tinct_rt::calibrate::measure(&mut state);
    ((target_ns as f64 / rates.compute_ns).round() as u64).max(1)
}

/// One round: every job's start-to-finish wall time, and the sentinel's
/// CPU time and wake-ups on the task's CPU (zero without it).
fn round(cpu: u32, work: u64, sentinel: bool) -> (Vec<u64>, u64, u64) {
    let task = TaskBuilder::periodic("busy", 10 * MS)
        .cpu(cpu)
        .fifo(50)
        .kernel(Kernel::Compute, Work::Iterations(work))
        .build();
    let options = RunOptions {
        sentinel: sentinel.then(SentinelOptions::default),
        ..test_options()
    };
    let result = tinct_rt::runtime::run(&run_spec(vec![task], ROUND_NS), options).expect("run");
    let walls = result.tasks[0]
        .records
        .iter()
        .filter_map(|r| r.finish_ns.map(|f| f - r.start_ns))
        .collect();
    let (cpu_time, wakes) = result
        .sentinel
        .as_ref()
        .and_then(|s| s.cpus.iter().find(|w| w.cpu == cpu))
        .map_or((0, 0), |w| (w.cpu_time_ns.unwrap_or(0), w.wakes));
    (walls, cpu_time, wakes)
}

fn main() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("sentinel_cost: needs root (SCHED_FIFO, mlockall); skipped");
        return;
    }
    let rounds: usize = std::env::var("TINCT_SENTINEL_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(4);
    let cpu = *tinct_sys::sched::affinity().unwrap().last().unwrap();
    let work = iterations(5 * MS);
    let (mut without, mut with) = (Vec::new(), Vec::new());
    let (mut cpu_time, mut wakes) = (0u64, 0u64);
    for _ in 0..rounds {
        without.extend(round(cpu, work, false).0);
        let (walls, t, w) = round(cpu, work, true);
        with.extend(walls);
        cpu_time += t;
        wakes += w;
    }
    without.sort_unstable();
    with.sort_unstable();
    let show = |name: &str, v: &[u64]| {
        println!(
            "{name:<18} jobs {:>5}  median {:>9.3} ms  p99 {:>9.3} ms",
            v.len(),
            nearest_rank(v, 50).unwrap_or(0) as f64 / 1e6,
            nearest_rank(v, 99).unwrap_or(0) as f64 / 1e6
        );
    };
    println!(
        "sentinel cost: {rounds} round(s) of 2 s each way, CPU {cpu}, job {work} compute iterations"
    );
    show("without sentinel", &without);
    show("with sentinel", &with);
    let median = |v: &[u64]| nearest_rank(v, 50).unwrap_or(0) as f64;
    println!(
        "ratio of medians (with / without): {:.4}; the sentinel's CPU time {:.3} ms over {} wake-ups ({:.2} % of the rounds)",
        median(&with) / median(&without).max(1.0),
        cpu_time as f64 / 1e6,
        wakes,
        cpu_time as f64 * 100.0 / (rounds as f64 * ROUND_NS as f64)
    );
}
