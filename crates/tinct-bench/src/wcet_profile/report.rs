//! Files and summary of `tinct bench wcet-profile`.

use super::WcetProfileResult;
use crate::Result;
use crate::harness::machine::human_bytes;
use crate::harness::{LineChart, OutputDir, Series, SeriesStyle, Summary};
use serde::Serialize;
use tinct_core::units::Nanos;

#[derive(Serialize)]
struct PointRow {
    p: u32,
    colors: usize,
    jobs: u64,
    min_ns: u64,
    median_ns: u64,
    p99_ns: u64,
    max_ns: u64,
    mean_ns: u64,
    stddev_ns: u64,
    table_ns: u64,
    pages_checked: u64,
    pages_in_colors: u64,
    llc_misses_max: Option<u64>,
}

/// Writes `wcet-profile.json`, `wcet-profile.csv`, `figure6.svg` (and
/// `llc-misses.svg` when the hardware counted misses), `wcet.toml` (the
/// line) and `taskset.toml` (the whole file).
pub fn write(result: &WcetProfileResult, out: &mut OutputDir) -> Result<()> {
    out.write_json("wcet-profile.json", result)?;
    let rows: Vec<PointRow> = result
        .points
        .iter()
        .map(|p| PointRow {
            p: p.p,
            colors: p.colors.len(),
            jobs: p.jobs.count,
            min_ns: p.jobs.min,
            median_ns: p.jobs.median,
            p99_ns: p.jobs.p99,
            max_ns: p.jobs.max,
            mean_ns: p.jobs.mean.round() as u64,
            stddev_ns: p.jobs.stddev.round() as u64,
            table_ns: p.table_ns,
            pages_checked: p.pages_checked,
            pages_in_colors: p.pages_in_colors,
            llc_misses_max: p.llc_misses_max,
        })
        .collect();
    out.write_csv("wcet-profile.csv", &rows)?;
    let ms = |ns: u64| ns as f64 / 1e6;
    let chart = LineChart::new(
        format!(
            "C^p of `{}` ({} over {})",
            result.task,
            result.body.kernel,
            human_bytes(result.body.working_set_bytes)
        ),
        "cache partitions p",
        "execution time per job (ms)",
    )
    .add_series(Series::new(
        "WCET (max observed)",
        SeriesStyle::LineWithMarkers,
        result
            .points
            .iter()
            .map(|p| (f64::from(p.p), ms(p.wcet_ns)))
            .collect(),
    ))
    .add_series(Series::new(
        "C^p written (non-increasing)",
        SeriesStyle::Markers,
        result
            .points
            .iter()
            .map(|p| (f64::from(p.p), ms(p.table_ns)))
            .collect(),
    ))
    .add_series(Series::new(
        "ACET (mean)",
        SeriesStyle::Dashed,
        result
            .points
            .iter()
            .map(|p| (f64::from(p.p), ms(p.acet_ns)))
            .collect(),
    ));
    out.write_svg("figure6.svg", &chart)?;
    let misses: Vec<(f64, f64)> = result
        .points
        .iter()
        .filter_map(|p| Some((f64::from(p.p), p.llc_misses_max? as f64)))
        .collect();
    if !misses.is_empty() {
        let chart = LineChart::new(
            format!("Worst-case LLC misses per job of `{}`", result.task),
            "cache partitions p",
            "LLC misses (max per job)",
        )
        .add_series(Series::new(
            "LLC-load-misses",
            SeriesStyle::LineWithMarkers,
            misses,
        ));
        out.write_svg("llc-misses.svg", &chart)?;
    }
    out.write_text("wcet.toml", &format!("{}\n", result.wcet_line))?;
    out.write_text("taskset.toml", &result.taskset)?;
    Ok(())
}

/// The one-screen summary.
pub fn summary(result: &WcetProfileResult, out: &OutputDir) -> Summary {
    let mut s = Summary::new(format!(
        "tinct bench wcet-profile{}",
        if result.header.quick { " (quick)" } else { "" }
    ));
    s.fact("machine", result.header.machine.one_line());
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
            "CPU {}, {} launches × {} jobs per p, N_P = {} over {} colors",
            result.header.cpus[0],
            result.header.reps,
            result.jobs_per_launch,
            result.partitions,
            result.placement.colors
        ),
    );
    s.table(&[
        "p",
        "colors",
        "jobs",
        "median",
        "p99",
        "max (WCET)",
        "mean (ACET)",
        "C^p written",
        "max LLC misses",
    ]);
    for p in &result.points {
        s.row(vec![
            p.p.to_string(),
            p.colors.len().to_string(),
            p.jobs.count.to_string(),
            Nanos(p.jobs.median).to_string(),
            Nanos(p.jobs.p99).to_string(),
            Nanos(p.wcet_ns).to_string(),
            Nanos(p.acet_ns).to_string(),
            Nanos(p.table_ns).to_string(),
            p.llc_misses_max.map_or("-".into(), |m| m.to_string()),
        ]);
    }
    s.fact(
        "refill",
        format!("{} ({})", result.refill, result.refill_source),
    );
    s.fact("paste", result.wcet_line.clone());
    s.fact(
        "output",
        format!(
            "{} (taskset.toml: `tinct analyze` takes it as is)",
            out.path().display()
        ),
    );
    s.note(format!("placement: {}", result.placement.note));
    s.note(result.counters.clone());
    if result.header.machine.virtualized == Some(true) {
        s.note("virtual machine: guest-physical colors need not be host cache colors, so C^p may not fall with p here");
    }
    s
}
