//! A planned task set as a run: [`RunSpec::from_plan`] turns the tasks of a
//! plan (cores, priorities and partitions assigned, as `tinct plan` writes)
//! and their analysis into periodic threads, and [`load_plan`] does the
//! same from a file.

use crate::critical_sections::Synchronization;
use crate::kernels::memory_percent;
use crate::limits::{MAX_TIME_NS, MIN_WORKING_SET_BYTES};
use crate::pipeline::{CacheNeighbours, Placement, PlacementPolicy};
use crate::spec::{
    BlockingShows, Bound, ChannelSpec, DeadlineParams, OWN_TIMER, Phase, Policy, ProgramSpec,
    RunSpec, Scheduling, Step, TOP_TASK_PRIORITY, TaskSpec,
};
use crate::{Result, RtError};
use std::path::Path;
use tinct_base::InputError;
use tinct_core::analysis::Analysis;
use tinct_core::limits::Limit;
use tinct_core::model::{Kernel, ProgramBody, Task, TaskSet, Trigger, Work};
use tinct_core::units::{Bytes, Nanos};

/// Each task's rank among the tasks of its core (1: the highest), from the
/// set's `ranks`; tasks without a core rank among those without one.
fn ranks_per_core(set: &TaskSet, ranks: &[u32]) -> Vec<u32> {
    let mut order: Vec<usize> = (0..set.tasks.len()).collect();
    order.sort_by_key(|&i| (set.tasks[i].core, ranks[i]));
    let mut out = vec![0; set.tasks.len()];
    let mut previous: Option<Option<u32>> = None;
    let mut rank = 0u32;
    for i in order {
        let core = set.tasks[i].core;
        rank = if previous == Some(core) { rank + 1 } else { 1 };
        previous = Some(core);
        out[i] = rank;
    }
    out
}

impl RunSpec {
    /// The run of a planned task set: one periodic thread per task, pinned
    /// to its core, SCHED_FIFO by rank (rank 1 → [`TOP_TASK_PRIORITY`], then
    /// one less per rank, at least 1), released with an absolute timer of
    /// period T_i and deadline D_i, all together at one instant as in kim2013
    /// Section IV. A task without a `body` runs `compute` calibrated to its
    /// C at |S(i)|. With `analysis` (of `set`, tasks in file order), every
    /// task carries its bound: C, and the WCRT with (kim2013 Eq. 2) and
    /// without cache interference.
    ///
    /// Bad input, naming `source`, the task's line and the field: a task
    /// without a core, a memory kernel whose working set is smaller than
    /// [`MIN_WORKING_SET_BYTES`], anything beyond [`crate::limits`].
    pub fn from_plan(
        set: &TaskSet,
        analysis: Option<&Analysis>,
        source: &str,
        duration_ns: u64,
    ) -> Result<RunSpec> {
        RunSpec::from_placed(set, analysis, source, duration_ns, PlacementPolicy::Static)
    }

    /// [`RunSpec::from_plan`] under a placement `policy` (see
    /// [`crate::pipeline`]): `static` pins each task to its core as the plan
    /// says; `os` and `affinity` pin nothing and need no cores (`affinity`
    /// moves each data-triggered job next to its producer's cache, with the
    /// neighbours of this machine's topology). The set's affinity graph
    /// becomes one-packet buffers: a producer's job ends by handing its
    /// packet over on each outgoing edge (replacing an untaken one, counted
    /// lost), a data-triggered task's job is released when every incoming
    /// edge was handed over.
    pub fn from_placed(
        set: &TaskSet,
        analysis: Option<&Analysis>,
        source: &str,
        duration_ns: u64,
        policy: PlacementPolicy,
    ) -> Result<RunSpec> {
        let ranks = set.ranks();
        let core_ranks = ranks_per_core(set, &ranks);
        let blocking_shows = BlockingShows::of_protocols(
            set.resources
                .iter()
                .map(|r| r.protocol == tinct_core::model::Protocol::Pcp),
        );
        let mut tasks = Vec::with_capacity(set.tasks.len());
        for (i, task) in set.tasks.iter().enumerate() {
            let line = set.task_lines.get(i).copied();
            let bad = |field: &str, expected: String, found: String| {
                RtError::Input(InputError {
                    file: source.to_string(),
                    line,
                    field: format!("task '{}' field `{field}`", task.name),
                    expected,
                    found,
                })
            };
            let reservation = task.is_deadline();
            if reservation && policy != PlacementPolicy::Static {
                return Err(bad(
                    "policy",
                    "\"fifo\" under `--placement os` or `affinity`: a SCHED_DEADLINE reservation \
                     runs on its core (partitioned EDF, as `tinct analyze` checks it)"
                        .into(),
                    "\"deadline\"".into(),
                ));
            }
            let cpus = match (policy, task.core) {
                (PlacementPolicy::Static, Some(core)) => Some(vec![core]),
                (PlacementPolicy::Static, None) => {
                    return Err(bad(
                        "core",
                        "a core for every task (`tinct plan` assigns cores and partitions; \
                         `--placement os` or `affinity` runs a set without cores)"
                            .into(),
                        "no core".into(),
                    ));
                }
                (PlacementPolicy::Os | PlacementPolicy::Affinity, _) => None,
            };
            // A period beyond the run's limits is refused here, at its own
            // line: the deadline is checked later (`check_limits`), and
            // when it is implicit it is the period, which is what to fix.
            if task.period.0 > MAX_TIME_NS {
                return Err(RtError::Input(InputError {
                    file: source.to_string(),
                    line: set.period_lines.get(i).copied().or(line),
                    field: match task.trigger {
                        Trigger::Timer => format!("task '{}' field `period`", task.name),
                        // It has no `period` key: the period is its producers'.
                        Trigger::Data => format!(
                            "task '{}' field `period` (inherited from its producers: \
                             data-triggered)",
                            task.name
                        ),
                    },
                    expected: Limit::RunTime.expected(),
                    found: task.period.to_string(),
                }));
            }
            let body = Body::of(task);
            if body.kernel != Kernel::Compute && body.working_set < MIN_WORKING_SET_BYTES {
                return Err(bad(
                    body.working_set_field,
                    Limit::WorkingSet(body.kernel).expected(),
                    Bytes(body.working_set).to_string(),
                ));
            }
            // SCHED_FIFO TOP_TASK_PRIORITY, TOP_TASK_PRIORITY − 1, … by rank
            // among the tasks that share the task's CPU (its core's, pinned;
            // every task's, unpinned): the analysis' total order needs each
            // its own level there, so a pinned core with more tasks than
            // levels is refused rather than tied (31 of 120 tasks
            // once shared priority 1).
            let rank = if policy == PlacementPolicy::Static {
                core_ranks[i]
            } else {
                ranks[i]
            };
            if policy == PlacementPolicy::Static && rank > u32::from(TOP_TASK_PRIORITY) {
                return Err(bad(
                    "core",
                    format!(
                        "at most {TOP_TASK_PRIORITY} tasks on one core: SCHED_FIFO \
                         {TOP_TASK_PRIORITY}..1 gives each its own priority, as the analysis' \
                         order of priorities needs"
                    ),
                    format!(
                        "task number {rank} on core {} by priority",
                        task.core.unwrap_or(0)
                    ),
                ));
            }
            let fifo = u32::from(TOP_TASK_PRIORITY)
                .saturating_sub(rank.saturating_sub(1))
                .max(1);
            let program = match &task.program {
                None => None,
                Some(program) => Some(program_spec(program, source).map_err(|found| {
                    bad(
                        "body.command",
                        "an executable program (a path with a `/` is taken from the task \
                         set's directory, a name from PATH)"
                            .into(),
                        found,
                    )
                })?),
            };
            let kernel = match program {
                Some(_) => Step::Program,
                None => Step::Kernel {
                    kernel: body.kernel,
                    memory_percent: body.memory_percent,
                    work: body.work,
                },
            };
            let edges = set.edges.iter().enumerate();
            let mut steps: Vec<Step> = edges
                .clone()
                .filter(|(_, e)| e.to == i && task.trigger == Trigger::Data)
                .map(|(channel, _)| Step::Receive { channel })
                .collect();
            steps.push(kernel);
            steps.extend(
                edges
                    .filter(|(_, e)| e.from == i)
                    .map(|(channel, _)| Step::Send { channel }),
            );
            if task.trigger == Trigger::Timer {
                steps.push(Step::Timer {
                    timer: OWN_TIMER,
                    period_ns: task.period.0,
                });
            }
            let scheduling = if reservation {
                reservation_scheduling(set, i, analysis.and_then(|a| a.tasks.get(i)))
                    .map_err(|(field, expected, found)| bad(field, expected, found))?
            } else {
                // At most TOP_TASK_PRIORITY, so it fits a u8.
                Scheduling::of(Policy::Fifo(
                    u8::try_from(fifo).unwrap_or(TOP_TASK_PRIORITY),
                ))
            };
            tasks.push(TaskSpec {
                name: task.name.clone(),
                cpus,
                scheduling,
                deadline_ns: Some(task.deadline.0),
                offset_ns: 0,
                jitter_ns: 0,
                phases: vec![Phase::new("main", None, steps)],
                loops: None,
                // A program's memory is its own (not a tinct working set).
                working_set: if body.kernel == Kernel::Compute || program.is_some() {
                    0
                } else {
                    body.working_set
                },
                partitions: task.partitions.map(|s| s.to_vec()).unwrap_or_default(),
                taskgroup: None,
                forked_by: None,
                bound: analysis.and_then(|a| a.tasks.get(i)).map(|t| Bound {
                    wcet_ns: t.wcet_ns,
                    wcrt_ns: t.wcrt_ns,
                    wcrt_nocint_ns: t.wcrt_nocint_ns,
                    blocking_ns: t.blocking_ns,
                    blocking_shows,
                }),
                program,
                line,
            });
        }
        let mut spec = RunSpec {
            platform_partitions: Some(set.platform.partitions),
            color_bits: set.platform.color_bits.clone(),
            placement: match policy {
                PlacementPolicy::Affinity => {
                    Placement::Affinity(CacheNeighbours::of_this_machine()?)
                }
                PlacementPolicy::Os | PlacementPolicy::Static => Placement::Pinned,
            },
            ..RunSpec::new(source, tasks, duration_ns)
        };
        spec.resources.channels = set
            .edges
            .iter()
            .map(|e| ChannelSpec {
                name: format!("{}->{}", set.tasks[e.from].name, set.tasks[e.to].name),
                bytes: e.buffer.0,
                blocking: false,
            })
            .collect();
        spec.check_limits()?;
        Ok(spec)
    }
}

/// A program body ready to start: its program resolved as `execvp` would
/// (a path with a `/` from the directory of the task-set file `source`, a
/// name through `PATH`) and checked to be executable; the path it was
/// looked for at when it is not.
pub fn program_spec(
    program: &ProgramBody,
    source: &str,
) -> std::result::Result<ProgramSpec, String> {
    let (name, arguments) = program
        .command
        .split_first()
        .ok_or_else(|| "no program".to_string())?;
    let written = std::path::Path::new(name);
    let path = if name.contains('/') && written.is_relative() {
        let directory = std::path::Path::new(source)
            .parent()
            .unwrap_or(std::path::Path::new(""));
        // Absolute: a path still, whatever the directory (`./x` joined
        // to an empty one would be the bare name `x`, a name for PATH).
        std::path::absolute(directory.join(written)).map_err(|e| format!("\"{name}\": {e}"))?
    } else {
        crate::loader::resolve(
            std::ffi::OsStr::new(name),
            std::env::var_os("PATH").as_deref(),
        )
        .ok_or_else(|| format!("\"{name}\": no such program in PATH"))?
    };
    if !tinct_sys::program::is_executable(&path) {
        return Err(format!(
            "\"{}\": {}",
            path.display(),
            if path.exists() {
                "not an executable file"
            } else {
                "no such file"
            }
        ));
    }
    let mut command = vec![path.to_string_lossy().into_owned()];
    command.extend(arguments.iter().cloned());
    Ok(ProgramSpec {
        command,
        protocol: program.protocol,
        stderr: None,
        frames: None,
        mmap: program.mmap,
        env: Vec::new(),
    })
}

/// What one job of a planned task does.
struct Body {
    kernel: Kernel,
    working_set: u64,
    /// Where the working set came from: `body.working_set`, or `memory` (M_i).
    working_set_field: &'static str,
    work: Work,
    memory_percent: u8,
}

impl Body {
    fn of(task: &Task) -> Body {
        let c = task.effective_wcet().unwrap_or(task.wcet.worst());
        match &task.body {
            Some(body) => Body {
                kernel: body.kernel,
                working_set: body.working_set.unwrap_or(task.memory).0,
                working_set_field: if body.working_set.is_some() {
                    "body.working_set"
                } else {
                    "memory"
                },
                work: body.work.unwrap_or(Work::Target(c)),
                memory_percent: memory_percent(body.kernel, body.memory_percent),
            },
            None => Body {
                kernel: Kernel::Compute,
                working_set: 0,
                working_set_field: "memory",
                work: Work::Target(c),
                memory_percent: 0,
            },
        }
    }
}

/// The SCHED_DEADLINE parameters of reservation `index` of `set`: the
/// runtime the analysis gives (`report`), or without an analysis the
/// file's `runtime`; the kernel deadline D − J; the period T. Refused
/// (field, expected, found) when J reaches D, when there is no runtime, or
/// when it exceeds the kernel deadline, which the kernel would refuse.
fn reservation_scheduling(
    set: &TaskSet,
    index: usize,
    report: Option<&tinct_core::analysis::TaskReport>,
) -> std::result::Result<Scheduling, (&'static str, String, String)> {
    let task = &set.tasks[index];
    // D − J, J the declared jitter and the platform's release latency (what
    // the analysis gives as `kernel_deadline_ns`, computed here without it).
    let jitter = task
        .jitter
        .0
        .saturating_add(set.platform.overheads.release_latency.0);
    let Some(deadline) = task.deadline.0.checked_sub(jitter).filter(|&d| d > 0) else {
        return Err((
            "jitter",
            format!(
                "a release jitter (with the platform's release latency) below the deadline {}: \
                 the reservation's kernel deadline is D − J",
                task.deadline
            ),
            Nanos(jitter).to_string(),
        ));
    };
    let runtime = report
        .and_then(|r| r.runtime_ns)
        .or(task.runtime.map(|r| r.0))
        .ok_or_else(|| {
            (
                "runtime",
                "a runtime: the analysis derives it, but it refused this set (see `tinct \
                 analyze`), so the file must give one"
                    .to_string(),
                "none".to_string(),
            )
        })?;
    if runtime > deadline {
        return Err((
            "runtime",
            format!(
                "a runtime within the kernel deadline {} (D less the release jitter and \
                 latency): sched_setattr refuses more",
                Nanos(deadline)
            ),
            Nanos(runtime).to_string(),
        ));
    }
    Ok(Scheduling {
        deadline: Some(DeadlineParams {
            runtime_ns: runtime,
            deadline_ns: deadline,
            period_ns: task.period.0,
        }),
        ..Scheduling::of(Policy::Deadline)
    })
}

/// Reads a planned task-set file, analyzes it (kim2013 Eq. 1-3, for the
/// bounds shown next to what is observed) and returns its run of
/// `duration_ns` ([`RunSpec::from_plan`]) on this machine. Bad input with
/// the file's line: a file that does not read or validate, and a task on a
/// core this process may not run on (a plan for another machine). A set the
/// analysis cannot take runs without bounds.
pub fn load_plan(path: &Path, duration_ns: u64) -> Result<RunSpec> {
    load_analysed_plan(path, duration_ns).map(|(spec, _)| spec)
}

/// [`load_plan`], and the analysis the bounds came from (`None` for a set
/// the analysis cannot take), for the run directory's `analysis.json`.
pub fn load_analysed_plan(path: &Path, duration_ns: u64) -> Result<(RunSpec, Option<Analysis>)> {
    load_placed_plan(path, duration_ns, PlacementPolicy::Static).map(|(spec, a)| (spec, a.ok()))
}

/// [`load_analysed_plan`] under a placement `policy`
/// ([`RunSpec::from_placed`]), with the set's resources, critical sections
/// and release jitter ([`Synchronization::of_set`]); the analysis, or why
/// the analysis refuses the set (located as `tinct analyze` says it).
pub fn load_placed_plan(
    path: &Path,
    duration_ns: u64,
    policy: PlacementPolicy,
) -> Result<(RunSpec, std::result::Result<Analysis, String>)> {
    let set = tinct_core::format::load(path)?;
    let source = path.display().to_string();
    let analysis =
        tinct_core::analysis::analyze(&set).map_err(|e| e.input_error(&source, &set).to_string());
    let spec = RunSpec::from_placed(&set, analysis.as_ref().ok(), &source, duration_ns, policy)?
        .with_synchronization(&Synchronization::of_set(&set))?;
    let allowed = tinct_sys::sched::affinity()?;
    if let Some(task) = spec
        .tasks
        .iter()
        .find(|t| t.cpus.iter().flatten().any(|cpu| !allowed.contains(cpu)))
    {
        return Err(RtError::Input(InputError {
            file: source,
            line: task.line,
            field: format!("task '{}' field `core`", task.name),
            expected: format!(
                "a CPU this process may run on ({}); re-plan for this machine with `tinct plan`",
                tinct_sys::format_cpu_list(&allowed)
            ),
            found: format!(
                "core {}",
                task.cpus
                    .as_ref()
                    .and_then(|c| c.first())
                    .copied()
                    .unwrap_or(0)
            ),
        }));
    }
    Ok((spec, analysis))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{Step, TOP_TASK_PRIORITY};
    use tinct_core::units::Nanos;

    const SET: &str = include_str!("../tests/fixtures/placed_plan.toml");

    fn parse(text: &str) -> TaskSet {
        tinct_core::format::parse(text, "t.toml", tinct_core::format::Syntax::Toml).unwrap()
    }

    fn plan(text: &str) -> Result<RunSpec> {
        let set = parse(text);
        let analysis = tinct_core::analysis::analyze(&set).ok();
        RunSpec::from_plan(&set, analysis.as_ref(), "t.toml", 1_000_000_000)
    }

    fn refused(text: &str) -> String {
        match plan(text) {
            Err(e) => e.to_string(),
            Ok(spec) => panic!("accepted: {spec:?}"),
        }
    }

    /// `n` tasks with distinct periods (priorities by rate), alternately on
    /// `cores` cores.
    fn many(n: usize, cores: u32) -> String {
        let mut text = format!(
            "[platform]\ncores = {cores}\npartitions = 4\nmemory = \"64MiB\"\nrefill = \"0ns\"\n"
        );
        for i in 0..n {
            text.push_str(&format!(
                "\n[[task]]\nname = \"t{i}\"\nperiod = \"{}ms\"\nmemory = \"1KiB\"\n\
                 wcet = \"1us\"\ncore = {}\n",
                10 + i,
                i as u32 % cores
            ));
        }
        text
    }

    /// SCHED_FIFO priorities are given per core, so 120 tasks on
    /// two cores each have their own level there (31 once shared level 1);
    /// more tasks on one core than levels are refused, not tied.
    #[test]
    fn each_task_has_its_own_fifo_priority_on_its_core() {
        let spec = plan(&many(120, 2)).unwrap();
        for core in 0..2u32 {
            let mut levels: Vec<u8> = spec
                .tasks
                .iter()
                .filter(|t| t.cpus.as_deref() == Some(&[core][..]))
                .map(|t| match t.scheduling.policy {
                    Policy::Fifo(p) => p,
                    other => panic!("{other:?}"),
                })
                .collect();
            assert_eq!(levels.len(), 60);
            let count = levels.len();
            levels.sort_unstable();
            levels.dedup();
            assert_eq!(levels.len(), count, "core {core}: tied priorities");
        }
        let e = refused(&many(usize::from(TOP_TASK_PRIORITY) + 1, 1));
        assert!(
            e.contains(&format!("at most {TOP_TASK_PRIORITY} tasks on one core"))
                && e.contains("field `core`"),
            "{e}"
        );
    }

    /// A period beyond the run's limits is named as `period`, at its line,
    /// whether the deadline is implicit (it is the period) or written.
    #[test]
    fn a_period_beyond_the_limit_is_refused_at_its_line() {
        let long = SET.replace("period = \"200ms\"", "period = \"34560000s\"");
        let implicit = long.replace("deadline = \"150ms\"\n", "");
        let e = refused(&implicit);
        assert!(
            e.contains("t.toml:19: task 'slow' field `period`")
                && e.contains(&Limit::RunTime.expected())
                && e.contains("found 34560000s"),
            "{e}"
        );
        let e = refused(&long);
        assert!(e.contains("t.toml:19: task 'slow' field `period`"), "{e}");
        // A data-triggered consumer listed before its producer has no
        // `period` key: it is refused at its table's line, saying where its
        // period came from.
        let consumer_first = long.replacen(
            "[[task]]\nname = \"fast\"",
            "[[task]]\nname = \"sink\"\ntrigger = \"data\"\nmemory = \"1MiB\"\n\
             wcet = { 1 = \"1ms\" }\ncore = 1\npartitions = [4]\n\n[[task]]\nname = \"fast\"",
            1,
        ) + "\n[[edge]]\nfrom = \"slow\"\nto = \"sink\"\nbuffer = \"4KiB\"\n";
        let e = refused(&consumer_first);
        assert!(
            e.contains("t.toml:8: task 'sink' field `period` (inherited from its producers"),
            "{e}"
        );
    }

    #[test]
    fn a_plan_becomes_pinned_fifo_threads_by_rank() {
        let spec = plan(SET).unwrap();
        let fast = &spec.tasks[0];
        let slow = &spec.tasks[1];
        assert_eq!(fast.scheduling.policy, Policy::Fifo(TOP_TASK_PRIORITY));
        assert_eq!(
            slow.scheduling.policy,
            Policy::Fifo(TOP_TASK_PRIORITY),
            "alone on its core: ranks are per core"
        );
        assert_eq!(
            spec.resources.timers.len(),
            2,
            "each task releases on a timer of its own"
        );
        assert_eq!(
            slow.phases[0].release_timer(),
            Some((1, 200_000_000)),
            "the period is the timer's"
        );
        assert_eq!(fast.cpus, Some(vec![0]));
        assert_eq!(slow.cpus, Some(vec![1]));
        assert_eq!(fast.working_set, 256 * 1024);
        assert_eq!(slow.working_set, 0, "no body: compute needs no working set");
        assert_eq!(slow.partitions, vec![2, 3]);
        assert_eq!(slow.deadline_of(&slow.phases[0]), Some(150_000_000));
        assert_eq!(
            slow.phases[0].steps[0],
            Step::Kernel {
                kernel: Kernel::Compute,
                memory_percent: 0,
                work: Work::Target(Nanos(3_000_000))
            }
        );
        assert!(spec.needs_rt());
        assert!(!spec.without_rt().needs_rt());
    }

    #[test]
    fn log_capacity_covers_every_release_of_the_run() {
        let spec = plan(SET).unwrap();
        // 1 s at T = 100 ms: releases at 0, 100, ..., 900 ms = 10 jobs.
        assert!(spec.tasks[0].max_jobs(spec.duration_ns, 1) >= 10);
        assert!(spec.tasks[0].max_jobs(spec.duration_ns, 1) <= 30);
    }

    #[test]
    fn every_task_carries_its_line_and_the_analysis_bound() {
        let spec = plan(SET).unwrap();
        assert_eq!(spec.tasks[0].line, Some(8));
        assert_eq!(spec.tasks[1].line, Some(17));
        let bound = spec.tasks[1].bound.expect("analysed");
        assert_eq!(bound.wcet_ns, 3_000_000);
        assert!(bound.wcrt_ns.is_some_and(|r| r >= 3_000_000));
    }

    #[test]
    fn a_task_without_a_core_is_bad_input_with_its_line() {
        let e = refused(&SET.replace("core = 1\n", ""));
        assert!(e.contains("t.toml:17") && e.contains("`core`"), "{e}");
    }

    #[test]
    fn a_memory_kernel_on_an_empty_working_set_is_refused_with_the_minimum() {
        // From a file, validation refuses it, at the field's line.
        let text = SET.replace("working_set = \"256KiB\"", "working_set = \"0B\"");
        let e = tinct_core::format::parse(&text, "t.toml", tinct_core::format::Syntax::Toml)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("t.toml:15")
                && e.contains("`body.working_set`")
                && e.contains("at least 64B for the chase kernel")
                && e.contains("found 0B"),
            "{e}"
        );
        // A set built in code meets the run's guard, at the task's line.
        let mut set = parse(SET);
        set.tasks[0].body.as_mut().unwrap().working_set = Some(tinct_core::units::Bytes(0));
        let e = RunSpec::from_plan(&set, None, "t.toml", 1_000_000_000)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("t.toml:8")
                && e.contains("`body.working_set`")
                && e.contains("at least 64B for the chase kernel")
                && e.contains("found 0B"),
            "{e}"
        );
    }

    #[test]
    fn a_period_beyond_the_limit_of_times_is_refused_not_wrapped() {
        // 72057594 s: representable in ns, but past the limit of a run; the
        // period's own line (10), not its task's (8).
        let e = refused(&SET.replace("period = \"100ms\"", "period = \"72057594s\""));
        assert!(
            e.contains("t.toml:10: task 'fast' field `period`")
                && e.contains("found 72057594s")
                && e.contains("at most 31622400s"),
            "{e}"
        );
    }
}
