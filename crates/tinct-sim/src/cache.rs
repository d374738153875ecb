//! The shared cache: tags, owners, replacement state and counters in flat arrays.
//!
//! Every line remembers the core that inserted it (its *owner*). A miss by
//! core B that evicts a line owned by core A ≠ B is a *cross-core eviction*:
//! the interference page coloring is meant to remove.

use serde::{Deserialize, Serialize};

use crate::error::SimError;
use std::ops::Range;
use tinct_base::geometry::CacheGeometry;

use crate::replacement::{self, RANK_MASK, Replacement};

/// Most cores one cache counts for (the per-set core mask is a `u64`).
pub const MAX_CORES: usize = 64;

/// Marks an empty way. Real tags are line addresses, which have the low bits clear.
const INVALID: u64 = u64::MAX;

/// Counters of one core.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CoreCounters {
    /// Accesses issued by the core.
    pub accesses: u64,
    /// Accesses that found their line in the cache.
    pub hits: u64,
    /// Accesses that did not.
    pub misses: u64,
    /// Valid lines (of any owner) this core's misses evicted.
    pub evictions_caused: u64,
    /// Lines owned by *other* cores that this core's misses evicted.
    pub cross_core_evictions_caused: u64,
    /// Lines owned by this core that other cores' misses evicted.
    pub lines_lost_to_other_cores: u64,
}

impl CoreCounters {
    /// Misses per access, 0 when there was no access. Reporting only.
    pub fn miss_ratio(&self) -> f64 {
        if self.accesses == 0 {
            0.0
        } else {
            self.misses as f64 / self.accesses as f64
        }
    }

    /// Field-wise sum.
    pub fn add(&mut self, other: &CoreCounters) {
        self.accesses += other.accesses;
        self.hits += other.hits;
        self.misses += other.misses;
        self.evictions_caused += other.evictions_caused;
        self.cross_core_evictions_caused += other.cross_core_evictions_caused;
        self.lines_lost_to_other_cores += other.lines_lost_to_other_cores;
    }
}

/// A valid line pushed out by a miss.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Eviction {
    /// Line-aligned physical address of the evicted line.
    pub line_address: u64,
    /// The core that had inserted it.
    pub owner: usize,
}

/// What one access did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccessOutcome {
    /// The line was present.
    Hit,
    /// The line was inserted, evicting `evicted` if the set was full.
    Miss {
        /// The valid line that made room, if any.
        evicted: Option<Eviction>,
    },
}

/// Per-set state besides the ways, kept together so a miss touches one host line.
#[derive(Debug, Clone, Copy, Default)]
struct SetState {
    /// Tree-PLRU bits (unused under LRU).
    plru_bits: u64,
    /// Bit `c` set when core `c` inserted a line into the set.
    inserting_cores: u64,
    /// Cross-core evictions that happened in the set.
    cross_core_evictions: u64,
}

/// A shared set-associative cache with per-core and per-set counters.
///
/// Storage is flat: `ways` tags per set in one array, `ways` way words per set
/// in another (owner in the high byte, LRU rank in the low byte), and one
/// per-set state record per set. An access touches the set's tags and way words; a
/// miss also its `SetState`. Nothing is allocated per access.
#[derive(Debug, Clone)]
pub struct Cache {
    geometry: CacheGeometry,
    replacement: Replacement,
    ways: usize,
    /// Line address per way, `INVALID` when empty.
    tags: Vec<u64>,
    /// Owner (high byte) and LRU rank (low byte) per way.
    way_words: Vec<u16>,
    sets: Vec<SetState>,
    per_core: Vec<CoreCounters>,
}

impl Cache {
    /// An empty cache of `geometry` that counts for `cores` cores.
    pub fn new(
        geometry: CacheGeometry,
        replacement: Replacement,
        cores: usize,
    ) -> Result<Self, SimError> {
        replacement.check_ways(geometry.ways())?;
        if cores == 0 || cores > MAX_CORES {
            return Err(SimError::invalid(
                "cores",
                format!("1..={MAX_CORES}"),
                cores,
            ));
        }
        let sets = usize::try_from(geometry.total_sets()).map_err(|_| {
            SimError::invalid(
                "geometry.size",
                "a cache whose sets fit in memory",
                geometry.size(),
            )
        })?;
        let ways = geometry.ways() as usize;
        let mut way_words = vec![0u16; sets * ways];
        way_words
            .chunks_exact_mut(ways)
            .for_each(replacement::lru_initial_ranks);
        Ok(Cache {
            geometry,
            replacement,
            ways,
            tags: vec![INVALID; sets * ways],
            way_words,
            sets: vec![SetState::default(); sets],
            per_core: vec![CoreCounters::default(); cores],
        })
    }

    /// The geometry the cache was built with.
    pub fn geometry(&self) -> &CacheGeometry {
        &self.geometry
    }

    /// The replacement policy.
    pub fn replacement(&self) -> Replacement {
        self.replacement
    }

    /// Number of cores counted.
    pub fn cores(&self) -> usize {
        self.per_core.len()
    }

    /// One access by `core` to physical `address`.
    pub fn access(&mut self, core: usize, address: u64) -> Result<AccessOutcome, SimError> {
        self.check_core(core)?;
        Ok(self.access_checked(core, address))
    }

    /// Fails unless `core` is one of the cache's cores.
    pub(crate) fn check_core(&self, core: usize) -> Result<(), SimError> {
        if core < self.per_core.len() {
            Ok(())
        } else {
            Err(SimError::CoreOutOfRange {
                core,
                cores: self.per_core.len(),
            })
        }
    }

    /// [`Cache::access`] for a core already known to be in range: the hot path.
    #[inline]
    pub(crate) fn access_checked(&mut self, core: usize, address: u64) -> AccessOutcome {
        let set = self.geometry.set_of(address) as usize;
        self.access_in_set(core, address, set)
    }

    /// The global set number of `address` (see [`CacheGeometry::set_of`]).
    #[inline]
    pub(crate) fn set_of(&self, address: u64) -> usize {
        self.geometry.set_of(address) as usize
    }

    /// [`Cache::access_checked`] with the set already computed by [`Cache::set_of`].
    #[inline]
    pub(crate) fn access_in_set(&mut self, core: usize, address: u64, set: usize) -> AccessOutcome {
        let line = self.geometry.line_address(address);
        let ways = set * self.ways..(set + 1) * self.ways;
        let counters = &mut self.per_core[core];
        counters.accesses += 1;

        let hit_ways = ways_matching(&self.tags[ways.clone()], line);
        if hit_ways != 0 {
            counters.hits += 1;
            self.touch(set, ways, hit_ways.trailing_zeros() as usize);
            return AccessOutcome::Hit;
        }
        counters.misses += 1;
        let empty_ways = ways_matching(&self.tags[ways.clone()], INVALID);
        let way = if empty_ways != 0 {
            empty_ways.trailing_zeros() as usize
        } else {
            self.victim(set, ways.clone())
        };
        let slot = ways.start + way;
        let evicted = self.evict(core, set, slot);
        self.tags[slot] = line;
        self.way_words[slot] = (self.way_words[slot] & RANK_MASK) | ((core as u16) << 8);
        self.sets[set].inserting_cores |= 1 << core;
        self.touch(set, ways, way);
        AccessOutcome::Miss { evicted }
    }

    /// Loads every host cache line of `set` (its tags,
    /// way words and set state) and returns the loaded values mixed. Issued
    /// for a batch of accesses before they are applied (see
    /// [`crate::replay`]), it lets the host fetch many sets at once: a
    /// prefetch in safe Rust.
    #[inline]
    pub(crate) fn preload(&self, set: usize) -> u64 {
        const WORDS_PER_HOST_LINE: usize = 64 / std::mem::size_of::<u64>();
        let (first, last) = (set * self.ways, (set + 1) * self.ways - 1);
        // One load per 64 bytes plus the last word reaches every host line of the block.
        let mut mixed = self.tags[first..=last]
            .iter()
            .step_by(WORDS_PER_HOST_LINE)
            .fold(0, |acc, tag| acc ^ tag);
        mixed ^= self.tags[last];
        mixed ^= u64::from(self.way_words[first]) ^ u64::from(self.way_words[last]);
        mixed ^ self.sets[set].inserting_cores
    }

    /// Whether the line holding `address` is cached.
    pub fn contains(&self, address: u64) -> bool {
        let base = self.geometry.set_of(address) as usize * self.ways;
        let line = self.geometry.line_address(address);
        self.tags[base..base + self.ways].contains(&line)
    }

    /// Counts and describes the eviction of the line in `slot`, if it is valid.
    fn evict(&mut self, core: usize, set: usize, slot: usize) -> Option<Eviction> {
        let tag = self.tags[slot];
        if tag == INVALID {
            return None;
        }
        let owner = usize::from(self.way_words[slot] >> 8);
        self.per_core[core].evictions_caused += 1;
        if owner != core {
            self.per_core[core].cross_core_evictions_caused += 1;
            self.per_core[owner].lines_lost_to_other_cores += 1;
            self.sets[set].cross_core_evictions += 1;
        }
        Some(Eviction {
            line_address: tag,
            owner,
        })
    }

    #[inline]
    fn touch(&mut self, set: usize, ways: Range<usize>, way: usize) {
        match self.replacement {
            Replacement::Lru => replacement::lru_touch(&mut self.way_words[ways], way),
            Replacement::TreePlru => {
                replacement::plru_touch(&mut self.sets[set].plru_bits, self.ways, way)
            }
        }
    }

    #[inline]
    fn victim(&self, set: usize, ways: Range<usize>) -> usize {
        match self.replacement {
            Replacement::Lru => replacement::lru_victim(&self.way_words[ways]),
            Replacement::TreePlru => replacement::plru_victim(self.sets[set].plru_bits, self.ways),
        }
    }

    /// Counters of one core.
    pub fn counters(&self, core: usize) -> Result<&CoreCounters, SimError> {
        self.check_core(core)?;
        Ok(&self.per_core[core])
    }

    /// Counters of all cores, indexed by core.
    pub fn per_core(&self) -> &[CoreCounters] {
        &self.per_core
    }

    /// Sum of all cores' counters.
    pub fn totals(&self) -> CoreCounters {
        let mut totals = CoreCounters::default();
        self.per_core
            .iter()
            .for_each(|counters| totals.add(counters));
        totals
    }

    /// Cross-core evictions per global set number.
    pub fn set_cross_core_evictions(&self) -> impl ExactSizeIterator<Item = u64> + '_ {
        self.sets.iter().map(|state| state.cross_core_evictions)
    }

    /// Per global set number, a mask of the cores that inserted lines into it.
    pub fn set_inserting_cores(&self) -> impl ExactSizeIterator<Item = u64> + '_ {
        self.sets.iter().map(|state| state.inserting_cores)
    }

    /// Sets into which more than one core inserted lines.
    pub fn shared_sets(&self) -> u64 {
        self.sets
            .iter()
            .filter(|state| state.inserting_cores.count_ones() > 1)
            .count() as u64
    }

    /// Valid lines currently owned by each core.
    pub fn resident_lines(&self) -> Vec<u64> {
        let mut resident = vec![0u64; self.per_core.len()];
        for (tag, &word) in self.tags.iter().zip(&self.way_words) {
            if *tag != INVALID {
                resident[usize::from(word >> 8)] += 1;
            }
        }
        resident
    }

    /// Zeroes all counters (per core and per set) but keeps the cached lines:
    /// call after a warm-up to measure the steady state.
    pub fn reset_counters(&mut self) {
        self.per_core.fill(CoreCounters::default());
        for state in &mut self.sets {
            state.inserting_cores = 0;
            state.cross_core_evictions = 0;
        }
    }
}

/// A mask of the ways of a set whose tag equals `value`, in one branch-free
/// pass. The common associativities get a fixed-size loop the compiler unrolls.
#[inline]
fn ways_matching(tags: &[u64], value: u64) -> u64 {
    match tags.len() {
        4 => mask_fixed::<4>(tags.try_into().expect("4 tags"), value),
        8 => mask_fixed::<8>(tags.try_into().expect("8 tags"), value),
        16 => mask_fixed::<16>(tags.try_into().expect("16 tags"), value),
        _ => mask_of(tags, value),
    }
}

#[inline(always)]
fn mask_fixed<const N: usize>(tags: &[u64; N], value: u64) -> u64 {
    mask_of(tags, value)
}

#[inline(always)]
fn mask_of(tags: &[u64], value: u64) -> u64 {
    tags.iter().enumerate().fold(0, |mask, (way, &tag)| {
        mask | (u64::from(tag == value) << way)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 4 sets × 4 ways × 64 B: addresses 256 B apart share a set.
    fn tiny(replacement: Replacement) -> Cache {
        Cache::new(CacheGeometry::new(1024, 4, 64).unwrap(), replacement, 2).unwrap()
    }

    const SET_STRIDE: u64 = 256;

    #[test]
    fn second_access_hits_and_offsets_share_a_line() {
        let mut cache = tiny(Replacement::Lru);
        assert_eq!(
            cache.access(0, 4096).unwrap(),
            AccessOutcome::Miss { evicted: None }
        );
        assert_eq!(cache.access(0, 4096 + 63).unwrap(), AccessOutcome::Hit);
        assert_eq!(
            cache.access(1, 4096 + 64).unwrap(),
            AccessOutcome::Miss { evicted: None }
        );
        let c = cache.counters(0).unwrap();
        assert_eq!((c.accesses, c.hits, c.misses), (2, 1, 1));
        assert!(cache.contains(4100));
        assert!(!cache.contains(4096 + 128));
    }

    #[test]
    fn lru_evicts_least_recent_line_of_the_set() {
        let mut cache = tiny(Replacement::Lru);
        for i in 0..4 {
            cache.access(0, i * SET_STRIDE).unwrap();
        }
        cache.access(0, 0).unwrap(); // line 0 becomes most recent; line 1 is now LRU
        let outcome = cache.access(0, 4 * SET_STRIDE).unwrap();
        assert_eq!(
            outcome,
            AccessOutcome::Miss {
                evicted: Some(Eviction {
                    line_address: SET_STRIDE,
                    owner: 0
                })
            }
        );
        assert!(cache.contains(0));
        assert!(!cache.contains(SET_STRIDE));
    }

    #[test]
    fn plru_evicts_the_way_the_tree_points_to() {
        let mut cache = tiny(Replacement::TreePlru);
        for i in 0..4 {
            cache.access(0, i * SET_STRIDE).unwrap(); // fills ways 0..3 in order
        }
        cache.access(0, 0).unwrap();
        // Same sequence as the hand-worked tree: 0,1,2,3,0 → victim way 2 (address 2 × stride).
        let outcome = cache.access(0, 4 * SET_STRIDE).unwrap();
        assert_eq!(
            outcome,
            AccessOutcome::Miss {
                evicted: Some(Eviction {
                    line_address: 2 * SET_STRIDE,
                    owner: 0
                })
            }
        );
    }

    #[test]
    fn ways_plus_one_lines_cycling_in_one_set_always_miss_under_lru() {
        let mut cache = tiny(Replacement::Lru);
        for round in 0..10u64 {
            for i in 0..5u64 {
                let outcome = cache.access(0, i * SET_STRIDE).unwrap();
                assert!(
                    matches!(outcome, AccessOutcome::Miss { .. }),
                    "round {round} line {i}"
                );
            }
        }
        let c = cache.counters(0).unwrap();
        assert_eq!(c.hits, 0);
        assert_eq!(c.evictions_caused, 50 - 4);
        // The other three sets stay empty.
        assert_eq!(cache.resident_lines(), vec![4, 0]);
    }

    #[test]
    fn ways_lines_cycling_in_one_set_hit_after_the_first_round() {
        for replacement in [Replacement::Lru, Replacement::TreePlru] {
            let mut cache = tiny(replacement);
            for _ in 0..10u64 {
                for i in 0..4u64 {
                    cache.access(0, i * SET_STRIDE).unwrap();
                }
            }
            let c = cache.counters(0).unwrap();
            assert_eq!((c.misses, c.hits), (4, 36), "{replacement:?}");
        }
    }

    #[test]
    fn cross_core_eviction_is_charged_to_both_cores_and_the_set() {
        let mut cache = tiny(Replacement::Lru);
        for i in 0..4 {
            cache.access(0, i * SET_STRIDE).unwrap();
        }
        let outcome = cache.access(1, 4 * SET_STRIDE).unwrap();
        assert_eq!(
            outcome,
            AccessOutcome::Miss {
                evicted: Some(Eviction {
                    line_address: 0,
                    owner: 0
                })
            }
        );
        assert_eq!(cache.counters(1).unwrap().cross_core_evictions_caused, 1);
        assert_eq!(cache.counters(1).unwrap().evictions_caused, 1);
        assert_eq!(cache.counters(0).unwrap().lines_lost_to_other_cores, 1);
        assert_eq!(
            cache.set_cross_core_evictions().collect::<Vec<_>>(),
            vec![1, 0, 0, 0]
        );
        assert_eq!(
            cache.set_inserting_cores().collect::<Vec<_>>(),
            vec![0b11, 0, 0, 0]
        );
        assert_eq!(cache.shared_sets(), 1);
        assert_eq!(cache.totals().cross_core_evictions_caused, 1);
        cache.reset_counters();
        assert_eq!(cache.totals(), CoreCounters::default());
        assert!(cache.contains(4 * SET_STRIDE), "reset keeps the lines");
    }

    #[test]
    fn hitting_another_cores_line_does_not_change_its_owner() {
        let mut cache = tiny(Replacement::Lru);
        cache.access(0, 0).unwrap();
        assert_eq!(cache.access(1, 0).unwrap(), AccessOutcome::Hit);
        for i in 1..5 {
            cache.access(0, i * SET_STRIDE).unwrap();
        }
        // Line 0 (owner 0) was evicted by core 0 itself: not cross-core.
        assert_eq!(cache.totals().cross_core_evictions_caused, 0);
        assert_eq!(cache.counters(0).unwrap().evictions_caused, 1);
    }

    #[test]
    fn bad_core_and_policy_are_errors() {
        let mut cache = tiny(Replacement::Lru);
        assert_eq!(
            cache.access(2, 0).unwrap_err(),
            SimError::CoreOutOfRange { core: 2, cores: 2 }
        );
        let geometry = CacheGeometry::new(12 * 64 * 4, 12, 64).unwrap();
        assert!(Cache::new(geometry.clone(), Replacement::TreePlru, 1).is_err());
        assert!(Cache::new(geometry.clone(), Replacement::Lru, 0).is_err());
        assert!(Cache::new(geometry, Replacement::Lru, MAX_CORES + 1).is_err());
    }
}
