//! `tinct`: measure, model, analyze, plan, enforce and verify the cache,
//! coherence and DRAM-bank interference of real-time task sets.
//!
//! The binary is thin: it parses arguments, calls the libraries and prints.
//! Each subcommand lives in its own module under `cmd/`.
#![forbid(unsafe_code)]

mod calibration;
mod cmd;
mod error;
mod output;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Cache-aware real-time analysis, planning and enforcement for multicore Linux.
#[derive(Parser, Debug)]
#[command(name = "tinct", version, about, long_about = None, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Schedulability analysis of a task set with cores and partitions assigned
    /// (kim2013 Eq. 1-3).
    Analyze(cmd::analyze::Args),
    /// Measurement workbenches: calibration, C^p profiling, CRPD and interference.
    Bench(cmd::bench::Args),
    /// What this machine offers (caches, colors, PMU, resctrl, privileges,
    /// RT settings) and what to change.
    Doctor(cmd::doctor::Args),
    /// Run a planned task set (or an rt-app file) for real: periodic SCHED_FIFO
    /// threads, per-job logs, trace, and observed vs predicted response times.
    Run(cmd::run::Args),
    /// The whole loop on this machine: measure the bodies' worst cases and the
    /// platform overheads, write the task set, analyze, plan, run, verify.
    Demo(cmd::demo::Args),
    /// Run an unmodified program with its heap in the given page colors
    /// (LD_PRELOAD shim) and/or its L3 ways reserved (resctrl), optionally
    /// pinned and under SCHED_FIFO.
    Exec(cmd::exec::Args),
    /// Assign tasks to cores and cache partitions to tasks (kim2013 CATA, or
    /// the BFD/WFD baselines); writes a task-set file `tinct analyze` re-checks.
    Plan(cmd::plan::Args),
    /// One self-contained HTML page (no network) from a run directory or a
    /// bench directory: verdict, plan, kim2013 Fig. 8 and 10, distributions,
    /// migrations, counters, machine.
    Report(cmd::report::Args),
    /// Allocation studies: the kim2013 Figures 11-13 setting, random
    /// schedulability experiments (shardable), and merging shards.
    Experiment(cmd::experiment::Args),
    /// Sample a command's or a process's counters over time (miss ratio,
    /// IPC, context switches, migrations, page faults per thread), live,
    /// into CSV, JSON and an SVG plot, with the overhead of the sampling.
    Monitor(cmd::monitor::Args),
}

fn main() -> ExitCode {
    tinct_sys::signals::restore_default_sigpipe();
    tinct_sys::stdio::exit_on_stdout_failure("tinct");
    if tinct_sys::stdio::stdout_closed_at_start() {
        return error::finish(Err(error::CliError::Failed(anyhow::anyhow!(
            "standard output is closed (>&-): what tinct prints would be lost; \
             redirect it to /dev/null to discard it"
        ))));
    }
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Analyze(args) => cmd::analyze::run(args),
        Command::Bench(args) => cmd::bench::run(args),
        Command::Doctor(args) => cmd::doctor::run(args),
        Command::Run(args) => cmd::run::run(args),
        Command::Demo(args) => cmd::demo::run(args),
        Command::Exec(args) => cmd::exec::run(args),
        Command::Plan(args) => cmd::plan::run(args),
        Command::Experiment(args) => cmd::experiment::run(args),
        Command::Report(args) => cmd::report::run(args),
        Command::Monitor(args) => cmd::monitor::run(args),
    };
    error::finish(result)
}
