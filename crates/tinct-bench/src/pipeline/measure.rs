//! The measuring loop of `tinct bench pipeline`: the policies interleaved
//! in rounds by the harness, counting the LLC loads and stores; and one run
//! of the tree under one policy, reduced to what demarchi reports: the
//! samples' production times, each task's execution times, CPUs and
//! migrations, and the cost of the affinity moves.

use super::plan::Plan;
use super::tree::Tree;
use crate::harness::counters::default_events;
use crate::harness::interleaved::Samples;
use crate::harness::{Interleaved, Progress};
use crate::{Error, Result};
use std::sync::atomic::{AtomicBool, Ordering};
use tinct_rt::pipeline::{CacheNeighbours, PlacementPolicy};
use tinct_rt::record::JobRecord;
use tinct_rt::runtime::{RunOptions, RunResult};
use tinct_sys::perf::{CounterEvent, PerfEvent};

/// What the rounds measured.
pub struct Measured {
    /// Per policy, one chunk per round completed by every policy.
    pub chunks: Vec<Vec<Chunk>>,
    /// The rounds and the counter totals per policy.
    pub samples: Samples,
}

/// Runs every policy once per round, in a seeded order per round; a stop
/// keeps the rounds every policy completed.
pub(super) fn measure(plan: &Plan, progress: &dyn Progress) -> Result<Measured> {
    let names: Vec<&str> = plan.policies.iter().map(|p| p.name()).collect();
    let interleaved = Interleaved::new(names, plan.rounds)
        .seed(plan.seed)
        .counting(counted_events());
    progress.start(interleaved.calls(), "pipeline");
    let mut chunks: Vec<Vec<Chunk>> = vec![Vec::new(); plan.policies.len()];
    let samples = interleaved.run(progress, |c| {
        let round = chunks[c].len();
        let chunk = run_chunk(
            &plan.tree,
            plan.per_round[round],
            plan.policies[c],
            &plan.cpus,
            &plan.neighbours,
            plan.background,
        )?;
        let overall = chunk.overall_ns;
        chunks[c].push(chunk);
        Ok::<u64, Error>(overall)
    })?;
    progress.finish();
    // Stopped early: only the rounds every policy completed are kept.
    for chunks in &mut chunks {
        chunks.truncate(samples.rounds_completed as usize);
    }
    Ok(Measured { chunks, samples })
}

/// The events counted per policy: the harness's default set (LLC loads
/// and load misses among them) and the LLC stores and store misses of
/// Fig. 4.
fn counted_events() -> Vec<CounterEvent> {
    let mut events = default_events();
    events.extend([
        PerfEvent::LlcStores.into(),
        PerfEvent::LlcStoreMisses.into(),
    ]);
    events
}

/// How many samples of the first round the migrations map keeps.
pub const MAP_SAMPLES: usize = 64;

/// What one run of `samples` samples gave, per task in node order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Chunk {
    /// Intervals between consecutive samples (t_{n+1} − t_n), ns.
    pub intervals_ns: Vec<u64>,
    /// From the common release to the last sample, ns.
    pub overall_ns: u64,
    /// Per task: the thread CPU time of each job, ns.
    pub exec_ns: Vec<Vec<u64>>,
    /// Per task: jobs that started on another CPU than the previous one
    /// ended on, plus jobs that moved while they ran.
    pub migrations: Vec<u64>,
    /// Per task: the CPU of its first [`MAP_SAMPLES`] jobs.
    pub map: Vec<Vec<u32>>,
    /// Every affinity move's cost, ns.
    pub moves_ns: Vec<u64>,
}

/// Runs `samples` samples of `tree` under `policy` (beside `background`
/// busy SCHED_OTHER threads) and reduces the records.
/// A run that stops before every task ran its jobs, or that loses a
/// sample, is a measurement error (never a silently shorter series).
pub fn run_chunk(
    tree: &Tree,
    samples: u64,
    policy: PlacementPolicy,
    cpus: &[u32],
    neighbours: &CacheNeighbours,
    background: u32,
) -> Result<Chunk> {
    let spec = tree.spec(samples, policy, cpus, neighbours)?;
    let options = RunOptions {
        handle_signals: false,
        ..RunOptions::default()
    };
    let result = with_background(background, || tinct_rt::runtime::run(&spec, options))
        .map_err(|e| Error::Measurement(format!("pipeline ({policy}): {e}")))?;
    reduce(&result, samples, policy)
}

/// Runs `f` beside `threads` SCHED_OTHER threads that compute until it
/// returns (the paper ran "concurrently to the set of tasks normally
/// running on a standard Linux distribution").
fn with_background<T>(threads: u32, f: impl FnOnce() -> T) -> T {
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                let mut x = 1u64;
                while !stop.load(Ordering::Relaxed) {
                    for _ in 0..1024 {
                        x = std::hint::black_box(
                            x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1),
                        );
                    }
                }
            });
        }
        let out = f();
        stop.store(true, Ordering::Relaxed);
        out
    })
}

fn reduce(result: &RunResult, samples: u64, policy: PlacementPolicy) -> Result<Chunk> {
    if !result.stop.is_completed() {
        return Err(Error::Measurement(format!(
            "pipeline ({policy}) stopped early: {}",
            result.stop.describe()
        )));
    }
    let mut chunk = Chunk::default();
    for task in &result.tasks {
        let jobs = &task.records;
        let done = jobs.iter().filter(|r| r.finish_ns.is_some()).count() as u64;
        let lost: u64 = jobs.iter().map(|r| u64::from(r.flow.lost)).sum();
        if done != samples || lost != 0 {
            return Err(Error::Measurement(format!(
                "pipeline ({policy}): task {} finished {done} of {samples} packets, {lost} lost \
                 ({})",
                task.spec.name,
                task.error.as_deref().unwrap_or("no error reported")
            )));
        }
        chunk.exec_ns.push(jobs.iter().map(|r| r.exec_ns).collect());
        chunk.migrations.push(migrations(jobs));
        chunk
            .map
            .push(jobs.iter().take(MAP_SAMPLES).map(|r| r.cpu).collect());
        chunk
            .moves_ns
            .extend(jobs.iter().filter_map(|r| r.flow.move_ns));
    }
    let last = result.tasks.last().map_or(&[][..], |t| &t.records[..]);
    let produced: Vec<u64> = last.iter().filter_map(|r| r.finish_ns).collect();
    if produced.windows(2).any(|w| w[1] <= w[0]) {
        return Err(Error::Measurement(format!(
            "pipeline ({policy}): sample production times do not increase"
        )));
    }
    chunk.intervals_ns = produced.windows(2).map(|w| w[1] - w[0]).collect();
    chunk.overall_ns = produced
        .last()
        .map_or(0, |&t| t.saturating_sub(result.start_ns));
    Ok(chunk)
}

/// Jobs that started on another CPU than the previous job ended on, plus
/// jobs that ended on another CPU than they started on (demarchi Fig. 5
/// counts the task's moves between CPUs).
fn migrations(jobs: &[JobRecord]) -> u64 {
    let within: u64 = jobs.iter().map(|r| u64::from(r.migrations())).sum();
    let between = jobs.windows(2).filter(|w| w[0].cpu_end != w[1].cpu).count() as u64;
    within + between
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policies_count_llc_loads_and_stores() {
        let names: Vec<String> = counted_events().into_iter().map(|e| e.name).collect();
        for event in [
            "LLC-loads",
            "LLC-load-misses",
            "LLC-stores",
            "LLC-store-misses",
        ] {
            assert!(names.iter().any(|n| n == event), "{event} in {names:?}");
        }
    }

    #[test]
    fn migrations_count_moves_between_and_within_jobs() {
        let job = |cpu, cpu_end| JobRecord {
            cpu,
            cpu_end,
            start_ns: 1,
            ..JobRecord::never_started(0, 0, 0, 0)
        };
        assert_eq!(migrations(&[job(0, 0), job(0, 0)]), 0);
        assert_eq!(migrations(&[job(0, 0), job(1, 1), job(1, 0)]), 2);
    }
}
