//! `tinct run PLAN` / `tinct run --rt-app FILE.json`: runs a planned task set
//! (or an rt-app workload) for real, writes the run directory (`jobs.csv`,
//! `trace.perfetto-trace`, `trace.json`, `summary.json`, figures) and prints the verdict: observed response
//! and execution times next to the analysis' bounds (kim2013 Section IV).

use crate::error::CliError;
use crate::output::print_json;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use tinct_core::analysis::Analysis;
use tinct_core::units::Nanos;
use tinct_rt::RtError;
use tinct_rt::colouring::Colouring;
use tinct_rt::limits::{parse_run_duration, parse_watchdog_factor};
use tinct_rt::runtime::RunOptions;
use tinct_rt::sentinel::SentinelOptions;
use tinct_rt::spec::{RunSpec, WatchdogMode};
use tinct_verify::output::{Summary, verdict_alarms, verdict_text};
use tinct_verify::run_in_dir::{Recorded, Workload, run_header, run_in_dir};

/// Arguments of `tinct run`.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// Planned task-set file (cores and partitions assigned, as `tinct plan` writes).
    #[arg(required_unless_present = "rt_app", conflicts_with = "rt_app")]
    pub plan: Option<PathBuf>,
    /// Run an rt-app workload file instead (rt-app's whole grammar, as json-c reads it).
    #[arg(
        long = "rt-app",
        value_name = "FILE.json",
        long_help = "Run an rt-app workload file instead: rt-app's grammar as json-c reads it \
(comments, trailing commas, repeated keys in order). Every event (run, runtime, sleep, timer, mem, \
iorun, lock, unlock, wait, signal, broad, sync, suspend, resume, barrier, yield, fork), every \
policy (SCHED_OTHER with nice, FIFO, RR, BATCH, IDLE, DEADLINE), per-phase policy, priority and \
cpus, util clamps, task groups (cgroup v2) and delays. A job is one pass over a phase's events; a \
final timer releases the next one. Keys that change no timing (ftrace, gnuplot, log_size, frag) \
are accepted with a note; a key tinct does not know is refused by name. A task's `tinct` key gives \
it cache partitions and a memory kernel without breaking the file for rt-app. See docs/RT-APP.md."
    )]
    pub rt_app: Option<PathBuf>,
    /// How long to release jobs (e.g. "10s", "500ms"). Default: 10 s, or the
    /// rt-app file's `global.duration`.
    #[arg(long, value_parser = parse_run_duration)]
    pub duration: Option<Nanos>,
    /// Run directory. Default: `runs/<file stem>` (rt-app: logdir/log_basename).
    #[arg(long, short = 'o')]
    pub out: Option<PathBuf>,
    /// Run under SCHED_OTHER (no real-time privileges needed, no guarantees).
    #[arg(long)]
    pub no_rt: bool,
    /// Run even when page frame numbers are unreadable (not root): the
    /// working sets then do NOT come from their partitions' colors, and
    /// every output says so.
    #[arg(long)]
    pub uncolored: bool,
    /// The physical address bits of the page colour, e.g. `12-16`, before
    /// TINCT_COLOR_BITS, the task set's `[platform] color_bits`, the
    /// machine file (`tinct doctor --save`) and the bits derived from the
    /// cache topology. On a machine whose bits are unknown, `--uncolored`
    /// and `--no-rt` run uncoloured and say why.
    #[arg(long, value_name = "BITS")]
    pub color_bits: Option<String>,
    /// The watchdog stops the run when a job runs past this many times its deadline.
    #[arg(long, default_value_t = 3.0, value_parser = parse_watchdog_factor)]
    pub watchdog_factor: f64,
    /// Which jobs the watchdog guards: `rt` (default) the ones that can
    /// starve a CPU (SCHED_FIFO, SCHED_RR; SCHED_DEADLINE is throttled by
    /// the kernel's CBS), `all` (DEADLINE and SCHED_OTHER too), or `off`.
    #[arg(long, default_value = "rt", value_parser = str::parse::<WatchdogMode>)]
    pub watchdog: WatchdogMode,
    /// Run tinct's colour probe (about a second) before the run, so that a
    /// late job of a task on coloured memory can be attributed to colouring
    /// that does not isolate here.
    #[arg(long)]
    pub probe_colors: bool,
    /// Do not run the stall sentinel (then no late job can be blamed on a
    /// host stall).
    #[arg(long)]
    pub no_sentinel: bool,
    /// Print the summary as JSON instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Where a task set's tasks run: `static` (default) each on its planned
    /// core; `os` nothing pinned, the kernel's choice; `affinity` each
    /// data-triggered job moved, at its hand-over, to a CPU sharing the
    /// lowest shared cache level with its producer's (demarchi's
    /// task-affinity). `os` and `affinity` need no cores in the file.
    #[arg(long, default_value = "static", conflicts_with = "rt_app")]
    pub placement: tinct_rt::pipeline::PlacementPolicy,
}

/// Runs the plan or rt-app file. Exit status 0 when the run completed
/// (misses and exceeded bounds with a cause are results, printed loudly),
/// 3 when it completed but a job exceeded the analysis' bound with no cause
/// found, 1 when it was stopped (watchdog, signal, failed task), could not
/// start, or its files went to the fallback directory; 2 on bad input (a
/// run directory that cannot be written included, found before the first
/// release).
pub(crate) fn run(args: Args) -> Result<ExitCode, CliError> {
    let colouring = if args.probe_colors {
        let (colouring, why) =
            Colouring::probe_in_force(5, args.color_bits.as_deref()).map_err(rt_error)?;
        if !args.json {
            println!("colour probe: colouring {} ({why})", colouring.describe());
        }
        colouring
    } else {
        Colouring::Unknown
    };
    let options = RunOptions {
        colouring,
        sentinel: (!args.no_sentinel).then(SentinelOptions::default),
        realtime: !args.no_rt,
        watchdog_factor: args.watchdog_factor,
        watchdog: args.watchdog,
        uncolored: args.uncolored,
        // The tasks run in a forked child: a crash in one still leaves
        // the run directory and a report.
        supervise: true,
        ..RunOptions::default()
    };
    let mut workload = match (&args.plan, &args.rt_app) {
        (_, Some(file)) => Workload::rt_app(file, args.duration, args.out.clone()),
        (Some(plan), None) => Workload::plan(plan, args.duration, args.placement, args.out.clone()),
        (None, None) => {
            return Err(CliError::flag(
                "PLAN",
                "PLAN or --rt-app FILE.json",
                "neither",
            ));
        }
    }
    .map_err(rt_error)?;
    workload.spec.color_bits_flag = args.color_bits.clone();
    if workload.spec.colours_programs() {
        // Under --uncolored a missing shim leaves the programs uncoloured
        // (every output says why) instead of refusing the run.
        workload.spec.preload_library = match super::shim::find_shim() {
            Ok(shim) => Some(shim),
            Err(_) if args.uncolored => None,
            Err(e) => return Err(e),
        };
    }
    if !args.json {
        for note in &workload.notes {
            println!("note: {note}");
        }
    }
    let recorded = execute(
        &workload.spec,
        workload.analysis.as_ref(),
        options,
        &workload.out,
        args.json,
    )?;
    Ok(ExitCode::from(recorded.exit_status()))
}

/// Bad input stays bad input (exit 2); anything else is a failure (exit 1).
pub(crate) fn rt_error(e: RtError) -> CliError {
    match e {
        RtError::Input(e) => CliError::Input(e),
        RtError::Colors(e) => CliError::Input(e.into_input("--color-bits")),
        other => CliError::Failed(anyhow::Error::new(other)),
    }
}

/// Runs `spec`, writes the run directory (with `analysis`, that of the plan
/// `spec` came from, if any) and prints the verdict.
pub(crate) fn execute(
    spec: &RunSpec,
    analysis: Option<&Analysis>,
    options: RunOptions,
    out: &Path,
    json: bool,
) -> Result<Recorded, CliError> {
    if !json {
        println!("{}", run_header(spec, &options, out));
    }
    let recorded = run_in_dir(spec, analysis, options, out).map_err(rt_error)?;
    let summary = &recorded.summary;
    let dir = recorded.written.dir.display();
    if json {
        print_json(summary)?;
    } else {
        print_verdict(summary);
        println!(
            "wrote {dir}: summary.json, jobs.csv, trace.perfetto-trace (open it in ui.perfetto.dev), \
             trace.json, figures; `tinct report {dir}` makes a page of it"
        );
    }
    if let Some(why) = &recorded.written.fallback_because {
        eprintln!(
            "tinct: could not write the run directory {} ({why}); the run's files are in the \
             fallback directory {dir}",
            out.display()
        );
    }
    for kept in &recorded.written.stale_kept {
        eprintln!(
            "tinct: warning: {kept} is a file of an earlier run in {dir} and could not be \
             removed: it is not this run's"
        );
    }
    if !summary.stop.is_completed() {
        eprintln!("tinct: {}", summary.stop_description);
    }
    Ok(recorded)
}

/// Prints the verdict on stdout and its loud lines again on stderr.
pub(crate) fn print_verdict(summary: &Summary) {
    print!("{}", verdict_text(summary));
    for alarm in verdict_alarms(summary) {
        eprintln!("tinct: {alarm}");
    }
}
