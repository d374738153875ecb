//! Working-set memory of a task.
//!
//! The plan gives each task its cache partitions S(i); with page coloring
//! (kim2013 Section III-C, tinct-mem) the working set should come from the
//! page colors of those partitions. This is the one place that decides
//! where a working set lives. Today it comes from the ordinary heap and the
//! run says so ([`Placement::Heap`]): tinct-mem hands out raw pointers only,
//! and turning one into a slice takes `unsafe`, which this crate does not
//! contain. When tinct-mem offers a safe owned buffer, it becomes a second
//! [`WorkingSet`] storage and only [`allocate_working_set`] changes.

use crate::kernels::LINE_BYTES;
use serde::Serialize;
use std::ops::{Deref, DerefMut};

/// The memory a task's kernels touch, as 64-bit words.
#[derive(Debug, Default)]
pub struct WorkingSet {
    words: Vec<u64>,
}

impl WorkingSet {
    /// No memory (compute-only bodies).
    pub fn empty() -> WorkingSet {
        WorkingSet::default()
    }
}

impl From<Vec<u64>> for WorkingSet {
    fn from(words: Vec<u64>) -> WorkingSet {
        WorkingSet { words }
    }
}

impl Deref for WorkingSet {
    type Target = [u64];
    fn deref(&self) -> &[u64] {
        &self.words
    }
}

impl DerefMut for WorkingSet {
    fn deref_mut(&mut self) -> &mut [u64] {
        &mut self.words
    }
}

/// Where a task's working set lives.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "placement", rename_all = "snake_case")]
pub enum Placement {
    /// No working set (compute-only body).
    None,
    /// The process heap: cache partitions are not enforced.
    Heap {
        /// Bytes allocated.
        bytes: u64,
        /// The partitions the plan asked for, not enforced.
        partitions_requested: Vec<u32>,
    },
}

impl Placement {
    /// One line for people.
    pub fn describe(&self) -> String {
        match self {
            Placement::None => "none".into(),
            Placement::Heap {
                bytes,
                partitions_requested,
            } if partitions_requested.is_empty() => {
                format!("{} heap", tinct_core::units::Bytes(*bytes))
            }
            Placement::Heap {
                bytes,
                partitions_requested,
            } => format!(
                "{} heap, S(i) {} NOT enforced",
                tinct_core::units::Bytes(*bytes),
                tinct_core::PartitionSet::from_iter(partitions_requested.iter().copied())
            ),
        }
    }
}

/// Allocates (and zeroes, so every page exists) a working set of at least
/// `bytes`, rounded up to whole cache lines, for a task whose plan gives it
/// `partitions`. Fails with a message when the memory cannot be had.
pub fn allocate_working_set(
    bytes: u64,
    partitions: &[u32],
) -> Result<(WorkingSet, Placement), String> {
    if bytes == 0 {
        return Ok((WorkingSet::empty(), Placement::None));
    }
    let line = LINE_BYTES as u64;
    let rounded = bytes.div_ceil(line).saturating_mul(line);
    let fail = |why: String| {
        format!(
            "cannot allocate a working set of {}: {why}",
            tinct_core::units::Bytes(rounded)
        )
    };
    let count = usize::try_from(rounded / 8).map_err(|e| fail(e.to_string()))?;
    let mut words = Vec::new();
    words
        .try_reserve_exact(count)
        .map_err(|e| fail(e.to_string()))?;
    words.resize(count, 0u64);
    Ok((
        words.into(),
        Placement::Heap {
            bytes: rounded,
            partitions_requested: partitions.to_vec(),
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn working_sets_are_whole_lines_and_say_where_they_are() {
        let (words, placement) = allocate_working_set(100, &[1, 2]).unwrap();
        assert_eq!(words.len() * 8, 128);
        assert!(placement.describe().contains("NOT enforced"));
        let (none, placement) = allocate_working_set(0, &[]).unwrap();
        assert!(none.is_empty());
        assert_eq!(placement, Placement::None);
        let too_big = allocate_working_set(1 << 62, &[]).unwrap_err();
        assert!(too_big.contains("cannot allocate"), "{too_big}");
    }
}
