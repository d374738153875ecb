//! Cache-model throughput: accesses per second, one element = one access.
//!
//! `cargo bench -p tinct-sim --bench replay`
//!
//! - `cache_access/*`: pre-generated address streams of two cores (two
//!   uncolored 24 MiB working sets) replayed round robin into one cache, so
//!   only the model is timed. Random streams over an LLC-sized model are bound
//!   by the host's memory latency (the model's tags alone are 4 MiB); the
//!   sequential and L2-sized cases show the model's own cost.
//! - `replay_pages/*`: the whole `replay_pages` call (cache construction,
//!   stream generation, interleaving, report) on the same working sets.
// criterion_main! defines an undocumented `pub fn main`.
#![allow(missing_docs)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tinct_sim::stream::{WorkingSet, generate};
use tinct_sim::{
    AccessPattern, Cache, CacheGeometry, Interleave, PageColoring, Replacement, ReplayConfig,
    SliceHash, SyntheticMemory, replay_pages, replay_streams,
};

const MIB: u64 = 1 << 20;
const PAGE: u64 = 4096;
const ACCESSES_PER_CORE: u64 = 500_000;

/// This machine's L3: 32 MiB, 16-way, 64 B lines.
fn llc() -> CacheGeometry {
    CacheGeometry::new(32 * MIB, 16, 64).unwrap()
}

/// An Intel-style sliced cache of the same size: 8 slices by XOR hash.
fn sliced_llc() -> CacheGeometry {
    let hash = SliceHash::new(vec![0x1b5f_5000, 0x2eb5_fa00, 0x3cca_c000]).unwrap();
    CacheGeometry::sliced(32 * MIB, 16, 64, hash).unwrap()
}

/// This machine's L2: 1 MiB, 8-way.
fn l2() -> CacheGeometry {
    CacheGeometry::new(MIB, 8, 64).unwrap()
}

/// Two uncolored 24 MiB working sets: plenty of misses and cross-core evictions.
fn two_working_sets(geometry: &CacheGeometry) -> Vec<Vec<u64>> {
    let coloring = PageColoring::new(geometry, PAGE).unwrap();
    let mut memory = SyntheticMemory::new(coloring, 4096 * MIB, 1).unwrap();
    let pages = (24 * MIB / PAGE) as usize;
    (0..2)
        .map(|_| memory.take_uncolored(pages).unwrap())
        .collect()
}

fn streams(geometry: &CacheGeometry, pattern: AccessPattern) -> Vec<Vec<u64>> {
    two_working_sets(geometry)
        .iter()
        .enumerate()
        .map(|(core, pfns)| {
            let working_set = WorkingSet::from_pfns(pfns, PAGE, 64).unwrap();
            generate(
                &working_set,
                pattern,
                ACCESSES_PER_CORE as usize,
                core as u64,
            )
        })
        .collect()
}

fn bench_cache_access(c: &mut Criterion) {
    let mut group = c.benchmark_group("cache_access");
    group.throughput(Throughput::Elements(2 * ACCESSES_PER_CORE));
    group.sample_size(20);
    let cases = [
        (
            "llc_lru_random",
            llc(),
            Replacement::Lru,
            AccessPattern::Random,
        ),
        (
            "llc_plru_random",
            llc(),
            Replacement::TreePlru,
            AccessPattern::Random,
        ),
        (
            "llc_sliced8_lru_random",
            sliced_llc(),
            Replacement::Lru,
            AccessPattern::Random,
        ),
        (
            "llc_lru_sequential",
            llc(),
            Replacement::Lru,
            AccessPattern::Sequential,
        ),
        (
            "l2_lru_random",
            l2(),
            Replacement::Lru,
            AccessPattern::Random,
        ),
    ];
    for (name, geometry, replacement, pattern) in cases {
        let streams = streams(&geometry, pattern);
        let mut cache = Cache::new(geometry, replacement, 2).unwrap();
        group.bench_function(name, |b| {
            b.iter(|| replay_streams(&mut cache, &streams, Interleave::RoundRobin, 0).unwrap())
        });
    }
    group.finish();
}

fn bench_replay_pages(c: &mut Criterion) {
    let mut group = c.benchmark_group("replay_pages");
    group.throughput(Throughput::Elements(2 * ACCESSES_PER_CORE));
    group.sample_size(10);
    let geometry = llc();
    let pfns = two_working_sets(&geometry);
    for (name, interleave) in [
        ("llc_random_interleave", Interleave::Random),
        ("llc_round_robin", Interleave::RoundRobin),
    ] {
        let mut config = ReplayConfig::new(ACCESSES_PER_CORE, 5);
        config.interleave = interleave;
        group.bench_function(name, |b| {
            b.iter(|| replay_pages(&geometry, &pfns, &config).unwrap())
        });
    }
    group.finish();
}

criterion_group!(benches, bench_cache_access, bench_replay_pages);
criterion_main!(benches);
