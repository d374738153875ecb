//! The victim's job: a pointer chase over its working set (the aggressors'
//! read-modify-write sweeps over theirs are
//! [`crate::harness::memory_pass::aggress`]).
//!
//! The victim is latency bound and cache sensitive, like the PARSEC tasks
//! kim2013 Table I marks cache sensitive: each access depends on the one
//! before, over a random cycle of all its cache lines, so a line evicted by
//! an aggressor costs a full memory latency. The aggressors touch one word
//! per cache line, sweeping a working set larger than the cache, which
//! evicts as many lines of the shared cache per second as they can.

use crate::harness::memory_pass::LINE_WORDS;
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;

/// A working set linked into one random cycle of its cache lines.
#[derive(Debug)]
pub struct Chase<'a> {
    pages: Vec<&'a mut [u64]>,
    lines_per_page: usize,
    lines: usize,
}

impl<'a> Chase<'a> {
    /// Links every cache line of `pages` into one cycle chosen by `seed`
    /// (Sattolo's algorithm, so the cycle visits every line).
    pub fn new(mut pages: Vec<&'a mut [u64]>, seed: u64) -> Self {
        let lines_per_page = pages.first().map_or(0, |p| p.len() / LINE_WORDS);
        let lines = pages.len() * lines_per_page;
        let mut order: Vec<usize> = (0..lines).collect();
        // Sattolo: a uniformly random cyclic permutation is the shuffle of
        // order[1..] placed after a fixed start, closed back to it.
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        if lines > 1 {
            order[1..].shuffle(&mut rng);
        }
        for (i, &line) in order.iter().enumerate() {
            let next = order[(i + 1) % lines];
            let (page, offset) = (line / lines_per_page, (line % lines_per_page) * LINE_WORDS);
            pages[page][offset] = next as u64;
        }
        Self {
            pages,
            lines_per_page,
            lines,
        }
    }

    /// Cache lines in the cycle.
    pub fn lines(&self) -> usize {
        self.lines
    }

    /// One job: follows the whole cycle once from line 0; returns the line
    /// it ends on (line 0 again, which tests use to check the cycle).
    pub fn job(&self) -> usize {
        let mut line = 0usize;
        for _ in 0..self.lines {
            let (page, offset) = (
                line / self.lines_per_page,
                (line % self.lines_per_page) * LINE_WORDS,
            );
            line = self.pages[page][offset] as usize;
        }
        std::hint::black_box(line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chase_is_one_cycle_over_every_line() {
        let mut words = vec![0u64; 4 * 512];
        let chase = Chase::new(words.chunks_exact_mut(512).collect(), 5);
        assert_eq!(chase.lines(), 256);
        assert_eq!(chase.job(), 0, "a full cycle returns to its start");
        // Every line is some line's successor exactly once.
        let mut seen = vec![false; 256];
        let mut line = 0;
        for _ in 0..256 {
            let (page, offset) = (line / 64, (line % 64) * 8);
            line = chase.pages[page][offset] as usize;
            assert!(!seen[line], "line {line} visited twice");
            seen[line] = true;
        }
        assert!(seen.iter().all(|&s| s));
    }
}
