//! What `CLFLUSH` costs a job, measured side by side in one run: a pass
//! over a 256 KiB buffer (one load per cache line) while it is cached, and
//! the same pass right after `flush_from_caches` (timed without the flush),
//! so every line comes from memory; and the flush of the cached buffer. The ratio of the
//! two pass medians is what `tinct bench wcet-profile --conditions cold`
//! adds to a job.
//!
//! Run: `cargo bench -p tinct-sys --bench cache_flush -- --warm-up-time 1 --measurement-time 3`
// criterion_main! defines an undocumented `pub fn main`.
#![allow(missing_docs)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tinct_sys::cache_flush::{FLUSH_STRIDE, flush_from_caches};

/// Fits the L2 of every machine here: a warm pass hits.
const BYTES: usize = 256 << 10;

/// One load per cache line of `words`.
fn pass(words: &[u64]) -> u64 {
    words
        .chunks(FLUSH_STRIDE / 8)
        .fold(0u64, |sum, line| sum.wrapping_add(line[0]))
}

fn bench_cache_flush(c: &mut Criterion) {
    let words: Vec<u64> = (0..(BYTES / 8) as u64).collect();
    let mut group = c.benchmark_group("pass_256KiB");
    group.throughput(Throughput::Bytes(BYTES as u64));
    group.bench_function("warm", |b| {
        black_box(pass(&words));
        b.iter(|| black_box(pass(black_box(&words))))
    });
    group.bench_function("after_flush", |b| {
        b.iter_custom(|iterations| {
            let mut passes = Duration::ZERO;
            for _ in 0..iterations {
                flush_from_caches(&words).unwrap();
                let start = Instant::now();
                black_box(pass(black_box(&words)));
                passes += start.elapsed();
            }
            passes
        })
    });
    group.bench_function("flush_warm", |b| {
        b.iter_custom(|iterations| {
            let mut flushes = Duration::ZERO;
            for _ in 0..iterations {
                black_box(pass(black_box(&words)));
                let start = Instant::now();
                flush_from_caches(black_box(&words)).unwrap();
                flushes += start.elapsed();
            }
            flushes
        })
    });
    group.finish();
}

criterion_group!(benches, bench_cache_flush);
criterion_main!(benches);
