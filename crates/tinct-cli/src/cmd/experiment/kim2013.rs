//! `tinct experiment kim2013`: the setting of kim2013 Section IV-E.

use crate::error::CliError;
use crate::output::print_json;
use anyhow::anyhow;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;
use tinct_core::alloc::SearchOptions;
use tinct_core::experiment::Hooks;
use tinct_core::experiment::kim2013;
use tinct_core::timeout::{parse_timeout, stop_after};

/// Arguments of `tinct experiment kim2013`.
#[derive(clap::Args, Debug)]
pub(super) struct Args {
    /// Table I task set to duplicate (default: the shipped examples/kim2013.toml).
    #[arg(long)]
    pub file: Option<PathBuf>,
    /// Print JSON instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Search nodes per MinCacheAlloc call (default, or 0: no budget, an
    /// exhaustive search, every result exact).
    #[arg(long)]
    pub node_budget: Option<u64>,
    /// Stop after this long with the settings done so far (exit status 1).
    #[arg(long, value_parser = parse_timeout, value_name = "DURATION")]
    pub timeout: Option<Duration>,
}

/// Runs the experiment.
pub(super) fn run(args: Args) -> Result<ExitCode, CliError> {
    let base = match &args.file {
        Some(path) => crate::calibration::load_task_set(path, None, None)?.0,
        None => kim2013::table_i()?,
    };
    let options = args
        .node_budget
        .map_or(SearchOptions::EXACT, SearchOptions::node_budget_option);
    let stop = stop_after(args.timeout);
    let report = kim2013::run(
        &base,
        &options,
        Hooks {
            progress: None,
            stop: Some(&stop),
        },
    );
    if args.json {
        print_json(&report)?;
    } else {
        print!("{}", tinct_report::text::kim2013_text(&report));
    }
    if !report.complete {
        return Err(CliError::Failed(anyhow!(
            "stopped by --timeout after {} of {} settings × algorithms",
            report.rows.len(),
            kim2013::UNITS
        )));
    }
    Ok(ExitCode::SUCCESS)
}
