//! Access streams over a working set of physical pages.

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};

use crate::error::SimError;

/// How a core walks its working set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AccessPattern {
    /// Every line in page-list order, then again from the start.
    Sequential,
    /// A uniformly random line of the working set per access (seeded).
    Random,
}

/// The lines of a set of physical pages, addressable by line number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkingSet {
    page_addresses: Vec<u64>,
    lines_per_page_shift: u32,
    line_shift: u32,
}

impl WorkingSet {
    /// The working set made of frames `pfns` of `page_size` bytes, in `line_size`-byte lines.
    pub fn from_pfns(pfns: &[u64], page_size: u64, line_size: u64) -> Result<Self, SimError> {
        if !page_size.is_power_of_two() || !line_size.is_power_of_two() || line_size > page_size {
            return Err(SimError::invalid(
                "page_size",
                "powers of two with line size ≤ page size",
                format!("page size {page_size} B, line size {line_size} B"),
            ));
        }
        let page_addresses = pfns
            .iter()
            .map(|&pfn| {
                pfn.checked_mul(page_size)
                    .ok_or(SimError::AddressOverflow { pfn, page_size })
            })
            .collect::<Result<Vec<u64>, SimError>>()?;
        Ok(WorkingSet {
            page_addresses,
            lines_per_page_shift: (page_size / line_size).trailing_zeros(),
            line_shift: line_size.trailing_zeros(),
        })
    }

    /// Number of pages.
    pub fn pages(&self) -> usize {
        self.page_addresses.len()
    }

    /// Number of lines: pages × lines per page.
    pub fn lines(&self) -> u64 {
        (self.page_addresses.len() as u64) << self.lines_per_page_shift
    }

    /// Size in bytes.
    pub fn bytes(&self) -> u64 {
        self.lines() << self.line_shift
    }

    /// Physical address of line number `line` (`line < lines()`).
    #[inline]
    pub fn line_address(&self, line: u64) -> u64 {
        let page = (line >> self.lines_per_page_shift) as usize;
        let offset = (line & ((1 << self.lines_per_page_shift) - 1)) << self.line_shift;
        self.page_addresses[page] + offset
    }
}

/// The position of one core in its stream.
#[derive(Debug, Clone)]
pub struct StreamCursor {
    pattern: AccessPattern,
    next_line: u64,
    rng: Xoshiro256PlusPlus,
}

impl StreamCursor {
    /// A cursor at the start of a stream; `seed` drives the random pattern.
    pub fn new(pattern: AccessPattern, seed: u64) -> Self {
        StreamCursor {
            pattern,
            next_line: 0,
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
        }
    }

    /// The next address of the stream over `working_set` (which must not be empty).
    #[inline]
    pub fn next_address(&mut self, working_set: &WorkingSet) -> u64 {
        let lines = working_set.lines();
        let line = match self.pattern {
            AccessPattern::Sequential => {
                let line = self.next_line;
                self.next_line = if line + 1 == lines { 0 } else { line + 1 };
                line
            }
            AccessPattern::Random => self.rng.random_range(0..lines),
        };
        working_set.line_address(line)
    }
}

/// `accesses` addresses of `pattern` over `working_set`, materialized.
pub fn generate(
    working_set: &WorkingSet,
    pattern: AccessPattern,
    accesses: usize,
    seed: u64,
) -> Vec<u64> {
    if working_set.lines() == 0 {
        return Vec::new();
    }
    let mut cursor = StreamCursor::new(pattern, seed);
    (0..accesses)
        .map(|_| cursor.next_address(working_set))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequential_walks_pages_in_list_order_and_wraps() {
        let working_set = WorkingSet::from_pfns(&[5, 2], 256, 64).unwrap();
        assert_eq!(working_set.lines(), 8);
        assert_eq!(working_set.bytes(), 512);
        let stream = generate(&working_set, AccessPattern::Sequential, 10, 0);
        assert_eq!(
            stream,
            vec![1280, 1344, 1408, 1472, 512, 576, 640, 704, 1280, 1344]
        );
    }

    #[test]
    fn random_stays_inside_the_working_set_and_covers_it() {
        let working_set = WorkingSet::from_pfns(&[5, 2], 256, 64).unwrap();
        let stream = generate(&working_set, AccessPattern::Random, 1000, 42);
        let lines: std::collections::HashSet<u64> = stream.iter().copied().collect();
        let expected: std::collections::HashSet<u64> =
            (0..8).map(|line| working_set.line_address(line)).collect();
        assert_eq!(lines, expected);
        assert_eq!(
            stream,
            generate(&working_set, AccessPattern::Random, 1000, 42),
            "seeded"
        );
    }

    #[test]
    fn address_overflow_is_an_error() {
        assert_eq!(
            WorkingSet::from_pfns(&[u64::MAX / 4], 4096, 64).unwrap_err(),
            SimError::AddressOverflow {
                pfn: u64::MAX / 4,
                page_size: 4096
            }
        );
        assert!(WorkingSet::from_pfns(&[1], 4096, 8192).is_err());
    }
}
