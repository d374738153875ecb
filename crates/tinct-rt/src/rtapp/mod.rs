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
//!
//! Private modules: `context` (typed reads of values, errors naming the key
//! path and its line), `tasks` (tasks, phases and events), `ordered_json`
//! (JSON objects kept in file order).

mod context;
mod ordered_json;
mod tasks;

use context::Ctx;
use ordered_json::OrderedValue;
pub use tasks::DEFAULT_RT_PRIORITY;
use tasks::{PolicyName, parse_policy, parse_task};

use crate::limits::{MAX_TASKS, MAX_TIME_NS};
use crate::spec::RunSpec;
use crate::{Result, RtError};
use std::path::Path;

const TOP_KEYS: [&str; 2] = ["tasks", "global"];
const GLOBAL_KEYS: [&str; 6] = [
    "duration",
    "default_policy",
    "calibration",
    "lock_pages",
    "logdir",
    "log_basename",
];

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
        tasks.extend(parse_task(&ctx, name, value, global.default_policy)?);
        if tasks.len() > MAX_TASKS {
            return Err(ctx.error(
                &["tasks", name],
                format!("tasks.{name}"),
                format!("at most {MAX_TASKS} threads in all (the limit of threads in one run)"),
                format!("{} threads up to this task", tasks.len()),
            ));
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

fn parse_global(ctx: &Ctx<'_>, value: &OrderedValue) -> Result<Global> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{Policy, Step, Timer};

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
            f.spec.tasks[0].phases[0].timer.unwrap().period_ns,
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
