//! [`PageBook`]: the bookkeeping of a pool's pages, without any memory.
//!
//! Pages are numbered `0..pages` in virtual address order. Each page has a
//! frame number and a class (color, bank, controller) and, while free, sits
//! in its color list and in its (controller, bank) list. The book knows
//! nothing about mmap: [`crate::Pool`] owns the memory, and tests build
//! books from synthetic frame numbers to control the free lists exactly.
//!
//! * Colored allocation: kim2013 Section III-C — a request for a set of
//!   colors takes pages from the colors in round-robin order, so each color
//!   gives the same number of pages and placement is deterministic; a freed
//!   page is reused before never-used ones (footnote 5).
//! * Bank/controller-aware allocation: chandru-mueller Algorithm 1, see
//!   [`PageBook::alloc_bank_aware`].

use serde::Serialize;
use std::ops::BitOr;

use crate::error::MemError;
use crate::lists::ListFamily;
use crate::mapping::{AddressMapping, PageClass};

/// Index of a page in its pool (virtual address order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct PageId(pub u32);

impl PageId {
    /// The index as `usize`.
    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Fallback modes of chandru-mueller Algorithm 1, combined as a bit mask.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Modes(pub u32);

impl Modes {
    /// No fallback: only the requested controller and bank.
    pub const EXACT: Modes = Modes(0);
    /// Fall back to the requested controller's bank with the most free memory.
    pub const CONTROLLER_RESTRICTED: Modes = Modes(1);
    /// Fall back to the controller and bank with the most free memory.
    pub const CONTROLLER_UNRESTRICTED: Modes = Modes(2);
    /// Fall back to a contiguous block spanning banks and controllers.
    pub const SPLIT: Modes = Modes(4);
    /// Every mode.
    pub const ALL: Modes = Modes(7);

    /// True if every bit of `other` is set in `self`.
    pub fn contains(self, other: Modes) -> bool {
        self.0 & other.0 == other.0
    }

    /// Rejects unknown bits.
    pub fn validate(self) -> Result<Self, MemError> {
        if self.0 & !Self::ALL.0 != 0 {
            return Err(MemError::Request(format!(
                "modes mask {:#x}: expected a combination of CONTROLLER_RESTRICTED (1), \
                 CONTROLLER_UNRESTRICTED (2) and SPLIT (4)",
                self.0
            )));
        }
        Ok(self)
    }
}

impl BitOr for Modes {
    type Output = Modes;
    fn bitor(self, rhs: Modes) -> Modes {
        Modes(self.0 | rhs.0)
    }
}

/// The step of Algorithm 1 that served a bank-aware request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    /// The requested controller and bank.
    Exact,
    /// Another bank of the requested controller (most free memory first).
    ControllerRestricted,
    /// Any controller and bank (most free memory first).
    ControllerUnrestricted,
    /// A contiguous block that may span banks and controllers.
    Split,
}

/// A bank-aware request (input of Algorithm 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BankRequest {
    /// Requested memory controller.
    pub controller: u32,
    /// Requested bank within that controller.
    pub bank: u32,
    /// Size in bytes (a chunk is one page; larger requests need SPLIT).
    pub size: u64,
    /// Fallback modes.
    pub modes: Modes,
}

/// The answer to a [`BankRequest`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct BankGrant {
    /// First page of the block.
    pub first: PageId,
    /// Number of contiguous pages.
    pub pages: u32,
    /// The step that served the request.
    pub step: Step,
}

/// Free and used page counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Counts {
    /// Free pages.
    pub free: u64,
    /// Pages handed out.
    pub used: u64,
}

/// Counts of one (controller, bank) (retired pages are not counted).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct BankCounts {
    /// Controller index.
    pub controller: u32,
    /// Bank index within the controller.
    pub bank: u32,
    /// Free pages.
    pub free: u64,
    /// Pages handed out.
    pub used: u64,
}

/// Pool statistics: free and used pages per color, bank and controller.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PoolStats {
    /// True when frame numbers were not readable and the pool runs without
    /// placement control (classes come from virtual addresses).
    pub uncolored: bool,
    /// Page size in bytes.
    pub page_size: u64,
    /// All pages.
    pub total: Counts,
    /// Per color, index = color.
    pub colors: Vec<Counts>,
    /// Per (controller, bank), controller-major.
    pub banks: Vec<BankCounts>,
    /// Per controller, index = controller.
    pub controllers: Vec<Counts>,
}

/// Bookkeeping of all pages of a pool.
#[derive(Debug, Clone)]
pub struct PageBook {
    mapping: AddressMapping,
    frames: Vec<u64>,
    color: Vec<u32>,
    bank_slot: Vec<u32>,
    used: Vec<bool>,
    /// Pages handed out at least once (a free page with this flag is a
    /// *freed* page, reused before never-used ones: kim2013 footnote 5).
    ever_used: Vec<bool>,
    /// Pages taken out of the pool for good (see [`PageBook::retire`]);
    /// they also count as used, so nothing hands them out.
    retired: Vec<bool>,
    retired_pages: u32,
    by_color: ListFamily,
    by_bank: ListFamily,
    color_total: Vec<u32>,
    bank_total: Vec<u32>,
    controller_free: Vec<u32>,
    controller_total: Vec<u32>,
    free_pages: u32,
    /// log2(banks): a bank slot shifted right by it is the controller.
    bank_shift: u32,
}

impl PageBook {
    /// Files pages with the given frame numbers (page `i` has `frames[i]`)
    /// into free lists, in page order (never-used pages are handed out in
    /// virtual address order).
    pub fn new(mapping: AddressMapping, frames: Vec<u64>) -> Result<Self, MemError> {
        if frames.len() >= u32::MAX as usize {
            return Err(MemError::Request(format!(
                "{} pages: expected fewer than 2^32",
                frames.len()
            )));
        }
        let pages = frames.len();
        let (colors, banks, controllers) = (
            mapping.colors() as usize,
            mapping.banks() as usize,
            mapping.controllers() as usize,
        );
        let mut book = Self {
            color: Vec::with_capacity(pages),
            bank_slot: Vec::with_capacity(pages),
            used: vec![false; pages],
            ever_used: vec![false; pages],
            retired: vec![false; pages],
            retired_pages: 0,
            by_color: ListFamily::new(colors, pages),
            by_bank: ListFamily::new(banks * controllers, pages),
            color_total: vec![0; colors],
            bank_total: vec![0; banks * controllers],
            controller_free: vec![0; controllers],
            controller_total: vec![0; controllers],
            free_pages: pages as u32,
            bank_shift: mapping.banks().trailing_zeros(),
            frames,
            mapping,
        };
        for page in 0..pages {
            let class = book.mapping.classify_frame(book.frames[page]);
            let slot = class.controller as usize * banks + class.bank as usize;
            book.color.push(class.color);
            book.bank_slot.push(slot as u32);
            book.by_color.push_back(class.color as usize, page as u32);
            book.by_bank.push_back(slot, page as u32);
            book.color_total[class.color as usize] += 1;
            book.bank_total[slot] += 1;
            book.controller_free[class.controller as usize] += 1;
            book.controller_total[class.controller as usize] += 1;
        }
        Ok(book)
    }

    /// The address mapping.
    pub fn mapping(&self) -> &AddressMapping {
        &self.mapping
    }

    /// Number of pages.
    pub fn pages(&self) -> usize {
        self.frames.len()
    }

    /// Number of free pages.
    pub fn free_pages(&self) -> usize {
        self.free_pages as usize
    }

    /// Frame number of a page.
    pub fn frame(&self, page: PageId) -> u64 {
        self.frames[page.index()]
    }

    /// Class of a page.
    pub fn class(&self, page: PageId) -> PageClass {
        let slot = self.bank_slot[page.index()];
        let banks = self.mapping.banks();
        PageClass {
            color: self.color[page.index()],
            bank: slot % banks,
            controller: slot / banks,
        }
    }

    /// True if the page is handed out.
    pub fn is_used(&self, page: PageId) -> bool {
        self.used[page.index()]
    }

    /// Free pages of one color.
    pub fn free_in_color(&self, color: u32) -> usize {
        self.by_color.len(color as usize) as usize
    }

    /// Free pages of one (controller, bank).
    pub fn free_in_bank(&self, controller: u32, bank: u32) -> usize {
        self.by_bank.len(self.slot(controller, bank)) as usize
    }

    /// Free pages of one controller.
    pub fn free_in_controller(&self, controller: u32) -> usize {
        self.controller_free[controller as usize] as usize
    }

    fn slot(&self, controller: u32, bank: u32) -> usize {
        controller as usize * self.mapping.banks() as usize + bank as usize
    }

    /// Takes a free page out of both of its lists.
    #[inline]
    fn take(&mut self, page: u32) {
        let index = page as usize;
        debug_assert!(!self.used[index]);
        self.by_color.unlink(self.color[index] as usize, page);
        let slot = self.bank_slot[index] as usize;
        self.by_bank.unlink(slot, page);
        self.controller_free[slot >> self.bank_shift] -= 1;
        self.used[index] = true;
        self.ever_used[index] = true;
        self.free_pages -= 1;
    }

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

    fn check_color(&self, color: u32) -> Result<(), MemError> {
        if color >= self.mapping.colors() {
            return Err(MemError::Request(format!(
                "color {color}: expected 0..{}",
                self.mapping.colors()
            )));
        }
        Ok(())
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

    /// Returns a page. Freed pages go to the front of their color and bank
    /// lists, so they are reused before never-used ones (kim2013 fn. 5).
    #[inline]
    pub fn free(&mut self, page: PageId) -> Result<(), MemError> {
        let index = page.index();
        match self.used.get(index) {
            None => {
                return Err(MemError::InvalidFree(format!(
                    "page {} is not in this pool of {} pages",
                    page.0,
                    self.pages()
                )));
            }
            Some(false) => {
                return Err(MemError::InvalidFree(format!(
                    "page {} is already free (double free)",
                    page.0
                )));
            }
            Some(true) if self.retired[index] => {
                return Err(MemError::InvalidFree(format!(
                    "page {} was retired from the pool",
                    page.0
                )));
            }
            Some(true) => {}
        }
        self.used[index] = false;
        self.free_pages += 1;
        self.by_color.push_front(self.color[index] as usize, page.0);
        let slot = self.bank_slot[index] as usize;
        self.by_bank.push_front(slot, page.0);
        self.controller_free[slot >> self.bank_shift] += 1;
        Ok(())
    }

    /// Takes a free page out of the pool for good (e.g. a color nobody will
    /// ask for, whose memory is given back to the kernel). Statistics no
    /// longer count it.
    pub fn retire(&mut self, page: PageId) -> Result<(), MemError> {
        let index = page.index();
        if self.used.get(index) != Some(&false) {
            return Err(MemError::Request(format!(
                "page {} cannot be retired: only free pages can",
                page.0
            )));
        }
        self.take(page.0);
        self.retired[index] = true;
        self.retired_pages += 1;
        let slot = self.bank_slot[index] as usize;
        self.color_total[self.color[index] as usize] -= 1;
        self.bank_total[slot] -= 1;
        self.controller_total[slot >> self.bank_shift] -= 1;
        Ok(())
    }

    /// True if the page was retired.
    pub fn is_retired(&self, page: PageId) -> bool {
        self.retired[page.index()]
    }

    /// chandru-mueller Algorithm 1 ("Bank aware algorithm allocator").
    ///
    /// A chunk is one page. A request of at most one page is tried, in
    /// order: (1) the requested controller and bank; (2) with
    /// CONTROLLER_RESTRICTED, the requested controller's banks in
    /// descending order of free memory; (3) with CONTROLLER_UNRESTRICTED,
    /// the controllers in descending order of free memory and, within
    /// each, its banks in descending order of free memory; (4) with SPLIT,
    /// the first contiguous run of free pages in address order, which may
    /// span banks and controllers. A request larger than a page cannot fit
    /// one chunk, so steps 1–3 find nothing and only SPLIT can serve it.
    /// Ties in free memory go to the lower index, so results are
    /// deterministic.
    pub fn alloc_bank_aware(&mut self, request: BankRequest) -> Result<BankGrant, MemError> {
        let modes = request.modes.validate()?;
        let (banks, controllers) = (self.mapping.banks(), self.mapping.controllers());
        if request.controller >= controllers || request.bank >= banks {
            return Err(MemError::Request(format!(
                "controller {} bank {}: expected controller 0..{controllers} and bank 0..{banks}",
                request.controller, request.bank
            )));
        }
        if request.size == 0 {
            return Err(MemError::Request(
                "size 0: expected at least one byte".into(),
            ));
        }
        let page_size = self.mapping.page_size;
        let pages = request.size.div_ceil(page_size);
        if pages == 1 {
            let single = |book: &mut Self, controller: u32, bank: u32, step: Step| {
                let slot = book.slot(controller, bank);
                book.by_bank.first(slot).map(|page| {
                    book.take(page);
                    BankGrant {
                        first: PageId(page),
                        pages: 1,
                        step,
                    }
                })
            };
            // Step 1: the requested controller and bank.
            if let Some(grant) = single(self, request.controller, request.bank, Step::Exact) {
                return Ok(grant);
            }
            // Step 2: banks of the requested controller, most free first.
            if modes.contains(Modes::CONTROLLER_RESTRICTED) {
                for bank in self.banks_by_free_memory(request.controller) {
                    if let Some(grant) =
                        single(self, request.controller, bank, Step::ControllerRestricted)
                    {
                        return Ok(grant);
                    }
                }
            }
            // Step 3: controllers, most free first; their banks, most free first.
            if modes.contains(Modes::CONTROLLER_UNRESTRICTED) {
                for controller in self.controllers_by_free_memory() {
                    for bank in self.banks_by_free_memory(controller) {
                        if let Some(grant) =
                            single(self, controller, bank, Step::ControllerUnrestricted)
                        {
                            return Ok(grant);
                        }
                    }
                }
            }
        }
        // Step 4: a contiguous block that may span banks and controllers.
        if let Some(first) = modes
            .contains(Modes::SPLIT)
            .then(|| self.first_free_run(pages))
            .flatten()
        {
            for page in first..first + pages as u32 {
                self.take(page);
            }
            return Ok(BankGrant {
                first: PageId(first),
                pages: pages as u32,
                step: Step::Split,
            });
        }
        Err(MemError::Exhausted(format!(
            "no free {} in controller {} bank {} with modes {:#x} ({}{}{}): {} pages free in \
             that bank, {} in that controller, {} in the pool",
            if pages == 1 {
                "page".to_string()
            } else {
                format!("run of {pages} contiguous pages")
            },
            request.controller,
            request.bank,
            modes.0,
            if modes.contains(Modes::CONTROLLER_RESTRICTED) {
                "CONTROLLER_RESTRICTED "
            } else {
                ""
            },
            if modes.contains(Modes::CONTROLLER_UNRESTRICTED) {
                "CONTROLLER_UNRESTRICTED "
            } else {
                ""
            },
            if modes.contains(Modes::SPLIT) {
                "SPLIT"
            } else {
                "no SPLIT"
            },
            self.free_in_bank(request.controller, request.bank),
            self.free_in_controller(request.controller),
            self.free_pages,
        )))
    }

    /// Banks of `controller` in descending order of free pages (ties: lower
    /// bank first) — the per-controller queue of chandru-mueller Section 3.
    pub fn banks_by_free_memory(&self, controller: u32) -> Vec<u32> {
        let mut banks: Vec<u32> = (0..self.mapping.banks()).collect();
        banks.sort_by_key(|&bank| std::cmp::Reverse(self.free_in_bank(controller, bank)));
        banks
    }

    /// Controllers in descending order of free pages (ties: lower first) —
    /// the shared controller queue of chandru-mueller Section 3.
    pub fn controllers_by_free_memory(&self) -> Vec<u32> {
        let mut controllers: Vec<u32> = (0..self.mapping.controllers()).collect();
        controllers.sort_by_key(|&c| std::cmp::Reverse(self.controller_free[c as usize]));
        controllers
    }

    /// First run of `pages` free pages in address order.
    fn first_free_run(&self, pages: u64) -> Option<u32> {
        let mut run_start = 0usize;
        let mut run_len = 0u64;
        for (index, &used) in self.used.iter().enumerate() {
            if used {
                run_len = 0;
                run_start = index + 1;
            } else {
                run_len += 1;
                if run_len == pages {
                    return Some(run_start as u32);
                }
            }
        }
        None
    }

    /// Free pages of `color`, in the order they would be handed out.
    pub fn free_list_of_color(&self, color: u32) -> Vec<PageId> {
        self.by_color.iter(color as usize).map(PageId).collect()
    }

    /// Statistics (`uncolored` is filled in by the pool).
    pub fn stats(&self, uncolored: bool) -> PoolStats {
        let banks = self.mapping.banks();
        let counts = |free: u32, total: u32| Counts {
            free: u64::from(free),
            used: u64::from(total - free),
        };
        PoolStats {
            uncolored,
            page_size: self.mapping.page_size,
            total: counts(self.free_pages, self.pages() as u32 - self.retired_pages),
            colors: (0..self.color_total.len())
                .map(|c| counts(self.by_color.len(c), self.color_total[c]))
                .collect(),
            banks: (0..self.bank_total.len())
                .map(|slot| {
                    let Counts { free, used } =
                        counts(self.by_bank.len(slot), self.bank_total[slot]);
                    BankCounts {
                        controller: slot as u32 / banks,
                        bank: slot as u32 % banks,
                        free,
                        used,
                    }
                })
                .collect(),
            controllers: (0..self.controller_total.len())
                .map(|c| counts(self.controller_free[c], self.controller_total[c]))
                .collect(),
        }
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
    use super::*;
    use crate::mapping::XorFunctions;
    use proptest::prelude::*;
    use std::collections::HashSet;

    /// 4 colors (bits 12-13), 4 banks (bits 14-15), 2 controllers (bit 16).
    fn mapping() -> AddressMapping {
        AddressMapping::new(
            4096,
            XorFunctions::from_bits(&[12, 13]).unwrap(),
            XorFunctions::from_bits(&[14, 15]).unwrap(),
            XorFunctions::from_bits(&[16]).unwrap(),
        )
        .unwrap()
    }

    /// A frame number with the given class; `n` makes it unique.
    fn frame(color: u64, bank: u64, controller: u64, n: u64) -> u64 {
        color | bank << 2 | controller << 4 | n << 5
    }

    /// `count` pages of every (color, bank, controller).
    fn uniform_book(count: u64) -> PageBook {
        let mut frames = Vec::new();
        for n in 0..count {
            for controller in 0..2 {
                for bank in 0..4 {
                    for color in 0..4 {
                        frames.push(frame(color, bank, controller, n));
                    }
                }
            }
        }
        PageBook::new(mapping(), frames).unwrap()
    }

    /// A book whose (controller, bank) free counts are exactly `counts`
    /// (controller-major), all of color 0.
    fn bank_book(counts: [[u64; 4]; 2]) -> PageBook {
        let mut frames = Vec::new();
        let mut n = 0;
        for (controller, banks) in counts.iter().enumerate() {
            for (bank, &count) in banks.iter().enumerate() {
                for _ in 0..count {
                    frames.push(frame(0, bank as u64, controller as u64, n));
                    n += 1;
                }
            }
        }
        PageBook::new(mapping(), frames).unwrap()
    }

    fn request(controller: u32, bank: u32, modes: Modes) -> BankRequest {
        BankRequest {
            controller,
            bank,
            size: 4096,
            modes,
        }
    }

    #[test]
    fn classes_follow_the_mapping() {
        let book = PageBook::new(mapping(), vec![frame(3, 2, 1, 9)]).unwrap();
        let class = book.class(PageId(0));
        assert_eq!((class.color, class.bank, class.controller), (3, 2, 1));
    }

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

    #[test]
    fn double_free_and_foreign_pages_are_rejected() {
        let mut book = uniform_book(1);
        let page = book.alloc_in_color(0).unwrap();
        book.free(page).unwrap();
        assert!(
            book.free(page)
                .unwrap_err()
                .to_string()
                .contains("double free")
        );
        assert!(book.free(PageId(999)).is_err());
        assert!(book.alloc_in_color(4).is_err());
        assert!(ColorCursor::new(&[1, 1]).is_err());
        assert!(ColorCursor::new(&[]).is_err());
    }

    #[test]
    fn algorithm1_step1_serves_the_exact_bank() {
        let mut book = bank_book([[1, 1, 1, 1], [1, 1, 1, 1]]);
        let grant = book.alloc_bank_aware(request(1, 2, Modes::EXACT)).unwrap();
        assert_eq!(grant.step, Step::Exact);
        let class = book.class(grant.first);
        assert_eq!((class.controller, class.bank), (1, 2));
        let err = book
            .alloc_bank_aware(request(1, 2, Modes::EXACT))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("controller 1 bank 2") && err.contains("0 pages free in that bank"),
            "{err}"
        );
    }

    #[test]
    fn algorithm1_step2_takes_the_fullest_bank_of_the_controller() {
        // Controller 0: banks hold 1, 0, 3, 2 pages; controller 1 holds 9.
        let mut book = bank_book([[1, 0, 3, 2], [9, 0, 0, 0]]);
        assert_eq!(book.banks_by_free_memory(0), vec![2, 3, 0, 1]);
        let modes = Modes::CONTROLLER_RESTRICTED | Modes::CONTROLLER_UNRESTRICTED;
        let order: Vec<(u32, u32, Step)> = (0..6)
            .map(|_| {
                let grant = book.alloc_bank_aware(request(0, 1, modes)).unwrap();
                let class = book.class(grant.first);
                (class.controller, class.bank, grant.step)
            })
            .collect();
        use Step::*;
        assert_eq!(
            order,
            vec![
                (0, 2, ControllerRestricted), // 3 free
                (0, 2, ControllerRestricted), // 2,2 tie: lower bank
                (0, 3, ControllerRestricted), // 1 vs 2
                (0, 0, ControllerRestricted), // 1,1,1 tie: bank 0
                (0, 2, ControllerRestricted),
                (0, 3, ControllerRestricted),
            ]
        );
        // Controller 0 is now empty: step 3 moves to controller 1.
        let grant = book.alloc_bank_aware(request(0, 1, modes)).unwrap();
        assert_eq!(grant.step, ControllerUnrestricted);
        assert_eq!(book.class(grant.first).controller, 1);
        // Without CONTROLLER_UNRESTRICTED, an empty controller is an error.
        assert!(
            book.alloc_bank_aware(request(0, 1, Modes::CONTROLLER_RESTRICTED))
                .is_err()
        );
    }

    #[test]
    fn algorithm1_step3_orders_controllers_then_banks_by_free_memory() {
        // Controller 0 has 3 pages, controller 1 has 4 (bank 3 fullest).
        let mut book = bank_book([[0, 3, 0, 0], [1, 0, 0, 3]]);
        assert_eq!(book.controllers_by_free_memory(), vec![1, 0]);
        // Requested bank empty; no CONTROLLER_RESTRICTED: step 2 is
        // skipped, step 3 chooses controller 1 (4 free), bank 3.
        let grant = book
            .alloc_bank_aware(request(0, 0, Modes::CONTROLLER_UNRESTRICTED))
            .unwrap();
        let class = book.class(grant.first);
        assert_eq!(
            (class.controller, class.bank, grant.step),
            (1, 3, Step::ControllerUnrestricted)
        );
        // Now 3 vs 3: tie goes to controller 0, whose fullest bank is 1.
        let grant = book
            .alloc_bank_aware(request(0, 0, Modes::CONTROLLER_UNRESTRICTED))
            .unwrap();
        let class = book.class(grant.first);
        assert_eq!((class.controller, class.bank), (0, 1));
        // With CONTROLLER_RESTRICTED as well, step 2 wins inside controller 0.
        let grant = book.alloc_bank_aware(request(0, 0, Modes::ALL)).unwrap();
        assert_eq!(grant.step, Step::ControllerRestricted);
        assert_eq!(book.class(grant.first).controller, 0);
    }

    #[test]
    fn algorithm1_step4_split_takes_the_first_contiguous_run() {
        let mut book = bank_book([[2, 2, 2, 2], [2, 2, 2, 2]]);
        // A 3-page request cannot fit one chunk: only SPLIT serves it.
        let big = BankRequest {
            controller: 0,
            bank: 0,
            size: 3 * 4096,
            modes: Modes::CONTROLLER_RESTRICTED | Modes::CONTROLLER_UNRESTRICTED,
        };
        assert!(book.alloc_bank_aware(big).is_err());
        // Take pages 0 and 2, free 0 again: runs [0, 1], [3..].
        let taken: Vec<BankGrant> = [0u32, 1]
            .iter()
            .map(|&bank| {
                book.alloc_bank_aware(request(0, bank, Modes::EXACT))
                    .unwrap()
            })
            .collect();
        assert_eq!(
            taken.iter().map(|g| g.first.0).collect::<Vec<_>>(),
            vec![0, 2]
        );
        book.free(PageId(0)).unwrap();
        let split = BankRequest {
            modes: Modes::SPLIT,
            ..big
        };
        let grant = book.alloc_bank_aware(split).unwrap();
        assert_eq!(
            (grant.first, grant.pages, grant.step),
            (PageId(3), 3, Step::Split)
        );
        let classes: HashSet<u32> = (3..6).map(|p| book.class(PageId(p)).bank).collect();
        assert!(classes.len() > 1, "a split block may span banks");
        // A single page with only SPLIT and an empty requested bank: first free page.
        let mut empty_bank = bank_book([[0, 1, 0, 0], [0, 0, 0, 0]]);
        let grant = empty_bank
            .alloc_bank_aware(request(0, 0, Modes::SPLIT))
            .unwrap();
        assert_eq!((grant.first, grant.step), (PageId(0), Step::Split));
        assert!(book.alloc_bank_aware(request(0, 0, Modes(8))).is_err());
        assert!(book.alloc_bank_aware(request(2, 0, Modes::ALL)).is_err());
    }

    #[test]
    fn stats_count_free_and_used_per_class() {
        let mut book = uniform_book(1);
        book.alloc_bank_aware(request(1, 3, Modes::EXACT)).unwrap();
        book.alloc_in_color(2).unwrap();
        let stats = book.stats(false);
        assert_eq!(stats.total, Counts { free: 30, used: 2 });
        assert_eq!(stats.colors.iter().map(|c| c.used).sum::<u64>(), 2);
        // The bank request took the first page of (1, 3): color 0; the
        // color request took the first page of color 2: controller 0.
        assert_eq!(stats.colors[0].used, 1);
        assert_eq!(stats.colors[2].used, 1);
        let bank = stats
            .banks
            .iter()
            .find(|b| b.controller == 1 && b.bank == 3)
            .unwrap();
        assert_eq!((bank.free, bank.used), (3, 1));
        assert_eq!(stats.controllers[0], Counts { free: 15, used: 1 });
        assert_eq!(stats.controllers[1], Counts { free: 15, used: 1 });
        assert!(!stats.uncolored);
    }

    #[derive(Debug, Clone)]
    enum Op {
        Color(u32),
        Colored(Vec<u32>, usize),
        Bank(u32, u32, u32),
        Free(usize),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0u32..4).prop_map(Op::Color),
            (
                proptest::sample::subsequence(vec![0u32, 1, 2, 3], 1..=4),
                0usize..6
            )
                .prop_map(|(c, n)| Op::Colored(c, n)),
            (0u32..2, 0u32..4, 0u32..8).prop_map(|(c, b, m)| Op::Bank(c, b, m)),
            (0usize..64).prop_map(Op::Free),
        ]
    }

    proptest! {
        #[test]
        fn pages_are_never_handed_out_twice(ops in proptest::collection::vec(op(), 1..120)) {
            let mut book = uniform_book(2);
            let mut held: Vec<PageId> = Vec::new();
            let mut last_freed: [Option<PageId>; 4] = [None; 4];
            for op in ops {
                let mut fresh = Vec::new();
                match op {
                    Op::Color(color) => {
                        if let Ok(page) = book.alloc_in_color(color) {
                            prop_assert_eq!(book.class(page).color, color);
                            if let Some(expected) = last_freed[color as usize].take() {
                                prop_assert_eq!(page, expected, "freed page first");
                            }
                            fresh.push(page);
                        }
                    }
                    Op::Colored(colors, n) => {
                        let mut cursor = ColorCursor::new(&colors).unwrap();
                        if book.alloc_colored(&mut cursor, n, &mut fresh).is_ok() {
                            for color in &colors {
                                let got = fresh.iter().filter(|&&p| book.class(p).color == *color).count();
                                prop_assert!(got == n / colors.len() || got == n / colors.len() + 1);
                                last_freed[*color as usize] = None;
                            }
                            prop_assert_eq!(fresh.len(), n);
                        }
                    }
                    Op::Bank(controller, bank, modes) => {
                        if let Ok(grant) = book.alloc_bank_aware(request(controller, bank, Modes(modes & 7))) {
                            let page = grant.first;
                            if grant.step == Step::Exact {
                                let class = book.class(page);
                                prop_assert_eq!((class.controller, class.bank), (controller, bank));
                            }
                            last_freed[book.class(page).color as usize] = None;
                            fresh.push(page);
                        }
                    }
                    Op::Free(index) => {
                        if !held.is_empty() {
                            let page = held.swap_remove(index % held.len());
                            book.free(page).unwrap();
                            last_freed[book.class(page).color as usize] = Some(page);
                        }
                    }
                }
                for page in fresh {
                    prop_assert!(!held.contains(&page), "page {:?} handed out twice", page);
                    prop_assert!(book.is_used(page));
                    held.push(page);
                }
                prop_assert_eq!(book.free_pages() + held.len(), book.pages());
                let stats = book.stats(false);
                prop_assert_eq!(stats.colors.iter().map(|c| c.used).sum::<u64>(), held.len() as u64);
                prop_assert_eq!(stats.banks.iter().map(|c| c.used).sum::<u64>(), held.len() as u64);
            }
        }
    }
}
