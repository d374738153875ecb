//! [`WorkingSet`]: the memory a job's kernels touch, as 64-bit words,
//! owned (heap) or lent by whoever allocated it (a colored buffer, see
//! [`crate::memory`]).

use std::ops::{Deref, DerefMut};

/// The memory a task's kernels touch, as 64-bit words.
#[derive(Debug)]
pub enum WorkingSet<'a> {
    /// Owned heap memory.
    Owned(Vec<u64>),
    /// Memory owned elsewhere (a colored buffer), lent for the run.
    Borrowed(&'a mut [u64]),
}

impl WorkingSet<'static> {
    /// No memory (compute-only bodies).
    pub fn empty() -> WorkingSet<'static> {
        WorkingSet::Owned(Vec::new())
    }
}

impl From<Vec<u64>> for WorkingSet<'static> {
    fn from(words: Vec<u64>) -> WorkingSet<'static> {
        WorkingSet::Owned(words)
    }
}

impl<'a> From<&'a mut [u64]> for WorkingSet<'a> {
    fn from(words: &'a mut [u64]) -> WorkingSet<'a> {
        WorkingSet::Borrowed(words)
    }
}

impl Deref for WorkingSet<'_> {
    type Target = [u64];
    fn deref(&self) -> &[u64] {
        match self {
            WorkingSet::Owned(words) => words,
            WorkingSet::Borrowed(words) => words,
        }
    }
}

impl DerefMut for WorkingSet<'_> {
    fn deref_mut(&mut self) -> &mut [u64] {
        match self {
            WorkingSet::Owned(words) => words,
            WorkingSet::Borrowed(words) => words,
        }
    }
}
