//! A whole run as `tinct run` does it, for any caller: check that the run
//! can start ([`tinct_rt::runtime::check_can_run`]), prepare its directory
//! before the first release ([`RunDir::prepare`]), run, summarize with the
//! proof that the colouring isolates ([`crate::isolation::prove`]), and
//! write every file ([`RunDir::write`], with its fallback). Also what a
//! front end says around it: the default run directory, the line before
//! the run and the exit status of what was recorded.

use crate::output::UNEXPLAINED_EXIT;
use crate::output::{RunContext, RunDir, Summary, Written, summarize};
use std::path::{Path, PathBuf};
use tinct_base::InputError;
use tinct_core::analysis::Analysis;
use tinct_core::units::Nanos;
use tinct_rt::pipeline::PlacementPolicy;
use tinct_rt::runtime::{RunOptions, RunResult, check_can_run};
use tinct_rt::spec::{RunSpec, WatchdogMode};
use tinct_rt::{Result, RtError};

/// What a run in a directory gives back.
#[derive(Clone, Debug)]
pub struct Recorded {
    /// The verdict, as written to `summary.json`.
    pub summary: Summary,
    /// Every job record.
    pub result: RunResult,
    /// Where the files went (the run directory, or a fallback).
    pub written: Written,
}

impl Recorded {
    /// The exit status of the run: 0 for a completed run written where
    /// asked; [`UNEXPLAINED_EXIT`] (3) if it completed but a job exceeded
    /// the analysis' bound unexplained; 1 for a stopped one or one whose
    /// files went to the fallback directory.
    pub fn exit_status(&self) -> u8 {
        if !self.summary.stop.is_completed() || self.written.fallback_because.is_some() {
            1
        } else if self.summary.unexplained > 0 {
            UNEXPLAINED_EXIT
        } else {
            0
        }
    }
}

/// The default run length: 10 s.
pub const DEFAULT_DURATION_NS: u64 = 10_000_000_000;

/// What a run runs: its spec, the analysis of the plan it came from (none
/// for an rt-app file), where its files go, and notes on the file (keys of
/// an rt-app file that change no timing).
#[derive(Clone, Debug)]
pub struct Workload {
    /// The threads, their phases and the run's length.
    pub spec: RunSpec,
    /// The analysis of the plan, written beside the run as analysis.json.
    pub analysis: Option<Analysis>,
    /// The run directory.
    pub out: PathBuf,
    /// Notes on the file, for the user.
    pub notes: Vec<String>,
}

impl Workload {
    /// A planned task set run with `placement` for `duration` (default
    /// [`DEFAULT_DURATION_NS`]) into `out` (default `runs/<stem>`).
    pub fn plan(
        plan: &Path,
        duration: Option<Nanos>,
        placement: PlacementPolicy,
        out: Option<PathBuf>,
    ) -> Result<Workload> {
        let duration = duration.map_or(DEFAULT_DURATION_NS, |d| d.0);
        let (spec, analysis) = tinct_rt::plan::load_placed_plan(plan, duration, placement)?;
        let file = plan.display().to_string();
        let notes = match &analysis {
            // Said, never silent: the run measures, but bounds nothing.
            Err(refused) => vec![format!(
                "no analysis: `tinct analyze` refuses this set ({refused}); the run has no bounds, and a late job's cause is `no_analysis`"
            )],
            // Inputs the analysis did not use as written (an explicit
            // `blocking` below the derived B_i), as `tinct analyze` warns.
            Ok(a) => a
                .warnings
                .iter()
                .map(|w| format!("warning: {}", w.located(&file)))
                .collect(),
        };
        Ok(Workload {
            spec,
            analysis: analysis.ok(),
            out: out.unwrap_or_else(|| default_run_dir(plan)),
            notes,
        })
    }

    /// An rt-app file run for `duration` (default: its `global.duration`,
    /// else [`DEFAULT_DURATION_NS`]) into `out` (default: its logdir and
    /// log_basename, else `runs/<stem>`).
    pub fn rt_app(file: &Path, duration: Option<Nanos>, out: Option<PathBuf>) -> Result<Workload> {
        let loaded = tinct_rt::rtapp::load(file, DEFAULT_DURATION_NS)?;
        let mut spec = loaded.spec;
        if let Some(d) = duration {
            spec.duration_ns = d.0;
        }
        let mut notes = loaded.notes;
        // A file of reservations is analysed (partitioned EDF); one with
        // some is told why not; one with none is rt-app's usual business.
        let analysis = if spec
            .tasks
            .iter()
            .any(|t| t.scheduling.policy == tinct_rt::spec::Policy::Deadline)
        {
            match tinct_rt::rtapp::analysis::analyze_reservations(&spec) {
                Ok((_, analysis)) => {
                    tinct_rt::rtapp::analysis::attach_bounds(&mut spec, &analysis);
                    notes.push(
                        "analysed as SCHED_DEADLINE reservations on their CPUs (partitioned \
                         EDF): each job's C is its runtime, and no cache terms (the file \
                         gives no partitions)"
                            .into(),
                    );
                    Some(analysis)
                }
                Err(why) => {
                    notes.push(format!(
                        "no analysis of the SCHED_DEADLINE threads: {why}; the run has no \
                         bounds, and a late job's cause is `no_analysis`"
                    ));
                    None
                }
            }
        } else {
            None
        };
        Ok(Workload {
            spec,
            analysis,
            out: out
                .or(loaded.log_dir.map(PathBuf::from))
                .unwrap_or_else(|| default_run_dir(file)),
            notes,
        })
    }
}

/// `runs/<stem>`: the default run directory of a workload file.
pub fn default_run_dir(file: &Path) -> PathBuf {
    let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or("run");
    Path::new("runs").join(stem)
}

/// The line before a run: what runs, how, how long, under which
/// watchdog, and where its files go.
pub fn run_header(spec: &RunSpec, options: &RunOptions, out: &Path) -> String {
    let watchdog = match options.watchdog {
        WatchdogMode::Off => "watchdog off".to_string(),
        WatchdogMode::Realtime => format!(
            "watchdog at {} × D for SCHED_FIFO/RR jobs",
            options.watchdog_factor
        ),
        WatchdogMode::All => format!("watchdog at {} × D", options.watchdog_factor),
    };
    format!(
        "tinct run {}: {} thread(s), {}, {:.3} s, {watchdog}, run directory {}",
        spec.source,
        spec.tasks.len(),
        crate::output::scheduling_note(options.realtime),
        spec.duration_ns as f64 / 1e9,
        out.display()
    )
}

/// `spec` with each program body's stderr in `programs/<task>.stderr` (and
/// its heap's frame reports in `programs/<task>.frames.<pid>`) of
/// the run directory `dir` (that directory emptied of an earlier run's
/// files first; none without program bodies).
fn with_program_output(spec: &RunSpec, dir: &Path) -> Result<RunSpec> {
    let mut spec = spec.clone();
    let programs = dir.join(PROGRAMS_DIR);
    let _ = std::fs::remove_dir_all(&programs);
    let mut made = false;
    let mut taken = std::collections::HashSet::new();
    for (index, task) in spec.tasks.iter_mut().enumerate() {
        let Some(program) = &mut task.program else {
            continue;
        };
        // Two names can sanitise alike (`a/b`, `a_b`): the second gets its
        // index, so that no two programs share a file.
        let mut name = task.name.clone();
        if !taken.insert(program_stderr_name(&name)) {
            name = format!("{name}-{index}");
            taken.insert(program_stderr_name(&name));
        }
        if !made {
            std::fs::create_dir_all(&programs).map_err(|e| {
                RtError::Input(InputError {
                    file: programs.display().to_string(),
                    line: None,
                    field: "run directory (--out)".into(),
                    expected: "a directory for the programs' stderr".into(),
                    found: e.to_string(),
                })
            })?;
            made = true;
        }
        program.stderr = Some(programs.join(program_stderr_name(&task.name)));
        program.frames =
            Some(programs.join(crate::output::program_file_name(&task.name, "frames")));
    }
    Ok(spec)
}

pub use crate::output::{PROGRAMS_DIR, program_stderr_name};

/// Runs `spec` and writes its directory `out`, with `analysis` (that of the
/// plan `spec` came from, if any) as `analysis.json` and the machine's
/// description. Errors before the first release (bad input, privileges, a
/// directory that cannot be written) leave no run; once the run started,
/// what it recorded is written.
pub fn run_in_dir(
    spec: &RunSpec,
    analysis: Option<&Analysis>,
    options: RunOptions,
    out: &Path,
) -> Result<Recorded> {
    check_can_run(spec, &options)?;
    let dir = RunDir::prepare(out)?;
    let machine = tinct_sys::machine::Machine::describe();
    let spec = &with_program_output(spec, dir.path())?;
    let result = match tinct_rt::runtime::run(spec, options) {
        Ok(result) => result,
        Err(e) => {
            // Refused before anything was recorded (an io_device, a
            // calibration CPU, a pool found wanting only now): no empty
            // directory is left to look like a run.
            let _ = std::fs::remove_dir_all(dir.path().join(PROGRAMS_DIR));
            dir.abandon();
            return Err(e);
        }
    };
    let mut summary = summarize(&spec.source, spec.duration_ns, &result);
    summary.attach_isolation(crate::isolation::prove(
        spec,
        &result.tasks,
        result.footprint.as_ref().map_err(Clone::clone),
    ));
    let context = RunContext { analysis, machine };
    let written = dir.write(&summary, &result, &context)?;
    Ok(Recorded {
        summary,
        result,
        written,
    })
}
