//! `tinct experiment merge`: joins the shard files of
//! `tinct experiment random --shard I/N` into the files one unsharded run
//! writes (same bytes).

use crate::error::CliError;
use std::path::PathBuf;
use std::process::ExitCode;
use tinct_core::experiment::shards::merge_files;
use tinct_report::schedulability;

/// Arguments of `tinct experiment merge`.
#[derive(clap::Args, Debug)]
pub(super) struct Args {
    /// Shard files (`shard-I-of-N.json`), all N of them, in any order.
    #[arg(required = true)]
    pub shards: Vec<PathBuf>,
    /// Output directory (created).
    #[arg(short, long, default_value = "experiment-random")]
    pub out: PathBuf,
}

/// Reads the shards, merges them (tinct-core checks they cover one
/// experiment exactly once) and writes the results.
pub(super) fn run(args: Args) -> Result<ExitCode, CliError> {
    crate::output::output_dir(&args.out, "--out")?;
    let (params, points) = merge_files(&args.shards)?;
    let written = schedulability::write_study(&args.out, &params, None, &points)
        .map_err(|e| CliError::Failed(e.into()))?;
    println!("{written}");
    Ok(ExitCode::SUCCESS)
}
