//! Files and summary of `tinct bench calibrate`.

use super::CalibrateResult;
use crate::Result;
use crate::harness::machine::human_bytes;
use crate::harness::{Durations, LineChart, OutputDir, Series, SeriesStyle, Summary};
use serde::Serialize;

#[derive(Serialize)]
struct LatencyRow<'a> {
    size_bytes: u64,
    fits_in: &'a str,
    accesses_per_sample: u64,
    random_ns_per_access: f64,
    random_min_ns_per_access: f64,
    random_p99_ns_per_access: f64,
    page_local_ns_per_access: f64,
    page_local_min_ns_per_access: f64,
    page_local_p99_ns_per_access: f64,
    tlb_penalty_ns: f64,
    huge_random_ns_per_access: Option<f64>,
    huge_random_min_ns_per_access: Option<f64>,
    huge_tlb_penalty_ns: Option<f64>,
    samples: u64,
}

#[derive(Serialize)]
struct ConditionRow<'a> {
    measurement: &'a str,
    condition: &'a str,
    bytes: u64,
    count: u64,
    min_ns: u64,
    median_ns: u64,
    p99_ns: u64,
    max_ns: u64,
    mean_ns: u64,
    stddev_ns: u64,
}

impl<'a> ConditionRow<'a> {
    fn new(measurement: &'a str, condition: &'a str, bytes: u64, s: &Durations) -> Self {
        Self {
            measurement,
            condition,
            bytes,
            count: s.count,
            min_ns: s.min,
            median_ns: s.median,
            p99_ns: s.p99,
            max_ns: s.max,
            mean_ns: s.mean.round() as u64,
            stddev_ns: s.stddev.round() as u64,
        }
    }
}

/// Writes `calibrate.json`, `latency.csv`, `conditions.csv`, `latency.svg`
/// and `refill.toml` (the `[platform]` line).
pub fn write(result: &CalibrateResult, out: &mut OutputDir) -> Result<()> {
    out.write_json(super::RESULT_FILE, result)?;
    let rows: Vec<LatencyRow> = result
        .latency
        .iter()
        .map(|p| {
            let per = |ns: u64| ns as f64 / p.accesses_per_sample as f64;
            LatencyRow {
                size_bytes: p.size_bytes,
                fits_in: &p.fits_in,
                accesses_per_sample: p.accesses_per_sample,
                random_ns_per_access: p.random_ns_per_access,
                random_min_ns_per_access: p.random_min_ns_per_access,
                random_p99_ns_per_access: per(p.random.p99),
                page_local_ns_per_access: p.page_local_ns_per_access,
                page_local_min_ns_per_access: p.page_local_min_ns_per_access,
                page_local_p99_ns_per_access: per(p.page_local.p99),
                tlb_penalty_ns: p.tlb_penalty_ns,
                huge_random_ns_per_access: p.huge_random_ns_per_access,
                huge_random_min_ns_per_access: p.huge_random_min_ns_per_access,
                huge_tlb_penalty_ns: p.huge_tlb_penalty_ns,
                samples: p.random.count,
            }
        })
        .collect();
    out.write_csv("latency.csv", &rows)?;
    let mut conditions = Vec::new();
    if let Some(b) = &result.bandwidth {
        conditions.extend([
            ConditionRow::new("bandwidth", "read", b.buffer_bytes, &b.read),
            ConditionRow::new("bandwidth", "write", b.buffer_bytes, &b.write),
        ]);
    }
    if let Some(r) = &result.refill {
        conditions.extend([
            ConditionRow::new("refill", "cold_pages", r.partition_bytes, &r.cold_pages),
            ConditionRow::new("refill", "warm_pages", r.partition_bytes, &r.warm_pages),
            ConditionRow::new("refill", "cold_chase", r.partition_bytes, &r.cold_chase),
            ConditionRow::new("refill", "warm_chase", r.partition_bytes, &r.warm_chase),
        ]);
    }
    out.write_csv("conditions.csv", &conditions)?;
    out.write_svg("latency.svg", &latency_chart(result))?;
    // Δ only from a run that measured it: an interrupted run has no line.
    if let Some(r) = &result.refill {
        out.write_text(
            "refill.toml",
            &format!(
                "# Δ measured by `tinct bench calibrate` ({} partitions of {}); put under [platform]:\n{}\n",
                r.delta.partitions,
                human_bytes(r.partition_bytes),
                r.platform_line
            ),
        )?;
    }
    Ok(())
}

fn latency_chart(result: &CalibrateResult) -> LineChart {
    let points = |f: fn(&super::LatencyPoint) -> f64| {
        result
            .latency
            .iter()
            .map(|p| (p.size_bytes as f64, f(p)))
            .collect::<Vec<_>>()
    };
    let mut chart = LineChart::new(
        "Load-to-use latency (pointer chase)",
        "working set (bytes, log scale)",
        "ns per load",
    )
    .add_series(Series::new(
        "random lines, min (cache + TLB)",
        SeriesStyle::LineWithMarkers,
        points(|p| p.random_min_ns_per_access),
    ))
    .add_series(Series::new(
        "page-local, min (cache only)",
        SeriesStyle::LineWithMarkers,
        points(|p| p.page_local_min_ns_per_access),
    ))
    .add_series(Series::new(
        "random lines, median",
        SeriesStyle::Dashed,
        points(|p| p.random_ns_per_access),
    ));
    let huge: Vec<(f64, f64)> = result
        .latency
        .iter()
        .filter_map(|p| Some((p.size_bytes as f64, p.huge_random_min_ns_per_access?)))
        .collect();
    if !huge.is_empty() {
        chart = chart.add_series(Series::new(
            "random lines in huge pages, min (cache, few TLB misses)",
            SeriesStyle::LineWithMarkers,
            huge,
        ));
    }
    chart.log2_x = true;
    chart.x_markers = result
        .header
        .machine
        .caches
        .iter()
        .map(|c| (c.size_bytes as f64, c.name.clone()))
        .collect();
    chart
}

/// The one-screen summary.
pub fn summary(result: &CalibrateResult, out: &OutputDir) -> Summary {
    let mut s = Summary::of_run(&result.header);
    s.fact(
        "run",
        format!(
            "CPU {}, {} reps per condition, seed {}",
            result.header.cpus[0], result.header.reps, result.header.seed
        ),
    );
    s.table(&[
        "level",
        "capacity",
        "probe size",
        "ns/load min",
        "ns/load median",
        "random min",
        "random median",
        "TLB penalty",
        "huge-page random min",
        "TLB (4K − huge)",
    ]);
    for level in &result.levels {
        s.row(vec![
            level.level.clone(),
            level.cache_bytes.map_or("-".into(), human_bytes),
            human_bytes(level.probe_bytes),
            format!("{:.1}", level.min_ns_per_access),
            format!("{:.1}", level.ns_per_access),
            format!("{:.1}", level.random_min_ns_per_access),
            format!("{:.1}", level.random_ns_per_access),
            format!(
                "{:.1}",
                level.random_min_ns_per_access - level.min_ns_per_access
            ),
            level
                .huge_random_min_ns_per_access
                .map_or("-".into(), |h| format!("{h:.1}")),
            level.huge_random_min_ns_per_access.map_or("-".into(), |h| {
                format!("{:.1}", level.random_min_ns_per_access - h)
            }),
        ]);
    }
    if let Some(b) = &result.bandwidth {
        s.fact(
            "bandwidth",
            format!(
                "read {:.1} GB/s, write {:.1} GB/s (median over {} passes of {})",
                b.read_gb_per_s,
                b.write_gb_per_s,
                b.read.count,
                human_bytes(b.buffer_bytes)
            ),
        );
    }
    if let Some(r) = &result.refill {
        s.fact(
            "refill Δ",
            format!(
                "{} per partition of {} (LLC {} / {}); latency-bound {} ns",
                r.refill,
                human_bytes(r.partition_bytes),
                human_bytes(r.llc_bytes),
                r.delta.partitions,
                r.refill_latency_bound_ns
            ),
        );
        s.fact("[platform]", r.platform_line.clone());
    }
    if let Some(overheads) = &result.overheads {
        crate::overheads::summary_facts(&mut s, overheads);
    }
    s.fact("output", out.path().display().to_string());
    s.note(result.huge_pages.note.clone());
    if result.header.machine.virtualized == Some(true) {
        s.note("this is a virtual machine: caches are shared with the host and other guests, so latencies are noisy and Δ is an estimate");
    }
    s
}
