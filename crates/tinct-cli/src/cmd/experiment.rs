//! `tinct experiment`: allocation studies.
//!
//! - `kim2013`: the setting of kim2013 Figures 11-13 (Table I duplicated to
//!   n = 8, 12, 16 tasks, N_C = 4, N_P = 32, M_total = 1 and 2 GiB), BFD,
//!   WFD and CATA side by side with the paper's published comparisons;
//! - `random`: schedulability ratio vs utilization on random task sets,
//!   seeded, parallel, shardable (`--shard I/N`);
//! - `merge`: joins shard outputs into exactly what one unsharded run writes.

mod kim2013;
mod merge;
mod random;

use crate::error::CliError;
use std::process::ExitCode;

/// Arguments of `tinct experiment`.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    #[command(subcommand)]
    command: Experiment,
}

#[derive(clap::Subcommand, Debug)]
enum Experiment {
    /// kim2013 Figures 11-13: partitions needed, memory efficiency and total
    /// utilization of BFD, WFD and CATA on the paper's task set.
    Kim2013(kim2013::Args),
    /// Schedulability ratio vs utilization on random task sets (CSV + SVG).
    Random(random::Args),
    /// Join the shard files of `experiment random --shard I/N` runs.
    Merge(merge::Args),
}

/// Runs the chosen experiment.
pub(crate) fn run(args: Args) -> Result<ExitCode, CliError> {
    match args.command {
        Experiment::Kim2013(a) => kim2013::run(a),
        Experiment::Random(a) => random::run(a),
        Experiment::Merge(a) => merge::run(a),
    }
}
