//! Files and summary of `tinct bench wcet-profile`.

use super::{ConditionPoint, ProfilePoint, WcetProfileResult};
use crate::Result;
use crate::harness::machine::human_bytes;
use crate::harness::{LineChart, OutputDir, Series, SeriesStyle, Summary};
use serde::Serialize;
use tinct_core::units::Nanos;

#[derive(Serialize)]
struct ConditionRow<'a> {
    p: u32,
    condition: &'a str,
    colors: usize,
    jobs: u64,
    min_ns: u64,
    median_ns: u64,
    p99_ns: u64,
    p999_ns: u64,
    max_ns: u64,
    mean_ns: u64,
    stddev_ns: u64,
    evt_blocks: u64,
    evt_model: Option<&'a str>,
    evt_supported: bool,
    /// The pWCET at the first requested exceedance (supported or not: see evt_supported).
    pwcet_ns: Option<u64>,
    statistic_ns: Option<u64>,
    table_ns: Option<u64>,
    pages_checked: u64,
    pages_in_colors: u64,
    llc_misses_max: Option<u64>,
    co_runner_sweeps: Option<u64>,
}

fn model_name(c: &ConditionPoint) -> Option<&'static str> {
    c.evt.model.map(|m| match m {
        tinct_report::stats::evt::Model::Gumbel => "gumbel",
        tinct_report::stats::evt::Model::Gev => "gev",
    })
}

fn rows(points: &[ProfilePoint]) -> Vec<ConditionRow<'_>> {
    points
        .iter()
        .flat_map(|point| {
            point.conditions.iter().map(move |c| ConditionRow {
                p: point.p,
                condition: c.condition.name(),
                colors: point.colors.len(),
                jobs: c.jobs.count,
                min_ns: c.jobs.min,
                median_ns: c.jobs.median,
                p99_ns: c.jobs.p99,
                p999_ns: c.p999_ns,
                max_ns: c.jobs.max,
                mean_ns: c.jobs.mean.round() as u64,
                stddev_ns: c.jobs.stddev.round() as u64,
                evt_blocks: c.evt.blocks,
                evt_model: model_name(c),
                evt_supported: c.evt.supported,
                pwcet_ns: c.evt.pwcet.first().and_then(|p| p.ns),
                statistic_ns: c.statistic_ns,
                table_ns: point.table_ns,
                pages_checked: c.pages_checked,
                pages_in_colors: c.pages_in_colors,
                llc_misses_max: c.llc_misses_max,
                co_runner_sweeps: c.co_runners.as_ref().map(|r| r.sweeps),
            })
        })
        .collect()
}

/// Writes `wcet-profile.json` (every job included), `wcet-profile.csv` (one
/// row per p and condition), `figure6.svg` (and `llc-misses.svg` when the
/// hardware counted misses), and, when there is a table, `wcet.toml` (the
/// line) and `taskset.toml` (the whole file).
pub fn write(result: &WcetProfileResult, out: &mut OutputDir) -> Result<()> {
    out.write_json("wcet-profile.json", result)?;
    out.write_csv("wcet-profile.csv", &rows(&result.points))?;
    out.write_svg("figure6.svg", &figure6(result))?;
    let mut misses = LineChart::new(
        format!("Worst-case LLC misses per job of `{}`", result.task),
        "cache partitions p",
        "LLC misses (max per job)",
    );
    let mut any_misses = false;
    for (i, condition) in result.conditions.iter().enumerate() {
        let series: Vec<(f64, f64)> = result
            .points
            .iter()
            .filter_map(|p| Some((f64::from(p.p), p.conditions.get(i)?.llc_misses_max? as f64)))
            .collect();
        if !series.is_empty() {
            any_misses = true;
            misses = misses.add_series(Series::new(
                format!("LLC-load-misses, {condition}"),
                SeriesStyle::LineWithMarkers,
                series,
            ));
        }
    }
    if any_misses {
        out.write_svg("llc-misses.svg", &misses)?;
    }
    if let Some(line) = &result.wcet_line {
        out.write_text("wcet.toml", &format!("{line}\n"))?;
    }
    if let Some(taskset) = &result.taskset {
        out.write_text("taskset.toml", taskset)?;
    }
    Ok(())
}

/// kim2013 Figure 6: the worst observed job per p under each condition, the
/// C^p written, and the mean (ACET) alone.
fn figure6(result: &WcetProfileResult) -> LineChart {
    let ms = |ns: u64| ns as f64 / 1e6;
    let mut chart = LineChart::new(
        format!(
            "C^p of `{}` ({} over {})",
            result.task,
            result.body.kernel,
            human_bytes(result.body.working_set_bytes)
        ),
        "cache partitions p",
        "execution time per job (ms)",
    );
    for (i, condition) in result.conditions.iter().enumerate() {
        chart = chart.add_series(Series::new(
            format!("max observed, {condition}"),
            SeriesStyle::LineWithMarkers,
            result
                .points
                .iter()
                .filter_map(|p| Some((f64::from(p.p), ms(p.conditions.get(i)?.jobs.max))))
                .collect(),
        ));
    }
    let table: Vec<(f64, f64)> = result
        .points
        .iter()
        .filter_map(|p| Some((f64::from(p.p), ms(p.table_ns?))))
        .collect();
    if !table.is_empty() {
        chart = chart.add_series(Series::new(
            format!("C^p written ({}, non-increasing)", result.statistic),
            SeriesStyle::Markers,
            table,
        ));
    }
    if let Some(i) = result.conditions.iter().position(|c| c.name() == "alone") {
        chart = chart.add_series(Series::new(
            "ACET (mean), alone",
            SeriesStyle::Dashed,
            result
                .points
                .iter()
                .filter_map(|p| Some((f64::from(p.p), p.conditions.get(i)?.jobs.mean / 1e6)))
                .collect(),
        ));
    }
    chart
}

/// The pWCET cell of a condition: the value at the first exceedance, or why not.
fn pwcet_cell(c: &ConditionPoint) -> String {
    match (c.evt.supported, c.evt.pwcet.first().and_then(|p| p.ns)) {
        (true, Some(ns)) => Nanos(ns).to_string(),
        (false, Some(ns)) => format!("({}, unsupported)", Nanos(ns)),
        (_, None) if c.evt.model.is_none() => format!("- ({} block(s))", c.evt.blocks),
        (_, None) => "-".into(),
    }
}

/// The one-screen summary.
pub fn summary(result: &WcetProfileResult, out: &OutputDir) -> Summary {
    let mut s = Summary::of_run(&result.header);
    s.fact(
        "body",
        format!(
            "{} over {}, {} memory + {} compute iterations per job",
            result.body.kernel,
            human_bytes(result.body.working_set_bytes),
            result.body.memory_iterations,
            result.body.compute_iterations
        ),
    );
    s.fact(
        "run",
        format!(
            "CPU {}, {} launches × {} jobs per p and condition, N_P = {} over {} colors",
            result.header.cpus[0],
            result.header.reps,
            result.jobs_per_launch,
            result.partitions,
            result.placement.colors
        ),
    );
    let exceedance = result
        .evt
        .exceedances
        .first()
        .map_or("-".to_string(), |p| format!("{p:e}"));
    s.fact(
        "EVT",
        format!(
            "block maxima of {} jobs, GEV/Gumbel by PWM; pWCET at {exceedance} per job",
            result.evt.block_size
        ),
    );
    s.table(&[
        "p",
        "condition",
        "jobs",
        "median",
        "p99",
        "p99.9",
        "max",
        "pWCET",
        "C^p written",
    ]);
    for point in &result.points {
        for c in &point.conditions {
            let chosen = point.worst_condition == Some(c.condition);
            s.row(vec![
                point.p.to_string(),
                c.condition.name().to_string(),
                c.jobs.count.to_string(),
                Nanos(c.jobs.median).to_string(),
                Nanos(c.jobs.p99).to_string(),
                Nanos(c.p999_ns).to_string(),
                Nanos(c.jobs.max).to_string(),
                pwcet_cell(c),
                match (chosen, point.table_ns) {
                    (true, Some(ns)) => Nanos(ns).to_string(),
                    _ => String::new(),
                },
            ]);
        }
    }
    if let (Some(refill), Some(source)) = (&result.refill, &result.refill_source) {
        s.fact("refill", format!("{refill} ({source})"));
    }
    match (&result.wcet_line, &result.table_missing) {
        (Some(line), _) => {
            s.fact("paste", line.clone());
            s.fact(
                "output",
                match &result.taskset {
                    Some(_) => format!(
                        "{} (taskset.toml: `tinct analyze` takes it as is)",
                        out.path().display()
                    ),
                    // Interrupted before Δ was measured.
                    None => format!(
                        "{} (no taskset.toml: stopped before Δ was measured)",
                        out.path().display()
                    ),
                },
            );
        }
        (None, why) => {
            s.fact("output", out.path().display().to_string());
            s.note(format!(
                "no C^p table with --use {}: {}",
                result.statistic,
                why.as_deref().unwrap_or("unknown")
            ));
        }
    }
    if let Some(written) = &result.written_taskset {
        s.fact(
            "task set",
            format!(
                "{} {} (task `{}`)",
                written.action, written.path, written.task
            ),
        );
    }
    s.note(format!(
        "C^p written = {} of the worst condition at each p, raised to be non-increasing in p and rounded up to 1 µs",
        result.statistic
    ));
    if let Some(co) = &result.co_runners {
        s.note(format!(
            "co-runners on CPU {}: {}",
            tinct_sys::format_cpu_list(&co.cpus),
            co.reason
        ));
    }
    let unsupported: Vec<String> = result
        .points
        .iter()
        .flat_map(|p| {
            p.conditions
                .iter()
                .filter(|c| !c.evt.supported)
                .map(move |c| format!("p = {} {}: {}", p.p, c.condition, c.evt.problems.join("; ")))
        })
        .take(3)
        .collect();
    if !unsupported.is_empty() {
        s.note(format!(
            "pWCET not supported by the data (first {}): {}",
            unsupported.len(),
            unsupported.join(" | ")
        ));
    }
    s.note(format!("placement: {}", result.placement.note));
    s.note(result.counters.clone());
    if result.header.machine.virtualized == Some(true) {
        s.note("virtual machine: guest-physical colors need not be host cache colors, so C^p may not fall with p here");
    }
    s
}
