//! Files and summary of `tinct bench coherence`.

use super::placement::PlacementKind;
use super::{ParallelResult, Report};
use crate::Result;
use crate::harness::summary::ms;
use crate::harness::{BenchOptions, Durations, LineChart, OutputDir, Series, SeriesStyle, Summary};
use serde::Serialize;

#[derive(Debug, Serialize)]
struct CsvRow {
    rows: usize,
    variant: &'static str,
    placement: &'static str,
    count: u64,
    min_ns: u64,
    median_ns: u64,
    p99_ns: u64,
    wcet_ns: u64,
    stddev_ns: u64,
    wcet_over_sequential: f64,
}

fn csv_rows(report: &Report) -> Vec<CsvRow> {
    let mut rows = Vec::new();
    for size in &report.sizes {
        let row = |variant, placement, s: &Durations, r| CsvRow {
            rows: size.rows,
            variant,
            placement,
            count: s.count,
            min_ns: s.min,
            median_ns: s.median,
            p99_ns: s.p99,
            wcet_ns: s.max,
            stddev_ns: s.stddev.round() as u64,
            wcet_over_sequential: r,
        };
        rows.push(row("sequential", "", &size.sequential, 1.0));
        for p in &size.parallel {
            let name = p.placement.name();
            rows.push(row(
                "parallel-shared",
                name,
                &p.shared,
                p.shared_over_sequential_wcet,
            ));
            rows.push(row(
                "parallel-private",
                name,
                &p.private,
                p.private_over_sequential_wcet,
            ));
        }
    }
    rows
}

fn charts(report: &Report) -> (LineChart, LineChart) {
    let mut wcet = LineChart::new(
        "Gracioli benchmark: WCET per version (ms)",
        "array dimension (ROWS = COLS)",
        "WCET (ms)",
    );
    wcet.log2_x = true;
    let ms = |ns: u64| ns as f64 / 1e6;
    wcet.series.push(Series::new(
        "sequential",
        SeriesStyle::LineWithMarkers,
        report
            .sizes
            .iter()
            .map(|s| (s.rows as f64, ms(s.sequential.max)))
            .collect(),
    ));
    let mut slowdown = LineChart::new(
        "Parallel-shared WCET / sequential WCET",
        "array dimension (ROWS = COLS)",
        "slowdown (x)",
    );
    slowdown.log2_x = true;
    let placements: Vec<PlacementKind> = report
        .sizes
        .first()
        .map(|s| s.parallel.iter().map(|p| p.placement).collect())
        .unwrap_or_default();
    for kind in placements {
        let points = |pick: &dyn Fn(&ParallelResult) -> f64| -> Vec<(f64, f64)> {
            report
                .sizes
                .iter()
                .filter_map(|s| {
                    let p = s.parallel.iter().find(|p| p.placement == kind)?;
                    Some((s.rows as f64, pick(p)))
                })
                .collect()
        };
        wcet.series.push(Series::new(
            format!("shared, {}", kind.name()),
            SeriesStyle::LineWithMarkers,
            points(&|p| ms(p.shared.max)),
        ));
        wcet.series.push(Series::new(
            format!("private, {}", kind.name()),
            SeriesStyle::Dashed,
            points(&|p| ms(p.private.max)),
        ));
        slowdown.series.push(Series::new(
            kind.name(),
            SeriesStyle::LineWithMarkers,
            points(&|p| p.shared_over_sequential_wcet),
        ));
    }
    let first = report.sizes.first().map_or(1.0, |s| s.rows as f64);
    let last = report.sizes.last().map_or(1.0, |s| s.rows as f64);
    slowdown.series.push(Series::new(
        "1x (no slowdown)",
        SeriesStyle::Dashed,
        vec![(first, 1.0), (last, 1.0)],
    ));
    (wcet, slowdown)
}

/// Writes `coherence.csv`, the two SVG charts and `coherence.json` (which
/// lists every file).
pub(super) fn write(report: &mut Report, common: &BenchOptions) -> Result<()> {
    let mut out = OutputDir::create(common.out_dir("coherence"))?;
    out.write_csv("coherence.csv", &csv_rows(report))?;
    out.write_counters_csv("coherence-counters.csv", &report.header.counters)?;
    let (wcet, slowdown) = charts(report);
    out.write_svg("coherence-wcet.svg", &wcet)?;
    out.write_svg("coherence-slowdown.svg", &slowdown)?;
    report.files = out.files_with("coherence.json");
    out.write_json("coherence.json", report)?;
    Ok(())
}

/// The Fig. 9 counters in one line: per event its total over every
/// parallel-shared condition, or why there is none.
fn fig9_line(report: &Report) -> String {
    let shared = |name: &str| -> Option<u64> {
        report
            .header
            .counters
            .iter()
            .filter(|c| c.condition.contains("/parallel-shared/"))
            .try_fold(0u64, |sum, c| sum.checked_add(c.total(name)?))
    };
    let mut reasons: Vec<String> = Vec::new();
    let mut counts: Vec<String> = Vec::new();
    for f in &report.fig9 {
        match (&f.counter, &f.unresolved) {
            (Some(name), _) => match shared(name) {
                Some(total) => counts.push(format!("{} {total}", f.label)),
                None => {
                    let why = report
                        .header
                        .counters
                        .iter()
                        .flat_map(|c| &c.events)
                        .find(|e| &e.event == name)
                        .and_then(|e| e.unavailable.clone())
                        .unwrap_or_else(|| "no count".into());
                    if !reasons.contains(&why) {
                        reasons.push(why);
                    }
                }
            },
            (None, Some(why)) => {
                if !reasons.contains(why) {
                    reasons.push(why.clone());
                }
            }
            (None, None) => {}
        }
    }
    let mut parts = vec![report.fig9_machine.clone()];
    if !counts.is_empty() {
        parts.push(format!("parallel-shared totals: {}", counts.join(", ")));
    }
    if !reasons.is_empty() {
        parts.push(format!("unavailable: {}", reasons.join("; ")));
    }
    parts.join("; ")
}

/// The one-screen summary.
pub(super) fn summary(report: &Report) -> Summary {
    let mut s = Summary::new("tinct bench coherence (Gracioli et al. 2011)");
    s.fact("machine", report.header.machine.one_line());
    s.fact(
        "runs",
        format!(
            "{} per condition (+{} warm-up), interleaved; WCET = largest run",
            report.header.reps, report.parameters.warmup_rounds
        ),
    );
    s.fact(
        "loop",
        match (
            report.parameters.fixed_repetitions,
            report.parameters.work_per_function,
        ) {
            (Some(r), _) => format!("{r} repetitions at every size (the paper's fixed loop)"),
            (None, Some(w)) => format!("{w} element updates per function at every size"),
            (None, None) => "unknown".into(),
        },
    );
    let held = |f: fn(&super::Ordering) -> bool| {
        let pairs: Vec<_> = report
            .orderings
            .iter()
            .filter(|o| o.placement != PlacementKind::SameCpu)
            .collect();
        format!(
            "{} of {}",
            pairs.iter().filter(|o| f(o)).count(),
            pairs.len()
        )
    };
    s.fact(
        "orderings (medians, two-CPU placements)",
        format!(
            "shared > private at {}; private < sequential at {}",
            held(|o| o.shared_slower_than_private),
            held(|o| o.private_faster_than_sequential)
        ),
    );
    s.fact("Fig. 9 counters", fig9_line(report));
    if let Some(w) = &report.worst {
        s.fact(
            "worst slowdown",
            format!(
                "{:.2}x parallel-shared vs sequential WCET at {}x{}, {}",
                w.shared_over_sequential_wcet,
                w.rows,
                w.rows,
                w.placement.name()
            ),
        );
    }
    for f in &report.false_sharing {
        s.fact(
            format!("false sharing, {}", f.placement.name()),
            format!(
                "{:.2}x (median {} vs {} ms)",
                f.slowdown_median,
                ms(f.same_line.median),
                ms(f.separate_lines.median)
            ),
        );
    }
    s.table(&[
        "size",
        "placement",
        "seq WCET ms",
        "shared WCET ms",
        "private WCET ms",
        "shared/seq WCET",
        "private/seq WCET",
        "shared/seq median",
    ]);
    for size in &report.sizes {
        for p in &size.parallel {
            s.row(vec![
                format!("{}x{}", size.rows, size.cols),
                p.placement.name().into(),
                ms(size.sequential.max),
                ms(p.shared.max),
                ms(p.private.max),
                format!("{:.2}", p.shared_over_sequential_wcet),
                format!("{:.2}", p.private_over_sequential_wcet),
                format!("{:.2}", p.shared_over_sequential_median),
            ]);
        }
    }
    for note in &report.notes {
        s.note(note.clone());
    }
    if !report.files.is_empty() {
        s.note(format!("files: {}", report.files.join(", ")));
    }
    s
}
