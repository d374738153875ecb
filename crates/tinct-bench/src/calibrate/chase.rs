//! Pointer chase over a cyclic permutation of cache lines: the
//! load-to-use latency probe (each load's address is the previous load's
//! value, so no two loads overlap and prefetchers cannot guess the next).
//!
//! Two layouts separate cache effects from TLB effects:
//! - [`Layout::RandomLines`]: lines in one random cycle over the whole
//!   buffer; beyond the TLB's reach almost every load also misses the TLB;
//! - [`Layout::PageLocal`]: pages in random order, and all lines of a page
//!   (in random order) before the next page: one TLB miss per page, so the
//!   latency is that of the cache level alone. The difference of the two is
//!   the TLB penalty at that size.
//!
//! A third variant keeps the random-line layout but puts the buffer in
//! transparent huge pages ([`ChaseBuffer::in_huge_pages`]): the cache
//! behaviour is the same as the 4 KiB random chase while a TLB entry covers
//! 512 times as much memory, so the 4 KiB minus huge-page latency is the
//! TLB effect measured the other way round.

use crate::pinned_threads::nanos;
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use std::ops::{Deref, DerefMut};
use std::time::Instant;
use tinct_sys::huge_buffer::HugePageBuffer;

/// Bytes of a cache line the chase steps over.
pub const LINE_BYTES: usize = 64;
const WORDS_PER_LINE: usize = LINE_BYTES / 8;

/// The order the lines are visited in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// One random cycle over every line.
    RandomLines,
    /// Pages of `page_bytes` in random order, lines within a page in random order.
    PageLocal {
        /// Page size in bytes (a multiple of [`LINE_BYTES`]).
        page_bytes: usize,
    },
}

/// Where a chase buffer's words live.
#[derive(Debug)]
enum Storage {
    /// The heap (base pages).
    Heap(Vec<u64>),
    /// Transparent huge pages.
    Huge(HugePageBuffer),
}

impl Deref for Storage {
    type Target = [u64];
    fn deref(&self) -> &[u64] {
        match self {
            Storage::Heap(words) => words,
            Storage::Huge(buffer) => buffer,
        }
    }
}

impl DerefMut for Storage {
    fn deref_mut(&mut self) -> &mut [u64] {
        match self {
            Storage::Heap(words) => words,
            Storage::Huge(buffer) => buffer,
        }
    }
}

/// A buffer whose lines are linked into one cycle.
#[derive(Debug)]
pub struct ChaseBuffer {
    words: Storage,
    lines: usize,
    position: usize,
}

impl ChaseBuffer {
    /// A buffer of `bytes` (rounded down to whole lines, at least one)
    /// linked in `layout`, shuffled with `seed`. Every page is written.
    pub fn new(bytes: usize, layout: Layout, seed: u64) -> Self {
        let lines = (bytes / LINE_BYTES).max(1);
        Self::linked(
            Storage::Heap(vec![0u64; lines * WORDS_PER_LINE]),
            lines,
            layout,
            seed,
        )
    }

    /// Like [`ChaseBuffer::new`], in memory that asked for transparent huge
    /// pages (whole huge pages, aligned). Returns the buffer and the bytes
    /// the kernel actually backed with huge pages (0 when THP is off or
    /// memory is too fragmented: then the chase is a 4 KiB one).
    pub fn in_huge_pages(bytes: usize, layout: Layout, seed: u64) -> crate::Result<(Self, u64)> {
        let lines = (bytes / LINE_BYTES).max(1);
        let buffer = HugePageBuffer::new(lines * LINE_BYTES)
            .map_err(|e| crate::Error::Measurement(format!("huge-page buffer: {e}")))?;
        let backed = buffer.huge_bytes().min((lines * LINE_BYTES) as u64);
        Ok((
            Self::linked(Storage::Huge(buffer), lines, layout, seed),
            backed,
        ))
    }

    fn linked(mut words: Storage, lines: usize, layout: Layout, seed: u64) -> Self {
        let order = visit_order(lines, layout, seed);
        for (k, &line) in order.iter().enumerate() {
            let next = order[(k + 1) % order.len()];
            words[line * WORDS_PER_LINE] = next as u64;
        }
        Self {
            words,
            lines,
            position: order[0],
        }
    }

    /// Lines in the cycle.
    pub fn lines(&self) -> usize {
        self.lines
    }

    /// Follows `steps` links; returns the elapsed nanoseconds.
    pub fn chase(&mut self, steps: u64) -> u64 {
        let words: &[u64] = &self.words;
        let mut line = self.position;
        let start = Instant::now();
        for _ in 0..steps {
            line = words[line * WORDS_PER_LINE] as usize;
        }
        let elapsed = nanos(start.elapsed());
        self.position = std::hint::black_box(line);
        elapsed
    }
}

/// The order in which `layout` visits `lines` lines (a permutation of `0..lines`).
pub fn visit_order(lines: usize, layout: Layout, seed: u64) -> Vec<usize> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    match layout {
        Layout::RandomLines => {
            let mut order: Vec<usize> = (0..lines).collect();
            order.shuffle(&mut rng);
            order
        }
        Layout::PageLocal { page_bytes } => {
            let per_page = (page_bytes / LINE_BYTES).max(1);
            let pages = lines.div_ceil(per_page);
            let mut page_order: Vec<usize> = (0..pages).collect();
            page_order.shuffle(&mut rng);
            let mut order = Vec::with_capacity(lines);
            let mut within: Vec<usize> = Vec::with_capacity(per_page);
            for page in page_order {
                within.clear();
                within.extend((page * per_page)..((page + 1) * per_page).min(lines));
                within.shuffle(&mut rng);
                order.extend_from_slice(&within);
            }
            order
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_permutation(order: &[usize], n: usize) -> bool {
        let mut seen = vec![false; n];
        order.len() == n
            && order
                .iter()
                .all(|&i| i < n && !std::mem::replace(&mut seen[i], true))
    }

    #[test]
    fn random_layout_is_one_cycle_over_all_lines() {
        let mut buffer = ChaseBuffer::new(64 * 1000, Layout::RandomLines, 3);
        assert_eq!(buffer.lines(), 1000);
        let start = buffer.position;
        let mut line = start;
        for step in 1..=1000 {
            line = buffer.words[line * WORDS_PER_LINE] as usize;
            if line == start {
                assert_eq!(step, 1000, "cycle closed early");
            }
        }
        assert_eq!(line, start);
        buffer.chase(10);
    }

    #[test]
    fn a_huge_page_buffer_links_the_same_cycle() {
        let (mut huge, backed) =
            ChaseBuffer::in_huge_pages(64 * 1000, Layout::RandomLines, 3).unwrap();
        let heap = ChaseBuffer::new(64 * 1000, Layout::RandomLines, 3);
        assert_eq!(huge.lines(), heap.lines());
        assert!(backed <= 64 * 1000);
        for line in 0..1000 {
            assert_eq!(
                huge.words[line * WORDS_PER_LINE],
                heap.words[line * WORDS_PER_LINE]
            );
        }
        huge.chase(2000);
        assert_eq!(
            huge.position, heap.position,
            "two laps end where they began"
        );
    }

    #[test]
    fn page_local_layout_finishes_a_page_before_the_next() {
        let order = visit_order(4096 / 64 * 5 + 3, Layout::PageLocal { page_bytes: 4096 }, 9);
        assert!(is_permutation(&order, 323));
        let pages: Vec<usize> = order.iter().map(|l| l / 64).collect();
        let changes = pages.windows(2).filter(|w| w[0] != w[1]).count();
        assert_eq!(changes, 5, "6 pages visited, each once: {pages:?}");
        let random = visit_order(323, Layout::RandomLines, 9);
        assert!(is_permutation(&random, 323));
        let changes = random.windows(2).filter(|w| w[0] / 64 != w[1] / 64).count();
        assert!(changes > 100);
    }
}
