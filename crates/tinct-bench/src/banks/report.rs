//! Files and summary of `tinct bench banks`.

use super::kernels::Kernel;
use super::tables::Table;
use super::{Allocation, Report};
use crate::Result;
use crate::choice::Choice;
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

/// One CSV row of the composite: one condition of one configuration.
#[derive(Debug, Serialize)]
struct CompositeRow {
    threads: usize,
    pages: usize,
    allocation: &'static str,
    count: u64,
    min_ns: u64,
    median_ns: u64,
    p99_ns: u64,
    max_ns: u64,
    stddev_ns: u64,
    fallback_pages: usize,
}

/// A table as CSV records: a header, then one record per row (empty cells
/// where the condition did not run).
fn table_records(table: &Table) -> Vec<Vec<String>> {
    let mut records = vec![
        std::iter::once(String::new())
            .chain(table.columns.iter().cloned())
            .collect::<Vec<_>>(),
    ];
    for row in &table.rows {
        records.push(
            std::iter::once(row.label.clone())
                .chain(
                    row.cells
                        .iter()
                        .map(|c| c.map(|v| v.to_string()).unwrap_or_default()),
                )
                .collect(),
        );
    }
    records
}

/// A table as summary lines: its title and unit, then one line per row.
fn table_lines(table: &Table) -> Vec<String> {
    let mut lines = vec![format!(
        "{} ({}): {}",
        table.title,
        table.unit,
        table.columns.join(" | ")
    )];
    for (r, row) in table.rows.iter().enumerate() {
        let cells: Vec<String> = (0..table.columns.len())
            .map(|c| table.cell_text(r, c))
            .collect();
        lines.push(format!("  {}: {}", row.label, cells.join(" | ")));
    }
    lines
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
    let composite: Vec<CompositeRow> = report
        .composite
        .iter()
        .flat_map(|run| {
            run.conditions.iter().map(move |c| CompositeRow {
                threads: run.threads,
                pages: run.pages,
                allocation: c.allocation.name(),
                count: c.time.count,
                min_ns: c.time.min,
                median_ns: c.time.median,
                p99_ns: c.time.p99,
                max_ns: c.time.max,
                stddev_ns: c.time.stddev.round() as u64,
                fallback_pages: c.fallback_pages.iter().sum(),
            })
        })
        .collect();
    if !composite.is_empty() {
        out.write_csv("banks-composite.csv", &composite)?;
    }
    out.write_csv("banks-table1.csv", &table_records(&report.table1))?;
    if !report.table2.rows.is_empty() {
        out.write_csv("banks-table2.csv", &table_records(&report.table2))?;
    }
    // Bandwidth per kernel (x = kernel index), one series per allocation.
    let mut chart = LineChart::new(
        "Aggregate bandwidth per kernel and allocation (median run)",
        "kernel (1 copy, 2 scale, 3 add, 4 triad, 5 random, 6 integer-sort)",
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
        if report.bank_placement_known || report.parameters.controllers > 1 {
            format!(
                "{} banks x {} controllers from {}; Algorithm 1 mode {}",
                report.parameters.banks,
                report.parameters.controllers,
                report.parameters.functions_from,
                report.parameters.bank_mode
            )
        } else {
            "UNKNOWN here (no --bank-functions or --dram-map): no bank-aware condition".into()
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
    for run in &report.composite {
        let default = run.conditions.first().map_or(0, |c| c.time.median);
        for c in &run.conditions {
            s.row(vec![
                format!("bsort {}x{}", run.threads, run.pages),
                c.allocation.name().into(),
                ms(c.time.median),
                ms(c.time.max),
                ms(c.time.stddev.round() as u64),
                "-".into(),
                "-".into(),
                if default == 0 {
                    "-".into()
                } else {
                    format!("{:.2}x", c.time.median as f64 / default as f64)
                },
            ]);
        }
    }
    for line in table_lines(&report.table1)
        .into_iter()
        .chain(if report.table2.rows.is_empty() {
            Vec::new()
        } else {
            table_lines(&report.table2)
        })
    {
        s.note(line);
    }
    for k in &report.kernels {
        for a in &k.allocations {
            let fallback: usize = a.fallback_pages.iter().sum();
            if fallback > 0 {
                s.note(format!(
                    "{} under {}: {fallback} pages from a fallback step of Algorithm 1 (not the \
                     requested bank)",
                    k.kernel.name(),
                    a.allocation.name()
                ));
            }
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
