//! rt-app workload files: rt-app's whole grammar, read as json-c reads it
//! (C-style comments, trailing commas, repeated keys kept in file order),
//! turned into a [`RunSpec`] for tinct's event engine ([`crate::spec`]).
//! docs/RT-APP.md lists every key and event and what tinct does with it.
//!
//! - global: `duration`, `calibration`, `default_policy`, `pi_enabled`,
//!   `lock_pages`, `logdir`, `log_basename`, `io_device`,
//!   `mem_buffer_size` run with rt-app's meaning; `log_size`, `ftrace`,
//!   `gnuplot`, `cumulative_slack` and the obsolete `frag` change no timing
//!   and are accepted with a printed note ([`RtAppFile::notes`]).
//! - tasks: `instance`, `loop`, `delay`, `cpus`, `policy`, `priority` (a nice
//!   value under SCHED_OTHER/BATCH), `dl-runtime`, `dl-period`,
//!   `dl-deadline`, `dl-reclaim`, `util_min`, `util_max`, `taskgroup`,
//!   `nodes_membind`, `phases`, events, and tinct's `tinct` key (partitions,
//!   kernel, working set of the task; rt-app ignores a key it does not know
//!   and `tinct` is no event name, so the file still runs under rt-app).
//! - phases: `loop`, `cpus`, the scheduling keys, `taskgroup`, events.
//! - events (a key is an event when it starts with an event name, as in
//!   rt-app: `run0`, `sleep_long`): run, runtime, sleep, timer, mem, iorun,
//!   lock, unlock, wait, signal, broad, sync, suspend, resume, barrier,
//!   yield, fork.
//! - top level: `tasks`, `global`, `resources` (accepted and ignored, as
//!   rt-app does: resources are created by the events that name them) and
//!   tinct's `tinct` (`{ "partitions": N_P }`).
//!
//! Anything else is refused by name, with the key path and its line.
//!
//! [`analysis`]: a file whose threads are all periodic SCHED_DEADLINE
//! reservations pinned to one CPU each is analysed as partitioned EDF.
//!
//! Private modules: `context` (typed reads of values, errors naming the key
//! path and its line), `tasks` (tasks, phases, scheduling), `events`
//! (events and the objects they name), `ordered_json` (JSON objects in file
//! order, trailing commas).

pub mod analysis;
mod context;
mod events;
mod ordered_json;
mod tasks;

use context::Ctx;
use events::Registry;
pub use events::{EVENTS, event_of};
use ordered_json::{CommentError, OrderedValue, strip_comments, strip_trailing_commas};
pub use tasks::{DEFAULT_RT_PRIORITY, PHASE_KEYS, SCHED_KEYS, TASK_KEYS, UNBOUNDED_FORK_SLOTS};
use tasks::{PolicyName, TaskDefaults, give_unique_timers, parse_policy, parse_task};
use tinct_base::InputError;

use crate::limits::{MAX_TASKS, MAX_TIME_NS};
use crate::spec::{Protocol, RunSpec, Step, TaskSpec};
use crate::{Result, RtError};
use std::path::Path;
use tinct_sys::system::DeadlinePeriodLimits;

/// Keys of the top level.
pub const TOP_KEYS: [&str; 4] = ["tasks", "global", "resources", "tinct"];
/// Keys of `global`.
pub const GLOBAL_KEYS: [&str; 14] = [
    "duration",
    "default_policy",
    "calibration",
    "pi_enabled",
    "lock_pages",
    "logdir",
    "log_basename",
    "log_size",
    "ftrace",
    "gnuplot",
    "io_device",
    "mem_buffer_size",
    "cumulative_slack",
    "frag",
];
/// rt-app's default `mem_buffer_size`: 4 MiB.
pub const DEFAULT_MEM_BUFFER_BYTES: u64 = 4 << 20;

/// An rt-app file turned into a run.
#[derive(Clone, Debug, PartialEq)]
pub struct RtAppFile {
    /// The run (duration from the file, or the default given to [`parse`]).
    pub spec: RunSpec,
    /// True if the file set a duration (not −1).
    pub duration_from_file: bool,
    /// `global.logdir` joined with `global.log_basename`, if either was given.
    pub log_dir: Option<String>,
    /// What tinct accepted without doing what rt-app would (keys that
    /// change no timing), one line each, to print.
    pub notes: Vec<String>,
}

/// Reads an rt-app file.
pub fn load(path: &Path, default_duration_ns: u64) -> Result<RtAppFile> {
    let file = path.display().to_string();
    let text =
        tinct_core::format::read_text(path, tinct_core::format::MAX_FILE_BYTES, "rt-app JSON file")
            .map_err(|e| {
                RtError::Input(InputError {
                    file: file.clone(),
                    line: None,
                    field: "file".into(),
                    expected: e.expected,
                    found: e.found,
                })
            })?;
    parse(&text, &file, default_duration_ns)
}

/// Parses rt-app text; `file` is only used in messages.
pub fn parse(text: &str, file: &str, default_duration_ns: u64) -> Result<RtAppFile> {
    let stripped = strip_comments(text).map_err(|e| comment_error(file, e))?;
    let stripped = strip_trailing_commas(&stripped);
    let root: OrderedValue = serde_json::from_str(&stripped).map_err(|e| {
        RtError::Input(InputError {
            file: file.into(),
            line: Some(e.line()),
            field: "syntax".into(),
            expected: "rt-app JSON (json-c's dialect: comments and trailing commas allowed)".into(),
            found: e
                .to_string()
                .rsplit_once(" at line ")
                .map_or(e.to_string(), |(m, _)| m.to_string()),
        })
    })?;
    let ctx = Ctx {
        file,
        text: &stripped,
        deadline_periods: DeadlinePeriodLimits::read(&tinct_sys::SysRoot::live())
            .unwrap_or(DeadlinePeriodLimits::DEFAULT),
    };
    let top = ctx.object(&[], "(file)", &root)?;
    let mut tasks_value = None;
    let mut global = Global::default();
    let mut notes = Vec::new();
    let mut platform_partitions = None;
    for (key, value) in top {
        match key.as_str() {
            "tasks" => tasks_value = Some(value),
            "global" => global = parse_global(&ctx, value, &mut notes)?,
            "resources" => {
                ctx.object(&[], "resources", value)?;
                notes.push(
                    "`resources`: ignored, as rt-app does (resources are created by the events \
                     that name them)"
                        .into(),
                );
            }
            "tinct" => platform_partitions = parse_top_tinct(&ctx, value)?,
            other => return Err(ctx.unknown(&[], other, &TOP_KEYS)),
        }
    }
    let tasks_value = tasks_value
        .ok_or_else(|| ctx.error(&[], "key `tasks`".into(), "a `tasks` object", "no `tasks`"))?;
    let mut registry = Registry {
        protocol: Some(if global.pi_enabled {
            Protocol::Inherit
        } else {
            Protocol::None
        }),
        ..Registry::default()
    };
    let defaults = TaskDefaults {
        policy: global.default_policy,
        mem_buffer_bytes: global.mem_buffer_bytes,
    };
    let mut tasks = Vec::new();
    let mut templates = Vec::new();
    let mut origins = Vec::new();
    for (name, value) in ctx.object(&[], "tasks", tasks_value)? {
        let parsed = parse_task(&ctx, name, value, &defaults, &mut registry)?;
        origins.extend(std::iter::repeat_n(name.as_str(), parsed.threads.len()));
        tasks.extend(parsed.threads);
        templates.push(parsed.template);
        if tasks.len() > MAX_TASKS {
            return Err(too_many(&ctx, name, tasks.len()));
        }
    }
    add_forked_threads(&ctx, &mut tasks, &templates, &mut registry)?;
    let keys = task_keys(&tasks, &origins, &registry);
    check_unique_threads(&ctx, &tasks, &keys)?;
    if tasks.is_empty() {
        return Err(ctx.error(
            &["tasks"],
            "`tasks`".into(),
            "at least one task with instance ≥ 1",
            "none",
        ));
    }
    count_timer_users(&tasks, &mut registry);
    if tasks.iter().any(|t| !t.partitions.is_empty()) && platform_partitions.is_none() {
        return Err(ctx.error(
            &[],
            "`tinct.partitions` at the top level".into(),
            "N_P, the number of cache partitions, when a task names partitions \
             (\"tinct\": { \"partitions\": 16 })",
            "none",
        ));
    }
    let duration_from_file = global.duration_ns.is_some();
    let log_dir = match (&global.logdir, &global.log_basename) {
        (None, None) => None,
        (dir, base) => Some(
            Path::new(dir.as_deref().unwrap_or("."))
                .join(base.as_deref().unwrap_or("rt-app"))
                .display()
                .to_string(),
        ),
    };
    if let Some(basename) = global
        .log_basename
        .as_deref()
        .filter(|_| global.logs_enabled)
    {
        check_log_names(&ctx, basename, &tasks, &keys)?;
    }
    let spec = RunSpec {
        resources: registry.resources,
        lock_memory: global.lock_pages,
        platform_partitions,
        calibration_cpu: global.calibration_cpu,
        compute_ns_per_iteration: global.ns_per_loop,
        io_device_line: global
            .io_device
            .as_ref()
            .and_then(|_| ctx.line_of(&["global", "io_device"])),
        io_device: global.io_device.unwrap_or_else(|| "/dev/null".into()),
        rtapp_log: global.log_basename.clone().filter(|_| global.logs_enabled),
        ..RunSpec::new(
            file,
            tasks,
            global.duration_ns.unwrap_or(default_duration_ns),
        )
    };
    Ok(RtAppFile {
        spec,
        duration_from_file,
        log_dir,
        notes,
    })
}

/// A comment json-c would not read, as bad input naming its line.
fn comment_error(file: &str, e: CommentError) -> RtError {
    let (line, expected, found) = match e {
        CommentError::Unclosed { line } => (
            line,
            "a /* comment closed by */",
            "a /* comment opened on this line and never closed",
        ),
        CommentError::Stray { line } => (
            line,
            "a comment (// or /* */) where a `/` stands outside a string",
            "a `/` that starts no comment",
        ),
    };
    RtError::Input(InputError {
        file: file.into(),
        line: Some(line),
        field: "comments".into(),
        expected: expected.into(),
        found: found.into(),
    })
}

/// The file's task of each thread: `origins` for the threads of the
/// file's tasks (they come first), the forked task for those prepared for
/// a `fork` (they follow).
fn task_keys(tasks: &[TaskSpec], origins: &[&str], registry: &Registry) -> Vec<String> {
    tasks
        .iter()
        .enumerate()
        .map(|(k, task)| match task.forked_by {
            Some(gate) => registry.resources.forks[gate].task.clone(),
            None => origins[k].to_string(),
        })
        .collect()
}

/// Refuses two threads of one name (`"instance": 2` on `x` makes `x-0`,
/// which another task may be called; a fork makes `x-fork-0`): they would
/// share a thread name and overwrite each other's log. `keys`: the file's
/// task of each thread ([`task_keys`]).
fn check_unique_threads(ctx: &Ctx<'_>, tasks: &[TaskSpec], keys: &[String]) -> Result<()> {
    let task_of = |k: usize| keys[k].as_str();
    let describe = |k: usize| {
        let task = task_of(k);
        let line = ctx
            .line_of(&["tasks", task])
            .map_or(String::new(), |l| format!(" (line {l})"));
        match tasks[k].forked_by {
            Some(_) => format!("a thread of a `fork` of task \"{task}\"{line}"),
            None if tasks[k].name == task => format!("task \"{task}\"{line}"),
            None => format!("an instance of task \"{task}\"{line}"),
        }
    };
    let mut seen = std::collections::HashMap::with_capacity(tasks.len());
    for (k, task) in tasks.iter().enumerate() {
        if let Some(&first) = seen.get(task.name.as_str()) {
            return Err(ctx.error(
                &["tasks", task_of(k)],
                format!("thread name \"{}\"", task.name),
                "thread names unique in the run (`instance: n` on task x names its threads \
                 x-0 … x-(n-1); a forked task x names its threads x-fork-0 …)",
                format!(
                    "\"{}\" twice: {} and {}",
                    task.name,
                    describe(first),
                    describe(k)
                ),
            ));
        }
        seen.insert(task.name.as_str(), k);
    }
    Ok(())
}

/// The file name of a thread's rt-app log, `<basename>-<thread>.log`
/// (rt-app's naming, which the run directory's per-thread logs keep).
pub fn log_name(basename: &str, thread: &str) -> String {
    format!("{basename}-{thread}.log")
}

/// The longest file name Linux takes (NAME_MAX).
const MAX_FILE_NAME_BYTES: usize = 255;

/// Refuses a thread whose rt-app log name, `<basename>-<thread>.log`, no
/// file system takes (longer than [`MAX_FILE_NAME_BYTES`]): it would fail
/// only when the run's files are written.
fn check_log_names(
    ctx: &Ctx<'_>,
    basename: &str,
    tasks: &[TaskSpec],
    keys: &[String],
) -> Result<()> {
    for (task, key) in tasks.iter().zip(keys) {
        let name = log_name(basename, &task.name);
        if name.len() > MAX_FILE_NAME_BYTES {
            return Err(ctx.error(
                &["tasks", key.as_str()],
                format!("task name \"{}\"", task.name),
                format!(
                    "a log file name <log_basename>-<thread>.log of at most \
                     {MAX_FILE_NAME_BYTES} bytes (a shorter task name or log_basename)"
                ),
                format!("{} bytes: {name}", name.len()),
            ));
        }
    }
    Ok(())
}

fn too_many(ctx: &Ctx<'_>, name: &str, threads: usize) -> RtError {
    ctx.error(
        &["tasks", name],
        format!("tasks.{name}"),
        tinct_core::limits::Limit::RunThreads.expected(),
        format!("{threads} threads up to this task"),
    )
}

/// The top-level `tinct` key: `{ "partitions": N_P }`.
fn parse_top_tinct(ctx: &Ctx<'_>, value: &OrderedValue) -> Result<Option<u32>> {
    let mut partitions = None;
    for (k, v) in ctx.object(&[], "tinct", value)? {
        match k.as_str() {
            "partitions" => {
                partitions = Some(ctx.int_in(
                    &["tinct"],
                    k,
                    v,
                    1..=256,
                    "N_P, the number of cache partitions",
                )? as u32)
            }
            other => return Err(ctx.unknown(&["tinct"], other, &["partitions"])),
        }
    }
    Ok(partitions)
}

/// Prepares the threads `fork` events start: for each forked task, one
/// dormant thread per time its fork events can run (bounded loops), or
/// [`UNBOUNDED_FORK_SLOTS`].
fn add_forked_threads(
    ctx: &Ctx<'_>,
    tasks: &mut Vec<TaskSpec>,
    templates: &[TaskSpec],
    registry: &mut Registry,
) -> Result<()> {
    for gate in 0..registry.resources.forks.len() {
        let target = registry.resources.forks[gate].task.clone();
        let Some(template) = templates.iter().find(|t| t.name == target) else {
            return Err(ctx.error(
                &[],
                format!("`fork` of \"{target}\""),
                "the name of a task of the file",
                format!("\"{target}\""),
            ));
        };
        // Every execution of every fork event naming it, by any thread.
        let mut slots = 0u64;
        for task in tasks.iter() {
            for phase in &task.phases {
                let per_pass = phase
                    .steps
                    .iter()
                    .filter(|s| matches!(s, Step::Fork { fork } if *fork == gate))
                    .count() as u64;
                if per_pass == 0 {
                    continue;
                }
                let runs = match (phase.loops, task.loops) {
                    (Some(jobs), Some(passes)) => {
                        per_pass.saturating_mul(jobs).saturating_mul(passes)
                    }
                    _ => UNBOUNDED_FORK_SLOTS,
                };
                slots = slots.saturating_add(runs.min(UNBOUNDED_FORK_SLOTS));
            }
        }
        for k in 0..slots {
            let mut thread = TaskSpec {
                name: format!("{target}-fork-{k}"),
                forked_by: Some(gate),
                ..template.clone()
            };
            give_unique_timers(&mut thread, registry);
            registry.resources.forks[gate].slots.push(tasks.len());
            tasks.push(thread);
            if tasks.len() > MAX_TASKS {
                return Err(too_many(ctx, &target, tasks.len()));
            }
        }
    }
    Ok(())
}

/// How many threads use each timer (one: the thread's own grid).
fn count_timer_users(tasks: &[TaskSpec], registry: &mut Registry) {
    for (t, timer) in registry.resources.timers.iter_mut().enumerate() {
        timer.users = tasks
            .iter()
            .filter(|task| {
                task.phases
                    .iter()
                    .flat_map(|p| &p.steps)
                    .any(|s| matches!(s, Step::Timer { timer, .. } if *timer == t))
            })
            .count() as u32;
    }
}

#[derive(Debug)]
struct Global {
    duration_ns: Option<u64>,
    default_policy: PolicyName,
    calibration_cpu: Option<u32>,
    ns_per_loop: Option<f64>,
    pi_enabled: bool,
    lock_pages: bool,
    logdir: Option<String>,
    log_basename: Option<String>,
    logs_enabled: bool,
    io_device: Option<String>,
    mem_buffer_bytes: u64,
}

impl Default for Global {
    fn default() -> Self {
        Global {
            duration_ns: None,
            default_policy: PolicyName::Other,
            calibration_cpu: None,
            ns_per_loop: None,
            pi_enabled: false,
            lock_pages: true,
            logdir: None,
            log_basename: None,
            logs_enabled: true,
            io_device: None,
            mem_buffer_bytes: DEFAULT_MEM_BUFFER_BYTES,
        }
    }
}

/// `global.log_basename`: one plain file-name component (the run
/// directory `logdir/<it>` and the logs `<it>-<thread>.log` stay where the
/// user said, never `../` elsewhere).
fn log_basename(ctx: &Ctx<'_>, value: &OrderedValue) -> Result<String> {
    let name = ctx.string(&["global"], "log_basename", value)?;
    let problem = match name {
        "" => Some("an empty name"),
        "." | ".." => Some("a directory reference"),
        _ => context::file_name_problem(name),
    };
    match problem {
        None => Ok(name.to_string()),
        Some(problem) => Err(ctx.key_error(
            &["global"],
            "log_basename",
            "a plain file name (no `/`, not `.` or `..`, no control character): the logs are \
             <log_basename>-<thread>.log in the run directory",
            format!("{name:?}, with {problem}"),
        )),
    }
}

fn parse_global(ctx: &Ctx<'_>, value: &OrderedValue, notes: &mut Vec<String>) -> Result<Global> {
    let path = ["global"];
    let mut g = Global::default();
    for (key, v) in ctx.object(&[], "global", value)? {
        match key.as_str() {
            "duration" => {
                let d = ctx.int(&path, key, v, -1)?;
                let max_s = MAX_TIME_NS / 1_000_000_000;
                if d == 0 || d > max_s as i64 {
                    return Err(ctx.error(
                        &["global", "duration"],
                        "`duration` in global".into(),
                        format!("seconds from 1 to {max_s} (the limit of times in a run), or -1"),
                        d.to_string(),
                    ));
                }
                // 1..=max_s: positive, and the product is at most MAX_TIME_NS.
                g.duration_ns = (d > 0).then(|| d as u64 * 1_000_000_000);
            }
            "default_policy" => g.default_policy = parse_policy(ctx, &path, key, v)?,
            "calibration" => match v {
                OrderedValue::String(s) => {
                    let cpu = s
                        .strip_prefix("CPU")
                        .and_then(|n| n.parse::<u32>().ok())
                        .ok_or_else(|| {
                            ctx.error(
                                &["global", "calibration"],
                                "`calibration` in global".into(),
                                "\"CPUn\" or ns per loop",
                                format!("\"{s}\""),
                            )
                        })?;
                    g.calibration_cpu = Some(cpu);
                }
                other => g.ns_per_loop = Some(ctx.int(&path, key, other, 1)? as f64),
            },
            "pi_enabled" => g.pi_enabled = ctx.boolean(&path, key, v)?,
            "lock_pages" => g.lock_pages = ctx.boolean(&path, key, v)?,
            "logdir" => g.logdir = Some(ctx.string(&path, key, v)?.to_string()),
            "log_basename" => g.log_basename = Some(log_basename(ctx, v)?),
            "log_size" => {
                match v {
                    OrderedValue::String(s) if s.eq_ignore_ascii_case("disable") => {
                        g.logs_enabled = false
                    }
                    OrderedValue::String(s)
                        if s.eq_ignore_ascii_case("file") || s.eq_ignore_ascii_case("auto") => {}
                    OrderedValue::Int(mb) if *mb >= 0 => {}
                    other => {
                        return Err(ctx.key_error(
                            &path,
                            key,
                            "\"file\", \"auto\", \"disable\" or a size in MB",
                            other.kind(),
                        ));
                    }
                }
                notes.push(
                    "`log_size`: tinct keeps every job in its preallocated shared log and writes \
                     the rt-app logs after the run (\"disable\" turns them off)"
                        .into(),
                );
            }
            "ftrace" => {
                match v {
                    OrderedValue::Bool(_) | OrderedValue::String(_) => {}
                    other => {
                        return Err(ctx.key_error(
                            &path,
                            key,
                            "a list of categories, \"none\", or true/false",
                            other.kind(),
                        ));
                    }
                }
                notes.push(
                    "`ftrace`: no trace_marker writes; tinct's trace.json and jobs.csv record \
                     every job instead"
                        .into(),
                );
            }
            "gnuplot" => {
                ctx.boolean(&path, key, v)?;
                notes.push("`gnuplot`: no gnuplot scripts are written".into());
            }
            "cumulative_slack" => {
                if ctx.boolean(&path, key, v)? {
                    notes.push(
                        "`cumulative_slack`: the rt-app logs report the slack of each job's \
                         last timer"
                            .into(),
                    );
                }
            }
            "frag" => {
                ctx.int(&path, key, v, 0)?;
                notes.push("`frag`: an obsolete rt-app key, ignored as rt-app does".into());
            }
            "io_device" => g.io_device = Some(ctx.string(&path, key, v)?.to_string()),
            "mem_buffer_size" => {
                let bytes = ctx.int(&path, key, v, 8)?;
                g.mem_buffer_bytes = u64::try_from(bytes).unwrap_or(DEFAULT_MEM_BUFFER_BYTES);
                if g.mem_buffer_bytes > crate::limits::MAX_EVENT_BYTES {
                    return Err(ctx.key_error(
                        &path,
                        key,
                        "a buffer of at most 1 TiB",
                        bytes.to_string(),
                    ));
                }
            }
            other => return Err(ctx.unknown(&path, other, &GLOBAL_KEYS)),
        }
    }
    Ok(g)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{Policy, Protocol, Step};

    const GOOD: &str = r#"{
  /* a periodic thread and a two-phase one */
  "tasks": {
    "video": {
      "instance": 2,
      "loop": -1,
      "cpus": [1],
      "policy": "SCHED_FIFO",
      "priority": 20,
      "run": 2000,           // 2 ms of calibrated work
      "timer": { "ref": "unique", "period": 16000, "mode": "absolute" }
    },
    "bursty": {
      "loop": 3,
      "phases": {
        "quiet": { "loop": 5, "run0": 100, "sleep0": 900, "run1": 50, "timer": { "ref": "t", "period": 10000 } },
        "busy": { "runtime": 300, "sleep": 200 }
      }
    }
  },
  "global": { "duration": 2, "default_policy": "SCHED_OTHER", "calibration": "CPU0",
              "lock_pages": false, "logdir": "/tmp", "log_basename": "demo" }
}"#;

    fn parsed(text: &str) -> RtAppFile {
        parse(text, "ok.json", 1_000_000_000).unwrap()
    }

    #[test]
    fn tasks_phases_and_timers_map_onto_threads_and_steps() {
        let f = parse(GOOD, "good.json", 10).unwrap();
        let s = &f.spec;
        assert_eq!(s.duration_ns, 2_000_000_000);
        assert!(f.duration_from_file);
        assert!(!s.lock_memory);
        assert_eq!(s.calibration_cpu, Some(0));
        assert_eq!(f.log_dir.as_deref(), Some("/tmp/demo"));
        assert_eq!(s.rtapp_log.as_deref(), Some("demo"));
        let names: Vec<&str> = s.tasks.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["video-0", "video-1", "bursty"]);
        let video = &s.tasks[0];
        assert_eq!(video.scheduling.policy, Policy::Fifo(20));
        assert_eq!(video.cpus, Some(vec![1]));
        let (t0, period) = video.phases[0].release_timer().unwrap();
        let (t1, _) = s.tasks[1].phases[0].release_timer().unwrap();
        assert_eq!(period, 16_000_000);
        assert_ne!(t0, t1, "a unique timer is one per instance");
        assert!(s.resources.timers[t0].absolute);
        assert_eq!(s.resources.timers[t0].users, 1);
        assert_eq!(video.phases[0].loops, None);
        assert_eq!(video.deadline_of(&video.phases[0]), Some(16_000_000));
        let bursty = &s.tasks[2];
        assert_eq!(bursty.scheduling.policy, Policy::Other);
        assert_eq!(bursty.loops, Some(3));
        let quiet = &bursty.phases[0];
        assert_eq!(quiet.loops, Some(5));
        let (t, period) = quiet.release_timer().unwrap();
        assert_eq!(period, 10_000_000);
        assert!(!s.resources.timers[t].absolute, "relative by default");
        assert_eq!(quiet.body().len(), 3, "run0, sleep0, run1 in file order");
        assert_eq!(
            quiet.steps[1],
            Step::Sleep {
                duration_ns: 900_000
            }
        );
        assert_eq!(
            bursty.phases[1].steps,
            vec![
                Step::Busy {
                    duration_ns: 300_000
                },
                Step::Sleep {
                    duration_ns: 200_000
                }
            ]
        );
        assert_eq!(bursty.phases[1].loops, Some(1));
        assert_eq!(bursty.deadline_of(&bursty.phases[1]), None);
    }

    #[test]
    fn json_c_dialect_trailing_commas_comments_and_repeated_keys_in_order() {
        let f = parsed(
            "{ // a comment\n \"tasks\": { \"a\": { \"run\": 1, \"sleep\": 2, \"run\": 3, \
             \"sleep\": 4, }, }, /* end */ }",
        );
        let steps = &f.spec.tasks[0].phases[0].steps;
        assert_eq!(steps.len(), 4, "repeated keys are kept: {steps:?}");
        assert_eq!(steps[3], Step::Sleep { duration_ns: 4000 });
        assert!(
            matches!(steps[2], Step::Kernel { work: tinct_core::model::Work::Target(t), .. } if t.0 == 3000)
        );
    }

    /// Lines after a multi-line `/* */` comment are the file's
    /// lines (the comment's newlines used to be blanked away), and a comment
    /// that never closes names the line where it opens.
    #[test]
    fn errors_after_block_comments_name_the_files_line() {
        let text = "{\n/* tasks:\n   one,\n   two\n*/\n \"tasks\": { \"a\": {\n  \"run\": 10,\n  \"bogus\": 1 } } }";
        let e = rejected(text);
        assert!(e.contains("bad.json:8:") && e.contains("`bogus`"), "{e}");
        let e = rejected("{ \"tasks\": {\n \"a\": { \"run\": 10 } } }\n\n/* never\n closed");
        assert!(
            e.contains("bad.json:4:") && e.contains("never closed"),
            "{e}"
        );
        let e = rejected("{ \"tasks\":\n { \"a\": { \"run\": 10 } } / }");
        assert!(e.contains("bad.json:2:") && e.contains("`/`"), "{e}");
        // A `/*` inside a string is no comment; a `#` line is one.
        let f =
            parsed("{ \"tasks\": { \"a\": { \"lock\": \"m/*\", \"unlock\": \"m/*\" } } # end\n}");
        assert_eq!(f.spec.resources.mutexes[0].name, "m/*");
    }

    /// Strings of the file that reach file names stay file
    /// names: a `log_basename` of `../x` (the logs and the default run
    /// directory would leave `-o`/`logdir`), a task name with a `/` (its
    /// log would be in a directory that does not exist) or a newline.
    #[test]
    fn names_that_would_reach_other_directories_are_refused_with_their_line() {
        for basename in ["../escaped", "a/b", "..", ".", "", "x\ny"] {
            let e = rejected(&format!(
                "{{ \"tasks\": {{ \"a\": {{ \"run\": 1 }} }},\n \"global\": {{ \"log_basename\": {basename:?} }} }}"
            ));
            assert!(
                e.contains("bad.json:2:") && e.contains("`log_basename` in global"),
                "{basename:?}: {e}"
            );
        }
        for name in ["a/b", "../up", "x\ny"] {
            let e = rejected(&format!(
                "{{ \"tasks\": {{\n {name:?}: {{ \"run\": 1 }} }} }}"
            ));
            assert!(
                e.contains("bad.json:2:") && e.contains("task name"),
                "{name:?}: {e}"
            );
        }
        let f = parsed(
            r#"{ "tasks": { "a.b c": { "run": 1 } }, "global": { "log_basename": "run.1" } }"#,
        );
        assert_eq!(f.spec.rtapp_log.as_deref(), Some("run.1"));
    }

    /// Regression: `instance: 2` on `x` beside a task `x-0` gave two threads
    /// one name (one log overwrote the other); a fork's threads too.
    #[test]
    fn two_threads_of_one_name_are_refused_naming_both_tasks() {
        let e = rejected(
            "{ \"tasks\": {\n \"x\": { \"instance\": 2, \"run\": 1 },\n \"x-0\": { \"run\": 1 } } }",
        );
        assert!(
            e.contains("bad.json:3:")
                && e.contains("\"x-0\" twice")
                && e.contains("an instance of task \"x\" (line 2)")
                && e.contains("task \"x-0\" (line 3)"),
            "{e}"
        );
        let e = rejected(
            r#"{ "tasks": { "p": { "loop": 1, "run": 1, "fork": "c" },
                "c": { "instance": 0, "run": 1 }, "c-fork-0": { "run": 1 } } }"#,
        );
        assert!(
            e.contains("\"c-fork-0\" twice") && e.contains("a thread of a `fork` of task \"c\""),
            "{e}"
        );
    }

    /// A task group named like a cgroup control file
    /// (`/cgroup.procs`: EEXIST at the run's start, exit 1) is bad input.
    #[test]
    fn task_groups_named_like_cgroup_files_are_refused_with_their_line() {
        let e = rejected(
            "{ \"tasks\": { \"a\": {\n \"taskgroup\": \"/cgroup.procs\", \"run\": 1 } } }",
        );
        assert!(
            e.contains("bad.json:2:")
                && e.contains("`taskgroup` in tasks.a")
                && e.contains("interface file"),
            "{e}"
        );
        let e = rejected(
            "{ \"tasks\": { \"a\": { \"phases\": {\n \"p\": {\n \"taskgroup\": \"/g/cpu.max\", \"run\": 1 } } } } }",
        );
        assert!(e.contains("bad.json:3:") && e.contains("phases.p"), "{e}");
        let f = parsed(r#"{ "tasks": { "a": { "taskgroup": "/tg1/tg.11", "run": 1 } } }"#);
        assert_eq!(f.spec.tasks[0].taskgroup.as_deref(), Some("/tg1/tg.11"));
    }

    /// A reservation the kernel refuses (EINVAL at the run's
    /// start, exit 1) is bad input with its line: a period past
    /// sched_deadline_period_max_us (a u32 of µs: never 31 622 400 s), a
    /// runtime under 1024 ns; at task and at phase level.
    #[test]
    fn deadline_reservations_the_kernel_refuses_are_refused_with_their_line() {
        let e = rejected(
            "{ \"tasks\": { \"a\": { \"policy\": \"SCHED_DEADLINE\",\n \"dl-runtime\": 1000, \"dl-period\": 31622400000000, \"run\": 1 } } }",
        );
        assert!(
            e.contains("bad.json:1:")
                && e.contains("dl-period 31622400000000")
                && e.contains("sched_deadline_period"),
            "{e}"
        );
        let e = rejected(
            "{ \"tasks\": { \"a\": { \"phases\": {\n \"p\": { \"policy\": \"SCHED_DEADLINE\", \"dl-runtime\": 1, \"dl-period\": 1000, \"run\": 1 } } } } }",
        );
        assert!(
            e.contains("bad.json:2:") && e.contains("1024 ns") && e.contains("phases.p"),
            "{e}"
        );
        let f = parsed(
            r#"{ "tasks": { "a": { "policy": "SCHED_DEADLINE", "dl-runtime": 2, "dl-period": 1000, "run": 1 } } }"#,
        );
        assert_eq!(
            f.spec.tasks[0].scheduling.deadline.unwrap().runtime_ns,
            2000
        );
    }

    /// A phase knows its line, for errors found when the run starts (a
    /// phase's `cpus` naming a CPU this process may not use).
    #[test]
    fn a_phase_knows_its_line() {
        let f = parsed(
            "{ \"tasks\": { \"a\": { \"phases\": {\n \"p\": { \"run\": 1 },\n\n \"q\": { \"cpus\": [0], \"run\": 1 } } } } }",
        );
        let lines: Vec<Option<usize>> = f.spec.tasks[0].phases.iter().map(|p| p.line).collect();
        assert_eq!(lines, [Some(2), Some(4)]);
    }

    /// A log name no file system takes is refused when read, not when the
    /// run's files are written.
    #[test]
    fn a_log_name_longer_than_a_file_name_is_refused() {
        let long = "t".repeat(250);
        let e = rejected(&format!(
            "{{ \"tasks\": {{\n \"{long}\": {{ \"run\": 1 }} }}, \"global\": {{ \"log_basename\": \"run\" }} }}"
        ));
        assert!(
            e.contains("bad.json:2:") && e.contains("at most 255 bytes"),
            "{e}"
        );
        parsed(&format!(
            "{{ \"tasks\": {{ \"{long}\": {{ \"run\": 1 }} }} }}"
        ));
    }

    #[test]
    fn threads_naming_a_timer_share_it_and_instances_count_at_barriers() {
        let f = parsed(
            r#"{ "tasks": {
              "a": { "instance": 2, "run": 10, "barrier": "B", "timer": { "ref": "t", "period": 100 } },
              "b": { "run": 10, "barrier": "B", "timer": { "ref": "t", "period": 100 } } },
              "global": { "pi_enabled": true } }"#,
        );
        let s = &f.spec;
        let timers: Vec<usize> = s
            .tasks
            .iter()
            .map(|t| t.phases[0].release_timer().unwrap().0)
            .collect();
        assert!(timers.iter().all(|&t| t == timers[0]), "one shared timer");
        assert_eq!(s.resources.timers[timers[0]].users, 3);
        assert_eq!(s.resources.barriers.len(), 1);
        assert_eq!(s.resources.barriers[0].parties, 3, "2 instances + 1");
        let f = parsed(
            r#"{ "tasks": { "a": { "lock": "m", "wait": { "ref": "c", "mutex": "m" }, "unlock": "m" },
              "b": { "lock": "m", "signal": "c", "unlock": "m", "suspend": "", "resume": "a" } },
              "global": { "pi_enabled": true } }"#,
        );
        let r = &f.spec.resources;
        let names: Vec<&str> = r.mutexes.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["m", "b", "a"], "suspend \"\" names its own task");
        assert!(r.mutexes.iter().all(|m| m.protocol == Protocol::Inherit));
        assert_eq!(r.conds, ["c", "b", "a"]);
    }

    #[test]
    fn scheduling_at_task_and_phase_level() {
        let f = parsed(
            r#"{ "tasks": {
              "nice": { "priority": -19, "run": 1 },
              "rr": { "policy": "SCHED_RR", "run": 1 },
              "dl": { "policy": "SCHED_DEADLINE", "dl-runtime": 1000, "dl-period": 10000, "dl-reclaim": true, "run": 1 },
              "slice": { "dl-runtime": 3000, "util_min": 100, "util_max": 800, "run": 1 },
              "p": { "policy": "SCHED_FIFO", "priority": 30, "phases": {
                  "one": { "run": 1 },
                  "two": { "priority": 40, "cpus": [0], "run": 1 },
                  "three": { "policy": "SCHED_OTHER", "priority": 5, "run": 1 } } } } }"#,
        );
        let t = &f.spec.tasks;
        assert_eq!(
            (t[0].scheduling.policy, t[0].scheduling.nice),
            (Policy::Other, -19)
        );
        assert_eq!(
            t[1].scheduling.policy,
            Policy::RoundRobin(DEFAULT_RT_PRIORITY)
        );
        let dl = t[2].scheduling;
        assert_eq!(dl.policy, Policy::Deadline);
        let params = dl.deadline.unwrap();
        assert_eq!(
            (params.runtime_ns, params.deadline_ns, params.period_ns),
            (1_000_000, 10_000_000, 10_000_000),
            "deadline defaults to the period"
        );
        assert!(dl.reclaim);
        assert_eq!(t[3].scheduling.slice_ns, Some(3_000_000), "custom slice");
        assert_eq!(
            (t[3].scheduling.util_min, t[3].scheduling.util_max),
            (Some(100), Some(800))
        );
        let p = &t[4];
        assert_eq!(p.phases[0].scheduling, None, "nothing set: unchanged");
        assert_eq!(
            p.phases[1].scheduling.map(|s| s.policy),
            Some(Policy::Fifo(40)),
            "a priority alone keeps the policy in force"
        );
        assert_eq!(p.phases[1].cpus, Some(vec![0]));
        let three = p.phases[2].scheduling.unwrap();
        assert_eq!((three.policy, three.nice), (Policy::Other, 5));
        assert!(f.spec.needs_rt());
    }

    #[test]
    fn the_tinct_key_gives_a_task_partitions_and_a_kernel_and_rt_app_ignores_it() {
        let with = r#"{ "tinct": { "partitions": 8 }, "tasks": { "a": { "run": 1000, "mem": 4096,
            "tinct": { "partitions": [1, 2], "kernel": "chase", "working_set": "256KiB" },
            "timer": { "ref": "t", "period": 10000 } } } }"#;
        let f = parsed(with);
        let a = &f.spec.tasks[0];
        assert_eq!(f.spec.platform_partitions, Some(8));
        assert_eq!(a.partitions, vec![1, 2]);
        assert_eq!(a.working_set, 256 * 1024);
        assert_eq!(a.kernel(), Some(tinct_core::model::Kernel::Chase));
        // rt-app looks keys up by name and events by prefix: `tinct` is
        // neither, at the top level or in a task, so rt-app ignores it.
        assert_eq!(event_of("tinct"), None);
        let without = with
            .replace(r#""tinct": { "partitions": 8 }, "#, "")
            .replace(
                r#"
            "tinct": { "partitions": [1, 2], "kernel": "chase", "working_set": "256KiB" },"#,
                "",
            );
        let plain = parsed(&without);
        assert_eq!(
            plain.spec.tasks[0].phases[0].steps.len(),
            a.phases[0].steps.len()
        );
        assert!(plain.spec.tasks[0].partitions.is_empty());
        assert_eq!(
            plain.spec.tasks[0].working_set, DEFAULT_MEM_BUFFER_BYTES,
            "mem: rt-app's buffer"
        );
        let e = rejected(r#"{ "tasks": { "a": { "run": 1, "tinct": { "partitions": [1] } } } }"#);
        assert!(e.contains("tinct.partitions") && e.contains("N_P"), "{e}");
        let e = rejected(r#"{ "tasks": { "a": { "run": 1, "tinct": { "banks": [1] } } } }"#);
        assert!(e.contains("`banks`"), "{e}");
    }

    #[test]
    fn forks_get_prepared_threads_and_housekeeping_keys_get_notes() {
        let f = parsed(
            r#"{ "tasks": {
              "parent": { "loop": 3, "run": 10, "fork": "child" },
              "child": { "instance": 0, "loop": 1, "run": 10 } },
              "resources": { "m": { "type": "mutex" } },
              "global": { "ftrace": "main,task", "gnuplot": true, "log_size": "disable",
                          "frag": 1, "cumulative_slack": true, "log_basename": "x" } }"#,
        );
        let names: Vec<&str> = f.spec.tasks.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(
            names,
            ["parent", "child-fork-0", "child-fork-1", "child-fork-2"]
        );
        assert_eq!(f.spec.resources.forks[0].slots, vec![1, 2, 3]);
        assert!(f.spec.tasks[1..].iter().all(|t| t.forked_by == Some(0)));
        for key in [
            "resources",
            "ftrace",
            "gnuplot",
            "log_size",
            "frag",
            "cumulative_slack",
        ] {
            assert!(
                f.notes.iter().any(|n| n.contains(&format!("`{key}`"))),
                "{key}: {:?}",
                f.notes
            );
        }
        assert_eq!(
            f.spec.rtapp_log, None,
            "log_size \"disable\" turns the logs off"
        );
        let e = rejected(r#"{ "tasks": { "a": { "run": 1, "fork": "nobody" } } }"#);
        assert!(e.contains("nobody"), "{e}");
    }

    fn rejected(text: &str) -> String {
        match parse(text, "bad.json", 1) {
            Err(e) => e.to_string(),
            Ok(f) => panic!("accepted: {f:?}"),
        }
    }

    #[test]
    fn unknown_keys_and_the_old_grammar_are_refused_by_name_with_their_line() {
        let e = rejected("{\n \"tasks\": { \"a\": {\n  \"run\": 10,\n  \"bogus\": \"x\" } } }");
        assert!(e.contains("`bogus`") && e.contains("bad.json:4"), "{e}");
        let e = rejected(r#"{ "tasks": { "a": { "run": 10 } }, "global": { "perod": 1 } }"#);
        assert!(e.contains("`perod`"), "{e}");
        let e = rejected(r#"{ "tasks": { "a": { "run": 10 } }, "extra": {} }"#);
        assert!(e.contains("`extra`"), "{e}");
        let e = rejected(r#"{ "tasks": { "a": { "exec": 10, "period": 100 } } }"#);
        assert!(e.contains("`exec`") && e.contains("before 2015"), "{e}");
        let e = rejected(
            r#"{ "tasks": { "a": { "run": 1, "timer": { "ref": "x", "period": 5, "slack": 1 } } } }"#,
        );
        assert!(e.contains("`slack`"), "{e}");
        let e = rejected(r#"{ "tasks": { "a": { "phases": { "p": { "loop": 2 } } } } }"#);
        assert!(e.contains("at least one event"), "{e}");
    }

    #[test]
    fn values_the_kernel_or_rt_app_would_refuse_are_refused() {
        assert!(
            rejected(r#"{ "tasks": { "a": { "run": 1, "policy": "SCHED_DEADLINE" } } }"#)
                .contains("dl-runtime")
        );
        assert!(
            rejected(r#"{ "tasks": { "a": { "run": 1, "priority": -21 } } }"#).contains("nice")
        );
        assert!(
            rejected(
                r#"{ "tasks": { "a": { "policy": "SCHED_FIFO", "priority": 99, "run": 1 } } }"#
            )
            .contains("watchdog")
        );
        assert!(
            rejected(r#"{ "tasks": { "a": { "policy": "SCHED_DEADLINE", "dl-runtime": 1000, "cpus": [0, 1], "run": 1 } } }"#)
                .contains("EPERM")
        );
        assert!(
            rejected(
                r#"{ "tasks": { "a": { "policy": "SCHED_FIFO", "taskgroup": "/g", "run": 1 } } }"#
            )
            .contains("SCHED_OTHER or SCHED_IDLE")
        );
        assert!(
            rejected(r#"{ "tasks": { "a": { "taskgroup": "g", "run": 1 } } }"#).contains("/tg1")
        );
        assert!(
            rejected(r#"{ "tasks": { "a": { "util_min": 2000, "run": 1 } } }"#).contains("1024")
        );
        assert!(rejected(r#"{ "tasks": { "a": { "run": -3 } } }"#).contains("integer ≥ 0"));
        assert!(rejected(r#"{ "tasks": { "a": { "run": 1 },, } }"#).contains("syntax"));
    }

    #[test]
    fn duration_minus_one_takes_the_default() {
        let f = parse(
            r#"{ "tasks": { "a": { "run": 1 } }, "global": { "duration": -1 } }"#,
            "x.json",
            7,
        )
        .unwrap();
        assert_eq!(f.spec.duration_ns, 7);
        assert!(!f.duration_from_file);
        assert!(f.spec.lock_memory);
    }

    #[test]
    fn times_that_do_not_fit_are_refused_by_key_and_line_never_wrapped() {
        // 18446744073709552 µs is 2^64 ns rounded up: it used to become 384 ns.
        let e = rejected(
            "{ \"tasks\": { \"a\": {\n  \"run\": 10,\n  \"timer\": { \"ref\": \"t\", \"period\": 18446744073709552 } } } }",
        );
        assert!(
            e.contains("bad.json:3")
                && e.contains("`period` in tasks.a.timer")
                && e.contains("18446744073709552"),
            "{e}"
        );
        let e = rejected(r#"{ "tasks": { "a": { "run": 18446744073709552 } } }"#);
        assert!(
            e.contains("`run` in tasks.a") && e.contains("the limit of times"),
            "{e}"
        );
        let e = rejected(r#"{ "tasks": { "a": { "sleep": 9223372036854775807 } } }"#);
        assert!(e.contains("`sleep` in tasks.a"), "{e}");
        let e = rejected(
            r#"{ "tasks": { "a": { "run": 1 } }, "global": { "duration": 18446744073 } }"#,
        );
        assert!(
            e.contains("`duration` in global") && e.contains("18446744073"),
            "{e}"
        );
        // At the limit everything is exact.
        let max_us = MAX_TIME_NS / 1000;
        let f = parse(
            &format!(r#"{{ "tasks": {{ "a": {{ "run": 1, "timer": {{ "ref": "t", "period": {max_us} }} }} }} }}"#),
            "ok.json",
            1,
        )
        .unwrap();
        assert_eq!(
            f.spec.tasks[0].phases[0].release_timer().unwrap().1,
            MAX_TIME_NS
        );
    }

    #[test]
    fn instances_beyond_the_limit_of_threads_are_refused() {
        let e = rejected("{ \"tasks\": {\n \"many\": { \"instance\": 100000, \"run\": 10 } } }");
        assert!(
            e.contains("bad.json:2")
                && e.contains("`instance` in tasks.many")
                && e.contains("1024"),
            "{e}"
        );
        let e = rejected(
            r#"{ "tasks": { "a": { "instance": 1000, "run": 10 }, "b": { "instance": 100, "run": 10 } } }"#,
        );
        assert!(e.contains("tasks.b") && e.contains("1100 threads"), "{e}");
        let f = parse(
            r#"{ "tasks": { "a": { "instance": 3, "run": 1 } } }"#,
            "ok.json",
            1,
        )
        .unwrap();
        assert_eq!(f.spec.tasks.len(), 3);
        assert_eq!(f.spec.tasks[0].line, Some(1));
    }
}
