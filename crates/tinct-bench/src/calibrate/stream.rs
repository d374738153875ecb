//! The partition refill pass of Δ (kim2013 Section IV-B, footnote 7); the
//! bandwidth's read and write passes are [`crate::harness::memory_pass`]'s.

use super::chase::LINE_BYTES;
use crate::pinned_threads::nanos;
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use std::time::Instant;

const WORDS_PER_LINE: usize = LINE_BYTES / 8;

/// A cache partition's worth of memory laid out as page coloring lays it
/// out: whole pages scattered in physical memory. The refill pass reads one
/// word of every line, page by page in a random page order, lines of a page
/// in address order (a prefetcher may stream within a page, never across).
#[derive(Debug)]
pub struct PartitionBuffer {
    words: Vec<u64>,
    page_order: Vec<usize>,
    lines_per_page: usize,
}

impl PartitionBuffer {
    /// `bytes` (rounded up to whole pages of `page_bytes`), page order shuffled by `seed`.
    pub fn new(bytes: usize, page_bytes: usize, seed: u64) -> Self {
        let lines_per_page = (page_bytes / LINE_BYTES).max(1);
        let pages = bytes.div_ceil(lines_per_page * LINE_BYTES).max(1);
        let words: Vec<u64> = (0..pages * lines_per_page * WORDS_PER_LINE)
            .map(|i| i as u64)
            .collect();
        let mut page_order: Vec<usize> = (0..pages).collect();
        page_order.shuffle(&mut ChaCha8Rng::seed_from_u64(seed));
        Self {
            words,
            page_order,
            lines_per_page,
        }
    }

    /// Bytes in the buffer.
    pub fn bytes(&self) -> usize {
        self.words.len() * 8
    }

    /// One refill pass; returns the elapsed nanoseconds.
    pub fn pass(&self) -> u64 {
        let page_words = self.lines_per_page * WORDS_PER_LINE;
        let start = Instant::now();
        let mut sum = 0u64;
        for &page in &self.page_order {
            let base = page * page_words;
            for line in 0..self.lines_per_page {
                sum = sum.wrapping_add(self.words[base + line * WORDS_PER_LINE]);
            }
        }
        let elapsed = nanos(start.elapsed());
        std::hint::black_box(sum);
        elapsed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_buffer_is_whole_pages_and_every_page_is_visited() {
        let buffer = PartitionBuffer::new(10_000, 4096, 1);
        assert_eq!(buffer.bytes(), 3 * 4096);
        let mut order = buffer.page_order.clone();
        order.sort();
        assert_eq!(order, vec![0, 1, 2]);
        buffer.pass();
    }
}
