//! The two pipeline functions of Gracioli et al. 2011 (Figure 3) and the
//! false-sharing counters.
//!
//! The paper's benchmark has two `ROWS x COLS` arrays and a loop of
//! repetitions of arithmetic on them; function 1 and function 2 read and
//! write *both* arrays at the *same* positions, without synchronization, so
//! in the parallel version every cache line the two threads touch is written
//! by both and the coherence protocol moves it back and forth.
//!
//! Safe Rust cannot share plain memory between racing threads, so the
//! elements are `AtomicU64` accessed with `Relaxed` loads and stores: on
//! x86-64 and arm64 these compile to the same plain loads and stores as
//! non-atomic code (no lock prefix, no fence), which is exactly the paper's
//! unsynchronized access. Every version uses the same type, so sequential,
//! parallel-shared and parallel-private execute identical instructions.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// The two arrays of one benchmark instance.
#[derive(Debug)]
pub struct ArrayPair {
    /// First array (`ROWS x COLS`, row-major).
    pub a: Words,
    /// Second array.
    pub b: Words,
}

/// One array's words: heap memory, or a mapping of its own whose pages
/// come from the kernel on first touch and go back when it is dropped.
#[derive(Debug)]
pub enum Words {
    /// Heap memory (reused by the allocator from run to run).
    Heap(Vec<AtomicU64>),
    /// A private anonymous mapping, unmapped on drop.
    Mapped(tinct_sys::anonymous_words::AnonymousWords),
}

impl std::ops::Deref for Words {
    type Target = [AtomicU64];
    fn deref(&self) -> &[AtomicU64] {
        match self {
            Words::Heap(words) => words,
            Words::Mapped(words) => words,
        }
    }
}

impl ArrayPair {
    /// Two zeroed arrays of `elements` each (the paper starts them at zero).
    pub fn zeroed(elements: usize) -> Self {
        let zeros = || Words::Heap((0..elements).map(|_| AtomicU64::new(0)).collect());
        Self {
            a: zeros(),
            b: zeros(),
        }
    }

    /// Two arrays of `elements` each, each in a fresh mapping of its own
    /// and written with zeros as the paper starts them: every page is a
    /// page fault now and an unmapping at the drop, as in a new process.
    pub fn mapped(elements: usize) -> crate::Result<Self> {
        let zeros = || -> crate::Result<Words> {
            let words = tinct_sys::anonymous_words::AnonymousWords::new(elements)?;
            words.iter().for_each(|w| w.store(0, Relaxed));
            Ok(Words::Mapped(words))
        };
        Ok(Self {
            a: zeros()?,
            b: zeros()?,
        })
    }

    /// Sum of both arrays (keeps the work observable, and lets tests check
    /// that a run really wrote the arrays).
    pub fn checksum(&self) -> u64 {
        self.a
            .iter()
            .chain(self.b.iter())
            .fold(0u64, |sum, x| sum.wrapping_add(x.load(Relaxed)))
    }
}

/// Which of the paper's two pipeline functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Function {
    /// Function 1 of Figure 3.
    First,
    /// Function 2 of Figure 3.
    Second,
}

/// Runs `function` `repetitions` times over both arrays: each element of
/// `a` and `b` is read and written at the same index, as in the paper.
pub fn run_function(arrays: &ArrayPair, function: Function, repetitions: u64) {
    let (mul, add) = match function {
        Function::First => (3u64, 1u64),
        Function::Second => (5u64, 7u64),
    };
    for _ in 0..repetitions {
        for (x, y) in arrays.a.iter().zip(arrays.b.iter()) {
            let a = x.load(Relaxed);
            let b = y.load(Relaxed);
            x.store(a.wrapping_mul(mul).wrapping_add(b) ^ add, Relaxed);
            y.store(b.wrapping_add(a >> 1).wrapping_add(add), Relaxed);
        }
    }
}

/// Two counters on one cache line: the false-sharing layout.
#[derive(Debug, Default)]
#[repr(C, align(64))]
pub struct SameLine {
    /// Counters of thread 0 and thread 1, 8 bytes apart.
    pub counters: [AtomicU64; 2],
}

/// One counter alone on a 128-byte block (two lines, so the adjacent-line
/// prefetcher does not pair it with a neighbour).
#[derive(Debug, Default)]
#[repr(C, align(128))]
pub struct Padded {
    /// The counter.
    pub counter: AtomicU64,
}

/// Increments `counter` `times` times with a plain load and store each (no
/// atomic read-modify-write: the cost measured is the line's coherence
/// traffic, not a locked instruction).
pub fn count(counter: &AtomicU64, times: u64) {
    for _ in 0..times {
        let value = counter.load(Relaxed);
        counter.store(value.wrapping_add(1), Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn functions_write_both_arrays_and_differ() {
        let first = ArrayPair::zeroed(16);
        run_function(&first, Function::First, 3);
        assert!(first.a.iter().all(|x| x.load(Relaxed) != 0));
        assert!(first.b.iter().all(|x| x.load(Relaxed) != 0));
        let second = ArrayPair::zeroed(16);
        run_function(&second, Function::Second, 3);
        assert_ne!(first.checksum(), second.checksum());
    }

    #[test]
    fn mapped_arrays_compute_as_heap_arrays_do() {
        let heap = ArrayPair::zeroed(1000);
        let mapped = ArrayPair::mapped(1000).unwrap();
        assert!(matches!(mapped.a, Words::Mapped(_)));
        run_function(&heap, Function::Second, 2);
        run_function(&mapped, Function::Second, 2);
        assert_eq!(heap.checksum(), mapped.checksum());
        assert_ne!(heap.checksum(), 0);
    }

    #[test]
    fn repetitions_are_repeated_work() {
        let once_twice = ArrayPair::zeroed(8);
        run_function(&once_twice, Function::First, 1);
        run_function(&once_twice, Function::First, 1);
        let two = ArrayPair::zeroed(8);
        run_function(&two, Function::First, 2);
        assert_eq!(once_twice.checksum(), two.checksum());
    }

    #[test]
    fn layouts_put_counters_where_intended() {
        assert_eq!(std::mem::size_of::<SameLine>(), 64);
        assert_eq!(std::mem::align_of::<Padded>(), 128);
        let line = SameLine::default();
        count(&line.counters[1], 10);
        assert_eq!(line.counters[1].load(Relaxed), 10);
        assert_eq!(line.counters[0].load(Relaxed), 0);
    }
}
