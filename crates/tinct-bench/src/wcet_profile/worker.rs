//! The worker: one process that runs a job body alone, pinned, on memory
//! served by the LD_PRELOAD shim from the page colors of p partitions
//! (kim2013 Section IV-B: "the C_i^p values can be measured by changing
//! the number of cache partitions allocated to τ_i"). The job kernels are
//! tinct-rt's, the very code `tinct run` executes.
//!
//! The parent passes one [`WorkerJob`] as a single JSON argument and reads
//! one JSON [`WorkerReport`] line from the worker's stdout; both ends of
//! that protocol are here ([`WorkerJob::to_arg`], [`main`],
//! [`WorkerReport::from_line`]).

use crate::pinned_threads::nanos;
use crate::{Error, Result};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::Instant;
use tinct_rt::kernels::{JobWork, Kernel, KernelState};
use tinct_sys::perf::{PerfEvent, ThreadCounters};

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

/// What one worker runs: the argument of the hidden `tinct bench wcet-worker`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerJob {
    /// Kernel name (`chase`, `read`, `write`, `rmw`, `compute`, `mixed`).
    pub kernel: String,
    /// Working set in bytes.
    pub working_set: u64,
    /// Memory iterations per job.
    pub memory_iterations: u64,
    /// Compute iterations per job.
    pub compute_iterations: u64,
    /// Measured jobs (one more runs first as warm-up).
    pub jobs: u32,
    /// Seed of the chase permutation.
    pub seed: u64,
    /// CPU to pin to.
    pub cpu: u32,
    /// SCHED_FIFO priority (none: SCHED_OTHER).
    pub fifo: Option<u8>,
    /// The page colors the working set should lie in (a list like `0-15`),
    /// checked through pagemap.
    pub expect_colors: Option<String>,
    /// Flush the working set from every cache level before each measured
    /// job (the `cold` conditions).
    #[serde(default)]
    pub cold: bool,
}

/// What a worker measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkerReport {
    /// Wall-clock time of each measured job, ns.
    pub job_ns: Vec<u64>,
    /// Pages of the working set whose frame was read.
    pub pages_checked: u64,
    /// Of those, pages in the expected colors.
    pub pages_in_colors: u64,
    /// Why the placement could not be checked, if it could not.
    pub unchecked_reason: Option<String>,
    /// Last-level cache misses of each measured job, when the hardware
    /// counter opens (kim2013 Figure 6 plots the worst case per p).
    pub llc_misses: Option<Vec<u64>>,
    /// Why there are no miss counts, if there are none.
    pub counters_note: Option<String>,
}

/// The kernel named `name`.
pub fn kernel_by_name(name: &str) -> Result<Kernel> {
    Kernel::ALL
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, k)| *k)
        .ok_or_else(|| {
            let names: Vec<&str> = Kernel::ALL.iter().map(|(n, _)| *n).collect();
            Error::option(
                "--kernel",
                format!("one of {}", names.join(", ")),
                format!("`{name}`"),
            )
        })
}

impl WorkerJob {
    /// The job as the worker's one command-line argument.
    pub fn to_arg(&self) -> Result<String> {
        serde_json::to_string(self).map_err(|source| Error::Json {
            what: "worker job".into(),
            source,
        })
    }

    /// The job from the worker's command-line argument.
    pub fn from_arg(arg: &str) -> Result<Self> {
        serde_json::from_str(arg).map_err(|e| {
            Error::option(
                "wcet-worker",
                "a job as JSON (internal command)",
                format!("{arg:?}: {e}"),
            )
        })
    }
}

impl WorkerReport {
    /// The report from the worker's last JSON line.
    pub fn from_line(line: &str) -> std::result::Result<Self, serde_json::Error> {
        serde_json::from_str(line)
    }
}

/// The worker's whole life: reads the job from its argument, runs it and
/// returns the report line the caller prints on stdout.
pub fn main(arg: &str) -> Result<String> {
    let report = run(&WorkerJob::from_arg(arg)?)?;
    serde_json::to_string(&report).map_err(|source| Error::Json {
        what: "worker report".into(),
        source,
    })
}

/// Runs the jobs and checks the placement.
pub fn run(args: &WorkerJob) -> Result<WorkerReport> {
    let kernel = kernel_by_name(&args.kernel)?;
    tinct_sys::sched::set_affinity(&[args.cpu])?;
    if let Some(priority) = args.fifo {
        tinct_sys::sched::set_fifo(priority)?;
    }
    let words = vec![0u64; (args.working_set / 8) as usize];
    // The buffer does not move when the Vec moves into the kernel state,
    // which writes every line: the pages are present when translated.
    let (start, bytes) = (words.as_ptr() as usize, words.len() * 8);
    let mut state = KernelState::new(kernel, words.into(), args.seed);
    let (pages_checked, pages_in_colors, unchecked_reason) = match &args.expect_colors {
        Some(list) => check_colors(start, bytes, list)?,
        None => (0, 0, Some("no colors were asked for".to_string())),
    };
    let work = JobWork {
        memory: args.memory_iterations,
        compute: args.compute_iterations,
    };
    let stop = AtomicBool::new(false);
    state.run(work, &stop);
    let (mut counters, counters_note) = match ThreadCounters::open(&[PerfEvent::LlcMisses]) {
        Ok(c) => (Some(c), None),
        Err(e) => (None, Some(format!("no LLC miss counts: {e}"))),
    };
    let mut job_ns = Vec::with_capacity(args.jobs as usize);
    let mut misses = Vec::with_capacity(args.jobs as usize);
    for _ in 0..args.jobs {
        if args.cold {
            tinct_sys::cache_flush::flush_from_caches(state.words())?;
        }
        if let Some(c) = counters.as_mut() {
            c.reset()?;
            c.enable()?;
        }
        let start = Instant::now();
        state.run(work, &stop);
        job_ns.push(nanos(start.elapsed()));
        if let Some(c) = counters.as_mut() {
            c.disable()?;
            misses.push(c.read()?.get(PerfEvent::LlcMisses).unwrap_or(0));
        }
    }
    Ok(WorkerReport {
        job_ns,
        pages_checked,
        pages_in_colors,
        unchecked_reason,
        llc_misses: counters.is_some().then_some(misses),
        counters_note,
    })
}

/// Counts the whole pages of `[start, start + bytes)` whose physical frame
/// lies in `colors`, under the colour bits the shim serving this process
/// was given (`TINCT_COLOR_BITS`, which the bench always sets): the
/// placement is checked against the very colours it was asked for.
pub(super) fn check_colors(
    start: usize,
    bytes: usize,
    colors: &str,
) -> Result<(u64, u64, Option<String>)> {
    let wanted = tinct_sys::parse_cpu_list(colors)
        .map_err(|e| Error::option("--expect-colors", "a colour list like 0-3,8", e.to_string()))?;
    let page = tinct_sys::system::PageSize::read(&tinct_sys::SysRoot::live())?.bytes;
    let given = std::env::var(tinct_mem::shim_config::COLOR_BITS).unwrap_or_default();
    if given.trim().is_empty() {
        return Ok((
            0,
            0,
            Some("no colour bits were given (TINCT_COLOR_BITS)".into()),
        ));
    }
    let geometry = match tinct_sys::parse_cpu_list(&given)
        .map_err(|e| e.to_string())
        .and_then(|bits| {
            tinct_sys::topology::PageColors::of_bits(&bits, page).map_err(|e| e.to_string())
        }) {
        Ok(geometry) => geometry,
        Err(e) => return Ok((0, 0, Some(format!("TINCT_COLOR_BITS={given:?}: {e}")))),
    };
    let first_page = start.div_ceil(page as usize) * page as usize;
    let end = start + bytes;
    if end <= first_page {
        return Ok((0, 0, Some("the working set is smaller than a page".into())));
    }
    let pages = (end - first_page) / page as usize;
    let pagemap = tinct_sys::pagemap::Pagemap::open_self()?;
    let frames = match pagemap.frames(first_page, pages) {
        Ok(frames) => frames,
        Err(e) => return Ok((0, 0, Some(e.to_string()))),
    };
    let in_colors = frames
        .iter()
        .filter(|&&f| {
            geometry
                .color_of(f * page)
                .is_some_and(|c| wanted.contains(&(c as u32)))
        })
        .count();
    Ok((pages as u64, in_colors as u64, None))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernels_by_name() {
        assert_eq!(kernel_by_name("chase").unwrap(), Kernel::Chase);
        assert!(matches!(kernel_by_name("nope"), Err(Error::Input(_))));
    }

    #[test]
    fn a_worker_runs_its_jobs() {
        let cpu = tinct_sys::sched::current_cpu();
        let args = WorkerJob {
            kernel: "read".into(),
            working_set: 64 << 10,
            memory_iterations: 2048,
            compute_iterations: 100,
            jobs: 4,
            seed: 1,
            cpu,
            fifo: None,
            expect_colors: None,
            cold: false,
        };
        let line = main(&args.to_arg().unwrap()).unwrap();
        let report = WorkerReport::from_line(&line).unwrap();
        assert_eq!(report.job_ns.len(), 4);
        assert!(report.job_ns.iter().all(|&ns| ns > 0));
        assert!(report.unchecked_reason.is_some());
    }

    /// Cold jobs (working set flushed first) take longer than warm ones:
    /// the fastest of each, from one worker each, side by side.
    #[test]
    fn cold_jobs_start_from_memory() {
        let cpu = tinct_sys::sched::current_cpu();
        let fastest = |cold: bool| {
            let args = WorkerJob {
                kernel: "chase".into(),
                working_set: 256 << 10,
                memory_iterations: 4096,
                compute_iterations: 0,
                jobs: 15,
                seed: 2,
                cpu,
                fifo: None,
                expect_colors: None,
                cold,
            };
            let report = run(&args).unwrap();
            report.job_ns.into_iter().min().unwrap()
        };
        let (warm, cold) = (fastest(false), fastest(true));
        assert!(cold > warm, "cold {cold} ns vs warm {warm} ns");
    }
}
