//! `tinct bench pipeline` (demarchi, issue 13 item 3): the wave/mixer
//! benchmark of the paper's Figure 2 under each placement policy of
//! [`tinct_rt::pipeline`] — `os` (the paper's vanilla Linux), `affinity`
//! (its task-affinity heuristic, from user space) and `static` (subtrees
//! pinned in one cache domain).
//!
//! The tree ([`tree`]) runs as a tinct-rt run: one SCHED_FIFO thread per
//! wave and mixer, one-packet buffers with a blocking hand-over, each task
//! running exactly as many jobs as there are samples. The policies run
//! interleaved in rounds ([`crate::harness::Interleaved`], a seeded order
//! per round), the same number of samples each. Reported per policy
//! ([`measure`], [`report`]): the production rate, mean, σ and ρ = μ + 2σ
//! (demarchi Eq. (1)) of the sample production time t_{n+1} − t_n, the
//! overall benchmark time, per-task execution time mean and variance
//! (Fig. 6), migrations per task (Fig. 5), the migrations map (Fig. 3, text
//! and SVG), the empirical CDF of production times (Figs. 7 and 8, SVG),
//! the LLC load and store miss rates where hardware counters exist
//! (Fig. 4: "considering both store and load operations"; the kernel's
//! reason otherwise) and Table I with each policy's improvement
//! over `os`. `background` busy SCHED_OTHER threads can run beside it
//! (the paper ran beside a distribution's usual tasks).

mod measure;
mod report;
pub mod tree;

use crate::harness::counters::{MissRate, default_events};
use crate::harness::{
    BenchOptions, ConditionCounters, Durations, Finished, Interleaved, OutputDir, Progress,
    RunHeader,
};
use crate::{Error, Result};
use measure::{Chunk, run_chunk};
use serde::{Deserialize, Serialize};
use tinct_core::units::{Bytes, Nanos};
use tinct_rt::pipeline::{CacheNeighbours, PlacementPolicy};
use tinct_sys::perf::{CounterEvent, PerfEvent};
use tree::Tree;

/// Samples per policy of a full run (the paper's 150 000).
pub const FULL_SAMPLES: u64 = 150_000;
/// Samples per policy of a `--quick` run.
pub const QUICK_SAMPLES: u64 = 600;

/// The most `--background` busy threads per CPU used: enough to load
/// every CPU several times over, few enough that their start-up does not
/// dominate the bench.
pub const MAX_BACKGROUND_PER_CPU: usize = 8;

/// Parameters of `tinct bench pipeline`.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// Parameters shared by every bench (`--reps` is the number of rounds).
    pub common: BenchOptions,
    /// Waves (default 4, Figure 2).
    pub waves: u32,
    /// Mixer levels (default 2, Figure 2).
    pub levels: u32,
    /// Bytes of one packet (default 16 KiB).
    pub packet: Bytes,
    /// Computation per packet of each task (default 20 µs).
    pub work: Nanos,
    /// Samples per policy (default [`FULL_SAMPLES`], quick [`QUICK_SAMPLES`]).
    pub samples: Option<u64>,
    /// Policies to compare (default all three; `os` is the reference).
    pub policies: Vec<PlacementPolicy>,
    /// Busy SCHED_OTHER threads beside the tree (default 0).
    pub background: u32,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            common: BenchOptions::default(),
            waves: 4,
            levels: 2,
            packet: Bytes(16 << 10),
            work: Nanos(20_000),
            samples: None,
            policies: PlacementPolicy::ALL.to_vec(),
            background: 0,
        }
    }
}

/// One task's numbers under one policy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskResult {
    /// `wave0`, ..., `mixer0`, ...
    pub name: String,
    /// Execution time per packet (thread CPU time), Fig. 6.
    pub exec: Durations,
    /// Its variance σ², ns² (Fig. 6 plots the variance).
    pub exec_variance_ns2: f64,
    /// Migrations over every round (Fig. 5).
    pub migrations: u64,
    /// The CPU of each of the first samples of the first round (Fig. 3).
    pub map: Vec<u32>,
}

/// Everything measured under one policy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PolicyResult {
    /// `os`, `affinity` or `static`.
    pub policy: String,
    /// Samples produced (every round).
    pub samples: u64,
    /// Sample production time t_{n+1} − t_n: μ, σ and ρ = μ + 2σ.
    pub production: Durations,
    /// Production rate 1 / μ, samples per second.
    pub production_rate_hz: f64,
    /// Overall benchmark time: Σ over rounds of release to last sample, ns.
    pub overall_ns: u64,
    /// Per task, in tree order (waves, then mixers).
    pub tasks: Vec<TaskResult>,
    /// What each affinity move cost (`None`: no move).
    pub moves: Option<Durations>,
    /// LLC load misses / LLC loads over the policy's runs (Fig. 4's load
    /// miss rate), or why the hardware did not count them.
    pub load_miss_rate: MissRate,
    /// LLC store misses / LLC stores over the policy's runs (Fig. 4's
    /// store miss rate), or why the hardware did not count them.
    pub store_miss_rate: MissRate,
    /// ρ of `os` over this policy's ρ (Table I's determinism gain; > 1 is better).
    pub rho_gain_over_os: Option<f64>,
    /// How much shorter the overall time is than under `os`, percent.
    pub overall_gain_over_os_percent: Option<f64>,
}

/// The result of `tinct bench pipeline`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// What ran, where (`reps` is the number of rounds).
    #[serde(flatten)]
    pub header: RunHeader,
    /// Waves, mixer levels, packet bytes and work per packet.
    pub waves: u32,
    /// Mixer levels.
    pub levels: u32,
    /// Bytes per packet.
    pub packet_bytes: u64,
    /// Computation per packet, ns.
    pub work_ns: u64,
    /// Busy SCHED_OTHER threads that ran beside the tree.
    pub background: u32,
    /// One entry per policy, in the order asked.
    pub policies: Vec<PolicyResult>,
    /// Files written.
    pub files: Vec<String>,
}

/// Runs the bench, writes its files and returns the report.
pub fn run(params: &Params, progress: &dyn Progress) -> Result<Finished<Report>> {
    let tree = Tree {
        waves: params.waves,
        levels: params.levels,
        packet_bytes: params.packet.0,
        work_ns: params.work.0,
    };
    tree.nodes()?;
    if params.policies.is_empty() {
        return Err(Error::InvalidInput(
            "--policies: expected at least one of os, affinity, static".into(),
        ));
    }
    let samples = params.samples.unwrap_or(if params.common.quick {
        QUICK_SAMPLES
    } else {
        FULL_SAMPLES
    });
    let rounds = params.common.reps_or(2, 5)?;
    if samples < 2 * u64::from(rounds) {
        return Err(Error::InvalidInput(format!(
            "--samples: expected at least 2 per round ({rounds} rounds), found {samples}"
        )));
    }
    let cpus = params.common.cpus(1)?;
    let most_background = cpus.len().saturating_mul(MAX_BACKGROUND_PER_CPU);
    if params.background as usize > most_background {
        return Err(Error::InvalidInput(format!(
            "--background: expected at most {MAX_BACKGROUND_PER_CPU} busy threads per CPU used \
             ({most_background} on {} CPUs), found {}",
            cpus.len(),
            params.background
        )));
    }
    let topology = tinct_sys::topology::Topology::read(&tinct_sys::SysRoot::live())?;
    let neighbours = CacheNeighbours::from_topology(&topology, &cpus);
    let mut header = RunHeader::new("pipeline", &params.common, rounds, cpus.clone());
    // The same samples per policy: the rounds split them, the first rounds
    // taking the remainder.
    let per_round: Vec<u64> = (0..u64::from(rounds))
        .map(|r| samples / u64::from(rounds) + u64::from(r < samples % u64::from(rounds)))
        .collect();
    let names: Vec<&str> = params.policies.iter().map(|p| p.name()).collect();
    let interleaved = Interleaved::new(names, rounds)
        .seed(params.common.seed)
        .counting(counted_events());
    progress.start(interleaved.calls(), "pipeline");
    let mut chunks: Vec<Vec<Chunk>> = vec![Vec::new(); params.policies.len()];
    let measured = interleaved.run(progress, |c| {
        let round = chunks[c].len();
        let chunk = run_chunk(
            &tree,
            per_round[round],
            params.policies[c],
            &cpus,
            &neighbours,
            params.background,
        )?;
        let overall = chunk.overall_ns;
        chunks[c].push(chunk);
        Ok::<u64, Error>(overall)
    })?;
    progress.finish();
    // Stopped early: only the rounds every policy completed are kept.
    for chunks in &mut chunks {
        chunks.truncate(measured.rounds_completed as usize);
    }
    header.record_rounds(false);
    header.add_counters("", &measured);
    let names: Vec<String> = tree.nodes()?.into_iter().map(|n| n.name).collect();
    let mut policies: Vec<PolicyResult> = params
        .policies
        .iter()
        .zip(&chunks)
        .zip(&measured.counters)
        .map(|((policy, chunks), counters)| policy_result(*policy, chunks, &names, counters))
        .collect();
    compare_with_os(&mut policies);
    let mut report = Report {
        header,
        waves: params.waves,
        levels: params.levels,
        packet_bytes: params.packet.0,
        work_ns: params.work.0,
        background: params.background,
        policies,
        files: Vec::new(),
    };
    if measured.rounds_completed == 0 {
        // Stopped before any round ended: a header-only result says so.
        report.policies.clear();
    }
    let mut out = OutputDir::create(params.common.out_dir("pipeline"))?;
    if !report.policies.is_empty() {
        report::write_files(&mut out, &report, &chunks)?;
    }
    report.files = out.files_with("pipeline.json");
    out.write_json("pipeline.json", &report)?;
    let summary = report::summary(&report, out.path());
    Ok(Finished {
        result: report,
        summary,
    })
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

/// Fig. 4's load and store miss rates of one policy's counter totals.
fn miss_rates(counters: &ConditionCounters) -> (MissRate, MissRate) {
    (
        counters.miss_rate(PerfEvent::LlcReferences.name(), PerfEvent::LlcMisses.name()),
        counters.miss_rate(
            PerfEvent::LlcStores.name(),
            PerfEvent::LlcStoreMisses.name(),
        ),
    )
}

fn policy_result(
    policy: PlacementPolicy,
    chunks: &[Chunk],
    names: &[String],
    counters: &ConditionCounters,
) -> PolicyResult {
    let (load_miss_rate, store_miss_rate) = miss_rates(counters);
    let intervals: Vec<u64> = chunks.iter().flat_map(|c| c.intervals_ns.clone()).collect();
    let production = Durations::of_or_zero(&intervals);
    let tasks = names
        .iter()
        .enumerate()
        .map(|(t, name)| {
            let exec: Vec<u64> = chunks.iter().flat_map(|c| c.exec_ns[t].clone()).collect();
            let exec = Durations::of_or_zero(&exec);
            TaskResult {
                name: name.clone(),
                exec_variance_ns2: exec.stddev * exec.stddev,
                exec,
                migrations: chunks.iter().map(|c| c.migrations[t]).sum(),
                map: chunks.first().map(|c| c.map[t].clone()).unwrap_or_default(),
            }
        })
        .collect();
    let moves: Vec<u64> = chunks.iter().flat_map(|c| c.moves_ns.clone()).collect();
    PolicyResult {
        policy: policy.name().into(),
        samples: chunks.iter().map(|c| c.intervals_ns.len() as u64 + 1).sum(),
        production_rate_hz: if production.mean > 0.0 {
            1e9 / production.mean
        } else {
            0.0
        },
        production,
        overall_ns: chunks.iter().map(|c| c.overall_ns).sum(),
        tasks,
        moves: Durations::of(&moves),
        load_miss_rate,
        store_miss_rate,
        rho_gain_over_os: None,
        overall_gain_over_os_percent: None,
    }
}

/// Table I's improvement columns: each policy against `os`, when `os` ran.
fn compare_with_os(policies: &mut [PolicyResult]) {
    let Some(os) = policies.iter().find(|p| p.policy == "os").cloned() else {
        return;
    };
    for p in policies {
        p.rho_gain_over_os = (p.production.rho > 0.0).then(|| os.production.rho / p.production.rho);
        p.overall_gain_over_os_percent = (os.overall_ns > 0)
            .then(|| (os.overall_ns as f64 - p.overall_ns as f64) / os.overall_ns as f64 * 100.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::EventTotal;

    fn totals(events: &[(&str, Option<u64>)]) -> ConditionCounters {
        ConditionCounters {
            condition: "os".into(),
            runs: 2,
            events: events
                .iter()
                .map(|&(event, total)| EventTotal {
                    event: event.into(),
                    total,
                    estimated: false,
                    unavailable: total.is_none().then(|| "ENOENT (no such event)".into()),
                })
                .collect(),
        }
    }

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
    fn fig4_rates_are_misses_over_accesses_or_the_kernels_reason() {
        let counted = totals(&[
            ("LLC-loads", Some(1000)),
            ("LLC-load-misses", Some(30)),
            ("LLC-stores", Some(200)),
            ("LLC-store-misses", Some(50)),
        ]);
        let (load, store) = miss_rates(&counted);
        assert_eq!(load.rate, Some(0.03));
        assert_eq!(store.rate, Some(0.25));
        assert_eq!((store.accesses, store.misses), (Some(200), Some(50)));
        let no_pmu = totals(&[
            ("LLC-loads", None),
            ("LLC-load-misses", None),
            ("LLC-stores", None),
            ("LLC-store-misses", None),
        ]);
        let (load, store) = miss_rates(&no_pmu);
        for rate in [load, store] {
            assert_eq!(rate.rate, None);
            let why = rate.unavailable.unwrap();
            assert!(
                why.starts_with("unavailable: LLC-") && why.contains("ENOENT"),
                "{why}"
            );
        }
    }
}
