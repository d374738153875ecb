//! Writing a task set back as TOML, in the same schema it is read with, so
//! that a plan is itself a task-set file that `tinct analyze` re-checks.

use crate::model::{TaskSet, Work};
use std::fmt::Write;

/// A TOML string literal, escaped.
fn quoted(text: &str) -> String {
    toml::Value::String(text.to_string()).to_string()
}

/// Renders `set` as a task-set TOML file. `header` lines are written first as
/// comments. Reading the result back gives an equal [`TaskSet`].
pub fn to_toml(set: &TaskSet, header: &[String]) -> String {
    let mut out = String::new();
    for line in header {
        let _ = writeln!(out, "# {line}");
    }
    if !header.is_empty() {
        out.push('\n');
    }
    let p = &set.platform;
    let _ = writeln!(out, "[platform]");
    let _ = writeln!(out, "cores = {}", p.cores);
    let _ = writeln!(out, "partitions = {}", p.partitions);
    let _ = writeln!(out, "memory = \"{}\"", p.memory);
    let _ = writeln!(out, "refill = \"{}\"", p.refill);
    if let Some(dram) = &p.dram_map {
        let _ = writeln!(out, "dram_map = {}", quoted(&dram.path));
    }
    if let Some(bits) = &p.color_bits {
        let list: Vec<String> = bits.iter().map(u32::to_string).collect();
        let _ = writeln!(out, "color_bits = [{}]", list.join(", "));
    }
    for task in &set.tasks {
        let _ = writeln!(out, "\n[[task]]");
        let _ = writeln!(out, "name = {}", quoted(&task.name));
        let _ = writeln!(out, "period = \"{}\"", task.period);
        let _ = writeln!(out, "deadline = \"{}\"", task.deadline);
        let _ = writeln!(out, "memory = \"{}\"", task.memory);
        let points: Vec<String> = task
            .wcet
            .listed()
            .iter()
            .map(|(p, c)| format!("{p} = \"{c}\""))
            .collect();
        let _ = writeln!(out, "wcet = {{ {} }}", points.join(", "));
        if let Some(priority) = task.priority {
            let _ = writeln!(out, "priority = {priority}");
        }
        if let Some(core) = task.core {
            let _ = writeln!(out, "core = {core}");
        }
        if let Some(parts) = &task.partitions {
            let list: Vec<String> = parts.iter().map(|p| p.to_string()).collect();
            let _ = writeln!(out, "partitions = [{}]", list.join(", "));
        }
        if let Some(body) = &task.body {
            let mut items = vec![format!("kernel = \"{}\"", body.kernel)];
            if let Some(ws) = body.working_set {
                items.push(format!("working_set = \"{ws}\""));
            }
            match body.work {
                Some(Work::Target(t)) => items.push(format!("target = \"{t}\"")),
                Some(Work::Iterations(n)) => items.push(format!("iterations = {n}")),
                None => {}
            }
            if let Some(m) = body.memory_percent {
                items.push(format!("memory_percent = {m}"));
            }
            let _ = writeln!(out, "body = {{ {} }}", items.join(", "));
        }
    }
    out
}
