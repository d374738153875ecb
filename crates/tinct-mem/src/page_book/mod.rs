//! [`PageBook`]: the bookkeeping of a pool's pages, without any memory.
//!
//! Pages are numbered `0..pages` in virtual address order. Each page has a
//! frame number and a class (color, bank, controller) and, while free, sits
//! in its color list (intrusive lists, `crate::intrusive_lists`). For
//! chandru-mueller's bank-aware allocator the pages are also grouped into
//! *chunks* of `chunk_pages` consecutive pages (the paper traverses its
//! pool at 8 KiB, [`DEFAULT_CHUNK_BYTES`]); a chunk whose frames are
//! physically contiguous, aligned and all of one (controller, bank) is
//! *whole*, and while all its pages are free it sits in its (controller,
//! bank) list. So every free chunk is in both kinds of list at once, as in
//! the paper's Section 3, and taking a page through either unlinks it from
//! the other in O(1). The book knows nothing about mmap: [`crate::Pool`]
//! owns the memory, and tests build books from synthetic frame numbers to
//! control the free lists exactly.
//!
//! The two ways to take pages out of the book live in their own modules:
//!
//! * `colored_allocation`: kim2013 Section III-C — a request for a set of
//!   colors takes pages from the colors in round-robin order, so each
//!   color gives the same number of pages and placement is deterministic;
//!   a freed page is reused before never-used ones (footnote 5);
//! * `bank_aware_allocator`: chandru-mueller Algorithm 1 ("Bank aware
//!   algorithm allocator") with its fallback modes.

mod bank_aware_allocator;
mod colored_allocation;

pub use bank_aware_allocator::{BankGrant, BankRequest, Modes, Step};
pub use colored_allocation::ColorCursor;

use crate::error::MemError;
use crate::intrusive_lists::{ListFamily, NIL};
use crate::mapping::{AddressMapping, PageClass};

/// chandru-mueller's chunk: the pool "is traversed at a granularity of
/// 8 kB and chunks are added to the corresponding free list(s)" (Section
/// 3; on their Tilera the bank changes every 13 address bits). The default
/// of [`crate::PoolOptions`]; a chunk is whole only if no bank or
/// controller function reads a bit inside it.
pub const DEFAULT_CHUNK_BYTES: u64 = 8 << 10;

/// Index of a page in its pool (virtual address order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct PageId(pub u32);

impl PageId {
    /// The index as `usize`.
    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }
}
/// Free and used page counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Counts {
    /// Free pages.
    pub free: u64,
    /// Pages handed out.
    pub used: u64,
}

/// Counts of one (controller, bank) (retired pages are not counted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
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
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
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
    /// Bytes of retired pages whose lock was dropped to give them back (a
    /// kernel before 5.18 has no `MADV_DONTNEED_LOCKED`): those ranges of
    /// the pool's mapping are no longer locked (filled in by the pool).
    pub unlocked_by_discard: u64,
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
    /// Whole free chunks by (controller, bank) slot.
    by_bank: ListFamily,
    /// log2 of the pages per chunk.
    chunk_shift: u32,
    /// Bank slot of each chunk, or `NIL` if the chunk is not whole.
    chunk_slot: Vec<u32>,
    /// Free pages of each chunk.
    chunk_free: Vec<u32>,
    color_total: Vec<u32>,
    bank_total: Vec<u32>,
    /// Free pages per bank slot (whole chunks or not).
    bank_free: Vec<u32>,
    controller_free: Vec<u32>,
    controller_total: Vec<u32>,
    /// Whole free chunks per controller (chandru-mueller's "memory
    /// availability" of a controller).
    controller_free_chunks: Vec<u32>,
    free_pages: u32,
    /// log2(banks): a bank slot shifted right by it is the controller.
    bank_shift: u32,
}

impl PageBook {
    /// Files pages with the given frame numbers (page `i` has `frames[i]`)
    /// into free lists, in page order (never-used pages are handed out in
    /// virtual address order), with one-page chunks.
    pub fn new(mapping: AddressMapping, frames: Vec<u64>) -> Result<Self, MemError> {
        Self::with_chunk(mapping, frames, 1)
    }

    /// As [`PageBook::new`], with chunks of `chunk_pages` pages (a power of
    /// two) for the bank-aware allocator.
    pub fn with_chunk(
        mapping: AddressMapping,
        frames: Vec<u64>,
        chunk_pages: u32,
    ) -> Result<Self, MemError> {
        if !chunk_pages.is_power_of_two() {
            return Err(MemError::Request(format!(
                "chunk of {chunk_pages} pages: expected a power of two"
            )));
        }
        let chunk_bytes = u64::from(chunk_pages).saturating_mul(mapping.page_size);
        for (what, functions) in [("bank", &mapping.bank), ("controller", &mapping.controller)] {
            if let Some(lowest) = functions.lowest_bit()
                && 1u64
                    .checked_shl(lowest)
                    .is_some_and(|bit| bit < chunk_bytes)
            {
                return Err(MemError::Mapping(format!(
                    "a {what} function reads address bit {lowest}, inside a {chunk_bytes}-byte \
                     chunk: expected chunks that lie in one {what} (use a chunk of at most {} \
                     bytes)",
                    1u64 << lowest
                )));
            }
        }
        let (colors, banks, controllers) = (
            mapping.colors() as usize,
            mapping.banks() as usize,
            mapping.controllers() as usize,
        );
        let mut book = Self {
            color: Vec::new(),
            bank_slot: Vec::new(),
            used: Vec::new(),
            ever_used: Vec::new(),
            retired: Vec::new(),
            retired_pages: 0,
            by_color: ListFamily::new(colors, 0),
            by_bank: ListFamily::new(banks * controllers, 0),
            chunk_shift: chunk_pages.trailing_zeros(),
            chunk_slot: Vec::new(),
            chunk_free: Vec::new(),
            color_total: vec![0; colors],
            bank_total: vec![0; banks * controllers],
            bank_free: vec![0; banks * controllers],
            controller_free: vec![0; controllers],
            controller_total: vec![0; controllers],
            controller_free_chunks: vec![0; controllers],
            free_pages: 0,
            bank_shift: mapping.banks().trailing_zeros(),
            frames: Vec::new(),
            mapping,
        };
        book.extend(&frames)?;
        Ok(book)
    }

    /// Files more pages (numbered after the existing ones) as free,
    /// never-used pages: a pool that grows. Pages only form chunks with
    /// pages of the same call.
    pub fn extend(&mut self, frames: &[u64]) -> Result<(), MemError> {
        let first = self.frames.len();
        let pages = first + frames.len();
        if pages >= NIL as usize {
            return Err(MemError::Request(format!(
                "{pages} pages: expected fewer than 2^32"
            )));
        }
        let chunk_pages = 1usize << self.chunk_shift;
        // Chunks start on a multiple of the chunk size; pad to one so that
        // a chunk never mixes pages of two calls.
        let padded_first = first.next_multiple_of(chunk_pages);
        let padding = padded_first - first;
        let banks = self.mapping.banks() as usize;
        self.frames.reserve(padding + frames.len());
        for _ in 0..padding {
            // Placeholder pages: retired at once, never handed out.
            self.push_page(u64::MAX, None);
        }
        for &frame in frames {
            let class = self.mapping.classify_frame(frame);
            let slot = class.controller as usize * banks + class.bank as usize;
            self.push_page(frame, Some((class.color, slot as u32)));
        }
        let end = self.frames.len();
        self.by_color.grow_to(end);
        let chunks = end.div_ceil(chunk_pages);
        self.by_bank.grow_to(chunks);
        self.chunk_slot.resize(chunks, NIL);
        self.chunk_free.resize(chunks, 0);
        for page in padded_first..end {
            if self.retired[page] {
                continue;
            }
            let color = self.color[page] as usize;
            self.by_color.push_back(color, page as u32);
            self.chunk_free[page >> self.chunk_shift] += 1;
        }
        for chunk in padded_first / chunk_pages..chunks {
            if let Some(slot) = self.whole_chunk_slot(chunk) {
                self.chunk_slot[chunk] = slot;
                self.by_bank.push_back(slot as usize, chunk as u32);
                self.controller_free_chunks[slot as usize >> self.bank_shift] += 1;
            }
        }
        Ok(())
    }

    /// Appends one page: `Some((color, bank slot))` for a real page, `None`
    /// for a retired placeholder.
    fn push_page(&mut self, frame: u64, class: Option<(u32, u32)>) {
        self.frames.push(frame);
        let (color, slot) = class.unwrap_or((0, 0));
        self.color.push(color);
        self.bank_slot.push(slot);
        let placeholder = class.is_none();
        self.used.push(placeholder);
        self.ever_used.push(placeholder);
        self.retired.push(placeholder);
        if placeholder {
            self.retired_pages += 1;
            return;
        }
        self.color_total[color as usize] += 1;
        self.bank_total[slot as usize] += 1;
        self.bank_free[slot as usize] += 1;
        self.controller_free[slot as usize >> self.bank_shift] += 1;
        self.controller_total[slot as usize >> self.bank_shift] += 1;
        self.free_pages += 1;
    }

    /// The bank slot of `chunk` if it is whole: all its pages present,
    /// their frames consecutive from a chunk-aligned frame, one slot.
    fn whole_chunk_slot(&self, chunk: usize) -> Option<u32> {
        let chunk_pages = 1usize << self.chunk_shift;
        let first = chunk << self.chunk_shift;
        let pages = first..first + chunk_pages;
        if pages.end > self.frames.len() || pages.clone().any(|p| self.retired[p]) {
            return None;
        }
        let base = self.frames[first];
        if !base.is_multiple_of(chunk_pages as u64) {
            return None;
        }
        let slot = self.bank_slot[first];
        pages
            .enumerate()
            .all(|(i, p)| self.frames[p] == base + i as u64 && self.bank_slot[p] == slot)
            .then_some(slot)
    }

    /// Pages per chunk of the bank-aware allocator.
    pub fn chunk_pages(&self) -> u32 {
        1 << self.chunk_shift
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
        self.bank_free[self.slot(controller, bank)] as usize
    }

    /// Whole free chunks of one (controller, bank): what the bank-aware
    /// allocator can hand out there.
    pub fn free_chunks_in_bank(&self, controller: u32, bank: u32) -> usize {
        self.by_bank.len(self.slot(controller, bank)) as usize
    }

    /// Whole free chunks of one controller.
    pub fn free_chunks_in_controller(&self, controller: u32) -> usize {
        self.controller_free_chunks[controller as usize] as usize
    }

    /// Free pages of one controller.
    pub fn free_in_controller(&self, controller: u32) -> usize {
        self.controller_free[controller as usize] as usize
    }

    fn slot(&self, controller: u32, bank: u32) -> usize {
        controller as usize * self.mapping.banks() as usize + bank as usize
    }

    /// Takes a free page out of its color list, and its chunk out of its
    /// bank list.
    #[inline]
    fn take(&mut self, page: u32) {
        let index = page as usize;
        debug_assert!(!self.used[index]);
        self.by_color.unlink(self.color[index] as usize, page);
        let chunk = index >> self.chunk_shift;
        let chunk_slot = self.chunk_slot[chunk];
        if chunk_slot != NIL && self.chunk_free[chunk] == 1 << self.chunk_shift {
            self.by_bank.unlink(chunk_slot as usize, chunk as u32);
            self.controller_free_chunks[chunk_slot as usize >> self.bank_shift] -= 1;
        }
        self.chunk_free[chunk] -= 1;
        let slot = self.bank_slot[index] as usize;
        self.bank_free[slot] -= 1;
        self.controller_free[slot >> self.bank_shift] -= 1;
        self.used[index] = true;
        self.ever_used[index] = true;
        self.free_pages -= 1;
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
        self.bank_free[slot] += 1;
        self.controller_free[slot >> self.bank_shift] += 1;
        let chunk = index >> self.chunk_shift;
        self.chunk_free[chunk] += 1;
        let chunk_slot = self.chunk_slot[chunk];
        if chunk_slot != NIL && self.chunk_free[chunk] == 1 << self.chunk_shift {
            // The chunk is whole and free again: reused first (footnote 5).
            self.by_bank.push_front(chunk_slot as usize, chunk as u32);
            self.controller_free_chunks[chunk_slot as usize >> self.bank_shift] += 1;
        }
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
        // A chunk with a retired page is never whole again.
        self.chunk_slot[index >> self.chunk_shift] = NIL;
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
    /// Free pages of `color`, in the order they would be handed out.
    pub fn free_list_of_color(&self, color: u32) -> Vec<PageId> {
        self.by_color.iter(color as usize).map(PageId).collect()
    }

    /// Statistics (`uncolored` and `unlocked_by_discard` are filled in by
    /// the pool).
    pub fn stats(&self, uncolored: bool) -> PoolStats {
        let banks = self.mapping.banks();
        let counts = |free: u32, total: u32| Counts {
            free: u64::from(free),
            used: u64::from(total - free),
        };
        PoolStats {
            uncolored,
            unlocked_by_discard: 0,
            page_size: self.mapping.page_size,
            total: counts(self.free_pages, self.pages() as u32 - self.retired_pages),
            colors: (0..self.color_total.len())
                .map(|c| counts(self.by_color.len(c), self.color_total[c]))
                .collect(),
            banks: (0..self.bank_total.len())
                .map(|slot| {
                    let Counts { free, used } = counts(self.bank_free[slot], self.bank_total[slot]);
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

/// Books over synthetic frames for the tests of this module and its
/// children.
#[cfg(test)]
mod test_books {
    use super::*;
    use crate::mapping::XorFunctions;

    /// 4 colors (bits 12-13), 4 banks (bits 14-15), 2 controllers (bit 16).
    pub(super) fn mapping() -> AddressMapping {
        AddressMapping::new(
            4096,
            XorFunctions::from_bits(&[12, 13]).unwrap(),
            XorFunctions::from_bits(&[14, 15]).unwrap(),
            XorFunctions::from_bits(&[16]).unwrap(),
        )
        .unwrap()
    }

    /// A frame number with the given class; `n` makes it unique.
    pub(super) fn frame(color: u64, bank: u64, controller: u64, n: u64) -> u64 {
        color | bank << 2 | controller << 4 | n << 5
    }

    /// `count` pages of every (color, bank, controller).
    pub(super) fn uniform_book(count: u64) -> PageBook {
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
    pub(super) fn bank_book(counts: [[u64; 4]; 2]) -> PageBook {
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

    pub(super) fn request(controller: u32, bank: u32, modes: Modes) -> BankRequest {
        BankRequest {
            controller,
            bank,
            size: 4096,
            modes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::test_books::*;
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn classes_follow_the_mapping() {
        let book = PageBook::new(mapping(), vec![frame(3, 2, 1, 9)]).unwrap();
        let class = book.class(PageId(0));
        assert_eq!((class.color, class.bank, class.controller), (3, 2, 1));
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
                        let controller_had_free = book.free_in_controller(controller) > 0;
                        if let Ok(grant) = book.alloc_bank_aware(request(controller, bank, Modes(modes & 7))) {
                            let page = grant.first;
                            let class = book.class(page);
                            if grant.step == Step::Exact {
                                prop_assert_eq!((class.controller, class.bank), (controller, bank));
                            }
                            if grant.step == Step::Split && controller_had_free {
                                // A page fits any run: SPLIT stays in its controller.
                                prop_assert_eq!(class.controller, controller);
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
