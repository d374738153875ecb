//! rt-app events: which keys are events (rt-app's own rule: a key is an
//! event when it *starts* with an event name, so `run0`, `run_end` and
//! `sleep1` are `run`, `run` and `sleep`), and each event as a [`Step`],
//! with the named objects it uses registered in a [`Registry`] (rt-app
//! creates a resource the first time an event names it; mutexes,
//! conditions, barriers and timers have separate names).

use super::context::Ctx;
use super::ordered_json::OrderedValue;
use crate::Result;
use crate::limits::MAX_EVENT_BYTES;
use crate::spec::{BarrierSpec, MutexSpec, Protocol, Resources, Step, TimerSpec};
use tinct_core::model::{Kernel, Work};
use tinct_core::units::{Bytes, Nanos};

/// The events of rt-app's grammar, in the order its parser tries them.
pub const EVENTS: [&str; 17] = [
    "run", "runtime", "sleep", "mem", "iorun", "lock", "unlock", "signal", "broad", "wait", "sync",
    "barrier", "timer", "resume", "suspend", "yield", "fork",
];

/// The event a key names by rt-app's rule (the longest event name it
/// starts with: `runtime1` is `runtime`, `run_end` is `run`), if any.
pub fn event_of(key: &str) -> Option<&'static str> {
    EVENTS
        .iter()
        .copied()
        .filter(|event| key.starts_with(event))
        .max_by_key(|event| event.len())
}

/// The run's named objects as events name them, filled while parsing.
#[derive(Debug, Default)]
pub(super) struct Registry {
    pub(super) resources: Resources,
    /// Mutex protocol for every mutex (`pi_enabled`).
    pub(super) protocol: Option<Protocol>,
}

fn index_of<T>(list: &mut Vec<T>, matches: impl Fn(&T) -> bool, make: impl FnOnce() -> T) -> usize {
    list.iter().position(matches).unwrap_or_else(|| {
        list.push(make());
        list.len() - 1
    })
}

impl Registry {
    fn mutex(&mut self, name: &str) -> usize {
        let protocol = self.protocol.unwrap_or(Protocol::None);
        index_of(
            &mut self.resources.mutexes,
            |m| m.name == name,
            || MutexSpec {
                name: name.into(),
                protocol,
            },
        )
    }

    fn cond(&mut self, name: &str) -> usize {
        index_of(&mut self.resources.conds, |c| c == name, || name.into())
    }

    fn barrier(&mut self, name: &str, users: u64) -> usize {
        let b = index_of(
            &mut self.resources.barriers,
            |b| b.name == name,
            || BarrierSpec {
                name: name.into(),
                parties: 0,
            },
        );
        // rt-app: every event naming the barrier adds its task's instances.
        self.resources.barriers[b].parties =
            self.resources.barriers[b].parties.saturating_add(users);
        b
    }

    fn timer(&mut self, name: &str) -> usize {
        index_of(
            &mut self.resources.timers,
            |t| t.name == name,
            || TimerSpec {
                name: name.into(),
                absolute: false,
                users: 0,
            },
        )
    }

    fn fork(&mut self, task: &str) -> usize {
        index_of(
            &mut self.resources.forks,
            |f| f.task == task,
            || crate::spec::ForkSpec {
                task: task.into(),
                slots: Vec::new(),
            },
        )
    }
}

/// What an event becomes for one task (all its instances).
pub(super) struct EventContext<'a> {
    /// The task's name (an empty `suspend` names it, as workgen fills in).
    pub(super) task: &'a str,
    /// Its instances (each counts at a barrier).
    pub(super) instances: u64,
    /// The kernel `run` events execute (compute unless the task's `tinct`
    /// key says otherwise) and its memory share.
    pub(super) kernel: Kernel,
    pub(super) memory_percent: u8,
}

/// Parses one event `key` (already known to be an event) into a step.
/// Timers named `unique…` are made per thread later ([`unique_timer`]).
pub(super) fn parse_event(
    ctx: &Ctx<'_>,
    path: &[&str],
    key: &str,
    value: &OrderedValue,
    event: &str,
    task: &EventContext<'_>,
    registry: &mut Registry,
) -> Result<Step> {
    let name = |v: &OrderedValue| ctx.string(path, key, v).map(str::to_string);
    Ok(match event {
        "run" => Step::Kernel {
            kernel: task.kernel,
            memory_percent: task.memory_percent,
            work: Work::Target(Nanos(ctx.micros(path, key, value, 0)?)),
        },
        "runtime" => Step::Busy {
            duration_ns: ctx.micros(path, key, value, 0)?,
        },
        "sleep" => Step::Sleep {
            duration_ns: ctx.micros(path, key, value, 0)?,
        },
        "mem" | "iorun" => {
            let bytes = ctx.int(path, key, value, 0)? as u64; // ≥ 0
            if bytes > MAX_EVENT_BYTES {
                return Err(ctx.key_error(
                    path,
                    key,
                    format!("bytes up to {}", Bytes(MAX_EVENT_BYTES)),
                    bytes.to_string(),
                ));
            }
            if event == "mem" {
                Step::Mem { bytes }
            } else {
                Step::IoRun { bytes }
            }
        }
        "lock" => Step::Lock {
            mutex: registry.mutex(&name(value)?),
        },
        "unlock" => Step::Unlock {
            mutex: registry.mutex(&name(value)?),
        },
        "signal" => Step::Signal {
            cond: registry.cond(&name(value)?),
        },
        "broad" => Step::Broadcast {
            cond: registry.cond(&name(value)?),
        },
        "wait" | "sync" => {
            let (cond, mutex) = cond_and_mutex(ctx, path, key, value)?;
            let (cond, mutex) = (registry.cond(&cond), registry.mutex(&mutex));
            if event == "wait" {
                Step::Wait { cond, mutex }
            } else {
                Step::SignalWait { cond, mutex }
            }
        }
        "suspend" | "resume" => {
            let mut target = name(value)?;
            if target.is_empty() {
                target = task.task.to_string();
            }
            let (cond, mutex) = (registry.cond(&target), registry.mutex(&target));
            if event == "suspend" {
                Step::Suspend { cond, mutex }
            } else {
                Step::Resume { cond, mutex }
            }
        }
        "barrier" => Step::Barrier {
            barrier: registry.barrier(&name(value)?, task.instances),
        },
        "timer" => {
            let (reference, period_ns, absolute) = parse_timer(ctx, path, key, value)?;
            let timer = registry.timer(&reference);
            if absolute {
                registry.resources.timers[timer].absolute = true;
            }
            Step::Timer { timer, period_ns }
        }
        "yield" => Step::Yield,
        "fork" => {
            let target = name(value)?;
            Step::Fork {
                fork: registry.fork(&target),
            }
        }
        other => unreachable!("{other} is in EVENTS"),
    })
}

/// `{ "ref": …, "mutex": … }` of `wait` and `sync` (rt-app's default for
/// either: "unknown").
fn cond_and_mutex(
    ctx: &Ctx<'_>,
    path: &[&str],
    key: &str,
    value: &OrderedValue,
) -> Result<(String, String)> {
    let inner = [path, &[key]].concat();
    let (mut cond, mut mutex) = ("unknown".to_string(), "unknown".to_string());
    for (k, v) in ctx.object(path, key, value)? {
        match k.as_str() {
            "ref" => cond = ctx.string(&inner, k, v)?.to_string(),
            "mutex" => mutex = ctx.string(&inner, k, v)?.to_string(),
            other => return Err(ctx.unknown(&inner, other, &["ref", "mutex"])),
        }
    }
    Ok((cond, mutex))
}

/// `{ "ref", "period" (µs), "mode" }` of a timer.
fn parse_timer(
    ctx: &Ctx<'_>,
    path: &[&str],
    key: &str,
    value: &OrderedValue,
) -> Result<(String, u64, bool)> {
    let inner = [path, &[key]].concat();
    let mut reference = "unknown".to_string();
    let mut period = None;
    let mut absolute = false;
    for (k, v) in ctx.object(path, key, value)? {
        match k.as_str() {
            "ref" => reference = ctx.string(&inner, k, v)?.to_string(),
            "period" => period = Some(ctx.micros(&inner, k, v, 1)?),
            "mode" => {
                absolute = match ctx.string(&inner, k, v)? {
                    "absolute" => true,
                    "relative" => false,
                    other => {
                        return Err(ctx.key_error(
                            &inner,
                            k,
                            "\"absolute\" or \"relative\"",
                            format!("\"{other}\""),
                        ));
                    }
                }
            }
            other => return Err(ctx.unknown(&inner, other, &["ref", "period", "mode"])),
        }
    }
    let period_ns = period.ok_or_else(|| {
        ctx.error(
            &inner,
            format!("`period` in {}", inner.join(".")),
            "a timer period in µs (rt-app's default of 0 would release without waiting)",
            "no `period`",
        )
    })?;
    Ok((reference, period_ns, absolute))
}

/// The timer a `unique…` reference names for one thread: rt-app gives every
/// thread its own (the same name twice in one thread is one timer).
pub(super) fn unique_timer(registry: &mut Registry, timer: usize, thread: &str) -> usize {
    let spec = registry.resources.timers[timer].clone();
    let name = format!("{}#{thread}", spec.name);
    let own = registry.timer(&name);
    registry.resources.timers[own].absolute = spec.absolute;
    own
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_recognised_by_prefix_as_rt_app_does() {
        for (key, event) in [
            ("run", Some("run")),
            ("run0", Some("run")),
            ("run_end", Some("run")),
            ("runtime3", Some("runtime")),
            ("sleep1", Some("sleep")),
            ("unlock2", Some("unlock")),
            ("lock_x", Some("lock")),
            ("timer4", Some("timer")),
            ("memory", Some("mem")),
            ("loop", None),
            ("priority", None),
            ("taskgroup", None),
            ("tinct", None),
            ("delay", None),
            ("instance", None),
        ] {
            assert_eq!(event_of(key), event, "{key}");
        }
    }
}
