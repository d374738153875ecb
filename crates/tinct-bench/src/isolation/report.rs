//! Files and summary of `tinct bench isolation`.

use super::measure::JobTime;
use super::reservation::GroupRecord;
use super::{Condition, Inflation, Report};
use crate::Result;
use crate::harness::machine::human_bytes;
use crate::harness::summary::ms;
use crate::harness::{BenchOptions, LineChart, OutputDir, Series, SeriesStyle, Summary};
use serde::Serialize;

/// One CSV row: one recorded job.
#[derive(Debug, Serialize)]
struct CsvRow {
    condition: &'static str,
    job: usize,
    cpu_ns: u64,
    wall_ns: u64,
}

/// Writes `isolation.csv` (every job), `isolation.svg` and `isolation.json`
/// (which lists every file).
pub(super) fn write(
    report: &mut Report,
    job_times: &[Vec<JobTime>],
    common: &BenchOptions,
) -> Result<()> {
    let mut out = OutputDir::create(common.out_dir("isolation"))?;
    let rows: Vec<CsvRow> = Condition::ALL
        .iter()
        .zip(job_times)
        .flat_map(|(condition, times)| {
            times.iter().enumerate().map(|(job, t)| CsvRow {
                condition: condition.name(),
                job,
                cpu_ns: t.cpu_ns,
                wall_ns: t.wall_ns,
            })
        })
        .collect();
    out.write_csv("isolation.csv", &rows)?;
    let mut chart = LineChart::new(
        "Victim execution time (CPU) per job (kim2013 Figure 7)",
        "job",
        "execution time (ms)",
    );
    chart.y_from_zero = false;
    for (condition, times) in Condition::ALL.iter().zip(job_times) {
        chart.series.push(Series::new(
            condition.name(),
            if condition.contended() {
                SeriesStyle::Line
            } else {
                SeriesStyle::Dashed
            },
            times
                .iter()
                .enumerate()
                .map(|(i, t)| (i as f64, t.cpu_ns as f64 / 1e6))
                .collect(),
        ));
    }
    out.write_svg("isolation.svg", &chart)?;
    report.files = out.files_with("isolation.json");
    out.write_json("isolation.json", report)?;
    Ok(())
}

/// The one-screen summary.
pub(super) fn summary(report: &Report) -> Summary {
    let p = &report.parameters;
    let mut s = Summary::new("tinct bench isolation (kim2013 Figure 7)");
    s.fact("machine", report.header.machine.one_line());
    let (victim_share, aggressor_share) = cache_shares(report);
    s.fact(
        "victim",
        format!(
            "CPU {}, {} pointer chase, {victim_share}",
            p.victim_cpu,
            human_bytes(p.victim_bytes),
        ),
    );
    s.fact(
        "aggressors",
        format!(
            "CPUs {}, {} each, {aggressor_share}",
            tinct_sys::format_cpu_list(&p.aggressor_cpus),
            human_bytes(p.aggressor_bytes),
        ),
    );
    s.fact(
        "reservation",
        format!("{}: {}", report.reservation, report.reservation_reason),
    );
    s.fact(
        "jobs",
        format!(
            "{} rounds x {} jobs per condition (+{} warm-up round), interleaved",
            report.header.reps, p.jobs_per_round, p.warmup_rounds
        ),
    );
    s.fact(
        "execution time",
        "CPU time of the victim thread per job (wall-clock times in the last columns)",
    );
    s.fact("resctrl", report.resctrl.clone());
    if let Some(inflation) = &report.inflation_reserved {
        s.fact("inflation, reserved", describe(inflation));
    }
    if let Some(inflation) = &report.inflation_unreserved {
        s.fact("inflation, unreserved", describe(inflation));
    }
    s.table(&[
        "condition",
        "jobs",
        "min ms",
        "median ms",
        "p99 ms",
        "max ms",
        "stddev ms",
        "wall median ms",
        "wall max ms",
    ]);
    for c in &report.conditions {
        s.row(vec![
            c.condition.name().into(),
            c.jobs.count.to_string(),
            ms(c.jobs.min),
            ms(c.jobs.median),
            ms(c.jobs.p99),
            ms(c.jobs.max),
            ms(c.jobs.stddev.round() as u64),
            ms(c.jobs_wall.median),
            ms(c.jobs_wall.max),
        ]);
    }
    for note in &report.notes {
        s.note(note.clone());
    }
    if !report.files.is_empty() {
        s.note(format!("files: {}", report.files.join(", ")));
    }
    s
}

/// The victim's and the aggressors' share of the cache, in words.
fn cache_shares(report: &Report) -> (String, String) {
    let p = &report.parameters;
    match &report.resctrl_groups {
        Some(groups) => {
            let group = |g: &GroupRecord| format!("resctrl group {}, L3 mask {}", g.name, g.mask);
            (group(&groups.victim), group(&groups.aggressors))
        }
        None => (
            format!("colors 0..{} of {}", p.victim_colors, p.colors),
            format!("colors {}..{}", p.victim_colors, p.colors),
        ),
    }
}

fn describe(inflation: &Inflation) -> String {
    format!(
        "WCET {:.2}x, p99 {:.2}x, median {:.2}x",
        inflation.wcet, inflation.p99, inflation.median
    )
}
