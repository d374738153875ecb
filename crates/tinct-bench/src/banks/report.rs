//! Files and summary of `tinct bench banks`.

use super::kernels::Kernel;
use super::{Allocation, Report};
use crate::Result;
use crate::harness::machine::human_bytes;
use crate::harness::summary::ms;
use crate::harness::{BenchOptions, LineChart, OutputDir, Series, SeriesStyle, Summary};
use serde::Serialize;

/// One CSV row: one kernel under one allocation.
#[derive(Debug, Serialize)]
struct CsvRow {
    kernel: &'static str,
    allocation: &'static str,
    count: u64,
    min_ns: u64,
    median_ns: u64,
    p99_ns: u64,
    max_ns: u64,
    stddev_ns: u64,
    bandwidth_mib_s: f64,
    bandwidth_stddev_mib_s: f64,
}

/// Writes `banks.csv`, `banks.svg` and `banks.json` (which lists every file).
pub(super) fn write(report: &mut Report, common: &BenchOptions) -> Result<()> {
    let mut out = OutputDir::create(common.out_dir("banks"))?;
    let rows: Vec<CsvRow> = report
        .kernels
        .iter()
        .flat_map(|k| {
            k.allocations.iter().map(move |a| CsvRow {
                kernel: k.kernel.name(),
                allocation: a.allocation.name(),
                count: a.time.count,
                min_ns: a.time.min,
                median_ns: a.time.median,
                p99_ns: a.time.p99,
                max_ns: a.time.max,
                stddev_ns: a.time.stddev.round() as u64,
                bandwidth_mib_s: a.bandwidth_mib_s,
                bandwidth_stddev_mib_s: a.bandwidth_stddev_mib_s,
            })
        })
        .collect();
    out.write_csv("banks.csv", &rows)?;
    // Bandwidth per kernel (x = kernel index), one series per allocation.
    let mut chart = LineChart::new(
        "Aggregate bandwidth per kernel and allocation (median run)",
        "kernel (1 copy, 2 scale, 3 add, 4 triad, 5 random)",
        "MiB/s",
    );
    let allocations: Vec<Allocation> = report
        .kernels
        .first()
        .map(|k| k.allocations.iter().map(|a| a.allocation).collect())
        .unwrap_or_default();
    for allocation in allocations {
        let points = report
            .kernels
            .iter()
            .filter_map(|k| {
                let x = Kernel::ALL.iter().position(|&kk| kk == k.kernel)? as f64 + 1.0;
                let a = k.allocations.iter().find(|a| a.allocation == allocation)?;
                Some((x, a.bandwidth_mib_s))
            })
            .collect();
        chart.series.push(Series::new(
            allocation.name(),
            SeriesStyle::LineWithMarkers,
            points,
        ));
    }
    out.write_svg("banks.svg", &chart)?;
    report.files = out.files_with("banks.json");
    out.write_json("banks.json", report)?;
    Ok(())
}

/// The one-screen summary.
pub(super) fn summary(report: &Report) -> Summary {
    let mut s = Summary::new("tinct bench banks (Chandru & Mueller)");
    s.fact("machine", report.header.machine.one_line());
    s.fact(
        "threads",
        format!(
            "{} on CPUs {}, {} each",
            report.parameters.threads,
            tinct_sys::format_cpu_list(&report.parameters.thread_cpus),
            human_bytes(report.parameters.bytes_per_thread)
        ),
    );
    s.fact(
        "bank placement",
        if report.bank_placement_known {
            format!(
                "{} banks x {} controllers from the given functions",
                report.parameters.banks, report.parameters.controllers
            )
        } else {
            "UNKNOWN here (no --bank-functions): default allocation only".into()
        },
    );
    s.fact(
        "runs",
        format!(
            "{} per condition (+{} warm-up), interleaved",
            report.header.reps, report.parameters.warmup_rounds
        ),
    );
    s.table(&[
        "kernel",
        "allocation",
        "median ms",
        "max ms",
        "stddev ms",
        "MiB/s",
        "MiB/s stddev",
        "vs default",
    ]);
    for k in &report.kernels {
        for a in &k.allocations {
            s.row(vec![
                k.kernel.name().into(),
                a.allocation.name().into(),
                ms(a.time.median),
                ms(a.time.max),
                ms(a.time.stddev.round() as u64),
                format!("{:.0}", a.bandwidth_mib_s),
                format!("{:.0}", a.bandwidth_stddev_mib_s),
                format!("{:.2}x", a.median_over_default),
            ]);
        }
    }
    for skip in &report.skipped {
        s.note(format!("{} skipped: {}", skip.condition, skip.reason));
    }
    for note in &report.notes {
        s.note(note.clone());
    }
    if !report.files.is_empty() {
        s.note(format!("files: {}", report.files.join(", ")));
    }
    s
}
