//! Job kernels: the synthetic work a job does.
//!
//! Every job body is `memory` iterations of a memory kernel followed by
//! `compute` iterations of pure computation ([`JobWork`]). One memory
//! iteration touches one 64-byte cache line of the working set:
//!
//! - `chase`: follows a random cyclic permutation of the lines (Sattolo's
//!   algorithm), so every access depends on the previous one and hardware
//!   prefetchers cannot help — the latency-bound access pattern of the
//!   cache-sensitive PARSEC tasks in kim2013 Table I;
//! - `read`, `write`, `rmw`: sequential passes over the lines;
//! - `compute`: no memory, a multiply-xorshift step per iteration;
//! - `mixed`: a chase phase then a compute phase, split by `memory_percent`.
//!
//! Kernels run in chunks and look at a stop flag between chunks, so the
//! watchdog or a signal can end a job within microseconds.

use crate::working_set::WorkingSet;
use std::sync::atomic::{AtomicBool, Ordering};
pub use tinct_core::model::Kernel;

/// Bytes of one cache line; one memory iteration touches one line.
pub const LINE_BYTES: usize = 64;
const WORDS_PER_LINE: usize = LINE_BYTES / 8;
/// Iterations between two looks at the stop flag.
pub const CHUNK: u64 = 1024;

/// The work of one job: memory iterations then compute iterations.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct JobWork {
    /// Iterations of the memory kernel (one cache line each).
    pub memory: u64,
    /// Iterations of pure computation.
    pub compute: u64,
}

/// The memory share of a `mixed` body when the task does not say.
pub const DEFAULT_MEMORY_PERCENT: u8 = 50;

/// The share of a job's time spent in the memory kernel, in percent.
pub fn memory_percent(kernel: Kernel, mixed_percent: Option<u8>) -> u8 {
    match kernel {
        Kernel::Compute => 0,
        Kernel::Mixed => mixed_percent.unwrap_or(DEFAULT_MEMORY_PERCENT),
        Kernel::Chase | Kernel::Read | Kernel::Write | Kernel::Rmw => 100,
    }
}

/// A working set prepared for one kernel, plus the kernel's position in it.
pub struct KernelState<'a> {
    kernel: Kernel,
    words: WorkingSet<'a>,
    lines: usize,
    position: usize,
    accumulator: u64,
}

/// How a job ended.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Ran {
    /// All iterations were done.
    Done,
    /// The stop flag was seen before the end.
    Stopped,
}

impl<'a> KernelState<'a> {
    /// Prepares `words` (the working set, at least one cache line for memory
    /// kernels) for `kernel`: writes every line (so every page is touched
    /// before the run) and, for `chase` and `mixed`, links the lines into one
    /// random cycle seeded by `seed`.
    pub fn new(kernel: Kernel, mut words: WorkingSet<'a>, seed: u64) -> KernelState<'a> {
        let lines = words.len() / WORDS_PER_LINE;
        for (i, w) in words.iter_mut().enumerate() {
            *w = i as u64;
        }
        if matches!(kernel, Kernel::Chase | Kernel::Mixed) && lines > 0 {
            let next = sattolo_cycle(lines, seed);
            for (line, &successor) in next.iter().enumerate() {
                words[line * WORDS_PER_LINE] = successor as u64;
            }
        }
        KernelState {
            kernel,
            words,
            lines,
            position: 0,
            accumulator: seed | 1,
        }
    }

    /// The kernel.
    pub fn kernel(&self) -> Kernel {
        self.kernel
    }

    /// Cache lines in the working set.
    pub fn lines(&self) -> usize {
        self.lines
    }

    /// The working set (to flush it from the caches before a cold job).
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    /// Runs one job's work, looking at `stop` every [`CHUNK`] iterations.
    pub fn run(&mut self, work: JobWork, stop: &AtomicBool) -> Ran {
        let mut left = work.memory;
        while left > 0 {
            if stop.load(Ordering::Relaxed) {
                return Ran::Stopped;
            }
            let n = left.min(CHUNK);
            self.memory_steps(n);
            left -= n;
        }
        let mut left = work.compute;
        while left > 0 {
            if stop.load(Ordering::Relaxed) {
                return Ran::Stopped;
            }
            let n = left.min(CHUNK);
            self.compute_steps(n);
            left -= n;
        }
        std::hint::black_box(self.accumulator);
        Ran::Done
    }

    /// `n` memory iterations of this kernel (compute-only kernels compute).
    pub fn memory_steps(&mut self, n: u64) {
        if self.lines == 0 {
            return self.compute_steps(n);
        }
        match self.kernel {
            Kernel::Chase | Kernel::Mixed => {
                let mut line = self.position;
                for _ in 0..n {
                    line = self.words[line * WORDS_PER_LINE] as usize;
                }
                self.position = std::hint::black_box(line);
            }
            Kernel::Read => {
                let mut sum = self.accumulator;
                for _ in 0..n {
                    sum = sum.wrapping_add(self.words[self.position * WORDS_PER_LINE]);
                    self.advance();
                }
                self.accumulator = std::hint::black_box(sum);
            }
            Kernel::Write => {
                let value = self.accumulator;
                for _ in 0..n {
                    self.words[self.position * WORDS_PER_LINE + 1] = value;
                    self.advance();
                }
                self.accumulator = std::hint::black_box(value.wrapping_add(1));
            }
            Kernel::Rmw => {
                for _ in 0..n {
                    let word = &mut self.words[self.position * WORDS_PER_LINE + 1];
                    *word = word.wrapping_mul(3).wrapping_add(1);
                    self.advance();
                }
                std::hint::black_box(&*self.words);
            }
            Kernel::Compute => self.compute_steps(n),
        }
    }

    /// Writes `bytes` bytes over the working set from its start, wrapping
    /// around when it is shorter (rt-app `mem`: a memset of the thread's
    /// buffer, in buffer-sized pieces). Without a working set, nothing.
    /// The first word of each line, the successor of a pointer chase, is
    /// left alone so that the kernel keeps its cycle.
    pub fn write_bytes(&mut self, bytes: u64) {
        let len = self.words.len();
        if len == 0 {
            return;
        }
        let keep_links = matches!(self.kernel, Kernel::Chase | Kernel::Mixed);
        let mut words = bytes.div_ceil(8);
        let value = self.accumulator;
        while words > 0 {
            let n = usize::try_from(words).unwrap_or(usize::MAX).min(len);
            for (i, word) in self.words[..n].iter_mut().enumerate() {
                if !(keep_links && i % WORDS_PER_LINE == 0) {
                    *word = value;
                }
            }
            words -= n as u64;
        }
        std::hint::black_box(&*self.words);
    }

    /// `n` iterations of register-only computation (multiply and xorshift).
    pub fn compute_steps(&mut self, n: u64) {
        let mut x = self.accumulator;
        for _ in 0..n {
            x = x.wrapping_mul(0x9E37_79B9_7F4A_7C15);
            x ^= x >> 29;
        }
        self.accumulator = std::hint::black_box(x);
    }

    fn advance(&mut self) {
        self.position += 1;
        if self.position == self.lines {
            self.position = 0;
        }
    }
}

/// A uniformly random single cycle over `0..n` (Sattolo's algorithm):
/// `next[i]` is the successor of `i`. Uses a SplitMix64 generator, so the
/// permutation is reproducible from `seed`.
pub fn sattolo_cycle(n: usize, seed: u64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    let mut state = seed;
    for i in (1..n).rev() {
        let j = (splitmix64(&mut state) % i as u64) as usize;
        order.swap(i, j);
    }
    let mut next = vec![0; n];
    for k in 0..n {
        next[order[k]] = order[(k + 1) % n];
    }
    next
}

/// One step of the SplitMix64 generator (Steele, Lea and Flood 2014).
pub(crate) fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sattolo_gives_one_cycle_through_every_element() {
        for n in [1usize, 2, 3, 10, 257] {
            let next = sattolo_cycle(n, 42);
            let mut seen = vec![false; n];
            let mut i = 0;
            for _ in 0..n {
                assert!(!seen[i], "element {i} visited twice for n={n}");
                seen[i] = true;
                i = next[i];
            }
            assert_eq!(i, 0, "the walk must close after n steps");
            assert!(seen.iter().all(|&s| s));
        }
    }

    #[test]
    fn chase_visits_every_line_once_per_lap() {
        let lines = 64;
        let mut state = KernelState::new(Kernel::Chase, vec![0; lines * WORDS_PER_LINE].into(), 7);
        let mut visited = std::collections::HashSet::new();
        for _ in 0..lines {
            state.memory_steps(1);
            visited.insert(state.position);
        }
        assert_eq!(visited.len(), lines);
        assert_eq!(state.position, 0);
    }

    #[test]
    fn write_and_rmw_change_memory_and_read_does_not() {
        let stop = AtomicBool::new(false);
        let work = JobWork {
            memory: 32,
            compute: 0,
        };
        let mut read = KernelState::new(Kernel::Read, vec![0; 16 * WORDS_PER_LINE].into(), 1);
        let before = read.words.to_vec();
        assert_eq!(read.run(work, &stop), Ran::Done);
        assert_eq!(read.words.to_vec(), before);
        for kernel in [Kernel::Write, Kernel::Rmw] {
            let mut s = KernelState::new(kernel, vec![0; 16 * WORDS_PER_LINE].into(), 1);
            let before = s.words.to_vec();
            s.run(work, &stop);
            assert_ne!(s.words.to_vec(), before, "{kernel}");
        }
    }

    #[test]
    fn mem_writes_keep_the_chase_cycle() {
        let lines = 32;
        let mut state = KernelState::new(Kernel::Chase, vec![0; lines * WORDS_PER_LINE].into(), 3);
        let links: Vec<u64> = (0..lines)
            .map(|l| state.words[l * WORDS_PER_LINE])
            .collect();
        state.write_bytes(10 * (lines * LINE_BYTES) as u64);
        let after: Vec<u64> = (0..lines)
            .map(|l| state.words[l * WORDS_PER_LINE])
            .collect();
        assert_eq!(links, after);
        assert!(state.words[1] != 1, "the other words were written");
        state.memory_steps(1000); // follows the intact cycle
        let mut flat = KernelState::new(Kernel::Compute, vec![0; 16].into(), 3);
        flat.write_bytes(64);
        assert!(
            flat.words[..8].iter().all(|&w| w == flat.accumulator),
            "64 bytes: 8 words"
        );
        assert!(
            flat.words[8..]
                .iter()
                .enumerate()
                .all(|(i, &w)| w == (i + 8) as u64),
            "the rest untouched"
        );
    }

    #[test]
    fn a_set_stop_flag_ends_the_job_before_its_work() {
        let stop = AtomicBool::new(true);
        let mut s = KernelState::new(Kernel::Compute, WorkingSet::empty(), 3);
        let work = JobWork {
            memory: 0,
            compute: u64::MAX,
        };
        assert_eq!(s.run(work, &stop), Ran::Stopped);
        assert_eq!(s.run(JobWork::default(), &stop), Ran::Done);
    }
}
