//! Planning `tinct bench wcet-profile`: the parameters checked (conditions,
//! EVT options, CPUs), the task and its body, the p values and their
//! colours, the shim, the scheduling of the workers, and what the written
//! task set takes from the parameters (name, period, Δ).

use super::condition::Condition;
use super::launch;
use super::statistic::Statistic;
use super::{
    CoRunnerChoice, CoRunnerSetup, Params, ProfiledBody, ProfiledProgram, WorkerCommand, worker,
};
use crate::calibrate;
use crate::harness::RunHeader;
use crate::{Error, InputError, Result};
use std::path::PathBuf;
use tinct_core::model::{Kernel, Work};
use tinct_core::units::{Bytes, Nanos};
use tinct_report::stats::evt::{self, EvtOptions};
use tinct_rt::kernels::LINE_BYTES;

impl Params {
    /// The conditions to profile under, defaults applied.
    pub fn conditions(&self) -> Vec<Condition> {
        if self.conditions.is_empty() {
            Condition::DEFAULT.to_vec()
        } else {
            self.conditions.clone()
        }
    }

    /// The EVT options: the block size, the exceedances (with the one
    /// `--use pwcet:P` needs), the run's seed for the bootstrap.
    pub fn evt_options(&self) -> Result<EvtOptions> {
        let mut exceedances = if self.exceedances.is_empty() {
            vec![evt::DEFAULT_EXCEEDANCE]
        } else {
            self.exceedances.clone()
        };
        if let Some(p) = self.statistic.exceedance()
            && !exceedances.contains(&p)
        {
            exceedances.push(p);
        }
        if let Some(bad) = exceedances.iter().find(|p| !(**p > 0.0 && **p < 1.0)) {
            return Err(Error::option(
                "--exceedance",
                "probabilities strictly between 0 and 1",
                bad.to_string(),
            ));
        }
        let block_size = match self.block_size {
            Some(0) => {
                return Err(Error::option(
                    "--block-size",
                    "at least 1 job per block",
                    "0",
                ));
            }
            Some(n) => n,
            None => evt::DEFAULT_BLOCK_SIZE,
        };
        Ok(EvtOptions {
            block_size,
            exceedances,
            seed: self.common.seed,
            ..EvtOptions::default()
        })
    }
}

/// The parameters checked before anything runs (and before the bench pins
/// itself to the task's CPU).
pub(super) struct Checked {
    /// Launches per (p, condition).
    pub reps: u32,
    /// How the EVT fits are made.
    pub evt: EvtOptions,
    /// The CPUs used: the task's first, then the co-runners' (the task's
    /// alone without a co-run condition).
    pub cpus: Vec<u32>,
}

/// Checks the repetitions, the EVT options and the CPUs: the co-run
/// conditions need a CPU besides the task's.
pub(super) fn check(params: &Params) -> Result<Checked> {
    let options = &params.common;
    let reps = options.reps_or(2, 5)?;
    let evt = params.evt_options()?;
    let with_co_runners = params.conditions().iter().any(|c| c.co_runners());
    let cpus = options.cpus(1)?;
    if with_co_runners && cpus.len() < 2 {
        return Err(Error::option(
            "--cpus",
            "at least 2 CPUs: the co-run conditions need a CPU besides the task's for the \
             co-runners (or leave co-run out of --conditions)",
            tinct_sys::format_cpu_list(&cpus),
        ));
    }
    let cpus = if with_co_runners { cpus } else { vec![cpus[0]] };
    Ok(Checked { reps, evt, cpus })
}

/// What a run measures.
pub struct Plan {
    /// Bench, options (reps, seed), machine: the result's header.
    pub header: RunHeader,
    /// How the EVT fits are made.
    pub evt: EvtOptions,
    /// The statistic that becomes C^p.
    pub statistic: Statistic,
    /// The task's name in the written task set.
    pub name: String,
    /// T_i of the written task when given (the parameter, else the input
    /// task's); else derived from the table.
    pub period: Option<Nanos>,
    /// Δ for the written task set when given, and where it came from;
    /// else measured.
    pub refill: Option<(Nanos, String)>,
    /// Measured jobs per worker launch.
    pub jobs: u32,
    /// The CPU every worker runs on.
    pub cpu: u32,
    /// N_P.
    pub partitions: u32,
    /// Page colours of the LLC (uncoloured: one per partition, nominal).
    pub colors: u32,
    /// The colours' physical address bits, handed to the shim (empty when
    /// uncoloured).
    pub color_bits: Vec<u32>,
    /// Those bits and their source in words (`None` when uncoloured).
    pub color_source: Option<String>,
    /// The p values, ascending, and the colours of partitions 1..=p for each.
    pub ps: Vec<u32>,
    pub color_sets: Vec<Vec<u32>>,
    /// For each p, the colours of the partitions the task does not use
    /// (p + 1..=N_P): where coloured co-runners live.
    pub other_color_sets: Vec<Vec<u32>>,
    /// The conditions, in the order asked.
    pub conditions: Vec<Condition>,
    /// The co-runners of the `co-run` conditions (`None` without them).
    pub co_runners: Option<CoRunnerSetup>,
    pub body: ProfiledBody,
    /// The shim (`None`: uncoloured).
    pub preload: Option<PathBuf>,
    /// SCHED_FIFO priority of the workers, when allowed.
    pub fifo: Option<u8>,
}

/// Resolves the body, the p values and the shim (the parameters
/// [`check`]ed; on the task's CPU: a `target` body is calibrated here).
pub(super) fn plan(params: &Params, worker: &WorkerCommand, checked: Checked) -> Result<Plan> {
    let options = &params.common;
    let header = RunHeader::new("wcet-profile", options, checked.reps, checked.cpus);
    let source = load_task(params)?;
    let jobs = match params.jobs {
        Some(0) => {
            return Err(Error::option("--jobs", "at least 1", "0"));
        }
        Some(n) => n,
        None if options.quick => 5,
        None => 100,
    };
    let conditions = params.conditions();
    let partitions = params
        .partitions
        .or(source.as_ref().map(|s| s.partitions))
        .unwrap_or(calibrate::DEFAULT_PARTITIONS);
    // Colours only when the task is coloured: `--uncolored` works on a
    // machine whose colour bits are unknown.
    let resolved = if params.uncolored {
        None
    } else {
        let task_set = source
            .as_ref()
            .and_then(|s| s.color_bits.as_ref())
            .map(|(file, bits)| (file.as_path(), bits.as_slice()));
        Some(options.colors_with(task_set)?)
    };
    let (colors, color_bits) = match &resolved {
        Some(resolved) => (
            u32::try_from(resolved.colors()).map_err(|_| {
                Error::option(
                    "--color-bits",
                    "at most 2^32 colours",
                    format!("{} colours ({})", resolved.colors(), resolved.describe()),
                )
            })?,
            resolved.bits.clone(),
        ),
        None => (partitions, Vec::new()),
    };
    let color_source = resolved.as_ref().map(|r| r.describe());
    let split = tinct_mem::PartitionColors::even(colors, partitions).map_err(|e| {
        Error::option(
            "--partitions",
            format!("a partition count that splits the {colors} colours evenly"),
            e.to_string(),
        )
    })?;
    let ps = p_values(params.p_list.as_deref(), partitions, options.quick)?;
    let body = resolve_body(params, source.as_ref())?;
    let preload = if params.uncolored {
        None
    } else {
        launch::require_frame_numbers()?;
        Some(launch::find_preload(params, worker)?)
    };
    if let (Some(program), Some(_)) = (&body.program, &preload)
        && let Some(ignored) =
            tinct_rt::loader::preload_ignored(std::ffi::OsStr::new(&program.command[0]))
    {
        let (file, field) = match &params.taskset {
            Some(path) => (
                path.display().to_string(),
                format!("task '{}' body.command", body_task(params)),
            ),
            None => (String::new(), "--command".to_string()),
        };
        return Err(Error::Input(InputError::new(
            file,
            field,
            "a dynamically linked program, whose heap the shim can serve from the colours of \
             p partitions",
            format!(
                "{ignored} (or profile it with --uncolored: every p then sees the whole cache)"
            ),
        )));
    }
    let fifo = (!params.no_fifo
        && tinct_sys::privilege::Privileges::read(&tinct_sys::SysRoot::live())
            .is_ok_and(|p| p.is_root()))
    .then_some(crate::crpd::DEFAULT_FIFO_PRIORITY);
    let colors_of = |partitions: std::ops::RangeInclusive<u32>| {
        split
            .colors_of_all(&partitions.collect::<Vec<_>>())
            .map_err(|e| Error::option("--p", "partitions within 1..=N_P", e.to_string()))
    };
    let color_sets: Vec<Vec<u32>> = ps
        .iter()
        .map(|&p| colors_of(1..=p))
        .collect::<Result<_>>()?;
    let other_color_sets: Vec<Vec<u32>> = ps
        .iter()
        .map(|&p| colors_of(p + 1..=partitions))
        .collect::<Result<_>>()?;
    let co_runners = if conditions.iter().any(|c| c.co_runners()) {
        Some(co_runner_setup(params, &header, preload.is_some())?)
    } else {
        None
    };
    let name = params
        .name
        .clone()
        .or(params.task.clone())
        .or(source.as_ref().map(|s| s.name.clone()))
        .unwrap_or_else(|| "profiled".into());
    let period = params.period.or(source.as_ref().map(|s| s.period));
    let refill = given_refill(params, source.as_ref());
    Ok(Plan {
        evt: checked.evt,
        statistic: params.statistic,
        name,
        period,
        refill,
        jobs,
        cpu: header.cpus[0],
        header,
        partitions,
        colors,
        color_bits,
        color_source,
        ps,
        color_sets,
        other_color_sets,
        conditions,
        co_runners,
        body,
        preload,
        fifo,
    })
}

/// Δ for the written task set when one is given: the parameter or the
/// input task set's.
fn given_refill(params: &Params, source: Option<&TaskSource>) -> Option<(Nanos, String)> {
    if let Some(refill) = params.refill {
        return Some((refill, "--refill".into()));
    }
    source
        .filter(|s| s.refill.0 > 0)
        .map(|s| (s.refill, "the input task set".into()))
}

/// What comes from `--taskset` / `--task`.
pub(super) struct TaskSource {
    pub name: String,
    /// Its program, when its body is one (resolved).
    pub program: Option<ProfiledProgram>,
    pub body: Option<tinct_core::model::Body>,
    pub memory: Bytes,
    pub period: Nanos,
    pub partitions: u32,
    pub refill: Nanos,
    /// The task set's file and its `[platform] color_bits`, if it has them.
    pub color_bits: Option<(std::path::PathBuf, Vec<u32>)>,
}

fn load_task(params: &Params) -> Result<Option<TaskSource>> {
    let (Some(path), Some(name)) = (&params.taskset, &params.task) else {
        return Ok(None);
    };
    let set = tinct_core::format::load(path)?;
    let task = set.tasks.iter().find(|t| &t.name == name).ok_or_else(|| {
        let names: Vec<&str> = set.tasks.iter().map(|t| t.name.as_str()).collect();
        Error::Input(InputError::new(
            path.display().to_string(),
            "--task",
            format!("one of the tasks {}", names.join(", ")),
            format!("`{name}`"),
        ))
    })?;
    let program = match &task.program {
        None => None,
        Some(program) => Some(
            tinct_rt::plan::program_spec(program, &path.display().to_string())
                .map(|spec| ProfiledProgram {
                    command: spec.command,
                    protocol: spec.protocol,
                    mmap: spec.mmap,
                })
                .map_err(|found| {
                    Error::Input(InputError::new(
                        path.display().to_string(),
                        format!("task '{name}' body.command"),
                        "an executable program (a path with a `/` is taken from the task set's \
                         directory, a name from PATH)",
                        found,
                    ))
                })?,
        ),
    };
    Ok(Some(TaskSource {
        program,
        name: task.name.clone(),
        body: task.body.clone(),
        memory: task.memory,
        period: task.period,
        partitions: set.platform.partitions,
        refill: set.platform.refill,
        color_bits: set
            .platform
            .color_bits
            .clone()
            .map(|bits| (path.clone(), bits)),
    }))
}

pub(super) fn input<T>(
    what: &str,
    expected: &str,
    result: std::result::Result<T, impl std::fmt::Display>,
) -> Result<T> {
    result.map_err(|e| Error::option(what, expected, e.to_string()))
}

/// Resolves the body to fixed iterations (a `target` is calibrated once,
/// with the whole cache, on this thread).
pub(super) fn resolve_body(params: &Params, source: Option<&TaskSource>) -> Result<ProfiledBody> {
    if let Some(program) = program_of(params, source)? {
        // Its memory is its own: M_i sizes the shim's pool.
        return Ok(ProfiledBody {
            kernel: PROGRAM_KERNEL.into(),
            working_set_bytes: source
                .map_or(params.working_set.map_or(1 << 20, |w| w.0), |s| s.memory.0),
            memory_iterations: 0,
            compute_iterations: 0,
            program: Some(program),
        });
    }
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
            let kernel = worker::kernel_by_name(&params.kernel)?;
            let working_set = match source {
                Some(s) => s.memory.0,
                None => match params.working_set {
                    Some(size) => size.0,
                    None if params.common.quick => 1 << 20,
                    None => 4 << 20,
                },
            };
            let work = match (params.target, params.iterations) {
                (Some(target), _) => Some(Work::Target(target)),
                (None, Some(n)) => Some(Work::Iterations(n)),
                (None, None) => None,
            };
            (kernel, working_set, work, params.memory_percent)
        }
    };
    if kernel != Kernel::Compute && working_set < LINE_BYTES as u64 {
        return Err(Error::option(
            "--working-set",
            format!(
                "at least one cache line ({LINE_BYTES} B) for kernel `{}`",
                kernel.name()
            ),
            format!("{working_set} B"),
        ));
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
        program: None,
    })
}

/// The task named by `--task` (for messages).
fn body_task(params: &Params) -> &str {
    params.task.as_deref().unwrap_or("")
}

/// The `kernel` name a profiled program goes by in the outputs.
pub const PROGRAM_KERNEL: &str = "program";

/// The program to profile: the task's (`--taskset`/`--task`) or
/// `--command`'s, resolved as `tinct run` resolves it (a path with a `/`
/// from the current directory, a name through PATH).
fn program_of(params: &Params, source: Option<&TaskSource>) -> Result<Option<ProfiledProgram>> {
    if let Some(program) = source.and_then(|s| s.program.clone()) {
        return Ok(Some(program));
    }
    if params.command.is_empty() {
        return Ok(None);
    }
    let body = tinct_core::model::ProgramBody {
        command: params.command.clone(),
        protocol: params.protocol,
        mmap: false,
    };
    tinct_rt::plan::program_spec(&body, "")
        .map(|spec| {
            Some(ProfiledProgram {
                command: spec.command,
                protocol: spec.protocol,
                mmap: false,
            })
        })
        .map_err(|found| {
            Error::option(
                "--command",
                "an executable program (a path, or a name in PATH)",
                found,
            )
        })
}

/// The p values to profile.
pub fn p_values(list: Option<&str>, partitions: u32, quick: bool) -> Result<Vec<u32>> {
    let mut ps = match list {
        Some(text) => input("--p", "a list like 1-4,8", tinct_sys::parse_cpu_list(text))?,
        None if quick => vec![1, partitions / 4, partitions / 2, partitions],
        None => (1..=partitions).collect(),
    };
    ps.retain(|&p| p >= 1);
    ps.sort_unstable();
    ps.dedup();
    if let Some(&bad) = ps.iter().find(|&&p| p > partitions) {
        return Err(Error::option(
            "--p",
            format!("partition counts within 1..={partitions} (N_P)"),
            bad.to_string(),
        ));
    }
    if ps.is_empty() {
        return Err(Error::option("--p", "at least one partition count", "none"));
    }
    Ok(ps)
}

/// Where the co-runners run and whether they are coloured: coloured only
/// when the task is, and the colour probe (or `--co-runners colored`) says
/// colouring partitions the last-level cache.
fn co_runner_setup(
    params: &Params,
    header: &RunHeader,
    task_colored: bool,
) -> Result<CoRunnerSetup> {
    // `check` made sure there is at least one CPU besides the task's.
    let cpus: Vec<u32> = header.cpus.iter().skip(1).copied().collect();
    let llc_bytes = header.machine.llc().map_or(8 << 20, |c| c.size_bytes);
    let (colored, reason, probe) = match (params.co_runners, task_colored) {
        (_, false) => (
            false,
            "uncoloured: the task itself is uncoloured (--uncolored)".to_string(),
            None,
        ),
        (CoRunnerChoice::Uncolored, true) => (
            false,
            "uncoloured (--co-runners uncolored)".to_string(),
            None,
        ),
        (CoRunnerChoice::Colored, true) => (
            true,
            "coloured into the partitions the task does not use (--co-runners colored)".to_string(),
            None,
        ),
        (CoRunnerChoice::Auto, true) => probe_colouring(params.common.quick),
    };
    Ok(CoRunnerSetup {
        cpus,
        colored,
        reason,
        color_probe: probe,
        uncolored_bytes_per_cpu: (llc_bytes * 2).max(16 << 20),
        llc_bytes,
    })
}

/// Runs the colour probe of tinct-sys on the last-level cache.
fn probe_colouring(quick: bool) -> (bool, String, Option<String>) {
    let options = tinct_sys::color_probe::ProbeOptions {
        rounds: if quick { 5 } else { 11 },
        ..Default::default()
    };
    match tinct_sys::color_probe::probe_colors(options) {
        Ok(report) => match report.last_level() {
            Some(level) if level.verdict == tinct_sys::color_probe::Verdict::Effective => (
                true,
                format!(
                    "coloured into the partitions the task does not use: the colour probe finds colouring effective ({})",
                    level.explanation
                ),
                Some(level.explanation.clone()),
            ),
            Some(level) => (
                false,
                format!(
                    "uncoloured: the colour probe finds colouring {} here, so colours would not keep them out of the task's cache ({})",
                    level.verdict.label(),
                    level.explanation
                ),
                Some(level.explanation.clone()),
            ),
            None => (
                false,
                "uncoloured: the colour probe found no colourable last-level cache".into(),
                None,
            ),
        },
        Err(e) => (
            false,
            format!("uncoloured: the colour probe failed ({e})"),
            None,
        ),
    }
}

/// What a wcet-profile run starts from: the parameters and how to start
/// the profile's workers.
pub struct Input {
    pub params: Params,
    pub worker: WorkerCommand,
}

impl Input {
    /// The run's input, copied from the caller's.
    pub fn new(params: &Params, worker: &WorkerCommand) -> Self {
        Self {
            params: params.clone(),
            worker: worker.clone(),
        }
    }
}

/// A plan, measured from the task's CPU: the measuring thread stays pinned
/// there until the report is assembled (a `target` body is calibrated, and
/// Δ measured, where the task runs).
pub struct PinnedPlan {
    pub _pin: crate::harness::pin::PinGuard,
    pub plan: Plan,
    pub worker: WorkerCommand,
}

impl crate::harness::Plan for PinnedPlan {
    type Params = Input;
    type Measured = super::measure::Measured;

    fn plan(input: &Input) -> Result<PinnedPlan> {
        let checked = check(&input.params)?;
        let pin = crate::harness::pin::PinGuard::pin(checked.cpus[0])?;
        Ok(PinnedPlan {
            plan: plan(&input.params, &input.worker, checked)?,
            _pin: pin,
            worker: input.worker.clone(),
        })
    }

    fn measure(&self, progress: &dyn crate::harness::Progress) -> Result<super::measure::Measured> {
        super::measure::measure(&self.plan, &self.worker, progress)
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
            Err(Error::Input(_))
        ));
        assert!(matches!(
            p_values(Some("x"), 32, false),
            Err(Error::Input(_))
        ));
    }
}
