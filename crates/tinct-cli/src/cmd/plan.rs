//! `tinct plan FILE`: cache-aware task and partition allocation (kim2013
//! Algorithms 1-3, or the BFD/WFD baselines). The plan is itself a task-set
//! file with `core`, `priority` and `partitions` filled in, so
//! `tinct analyze OUT` re-checks it.

use crate::error::CliError;
use crate::output::{ms, print_json, table};
use anyhow::anyhow;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use tinct_core::TaskSet;
use tinct_core::alloc::{
    Algorithm, Assignment, Instance, Reason, SearchOptions, allocate, cata::spend_leftover,
};
use tinct_core::analysis::analyze;
use tinct_core::format::{Syntax, to_toml};
use tinct_core::units::Nanos;

/// The allocation algorithm, as named on the command line.
#[derive(Copy, Clone, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum AlgorithmArg {
    /// Cache-aware task allocation with cache sharing (kim2013 Algorithm 3).
    Cata,
    /// Best-fit decreasing, even partition split, no sharing.
    Bfd,
    /// Worst-fit decreasing, even partition split, no sharing.
    Wfd,
}

impl From<AlgorithmArg> for Algorithm {
    fn from(a: AlgorithmArg) -> Algorithm {
        match a {
            AlgorithmArg::Cata => Algorithm::Cata,
            AlgorithmArg::Bfd => Algorithm::Bfd,
            AlgorithmArg::Wfd => Algorithm::Wfd,
        }
    }
}

/// Arguments of `tinct plan`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Task-set file (TOML, or JSON by extension); cores and partitions in it are ignored.
    pub file: PathBuf,
    /// Allocation algorithm.
    #[arg(long, value_enum, default_value = "cata")]
    pub algorithm: AlgorithmArg,
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
    /// allocation found (the plan then says it is not proven optimal).
    #[arg(long, default_value_t = 2_000_000, conflicts_with = "exact")]
    pub node_budget: u64,
    /// Search exhaustively, however long it takes.
    #[arg(long)]
    pub exact: bool,
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

/// One task of the plan.
#[derive(Debug, Serialize)]
pub struct PlannedTask {
    /// Name.
    pub name: String,
    /// Priority rank, 1 the highest.
    pub priority: u32,
    /// S(i), global partition numbers.
    pub partitions: Vec<u32>,
    /// C^{|S(i)|}, ns.
    pub wcet_ns: u64,
    /// Eq. (2) worst-case response time, ns.
    pub wcrt_ns: Option<u64>,
    /// D, ns.
    pub deadline_ns: u64,
}

/// One core of the plan.
#[derive(Debug, Serialize)]
pub struct PlannedCore {
    /// Core number.
    pub core: u32,
    /// Partitions reserved for the core.
    pub partitions: Vec<u32>,
    /// Eq. (1) utilization.
    pub utilization: f64,
    /// Tasks, highest priority first.
    pub tasks: Vec<PlannedTask>,
}

/// A task the algorithm could not place.
#[derive(Debug, Serialize)]
pub struct UnplacedTask {
    /// Name.
    pub name: String,
    /// `time` or `memory`.
    pub reason: Reason,
    /// In words.
    pub message: String,
}

/// What `tinct plan` prints (tables and `--json` come from this).
#[derive(Debug, Serialize)]
pub struct PlanReport {
    /// Input file.
    pub file: String,
    /// `cata`, `bfd` or `wfd`.
    pub algorithm: Algorithm,
    /// Every task placed and the written plan re-analyzes as schedulable.
    pub schedulable: bool,
    /// Partitions the algorithm could use.
    pub budget: u32,
    /// Partitions reserved for cores.
    pub partitions_used: u32,
    /// Partitions CATA needed before spending leftovers.
    pub partitions_needed: u32,
    /// (Σ M_i) / ((M_total/N_P) · partitions used), kim2013 IV-E.
    pub memory_efficiency: f64,
    /// Σ over cores of Eq. (1).
    pub total_utilization: f64,
    /// Every MinCacheAlloc call was proven optimal.
    pub exact: bool,
    /// Per core.
    pub cores: Vec<PlannedCore>,
    /// Tasks that found no core.
    pub unplaced: Vec<UnplacedTask>,
    /// Where the plan was written.
    pub output: Option<String>,
    /// Where Δ came from (the file, a calibration, or --refill).
    pub refill_source: String,
}

/// Plans and prints; exit 1 if some task cannot be placed.
pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let (mut set, calibration) =
        crate::calibration::load_task_set(&args.file, args.calibration.as_deref())?;
    let mut refill_source = match &calibration {
        Some(c) => format!(
            "Δ {} from calibration {}",
            set.platform.refill,
            c.path.display()
        ),
        None => format!("Δ {} from the file", set.platform.refill),
    };
    if let Some(refill) = args.refill {
        set.platform.refill = refill;
        refill_source = format!("Δ {refill} from --refill");
    }
    let n_p = set.platform.partitions;
    let budget = args.partitions.unwrap_or(n_p);
    if budget == 0 || budget > n_p {
        return Err(CliError::Input(format!(
            "--partitions: expected 1 to {n_p} (the platform's N_P in {}), found {budget}",
            args.file.display()
        )));
    }
    let options = SearchOptions {
        node_budget: (!args.exact).then_some(args.node_budget),
        ..SearchOptions::EXACT
    };
    let inst = Instance::new(&set);
    let algorithm = Algorithm::from(args.algorithm);
    let mut assignment = allocate(&inst, algorithm, budget, &options);
    let needed = assignment.partitions_used();
    if algorithm == Algorithm::Cata && assignment.schedulable() && !args.keep_free {
        spend_leftover(&inst, &mut assignment, &options);
    }
    let planned = assignment.apply(&set, &inst);
    let mut report = report(&args.file, &set, &planned, &assignment, &inst, needed);
    report.refill_source = refill_source;
    if report.schedulable
        && let Some(out) = &args.output
    {
        write_plan(out, &planned, &report)?;
        report.output = Some(out.display().to_string());
    }
    if args.json {
        print_json(&report)?;
    } else {
        print_human(&report);
    }
    if !report.unplaced.is_empty() {
        let reasons: Vec<String> = report.unplaced.iter().map(|u| u.message.clone()).collect();
        return Err(CliError::Failed(anyhow!(
            "no allocation found: {}",
            reasons.join("; ")
        )));
    }
    if !report.schedulable {
        return Err(CliError::Failed(anyhow!(
            "the allocation does not re-verify with `tinct analyze` (this is a bug in tinct)"
        )));
    }
    Ok(ExitCode::SUCCESS)
}

fn report(
    file: &Path,
    set: &TaskSet,
    planned: &TaskSet,
    assignment: &Assignment,
    inst: &Instance,
    needed: u32,
) -> PlanReport {
    let unplaced: Vec<UnplacedTask> = assignment
        .unplaced
        .iter()
        .map(|u| {
            let task = &set.tasks[u.task];
            let message = u.describe(set);
            UnplacedTask {
                name: task.name.clone(),
                reason: u.reason,
                message,
            }
        })
        .collect();
    let analysis = assignment
        .schedulable()
        .then(|| analyze(planned).ok())
        .flatten();
    let mut offset = 0;
    let cores = assignment
        .cores
        .iter()
        .enumerate()
        .map(|(j, core)| {
            let partitions: Vec<u32> = (offset + 1..=offset + core.partitions).collect();
            offset += core.partitions;
            let tasks = core
                .tasks
                .iter()
                .map(|&i| {
                    let t = &planned.tasks[i];
                    let analyzed = analysis
                        .as_ref()
                        .and_then(|a| a.tasks.iter().find(|r| r.name == t.name));
                    PlannedTask {
                        name: t.name.clone(),
                        priority: t.priority.unwrap_or(0),
                        partitions: t.partitions.map(|s| s.to_vec()).unwrap_or_default(),
                        wcet_ns: t.effective_wcet().map_or(0, |c| c.0),
                        wcrt_ns: analyzed.and_then(|r| r.wcrt_ns),
                        deadline_ns: t.deadline.0,
                    }
                })
                .collect();
            PlannedCore {
                core: j as u32,
                partitions,
                utilization: core.utilization,
                tasks,
            }
        })
        .collect();
    PlanReport {
        file: file.display().to_string(),
        algorithm: assignment.algorithm,
        schedulable: analysis.as_ref().is_some_and(|a| a.schedulable),
        budget: assignment.budget,
        partitions_used: assignment.partitions_used(),
        partitions_needed: needed,
        memory_efficiency: assignment.memory_efficiency(inst),
        total_utilization: assignment.total_utilization(),
        exact: assignment.exact,
        cores,
        unplaced,
        output: None,
        refill_source: String::new(),
    }
}

fn write_plan(out: &Path, planned: &TaskSet, report: &PlanReport) -> Result<(), CliError> {
    let header = vec![
        format!(
            "Plan written by `tinct plan --algorithm {}` from {}.",
            report.algorithm.name(),
            report.file
        ),
        format!(
            "Partitions used {} of {} (CATA needed {}), memory efficiency {:.1} %, total utilization {:.4}{}.",
            report.partitions_used,
            report.budget,
            report.partitions_needed,
            100.0 * report.memory_efficiency,
            report.total_utilization,
            if report.exact {
                ""
            } else {
                " (search budget hit: not proven optimal)"
            }
        ),
        format!(
            "{}; re-check with `tinct analyze` on this file.",
            report.refill_source
        ),
    ];
    let text = to_toml(planned, &header);
    let text = match Syntax::from_path(out) {
        Syntax::Toml => text,
        Syntax::Json => {
            let value: toml::Value =
                toml::from_str(&text).map_err(|e| CliError::Failed(e.into()))?;
            serde_json::to_string_pretty(&value).map_err(|e| CliError::Failed(e.into()))? + "\n"
        }
    };
    std::fs::write(out, text)
        .map_err(|e| CliError::Failed(anyhow!("cannot write {}: {e}", out.display())))
}

fn print_human(report: &PlanReport) {
    println!(
        "plan of {} with {} ({} partitions available, {})",
        report.file,
        report.algorithm.name(),
        report.budget,
        report.refill_source
    );
    for core in report
        .cores
        .iter()
        .filter(|c| !c.tasks.is_empty() || !c.partitions.is_empty())
    {
        println!(
            "\ncore {}: {} partition(s) {}, utilization {:.4}",
            core.core,
            core.partitions.len(),
            tinct_core::PartitionSet::from_iter(core.partitions.iter().copied()),
            core.utilization
        );
        let mut t = table(&[
            "task",
            "prio",
            "|S|",
            "S(i)",
            "C (ms)",
            "WCRT (ms)",
            "D (ms)",
        ]);
        for task in &core.tasks {
            t.add_row(vec![
                task.name.clone(),
                task.priority.to_string(),
                task.partitions.len().to_string(),
                tinct_core::PartitionSet::from_iter(task.partitions.iter().copied()).to_string(),
                ms(task.wcet_ns),
                task.wcrt_ns.map_or_else(|| "-".to_string(), ms),
                ms(task.deadline_ns),
            ]);
        }
        println!("{t}");
    }
    println!();
    println!(
        "partitions used: {} of {} (needed {}), memory efficiency {:.1} %, total utilization {:.4}",
        report.partitions_used,
        report.budget,
        report.partitions_needed,
        100.0 * report.memory_efficiency,
        report.total_utilization
    );
    if !report.exact {
        println!(
            "note: a MinCacheAlloc search hit its node budget: the plan is feasible but not proven optimal (--exact)"
        );
    }
    for u in &report.unplaced {
        println!("✗ {}", u.message);
    }
    match &report.output {
        Some(out) => println!("plan written to {out} (check it with `tinct analyze {out}`)"),
        None if report.schedulable => {
            println!("verdict: SCHEDULABLE (write the plan with -o FILE)")
        }
        None => println!("verdict: NOT SCHEDULABLE"),
    }
}
