//! The demo's five steps (see [`super`]), one function each, and the record
//! of what each step wrote and found; [`run_steps`] runs them in order,
//! stopping at the boundary after a stop request.

use super::{
    Demo, DemoVerdict, JOBS_PER_LAUNCH, MAX_DOUBLINGS, Params, STEPS, Step, TaskOutcome, task_set,
    to_json, write_file,
};
use crate::harness::{BenchOptions, NoProgress, RunHeader};
use crate::wcet_profile::condition::Condition;
use crate::wcet_profile::statistic::Statistic;
use crate::wcet_profile::{self, CoRunnerChoice, WorkerCommand};
use crate::{Error, Result, calibrate, overheads};
use std::path::{Path, PathBuf};
use std::time::Instant;
use tinct_core::alloc::{self, Algorithm, SearchOptions};
use tinct_core::analysis::Analysis;
use tinct_core::calibration::{CalibrationFile, RefillRecord};
use tinct_core::model::TaskSet;
use tinct_core::overheads::OverheadsSource;
use tinct_core::units::Nanos;
use tinct_rt::colouring::Colouring;
use tinct_rt::runtime::RunOptions;
use tinct_rt::sentinel::SentinelOptions;
use tinct_rt::spec::RunSpec;
use tinct_sys::color_source::ColorSourceError;
use tinct_verify::run_in_dir::{Recorded, run_in_dir};

/// Times one step and records it.
pub(super) struct Steps {
    started: Instant,
    /// The steps completed.
    pub done: Vec<Step>,
    /// Files the step under way has written so far.
    partial: Vec<String>,
}

impl Steps {
    /// No step done yet; the first one starts now.
    pub fn new() -> Self {
        Self {
            started: Instant::now(),
            done: Vec::new(),
            partial: Vec::new(),
        }
    }

    /// The step under way, by name.
    pub fn phase(&self) -> &'static str {
        STEPS.get(self.done.len()).copied().unwrap_or("verdict")
    }

    /// Every file written so far, in order.
    pub fn files(&self) -> Vec<String> {
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

/// What every step works with: the parameters and this machine.
struct Context<'a> {
    params: &'a Params,
    worker: &'a WorkerCommand,
    progress: &'a dyn Fn(&str),
    /// This process's CPUs.
    cpus: Vec<u32>,
    /// Colouring needs physical frame numbers (pagemap), which only root
    /// reads, and the colour bits: without either the working sets are
    /// uncoloured.
    coloured: bool,
    /// The colours used, or why none: [`DemoVerdict::colours`].
    colours: String,
    /// The colour bits in force, if any source gives them (the colour
    /// probe tests them).
    bits: Option<Vec<u32>>,
    /// When the demo began.
    begun: Instant,
}

impl Context<'_> {
    /// The demo's directory.
    fn out(&self) -> &Path {
        &self.params.out
    }

    /// A stop was requested (Ctrl-C).
    fn stopped(&self) -> bool {
        self.params.stop.is_raised()
    }
}

/// Step 1's finding: whether colouring isolates here, and why.
struct Probe {
    colouring: Colouring,
    why: String,
}

/// Step 2's findings: Δ and the overheads the analysis charges.
struct Platform {
    refill_ns: u64,
    source: OverheadsSource,
}

/// Step 3's findings: the task set with its C^p measured, and the
/// conditions they were measured under.
struct Profiled {
    set: TaskSet,
    conditions: Vec<Condition>,
}

/// Step 4's findings: the plan, its analysis, the periods' scale and how
/// the plan was made.
struct Planned {
    set: TaskSet,
    analysis: Analysis,
    scale: u64,
    how: String,
    path: PathBuf,
}

/// The demo's steps; `None` when the stop flag ended them at a boundary.
pub(super) fn run_steps(
    params: &Params,
    worker: &WorkerCommand,
    progress: &dyn Fn(&str),
    steps: &mut Steps,
    begun: Instant,
) -> Result<Option<Demo>> {
    let cx = prepare(params, worker, progress, begun)?;
    if cx.stopped() {
        return Ok(None);
    }
    let probe = colour_probe(&cx, steps)?;
    if cx.stopped() {
        return Ok(None);
    }
    let platform = platform(&cx, steps)?;
    if cx.stopped() {
        return Ok(None);
    }
    let Some(profiled) = worst_cases(&cx, steps, &probe, &platform)? else {
        return Ok(None);
    };
    if cx.stopped() {
        return Ok(None);
    }
    let planned = plan_and_analysis(&cx, steps, profiled.set, &profiled.conditions)?;
    if cx.stopped() {
        return Ok(None);
    }
    let recorded = run_plan(&cx, steps, &probe, &planned)?;
    let verdict = verdict(
        &cx,
        steps,
        probe,
        platform,
        &profiled.conditions,
        &planned,
        &recorded,
    );
    write_file(
        &cx.out().join("verdict.json"),
        &to_json("verdict", &verdict)?,
    )?;
    Ok(Some(Demo {
        verdict,
        planned: planned.set,
        recorded,
    }))
}

/// Before the steps: the duration checked, the directory made, this
/// machine's CPUs and whether colouring is possible.
fn prepare<'a>(
    params: &'a Params,
    worker: &'a WorkerCommand,
    progress: &'a dyn Fn(&str),
    begun: Instant,
) -> Result<Context<'a>> {
    if params.duration.0 == 0 || params.duration.0 > tinct_rt::limits::MAX_TIME_NS {
        return Err(Error::option(
            "--duration",
            format!(
                "a run longer than 0 and at most {}",
                Nanos(tinct_rt::limits::MAX_TIME_NS)
            ),
            params.duration.to_string(),
        ));
    }
    let out = &params.out;
    std::fs::create_dir_all(out).map_err(|source| Error::Write {
        path: out.clone(),
        source,
    })?;
    let cpus = tinct_sys::sched::affinity()?;
    let root = tinct_sys::privilege::Privileges::read(&tinct_sys::SysRoot::live())
        .is_ok_and(|p| p.is_root());
    // Bits given badly are bad input; bits nobody gives, on a machine whose
    // rule cannot derive them, make the whole loop uncoloured.
    let options = BenchOptions {
        color_bits: params.color_bits.clone(),
        ..BenchOptions::default()
    };
    let (coloured, colours, bits) = match options.resolve_colors(None) {
        Ok(resolved) if root => (true, resolved.describe(), Some(resolved.bits)),
        Ok(resolved) => (
            false,
            format!(
                "uncoloured: physical frame numbers need root ({})",
                resolved.describe()
            ),
            Some(resolved.bits),
        ),
        Err(unknown @ ColorSourceError::Unknown { .. }) => (
            false,
            format!("uncoloured, the whole loop: {unknown}"),
            None,
        ),
        Err(e) => return Err(e.into()),
    };
    Ok(Context {
        params,
        worker,
        progress,
        cpus,
        coloured,
        colours,
        bits,
        begun,
    })
}

/// Step 1: does colouring isolate here?
fn colour_probe(cx: &Context, steps: &mut Steps) -> Result<Probe> {
    let (colouring, why) = Colouring::probe(5, cx.bits.as_deref());
    write_file(
        &cx.out().join("color-probe.json"),
        &to_json(
            "colour probe",
            &serde_json::json!({ "colouring": colouring, "explanation": why }),
        )?,
    )?;
    let finding = match (&cx.bits, cx.coloured) {
        (_, true) => format!("colouring {}", colouring.describe()),
        (Some(_), false) => format!(
            "colouring {}; the working sets run uncoloured (physical frame numbers need root)",
            colouring.describe()
        ),
        (None, false) => format!(
            "colouring {}; the colour bits are unknown here, so the whole loop runs uncoloured \
             (see the note below the run)",
            colouring.describe()
        ),
    };
    steps.record("colour probe", &["color-probe.json"], finding, cx.progress);
    Ok(Probe { colouring, why })
}

/// Step 2: Δ and the platform overheads.
fn platform(cx: &Context, steps: &mut Steps) -> Result<Platform> {
    let params = cx.params;
    let out = cx.out();
    let options = BenchOptions {
        quick: true,
        out: Some(out.join("overheads")),
        seed: params.seed,
        ..BenchOptions::default()
    };
    let header = RunHeader::new("demo", &options, 5, cx.cpus.clone());
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
        cx.progress,
    );
    Ok(Platform { refill_ns, source })
}

/// Step 3: C^p of every body, measured; `None` when a stop came between two
/// bodies' profiles.
fn worst_cases(
    cx: &Context,
    steps: &mut Steps,
    probe: &Probe,
    platform: &Platform,
) -> Result<Option<Profiled>> {
    let params = cx.params;
    let out = cx.out();
    let iterations: Vec<u64> = task_set::TASKS
        .iter()
        .map(task_set::iterations_for)
        .collect();
    let cores = (cx.cpus.len() as u32).clamp(1, 4);
    let unmeasured = task_set::unmeasured(&iterations, cores, Nanos(platform.refill_ns));
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
    let (conditions, co_runners) = match (cx.cpus.len() > 1, probe.colouring) {
        (false, _) => (vec![Condition::Cold], CoRunnerChoice::Uncolored),
        (true, Colouring::Effective) => (vec![Condition::ColdCoRun], CoRunnerChoice::Colored),
        (true, _) => (vec![Condition::ColdCoRun], CoRunnerChoice::Uncolored),
    };
    let mut tables = Vec::new();
    let mut profile_files = vec!["tasks.toml".to_string()];
    for task in &task_set::TASKS {
        if cx.stopped() {
            return Ok(None);
        }
        let dir = format!("profile/{}", task.name);
        let profiled = wcet_profile::run(
            &wcet_profile::Params {
                common: BenchOptions {
                    quick: true,
                    out: Some(out.join(&dir)),
                    seed: params.seed,
                    color_bits: params.color_bits.clone(),
                    ..BenchOptions::default()
                },
                taskset: Some(tasks_path.clone()),
                task: Some(task.name.into()),
                no_fifo: !params.realtime,
                uncolored: !cx.coloured,
                preload: params.preload.clone(),
                conditions: conditions.clone(),
                co_runners,
                statistic: Statistic::Max,
                jobs: Some(JOBS_PER_LAUNCH),
                ..wcet_profile::Params::default()
            },
            cx.worker,
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
    measured_set.platform.overheads = platform.source.overheads;
    let files: Vec<&str> = profile_files.iter().map(String::as_str).collect();
    steps.record(
        "worst cases",
        &files,
        format!(
            "C (max over {}) = {}",
            condition_names(&conditions),
            measured_set
                .tasks
                .iter()
                .map(|t| format!("{} {}", t.name, t.wcet.worst()))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        cx.progress,
    );
    Ok(Some(Profiled {
        set: measured_set,
        conditions,
    }))
}

/// The conditions' names, comma-separated.
fn condition_names(conditions: &[Condition]) -> String {
    conditions
        .iter()
        .map(|c| c.name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Step 4: periods, plan, analysis.
fn plan_and_analysis(
    cx: &Context,
    steps: &mut Steps,
    mut measured_set: TaskSet,
    conditions: &[Condition],
) -> Result<Planned> {
    let out = cx.out();
    let (planned, analysis, scale, how) = plan_until_schedulable(&mut measured_set, &cx.cpus)?;
    write_file(
        &out.join("taskset.toml"),
        &tinct_core::format::to_toml(
            &measured_set,
            &[format!(
                "The demo's tasks with C^p measured here (max over {} jobs) and periods \
                 {scale} × C / share (`tinct demo`).",
                condition_names(conditions)
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
        cx.progress,
    );
    Ok(Planned {
        set: planned,
        analysis,
        scale,
        how,
        path: plan_path,
    })
}

/// Step 5: run the plan (the stall sentinel on, the colour finding for
/// attribution).
fn run_plan(cx: &Context, steps: &mut Steps, probe: &Probe, planned: &Planned) -> Result<Recorded> {
    let params = cx.params;
    let mut spec = RunSpec::from_plan(
        &planned.set,
        Some(&planned.analysis),
        &planned.path.display().to_string(),
        params.duration.0,
    )
    .map_err(rt_error)?;
    spec.color_bits_flag = params.color_bits.clone();
    let recorded = run_in_dir(
        &spec,
        Some(&planned.analysis),
        RunOptions {
            colouring: probe.colouring,
            sentinel: Some(SentinelOptions::default()),
            realtime: params.realtime,
            uncolored: !cx.coloured,
            supervise: true,
            ..RunOptions::default()
        },
        &cx.out().join("run"),
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
        cx.progress,
    );
    Ok(recorded)
}

/// The verdict: every task's observed response times against its bound.
fn verdict(
    cx: &Context,
    steps: &mut Steps,
    probe: Probe,
    platform: Platform,
    conditions: &[Condition],
    planned: &Planned,
    recorded: &Recorded,
) -> DemoVerdict {
    let summary = &recorded.summary;
    let tasks: Vec<TaskOutcome> = planned
        .set
        .tasks
        .iter()
        .zip(&summary.tasks)
        .zip(&planned.analysis.tasks)
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
                .get(tinct_verify::attribution::Cause::Unexplained),
        })
        .collect();
    let colouring = probe.colouring;
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
    DemoVerdict {
        steps: std::mem::take(&mut steps.done),
        colouring,
        colouring_why: probe.why,
        isolation_absent,
        coloured: cx.coloured,
        colours: cx.colours.clone(),
        conditions: conditions.iter().map(|c| c.name().to_string()).collect(),
        statistic: "max: the largest measured job (kim2013's WCET estimate); the profile \
                    has 40 jobs per point, where a high percentile is the maximum or just \
                    below it and an EVT fit is not supported"
            .into(),
        overheads: platform.source,
        period_scale: planned.scale,
        plan: planned.how.clone(),
        schedulable: planned.analysis.schedulable,
        tasks,
        late,
        unexplained: summary.unexplained,
        bound_met: late == 0,
        seconds: cx.begun.elapsed().as_secs_f64(),
        interrupted: cx.stopped(),
    }
}

/// A bad plan is bad input, a run directory that cannot be written an
/// output failure; anything else failed the measurement.
fn rt_error(e: tinct_rt::RtError) -> Error {
    match e {
        tinct_rt::RtError::Input(e) => Error::Input(e),
        tinct_rt::RtError::Colors(e) => e.into(),
        tinct_rt::RtError::Write { path, source } => Error::Write {
            path: path.into(),
            source,
        },
        other => Error::Measurement(other.to_string()),
    }
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
    fn the_runs_write_errors_stay_output_failures() {
        let e = rt_error(tinct_rt::RtError::Write {
            path: "run/jobs.csv".into(),
            source: std::io::Error::other("disk full"),
        });
        assert!(e.is_output(), "{e}");
        assert!(e.to_string().contains("run/jobs.csv"), "{e}");
    }
}
