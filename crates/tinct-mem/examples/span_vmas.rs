//! How many kernel mappings (VMAs) a multi-page span costs while it lives,
//! in the worst case (its pages are every other page of the pool), and
//! that they are gone after it is freed.
//!
//! `cargo run -p tinct-mem --example span_vmas -- 16` (span size in MiB).

use tinct_mem::mapping::LayoutSpec;
use tinct_mem::{PoolOptions, SharedPool, machine_mapping};

fn mappings() -> usize {
    std::fs::read_to_string("/proc/self/maps").map_or(0, |maps| maps.lines().count())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mib: usize = std::env::args().nth(1).map_or(Ok(16), |a| a.parse())?;
    // One color, so the test controls which pages the span gets.
    let spec = LayoutSpec {
        color_bits: Some(vec![]),
        ..LayoutSpec::default()
    };
    let options = PoolOptions {
        uncolored: true,
        ..PoolOptions::new(2 * (mib << 20))
    };
    let pool = SharedPool::new(machine_mapping(&spec)?, options)?;
    let pages = (mib << 20) / pool.page_size();
    // Take every page, give back every other one: the span reuses those
    // freed pages first (kim2013 footnote 5), so no two are adjacent.
    let all = pool.alloc_pages(&[0], 2 * pages)?;
    for page in all.iter().step_by(2) {
        pool.free_page(*page)?;
    }
    let before = mappings();
    let span = pool.alloc(&[0], pages * pool.page_size(), 16)?;
    let during = mappings();
    pool.free(span)?;
    let after = mappings();
    println!(
        "span of {pages} scattered pages: {before} mappings before, {during} while it lives \
         ({:.2} per page), {after} after free (vm.max_map_count: {})",
        (during - before) as f64 / pages as f64,
        std::fs::read_to_string("/proc/sys/vm/max_map_count")?.trim()
    );
    Ok(())
}
