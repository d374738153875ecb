//! `tinct analyze FILE`: cache-aware schedulability analysis (kim2013 Eq. 1-3).

use crate::error::CliError;
use crate::output::{ms, print_json, table};
use std::path::PathBuf;
use std::process::ExitCode;
use tinct_core::analysis::{Analysis, AnalysisError, analyze};
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
    #[arg(long, value_parser = parse_refill)]
    pub refill: Option<Nanos>,
    /// Take Δ from this `calibrate.json` when the file has no `refill`
    /// (default: $TINCT_CALIBRATION, else the one `tinct bench calibrate` saved).
    #[arg(long, value_name = "FILE")]
    pub calibration: Option<PathBuf>,
}

fn parse_refill(text: &str) -> Result<Nanos, String> {
    tinct_core::units::parse_duration(text).map_err(|e| e.to_string())
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
    let analysis = analyze(&set).map_err(|e| analysis_input_error(&args.file, &set, e))?;
    if args.json {
        let mut json = serde_json::to_value(&analysis).map_err(anyhow::Error::from)?;
        json["refill_source"] = serde_json::Value::String(refill_source);
        print_json(&json)?;
    } else {
        print_human(&analysis, &refill_source);
    }
    Ok(ExitCode::SUCCESS)
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

fn print_human(analysis: &Analysis, refill_source: &str) {
    println!(
        "Δ (partition refill time) = {} ({refill_source})",
        Nanos(analysis.refill_ns)
    );
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
        let mut t = table(&[
            "task",
            "prio",
            "|S|",
            "C (ms)",
            "ω (ms)",
            "R NoCInt (ms)",
            "R CInt (ms)",
            "D (ms)",
            "iter",
            "verdict",
        ]);
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
            t.add_row(vec![
                task.name.clone(),
                task.priority.to_string(),
                task.partition_count.to_string(),
                ms(task.wcet_ns),
                ms(task.warmup_ns),
                opt_ms(task.wcrt_nocint_ns),
                opt_ms(task.wcrt_ns),
                ms(task.deadline_ns),
                task.breakdown.iterations.to_string(),
                verdict.to_string(),
            ]);
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
    for task in analysis.tasks.iter().filter(|t| !t.notes.is_empty()) {
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
