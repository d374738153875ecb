//! `tinct bench wcet-profile`: C_i^p, the WCET of one job body as a
//! function of the number of cache partitions p (kim2013 Section IV-B and
//! Figure 6: measured alone, the maximum observed execution time is the
//! WCET estimate, the mean the ACET), under declared conditions
//! ([`condition`]: alone as kim2013, cold, with co-runners), with high
//! percentiles and a probabilistic WCET from extreme value theory
//! (tinct-report `stats::evt`) beside the maximum.
//!
//! For each p, worker processes (`tinct bench wcet-worker`, see [`worker`])
//! run the body under the LD_PRELOAD shim (tinct-preload) with
//! the shim's colors (`tinct_mem::ShimConfig`) = the page colors of partitions 1..=p, so the working set
//! lies in those colors only; each worker checks its pages through pagemap.
//! Launches for every (p, condition) are interleaved in a seeded random order.
//!
//! The chosen statistic (`--use`: max, a percentile, or the pWCET) of the
//! worst condition becomes C^p; the table is written as a `wcet = { … }`
//! line, as a complete task-set file that `tinct analyze` accepts
//! unchanged, as the Figure 6 plot, and on request straight into a
//! task-set file of the user's ([`taskset_file`]).

pub mod co_runners;
pub mod condition;
mod launch;
mod measure;
mod plan;
mod report;
pub mod statistic;
pub mod table;
mod taskset_file;
pub mod worker;

use crate::calibrate::{self, RefillSetup};
use crate::harness::pin::PinGuard;
use crate::harness::{BenchOptions, Durations, Finished, OutputDir, Progress, RunHeader};
use crate::{Error, Result};
use condition::Condition;
use plan::TaskSource;
use serde::{Deserialize, Serialize};
use statistic::Statistic;
use std::path::PathBuf;
use tinct_core::units::{Bytes, Nanos};
use tinct_report::stats::evt::{self, EvtOptions, EvtReport};

/// Parameters of `tinct bench wcet-profile`.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// Parameters shared by every bench.
    pub common: BenchOptions,
    /// Take the body, period and memory of a task from this task-set file
    /// (with `task`).
    pub taskset: Option<PathBuf>,
    /// The task of `--taskset` to profile, and the task whose `wcet` table
    /// `write_taskset` replaces.
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
    /// Task name in the written task set (default: `task`, the task's, or `profiled`).
    pub name: Option<String>,
    /// Period of the written task (default: the task's, or 10 × C^1 rounded up to 1 ms).
    pub period: Option<Nanos>,
    /// N_P (default: the task set's, or 32).
    pub partitions: Option<u32>,
    /// Partition counts to profile, a list like `1-8,16,32` (default 1..N_P;
    /// with --quick 1, N_P/4, N_P/2, N_P).
    pub p_list: Option<String>,
    /// Measured jobs per worker launch (default 100, quick 5).
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
    /// The conditions to profile under (empty: alone, cold, co-run).
    pub conditions: Vec<Condition>,
    /// Whether the co-runners are coloured.
    pub co_runners: CoRunnerChoice,
    /// Jobs per block of the EVT fit (default 10).
    pub block_size: Option<u64>,
    /// Per-job exceedance probabilities to state the pWCET at (empty: 10⁻⁹).
    pub exceedances: Vec<f64>,
    /// The statistic that becomes C^p (default: the maximum).
    pub statistic: Statistic,
    /// Write the C^p table into this task-set file: replace the `wcet` of
    /// task `task` if the file exists, else create it.
    pub write_taskset: Option<PathBuf>,
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
            conditions: Vec::new(),
            co_runners: CoRunnerChoice::Auto,
            block_size: None,
            exceedances: Vec::new(),
            statistic: Statistic::Max,
            write_taskset: None,
        }
    }
}

impl Params {
    /// The conditions to profile under, defaults applied.
    pub fn conditions(&self) -> Vec<Condition> {
        if self.conditions.is_empty() {
            Condition::DEFAULT.to_vec()
        } else {
            self.conditions.clone()
        }
    }

    /// The EVT options: the block size, the exceedances (with the one
    /// `--use pwcet:P` needs), the run's seed for the bootstrap.
    pub fn evt_options(&self) -> Result<EvtOptions> {
        let mut exceedances = if self.exceedances.is_empty() {
            vec![evt::DEFAULT_EXCEEDANCE]
        } else {
            self.exceedances.clone()
        };
        if let Some(p) = self.statistic.exceedance()
            && !exceedances.contains(&p)
        {
            exceedances.push(p);
        }
        if let Some(bad) = exceedances.iter().find(|p| !(**p > 0.0 && **p < 1.0)) {
            return Err(Error::InvalidInput(format!(
                "--exceedance: expected probabilities strictly between 0 and 1, found {bad}"
            )));
        }
        let block_size = match self.block_size {
            Some(0) => {
                return Err(Error::InvalidInput(
                    "--block-size: expected at least 1 job per block, found 0".into(),
                ));
            }
            Some(n) => n,
            None => evt::DEFAULT_BLOCK_SIZE,
        };
        Ok(EvtOptions {
            block_size,
            exceedances,
            seed: self.common.seed,
            ..EvtOptions::default()
        })
    }
}

/// Whether co-runners run on coloured memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CoRunnerChoice {
    /// Coloured when the task is and the colour probe finds colouring
    /// effective; uncoloured otherwise.
    #[default]
    Auto,
    /// Always in the partitions the task does not use (when the task is coloured).
    Colored,
    /// Always on the ordinary heap.
    Uncolored,
}

impl std::str::FromStr for CoRunnerChoice {
    type Err = Error;

    /// `auto`, `colored` or `uncolored`.
    fn from_str(text: &str) -> Result<Self> {
        match text {
            "auto" => Ok(Self::Auto),
            "colored" => Ok(Self::Colored),
            "uncolored" => Ok(Self::Uncolored),
            other => Err(Error::InvalidInput(format!(
                "--co-runners: expected auto, colored or uncolored, found `{other}`"
            ))),
        }
    }
}

/// How to start a worker and a co-runner: the `tinct` binary and the
/// arguments that select `bench wcet-worker` and `bench wcet-corunner`
/// (the worker protocol; the CLI declares those subcommands).
#[derive(Debug, Clone)]
pub struct WorkerCommand {
    /// The program.
    pub program: PathBuf,
    /// Arguments before the worker's job.
    pub prefix: Vec<String>,
    /// Arguments before a co-runner's job.
    pub co_runner_prefix: Vec<String>,
}

impl WorkerCommand {
    /// The `tinct` arguments that start a worker: `bench wcet-worker JOB`.
    pub const WORKER_PREFIX: [&'static str; 2] = ["bench", "wcet-worker"];
    /// The `tinct` arguments that start a launch's co-runners:
    /// `bench wcet-corunner JOB`.
    pub const CO_RUNNER_PREFIX: [&'static str; 2] = ["bench", "wcet-corunner"];

    /// `program` (a `tinct` binary) started with the worker protocol's
    /// subcommands.
    pub fn tinct(program: PathBuf) -> Self {
        Self {
            program,
            prefix: Self::WORKER_PREFIX.map(String::from).to_vec(),
            co_runner_prefix: Self::CO_RUNNER_PREFIX.map(String::from).to_vec(),
        }
    }

    /// This process's own binary, which must be `tinct`, re-run as the
    /// worker of each profiling launch.
    pub fn this_tinct() -> Result<Self> {
        let program = std::env::current_exe()
            .map_err(|e| Error::Measurement(format!("cannot locate the tinct binary: {e}")))?;
        Ok(Self::tinct(program))
    }
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

/// What the co-runners of one condition at one p did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CoRunnerTotals {
    /// True if they ran in the colours of the partitions the task does not use.
    pub colored: bool,
    /// Bytes each aggressor swept.
    pub bytes_per_cpu: u64,
    /// Sweeps over all launches and aggressors.
    pub sweeps: u64,
    /// Pages of their buffers checked through pagemap, and of those in the
    /// expected colours (0 and 0 when uncoloured).
    pub pages_checked: u64,
    /// Of `pages_checked`, pages in the expected colours.
    pub pages_in_colors: u64,
}

/// The jobs of one condition at one p.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConditionPoint {
    /// The condition.
    pub condition: Condition,
    /// Order statistics of the jobs.
    pub jobs: Durations,
    /// The nearest-rank 99.9th percentile, ns.
    pub p999_ns: u64,
    /// The EVT fit of the jobs (pWCET, or why the data do not support one).
    pub evt: EvtReport,
    /// The chosen statistic (`--use`) of these jobs, ns.
    pub statistic_ns: Option<u64>,
    /// Why there is no statistic, if there is none.
    pub statistic_missing: Option<String>,
    /// The most LLC misses of one job (`None` without counters).
    pub llc_misses_max: Option<u64>,
    /// Pages of the working sets whose frames were checked.
    pub pages_checked: u64,
    /// Of those, pages in the partition's colors.
    pub pages_in_colors: u64,
    /// The co-runners (co-run conditions only).
    pub co_runners: Option<CoRunnerTotals>,
    /// Every measured job, ns, in the order they ran (launch after launch).
    pub job_ns: Vec<u64>,
}

/// C^p measured at one p.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfilePoint {
    /// Number of partitions.
    pub p: u32,
    /// Page colors of partitions 1..=p.
    pub colors: Vec<u32>,
    /// One entry per condition, in the order asked.
    pub conditions: Vec<ConditionPoint>,
    /// The largest statistic over the conditions, ns (`None` if a
    /// condition has none).
    pub statistic_ns: Option<u64>,
    /// The condition it came from.
    pub worst_condition: Option<Condition>,
    /// The value written to the table: the largest statistic over this and
    /// every larger p, rounded up to a microsecond, so the table never
    /// increases with p (the format requires it; measurement noise can
    /// break it). `None` without a statistic.
    pub table_ns: Option<u64>,
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

/// Where the co-runners of the co-run conditions run, and on what memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CoRunnerSetup {
    /// One aggressor on each of these CPUs.
    pub cpus: Vec<u32>,
    /// True if they run in the partitions the task does not use.
    pub colored: bool,
    /// Why coloured or not.
    pub reason: String,
    /// The colour probe's finding on the last-level cache, when it ran.
    pub color_probe: Option<String>,
    /// Bytes each uncoloured aggressor sweeps (twice the LLC, at least 16 MiB).
    pub uncolored_bytes_per_cpu: u64,
    /// The last-level cache's size.
    pub llc_bytes: u64,
}

/// Where the table went with `--write-taskset`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WrittenTaskSet {
    /// The file.
    pub path: String,
    /// `created` (a new task-set file) or `updated` (the task's `wcet` replaced).
    pub action: String,
    /// The task whose table was written.
    pub task: String,
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
    /// The conditions, in the order asked.
    pub conditions: Vec<Condition>,
    /// The co-runners (with a co-run condition).
    pub co_runners: Option<CoRunnerSetup>,
    /// The statistic that became C^p (`max`, `p99.9`, `pwcet:1e-9`).
    pub statistic: String,
    /// How the EVT fits were made.
    pub evt: EvtOptions,
    /// One point per profiled p, ascending.
    pub points: Vec<ProfilePoint>,
    /// The `wcet = { … }` line (table values), when every point has the statistic.
    pub wcet_line: Option<String>,
    /// Why there is no table, if there is none.
    pub table_missing: Option<String>,
    /// Δ written to the task set (absent when the run was stopped before
    /// its first round ended: nothing was written, Δ not measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refill: Option<String>,
    /// Where Δ came from (absent with `refill`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refill_source: Option<String>,
    /// The complete task-set file written (`taskset.toml`), when there is a table.
    pub taskset: Option<String>,
    /// The task-set file the table was written into (`--write-taskset`).
    pub written_taskset: Option<WrittenTaskSet>,
    /// Whether LLC misses were counted, and if not why.
    pub counters: String,
}

/// Runs `tinct bench wcet-profile`: measures, writes the table into
/// `--write-taskset` if asked, writes the files and returns the result with
/// its summary. A table that cannot be written (no statistic, or the file
/// refuses it) fails the run after the files are written.
pub fn run(
    params: &Params,
    worker: &WorkerCommand,
    progress: &dyn Progress,
) -> Result<Finished<WcetProfileResult>> {
    let mut result = measure(params, worker, progress)?;
    result.header.record_rounds(progress.stop_requested());
    let mut failure = None;
    // An interrupted profile's table is partial: never written into a
    // task set.
    match params
        .write_taskset
        .as_ref()
        .filter(|_| !result.header.interrupted)
        .map(|path| taskset_file::write(path, params, &result))
    {
        Some(Ok(record)) => result.written_taskset = Some(record),
        Some(Err(e)) => failure = Some(e),
        None => {}
    }
    let mut out = OutputDir::create(params.common.out_dir("wcet-profile"))?;
    report::write(&result, &mut out)?;
    if let Some(e) = failure {
        return Err(e);
    }
    let mut summary = report::summary(&result, &out);
    summary.interruption(&result.header, out.path());
    if result.header.interrupted && params.write_taskset.is_some() {
        summary.note("interrupted: the partial table was not written into --write-taskset");
    }
    Ok(Finished { result, summary })
}

/// Measures every p under every condition (no files written).
pub fn measure(
    params: &Params,
    worker: &WorkerCommand,
    progress: &dyn Progress,
) -> Result<WcetProfileResult> {
    let options = &params.common;
    let reps = options.reps_or(2, 5)?;
    let evt_options = params.evt_options()?;
    let conditions = params.conditions();
    let with_co_runners = conditions.iter().any(|c| c.co_runners());
    let cpus = options.cpus(1)?;
    if with_co_runners && cpus.len() < 2 {
        return Err(Error::InvalidInput(format!(
            "--cpus: the co-run conditions need a CPU besides the task's for the co-runners, \
             expected at least 2 CPUs, found {} (or leave co-run out of --conditions)",
            tinct_sys::format_cpu_list(&cpus)
        )));
    }
    let _pin = PinGuard::pin(cpus[0])?;
    let used = if with_co_runners {
        cpus.clone()
    } else {
        vec![cpus[0]]
    };
    let mut header = RunHeader::new("wcet-profile", options, reps, used);
    let plan = plan::plan(params, worker, &header)?;
    let launches = measure::launch_all(&plan, worker, reps, options.seed, progress)?;
    if launches.is_empty() {
        return Ok(stopped_before_first_round(
            params,
            header,
            plan,
            evt_options,
            &launches,
        ));
    }
    let mut points = measure::profile_points(&plan, &launches, &evt_options, &params.statistic)?;
    let table_missing = table::make_non_increasing(&mut points);
    let placement = measure::placement(&plan, &points, &launches);
    let source = plan.source.as_ref();
    // After Ctrl-C Δ is not measured (seconds): the partial profile then
    // has its wcet line but no task-set file.
    let refill = match given_refill(params, source) {
        Some(given) => Some(given),
        None if progress.stop_requested() => None,
        None => Some(measure_refill(&header, plan.partitions, options.seed)?),
    };
    let name = params
        .name
        .clone()
        .or(params.task.clone())
        .or(source.map(|s| s.name.clone()))
        .unwrap_or_else(|| "profiled".into());
    let (wcet_line, taskset) = match (&table_missing, &refill) {
        (Some(_), _) => (None, None),
        (None, None) => (Some(table::wcet_line(&points)), None),
        (None, Some((refill, refill_source))) => {
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
                refill: *refill,
            })
            .map_err(|e| {
                Error::Measurement(format!("the written task set does not validate: {e}"))
            })?;
            let header_lines = vec![
                format!(
                    "C^p ({} over {}) measured by `tinct bench wcet-profile` on {}",
                    params.statistic,
                    conditions
                        .iter()
                        .map(|c| c.name())
                        .collect::<Vec<_>>()
                        .join(", "),
                    header.machine.one_line()
                ),
                format!("placement: {}", placement.note),
                format!("refill: {refill_source}"),
            ];
            (
                Some(table::wcet_line(&points)),
                Some(tinct_core::format::to_toml(&written, &header_lines)),
            )
        }
    };
    let counters = launches
        .reports()
        .find_map(|r| r.counters_note.clone())
        .unwrap_or_else(|| "LLC misses counted per job (hardware counter LLC-load-misses)".into());
    header.add_logged_counters();
    Ok(WcetProfileResult {
        counters,
        wcet_line,
        table_missing,
        taskset,
        written_taskset: None,
        header,
        task: name,
        partitions: plan.partitions,
        jobs_per_launch: plan.jobs,
        body: plan.body,
        placement,
        conditions: plan.conditions,
        co_runners: plan.co_runners,
        statistic: params.statistic.to_string(),
        evt: evt_options,
        points,
        refill: refill.as_ref().map(|(refill, _)| refill.to_string()),
        refill_source: refill.map(|(_, source)| source),
    })
}

/// The result of a run stopped before every (p, condition) had one
/// launch: the header, body, plan and placement, no point, no table.
fn stopped_before_first_round(
    params: &Params,
    mut header: RunHeader,
    plan: plan::Plan,
    evt: EvtOptions,
    launches: &measure::Launches,
) -> WcetProfileResult {
    header.add_logged_counters();
    WcetProfileResult {
        counters: "not counted: stopped before the first round".into(),
        wcet_line: None,
        table_missing: Some("stopped before the first round finished: nothing measured".into()),
        taskset: None,
        written_taskset: None,
        task: params
            .name
            .clone()
            .or(params.task.clone())
            .or(plan.source.as_ref().map(|s| s.name.clone()))
            .unwrap_or_else(|| "profiled".into()),
        partitions: plan.partitions,
        jobs_per_launch: plan.jobs,
        placement: measure::placement(&plan, &[], launches),
        header,
        body: plan.body,
        conditions: plan.conditions,
        co_runners: plan.co_runners,
        statistic: params.statistic.to_string(),
        evt,
        points: Vec::new(),
        refill: None,
        refill_source: None,
    }
}

/// Δ for the written task set when one is given: the parameter or the
/// input task set's.
fn given_refill(params: &Params, source: Option<&TaskSource>) -> Option<(Nanos, String)> {
    if let Some(refill) = params.refill {
        return Some((refill, "--refill".into()));
    }
    source
        .filter(|s| s.refill.0 > 0)
        .map(|s| (s.refill, "the input task set".into()))
}

/// Δ for the written task set, measured here as `tinct bench calibrate`
/// does.
fn measure_refill(header: &RunHeader, partitions: u32, seed: u64) -> Result<(Nanos, String)> {
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
    fn co_runner_choices_parse_and_unknown_ones_are_input_errors() {
        assert_eq!(
            "colored".parse::<CoRunnerChoice>().unwrap(),
            CoRunnerChoice::Colored
        );
        assert_eq!(
            "auto".parse::<CoRunnerChoice>().unwrap(),
            CoRunnerChoice::Auto
        );
        assert_eq!(
            "uncolored".parse::<CoRunnerChoice>().unwrap(),
            CoRunnerChoice::Uncolored
        );
        let error = "coloured".parse::<CoRunnerChoice>().unwrap_err();
        assert!(matches!(error, Error::InvalidInput(_)), "{error}");
    }

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
