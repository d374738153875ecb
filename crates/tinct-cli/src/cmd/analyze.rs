//! `tinct analyze FILE`: cache-aware schedulability analysis (kim2013 Eq. 1-3)
//! with release jitter, blocking, platform overheads and chain bounds.

use super::bench::common::duration;
use crate::error::CliError;
use crate::output::{ms, print_json, table};
use std::path::PathBuf;
use std::process::ExitCode;
use tinct_core::analysis::{Analysis, AnalysisError, analyze};
use tinct_core::overheads::{OverheadsChoice, OverheadsSource};
use tinct_core::units::Nanos;

/// Arguments of `tinct analyze`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Task-set file (TOML, or JSON by extension) with cores and partitions assigned.
    pub file: PathBuf,
    /// Print the analysis as JSON instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Override the platform's refill time Δ (e.g. "45.3us").
    #[arg(long, value_parser = duration)]
    pub refill: Option<Nanos>,
    /// Take Δ from this `calibrate.json` when the file has no `refill`, and
    /// the overheads with `--overheads measured` (default:
    /// $TINCT_CALIBRATION, else the one `tinct bench calibrate` saved).
    #[arg(long, value_name = "FILE")]
    pub calibration: Option<PathBuf>,
    /// Platform overheads to charge: `none`, `measured` (the machine
    /// calibration), or a calibration or task-set FILE giving them
    /// (default: the task set's own `[platform] overheads`, if any).
    #[arg(long, value_parser = OverheadsChoice::parse, value_name = "none|measured|FILE")]
    pub overheads: Option<OverheadsChoice>,
}

/// Runs the analysis and prints it. Exit status 0 whatever the verdict.
pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let (mut set, calibration) =
        crate::calibration::load_task_set(&args.file, args.calibration.as_deref())?;
    let mut refill_source = match &calibration {
        Some(c) => format!(
            "from calibration {} ({} measured with {} partitions)",
            c.path.display(),
            c.refill.refill,
            c.refill.partitions
        ),
        None => "from the file".to_string(),
    };
    if let Some(refill) = args.refill {
        set.platform.refill = refill;
        refill_source = "from --refill".to_string();
    }
    let source = overheads_source(&args, &set)?;
    set.platform.overheads = source.overheads;
    let analysis = analyze(&set).map_err(|e| analysis_input_error(&args.file, &set, e))?;
    for warning in &analysis.warnings {
        eprintln!(
            "tinct: warning: {}",
            warning.located(&args.file.display().to_string())
        );
    }
    if args.json {
        let mut json = serde_json::to_value(&analysis).map_err(anyhow::Error::from)?;
        json["refill_source"] = serde_json::Value::String(refill_source);
        json["overheads_source"] = serde_json::to_value(&source).map_err(anyhow::Error::from)?;
        print_json(&json)?;
    } else {
        print_human(&analysis, &refill_source, &source);
    }
    Ok(ExitCode::SUCCESS)
}

/// The overheads `--overheads` asks for, and where they come from.
fn overheads_source(args: &Args, set: &tinct_core::TaskSet) -> Result<OverheadsSource, CliError> {
    let choice = args.overheads.clone().unwrap_or(OverheadsChoice::TaskSet);
    choice
        .resolve_with_saved(
            set,
            &args.file,
            args.calibration.as_deref(),
            crate::calibration::saved_path(),
        )
        .map_err(CliError::Input)
}

/// A task set the analysis refuses is bad input for `analyze`: name the
/// file, the task's line and the field (tinct-core words it).
pub fn analysis_input_error(
    file: &std::path::Path,
    set: &tinct_core::TaskSet,
    e: AnalysisError,
) -> CliError {
    CliError::from(e.input_error(&file.display().to_string(), set))
}

fn opt_ms(ns: Option<u64>) -> String {
    ns.map_or_else(|| "> D".to_string(), ms)
}

/// One line on the overheads charged and where they came from.
fn print_overheads(analysis: &Analysis, source: &OverheadsSource) {
    let o = &analysis.overheads;
    if source.overheads.is_none() {
        println!("overheads: none ({})", source.from);
    } else {
        let tick = match o.tick_period_ns {
            Some(period) => format!(
                "{} per timer interrupt (each release, and the tick every {})",
                Nanos(o.tick_ns),
                Nanos(period)
            ),
            None => format!("{} per release's timer interrupt", Nanos(o.tick_ns)),
        };
        println!(
            "overheads from {}: δ = {} per context switch (2δ per job), release latency {} (added to every J), {tick}",
            source.from,
            Nanos(o.context_switch_ns),
            Nanos(o.release_latency_ns),
        );
    }
    for missing in &source.missing {
        println!(
            "  ✗ {} NOT included: {} (the verdict does not cover it)",
            missing.name, missing.why
        );
    }
}

fn print_human(analysis: &Analysis, refill_source: &str, source: &OverheadsSource) {
    println!(
        "Δ (partition refill time) = {} ({refill_source})",
        Nanos(analysis.refill_ns)
    );
    print_overheads(analysis, source);
    // Columns for jitter, blocking and overheads only where the set has them,
    // so a set without them prints the table it always did.
    let extended = analysis
        .tasks
        .iter()
        .any(|t| t.jitter_ns != Some(0) || t.blocking_ns != Some(0) || t.overhead_ns != 0);
    for core in &analysis.cores {
        if core.tasks.is_empty() {
            continue;
        }
        println!(
            "\ncore {}: {} task(s), partitions {}",
            core.core,
            core.tasks.len(),
            tinct_core::PartitionSet::from_iter(core.partitions.iter().copied())
        );
        let mut header = vec!["task", "prio", "|S|", "C (ms)", "ω (ms)"];
        if extended {
            header.extend(["2δ (ms)", "J (ms)", "B (ms)"]);
        }
        header.extend(["R NoCInt (ms)", "R CInt (ms)", "D (ms)", "iter", "verdict"]);
        let mut t = table(&header);
        for task in core
            .task_indices
            .iter()
            .filter_map(|&i| analysis.tasks.get(i))
        {
            let verdict = match (task.schedulable, task.schedulable_nocint) {
                (true, _) => "ok",
                (false, true) => "MISS (cache)",
                (false, false) => "MISS",
            };
            let mut row = vec![
                task.name.clone(),
                task.priority.to_string(),
                task.partition_count.to_string(),
                ms(task.wcet_ns),
                ms(task.warmup_ns),
            ];
            if extended {
                let unbounded = |v: Option<u64>| v.map_or_else(|| "∞".to_string(), ms);
                row.extend([
                    ms(task.overhead_ns),
                    unbounded(task.jitter_ns),
                    unbounded(task.blocking_ns),
                ]);
            }
            row.extend([
                opt_ms(task.wcrt_nocint_ns),
                opt_ms(task.wcrt_ns),
                ms(task.deadline_ns),
                task.breakdown.iterations.to_string(),
                verdict.to_string(),
            ]);
            t.add_row(row);
        }
        println!("{t}");
        println!(
            "  utilization Eq. (1): {:.4} with cache interference, {:.4} without; Liu-Layland bound {:.4} ({})",
            core.utilization,
            core.utilization_nocint,
            core.utilization_bound,
            if core.utilization_test {
                "passes"
            } else {
                "exceeds: the response-time test decides"
            }
        );
        let worst = core.memory.iter().max_by(|a, b| {
            (a.used_bytes / a.capacity_bytes).total_cmp(&(b.used_bytes / b.capacity_bytes))
        });
        match worst {
            Some(w) => println!(
                "  memory Eq. (3): {} (fullest partition {}: {:.1} of {:.1} MiB)",
                if core.memory_feasible {
                    "feasible"
                } else {
                    "NOT feasible"
                },
                w.partition,
                w.used_bytes / 1048576.0,
                w.capacity_bytes / 1048576.0
            ),
            None => println!("  memory Eq. (3): no partitions assigned"),
        }
        for reason in &core.reasons {
            println!("  ✗ {reason}");
        }
    }
    if !analysis.chains.is_empty() {
        println!("\nchains (first release to last output, holistic jitter):");
        for chain in &analysis.chains {
            println!(
                "  {}: {} ms (NoCInt {} ms){}",
                chain.tasks.join(" → "),
                chain.bound_ns.map_or_else(|| "unbounded".to_string(), ms),
                chain
                    .bound_nocint_ns
                    .map_or_else(|| "unbounded".to_string(), ms),
                match chain.sampling_hops {
                    0 => String::new(),
                    n => format!(", {n} sampling hop(s)"),
                }
            );
        }
    }
    for task in analysis.tasks.iter() {
        if task.blocking_ns != Some(0) {
            println!(
                "note: task '{}': B = {} ({})",
                task.name,
                task.blocking_ns
                    .map_or_else(|| "unbounded".to_string(), |b| format!("{} ms", ms(b))),
                task.blocking_source
            );
        }
        if let Some(inherited) = task.jitter_inherited_ns.filter(|&j| j > 0) {
            println!(
                "note: task '{}': released by its producers, inherits J = {} ms",
                task.name,
                ms(inherited)
            );
        }
        for note in &task.notes {
            println!("note: task '{}': {note}", task.name);
        }
    }
    println!();
    if analysis.schedulable {
        println!("verdict: SCHEDULABLE");
    } else {
        println!("verdict: NOT SCHEDULABLE");
        for reason in &analysis.reasons {
            println!("  - {reason}");
        }
    }
}
