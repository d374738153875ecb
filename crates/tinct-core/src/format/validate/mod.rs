//! From the file as written to a validated [`TaskSet`].
//!
//! The rules: positive periods; D ≤ T; C^p non-increasing in p with p in
//! 1..=N_P; some C ≤ D; |S(i)| at least the memory minimum
//! ⌈M_i / (M_total/N_P)⌉ and at least the first listed p; partitions within
//! 1..=N_P and not repeated; cores within 0..N_C; unique task names;
//! priorities given for all tasks or none, and unique on a core.

mod graph;
mod platform;
mod resources;

use super::locate::{Seg, SourceIndex, path};
use super::raw::{RawBody, RawPartitions, RawTask, RawTaskSet, RawWcet, Scalar};
use super::{InputError, LoadOptions};
use crate::limits::{Limit, MIN_DEADLINE_RUNTIME};
use crate::model::{
    Body, CriticalSection, JobProtocol, Kernel, Platform, ProgramBody, Resource, Task, TaskPolicy,
    TaskSet, Trigger, WcetTable, Work,
};
use crate::partitions::PartitionSet;
use crate::units::{Bytes, Nanos, parse_duration, parse_size};
use std::collections::{BTreeMap, HashMap};

/// Builds errors that know the file and where each path stands in it.
struct Reporter<'a> {
    file: &'a str,
    index: &'a SourceIndex,
}

impl Reporter<'_> {
    fn error(
        &self,
        at: &[Seg],
        field: String,
        expected: impl Into<String>,
        found: impl Into<String>,
    ) -> InputError {
        InputError {
            file: self.file.to_string(),
            line: Some(self.index.line_of(at)),
            field,
            expected: expected.into(),
            found: found.into(),
        }
    }
}

/// Names a field of a task for messages: ``task 'a' field `deadline` ``.
fn task_field(name: &str, field: &str) -> String {
    format!("task '{name}' field `{field}`")
}

fn platform_field(field: &str) -> String {
    format!("platform field `{field}`")
}

/// A field being validated: its path and its name for messages.
struct Field<'r, 'a> {
    reporter: &'r Reporter<'a>,
    at: Vec<Seg>,
    name: String,
}

impl Field<'_, '_> {
    fn fail(&self, expected: impl Into<String>, found: impl Into<String>) -> InputError {
        self.reporter
            .error(&self.at, self.name.clone(), expected, found)
    }

    /// `value` as the file writes it: a number the parser read as a float
    /// is shown as its text in the file (an integer beyond 64 bits is not
    /// rounded), any other value as read.
    fn shown(&self, value: &Scalar) -> String {
        match value {
            Scalar::Float(_) => self
                .reporter
                .index
                .written(&self.at)
                .map_or_else(|| value.to_string(), str::to_string),
            _ => value.to_string(),
        }
    }

    fn duration(&self, value: &Scalar) -> Result<Nanos, InputError> {
        let expected = "a duration with a unit, such as \"40ms\" or \"45.3us\" (ns, us, ms, s)";
        match value {
            Scalar::Text(text) => {
                parse_duration(text).map_err(|e| self.fail(expected, format!("{value} ({e})")))
            }
            _ => Err(self.fail(expected, self.shown(value))),
        }
    }

    fn size(&self, value: &Scalar) -> Result<Bytes, InputError> {
        let expected = "a size such as \"18MiB\" (B, KiB, MiB, GiB) or a whole number of bytes";
        match value {
            Scalar::Text(text) => {
                parse_size(text).map_err(|e| self.fail(expected, format!("{value} ({e})")))
            }
            Scalar::Int(i) if *i >= 0 => Ok(Bytes(*i as u64)),
            _ => Err(self.fail(expected, self.shown(value))),
        }
    }

    fn integer(&self, value: &Scalar, min: i64, max: i64, what: &str) -> Result<u32, InputError> {
        match value {
            Scalar::Int(i) if (min..=max).contains(i) => Ok(*i as u32),
            _ => Err(self.fail(
                format!("{what}, a whole number from {min} to {max}"),
                self.shown(value),
            )),
        }
    }
}

pub(super) fn validate(
    raw: RawTaskSet,
    file: &str,
    index: &SourceIndex,
    options: &LoadOptions,
) -> Result<TaskSet, InputError> {
    let reporter = Reporter { file, index };
    let platform = platform::validate_platform(&raw.platform, &reporter, options)?;
    if raw.task.is_empty() {
        return Err(reporter.error(
            &path(&["task"]),
            "task list".into(),
            "at least one [[task]]",
            "none",
        ));
    }
    if raw.task.len() > super::MAX_TASKS {
        return Err(reporter.error(
            &path(&["task"]),
            "task list".into(),
            Limit::SetTasks.expected(),
            format!("{} tasks", raw.task.len()),
        ));
    }
    let mut names: HashMap<&str, usize> = HashMap::new();
    for (i, raw_task) in raw.task.iter().enumerate() {
        check_name(&raw_task.name, i, &reporter)?;
        if let Some(first) = names.insert(raw_task.name.as_str(), i) {
            return Err(reporter.error(
                &[
                    Seg::Key("task".into()),
                    Seg::Index(i),
                    Seg::Key("name".into()),
                ],
                task_field(&raw_task.name, "name"),
                format!("a unique task name (task #{} already has it)", first + 1),
                format!("a second task named '{}'", raw_task.name),
            ));
        }
    }
    let resources = resources::validate_resources(&raw.resource, &reporter)?;
    let graph = graph::validate_graph(&raw.task, &raw.edge, &names, &reporter)?;
    let context = TaskContext {
        platform: &platform,
        resources: &resources,
        reporter: &reporter,
    };
    let tasks = raw
        .task
        .iter()
        .enumerate()
        .map(|(i, raw_task)| {
            validate_task(raw_task, i, graph.periods[i], graph.triggers[i], &context)
        })
        .collect::<Result<Vec<Task>, InputError>>()?;
    check_priorities(&raw.task, &tasks, platform.cores, &reporter)?;
    let task_lines = (0..tasks.len())
        .map(|i| index.line_of(&[Seg::Key("task".into()), Seg::Index(i)]))
        .collect();
    let period_lines = (0..tasks.len())
        .map(|i| {
            index.line_of(&[
                Seg::Key("task".into()),
                Seg::Index(i),
                Seg::Key("period".into()),
            ])
        })
        .collect();
    Ok(TaskSet {
        platform,
        tasks,
        resources,
        edges: graph.edges,
        task_lines,
        period_lines,
    })
}

/// What every task is validated against.
struct TaskContext<'c> {
    platform: &'c Platform,
    resources: &'c [Resource],
    reporter: &'c Reporter<'c>,
}

/// A task name short enough and printable: it goes into every table,
/// message and trace (messages name the task by its position until it
/// passes).
fn check_name(name: &str, i: usize, reporter: &Reporter<'_>) -> Result<(), InputError> {
    let at = [
        Seg::Key("task".into()),
        Seg::Index(i),
        Seg::Key("name".into()),
    ];
    check_printable_name(name, &at, format!("task #{} field `name`", i + 1), reporter)
}

/// A name (of a task or a resource) of at most [`super::MAX_NAME_BYTES`]
/// bytes without control characters.
fn check_printable_name(
    name: &str,
    at: &[Seg],
    field: String,
    reporter: &Reporter<'_>,
) -> Result<(), InputError> {
    if name.len() > super::MAX_NAME_BYTES {
        let shown: String = name.chars().take(32).collect();
        return Err(reporter.error(
            at,
            field,
            format!("a name of at most {} bytes", super::MAX_NAME_BYTES),
            format!("a name of {} bytes starting {shown:?}", name.len()),
        ));
    }
    if let Some(c) = name.chars().find(|c| c.is_control()) {
        return Err(reporter.error(
            at,
            field,
            "a name without control characters (it is printed in tables and traces)",
            format!("{c:?} in {:?}", name.chars().take(32).collect::<String>()),
        ));
    }
    Ok(())
}

fn validate_task(
    raw: &RawTask,
    i: usize,
    period: Nanos,
    trigger: Trigger,
    context: &TaskContext<'_>,
) -> Result<Task, InputError> {
    let (platform, reporter) = (context.platform, context.reporter);
    let field = |name: &str| Field {
        reporter,
        at: vec![
            Seg::Key("task".into()),
            Seg::Index(i),
            Seg::Key(name.into()),
        ],
        name: task_field(&raw.name, name),
    };
    if raw.name.trim().is_empty() {
        return Err(field("name").fail("a non-empty task name", "an empty string"));
    }
    let deadline = match &raw.deadline {
        None => period,
        Some(value) => {
            let deadline_field = field("deadline");
            let deadline = deadline_field.duration(value)?;
            if deadline == Nanos::ZERO {
                return Err(deadline_field.fail("a deadline above zero", "0"));
            }
            if deadline > period {
                return Err(deadline_field.fail(
                    format!("a deadline at most the period ({period}; tinct analyzes constrained deadlines D ≤ T)"),
                    deadline.to_string(),
                ));
            }
            deadline
        }
    };
    let memory = field("memory").size(&raw.memory)?;
    let wcet = validate_wcet(&raw.wcet, i, &raw.name, platform, deadline, reporter)?;
    let priority = match &raw.priority {
        None => None,
        Some(v) => Some(field("priority").integer(
            v,
            1,
            i64::from(u32::MAX),
            "a priority (1 is the highest)",
        )?),
    };
    let core = match &raw.core {
        None => None,
        Some(v) => Some(field("core").integer(
            v,
            0,
            i64::from(platform.cores) - 1,
            &format!("a core of the platform's {}", platform.cores),
        )?),
    };
    let partitions = match &raw.partitions {
        None => None,
        Some(p) => Some(validate_partitions(
            p,
            &field("partitions"),
            platform,
            memory,
            &wcet,
        )?),
    };
    let (body, program) = match &raw.body {
        None => (None, None),
        Some(b) if b.command.is_some() => {
            (None, Some(validate_program(b, i, &raw.name, reporter)?))
        }
        Some(b) => (
            Some(validate_body(b, i, &raw.name, memory, reporter)?),
            None,
        ),
    };
    let critical_sections =
        resources::validate_sections(raw, i, context.resources, &wcet, reporter)?;
    if program.is_some() && !critical_sections.is_empty() {
        return Err(Field {
            reporter,
            at: vec![
                Seg::Key("task".into()),
                Seg::Index(i),
                Seg::Key("critical_sections".into()),
            ],
            name: task_field(&raw.name, "critical_sections"),
        }
        .fail(
            "no critical sections with a program body (a program does not lock tinct's \
             resources; model its locking inside its C)",
            format!("{} sections", critical_sections.len()),
        ));
    }
    resources::validate_sections_in_body(raw, i, &critical_sections, body.as_ref(), reporter)?;
    let jitter = match &raw.jitter {
        None => Nanos::ZERO,
        Some(v) => field("jitter").duration(v)?,
    };
    let blocking = match &raw.blocking {
        None => None,
        Some(v) => Some(field("blocking").duration(v)?),
    };
    let (policy, runtime) = validate_policy(raw, deadline, trigger, &critical_sections, field)?;
    Ok(Task {
        name: raw.name.clone(),
        period,
        deadline,
        memory,
        wcet,
        priority,
        core,
        partitions,
        body,
        program,
        critical_sections,
        jitter,
        blocking,
        trigger,
        policy,
        runtime,
    })
}

/// The task's `policy` and, for a `deadline` task, its `runtime` Q; what a
/// SCHED_DEADLINE task cannot have yet (a priority, a data trigger,
/// critical sections) is refused here, with the field that has it.
fn validate_policy<'r, 'a: 'r>(
    raw: &RawTask,
    deadline: Nanos,
    trigger: Trigger,
    sections: &[CriticalSection],
    field: impl Fn(&str) -> Field<'r, 'a>,
) -> Result<(TaskPolicy, Option<Nanos>), InputError> {
    let policy = match raw.policy.as_deref() {
        None | Some("fifo") => TaskPolicy::Fifo,
        Some("deadline") => TaskPolicy::Deadline,
        Some(other) => {
            return Err(field("policy").fail(
                "\"fifo\" (SCHED_FIFO, the default) or \"deadline\" (SCHED_DEADLINE)",
                format!("{other:?}"),
            ));
        }
    };
    if policy == TaskPolicy::Fifo {
        if raw.runtime.is_some() {
            return Err(field("runtime").fail(
                "no `runtime` on a SCHED_FIFO task (it is the budget of a `policy = \"deadline\"` reservation)",
                "a runtime",
            ));
        }
        return Ok((policy, None));
    }
    if raw.priority.is_some() {
        return Err(field("priority").fail(
            "no `priority` on a `policy = \"deadline\"` task (EDF orders its jobs by their deadlines, and the kernel runs it above every SCHED_FIFO thread)",
            "a priority",
        ));
    }
    if trigger == Trigger::Data {
        return Err(field("trigger").fail(
            "a timer-released task: a SCHED_DEADLINE reservation released by its producers' data is not analysed yet",
            "\"data\"",
        ));
    }
    if raw.blocking.is_some() {
        return Err(field("blocking").fail(
            "no `blocking` on a `policy = \"deadline\"` task: blocking under EDF (the Stack Resource Policy) is not analysed yet",
            "a blocking",
        ));
    }
    if !sections.is_empty() {
        return Err(field("critical_sections").fail(
            "no critical sections on a `policy = \"deadline\"` task: blocking under EDF (the Stack Resource Policy) is not analysed yet",
            match sections.len() {
                1 => "1 critical section".to_string(),
                n => format!("{n} critical sections"),
            },
        ));
    }
    let runtime = match &raw.runtime {
        None => None,
        Some(value) => {
            let runtime_field = field("runtime");
            let runtime = runtime_field.duration(value)?;
            if runtime < MIN_DEADLINE_RUNTIME || runtime > deadline {
                return Err(runtime_field.fail(
                    format!(
                        "a runtime from {MIN_DEADLINE_RUNTIME} (the kernel's smallest) to the deadline {deadline} (the kernel refuses a runtime above it)"
                    ),
                    runtime.to_string(),
                ));
            }
            Some(runtime)
        }
    };
    Ok((policy, runtime))
}

fn validate_wcet(
    raw: &RawWcet,
    i: usize,
    name: &str,
    platform: &Platform,
    deadline: Nanos,
    reporter: &Reporter<'_>,
) -> Result<WcetTable, InputError> {
    let at = |key: Option<&str>| {
        let mut at = vec![
            Seg::Key("task".into()),
            Seg::Index(i),
            Seg::Key("wcet".into()),
        ];
        at.extend(key.map(|k| Seg::Key(k.to_string())));
        at
    };
    let field = |key: Option<&str>| Field {
        reporter,
        at: at(key),
        name: match key {
            Some(p) => format!("{} (C^{p})", task_field(name, "wcet")),
            None => task_field(name, "wcet"),
        },
    };
    let table = match raw {
        RawWcet::Single(value) => {
            let c = field(None).duration(value)?;
            if c == Nanos::ZERO {
                return Err(field(None).fail("a WCET above zero", "0"));
            }
            BTreeMap::from([(1, c)])
        }
        RawWcet::Table(entries) => {
            if entries.is_empty() {
                return Err(
                    field(None).fail("at least one entry p = \"duration\"", "an empty table")
                );
            }
            let mut table = BTreeMap::new();
            let mut keys: HashMap<u32, &str> = HashMap::new();
            for (key, value) in entries {
                let f = field(Some(key));
                let p: u32 = key
                    .parse()
                    .ok()
                    .filter(|p| (1..=platform.partitions).contains(p))
                    .ok_or_else(|| {
                        f.fail(
                            format!(
                                "a number of partitions p from 1 to N_P = {}",
                                platform.partitions
                            ),
                            format!("key '{key}'"),
                        )
                    })?;
                if let Some(first) = keys.insert(p, key) {
                    return Err(f.fail(
                        format!("each p listed once (key '{first}' already gives C^{p})"),
                        format!("key '{key}', C^{p} again"),
                    ));
                }
                let c = f.duration(value)?;
                if c == Nanos::ZERO {
                    return Err(f.fail("a WCET above zero", "0"));
                }
                table.insert(p, c);
            }
            // C^p must not increase with p (kim2013 Fig. 6: more cache never hurts the WCET).
            let mut previous: Option<(u32, Nanos)> = None;
            for (&p, &c) in &table {
                if let Some((q, before)) = previous
                    && c > before
                {
                    return Err(field(Some(&p.to_string())).fail(
                        format!("C^p non-increasing in p: at most C^{q} = {before}"),
                        format!("C^{p} = {c}"),
                    ));
                }
                previous = Some((p, c));
            }
            table
        }
    };
    let table = WcetTable::new(table);
    let best = table.at(platform.partitions).unwrap_or(table.worst());
    if best > deadline {
        return Err(field(None).fail(
            format!("a WCET that can meet the deadline {deadline} with some number of partitions"),
            format!("C^{} = {best} > D", platform.partitions),
        ));
    }
    Ok(table)
}

fn validate_partitions(
    raw: &RawPartitions,
    field: &Field<'_, '_>,
    platform: &Platform,
    memory: Bytes,
    wcet: &WcetTable,
) -> Result<PartitionSet, InputError> {
    // A list is partitions one by one; a range string is tinct-base's list
    // grammar (`"1-8,12"`), its spans read as written, not expanded:
    // `"1-99999999999"` is one span, refused by its end before anything is
    // walked.
    // (first, last, stride): a list's numbers are i64 (a negative one is
    // named as written), a string's u64; i128 holds both.
    let spans: Vec<(i128, i128, usize)> = match raw {
        RawPartitions::List(list) => list
            .iter()
            .map(|&p| (i128::from(p), i128::from(p), 1))
            .collect(),
        RawPartitions::Text(text) => tinct_base::list::parse_spans(text)
            .map_err(|_| {
                field.fail(
                    "a list of partitions such as [1, 2] or a range string such as \"1-8,12\"",
                    format!("\"{text}\""),
                )
            })?
            .into_iter()
            .map(|span| {
                let stride = usize::try_from(span.stride).unwrap_or(usize::MAX);
                (i128::from(span.first), i128::from(span.last), stride)
            })
            .collect(),
    };
    let mut set = PartitionSet::EMPTY;
    for &(first, last, stride) in &spans {
        // Both ends in 1..=N_P before the span is walked.
        if let Some(p) = [first, last]
            .into_iter()
            .find(|&p| p < 1 || p > i128::from(platform.partitions))
        {
            return Err(field.fail(
                format!("partitions numbered 1 to N_P = {}", platform.partitions),
                format!("partition {p}"),
            ));
        }
        for p in (first..=last).step_by(stride) {
            if set.contains(p as u32) {
                return Err(
                    field.fail("each partition listed once", format!("partition {p} twice"))
                );
            }
            set.insert(p as u32);
        }
    }
    if set.is_empty() {
        return Err(field.fail("at least one partition", "an empty list"));
    }
    let memory_minimum = platform.min_partitions_for(memory);
    if set.len() < memory_minimum {
        return Err(field.fail(
            format!(
                "at least ⌈M_i / (M_total/N_P)⌉ = ⌈{memory} / {}⌉ = {memory_minimum} partitions to hold the task's memory",
                platform.partition_memory()
            ),
            format!("{} partitions {set}", set.len()),
        ));
    }
    if wcet.at(set.len()).is_none() {
        return Err(field.fail(
            format!(
                "at least {} partitions (the smallest p listed in wcet)",
                wcet.first_p()
            ),
            format!("{} partitions {set}", set.len()),
        ));
    }
    Ok(set)
}

/// The field `body.KEY` of task `name` (number `i`).
fn body_field<'r, 'a>(
    reporter: &'r Reporter<'a>,
    i: usize,
    name: &str,
    key: &str,
) -> Field<'r, 'a> {
    Field {
        reporter,
        at: vec![
            Seg::Key("task".into()),
            Seg::Index(i),
            Seg::Key("body".into()),
            Seg::Key(key.into()),
        ],
        name: format!("task '{name}' field `body.{key}`"),
    }
}

/// A program body (`command`, with `protocol` and `mmap`): none of a
/// kernel's fields, a program that is named, arguments without NUL.
/// Whether the program exists is the run's to check (`analyze` and `plan`
/// need no program).
fn validate_program(
    raw: &RawBody,
    i: usize,
    name: &str,
    reporter: &Reporter<'_>,
) -> Result<ProgramBody, InputError> {
    let field = |key: &str| body_field(reporter, i, name, key);
    let kernel_fields = [
        ("kernel", raw.kernel.is_some()),
        ("working_set", raw.working_set.is_some()),
        ("target", raw.target.is_some()),
        ("iterations", raw.iterations.is_some()),
        ("memory_percent", raw.memory_percent.is_some()),
    ];
    if let Some((key, _)) = kernel_fields.iter().find(|(_, given)| *given) {
        return Err(field(key).fail(
            "a body that is either one of tinct's kernels or a `command`, not both",
            format!("`{key}` beside `command`"),
        ));
    }
    let command = raw.command.clone().unwrap_or_default();
    match command.first() {
        None => {
            return Err(field("command").fail(
                "a program and its arguments, e.g. [\"./filter\", \"-q\"]",
                "[]",
            ));
        }
        Some(program) if program.trim().is_empty() => {
            return Err(
                field("command").fail("a program's name or path first", format!("{program:?}"))
            );
        }
        _ => {}
    }
    if let Some(argument) = command.iter().find(|a| a.contains('\0')) {
        return Err(
            field("command").fail("arguments without NUL characters", format!("{argument:?}"))
        );
    }
    let protocol = match &raw.protocol {
        None => JobProtocol::Lines,
        Some(text) => JobProtocol::ALL
            .iter()
            .find(|(n, _)| n == text)
            .map(|&(_, p)| p)
            .ok_or_else(|| {
                let names: Vec<&str> = JobProtocol::ALL.iter().map(|(n, _)| *n).collect();
                field("protocol").fail(
                    format!("one of {}", names.join(", ")),
                    format!("\"{text}\""),
                )
            })?,
    };
    Ok(ProgramBody {
        command,
        protocol,
        mmap: raw.mmap.unwrap_or(false),
    })
}

/// A job body; `memory` is the task's M_i, its working set when the body
/// names none. The run's limits are checked here, so `analyze`, `plan` and
/// `run` refuse the same bodies with the file's line: a target of at most
/// [`super::MAX_RUN_TIME_NS`], a memory kernel's working set of at least
/// [`super::MIN_WORKING_SET_BYTES`].
fn validate_body(
    raw: &RawBody,
    i: usize,
    name: &str,
    memory: Bytes,
    reporter: &Reporter<'_>,
) -> Result<Body, InputError> {
    let field = |key: &str| body_field(reporter, i, name, key);
    let names: Vec<&str> = Kernel::ALL.iter().map(|(n, _)| *n).collect();
    let Some(kernel_name) = &raw.kernel else {
        return Err(field("kernel").fail(
            format!("a kernel (one of {}) or a `command`", names.join(", ")),
            "neither",
        ));
    };
    let kernel = Kernel::ALL
        .iter()
        .find(|(n, _)| n == kernel_name)
        .map(|&(_, k)| k)
        .ok_or_else(|| {
            field("kernel").fail(
                format!("one of {}", names.join(", ")),
                format!("\"{kernel_name}\""),
            )
        })?;
    for (key, given) in [
        ("protocol", raw.protocol.is_some()),
        ("mmap", raw.mmap.is_some()),
    ] {
        if given {
            return Err(field(key).fail(
                format!("`{key}` only with a `command`"),
                format!("kernel \"{kernel_name}\""),
            ));
        }
    }
    let working_set = match &raw.working_set {
        None => None,
        Some(v) => Some(field("working_set").size(v)?),
    };
    let work = match (&raw.target, &raw.iterations) {
        (Some(_), Some(_)) => {
            return Err(
                field("iterations").fail("either `target` or `iterations`, not both", "both")
            );
        }
        (Some(t), None) => {
            let target = field("target").duration(t)?;
            if target.0 > super::MAX_RUN_TIME_NS {
                return Err(field("target").fail(Limit::RunTime.expected(), target.to_string()));
            }
            Some(Work::Target(target))
        }
        (None, Some(n)) => Some(Work::Iterations(u64::from(field("iterations").integer(
            n,
            1,
            i64::from(u32::MAX),
            "a number of iterations",
        )?))),
        (None, None) => None,
    };
    let working_set_bytes = working_set.unwrap_or(memory);
    if kernel != Kernel::Compute && working_set_bytes.0 < super::MIN_WORKING_SET_BYTES {
        let expected = Limit::WorkingSet(kernel).expected();
        let found = working_set_bytes.to_string();
        return Err(match working_set {
            Some(_) => field("working_set").fail(expected, found),
            None => Field {
                reporter,
                at: vec![
                    Seg::Key("task".into()),
                    Seg::Index(i),
                    Seg::Key("memory".into()),
                ],
                name: task_field(name, "memory"),
            }
            .fail(expected, found),
        });
    }
    let memory_percent = match &raw.memory_percent {
        None => None,
        Some(_) if kernel != Kernel::Mixed => {
            return Err(field("memory_percent")
                .fail("memory_percent only with kernel = \"mixed\"", kernel.name()));
        }
        Some(v) => Some(field("memory_percent").integer(v, 0, 100, "a percentage")? as u8),
    };
    Ok(Body {
        kernel,
        working_set,
        work,
        memory_percent,
    })
}

fn check_priorities(
    raw: &[RawTask],
    tasks: &[Task],
    cores: u32,
    reporter: &Reporter<'_>,
) -> Result<(), InputError> {
    // SCHED_DEADLINE tasks have none (refused where they are validated).
    let fifo = |t: &&Task| !t.is_deadline();
    let given = tasks.iter().filter(|t| t.priority.is_some()).count();
    if given != 0 && given != tasks.iter().filter(fifo).count() {
        let (with, without) = (
            tasks.iter().position(|t| t.priority.is_some()).unwrap_or(0),
            tasks
                .iter()
                .position(|t| t.priority.is_none() && !t.is_deadline())
                .unwrap_or(0),
        );
        return Err(reporter.error(
            &[Seg::Key("task".into()), Seg::Index(without)],
            task_field(&raw[without].name, "priority"),
            format!(
                "a priority for every `policy = \"fifo\"` task or for none (task '{}' has one; without any, priorities are deadline-monotonic)",
                raw[with].name
            ),
            "no priority",
        ));
    }
    // On one core, a task without `core` is on core 0 with the others.
    let core_of = |task: &Task| if cores == 1 { Some(0) } else { task.core };
    let mut seen: HashMap<(Option<u32>, u32), usize> = HashMap::new();
    for (i, task) in tasks.iter().enumerate() {
        let Some(priority) = task.priority else {
            continue;
        };
        if let Some(first) = seen.insert((core_of(task), priority), i) {
            return Err(reporter.error(
                &[
                    Seg::Key("task".into()),
                    Seg::Index(i),
                    Seg::Key("priority".into()),
                ],
                task_field(&task.name, "priority"),
                format!(
                    "a priority unique on its core (task '{}' already has {priority})",
                    tasks[first].name
                ),
                format!("priority {priority} again"),
            ));
        }
    }
    Ok(())
}
