//! `tinct plan FILE`: cache-aware task and partition allocation (kim2013
//! Algorithms 1-3, or the BFD/WFD baselines). The plan is itself a task-set
//! file with `core`, `priority` and `partitions` filled in, so
//! `tinct analyze OUT` re-checks it.

use crate::error::CliError;
use crate::output::print_json;
use anyhow::anyhow;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;
use tinct_base::InputError;
use tinct_core::TaskSet;
use tinct_core::alloc::{
    Algorithm, PlacementOptions, PlacementReport, PlanOptions, PlanRefusal, PlanReport,
    SearchOptions, as_reservations, check_graph, check_request, place_static, plan,
};
use tinct_core::timeout::{parse_timeout, stop_after};
use tinct_core::units::Nanos;
use tinct_core::units::parse_duration;

/// The scheduling policy `--policy` plans every task under.
#[derive(Copy, Clone, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum PolicyArg {
    /// SCHED_DEADLINE reservations: partitioned EDF, each core checked
    /// with the EDF demand test and its cache terms (docs/EDF.md).
    Deadline,
}

/// A placement policy for the affinity graph.
#[derive(Copy, Clone, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum PlacementArg {
    /// Partition the graph onto cache domains offline, least bytes crossing
    /// domains, tasks pinned to their cores.
    Static,
}

/// Arguments of `tinct plan`.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// Task-set file (TOML, or JSON by extension); cores and partitions in it are ignored.
    pub file: PathBuf,
    /// Allocation algorithm.
    #[arg(long, value_enum, default_value = "cata")]
    pub algorithm: Algorithm,
    /// Partitions the plan may use (default: all N_P of the platform).
    #[arg(long)]
    pub partitions: Option<u32>,
    /// Write the plan (a task-set file; JSON if the name ends in .json, else TOML).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Print the plan as JSON instead of tables.
    #[arg(long)]
    pub json: bool,
    /// CATA only: keep partitions the allocation did not need free instead of
    /// giving each to the core whose utilization it lowers most.
    #[arg(long)]
    pub keep_free: bool,
    /// Search nodes per MinCacheAlloc call before settling for the best
    /// allocation found (the plan then says it is not proven optimal);
    /// 0: no budget, an exhaustive search (as --exact and as
    /// `tinct experiment random --node-budget 0`).
    #[arg(long, default_value_t = 2_000_000, conflicts_with = "exact")]
    pub node_budget: u64,
    /// Search exhaustively, however long it takes.
    #[arg(long)]
    pub exact: bool,
    /// Override the platform's refill time Δ (e.g. "45.3us").
    #[arg(long, value_parser = parse_duration)]
    pub refill: Option<Nanos>,
    /// Take Δ from this `calibrate.json` when the file has no `refill`
    /// (default: $TINCT_CALIBRATION, else the one `tinct bench calibrate` saved).
    #[arg(long, value_name = "FILE")]
    pub calibration: Option<PathBuf>,
    /// Stop after this long (e.g. "30s") with the tasks placed so far; the
    /// report says so, and the exit status is 1 unless every task was placed.
    #[arg(long, value_parser = parse_timeout, value_name = "DURATION")]
    pub timeout: Option<Duration>,
    /// Plan every task as this policy: `deadline` makes each a
    /// SCHED_DEADLINE reservation (default: each task's own `policy`; a
    /// core with reservations is tested under EDF, and its SCHED_FIFO
    /// tasks below them).
    #[arg(long, value_enum)]
    pub policy: Option<PolicyArg>,
    /// Place the affinity graph instead (`static`: tasks on cores so that
    /// the fewest bytes cross cache domains; cores only, partitions as given).
    #[arg(long, value_enum, conflicts_with_all = ["algorithm", "partitions", "keep_free"])]
    pub placement: Option<PlacementArg>,
    /// With --placement: the largest utilization a core may take.
    #[arg(long, default_value_t = 1.0, requires = "placement")]
    pub utilization_bound: f64,
}

/// The search `--exact` or `--node-budget` asks for (a budget of 0 is
/// exhaustive, as `--exact`).
fn search_options(args: &Args) -> SearchOptions {
    SearchOptions::node_budget_option(if args.exact { 0 } else { args.node_budget })
}

/// Plans and prints; exit 1 if some task cannot be placed.
pub(crate) fn run(args: Args) -> Result<ExitCode, CliError> {
    if let Some(output) = &args.output {
        crate::output::output_file(output, "--output")?;
    }
    let (set, refill) =
        crate::calibration::load_task_set(&args.file, args.calibration.as_deref(), args.refill)?;
    let refill_source = refill.describe_value(set.platform.refill);
    let set = match args.policy {
        Some(PolicyArg::Deadline) => as_reservations(&set, &args.file.display().to_string())?,
        None => set,
    };
    if args.placement == Some(PlacementArg::Static) {
        check_graph(&set, &args.file.display().to_string())?;
        return run_static(&args, &set, refill_source);
    }
    let budget = check_request(&set, &args.file.display().to_string(), args.partitions).map_err(
        |refusal| match refusal {
            PlanRefusal::Partitions(e) => CliError::Input(InputError {
                field: "--partitions".into(),
                ..e
            }),
            PlanRefusal::Unsupported(e) | PlanRefusal::Graph(e) => CliError::Input(e),
        },
    )?;
    let stop = stop_after(args.timeout);
    let options = PlanOptions {
        partitions: Some(budget),
        search: search_options(&args),
        keep_free: args.keep_free,
        stop: Some(&stop),
    };
    let plan = plan(&set, args.algorithm, &options);
    crate::output::warn_inputs(&args.file, plan.analysis.as_ref());
    let report = PlanReport::written(&plan, &args.file, refill_source, args.output.as_deref())
        .map_err(|e| CliError::Failed(anyhow!(e)))?;
    if args.json {
        print_json(&report)?;
    } else {
        print!("{}", tinct_report::text::plan_text(&report));
    }
    match plan.failure(&set) {
        None => Ok(ExitCode::SUCCESS),
        Some(failure) => Err(CliError::Failed(anyhow!("{failure}"))),
    }
}

/// `plan --placement static`: place, print, write; exit 1 without a placement.
fn run_static(args: &Args, set: &TaskSet, refill_source: String) -> Result<ExitCode, CliError> {
    let stop = stop_after(args.timeout);
    let options = PlacementOptions {
        utilization_bound: args.utilization_bound,
        node_budget: search_options(args).node_budget,
        stop: Some(&stop),
    };
    let placement = place_static(set, &options)
        .map_err(|e| CliError::Input(e.input_error("--utilization-bound")))?;
    crate::output::warn_inputs(&args.file, placement.analysis.as_ref());
    let report = PlacementReport::written(
        &placement,
        &args.file,
        refill_source,
        args.output.as_deref(),
    )
    .map_err(|e| CliError::Failed(anyhow!(e)))?;
    if args.json {
        print_json(&report)?;
    } else {
        print!("{}", tinct_report::text::placement_text(&report));
    }
    match &placement.reason {
        None => Ok(ExitCode::SUCCESS),
        Some(reason) => Err(CliError::Failed(anyhow!("no placement found: {reason}"))),
    }
}
