//! The tasks, phases and events of an rt-app file as [`TaskSpec`]s: a job
//! is one pass over a phase's events, released by its timer.

use super::context::{Ctx, where_};
use super::ordered_json::OrderedValue;
use crate::Result;
use crate::limits::MAX_TASKS;
use crate::spec::{Phase, Policy, Step, TaskSpec, Timer};
use tinct_core::model::{Kernel, Work};
use tinct_core::units::Nanos;

const TASK_KEYS: [&str; 6] = ["instance", "loop", "cpus", "policy", "priority", "phases"];
const PHASE_KEYS: [&str; 1] = ["loop"];
/// The events of tinct's subset (keys may end in digits: `run0`).
pub(super) const EVENTS: [&str; 4] = ["run", "runtime", "sleep", "timer"];
const TIMER_KEYS: [&str; 3] = ["ref", "period", "mode"];
/// The SCHED_FIFO priority rt-app gives a real-time thread without `priority`.
pub const DEFAULT_RT_PRIORITY: u8 = 10;

#[derive(Copy, Clone, Debug, PartialEq)]
pub(super) enum PolicyName {
    Other,
    Fifo,
}

pub(super) fn parse_policy(
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

/// The event a key names (`run0` → `run`), if it is one tinct knows.
fn event_name(key: &str) -> Option<&'static str> {
    let base = key.trim_end_matches(|c: char| c.is_ascii_digit());
    EVENTS.iter().copied().find(|e| *e == base)
}

pub(super) fn parse_task(
    ctx: &Ctx<'_>,
    name: &str,
    value: &OrderedValue,
    default_policy: PolicyName,
) -> Result<Vec<TaskSpec>> {
    let path = ["tasks", name];
    let mut instance = 1i64;
    let mut task_loop = -1i64;
    let mut cpus = None;
    let mut policy = default_policy;
    let mut priority = None;
    let mut phases = Vec::new();
    let mut events: Vec<(&str, &OrderedValue)> = Vec::new();
    for (key, v) in ctx.object(&["tasks"], name, value)? {
        match key.as_str() {
            "instance" => {
                instance = ctx.int(&path, key, v, 0)?;
                if instance > MAX_TASKS as i64 {
                    return Err(ctx.error(
                        &["tasks", name, "instance"],
                        format!("`instance` in tasks.{name}"),
                        format!("0 to {MAX_TASKS} instances (the limit of threads in one run)"),
                        instance.to_string(),
                    ));
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
        line: ctx.line_of(&path),
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
        let us = |v: &OrderedValue| ctx.micros(path, key, v, 0);
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
            "period" => period = Some(ctx.micros(&tpath, k, v, 1)?),
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
