//! The byte allocator of `SharedPool`: colors of every byte handed out
//! (re-translated through pagemap, needs root), and properties that hold in
//! any mode: no overlap, alignment honoured, contents kept by realloc.

use std::collections::{BTreeMap, HashSet};
use std::ptr::NonNull;
use std::sync::Arc;

use proptest::prelude::*;
use tinct_mem::mapping::LayoutSpec;
use tinct_mem::{PoolOptions, SharedPool, machine_mapping};
use tinct_sys::pagemap::Pagemap;
use tinct_sys::testing::privileged_or_skip;

const MIB: usize = 1 << 20;

fn page_size() -> usize {
    rustix::param::page_size()
}

/// 16 colors (bits 12-15, as an L2 of 1 MiB, 16 ways), so small pools
/// hold many pages per color.
fn mapping() -> tinct_mem::AddressMapping {
    let spec = LayoutSpec {
        color_bits: Some(vec![12, 13, 14, 15]),
        ..LayoutSpec::default()
    };
    machine_mapping(&spec).unwrap()
}

/// A pool that runs with or without root (uncolored only as a fallback).
fn any_pool(size: usize) -> SharedPool {
    SharedPool::new(
        mapping(),
        PoolOptions {
            uncolored: true,
            ..PoolOptions::new(size)
        },
    )
    .unwrap()
}

fn colored_pool(size: usize) -> SharedPool {
    SharedPool::new(mapping(), PoolOptions::new(size)).unwrap()
}

/// The `k` colors with the most free pages (frames of a small pool on a
/// busy machine are far from uniform over colors).
fn fullest_colors(pool: &SharedPool, k: usize) -> Vec<u32> {
    let stats = pool.stats();
    let mut colors: Vec<u32> = (0..stats.colors.len() as u32).collect();
    colors.sort_by_key(|&c| std::cmp::Reverse(stats.colors[c as usize].free));
    colors.truncate(k);
    colors
}

/// Colors of every page of `[ptr, ptr + len)`, read now through pagemap.
fn colors_now(pool: &SharedPool, ptr: NonNull<u8>, len: usize) -> Vec<u32> {
    let pagemap = Pagemap::open_self().unwrap();
    let page = page_size();
    let first = ptr.as_ptr() as usize / page * page;
    (first..ptr.as_ptr() as usize + len)
        .step_by(page)
        .map(|address| {
            let phys = pagemap.physical_address(address).unwrap().expect("present");
            pool.mapping().classify(phys).color
        })
        .collect()
}

#[test]
fn every_allocation_lies_in_its_colors() {
    if !privileged_or_skip("checking allocation colors through pagemap") {
        return;
    }
    let pool = colored_pool(32 * MIB);
    let set = fullest_colors(&pool, 3);
    for size in [
        1,
        24,
        100,
        700,
        2048,
        2049,
        4096,
        3 * 4096 + 5,
        64 * 1024,
        300 * 1024,
    ] {
        for _ in 0..5 {
            let ptr = pool.alloc(&set, size, 16).unwrap();
            // SAFETY: `size` bytes at `ptr` were just allocated.
            unsafe { ptr.as_ptr().write_bytes(0x5A, size) };
            for color in colors_now(&pool, ptr, size) {
                assert!(
                    set.contains(&color),
                    "size {size}: color {color} not in {set:?}"
                );
            }
            assert!(pool.usable_size(ptr).unwrap() >= size);
        }
    }
    // A large span takes the same number of pages from each color.
    let pages = 3 * 40;
    let span = pool.alloc(&set, pages * page_size(), 16).unwrap();
    let mut per = BTreeMap::new();
    for color in colors_now(&pool, span, pages * page_size()) {
        *per.entry(color).or_insert(0) += 1;
    }
    assert_eq!(
        per.values().copied().collect::<Vec<_>>(),
        vec![40, 40, 40],
        "{per:?}"
    );
    let before = pool.stats().total.free;
    pool.free(span).unwrap();
    assert_eq!(pool.stats().total.free, before + pages as u64);
}

#[test]
fn span_pages_return_to_the_pool_and_are_reused_first() {
    if !privileged_or_skip("checking span frames through pagemap") {
        return;
    }
    let pool = colored_pool(8 * MIB);
    let colors = fullest_colors(&pool, 1);
    let size = 6 * page_size();
    let span = pool.alloc(&colors, size, 16).unwrap();
    let pagemap = Pagemap::open_self().unwrap();
    let frames: HashSet<u64> = (0..6)
        .map(|i| {
            pagemap
                .frame_of(span.as_ptr() as usize + i * page_size())
                .unwrap()
                .unwrap()
        })
        .collect();
    assert_eq!(frames.len(), 6);
    // SAFETY: the span is `size` bytes, just allocated.
    unsafe { span.as_ptr().write_bytes(7, size) };
    pool.free(span).unwrap();
    let again = pool.alloc(&colors, size, 16).unwrap();
    let frames_again: HashSet<u64> = (0..6)
        .map(|i| {
            pagemap
                .frame_of(again.as_ptr() as usize + i * page_size())
                .unwrap()
                .unwrap()
        })
        .collect();
    assert_eq!(
        frames, frames_again,
        "freed pages are reused before never-used ones"
    );
    pool.free(again).unwrap();
}

#[test]
fn invalid_frees_are_refused() {
    let pool = any_pool(2 * MIB);
    let color = fullest_colors(&pool, 1);
    let ptr = pool.alloc(&color, 100, 16).unwrap();
    let inner = NonNull::new(ptr.as_ptr().wrapping_add(8)).unwrap();
    assert!(pool.free(inner).is_err(), "interior pointer");
    let mut local = 0u8;
    assert!(
        pool.free(NonNull::from(&mut local)).is_err(),
        "foreign pointer"
    );
    let page = pool.alloc(&color, 3000, 16).unwrap();
    pool.free(page).unwrap();
    assert!(pool.free(page).is_err(), "whole page freed twice");
    let span = pool.alloc(&color, 3 * page_size(), 16).unwrap();
    assert!(pool.owns(span.as_ptr() as usize + 2 * page_size()));
    pool.free(span).unwrap();
    assert!(pool.free(span).is_err(), "span freed twice");
    assert!(
        pool.alloc(&color, 10, 3).is_err(),
        "alignment not a power of two"
    );
    assert!(pool.alloc(&[], 10, 16).is_err(), "no colors");
    pool.free(ptr).unwrap();
}

#[test]
fn threads_allocate_concurrently_without_sharing_bytes() {
    let pool = Arc::new(any_pool(32 * MIB));
    let fullest = fullest_colors(&pool, 4);
    let threads: Vec<_> = (0..4u8)
        .map(|id| {
            let pool = Arc::clone(&pool);
            let colors = [fullest[usize::from(id)]];
            std::thread::spawn(move || {
                let mut live: Vec<(NonNull<u8>, usize)> = Vec::new();
                for round in 0..3000usize {
                    let size = 1 + (round * 37 + usize::from(id) * 11) % 6000;
                    let ptr = pool.alloc(&colors, size, 16).unwrap();
                    // SAFETY: fresh allocation of `size` bytes.
                    unsafe { ptr.as_ptr().write_bytes(id, size) };
                    live.push((ptr, size));
                    if live.len() > 32 || round % 3 == 0 {
                        let (ptr, size) = live.swap_remove(round % live.len());
                        // SAFETY: live allocation of `size` bytes, ours only.
                        let bytes = unsafe { std::slice::from_raw_parts(ptr.as_ptr(), size) };
                        assert!(
                            bytes.iter().all(|&b| b == id),
                            "bytes overwritten by another thread"
                        );
                        pool.free(ptr).unwrap();
                    }
                }
                for (ptr, _) in live {
                    pool.free(ptr).unwrap();
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    // Only pages carved into size classes stay out of the pool: at most a
    // few per class and arena (33 live objects per thread at most).
    let used = pool.stats().total.used;
    assert!(used <= 4 * 24 * 2, "{used} pages still used: pages leaked");
}

#[test]
fn whole_pages_and_spans_go_back_to_the_pool() {
    let pool = any_pool(4 * MIB);
    let colors = fullest_colors(&pool, 2);
    let sizes = [3000, 4096, 4097, 5 * 4096, 77_777];
    let ptrs: Vec<_> = sizes
        .iter()
        .map(|&s| pool.alloc(&colors, s, 16).unwrap())
        .collect();
    let used: u64 = sizes.iter().map(|&s| s.div_ceil(page_size()) as u64).sum();
    assert_eq!(pool.stats().total.used, used);
    for ptr in ptrs {
        pool.free(ptr).unwrap();
    }
    assert_eq!(pool.stats().total.used, 0);
}

#[derive(Debug, Clone)]
enum Op {
    Alloc {
        size: usize,
        align_shift: u32,
        colors: u8,
    },
    Free(usize),
    Realloc(usize, usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (prop_oneof![1usize..64, 64usize..2100, 2100usize..20000], 0u32..13, 0u8..3)
            .prop_map(|(size, align_shift, colors)| Op::Alloc { size, align_shift, colors }),
        2 => (0usize..1000).prop_map(Op::Free),
        2 => (0usize..1000, 1usize..12000).prop_map(|(i, s)| Op::Realloc(i, s)),
    ]
}

struct Live {
    ptr: NonNull<u8>,
    size: usize,
    fill: u8,
}

fn check_contents(live: &Live) -> bool {
    // SAFETY: `live` describes an allocation of at least `size` bytes.
    let bytes = unsafe { std::slice::from_raw_parts(live.ptr.as_ptr(), live.size) };
    bytes.iter().all(|&b| b == live.fill)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn allocations_never_overlap_are_aligned_and_realloc_keeps_contents(
        ops in proptest::collection::vec(op(), 1..150)
    ) {
        let pool = any_pool(32 * MIB);
        let fullest = fullest_colors(&pool, 6);
        let color_sets: [&[u32]; 3] = [&fullest[0..1], &fullest[1..3], &fullest[3..6]];
        let mut live: Vec<Live> = Vec::new();
        let mut fill = 0u8;
        for op in ops {
            match op {
                Op::Alloc { size, align_shift, colors } => {
                    let align = 1usize << align_shift;
                    let ptr = pool.alloc(color_sets[usize::from(colors)], size, align).unwrap();
                    prop_assert_eq!(ptr.as_ptr() as usize % align.max(16), 0, "alignment {}", align);
                    prop_assert!(pool.usable_size(ptr).unwrap() >= size);
                    fill = fill.wrapping_add(1);
                    // SAFETY: fresh allocation of at least `size` bytes.
                    unsafe { ptr.as_ptr().write_bytes(fill, size) };
                    live.push(Live { ptr, size, fill });
                }
                Op::Free(index) if !live.is_empty() => {
                    let victim = live.swap_remove(index % live.len());
                    prop_assert!(check_contents(&victim), "contents changed before free");
                    pool.free(victim.ptr).unwrap();
                }
                Op::Realloc(index, size) if !live.is_empty() => {
                    let index = index % live.len();
                    prop_assert!(check_contents(&live[index]));
                    let ptr = pool.realloc(live[index].ptr, size).unwrap();
                    let kept = live[index].size.min(size);
                    let old_fill = live[index].fill;
                    live[index] = Live { ptr, size: kept, fill: old_fill };
                    prop_assert!(check_contents(&live[index]), "realloc lost contents");
                    fill = fill.wrapping_add(1);
                    // SAFETY: `ptr` now holds at least `size` bytes.
                    unsafe { ptr.as_ptr().write_bytes(fill, size) };
                    live[index] = Live { ptr, size, fill };
                }
                _ => {}
            }
            let mut ranges: Vec<(usize, usize)> = live
                .iter()
                .map(|l| (l.ptr.as_ptr() as usize, l.ptr.as_ptr() as usize + l.size))
                .collect();
            ranges.sort_unstable();
            for pair in ranges.windows(2) {
                prop_assert!(pair[0].1 <= pair[1].0, "overlap {:x?} {:x?}", pair[0], pair[1]);
            }
        }
        for victim in live {
            prop_assert!(check_contents(&victim));
            pool.free(victim.ptr).unwrap();
        }
    }
}

#[test]
fn bank_spans_follow_algorithm1_page_by_page() {
    if !privileged_or_skip("checking bank-aware spans through pagemap") {
        return;
    }
    use tinct_mem::{AddressMapping, Modes, XorFunctions};
    // 4 banks (bits 14-15) in 2 controllers (bit 16).
    let mapping = AddressMapping::new(
        page_size() as u64,
        XorFunctions::from_bits(&[12, 13]).unwrap(),
        XorFunctions::from_bits(&[14, 15]).unwrap(),
        XorFunctions::from_bits(&[16]).unwrap(),
    )
    .unwrap();
    let pool = SharedPool::new(mapping.clone(), PoolOptions::new(8 * MIB)).unwrap();
    let pagemap = Pagemap::open_self().unwrap();
    let classes = |ptr: NonNull<u8>, pages: usize| -> Vec<(u32, u32)> {
        (0..pages)
            .map(|i| {
                let address = ptr.as_ptr() as usize + i * page_size();
                let class = mapping.classify(pagemap.physical_address(address).unwrap().unwrap());
                (class.controller, class.bank)
            })
            .collect()
    };
    // The (controller, bank) with the most free pages.
    let fullest = pool
        .stats()
        .banks
        .into_iter()
        .max_by_key(|b| b.free)
        .unwrap();
    let (ctrl, bank) = (fullest.controller, fullest.bank);
    let other_banks_free: u64 = pool
        .stats()
        .banks
        .iter()
        .filter(|b| b.controller == ctrl && b.bank != bank)
        .map(|b| b.free)
        .sum();
    assert!(
        fullest.free >= 20 && other_banks_free >= 3,
        "{:?}",
        pool.stats().banks
    );
    let span = pool
        .alloc_bank_span(ctrl, bank, 10 * page_size(), Modes::EXACT)
        .unwrap();
    assert_eq!((span.pages, span.steps.exact), (10, 10));
    // SAFETY: the span holds 10 pages.
    unsafe { span.ptr.as_ptr().write_bytes(9, 10 * page_size()) };
    assert!(classes(span.ptr, 10).iter().all(|&c| c == (ctrl, bank)));
    assert!(
        pool.realloc(span.ptr, 20).is_err(),
        "bank spans cannot be realloced"
    );

    // More pages than the bank holds: EXACT fails and takes nothing.
    let in_bank = pool
        .stats()
        .banks
        .iter()
        .find(|b| (b.controller, b.bank) == (ctrl, bank))
        .unwrap()
        .free as usize;
    let used = pool.stats().total.used;
    let too_many = (in_bank + 3) * page_size();
    assert!(
        pool.alloc_bank_span(ctrl, bank, too_many, Modes::EXACT)
            .is_err()
    );
    assert_eq!(
        pool.stats().total.used,
        used,
        "a failed request takes nothing"
    );
    // CONTROLLER_RESTRICTED: the rest comes from other banks of the controller.
    let wide = pool
        .alloc_bank_span(ctrl, bank, too_many, Modes::CONTROLLER_RESTRICTED)
        .unwrap();
    assert_eq!(wide.steps.exact, in_bank);
    assert_eq!(wide.steps.controller_restricted, 3);
    let got = classes(wide.ptr, wide.pages);
    assert!(
        got.iter().all(|&(controller, _)| controller == ctrl),
        "{got:?}"
    );
    assert_eq!(got.iter().filter(|&&c| c == (ctrl, bank)).count(), in_bank);
    pool.free(wide.ptr).unwrap();
    pool.free(span.ptr).unwrap();
    assert_eq!(pool.stats().total.used, 0);
}

#[test]
fn colored_buffers_are_safe_zeroed_slices_freed_on_drop() {
    let pool = any_pool(8 * MIB);
    let colors = fullest_colors(&pool, 2);
    let len = 5 * page_size() + 24;
    {
        let mut buffer = pool.buffer(&colors, len).unwrap();
        assert_eq!(buffer.len(), len);
        assert!(buffer.iter().all(|&b| b == 0), "zero-filled");
        buffer[len - 1] = 7;
        let words = buffer.words();
        assert_eq!(words.len(), len / 8);
        words[0] = u64::MAX;
        assert_eq!(buffer[0], 0xFF);
        assert_eq!(buffer[len - 1], 7);
        assert!(pool.stats().total.used >= 6);
        // A second buffer reuses nothing of the first.
        let other = pool.buffer(&colors, 100).unwrap();
        let (a, b) = (buffer.as_ptr() as usize, other.as_ptr() as usize);
        assert!(b + 100 <= a || a + len <= b);
    }
    // Dropping frees: whole pages and spans return to the pool (the page
    // carved for the 100-byte size class stays with its class).
    assert_eq!(pool.stats().total.used, 1);
    if privileged_or_skip("checking buffer colors through pagemap") {
        let colored = colored_pool(8 * MIB);
        let colors = fullest_colors(&colored, 2);
        let buffer = colored.buffer(&colors, 9 * page_size()).unwrap();
        let ptr = NonNull::new(buffer.as_ptr().cast_mut()).unwrap();
        for color in colors_now(&colored, ptr, buffer.len()) {
            assert!(colors.contains(&color), "color {color} not in {colors:?}");
        }
    }
}
