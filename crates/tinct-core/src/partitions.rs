//! Sets of cache partitions, S(i) in kim2013.
//!
//! Partitions are numbered 1..=N_P as in the paper. The set is a fixed-size
//! bitset so that the analysis, which intersects and unions these sets in its
//! innermost loops, never allocates.

use serde::{Serialize, Serializer};
use std::fmt;

const WORDS: usize = 4;

/// The largest N_P tinct supports (partitions are groups of page colors, so a
/// machine with more colors groups several colors per partition).
pub const MAX_PARTITIONS: u32 = (WORDS * 64) as u32;

/// A set of cache partitions numbered 1..=[`MAX_PARTITIONS`].
#[derive(Copy, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PartitionSet {
    bits: [u64; WORDS],
}

impl PartitionSet {
    /// The empty set.
    pub const EMPTY: PartitionSet = PartitionSet { bits: [0; WORDS] };

    /// The set {first, ..., last}; empty if first > last.
    pub fn range(first: u32, last: u32) -> PartitionSet {
        let mut set = PartitionSet::EMPTY;
        for p in first..=last {
            set.insert(p);
        }
        set
    }

    /// Adds partition `p` (1-based). Panics if `p` is 0 or above [`MAX_PARTITIONS`]:
    /// callers validate partition numbers first.
    pub fn insert(&mut self, p: u32) {
        assert!(
            (1..=MAX_PARTITIONS).contains(&p),
            "partition {p} out of range"
        );
        let bit = p - 1;
        self.bits[(bit / 64) as usize] |= 1 << (bit % 64);
    }

    /// Whether `p` is in the set.
    pub fn contains(&self, p: u32) -> bool {
        if p == 0 || p > MAX_PARTITIONS {
            return false;
        }
        let bit = p - 1;
        self.bits[(bit / 64) as usize] & (1 << (bit % 64)) != 0
    }

    /// |S|.
    pub fn len(&self) -> u32 {
        self.bits.iter().map(|w| w.count_ones()).sum()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.bits.iter().all(|&w| w == 0)
    }

    /// S ∪ other.
    pub fn union(&self, other: &PartitionSet) -> PartitionSet {
        let mut bits = self.bits;
        for (b, o) in bits.iter_mut().zip(other.bits) {
            *b |= o;
        }
        PartitionSet { bits }
    }

    /// S ∩ other.
    pub fn intersection(&self, other: &PartitionSet) -> PartitionSet {
        let mut bits = self.bits;
        for (b, o) in bits.iter_mut().zip(other.bits) {
            *b &= o;
        }
        PartitionSet { bits }
    }

    /// |S ∩ other|, without building the set.
    pub fn intersection_len(&self, other: &PartitionSet) -> u32 {
        self.bits
            .iter()
            .zip(other.bits)
            .map(|(a, b)| (a & b).count_ones())
            .sum()
    }

    /// The partitions in increasing order.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        (0..WORDS).flat_map(move |w| {
            let word = self.bits[w];
            (0..64u32)
                .filter(move |b| word & (1 << b) != 0)
                .map(move |b| w as u32 * 64 + b + 1)
        })
    }

    /// The partitions as a vector, in increasing order.
    pub fn to_vec(&self) -> Vec<u32> {
        self.iter().collect()
    }
}

impl FromIterator<u32> for PartitionSet {
    fn from_iter<I: IntoIterator<Item = u32>>(iter: I) -> Self {
        let mut set = PartitionSet::EMPTY;
        for p in iter {
            set.insert(p);
        }
        set
    }
}

impl fmt::Debug for PartitionSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self}")
    }
}

impl fmt::Display for PartitionSet {
    /// Compact ranges: `{1-8, 12}`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let items = self.to_vec();
        let mut parts = Vec::new();
        let mut i = 0;
        while i < items.len() {
            let start = items[i];
            let mut end = start;
            while i + 1 < items.len() && items[i + 1] == end + 1 {
                i += 1;
                end = items[i];
            }
            parts.push(if start == end {
                start.to_string()
            } else {
                format!("{start}-{end}")
            });
            i += 1;
        }
        write!(f, "{{{}}}", parts.join(", "))
    }
}

impl Serialize for PartitionSet {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_operations() {
        let a = PartitionSet::range(1, 8);
        let b: PartitionSet = [4, 5, 6, 7, 8, 200].into_iter().collect();
        assert_eq!(a.len(), 8);
        assert_eq!(a.intersection_len(&b), 5);
        assert_eq!(a.intersection(&b), PartitionSet::range(4, 8));
        assert_eq!(a.union(&b).len(), 9);
        assert!(b.contains(200) && !b.contains(9) && !b.contains(0));
        assert_eq!(b.to_vec(), vec![4, 5, 6, 7, 8, 200]);
        assert_eq!(b.to_string(), "{4-8, 200}");
        assert_eq!(PartitionSet::EMPTY.to_string(), "{}");
    }
}
