//! rt-app workload files (JSON with C-style comments), for the subset that
//! maps onto tinct's runtime. Keys outside the subset are rejected by name,
//! never ignored.
//!
//! | level | keys |
//! |---|---|
//! | top | `tasks`, `global` |
//! | `global` | `duration` (s, −1: until `--duration`), `default_policy`, `calibration` (`"CPUn"` or ns per loop), `lock_pages`, `logdir`, `log_basename` |
//! | task | `instance`, `loop`, `cpus`, `policy`, `priority`, `phases`, and events |
//! | phase | `loop` and events |
//! | events | `run` (µs of calibrated work), `runtime` (µs of wall-clock spinning), `sleep` (µs), `timer` (`ref`, `period` µs, `mode` `"absolute"`/`"relative"`, default relative) |
//!
//! Event keys may carry a numeric suffix (`run0`, `sleep1`) as in rt-app,
//! and run in file order. In tinct a job is one pass over a phase's events,
//! so a phase has at most one `timer` and it must be its last event; the
//! timer period is the job's deadline. Timer `ref` names are accepted and
//! every thread gets its own timer, started at the common release (rt-app
//! shares a non-`unique` timer between threads; with a common release and
//! equal periods that is the same grid of releases).

use crate::ordered::OrderedValue;
use crate::spec::{Phase, Policy, RunSpec, Step, TaskSpec, Timer};
use crate::{Result, RtError};
use std::path::Path;
use tinct_core::model::{Kernel, Work};
use tinct_core::units::Nanos;

const TOP_KEYS: [&str; 2] = ["tasks", "global"];
const GLOBAL_KEYS: [&str; 6] = [
    "duration",
    "default_policy",
    "calibration",
    "lock_pages",
    "logdir",
    "log_basename",
];
const TASK_KEYS: [&str; 6] = ["instance", "loop", "cpus", "policy", "priority", "phases"];
const PHASE_KEYS: [&str; 1] = ["loop"];
const EVENTS: [&str; 4] = ["run", "runtime", "sleep", "timer"];
const TIMER_KEYS: [&str; 3] = ["ref", "period", "mode"];
/// The SCHED_FIFO priority rt-app gives a real-time thread without `priority`.
pub const DEFAULT_RT_PRIORITY: u8 = 10;
/// The most threads one file may start (the sum of its tasks' `instance`):
/// each is a pinned thread with its own job log, so a typo such as
/// `"instance": 224294967295` must not try to build them.
pub const MAX_THREADS: i64 = 1024;

/// An rt-app file turned into a run.
#[derive(Clone, Debug, PartialEq)]
pub struct RtAppFile {
    /// The run (duration from the file, or the default given to [`parse`]).
    pub spec: RunSpec,
    /// True if the file set a duration (not −1).
    pub duration_from_file: bool,
    /// `global.logdir` joined with `global.log_basename`, if either was given.
    pub log_dir: Option<String>,
}

struct Ctx<'a> {
    file: &'a str,
    text: &'a str,
}

impl Ctx<'_> {
    /// Best-effort line of the key at `path` (each segment searched as a
    /// quoted string after the previous one).
    fn line_of(&self, path: &[&str]) -> Option<usize> {
        let mut from = 0;
        for segment in path {
            let needle = format!("\"{segment}\"");
            from += self.text[from..].find(&needle)?;
        }
        Some(self.text[..from].matches('\n').count() + 1)
    }

    fn error(
        &self,
        path: &[&str],
        field: String,
        expected: impl Into<String>,
        found: impl Into<String>,
    ) -> RtError {
        RtError::Input {
            file: self.file.to_string(),
            line: self.line_of(path),
            field,
            expected: expected.into(),
            found: found.into(),
        }
    }

    fn unknown(&self, path: &[&str], key: &str, allowed: &[&str]) -> RtError {
        let mut full = path.to_vec();
        full.push(key);
        self.error(
            &full,
            format!("key `{key}` in {}", where_(path)),
            format!(
                "one of tinct's rt-app subset: {} (other keys are rejected, never ignored)",
                allowed.join(", ")
            ),
            format!("`{key}`"),
        )
    }

    fn int(&self, path: &[&str], key: &str, value: &OrderedValue, min: i64) -> Result<i64> {
        match value {
            OrderedValue::Int(i) if *i >= min => Ok(*i),
            other => {
                let mut full = path.to_vec();
                full.push(key);
                Err(self.error(
                    &full,
                    format!("`{key}` in {}", where_(path)),
                    format!("an integer ≥ {min}"),
                    other.kind(),
                ))
            }
        }
    }

    /// An integer ≥ `min` in units of `unit_ns` nanoseconds (rt-app's µs
    /// and s), as nanoseconds; a time beyond 2^64 ns is refused, not wrapped.
    fn nanos(
        &self,
        path: &[&str],
        key: &str,
        value: &OrderedValue,
        min: i64,
        (unit_ns, unit): (u64, &str),
    ) -> Result<u64> {
        let count = self.int(path, key, value, min)?;
        u64::try_from(count)
            .ok()
            .and_then(|c| c.checked_mul(unit_ns))
            .ok_or_else(|| {
                let mut full = path.to_vec();
                full.push(key);
                self.error(
                    &full,
                    format!("`{key}` in {}", where_(path)),
                    format!(
                        "at most {} {unit} (2^64 ns, the longest time tinct represents)",
                        u64::MAX / unit_ns
                    ),
                    count.to_string(),
                )
            })
    }

    fn too_many_threads(&self, task: &str, found: String) -> RtError {
        self.error(
            &["tasks", task, "instance"],
            format!("`instance` in tasks.{task}"),
            format!("at most {MAX_THREADS} threads in one file"),
            found,
        )
    }

    fn string<'v>(&self, path: &[&str], key: &str, value: &'v OrderedValue) -> Result<&'v str> {
        match value {
            OrderedValue::String(s) => Ok(s),
            other => {
                let mut full = path.to_vec();
                full.push(key);
                Err(self.error(
                    &full,
                    format!("`{key}` in {}", where_(path)),
                    "a string",
                    other.kind(),
                ))
            }
        }
    }

    fn object<'v>(
        &self,
        path: &[&str],
        key: &str,
        value: &'v OrderedValue,
    ) -> Result<&'v [(String, OrderedValue)]> {
        match value {
            OrderedValue::Object(entries) => Ok(entries),
            other => {
                let mut full = path.to_vec();
                full.push(key);
                Err(self.error(
                    &full,
                    format!("`{key}` in {}", where_(path)),
                    "an object",
                    other.kind(),
                ))
            }
        }
    }
}

fn where_(path: &[&str]) -> String {
    if path.is_empty() {
        "the top level".into()
    } else {
        path.join(".")
    }
}

/// The event a key names (`run0` → `run`), if it is one tinct knows.
fn event_name(key: &str) -> Option<&'static str> {
    let base = key.trim_end_matches(|c: char| c.is_ascii_digit());
    EVENTS.iter().copied().find(|e| *e == base)
}

/// Reads an rt-app file.
pub fn load(path: &Path, default_duration_ns: u64) -> Result<RtAppFile> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| RtError::Input {
        file: file.clone(),
        line: None,
        field: "file".into(),
        expected: "a readable rt-app JSON file".into(),
        found: e.to_string(),
    })?;
    parse(&text, &file, default_duration_ns)
}

/// Parses rt-app text; `file` is only used in messages.
pub fn parse(text: &str, file: &str, default_duration_ns: u64) -> Result<RtAppFile> {
    let mut stripped = String::with_capacity(text.len());
    std::io::Read::read_to_string(
        &mut json_comments::StripComments::new(text.as_bytes()),
        &mut stripped,
    )
    .map_err(|e| RtError::Input {
        file: file.into(),
        line: None,
        field: "comments".into(),
        expected: "well-formed // or /* */ comments".into(),
        found: e.to_string(),
    })?;
    let root: OrderedValue = serde_json::from_str(&stripped).map_err(|e| RtError::Input {
        file: file.into(),
        line: Some(e.line()),
        field: "syntax".into(),
        expected: "rt-app JSON".into(),
        found: e
            .to_string()
            .rsplit_once(" at line ")
            .map_or(e.to_string(), |(m, _)| m.to_string()),
    })?;
    let ctx = Ctx {
        file,
        text: &stripped,
    };
    let top = ctx.object(&[], "(file)", &root)?;
    let mut tasks_value = None;
    let mut global = Global::default();
    for (key, value) in top {
        match key.as_str() {
            "tasks" => tasks_value = Some(value),
            "global" => global = parse_global(&ctx, value)?,
            other => return Err(ctx.unknown(&[], other, &TOP_KEYS)),
        }
    }
    let tasks_value = tasks_value
        .ok_or_else(|| ctx.error(&[], "key `tasks`".into(), "a `tasks` object", "no `tasks`"))?;
    let mut tasks = Vec::new();
    for (name, value) in ctx.object(&[], "tasks", tasks_value)? {
        tasks.extend(parse_task(&ctx, name, value, &global)?);
        if tasks.len() as i64 > MAX_THREADS {
            return Err(
                ctx.too_many_threads(name, format!("{} threads up to this task", tasks.len()))
            );
        }
    }
    if tasks.is_empty() {
        return Err(ctx.error(
            &["tasks"],
            "`tasks`".into(),
            "at least one task with instance ≥ 1",
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
    Ok(RtAppFile {
        spec: RunSpec {
            source: file.to_string(),
            tasks,
            duration_ns: global.duration_ns.unwrap_or(default_duration_ns),
            lock_memory: global.lock_pages,
            platform_partitions: None,
            calibration_cpu: global.calibration_cpu,
            compute_ns_per_iteration: global.ns_per_loop,
        },
        duration_from_file,
        log_dir,
    })
}

#[derive(Debug)]
struct Global {
    duration_ns: Option<u64>,
    default_policy: PolicyName,
    calibration_cpu: Option<u32>,
    ns_per_loop: Option<f64>,
    lock_pages: bool,
    logdir: Option<String>,
    log_basename: Option<String>,
}

impl Default for Global {
    fn default() -> Self {
        Global {
            duration_ns: None,
            default_policy: PolicyName::Other,
            calibration_cpu: None,
            ns_per_loop: None,
            lock_pages: true,
            logdir: None,
            log_basename: None,
        }
    }
}

#[derive(Copy, Clone, Debug, PartialEq)]
enum PolicyName {
    Other,
    Fifo,
}

fn parse_policy(
    ctx: &Ctx<'_>,
    path: &[&str],
    key: &str,
    value: &OrderedValue,
) -> Result<PolicyName> {
    match ctx.string(path, key, value)? {
        "SCHED_OTHER" => Ok(PolicyName::Other),
        "SCHED_FIFO" => Ok(PolicyName::Fifo),
        other => {
            let mut full = path.to_vec();
            full.push(key);
            Err(ctx.error(
                &full,
                format!("`{key}` in {}", where_(path)),
                "SCHED_OTHER or SCHED_FIFO (tinct's rt-app subset)",
                format!("\"{other}\""),
            ))
        }
    }
}

fn parse_global(ctx: &Ctx<'_>, value: &OrderedValue) -> Result<Global> {
    let path = ["global"];
    let mut g = Global::default();
    for (key, v) in ctx.object(&[], "global", value)? {
        match key.as_str() {
            "duration" => {
                let d = ctx.int(&path, key, v, -1)?;
                if d == 0 {
                    return Err(ctx.error(
                        &["global", "duration"],
                        "`duration` in global".into(),
                        "seconds > 0, or -1",
                        "0",
                    ));
                }
                g.duration_ns = match d {
                    -1 => None,
                    _ => Some(ctx.nanos(&path, key, v, 1, (1_000_000_000, "s"))?),
                };
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
            "lock_pages" => match v {
                OrderedValue::Bool(b) => g.lock_pages = *b,
                other => {
                    return Err(ctx.error(
                        &["global", "lock_pages"],
                        "`lock_pages` in global".into(),
                        "true or false",
                        other.kind(),
                    ));
                }
            },
            "logdir" => g.logdir = Some(ctx.string(&path, key, v)?.to_string()),
            "log_basename" => g.log_basename = Some(ctx.string(&path, key, v)?.to_string()),
            other => return Err(ctx.unknown(&path, other, &GLOBAL_KEYS)),
        }
    }
    Ok(g)
}

fn parse_task(
    ctx: &Ctx<'_>,
    name: &str,
    value: &OrderedValue,
    global: &Global,
) -> Result<Vec<TaskSpec>> {
    let path = ["tasks", name];
    let mut instance = 1i64;
    let mut task_loop = -1i64;
    let mut cpus = None;
    let mut policy = global.default_policy;
    let mut priority = None;
    let mut phases = Vec::new();
    let mut events: Vec<(&str, &OrderedValue)> = Vec::new();
    for (key, v) in ctx.object(&["tasks"], name, value)? {
        match key.as_str() {
            "instance" => {
                instance = ctx.int(&path, key, v, 0)?;
                if instance > MAX_THREADS {
                    return Err(ctx.too_many_threads(name, instance.to_string()));
                }
            }
            "loop" => task_loop = ctx.int(&path, key, v, -1)?,
            "cpus" => cpus = Some(parse_cpus(ctx, &path, v)?),
            "policy" => policy = parse_policy(ctx, &path, key, v)?,
            "priority" => priority = Some(ctx.int(&path, key, v, 0)?),
            "phases" => {
                for (phase_name, phase_value) in ctx.object(&path, "phases", v)? {
                    phases.push(parse_phase(ctx, name, phase_name, phase_value)?);
                }
            }
            other if event_name(other).is_some() => events.push((other, v)),
            other => {
                let mut allowed = TASK_KEYS.to_vec();
                allowed.extend(EVENTS);
                return Err(ctx.unknown(&path, other, &allowed));
            }
        }
    }
    if !phases.is_empty() && !events.is_empty() {
        return Err(ctx.error(
            &path,
            format!("events in tasks.{name}"),
            "either `phases` or events directly in the task, not both",
            format!("`phases` and `{}`", events[0].0),
        ));
    }
    let task_loops = if phases.is_empty() {
        let (steps, timer) = parse_events(ctx, &path, &events)?;
        phases.push(Phase {
            name: "main".into(),
            loops: (task_loop >= 0).then_some(task_loop as u64),
            steps,
            timer,
        });
        Some(1)
    } else {
        (task_loop >= 0).then_some(task_loop as u64)
    };
    let policy = match (policy, priority) {
        (PolicyName::Fifo, p) => {
            let p = p.unwrap_or(i64::from(DEFAULT_RT_PRIORITY));
            if !(1..=98).contains(&p) {
                return Err(ctx.error(
                    &["tasks", name, "priority"],
                    format!("`priority` in tasks.{name}"),
                    "1..=98 for SCHED_FIFO (99 is tinct's watchdog)",
                    p.to_string(),
                ));
            }
            Policy::Fifo(p as u8)
        }
        (PolicyName::Other, None | Some(0)) => Policy::Other,
        (PolicyName::Other, Some(p)) => {
            return Err(ctx.error(
                &["tasks", name, "priority"],
                format!("`priority` in tasks.{name}"),
                "0 for SCHED_OTHER (nice values are outside tinct's rt-app subset)",
                p.to_string(),
            ));
        }
    };
    let make = |task_name: String| TaskSpec {
        name: task_name,
        cpus: cpus.clone(),
        policy,
        deadline_ns: None,
        offset_ns: 0,
        phases: phases.clone(),
        loops: task_loops,
        working_set: 0,
        partitions: Vec::new(),
        bound: None,
    };
    Ok(match instance {
        0 => Vec::new(),
        1 => vec![make(name.to_string())],
        n => (0..n).map(|k| make(format!("{name}-{k}"))).collect(),
    })
}

fn parse_cpus(ctx: &Ctx<'_>, path: &[&str], value: &OrderedValue) -> Result<Vec<u32>> {
    let bad = |found: String| {
        ctx.error(
            &[path, &["cpus"]].concat(),
            format!("`cpus` in {}", path.join(".")),
            "a non-empty array of CPU numbers",
            found,
        )
    };
    match value {
        OrderedValue::Array(items) if !items.is_empty() => items
            .iter()
            .map(|item| match item {
                OrderedValue::Int(i) if (0..=4095).contains(i) => Ok(*i as u32),
                other => Err(bad(other.kind())),
            })
            .collect(),
        other => Err(bad(other.kind())),
    }
}

fn parse_phase(ctx: &Ctx<'_>, task: &str, name: &str, value: &OrderedValue) -> Result<Phase> {
    let path = ["tasks", task, "phases", name];
    let mut loops = 1i64;
    let mut events = Vec::new();
    for (key, v) in ctx.object(&path[..3], name, value)? {
        match key.as_str() {
            "loop" => loops = ctx.int(&path, key, v, -1)?,
            other if event_name(other).is_some() => events.push((other, v)),
            other => {
                let mut allowed = PHASE_KEYS.to_vec();
                allowed.extend(EVENTS);
                return Err(ctx.unknown(&path, other, &allowed));
            }
        }
    }
    let (steps, timer) = parse_events(ctx, &path, &events)?;
    Ok(Phase {
        name: name.to_string(),
        loops: (loops >= 0).then_some(loops as u64),
        steps,
        timer,
    })
}

fn parse_events(
    ctx: &Ctx<'_>,
    path: &[&str],
    events: &[(&str, &OrderedValue)],
) -> Result<(Vec<Step>, Option<Timer>)> {
    let mut steps = Vec::new();
    let mut timer = None;
    for (i, (key, value)) in events.iter().enumerate() {
        let us = |v: &OrderedValue| ctx.nanos(path, key, v, 0, (1_000, "µs"));
        match event_name(key) {
            Some("run") => steps.push(Step::Kernel {
                kernel: Kernel::Compute,
                memory_percent: 0,
                work: Work::Target(Nanos(us(value)?)),
            }),
            Some("runtime") => steps.push(Step::Busy {
                duration_ns: us(value)?,
            }),
            Some("sleep") => steps.push(Step::Sleep {
                duration_ns: us(value)?,
            }),
            Some("timer") => {
                if i + 1 != events.len() {
                    return Err(ctx.error(
                        &[path, &[key]].concat(),
                        format!("`{key}` in {}", path.join(".")),
                        "the timer as the last event of its phase (in tinct a job is one pass over the events, released by the timer)",
                        format!("`{}` after it", events[i + 1].0),
                    ));
                }
                timer = Some(parse_timer(ctx, path, key, value)?);
            }
            _ => unreachable!("only known events are collected"),
        }
    }
    if steps.is_empty() && timer.is_none() {
        return Err(ctx.error(
            path,
            format!("events of {}", path.join(".")),
            "at least one event (run, runtime, sleep, timer)",
            "none",
        ));
    }
    Ok((steps, timer))
}

fn parse_timer(ctx: &Ctx<'_>, path: &[&str], key: &str, value: &OrderedValue) -> Result<Timer> {
    let tpath = [path, &[key]].concat();
    let mut period = None;
    let mut absolute = false;
    for (k, v) in ctx.object(path, key, value)? {
        match k.as_str() {
            "ref" => {
                ctx.string(&tpath, k, v)?;
            }
            "period" => period = Some(ctx.nanos(&tpath, k, v, 1, (1_000, "µs"))?),
            "mode" => {
                absolute = match ctx.string(&tpath, k, v)? {
                    "absolute" => true,
                    "relative" => false,
                    other => {
                        return Err(ctx.error(
                            &[&tpath[..], &["mode"]].concat(),
                            format!("`mode` in {}", tpath.join(".")),
                            "\"absolute\" or \"relative\"",
                            format!("\"{other}\""),
                        ));
                    }
                }
            }
            other => return Err(ctx.unknown(&tpath, other, &TIMER_KEYS)),
        }
    }
    let period_ns = period.ok_or_else(|| {
        ctx.error(
            &tpath,
            format!("`period` in {}", tpath.join(".")),
            "a timer period in µs",
            "no `period`",
        )
    })?;
    Ok(Timer {
        period_ns,
        absolute,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn the_subset_maps_onto_tasks_phases_and_timers() {
        let f = parse(GOOD, "good.json", 10).unwrap();
        let s = &f.spec;
        assert_eq!(s.duration_ns, 2_000_000_000);
        assert!(f.duration_from_file);
        assert!(!s.lock_memory);
        assert_eq!(s.calibration_cpu, Some(0));
        assert_eq!(f.log_dir.as_deref(), Some("/tmp/demo"));
        let names: Vec<&str> = s.tasks.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["video-0", "video-1", "bursty"]);
        let video = &s.tasks[0];
        assert_eq!(video.policy, Policy::Fifo(20));
        assert_eq!(video.cpus, Some(vec![1]));
        assert_eq!(
            video.phases[0].timer,
            Some(Timer {
                period_ns: 16_000_000,
                absolute: true
            })
        );
        assert_eq!(video.phases[0].loops, None);
        assert_eq!(video.deadline_of(&video.phases[0]), Some(16_000_000));
        let bursty = &s.tasks[2];
        assert_eq!(bursty.policy, Policy::Other);
        assert_eq!(bursty.loops, Some(3));
        let quiet = &bursty.phases[0];
        assert_eq!(quiet.loops, Some(5));
        assert_eq!(
            quiet.timer,
            Some(Timer {
                period_ns: 10_000_000,
                absolute: false
            })
        );
        assert_eq!(quiet.steps.len(), 3, "run0, sleep0, run1 in file order");
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
    }

    fn rejected(text: &str) -> String {
        match parse(text, "bad.json", 1) {
            Err(e) => e.to_string(),
            Ok(f) => panic!("accepted: {f:?}"),
        }
    }

    #[test]
    fn keys_outside_the_subset_are_rejected_by_name_with_their_line() {
        let e = rejected("{\n \"tasks\": { \"a\": {\n  \"run\": 10,\n  \"barrier\": \"x\" } } }");
        assert!(e.contains("`barrier`") && e.contains("bad.json:4"), "{e}");
        let e = rejected(r#"{ "tasks": { "a": { "run": 10 } }, "global": { "ftrace": "none" } }"#);
        assert!(e.contains("`ftrace`"), "{e}");
        let e = rejected(r#"{ "tasks": { "a": { "run": 10 } }, "resources": {} }"#);
        assert!(e.contains("`resources`"), "{e}");
        let e =
            rejected(r#"{ "tasks": { "a": { "phases": { "p": { "run": 1, "cpus": [0] } } } } }"#);
        assert!(
            e.contains("`cpus`") && e.contains("tasks.a.phases.p"),
            "{e}"
        );
        let e = rejected(
            r#"{ "tasks": { "a": { "run": 1, "timer": { "ref": "x", "period": 5, "slack": 1 } } } }"#,
        );
        assert!(e.contains("`slack`"), "{e}");
    }

    #[test]
    fn values_outside_the_subset_are_rejected_too() {
        assert!(
            rejected(r#"{ "tasks": { "a": { "run": 1, "policy": "SCHED_DEADLINE" } } }"#)
                .contains("SCHED_DEADLINE")
        );
        assert!(rejected(r#"{ "tasks": { "a": { "run": 1, "priority": 5 } } }"#).contains("nice"));
        assert!(
            rejected(
                r#"{ "tasks": { "a": { "policy": "SCHED_FIFO", "priority": 99, "run": 1 } } }"#
            )
            .contains("watchdog")
        );
        assert!(
            rejected(r#"{ "tasks": { "a": { "timer": { "ref": "x", "period": 5 }, "run": 1 } } }"#)
                .contains("last event")
        );
        assert!(rejected(r#"{ "tasks": { "a": { "run": -3 } } }"#).contains("integer ≥ 0"));
        assert!(rejected(r#"{ "tasks": { "a": { "run": 1 }, } }"#).contains("syntax"));
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
}
