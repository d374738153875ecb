//! The tasks and phases of an rt-app file as [`TaskSpec`]s: scheduling
//! (policy, priority or nice, deadline reservation, clamps) at task and
//! phase level, CPUs, task groups, delay, loops, instances, and the events
//! ([`super::events`]); plus tinct's own `tinct` key (cache partitions and
//! the job kernel of a task, see docs/RT-APP.md).

use super::context::{Ctx, file_name_problem, where_};
use super::events::{EventContext, Registry, event_of, parse_event, unique_timer};
use super::ordered_json::OrderedValue;
use crate::Result;
use crate::kernels::memory_percent;
use crate::limits::MAX_TASKS;
use crate::spec::{DeadlineParams, Phase, Policy, Scheduling, Step, TaskSpec, WATCHDOG_PRIORITY};
use tinct_core::model::Kernel;
use tinct_core::units::parse_size;
use tinct_sys::sched::MIN_DEADLINE_RUNTIME_NS;

/// Keys of a task besides events and the scheduling keys.
pub const TASK_KEYS: [&str; 9] = [
    "instance",
    "loop",
    "cpus",
    "phases",
    "delay",
    "taskgroup",
    "nodes_membind",
    "membind_nodes",
    "tinct",
];
/// Keys of a phase besides events and the scheduling keys.
pub const PHASE_KEYS: [&str; 5] = [
    "loop",
    "cpus",
    "taskgroup",
    "nodes_membind",
    "membind_nodes",
];
/// Scheduling keys, at task and phase level.
pub const SCHED_KEYS: [&str; 8] = [
    "policy",
    "priority",
    "dl-runtime",
    "dl-period",
    "dl-deadline",
    "dl-reclaim",
    "util_min",
    "util_max",
];
/// Keys of rt-app's grammar before 2015 (which current rt-app refuses too).
const OLD_GRAMMAR: [&str; 5] = ["exec", "period", "deadline", "lock_order", "resources"];
/// The SCHED_FIFO/RR priority rt-app gives a real-time thread without `priority`.
pub const DEFAULT_RT_PRIORITY: u8 = 10;
/// Threads prepared for a `fork` that may run without bound (rt-app stops
/// at 1024 per event; tinct prepares this many and stops the run, saying
/// so, when they are used up).
pub const UNBOUNDED_FORK_SLOTS: u64 = 16;

/// A policy by its rt-app name.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum PolicyName {
    Other,
    Fifo,
    RoundRobin,
    Batch,
    Idle,
    Deadline,
}

pub(super) fn parse_policy(
    ctx: &Ctx<'_>,
    path: &[&str],
    key: &str,
    value: &OrderedValue,
) -> Result<PolicyName> {
    Ok(match ctx.string(path, key, value)? {
        "SCHED_OTHER" => PolicyName::Other,
        "SCHED_FIFO" => PolicyName::Fifo,
        "SCHED_RR" => PolicyName::RoundRobin,
        "SCHED_BATCH" => PolicyName::Batch,
        "SCHED_IDLE" => PolicyName::Idle,
        "SCHED_DEADLINE" => PolicyName::Deadline,
        other => {
            return Err(ctx.key_error(
                path,
                key,
                "SCHED_OTHER, SCHED_FIFO, SCHED_RR, SCHED_BATCH, SCHED_IDLE or SCHED_DEADLINE",
                format!("\"{other}\""),
            ));
        }
    })
}

/// The scheduling keys of one object (task or phase), as written.
#[derive(Default)]
struct SchedKeys {
    policy: Option<PolicyName>,
    priority: Option<i64>,
    runtime_us: Option<u64>,
    period_us: Option<u64>,
    deadline_us: Option<u64>,
    reclaim: Option<bool>,
    util_min: Option<u32>,
    util_max: Option<u32>,
}

impl SchedKeys {
    fn any(&self) -> bool {
        self.policy.is_some()
            || self.priority.is_some()
            || self.runtime_us.is_some()
            || self.util_min.is_some()
            || self.util_max.is_some()
    }

    fn read(&mut self, ctx: &Ctx<'_>, path: &[&str], key: &str, v: &OrderedValue) -> Result<()> {
        let us = |v| ctx.micros(path, key, v, 0).map(|ns| ns / 1000);
        let clamp = |v| {
            ctx.int_in(path, key, v, -1..=1024, "a utilization clamp, -1 for none")
                .map(|c| u32::try_from(c).ok())
        };
        match key {
            "policy" => self.policy = Some(parse_policy(ctx, path, key, v)?),
            "priority" => self.priority = Some(ctx.int(path, key, v, i64::MIN)?),
            "dl-runtime" => self.runtime_us = Some(us(v)?),
            "dl-period" => self.period_us = Some(us(v)?),
            "dl-deadline" => self.deadline_us = Some(us(v)?),
            "dl-reclaim" => self.reclaim = Some(ctx.boolean(path, key, v)?),
            "util_min" => self.util_min = clamp(v)?,
            "util_max" => self.util_max = clamp(v)?,
            _ => unreachable!("only SCHED_KEYS are read"),
        }
        Ok(())
    }

    /// The scheduling these keys ask for, `policy` filling in a missing
    /// `policy` (the default policy at task level; the policy in force at
    /// phase level, rt-app's "same").
    fn resolve(&self, ctx: &Ctx<'_>, path: &[&str], policy: PolicyName) -> Result<Scheduling> {
        let policy = self.policy.unwrap_or(policy);
        let priority_error = |expected: &str, found: i64| {
            ctx.key_error(path, "priority", expected.to_string(), found.to_string())
        };
        let rt = |p: Option<i64>| -> Result<u8> {
            let p = p.unwrap_or(i64::from(DEFAULT_RT_PRIORITY));
            if (1..i64::from(WATCHDOG_PRIORITY)).contains(&p) {
                Ok(p as u8)
            } else {
                Err(priority_error(
                    "1..=98 for SCHED_FIFO and SCHED_RR (99 is tinct's watchdog)",
                    p,
                ))
            }
        };
        let nice = |p: Option<i64>| -> Result<i8> {
            let p = p.unwrap_or(0);
            i8::try_from(p)
                .ok()
                .filter(|n| (-20..=19).contains(n))
                .ok_or_else(|| {
                    priority_error("a nice value -20..=19 for SCHED_OTHER and SCHED_BATCH", p)
                })
        };
        let mut scheduling = Scheduling::other();
        scheduling.policy = match policy {
            PolicyName::Other => {
                scheduling.nice = nice(self.priority)?;
                Policy::Other
            }
            PolicyName::Batch => {
                scheduling.nice = nice(self.priority)?;
                Policy::Batch
            }
            PolicyName::Idle => Policy::Idle,
            PolicyName::Fifo => Policy::Fifo(rt(self.priority)?),
            PolicyName::RoundRobin => Policy::RoundRobin(rt(self.priority)?),
            PolicyName::Deadline => Policy::Deadline,
        };
        if policy == PolicyName::Deadline {
            let runtime = self.runtime_us.unwrap_or(0);
            let period = self.period_us.unwrap_or(runtime);
            let deadline = self.deadline_us.unwrap_or(period);
            if runtime == 0 || !(runtime <= deadline && deadline <= period) {
                return Err(ctx.error(
                    path,
                    format!(
                        "`dl-runtime`, `dl-deadline`, `dl-period` in {}",
                        where_(path)
                    ),
                    "SCHED_DEADLINE with 0 < dl-runtime ≤ dl-deadline ≤ dl-period (µs; period \
                     defaults to runtime, deadline to period)",
                    format!("runtime {runtime}, deadline {deadline}, period {period}"),
                ));
            }
            check_kernel_deadline(ctx, path, runtime, period)?;
            // µs within MAX_TIME_NS (checked by `micros`): exact in ns.
            scheduling.deadline = Some(DeadlineParams {
                runtime_ns: runtime * 1000,
                deadline_ns: deadline * 1000,
                period_ns: period * 1000,
            });
            scheduling.reclaim = self.reclaim.unwrap_or(false);
        } else if let (Some(runtime), PolicyName::Other | PolicyName::Batch) =
            (self.runtime_us, policy)
        {
            // rt-app: dl-runtime of a fair thread is its custom slice.
            scheduling.slice_ns = Some(runtime * 1000);
        }
        scheduling.util_min = self.util_min;
        scheduling.util_max = self.util_max;
        Ok(scheduling)
    }
}

/// The kernel's own limits on a reservation (`__checkparam_dl`): a
/// runtime of at least 1024 ns and a period within
/// `sched_deadline_period_{min,max}_us`; `sched_setattr` refuses anything
/// else (EINVAL), so it is bad input of the file, refused before the run.
fn check_kernel_deadline(
    ctx: &Ctx<'_>,
    path: &[&str],
    runtime_us: u64,
    period_us: u64,
) -> Result<()> {
    let periods = &ctx.deadline_periods;
    // Saturating: a runtime past u64 nanoseconds is far above the minimum.
    let found = if runtime_us.saturating_mul(1000) < MIN_DEADLINE_RUNTIME_NS {
        format!("dl-runtime {runtime_us} µs, below the kernel's 1024 ns")
    } else if !(periods.min_us..=periods.max_us).contains(&period_us) {
        format!(
            "dl-period {period_us} µs, outside this kernel's {}..={} µs \
             (/proc/sys/kernel/sched_deadline_period_{{min,max}}_us)",
            periods.min_us, periods.max_us
        )
    } else {
        return Ok(());
    };
    Err(ctx.error(
        path,
        format!(
            "`dl-runtime`, `dl-deadline`, `dl-period` in {}",
            where_(path)
        ),
        format!(
            "a reservation the kernel accepts: dl-runtime ≥ 2 µs (1024 ns), dl-period from {} \
             to {} µs (the period defaults to the runtime)",
            periods.min_us, periods.max_us
        ),
        found,
    ))
}

fn policy_name(policy: Policy) -> PolicyName {
    match policy {
        Policy::Fifo(_) => PolicyName::Fifo,
        Policy::RoundRobin(_) => PolicyName::RoundRobin,
        Policy::Batch => PolicyName::Batch,
        Policy::Idle => PolicyName::Idle,
        Policy::Deadline => PolicyName::Deadline,
        Policy::Other | Policy::Unknown(_) => PolicyName::Other,
    }
}

/// The memory settings of a task's `tinct` key (docs/RT-APP.md).
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct TinctKeys {
    pub(super) partitions: Vec<u32>,
    pub(super) working_set: Option<u64>,
    pub(super) kernel: Option<Kernel>,
    pub(super) memory_percent: Option<u8>,
}

fn parse_tinct(ctx: &Ctx<'_>, path: &[&str], value: &OrderedValue) -> Result<TinctKeys> {
    let inner = [path, &["tinct"]].concat();
    let mut keys = TinctKeys::default();
    for (k, v) in ctx.object(path, "tinct", value)? {
        match k.as_str() {
            "partitions" => {
                let bad = |found: String| {
                    ctx.key_error(
                        &inner,
                        k,
                        "a non-empty array of partition numbers ≥ 1",
                        found,
                    )
                };
                match v {
                    OrderedValue::Array(items) if !items.is_empty() => {
                        for item in items {
                            match item {
                                OrderedValue::Int(p) if (1..=4096).contains(p) => {
                                    keys.partitions.push(*p as u32)
                                }
                                other => return Err(bad(other.kind())),
                            }
                        }
                    }
                    other => return Err(bad(other.kind())),
                }
            }
            "working_set" => {
                let text = ctx.string(&inner, k, v)?;
                let size = parse_size(text).map_err(|e| {
                    ctx.key_error(
                        &inner,
                        k,
                        "a size such as \"4MiB\"",
                        format!("{text:?}: {e}"),
                    )
                })?;
                keys.working_set = Some(size.0);
            }
            "kernel" => {
                let text = ctx.string(&inner, k, v)?;
                let names: Vec<&str> = Kernel::ALL.iter().map(|(n, _)| *n).collect();
                keys.kernel = Some(
                    Kernel::ALL
                        .iter()
                        .find(|(n, _)| *n == text)
                        .map(|(_, kernel)| *kernel)
                        .ok_or_else(|| {
                            ctx.key_error(&inner, k, names.join(", "), format!("\"{text}\""))
                        })?,
                );
            }
            "memory_percent" => {
                keys.memory_percent = Some(ctx.int_in(&inner, k, v, 0..=100, "a percentage")? as u8)
            }
            "banks" | "colors" => {
                return Err(ctx.key_error(
                    &inner,
                    k,
                    "`partitions` (tinct run places working sets by cache partitions; DRAM \
                     banks and raw colours are for `tinct exec`)",
                    format!("`{k}`"),
                ));
            }
            other => {
                return Err(ctx.unknown(
                    &inner,
                    other,
                    &["partitions", "working_set", "kernel", "memory_percent"],
                ));
            }
        }
    }
    Ok(keys)
}

/// Settings read at task level and inherited by the parse of its phases.
pub(super) struct TaskDefaults {
    pub(super) policy: PolicyName,
    pub(super) mem_buffer_bytes: u64,
}

/// One task of the file: its instances as threads (forked copies are
/// added later from the registry).
pub(super) struct ParsedTask {
    pub(super) threads: Vec<TaskSpec>,
    /// The template (instance 0 tasks have no thread but can be forked).
    pub(super) template: TaskSpec,
}

fn parse_cpus(ctx: &Ctx<'_>, path: &[&str], value: &OrderedValue) -> Result<Vec<u32>> {
    let bad =
        |found: String| ctx.key_error(path, "cpus", "a non-empty array of CPU numbers", found);
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

fn parse_group(
    ctx: &Ctx<'_>,
    path: &[&str],
    key: &str,
    v: &OrderedValue,
) -> Result<Option<String>> {
    let group = ctx.string(path, key, v)?;
    if group.is_empty() {
        return Ok(None); // rt-app: "" is no task group
    }
    if let Some(problem) = tinct_sys::cgroup::group_name_problem(group) {
        return Err(ctx.key_error(
            path,
            key,
            "a task group path starting with / (e.g. \"/tg1/tg11\"), of directory names \
             (not `.`, `..` or a cgroup interface file such as cgroup.procs)",
            format!("{group:?}, with {problem}"),
        ));
    }
    Ok(Some(group.to_string()))
}

/// NUMA binding: accepted only when it names every node of this machine
/// (then it changes nothing); anything else is refused by name.
fn check_numa(ctx: &Ctx<'_>, path: &[&str], key: &str, v: &OrderedValue) -> Result<()> {
    let nodes = tinct_sys::topology::Topology::read(&tinct_sys::SysRoot::live())
        .map(|t| t.numa_nodes.len())
        .unwrap_or(1)
        .max(1);
    let asked: Vec<i64> = match v {
        OrderedValue::Array(items) => items
            .iter()
            .filter_map(|i| match i {
                OrderedValue::Int(n) => Some(*n),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    let all = (0..nodes as i64).all(|n| asked.contains(&n));
    if !all {
        return Err(ctx.key_error(
            path,
            key,
            format!(
                "every NUMA node of this machine (0..{nodes}): binding memory to some nodes is \
                 not done by tinct run"
            ),
            format!("{asked:?}"),
        ));
    }
    Ok(())
}

/// Parses task `name`.
pub(super) fn parse_task(
    ctx: &Ctx<'_>,
    name: &str,
    value: &OrderedValue,
    defaults: &TaskDefaults,
    registry: &mut Registry,
) -> Result<ParsedTask> {
    let path = ["tasks", name];
    if let Some(problem) = file_name_problem(name) {
        return Err(ctx.error(
            &path,
            format!("task name {name:?}"),
            "a task name without `/` or control characters (it names the thread and its \
             rt-app log <log_basename>-<name>.log)",
            format!("{name:?}, with {problem}"),
        ));
    }
    let entries = ctx.object(&["tasks"], name, value)?;
    let mut instance = 1i64;
    let mut task_loop: Option<i64> = None;
    let mut cpus = None;
    let mut delay_ns = 0;
    let mut taskgroup = None;
    let mut sched = SchedKeys::default();
    let mut tinct = TinctKeys::default();
    let mut phases_value = None;
    let mut events: Vec<(&str, &str, &OrderedValue)> = Vec::new();
    for (key, v) in entries {
        let key = key.as_str();
        if let Some(event) = event_of(key) {
            events.push((key, event, v));
            continue;
        }
        match key {
            "instance" => {
                instance = ctx.int(&path, key, v, 0)?;
                if instance > MAX_TASKS as i64 {
                    return Err(ctx.key_error(
                        &path,
                        key,
                        format!("0 to {MAX_TASKS} instances (the limit of threads in one run)"),
                        instance.to_string(),
                    ));
                }
            }
            "loop" => task_loop = Some(ctx.int(&path, key, v, -1)?),
            "cpus" => cpus = Some(parse_cpus(ctx, &path, v)?),
            "delay" => delay_ns = ctx.micros(&path, key, v, 0)?,
            "taskgroup" => taskgroup = parse_group(ctx, &path, key, v)?,
            "nodes_membind" | "membind_nodes" => check_numa(ctx, &path, key, v)?,
            "phases" => phases_value = Some(v),
            "tinct" => tinct = parse_tinct(ctx, &path, v)?,
            k if SCHED_KEYS.contains(&k) => sched.read(ctx, &path, k, v)?,
            k if OLD_GRAMMAR.contains(&k) => return Err(old_grammar(ctx, &path, k)),
            other => {
                let mut allowed = TASK_KEYS.to_vec();
                allowed.extend(SCHED_KEYS);
                allowed.extend(super::events::EVENTS);
                return Err(ctx.unknown(&path, other, &allowed));
            }
        }
    }
    let scheduling = sched.resolve(ctx, &path, defaults.policy)?;
    let kernel = tinct.kernel.unwrap_or(Kernel::Compute);
    let event_context = EventContext {
        task: name,
        instances: u64::try_from(instance).unwrap_or(0),
        kernel,
        memory_percent: memory_percent(kernel, tinct.memory_percent),
    };
    let (phases, loops) = match phases_value {
        Some(phases_value) => {
            if let Some((key, _, _)) = events.first() {
                return Err(ctx.error(
                    &path,
                    format!("events in tasks.{name}"),
                    "either `phases` or events directly in the task, not both",
                    format!("`phases` and `{key}`"),
                ));
            }
            let mut phases = Vec::new();
            let mut in_force = policy_name(scheduling.policy);
            for (phase_name, phase_value) in ctx.object(&path, "phases", phases_value)? {
                let phase = parse_phase(
                    ctx,
                    name,
                    phase_name,
                    phase_value,
                    in_force,
                    &event_context,
                    registry,
                )?;
                if let Some(s) = phase.scheduling {
                    in_force = policy_name(s.policy);
                }
                phases.push(phase);
            }
            (phases, task_loop.unwrap_or(-1))
        }
        None => {
            // One phase: the task's events, its `loop` is the phase's and
            // the task runs once (rt-app: without `loop`, forever).
            let steps = parse_steps(ctx, &path, &events, &event_context, registry)?;
            let phase_loops = task_loop.unwrap_or(-1);
            (
                vec![Phase::new("main", u64::try_from(phase_loops).ok(), steps)],
                1,
            )
        }
    };
    check_policy_and_placement(
        ctx,
        &path,
        &scheduling,
        cpus.as_deref(),
        taskgroup.is_some(),
    )?;
    for phase in &phases {
        let effective = phase.scheduling.unwrap_or(scheduling);
        let phase_path = ["tasks", name, "phases", phase.name.as_str()];
        check_policy_and_placement(
            ctx,
            &phase_path,
            &effective,
            phase.cpus.as_deref().or(cpus.as_deref()),
            phase.taskgroup.is_some() || taskgroup.is_some(),
        )?;
    }
    let uses_memory = phases
        .iter()
        .flat_map(|p| &p.steps)
        .any(|s| matches!(s, Step::Mem { .. } | Step::IoRun { .. }));
    let working_set = tinct
        .working_set
        .unwrap_or(if uses_memory || kernel != Kernel::Compute {
            defaults.mem_buffer_bytes
        } else {
            0
        });
    let template = TaskSpec {
        program: None,
        name: name.to_string(),
        cpus,
        scheduling,
        deadline_ns: None,
        offset_ns: delay_ns,
        jitter_ns: 0,
        phases,
        loops: u64::try_from(loops).ok(),
        working_set,
        partitions: tinct.partitions,
        taskgroup,
        forked_by: None,
        bound: None,
        line: ctx.line_of(&path),
    };
    let threads = match instance {
        0 => Vec::new(),
        1 => vec![template.clone()],
        n => (0..n)
            .map(|k| TaskSpec {
                name: format!("{name}-{k}"),
                ..template.clone()
            })
            .collect(),
    };
    let mut threads = threads;
    for thread in &mut threads {
        give_unique_timers(thread, registry);
    }
    Ok(ParsedTask { threads, template })
}

/// Gives `thread` its own copy of every `unique…` timer it names.
pub(super) fn give_unique_timers(thread: &mut TaskSpec, registry: &mut Registry) {
    let name = thread.name.clone();
    for step in thread.phases.iter_mut().flat_map(|p| &mut p.steps) {
        if let Step::Timer { timer, .. } = step
            && registry.resources.timers[*timer].name.starts_with("unique")
            && !registry.resources.timers[*timer].name.contains('#')
        {
            *timer = unique_timer(registry, *timer, &name);
        }
    }
}

/// rt-app's rule: a task group only for SCHED_OTHER and SCHED_IDLE; and
/// the kernel's: a SCHED_DEADLINE thread's affinity is its whole root
/// domain (EPERM otherwise), which tinct can make of one CPU
/// (`tinct_sys::dl_partitions`) but not of a subset of several.
fn check_policy_and_placement(
    ctx: &Ctx<'_>,
    path: &[&str],
    scheduling: &Scheduling,
    cpus: Option<&[u32]>,
    grouped: bool,
) -> Result<()> {
    if grouped && !matches!(scheduling.policy, Policy::Other | Policy::Idle) {
        return Err(ctx.error(
            path,
            format!("`taskgroup` in {}", where_(path)),
            "a task group only for SCHED_OTHER or SCHED_IDLE threads (rt-app's rule)",
            scheduling.policy.kernel_name(),
        ));
    }
    if let Some(cpus) = cpus
        && cpus.len() > 1
        && scheduling.policy == Policy::Deadline
    {
        return Err(ctx.error(
            path,
            format!("`cpus` in {}", where_(path)),
            "one CPU or no `cpus` for a SCHED_DEADLINE thread: the kernel refuses (EPERM) a \
             deadline thread whose affinity is not its whole root domain; tinct makes one CPU \
             a root domain of its own (partitioned EDF), not a subset of several",
            format!("{} CPUs with SCHED_DEADLINE", cpus.len()),
        ));
    }
    Ok(())
}

fn old_grammar(ctx: &Ctx<'_>, path: &[&str], key: &str) -> crate::RtError {
    ctx.key_error(
        path,
        key,
        "rt-app's current grammar (events such as run, sleep, timer, lock): `exec`, `period`, \
         `deadline`, `lock_order` and per-task `resources` are its grammar before 2015, which \
         current rt-app refuses too",
        format!("`{key}`"),
    )
}

fn parse_phase(
    ctx: &Ctx<'_>,
    task: &str,
    name: &str,
    value: &OrderedValue,
    in_force: PolicyName,
    event_context: &EventContext<'_>,
    registry: &mut Registry,
) -> Result<Phase> {
    let path = ["tasks", task, "phases", name];
    let mut loops = 1i64;
    let mut cpus = None;
    let mut taskgroup = None;
    let mut sched = SchedKeys::default();
    let mut events = Vec::new();
    for (key, v) in ctx.object(&path[..3], name, value)? {
        let key = key.as_str();
        if let Some(event) = event_of(key) {
            events.push((key, event, v));
            continue;
        }
        match key {
            "loop" => loops = ctx.int(&path, key, v, -1)?,
            "cpus" => cpus = Some(parse_cpus(ctx, &path, v)?),
            "taskgroup" => taskgroup = parse_group(ctx, &path, key, v)?,
            "nodes_membind" | "membind_nodes" => check_numa(ctx, &path, key, v)?,
            k if SCHED_KEYS.contains(&k) => sched.read(ctx, &path, k, v)?,
            k if OLD_GRAMMAR.contains(&k) => return Err(old_grammar(ctx, &path, k)),
            other => {
                let mut allowed = PHASE_KEYS.to_vec();
                allowed.extend(SCHED_KEYS);
                allowed.extend(super::events::EVENTS);
                return Err(ctx.unknown(&path, other, &allowed));
            }
        }
    }
    let steps = parse_steps(ctx, &path, &events, event_context, registry)?;
    Ok(Phase {
        name: name.to_string(),
        loops: u64::try_from(loops).ok(),
        steps,
        scheduling: if sched.any() {
            Some(sched.resolve(ctx, &path, in_force)?)
        } else {
            None
        },
        cpus,
        taskgroup,
        line: ctx.line_of(&path),
    })
}

fn parse_steps(
    ctx: &Ctx<'_>,
    path: &[&str],
    events: &[(&str, &str, &OrderedValue)],
    event_context: &EventContext<'_>,
    registry: &mut Registry,
) -> Result<Vec<Step>> {
    if events.is_empty() {
        return Err(ctx.error(
            path,
            format!("events of {}", where_(path)),
            "at least one event (rt-app refuses a phase without events)",
            "none",
        ));
    }
    let mut steps = Vec::with_capacity(events.len());
    for (key, event, value) in events {
        if matches!(value, OrderedValue::Bool(_)) && *event == "sleep" {
            return Err(old_grammar(ctx, path, key));
        }
        steps.push(parse_event(
            ctx,
            path,
            key,
            value,
            event,
            event_context,
            registry,
        )?);
    }
    Ok(steps)
}
