//! Property tests on small geometries: the coloring argument for any split of
//! the colors, and model invariants for any access stream.

use proptest::prelude::*;
use tinct_sim::stream::{WorkingSet, generate};
use tinct_sim::{
    AccessPattern, Cache, CacheGeometry, Interleave, PageColoring, Replacement, ReplayConfig,
    SyntheticMemory, replay_pages, replay_streams,
};

const PAGE: u64 = 4096;

fn replacement() -> impl Strategy<Value = Replacement> {
    prop_oneof![Just(Replacement::Lru), Just(Replacement::TreePlru)]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Any assignment of the 32 colors of a 1 MiB, 8-way cache to three cores,
    /// with any working-set sizes, gives zero cross-core evictions.
    #[test]
    fn any_disjoint_color_split_isolates(
        owner_of_color in prop::collection::vec(0usize..3, 32),
        pages in prop::collection::vec(1usize..300, 3),
        replacement in replacement(),
        seed in any::<u64>(),
    ) {
        let geometry = CacheGeometry::new(1 << 20, 8, 64).unwrap();
        let coloring = PageColoring::new(&geometry, PAGE).unwrap();
        let mut memory = SyntheticMemory::new(coloring, 256 << 20, seed).unwrap();
        let mut tasks = Vec::new();
        for (core, &task_pages) in pages.iter().enumerate() {
            let colors: Vec<u64> =
                (0..32).filter(|&color| owner_of_color[color as usize] == core).collect();
            if !colors.is_empty() {
                tasks.push(memory.take_colored(&colors, task_pages).unwrap());
            }
        }
        let mut config = ReplayConfig::new(20_000, seed);
        config.replacement = replacement;
        let report = replay_pages(&geometry, &tasks, &config).unwrap();
        prop_assert_eq!(report.cross_core_evictions, 0);
        prop_assert_eq!(report.shared_sets, 0);
    }

    /// Counters add up for any streams: hits + misses = accesses, evictions
    /// never exceed misses, lines lost = cross-core evictions caused, and the
    /// cache never holds more lines than it has.
    #[test]
    fn counters_are_consistent(
        pfns in prop::collection::vec(prop::collection::vec(0u64..4096, 1..40), 1..4),
        replacement in replacement(),
        random_interleave in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let geometry = CacheGeometry::new(64 << 10, 4, 64).unwrap();
        let streams: Vec<Vec<u64>> = pfns
            .iter()
            .enumerate()
            .map(|(core, pages)| {
                let working_set = WorkingSet::from_pfns(pages, PAGE, 64).unwrap();
                generate(&working_set, AccessPattern::Random, 3000, seed ^ core as u64)
            })
            .collect();
        let mut cache = Cache::new(geometry.clone(), replacement, streams.len()).unwrap();
        let interleave = if random_interleave { Interleave::Random } else { Interleave::RoundRobin };
        replay_streams(&mut cache, &streams, interleave, seed).unwrap();
        let totals = cache.totals();
        prop_assert_eq!(totals.accesses, 3000 * streams.len() as u64);
        prop_assert_eq!(totals.hits + totals.misses, totals.accesses);
        prop_assert!(totals.evictions_caused <= totals.misses);
        prop_assert_eq!(totals.lines_lost_to_other_cores, totals.cross_core_evictions_caused);
        prop_assert_eq!(cache.set_cross_core_evictions().sum::<u64>(), totals.cross_core_evictions_caused);
        let resident: u64 = cache.resident_lines().iter().sum();
        prop_assert!(resident <= geometry.total_lines());
        prop_assert_eq!(resident, totals.misses - totals.evictions_caused);
        if streams.len() == 1 {
            prop_assert_eq!(totals.cross_core_evictions_caused, 0);
        }
    }
}
