//! `tinct bench <subcommand>`: the measurement workbenches of tinct-bench.
//!
//! Each variant's `Args` lives in its tinct-bench module (with the shared
//! `BenchOptions` flattened in); the bench writes its JSON, CSV and SVG files
//! and prints its one-screen summary itself.

use crate::error::CliError;
use std::process::ExitCode;

/// Options of `tinct bench`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    bench: Bench,
}

#[derive(clap::Subcommand, Debug)]
enum Bench {
    /// Load-to-use latency per cache level (pointer chase, with and without
    /// huge pages), read/write bandwidth and the partition refill time Δ.
    Calibrate(tinct_bench::calibrate::Args),
    /// Context-switch cost and cache-related preemption delay against the
    /// theoretical curves of Sebek 2002 (Figures 5 and 7).
    Crpd(tinct_bench::crpd::Args),
    /// C^p: the WCET of one job body for p = 1..N_P cache partitions
    /// (kim2013 Figure 6), as a task-set `wcet` line and a task-set file.
    WcetProfile(tinct_bench::wcet_profile::Args),
    /// One wcet-profile worker process (internal).
    #[command(hide = true)]
    WcetWorker(tinct_bench::wcet_profile::worker::WorkerArgs),
    /// Shared-memory contention (Gracioli et al.): sequential, parallel-shared
    /// and parallel-private versions per thread placement, and false sharing.
    Coherence(tinct_bench::coherence::Args),
    /// DRAM bank/controller contention (Chandru & Mueller): own-bank, default
    /// and shared-bank allocations under STREAM-like and random-access kernels.
    Banks(tinct_bench::banks::Args),
    /// Inter-core cache interference on a victim with and without cache
    /// reservation by page coloring (kim2013 Figure 7).
    Isolation(tinct_bench::isolation::Args),
}

/// Runs the chosen bench.
pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let result = match args.bench {
        Bench::Calibrate(args) => {
            tinct_bench::calibrate::run(&args).map(|()| save_calibration(&args))
        }
        Bench::Crpd(args) => tinct_bench::crpd::run(&args),
        Bench::WcetProfile(args) => {
            worker_command().and_then(|w| tinct_bench::wcet_profile::run(&args, &w))
        }
        Bench::WcetWorker(args) => tinct_bench::wcet_profile::worker::main(&args),
        Bench::Coherence(args) => tinct_bench::coherence::run(&args).map(|r| r.summary().print()),
        Bench::Banks(args) => tinct_bench::banks::run(&args).map(|r| r.summary().print()),
        Bench::Isolation(args) => tinct_bench::isolation::run(&args).map(|r| r.summary().print()),
    };
    result.map(|()| ExitCode::SUCCESS).map_err(cli_error)
}

/// A full calibration becomes this machine's default Δ for task sets
/// without `refill` (a `--quick` smoke run never does).
fn save_calibration(args: &tinct_bench::calibrate::Args) {
    if args.common.quick {
        println!("(--quick: not saved as this machine's calibration)");
        return;
    }
    let written = args.common.out_dir("calibrate").join("calibrate.json");
    match crate::calibration::save(&written) {
        Ok(path) => println!(
            "saved as this machine's calibration: {} (tinct analyze/plan/run use its Δ for task sets without `refill`)",
            path.display()
        ),
        Err(e) => eprintln!("tinct: warning: could not save the calibration: {e}"),
    }
}

/// This binary, re-run as `tinct bench wcet-worker` for each profiling launch.
fn worker_command() -> tinct_bench::Result<tinct_bench::wcet_profile::WorkerCommand> {
    let program = std::env::current_exe().map_err(|e| {
        tinct_bench::Error::Measurement(format!("cannot locate the tinct binary: {e}"))
    })?;
    Ok(tinct_bench::wcet_profile::WorkerCommand {
        program,
        prefix: vec!["bench".into(), "wcet-worker".into()],
    })
}

/// Bad options are input errors (exit 2); everything else failed the bench (exit 1).
fn cli_error(error: tinct_bench::Error) -> CliError {
    match error {
        tinct_bench::Error::InvalidInput(message) => CliError::Input(message),
        other => CliError::Failed(other.into()),
    }
}
