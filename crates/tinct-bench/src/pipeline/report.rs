//! Files and summary of `tinct bench pipeline`: Table I (`table1.csv`),
//! per-task numbers (`tasks.csv`, Figs. 5 and 6 as `migrations.svg` and
//! `exec.svg`), the migrations map (`migrations.txt`, `map-<policy>.svg`,
//! Fig. 3), the ECDF of production times (`ecdf.svg`, Figs. 7 and 8) and
//! the counter totals (`counters.csv`).

use super::measure::Chunk;
use super::{PolicyResult, Report};
use crate::Result;
use crate::harness::counters::MissRate;
use crate::harness::{LineChart, OutputDir, Series, SeriesStyle, Summary};
use serde::Serialize;
use std::path::Path;
use tinct_report::text::opt_us;
use tinct_report::{BarChart, BarSeries};

/// At most this many points per ECDF curve in the SVG (evenly spaced ranks).
const ECDF_POINTS: usize = 2000;

/// One row of Table I.
#[derive(Debug, Serialize)]
struct TableRow<'a> {
    policy: &'a str,
    samples: u64,
    production_rate_hz: f64,
    mean_us: f64,
    stddev_us: f64,
    rho_us: f64,
    overall_s: f64,
    rho_gain_over_os: Option<f64>,
    overall_gain_over_os_percent: Option<f64>,
    /// Fig. 4: LLC load misses / loads, or `unavailable: <reason>`.
    llc_load_miss_rate: String,
    /// Fig. 4: LLC store misses / stores, or `unavailable: <reason>`.
    llc_store_miss_rate: String,
}

/// One task under one policy (Figs. 5 and 6).
#[derive(Debug, Serialize)]
struct TaskRow<'a> {
    policy: &'a str,
    task: &'a str,
    exec_mean_us: f64,
    exec_variance_us2: f64,
    exec_max_us: f64,
    migrations: u64,
}

fn us(ns: f64) -> f64 {
    ns / 1e3
}

/// A miss rate in a CSV cell: the ratio (not a percentage), or the reason.
fn csv_rate(rate: &MissRate) -> String {
    match rate.rate {
        Some(r) => r.to_string(),
        None => rate.describe(),
    }
}

fn table_rows(report: &Report) -> Vec<TableRow<'_>> {
    report
        .policies
        .iter()
        .map(|p| TableRow {
            policy: &p.policy,
            samples: p.samples,
            production_rate_hz: p.production_rate_hz,
            mean_us: us(p.production.mean),
            stddev_us: us(p.production.stddev),
            rho_us: us(p.production.rho),
            overall_s: p.overall_ns as f64 / 1e9,
            rho_gain_over_os: p.rho_gain_over_os,
            overall_gain_over_os_percent: p.overall_gain_over_os_percent,
            llc_load_miss_rate: csv_rate(&p.load_miss_rate),
            llc_store_miss_rate: csv_rate(&p.store_miss_rate),
        })
        .collect()
}

/// The migrations map of Fig. 3: per policy, a line per task with the CPU
/// of each of its first jobs.
pub fn migrations_map(policies: &[PolicyResult]) -> String {
    let mut text = String::new();
    for p in policies {
        text.push_str(&format!("{}:\n", p.policy));
        let width = p.tasks.iter().map(|t| t.name.len()).max().unwrap_or(0);
        for t in &p.tasks {
            let cpus: Vec<String> = t.map.iter().map(u32::to_string).collect();
            text.push_str(&format!("  {:width$}  {}\n", t.name, cpus.join(" ")));
        }
    }
    text
}

/// Writes every file but the JSON.
pub fn write_files(out: &mut OutputDir, report: &Report, chunks: &[Vec<Chunk>]) -> Result<()> {
    out.write_csv("table1.csv", &table_rows(report))?;
    let tasks: Vec<TaskRow<'_>> = report
        .policies
        .iter()
        .flat_map(|p| {
            p.tasks.iter().map(|t| TaskRow {
                policy: &p.policy,
                task: &t.name,
                exec_mean_us: us(t.exec.mean),
                exec_variance_us2: t.exec_variance_ns2 / 1e6,
                exec_max_us: us(t.exec.max as f64),
                migrations: t.migrations,
            })
        })
        .collect();
    out.write_csv("tasks.csv", &tasks)?;
    out.write_counters_csv("counters.csv", &report.header.counters)?;
    out.write_text("migrations.txt", &migrations_map(&report.policies))?;
    let names: Vec<String> = report
        .policies
        .first()
        .map(|p| p.tasks.iter().map(|t| t.name.clone()).collect())
        .unwrap_or_default();
    let bars = |title: &str, y: &str, value: &dyn Fn(&PolicyResult, usize) -> f64| {
        report.policies.iter().fold(
            BarChart::new(title, "task", y, names.clone()),
            |chart, p| {
                chart.with_series(BarSeries::new(
                    p.policy.clone(),
                    (0..names.len()).map(|t| Some(value(p, t))).collect(),
                ))
            },
        )
    };
    let exec = bars(
        "Execution time per packet (demarchi Fig. 6)",
        "mean (µs)",
        &|p, t| us(p.tasks[t].exec.mean),
    );
    out.write_text("exec.svg", &exec.to_svg())?;
    let migrations = bars(
        "Migrations per task (demarchi Fig. 5)",
        "migrations",
        &|p, t| p.tasks[t].migrations as f64,
    );
    out.write_text("migrations.svg", &migrations.to_svg())?;
    for p in &report.policies {
        let map = p.tasks.iter().enumerate().fold(
            LineChart::new(
                format!("Migrations map, {} (demarchi Fig. 3)", p.policy),
                "sample",
                "CPU (+ task offset)",
            ),
            |chart, (t, task)| {
                // Each task in its own band: CPU c of task t at t + c / (cpus + 1).
                let band = report.header.cpus.len() as f64 + 1.0;
                chart.add_series(Series::new(
                    task.name.clone(),
                    SeriesStyle::Steps,
                    task.map
                        .iter()
                        .enumerate()
                        .map(|(i, &cpu)| (i as f64, t as f64 + f64::from(cpu) / band))
                        .collect(),
                ))
            },
        );
        out.write_svg(&format!("map-{}.svg", p.policy), &map)?;
    }
    let ecdf = report.policies.iter().zip(chunks).fold(
        LineChart::new(
            "Sample production time, empirical CDF (demarchi Figs. 7 and 8)",
            "production time (µs)",
            "fraction of samples",
        ),
        |chart, (p, chunks)| {
            let intervals: Vec<u64> = chunks.iter().flat_map(|c| c.intervals_ns.clone()).collect();
            let cdf = tinct_report::stats::empirical_cdf(&intervals);
            let step = cdf.len().div_ceil(ECDF_POINTS).max(1);
            let mut points: Vec<(f64, f64)> = cdf
                .iter()
                .step_by(step)
                .map(|&(v, f)| (us(v as f64), f))
                .collect();
            if let Some(&(v, f)) = cdf.last() {
                points.push((us(v as f64), f));
            }
            chart.add_series(Series::new(p.policy.clone(), SeriesStyle::Steps, points))
        },
    );
    out.write_svg("ecdf.svg", &ecdf)?;
    Ok(())
}

/// A miss rate in the table: a percentage, or `unavailable` (the reason
/// goes in a note below the table).
fn short_rate(rate: &MissRate) -> String {
    match rate.rate {
        Some(r) => format!("{:.1} %", r * 100.0),
        None => "unavailable".into(),
    }
}

/// The one-screen summary: Table I and where the files are.
pub fn summary(report: &Report, dir: &Path) -> Summary {
    let mut s = Summary::new(format!(
        "pipeline: {} waves, {} mixer levels, {} B packets, {} µs per packet (demarchi Table I)",
        report.waves,
        report.levels,
        report.packet_bytes,
        report.work_ns as f64 / 1e3
    ));
    s.fact("rounds", report.header.reps.to_string());
    s.interruption(&report.header, dir);
    s.fact("CPUs", tinct_sys::format_cpu_list(&report.header.cpus));
    s.table(&[
        "policy",
        "samples",
        "rate (1/s)",
        "mean (µs)",
        "σ (µs)",
        "ρ=μ+2σ (µs)",
        "overall (s)",
        "ρ gain vs os",
        "overall vs os",
        "LLC load miss",
        "LLC store miss",
        "move median (µs)",
    ]);
    for p in &report.policies {
        s.row(vec![
            p.policy.clone(),
            p.samples.to_string(),
            format!("{:.0}", p.production_rate_hz),
            format!("{:.1}", us(p.production.mean)),
            format!("{:.1}", us(p.production.stddev)),
            format!("{:.1}", us(p.production.rho)),
            format!("{:.2}", p.overall_ns as f64 / 1e9),
            p.rho_gain_over_os
                .map_or("—".into(), |g| format!("x{g:.2}")),
            p.overall_gain_over_os_percent
                .map_or("—".into(), |g| format!("{g:+.1} %")),
            short_rate(&p.load_miss_rate),
            short_rate(&p.store_miss_rate),
            opt_us(p.moves.as_ref().map(|m| m.median)),
        ]);
    }
    let mut reasons: Vec<String> = Vec::new();
    for p in &report.policies {
        for rate in [&p.load_miss_rate, &p.store_miss_rate] {
            if let Some(why) = &rate.unavailable
                && !reasons.contains(why)
            {
                reasons.push(why.clone());
            }
        }
    }
    for why in reasons {
        s.note(format!("load/store miss rates (Fig. 4): {why}"));
    }
    s.note(format!(
        "files in {}: pipeline.json, table1.csv, tasks.csv, counters.csv, migrations.txt, \
         exec.svg, migrations.svg, map-<policy>.svg, ecdf.svg",
        dir.display()
    ));
    s
}
