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
use anyhow::anyhow;
use indicatif::{ProgressBar, ProgressStyle};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};
use tinct_core::alloc::SearchOptions;
use tinct_core::experiment::Hooks;
use tinct_core::experiment::parallel::{self, Pool};
use tinct_core::experiment::random::{Params, Shard, ShardFile, work_items};
use tinct_core::experiment::study::RandomStudy;
use tinct_core::generate::RandomParams;
use tinct_core::timeout::{parse_timeout, stop_after};
use tinct_core::units::{Bytes, Nanos};
use tinct_core::units::{parse_duration, parse_size};
use tinct_report::schedulability;

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
    #[arg(long, default_value = "1GiB", value_parser = parse_size)]
    pub memory: Bytes,
    /// Partition refill time Δ.
    #[arg(long, default_value = "45.3us", value_parser = parse_duration)]
    pub refill: Nanos,
    /// Least period (periods are log-uniform).
    #[arg(long, default_value = "10ms", value_parser = parse_duration)]
    pub period_min: Nanos,
    /// Greatest period.
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    pub period_max: Nanos,
    /// Least task memory M_i (uniform).
    #[arg(long, default_value = "1MiB", value_parser = parse_size)]
    pub task_memory_min: Bytes,
    /// Greatest task memory M_i.
    #[arg(long, default_value = "64MiB", value_parser = parse_size)]
    pub task_memory_max: Bytes,
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
    /// Search nodes per MinCacheAlloc call (0: no budget, an exhaustive
    /// search, as in `tinct plan` and `tinct experiment kim2013`).
    #[arg(long, default_value_t = 20_000)]
    pub node_budget: u64,
    /// Run only shard I of N (1-based), e.g. `--shard 3/10` (a Slurm array
    /// job passes `--shard $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT`).
    #[arg(long)]
    pub shard: Option<Shard>,
    /// Worker threads (default, or 0: every core).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Output directory (created).
    #[arg(short, long, default_value = "experiment-random")]
    pub out: PathBuf,
    /// Stop after this long (e.g. "10m"): the files are written with the
    /// sets done so far, and the exit status is 1.
    #[arg(long, value_parser = parse_timeout, value_name = "DURATION")]
    pub timeout: Option<Duration>,
}

/// Runs the study (or one shard of it).
pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let params = params(&args)?;
    // 0 is every core, as the default (rayon's meaning of 0).
    let pool = Pool::with_threads(args.threads.filter(|&n| n > 0))
        .map_err(|e| CliError::Input(format!("--threads: {e}")))?;
    crate::output::output_dir(&args.out, "--out")?;
    println!(
        "experiment random: {}",
        serde_json::to_string(&params).map_err(|e| CliError::Failed(e.into()))?
    );
    let shard = args.shard.unwrap_or(Shard::ALL);
    let Shard { index, count } = shard;
    let bar = ProgressBar::new(work_items(&params, shard).len() as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} task sets, {per_sec}, eta {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let stop = stop_after(args.timeout);
    let progress = || bar.inc(1);
    let hooks = Hooks {
        progress: Some(&progress),
        stop: Some(&stop),
    };
    let started = Instant::now();
    let computed = pool.install(|| parallel::compute(&params, shard, hooks));
    bar.finish_and_clear();
    let elapsed = started.elapsed().as_secs_f64();
    let threads = pool.threads();
    eprintln!(
        "{} task sets × {} algorithms in {elapsed:.2} s on {threads} thread(s): {:.1} task sets/s/core",
        computed.done,
        params.algorithms.len(),
        computed.done as f64 / elapsed.max(1e-9) / threads as f64
    );
    let fail = |e: tinct_report::ReportError| CliError::Failed(e.into());
    if args.shard.is_some() {
        let file = ShardFile {
            params,
            shard: index,
            shards: count,
            points: computed.points.clone(),
        };
        let path = schedulability::write_shard(&args.out, &file).map_err(fail)?;
        println!(
            "shard {index}/{count} written to {} (join the shards with `tinct experiment merge`)",
            path.display()
        );
    } else {
        schedulability::write_results(&args.out, &params, &computed.points).map_err(fail)?;
        println!(
            "results written to {} (results.csv, schedulability.svg, params.json)",
            args.out.display()
        );
    }
    if !computed.complete() {
        return Err(CliError::Failed(anyhow!(
            "stopped by --timeout after {} of {} task sets: the files hold the sets done (the `sets` column counts them)",
            computed.done,
            computed.total
        )));
    }
    Ok(ExitCode::SUCCESS)
}

fn params(args: &Args) -> Result<Params, CliError> {
    let study = RandomStudy {
        generator: RandomParams {
            tasks: args.tasks,
            cores: args.cores,
            partitions: args.partitions,
            total_memory: args.memory.0,
            refill_ns: args.refill.0,
            period_min_ns: args.period_min.0,
            period_max_ns: args.period_max.0,
            memory_min: args.task_memory_min.0,
            memory_max: args.task_memory_max.0,
            sensitivity_max: args.sensitivity_max,
        },
        util_min: args.util_min,
        util_max: args.util_max,
        util_step: args.util_step,
        sets_per_point: args.sets,
        seed: args.seed,
        node_budget: SearchOptions::node_budget_option(args.node_budget).node_budget,
    };
    study
        .params()
        .map_err(|e| CliError::Input(e.flag_message()))
}
