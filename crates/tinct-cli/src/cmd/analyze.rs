//! `tinct analyze FILE`: cache-aware schedulability analysis (kim2013 Eq. 1-3)
//! with release jitter, blocking, platform overheads and chain bounds.

use crate::error::CliError;
use crate::output::print_json;
use std::path::PathBuf;
use std::process::ExitCode;
use tinct_core::overheads::{ChargeError, ChargedAnalysis, OverheadsChoice};
use tinct_core::units::Nanos;
use tinct_core::units::parse_duration;

/// Arguments of `tinct analyze`.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// Task-set file (TOML, or JSON by extension) with cores and partitions assigned.
    pub file: PathBuf,
    /// Print the analysis as JSON instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Override the platform's refill time Δ (e.g. "45.3us").
    #[arg(long, value_parser = parse_duration)]
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
pub(crate) fn run(args: Args) -> Result<ExitCode, CliError> {
    let (set, refill) =
        crate::calibration::load_task_set(&args.file, args.calibration.as_deref(), args.refill)?;
    let refill_source = refill.describe();
    let choice = args.overheads.unwrap_or(OverheadsChoice::TaskSet);
    let charged = ChargedAnalysis::of(
        &set,
        &args.file,
        &choice,
        args.calibration.as_deref(),
        crate::calibration::saved_path(),
    )
    .map_err(|e| match e {
        ChargeError::Overheads(e) | ChargeError::Input(e) => CliError::Input(e),
    })?;
    crate::output::warn_inputs(&args.file, Some(&charged.analysis));
    if args.json {
        print_json(&charged.report(Some(&refill_source)))?;
    } else {
        print!(
            "{}",
            tinct_report::text::analysis_text(&charged.analysis, &refill_source, &charged.source)
        );
    }
    Ok(ExitCode::SUCCESS)
}
