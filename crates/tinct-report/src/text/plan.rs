//! The text of `tinct plan`: the plan per core (kim2013 Algorithms 1-3 or
//! the BFD/WFD baselines) with its partitions, tasks and response times,
//! and the static placement of an affinity graph on cache domains.

use super::{Column, columns_table, ms, table};
use std::fmt::{self, Write};
use tinct_core::PartitionSet;
use tinct_core::alloc::{PlacementReport, PlanReport, PlannedTask};
use tinct_core::model::TaskPolicy;

/// The columns of a core's tasks in a plan.
const PLAN_COLUMNS: [Column<PlannedTask>; 7] = [
    ("task", |t| t.name.clone()),
    ("prio", |t| match t.policy {
        TaskPolicy::Fifo => t.priority.to_string(),
        TaskPolicy::Deadline => "EDF".to_string(),
    }),
    ("|S|", |t| t.partitions.len().to_string()),
    ("S(i)", |t| {
        PartitionSet::from_iter(t.partitions.iter().copied()).to_string()
    }),
    ("C (ms)", |t| ms(t.wcet_ns)),
    ("WCRT (ms)", |t| {
        t.wcrt_ns.map_or_else(|| "-".to_string(), ms)
    }),
    ("D (ms)", |t| ms(t.deadline_ns)),
];

/// The plan as people read it.
pub fn plan_text(report: &PlanReport) -> String {
    let mut out = String::new();
    write_plan(&mut out, report).expect("writing to a String cannot fail");
    out
}

/// The static placement as people read it.
pub fn placement_text(report: &PlacementReport) -> String {
    let mut out = String::new();
    write_placement(&mut out, report).expect("writing to a String cannot fail");
    out
}

/// [`plan_text`] into any writer.
pub fn write_plan(out: &mut impl Write, report: &PlanReport) -> fmt::Result {
    let plan = &*report.plan;
    writeln!(
        out,
        "plan of {} with {} ({} partitions available, {})",
        report.file,
        plan.algorithm.name(),
        plan.budget,
        report.refill_source
    )?;
    for core in plan
        .cores
        .iter()
        .filter(|c| !c.tasks.is_empty() || !c.partitions.is_empty())
    {
        writeln!(
            out,
            "\ncore {}: {} partition(s) {}, utilization {:.4}",
            core.core,
            core.partitions.len(),
            tinct_core::PartitionSet::from_iter(core.partitions.iter().copied()),
            core.utilization
        )?;
        let t = columns_table(&PLAN_COLUMNS, &core.tasks);
        writeln!(out, "{t}")?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "partitions used: {} of {} (needed {}), memory efficiency {:.1} %, total utilization {:.4}",
        plan.partitions_used,
        plan.budget,
        plan.partitions_needed,
        100.0 * plan.memory_efficiency,
        plan.total_utilization
    )?;
    if plan.stopped {
        writeln!(
            out,
            "note: stopped by --timeout: this is the best plan found so far (tasks not reached are listed below)"
        )?;
    } else if !plan.exact {
        writeln!(
            out,
            "note: a MinCacheAlloc search hit its node budget: the plan is feasible but not proven optimal (--exact)"
        )?;
    }
    for u in &plan.unplaced {
        writeln!(out, "✗ {}", u.message)?;
    }
    match &report.output {
        Some(file) => writeln!(
            out,
            "plan written to {file} (check it with `tinct analyze {file}`)"
        )?,
        None if plan.schedulable => {
            writeln!(out, "verdict: SCHEDULABLE (write the plan with -o FILE)")?
        }
        None => writeln!(out, "verdict: NOT SCHEDULABLE")?,
    }
    Ok(())
}

/// A placed core's partitions, compact (`{1-4}`), "(reserved)" when they
/// include the block its tasks without partitions were given.
fn partition_list(partitions: &[u32], reserved: bool) -> String {
    let set = tinct_core::PartitionSet::from_iter(partitions.iter().copied());
    if reserved {
        format!("{set} (reserved)")
    } else {
        set.to_string()
    }
}

/// [`placement_text`] into any writer.
pub fn write_placement(out: &mut impl Write, report: &PlacementReport) -> fmt::Result {
    let placement = &*report.result;
    writeln!(
        out,
        "static placement of {} (utilization bound {} per core, {})",
        report.file, placement.utilization_bound, report.refill_source
    )?;
    if !placement.found {
        writeln!(
            out,
            "✗ {}",
            placement.reason.as_deref().unwrap_or("no placement")
        )?;
        return Ok(());
    }
    let mut t = table(&["core", "domain", "utilization", "partitions", "tasks"]);
    for core in placement.cores.iter().filter(|c| !c.tasks.is_empty()) {
        t.add_row(vec![
            core.core.to_string(),
            core.domain.to_string(),
            format!("{:.4}", core.utilization),
            partition_list(&core.partitions, core.reserved),
            core.tasks.join(", "),
        ]);
    }
    writeln!(out, "{t}")?;
    writeln!(
        out,
        "bytes crossing cache domains per job: {}{}",
        placement.crossing_bytes,
        if placement.exact {
            " (optimal)"
        } else {
            " (not proven optimal: search budget or timeout)"
        }
    )?;
    for edge in &placement.crossing {
        writeln!(out, "  {} → {}: {} B", edge.from, edge.to, edge.buffer)?;
    }
    if let Some(analysis) = &placement.analysis {
        for chain in &analysis.chains {
            writeln!(
                out,
                "  chain {}: {} end to end",
                chain.tasks.join(" → "),
                super::bound_ms(chain.bound_ns)
            )?;
        }
    }
    match &report.output {
        Some(file) => writeln!(
            out,
            "placement written to {file} (check it with `tinct analyze {file}`)"
        )?,
        None => writeln!(
            out,
            "verdict: SCHEDULABLE (write the placement with -o FILE)"
        )?,
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tinct_core::alloc::{Algorithm, PlacementOptions, PlanOptions, place_static, plan};

    fn set(text: &str) -> tinct_core::TaskSet {
        tinct_core::format::parse(text, "t.toml", tinct_core::format::Syntax::Toml).unwrap()
    }

    #[test]
    fn a_plan_prints_its_cores_tasks_and_where_it_went() {
        let set = set(&super::super::fixture::two_tasks("3ms"));
        let plan = plan(&set, Algorithm::Cata, &PlanOptions::default());
        assert!(plan.schedulable);
        let mut report = PlanReport {
            file: "t.toml".into(),
            plan: std::borrow::Cow::Borrowed(&plan),
            output: None,
            refill_source: "Δ 1us from the file".into(),
        };
        let text = plan_text(&report);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("plan of t.toml with "), "{text}");
        assert!(
            lines[0].ends_with("(4 partitions available, Δ 1us from the file)"),
            "{text}"
        );
        for task in ["a", "b"] {
            assert!(
                lines.iter().any(|l| l.starts_with(&format!("│ {task} "))),
                "{text}"
            );
        }
        assert!(
            lines.iter().any(|l| l.starts_with("partitions used: ")),
            "{text}"
        );
        assert_eq!(
            lines.last(),
            Some(&"verdict: SCHEDULABLE (write the plan with -o FILE)")
        );
        report.output = Some("p.toml".into());
        assert!(
            plan_text(&report)
                .ends_with("plan written to p.toml (check it with `tinct analyze p.toml`)\n")
        );
    }

    #[test]
    fn a_placement_that_cannot_be_found_says_why_and_nothing_else() {
        let set = set(&format!(
            "{}\n[[edge]]\nfrom = \"a\"\nto = \"b\"\nbuffer = \"4KiB\"\n",
            super::super::fixture::two_tasks("3ms")
                .replace("period = \"20ms\"", "trigger = \"data\"")
        ));
        let placement = place_static(
            &set,
            &PlacementOptions {
                utilization_bound: 0.01,
                ..PlacementOptions::default()
            },
        )
        .unwrap();
        let report = PlacementReport {
            file: "t.toml".into(),
            placement: "static".into(),
            result: std::borrow::Cow::Borrowed(&placement),
            output: None,
            refill_source: "Δ 1us from the file".into(),
        };
        let text = placement_text(&report);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert_eq!(
            lines[0],
            "static placement of t.toml (utilization bound 0.01 per core, Δ 1us from the file)"
        );
        assert!(lines[1].starts_with("✗ "), "{text}");
    }
}
