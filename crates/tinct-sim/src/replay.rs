//! Interleaved replay of several cores' access streams into one shared cache.

use std::collections::HashSet;

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};

use crate::cache::{Cache, CoreCounters};
use crate::color::PageColoring;
use crate::error::SimError;
use crate::replacement::Replacement;
use crate::stream::{AccessPattern, StreamCursor, WorkingSet};
use tinct_base::geometry::CacheGeometry;

/// The order in which the cores' accesses reach the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Interleave {
    /// One access of core 0, one of core 1, …, then again core 0.
    RoundRobin,
    /// Each access comes from a core drawn uniformly (seeded) among those with accesses left.
    Random,
}

/// How [`replay_pages`] drives the cache.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplayConfig {
    /// Replacement policy of the cache.
    pub replacement: Replacement,
    /// Page size in bytes the frame numbers refer to.
    pub page_size: u64,
    /// How each core walks its working set.
    pub pattern: AccessPattern,
    /// How the cores' accesses are interleaved.
    pub interleave: Interleave,
    /// Measured accesses of each core.
    pub accesses_per_core: u64,
    /// Accesses of each core before the counters are zeroed (lines stay cached).
    pub warmup_accesses_per_core: u64,
    /// Seed of every random choice: same seed, same replay.
    pub seed: u64,
}

impl ReplayConfig {
    /// LRU, 4 KiB pages, random lines, random interleave, no warm-up.
    pub fn new(accesses_per_core: u64, seed: u64) -> Self {
        ReplayConfig {
            replacement: Replacement::Lru,
            page_size: 4096,
            pattern: AccessPattern::Random,
            interleave: Interleave::Random,
            accesses_per_core,
            warmup_accesses_per_core: 0,
            seed,
        }
    }
}

/// One core's part of a [`ReplayReport`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CoreReport {
    /// Core number (index into the per-core page lists).
    pub core: usize,
    /// Pages in the core's working set.
    pub pages: usize,
    /// Working-set size in bytes.
    pub working_set_bytes: u64,
    /// Distinct page colors of the working set.
    pub distinct_colors: u64,
    /// Counters of the measured phase.
    #[serde(flatten)]
    pub counters: CoreCounters,
    /// Misses per access in the measured phase (reporting only).
    pub miss_ratio: f64,
    /// Lines of this core still in the cache at the end.
    pub resident_lines: u64,
}

/// What a replay of several working sets into one cache showed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReplayReport {
    /// The cache geometry.
    pub geometry: CacheGeometry,
    /// The replay settings.
    pub config: ReplayConfig,
    /// Page colors of the geometry at the configured page size.
    pub colors: u64,
    /// Per-core results, by core.
    pub per_core: Vec<CoreReport>,
    /// Sum over the cores.
    pub totals: CoreCounters,
    /// Lines evicted by a core other than their owner (the interference coloring must remove).
    pub cross_core_evictions: u64,
    /// Sets in which at least one cross-core eviction happened.
    pub sets_with_cross_core_evictions: u64,
    /// Colors whose sets saw cross-core evictions, ascending.
    pub colors_with_cross_core_evictions: Vec<u64>,
    /// Sets into which more than one core inserted lines.
    pub shared_sets: u64,
    /// Colors present in more than one core's working set (from the frame numbers alone).
    pub shared_colors: u64,
}

impl ReplayReport {
    /// No core evicted another core's line.
    pub fn isolated(&self) -> bool {
        self.cross_core_evictions == 0
    }
}

/// Replays each core's working set (its frame numbers) into one shared cache of `geometry`.
///
/// Core `c` accesses the lines of the pages `per_core_pfns[c]` with
/// `config.pattern`, `config.accesses_per_core` times, interleaved with the
/// other cores by `config.interleave`. This is the check for real allocations:
/// pass the frames tinct-mem handed to each task.
pub fn replay_pages<P: AsRef<[u64]>>(
    geometry: &CacheGeometry,
    per_core_pfns: &[P],
    config: &ReplayConfig,
) -> Result<ReplayReport, SimError> {
    let coloring = PageColoring::new(geometry, config.page_size)?;
    let working_sets = per_core_pfns
        .iter()
        .map(|pfns| WorkingSet::from_pfns(pfns.as_ref(), config.page_size, geometry.line_size()))
        .collect::<Result<Vec<_>, _>>()?;
    let busy = config.accesses_per_core > 0 || config.warmup_accesses_per_core > 0;
    if let Some(core) = working_sets.iter().position(|set| set.pages() == 0 && busy) {
        return Err(SimError::invalid(
            "per_core_pfns",
            "at least one page per core",
            format!("core {core} has none"),
        ));
    }
    let cache = replay_working_sets(geometry, &working_sets, config)?;
    Ok(build_report(
        geometry,
        config,
        &coloring,
        per_core_pfns,
        &working_sets,
        &cache,
    ))
}

/// The hot part of [`replay_pages`], kept non-generic so it is compiled (and
/// optimized) in this crate rather than in each caller.
fn replay_working_sets(
    geometry: &CacheGeometry,
    working_sets: &[WorkingSet],
    config: &ReplayConfig,
) -> Result<Cache, SimError> {
    let cores = working_sets.len();
    let mut cache = Cache::new(geometry.clone(), config.replacement, cores)?;
    let mut cursors: Vec<StreamCursor> = (0..cores)
        .map(|core| StreamCursor::new(config.pattern, core_seed(config.seed, core)))
        .collect();
    let mut interleave_rng = Xoshiro256PlusPlus::seed_from_u64(config.seed);
    for (phase, accesses) in [config.warmup_accesses_per_core, config.accesses_per_core]
        .into_iter()
        .enumerate()
    {
        if phase == 1 {
            cache.reset_counters();
        }
        let mut batch = Batch::new();
        drive(
            &vec![accesses; cores],
            config.interleave,
            &mut interleave_rng,
            |core| {
                let address = cursors[core].next_address(&working_sets[core]);
                batch.push(&mut cache, core, address);
            },
        );
        batch.finish(&mut cache);
    }
    Ok(cache)
}

/// Replays explicit address streams, `streams[c]` issued by core `c`, into `cache`.
///
/// Each stream is played once from start to end; `interleave` and `seed`
/// decide the order between cores. Counters accumulate in `cache`.
pub fn replay_streams<S: AsRef<[u64]>>(
    cache: &mut Cache,
    streams: &[S],
    interleave: Interleave,
    seed: u64,
) -> Result<(), SimError> {
    if streams.len() > cache.cores() {
        return Err(SimError::CoreOutOfRange {
            core: streams.len() - 1,
            cores: cache.cores(),
        });
    }
    let streams: Vec<&[u64]> = streams.iter().map(AsRef::as_ref).collect();
    replay_stream_slices(cache, &streams, interleave, seed);
    Ok(())
}

/// The hot part of [`replay_streams`], non-generic like [`replay_working_sets`].
fn replay_stream_slices(cache: &mut Cache, streams: &[&[u64]], interleave: Interleave, seed: u64) {
    let lengths: Vec<u64> = streams.iter().map(|stream| stream.len() as u64).collect();
    let mut positions = vec![0usize; streams.len()];
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut batch = Batch::new();
    drive(&lengths, interleave, &mut rng, |core| {
        let address = streams[core][positions[core]];
        positions[core] += 1;
        batch.push(cache, core, address);
    });
    batch.finish(cache);
}

/// Accesses waiting to be applied, in order, in batches.
///
/// The stream of addresses does not depend on the cache's state, so a batch
/// of accesses is gathered first, then all their sets are loaded in one tight
/// loop (independent loads the host overlaps, like prefetches), and only then
/// are the accesses applied one by one, now hitting the host's caches.
/// Results are identical to applying each access at once.
struct Batch {
    pending: Vec<(usize, u64, usize)>,
    sink: u64,
}

/// Accesses per [`Batch`]: enough to keep the host's miss buffers busy, few
/// enough that the batch's sets stay in the host's L1/L2 until applied.
const BATCH: usize = 32;

impl Batch {
    fn new() -> Self {
        Batch {
            pending: Vec::with_capacity(BATCH),
            sink: 0,
        }
    }

    #[inline]
    fn push(&mut self, cache: &mut Cache, core: usize, address: u64) {
        self.pending.push((core, address, cache.set_of(address)));
        if self.pending.len() == BATCH {
            self.apply(cache);
        }
    }

    fn apply(&mut self, cache: &mut Cache) {
        for &(_, _, set) in &self.pending {
            self.sink ^= cache.preload(set);
        }
        for &(core, address, set) in &self.pending {
            cache.access_in_set(core, address, set);
        }
        self.pending.clear();
    }

    fn finish(mut self, cache: &mut Cache) {
        self.apply(cache);
        // Keeps the preloads from being optimized away.
        std::hint::black_box(self.sink);
    }
}

/// Calls `step(core)` `counts[core]` times for every core, in `interleave` order.
fn drive(
    counts: &[u64],
    interleave: Interleave,
    rng: &mut Xoshiro256PlusPlus,
    mut step: impl FnMut(usize),
) {
    match interleave {
        Interleave::RoundRobin => {
            let rounds = counts.iter().copied().max().unwrap_or(0);
            for round in 0..rounds {
                for (core, &count) in counts.iter().enumerate() {
                    if round < count {
                        step(core);
                    }
                }
            }
        }
        Interleave::Random => {
            let mut remaining = counts.to_vec();
            let mut active: Vec<usize> =
                (0..counts.len()).filter(|&core| counts[core] > 0).collect();
            while !active.is_empty() {
                let slot = rng.random_range(0..active.len());
                let core = active[slot];
                step(core);
                remaining[core] -= 1;
                if remaining[core] == 0 {
                    active.swap_remove(slot);
                }
            }
        }
    }
}

/// A per-core seed, decorrelated from the interleave seed and from the other cores.
fn core_seed(seed: u64, core: usize) -> u64 {
    seed ^ (core as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

fn build_report<P: AsRef<[u64]>>(
    geometry: &CacheGeometry,
    config: &ReplayConfig,
    coloring: &PageColoring,
    per_core_pfns: &[P],
    working_sets: &[WorkingSet],
    cache: &Cache,
) -> ReplayReport {
    let color_sets: Vec<HashSet<u64>> = per_core_pfns
        .iter()
        .map(|pfns| {
            pfns.as_ref()
                .iter()
                .map(|&pfn| coloring.color_of_pfn(pfn))
                .collect()
        })
        .collect();
    let mut cores_per_color = vec![0u32; coloring.colors() as usize];
    color_sets
        .iter()
        .flatten()
        .for_each(|&color| cores_per_color[color as usize] += 1);

    let resident = cache.resident_lines();
    let per_core = cache
        .per_core()
        .iter()
        .enumerate()
        .map(|(core, counters)| CoreReport {
            core,
            pages: working_sets[core].pages(),
            working_set_bytes: working_sets[core].bytes(),
            distinct_colors: color_sets[core].len() as u64,
            counters: *counters,
            miss_ratio: counters.miss_ratio(),
            resident_lines: resident[core],
        })
        .collect();

    let mut interfering_colors: Vec<u64> = Vec::new();
    let mut sets_with_cross_core_evictions = 0;
    for (set, count) in cache.set_cross_core_evictions().enumerate() {
        if count > 0 {
            sets_with_cross_core_evictions += 1;
            interfering_colors
                .push(coloring.color_of_set_index(set as u64 % geometry.sets_per_slice()));
        }
    }
    interfering_colors.sort_unstable();
    interfering_colors.dedup();

    let totals = cache.totals();
    ReplayReport {
        geometry: geometry.clone(),
        config: config.clone(),
        colors: coloring.colors(),
        per_core,
        totals,
        cross_core_evictions: totals.cross_core_evictions_caused,
        sets_with_cross_core_evictions,
        colors_with_cross_core_evictions: interfering_colors,
        shared_sets: cache.shared_sets(),
        shared_colors: cores_per_color.iter().filter(|&&cores| cores > 1).count() as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_robin_alternates_and_finishes_the_longer_stream() {
        let mut order = Vec::new();
        drive(
            &[3, 1],
            Interleave::RoundRobin,
            &mut Xoshiro256PlusPlus::seed_from_u64(0),
            |core| order.push(core),
        );
        assert_eq!(order, vec![0, 1, 0, 0]);
    }

    #[test]
    fn random_interleave_issues_every_access_once_and_mixes() {
        let mut order = Vec::new();
        drive(
            &[500, 300, 0],
            Interleave::Random,
            &mut Xoshiro256PlusPlus::seed_from_u64(9),
            |core| order.push(core),
        );
        assert_eq!(order.iter().filter(|&&core| core == 0).count(), 500);
        assert_eq!(order.iter().filter(|&&core| core == 1).count(), 300);
        assert!(!order.contains(&2));
        let switches = order.windows(2).filter(|pair| pair[0] != pair[1]).count();
        assert!(
            switches > 200,
            "random interleave switches cores often, got {switches}"
        );
    }

    #[test]
    fn replay_streams_plays_each_stream_once() {
        let geometry = CacheGeometry::new(1024, 4, 64).unwrap();
        let mut cache = Cache::new(geometry, Replacement::Lru, 2).unwrap();
        let streams = vec![vec![0u64, 0, 64], vec![128u64, 128]];
        replay_streams(&mut cache, &streams, Interleave::Random, 3).unwrap();
        assert_eq!(cache.counters(0).unwrap().accesses, 3);
        assert_eq!(cache.counters(0).unwrap().hits, 1);
        assert_eq!(cache.counters(1).unwrap().hits, 1);
        let too_many = vec![vec![0u64]; 3];
        assert!(replay_streams(&mut cache, &too_many, Interleave::RoundRobin, 0).is_err());
    }

    #[test]
    fn empty_working_set_is_an_error() {
        let geometry = CacheGeometry::new(1 << 20, 8, 64).unwrap();
        let err =
            replay_pages(&geometry, &[vec![1u64], vec![]], &ReplayConfig::new(10, 0)).unwrap_err();
        assert!(err.to_string().contains("core 1 has none"), "{err}");
    }

    #[test]
    fn warmup_is_not_counted() {
        let geometry = CacheGeometry::new(1 << 20, 8, 64).unwrap();
        let mut config = ReplayConfig::new(1000, 0);
        config.warmup_accesses_per_core = 10_000;
        config.pattern = AccessPattern::Sequential;
        // 4 pages = 256 lines fit: after warm-up every access hits.
        let report = replay_pages(&geometry, &[vec![1u64, 2, 3, 4]], &config).unwrap();
        assert_eq!(report.totals.accesses, 1000);
        assert_eq!(report.totals.hits, 1000);
        assert_eq!(report.per_core[0].resident_lines, 256);
    }
}
