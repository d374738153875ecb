//! Files and summary of `tinct bench dram-map`.

use super::Report;
use crate::Result;
use crate::harness::{BenchOptions, LineChart, OutputDir, Series, SeriesStyle, Summary};
use serde::Serialize;
use tinct_core::dram_map::{AddressKind, DramMap};

/// One CSV row: one function.
#[derive(Debug, Serialize)]
struct CsvRow {
    mask: String,
    bits: String,
    confidence: f64,
    pairs: usize,
    slow: usize,
}

/// Writes `dram-map.csv`, `dram-map.svg`, `dram-map.toml` (only when
/// found) and `dram-map.json`.
pub(super) fn write(report: &mut Report, common: &BenchOptions) -> Result<()> {
    let mut out = OutputDir::create(common.out_dir("dram-map"))?;
    let rows: Vec<CsvRow> = report
        .solution
        .functions
        .iter()
        .map(|f| CsvRow {
            mask: format!("{:#x}", f.mask),
            bits: f
                .bits
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(" "),
            confidence: f.confidence,
            pairs: f.pairs,
            slow: f.slow,
        })
        .collect();
    out.write_csv("dram-map.csv", &rows)?;
    out.write_svg("dram-map.svg", &histogram(report))?;
    if report.solution.found {
        let map = DramMap {
            bank_functions: report.solution.masks(),
            controller_functions: Vec::new(),
            confidence: report
                .solution
                .functions
                .iter()
                .map(|f| (f.confidence * 1e4).round() / 1e4)
                .collect(),
            physical: if report.guest_physical {
                AddressKind::Guest
            } else {
                AddressKind::Host
            },
            machine: report.header.machine.one_line(),
        };
        let header = [
            "tinct bench dram-map: DRAM bank functions found by row-buffer conflict timing".into(),
            format!(
                "{} addresses of {} MiB, {} measurements; bank bit i = parity(address & mask i)",
                report.samples,
                report.buffer_bytes >> 20,
                report.solution.measurements
            ),
        ];
        out.write_text("dram-map.toml", &map.to_toml(&header))?;
    }
    report.files = out.files_with("dram-map.json");
    out.write_json("dram-map.json", report)?;
    Ok(())
}

/// The latency histogram of the threshold pairs, with the threshold.
fn histogram(report: &Report) -> LineChart {
    let latencies = &report.threshold_latencies;
    let mut chart = LineChart::new(
        "Row-buffer timing: latency of random address pairs",
        "latency (cycles)",
        "pairs",
    );
    if latencies.is_empty() {
        return chart;
    }
    let low = *latencies.iter().min().unwrap_or(&0);
    let high = *latencies.iter().max().unwrap_or(&1);
    let bins = 60u32;
    let width = ((high - low) / bins).max(1);
    let mut counts = vec![0u32; bins as usize + 1];
    for &latency in latencies {
        counts[((latency - low) / width).min(bins) as usize] += 1;
    }
    let points = counts
        .iter()
        .enumerate()
        .map(|(i, &c)| (f64::from(low + i as u32 * width), f64::from(c)))
        .collect();
    chart
        .series
        .push(Series::new("pairs", SeriesStyle::LineWithMarkers, points));
    chart
        .x_markers
        .push((f64::from(report.solution.threshold), "threshold".into()));
    chart
}

/// The one-screen summary.
pub(super) fn summary(report: &Report) -> Summary {
    let solution = &report.solution;
    let mut s = Summary::new("tinct bench dram-map (row-buffer conflict timing)");
    s.fact("machine", report.header.machine.one_line());
    s.fact(
        "sampled",
        format!(
            "{} addresses of a {} MiB buffer, {} timings each, {} measurements in {:.0} ms",
            report.samples,
            report.buffer_bytes >> 20,
            report.rounds,
            solution.measurements,
            report.elapsed_ms
        ),
    );
    s.fact(
        "timing",
        format!(
            "fast {:.0} ± {:.0}, slow {:.0} ± {:.0} cycles ({} of {} pairs); separation {:.1} \
             standard deviations",
            solution.fast.mean,
            solution.fast.stddev,
            solution.slow.mean,
            solution.slow.stddev,
            solution.slow.count,
            solution.fast.count + solution.slow.count,
            solution.separation
        ),
    );
    s.fact(
        "verdict",
        match (&solution.refusal, solution.found) {
            (_, true) => format!(
                "FOUND {} functions ({} bank classes); same-bank check {:.0} %",
                solution.functions.len(),
                1u64 << solution.functions.len(),
                100.0 * solution.same_bank_slow_rate
            ),
            (Some(why), false) => format!("REFUSED: {why}"),
            (None, false) => "REFUSED".into(),
        },
    );
    if !solution.functions.is_empty() {
        s.table(&["function", "address bits", "confidence", "pairs (slow)"]);
        for f in &solution.functions {
            s.row(vec![
                format!("{:#x}", f.mask),
                f.bits
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(" "),
                format!("{:.3}", f.confidence),
                format!("{} ({})", f.pairs, f.slow),
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
