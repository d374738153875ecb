//! `tinct experiment merge`: joins the shard files of
//! `tinct experiment random --shard I/N` into the files one unsharded run
//! writes (same bytes).

use crate::error::CliError;
use std::path::PathBuf;
use std::process::ExitCode;
use tinct_core::experiment::random::{MergeError, ShardFile, merge};
use tinct_core::format::read_text;

/// Shard files hold counts per utilization point: far below this.
const MAX_SHARD_BYTES: u64 = 64 << 20;
use tinct_report::schedulability;

/// Arguments of `tinct experiment merge`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Shard files (`shard-I-of-N.json`), all N of them, in any order.
    #[arg(required = true)]
    pub shards: Vec<PathBuf>,
    /// Output directory (created).
    #[arg(short, long, default_value = "experiment-random")]
    pub out: PathBuf,
}

/// Reads the shards, merges them (tinct-core checks they cover one
/// experiment exactly once) and writes the results.
pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let mut files: Vec<ShardFile> = Vec::new();
    for path in &args.shards {
        let text = read_text(path, MAX_SHARD_BYTES, "shard file")?;
        let file: ShardFile = serde_json::from_str(&text).map_err(|e| {
            CliError::Input(format!(
                "{}:{}: expected a shard file of `tinct experiment random --shard`, found {e}",
                path.display(),
                e.line()
            ))
        })?;
        files.push(file);
    }
    let (params, points) = merge(&files).map_err(|e| {
        let name = |i: usize| args.shards[i].display().to_string();
        CliError::Input(match &e {
            MergeError::Different { index } => format!("{}: {e} as {}", name(*index), name(0)),
            MergeError::OutOfRange { index, .. } => format!("{}: {e}", name(*index)),
            MergeError::Twice { index, first, .. } => {
                format!("{}: {e} (also as {})", name(*index), name(*first))
            }
            MergeError::Empty | MergeError::Missing { .. } => format!("shards: {e}"),
        })
    })?;
    schedulability::write_results(&args.out, &params, &points)
        .map_err(|e| CliError::Failed(e.into()))?;
    println!(
        "results written to {} (results.csv, schedulability.svg, params.json)",
        args.out.display()
    );
    Ok(ExitCode::SUCCESS)
}
