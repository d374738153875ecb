//! The coloring argument on the cache geometry this machine reports in sysfs.
//!
//! The main acceptance tests use the known geometry (32 MiB, 16-way, 64 B);
//! this one reads `/sys/devices/system/cpu/cpu0/cache/index*/` so the same
//! check runs on whatever machine CI uses. Without sysfs (not Linux) it
//! skips with a message, and fails instead when `TINCT_REQUIRE_PRIVILEGED=1`
//! (CI), so a broken CI runner cannot pass silently.

use std::fs;
use std::path::Path;

use tinct_sim::{CacheGeometry, PageColoring, ReplayConfig, SyntheticMemory, replay_pages};

const PAGE: u64 = 4096;

/// Parses a sysfs cache size such as `32768K` or `1M` into bytes.
fn parse_sysfs_size(text: &str) -> u64 {
    let text = text.trim();
    let (digits, scale) = match text.chars().last() {
        Some('K') => (&text[..text.len() - 1], 1 << 10),
        Some('M') => (&text[..text.len() - 1], 1 << 20),
        Some('G') => (&text[..text.len() - 1], 1 << 30),
        _ => (text, 1),
    };
    digits
        .parse::<u64>()
        .unwrap_or_else(|_| panic!("sysfs size {text:?} is not a number"))
        * scale
}

fn read_field(dir: &Path, field: &str) -> String {
    fs::read_to_string(dir.join(field))
        .unwrap_or_else(|err| panic!("{}: {err}", dir.join(field).display()))
        .trim()
        .to_string()
}

/// The unified caches of cpu0 from level 2 up, or `None` without sysfs; a
/// cache whose geometry is not one of a set-indexed cache (a count of sets
/// that is no power of two: a sliced or hashed L3 as a VM reports it) is
/// said and left out.
fn sysfs_unified_caches() -> Option<Vec<(String, CacheGeometry, u64)>> {
    let root = Path::new("/sys/devices/system/cpu/cpu0/cache");
    if !root.is_dir() {
        return None;
    }
    let mut caches = Vec::new();
    for index in 0..8 {
        let dir = root.join(format!("index{index}"));
        if !dir.is_dir() {
            break;
        }
        let level: u32 = read_field(&dir, "level").parse().unwrap();
        if read_field(&dir, "type") != "Unified" || level < 2 {
            continue;
        }
        let size = parse_sysfs_size(&read_field(&dir, "size"));
        let ways: u32 = read_field(&dir, "ways_of_associativity").parse().unwrap();
        let line: u64 = read_field(&dir, "coherency_line_size").parse().unwrap();
        let sets: u64 = read_field(&dir, "number_of_sets").parse().unwrap();
        match CacheGeometry::new(size, ways, line) {
            Ok(geometry) => caches.push((format!("L{level}"), geometry, sets)),
            Err(err) => eprintln!("L{level} not modelled (its colours cannot be derived): {err}"),
        }
    }
    Some(caches)
}

#[test]
fn sysfs_size_parser_reads_kernel_units() {
    assert_eq!(parse_sysfs_size("32768K\n"), 32 << 20);
    assert_eq!(parse_sysfs_size("1M"), 1 << 20);
    assert_eq!(parse_sysfs_size("512"), 512);
}

#[test]
fn disjoint_colors_isolate_in_this_machines_caches() {
    let Some(caches) = sysfs_unified_caches() else {
        assert!(
            !tinct_sys::testing::privileges_required(),
            "no /sys/devices/system/cpu/cpu0/cache, and TINCT_REQUIRE_PRIVILEGED=1 forbids skipping"
        );
        eprintln!("SKIPPED: no /sys/devices/system/cpu/cpu0/cache on this machine");
        return;
    };
    if caches.is_empty() {
        // A claim about this machine's caches: none can be modelled here.
        eprintln!("SKIPPED: no unified L2+ cache of this machine is set-indexed by its size");
        return;
    }
    for (name, geometry, sysfs_sets) in caches {
        assert_eq!(
            geometry.total_sets(),
            sysfs_sets,
            "{name}: sets from size/ways/line vs sysfs"
        );
        let coloring = PageColoring::new(&geometry, PAGE).unwrap();
        let colors = coloring.colors();
        if colors < 2 {
            eprintln!("{name}: one page color only, nothing to partition");
            continue;
        }
        let mut memory = SyntheticMemory::new(coloring, 64 * geometry.size(), 21).unwrap();
        // Each task gets half the colors and a working set as large as the cache: 2× its share.
        let pages = (geometry.size() / PAGE) as usize;
        let low: Vec<u64> = (0..colors / 2).collect();
        let high: Vec<u64> = (colors / 2..colors).collect();
        let tasks = [
            memory.take_colored(&low, pages).unwrap(),
            memory.take_colored(&high, pages).unwrap(),
        ];
        let accesses = geometry.total_lines().min(400_000);
        let report = replay_pages(&geometry, &tasks, &ReplayConfig::new(accesses, 22)).unwrap();
        assert_eq!(report.cross_core_evictions, 0, "{name}: {report:#?}");
        assert_eq!(report.shared_sets, 0, "{name}");
        for core in &report.per_core {
            assert!(
                core.counters.evictions_caused > 0,
                "{name}: core {} never evicted: vacuous",
                core.core
            );
        }

        let uncolored = [
            memory.take_uncolored(pages).unwrap(),
            memory.take_uncolored(pages).unwrap(),
        ];
        let report = replay_pages(&geometry, &uncolored, &ReplayConfig::new(accesses, 23)).unwrap();
        assert!(
            report.cross_core_evictions > 0,
            "{name}: uncolored working sets must interfere"
        );
    }
}
