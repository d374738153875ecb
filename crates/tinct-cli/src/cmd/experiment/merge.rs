//! `tinct experiment merge`: joins the shard files of
//! `tinct experiment random --shard I/N` into the files one unsharded run
//! writes (same bytes).

use super::random::{Point, ShardFile, write_results};
use crate::error::CliError;
use std::path::PathBuf;
use std::process::ExitCode;

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

/// Checks that the shards belong to one experiment and cover it exactly, then sums them.
pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let mut files: Vec<(PathBuf, ShardFile)> = Vec::new();
    for path in &args.shards {
        let text = std::fs::read_to_string(path).map_err(|e| {
            CliError::Input(format!(
                "{}: expected a readable shard file, found {e}",
                path.display()
            ))
        })?;
        let file: ShardFile = serde_json::from_str(&text).map_err(|e| {
            CliError::Input(format!(
                "{}:{}: expected a shard file of `tinct experiment random --shard`, found {e}",
                path.display(),
                e.line()
            ))
        })?;
        files.push((path.clone(), file));
    }
    let (first_path, first) = &files[0];
    let shards = first.shards;
    let mut seen = vec![None; shards as usize];
    for (path, file) in &files {
        if file.params != first.params || file.shards != shards {
            return Err(CliError::Input(format!(
                "{}: expected a shard of the same experiment as {} (same parameters and shard count), found different ones",
                path.display(),
                first_path.display()
            )));
        }
        let slot = &mut seen[(file.shard - 1) as usize];
        if let Some(other) = slot.replace(path.clone()) {
            return Err(CliError::Input(format!(
                "{}: shard {}/{shards} is also given as {}",
                path.display(),
                file.shard,
                other.display()
            )));
        }
    }
    let missing: Vec<String> = (1..=shards)
        .filter(|i| seen[(*i - 1) as usize].is_none())
        .map(|i| i.to_string())
        .collect();
    if !missing.is_empty() {
        return Err(CliError::Input(format!(
            "shards: expected all {shards} shards, missing {}",
            missing.join(", ")
        )));
    }
    let mut points: Vec<Point> = first.points.clone();
    for point in &mut points {
        point.sets = 0;
        point.not_generated = 0;
        point.budget_hit = 0;
        point.schedulable.values_mut().for_each(|c| *c = 0);
    }
    for (_, file) in &files {
        for (total, part) in points.iter_mut().zip(&file.points) {
            total.sets += part.sets;
            total.not_generated += part.not_generated;
            total.budget_hit += part.budget_hit;
            for (name, count) in &part.schedulable {
                *total.schedulable.entry(name.clone()).or_default() += count;
            }
        }
    }
    write_results(&args.out, &first.params, &points)?;
    Ok(ExitCode::SUCCESS)
}
