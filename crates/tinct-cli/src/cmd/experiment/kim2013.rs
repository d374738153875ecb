//! `tinct experiment kim2013`: the setting of kim2013 Section IV-E.

use crate::error::CliError;
use crate::output::{print_json, table};
use anyhow::anyhow;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;
use tinct_core::alloc::SearchOptions;
use tinct_core::experiment::Hooks;
use tinct_core::experiment::kim2013::{self, Report, TABLE_I};
use tinct_core::format::{Syntax, parse};
use tinct_core::timeout::{parse_timeout, stop_after};

/// Arguments of `tinct experiment kim2013`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Table I task set to duplicate (default: the shipped examples/kim2013.toml).
    #[arg(long)]
    pub file: Option<PathBuf>,
    /// Print JSON instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Search nodes per MinCacheAlloc call (default: exhaustive, every result exact).
    #[arg(long)]
    pub node_budget: Option<u64>,
    /// Stop after this long with the settings done so far (exit status 1).
    #[arg(long, value_parser = parse_timeout, value_name = "DURATION")]
    pub timeout: Option<Duration>,
}

/// Runs the experiment.
pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let base = match &args.file {
        Some(path) => crate::calibration::load_task_set(path, None)?.0,
        None => parse(TABLE_I, "examples/kim2013.toml", Syntax::Toml)?,
    };
    let options = SearchOptions {
        node_budget: args.node_budget,
        ..SearchOptions::EXACT
    };
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
        print_human(&report);
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

fn opt(v: Option<f64>) -> String {
    v.map_or_else(|| "fails".to_string(), |v| format!("{v:.1}"))
}

fn print_human(report: &Report) {
    println!(
        "kim2013 IV-E: Table I duplicated, N_C = {}, N_P = {}, Δ = 45.3 us",
        report.cores, report.partitions
    );
    let mut t = table(&[
        "n",
        "M_total (MiB)",
        "algorithm",
        "partitions needed",
        "% of N_P (Fig. 11)",
        "memory eff. % (Fig. 12)",
        "utilization % all partitions (Fig. 13)",
        "exact",
    ]);
    for r in &report.rows {
        t.add_row(vec![
            r.tasks.to_string(),
            r.memory_mib.to_string(),
            r.algorithm.name().to_string(),
            r.partitions_needed
                .map_or_else(|| "fails".to_string(), |p| p.to_string()),
            opt(r.partitions_percent),
            opt(r.memory_efficiency_percent),
            opt(r.utilization_percent),
            if r.exact { "yes" } else { "budget" }.to_string(),
        ]);
    }
    println!("{t}");
    println!(
        "\nCATA against the baselines (percentage points, over settings where both schedule):"
    );
    let mut t = table(&["figure", "vs", "paper", "tinct", "direction"]);
    for c in &report.comparisons {
        let ours = match (c.ours_min, c.ours_max) {
            (Some(lo), Some(hi)) => format!("{lo:.1} to {hi:.1} points"),
            _ => "no common setting".to_string(),
        };
        t.add_row(vec![
            c.quantity.clone(),
            c.against.name().to_string(),
            c.paper.clone(),
            ours,
            if c.direction_holds {
                "holds"
            } else {
                "DIFFERS"
            }
            .to_string(),
        ]);
    }
    println!("{t}");
    println!("\nOther published facts:");
    for (paper, ours) in &report.facts {
        println!("  paper: {paper}; tinct: {ours}");
    }
}
