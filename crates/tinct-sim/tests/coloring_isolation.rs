//! Acceptance of issue 4, item 5: on a cache with this machine's geometry,
//! working sets from disjoint color sets never evict each other over a long
//! random replay, while uncolored or overlapping color sets do.
//!
//! Each working set is twice its share of the cache, so every core evicts
//! its own lines all the time: a zero cross-core count is not an artifact of
//! a cache too big to ever evict. Replays are sized so the suite stays fast
//! in a debug build (about a million accesses per case).

use tinct_sim::{
    AccessPattern, CacheGeometry, Interleave, PageColoring, Replacement, ReplayConfig,
    ReplayReport, SliceHash, SyntheticMemory, replay_pages,
};

const MIB: u64 = 1 << 20;
const PAGE: u64 = 4096;

/// L3 of this machine (DESIGN.md, sysfs index3): 32 MiB, 16-way, 64 B lines → 512 colors of 4 KiB pages.
fn llc() -> CacheGeometry {
    CacheGeometry::new(32 * MIB, 16, 64).unwrap()
}

/// L2 of this machine (sysfs index2): 1 MiB, 8-way, 64 B lines → 32 colors.
fn l2() -> CacheGeometry {
    CacheGeometry::new(MIB, 8, 64).unwrap()
}

fn memory(geometry: &CacheGeometry, seed: u64) -> SyntheticMemory {
    SyntheticMemory::new(PageColoring::new(geometry, PAGE).unwrap(), 8192 * MIB, seed).unwrap()
}

fn pages(bytes: u64) -> usize {
    (bytes / PAGE) as usize
}

/// Checks that each core's working set over-subscribed its share: it kept evicting its own lines.
fn assert_each_core_thrashes_its_share(report: &ReplayReport) {
    for core in &report.per_core {
        let own_evictions =
            core.counters.evictions_caused - core.counters.cross_core_evictions_caused;
        assert!(
            own_evictions > core.counters.accesses / 10,
            "core {} evicted only {own_evictions} of its own lines in {} accesses: the test would be vacuous",
            core.core,
            core.counters.accesses
        );
    }
}

fn assert_isolated(report: &ReplayReport) {
    assert_eq!(
        report.cross_core_evictions, 0,
        "cross-core evictions with disjoint colors: {report:#?}"
    );
    assert_eq!(
        report.shared_sets, 0,
        "no set may receive lines of both cores"
    );
    assert_eq!(report.shared_colors, 0);
    for core in &report.per_core {
        assert_eq!(core.counters.lines_lost_to_other_cores, 0);
    }
    assert_each_core_thrashes_its_share(report);
}

#[test]
fn disjoint_color_halves_never_evict_each_other_in_the_llc() {
    let geometry = llc();
    let mut memory = memory(&geometry, 11);
    let low: Vec<u64> = (0..256).collect();
    let high: Vec<u64> = (256..512).collect();
    // 32 MiB each, against a 16 MiB share.
    let task_a = memory.take_colored(&low, pages(32 * MIB)).unwrap();
    let task_b = memory.take_colored(&high, pages(32 * MIB)).unwrap();
    for replacement in [Replacement::Lru, Replacement::TreePlru] {
        let mut config = ReplayConfig::new(600_000, 1);
        config.replacement = replacement;
        let report = replay_pages(&geometry, &[&task_a, &task_b], &config).unwrap();
        assert_eq!(report.colors, 512);
        assert_eq!(report.totals.accesses, 1_200_000);
        assert_isolated(&report);
    }
}

#[test]
fn interleaved_disjoint_colors_never_evict_each_other_in_the_llc() {
    let geometry = llc();
    let mut memory = memory(&geometry, 12);
    let even: Vec<u64> = (0..512).step_by(2).collect();
    let odd: Vec<u64> = (1..512).step_by(2).collect();
    let task_a = memory.take_colored(&even, pages(32 * MIB)).unwrap();
    let task_b = memory.take_colored(&odd, pages(32 * MIB)).unwrap();
    let mut config = ReplayConfig::new(600_000, 2);
    config.interleave = Interleave::RoundRobin;
    assert_isolated(&replay_pages(&geometry, &[task_a, task_b], &config).unwrap());
}

#[test]
fn uncolored_working_sets_evict_each_other_in_the_llc() {
    let geometry = llc();
    let mut memory = memory(&geometry, 13);
    let task_a = memory.take_uncolored(pages(32 * MIB)).unwrap();
    let task_b = memory.take_uncolored(pages(32 * MIB)).unwrap();
    let report =
        replay_pages(&geometry, &[task_a, task_b], &ReplayConfig::new(600_000, 3)).unwrap();
    assert!(
        report.cross_core_evictions > report.totals.accesses / 20,
        "uncolored 2 × 32 MiB in 32 MiB must interfere heavily, got {} cross-core evictions",
        report.cross_core_evictions
    );
    for core in &report.per_core {
        assert!(
            core.counters.lines_lost_to_other_cores > 0,
            "core {} lost nothing",
            core.core
        );
        assert!(
            core.counters.cross_core_evictions_caused > 0,
            "core {} evicted nothing of the other",
            core.core
        );
    }
    assert!(
        report.shared_colors > 500,
        "random pages use nearly every color"
    );
    assert!(report.shared_sets > geometry.total_sets() * 9 / 10);
}

#[test]
fn overlapping_color_sets_evict_each_other_only_in_the_shared_colors() {
    let geometry = llc();
    let mut memory = memory(&geometry, 14);
    let colors_a: Vec<u64> = (0..320).collect();
    let colors_b: Vec<u64> = (192..512).collect(); // 128 colors shared
    let task_a = memory.take_colored(&colors_a, pages(40 * MIB)).unwrap();
    let task_b = memory.take_colored(&colors_b, pages(40 * MIB)).unwrap();
    let report =
        replay_pages(&geometry, &[task_a, task_b], &ReplayConfig::new(600_000, 4)).unwrap();
    assert_eq!(report.shared_colors, 128);
    assert!(
        report.cross_core_evictions > 10_000,
        "got {}",
        report.cross_core_evictions
    );
    let interfering = &report.colors_with_cross_core_evictions;
    assert!(
        interfering.len() > 100,
        "most shared colors interfere, got {}",
        interfering.len()
    );
    assert!(
        interfering.iter().all(|color| (192..320).contains(color)),
        "cross-core evictions outside the shared colors 192..320: {interfering:?}"
    );
    assert_eq!(
        report.shared_sets,
        128 * 64,
        "64 sets per color, in the shared colors only"
    );
}

#[test]
fn disjoint_colors_isolate_in_a_sliced_cache_too() {
    // Intel-style: 8 slices chosen by XOR hashes of high address bits.
    let hash = SliceHash::new(vec![0x1b5f_5000, 0x2eb5_fa00, 0x3cca_c000]).unwrap();
    let geometry = CacheGeometry::sliced(16 * MIB, 16, 64, hash).unwrap();
    let colors = PageColoring::new(&geometry, PAGE).unwrap().colors();
    assert_eq!(colors, 32, "colors come from the 2048 sets of one slice");
    let mut memory = memory(&geometry, 15);
    let task_a = memory
        .take_colored(&(0..16).collect::<Vec<_>>(), pages(16 * MIB))
        .unwrap();
    let task_b = memory
        .take_colored(&(16..32).collect::<Vec<_>>(), pages(16 * MIB))
        .unwrap();
    assert_isolated(
        &replay_pages(
            &geometry,
            &[&task_a, &task_b],
            &ReplayConfig::new(300_000, 5),
        )
        .unwrap(),
    );

    let task_c = memory.take_uncolored(pages(16 * MIB)).unwrap();
    let task_d = memory.take_uncolored(pages(16 * MIB)).unwrap();
    let report =
        replay_pages(&geometry, &[task_c, task_d], &ReplayConfig::new(300_000, 5)).unwrap();
    assert!(
        report.cross_core_evictions > 10_000,
        "got {}",
        report.cross_core_evictions
    );
}

#[test]
fn disjoint_colors_isolate_three_cores_in_the_l2() {
    let geometry = l2();
    let mut memory = memory(&geometry, 16);
    let sets: [Vec<u64>; 3] = [(0..8).collect(), (8..20).collect(), (20..32).collect()];
    // Shares are 256, 384 and 384 KiB; working sets 1 MiB each.
    let tasks: Vec<Vec<u64>> = sets
        .iter()
        .map(|colors| memory.take_colored(colors, 256).unwrap())
        .collect();
    let mut config = ReplayConfig::new(100_000, 6);
    config.replacement = Replacement::TreePlru;
    assert_isolated(&replay_pages(&geometry, &tasks, &config).unwrap());
}

#[test]
fn a_cache_sized_contiguous_working_set_hits_every_time_after_warmup() {
    for replacement in [Replacement::Lru, Replacement::TreePlru] {
        let geometry = l2();
        let pfns: Vec<u64> = (1000..1000 + pages(MIB) as u64).collect(); // exactly `ways` lines per set
        let mut config = ReplayConfig::new(200_000, 7);
        config.replacement = replacement;
        config.pattern = AccessPattern::Sequential;
        config.warmup_accesses_per_core = geometry.total_lines(); // one pass fills every way of every set
        let report = replay_pages(&geometry, &[pfns], &config).unwrap();
        assert_eq!(
            report.totals.hits, 200_000,
            "{replacement:?}: {:?}",
            report.totals
        );
        assert_eq!(report.per_core[0].resident_lines, geometry.total_lines());
    }
}

#[test]
fn report_serializes_to_json_with_the_counters_flat() {
    let geometry = l2();
    let report = replay_pages(
        &geometry,
        &[vec![1u64, 2], vec![40u64]],
        &ReplayConfig::new(100, 8),
    )
    .unwrap();
    let json: serde_json::Value = serde_json::to_value(&report).unwrap();
    assert_eq!(json["geometry"]["ways"], 8);
    assert_eq!(json["config"]["replacement"], "lru");
    assert_eq!(json["per_core"][0]["accesses"], 100);
    assert_eq!(json["per_core"][1]["pages"], 1);
    assert_eq!(json["cross_core_evictions"], 0);
}

#[test]
fn same_seed_same_report() {
    let geometry = l2();
    let mut memory = memory(&geometry, 17);
    let tasks = [
        memory.take_uncolored(300).unwrap(),
        memory.take_uncolored(300).unwrap(),
    ];
    let first = replay_pages(&geometry, &tasks, &ReplayConfig::new(50_000, 9)).unwrap();
    let again = replay_pages(&geometry, &tasks, &ReplayConfig::new(50_000, 9)).unwrap();
    let other = replay_pages(&geometry, &tasks, &ReplayConfig::new(50_000, 10)).unwrap();
    assert_eq!(first, again);
    assert_ne!(first.totals, other.totals);
}

#[test]
fn slice_hash_spreads_lines_over_the_slices() {
    let hash = SliceHash::new(vec![0x1b5f_5000, 0x2eb5_fa00, 0x3cca_c000]).unwrap();
    let geometry = CacheGeometry::sliced(16 * MIB, 16, 64, hash).unwrap();
    let mut per_slice = [0u64; 8];
    // A contiguous 64 MiB region, line by line, and uncolored random pages.
    for address in (0..64 * MIB).step_by(64) {
        per_slice[geometry.slice_hash().slice_of(address) as usize] += 1;
    }
    let expected = 64 * MIB / 64 / 8;
    for (slice, &count) in per_slice.iter().enumerate() {
        assert!(
            count.abs_diff(expected) < expected / 20,
            "slice {slice} got {count} lines, expected about {expected}: {per_slice:?}"
        );
    }
    let mut memory = memory(&geometry, 18);
    let mut per_slice = [0u64; 8];
    for pfn in memory.take_uncolored(8000).unwrap() {
        per_slice[geometry.slice_hash().slice_of(pfn * PAGE) as usize] += 1;
    }
    assert!(
        per_slice.iter().all(|&count| count > 800),
        "random pages over 8 slices: {per_slice:?}"
    );
}
