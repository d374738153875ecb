//! [`PageRuns`]: which pages of the coloured area are free, as runs of
//! consecutive pages.
//!
//! A request for `n` pages takes the smallest freed run that fits (best
//! fit, lowest start on ties), splitting it; only if no freed run fits does
//! it take never-used pages from the *frontier* (kim2013 footnote 5: freed
//! pages are reused first). A freed run merges with free neighbours. The
//! area's pages are in colour rotation, so any run takes the colours round
//! robin (kim2013 Section III-C). Pure bookkeeping over page indices; the
//! maps allocate from the shim's bootstrap arena.
//!
//! Aligned requests are aligned in *addresses*, not in indices: the area
//! starts wherever the kernel put it, so index 0 is page number
//! `first_page` of the address space ([`PageRuns::at`]). Pages taken from
//! the frontier were never handed out ([`PageRuns::frontier`]): they still
//! hold what they held when they entered the area, which `calloc` uses.

use std::collections::{BTreeMap, BTreeSet};

/// Free runs and the frontier of an area of pages; see the module
/// documentation.
#[derive(Debug, Default)]
pub struct PageRuns {
    /// Freed runs: start → length.
    by_start: BTreeMap<usize, usize>,
    /// The same runs by (length, start), for best fit.
    by_length: BTreeSet<(usize, usize)>,
    /// First never-used page.
    frontier: usize,
    /// Pages in the area (the frontier can advance up to here).
    end: usize,
    /// Pages in freed runs.
    freed_pages: usize,
    /// The page number (address / page size) of index 0.
    first_page: usize,
}

impl PageRuns {
    /// No pages.
    pub fn new() -> Self {
        Self::default()
    }

    /// No pages, index 0 being page number `first_page` of the address
    /// space (so [`PageRuns::alloc_aligned`] aligns addresses).
    pub fn at(first_page: usize) -> Self {
        Self {
            first_page,
            ..Self::default()
        }
    }

    /// The first never-used page: every page from here on was never
    /// handed out, every freed run lies before it.
    pub fn frontier(&self) -> usize {
        self.frontier
    }

    /// The first index at or after `index` whose page number is a
    /// multiple of `align` (a power of two), `None` past `usize::MAX`.
    fn align_up(&self, index: usize, align: usize) -> Option<usize> {
        let number = index.checked_add(self.first_page)?;
        Some(number.checked_next_multiple_of(align)? - self.first_page)
    }

    /// The area now has `pages` pages (it only grows).
    pub fn grow_to(&mut self, pages: usize) {
        self.end = self.end.max(pages);
    }

    /// Pages in the area.
    pub fn end(&self) -> usize {
        self.end
    }

    /// Free pages (freed runs and never used).
    pub fn free_pages(&self) -> usize {
        self.freed_pages + (self.end - self.frontier)
    }

    /// Pages that were never handed out.
    pub fn never_used(&self) -> usize {
        self.end - self.frontier
    }

    /// The least number of pages the area must have for `pages` pages
    /// aligned to `align` to fit at all (the first aligned index plus
    /// `pages`); `None` if no index can be that aligned.
    pub fn least_end_for(&self, pages: usize, align: usize) -> Option<usize> {
        self.align_up(0, align.max(1))?.checked_add(pages)
    }

    /// `pages` consecutive free pages (best fit among freed runs, else the
    /// frontier); `None` if neither has room.
    pub fn alloc(&mut self, pages: usize) -> Option<usize> {
        if pages == 0 {
            return None;
        }
        if let Some(&(length, start)) = self.by_length.range((pages, 0)..).next() {
            self.remove_run(start, length);
            if length > pages {
                self.insert_run(start + pages, length - pages);
            }
            return Some(start);
        }
        if self.end - self.frontier >= pages {
            let start = self.frontier;
            self.frontier += pages;
            return Some(start);
        }
        None
    }

    /// `pages` pages whose first page number (address / page size) is a
    /// multiple of `align` (a power of two; for aligned requests): best
    /// fit as [`PageRuns::alloc`], among runs that hold an aligned start;
    /// the unaligned head and the tail go back.
    pub fn alloc_aligned(&mut self, pages: usize, align: usize) -> Option<usize> {
        if align <= 1 {
            return self.alloc(pages);
        }
        let fits = |start: usize, length: usize| {
            let aligned = self.align_up(start, align)?;
            (aligned.checked_add(pages)? <= start + length).then_some(aligned)
        };
        let found = self
            .by_length
            .range((pages, 0)..)
            .find_map(|&(length, start)| fits(start, length).map(|a| (start, length, a)));
        if let Some((start, length, aligned)) = found {
            self.remove_run(start, length);
            if aligned > start {
                self.insert_run(start, aligned - start);
            }
            let end = start + length;
            if aligned + pages < end {
                self.insert_run(aligned + pages, end - aligned - pages);
            }
            return Some(aligned);
        }
        let aligned = self.align_up(self.frontier, align)?;
        if aligned.checked_add(pages)? > self.end {
            return None;
        }
        if aligned > self.frontier {
            // The skipped head counts as used once, then freed.
            let head = (self.frontier, aligned - self.frontier);
            self.frontier = aligned;
            self.free(head.0, head.1);
        }
        self.frontier += pages;
        Some(aligned)
    }

    /// Takes exactly `[start, start + pages)` if all of it is free (to grow
    /// a block in place); false otherwise, and nothing changes.
    pub fn take_exact(&mut self, start: usize, pages: usize) -> bool {
        if pages == 0 {
            return true;
        }
        // In a freed run?
        if let Some((&run, &length)) = self.by_start.range(..=start).next_back()
            && run + length >= start + pages
        {
            self.remove_run(run, length);
            if start > run {
                self.insert_run(run, start - run);
            }
            if run + length > start + pages {
                self.insert_run(start + pages, run + length - start - pages);
            }
            return true;
        }
        // At the frontier?
        if start == self.frontier && self.end - self.frontier >= pages {
            self.frontier += pages;
            return true;
        }
        false
    }

    /// Returns `[start, start + pages)`, merging with free neighbours.
    pub fn free(&mut self, start: usize, pages: usize) {
        if pages == 0 {
            return;
        }
        debug_assert!(start + pages <= self.frontier, "freeing never-used pages");
        let (mut start, mut pages) = (start, pages);
        if let Some((&before, &length)) = self.by_start.range(..start).next_back()
            && before + length == start
        {
            self.remove_run(before, length);
            start = before;
            pages += length;
        }
        if let Some(&length) = self.by_start.get(&(start + pages)) {
            self.remove_run(start + pages, length);
            pages += length;
        }
        self.insert_run(start, pages);
    }

    fn insert_run(&mut self, start: usize, length: usize) {
        self.by_start.insert(start, length);
        self.by_length.insert((length, start));
        self.freed_pages += length;
    }

    fn remove_run(&mut self, start: usize, length: usize) {
        self.by_start.remove(&start);
        self.by_length.remove(&(length, start));
        self.freed_pages -= length;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn freed_runs_first_best_fit_and_merging() {
        let mut runs = PageRuns::new();
        assert_eq!(runs.alloc(1), None, "an empty area has no page");
        runs.grow_to(100);
        let a = runs.alloc(10).unwrap();
        let b = runs.alloc(5).unwrap();
        let c = runs.alloc(20).unwrap();
        assert_eq!((a, b, c), (0, 10, 15));
        runs.free(a, 10);
        runs.free(c, 20);
        // Best fit: a 4-page request takes the 10-page run, not the 20.
        assert_eq!(runs.alloc(4), Some(0));
        // Freed first: 6 pages fit the rest of the first run (4..10).
        assert_eq!(runs.alloc(6), Some(4));
        assert_eq!(runs.free_pages(), 20 + 65);
        // Merging: b (10..15) joins the freed run 15..35 after it.
        runs.free(b, 5);
        assert_eq!(runs.alloc(25), Some(10));
        // Larger than any freed run: the frontier.
        assert_eq!(runs.alloc(30), Some(35));
        assert_eq!(runs.alloc(100), None);
        runs.grow_to(200);
        assert_eq!(runs.alloc(100), Some(65));
    }

    #[test]
    fn aligned_and_exact_requests() {
        let mut runs = PageRuns::new();
        runs.grow_to(64);
        assert_eq!(runs.alloc(3), Some(0));
        assert_eq!(runs.alloc_aligned(4, 8), Some(8));
        assert_eq!(runs.free_pages(), 64 - 7, "the skipped head 3..8 is free");
        assert_eq!(runs.alloc(5), Some(3), "the head is reused");
        // Grow in place: 12..16 follows the aligned block.
        assert!(runs.take_exact(12, 4));
        assert!(!runs.take_exact(12, 1), "already taken");
        runs.free(8, 8);
        assert!(runs.take_exact(10, 2), "inside a freed run");
        assert_eq!(runs.alloc(2), Some(8), "the run's head is still free");
        assert_eq!(runs.alloc(4), Some(12), "and its tail");
    }

    #[test]
    fn alignment_is_of_addresses_and_the_frontier_marks_fresh_pages() {
        // Index 0 is page number 5: 8-page alignment falls on index 3, 11...
        let mut runs = PageRuns::at(5);
        runs.grow_to(64);
        assert_eq!(runs.least_end_for(2, 8), Some(5));
        assert_eq!(runs.alloc_aligned(2, 8), Some(3));
        assert_eq!(runs.frontier(), 5, "the head 0..3 was skipped and freed");
        assert_eq!(runs.alloc_aligned(1, 8), Some(11));
        assert_eq!(runs.alloc(3), Some(0), "the freed head first");
        assert!(runs.frontier() > 11, "frontier pages were never handed out");
        assert_eq!(runs.least_end_for(1, 1 << 62), Some((1 << 62) - 5 + 1));
        assert_eq!(runs.alloc_aligned(1, 1 << 62), None, "beyond the area");
        assert_eq!(
            PageRuns::at(usize::MAX - 1).least_end_for(1, 1 << 63),
            None,
            "no index is that aligned"
        );
    }
}
