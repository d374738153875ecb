//! How many kernel mappings (VMAs) a multi-page span costs while it lives,
//! and that they are gone after it is freed, in two cases:
//!
//! * *scattered*: the span's pages are every other page of the pool (the
//!   worst case: no two are virtually adjacent, one run per page);
//! * *consecutive colors*: a request for colors `0..k` on a real colored
//!   pool (needs root), where physically contiguous frames give
//!   virtually contiguous runs that move with one `mremap` each.
//!
//! `cargo run -p tinct-mem --example span_vmas -- 16` (span size in MiB).

use std::time::Instant;

use tinct_mem::mapping::LayoutSpec;
use tinct_mem::{PoolOptions, SharedPool, machine_mapping};

fn mappings() -> usize {
    std::fs::read_to_string("/proc/self/maps").map_or(0, |maps| maps.lines().count())
}

/// Allocates and frees a span of `bytes` on `colors`, printing mappings
/// before, during and after, and the time to build and free it.
fn measure(label: &str, pool: &SharedPool, colors: &[u32], bytes: usize) -> Result<(), String> {
    let pages = bytes / pool.page_size();
    let before = mappings();
    let started = Instant::now();
    let span = pool
        .alloc(colors, bytes, 16)
        .map_err(|e| format!("{label}: {e}"))?;
    let built = started.elapsed();
    let during = mappings();
    let runs = pool.span_runs();
    let started = Instant::now();
    pool.free(span).map_err(|e| format!("{label}: {e}"))?;
    let freed = started.elapsed();
    let after = mappings();
    println!(
        "{label}: span of {pages} pages in {runs} runs: {before} mappings before, {during} while \
         it lives ({:.3} per page, {:.2} per run), {after} after free; built in {:.2} ms, freed in \
         {:.2} ms",
        (during - before) as f64 / pages as f64,
        (during - before) as f64 / runs.max(1) as f64,
        built.as_secs_f64() * 1e3,
        freed.as_secs_f64() * 1e3,
    );
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mib: usize = std::env::args().nth(1).map_or(Ok(16), |a| a.parse())?;
    let max_map_count = std::fs::read_to_string("/proc/sys/vm/max_map_count")?;
    println!("vm.max_map_count: {}", max_map_count.trim());

    // Scattered: one color, so the example controls which pages the span
    // gets. Take every page, give back every other one: the span reuses
    // those freed pages first (kim2013 footnote 5), so no two are adjacent.
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
    let all = pool.alloc_pages(&[0], 2 * pages)?;
    for page in all.iter().step_by(2) {
        pool.free_page(*page)?;
    }
    measure("scattered", &pool, &[0], mib << 20)?;
    drop(pool);

    // Consecutive colors on the machine's real color mapping.
    let mapping = machine_mapping(&LayoutSpec::default())?;
    let colors = mapping.colors();
    let half: Vec<u32> = (0..colors / 2).collect();
    match SharedPool::new(mapping, PoolOptions::new(4 * (mib << 20))) {
        Ok(pool) => measure(
            &format!("colors 0-{} of {colors} (physical frames)", colors / 2 - 1),
            &pool,
            &half,
            mib << 20,
        )?,
        Err(e) => println!("consecutive colors: skipped, no colored pool: {e}"),
    }
    Ok(())
}
