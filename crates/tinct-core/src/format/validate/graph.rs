//! `[[edge]]` tables and each task's `trigger` and `period`: the affinity
//! graph (demarchi) and the period a data-triggered task takes from its
//! producers.
//!
//! The graph must be acyclic (a data-triggered cycle could never be
//! released, and chains are the graph's paths); a data-triggered task needs
//! at least one producer, and all of its producers must share one period,
//! which becomes its own.

use super::{Field, Reporter, task_field};
use crate::format::locate::Seg;
use crate::format::raw::{RawEdge, RawTask};
use crate::format::{InputError, MAX_BUFFER_BYTES};
use crate::limits::Limit;
use crate::model::{Edge, Trigger};
use crate::units::Nanos;
use std::collections::HashMap;

/// The validated graph and every task's period.
pub(super) struct Graph {
    /// The edges, in file order.
    pub edges: Vec<Edge>,
    /// Each task's trigger, in file order.
    pub triggers: Vec<Trigger>,
    /// Each task's period: as written, or its producers' for data-triggered tasks.
    pub periods: Vec<Nanos>,
}

fn task_at(i: usize, key: &str) -> Vec<Seg> {
    vec![Seg::Key("task".into()), Seg::Index(i), Seg::Key(key.into())]
}

fn edge_at(e: usize, key: &str) -> Vec<Seg> {
    vec![Seg::Key("edge".into()), Seg::Index(e), Seg::Key(key.into())]
}

pub(super) fn validate_graph(
    tasks: &[RawTask],
    raw_edges: &[RawEdge],
    names: &HashMap<&str, usize>,
    reporter: &Reporter<'_>,
) -> Result<Graph, InputError> {
    let triggers = tasks
        .iter()
        .enumerate()
        .map(|(i, task)| match task.trigger.as_deref() {
            None | Some("timer") => Ok(Trigger::Timer),
            Some("data") => Ok(Trigger::Data),
            Some(other) => Err(reporter.error(
                &task_at(i, "trigger"),
                task_field(&task.name, "trigger"),
                "\"timer\" (released by its period) or \"data\" (released by its inputs)",
                format!("\"{other}\""),
            )),
        })
        .collect::<Result<Vec<Trigger>, InputError>>()?;
    let edges = validate_edges(raw_edges, names, reporter)?;
    let mut producers: Vec<Vec<usize>> = vec![Vec::new(); tasks.len()];
    let mut consumers: Vec<Vec<usize>> = vec![Vec::new(); tasks.len()];
    for edge in &edges {
        producers[edge.to].push(edge.from);
        consumers[edge.from].push(edge.to);
    }
    if let Some(i) =
        (0..tasks.len()).find(|&i| triggers[i] == Trigger::Data && producers[i].is_empty())
    {
        return Err(reporter.error(
            &task_at(i, "trigger"),
            task_field(&tasks[i].name, "trigger"),
            "an [[edge]] with `to` naming this task: a data-triggered task is released by its producers",
            "trigger = \"data\" and no producer",
        ));
    }
    let order = topological_order(&producers, &consumers).map_err(|cycle| {
        let path: Vec<&str> = cycle.iter().map(|&i| tasks[i].name.as_str()).collect();
        let edge = edges
            .iter()
            .position(|e| e.from == cycle[0] && e.to == cycle[1 % cycle.len()])
            .unwrap_or(0);
        reporter.error(
            &edge_at(edge, "to"),
            "edges".into(),
            "an acyclic affinity graph (chains are its paths)",
            format!("the cycle {} → {}", path.join(" → "), path[0]),
        )
    })?;
    let mut periods = vec![Nanos::ZERO; tasks.len()];
    for i in order {
        let task = &tasks[i];
        let field = Field {
            reporter,
            at: task_at(i, "period"),
            name: task_field(&task.name, "period"),
        };
        let written = match &task.period {
            None => None,
            Some(value) => {
                let period = field.duration(value)?;
                if period == Nanos::ZERO {
                    return Err(field.fail(Limit::PeriodAboveZero.expected(), "0"));
                }
                Some(period)
            }
        };
        periods[i] = match triggers[i] {
            Trigger::Timer => written.ok_or_else(|| {
                field.fail(
                    "a period (only a task with trigger = \"data\" takes its producers')",
                    "no `period` key",
                )
            })?,
            Trigger::Data => {
                let first = producers[i][0];
                let inherited = periods[first];
                if let Some(&other) = producers[i].iter().find(|&&p| periods[p] != inherited) {
                    return Err(reporter.error(
                        &task_at(i, "trigger"),
                        task_field(&task.name, "trigger"),
                        "producers with one period (a data-triggered task runs at its producers' rate)",
                        format!(
                            "'{}' every {} and '{}' every {}",
                            tasks[first].name, inherited, tasks[other].name, periods[other]
                        ),
                    ));
                }
                if let Some(written) = written
                    && written != inherited
                {
                    return Err(field.fail(
                        format!(
                            "its producers' period {inherited}, or no `period` (trigger = \"data\")"
                        ),
                        written.to_string(),
                    ));
                }
                inherited
            }
        };
    }
    Ok(Graph {
        edges,
        triggers,
        periods,
    })
}

fn validate_edges(
    raw: &[RawEdge],
    names: &HashMap<&str, usize>,
    reporter: &Reporter<'_>,
) -> Result<Vec<Edge>, InputError> {
    let mut seen: HashMap<(usize, usize), usize> = HashMap::new();
    let mut edges = Vec::with_capacity(raw.len());
    for (e, edge) in raw.iter().enumerate() {
        let end = |key: &str, name: &str| {
            names.get(name).copied().ok_or_else(|| {
                reporter.error(
                    &edge_at(e, key),
                    format!("edge #{} field `{key}`", e + 1),
                    "the name of a task of the set",
                    format!("\"{name}\""),
                )
            })
        };
        let from = end("from", &edge.from)?;
        let to = end("to", &edge.to)?;
        if from == to {
            return Err(reporter.error(
                &edge_at(e, "to"),
                format!("edge #{} field `to`", e + 1),
                "a consumer other than the producer",
                format!("\"{}\" → itself", edge.to),
            ));
        }
        if let Some(first) = seen.insert((from, to), e) {
            return Err(reporter.error(
                &edge_at(e, "to"),
                format!("edge #{} field `to`", e + 1),
                format!("each edge once (edge #{} already joins them)", first + 1),
                format!("\"{}\" → \"{}\" again", edge.from, edge.to),
            ));
        }
        let buffer = Field {
            reporter,
            at: edge_at(e, "buffer"),
            name: format!("edge #{} field `buffer`", e + 1),
        }
        .size(&edge.buffer)?;
        if buffer.0 > MAX_BUFFER_BYTES {
            return Err(reporter.error(
                &edge_at(e, "buffer"),
                format!("edge #{} field `buffer`", e + 1),
                Limit::Buffer.expected(),
                buffer.to_string(),
            ));
        }
        edges.push(Edge { from, to, buffer });
    }
    Ok(edges)
}

/// Kahn's algorithm: the tasks with every producer before its consumers,
/// or a cycle (as a path of task indices) when there is one.
fn topological_order(
    producers: &[Vec<usize>],
    consumers: &[Vec<usize>],
) -> Result<Vec<usize>, Vec<usize>> {
    let n = producers.len();
    let mut waiting: Vec<usize> = producers.iter().map(Vec::len).collect();
    let mut ready: Vec<usize> = (0..n).rev().filter(|&i| waiting[i] == 0).collect();
    let mut order = Vec::with_capacity(n);
    while let Some(i) = ready.pop() {
        order.push(i);
        for &c in consumers[i].iter().rev() {
            waiting[c] -= 1;
            if waiting[c] == 0 {
                ready.push(c);
            }
        }
    }
    if order.len() == n {
        return Ok(order);
    }
    // Every task left waits on another task left: walk producers until one
    // repeats, which closes a cycle.
    let mut path = Vec::new();
    let mut on_path = vec![usize::MAX; n];
    let mut at = (0..n).find(|&i| waiting[i] > 0).unwrap_or(0);
    while on_path[at] == usize::MAX {
        on_path[at] = path.len();
        path.push(at);
        at = producers[at]
            .iter()
            .copied()
            .find(|&p| waiting[p] > 0)
            .unwrap_or(at);
    }
    let mut cycle = path.split_off(on_path[at]);
    cycle.reverse();
    Err(cycle)
}
