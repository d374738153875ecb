//! `tinct run PLAN` / `tinct run --rt-app FILE.json`: runs a planned task set
//! (or an rt-app workload) for real, writes the run directory (`jobs.csv`,
//! `trace.perfetto-trace`, `trace.json`, `summary.json`, figures) and prints the verdict: observed response
//! and execution times next to the analysis' bounds (kim2013 Section IV).

use crate::error::CliError;
use crate::output::{ms, print_json, table};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use tinct_core::analysis::Analysis;
use tinct_core::units::{Nanos, parse_duration};
use tinct_rt::RtError;
use tinct_rt::attribution::{Cause, Colouring};
use tinct_rt::limits::MAX_TIME_NS;
use tinct_rt::output::Summary;
use tinct_rt::run_in_dir::{Recorded, run_in_dir};
use tinct_rt::runtime::RunOptions;
use tinct_rt::sentinel::SentinelOptions;
use tinct_rt::spec::{RunSpec, WatchdogMode};

/// Arguments of `tinct run`.
#[derive(clap::Args, Debug)]
pub struct Args {
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
    #[arg(long, value_parser = parse_nanos)]
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
    /// The watchdog stops the run when a job runs past this many times its deadline.
    #[arg(long, default_value_t = 3.0, value_parser = parse_factor)]
    pub watchdog_factor: f64,
    /// Which jobs the watchdog guards: `rt` (default) the ones that can
    /// starve a CPU (SCHED_FIFO, SCHED_RR; SCHED_DEADLINE is throttled by
    /// the kernel's CBS), `all` (DEADLINE and SCHED_OTHER too), or `off`.
    #[arg(long, default_value = "rt", value_parser = parse_watchdog)]
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

/// The default run length.
pub const DEFAULT_DURATION_NS: u64 = 10_000_000_000;

fn parse_nanos(text: &str) -> Result<Nanos, String> {
    match parse_duration(text) {
        Ok(Nanos(0)) => Err("the duration must be longer than 0".into()),
        Ok(d) if d.0 > MAX_TIME_NS => Err(format!(
            "the duration must be at most {} (the limit of times in a run), found {d}",
            Nanos(MAX_TIME_NS)
        )),
        Ok(d) => Ok(d),
        Err(e) => Err(e.to_string()),
    }
}

fn parse_factor(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(f) if f.is_finite() && f >= 1.0 => Ok(f),
        _ => Err(format!(
            "expected a number ≥ 1 (a job may run until factor × its deadline), found {text:?}"
        )),
    }
}

fn parse_watchdog(text: &str) -> Result<WatchdogMode, String> {
    match text {
        "off" => Ok(WatchdogMode::Off),
        "rt" | "realtime" => Ok(WatchdogMode::Realtime),
        "all" => Ok(WatchdogMode::All),
        other => Err(format!("expected off, rt or all, found {other:?}")),
    }
}

/// Runs the plan or rt-app file. Exit status 0 when the run completed
/// (misses and exceeded bounds with a cause are results, printed loudly),
/// 3 when it completed but a job exceeded the analysis' bound with no cause
/// found, 1 when it was stopped (watchdog, signal, failed task), could not
/// start, or its files went to the fallback directory; 2 on bad input (a
/// run directory that cannot be written included, found before the first
/// release).
pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let colouring = if args.probe_colors {
        let (colouring, why) = Colouring::probe(5);
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
    let (spec, analysis, out) = match (&args.plan, &args.rt_app) {
        (_, Some(file)) => {
            let loaded = tinct_rt::rtapp::load(file, DEFAULT_DURATION_NS).map_err(rt_error)?;
            if !args.json {
                for note in &loaded.notes {
                    println!("note: {note}");
                }
            }
            let mut spec = loaded.spec;
            if let Some(d) = args.duration {
                spec.duration_ns = d.0;
            }
            let out = args
                .out
                .clone()
                .or(loaded.log_dir.map(PathBuf::from))
                .unwrap_or_else(|| default_out(file));
            (spec, None, out)
        }
        (Some(plan), None) => {
            let duration = args.duration.map_or(DEFAULT_DURATION_NS, |d| d.0);
            let (spec, analysis) = tinct_rt::plan::load_placed_plan(plan, duration, args.placement)
                .map_err(rt_error)?;
            let out = args.out.clone().unwrap_or_else(|| default_out(plan));
            (spec, analysis, out)
        }
        (None, None) => {
            return Err(CliError::Input(
                "give a PLAN file or --rt-app FILE.json".into(),
            ));
        }
    };
    let recorded = execute(&spec, analysis.as_ref(), options, &out, args.json)?;
    Ok(exit_code(&recorded))
}

/// `runs/<stem>` for a workload file.
pub fn default_out(file: &Path) -> PathBuf {
    let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or("run");
    Path::new("runs").join(stem)
}

/// Bad input stays bad input (exit 2); anything else is a failure (exit 1).
pub fn rt_error(e: RtError) -> CliError {
    match e {
        RtError::Input { .. } => CliError::Input(e.to_string()),
        other => CliError::Failed(anyhow::Error::new(other)),
    }
}

/// Runs `spec`, writes the run directory (with `analysis`, that of the plan
/// `spec` came from, if any) and prints the verdict.
pub fn execute(
    spec: &RunSpec,
    analysis: Option<&Analysis>,
    options: RunOptions,
    out: &Path,
    json: bool,
) -> Result<Recorded, CliError> {
    let scheduling = tinct_rt::output::scheduling_note(options.realtime);
    if !json {
        let watchdog = match options.watchdog {
            WatchdogMode::Off => "watchdog off".to_string(),
            WatchdogMode::Realtime => format!(
                "watchdog at {} × D for SCHED_FIFO/RR jobs",
                options.watchdog_factor
            ),
            WatchdogMode::All => format!("watchdog at {} × D", options.watchdog_factor),
        };
        println!(
            "tinct run {}: {} thread(s), {}, {:.3} s, {watchdog}, run directory {}",
            spec.source,
            spec.tasks.len(),
            scheduling,
            spec.duration_ns as f64 / 1e9,
            out.display()
        );
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
    if !summary.stop.is_completed() {
        eprintln!("tinct: {}", summary.stop_description);
    }
    Ok(recorded)
}

/// The exit status of a run whose jobs exceeded the analysis' bound with
/// no cause found (the analysis or its inputs are wrong).
pub const UNEXPLAINED_EXIT: u8 = 3;

/// 0 for a completed run written where asked; 3 if it completed but a job
/// exceeded the analysis' bound unexplained; 1 for a stopped one or one
/// whose files went to the fallback directory.
pub fn exit_code(recorded: &Recorded) -> ExitCode {
    if !recorded.summary.stop.is_completed() || recorded.written.fallback_because.is_some() {
        ExitCode::from(1)
    } else if recorded.summary.unexplained > 0 {
        ExitCode::from(UNEXPLAINED_EXIT)
    } else {
        ExitCode::SUCCESS
    }
}

fn opt_ms(ns: Option<u64>) -> String {
    ns.map_or_else(|| "—".into(), ms)
}

fn us(ns: u64) -> String {
    format!("{:.1}", ns as f64 / 1e3)
}

fn opt_us(ns: Option<u64>) -> String {
    ns.map_or_else(|| "—".into(), us)
}

/// Prints the verdict tables and the loud flags.
pub fn print_verdict(summary: &Summary) {
    println!("\nscheduling: {}", summary.scheduling);
    println!("RT throttling: {}", summary.rt_throttling);
    println!("run: {}", summary.stop_description);
    for note in &summary.notes {
        println!("note: {note}");
    }
    let mut jobs = table(&[
        "task",
        "CPU",
        "policy",
        "released",
        "ok",
        "missed",
        "aborted",
        "R max",
        "R p99",
        "R mean",
        "ρ(R)=μ+2σ",
        "WCRT CInt",
        "WCRT NoCInt",
        "verdict",
    ]);
    for t in &summary.tasks {
        let policy = if t.scheduling.is_empty() {
            t.policy.kernel_name()
        } else {
            t.scheduling.join(", ")
        };
        let cpus = t
            .cpus
            .as_ref()
            .map_or("any".into(), |c| tinct_sys::format_cpu_list(c));
        let verdict = tinct_rt::output::verdict_word(
            t.exceeds_bound,
            t.jobs.missed,
            t.error.is_some(),
            t.bound.is_some_and(|b| b.wcrt_ns.is_some()),
            t.jobs.completed,
        );
        let r = &t.response;
        jobs.add_row(vec![
            t.name.clone(),
            cpus,
            policy,
            t.jobs.released.to_string(),
            t.jobs.completed.to_string(),
            t.jobs.missed.to_string(),
            t.jobs.aborted.to_string(),
            ms(r.max),
            ms(r.p99),
            format!("{:.2}", r.mean / 1e6),
            format!("{:.2}", r.rho / 1e6),
            opt_ms(t.bound.and_then(|b| b.wcrt_ns)),
            opt_ms(t.bound.and_then(|b| b.wcrt_nocint_ns)),
            verdict.into(),
        ]);
    }
    println!(
        "\nresponse time (finish − planned release), ms [{}]",
        summary.scheduling
    );
    println!("{jobs}");
    let mut exec = table(&[
        "task",
        "work per job",
        "C max",
        "C p99",
        "C mean",
        "ρ(C)",
        "C bound",
        "latency p50/p99/max (µs)",
        "preempt.",
        "migr.",
        "working set",
    ]);
    for t in &summary.tasks {
        let work = t
            .work
            .iter()
            .map(|w| match w.target_ns {
                Some(target) => format!("calibrated to {} ms", ms(target)),
                None => format!("fixed {} it.", w.work.memory + w.work.compute),
            })
            .collect::<Vec<_>>()
            .join(", ");
        let c = &t.exec;
        let l = &t.latency;
        exec.add_row(vec![
            t.name.clone(),
            if work.is_empty() { "—".into() } else { work },
            ms(c.max),
            ms(c.p99),
            format!("{:.2}", c.mean / 1e6),
            format!("{:.2}", c.rho / 1e6),
            opt_ms(t.bound.map(|b| b.wcet_ns)),
            format!("{}/{}/{}", us(l.median), us(l.p99), us(l.max)),
            t.preemptions.to_string(),
            t.migrations.to_string(),
            t.placement.describe(),
        ]);
    }
    println!("\nexecution time (thread CPU time), ms, and release latency");
    println!("{exec}");
    print_blocking(summary);
    print_isolation(summary);
    print_counters(summary);
    print_sentinel(summary);
    print_late_jobs(summary);
    for t in summary.tasks.iter().filter(|t| t.exceeds_bound) {
        let bound = t.bound.and_then(|b| b.wcrt_ns).unwrap_or(0);
        let message = format!(
            "!!! task '{}': observed response time {} ms EXCEEDS the analysis bound (WCRT with cache interference) {} ms; causes: {}",
            t.name,
            ms(t.response.max),
            ms(bound),
            t.causes.describe()
        );
        let message = if summary.realtime {
            message
        } else {
            format!("{message} (under SCHED_OTHER, --no-rt: the bound does not apply)")
        };
        println!("{message}");
        eprintln!("tinct: {message}");
    }
    for t in summary.tasks.iter().filter(|t| t.blocking.exceeds_bound) {
        let message = format!(
            "!!! task '{}': a job waited {} µs at a lock, above the analysis' blocking B_i = {} µs",
            t.name,
            us(t.blocking.observed_max_ns),
            opt_us(t.blocking.bound_ns)
        );
        println!("{message}");
        eprintln!("tinct: {message}");
    }
    for t in summary.tasks.iter().filter(|t| t.error.is_some()) {
        println!(
            "!!! task '{}' failed: {}",
            t.name,
            t.error.as_deref().unwrap_or("")
        );
    }
    if !summary.balanced {
        println!(
            "!!! job accounting does not balance (released ≠ completed + missed + aborted): a runtime bug"
        );
    }
    if summary.misses > 0 {
        println!("{} deadline miss(es)", summary.misses);
    }
    if summary.unexplained > 0 {
        let message = format!(
            "!!! {} job(s) exceeded the analysis' bound with NO explanation (no host stall, \
             execution above C or platform overhead long enough to cover it; colouring {}): the \
             analysis or its inputs are wrong; exit status {UNEXPLAINED_EXIT}",
            summary.unexplained,
            summary.colouring.describe()
        );
        println!("{message}");
        eprintln!("tinct: {message}");
    }
}

/// What the stall sentinel saw and what it cost, per CPU.
fn print_sentinel(summary: &Summary) {
    println!("colouring: {}", summary.colouring.describe());
    let Some(sentinel) = &summary.sentinel else {
        println!("stall sentinel: off (no late job can be blamed on a host stall)");
        return;
    };
    println!(
        "stall sentinel: one thread per CPU every {} µs{}, a wake-up {} µs late is a stall",
        sentinel.period_ns / 1000,
        if sentinel.top_priority {
            " at SCHED_FIFO 99"
        } else {
            " under SCHED_OTHER (--no-rt: its gaps prove nothing)"
        },
        sentinel.threshold_ns / 1000
    );
    for cpu in &sentinel.cpus {
        let share = cpu
            .cpu_share
            .map_or("—".into(), |s| format!("{:.2} %", s * 100.0));
        let steal = cpu
            .steal_ns
            .map_or("unknown".into(), |s| format!("{} ms", ms(s)));
        println!(
            "  CPU {}: {} wake-ups, own CPU time {share}; {} stall(s), {} ms in all, longest {} ms; steal time {steal}",
            cpu.cpu,
            cpu.wakes,
            cpu.stalls,
            ms(cpu.stalled_ns),
            ms(cpu.longest_ns)
        );
    }
}

/// The jobs above their bound: counts per cause, then the first few of
/// each task with their explanation (all of them are in summary.json).
fn print_late_jobs(summary: &Summary) {
    const SHOWN: usize = 5;
    if summary.causes.total() == 0 {
        return;
    }
    let mut t = table(&[
        "task",
        "late jobs",
        "host stall",
        "exec above C",
        "overhead",
        "colouring",
        "not real-time",
        "predicted",
        "no analysis",
        "UNEXPLAINED",
    ]);
    for task in summary.tasks.iter().filter(|t| t.causes.total() > 0) {
        let c = &task.causes;
        t.add_row(vec![
            task.name.clone(),
            c.total().to_string(),
            c.get(Cause::HostStall).to_string(),
            c.get(Cause::ExecAboveC).to_string(),
            c.get(Cause::PlatformOverhead).to_string(),
            c.get(Cause::ColouringNotEffective).to_string(),
            c.get(Cause::NotRealTime).to_string(),
            c.get(Cause::Predicted).to_string(),
            c.get(Cause::NoAnalysis).to_string(),
            c.get(Cause::Unexplained).to_string(),
        ]);
    }
    println!("\njobs above their bound (the WCRT, else the deadline), by cause");
    println!("{t}");
    for task in &summary.tasks {
        for job in task.late.iter().take(SHOWN) {
            println!(
                "  {} job {}: R {} ms > {} {} ms by {} ms: {}",
                task.name,
                job.job,
                ms(job.response_ns),
                match job.bound {
                    tinct_rt::attribution::BoundKind::Wcrt => "WCRT",
                    tinct_rt::attribution::BoundKind::Deadline => "D",
                },
                ms(job.bound_ns),
                ms(job.exceedance_ns),
                job.explanation
            );
        }
        if task.late.len() > SHOWN {
            println!(
                "  {}: {} more in summary.json (late) and jobs.csv (cause)",
                task.name,
                task.late.len() - SHOWN
            );
        }
    }
}

/// Blocking met at locks next to the analysis' B_i, when the run has
/// shared resources or a job waited at a lock (issue 12).
fn print_blocking(summary: &Summary) {
    use tinct_rt::spec::BlockingShows;
    let relevant = |t: &&tinct_rt::output::TaskVerdict| {
        t.blocking.shows != BlockingShows::Nowhere || t.blocking.observed_max_ns > 0
    };
    if !summary.tasks.iter().any(|t| relevant(&t)) {
        return;
    }
    let mut blocking = table(&[
        "task",
        "blocked at a lock max (µs)",
        "release latency max (µs)",
        "B_i (µs)",
    ]);
    let mut notes: Vec<&str> = Vec::new();
    for t in summary.tasks.iter().filter(relevant) {
        blocking.add_row(vec![
            t.name.clone(),
            us(t.blocking.observed_max_ns),
            us(t.latency.max),
            opt_us(t.blocking.bound_ns),
        ]);
        if !notes.contains(&t.blocking.note) {
            notes.push(t.blocking.note);
        }
    }
    println!("\nblocking (observed at locks; B_i of the analysis)");
    println!("{blocking}");
    for note in notes {
        println!("blocking: {note}");
    }
}

/// The proof that the colouring isolates the working sets: the verdict,
/// the cache model and colour rule, one line per task, and a loud line for
/// every two tasks that can run at the same time and evict each other
/// although the plan keeps their partitions disjoint.
fn print_isolation(summary: &Summary) {
    let isolation = &summary.isolation;
    println!("\ncache isolation: {}", isolation.headline());
    if let Some(line) = isolation.model_line() {
        println!("  {line}");
    }
    for task in &summary.tasks {
        if let Some(proof) = &task.isolation {
            println!("  {}", proof.describe(&task.name));
        }
    }
    for alarm in isolation.alarms() {
        println!("!!! {alarm}");
        eprintln!("tinct: {alarm}");
    }
}

/// Hardware counters per job, or why there are none.
fn print_counters(summary: &Summary) {
    if summary
        .tasks
        .iter()
        .any(|t| t.llc_misses.is_some() || t.instructions.is_some())
    {
        let mut t = table(&[
            "task",
            "LLC misses/job mean",
            "LLC misses/job max",
            "instructions/job mean",
        ]);
        for task in &summary.tasks {
            let mean = |d: Option<tinct_report::Counts>| {
                d.map_or("—".into(), |d| format!("{:.0}", d.mean))
            };
            let max =
                |d: Option<tinct_report::Counts>| d.map_or("—".into(), |d| d.max.to_string());
            t.add_row(vec![
                task.name.clone(),
                mean(task.llc_misses),
                max(task.llc_misses),
                mean(task.instructions),
            ]);
        }
        println!("\nhardware counters per job");
        println!("{t}");
    } else if let Some(why) = summary
        .tasks
        .iter()
        .find_map(|t| t.counters_unavailable.as_deref())
    {
        println!("hardware counters: not available here ({why})");
    }
}
