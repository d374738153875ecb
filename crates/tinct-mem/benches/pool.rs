//! tinct-mem benchmarks.
//!
//! * `page/alloc_free_pair`: one colored page allocated and freed
//!   (single thread), the core operation of the pool.
//! * `page/alloc_colored_64_then_free`: a 64-page round-robin request over
//!   4 colors and its release.
//! * `setup/*`: building a pool (mmap, MADV_NOHUGEPAGE, populate, one
//!   pagemap read, filing) next to a plain mmap + touch of the same size,
//!   in the same run; compare the two medians. `setup/pagemap_read` is
//!   the translation alone (one pread of the pool's pagemap entries).
//! * `bytes/*`: the byte allocator's small alloc+free pair next to the
//!   system allocator's.
//! * `spans/*`: a 16 MiB multi-page allocation built and freed over
//!   consecutive colors (pages move in runs) and over every other color
//!   (no two pages adjacent: one run per page, the worst case); and a
//!   block grown by doubling from 1 to 32 MiB with `realloc` (in place or
//!   by moving runs, no copy) next to alloc + copy + free (what realloc
//!   did before).
//!
//! Run: `cargo bench -p tinct-mem --bench pool -- --warm-up-time 1 --measurement-time 3`
//! (page numbers need root; without it the pool runs uncolored).
// criterion_main! defines an undocumented `pub fn main`.
#![allow(missing_docs)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group};
use rustix::mm::{self, MapFlags, ProtFlags};
use tinct_mem::mapping::LayoutSpec;
use tinct_mem::{ColorCursor, Pool, PoolOptions, SharedPool, machine_mapping};
use tinct_sys::pagemap::Pagemap;

const MIB: usize = 1 << 20;

/// This machine's colours (`TINCT_COLOR_BITS`, else the derived rule);
/// `None`, with a line saying why, where neither gives them.
fn machine_colours() -> Option<tinct_mem::AddressMapping> {
    match machine_mapping(&LayoutSpec::default()) {
        Ok(mapping) => Some(mapping),
        Err(e) => {
            eprintln!("pool bench skipped: {e}");
            None
        }
    }
}

fn options(size: usize) -> PoolOptions {
    PoolOptions {
        uncolored: true,
        ..PoolOptions::new(size)
    }
}

fn page_ops(c: &mut Criterion) {
    let Some(mapping) = machine_colours() else {
        return;
    };
    let mut pool = Pool::new(mapping, options(64 * MIB)).unwrap();
    let mut group = c.benchmark_group("page");
    group.throughput(Throughput::Elements(1));
    let mut color = 0u32;
    let colors = pool.mapping().colors();
    group.bench_function("alloc_free_pair", |b| {
        b.iter(|| {
            color = (color + 1) % colors;
            let page = pool.alloc_page(black_box(color)).unwrap();
            pool.free(black_box(page)).unwrap();
        })
    });
    group.throughput(Throughput::Elements(64));
    let mut cursor = ColorCursor::new(&[1, 2, 3, 4]).unwrap();
    let mut pages = Vec::with_capacity(64);
    group.bench_function("alloc_colored_64_then_free", |b| {
        b.iter(|| {
            pool.alloc_colored(&mut cursor, 64, &mut pages).unwrap();
            for page in pages.drain(..) {
                pool.free(page).unwrap();
            }
        })
    });
    group.finish();
}

/// Plain baseline: mmap, touch every page, munmap.
fn mmap_and_touch(len: usize) {
    let page = rustix::param::page_size();
    // SAFETY: a fresh private anonymous mapping aliases nothing.
    let raw = unsafe {
        mm::mmap_anonymous(
            std::ptr::null_mut(),
            len,
            ProtFlags::READ | ProtFlags::WRITE,
            MapFlags::PRIVATE,
        )
    }
    .unwrap();
    for offset in (0..len).step_by(page) {
        // SAFETY: `offset < len` inside the writable mapping created above.
        unsafe { raw.cast::<u8>().add(offset).write_volatile(1) };
    }
    // SAFETY: unmapping the mapping created above, no references remain.
    unsafe { mm::munmap(raw, len) }.unwrap();
}

fn setup(c: &mut Criterion) {
    let Some(mapping) = machine_colours() else {
        return;
    };
    let mut group = c.benchmark_group("setup");
    group.sample_size(20);
    for mib in [64usize, 256] {
        let len = mib * MIB;
        group.throughput(Throughput::Bytes(len as u64));
        group.bench_with_input(BenchmarkId::new("mmap_touch", mib), &len, |b, &len| {
            b.iter(|| mmap_and_touch(len))
        });
        group.bench_with_input(BenchmarkId::new("pool", mib), &len, |b, &len| {
            b.iter(|| drop(black_box(Pool::new(mapping.clone(), options(len)).unwrap())))
        });
        // The translation alone: one pread of the pool's pagemap entries.
        let pool = Pool::new(mapping.clone(), options(len)).unwrap();
        let pagemap = Pagemap::open_self().unwrap();
        group.bench_with_input(BenchmarkId::new("pagemap_read", mib), &len, |b, _| {
            b.iter(|| {
                black_box(
                    pagemap
                        .entries(pool.start() as usize, pool.pages())
                        .unwrap(),
                )
            })
        });
    }
    group.finish();
}

fn bytes(c: &mut Criterion) {
    let Some(mapping) = machine_colours() else {
        return;
    };
    let pool = SharedPool::new(mapping, options(64 * MIB)).unwrap();
    let colors = [7u32];
    let mut group = c.benchmark_group("bytes");
    group.throughput(Throughput::Elements(1));
    group.bench_function("tinct_64B_alloc_free", |b| {
        b.iter(|| {
            let ptr = pool.alloc(&colors, black_box(64), 16).unwrap();
            pool.free(black_box(ptr)).unwrap();
        })
    });
    group.bench_function("system_64B_alloc_free", |b| {
        b.iter(|| drop(black_box(Box::new(black_box([0u8; 64])))))
    });
    group.finish();
}

fn spans(c: &mut Criterion) {
    let Some(mapping) = machine_colours() else {
        return;
    };
    let colors = mapping.colors();
    let pool = SharedPool::new(mapping, options(256 * MIB)).unwrap();
    let consecutive: Vec<u32> = (0..colors / 2).collect();
    let every_other: Vec<u32> = (0..colors).step_by(2).collect();
    let mut group = c.benchmark_group("spans");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(16 * MIB as u64));
    for (name, set) in [
        ("alloc_free_16MiB_consecutive_colors", &consecutive),
        ("alloc_free_16MiB_every_other_color", &every_other),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| {
                let ptr = pool.alloc(set, black_box(16 * MIB), 16).unwrap();
                pool.free(black_box(ptr)).unwrap();
            })
        });
    }
    group.throughput(Throughput::Bytes(32 * MIB as u64));
    group.bench_function("realloc_grow_1_to_32MiB", |b| {
        b.iter(|| {
            let mut ptr = pool.alloc(&consecutive, MIB, 16).unwrap();
            for size in [2, 4, 8, 16, 32] {
                ptr = pool.realloc(ptr, black_box(size * MIB)).unwrap();
            }
            pool.free(ptr).unwrap();
        })
    });
    group.bench_function("alloc_copy_free_grow_1_to_32MiB", |b| {
        b.iter(|| {
            let mut ptr = pool.alloc(&consecutive, MIB, 16).unwrap();
            let mut old = MIB;
            for size in [2, 4, 8, 16, 32] {
                let fresh = pool.alloc(&consecutive, size * MIB, 16).unwrap();
                // SAFETY: two distinct live allocations of `old` and
                // `size` MiB.
                unsafe { std::ptr::copy_nonoverlapping(ptr.as_ptr(), fresh.as_ptr(), old) };
                pool.free(ptr).unwrap();
                (ptr, old) = (fresh, size * MIB);
            }
            pool.free(ptr).unwrap();
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = page_ops, setup, bytes, spans
}
/// Pool setup vs plain mmap + touch, alternated run by run so that load
/// changes on a shared machine hit both sides alike; prints the median
/// ratio (criterion measures the two one after the other).
fn paired_setup_ratio() {
    let Some(mapping) = machine_colours() else {
        return;
    };
    for mib in [64usize, 256] {
        let len = mib * MIB;
        let mut ratios = Vec::new();
        let (mut plain, mut pooled) = (Vec::new(), Vec::new());
        for _ in 0..11 {
            let start = Instant::now();
            mmap_and_touch(len);
            let a = start.elapsed();
            let start = Instant::now();
            drop(black_box(Pool::new(mapping.clone(), options(len)).unwrap()));
            let b = start.elapsed();
            ratios.push(b.as_secs_f64() / a.as_secs_f64());
            plain.push(a);
            pooled.push(b);
        }
        ratios.sort_by(f64::total_cmp);
        plain.sort();
        pooled.sort();
        let gib_s = |d: Duration| len as f64 / d.as_secs_f64() / f64::from(1u32 << 30);
        println!(
            "setup/paired/{mib}: mmap+touch median {:.1} ms ({:.2} GiB/s), pool median {:.1} ms \
             ({:.2} GiB/s), median ratio pool/plain {:.2} over 11 alternated runs",
            plain[5].as_secs_f64() * 1e3,
            gib_s(plain[5]),
            pooled[5].as_secs_f64() * 1e3,
            gib_s(pooled[5]),
            ratios[5]
        );
    }
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --all-targets` runs each
    // criterion benchmark once as a smoke test and skips the paired runs.
    if std::env::args().any(|arg| arg == "--bench") {
        paired_setup_ratio();
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
