//! From the file as written to a validated [`TaskSet`].
//!
//! The rules: positive periods; D ≤ T; C^p non-increasing in p with p in
//! 1..=N_P; some C ≤ D; |S(i)| at least the memory minimum
//! ⌈M_i / (M_total/N_P)⌉ and at least the first listed p; partitions within
//! 1..=N_P and not repeated; cores within 0..N_C; unique task names;
//! priorities given for all tasks or none, and unique on a core.

use super::locate::{Seg, SourceIndex, path};
use super::raw::{RawBody, RawPartitions, RawPlatform, RawTask, RawTaskSet, RawWcet, Scalar};
use super::{InputError, LoadOptions};
use crate::model::{Body, Kernel, Platform, Task, TaskSet, WcetTable, Work};
use crate::partitions::{MAX_PARTITIONS, PartitionSet};
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

    fn duration(&self, value: &Scalar) -> Result<Nanos, InputError> {
        let expected = "a duration with a unit, such as \"40ms\" or \"45.3us\" (ns, us, ms, s)";
        match value {
            Scalar::Text(text) => {
                parse_duration(text).map_err(|e| self.fail(expected, format!("{value} ({e})")))
            }
            _ => Err(self.fail(expected, value.to_string())),
        }
    }

    fn size(&self, value: &Scalar) -> Result<Bytes, InputError> {
        let expected = "a size such as \"18MiB\" (B, KiB, MiB, GiB) or a whole number of bytes";
        match value {
            Scalar::Text(text) => {
                parse_size(text).map_err(|e| self.fail(expected, format!("{value} ({e})")))
            }
            Scalar::Int(i) if *i >= 0 => Ok(Bytes(*i as u64)),
            _ => Err(self.fail(expected, value.to_string())),
        }
    }

    fn integer(&self, value: &Scalar, min: i64, max: i64, what: &str) -> Result<u32, InputError> {
        match value {
            Scalar::Int(i) if (min..=max).contains(i) => Ok(*i as u32),
            _ => Err(self.fail(
                format!("{what}, a whole number from {min} to {max}"),
                value.to_string(),
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
    let platform = validate_platform(&raw.platform, &reporter, options)?;
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
            format!("at most {} tasks", super::MAX_TASKS),
            format!("{} tasks", raw.task.len()),
        ));
    }
    let mut names: HashMap<&str, usize> = HashMap::new();
    let mut tasks = Vec::with_capacity(raw.task.len());
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
        tasks.push(validate_task(raw_task, i, &platform, &reporter)?);
    }
    check_priorities(&raw.task, &tasks, &reporter)?;
    let task_lines = (0..tasks.len())
        .map(|i| index.line_of(&[Seg::Key("task".into()), Seg::Index(i)]))
        .collect();
    Ok(TaskSet {
        platform,
        tasks,
        task_lines,
    })
}

/// A name short enough and printable: it goes into every table, message
/// and trace (messages name the task by its position until it passes).
fn check_name(name: &str, i: usize, reporter: &Reporter<'_>) -> Result<(), InputError> {
    let at = [
        Seg::Key("task".into()),
        Seg::Index(i),
        Seg::Key("name".into()),
    ];
    let field = format!("task #{} field `name`", i + 1);
    if name.len() > super::MAX_NAME_BYTES {
        let shown: String = name.chars().take(32).collect();
        return Err(reporter.error(
            &at,
            field,
            format!("a task name of at most {} bytes", super::MAX_NAME_BYTES),
            format!("a name of {} bytes starting {shown:?}", name.len()),
        ));
    }
    if let Some(c) = name.chars().find(|c| c.is_control()) {
        return Err(reporter.error(
            &at,
            field,
            "a task name without control characters (it is printed in tables and traces)",
            format!("{c:?} in {:?}", name.chars().take(32).collect::<String>()),
        ));
    }
    Ok(())
}

fn validate_platform(
    raw: &RawPlatform,
    reporter: &Reporter<'_>,
    options: &LoadOptions,
) -> Result<Platform, InputError> {
    let field = |name: &str| Field {
        reporter,
        at: path(&["platform", name]),
        name: platform_field(name),
    };
    let cores = field("cores").integer(&raw.cores, 1, 4096, "the number of cores")?;
    let partitions = field("partitions").integer(
        &raw.partitions,
        1,
        i64::from(MAX_PARTITIONS),
        "the number of cache partitions N_P",
    )?;
    let memory_field = field("memory");
    let memory = memory_field.size(&raw.memory)?;
    if memory.0 < u64::from(partitions) {
        return Err(memory_field.fail(
            format!("at least one byte per partition ({partitions} partitions)"),
            memory.to_string(),
        ));
    }
    let refill = match (&raw.refill, options.default_refill) {
        (Some(value), _) => field("refill").duration(value)?,
        (None, Some(calibration)) => calibration.for_partitions(partitions),
        (None, None) => {
            return Err(field("refill").fail(
                "Δ, the time to refill one cache partition, e.g. refill = \"45.3us\" \
                 (measure it with `tinct bench calibrate`, or pass --calibration FILE)",
                "no `refill` key and no calibration",
            ));
        }
    };
    let color_bits = raw
        .color_bits
        .as_ref()
        .map(|bits| validate_color_bits(bits, partitions, reporter))
        .transpose()?;
    let dram_map = raw
        .dram_map
        .as_ref()
        .map(|path| {
            let relative = std::path::Path::new(reporter.file)
                .parent()
                .unwrap_or(std::path::Path::new(""))
                .join(path);
            crate::dram_map::DramMap::load(&relative)
                .map(|map| crate::model::PlatformDramMap {
                    path: path.clone(),
                    map,
                })
                .map_err(|e| {
                    field("dram_map").fail(
                        "a DRAM mapping file written by `tinct bench dram-map` (relative to \
                         this task set)",
                        e.to_string(),
                    )
                })
        })
        .transpose()?;
    Ok(Platform {
        cores,
        partitions,
        memory,
        refill,
        color_bits,
        dram_map,
    })
}

/// Largest number of colour bits (2^16 colours, the most tinct-mem's
/// address functions express).
const MAX_COLOR_BITS: usize = 16;

/// `color_bits = [12, 13, ...]`: strictly increasing address bits from 6
/// (above a cache line) to 63, at most 16 of them, giving at least one
/// colour per partition.
fn validate_color_bits(
    bits: &[Scalar],
    partitions: u32,
    reporter: &Reporter<'_>,
) -> Result<Vec<u32>, InputError> {
    let list = Field {
        reporter,
        at: path(&["platform", "color_bits"]),
        name: platform_field("color_bits"),
    };
    if bits.is_empty() || bits.len() > MAX_COLOR_BITS {
        return Err(list.fail(
            format!("1 to {MAX_COLOR_BITS} physical address bits, such as [12, 13, 14, 15, 16]"),
            format!("{} bits", bits.len()),
        ));
    }
    let mut out: Vec<u32> = Vec::with_capacity(bits.len());
    for (i, value) in bits.iter().enumerate() {
        let element = Field {
            reporter,
            at: vec![
                Seg::Key("platform".into()),
                Seg::Key("color_bits".into()),
                Seg::Index(i),
            ],
            name: platform_field("color_bits"),
        };
        let bit = element.integer(value, 6, 63, "a physical address bit above the cache line")?;
        if out.last().is_some_and(|&previous| bit <= previous) {
            return Err(element.fail(
                "strictly increasing bits",
                format!("{bit} after {}", out[out.len() - 1]),
            ));
        }
        out.push(bit);
    }
    let colors = 1u64 << out.len();
    if colors < u64::from(partitions) {
        return Err(list.fail(
            format!(
                "at least one colour per partition: {partitions} partitions need at least {} bits",
                partitions.next_power_of_two().trailing_zeros()
            ),
            format!("{} bits ({colors} colours)", out.len()),
        ));
    }
    Ok(out)
}

fn validate_task(
    raw: &RawTask,
    i: usize,
    platform: &Platform,
    reporter: &Reporter<'_>,
) -> Result<Task, InputError> {
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
    let period_field = field("period");
    let period = period_field.duration(&raw.period)?;
    if period == Nanos::ZERO {
        return Err(period_field.fail("a period above zero", "0"));
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
    let body = match &raw.body {
        None => None,
        Some(b) => Some(validate_body(b, i, &raw.name, reporter)?),
    };
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
    })
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

/// Reads `"1-8,12"`.
fn parse_partition_ranges(text: &str) -> Option<Vec<i64>> {
    let mut out = Vec::new();
    for part in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (i64, i64) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
                if a > b {
                    return None;
                }
                out.extend(a..=b);
            }
            None => out.push(part.parse().ok()?),
        }
    }
    Some(out)
}

fn validate_partitions(
    raw: &RawPartitions,
    field: &Field<'_, '_>,
    platform: &Platform,
    memory: Bytes,
    wcet: &WcetTable,
) -> Result<PartitionSet, InputError> {
    let numbers = match raw {
        RawPartitions::List(list) => list.clone(),
        RawPartitions::Text(text) => parse_partition_ranges(text).ok_or_else(|| {
            field.fail(
                "a list of partitions such as [1, 2] or a range string such as \"1-8,12\"",
                format!("\"{text}\""),
            )
        })?,
    };
    let mut set = PartitionSet::EMPTY;
    for &p in &numbers {
        if p < 1 || p > i64::from(platform.partitions) {
            return Err(field.fail(
                format!("partitions numbered 1 to N_P = {}", platform.partitions),
                format!("partition {p}"),
            ));
        }
        if set.contains(p as u32) {
            return Err(field.fail("each partition listed once", format!("partition {p} twice")));
        }
        set.insert(p as u32);
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

fn validate_body(
    raw: &RawBody,
    i: usize,
    name: &str,
    reporter: &Reporter<'_>,
) -> Result<Body, InputError> {
    let field = |key: &str| Field {
        reporter,
        at: vec![
            Seg::Key("task".into()),
            Seg::Index(i),
            Seg::Key("body".into()),
            Seg::Key(key.into()),
        ],
        name: format!("task '{name}' field `body.{key}`"),
    };
    let kernel = Kernel::ALL
        .iter()
        .find(|(n, _)| *n == raw.kernel)
        .map(|&(_, k)| k)
        .ok_or_else(|| {
            let names: Vec<&str> = Kernel::ALL.iter().map(|(n, _)| *n).collect();
            field("kernel").fail(
                format!("one of {}", names.join(", ")),
                format!("\"{}\"", raw.kernel),
            )
        })?;
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
        (Some(t), None) => Some(Work::Target(field("target").duration(t)?)),
        (None, Some(n)) => Some(Work::Iterations(u64::from(field("iterations").integer(
            n,
            1,
            i64::from(u32::MAX),
            "a number of iterations",
        )?))),
        (None, None) => None,
    };
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
    reporter: &Reporter<'_>,
) -> Result<(), InputError> {
    let given = tasks.iter().filter(|t| t.priority.is_some()).count();
    if given != 0 && given != tasks.len() {
        let (with, without) = (
            tasks.iter().position(|t| t.priority.is_some()).unwrap_or(0),
            tasks.iter().position(|t| t.priority.is_none()).unwrap_or(0),
        );
        return Err(reporter.error(
            &[Seg::Key("task".into()), Seg::Index(without)],
            task_field(&raw[without].name, "priority"),
            format!(
                "a priority for every task or for none (task '{}' has one; without any, priorities are deadline-monotonic)",
                raw[with].name
            ),
            "no priority",
        ));
    }
    let mut seen: HashMap<(Option<u32>, u32), usize> = HashMap::new();
    for (i, task) in tasks.iter().enumerate() {
        let Some(priority) = task.priority else {
            continue;
        };
        if let Some(first) = seen.insert((task.core, priority), i) {
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
