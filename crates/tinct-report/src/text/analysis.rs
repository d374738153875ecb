//! The text of an analysis (kim2013 Eq. 1-3 with jitter, blocking and
//! overheads): per core the response-time table, utilization (Eq. 1) and
//! memory (Eq. 3), then chains, notes and the verdict, as `tinct analyze`
//! prints it.

use super::{ms, table};
use std::fmt::{self, Write};
use tinct_core::analysis::{Analysis, CoreReport, EdfReport};
use tinct_core::model::TaskPolicy;
use tinct_core::overheads::OverheadsSource;
use tinct_core::units::Nanos;

/// The analysis as people read it; `refill_source` says where Δ came from
/// and `source` where the overheads came from.
pub fn analysis_text(analysis: &Analysis, refill_source: &str, source: &OverheadsSource) -> String {
    let mut out = String::new();
    write_analysis(&mut out, analysis, refill_source, source)
        .expect("writing to a String cannot fail");
    out
}

/// A response time, or "> D" when the iteration passed the deadline.
fn response_ms(ns: Option<u64>) -> String {
    ns.map_or_else(|| "> D".to_string(), ms)
}

/// One line on the overheads charged and where they came from.
pub fn write_overheads(
    out: &mut impl Write,
    analysis: &Analysis,
    source: &OverheadsSource,
) -> fmt::Result {
    let o = &analysis.overheads;
    if source.overheads.is_none() {
        writeln!(out, "overheads: none ({})", source.from)?;
    } else {
        let tick = match o.tick_period_ns {
            Some(period) => format!(
                "{} per timer interrupt (each release, and the tick every {})",
                Nanos(o.tick_ns),
                Nanos(period)
            ),
            None => format!("{} per release's timer interrupt", Nanos(o.tick_ns)),
        };
        writeln!(
            out,
            "overheads from {}: δ = {} per context switch (2δ per job), release latency {} (added to every J), {tick}",
            source.from,
            Nanos(o.context_switch_ns),
            Nanos(o.release_latency_ns),
        )?;
    }
    for missing in &source.missing {
        writeln!(
            out,
            "  ✗ {} NOT included: {} (the verdict does not cover it)",
            missing.name, missing.why
        )?;
    }
    Ok(())
}

/// [`analysis_text`] into any writer.
pub fn write_analysis(
    out: &mut impl Write,
    analysis: &Analysis,
    refill_source: &str,
    source: &OverheadsSource,
) -> fmt::Result {
    writeln!(
        out,
        "Δ (partition refill time) = {} ({refill_source})",
        Nanos(analysis.refill_ns)
    )?;
    write_overheads(out, analysis, source)?;
    // Columns for jitter, blocking and overheads only where the set has them,
    // so a set without them prints the table it always did.
    let extended = analysis
        .tasks
        .iter()
        .any(|t| t.jitter_ns != Some(0) || t.blocking_ns != Some(0) || t.overhead_ns != 0);
    for core in &analysis.cores {
        if core.tasks.is_empty() {
            continue;
        }
        writeln!(
            out,
            "\ncore {}: {} task(s), partitions {}",
            core.core,
            core.tasks.len(),
            tinct_core::PartitionSet::from_iter(core.partitions.iter().copied())
        )?;
        let mut header = vec!["task", "prio", "|S|", "C (ms)", "ω (ms)"];
        if extended {
            header.extend(["2δ (ms)", "J (ms)", "B (ms)"]);
        }
        header.extend(["R NoCInt (ms)", "R CInt (ms)", "D (ms)", "iter", "verdict"]);
        let mut t = table(&header);
        for task in core
            .task_indices
            .iter()
            .filter_map(|&i| analysis.tasks.get(i))
        {
            let verdict = match (task.schedulable, task.schedulable_nocint) {
                (true, _) => "ok",
                (false, true) => "MISS (cache)",
                (false, false) => "MISS",
            };
            let mut row = vec![
                task.name.clone(),
                match task.policy {
                    TaskPolicy::Deadline => "EDF".to_string(),
                    TaskPolicy::Fifo => task.priority.to_string(),
                },
                task.partition_count.to_string(),
                ms(task.wcet_ns),
                ms(task.warmup_ns),
            ];
            if extended {
                let unbounded = |v: Option<u64>| v.map_or_else(|| "∞".to_string(), ms);
                row.extend([
                    ms(task.overhead_ns),
                    unbounded(task.jitter_ns),
                    unbounded(task.blocking_ns),
                ]);
            }
            row.extend([
                response_ms(task.wcrt_nocint_ns),
                response_ms(task.wcrt_ns),
                ms(task.deadline_ns),
                task.breakdown.iterations.to_string(),
                verdict.to_string(),
            ]);
            t.add_row(row);
        }
        writeln!(out, "{t}")?;
        match &core.edf {
            None => writeln!(
                out,
                "  utilization Eq. (1): {:.4} with cache interference, {:.4} without; Liu-Layland bound {:.4} ({})",
                core.utilization,
                core.utilization_nocint,
                core.utilization_bound,
                if core.utilization_test {
                    "passes"
                } else {
                    "exceeds: the response-time test decides"
                }
            )?,
            Some(edf) => write_edf(out, core, edf)?,
        }
        let worst = core.memory.iter().max_by(|a, b| {
            (a.used_bytes / a.capacity_bytes).total_cmp(&(b.used_bytes / b.capacity_bytes))
        });
        match worst {
            Some(w) => writeln!(
                out,
                "  memory Eq. (3): {} (fullest partition {}: {:.1} of {:.1} MiB)",
                if core.memory_feasible {
                    "feasible"
                } else {
                    "NOT feasible"
                },
                w.partition,
                w.used_bytes / 1048576.0,
                w.capacity_bytes / 1048576.0
            )?,
            None => writeln!(out, "  memory Eq. (3): no partitions assigned")?,
        }
        for reason in &core.reasons {
            writeln!(out, "  ✗ {reason}")?;
        }
    }
    if !analysis.chains.is_empty() {
        writeln!(
            out,
            "\nchains (first release to last output, holistic jitter):"
        )?;
        for chain in &analysis.chains {
            writeln!(
                out,
                "  {}: {} (NoCInt {}){}",
                chain.tasks.join(" → "),
                super::bound_ms(chain.bound_ns),
                super::bound_ms(chain.bound_nocint_ns),
                match chain.sampling_hops {
                    0 => String::new(),
                    n => format!(", {n} sampling hop(s)"),
                }
            )?;
        }
    }
    for task in analysis.tasks.iter() {
        if task.blocking_ns != Some(0) {
            writeln!(
                out,
                "note: task '{}': B = {} ({})",
                task.name,
                super::bound_ms(task.blocking_ns),
                task.blocking_source
            )?;
        }
        if let Some(inherited) = task.jitter_inherited_ns.filter(|&j| j > 0) {
            writeln!(
                out,
                "note: task '{}': released by its producers, inherits J = {} ms",
                task.name,
                ms(inherited)
            )?;
        }
        for note in &task.notes {
            writeln!(out, "note: task '{}': {note}", task.name)?;
        }
    }
    writeln!(out)?;
    if analysis.schedulable {
        writeln!(out, "verdict: SCHEDULABLE")?;
    } else {
        writeln!(out, "verdict: NOT SCHEDULABLE")?;
        for reason in &analysis.reasons {
            writeln!(out, "  - {reason}")?;
        }
    }
    Ok(())
}

/// The utilization and the EDF demand test of a core with SCHED_DEADLINE
/// tasks.
fn write_edf(out: &mut impl Write, core: &CoreReport, edf: &EdfReport) -> fmt::Result {
    writeln!(
        out,
        "  utilization of every task of the core: {:.4} with cache interference, {:.4} without; at most {:.4} is necessary ({})",
        core.utilization,
        core.utilization_nocint,
        core.utilization_bound,
        if core.utilization_test {
            "within"
        } else {
            "exceeds"
        }
    )?;
    let verdict = match (&edf.overload, edf.horizon_ns) {
        (Some(overload), _) => format!(
            "OVERLOADED: the jobs due within an interval of {} and the interrupts in it need {}",
            Nanos(overload.interval_ns),
            u64::try_from(overload.demand_ns).map_or_else(
                |_| format!("{} ns", overload.demand_ns),
                |d| Nanos(d).to_string()
            )
        ),
        (None, Some(horizon)) => {
            format!(
                "fits: demand ≤ supply in every interval up to {}",
                Nanos(horizon)
            )
        }
        (None, None) if edf.utilization_above_one => {
            format!("OVERLOADED: utilization {:.4} above 1", edf.utilization)
        }
        (None, None) => "not checked".to_string(),
    };
    writeln!(
        out,
        "  EDF processor demand of {} (SCHED_DEADLINE): {verdict}",
        edf.tasks.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn analysis(wcet_b: &str) -> Analysis {
        let set = tinct_core::format::parse(
            &super::super::fixture::two_tasks(wcet_b),
            "t.toml",
            tinct_core::format::Syntax::Toml,
        )
        .unwrap();
        tinct_core::analysis::analyze(&set).unwrap()
    }

    #[test]
    fn a_schedulable_set_prints_its_table_and_verdict() {
        let text = analysis_text(
            &analysis("3ms"),
            "from the file",
            &OverheadsSource::none("test"),
        );
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "Δ (partition refill time) = 1us (from the file)");
        assert_eq!(lines[1], "overheads: none (test)");
        assert!(
            lines.contains(&"core 0: 2 task(s), partitions {1-2}"),
            "{text}"
        );
        // b's row: C = 3 ms, R = 3 + 2 (one job of a) = 5 ms, D = 20 ms, ok.
        assert!(
            lines.iter().any(|l| l.contains(" b ")
                && l.contains("5.00")
                && l.contains("20.00")
                && l.contains("ok")),
            "{text}"
        );
        // a's row: C = 2 ms, R = 2 ms (top priority), D = 10 ms, ok.
        assert!(
            lines.iter().any(|l| l.contains(" a ")
                && l.contains("2.00")
                && l.contains("10.00")
                && l.contains("ok")),
            "{text}"
        );
        assert_eq!(lines.last(), Some(&"verdict: SCHEDULABLE"));
    }

    #[test]
    fn an_unschedulable_set_says_so_with_its_reasons() {
        let text = analysis_text(
            &analysis("19ms"),
            "from --refill",
            &OverheadsSource::none("test"),
        );
        assert!(text.contains("verdict: NOT SCHEDULABLE\n  - "), "{text}");
        assert!(
            text.lines()
                .any(|l| l.contains(" b ") && l.contains("MISS")),
            "{text}"
        );
        assert!(text.contains("  ✗ "), "{text}");
    }
}
