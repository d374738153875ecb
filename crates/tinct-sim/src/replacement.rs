//! Replacement policies and the per-set state they keep.
//!
//! - **LRU**: every way of a set holds its recency rank, 0 = most recently
//!   used, `ways - 1` = least recently used; the victim is the way of rank
//!   `ways - 1`. Ranks stay a permutation of `0..ways`. A rank lives in the low
//!   byte of a `u16` way word whose high byte the cache uses for the line's
//!   owner, so one host cache line holds a whole set's metadata.
//! - **Tree-PLRU**: a binary tree of `ways - 1` bits over the ways (heap order:
//!   node 0 is the root, the children of node `n` are `2n + 1` and `2n + 2`).
//!   A bit of 0 sends the victim search to the left half, 1 to the right half.
//!   A touch makes every node on the path point *away* from the touched way.
//!   This is the classic pseudo-LRU of e.g. Handy, "The Cache Memory Book"
//!   (1998), and of many L1/L2 caches.
//!
//! In both policies an invalid way is filled before any valid line is evicted
//! (the cache looks for it; see [`crate::cache`]).

use serde::{Deserialize, Serialize};

use crate::error::SimError;

/// Which line of a full set a miss evicts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Replacement {
    /// True least-recently-used.
    Lru,
    /// Tree pseudo-LRU; needs a power-of-two associativity.
    TreePlru,
}

impl Replacement {
    /// Checks that the policy can run on `ways`-way sets.
    pub fn check_ways(self, ways: u32) -> Result<(), SimError> {
        match self {
            Replacement::TreePlru if !ways.is_power_of_two() => Err(SimError::invalid(
                "replacement",
                "a power-of-two associativity for tree-PLRU",
                format!("{ways} ways"),
            )),
            _ => Ok(()),
        }
    }
}

/// Mask of the LRU rank inside a way word; the bits above are left alone.
pub const RANK_MASK: u16 = 0xff;

/// The LRU ranks of a fresh set: way `i` has rank `i`.
pub fn lru_initial_ranks(words: &mut [u16]) {
    for (way, word) in words.iter_mut().enumerate() {
        *word = (*word & !RANK_MASK) | way as u16;
    }
}

/// Marks `way` most recently used: every way more recent than it ages by one.
#[inline]
pub fn lru_touch(words: &mut [u16], way: usize) {
    let touched_rank = words[way] & RANK_MASK;
    for word in words.iter_mut() {
        // Ranks stay below `ways` ≤ 64, so the increment never carries into the high byte.
        *word += u16::from(*word & RANK_MASK < touched_rank);
    }
    words[way] &= !RANK_MASK;
}

/// The least recently used way.
#[inline]
pub fn lru_victim(words: &[u16]) -> usize {
    let oldest = (words.len() - 1) as u16;
    words
        .iter()
        .position(|&word| word & RANK_MASK == oldest)
        .expect("LRU ranks are a permutation of 0..ways")
}

/// Makes the tree bits on the path to `way` point away from it.
#[inline]
pub fn plru_touch(bits: &mut u64, ways: usize, way: usize) {
    let (mut node, mut low, mut span) = (0usize, 0usize, ways);
    while span > 1 {
        let half = span / 2;
        if way < low + half {
            *bits |= 1 << node; // touched the left half: next victim on the right
            node = 2 * node + 1;
        } else {
            *bits &= !(1 << node); // touched the right half: next victim on the left
            node = 2 * node + 2;
            low += half;
        }
        span = half;
    }
}

/// Follows the tree bits from the root to the pseudo-least-recently-used way.
#[inline]
pub fn plru_victim(bits: u64, ways: usize) -> usize {
    let (mut node, mut low, mut span) = (0usize, 0usize, ways);
    while span > 1 {
        let half = span / 2;
        if bits & (1 << node) == 0 {
            node = 2 * node + 1;
        } else {
            node = 2 * node + 2;
            low += half;
        }
        span = half;
    }
    low
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lru_evicts_in_access_order() {
        let mut ranks = [0u16; 4];
        lru_initial_ranks(&mut ranks);
        for way in [2, 0, 3, 1] {
            lru_touch(&mut ranks, way);
        }
        assert_eq!(ranks, [2, 0, 3, 1], "way 2 oldest, then 0, 3, and 1 newest");
        assert_eq!(lru_victim(&ranks), 2);
        lru_touch(&mut ranks, 2);
        assert_eq!(lru_victim(&ranks), 0);
        lru_touch(&mut ranks, 0);
        assert_eq!(lru_victim(&ranks), 3);
        lru_touch(&mut ranks, 1); // re-touching the newest changes nothing
        assert_eq!(lru_victim(&ranks), 3);
    }

    /// Hand-worked 4-way tree: bit 0 is the root, bit 1 covers ways {0,1}, bit 2 ways {2,3}.
    #[test]
    fn plru_four_way_by_hand() {
        let mut bits = 0u64;
        assert_eq!(plru_victim(bits, 4), 0, "all bits 0: leftmost way");
        plru_touch(&mut bits, 4, 0);
        assert_eq!(bits, 0b011, "root and node 1 point right");
        assert_eq!(plru_victim(bits, 4), 2);
        plru_touch(&mut bits, 4, 2);
        assert_eq!(bits, 0b110, "root points left, node 2 points right");
        assert_eq!(plru_victim(bits, 4), 1);
        plru_touch(&mut bits, 4, 1);
        assert_eq!(bits, 0b101);
        assert_eq!(plru_victim(bits, 4), 3);
        plru_touch(&mut bits, 4, 3);
        assert_eq!(bits, 0b000);
        assert_eq!(plru_victim(bits, 4), 0);
    }

    /// After 0, 1, 2, 3, 0 true LRU evicts way 1; tree-PLRU evicts way 2.
    #[test]
    fn plru_differs_from_lru_where_the_tree_forgets() {
        let mut ranks = [0u16; 4];
        lru_initial_ranks(&mut ranks);
        let mut bits = 0u64;
        for way in [0, 1, 2, 3, 0] {
            lru_touch(&mut ranks, way);
            plru_touch(&mut bits, 4, way);
        }
        assert_eq!(lru_victim(&ranks), 1);
        assert_eq!(plru_victim(bits, 4), 2);
    }

    #[test]
    fn plru_never_evicts_the_way_just_touched() {
        for ways in [2usize, 4, 8, 16, 32, 64] {
            let mut bits = 0u64;
            for step in 0..1000usize {
                let way = (step * 7 + step / 3) % ways;
                plru_touch(&mut bits, ways, way);
                assert_ne!(plru_victim(bits, ways), way, "{ways} ways, step {step}");
            }
        }
    }

    #[test]
    fn lru_leaves_the_high_byte_alone() {
        let mut words = [0x0700u16, 0x0300, 0x0100, 0x0000];
        lru_initial_ranks(&mut words);
        assert_eq!(words, [0x0700, 0x0301, 0x0102, 0x0003]);
        for way in [3, 2, 1, 0, 3] {
            lru_touch(&mut words, way);
        }
        assert_eq!(words, [0x0701, 0x0302, 0x0103, 0x0000]);
        assert_eq!(lru_victim(&words), 2);
    }

    #[test]
    fn plru_needs_power_of_two_ways() {
        assert!(Replacement::TreePlru.check_ways(12).is_err());
        assert!(Replacement::TreePlru.check_ways(16).is_ok());
        assert!(Replacement::Lru.check_ways(12).is_ok());
    }
}
