//! Files and summary of `tinct bench crpd`.

use super::{CacheKind, CrpdResult, SwitchRow};
use crate::Result;
use crate::harness::machine::human_bytes;
use crate::harness::{Durations, LineChart, OutputDir, Series, SeriesStyle, Summary};
use serde::Serialize;
use tinct_report::text::us;

#[derive(Serialize)]
struct PointRow<'a> {
    level: &'a str,
    cache: CacheKind,
    size_bytes: u64,
    percent_of_level: f64,
    baseline_median_ns: u64,
    baseline_p99_ns: u64,
    preempted_median_ns: u64,
    preempted_p99_ns: u64,
    baseline_min_ns: u64,
    preempted_max_ns: u64,
    crpd_ns: i64,
    crpd_bound_ns: i64,
    crpd_fraction: f64,
    crpd_fraction_theory: f64,
    baseline_ns_per_access: f64,
    miss_ratio_estimate: Option<f64>,
    miss_ratio_theory: f64,
}

#[derive(Serialize)]
struct SwitchCsvRow<'a> {
    case: &'a str,
    part: &'a str,
    count: u64,
    min_ns: u64,
    median_ns: u64,
    p99_ns: u64,
    max_ns: u64,
    mean_ns: u64,
    stddev_ns: u64,
}

fn switch_row<'a>(case: &'a str, part: &'a str, s: &Durations) -> SwitchCsvRow<'a> {
    SwitchCsvRow {
        case,
        part,
        count: s.count,
        min_ns: s.min,
        median_ns: s.median,
        p99_ns: s.p99,
        max_ns: s.max,
        mean_ns: s.mean.round() as u64,
        stddev_ns: s.stddev.round() as u64,
    }
}

/// The three lines of one Table 1 row.
fn switch_rows<'a>(case: &'a str, row: &'a SwitchRow) -> [SwitchCsvRow<'a>; 3] {
    [
        switch_row(case, "interrupt", &row.interrupt),
        switch_row(case, "resume", &row.resume),
        switch_row(case, "total", &row.total),
    ]
}

/// Writes `crpd.json`, `crpd.csv`, `switch.csv` (Table 1),
/// `crpd-counters.csv`, and per level `crpd-<level>.svg` (Figure 7) and
/// `miss-ratio-<level>.svg` (Figure 5).
pub fn write(result: &CrpdResult, out: &mut OutputDir) -> Result<()> {
    out.write_json("crpd.json", result)?;
    let rows: Vec<PointRow> = result
        .levels
        .iter()
        .flat_map(|l| {
            l.points.iter().map(move |p| PointRow {
                level: &l.level,
                cache: l.cache,
                size_bytes: p.size_bytes,
                percent_of_level: p.percent_of_level,
                baseline_median_ns: p.baseline.median,
                baseline_p99_ns: p.baseline.p99,
                preempted_median_ns: p.preempted.median,
                preempted_p99_ns: p.preempted.p99,
                baseline_min_ns: p.baseline.min,
                preempted_max_ns: p.preempted.max,
                crpd_ns: p.crpd_ns,
                crpd_bound_ns: p.crpd_bound_ns,
                crpd_fraction: p.crpd_fraction,
                crpd_fraction_theory: p.crpd_fraction_theory,
                baseline_ns_per_access: p.baseline_ns_per_access,
                miss_ratio_estimate: p.miss_ratio_estimate,
                miss_ratio_theory: p.miss_ratio_theory,
            })
        })
        .collect();
    out.write_csv("crpd.csv", &rows)?;
    if let Some(sw) = &result.switch {
        let mut switch_csv: Vec<SwitchCsvRow> = Vec::new();
        switch_csv.extend(switch_rows("best", &sw.best));
        switch_csv.extend(switch_rows("worst", &sw.worst));
        if let Some(row) = &sw.no_cache.measured {
            switch_csv.extend(switch_rows("no-cache-approximation", row));
        }
        out.write_csv("switch.csv", &switch_csv)?;
    }
    out.write_counters_csv("crpd-counters.csv", &result.header.counters)?;
    for level in &result.levels {
        let theory_x: Vec<f64> = (0..=64).map(|i| f64::from(i) * 200.0 / 64.0).collect();
        let crpd = LineChart::new(
            format!(
                "CRPD vs working set, {} ({}, {}-way)",
                level.level,
                human_bytes(level.cache_bytes),
                level.ways
            ),
            "victim working set (% of the level)",
            "CRPD / max CRPD",
        )
        .add_series(Series::new(
            format!(
                "measured, medians (max {:.1} us; bound {:.1} us)",
                level.max_crpd_ns as f64 / 1e3,
                level.max_crpd_bound_ns as f64 / 1e3
            ),
            SeriesStyle::LineWithMarkers,
            std::iter::once((0.0, 0.0))
                .chain(
                    level
                        .points
                        .iter()
                        .map(|p| (p.percent_of_level, p.crpd_fraction)),
                )
                .collect(),
        ))
        .add_series(Series::new(
            "Sebek 2002 Fig. 7",
            SeriesStyle::Dashed,
            theory_x
                .iter()
                .map(|&x| (x, super::theory::crpd_fraction(x / 100.0, level.ways)))
                .collect(),
        ));
        out.write_svg(&format!("crpd-{}.svg", level.level), &crpd)?;
        let miss = LineChart::new(
            format!("Miss ratio vs working set, {}", level.level),
            "working set (% of the level)",
            "miss ratio",
        )
        .add_series(Series::new(
            "estimated from latency",
            SeriesStyle::LineWithMarkers,
            level
                .points
                .iter()
                .filter_map(|p| Some((p.percent_of_level, p.miss_ratio_estimate?)))
                .collect(),
        ))
        .add_series(Series::new(
            "Sebek 2002 Fig. 5",
            SeriesStyle::Dashed,
            theory_x
                .iter()
                .map(|&x| (x, super::theory::miss_ratio(x / 100.0, level.ways)))
                .collect(),
        ));
        out.write_svg(&format!("miss-ratio-{}.svg", level.level), &miss)?;
    }
    Ok(())
}

/// The one-screen summary.
pub fn summary(result: &CrpdResult, out: &OutputDir) -> Summary {
    let mut s = Summary::of_run(&result.header);
    s.interruption(&result.header, out.path());
    s.fact(
        "run",
        format!(
            "CPU {}, victim and preempter under {}, {} reps per condition",
            result.header.cpus[0], result.policy, result.header.reps
        ),
    );
    if let Some(sw) = &result.switch {
        let table1 = |row: &SwitchRow| {
            format!(
                "interrupt {} + resume {} = {} us median, max {} us",
                us(row.interrupt.median),
                us(row.resume.median),
                us(row.total.median),
                us(row.total.max)
            )
        };
        s.fact("preemption, best case", table1(&sw.best));
        s.fact(
            "preemption, worst case",
            format!(
                "{} ({} wiped by each task)",
                table1(&sw.worst),
                human_bytes(sw.wipe_bytes)
            ),
        );
        s.fact(
            "preemption, no cache",
            match &sw.no_cache.measured {
                Some(row) => format!("{} — {}", table1(row), sw.no_cache.name),
                None => sw.no_cache.note.clone(),
            },
        );
    }
    s.table(&[
        "level",
        "victim",
        "ways",
        "max CRPD us",
        "bound us",
        "at",
        "<10% of max at",
        "theory zero",
        "|Fig7 err|",
        "|Fig5 err|",
    ]);
    for l in &result.levels {
        let victim = match (l.cache, l.code_miss_ratio) {
            (CacheKind::Instruction, Some(ratio)) => format!("code, miss ratio {ratio:.2}"),
            (CacheKind::Instruction, None) => "code".into(),
            (CacheKind::Data, _) => "data (chase)".into(),
        };
        s.row(vec![
            format!("{} {}", l.level, human_bytes(l.cache_bytes)),
            victim,
            l.ways.to_string(),
            format!("{:.1}", l.max_crpd_ns as f64 / 1e3),
            format!("{:.1}", l.max_crpd_bound_ns as f64 / 1e3),
            format!(
                "{:.1}% ({})",
                l.max_crpd_at_percent,
                human_bytes(l.max_crpd_at_bytes)
            ),
            l.measured_below_10_percent_at
                .map_or("-".into(), |p| format!("{p:.1}%")),
            format!("{:.1}%", l.theory_zero_percent),
            format!("{:.2}", l.crpd_mean_abs_error),
            l.miss_ratio_mean_abs_error
                .map_or("-".into(), |e| format!("{e:.2}")),
        ]);
    }
    s.fact("output", out.path().display().to_string());
    s.note("CRPD = median victim pass after a wiping preemption − after an empty one (same two context switches); bound = slowest pass after a wiping preemption − fastest after an empty one");
    if let Some(sw) = &result.switch {
        s.note(sw.preemption.clone());
        if sw.no_cache.measured.is_some() {
            s.note(sw.no_cache.note.clone());
        }
    }
    if result.header.machine.virtualized == Some(true) {
        s.note("virtual machine: the host and other guests share the caches; real replacement is not LRU, so the curves are indicative");
    }
    s
}
