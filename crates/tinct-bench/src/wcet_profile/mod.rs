//! `tinct bench wcet-profile`: C_i^p, the WCET of one job body as a
//! function of the number of cache partitions p (kim2013 Section IV-B and
//! Figure 6: measured alone, the maximum observed execution time is the
//! WCET estimate, the mean the ACET).
//!
//! For each p, worker processes (`tinct bench wcet-worker`, see [`worker`])
//! run the body under the LD_PRELOAD shim (tinct-preload) with
//! the shim's colors (`tinct_mem::ShimConfig`) = the page colors of partitions 1..=p, so the working set
//! lies in those colors only; each worker checks its pages through pagemap.
//! Launches for different p are interleaved in a seeded random order.
//!
//! The result is written as a `wcet = { … }` line, as a complete task-set
//! file that `tinct analyze` accepts unchanged, and as the Figure 6 plot.

mod launch;
mod plan;
mod report;
pub mod table;
pub mod worker;

use crate::calibrate::{self, RefillSetup};
use crate::harness::pin::PinGuard;
use crate::harness::{
    BenchOptions, Durations, Finished, Interleaved, OutputDir, Progress, RunHeader,
};
use crate::{Error, Result};
use launch::Launch;
use plan::{Plan, TaskSource};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use tinct_core::units::{Bytes, Nanos};
use worker::WorkerReport;

/// Parameters of `tinct bench wcet-profile`.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// Parameters shared by every bench.
    pub common: BenchOptions,
    /// Take the body, period and memory of a task from this task-set file
    /// (with `task`).
    pub taskset: Option<PathBuf>,
    /// The task of `--taskset` to profile.
    pub task: Option<String>,
    /// Job kernel: chase, read, write, rmw, compute, mixed (without --taskset).
    pub kernel: String,
    /// Working set (without a task set; default 4MiB, quick 1MiB).
    pub working_set: Option<Bytes>,
    /// Iterations per job (default: one pass over the working set, or
    /// 10^6 for `compute`).
    pub iterations: Option<u64>,
    /// Job length calibrated once at full cache (then fixed for every p);
    /// overrides `iterations`.
    pub target: Option<Nanos>,
    /// For `mixed`: percent of the job in the memory phase.
    pub memory_percent: Option<u8>,
    /// Task name in the written task set (default: the task's, or `profiled`).
    pub name: Option<String>,
    /// Period of the written task (default: the task's, or 10 × C^1 rounded up to 1 ms).
    pub period: Option<Nanos>,
    /// N_P (default: the task set's, or 32).
    pub partitions: Option<u32>,
    /// Partition counts to profile, a list like `1-8,16,32` (default 1..N_P;
    /// with --quick 1, N_P/4, N_P/2, N_P).
    pub p_list: Option<String>,
    /// Measured jobs per worker launch (default 20, quick 5).
    pub jobs: Option<u32>,
    /// Δ for the written task set (default: the task set's, else measured
    /// here as `tinct bench calibrate` does).
    pub refill: Option<Nanos>,
    /// Path of libtinct_preload.so (default: $TINCT_PRELOAD_LIB, else next to
    /// tinct, else the copy embedded in tinct, as `tinct exec` finds it).
    pub preload: Option<PathBuf>,
    /// Run without the shim: the working set comes from the ordinary heap and
    /// partitions are NOT enforced (every p sees the whole cache; the output says so).
    pub uncolored: bool,
    /// Run the workers under SCHED_OTHER even when SCHED_FIFO is allowed.
    pub no_fifo: bool,
}

impl Default for Params {
    /// The defaults of `tinct bench wcet-profile`: the `chase` kernel.
    fn default() -> Self {
        Self {
            common: BenchOptions::default(),
            taskset: None,
            task: None,
            kernel: "chase".into(),
            working_set: None,
            iterations: None,
            target: None,
            memory_percent: None,
            name: None,
            period: None,
            partitions: None,
            p_list: None,
            jobs: None,
            refill: None,
            preload: None,
            uncolored: false,
            no_fifo: false,
        }
    }
}

/// How to start a worker: the `tinct` binary and the arguments that select
/// `bench wcet-worker` (the CLI knows them, the library does not).
#[derive(Debug, Clone)]
pub struct WorkerCommand {
    /// The program.
    pub program: PathBuf,
    /// Arguments before the worker options.
    pub prefix: Vec<String>,
}

/// The job body being profiled, resolved to fixed work.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfiledBody {
    /// Kernel name.
    pub kernel: String,
    /// Working set in bytes.
    pub working_set_bytes: u64,
    /// Memory iterations per job.
    pub memory_iterations: u64,
    /// Compute iterations per job.
    pub compute_iterations: u64,
}

/// C^p measured at one p.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfilePoint {
    /// Number of partitions.
    pub p: u32,
    /// Page colors of partitions 1..=p.
    pub colors: Vec<u32>,
    /// Execution time of every measured job at this p.
    pub jobs: Durations,
    /// Maximum observed execution time (kim2013's WCET estimate), ns.
    pub wcet_ns: u64,
    /// Mean execution time (ACET), ns.
    pub acet_ns: u64,
    /// The value written to the table: the maximum over this and every
    /// larger p, so the table never increases with p (the format requires
    /// it; measurement noise can break it).
    pub table_ns: u64,
    /// Pages of the working sets whose frames were checked.
    pub pages_checked: u64,
    /// Of those, pages in the partition's colors.
    pub pages_in_colors: u64,
    /// The most LLC misses of one job at this p (`None` without counters).
    pub llc_misses_max: Option<u64>,
}

/// How the working set was placed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Placement {
    /// True if the shim served the working set from the colors of p partitions.
    pub colored: bool,
    /// The shim used, if any.
    pub preload: Option<String>,
    /// Page colors of the last-level cache.
    pub colors: u32,
    /// Pages checked over all launches and the share in the right colors.
    pub pages_in_colors_ratio: Option<f64>,
    /// What this means.
    pub note: String,
}

/// Everything `tinct bench wcet-profile` measured (`wcet-profile.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WcetProfileResult {
    /// Bench, options, machine.
    #[serde(flatten)]
    pub header: RunHeader,
    /// Task name written.
    pub task: String,
    /// The body.
    pub body: ProfiledBody,
    /// N_P.
    pub partitions: u32,
    /// Measured jobs per launch.
    pub jobs_per_launch: u32,
    /// Placement.
    pub placement: Placement,
    /// One point per profiled p, ascending.
    pub points: Vec<ProfilePoint>,
    /// The `wcet = { … }` line (table values).
    pub wcet_line: String,
    /// Δ written to the task set.
    pub refill: String,
    /// Where Δ came from.
    pub refill_source: String,
    /// The complete task-set file written (`taskset.toml`).
    pub taskset: String,
    /// Whether LLC misses were counted, and if not why.
    pub counters: String,
}

/// Runs `tinct bench wcet-profile`: measures, writes the files and returns
/// the result with its summary.
pub fn run(
    params: &Params,
    worker: &WorkerCommand,
    progress: &dyn Progress,
) -> Result<Finished<WcetProfileResult>> {
    let result = measure(params, worker, progress)?;
    let mut out = OutputDir::create(params.common.out_dir("wcet-profile"))?;
    report::write(&result, &mut out)?;
    let summary = report::summary(&result, &out);
    Ok(Finished { result, summary })
}

/// Measures every p (no files written).
pub fn measure(
    params: &Params,
    worker: &WorkerCommand,
    progress: &dyn Progress,
) -> Result<WcetProfileResult> {
    let options = &params.common;
    let reps = options.reps_or(2, 5)?;
    let cpus = options.cpus(1)?;
    let _pin = PinGuard::pin(cpus[0])?;
    let mut header = RunHeader::new("wcet-profile", options, reps, vec![cpus[0]]);
    let plan = plan::plan(params, worker, &header)?;
    let reports = launch_all(&plan, worker, reps, options.seed, progress)?;
    let mut points = profile_points(&plan, &reports)?;
    table::make_non_increasing(&mut points);
    let placement = placement(&plan, &points, &reports);
    let source = plan.source.as_ref();
    let (refill, refill_source) =
        resolve_refill(params, source, &header, plan.partitions, options.seed)?;
    let name = params
        .name
        .clone()
        .or(source.map(|s| s.name.clone()))
        .unwrap_or_else(|| "profiled".into());
    let period = match (params.period, source) {
        (Some(period), _) => period,
        (None, Some(s)) => s.period,
        (None, None) => table::default_period(&points),
    };
    let written = table::task_set(&table::TaskSetInput {
        name: &name,
        body: &plan.body,
        points: &points,
        partitions: plan.partitions,
        cores: header.machine.online_cpus.len().max(1) as u32,
        period,
        refill,
    })
    .map_err(|e| Error::Measurement(format!("the written task set does not validate: {e}")))?;
    let header_lines = vec![
        format!(
            "C^p measured by `tinct bench wcet-profile` on {}",
            header.machine.one_line()
        ),
        format!("placement: {}", placement.note),
        format!("refill: {refill_source}"),
    ];
    let counters = match reports
        .iter()
        .flatten()
        .find_map(|r| r.counters_note.clone())
    {
        Some(note) => note,
        None => "LLC misses counted per job (hardware counter LLC-load-misses)".into(),
    };
    header.add_logged_counters();
    Ok(WcetProfileResult {
        counters,
        wcet_line: table::wcet_line(&points),
        taskset: tinct_core::format::to_toml(&written, &header_lines),
        header,
        task: name,
        partitions: plan.partitions,
        jobs_per_launch: plan.jobs,
        body: plan.body,
        placement,
        points,
        refill: refill.to_string(),
        refill_source,
    })
}

/// Every worker launch, `reps` per p, interleaved; the reports per p.
fn launch_all(
    plan: &Plan,
    worker: &WorkerCommand,
    reps: u32,
    seed: u64,
    progress: &dyn Progress,
) -> Result<Vec<Vec<WorkerReport>>> {
    let runner = Interleaved::new(plan.ps.iter().map(|p| format!("p={p}")), reps).seed(seed);
    progress.start(runner.calls(), "wcet-profile");
    let mut reports: Vec<Vec<WorkerReport>> = vec![Vec::new(); plan.ps.len()];
    runner.run::<Error>(progress, |c| {
        progress.set_message(&format!("p = {}", plan.ps[c]));
        let launch = Launch {
            worker,
            body: &plan.body,
            jobs: plan.jobs,
            seed,
            cpu: plan.cpu,
            fifo: plan.fifo,
            colors: &plan.color_sets[c],
            total_colors: plan.colors,
            preload: plan.preload.as_deref(),
        };
        let report = launch.run_with_retry()?;
        let max = report.job_ns.iter().copied().max().unwrap_or(0);
        reports[c].push(report);
        Ok(max)
    })?;
    progress.finish();
    Ok(reports)
}

/// C^p at each p from its workers' reports (before the table is made
/// non-increasing).
fn profile_points(plan: &Plan, reports: &[Vec<WorkerReport>]) -> Result<Vec<ProfilePoint>> {
    plan.ps
        .iter()
        .zip(&plan.color_sets)
        .zip(reports)
        .map(|((&p, colors), reports)| {
            let samples: Vec<u64> = reports
                .iter()
                .flat_map(|r| r.job_ns.iter().copied())
                .collect();
            let jobs = Durations::of(&samples)
                .ok_or_else(|| Error::Measurement(format!("no jobs ran at p = {p}")))?;
            Ok(ProfilePoint {
                p,
                colors: colors.clone(),
                wcet_ns: jobs.max,
                acet_ns: jobs.mean.round() as u64,
                table_ns: jobs.max,
                jobs,
                pages_checked: reports.iter().map(|r| r.pages_checked).sum(),
                pages_in_colors: reports.iter().map(|r| r.pages_in_colors).sum(),
                llc_misses_max: reports
                    .iter()
                    .filter_map(|r| r.llc_misses.as_ref())
                    .flatten()
                    .copied()
                    .max(),
            })
        })
        .collect()
}

/// Where the working sets lay, and what that means for the table.
fn placement(plan: &Plan, points: &[ProfilePoint], reports: &[Vec<WorkerReport>]) -> Placement {
    let checked: u64 = points.iter().map(|p| p.pages_checked).sum();
    let in_colors: u64 = points.iter().map(|p| p.pages_in_colors).sum();
    let unchecked = reports
        .iter()
        .flatten()
        .find_map(|r| r.unchecked_reason.clone());
    let preload = &plan.preload;
    Placement {
        colored: preload.is_some(),
        preload: preload.as_ref().map(|p| p.display().to_string()),
        colors: plan.colors,
        pages_in_colors_ratio: (checked > 0).then(|| in_colors as f64 / checked as f64),
        note: match (preload, checked, unchecked) {
            (None, _, _) => "--uncolored: the working set came from the ordinary heap; partitions were NOT enforced, \
                             every p saw the whole cache, so the table is NOT a safe C^p for p < N_P"
                .into(),
            (Some(_), 0, reason) => format!(
                "served by the shim, but the placement could not be checked: {}",
                reason.unwrap_or_else(|| "unknown reason".into())
            ),
            (Some(_), _, _) => format!(
                "served by the shim from the colors of partitions 1..=p; {in_colors} of {checked} working-set pages \
                 checked in those colors"
            ),
        },
    }
}

/// Δ for the written task set: the parameter, the input task set's, or
/// measured here as `tinct bench calibrate` does.
fn resolve_refill(
    params: &Params,
    source: Option<&TaskSource>,
    header: &RunHeader,
    partitions: u32,
    seed: u64,
) -> Result<(Nanos, String)> {
    if let Some(refill) = params.refill {
        return Ok((refill, "--refill".into()));
    }
    if let Some(s) = source.filter(|s| s.refill.0 > 0) {
        return Ok((s.refill, "the input task set".into()));
    }
    let geometry = calibrate::Geometry::of(header);
    let wipe = vec![1u64; ((geometry.llc * 2).max(16 << 20) / 8) as usize];
    let refill = calibrate::measure_refill(
        &RefillSetup {
            llc_bytes: geometry.llc,
            partitions,
            page_bytes: geometry.page,
            reps: if header.quick { 5 } else { 21 },
            seed,
        },
        &wipe,
        &crate::harness::NoProgress,
    )?;
    Ok((
        Nanos(refill.delta.refill_ns.div_ceil(100) * 100),
        "measured here as `tinct bench calibrate` does".into(),
    ))
}

#[cfg(test)]
mod tests {
    use super::plan::p_values;
    use super::*;

    #[test]
    fn p_values_default_quick_and_explicit() {
        assert_eq!(p_values(None, 32, false).unwrap().len(), 32);
        assert_eq!(p_values(None, 32, true).unwrap(), vec![1, 8, 16, 32]);
        assert_eq!(p_values(None, 2, true).unwrap(), vec![1, 2]);
        assert_eq!(
            p_values(Some("1-3,8"), 32, false).unwrap(),
            vec![1, 2, 3, 8]
        );
        assert!(matches!(
            p_values(Some("40"), 32, false),
            Err(Error::InvalidInput(_))
        ));
        assert!(matches!(
            p_values(Some("x"), 32, false),
            Err(Error::InvalidInput(_))
        ));
    }
}
