//! `tinct demo` as a library: the whole loop on this machine, every step's
//! file kept in one directory (issue 14 item 3).
//!
//! 1. probe whether page colouring isolates here (tinct-sys's colour probe,
//!    through [`tinct_rt::attribution::Colouring::probe`]);
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

pub mod task_set;
pub mod text;

use crate::harness::{BenchOptions, NoProgress, RunHeader};
use crate::wcet_profile::condition::Condition;
use crate::wcet_profile::statistic::Statistic;
use crate::wcet_profile::{self, CoRunnerChoice, WorkerCommand};
use crate::{Error, Result, calibrate, overheads};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::Instant;
use tinct_core::alloc::{self, Algorithm, SearchOptions};
use tinct_core::analysis::Analysis;
use tinct_core::calibration::{CalibrationFile, RefillRecord};
use tinct_core::model::TaskSet;
use tinct_core::overheads::OverheadsSource;
use tinct_core::units::Nanos;
use tinct_rt::attribution::Colouring;
use tinct_rt::run_in_dir::{Recorded, run_in_dir};
use tinct_rt::runtime::RunOptions;
use tinct_rt::sentinel::SentinelOptions;
use tinct_rt::spec::RunSpec;
use tinct_sys::signals::StopFlag;

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
    /// [`wcet_profile::Params::preload`]).
    pub preload: Option<PathBuf>,
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
    /// colours (frame numbers readable: root); false: uncoloured.
    pub coloured: bool,
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

/// A bad plan is bad input, a run directory that cannot be written an
/// output failure; anything else failed the measurement.
fn rt_error(e: tinct_rt::RtError) -> Error {
    match e {
        tinct_rt::RtError::Input { .. } => Error::InvalidInput(e.to_string()),
        tinct_rt::RtError::Write { path, source } => Error::Write {
            path: path.into(),
            source,
        },
        other => Error::Measurement(other.to_string()),
    }
}

fn write_file(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).map_err(|source| Error::Write {
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

/// Times one step and records it.
struct Steps {
    started: Instant,
    done: Vec<Step>,
    /// Files the step under way has written so far.
    partial: Vec<String>,
}

impl Steps {
    /// The step under way, by name.
    fn phase(&self) -> &'static str {
        STEPS.get(self.done.len()).copied().unwrap_or("verdict")
    }

    /// Every file written so far, in order.
    fn files(&self) -> Vec<String> {
        self.done
            .iter()
            .flat_map(|step| step.files.iter().cloned())
            .chain(self.partial.iter().cloned())
            .collect()
    }

    fn record(&mut self, name: &str, files: &[&str], finding: String, progress: &dyn Fn(&str)) {
        let seconds = self.started.elapsed().as_secs_f64();
        progress(&format!("{name}: {finding} ({seconds:.1} s)"));
        self.done.push(Step {
            name: name.into(),
            files: files.iter().map(|f| f.to_string()).collect(),
            seconds,
            finding,
        });
        self.partial.clear();
        self.started = Instant::now();
    }
}

/// Runs the demo into `params.out` (see the module documentation).
/// `worker` starts the profile's workers (the CLI knows how); `progress`
/// gets one line per step. Stopped by [`Params::stop`], it returns
/// [`Outcome::Interrupted`] (also when the step under way failed after
/// the stop: the failure is in the verdict), except for bad input and a
/// file that cannot be written: those are the demo's error even then.
pub fn run(params: &Params, worker: &WorkerCommand, progress: &dyn Fn(&str)) -> Result<Outcome> {
    let begun = Instant::now();
    let mut steps = Steps {
        started: Instant::now(),
        done: Vec::new(),
        partial: Vec::new(),
    };
    let error = match run_steps(params, worker, progress, &mut steps, begun) {
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
    !matches!(error, Error::InvalidInput(_)) && !error.is_output()
}

/// The demo's steps; `None` when the stop flag ended them at a boundary.
fn run_steps(
    params: &Params,
    worker: &WorkerCommand,
    progress: &dyn Fn(&str),
    steps: &mut Steps,
    begun: Instant,
) -> Result<Option<Demo>> {
    let stopped = || params.stop.is_raised();
    if params.duration.0 == 0 || params.duration.0 > tinct_rt::limits::MAX_TIME_NS {
        return Err(Error::InvalidInput(format!(
            "--duration: expected a run longer than 0 and at most {}, found {}",
            Nanos(tinct_rt::limits::MAX_TIME_NS),
            params.duration
        )));
    }
    let out = &params.out;
    std::fs::create_dir_all(out).map_err(|source| Error::Write {
        path: out.clone(),
        source,
    })?;
    let cpus = tinct_sys::sched::affinity()?;
    // Colouring needs physical frame numbers (pagemap), which only root reads.
    let coloured = tinct_sys::privilege::Privileges::read(&tinct_sys::SysRoot::live())
        .is_ok_and(|p| p.is_root());
    if stopped() {
        return Ok(None);
    }

    // 1. Does colouring isolate here?
    let (colouring, colouring_why) = Colouring::probe(5);
    write_file(
        &out.join("color-probe.json"),
        &to_json(
            "colour probe",
            &serde_json::json!({ "colouring": colouring, "explanation": colouring_why }),
        )?,
    )?;
    steps.record(
        "colour probe",
        &["color-probe.json"],
        format!("colouring {}", colouring.describe()),
        progress,
    );
    if stopped() {
        return Ok(None);
    }

    // 2. Δ and the platform overheads.
    let options = BenchOptions {
        quick: true,
        out: Some(out.join("overheads")),
        seed: params.seed,
        ..BenchOptions::default()
    };
    let header = RunHeader::new("demo", &options, 5, cpus.clone());
    let geometry = calibrate::Geometry::of(&header);
    let wipe = vec![1u64; ((geometry.llc * 2).max(16 << 20) / 8) as usize];
    let refill = calibrate::measure_refill(
        &calibrate::RefillSetup {
            llc_bytes: geometry.llc,
            partitions: task_set::PARTITIONS,
            page_bytes: geometry.page,
            reps: 5,
            seed: params.seed,
        },
        &wipe,
        &NoProgress,
    )?;
    drop(wipe);
    let refill_ns = refill.delta.refill_ns.div_ceil(100) * 100;
    // Under SCHED_OTHER the overheads' benches measure the other threads'
    // time too (a "tick" of milliseconds): they are not the platform's.
    let measured = if params.realtime {
        Some(
            overheads::run(
                &overheads::Params {
                    common: options,
                    seconds: Some(1),
                    calibration: None,
                },
                &NoProgress,
            )?
            .result
            .measured
            .overheads,
        )
    } else {
        None
    };
    let calibration = CalibrationFile {
        refill: RefillRecord {
            partitions: task_set::PARTITIONS,
            refill_ns,
        },
        overheads: measured,
    };
    let calibration_path = out.join("calibration.json");
    write_file(&calibration_path, &to_json("calibration", &calibration)?)?;
    let source = if params.realtime {
        tinct_core::overheads::read(&calibration_path)
            .map_err(|e| Error::Measurement(format!("the demo's own calibration: {e}")))?
    } else {
        OverheadsSource::none(
            "none: under --no-rt the overheads' benches would time other threads too",
        )
    };
    let o = &source.overheads;
    let mut files = vec!["calibration.json"];
    if params.realtime {
        files.extend(["overheads/overheads.json", "overheads/overheads.csv"]);
    }
    steps.record(
        "platform",
        &files,
        format!(
            "Δ = {}, δ = {}, release latency {}, tick {} ({})",
            Nanos(refill_ns),
            o.context_switch,
            o.release_latency,
            o.tick,
            source.from
        ),
        progress,
    );
    if stopped() {
        return Ok(None);
    }

    // 3. C^p of every body, measured.
    let iterations: Vec<u64> = task_set::TASKS
        .iter()
        .map(task_set::iterations_for)
        .collect();
    let cores = (cpus.len() as u32).clamp(1, 4);
    let unmeasured = task_set::unmeasured(&iterations, cores, Nanos(refill_ns));
    let tasks_path = out.join("tasks.toml");
    write_file(
        &tasks_path,
        &tinct_core::format::to_toml(
            &unmeasured,
            &["The demo's tasks before their C is measured (`tinct demo`).".into()],
        ),
    )?;
    steps.partial.push("tasks.toml".into());
    // Cold: the tasks share CPUs, so a job can start after the others
    // evicted its lines from the private caches, which Eq. (2) does not
    // charge (ω and γ are last-level refills only). Co-run: the tasks of
    // the other CPUs, coloured where colouring isolates, else uncoloured.
    let (conditions, co_runners) = match (cpus.len() > 1, colouring) {
        (false, _) => (vec![Condition::Cold], CoRunnerChoice::Uncolored),
        (true, Colouring::Effective) => (vec![Condition::ColdCoRun], CoRunnerChoice::Colored),
        (true, _) => (vec![Condition::ColdCoRun], CoRunnerChoice::Uncolored),
    };
    let mut tables = Vec::new();
    let mut profile_files = vec!["tasks.toml".to_string()];
    for task in &task_set::TASKS {
        if stopped() {
            return Ok(None);
        }
        let dir = format!("profile/{}", task.name);
        let profiled = wcet_profile::run(
            &wcet_profile::Params {
                common: BenchOptions {
                    quick: true,
                    out: Some(out.join(&dir)),
                    seed: params.seed,
                    ..BenchOptions::default()
                },
                taskset: Some(tasks_path.clone()),
                task: Some(task.name.into()),
                no_fifo: !params.realtime,
                uncolored: !coloured,
                preload: params.preload.clone(),
                conditions: conditions.clone(),
                co_runners,
                statistic: Statistic::Max,
                jobs: Some(JOBS_PER_LAUNCH),
                ..wcet_profile::Params::default()
            },
            worker,
            &NoProgress,
        )?;
        if let Some(why) = &profiled.result.table_missing {
            return Err(Error::Measurement(format!(
                "no C^p for task '{}': {why}",
                task.name
            )));
        }
        tables.push(wcet_profile::table::table(&profiled.result.points));
        profile_files.push(format!("{dir}/wcet-profile.json"));
        steps.partial.push(format!("{dir}/wcet-profile.json"));
    }
    let mut measured_set = unmeasured;
    task_set::set_measured(&mut measured_set, &tables);
    measured_set.platform.overheads = source.overheads;
    let files: Vec<&str> = profile_files.iter().map(String::as_str).collect();
    steps.record(
        "worst cases",
        &files,
        format!(
            "C (max over {}) = {}",
            conditions
                .iter()
                .map(|c| c.name())
                .collect::<Vec<_>>()
                .join(", "),
            measured_set
                .tasks
                .iter()
                .map(|t| format!("{} {}", t.name, t.wcet.worst()))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        progress,
    );
    if stopped() {
        return Ok(None);
    }

    // 4. Periods, plan, analysis.
    let (planned, analysis, scale, how) = plan_until_schedulable(&mut measured_set, &cpus)?;
    write_file(
        &out.join("taskset.toml"),
        &tinct_core::format::to_toml(
            &measured_set,
            &[format!(
                "The demo's tasks with C^p measured here (max over {} jobs) and periods \
                 {scale} × C / share (`tinct demo`).",
                conditions
                    .iter()
                    .map(|c| c.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            )],
        ),
    )?;
    let plan_path = out.join("plan.toml");
    write_file(
        &plan_path,
        &tinct_core::format::to_toml(&planned, &[format!("Planned by `tinct demo`: {how}.")]),
    )?;
    write_file(&out.join("analysis.json"), &to_json("analysis", &analysis)?)?;
    steps.record(
        "plan and analysis",
        &["taskset.toml", "plan.toml", "analysis.json"],
        format!(
            "{how}, periods × {scale}: {}",
            if analysis.schedulable {
                "SCHEDULABLE"
            } else {
                "NOT SCHEDULABLE"
            }
        ),
        progress,
    );
    if stopped() {
        return Ok(None);
    }

    // 5. Run and verify.
    let spec = RunSpec::from_plan(
        &planned,
        Some(&analysis),
        &plan_path.display().to_string(),
        params.duration.0,
    )
    .map_err(rt_error)?;
    let recorded = run_in_dir(
        &spec,
        Some(&analysis),
        RunOptions {
            colouring,
            sentinel: Some(SentinelOptions::default()),
            realtime: params.realtime,
            uncolored: !coloured,
            supervise: true,
            ..RunOptions::default()
        },
        &out.join("run"),
    )
    .map_err(rt_error)?;
    let summary = &recorded.summary;
    steps.record(
        "run",
        &["run/summary.json", "run/jobs.csv", "run/stalls.csv"],
        format!(
            "{} job(s) above their bound, {} unexplained, {} deadline miss(es)",
            summary.causes.total(),
            summary.unexplained,
            summary.misses
        ),
        progress,
    );

    let tasks: Vec<TaskOutcome> = planned
        .tasks
        .iter()
        .zip(&summary.tasks)
        .zip(&analysis.tasks)
        .map(|((task, observed), bound)| TaskOutcome {
            name: task.name.clone(),
            wcet_ns: task.wcet.listed().iter().map(|(&p, c)| (p, c.0)).collect(),
            period_ns: task.period.0,
            cpu: task.core,
            partitions: task.partitions.map(|s| s.len()),
            bound_ns: bound.wcrt_ns,
            c_ns: bound.wcet_ns,
            exec_max_ns: observed.exec.max,
            observed_max_ns: observed.response.max,
            jobs: observed.response.count,
            late: observed.causes.total(),
            unexplained: observed
                .causes
                .get(tinct_rt::attribution::Cause::Unexplained),
        })
        .collect();
    let isolation_absent = (colouring != Colouring::Effective).then(|| {
        format!(
            "the colour probe says colouring is {} here: the isolation of partitions that \
             the analysis could have used (no inter-core interference in Eq. 2) is absent, so \
             C was measured with co-runners sweeping uncoloured memory on the other CPUs, \
             which puts that interference inside C",
            match colouring {
                Colouring::NotEffective => "not effective",
                Colouring::Inconclusive => "inconclusive",
                _ => "not known to be effective",
            }
        )
    });
    let late = summary.causes.total();
    let verdict = DemoVerdict {
        steps: std::mem::take(&mut steps.done),
        colouring,
        colouring_why,
        isolation_absent,
        coloured,
        conditions: conditions.iter().map(|c| c.name().to_string()).collect(),
        statistic: "max: the largest measured job (kim2013's WCET estimate); the profile \
                    has 40 jobs per point, where a high percentile is the maximum or just \
                    below it and an EVT fit is not supported"
            .into(),
        overheads: source,
        period_scale: scale,
        plan: how,
        schedulable: analysis.schedulable,
        tasks,
        late,
        unexplained: summary.unexplained,
        bound_met: late == 0,
        seconds: begun.elapsed().as_secs_f64(),
        interrupted: stopped(),
    };
    write_file(&out.join("verdict.json"), &to_json("verdict", &verdict)?)?;
    Ok(Some(Demo {
        verdict,
        planned,
        recorded,
    }))
}

/// Sets the periods at 1, 2, 4, … × C / share until CATA finds a plan the
/// analysis (with the set's overheads) calls schedulable, at most
/// [`MAX_DOUBLINGS`] doublings; then the last plan is kept and the run will
/// show what the analysis predicts. Plan cores 0..N become this process's
/// CPUs. Returns the plan, its analysis, the scale and how it was made.
fn plan_until_schedulable(
    set: &mut TaskSet,
    cpus: &[u32],
) -> Result<(TaskSet, Analysis, u64, String)> {
    let options = alloc::PlanOptions {
        search: SearchOptions::budget(200_000),
        ..alloc::PlanOptions::default()
    };
    let mut last = None;
    for doubling in 0..=MAX_DOUBLINGS {
        let scale = 1u64 << doubling;
        task_set::set_periods(set, scale)
            .ok_or_else(|| Error::Measurement("a period does not fit 64-bit nanoseconds".into()))?;
        let plan = alloc::plan(set, Algorithm::Cata, &options);
        let Some(mut planned) = plan.planned.filter(|_| plan.unplaced.is_empty()) else {
            continue;
        };
        for task in &mut planned.tasks {
            task.core = task.core.map(|c| cpus[c as usize % cpus.len()]);
        }
        planned.platform.cores = planned
            .tasks
            .iter()
            .filter_map(|t| t.core)
            .max()
            .map_or(1, |c| c + 1);
        let analysis = tinct_core::analysis::analyze(&planned)
            .map_err(|e| Error::Measurement(format!("the demo's plan: {e}")))?;
        let schedulable = analysis.schedulable;
        last = Some((
            planned,
            analysis,
            scale,
            "CATA (kim2013 Algorithm 3)".to_string(),
        ));
        if schedulable {
            break;
        }
    }
    last.ok_or_else(|| {
        Error::Measurement(format!(
            "CATA placed no plan of the demo's tasks even with periods × {}",
            1u64 << MAX_DOUBLINGS
        ))
    })
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
        assert!(!after_stop_is_interruption(&Error::InvalidInput(
            "--duration".into()
        )));
        assert!(after_stop_is_interruption(&Error::Measurement(
            "a worker was stopped".into()
        )));
    }

    #[test]
    fn the_runs_write_errors_stay_output_failures() {
        let e = rt_error(tinct_rt::RtError::Write {
            path: "run/jobs.csv".into(),
            source: std::io::Error::other("disk full"),
        });
        assert!(e.is_output(), "{e}");
        assert!(e.to_string().contains("run/jobs.csv"), "{e}");
    }
}
