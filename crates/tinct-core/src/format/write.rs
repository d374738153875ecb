//! Writing a task set back in the schema it is read with, so that a plan is
//! itself a task-set file that `tinct analyze` re-checks.
//!
//! The written form is the reader's own raw structs ([`super::raw`]),
//! serialized by serde: TOML through `toml`, JSON through `serde_json`.
//! Durations and sizes are written with [`Nanos`] and [`Bytes`]' exact
//! `Display`, so every value re-reads to the same integer.

use super::Syntax;
use super::raw::{
    RawBody, RawEdge, RawOverheads, RawPartitions, RawPlatform, RawResource, RawSection, RawTask,
    RawTaskSet, RawWcet, Scalar,
};
use crate::model::{Body, Overheads, ProgramBody, Task, TaskSet, Trigger, Work};
use crate::units::{Bytes, Nanos};
use std::path::Path;

fn duration(value: Nanos) -> Scalar {
    Scalar::Text(value.to_string())
}

fn size(value: Bytes) -> Scalar {
    Scalar::Text(value.to_string())
}

fn program(program: &ProgramBody) -> RawBody {
    RawBody {
        kernel: None,
        command: Some(program.command.clone()),
        protocol: Some(program.protocol.name().to_string()),
        mmap: program.mmap.then_some(true),
        working_set: None,
        target: None,
        iterations: None,
        memory_percent: None,
    }
}

fn body(body: &Body) -> RawBody {
    RawBody {
        kernel: Some(body.kernel.name().to_string()),
        command: None,
        protocol: None,
        mmap: None,
        working_set: body.working_set.map(size),
        target: match body.work {
            Some(Work::Target(t)) => Some(duration(t)),
            _ => None,
        },
        iterations: match body.work {
            Some(Work::Iterations(n)) => Some(Scalar::Int(i64::try_from(n).unwrap_or(i64::MAX))),
            _ => None,
        },
        memory_percent: body.memory_percent.map(|m| Scalar::Int(i64::from(m))),
    }
}

/// The overheads, each key only when it is not zero.
fn overheads(o: &Overheads) -> Option<RawOverheads> {
    let nonzero = |v: crate::units::Nanos| (v != Nanos::ZERO).then(|| duration(v));
    (!o.is_none()).then(|| RawOverheads {
        context_switch: nonzero(o.context_switch),
        release_latency: nonzero(o.release_latency),
        tick: nonzero(o.tick),
        tick_period: o.tick_period.map(duration),
    })
}

fn task(set: &TaskSet, task: &Task) -> RawTask {
    let data = task.trigger == Trigger::Data;
    RawTask {
        name: task.name.clone(),
        // A data-triggered task's period is its producers'.
        period: (!data).then(|| duration(task.period)),
        deadline: Some(duration(task.deadline)),
        memory: size(task.memory),
        wcet: RawWcet::Table(
            task.wcet
                .listed()
                .iter()
                .map(|(p, &c)| (p.to_string(), duration(c)))
                .collect(),
        ),
        priority: task.priority.map(|p| Scalar::Int(i64::from(p))),
        core: task.core.map(|c| Scalar::Int(i64::from(c))),
        partitions: task
            .partitions
            .map(|s| RawPartitions::List(s.iter().map(i64::from).collect())),
        body: task
            .body
            .as_ref()
            .map(body)
            .or_else(|| task.program.as_ref().map(program)),
        critical_sections: (!task.critical_sections.is_empty()).then(|| {
            task.critical_sections
                .iter()
                .map(|s| RawSection {
                    resource: set.resources[s.resource].name.clone(),
                    length: duration(s.length),
                })
                .collect()
        }),
        jitter: (task.jitter != Nanos::ZERO).then(|| duration(task.jitter)),
        blocking: task.blocking.map(duration),
        trigger: data.then(|| "data".to_string()),
        policy: task.is_deadline().then(|| task.policy.name().to_string()),
        runtime: task.runtime.map(duration),
    }
}

impl From<&TaskSet> for RawTaskSet {
    fn from(set: &TaskSet) -> RawTaskSet {
        let p = &set.platform;
        RawTaskSet {
            platform: RawPlatform {
                cores: Scalar::Int(i64::from(p.cores)),
                partitions: Scalar::Int(i64::from(p.partitions)),
                memory: size(p.memory),
                refill: Some(duration(p.refill)),
                color_bits: p
                    .color_bits
                    .as_ref()
                    .map(|bits| bits.iter().map(|&b| Scalar::Int(i64::from(b))).collect()),
                dram_map: p.dram_map.as_ref().map(|d| d.path.clone()),
                overheads: overheads(&p.overheads),
                cache_domains: p.cache_domains.as_ref().map(|domains| {
                    domains
                        .iter()
                        .map(|d| d.iter().map(|&c| i64::from(c)).collect())
                        .collect()
                }),
            },
            task: set.tasks.iter().map(|t| task(set, t)).collect(),
            resource: set
                .resources
                .iter()
                .map(|r| RawResource {
                    name: r.name.clone(),
                    protocol: r.protocol.name().to_string(),
                })
                .collect(),
            edge: set
                .edges
                .iter()
                .map(|e| RawEdge {
                    from: set.tasks[e.from].name.clone(),
                    to: set.tasks[e.to].name.clone(),
                    buffer: size(e.buffer),
                })
                .collect(),
        }
    }
}

/// `header` as TOML comment lines (`# line`), the header every file tinct
/// writes starts with. A line's control characters (a newline in an input
/// path, say) are written escaped (`\n`): a header carries text from
/// input, and a line break in it would end the comment and inject keys or
/// tasks into the file; TOML allows no other control character in a
/// comment than a tab.
pub(crate) fn comment_lines(header: &[String]) -> String {
    header
        .iter()
        .map(|line| {
            let safe: String = line
                .chars()
                .flat_map(|c| {
                    let escaped = c.is_control() && c != '\t';
                    let (one, many) = if escaped {
                        (None, Some(c.escape_default()))
                    } else {
                        (Some(c), None)
                    };
                    one.into_iter().chain(many.into_iter().flatten())
                })
                .collect();
            format!("# {safe}\n")
        })
        .collect()
}

/// Renders `set` as a task-set TOML file. `header` lines are written first as
/// comments. Reading the result back gives an equal [`TaskSet`].
pub fn to_toml(set: &TaskSet, header: &[String]) -> String {
    let mut out = comment_lines(header);
    if !header.is_empty() {
        out.push('\n');
    }
    // The raw structs hold only strings, integers, lists and tables, which
    // TOML always represents.
    let text = toml::to_string(&RawTaskSet::from(set)).unwrap_or_default();
    let Ok(mut document) = text.parse::<toml_edit::DocumentMut>() else {
        out.push_str(&text);
        return out;
    };
    // `wcet = { 1 = "22.76ms", 8 = "11.94ms" }` and `body = { ... }` on one
    // line each, as in docs/FORMAT.md, instead of `[task.wcet]` sections.
    if let Some(tasks) = document
        .get_mut("task")
        .and_then(toml_edit::Item::as_array_of_tables_mut)
    {
        for task in tasks.iter_mut() {
            let mut rebuilt = toml_edit::Table::new();
            for (key, item) in task.iter() {
                let item = match (item.as_table(), item.as_array_of_tables()) {
                    (Some(table), _) if key == "wcet" || key == "body" => {
                        let mut inline = table.clone().into_inline_table();
                        inline.fmt();
                        toml_edit::value(inline)
                    }
                    (_, Some(sections)) if key == "critical_sections" => {
                        let mut array = toml_edit::Array::new();
                        for section in sections.iter() {
                            let mut inline = section.clone().into_inline_table();
                            inline.fmt();
                            array.push(inline);
                        }
                        toml_edit::value(array)
                    }
                    _ => item.clone(),
                };
                rebuilt.insert(key, item);
            }
            *task = rebuilt;
        }
    }
    if let Some(platform) = document
        .get_mut("platform")
        .and_then(toml_edit::Item::as_table_mut)
        && let Some(overheads) = platform
            .get("overheads")
            .and_then(toml_edit::Item::as_table)
            .cloned()
    {
        let mut inline = overheads.into_inline_table();
        inline.fmt();
        platform.insert("overheads", toml_edit::value(inline));
    }
    out.push_str(&document.to_string());
    out
}

/// Renders `set` as a task-set JSON file (JSON has no comments: no header).
pub fn to_json(set: &TaskSet) -> String {
    // Strings, integers, lists and maps with string keys: always JSON.
    serde_json::to_string_pretty(&RawTaskSet::from(set)).unwrap_or_default() + "\n"
}

/// Renders `set` in `syntax`; `header` becomes TOML comments.
pub fn to_text(set: &TaskSet, syntax: Syntax, header: &[String]) -> String {
    match syntax {
        Syntax::Toml => to_toml(set, header),
        Syntax::Json => to_json(set),
    }
}

/// Writes `set`, read from the file `source`, to the file `out` (JSON if
/// its name ends in `.json`, else TOML with `header` as comments), its
/// references rewritten so that a relative `dram_map` still names the same
/// file from `out` ([`relocated`](super::relocated)). The error names `out`.
pub fn write_file(
    out: &Path,
    set: &TaskSet,
    source: &Path,
    header: &[String],
) -> Result<(), String> {
    let set = super::relocated(set, source, out);
    let text = to_text(&set, Syntax::from_path(out), header);
    std::fs::write(out, text).map_err(|e| format!("cannot write {}: {e}", out.display()))
}
