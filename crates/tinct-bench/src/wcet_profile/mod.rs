//! `tinct bench wcet-profile`: C_i^p, the WCET of one job body as a
//! function of the number of cache partitions p (kim2013 Section IV-B and
//! Figure 6: measured alone, the maximum observed execution time is the
//! WCET estimate, the mean the ACET).
//!
//! For each p, worker processes (`tinct bench wcet-worker`, see [`worker`])
//! run the body under the LD_PRELOAD shim (tinct-preload) with
//! `TINCT_COLORS` = the page colors of partitions 1..=p, so the working set
//! lies in those colors only; each worker checks its pages through pagemap.
//! Launches for different p are interleaved in a seeded random order.
//!
//! The result is written as a `wcet = { … }` line, as a complete task-set
//! file that `tinct analyze` accepts unchanged, and as the Figure 6 plot.

mod report;
pub mod table;
pub mod worker;

use crate::calibrate::{self, RefillSetup};
use crate::harness::pin::PinGuard;
use crate::harness::{BenchOptions, Durations, Interleaved, OutputDir, Progress, RunHeader};
use crate::{Error, Result};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::Command;
use tinct_core::model::{Kernel, Work};
use tinct_core::units::{Bytes, Nanos, parse_duration, parse_size};
use tinct_rt::kernels::LINE_BYTES;
use worker::WorkerReport;

/// File name of the LD_PRELOAD shim.
pub const PRELOAD_LIB: &str = "libtinct_preload.so";
/// Environment variable naming the shim explicitly (as `tinct exec`).
pub const PRELOAD_LIB_VAR: &str = "TINCT_PRELOAD_LIB";

/// Options of `tinct bench wcet-profile`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// Options shared by every bench.
    #[command(flatten)]
    pub common: BenchOptions,
    /// Take the body, period and memory of a task from this task-set file.
    #[arg(long, value_name = "FILE", requires = "task")]
    pub taskset: Option<PathBuf>,
    /// The task of `--taskset` to profile.
    #[arg(long, value_name = "NAME")]
    pub task: Option<String>,
    /// Job kernel: chase, read, write, rmw, compute, mixed (without --taskset).
    #[arg(long, default_value = "chase")]
    pub kernel: String,
    /// Working set (without --taskset; default 4MiB, with --quick 1MiB).
    #[arg(long)]
    pub working_set: Option<String>,
    /// Iterations per job (default: one pass over the working set, or
    /// 10^6 for `compute`).
    #[arg(long, conflicts_with = "target")]
    pub iterations: Option<u64>,
    /// Job length calibrated once at full cache, e.g. `5ms` (then fixed for every p).
    #[arg(long)]
    pub target: Option<String>,
    /// For `mixed`: percent of the job in the memory phase.
    #[arg(long)]
    pub memory_percent: Option<u8>,
    /// Task name in the written task set (default: the task's, or `profiled`).
    #[arg(long)]
    pub name: Option<String>,
    /// Period of the written task (default: the task's, or 10 × C^1 rounded up to 1 ms).
    #[arg(long)]
    pub period: Option<String>,
    /// N_P (default: the task set's, or 32).
    #[arg(long)]
    pub partitions: Option<u32>,
    /// Partition counts to profile, a list like `1-8,16,32` (default 1..N_P;
    /// with --quick 1, N_P/4, N_P/2, N_P).
    #[arg(long = "p", value_name = "LIST")]
    pub p_list: Option<String>,
    /// Measured jobs per worker launch (default 20, quick 5).
    #[arg(long)]
    pub jobs: Option<u32>,
    /// Δ for the written task set, e.g. `45.3us` (default: the task set's,
    /// else measured here as `tinct bench calibrate` does).
    #[arg(long)]
    pub refill: Option<String>,
    /// Path of libtinct_preload.so (default: $TINCT_PRELOAD_LIB, else next to tinct).
    #[arg(long, value_name = "PATH")]
    pub preload: Option<PathBuf>,
    /// Run without the shim: the working set comes from the ordinary heap and
    /// partitions are NOT enforced (every p sees the whole cache; the output says so).
    #[arg(long)]
    pub uncolored: bool,
    /// Run the workers under SCHED_OTHER even when SCHED_FIFO is allowed.
    #[arg(long)]
    pub no_fifo: bool,
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
#[derive(Debug, Clone, PartialEq, Serialize)]
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
#[derive(Debug, Clone, PartialEq, Serialize)]
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
#[derive(Debug, Clone, PartialEq, Serialize)]
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
#[derive(Debug, Clone, PartialEq, Serialize)]
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

/// Runs `tinct bench wcet-profile`: measures, writes the files, prints the summary.
pub fn run(args: &Args, worker: &WorkerCommand) -> Result<()> {
    let result = measure(args, worker)?;
    let mut out = OutputDir::create(args.common.out_dir("wcet-profile"))?;
    report::write(&result, &mut out)?;
    report::summary(&result, &out).print();
    Ok(())
}

/// What comes from `--taskset` / `--task`.
struct TaskSource {
    name: String,
    body: Option<tinct_core::model::Body>,
    memory: Bytes,
    period: Nanos,
    partitions: u32,
    refill: Nanos,
}

fn load_task(args: &Args) -> Result<Option<TaskSource>> {
    let (Some(path), Some(name)) = (&args.taskset, &args.task) else {
        return Ok(None);
    };
    let set = tinct_core::format::load(path).map_err(|e| Error::InvalidInput(e.to_string()))?;
    let task = set.tasks.iter().find(|t| &t.name == name).ok_or_else(|| {
        let names: Vec<&str> = set.tasks.iter().map(|t| t.name.as_str()).collect();
        Error::InvalidInput(format!(
            "{}: --task: expected one of the tasks {}, found `{name}`",
            path.display(),
            names.join(", ")
        ))
    })?;
    Ok(Some(TaskSource {
        name: task.name.clone(),
        body: task.body.clone(),
        memory: task.memory,
        period: task.period,
        partitions: set.platform.partitions,
        refill: set.platform.refill,
    }))
}

fn input<T>(what: &str, result: std::result::Result<T, impl std::fmt::Display>) -> Result<T> {
    result.map_err(|e| Error::InvalidInput(format!("{what}: {e}")))
}

/// Resolves the body to fixed iterations (a `target` is calibrated once,
/// with the whole cache, on this thread).
fn resolve_body(args: &Args, source: Option<&TaskSource>) -> Result<ProfiledBody> {
    let (kernel, working_set, work, memory_percent) = match source.and_then(|s| s.body.clone()) {
        Some(body) => (
            body.kernel,
            body.working_set
                .unwrap_or(source.map_or(Bytes(0), |s| s.memory))
                .0,
            body.work,
            body.memory_percent,
        ),
        None => {
            let kernel = worker::kernel_by_name(&args.kernel)?;
            let working_set = match source {
                Some(s) => s.memory.0,
                None => match &args.working_set {
                    Some(text) => input("--working-set", parse_size(text))?.0,
                    None if args.common.quick => 1 << 20,
                    None => 4 << 20,
                },
            };
            let work = match (&args.target, args.iterations) {
                (Some(t), _) => Some(Work::Target(input("--target", parse_duration(t))?)),
                (None, Some(n)) => Some(Work::Iterations(n)),
                (None, None) => None,
            };
            (kernel, working_set, work, args.memory_percent)
        }
    };
    if kernel != Kernel::Compute && working_set < LINE_BYTES as u64 {
        return Err(Error::InvalidInput(format!(
            "--working-set: expected at least one cache line ({LINE_BYTES} B) for kernel `{}`, found {working_set} B",
            kernel.name()
        )));
    }
    let lines = working_set / LINE_BYTES as u64;
    let work = work.unwrap_or(Work::Iterations(if kernel == Kernel::Compute {
        1_000_000
    } else {
        lines
    }));
    let percent = tinct_rt::calibrate::memory_percent(kernel, memory_percent);
    let job = match work {
        Work::Iterations(_) => tinct_rt::calibrate::job_work(work, percent, None),
        Work::Target(_) => {
            let mut state = tinct_rt::kernels::KernelState::new(
                kernel,
                vec![0u64; (working_set / 8) as usize].into(),
                1,
            );
            let rates = tinct_rt::calibrate::measure(&mut state);
            tinct_rt::calibrate::job_work(work, percent, Some(&rates))
        }
    };
    Ok(ProfiledBody {
        kernel: kernel.name().to_string(),
        working_set_bytes: working_set,
        memory_iterations: job.memory,
        compute_iterations: job.compute,
    })
}

/// The p values to profile.
pub fn p_values(list: Option<&str>, partitions: u32, quick: bool) -> Result<Vec<u32>> {
    let mut ps = match list {
        Some(text) => input("--p", tinct_sys::parse_cpu_list(text))?,
        None if quick => vec![1, partitions / 4, partitions / 2, partitions],
        None => (1..=partitions).collect(),
    };
    ps.retain(|&p| p >= 1);
    ps.sort_unstable();
    ps.dedup();
    if let Some(&bad) = ps.iter().find(|&&p| p > partitions) {
        return Err(Error::InvalidInput(format!(
            "--p: expected partition counts within 1..={partitions} (N_P), found {bad}"
        )));
    }
    if ps.is_empty() {
        return Err(Error::InvalidInput(
            "--p: expected at least one partition count, found none".into(),
        ));
    }
    Ok(ps)
}

/// The shim to use: `--preload`, `$TINCT_PRELOAD_LIB`, else next to the program.
fn find_preload(args: &Args, worker: &WorkerCommand) -> Result<PathBuf> {
    if let Some(path) = args
        .preload
        .clone()
        .or_else(|| std::env::var_os(PRELOAD_LIB_VAR).map(PathBuf::from))
    {
        return if path.is_file() {
            Ok(path)
        } else {
            Err(Error::InvalidInput(format!(
                "--preload / {PRELOAD_LIB_VAR}: expected the path of {PRELOAD_LIB}, found no file at {}",
                path.display()
            )))
        };
    }
    let dir = worker.program.parent().unwrap_or(Path::new("."));
    let candidates = [dir.join(PRELOAD_LIB), dir.join("../lib").join(PRELOAD_LIB)];
    candidates.iter().find(|p| p.is_file()).cloned().ok_or_else(|| {
        Error::Measurement(format!(
            "{PRELOAD_LIB} not found (looked in {} and {}): build it with `cargo build -p tinct-preload`, \
             name it with --preload or {PRELOAD_LIB_VAR}, or run with --uncolored (partitions not enforced)",
            candidates[0].display(),
            candidates[1].display()
        ))
    })
}

/// Colored memory needs physical frame numbers (root or CAP_SYS_ADMIN).
fn require_frame_numbers() -> Result<()> {
    use tinct_sys::privilege::{Capability, Privileges};
    let readable = Privileges::read(&tinct_sys::SysRoot::live())
        .is_ok_and(|p| p.is_root() || p.has(Capability::SysAdmin));
    if readable {
        Ok(())
    } else {
        Err(Error::Measurement(
            "profiling on colored memory needs physical frame numbers from /proc/self/pagemap, \
             which only root or CAP_SYS_ADMIN may read: run as root, or with --uncolored \
             (working set from the ordinary heap, partitions NOT enforced)"
                .into(),
        ))
    }
}

/// The number of page colors of the last-level cache.
fn llc_colors(header: &RunHeader) -> Result<u32> {
    let llc = header.machine.llc().ok_or_else(|| {
        Error::Measurement("the last-level cache is unknown: cannot derive page colors".into())
    })?;
    let ways = u64::from(llc.ways.filter(|&w| w > 0).unwrap_or(1));
    Ok(((llc.size_bytes / ways) / header.machine.page_bytes).max(1) as u32)
}

/// Measures every p (no files written).
pub fn measure(args: &Args, worker: &WorkerCommand) -> Result<WcetProfileResult> {
    let options = &args.common;
    let source = load_task(args)?;
    let reps = options.reps_or(2, 5)?;
    let jobs = match args.jobs {
        Some(0) => {
            return Err(Error::InvalidInput(
                "--jobs: expected at least 1, found 0".into(),
            ));
        }
        Some(n) => n,
        None if options.quick => 5,
        None => 20,
    };
    let cpus = options.cpus(1)?;
    let cpu = cpus[0];
    let _pin = PinGuard::pin(cpu)?;
    let header = RunHeader::new("wcet-profile", options, reps, vec![cpu]);
    let partitions = args
        .partitions
        .or(source.as_ref().map(|s| s.partitions))
        .unwrap_or(calibrate::DEFAULT_PARTITIONS);
    let colors = llc_colors(&header)?;
    let split = tinct_mem::PartitionColors::even(colors, partitions)
        .map_err(|e| Error::InvalidInput(format!("--partitions: {e}")))?;
    let ps = p_values(args.p_list.as_deref(), partitions, options.quick)?;
    let body = resolve_body(args, source.as_ref())?;
    let preload = if args.uncolored {
        None
    } else {
        require_frame_numbers()?;
        Some(find_preload(args, worker)?)
    };
    let fifo = (!args.no_fifo
        && tinct_sys::privilege::Privileges::read(&tinct_sys::SysRoot::live())
            .is_ok_and(|p| p.is_root()))
    .then_some(crate::crpd::DEFAULT_FIFO_PRIORITY);

    let color_sets: Vec<Vec<u32>> = ps
        .iter()
        .map(|&p| split.colors_of_all(&(1..=p).collect::<Vec<_>>()))
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| Error::InvalidInput(format!("--p: {e}")))?;
    let runner = Interleaved::new(ps.iter().map(|p| format!("p={p}")), reps).seed(options.seed);
    let progress = Progress::new(runner.calls(), "wcet-profile", !options.no_progress);
    let mut reports: Vec<Vec<WorkerReport>> = vec![Vec::new(); ps.len()];
    runner.run::<Error>(&progress, |c| {
        progress.set_message(format!("p = {}", ps[c]));
        let launch = Launch {
            worker,
            body: &body,
            jobs,
            seed: options.seed,
            cpu,
            fifo,
            colors: &color_sets[c],
            total_colors: colors,
            preload: preload.as_deref(),
        };
        let report = launch.run_with_retry()?;
        let max = report.job_ns.iter().copied().max().unwrap_or(0);
        reports[c].push(report);
        Ok(max)
    })?;
    progress.finish();

    let mut points: Vec<ProfilePoint> = ps
        .iter()
        .zip(&color_sets)
        .zip(&reports)
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
        .collect::<Result<_>>()?;
    table::make_non_increasing(&mut points);

    let checked: u64 = points.iter().map(|p| p.pages_checked).sum();
    let in_colors: u64 = points.iter().map(|p| p.pages_in_colors).sum();
    let unchecked = reports
        .iter()
        .flatten()
        .find_map(|r| r.unchecked_reason.clone());
    let placement = Placement {
        colored: preload.is_some(),
        preload: preload.as_ref().map(|p| p.display().to_string()),
        colors,
        pages_in_colors_ratio: (checked > 0).then(|| in_colors as f64 / checked as f64),
        note: match (&preload, checked, unchecked) {
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
    };

    let (refill, refill_source) =
        resolve_refill(args, source.as_ref(), &header, partitions, options.seed)?;
    let name = args
        .name
        .clone()
        .or(source.as_ref().map(|s| s.name.clone()))
        .unwrap_or_else(|| "profiled".into());
    let period = match (&args.period, &source) {
        (Some(text), _) => input("--period", parse_duration(text))?,
        (None, Some(s)) => s.period,
        (None, None) => table::default_period(&points),
    };
    let written = table::task_set(&table::TaskSetInput {
        name: &name,
        body: &body,
        points: &points,
        partitions,
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
    let taskset = tinct_core::format::to_toml(&written, &header_lines);
    let counters = match reports
        .iter()
        .flatten()
        .find_map(|r| r.counters_note.clone())
    {
        Some(note) => note,
        None => "LLC misses counted per job (hardware counter LLC-load-misses)".into(),
    };
    Ok(WcetProfileResult {
        counters,
        wcet_line: table::wcet_line(&points),
        header,
        task: name,
        body,
        partitions,
        jobs_per_launch: jobs,
        placement,
        points,
        refill: refill.to_string(),
        refill_source,
        taskset,
    })
}

fn resolve_refill(
    args: &Args,
    source: Option<&TaskSource>,
    header: &RunHeader,
    partitions: u32,
    seed: u64,
) -> Result<(Nanos, String)> {
    if let Some(text) = &args.refill {
        return Ok((input("--refill", parse_duration(text))?, "--refill".into()));
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
        &Progress::hidden(),
    )?;
    Ok((
        Nanos(refill.refill_ns.div_ceil(100) * 100),
        "measured here as `tinct bench calibrate` does".into(),
    ))
}

/// One worker launch.
struct Launch<'a> {
    worker: &'a WorkerCommand,
    body: &'a ProfiledBody,
    jobs: u32,
    seed: u64,
    cpu: u32,
    fifo: Option<u8>,
    colors: &'a [u32],
    total_colors: u32,
    preload: Option<&'a Path>,
}

impl Launch<'_> {
    /// Runs the worker. Under the shim a launch can fail for want of
    /// memory in the requested colors (physical frames need not spread
    /// evenly over colors, and strict mode refuses uncolored fallbacks even
    /// for the worker's own small allocations): it is retried with a pool
    /// twice and then four times as large before the bench gives up.
    fn run_with_retry(&self) -> Result<WorkerReport> {
        let mut failures: Vec<String> = Vec::new();
        for factor in [1, 2, 4] {
            match self.run(factor) {
                Ok(report) => return Ok(report),
                Err(Error::Measurement(message))
                    if self.preload.is_some() && message.contains("memory") =>
                {
                    if !failures.contains(&message) {
                        failures.push(message);
                    }
                }
                Err(other) => return Err(other),
            }
        }
        Err(Error::Measurement(format!(
            "{} (also with a pool four times as large)",
            failures.join("; then: ")
        )))
    }

    fn run(&self, pool_factor: u64) -> Result<WorkerReport> {
        let mut command = Command::new(&self.worker.program);
        command.args(&self.worker.prefix);
        command.args([
            "--kernel",
            &self.body.kernel,
            "--working-set",
            &self.body.working_set_bytes.to_string(),
            "--memory-iterations",
            &self.body.memory_iterations.to_string(),
            "--compute-iterations",
            &self.body.compute_iterations.to_string(),
            "--jobs",
            &self.jobs.to_string(),
            "--seed",
            &self.seed.to_string(),
            "--cpu",
            &self.cpu.to_string(),
        ]);
        if let Some(priority) = self.fifo {
            command.args(["--fifo", &priority.to_string()]);
        }
        let color_list = tinct_sys::format_cpu_list(self.colors);
        if let Some(shim) = self.preload {
            command.args(["--expect-colors", &color_list]);
            // The pool maps every color and keeps the requested ones: it must
            // be large enough that its share of those colors holds the working set.
            let share = f64::from(self.total_colors) / self.colors.len().max(1) as f64;
            let pool = ((self.body.working_set_bytes as f64 * share * 4.0) as u64 + (64 << 20))
                * pool_factor;
            command
                .env("LD_PRELOAD", shim)
                .env("TINCT_COLORS", &color_list)
                .env("TINCT_POOL", format!("{}MiB", pool.div_ceil(1 << 20)))
                .env("TINCT_STRICT", "1")
                .env("RUST_BACKTRACE", "0");
        }
        let output = command.output().map_err(|e| {
            Error::Measurement(format!(
                "cannot start the worker {}: {e}",
                self.worker.program.display()
            ))
        })?;
        if !output.status.success() {
            return Err(Error::Measurement(format!(
                "the worker for colors {color_list} failed ({}): {}",
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            )));
        }
        let stdout = String::from_utf8_lossy(&output.stdout);
        let line = stdout
            .lines()
            .rev()
            .find(|l| l.starts_with('{'))
            .unwrap_or("");
        serde_json::from_str(line).map_err(|e| {
            Error::Measurement(format!(
                "the worker printed no report ({e}): stdout {stdout:?}"
            ))
        })
    }
}

#[cfg(test)]
mod tests {
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
