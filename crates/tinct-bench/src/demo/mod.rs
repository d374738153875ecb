//! `tinct demo` as a library: the whole loop on this machine, every step's
//! file kept in one directory.
//!
//! 1. probe whether page colouring isolates here (tinct-sys's colour probe,
//!    through [`tinct_rt::colouring::Colouring::probe`]);
//! 2. measure Δ (as `tinct bench calibrate` does) and the platform
//!    overheads (`tinct bench overheads --quick`), stored together as
//!    `calibration.json`;
//! 3. measure each task body's C^p with `tinct bench wcet-profile` (quick),
//!    cold (its lines flushed before each job: the tasks share CPUs, and the
//!    private caches' refill is not in Eq. 2) and under co-runners on the
//!    other CPUs (uncoloured when colouring is not effective here, so the
//!    interference the analysis cannot see is inside C), the maximum job as
//!    C^p (kim2013's WCET estimate: with tens of jobs
//!    per point a high percentile is the maximum or just below it, and the
//!    EVT fit needs hundreds);
//! 4. write the task set with those C, its periods from a utilisation share
//!    per task, and plan it with CATA (kim2013 Algorithm 3), analysed with
//!    the measured overheads (tinct-core's analysis, C' = C + 2δ, release
//!    latency as jitter, tick); periods are doubled until the analysis
//!    finds the plan schedulable, so the bound is met honestly;
//! 5. run the plan (tinct-rt, with the stall sentinel and the colour
//!    finding for attribution) and compare every task's observed response
//!    times with its bound: `verdict.json`.
//!
//! It lives in tinct-bench because the measurements are this crate's
//! benches and tinct-bench already depends on tinct-rt (runs) and
//! tinct-core (analysis, planning); tinct-rt cannot depend on tinct-bench.
//! Nothing here prints: `progress` gets one line per step.
//!
//! A raised [`Params::stop`] (Ctrl-C) stops the demo at its next step
//! boundary (between two bodies' profiles in step 3; the run of step 5
//! stops itself on the signal and writes what it recorded): every file
//! written so far is kept, and `verdict.json` says `"interrupted": true`
//! with the phase reached and the files kept ([`Outcome::Interrupted`]).

mod steps;
pub mod task_set;
pub mod text;

use crate::wcet_profile::WorkerCommand;
use crate::{Error, Result};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::Instant;
use tinct_core::model::TaskSet;
use tinct_core::overheads::OverheadsSource;
use tinct_core::units::Nanos;
use tinct_rt::colouring::Colouring;
use tinct_sys::signals::StopFlag;
use tinct_verify::run_in_dir::Recorded;

/// Measured jobs per profile launch (the quick profile's 5 miss too many
/// worst cases; 2 launches × 20 jobs per p keep the demo under a minute).
pub const JOBS_PER_LAUNCH: u32 = 20;

/// Periods are doubled at most this many times looking for a schedulable plan.
pub const MAX_DOUBLINGS: u32 = 6;

/// Parameters of `tinct demo`.
#[derive(Debug, Clone)]
pub struct Params {
    /// The demo's directory: every step's file goes here.
    pub out: PathBuf,
    /// How long the run lasts.
    pub duration: Nanos,
    /// Run the tasks (and the profile's workers) under SCHED_FIFO.
    pub realtime: bool,
    /// Seed of the benches' random choices.
    pub seed: u64,
    /// The LD_PRELOAD shim the profile's workers run under (`None`: the
    /// profile looks beside the worker program, see
    /// [`crate::wcet_profile::Params::preload`]).
    pub preload: Option<PathBuf>,
    /// The page colour's physical address bits, e.g. `12-16` (`--color-bits`;
    /// else `TINCT_COLOR_BITS`, the machine file, the derived rule). Where
    /// none gives them the whole loop runs uncoloured and says why.
    pub color_bits: Option<String>,
    /// Raised (Ctrl-C): the demo stops at its next step boundary and keeps
    /// what it wrote.
    pub stop: StopFlag,
}

/// The demo's steps, in order (an interrupted demo names the one it reached).
pub const STEPS: [&str; 5] = [
    "colour probe",
    "platform",
    "worst cases",
    "plan and analysis",
    "run",
];

/// What `verdict.json` holds when the demo was stopped before its verdict.
#[derive(Debug, Clone, Serialize)]
pub struct InterruptedVerdict {
    /// Always true.
    pub interrupted: bool,
    /// The step under way (or about to start) when the stop came.
    pub phase: String,
    /// The steps completed, with their files.
    pub steps: Vec<Step>,
    /// Every file kept, relative to the demo's directory: the completed
    /// steps' and those the step under way had written (`verdict.json`
    /// itself aside).
    pub files: Vec<String>,
    /// What the step under way failed with after the stop, if it did.
    pub error: Option<String>,
    /// Wall-clock seconds until the stop (reporting only).
    pub seconds: f64,
}

/// How the demo ended.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// Every step ran (the run itself may have been stopped by Ctrl-C:
    /// then [`DemoVerdict::interrupted`] is set).
    Done(Box<Demo>),
    /// Stopped at a step boundary (Ctrl-C); `verdict.json` says where.
    Interrupted(InterruptedVerdict),
}

/// One step of the loop: what it wrote and how long it took.
#[derive(Debug, Clone, Serialize)]
pub struct Step {
    /// Its name.
    pub name: String,
    /// The files it wrote, relative to the demo's directory.
    pub files: Vec<String>,
    /// Wall-clock seconds it took (reporting only).
    pub seconds: f64,
    /// What it found, in one line.
    pub finding: String,
}

/// One task's measured C, planned place, bound and observation.
#[derive(Debug, Clone, Serialize)]
pub struct TaskOutcome {
    /// Its name.
    pub name: String,
    /// The C^p table measured, ns.
    pub wcet_ns: Vec<(u32, u64)>,
    /// Its period (= deadline), ns.
    pub period_ns: u64,
    /// The CPU the plan put it on.
    pub cpu: Option<u32>,
    /// |S(i)|.
    pub partitions: Option<u32>,
    /// The analysis' bound (CInt, with the overheads), ns; `None` past D.
    pub bound_ns: Option<u64>,
    /// C at its |S(i)|, the analysis' C, ns.
    pub c_ns: u64,
    /// The largest observed execution time (thread CPU time), ns: above
    /// `c_ns`, the quick profile missed this task's worst case.
    pub exec_max_ns: u64,
    /// The largest observed response time, ns.
    pub observed_max_ns: u64,
    /// Jobs that finished.
    pub jobs: u64,
    /// Jobs above their bound.
    pub late: u64,
    /// Of those, jobs with no cause found.
    pub unexplained: u64,
}

/// What the demo found (`verdict.json`).
#[derive(Debug, Clone, Serialize)]
pub struct DemoVerdict {
    /// The steps in order.
    pub steps: Vec<Step>,
    /// The colour probe's finding.
    pub colouring: Colouring,
    /// Its explanation.
    pub colouring_why: String,
    /// Set when colouring is not known to isolate: the isolation the
    /// analysis could have used is absent, and what the demo did instead.
    pub isolation_absent: Option<String>,
    /// True if the working sets were allocated from their partitions'
    /// colours (frame numbers readable: root, and the colour bits known);
    /// false: uncoloured.
    pub coloured: bool,
    /// The page colours the loop used, and where their bits came from; or
    /// why the loop ran uncoloured (the bits unknown, no root).
    pub colours: String,
    /// The conditions C was measured under.
    pub conditions: Vec<String>,
    /// The statistic of the jobs that became C^p, and why.
    pub statistic: String,
    /// The overheads the analysis charged and where they came from.
    pub overheads: OverheadsSource,
    /// The periods are this multiple of C / share.
    pub period_scale: u64,
    /// How the plan was made.
    pub plan: String,
    /// The analysis' verdict on the plan.
    pub schedulable: bool,
    /// Per task.
    pub tasks: Vec<TaskOutcome>,
    /// Jobs above their bound, in all.
    pub late: u64,
    /// Of those, jobs with no cause found.
    pub unexplained: u64,
    /// Every finished job within its bound.
    pub bound_met: bool,
    /// Wall-clock seconds of the whole demo (reporting only).
    pub seconds: f64,
    /// True if Ctrl-C stopped the run (step 5) early: its jobs are the
    /// ones it recorded until then.
    pub interrupted: bool,
}

/// The demo's result: its verdict, the plan and the run.
#[derive(Debug, Clone)]
pub struct Demo {
    /// What `verdict.json` holds.
    pub verdict: DemoVerdict,
    /// The plan that ran.
    pub planned: TaskSet,
    /// The run.
    pub recorded: Recorded,
}

fn write_file(path: &Path, text: &str) -> Result<()> {
    crate::harness::write_atomically(path, text.as_bytes()).map_err(|source| Error::Write {
        path: path.to_path_buf(),
        source,
    })
}

fn to_json<T: Serialize>(what: &str, value: &T) -> Result<String> {
    serde_json::to_string_pretty(value).map_err(|source| Error::Json {
        what: what.into(),
        source,
    })
}

/// Runs the demo into `params.out` (see the module documentation).
/// `worker` starts the profile's workers (the CLI knows how); `progress`
/// gets one line per step. Stopped by [`Params::stop`], it returns
/// [`Outcome::Interrupted`] (also when the step under way failed after
/// the stop: the failure is in the verdict), except for bad input and a
/// file that cannot be written: those are the demo's error even then.
pub fn run(params: &Params, worker: &WorkerCommand, progress: &dyn Fn(&str)) -> Result<Outcome> {
    let begun = Instant::now();
    let mut steps = steps::Steps::new();
    let error = match steps::run_steps(params, worker, progress, &mut steps, begun) {
        Ok(Some(demo)) => return Ok(Outcome::Done(Box::new(demo))),
        Ok(None) => None,
        Err(e) if params.stop.is_raised() && after_stop_is_interruption(&e) => Some(e.to_string()),
        Err(e) => return Err(e),
    };
    let verdict = InterruptedVerdict {
        interrupted: true,
        phase: steps.phase().into(),
        files: steps.files(),
        steps: steps.done,
        error,
        seconds: begun.elapsed().as_secs_f64(),
    };
    write_file(
        &params.out.join("verdict.json"),
        &to_json("verdict", &verdict)?,
    )?;
    Ok(Outcome::Interrupted(verdict))
}

/// Whether an error of the step under way when Ctrl-C came is part of
/// the interruption (a worker stopped by the signal) rather than a failure
/// of its own: bad input and files that cannot be written fail the demo
/// (exit 1 or 2) even after a stop.
fn after_stop_is_interruption(error: &Error) -> bool {
    !matches!(error, Error::Input(_)) && !error.is_output()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_that_cannot_be_written_after_a_stop_is_the_demos_error() {
        let write = Error::Write {
            path: "demo/run/jobs.csv".into(),
            source: std::io::Error::other("disk full"),
        };
        assert!(!after_stop_is_interruption(&write));
        assert!(!after_stop_is_interruption(&Error::option(
            "--duration",
            "a run longer than 0",
            "0s"
        )));
        assert!(after_stop_is_interruption(&Error::Measurement(
            "a worker was stopped".into()
        )));
    }
}
