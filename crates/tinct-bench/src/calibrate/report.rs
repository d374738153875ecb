//! The result of `tinct bench calibrate` (`calibrate.json`): its types,
//! the per-level latencies and the huge-page note read off what was
//! measured, the files and the summary.

use super::measure::Measured;
use super::plan::Plan;
use crate::Result;
use crate::harness::{Columns, DISTRIBUTION_COLUMNS};
use crate::harness::{
    Durations, LineChart, OutputDir, RunHeader, Series, SeriesStyle, Summary, report_fields,
};
use serde::{Deserialize, Serialize};
use tinct_base::units::human_bytes;
use tinct_core::calibration::RefillRecord;
use tinct_core::units::Bytes;

/// Latency at one working-set size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyPoint {
    /// Working-set size in bytes.
    pub size_bytes: u64,
    /// The smallest cache that holds it (`L1d`, `L2`, ...) or `memory`.
    pub fits_in: String,
    /// Loads per sample.
    pub accesses_per_sample: u64,
    /// Time per sample, random-line layout (TLB misses included).
    pub random: Durations,
    /// Time per sample, page-local layout (one TLB miss per page).
    pub page_local: Durations,
    /// Median ns per load, random-line layout.
    pub random_ns_per_access: f64,
    /// Median ns per load, page-local layout: the cache latency.
    pub page_local_ns_per_access: f64,
    /// Fastest sample's ns per load, random-line layout (on a shared
    /// machine interference only adds time, so the minimum is the least
    /// disturbed estimate).
    pub random_min_ns_per_access: f64,
    /// Fastest sample's ns per load, page-local layout.
    pub page_local_min_ns_per_access: f64,
    /// Random minus page-local, per load, from the fastest samples: the TLB
    /// penalty at this size.
    pub tlb_penalty_ns: f64,
    /// Time per sample, random-line layout within transparent huge pages
    /// (`None` when the buffer did not get huge pages).
    pub huge_random: Option<Durations>,
    /// Median ns per load, random-line layout in huge pages.
    pub huge_random_ns_per_access: Option<f64>,
    /// Fastest sample's ns per load, random-line layout in huge pages.
    pub huge_random_min_ns_per_access: Option<f64>,
    /// 4 KiB random minus huge-page random, per load, from the fastest
    /// samples: the TLB cost of base pages at this size.
    pub huge_tlb_penalty_ns: Option<f64>,
}

/// The latency of one level, read off the sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LevelLatency {
    /// `L1d`, `L2`, `L3`, `memory`.
    pub level: String,
    /// Capacity of the level (`None` for memory).
    pub cache_bytes: Option<u64>,
    /// The sweep size used for this level (the largest at most half the
    /// level's capacity and larger than the level below; for memory, the
    /// largest size).
    pub probe_bytes: u64,
    /// Median ns per load at that size, page-local layout.
    pub ns_per_access: f64,
    /// Median ns per load at that size, random layout.
    pub random_ns_per_access: f64,
    /// Fastest sample's ns per load at that size, page-local layout.
    pub min_ns_per_access: f64,
    /// Fastest sample's ns per load at that size, random layout.
    pub random_min_ns_per_access: f64,
    /// Fastest sample's ns per load at that size, random layout within
    /// huge pages (when measured).
    pub huge_random_min_ns_per_access: Option<f64>,
}

/// What was done about huge pages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HugePages {
    /// Transparent huge page mode of the kernel, if any.
    pub thp_mode: Option<String>,
    /// True if a huge-page chase was measured (at one size at least).
    pub measured: bool,
    /// Sizes of the sweep with a huge-page chase.
    pub sizes_measured: usize,
    /// Huge-page size in bytes.
    pub huge_page_bytes: u64,
    /// Why not (`THP unavailable: ...`), or how.
    pub note: String,
}

/// Sustained sequential bandwidth.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bandwidth {
    /// Bytes per pass.
    pub buffer_bytes: u64,
    /// Time per read pass.
    pub read: Durations,
    /// Time per write pass.
    pub write: Durations,
    /// Median read bandwidth in bytes/ns (= GB/s).
    pub read_gb_per_s: f64,
    /// Median write bandwidth in bytes/ns (= GB/s).
    pub write_gb_per_s: f64,
}

/// Δ, the partition refill time: the `refill` object of calibrate.json.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Refill {
    /// N_P and Δ = median(cold pages) − median(warm pages), ns: the fields
    /// analysis reads, written through tinct-core's calibration type.
    #[serde(flatten)]
    pub delta: RefillRecord,
    /// The LLC capacity the partition is a share of.
    pub llc_bytes: u64,
    /// Partition size LLC / N_P (rounded up to whole pages).
    pub partition_bytes: u64,
    /// Refill pass after the LLC was wiped.
    pub cold_pages: Durations,
    /// Refill pass with the partition warm.
    pub warm_pages: Durations,
    /// Random chase over the partition after the LLC was wiped.
    pub cold_chase: Durations,
    /// Random chase over the partition, warm.
    pub warm_chase: Durations,
    /// Latency-bound Δ = median(cold chase) − median(warm chase), ns.
    pub refill_latency_bound_ns: u64,
    /// Δ rounded up to 100 ns, as the task-set format writes it.
    pub refill: String,
    /// The line to put under `[platform]`.
    pub platform_line: String,
}

/// Everything `tinct bench calibrate` measured (`calibrate.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CalibrateResult {
    /// Bench, options, machine.
    #[serde(flatten)]
    pub header: RunHeader,
    /// N_P.
    pub partitions: u32,
    /// The latency sweep.
    pub latency: Vec<LatencyPoint>,
    /// Latency per level.
    pub levels: Vec<LevelLatency>,
    /// Huge pages.
    pub huge_pages: HugePages,
    /// Bandwidth (absent when the run was stopped before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bandwidth: Option<Bandwidth>,
    /// Δ (absent when the run was stopped before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refill: Option<Refill>,
    /// The platform overheads (context switch, release latency, tick),
    /// measured as `tinct bench overheads` does (absent when the run was
    /// stopped before them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overheads: Option<tinct_core::calibration::Overheads>,
}

impl crate::harness::Bench for CalibrateResult {
    const NAME: &'static str = super::NAME;
    type Plan = Plan;

    /// The result of a measured plan: the levels and the huge-page note read
    /// off the sweep, the counter totals of every interleaved run.
    fn assemble(plan: Plan, measured: Measured, _stopped: bool) -> Result<CalibrateResult> {
        let mut header = plan.header;
        header.add_logged_counters();
        let Measured {
            latency,
            huge_missing,
            bandwidth,
            refill,
            overheads,
        } = measured;
        Ok(CalibrateResult {
            overheads,
            huge_pages: huge_pages_note(&header, &latency, huge_missing),
            levels: level_latencies(&latency, &header),
            header,
            partitions: plan.partitions,
            latency,
            bandwidth,
            refill,
        })
    }

    report_fields!(header);

    /// Writes `latency.csv`, `conditions.csv`, `latency.svg`
    /// and `refill.toml` (the `[platform]` line).
    fn write(&self, out: &mut OutputDir) -> Result<()> {
        let rows = self.latency.iter().map(|p| {
            let per = |ns: u64| ns as f64 / p.accesses_per_sample as f64;
            Columns::of(p)
                .with("random_p99_ns_per_access", per(p.random.p99))
                .with("page_local_p99_ns_per_access", per(p.page_local.p99))
                .with("samples", p.random.count)
        });
        out.write_columns("latency.csv", &[LATENCY_COLUMNS], rows)?;
        let mut conditions = Vec::new();
        if let Some(b) = &self.bandwidth {
            conditions.extend([
                condition_row("bandwidth", "read", b.buffer_bytes, &b.read),
                condition_row("bandwidth", "write", b.buffer_bytes, &b.write),
            ]);
        }
        if let Some(r) = &self.refill {
            conditions.extend([
                condition_row("refill", "cold_pages", r.partition_bytes, &r.cold_pages),
                condition_row("refill", "warm_pages", r.partition_bytes, &r.warm_pages),
                condition_row("refill", "cold_chase", r.partition_bytes, &r.cold_chase),
                condition_row("refill", "warm_chase", r.partition_bytes, &r.warm_chase),
            ]);
        }
        let columns = ["measurement,condition,bytes", DISTRIBUTION_COLUMNS];
        out.write_columns("conditions.csv", &columns, conditions)?;
        out.write_svg("latency.svg", &latency_chart(self))?;
        // Δ only from a run that measured it: an interrupted run has no line.
        if let Some(r) = &self.refill {
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

    /// The one-screen summary.
    fn summary(&self, _: &super::Params, out: &OutputDir) -> Summary {
        let mut s = Summary::of_run(&self.header);
        s.fact(
            "run",
            format!(
                "CPU {}, {} reps per condition, seed {}",
                self.header.cpus[0], self.header.reps, self.header.seed
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
        for level in &self.levels {
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
        if let Some(b) = &self.bandwidth {
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
        if let Some(r) = &self.refill {
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
        if let Some(overheads) = &self.overheads {
            crate::overheads::summary_facts(&mut s, overheads);
        }
        s.fact("output", out.path().display().to_string());
        s.note(self.huge_pages.note.clone());
        if self.header.machine.virtualized == Some(true) {
            s.note("this is a virtual machine: caches are shared with the host and other guests, so latencies are noisy and Δ is an estimate");
        }
        s
    }
}

/// The latency of `level` (of capacity `cache_bytes`) as measured at probe `p`.
fn level_at(level: String, cache_bytes: Option<u64>, p: &LatencyPoint) -> LevelLatency {
    LevelLatency {
        level,
        cache_bytes,
        probe_bytes: p.size_bytes,
        ns_per_access: p.page_local_ns_per_access,
        random_ns_per_access: p.random_ns_per_access,
        min_ns_per_access: p.page_local_min_ns_per_access,
        random_min_ns_per_access: p.random_min_ns_per_access,
        huge_random_min_ns_per_access: p.huge_random_min_ns_per_access,
    }
}

/// The latency of each level, read off the sweep (see [`LevelLatency::probe_bytes`]).
pub fn level_latencies(points: &[LatencyPoint], header: &RunHeader) -> Vec<LevelLatency> {
    let mut levels = Vec::new();
    let mut below = 0u64;
    let mut caches: Vec<_> = header.machine.caches.iter().collect();
    caches.sort_by_key(|c| c.level);
    for cache in caches {
        let probe = points
            .iter()
            .filter(|p| p.size_bytes > below && p.size_bytes <= cache.size_bytes / 2)
            .max_by_key(|p| p.size_bytes);
        if let Some(p) = probe {
            levels.push(level_at(cache.name.clone(), Some(cache.size_bytes), p));
        }
        below = cache.size_bytes;
    }
    if let Some(p) = points
        .iter()
        .filter(|p| p.size_bytes >= below.saturating_mul(2))
        .max_by_key(|p| p.size_bytes)
    {
        levels.push(level_at("memory".into(), None, p));
    }
    levels
}

fn huge_pages_note(
    header: &RunHeader,
    latency: &[LatencyPoint],
    missing: Option<String>,
) -> HugePages {
    let thp_mode = header.machine.thp.clone();
    let sizes_measured = latency.iter().filter(|p| p.huge_random.is_some()).count();
    let huge_page_bytes = tinct_sys::huge_buffer::huge_page_size() as u64;
    let fallback = "the TLB effect is shown as random-line minus page-local latency \
                    (one TLB miss per load vs one per page)";
    let note = match (&missing, sizes_measured) {
        (None, _) => format!(
            "random-line chase within {} transparent huge pages at every size, next to the \
             4 KiB chase: huge_tlb_penalty_ns = 4 KiB random − huge-page random is the TLB \
             cost (same lines, same order, 512 × the TLB reach); random − page-local \
             (tlb_penalty_ns) also counts in-page locality (DRAM row hits, adjacent-line \
             prefetch) and overstates it",
            Bytes(huge_page_bytes)
        ),
        (Some(why), 0) => format!("{why}; {fallback}"),
        (Some(why), n) => format!(
            "huge-page chase at the {n} smallest sizes only, then {why}; {fallback} at the others"
        ),
    };
    HugePages {
        thp_mode,
        measured: sizes_measured > 0,
        sizes_measured,
        huge_page_bytes,
        note,
    }
}

/// The columns of `latency.csv`: a sweep point's ns per load (median,
/// fastest and p99 per layout) and TLB penalties.
const LATENCY_COLUMNS: &str = "size_bytes,fits_in,accesses_per_sample,random_ns_per_access,\
     random_min_ns_per_access,random_p99_ns_per_access,page_local_ns_per_access,\
     page_local_min_ns_per_access,page_local_p99_ns_per_access,tlb_penalty_ns,\
     huge_random_ns_per_access,huge_random_min_ns_per_access,huge_tlb_penalty_ns,samples";

/// A `conditions.csv` row: one measurement's distribution.
fn condition_row(measurement: &str, condition: &str, bytes: u64, s: &Durations) -> Columns {
    Columns::distribution(s)
        .with("measurement", measurement)
        .with("condition", condition)
        .with("bytes", bytes)
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
