//! `tinct experiment random`: the classic schedulability study. For every
//! utilization point, `--sets` random task sets (see
//! `tinct_core::generate`) are allocated by BFD, WFD and CATA with all N_P
//! partitions; the output is the fraction each algorithm schedules.
//!
//! Reproducible and shardable: set k of point p is drawn from ChaCha8 with
//! the seed and stream p·sets + k, whoever computes it. `--shard I/N` takes
//! the work items whose number is I−1 modulo N and writes their counts to
//! `shard-I-of-N.json`; `tinct experiment merge` sums the shards and writes
//! the same files as one unsharded run.

use crate::error::CliError;
use anyhow::{Context, anyhow};
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;
use tinct_core::alloc::{Algorithm, Instance, SearchOptions, allocate};
use tinct_core::generate::{RandomParams, random_task_set, rng_for};
use tinct_core::units::{parse_duration, parse_size};
use tinct_report::LineChart;

/// Arguments of `tinct experiment random`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Tasks per set (n).
    #[arg(long, default_value_t = 8)]
    pub tasks: usize,
    /// Cores (N_C).
    #[arg(long, default_value_t = 4)]
    pub cores: u32,
    /// Cache partitions (N_P).
    #[arg(long, default_value_t = 32)]
    pub partitions: u32,
    /// Total memory M_total.
    #[arg(long, default_value = "1GiB", value_parser = size)]
    pub memory: u64,
    /// Partition refill time Δ.
    #[arg(long, default_value = "45.3us", value_parser = duration)]
    pub refill: u64,
    /// Least period (periods are log-uniform).
    #[arg(long, default_value = "10ms", value_parser = duration)]
    pub period_min: u64,
    /// Greatest period.
    #[arg(long, default_value = "1s", value_parser = duration)]
    pub period_max: u64,
    /// Least task memory M_i (uniform).
    #[arg(long, default_value = "1MiB", value_parser = size)]
    pub task_memory_min: u64,
    /// Greatest task memory M_i.
    #[arg(long, default_value = "64MiB", value_parser = size)]
    pub task_memory_max: u64,
    /// Largest fraction by which a task's WCET falls from its least to N_P partitions.
    #[arg(long, default_value_t = 0.5)]
    pub sensitivity_max: f64,
    /// First utilization point (total utilization Σ C^{p_min}/T).
    #[arg(long, default_value_t = 2.0)]
    pub util_min: f64,
    /// Last utilization point.
    #[arg(long, default_value_t = 5.0)]
    pub util_max: f64,
    /// Step between points.
    #[arg(long, default_value_t = 0.25)]
    pub util_step: f64,
    /// Task sets per point.
    #[arg(long, default_value_t = 100)]
    pub sets: u64,
    /// Random seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Search nodes per MinCacheAlloc call (0: exhaustive).
    #[arg(long, default_value_t = 20_000)]
    pub node_budget: u64,
    /// Run only shard I of N (1-based), e.g. `--shard 3/10` (a Slurm array
    /// job passes `--shard $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT`).
    #[arg(long, value_parser = shard)]
    pub shard: Option<(u64, u64)>,
    /// Worker threads (default: every core).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Output directory (created).
    #[arg(short, long, default_value = "experiment-random")]
    pub out: PathBuf,
}

fn size(text: &str) -> Result<u64, String> {
    parse_size(text).map(|b| b.0).map_err(|e| e.to_string())
}

fn duration(text: &str) -> Result<u64, String> {
    parse_duration(text).map(|d| d.0).map_err(|e| e.to_string())
}

fn shard(text: &str) -> Result<(u64, u64), String> {
    let bad = || format!("expected I/N with 1 ≤ I ≤ N (e.g. 3/10), found {text:?}");
    let (i, n) = text.split_once('/').ok_or_else(bad)?;
    let (i, n): (u64, u64) = (
        i.trim().parse().map_err(|_| bad())?,
        n.trim().parse().map_err(|_| bad())?,
    );
    if i == 0 || i > n {
        return Err(bad());
    }
    Ok((i, n))
}

/// Everything that determines the results; echoed in `params.json` and in
/// every shard file (merge refuses shards of different experiments).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Params {
    /// The generator's parameters.
    pub generator: RandomParams,
    /// Utilization points.
    pub utilizations: Vec<f64>,
    /// Task sets per point.
    pub sets_per_point: u64,
    /// Seed.
    pub seed: u64,
    /// MinCacheAlloc node budget (`None`: exhaustive).
    pub node_budget: Option<u64>,
    /// Algorithms, in column order.
    pub algorithms: Vec<String>,
    /// tinct version that produced the numbers.
    pub tinct_version: String,
}

/// Counts at one utilization point.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// Total utilization.
    pub utilization: f64,
    /// Task sets tried.
    pub sets: u64,
    /// Sets UUniFast-Discard could not draw (counted as unschedulable).
    pub not_generated: u64,
    /// Schedulable sets per algorithm.
    pub schedulable: BTreeMap<String, u64>,
    /// Sets where some MinCacheAlloc search hit its node budget.
    pub budget_hit: u64,
}

/// What a shard writes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShardFile {
    /// The experiment.
    pub params: Params,
    /// I (1-based).
    pub shard: u64,
    /// N.
    pub shards: u64,
    /// Counts of this shard's work items.
    pub points: Vec<Point>,
}

/// Runs the study (or one shard of it).
pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let params = params(&args)?;
    println!(
        "experiment random: {}",
        serde_json::to_string(&params).map_err(|e| CliError::Failed(e.into()))?
    );
    let (index, count) = args.shard.unwrap_or((1, 1));
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(args.threads.unwrap_or(0))
        .build()
        .map_err(|e| CliError::Failed(e.into()))?;
    let started = Instant::now();
    let points = pool.install(|| compute(&params, index, count));
    let elapsed = started.elapsed().as_secs_f64();
    let done: u64 = points.iter().map(|p| p.sets).sum();
    let threads = pool.current_num_threads();
    eprintln!(
        "{done} task sets × {} algorithms in {elapsed:.2} s on {threads} thread(s): {:.1} task sets/s/core",
        params.algorithms.len(),
        done as f64 / elapsed.max(1e-9) / threads as f64
    );
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    if args.shard.is_some() {
        let file = ShardFile {
            params,
            shard: index,
            shards: count,
            points,
        };
        let path = args.out.join(format!("shard-{index}-of-{count}.json"));
        write(
            &path,
            &(serde_json::to_string_pretty(&file).map_err(|e| CliError::Failed(e.into()))? + "\n"),
        )?;
        println!(
            "shard {index}/{count} written to {} (join the shards with `tinct experiment merge`)",
            path.display()
        );
    } else {
        write_results(&args.out, &params, &points)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn params(args: &Args) -> Result<Params, CliError> {
    let bad = |m: String| Err(CliError::Input(m));
    if args.tasks == 0
        || args.cores == 0
        || args.partitions == 0
        || args.partitions > tinct_core::partitions::MAX_PARTITIONS
    {
        return bad(format!(
            "--tasks, --cores and --partitions: expected positive values (partitions at most {}), found {}, {}, {}",
            tinct_core::partitions::MAX_PARTITIONS,
            args.tasks,
            args.cores,
            args.partitions
        ));
    }
    if args.util_step <= 0.0 || args.util_min <= 0.0 || args.util_max < args.util_min {
        return bad(format!(
            "--util-min/--util-max/--util-step: expected 0 < min ≤ max and step > 0, found {}, {}, {}",
            args.util_min, args.util_max, args.util_step
        ));
    }
    if args.period_min == 0
        || args.period_max < args.period_min
        || args.task_memory_max < args.task_memory_min
    {
        return bad("--period-min/--period-max and --task-memory-min/--task-memory-max: expected 0 < min ≤ max".into());
    }
    if !(0.0..=1.0).contains(&args.sensitivity_max) {
        return bad(format!(
            "--sensitivity-max: expected a fraction in 0..1, found {}",
            args.sensitivity_max
        ));
    }
    let steps = ((args.util_max - args.util_min) / args.util_step + 1e-9).floor() as u64;
    let utilizations = (0..=steps)
        .map(|k| ((args.util_min + k as f64 * args.util_step) * 1e6).round() / 1e6)
        .collect();
    Ok(Params {
        generator: RandomParams {
            tasks: args.tasks,
            cores: args.cores,
            partitions: args.partitions,
            total_memory: args.memory,
            refill_ns: args.refill,
            period_min_ns: args.period_min,
            period_max_ns: args.period_max,
            memory_min: args.task_memory_min,
            memory_max: args.task_memory_max,
            sensitivity_max: args.sensitivity_max,
        },
        utilizations,
        sets_per_point: args.sets,
        seed: args.seed,
        node_budget: (args.node_budget > 0).then_some(args.node_budget),
        algorithms: Algorithm::ALL
            .iter()
            .map(|a| a.name().to_string())
            .collect(),
        tinct_version: env!("CARGO_PKG_VERSION").to_string(),
    })
}

/// The outcome of one task set.
struct Outcome {
    point: usize,
    generated: bool,
    schedulable: Vec<bool>,
    budget_hit: bool,
}

/// Runs work items I−1, I−1+N, ... in parallel; counts per point, in order.
fn compute(params: &Params, index: u64, count: u64) -> Vec<Point> {
    let sets = params.sets_per_point;
    let total = params.utilizations.len() as u64 * sets;
    let items: Vec<u64> = (index - 1..total).step_by(count as usize).collect();
    let bar = ProgressBar::new(items.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} task sets, {per_sec}, eta {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let options = SearchOptions {
        node_budget: params.node_budget,
        ..SearchOptions::EXACT
    };
    let outcomes: Vec<Outcome> = items
        .par_iter()
        .map(|&item| {
            let outcome = one_set(params, item, &options);
            bar.inc(1);
            outcome
        })
        .collect();
    bar.finish_and_clear();
    let mut points: Vec<Point> = params
        .utilizations
        .iter()
        .map(|&u| Point {
            utilization: u,
            sets: 0,
            not_generated: 0,
            schedulable: params.algorithms.iter().map(|a| (a.clone(), 0)).collect(),
            budget_hit: 0,
        })
        .collect();
    for o in outcomes {
        let point = &mut points[o.point];
        point.sets += 1;
        point.not_generated += u64::from(!o.generated);
        point.budget_hit += u64::from(o.budget_hit);
        for (name, &ok) in params.algorithms.iter().zip(&o.schedulable) {
            *point.schedulable.entry(name.clone()).or_default() += u64::from(ok);
        }
    }
    points
}

fn one_set(params: &Params, item: u64, options: &SearchOptions) -> Outcome {
    let point = (item / params.sets_per_point) as usize;
    let mut rng = rng_for(params.seed, item);
    let Some(set) = random_task_set(&params.generator, params.utilizations[point], &mut rng) else {
        return Outcome {
            point,
            generated: false,
            schedulable: vec![false; params.algorithms.len()],
            budget_hit: false,
        };
    };
    let inst = Instance::new(&set);
    let mut budget_hit = false;
    let schedulable = Algorithm::ALL
        .iter()
        .map(|&algorithm| {
            let assignment = allocate(&inst, algorithm, inst.partitions, options);
            budget_hit |= !assignment.exact;
            assignment.schedulable()
        })
        .collect();
    Outcome {
        point,
        generated: true,
        schedulable,
        budget_hit,
    }
}

fn write(path: &Path, text: &str) -> Result<(), CliError> {
    std::fs::write(path, text)
        .map_err(|e| CliError::Failed(anyhow!("cannot write {}: {e}", path.display())))
}

/// Writes `params.json`, `results.csv` and `schedulability.svg` into `out`:
/// the same bytes whether the points come from one run or merged shards.
pub fn write_results(out: &Path, params: &Params, points: &[Point]) -> Result<(), CliError> {
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    write(
        &out.join("params.json"),
        &(serde_json::to_string_pretty(params).map_err(|e| CliError::Failed(e.into()))? + "\n"),
    )?;
    let mut csv = csv::Writer::from_writer(Vec::new());
    let mut header = vec![
        "utilization".to_string(),
        "sets".to_string(),
        "not_generated".to_string(),
    ];
    header.extend(params.algorithms.iter().cloned());
    header.extend(params.algorithms.iter().map(|a| format!("{a}_ratio")));
    header.push("budget_hit".to_string());
    let fail = |e: csv::Error| CliError::Failed(e.into());
    csv.write_record(&header).map_err(fail)?;
    for p in points {
        let mut record = vec![
            format!("{}", p.utilization),
            p.sets.to_string(),
            p.not_generated.to_string(),
        ];
        let counts: Vec<u64> = params
            .algorithms
            .iter()
            .map(|a| p.schedulable.get(a).copied().unwrap_or(0))
            .collect();
        record.extend(counts.iter().map(|c| c.to_string()));
        record.extend(counts.iter().map(|&c| format!("{:.4}", ratio(c, p.sets))));
        record.push(p.budget_hit.to_string());
        csv.write_record(&record).map_err(fail)?;
    }
    let bytes = csv
        .into_inner()
        .map_err(|e| CliError::Failed(anyhow!("{e}")))?;
    write(&out.join("results.csv"), &String::from_utf8_lossy(&bytes))?;
    let g = &params.generator;
    let mut chart = LineChart::new(
        format!(
            "Schedulable task sets: n = {}, N_C = {}, N_P = {}, {} sets/point, seed {}",
            g.tasks, g.cores, g.partitions, params.sets_per_point, params.seed
        ),
        "total utilization Σ C(p_min)/T",
        "fraction schedulable",
    )
    .with_y_range(0.0, 1.0);
    for a in &params.algorithms {
        let series = points
            .iter()
            .map(|p| {
                (
                    p.utilization,
                    ratio(p.schedulable.get(a).copied().unwrap_or(0), p.sets),
                )
            })
            .collect();
        chart = chart.with_series(a.to_uppercase(), series);
    }
    chart
        .write(&out.join("schedulability.svg"))
        .map_err(|e| CliError::Failed(e.into()))?;
    println!(
        "results written to {} (results.csv, schedulability.svg, params.json)",
        out.display()
    );
    Ok(())
}

fn ratio(count: u64, sets: u64) -> f64 {
    if sets == 0 {
        0.0
    } else {
        count as f64 / sets as f64
    }
}
