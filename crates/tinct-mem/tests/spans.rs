//! Multi-page spans move their pages in runs: pages that are consecutive
//! in the pool move with one mremap and cost O(runs) kernel mappings, not
//! O(pages); realloc grows and shrinks spans in place (or moves their
//! pages without copying) and keeps contents and colors.
//!
//! The tests count the lines of /proc/self/maps that fall in the pool, one
//! test at a time (a lock), in this binary of their own.

use std::ptr::NonNull;

use tinct_mem::mapping::LayoutSpec;
use tinct_mem::{Pool, PoolOptions, SharedPool, UsedPage, machine_mapping};
use tinct_sys::pagemap::Pagemap;
use tinct_sys::testing::{privileged_serial, serial};

/// Kernel mappings (lines of /proc/self/maps) that start inside the
/// pool's region or span window: other threads of the test harness map
/// stacks and malloc arenas at any time, so only the pool's own are
/// counted.
fn mappings(pool: &SharedPool) -> usize {
    std::fs::read_to_string("/proc/self/maps")
        .unwrap()
        .lines()
        .filter_map(|line| line.split('-').next())
        .filter_map(|start| usize::from_str_radix(start, 16).ok())
        .filter(|&start| pool.owns(start))
        .count()
}

/// 16 colors (bits 12-15).
fn mapping() -> tinct_mem::AddressMapping {
    let spec = LayoutSpec {
        color_bits: Some(vec![12, 13, 14, 15]),
        ..LayoutSpec::default()
    };
    machine_mapping(&spec).unwrap()
}

/// A pool filed by *virtual* page number: page `i + 1` has the color
/// after page `i`'s, exactly as physically contiguous frames would. Runs
/// with or without root.
fn virtual_pool(size: usize) -> SharedPool {
    let pool = Pool::with_virtual_frames(mapping(), PoolOptions::new(size)).unwrap();
    assert!(pool.is_uncolored());
    SharedPool::from_pool(pool).unwrap()
}

/// Pages of `[ptr, ptr + len)`, in address order.
fn span_pages(pool: &SharedPool, ptr: NonNull<u8>, len: usize) -> Vec<UsedPage> {
    let start = ptr.as_ptr() as usize;
    pool.used_pages()
        .into_iter()
        .filter(|page| (start..start + len).contains(&page.address))
        .collect()
}

/// Runs of consecutive pool pages.
fn runs(pages: &[UsedPage]) -> usize {
    pages.len()
        - pages
            .windows(2)
            .filter(|w| w[1].page.0 == w[0].page.0 + 1)
            .count()
}

fn fill(ptr: NonNull<u8>, len: usize, seed: u8) {
    // SAFETY: the test owns `len` bytes at `ptr`.
    let bytes = unsafe { std::slice::from_raw_parts_mut(ptr.as_ptr(), len) };
    for (i, byte) in bytes.iter_mut().enumerate() {
        *byte = (i as u8).wrapping_mul(31).wrapping_add(seed);
    }
}

fn holds(ptr: NonNull<u8>, len: usize, seed: u8) -> bool {
    // SAFETY: the test owns at least `len` bytes at `ptr`.
    let bytes = unsafe { std::slice::from_raw_parts(ptr.as_ptr(), len) };
    bytes
        .iter()
        .enumerate()
        .all(|(i, &byte)| byte == (i as u8).wrapping_mul(31).wrapping_add(seed))
}

#[test]
fn a_span_over_consecutive_colors_is_one_run_and_costs_few_mappings() {
    let _serial = serial();
    let pool = virtual_pool(16 << 20);
    let page = pool.page_size();
    let colors: Vec<u32> = (0..16).collect();
    let pages = 1024;
    let before = mappings(&pool);
    let span = pool.alloc(&colors, pages * page, 16).unwrap();
    let during = mappings(&pool);
    let listed = span_pages(&pool, span, pages * page);
    assert_eq!(listed.len(), pages);
    // Equal shares per color (kim2013 III-C), and in rotation order.
    for (i, used) in listed.iter().enumerate() {
        assert_eq!(used.class.color, colors[i % 16], "page {i}");
    }
    assert_eq!(runs(&listed), 1, "consecutive colors should give one run");
    assert_eq!(pool.span_runs(), 1);
    assert!(
        during - before <= 3,
        "{} new mappings for one run of {pages} pages",
        during - before
    );
    fill(span, pages * page, 7);
    pool.free(span).unwrap();
    assert_eq!(pool.span_runs(), 0);
    assert!(mappings(&pool) <= before + 1, "mappings left after free");
}

#[test]
fn scattered_pages_cost_one_run_each_and_runs_bound_the_mappings() {
    let _serial = serial();
    let pool = virtual_pool(8 << 20);
    let page = pool.page_size();
    // One color set of all 16 colors; take 512 pages and give back every
    // other one, so the span reuses freed pages that are never adjacent.
    let colors: Vec<u32> = (0..16).collect();
    let all = pool.alloc_pages(&colors, 512).unwrap();
    let mut freed: Vec<_> = all.iter().copied().filter(|p| p.0 % 2 == 0).collect();
    freed.sort();
    for &p in &freed {
        pool.free_page(p).unwrap();
    }
    let before = mappings(&pool);
    // 8 colors' worth of even pages: colors 0, 2, ..., 14.
    let even: Vec<u32> = (0..16).step_by(2).collect();
    let span = pool.alloc(&even, 64 * page, 16).unwrap();
    let during = mappings(&pool);
    let listed = span_pages(&pool, span, 64 * page);
    assert_eq!(runs(&listed), 64);
    assert_eq!(pool.span_runs(), 64);
    let added = during - before;
    assert!(
        (64..=3 * 64).contains(&added),
        "{added} mappings for 64 runs: expected between 1 and 3 per run"
    );
    pool.free(span).unwrap();
    assert_eq!(pool.span_runs(), 0);
}

#[test]
fn realloc_grows_and_shrinks_spans_in_place_or_by_moving_runs_keeping_contents() {
    let _serial = serial();
    let pool = virtual_pool(16 << 20);
    let page = pool.page_size();
    let colors: Vec<u32> = (0..16).collect();
    let before = mappings(&pool);
    let span = pool.alloc(&colors, 40 * page, 16).unwrap();
    fill(span, 40 * page, 1);
    // Nothing after it in the window: grows in place, continuing the run.
    let grown = pool.realloc(span, 100 * page).unwrap();
    assert_eq!(grown, span, "room after the span: grown in place");
    assert!(holds(grown, 40 * page, 1));
    let listed = span_pages(&pool, grown, 100 * page);
    assert_eq!(listed.len(), 100);
    assert_eq!(runs(&listed), 1, "growth continues the run");
    assert_eq!(pool.span_runs(), 1);
    for (i, used) in listed.iter().enumerate() {
        assert_eq!(used.class.color, colors[i % 16]);
    }
    // A span right after it blocks growth in place: the pages move (no
    // copy) to a place with room, keeping contents and colors.
    let blocker = pool.alloc(&colors, 8 * page, 16).unwrap();
    assert_eq!(
        blocker.as_ptr() as usize,
        grown.as_ptr() as usize + 100 * page
    );
    fill(grown, 100 * page, 2);
    let moved = pool.realloc(grown, 300 * page).unwrap();
    assert_ne!(moved, grown);
    assert!(holds(moved, 100 * page, 2));
    let listed = span_pages(&pool, moved, 300 * page);
    assert_eq!(listed.len(), 300);
    for (i, used) in listed.iter().enumerate() {
        // The blocker's 8 pages advanced the arena's rotation.
        let rotation = if i < 100 { i } else { i + 8 };
        assert_eq!(used.class.color, colors[rotation % 16], "page {i}");
    }
    assert!(
        span_pages(&pool, grown, 100 * page).is_empty(),
        "old place empty"
    );
    assert_eq!(pool.span_runs(), runs(&listed) + 1);
    // Shrinking below half keeps the pointer and returns the tail pages.
    let used_before = pool.stats().total.used;
    let shrunk = pool.realloc(moved, 20 * page).unwrap();
    assert_eq!(shrunk, moved);
    assert!(holds(shrunk, 20 * page, 2));
    assert_eq!(pool.stats().total.used, used_before - 280);
    assert_eq!(pool.usable_size(shrunk).unwrap(), 20 * page);
    pool.free(shrunk).unwrap();
    pool.free(blocker).unwrap();
    assert_eq!(pool.span_runs(), 0);
    assert_eq!(pool.stats().total.used, 0);
    assert!(mappings(&pool) <= before + 1, "mappings left after free");
}

#[test]
fn colored_spans_over_consecutive_colors_use_runs_and_keep_their_colors() {
    let Some(_serial) = privileged_serial("reading frame numbers through pagemap") else {
        return;
    };
    // The machine's LLC colors; a quarter of them, consecutive.
    let mapping = machine_mapping(&LayoutSpec {
        color_bits: Some(tinct_sys::testing::mechanism_color_bits()),
        ..LayoutSpec::default()
    })
    .unwrap();
    let quarter = mapping.colors() / 4;
    let colors: Vec<u32> = (0..quarter).collect();
    let pool = SharedPool::new(mapping, PoolOptions::new(64 << 20)).unwrap();
    let page = pool.page_size();
    let pages = 4 * quarter as usize;
    let before = mappings(&pool);
    let span = pool.alloc(&colors, pages * page, 16).unwrap();
    let during = mappings(&pool);
    let listed = span_pages(&pool, span, pages * page);
    assert_eq!(listed.len(), pages);
    let span_runs = runs(&listed);
    assert_eq!(pool.span_runs(), span_runs);
    assert!(
        during - before <= 3 * span_runs,
        "{} mappings for {span_runs} runs",
        during - before
    );
    // Every page re-translated now lies in its color, in rotation order.
    let pagemap = Pagemap::open_self().unwrap();
    let check = |ptr: NonNull<u8>, count: usize| {
        for i in 0..count {
            let address = ptr.as_ptr() as usize + i * page;
            let physical = pagemap.physical_address(address).unwrap().expect("present");
            let color = pool.mapping().classify(physical).color;
            assert_eq!(color, colors[i % colors.len()], "page {i} of {count}");
        }
    };
    check(span, pages);
    fill(span, pages * page, 9);
    let grown = pool.realloc(span, 2 * pages * page).unwrap();
    assert!(holds(grown, pages * page, 9));
    check(grown, 2 * pages);
    eprintln!(
        "colors 0-{}: {} pages in {span_runs} runs, {} runs after growing to {} pages",
        quarter - 1,
        pages,
        pool.span_runs(),
        2 * pages
    );
    pool.free(grown).unwrap();
    assert_eq!(pool.span_runs(), 0);
}
