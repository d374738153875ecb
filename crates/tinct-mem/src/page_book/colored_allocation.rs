//! Colored allocation over the color lists of a [`PageBook`] (kim2013
//! Section III-C, cache reservation by page coloring): a request for a
//! set of colors takes pages from the colors in round-robin order
//! ([`ColorCursor`] keeps the rotation across requests), so each color
//! gives the same number of pages and placement is deterministic; a freed
//! page is reused before never-used ones (footnote 5). Within those rules
//! the pages are chosen to be virtually contiguous where possible, so that
//! multi-page spans move in runs.

use super::{PageBook, PageId};
use crate::error::MemError;

impl PageBook {
    /// Takes the first free page of `color`: a freed page if there is one,
    /// else the never-used page with the lowest address.
    #[inline]
    pub fn alloc_in_color(&mut self, color: u32) -> Result<PageId, MemError> {
        self.check_color(color)?;
        let page = self.by_color.first(color as usize).ok_or_else(|| {
            MemError::Exhausted(format!(
                "color {color} has no free page (0 of {} free)",
                self.color_total[color as usize]
            ))
        })?;
        self.take(page);
        Ok(PageId(page))
    }
    /// kim2013 Section III-C: `count` pages from the colors of `cursor`,
    /// round robin starting at the cursor's next color, appended to `out`.
    /// All or nothing: if a color cannot give its share, nothing is taken.
    ///
    /// Within those rules the pages are chosen to be *virtually
    /// contiguous* where possible, so that a span built from them needs
    /// one kernel mapping per run instead of one per page (see
    /// [`PageBook::alloc_colored_after`]).
    pub fn alloc_colored(
        &mut self,
        cursor: &mut ColorCursor,
        count: usize,
        out: &mut Vec<PageId>,
    ) -> Result<(), MemError> {
        self.alloc_colored_after(cursor, count, None, out)
    }

    /// [`PageBook::alloc_colored`] continuing a run after page `after`
    /// (e.g. the last page of a span being grown).
    ///
    /// Which page of the round-robin color `c` is taken:
    /// 1. the page right after the previously taken page (`after` for the
    ///    first one), if it is free and of color `c` — when the requested
    ///    colors are consecutive, physically contiguous frames make this
    ///    the common case;
    /// 2. else, among the first few candidates of `c`'s free list, one
    ///    whose next page is free and of the next color in the rotation
    ///    (the start of a run);
    /// 3. else the head of `c`'s free list.
    ///
    /// Rules 1 and 2 never take a never-used page while `c` has a freed
    /// one (freed pages first, kim2013 footnote 5), and every color still
    /// gives its equal share (Section III-C); placement stays
    /// deterministic. Never-used pages are therefore handed out in address
    /// order except where a run is continued.
    pub fn alloc_colored_after(
        &mut self,
        cursor: &mut ColorCursor,
        count: usize,
        after: Option<PageId>,
        out: &mut Vec<PageId>,
    ) -> Result<(), MemError> {
        let k = cursor.colors.len();
        for (offset, &color) in cursor.colors.iter().enumerate() {
            self.check_color(color)?;
            let position = (offset + k - cursor.next) % k;
            let share = count / k + usize::from(position < count % k);
            let free = self.free_in_color(color);
            if free < share {
                return Err(MemError::Exhausted(format!(
                    "{count} pages over {k} colors need {share} pages of color {color}, which \
                     has {free} free (of {})",
                    self.color_total[color as usize]
                )));
            }
        }
        out.reserve(count);
        let mut previous = after.map(|page| page.0);
        for _ in 0..count {
            let color = cursor.colors[cursor.next];
            cursor.next = (cursor.next + 1) % k;
            let next_color = cursor.colors[cursor.next];
            let page = self.pick_in_color(color, next_color, previous);
            self.take(page);
            out.push(PageId(page));
            previous = Some(page);
        }
        Ok(())
    }

    /// Free-list candidates examined for the start of a run (rule 2 of
    /// [`PageBook::alloc_colored_after`]); small, so a request stays O(1)
    /// per page.
    const RUN_LOOKAHEAD: usize = 8;

    /// True if `page` exists, is free and has `color`.
    #[inline]
    fn is_free_in(&self, page: u32, color: u32) -> bool {
        let index = page as usize;
        index < self.used.len() && !self.used[index] && self.color[index] == color
    }

    /// The page of `color` to take next (rules of
    /// [`PageBook::alloc_colored_after`]); the color must have a free page.
    #[inline]
    fn pick_in_color(&self, color: u32, next_color: u32, previous: Option<u32>) -> u32 {
        let head = self
            .by_color
            .first(color as usize)
            .expect("shares checked by the caller");
        // Freed pages sit at the front of the list: if the head is a freed
        // page, only freed pages may be taken now.
        let freed_only = self.ever_used[head as usize];
        let allowed = |page: u32| !freed_only || self.ever_used[page as usize];
        if let Some(follower) = previous.and_then(|p| p.checked_add(1))
            && self.is_free_in(follower, color)
            && allowed(follower)
        {
            return follower;
        }
        self.by_color
            .iter(color as usize)
            .take(Self::RUN_LOOKAHEAD)
            .take_while(|&page| allowed(page))
            .find(|&page| {
                page.checked_add(1)
                    .is_some_and(|n| self.is_free_in(n, next_color))
            })
            .unwrap_or(head)
    }
}

/// A set of colors with a round-robin position (kim2013 Section III-C).
///
/// One cursor per task (or per heap) keeps successive requests in the
/// same rotation, so a task's pages spread evenly over its colors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColorCursor {
    colors: Vec<u32>,
    next: usize,
}

impl ColorCursor {
    /// A cursor over `colors` (non-empty, no repeats), starting at the first.
    pub fn new(colors: &[u32]) -> Result<Self, MemError> {
        if colors.is_empty() {
            return Err(MemError::Request(
                "empty color set: expected at least one color".into(),
            ));
        }
        for (i, color) in colors.iter().enumerate() {
            if colors[..i].contains(color) {
                return Err(MemError::Request(format!(
                    "color {color} appears twice in the color set {colors:?}"
                )));
            }
        }
        Ok(Self {
            colors: colors.to_vec(),
            next: 0,
        })
    }

    /// The colors, in rotation order.
    pub fn colors(&self) -> &[u32] {
        &self.colors
    }

    /// True if `color` is in the set.
    pub fn contains(&self, color: u32) -> bool {
        self.colors.contains(&color)
    }
}

#[cfg(test)]
mod tests {
    use super::super::Modes;
    use super::super::test_books::*;
    use super::*;

    #[test]
    fn round_robin_gives_equal_counts_in_a_fixed_order() {
        let mut book = uniform_book(4);
        let mut cursor = ColorCursor::new(&[2, 0, 3]).unwrap();
        let mut pages = Vec::new();
        book.alloc_colored(&mut cursor, 9, &mut pages).unwrap();
        let colors: Vec<u32> = pages.iter().map(|&p| book.class(p).color).collect();
        assert_eq!(colors, vec![2, 0, 3, 2, 0, 3, 2, 0, 3]);
        // The rotation continues where it stopped.
        pages.clear();
        book.alloc_colored(&mut cursor, 2, &mut pages).unwrap();
        let colors: Vec<u32> = pages.iter().map(|&p| book.class(p).color).collect();
        assert_eq!(colors, vec![2, 0]);
        // Never-used pages come in address order within a color.
        let all = book.free_list_of_color(1);
        assert!(all.windows(2).all(|w| w[0] < w[1]));
        // Same state, same request: same pages (deterministic).
        let mut twin = uniform_book(4);
        let mut twin_cursor = ColorCursor::new(&[2, 0, 3]).unwrap();
        let (mut a, mut b) = (Vec::new(), Vec::new());
        twin.alloc_colored(&mut twin_cursor, 7, &mut a).unwrap();
        let mut again = uniform_book(4);
        let mut again_cursor = ColorCursor::new(&[2, 0, 3]).unwrap();
        again.alloc_colored(&mut again_cursor, 7, &mut b).unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn freed_pages_are_reused_before_never_used_ones() {
        let mut book = uniform_book(2);
        let first = book.alloc_in_color(1).unwrap();
        let second = book.alloc_in_color(1).unwrap();
        let third = book.alloc_in_color(1).unwrap();
        book.free(second).unwrap();
        book.free(first).unwrap();
        assert_eq!(book.alloc_in_color(1).unwrap(), first, "last freed first");
        assert_eq!(book.alloc_in_color(1).unwrap(), second);
        let next = book.alloc_in_color(1).unwrap();
        assert!(next > third, "then never-used pages, in address order");
        // Freed pages also go first in their bank list.
        book.free(third).unwrap();
        let class = book.class(third);
        let grant = book
            .alloc_bank_aware(request(class.controller, class.bank, Modes::EXACT))
            .unwrap();
        assert_eq!(grant.first, third);
    }

    #[test]
    fn consecutive_colors_take_virtually_contiguous_runs() {
        // Page i of the uniform book has color i % 4: consecutive colors
        // are consecutive pages, as with physically contiguous frames.
        let mut book = uniform_book(4);
        let mut cursor = ColorCursor::new(&[0, 1, 2, 3]).unwrap();
        let mut pages = Vec::new();
        book.alloc_colored(&mut cursor, 8, &mut pages).unwrap();
        assert_eq!(pages, (0..8).map(PageId).collect::<Vec<_>>());
        // A run continues after a given page (a span being grown).
        let mut more = Vec::new();
        book.alloc_colored_after(&mut cursor, 4, Some(PageId(7)), &mut more)
            .unwrap();
        assert_eq!(more, (8..12).map(PageId).collect::<Vec<_>>());
        // Without a preceding page, the start of a run is preferred to an
        // isolated list head: page 12 (color 0) is followed by page 13
        // (color 1), so colors [0, 2] skip ahead to a color-0 page
        // followed by a color-2 page only if one exists within the
        // look-ahead; none does (color 0 is always followed by color 1),
        // so the head is taken: equal shares, address order.
        let mut cursor = ColorCursor::new(&[0, 2]).unwrap();
        let mut spread = Vec::new();
        book.alloc_colored(&mut cursor, 4, &mut spread).unwrap();
        assert_eq!(spread, vec![PageId(12), PageId(14), PageId(16), PageId(18)]);
    }

    #[test]
    fn runs_never_take_never_used_pages_before_freed_ones() {
        let mut book = uniform_book(4);
        let mut cursor = ColorCursor::new(&[0, 1, 2, 3]).unwrap();
        let mut pages = Vec::new();
        book.alloc_colored(&mut cursor, 8, &mut pages).unwrap();
        // Free page 6 (color 2): the next color-2 page must be page 6 even
        // though page 10 would continue the run 8, 9, 10.
        book.free(PageId(6)).unwrap();
        let mut next = Vec::new();
        book.alloc_colored(&mut cursor, 4, &mut next).unwrap();
        assert_eq!(next, vec![PageId(8), PageId(9), PageId(6), PageId(11)]);
        // Freed pages that form a run are taken as a run.
        for page in [2, 1, 0, 3] {
            book.free(PageId(page)).unwrap();
        }
        let mut again = Vec::new();
        book.alloc_colored(&mut cursor, 4, &mut again).unwrap();
        assert_eq!(again, (0..4).map(PageId).collect::<Vec<_>>());
    }

    #[test]
    fn a_run_starts_at_a_page_whose_successor_has_the_next_color() {
        // Color 0 pages: 0 (followed by color 3), then 2 (followed by
        // color 1). The request [0, 1] starts at page 2, within the
        // look-ahead, so both pages form one run.
        let frames = vec![
            frame(0, 0, 0, 0),
            frame(3, 0, 0, 1),
            frame(0, 0, 0, 2),
            frame(1, 0, 0, 3),
        ];
        let mut book = PageBook::new(mapping(), frames).unwrap();
        let mut cursor = ColorCursor::new(&[0, 1]).unwrap();
        let mut pages = Vec::new();
        book.alloc_colored(&mut cursor, 2, &mut pages).unwrap();
        assert_eq!(pages, vec![PageId(2), PageId(3)]);
    }

    #[test]
    fn colored_requests_are_all_or_nothing() {
        let mut book = uniform_book(1);
        // Each color has 8 pages (4 banks x 2 controllers).
        let mut cursor = ColorCursor::new(&[0, 1]).unwrap();
        let mut pages = Vec::new();
        let err = book
            .alloc_colored(&mut cursor, 17, &mut pages)
            .unwrap_err()
            .to_string();
        assert!(err.contains("color 0") && err.contains("9 pages"), "{err}");
        assert!(pages.is_empty());
        assert_eq!(book.free_pages(), 32);
        book.alloc_colored(&mut cursor, 16, &mut pages).unwrap();
        assert_eq!(book.free_in_color(0) + book.free_in_color(1), 0);
        assert!(book.alloc_in_color(0).is_err());
    }
}
