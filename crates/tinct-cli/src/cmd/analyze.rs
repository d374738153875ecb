//! `tinct analyze FILE`: cache-aware schedulability analysis (kim2013 Eq. 1-3)
//! with release jitter, blocking, platform overheads and chain bounds.

use super::bench::common::duration;
use crate::error::CliError;
use crate::output::print_json;
use std::path::PathBuf;
use std::process::ExitCode;
use tinct_core::analysis::{AnalysisError, analyze};
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
    /// calibration), or a FILE giving them: a calibration, the
    /// overheads.json of `tinct bench overheads`, or a task set
    /// (default: the task set's own `[platform] overheads`, if any).
    #[arg(long, value_parser = OverheadsChoice::parse, value_name = "none|measured|FILE")]
    pub overheads: Option<OverheadsChoice>,
}

/// Runs the analysis and prints it. Exit status 0 whatever the verdict.
pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let (mut set, refill) =
        crate::calibration::load_task_set(&args.file, args.calibration.as_deref(), args.refill)?;
    let refill_source = refill.describe();
    let source = overheads_source(&args, &set)?;
    set.platform.overheads = source.overheads;
    let analysis = analyze(&set).map_err(|e| analysis_input_error(&args.file, &set, e))?;
    crate::output::warn_inputs(&args.file, Some(&analysis));
    if args.json {
        let mut json = serde_json::to_value(&analysis).map_err(anyhow::Error::from)?;
        json["refill_source"] = serde_json::Value::String(refill_source);
        json["overheads_source"] = serde_json::to_value(&source).map_err(anyhow::Error::from)?;
        print_json(&json)?;
    } else {
        print!(
            "{}",
            tinct_report::text::analysis_text(&analysis, &refill_source, &source)
        );
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
