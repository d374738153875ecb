//! `tinct bench calibrate`: load-to-use latency per cache level (with the
//! TLB effect shown separately), sustained read and write bandwidth, and Δ,
//! the time to refill one cache partition (kim2013 Section II-C, Section
//! IV-B and footnote 7: "the time to fetch from memory to the L3 cache",
//! 45.3 µs for a 256 KiB partition on their Core i7-2600).
//!
//! Δ is measured directly: one partition's worth of memory (LLC size / N_P,
//! whole pages in random page order, as page coloring scatters them) is
//! read once after the LLC was wiped and once while it is warm; Δ is the
//! difference of the medians. A latency-bound variant (a random chase over
//! the same lines, no prefetching possible) is reported as an upper bound.
//!
//! TLB effects are shown two ways at every size: random-line minus
//! page-local latency (one TLB miss per load vs one per page), and the
//! random-line chase in 4 KiB pages minus the same chase within transparent
//! huge pages (same cache behaviour, 512 times the TLB reach), when the
//! kernel backs the buffer with huge pages; otherwise the JSON says
//! `THP unavailable: <reason>`.
//!
//! Latencies are reported from the fastest sample (interference on a shared
//! machine only adds time) and from the median. The page-local layout keeps
//! TLB misses to one per page; beyond the last-level cache, in-page
//! prefetching flatters it, so there the random-line latency is the one to
//! read as "memory latency".

pub mod chase;
pub mod machine;
mod report;
pub mod stream;

use crate::harness::memory_pass;
use crate::harness::pin::PinGuard;
use crate::harness::{
    BenchOptions, Durations, Finished, Interleaved, OutputDir, Progress, RunHeader, unless_stopped,
};
use crate::{Error, Result};
use chase::{ChaseBuffer, Layout};
use serde::{Deserialize, Serialize};
use stream::PartitionBuffer;
use tinct_core::calibration::RefillRecord;
use tinct_core::units::{Bytes, Nanos};

/// The bench's name: its default output directory is `tinct-bench/calibrate`.
pub const NAME: &str = "calibrate";
/// The result file a run writes, which a full run saves as this machine's
/// calibration ([`machine`]).
pub const RESULT_FILE: &str = "calibrate.json";

/// Default N_P, the number of cache partitions (kim2013 used 32).
pub const DEFAULT_PARTITIONS: u32 = 32;
const FALLBACK_LLC_BYTES: u64 = 8 << 20;
const FALLBACK_L1_BYTES: u64 = 32 << 10;
const FALLBACK_L2_BYTES: u64 = 256 << 10;
const MAX_BUFFER_BYTES: u64 = 512 << 20;

/// Parameters of `tinct bench calibrate`.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// Parameters shared by every bench.
    pub common: BenchOptions,
    /// N_P: the number of cache partitions; a partition is LLC size / N_P.
    pub partitions: u32,
    /// Largest pointer-chase working set (default 4 × LLC, at least
    /// 64 MiB, at most 512 MiB; quick: 2 × LLC).
    pub max_size: Option<Bytes>,
}

impl Default for Params {
    /// The defaults of `tinct bench calibrate`.
    fn default() -> Self {
        Self {
            common: BenchOptions::default(),
            partitions: DEFAULT_PARTITIONS,
            max_size: None,
        }
    }
}

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

/// Cache sizes the bench works with (from the machine, or fallbacks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    /// L1 data cache bytes.
    pub l1: u64,
    /// L2 bytes (or 8 × L1 if there is no L2).
    pub l2: u64,
    /// Last-level cache bytes.
    pub llc: u64,
    /// Base page bytes.
    pub page: u64,
}

impl Geometry {
    /// The geometry of the machine described in `header`.
    pub fn of(header: &RunHeader) -> Self {
        let m = &header.machine;
        let l1 = m.cache(1).map_or(FALLBACK_L1_BYTES, |c| c.size_bytes);
        let llc = m.llc().map_or(FALLBACK_LLC_BYTES, |c| c.size_bytes).max(l1);
        let l2 = m
            .cache(2)
            .map_or(FALLBACK_L2_BYTES.max(l1 * 8).min(llc), |c| c.size_bytes);
        Self {
            l1,
            l2,
            llc,
            page: m.page_bytes,
        }
    }
}

/// Runs `tinct bench calibrate`: measures, writes the files and returns the
/// result with its summary.
pub fn run(params: &Params, progress: &dyn Progress) -> Result<Finished<CalibrateResult>> {
    let mut result = measure(params, progress)?;
    result.header.record_rounds(progress.stop_requested());
    let mut out = OutputDir::create(params.common.out_dir(NAME))?;
    report::write(&result, &mut out)?;
    let mut summary = report::summary(&result, &out);
    summary.interruption(&result.header, out.path());
    Ok(Finished { result, summary })
}

/// Measures everything (no files written).
pub fn measure(params: &Params, progress: &dyn Progress) -> Result<CalibrateResult> {
    if params.partitions == 0 {
        return Err(Error::InvalidInput(
            "--partitions: expected at least 1 partition, found 0".into(),
        ));
    }
    let options = &params.common;
    let quick = options.quick;
    let reps = options.reps_or(5, 21)?;
    let cpus = options.cpus(1)?;
    let pin = PinGuard::pin(cpus[0])?;
    let mut header = RunHeader::new(NAME, options, reps, vec![cpus[0]]);
    let geometry = Geometry::of(&header);
    let max_size = match params.max_size {
        Some(Bytes(bytes)) => bytes,
        None if quick => (geometry.llc * 2).clamp(32 << 20, MAX_BUFFER_BYTES),
        None => (geometry.llc * 4).clamp(64 << 20, MAX_BUFFER_BYTES),
    };
    let sizes = sweep_sizes(&geometry, max_size, quick);
    // Short samples: on a shared machine a long one is rarely undisturbed.
    let steps: u64 = if quick { 1 << 15 } else { 1 << 16 };
    let refill_reps = options.reps_or(5, 51)?;
    let bandwidth_reps = options.reps_or(3, 11)?;

    let calls = sizes.len() as u64 * u64::from(reps + 1) * 3
        + u64::from(bandwidth_reps + 1) * 2
        + u64::from(refill_reps + 1) * 4
        + crate::overheads::progress_steps(options.reps_or(30, 200)?);
    progress.start(calls, "calibrate");

    let mut latency = Vec::with_capacity(sizes.len());
    let mut huge_missing = thp_unavailable(&header);
    // Ctrl-C: the steps finished are the result, the others absent.
    for (i, &size) in sizes.iter().enumerate() {
        progress.set_message(&Bytes(size).to_string());
        let Some((point, why_not_huge)) = unless_stopped(progress, || {
            latency_point(
                size,
                &geometry,
                &header,
                LatencyRun {
                    steps,
                    reps,
                    seed: options.seed.wrapping_add(i as u64),
                    huge: huge_missing.is_none(),
                },
                progress,
            )
        })?
        else {
            break;
        };
        latency.push(point);
        if huge_missing.is_none() {
            huge_missing = why_not_huge;
        }
    }
    let levels = level_latencies(&latency, &header);

    progress.set_message("bandwidth");
    let wipe_bytes = (geometry.llc * 2)
        .clamp(16 << 20, MAX_BUFFER_BYTES)
        .max(max_size.min(MAX_BUFFER_BYTES));
    let mut big: Vec<u64> = if progress.stop_requested() {
        Vec::new()
    } else {
        vec![1; (wipe_bytes / 8) as usize]
    };
    let bandwidth = unless_stopped(progress, || {
        measure_bandwidth(&mut big, bandwidth_reps, options.seed, progress)
    })?;

    progress.set_message("refill");
    let refill = unless_stopped(progress, || {
        measure_refill(
            &RefillSetup {
                llc_bytes: geometry.llc,
                partitions: params.partitions,
                page_bytes: geometry.page,
                reps: refill_reps,
                seed: options.seed,
            },
            &big,
            progress,
        )
    })?;
    drop(big);
    // Unpinned: the release latency runs a thread on every CPU of --cpus.
    drop(pin);
    // The overheads pin and time threads themselves: the context switch and
    // the tick on the run's CPU, the release latency on every CPU of --cpus.
    let mut setup = crate::overheads::Setup::of(options, &header, 5)?;
    setup.cpus = cpus.clone();
    let overheads = unless_stopped(progress, || crate::overheads::measure(&setup, progress))?
        .map(|m| m.overheads);
    progress.finish();
    header.add_logged_counters();

    Ok(CalibrateResult {
        overheads,
        huge_pages: huge_pages_note(&header, &latency, huge_missing),
        header,
        partitions: params.partitions,
        latency,
        levels,
        bandwidth,
        refill,
    })
}

/// Working-set sizes of the sweep: powers of two and 1.5 × powers of two
/// from 4 KiB to `max` (full), or one size per level (quick).
pub fn sweep_sizes(geometry: &Geometry, max: u64, quick: bool) -> Vec<u64> {
    if quick {
        let mut sizes = vec![geometry.l1 / 2, geometry.l2 / 2, geometry.llc / 2, max];
        sizes.retain(|&s| s >= 4096);
        sizes.sort_unstable();
        sizes.dedup();
        return sizes;
    }
    let mut sizes = Vec::new();
    let mut size = 4096u64;
    while size <= max {
        sizes.push(size);
        if size + size / 2 <= max {
            sizes.push(size + size / 2);
        }
        size *= 2;
    }
    if sizes.last() != Some(&max) {
        sizes.push(max);
    }
    sizes
}

fn fits_in(size: u64, header: &RunHeader) -> String {
    header
        .machine
        .caches
        .iter()
        .filter(|c| c.size_bytes >= size)
        .min_by_key(|c| c.level)
        .map_or_else(|| "memory".to_string(), |c| c.name.clone())
}

/// How to sample one size of the latency sweep.
#[derive(Debug, Clone, Copy)]
struct LatencyRun {
    steps: u64,
    reps: u32,
    seed: u64,
    /// Also chase within transparent huge pages.
    huge: bool,
}

/// One size of the sweep, and why it has no huge-page chase if `run.huge`
/// asked for one and the kernel did not back the buffer.
fn latency_point(
    size: u64,
    geometry: &Geometry,
    header: &RunHeader,
    run: LatencyRun,
    progress: &dyn Progress,
) -> Result<(LatencyPoint, Option<String>)> {
    let LatencyRun {
        steps,
        reps,
        seed,
        huge,
    } = run;
    let page_bytes = geometry.page as usize;
    let mut buffers = vec![
        ChaseBuffer::new(size as usize, Layout::RandomLines, seed),
        ChaseBuffer::new(size as usize, Layout::PageLocal { page_bytes }, seed),
    ];
    let mut why_not_huge = None;
    if huge {
        let (buffer, backed) =
            ChaseBuffer::in_huge_pages(size as usize, Layout::RandomLines, seed)?;
        let wanted = (buffer.lines() * chase::LINE_BYTES) as u64;
        if backed >= wanted {
            buffers.push(buffer);
        } else {
            why_not_huge = Some(format!(
                "THP unavailable: the kernel backed {} of a {} buffer with huge pages \
                 (THP defrag setting or fragmented memory)",
                Bytes(backed),
                Bytes(wanted)
            ));
        }
    }
    let conditions = ["random", "page_local", "huge_random"];
    // Every page was written when the cycle was linked; one pass (capped:
    // beyond the caches a partial pass is as good as a whole one) warms the
    // caches and TLBs before the first sample.
    for buffer in &mut buffers {
        let lines = buffer.lines() as u64;
        buffer.chase(lines.min(steps * 4));
    }
    let samples = Interleaved::new(conditions.into_iter().take(buffers.len()), reps)
        .warmup(1)
        .seed(seed)
        .run::<Error>(progress, |c| Ok(buffers[c].chase(steps)))?;
    let random = samples.stats(0).ok_or_else(no_samples)?;
    let page_local = samples.stats(1).ok_or_else(no_samples)?;
    let huge_random = (buffers.len() > 2)
        .then(|| samples.stats(2).ok_or_else(no_samples))
        .transpose()?;
    let per = |s: &Durations| s.median as f64 / steps as f64;
    let per_min = |s: &Durations| s.min as f64 / steps as f64;
    let point = LatencyPoint {
        size_bytes: size,
        fits_in: fits_in(size, header),
        accesses_per_sample: steps,
        random_ns_per_access: per(&random),
        page_local_ns_per_access: per(&page_local),
        random_min_ns_per_access: per_min(&random),
        page_local_min_ns_per_access: per_min(&page_local),
        tlb_penalty_ns: per_min(&random) - per_min(&page_local),
        huge_random_ns_per_access: huge_random.as_ref().map(per),
        huge_random_min_ns_per_access: huge_random.as_ref().map(per_min),
        huge_tlb_penalty_ns: huge_random.as_ref().map(|h| per_min(&random) - per_min(h)),
        huge_random,
        random,
        page_local,
    };
    Ok((point, why_not_huge))
}

fn no_samples() -> Error {
    Error::Measurement("no samples were taken (--reps 0?)".into())
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

/// Read and write passes over `buffer`, interleaved.
pub fn measure_bandwidth(
    buffer: &mut [u64],
    reps: u32,
    seed: u64,
    progress: &dyn Progress,
) -> Result<Bandwidth> {
    let mut value = 0u64;
    let samples = Interleaved::new(["read", "write"], reps)
        .warmup(1)
        .seed(seed)
        .run::<Error>(progress, |c| {
            value += 1;
            Ok(if c == 0 {
                memory_pass::read_pass(buffer)
            } else {
                memory_pass::write_pass(buffer, value)
            })
        })?;
    let read = samples.stats(0).ok_or_else(no_samples)?;
    let write = samples.stats(1).ok_or_else(no_samples)?;
    let bytes = (buffer.len() * 8) as u64;
    let gbps = |s: &Durations| bytes as f64 / s.median.max(1) as f64;
    Ok(Bandwidth {
        buffer_bytes: bytes,
        read_gb_per_s: gbps(&read),
        write_gb_per_s: gbps(&write),
        read,
        write,
    })
}

/// What [`measure_refill`] needs.
#[derive(Debug, Clone, Copy)]
pub struct RefillSetup {
    /// LLC capacity in bytes.
    pub llc_bytes: u64,
    /// N_P.
    pub partitions: u32,
    /// Page size in bytes.
    pub page_bytes: u64,
    /// Repetitions per condition.
    pub reps: u32,
    /// Seed.
    pub seed: u64,
}

/// Measures Δ (see the module documentation). `wipe` must be at least twice
/// the LLC: reading it evicts the partition.
pub fn measure_refill(
    setup: &RefillSetup,
    wipe: &[u64],
    progress: &dyn Progress,
) -> Result<Refill> {
    let partition = (setup.llc_bytes / u64::from(setup.partitions.max(1))).max(setup.page_bytes);
    let pages = PartitionBuffer::new(partition as usize, setup.page_bytes as usize, setup.seed);
    let mut chase = ChaseBuffer::new(pages.bytes(), Layout::RandomLines, setup.seed ^ 0x5a5a);
    let chase_steps = chase.lines() as u64;
    let samples = Interleaved::new(
        ["cold_pages", "warm_pages", "cold_chase", "warm_chase"],
        setup.reps,
    )
    .warmup(1)
    .seed(setup.seed)
    .run::<Error>(progress, |c| {
        match c {
            0 | 2 => {
                memory_pass::read_pass(wipe);
            }
            1 => {
                pages.pass();
            }
            _ => {
                chase.chase(chase_steps);
            }
        }
        Ok(match c {
            0 | 1 => pages.pass(),
            _ => chase.chase(chase_steps),
        })
    })?;
    let stats: Vec<Durations> = (0..4)
        .map(|c| samples.stats(c).ok_or_else(no_samples))
        .collect::<Result<_>>()?;
    let refill_ns = stats[0].median.saturating_sub(stats[1].median);
    let refill_latency_bound_ns = stats[2].median.saturating_sub(stats[3].median);
    if refill_ns == 0 {
        return Err(Error::Measurement(format!(
            "the refill pass over {} was not slower after wiping the cache (cold median {} ns, warm median {} ns): \
             is the wipe buffer ({}) really larger than the LLC?",
            Bytes(pages.bytes() as u64),
            stats[0].median,
            stats[1].median,
            Bytes((wipe.len() * 8) as u64)
        )));
    }
    let rounded = Nanos(refill_ns.div_ceil(100) * 100);
    Ok(Refill {
        delta: RefillRecord {
            partitions: setup.partitions,
            refill_ns,
        },
        llc_bytes: setup.llc_bytes,
        partition_bytes: pages.bytes() as u64,
        cold_pages: stats[0],
        warm_pages: stats[1],
        cold_chase: stats[2],
        warm_chase: stats[3],
        refill_latency_bound_ns,
        refill: rounded.to_string(),
        platform_line: format!("refill = \"{rounded}\""),
    })
}

/// Why no huge-page chase can run here, before trying (`None`: try).
fn thp_unavailable(header: &RunHeader) -> Option<String> {
    match header.machine.thp.as_deref() {
        None => Some("THP unavailable: the kernel has no transparent huge pages".into()),
        Some("never") => Some(
            "THP unavailable: transparent huge pages are disabled \
             (/sys/kernel/mm/transparent_hugepage/enabled is `never`)"
                .into(),
        ),
        Some(_) => None,
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn geometry() -> Geometry {
        Geometry {
            l1: 32 << 10,
            l2: 1 << 20,
            llc: 32 << 20,
            page: 4096,
        }
    }

    #[test]
    fn full_sweep_is_increasing_and_ends_at_max() {
        let sizes = sweep_sizes(&geometry(), 128 << 20, false);
        assert_eq!(sizes[0], 4096);
        assert_eq!(sizes[1], 6144);
        assert_eq!(*sizes.last().unwrap(), 128 << 20);
        assert!(sizes.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn quick_sweep_has_one_size_per_level() {
        let sizes = sweep_sizes(&geometry(), 128 << 20, true);
        assert_eq!(sizes, vec![16 << 10, 512 << 10, 16 << 20, 128 << 20]);
    }

    #[test]
    fn refill_is_positive_and_bounded_by_the_chase() {
        let setup = RefillSetup {
            llc_bytes: 1 << 20,
            partitions: 4,
            page_bytes: 4096,
            reps: 3,
            seed: 1,
        };
        // A 64 MiB wipe evicts a 256 KiB partition from any cache of this machine.
        let wipe = vec![1u64; 8 << 20];
        let refill = measure_refill(&setup, &wipe, &crate::harness::NoProgress).unwrap();
        assert_eq!(refill.partition_bytes, 256 << 10);
        assert!(refill.delta.refill_ns > 0);
        assert!(refill.platform_line.starts_with("refill = \""));
        let parsed = tinct_core::units::parse_duration(&refill.refill).unwrap();
        assert!(parsed.0 >= refill.delta.refill_ns && parsed.0 < refill.delta.refill_ns + 100);
    }
}
