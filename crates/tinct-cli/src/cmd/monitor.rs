//! `tinct monitor`: sample a process's counters over time (tinct-rt's
//! `monitor`), live on stderr while it runs, then write `monitor.csv`,
//! `monitor.json` and `monitor.svg` and print what was measured, what is
//! missing on this machine, and the overhead of the sampling.
//!
//! Sharing detection (gracioli Section IV): `--sharing` adds the CPU's
//! precise memory sampling (Intel HITM, AMD IBS) where it exists and says
//! why not where it does not; `--plan FILE` checks a tinct task set
//! instead, by replaying its tasks' per-job streams through tinct-sim.
//! Both write `sharing.json`.

use super::run::rt_error;
use crate::error::CliError;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;
use tinct_core::units::Nanos;
use tinct_core::units::parse_duration;
use tinct_monitor::sample::Sample;
use tinct_monitor::sharing::SampledSharing;
use tinct_monitor::text::LiveLine;
use tinct_monitor::{self as monitor, Params, Recording, Target};

/// Arguments of `tinct monitor`.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// Attach to this running process instead of starting a command.
    #[arg(long, value_name = "PID", conflicts_with = "command")]
    pub pid: Option<i32>,
    /// Find threads that share cache lines with the CPU's precise memory
    /// sampling (Intel PEBS HITM, AMD IBS), where it has it.
    #[arg(long)]
    pub sharing: bool,
    /// Instead of monitoring: which tasks of this planned task set share
    /// cache lines, from their per-job address streams replayed through
    /// the cache model (works on any machine).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["pid", "command", "sharing"])]
    pub plan: Option<PathBuf>,
    /// One row per thread and sample (default: one row per sample, summed
    /// over the threads).
    #[arg(long)]
    pub threads: bool,
    /// Samples per second (1 to 10000).
    #[arg(long, default_value_t = 100, value_name = "HZ")]
    pub rate: u32,
    /// Stop after this long, e.g. `10s` (default: when the process ends, or Ctrl-C).
    #[arg(long, value_parser = parse_duration, value_name = "TIME")]
    pub duration: Option<Nanos>,
    /// One more event to count, as perf names it: `cache-misses`,
    /// `cpu/event=0xd2,umask=0x4/`, `msr/tsc/`, `r412e` (repeatable).
    #[arg(long = "event", value_name = "EVENT")]
    pub events: Vec<String>,
    /// Output directory.
    #[arg(long, short, default_value = "tinct-monitor")]
    pub out: PathBuf,
    /// Do not measure the overhead of sampling (a reference workload timed
    /// with and without a sampler, about a second).
    #[arg(long)]
    pub no_overhead: bool,
    /// No live line on stderr while sampling.
    #[arg(long)]
    pub quiet: bool,
    /// The command to run and monitor, after `--`.
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// Runs `tinct monitor`.
pub(crate) fn run(args: Args) -> Result<ExitCode, CliError> {
    crate::output::output_dir(&args.out, "--out")?;
    if let Some(plan) = &args.plan {
        return sharing_of_plan(plan, &args);
    }
    let target = match (args.pid, args.command.is_empty()) {
        (Some(pid), true) => Target::Pid(pid),
        (None, false) => Target::Command(args.command.clone()),
        _ => {
            return Err(CliError::flag(
                "tinct monitor",
                "a command after `--` or `--pid PID`",
                "neither",
            ));
        }
    };
    let root = tinct_sys::SysRoot::live();
    let mut params = Params::new(target, args.rate);
    params.per_thread = args.threads;
    params.duration_ns = args.duration.map(|d| d.0);
    params.add_events(&args.events, &root).map_err(|e| {
        CliError::Input(tinct_base::InputError {
            field: format!("--event {}", e.field),
            ..e
        })
    })?;
    let sharing_unavailable = match args.sharing {
        true => params
            .enable_memory_sampling(&root)
            .map_err(|e| CliError::Failed(e.into()))?,
        false => None,
    };
    let stop = monitor::stop_on_signals();
    let mut live = LiveLine::new(&params);
    let mut shown = false;
    let mut show = |rows: &[Sample]| {
        if !args.quiet
            && let Some(line) = live.next(rows, Instant::now())
        {
            // Over the previous line; a stderr that cannot take it does not
            // stop the sampling.
            let _ = write!(std::io::stderr(), "\r{line:<100}");
            shown = true;
        }
    };
    let recording = monitor::record(&params, &stop, &mut show).map_err(rt_error)?;
    if shown {
        eprintln!();
    }
    let overhead = if args.no_overhead {
        None
    } else {
        eprintln!(
            "tinct monitor: measuring the overhead of sampling at {} Hz ...",
            args.rate
        );
        Some(monitor::overhead::measure(args.rate, &params.events).map_err(rt_error)?)
    };
    let mut files =
        monitor::output::write(&args.out, &recording, overhead.as_ref()).map_err(rt_error)?;
    if args.sharing {
        files.push(report_sampled_sharing(
            &args,
            &params,
            &recording,
            sharing_unavailable,
        )?);
    }
    print!(
        "{}",
        monitor::text::summary_text(&recording, overhead.as_ref(), &files)
    );
    Ok(ExitCode::SUCCESS)
}

/// Prints what the CPU's memory samples show and writes `sharing.json`.
fn report_sampled_sharing(
    args: &Args,
    params: &Params,
    recording: &Recording,
    unavailable: Option<String>,
) -> Result<PathBuf, CliError> {
    let out = SampledSharing::of_recording(params, recording, unavailable)
        .map_err(|e| CliError::Failed(e.into()))?;
    print!("{}", monitor::text::sampled_sharing_text(&out));
    monitor::output::write_sharing(&args.out, &out).map_err(rt_error)
}

/// `tinct monitor --plan FILE`: the sharing check of a tinct task set.
fn sharing_of_plan(plan: &std::path::Path, args: &Args) -> Result<ExitCode, CliError> {
    // The run's length sizes the job logs, whose layout the check models.
    let duration = args
        .duration
        .map_or(tinct_verify::run_in_dir::DEFAULT_DURATION_NS, |d| d.0);
    let spec = tinct_rt::plan::load_plan(plan, duration).map_err(rt_error)?;
    let check = monitor::sharing::check(&spec).map_err(rt_error)?;
    print!("{}", monitor::text::plan_sharing_text(plan, &check));
    let path = monitor::output::write_sharing(&args.out, &check).map_err(rt_error)?;
    println!("  file: {}", path.display());
    Ok(ExitCode::SUCCESS)
}
