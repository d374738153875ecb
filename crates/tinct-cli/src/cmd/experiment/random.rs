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
use tinct_base::InputError;
use tinct_core::experiment::Hooks;
use tinct_core::experiment::parallel::{self, Pool, PoolError};
use tinct_core::experiment::random::{Shard, work_items};
use tinct_core::experiment::study::RandomStudy;
use tinct_core::timeout::{parse_timeout, stop_after};
use tinct_report::schedulability;

/// Arguments of `tinct experiment random`: the study's own options are
/// tinct-core's `RandomStudy` (feature `cli`), declared on its fields.
#[derive(clap::Args, Debug)]
pub(super) struct Args {
    #[command(flatten)]
    pub study: RandomStudy,
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
pub(super) fn run(args: Args) -> Result<ExitCode, CliError> {
    let params = args
        .study
        .params()
        .map_err(|e| CliError::Input(e.flag_error()))?;
    // 0 is every core, as the default (rayon's meaning of 0).
    let pool = Pool::with_threads(args.threads.filter(|&n| n > 0)).map_err(|e| match e {
        PoolError::Threads(refused) => CliError::Input(InputError {
            field: "--threads".into(),
            ..refused
        }),
        PoolError::Start(_) => CliError::Failed(e.into()),
    })?;
    crate::output::output_dir(&args.out, "--out")?;
    println!(
        "experiment random: {}",
        serde_json::to_string(&params).map_err(|e| CliError::Failed(e.into()))?
    );
    let shard = args.shard.unwrap_or(Shard::ALL);
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
    let written = schedulability::write_study(&args.out, &params, args.shard, &computed.points)
        .map_err(|e| CliError::Failed(e.into()))?;
    println!("{written}");
    if !computed.complete() {
        return Err(CliError::Failed(anyhow!(
            "stopped by --timeout after {} of {} task sets: the files hold the sets done (the `sets` column counts them)",
            computed.done,
            computed.total
        )));
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use tinct_core::generate::RandomParams;

    #[derive(clap::Parser, Debug)]
    struct Random {
        #[command(flatten)]
        args: Args,
    }

    #[test]
    fn without_options_the_study_is_the_librarys_default_generator() {
        let args = Random::try_parse_from(["random"]).unwrap().args;
        assert_eq!(args.study.generator, RandomParams::default());
        assert_eq!(args.study.node_budget, Some(20_000));
        let args = Random::try_parse_from(["random", "--memory", "2GiB", "--node-budget", "0"])
            .unwrap()
            .args;
        assert_eq!(args.study.generator.total_memory, 2 << 30);
        assert_eq!(args.study.params().unwrap().node_budget, None);
    }
}
