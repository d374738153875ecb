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

use super::bench::common::duration;
use super::run::rt_error;
use crate::error::CliError;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;
use tinct_core::units::Nanos;
use tinct_rt::monitor::sample::Sample;
use tinct_rt::monitor::sharing::SampledSharing;
use tinct_rt::monitor::{self, Ended, Params, PerfEvent, Recording, Target};

/// Arguments of `tinct monitor`.
#[derive(clap::Args, Debug)]
pub struct Args {
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
    #[arg(long, value_parser = duration, value_name = "TIME")]
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
pub fn run(args: Args) -> Result<ExitCode, CliError> {
    crate::output::output_dir(&args.out, "--out")?;
    if let Some(plan) = &args.plan {
        return sharing_of_plan(plan, &args);
    }
    let target = match (args.pid, args.command.is_empty()) {
        (Some(pid), true) => Target::Pid(pid),
        (None, false) => Target::Command(args.command.clone()),
        _ => {
            return Err(CliError::Input(
                "tinct monitor: expected a command after `--` or `--pid PID`, found neither".into(),
            ));
        }
    };
    let root = tinct_sys::SysRoot::live();
    let mut params = Params::new(target, args.rate);
    params.per_thread = args.threads;
    params.duration_ns = args.duration.map(|d| d.0);
    for text in &args.events {
        let event = tinct_sys::perf::parse_event(text, &root)
            .map_err(|e| CliError::Input(format!("--event: {e}")))?;
        params.events.push(event);
    }
    let mut sharing_unavailable = None;
    if args.sharing {
        let support = tinct_sys::perf::memory_sampling::detect(&root)
            .map_err(|e| CliError::Failed(e.into()))?;
        match tinct_sys::perf::memory_sampling::probe(&support) {
            Ok(()) => params.memory_sampling = support.mechanism,
            Err(why) => sharing_unavailable = Some(why),
        }
    }
    let stop = monitor::stop_on_signals();
    let mut live = Live::new(!args.quiet, &params);
    let recording =
        monitor::record(&params, &stop, &mut |rows| live.show(rows)).map_err(rt_error)?;
    live.finish();
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
    print_summary(&recording, overhead.as_ref(), &files);
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
    match &out.report {
        Some(report) => {
            println!(
                "tinct monitor: sharing ({}): {} samples",
                out.mechanism.as_deref().unwrap_or("-"),
                out.samples
            );
            for pair in report.contended_pairs() {
                println!(
                    "  {} and {} share {} written line(s) (true {}, false {}), e.g. {}",
                    pair.a,
                    pair.b,
                    pair.true_sharing + pair.false_sharing,
                    pair.true_sharing,
                    pair.false_sharing,
                    hex_list(&pair.example_lines)
                );
            }
            for line in out.hitm_lines.iter().take(10) {
                println!(
                    "  {:#x}: {} loads of {} hit another core's modified copy (HITM)",
                    line.line, line.samples, line.thread
                );
            }
        }
        None => println!(
            "tinct monitor: sharing detection by the CPU: unavailable: {}; for a tinct task \
             set, `tinct monitor --plan FILE` replays its tasks' memory through the cache model",
            out.unavailable.as_deref().unwrap_or("no mechanism")
        ),
    }
    monitor::output::write_sharing(&args.out, &out).map_err(rt_error)
}

fn hex_list(lines: &[u64]) -> String {
    let shown: Vec<String> = lines.iter().take(3).map(|l| format!("{l:#x}")).collect();
    shown.join(", ")
}

/// `tinct monitor --plan FILE`: the sharing check of a tinct task set.
fn sharing_of_plan(plan: &std::path::Path, args: &Args) -> Result<ExitCode, CliError> {
    // The run's length sizes the job logs, whose layout the check models.
    let duration = args.duration.map_or(10_000_000_000, |d| d.0);
    let spec = tinct_rt::plan::load_plan(plan, duration).map_err(rt_error)?;
    let check = monitor::sharing::check(&spec).map_err(rt_error)?;
    println!(
        "tinct monitor --plan {}: cache lines shared by the tasks' per-job streams \
         (job kernels, runtime bookkeeping), replayed through tinct-sim",
        plan.display()
    );
    if check.cross_cpu_pairs.is_empty() {
        println!("  no two tasks on different CPUs share a written line");
    }
    for pair in check.cross_cpu() {
        println!(
            "  {} and {} (different CPUs): {} line(s) of true sharing, {} of false sharing",
            pair.a, pair.b, pair.true_sharing, pair.false_sharing
        );
    }
    for line in check.written_lines() {
        println!(
            "  {:#x} in {}: {:?} sharing by {}",
            line.line,
            line.region,
            line.kind,
            line.tasks.join(", ")
        );
    }
    println!(
        "  working sets: {} shared line(s)",
        check.working_set_lines()
    );
    let path = monitor::output::write_sharing(&args.out, &check).map_err(rt_error)?;
    println!("  file: {}", path.display());
    Ok(ExitCode::SUCCESS)
}

/// The live line: the latest sample summed over the threads, at most
/// twice a second.
struct Live {
    enabled: bool,
    names: Vec<String>,
    last_print: Option<Instant>,
    printed: bool,
}

impl Live {
    fn new(enabled: bool, params: &Params) -> Live {
        Live {
            enabled,
            names: params.events.iter().map(|e| e.name.clone()).collect(),
            last_print: None,
            printed: false,
        }
    }

    fn show(&mut self, rows: &[Sample]) {
        if !self.enabled || rows.is_empty() {
            return;
        }
        if self
            .last_print
            .is_some_and(|t| t.elapsed().as_millis() < 500)
        {
            return;
        }
        self.last_print = Some(Instant::now());
        let Some(total) = Sample::total(rows) else {
            return;
        };
        let or_dash = |v: Option<f64>, f: &dyn Fn(f64) -> String| v.map_or("-".into(), f);
        let names = &self.names;
        let line = format!(
            "  {:7.2} s  {} thread(s)  IPC {}  LLC miss {}  cpu {}  cs/s {}  migr/s {}  faults/s {}",
            total.t_ns as f64 / 1e9,
            rows.len(),
            or_dash(total.ipc(names), &|v| format!("{v:.2}")),
            or_dash(total.miss_ratio(names), &|v| format!("{:.1}%", v * 100.0)),
            or_dash(total.cpu_share(names), &|v| format!("{:.0}%", v * 100.0)),
            or_dash(total.rate(names, PerfEvent::ContextSwitches), &|v| format!(
                "{v:.0}"
            )),
            or_dash(total.rate(names, PerfEvent::CpuMigrations), &|v| format!(
                "{v:.0}"
            )),
            or_dash(total.rate(names, PerfEvent::PageFaults), &|v| format!(
                "{v:.0}"
            )),
        );
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r{line:<100}");
        let _ = err.flush();
        self.printed = true;
    }

    fn finish(&self) {
        if self.printed {
            eprintln!();
        }
    }
}

fn print_summary(r: &Recording, overhead: Option<&monitor::Overhead>, files: &[PathBuf]) {
    println!("tinct monitor: {}", r.target);
    let ended = match r.ended {
        Ended::CommandExited => match r.exit_code {
            Some(code) => format!("the command exited with status {code}"),
            None => "the command was ended by a signal".into(),
        },
        Ended::ProcessExited => "the process exited".into(),
        Ended::Duration => "the duration passed".into(),
        Ended::Interrupted => "interrupted (what was recorded is kept)".into(),
    };
    println!(
        "  {} samples of {} thread(s) over {:.2} s at {} Hz; ended: {ended}",
        r.samples.len(),
        r.threads_seen,
        r.duration_ns as f64 / 1e9,
        r.rate_hz
    );
    let counting: Vec<&str> = r
        .events
        .iter()
        .filter(|e| e.availability.is_counting())
        .map(|e| e.event.as_str())
        .collect();
    println!(
        "  counting: {}",
        if counting.is_empty() {
            "nothing".into()
        } else {
            counting.join(", ")
        }
    );
    for missing in r.missing() {
        println!("  missing: {missing}");
    }
    match overhead {
        Some(o) => println!(
            "  overhead of sampling at {} Hz: {:.3}x (reference workload median {:.2} ms monitored vs {:.2} ms plain, {} runs each, {} samples per run)",
            o.rate_hz,
            o.ratio,
            o.monitored.median as f64 / 1e6,
            o.plain.median as f64 / 1e6,
            o.plain.count,
            o.samples_per_run
        ),
        None => println!("  overhead: not measured (--no-overhead)"),
    }
    let files: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    println!("  files: {}", files.join(", "));
}
