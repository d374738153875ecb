//! Memory kernels of the banks bench, over memory given as page-sized chunks.
//!
//! STREAM-like kernels (McCalpin's copy, scale, add, triad, as used by
//! chandru-mueller Section 5 and Figure 5) on 64-bit integers, a
//! random-access kernel (read-modify-write of random words), an integer
//! sort after the NAS IS description (chandru-mueller Figure 4 and Table
//! 1), and the bubblesort of their composite benchmark (Mälardalen
//! `bsort`, Figures 6-9 and Table 2). Memory is a list of pages because
//! bank-aware pages are scattered over the buffer.
//!
//! *Integer sort.* Written from the NAS Parallel Benchmarks' description
//! of IS (Bailey et al., NAS RNR-91-002, and the NPB 2 report): keys
//! drawn as the mean of four uniform random numbers scaled to `[0, Bmax)`
//! (so their distribution is about Gaussian), then, per iteration, two
//! keys changed (`key[i] = i`, `key[i + 10] = Bmax - i`), every key
//! counted into a bucket array of `Bmax` counters, the counts prefix-summed
//! into ranks, and the ranks of a few keys read back (partial
//! verification). The keys live in arrays `a` and `b`, the counters in
//! `c`: a sequential read of the keys and scattered increments of the
//! counters, the memory-bound pattern IS is known for.

use crate::choice::{Choice, choice_text};
use serde::{Deserialize, Serialize};

/// Which kernel a run executes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kernel {
    /// `c[i] = a[i]`.
    Copy,
    /// `b[i] = s * c[i]`.
    Scale,
    /// `c[i] = a[i] + b[i]`.
    Add,
    /// `a[i] = b[i] + s * c[i]`.
    Triad,
    /// `t[r] ^= r` for pseudo-random word indices `r`.
    Random,
    /// NAS IS-style ranking of integer keys (see the module documentation).
    IntegerSort,
}

impl Kernel {
    /// Bytes moved per element (STREAM's counting: each array read or
    /// written counts once; random access reads and writes one word).
    pub fn bytes_per_element(self) -> u64 {
        match self {
            Kernel::Copy | Kernel::Scale | Kernel::Random => 16,
            Kernel::Add | Kernel::Triad => 24,
            // Each key read once, its counter read and written once.
            Kernel::IntegerSort => 24,
        }
    }
}

impl Choice for Kernel {
    /// Every kernel, in output order.
    const ALL: &'static [Self] = &[
        Kernel::Copy,
        Kernel::Scale,
        Kernel::Add,
        Kernel::Triad,
        Kernel::Random,
        Kernel::IntegerSort,
    ];

    fn doc(self) -> &'static str {
        match self {
            Kernel::Copy => "c[i] = a[i]",
            Kernel::Scale => "b[i] = s * c[i]",
            Kernel::Add => "c[i] = a[i] + b[i]",
            Kernel::Triad => "a[i] = b[i] + s * c[i]",
            Kernel::Random => "read-modify-write of random words",
            Kernel::IntegerSort => "NAS IS-style ranking of integer keys",
        }
    }
}
choice_text!(Kernel);

const SCALAR: u64 = 3;

/// One thread's memory: three equally long page lists for the STREAM arrays.
#[derive(Debug)]
pub struct Arrays<'a> {
    /// Array `a`.
    pub a: Vec<&'a mut [u64]>,
    /// Array `b`.
    pub b: Vec<&'a mut [u64]>,
    /// Array `c`.
    pub c: Vec<&'a mut [u64]>,
}

impl<'a> Arrays<'a> {
    /// Splits `pages` into three arrays of `pages.len() / 3` pages each
    /// (a leftover page or two are not used).
    pub fn from_pages(mut pages: Vec<&'a mut [u64]>) -> Self {
        let third = pages.len() / 3;
        pages.truncate(3 * third);
        let c = pages.split_off(2 * third);
        let b = pages.split_off(third);
        Self { a: pages, b, c }
    }

    /// Elements of one array.
    pub fn elements(&self) -> u64 {
        self.a.iter().map(|p| p.len() as u64).sum()
    }

    /// Elements touched by one pass of `kernel` (all pages for random
    /// access, the keys in `a` and `b` for the integer sort).
    pub fn elements_of(&self, kernel: Kernel) -> u64 {
        match kernel {
            Kernel::Random => 3 * self.elements(),
            Kernel::IntegerSort => 2 * self.elements(),
            _ => self.elements(),
        }
    }
}

/// Runs `passes` passes of `kernel` over `arrays` (random access does
/// `elements_of(Random)` updates per pass, seeded by `seed`). Returns a
/// value derived from the data so the work cannot be optimized away.
pub fn run(kernel: Kernel, arrays: &mut Arrays<'_>, passes: u64, seed: u64) -> u64 {
    let mut check = 0u64;
    for pass in 0..passes {
        match kernel {
            Kernel::Copy => {
                for (c, a) in arrays.c.iter_mut().zip(&arrays.a) {
                    c.copy_from_slice(a);
                }
            }
            Kernel::Scale => {
                for (b, c) in arrays.b.iter_mut().zip(&arrays.c) {
                    for (b, c) in b.iter_mut().zip(c.iter()) {
                        *b = c.wrapping_mul(SCALAR);
                    }
                }
            }
            Kernel::Add => {
                for ((c, a), b) in arrays.c.iter_mut().zip(&arrays.a).zip(&arrays.b) {
                    for ((c, a), b) in c.iter_mut().zip(a.iter()).zip(b.iter()) {
                        *c = a.wrapping_add(*b);
                    }
                }
            }
            Kernel::Triad => {
                for ((a, b), c) in arrays.a.iter_mut().zip(&arrays.b).zip(&arrays.c) {
                    for ((a, b), c) in a.iter_mut().zip(b.iter()).zip(c.iter()) {
                        *a = b.wrapping_add(c.wrapping_mul(SCALAR));
                    }
                }
            }
            Kernel::Random => {
                check ^= random_updates(arrays, seed.wrapping_add(pass));
            }
            Kernel::IntegerSort => {
                if pass == 0 {
                    generate_keys(arrays, seed);
                }
                check ^= rank_keys(arrays, pass);
            }
        }
        check = check.wrapping_add(arrays.a.first().map_or(0, |p| p[0]));
    }
    check
}

/// `elements_of(Random)` read-modify-writes of pseudo-random words of all
/// three arrays (xorshift64*, so the sequence is the same on every run).
fn random_updates(arrays: &mut Arrays<'_>, seed: u64) -> u64 {
    let pages = arrays.a.len();
    if pages == 0 {
        return 0;
    }
    let page_words = arrays.a[0].len() as u64;
    let total = 3 * pages as u64 * page_words;
    let mut state = seed | 1;
    let mut last = 0;
    for _ in 0..total {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        let r = state.wrapping_mul(0x2545_f491_4f6c_dd1d);
        let word = r % total;
        let page = (word / page_words) as usize;
        let offset = (word % page_words) as usize;
        let array = match page / pages {
            0 => &mut arrays.a,
            1 => &mut arrays.b,
            _ => &mut arrays.c,
        };
        let slot = &mut array[page % pages][offset];
        *slot ^= r;
        last = *slot;
    }
    last
}

/// xorshift64*, the kernels' deterministic generator.
fn next_random(state: &mut u64) -> u64 {
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    state.wrapping_mul(0x2545_f491_4f6c_dd1d)
}

/// Bmax of the integer sort: one counter per word of array `c`.
fn key_range(arrays: &Arrays<'_>) -> u64 {
    arrays.c.iter().map(|p| p.len() as u64).sum::<u64>().max(1)
}

/// NAS IS key generation: the mean of four uniform numbers in `[0, Bmax)`.
fn generate_keys(arrays: &mut Arrays<'_>, seed: u64) {
    let range = key_range(arrays);
    let mut state = seed | 1;
    for page in arrays.a.iter_mut().chain(arrays.b.iter_mut()) {
        for key in page.iter_mut() {
            let sum: u64 = (0..4).map(|_| next_random(&mut state) % range).sum();
            *key = sum / 4;
        }
    }
}

/// One NAS IS iteration: change two keys, count every key into its bucket,
/// prefix-sum the counts into ranks, and return the ranks of five test keys
/// (NAS's partial verification reads the ranks of a few keys).
fn rank_keys(arrays: &mut Arrays<'_>, iteration: u64) -> u64 {
    let range = key_range(arrays);
    let page_words = arrays.a.first().map_or(1, |p| p.len());
    // key[i] = i and key[i + 10] = Bmax - i, as NAS IS does per iteration.
    let set_key = |arrays: &mut Arrays<'_>, index: usize, value: u64| {
        if let Some(page) = arrays.a.get_mut(index / page_words) {
            page[index % page_words] = value;
        }
    };
    set_key(arrays, iteration as usize, iteration % range);
    set_key(
        arrays,
        iteration as usize + 10,
        range - 1 - iteration % range,
    );
    for page in arrays.c.iter_mut() {
        page.fill(0);
    }
    let counts = &mut arrays.c;
    for page in arrays.a.iter().chain(arrays.b.iter()) {
        for &key in page.iter() {
            let key = key % range;
            let slot =
                &mut counts[(key / page_words as u64) as usize][(key % page_words as u64) as usize];
            *slot += 1;
        }
    }
    let mut running = 0u64;
    for page in counts.iter_mut() {
        for count in page.iter_mut() {
            running += *count;
            *count = running;
        }
    }
    let rank = |key: u64| {
        let key = key % range;
        counts[(key / page_words as u64) as usize][(key % page_words as u64) as usize]
    };
    [range / 7, range / 3, range / 2, 2 * range / 3, range - 1]
        .iter()
        .fold(0, |acc, &key| acc.wrapping_mul(31).wrapping_add(rank(key)))
}

/// The composite benchmark's body (chandru-mueller Section 5, Figures
/// 6-9): Mälardalen's bubblesort over the words of `pages` as one array,
/// filled in descending order and sorted ascending, `iterations` times.
/// Returns a checksum of the sorted array.
pub fn bubblesort(pages: &mut [&mut [u64]], iterations: u32) -> u64 {
    let page_words = pages.first().map_or(0, |p| p.len());
    let n = page_words * pages.len();
    if n == 0 {
        return 0;
    }
    let mut check = 0u64;
    for iteration in 0..iterations {
        for (index, word) in pages.iter_mut().flat_map(|p| p.iter_mut()).enumerate() {
            *word = (n - index) as u64 + u64::from(iteration);
        }
        for end in (1..n).rev() {
            let mut swapped = false;
            for i in 0..end {
                let (pi, oi) = (i / page_words, i % page_words);
                let (pj, oj) = ((i + 1) / page_words, (i + 1) % page_words);
                let (x, y) = (pages[pi][oi], pages[pj][oj]);
                if x > y {
                    pages[pi][oi] = y;
                    pages[pj][oj] = x;
                    swapped = true;
                }
            }
            if !swapped {
                break;
            }
        }
        check = check
            .wrapping_add(pages[0][0])
            .wrapping_add(pages[pages.len() - 1][page_words - 1]);
    }
    check
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernels_parse_by_name() {
        for &kernel in Kernel::ALL {
            assert_eq!(kernel.name().parse::<Kernel>(), Ok(kernel));
        }
        let err = "spin".parse::<Kernel>().unwrap_err();
        assert!(
            err.contains("expected one of copy") && err.contains("spin"),
            "{err}"
        );
    }

    fn buffer(pages: usize) -> Vec<u64> {
        (0..pages as u64 * 8).collect()
    }

    #[test]
    fn stream_kernels_compute_what_stream_does() {
        let mut words = buffer(3);
        let mut arrays = Arrays::from_pages(words.chunks_exact_mut(8).collect());
        assert_eq!(arrays.elements(), 8);
        run(Kernel::Copy, &mut arrays, 1, 0);
        assert_eq!(arrays.c[0][..], arrays.a[0][..]);
        run(Kernel::Scale, &mut arrays, 1, 0);
        assert_eq!(arrays.b[0][5], 3 * arrays.c[0][5]);
        run(Kernel::Add, &mut arrays, 1, 0);
        assert_eq!(arrays.c[0][5], arrays.a[0][5] + arrays.b[0][5]);
        let (b, c) = (arrays.b[0][2], arrays.c[0][2]);
        run(Kernel::Triad, &mut arrays, 1, 0);
        assert_eq!(arrays.a[0][2], b + 3 * c);
    }

    #[test]
    fn random_access_touches_every_array_and_is_reproducible() {
        let mut first = buffer(6);
        let mut second = buffer(6);
        let mut x = Arrays::from_pages(first.chunks_exact_mut(8).collect());
        let mut y = Arrays::from_pages(second.chunks_exact_mut(8).collect());
        assert_eq!(
            run(Kernel::Random, &mut x, 2, 9),
            run(Kernel::Random, &mut y, 2, 9)
        );
        drop((x, y));
        assert_eq!(first, second);
        let untouched = buffer(6);
        for third in 0..3 {
            let range = third * 16..third * 16 + 16;
            assert_ne!(
                first[range.clone()],
                untouched[range],
                "array {third} untouched"
            );
        }
    }

    #[test]
    fn the_integer_sort_ranks_every_key() {
        let mut words = buffer(12);
        let mut arrays = Arrays::from_pages(words.chunks_exact_mut(8).collect());
        assert_eq!("integer-sort".parse::<Kernel>(), Ok(Kernel::IntegerSort));
        let first = run(Kernel::IntegerSort, &mut arrays, 3, 5);
        // After ranking, the last counter is the number of keys (a and b).
        let keys = 2 * arrays.elements();
        assert_eq!(*arrays.c.last().unwrap().last().unwrap(), keys);
        // Ranks are non-decreasing.
        let ranks: Vec<u64> = arrays.c.iter().flat_map(|p| p.iter().copied()).collect();
        assert!(ranks.windows(2).all(|w| w[0] <= w[1]));
        // Keys stay in [0, Bmax) and the result repeats.
        let range = key_range(&arrays);
        assert!(
            arrays
                .a
                .iter()
                .chain(&arrays.b)
                .flat_map(|p| p.iter())
                .all(|&k| k < range)
        );
        let mut again = buffer(12);
        let mut y = Arrays::from_pages(again.chunks_exact_mut(8).collect());
        assert_eq!(run(Kernel::IntegerSort, &mut y, 3, 5), first);
    }

    #[test]
    fn bubblesort_sorts_across_pages() {
        let mut words = [0u64; 24];
        let mut pages: Vec<&mut [u64]> = words.chunks_exact_mut(8).collect();
        bubblesort(&mut pages, 2);
        let flat: Vec<u64> = pages.iter().flat_map(|p| p.iter().copied()).collect();
        assert_eq!(flat, (2..26).collect::<Vec<u64>>());
    }

    #[test]
    fn leftover_pages_are_dropped_evenly() {
        let mut words = buffer(5);
        let arrays = Arrays::from_pages(words.chunks_exact_mut(8).collect());
        assert_eq!((arrays.a.len(), arrays.b.len(), arrays.c.len()), (1, 1, 1));
    }
}
