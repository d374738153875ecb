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
//! task-set file of the user's (`taskset_file`).

pub mod co_runners;
pub mod condition;
mod launch;
mod measure;
mod plan;
mod program_launch;
mod report;
pub mod statistic;
pub mod table;
mod taskset_file;
pub mod worker;

use crate::Result;
use crate::harness::{BenchOptions, Finished, Progress};
pub use co_runners::CoRunnerChoice;
use condition::Condition;
pub use report::{
    CoRunnerSetup, CoRunnerTotals, ConditionPoint, Placement, ProfilePoint, ProfiledBody,
    ProfiledProgram, WcetProfileResult, WrittenTaskSet,
};
use statistic::Statistic;
use std::path::PathBuf;
use tinct_core::units::{Bytes, Nanos};
pub use worker::WorkerCommand;

/// Parameters of `tinct bench wcet-profile`.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct Params {
    /// Parameters shared by every bench.
    #[cfg_attr(feature = "cli", command(flatten))]
    pub common: BenchOptions,
    /// Take the body, period and memory of a task from this task-set file.
    #[cfg_attr(feature = "cli", arg(long, value_name = "FILE", requires = "task"))]
    pub taskset: Option<PathBuf>,
    /// The task of `--taskset` to profile, and the task whose `wcet` table
    /// `--write-taskset` replaces.
    #[cfg_attr(feature = "cli", arg(long, value_name = "NAME"))]
    pub task: Option<String>,
    /// Job kernel: chase, read, write, rmw, compute, mixed (without --taskset).
    #[cfg_attr(feature = "cli", arg(long, default_value_t = Params::default().kernel))]
    pub kernel: String,
    /// Profile a program of yours instead of a kernel: the program and its
    /// arguments, last on the command line (`--command ./filter --rows 64`);
    /// it answers jobs over --protocol, as a task body does (docs/FORMAT.md).
    #[cfg_attr(
        feature = "cli",
        arg(
            long,
            num_args = 1..,
            allow_hyphen_values = true,
            value_name = "PROGRAM ARG",
            conflicts_with_all = ["taskset", "kernel", "iterations", "target", "memory_percent"],
            requires = "working_set"
        )
    )]
    pub command: Vec<String>,
    /// How --command's jobs are asked for: lines (a line each way) or
    /// futex (tinct_job_wait / tinct_job_done).
    #[cfg_attr(
        feature = "cli",
        arg(
            long,
            default_value = "lines",
            value_parser = crate::cli::protocol,
            requires = "command"
        )
    )]
    pub protocol: tinct_core::model::JobProtocol,
    /// Working set (without --taskset; default 4MiB, with --quick 1MiB; with
    /// --command, required: the program's memory M_i, written into the task
    /// set and sizing the shim's pool).
    #[cfg_attr(feature = "cli", arg(long, value_parser = tinct_core::units::parse_size))]
    pub working_set: Option<Bytes>,
    /// Iterations per job (default: one pass over the working set, or
    /// 10^6 for `compute`).
    #[cfg_attr(feature = "cli", arg(long, conflicts_with = "target"))]
    pub iterations: Option<u64>,
    /// Job length calibrated once at full cache, e.g. `5ms` (then fixed for every p).
    #[cfg_attr(feature = "cli", arg(long, value_parser = tinct_core::units::parse_duration))]
    pub target: Option<Nanos>,
    /// For `mixed`: percent of the job in the memory phase.
    #[cfg_attr(feature = "cli", arg(long))]
    pub memory_percent: Option<u8>,
    /// Task name in the written task set (default: the task's, or `profiled`).
    #[cfg_attr(feature = "cli", arg(long))]
    pub name: Option<String>,
    /// Period of the written task (default: the task's, or 10 × C^1 rounded up to 1 ms).
    #[cfg_attr(feature = "cli", arg(long, value_parser = tinct_core::units::parse_duration))]
    pub period: Option<Nanos>,
    /// N_P (default: the task set's, or 32).
    #[cfg_attr(feature = "cli", arg(long))]
    pub partitions: Option<u32>,
    /// Partition counts to profile, a list like `1-8,16,32` (default 1..N_P;
    /// with --quick 1, N_P/4, N_P/2, N_P).
    #[cfg_attr(feature = "cli", arg(long = "p", value_name = "LIST"))]
    pub p_list: Option<String>,
    /// Measured jobs per worker launch (default 100, quick 5).
    #[cfg_attr(feature = "cli", arg(long))]
    pub jobs: Option<u32>,
    /// Δ for the written task set, e.g. `45.3us` (default: the task set's,
    /// else measured here as `tinct bench calibrate` does).
    #[cfg_attr(feature = "cli", arg(long, value_parser = tinct_core::units::parse_duration))]
    pub refill: Option<Nanos>,
    /// Path of libtinct_preload.so (default: $TINCT_PRELOAD_LIB, else next to
    /// tinct, else the copy embedded in tinct, as `tinct exec` finds it).
    #[cfg_attr(feature = "cli", arg(long, value_name = "PATH"))]
    pub preload: Option<PathBuf>,
    /// Run without the shim: the working set comes from the ordinary heap and
    /// partitions are NOT enforced (every p sees the whole cache; the output says so).
    #[cfg_attr(feature = "cli", arg(long))]
    pub uncolored: bool,
    /// Run the workers under SCHED_OTHER even when SCHED_FIFO is allowed.
    #[cfg_attr(feature = "cli", arg(long))]
    pub no_fifo: bool,
    /// Conditions to profile under, a list of alone (kim2013's setting),
    /// cold (working set flushed from every cache before each job), co-run
    /// (aggressors on the other CPUs of --cpus), cold-co-run.
    // `std::vec::Vec`: clap takes the list as one value (parsed by
    // `Condition::parse_list`), not as values of a repeated option.
    #[cfg_attr(
        feature = "cli",
        arg(
            long,
            value_name = "LIST",
            default_value = "alone,cold,co-run",
            value_parser = Condition::parse_list
        )
    )]
    pub conditions: std::vec::Vec<Condition>,
    /// Memory of the co-runners: colored (the partitions the task does not
    /// use), uncolored, or auto (colored when the colour probe finds
    /// colouring effective here).
    #[cfg_attr(
        feature = "cli",
        arg(long, value_name = "MODE", default_value = "auto")
    )]
    pub co_runners: CoRunnerChoice,
    /// Jobs per block of the EVT fit (block maxima; default 10).
    #[cfg_attr(feature = "cli", arg(long, value_name = "N"))]
    pub block_size: Option<u64>,
    /// Per-job exceedance probabilities to state the pWCET at, e.g.
    /// `1e-9,1e-12` (default 1e-9).
    #[cfg_attr(
        feature = "cli",
        arg(long = "exceedance", value_name = "P,...", value_delimiter = ',')
    )]
    pub exceedances: Vec<f64>,
    /// The statistic written as C^p: max (kim2013), a percentile such as
    /// p99.9, or pwcet:PROBABILITY such as pwcet:1e-9 (refused where the
    /// data do not support an EVT fit).
    #[cfg_attr(
        feature = "cli",
        arg(long = "use", value_name = "STATISTIC", default_value = "max")
    )]
    pub statistic: Statistic,
    /// Write the C^p table into this task-set file: the `wcet` of task
    /// `--task` is replaced (everything else kept), or the file is created.
    #[cfg_attr(feature = "cli", arg(long, value_name = "FILE", requires = "task"))]
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
            command: Vec::new(),
            protocol: tinct_core::model::JobProtocol::Lines,
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
            conditions: Condition::DEFAULT.to_vec(),
            co_runners: CoRunnerChoice::Auto,
            block_size: None,
            exceedances: Vec::new(),
            statistic: Statistic::Max,
            write_taskset: None,
        }
    }
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
    crate::harness::run::<WcetProfileResult>(
        &params.common,
        &plan::Input::new(params, worker),
        progress,
    )
}

/// Measures every p under every condition (no files written).
pub fn measure(
    params: &Params,
    worker: &WorkerCommand,
    progress: &dyn Progress,
) -> Result<WcetProfileResult> {
    crate::harness::bench::measure::<WcetProfileResult>(&plan::Input::new(params, worker), progress)
}
