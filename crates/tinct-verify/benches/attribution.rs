//! What attributing a run's late jobs costs as its jobs grow (issue 27:
//! a 2 s run of back-to-back jobs spent minutes here, the cost cubic in
//! jobs). A synthetic run of four tasks on one CPU, back to back (one busy
//! period from start to end, the case that was cubic), every job above
//! C so that each is late and every cause's query runs; `attribute` timed
//! at N and 10 N jobs, alternating, reported as medians and the ratio of
//! the medians: about 10 for near-linear cost (100 for quadratic).
//!
//! ```sh
//! cargo bench -p tinct-rt --bench attribution
//! TINCT_ATTRIBUTION_JOBS=100000 cargo bench -p tinct-rt --bench attribution
//! ```
//!
//! Needs nothing of the machine: no thread runs.

use std::time::Instant;
use tinct_core::model::{Kernel, Work};
use tinct_rt::memory::Placement;
use tinct_rt::record::{JobRecord, Outcome};
use tinct_rt::runtime::{RunResult, TaskRun};
use tinct_rt::spec::{BlockingShows, Bound, Scheduling, WatchdogMode};
use tinct_rt::testing::TaskBuilder;
use tinct_rt::watchdog::StopReason;
use tinct_sys::sched::Policy;
use tinct_verify::attribution::{Evidence, attribute};

const US: u64 = 1_000;
const TASKS: u64 = 4;

/// `jobs` jobs in all over four tasks at FIFO 50..53 on CPU 0, each 10 µs
/// long after the one before (C 5 µs, WCRT 8 µs: every one is late).
fn run_of(jobs: u64) -> RunResult {
    let t0 = 1_000_000 * US;
    let tasks = (0..TASKS)
        .map(|t| {
            let records = (0..jobs / TASKS)
                .map(|k| {
                    let at = t0 + (k * TASKS + t) * 10 * US;
                    JobRecord {
                        start_ns: at + US,
                        finish_ns: Some(at + 10 * US),
                        exec_ns: 9 * US,
                        cpu: 0,
                        cpu_end: 0,
                        policy: Policy::Fifo(50 + t as u8),
                        outcome: Outcome::Completed,
                        ..JobRecord::never_started(k, 0, at, at + 1_000 * US)
                    }
                })
                .collect();
            TaskRun {
                spec: TaskBuilder::periodic(&format!("t{t}"), 40 * US)
                    .cpu(0)
                    .fifo(50 + t as u8)
                    .kernel(Kernel::Compute, Work::Iterations(1))
                    .bound(Bound {
                        wcet_ns: 5 * US,
                        wcrt_ns: Some(8 * US),
                        wcrt_nocint_ns: Some(8 * US),
                        blocking_ns: Some(0),
                        blocking_shows: BlockingShows::Nowhere,
                    })
                    .build(),
                tid: 1,
                records,
                placement: Placement::None,
                rates: None,
                work: vec![],
                scheduling: Scheduling::of(Policy::Fifo(50 + t as u8)),
                counters_unavailable: None,
                error: None,
                program: None,
            }
        })
        .collect();
    RunResult {
        start_ns: t0,
        end_ns: t0 + jobs * 10 * US,
        stop: StopReason::Completed,
        realtime: true,
        memory_locked: true,
        rt_throttling: String::new(),
        watchdog_factor: 3.0,
        watchdog: WatchdogMode::Realtime,
        rtapp_log: None,
        notes: vec![],
        tasks,
        sentinel: None,
        llc_domains: vec![],
        colouring: Default::default(),
        mutexes: vec![],
        footprint: Err("not read".into()),
    }
}

/// Nanoseconds to attribute `run`, and how many late jobs it found.
fn time(run: &RunResult) -> (u64, usize) {
    let started = Instant::now();
    let found = attribute(run, &Evidence::of(run));
    let ns = started.elapsed().as_nanos() as u64;
    (ns, found.late.iter().map(Vec::len).sum())
}

fn median(mut values: Vec<u64>) -> u64 {
    values.sort_unstable();
    values[values.len() / 2]
}

fn main() {
    let small: u64 = std::env::var("TINCT_ATTRIBUTION_JOBS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000)
        .max(TASKS);
    let large = small * 10;
    let (a, b) = (run_of(small), run_of(large));
    let (mut at_small, mut at_large) = (Vec::new(), Vec::new());
    let mut late = (0, 0);
    for _ in 0..5 {
        let (ns, found) = time(&a);
        at_small.push(ns);
        late.0 = found;
        let (ns, found) = time(&b);
        at_large.push(ns);
        late.1 = found;
    }
    let (m_small, m_large) = (median(at_small), median(at_large));
    println!(
        "attribution of a back-to-back run, 4 tasks on one CPU, every job late (median of 5):"
    );
    println!(
        "  {small:>8} jobs ({:>8} late): {:>10.3} ms",
        late.0,
        m_small as f64 / 1e6
    );
    println!(
        "  {large:>8} jobs ({:>8} late): {:>10.3} ms",
        late.1,
        m_large as f64 / 1e6
    );
    println!(
        "  ratio {:.1} for 10× the jobs (10: linear, 100: quadratic)",
        m_large as f64 / m_small.max(1) as f64
    );
}
