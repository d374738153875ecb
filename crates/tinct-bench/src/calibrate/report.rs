//! The result of `tinct bench calibrate` (`calibrate.json`): its types,
//! the per-level latencies and the huge-page note read off what was
//! measured, the files and the summary.

use super::measure::Measured;
use super::plan::Plan;
use crate::Result;
use crate::harness::{
    Columns, DISTRIBUTION_COLUMNS, Durations, LineChart, OutputDir, RunHeader, Series, SeriesStyle,
    Summary, report_fields, serialize_derived,
};
use serde::{Deserialize, Serialize, Serializer};
use tinct_base::units::human_bytes;
use tinct_core::calibration::RefillRecord;
use tinct_core::units::Bytes;

/// Latency at one working-set size; its ns per load ([`PerAccess`]) are
/// derived from the distributions and written after them.
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
    /// Time per sample, random-line layout within transparent huge pages
    /// (`None` when the buffer did not get huge pages).
    pub huge_random: Option<Durations>,
}

/// A sweep point's ns per load, median and fastest sample (on a shared
/// machine interference only adds time, so the fastest is the least
/// disturbed estimate), and the TLB penalties between the fastest samples.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PerAccess {
    /// Median, random-line layout.
    pub random_ns_per_access: f64,
    /// Median, page-local layout: the cache latency.
    pub page_local_ns_per_access: f64,
    /// Fastest, random-line layout.
    pub random_min_ns_per_access: f64,
    /// Fastest, page-local layout.
    pub page_local_min_ns_per_access: f64,
    /// Random minus page-local: the TLB penalty at this size.
    pub tlb_penalty_ns: f64,
    /// Median, random-line layout in huge pages.
    pub huge_random_ns_per_access: Option<f64>,
    /// Fastest, random-line layout in huge pages.
    pub huge_random_min_ns_per_access: Option<f64>,
    /// 4 KiB random minus huge-page random: the TLB cost of base pages.
    pub huge_tlb_penalty_ns: Option<f64>,
}

impl LatencyPoint {
    /// The ns per load of this point's distributions.
    pub fn per_access(&self) -> PerAccess {
        let loads = self.accesses_per_sample as f64;
        let median = |d: &Durations| d.median as f64 / loads;
        let min = |d: &Durations| d.min as f64 / loads;
        let huge = self.huge_random.as_ref();
        PerAccess {
            random_ns_per_access: median(&self.random),
            page_local_ns_per_access: median(&self.page_local),
            random_min_ns_per_access: min(&self.random),
            page_local_min_ns_per_access: min(&self.page_local),
            tlb_penalty_ns: min(&self.random) - min(&self.page_local),
            huge_random_ns_per_access: huge.map(median),
            huge_random_min_ns_per_access: huge.map(min),
            huge_tlb_penalty_ns: huge.map(|h| min(&self.random) - min(h)),
        }
    }
}

/// Each sweep point with its [`PerAccess`] after its own fields.
fn with_per_access<S: Serializer>(
    points: &[LatencyPoint],
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    serialize_derived(points.iter().map(|p| (p, p.per_access())), s)
}

/// The latency of one level, read off the sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LevelLatency {
    /// `L1d`, `L2`, `L3`, `memory`.
    pub level: String,
    /// Capacity of the level (`None` for memory).
    pub cache_bytes: Option<u64>,
    /// The sweep size probed: the largest above the level below and at most
    /// half the level's capacity (memory: the largest).
    pub probe_bytes: u64,
    /// Median ns per load at that size, page-local layout.
    pub ns_per_access: f64,
    /// Fastest sample's ns per load at that size, page-local layout.
    pub min_ns_per_access: f64,
    /// Every ns per load at that size.
    #[serde(flatten)]
    pub at_probe: PerAccess,
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
    #[serde(serialize_with = "with_per_access")]
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
    /// The platform overheads (context switch, release latency, tick), as
    /// `tinct bench overheads` measures them (absent when stopped before).
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
        Ok(CalibrateResult {
            huge_pages: huge_pages_note(&header, &measured.latency, measured.huge_missing),
            levels: level_latencies(&measured.latency, &header),
            header,
            partitions: plan.partitions,
            latency: measured.latency,
            bandwidth: measured.bandwidth,
            refill: measured.refill,
            overheads: measured.overheads,
        })
    }

    report_fields!(header);

    /// Writes `latency.csv`, `conditions.csv`, `latency.svg`
    /// and `refill.toml` (the `[platform]` line).
    fn write(&self, out: &mut OutputDir) -> Result<()> {
        let rows = self.latency.iter().map(|p| {
            let per = |ns: u64| ns as f64 / p.accesses_per_sample as f64;
            Columns::of(p)
                .with("", p.per_access())
                .with("random_p99_ns_per_access", per(p.random.p99))
                .with("page_local_p99_ns_per_access", per(p.page_local.p99))
                .with("samples", p.random.count)
        });
        out.write_columns("latency.csv", &[LATENCY_COLUMNS], rows)?;
        let mut conditions = Vec::new();
        if let Some(b) = &self.bandwidth {
            let passes = [("read", &b.read), ("write", &b.write)];
            conditions.extend(passes.map(|(c, d)| ("bandwidth", c, b.buffer_bytes, d)));
        }
        if let Some(r) = &self.refill {
            let passes = [
                ("cold_pages", &r.cold_pages),
                ("warm_pages", &r.warm_pages),
                ("cold_chase", &r.cold_chase),
                ("warm_chase", &r.warm_chase),
            ];
            conditions.extend(passes.map(|(c, d)| ("refill", c, r.partition_bytes, d)));
        }
        let rows = conditions
            .into_iter()
            .map(|(measurement, condition, bytes, d)| {
                Columns::distribution(d)
                    .with("measurement", measurement)
                    .with("condition", condition)
                    .with("bytes", bytes)
            });
        let columns = ["measurement,condition,bytes", DISTRIBUTION_COLUMNS];
        out.write_columns("conditions.csv", &columns, rows)?;
        out.write_svg("latency.svg", &latency_chart(self))?;
        // Δ only from a run that measured it: an interrupted run has no line.
        if let Some(r) = &self.refill {
            let (n, size, line) = (
                r.delta.partitions,
                human_bytes(r.partition_bytes),
                &r.platform_line,
            );
            let text = format!(
                "# Δ measured by `tinct bench calibrate` ({n} partitions of {size}); put under [platform]:\n{line}\n"
            );
            out.write_text("refill.toml", &text)?;
        }
        Ok(())
    }

    /// The one-screen summary.
    fn summary(&self, _: &super::Params, out: &OutputDir) -> Summary {
        let mut s = Summary::of_run(&self.header);
        let (cpu, reps, seed) = (self.header.cpus[0], self.header.reps, self.header.seed);
        let run = format!("CPU {cpu}, {reps} reps per condition, seed {seed}");
        s.fact("run", run);
        s.table_of(
            "level,capacity,probe size,ns/load min,ns/load median,random min,random median,\
             TLB penalty,huge-page random min,TLB (4K − huge)",
        );
        let one_decimal = |ns: Option<f64>| ns.map_or("-".into(), |ns| format!("{ns:.1}"));
        for l in &self.levels {
            let a = &l.at_probe;
            let capacity = l.cache_bytes.map_or("-".into(), human_bytes);
            let mut row = vec![l.level.clone(), capacity, human_bytes(l.probe_bytes)];
            let latencies = [
                Some(a.page_local_min_ns_per_access),
                Some(a.page_local_ns_per_access),
                Some(a.random_min_ns_per_access),
                Some(a.random_ns_per_access),
                Some(a.tlb_penalty_ns),
                a.huge_random_min_ns_per_access,
                a.huge_tlb_penalty_ns,
            ];
            row.extend(latencies.map(one_decimal));
            s.row(row);
        }
        if let Some(b) = &self.bandwidth {
            let (read, write, n) = (b.read_gb_per_s, b.write_gb_per_s, b.read.count);
            let size = human_bytes(b.buffer_bytes);
            let said = format!(
                "read {read:.1} GB/s, write {write:.1} GB/s (median over {n} passes of {size})"
            );
            s.fact("bandwidth", said);
        }
        if let Some(r) = &self.refill {
            let (partition, llc) = (human_bytes(r.partition_bytes), human_bytes(r.llc_bytes));
            let (n, bound) = (r.delta.partitions, r.refill_latency_bound_ns);
            let said = format!(
                "{} per partition of {partition} (LLC {llc} / {n}); latency-bound {bound} ns",
                r.refill
            );
            s.fact("refill Δ", said);
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
    let at_probe = p.per_access();
    LevelLatency {
        level,
        cache_bytes,
        probe_bytes: p.size_bytes,
        ns_per_access: at_probe.page_local_ns_per_access,
        min_ns_per_access: at_probe.page_local_min_ns_per_access,
        at_probe,
    }
}

/// The latency of each level, read off the sweep (see [`LevelLatency::probe_bytes`]).
pub fn level_latencies(points: &[LatencyPoint], header: &RunHeader) -> Vec<LevelLatency> {
    let mut levels = Vec::new();
    let mut below = 0u64;
    let mut caches: Vec<_> = header.machine.caches.iter().collect();
    caches.sort_by_key(|c| c.level);
    let largest = |from: u64, to: u64| {
        let sizes = points
            .iter()
            .filter(|p| p.size_bytes > from && p.size_bytes <= to);
        sizes.max_by_key(|p| p.size_bytes)
    };
    for cache in caches {
        if let Some(p) = largest(below, cache.size_bytes / 2) {
            levels.push(level_at(cache.name.clone(), Some(cache.size_bytes), p));
        }
        below = cache.size_bytes;
    }
    // Memory: the largest size at least twice the last cache.
    if let Some(p) = largest(below.saturating_mul(2).saturating_sub(1), u64::MAX) {
        levels.push(level_at("memory".into(), None, p));
    }
    levels
}

fn huge_pages_note(
    header: &RunHeader,
    latency: &[LatencyPoint],
    missing: Option<String>,
) -> HugePages {
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
        thp_mode: header.machine.thp.clone(),
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

/// `latency.svg`: ns per load over the working set, each cache's capacity marked.
fn latency_chart(result: &CalibrateResult) -> LineChart {
    use SeriesStyle::{Dashed, LineWithMarkers};
    type Y = fn(&PerAccess) -> Option<f64>;
    let lines: [(&str, SeriesStyle, Y); 4] = [
        ("random lines, min (cache + TLB)", LineWithMarkers, |a| {
            Some(a.random_min_ns_per_access)
        }),
        ("page-local, min (cache only)", LineWithMarkers, |a| {
            Some(a.page_local_min_ns_per_access)
        }),
        ("random lines, median", Dashed, |a| {
            Some(a.random_ns_per_access)
        }),
        (
            "random lines in huge pages, min (cache, few TLB misses)",
            LineWithMarkers,
            |a| a.huge_random_min_ns_per_access,
        ),
    ];
    let mut chart = LineChart::new(
        "Load-to-use latency (pointer chase)",
        "working set (bytes, log scale)",
        "ns per load",
    );
    let sweep: Vec<_> = result
        .latency
        .iter()
        .map(|p| (p.size_bytes as f64, p.per_access()))
        .collect();
    for (name, style, y) in lines {
        let points: Vec<_> = sweep
            .iter()
            .filter_map(|(x, a)| Some((*x, y(a)?)))
            .collect();
        if !points.is_empty() {
            chart = chart.add_series(Series::new(name, style, points));
        }
    }
    chart.log2_x = true;
    let caches = result.header.machine.caches.iter();
    chart.x_markers = caches
        .map(|c| (c.size_bytes as f64, c.name.clone()))
        .collect();
    chart
}
