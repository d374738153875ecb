//! `tinct`: measure, model, analyze, plan, enforce and verify the cache,
//! coherence and DRAM-bank interference of real-time task sets.
//!
//! The binary is thin: it parses arguments, calls the libraries and prints.
//! Each subcommand lives in its own module under `cmd/`.

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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Analyze(args) => cmd::analyze::run(args),
    };
    error::finish(result)
}
