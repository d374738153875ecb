//! [`SharedPool`]: a thread-safe pool with a byte allocator on top.
//!
//! Byte allocation per color set (an *arena*):
//! * sizes up to [`MAX_SMALL`] bytes use size classes; a page is carved
//!   into objects of one class and stays with that class (freed objects go
//!   to an intrusive free list inside the objects themselves, so the hot
//!   path never allocates);
//! * sizes up to one page take a whole page;
//! * larger sizes take `n` pages round robin over the colors (kim2013
//!   III-C) and place them side by side in the span window (see
//!   [`crate::span_window`]), giving contiguous virtual memory whose every page
//!   lies in the requested colors.
//!
//! One mutex guards everything; the critical sections of small
//! allocations are a few dozen instructions.

use std::ptr::NonNull;
use std::sync::{Mutex, MutexGuard};

use crate::error::MemError;
use crate::mapping::{AddressMapping, PageClass};
use crate::page_book::{BankGrant, BankRequest, ColorCursor, Modes, PageId, PoolStats, Step};
use crate::pool::{BankOptions, Pool, PoolOptions};
use crate::span_window::SpanWindow;

/// Largest size served by size classes.
pub const MAX_SMALL: usize = 2048;

/// Size classes in bytes (multiples of 16; every power of two up to
/// [`MAX_SMALL`] is a class, so alignment requests up to it are served by
/// rounding the size up to a class that is a multiple of the alignment).
pub const SIZE_CLASSES: [usize; 24] = [
    16, 32, 48, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384, 448, 512, 640, 768, 896, 1024,
    1280, 1536, 1792, 2048,
];

/// Smallest alignment every allocation has (as glibc's malloc on x86-64).
pub const MIN_ALIGN: usize = 16;

/// Class index for each `ceil(size / 16)`.
const fn class_table() -> [u8; MAX_SMALL / 16 + 1] {
    let mut table = [0u8; MAX_SMALL / 16 + 1];
    let mut units = 0;
    let mut class = 0;
    while units <= MAX_SMALL / 16 {
        while SIZE_CLASSES[class] < units * 16 {
            class += 1;
        }
        table[units] = class as u8;
        units += 1;
    }
    table
}
const CLASS_OF_UNITS: [u8; MAX_SMALL / 16 + 1] = class_table();

/// The index into [`SIZE_CLASSES`] of the smallest class that holds `size`
/// bytes at an alignment of `align` (a power of two); `None` when the
/// request needs whole pages (above [`MAX_SMALL`]).
#[inline]
pub fn size_class(size: usize, align: usize) -> Option<usize> {
    if size > MAX_SMALL || align > MAX_SMALL {
        return None;
    }
    let mut class = usize::from(CLASS_OF_UNITS[size.max(1).div_ceil(16)]);
    while !SIZE_CLASSES[class].is_multiple_of(align.max(MIN_ALIGN)) {
        class += 1;
    }
    Some(class)
}

/// Arena tag of spans built by [`SharedPool::alloc_bank_span`] (no colors).
const BANK_SPAN: u16 = u16::MAX;

/// Pages of a bank-aware span served by each step of Algorithm 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct StepCounts {
    /// Pages from the requested controller and bank.
    pub exact: usize,
    /// Pages from another bank of the requested controller.
    pub controller_restricted: usize,
    /// Pages from another controller.
    pub controller_unrestricted: usize,
    /// Pages from the SPLIT fallback (a free page of the requested
    /// controller while it has one, then any).
    pub split: usize,
}

impl StepCounts {
    /// Adds `pages` pages served by `step`.
    pub fn count(&mut self, step: Step, pages: usize) {
        match step {
            Step::Exact => self.exact += pages,
            Step::ControllerRestricted => self.controller_restricted += pages,
            Step::ControllerUnrestricted => self.controller_unrestricted += pages,
            Step::Split => self.split += pages,
        }
    }

    /// All pages counted.
    pub fn total(&self) -> usize {
        self.exact + self.controller_restricted + self.controller_unrestricted + self.split
    }

    /// The furthest fallback that served any page (`None` if none was counted).
    pub fn furthest(&self) -> Option<Step> {
        [
            (self.split, Step::Split),
            (self.controller_unrestricted, Step::ControllerUnrestricted),
            (self.controller_restricted, Step::ControllerRestricted),
            (self.exact, Step::Exact),
        ]
        .into_iter()
        .find(|&(pages, _)| pages > 0)
        .map(|(_, step)| step)
    }
}

/// Pages of one (controller, bank) in a bank-aware span.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct BankPages {
    /// Controller.
    pub controller: u32,
    /// Bank within the controller.
    pub bank: u32,
    /// Pages.
    pub pages: usize,
}

/// A contiguous buffer whose pages were chosen one by one with
/// chandru-mueller Algorithm 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BankSpan {
    /// First byte (page aligned).
    pub ptr: NonNull<u8>,
    /// Number of pages.
    pub pages: usize,
    /// How many pages each step served.
    pub steps: StepCounts,
    /// Where the pages are: pages per (controller, bank), in that order.
    pub banks: Vec<BankPages>,
}

/// A page in use, at its current address (see [`SharedPool::used_pages`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct UsedPage {
    /// Where the page is mapped now (in the pool region, or in the span
    /// window for pages of multi-page allocations).
    pub address: usize,
    /// The pool page.
    pub page: PageId,
    /// Its color, bank and controller as filed at setup.
    pub class: PageClass,
}

/// What a pool page is used for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PageUse {
    /// In the pool's free lists.
    Free,
    /// Handed out through the page API.
    Raw,
    /// Carved into objects of one size class of one arena.
    Small { arena: u16, class: u8 },
    /// One whole-page allocation of one arena.
    Whole { arena: u16 },
    /// Part of a span (moved into the window).
    Span { arena: u16 },
}

#[derive(Debug, Clone, Copy, Default)]
struct ClassState {
    /// First free object (address), 0 if none.
    free: usize,
    /// Next never-used object in the current page, and its end.
    bump: usize,
    bump_end: usize,
}

#[derive(Debug)]
struct Arena {
    cursor: ColorCursor,
    classes: [ClassState; SIZE_CLASSES.len()],
}

#[derive(Debug)]
struct State {
    pool: Pool,
    uses: Vec<PageUse>,
    arenas: Vec<Arena>,
    window: SpanWindow,
    /// Pages of the request being served; its capacity is the pool's page
    /// count, so serving a request never grows it.
    scratch: Vec<PageId>,
}

/// Gives `pages` back to `pool` and marks them free in `uses`.
fn give_back(pool: &mut Pool, uses: &mut [PageUse], pages: &[PageId]) -> Result<(), MemError> {
    for &page in pages {
        uses[page.index()] = PageUse::Free;
        pool.free(page)?;
    }
    Ok(())
}

/// What a pointer handed out by [`SharedPool::alloc`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Allocation {
    /// Bytes usable from the pointer.
    pub usable: usize,
    /// The arena: index for [`SharedPool::arena_colors`] (65535 for
    /// bank-aware spans, which have no colors).
    pub arena: usize,
}

/// A thread-safe colored pool with a byte allocator.
///
/// Pointers it hands out stay valid until they are freed or the pool is
/// dropped (dropping unmaps all of its memory).
#[derive(Debug)]
pub struct SharedPool {
    state: Mutex<State>,
    page_size: usize,
    mapping: AddressMapping,
    uncolored: bool,
    /// Address ranges of the pool region and of the span window (fixed for
    /// the pool's lifetime, so `owns` needs no lock).
    region: std::ops::Range<usize>,
    window: std::ops::Range<usize>,
}

impl SharedPool {
    /// Builds the pool (see [`Pool::new`]) and reserves a span window of
    /// twice its size (address space only).
    pub fn new(mapping: AddressMapping, options: PoolOptions) -> Result<Self, MemError> {
        Self::from_pool(Pool::new(mapping, options)?)
    }

    /// [`SharedPool::new`] with the bank-aware allocator's chunk size and
    /// the controller-interleaved layout chosen ([`BankOptions`]).
    pub fn with_bank_options(
        mapping: AddressMapping,
        options: PoolOptions,
        banks: BankOptions,
    ) -> Result<Self, MemError> {
        Self::from_pool(Pool::with_bank_options(mapping, options, banks)?)
    }

    /// Wraps an existing pool.
    pub fn from_pool(pool: Pool) -> Result<Self, MemError> {
        let page_size = pool.page_size();
        let pages = pool.pages();
        let window = SpanWindow::new(2 * pages, page_size)?;
        let start = pool.start() as usize;
        Ok(Self {
            page_size,
            mapping: pool.mapping().clone(),
            uncolored: pool.is_uncolored(),
            region: start..start + pages * page_size,
            window: window.range(),
            state: Mutex::new(State {
                window,
                uses: vec![PageUse::Free; pages],
                arenas: Vec::new(),
                scratch: Vec::with_capacity(pages),
                pool,
            }),
        })
    }

    /// True if `address` lies in memory this pool hands out (its region
    /// or its span window), without taking the lock: an LD_PRELOAD `free`
    /// can route foreign pointers elsewhere with this.
    pub fn owns(&self, address: usize) -> bool {
        self.region.contains(&address) || self.window.contains(&address)
    }

    /// The virtual address ranges of the memory this pool hands out (its
    /// region and its span window; [`SharedPool::owns`] tests an address
    /// against them): what a reader of the process's other memory leaves
    /// out.
    pub fn address_ranges(&self) -> [std::ops::Range<usize>; 2] {
        [self.region.clone(), self.window.clone()]
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves consistent bookkeeping
        // (every update is completed before anything can panic), so a
        // poisoned lock is still usable.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The address mapping.
    pub fn mapping(&self) -> &AddressMapping {
        &self.mapping
    }

    /// Page size in bytes.
    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// True if the pool runs without frame numbers (no placement control).
    pub fn is_uncolored(&self) -> bool {
        self.uncolored
    }

    /// Runs `f` with the underlying pool locked (for inspection).
    pub fn with_pool<R>(&self, f: impl FnOnce(&Pool) -> R) -> R {
        f(&self.lock().pool)
    }

    /// Free and used pages per color, bank and controller.
    pub fn stats(&self) -> PoolStats {
        self.lock().pool.stats()
    }

    /// Kernel mappings the live spans occupy in the span window: one per
    /// run of pages that were virtually contiguous in the pool (each run
    /// also costs a placeholder mapping in the pool region, and may split
    /// the pool mapping). Compare with `vm.max_map_count`.
    pub fn span_runs(&self) -> usize {
        self.lock().window.live_runs()
    }

    /// Largest [`SharedPool::span_runs`] seen since the pool was built.
    pub fn span_runs_peak(&self) -> usize {
        self.lock().window.peak_runs()
    }

    /// Every page in use (size-class pages, whole pages, span pages, raw
    /// pages), at its current address, in address order. Allocates the
    /// list (call it outside of a malloc path).
    pub fn used_pages(&self) -> Vec<UsedPage> {
        let state = self.lock();
        let mut pages: Vec<UsedPage> = state
            .uses
            .iter()
            .enumerate()
            .filter(|(_, usage)| !matches!(usage, PageUse::Free | PageUse::Span { .. }))
            .map(|(index, _)| {
                let page = PageId(index as u32);
                UsedPage {
                    address: state.pool.page_address(page) as usize,
                    page,
                    class: state.pool.class(page),
                }
            })
            .collect();
        pages.extend(
            state
                .window
                .residents()
                .map(|(window_page, page)| UsedPage {
                    address: state.window.address(window_page) as usize,
                    page,
                    class: state.pool.class(page),
                }),
        );
        pages.sort_unstable_by_key(|used| used.address);
        pages
    }

    /// Colors of arena `arena` (`None` for bank-aware spans).
    pub fn arena_colors(&self, arena: usize) -> Option<Vec<u32>> {
        self.lock()
            .arenas
            .get(arena)
            .map(|a| a.cursor.colors().to_vec())
    }

    /// Allocates `size` bytes aligned to `align` (a power of two; at least
    /// [`MIN_ALIGN`] is always given) from pages of `colors`.
    pub fn alloc(
        &self,
        colors: &[u32],
        size: usize,
        align: usize,
    ) -> Result<NonNull<u8>, MemError> {
        let mut state = self.lock();
        let arena = state.arena_for(colors)?;
        state.alloc_in(arena, size, align, self.page_size)
    }

    /// Frees a pointer returned by [`SharedPool::alloc`] or
    /// [`SharedPool::realloc`].
    pub fn free(&self, ptr: NonNull<u8>) -> Result<(), MemError> {
        self.lock().free(ptr.as_ptr() as usize, self.page_size)
    }

    /// Usable bytes and arena of a live allocation.
    pub fn allocation(&self, ptr: NonNull<u8>) -> Result<Allocation, MemError> {
        self.lock().lookup(ptr.as_ptr() as usize, self.page_size)
    }

    /// Bytes usable at `ptr` (at least the size asked for).
    pub fn usable_size(&self, ptr: NonNull<u8>) -> Result<usize, MemError> {
        Ok(self.allocation(ptr)?.usable)
    }

    /// Resizes an allocation, keeping its colors and contents (up to the
    /// smaller size). Returns the same pointer when it already fits (and is
    /// not more than twice the size); a moved block has the minimum
    /// alignment ([`MIN_ALIGN`]), as with C `realloc`.
    pub fn realloc(&self, ptr: NonNull<u8>, size: usize) -> Result<NonNull<u8>, MemError> {
        let mut state = self.lock();
        let old = state.lookup(ptr.as_ptr() as usize, self.page_size)?;
        if old.arena == usize::from(BANK_SPAN) {
            return Err(MemError::Request(
                "realloc of a bank-aware span: allocate a new span with alloc_bank_span".into(),
            ));
        }
        if size <= old.usable && size > old.usable / 2 {
            return Ok(ptr);
        }
        if let Some(resized) = state.resize_span(ptr, old.arena, size, self.page_size)? {
            return Ok(resized);
        }
        let fresh = state.alloc_in(old.arena, size, MIN_ALIGN, self.page_size)?;
        // SAFETY: `ptr` is a live allocation of `old.usable` bytes and
        // `fresh` a new one of at least `size` bytes; they are distinct
        // allocations, so the ranges do not overlap.
        unsafe {
            std::ptr::copy_nonoverlapping(ptr.as_ptr(), fresh.as_ptr(), old.usable.min(size));
        }
        state.free(ptr.as_ptr() as usize, self.page_size)?;
        Ok(fresh)
    }

    /// `count` raw pages round robin over `colors`, freed-first (kim2013).
    /// The round-robin position continues across calls for the same colors.
    pub fn alloc_pages(&self, colors: &[u32], count: usize) -> Result<Vec<PageId>, MemError> {
        let mut state = self.lock();
        let arena = state.arena_for(colors)?;
        let State {
            pool, arenas, uses, ..
        } = &mut *state;
        let mut pages = Vec::with_capacity(count);
        pool.alloc_colored(&mut arenas[arena].cursor, count, &mut pages)?;
        for page in &pages {
            uses[page.index()] = PageUse::Raw;
        }
        Ok(pages)
    }

    /// chandru-mueller Algorithm 1 on the shared pool (raw pages).
    pub fn alloc_bank_aware(&self, request: BankRequest) -> Result<BankGrant, MemError> {
        // (A grant is a whole chunk, or a SPLIT run.)
        let mut state = self.lock();
        let grant = state.pool.alloc_bank_aware(request)?;
        for page in grant.first.0..grant.first.0 + grant.pages {
            state.uses[page as usize] = PageUse::Raw;
        }
        Ok(grant)
    }

    /// A contiguous buffer of `size` bytes (whole pages) whose pages are
    /// taken chunk by chunk with chandru-mueller Algorithm 1 for
    /// `controller` and `bank` under `modes` (the last chunk's surplus
    /// pages go back), then placed side by side in the span window. All
    /// or nothing. Free it with [`SharedPool::free`]; `realloc` is refused
    /// (a new request must say where to go).
    pub fn alloc_bank_span(
        &self,
        controller: u32,
        bank: u32,
        size: usize,
        modes: Modes,
    ) -> Result<BankSpan, MemError> {
        let page_size = self.page_size;
        let pages = size.div_ceil(page_size).max(1);
        let request = BankRequest {
            controller,
            bank,
            size: page_size as u64,
            modes,
        };
        let mut state = self.lock();
        let State {
            pool,
            window,
            scratch,
            uses,
            ..
        } = &mut *state;
        scratch.clear();
        let mut steps = StepCounts::default();
        while scratch.len() < pages {
            match pool.alloc_bank_aware(request) {
                Ok(grant) => {
                    let wanted = (pages - scratch.len()).min(grant.pages as usize);
                    for page in grant.first.0..grant.first.0 + grant.pages {
                        let page = PageId(page);
                        if scratch.len() < pages {
                            uses[page.index()] = PageUse::Span { arena: BANK_SPAN };
                            scratch.push(page);
                        } else {
                            pool.free(page).expect("a page granted just now is in use");
                        }
                    }
                    steps.count(grant.step, wanted);
                }
                Err(error) => {
                    give_back(pool, uses, scratch).expect("pages taken above are in use");
                    return Err(error);
                }
            }
        }
        let mut banks: Vec<BankPages> = Vec::new();
        for &page in scratch.iter() {
            let class = pool.class(page);
            match banks
                .iter_mut()
                .find(|b| (b.controller, b.bank) == (class.controller, class.bank))
            {
                Some(entry) => entry.pages += 1,
                None => banks.push(BankPages {
                    controller: class.controller,
                    bank: class.bank,
                    pages: 1,
                }),
            }
        }
        banks.sort_by_key(|b| (b.controller, b.bank));
        match window.place(scratch, |page| pool.page_address(page), page_size) {
            Ok(ptr) => Ok(BankSpan {
                ptr,
                pages,
                steps,
                banks,
            }),
            Err(error) => {
                give_back(pool, uses, scratch).expect("pages taken above are in use");
                Err(error)
            }
        }
    }

    /// Returns a raw page.
    pub fn free_page(&self, page: PageId) -> Result<(), MemError> {
        let mut state = self.lock();
        match state.uses.get(page.index()) {
            Some(PageUse::Raw) => {
                state.pool.free(page)?;
                state.uses[page.index()] = PageUse::Free;
                Ok(())
            }
            _ => Err(MemError::InvalidFree(format!(
                "page {} was not handed out by the page API",
                page.0
            ))),
        }
    }

    /// Address of a raw page.
    pub fn page_address(&self, page: PageId) -> *mut u8 {
        self.lock().pool.page_address(page)
    }

    /// Class of the pool page holding `address` as filed at setup (for
    /// addresses inside spans, the page moved there).
    pub fn class_of_address(&self, address: usize) -> Option<PageClass> {
        let state = self.lock();
        let page = state.pool_page_of(address)?;
        Some(state.pool.class(page))
    }
}

impl State {
    fn arena_for(&mut self, colors: &[u32]) -> Result<usize, MemError> {
        if let Some(index) = self.arenas.iter().position(|a| a.cursor.colors() == colors) {
            return Ok(index);
        }
        let cursor = ColorCursor::new(colors)?;
        let limit = self.pool.mapping().colors();
        if let Some(&bad) = colors.iter().find(|&&c| c >= limit) {
            return Err(MemError::Request(format!(
                "color {bad}: expected 0..{limit}"
            )));
        }
        if self.arenas.len() >= usize::from(u16::MAX) {
            return Err(MemError::Request(
                "too many distinct color sets (65535)".into(),
            ));
        }
        self.arenas.push(Arena {
            cursor,
            classes: [ClassState::default(); SIZE_CLASSES.len()],
        });
        Ok(self.arenas.len() - 1)
    }

    /// `count` pages of the arena's colors into `scratch` (round robin,
    /// continuing a virtually contiguous run after `after` if possible).
    fn take_pages(
        &mut self,
        arena: usize,
        count: usize,
        usage: PageUse,
        after: Option<PageId>,
    ) -> Result<(), MemError> {
        self.scratch.clear();
        let Self {
            pool,
            arenas,
            scratch,
            uses,
            ..
        } = self;
        pool.alloc_colored_after(&mut arenas[arena].cursor, count, after, scratch)?;
        for page in scratch.iter() {
            uses[page.index()] = usage;
        }
        Ok(())
    }

    /// Gives the pages in `scratch` back to the pool and marks them free:
    /// the pages a span just released, or those taken for a request that
    /// could not be placed.
    fn give_back_scratch(&mut self) -> Result<(), MemError> {
        give_back(&mut self.pool, &mut self.uses, &self.scratch)
    }

    /// Moves the pages of the span at window page `first` that come after
    /// its first `keep` back to the pool and marks them free (through
    /// `scratch`); `keep == 0` takes the whole span out of the window.
    fn release_span_pages(&mut self, first: usize, keep: usize) -> Result<(), MemError> {
        self.scratch.clear();
        let home = |page: PageId| self.pool.page_address(page);
        if keep == 0 {
            self.window.remove(first, home, &mut self.scratch)?;
        } else {
            self.window.truncate(first, keep, home, &mut self.scratch)?;
        }
        self.give_back_scratch()
    }

    fn alloc_in(
        &mut self,
        arena: usize,
        size: usize,
        align: usize,
        page_size: usize,
    ) -> Result<NonNull<u8>, MemError> {
        if !align.is_power_of_two() {
            return Err(MemError::Request(format!(
                "alignment {align}: expected a power of two"
            )));
        }
        let align = align.max(MIN_ALIGN);
        let size = size.max(1);
        let tag = arena as u16;
        if let Some(class) = size_class(size, align) {
            return self.alloc_small(arena, class, page_size);
        }
        if size <= page_size && align <= page_size {
            self.take_pages(arena, 1, PageUse::Whole { arena: tag }, None)?;
            let page = self.scratch[0];
            return Ok(NonNull::new(self.pool.page_address(page)).expect("pool pages are non-null"));
        }
        let pages = size.div_ceil(page_size);
        self.take_pages(arena, pages, PageUse::Span { arena: tag }, None)?;
        let placed = self
            .window
            .place(&self.scratch, |page| self.pool.page_address(page), align);
        if placed.is_err() {
            self.give_back_scratch()?;
        }
        placed
    }

    /// Resizes the span at `ptr` without copying when the new size needs
    /// more than one page: shrinks it in place (the tail pages go back to
    /// the pool), grows it in place when the window pages after it are
    /// empty, or else moves its pages (one mremap per run, no copy) to a
    /// window place with room and grows it there. The new pages continue
    /// the arena's round robin. `None` if `ptr` is not a span or the new
    /// size is a page or less (the caller copies then).
    fn resize_span(
        &mut self,
        ptr: NonNull<u8>,
        arena: usize,
        size: usize,
        page_size: usize,
    ) -> Result<Option<NonNull<u8>>, MemError> {
        let Some((mut first, old_pages)) = self.window.span_at(ptr.as_ptr() as usize) else {
            return Ok(None);
        };
        if size <= page_size {
            return Ok(None);
        }
        let pages = size.div_ceil(page_size);
        if pages <= old_pages {
            self.release_span_pages(first, pages)?;
            return Ok(Some(ptr));
        }
        let last = PageId(self.window.span_pages(first)[old_pages - 1]);
        self.take_pages(
            arena,
            pages - old_pages,
            PageUse::Span {
                arena: arena as u16,
            },
            Some(last),
        )?;
        let grown = if self.window.room_after(first) >= self.scratch.len() {
            Ok(())
        } else {
            self.window.relocate(first, pages).map(|to| first = to)
        }
        .and_then(|()| {
            self.window
                .extend(first, &self.scratch, |page| self.pool.page_address(page))
        });
        match grown {
            Ok(()) => Ok(Some(
                NonNull::new(self.window.address(first)).expect("window addresses are non-null"),
            )),
            Err(error) => {
                self.give_back_scratch()?;
                Err(error)
            }
        }
    }

    fn alloc_small(
        &mut self,
        arena: usize,
        class: usize,
        page_size: usize,
    ) -> Result<NonNull<u8>, MemError> {
        let object = SIZE_CLASSES[class];
        let state = &mut self.arenas[arena].classes[class];
        if state.free != 0 {
            let ptr = state.free;
            // SAFETY: `ptr` is a freed object of this class; its first word
            // holds the next free object, written by `free`.
            state.free = unsafe { (ptr as *const usize).read() };
            return Ok(NonNull::new(ptr as *mut u8).expect("free objects are non-null"));
        }
        if state.bump + object > state.bump_end {
            self.take_pages(
                arena,
                1,
                PageUse::Small {
                    arena: arena as u16,
                    class: class as u8,
                },
                None,
            )?;
            let start = self.pool.page_address(self.scratch[0]) as usize;
            let state = &mut self.arenas[arena].classes[class];
            state.bump = start;
            state.bump_end = start + page_size / object * object;
        }
        let state = &mut self.arenas[arena].classes[class];
        let ptr = state.bump;
        state.bump += object;
        Ok(NonNull::new(ptr as *mut u8).expect("pool addresses are non-null"))
    }

    /// The pool page at `address` (in the pool region or in a span).
    fn pool_page_of(&self, address: usize) -> Option<PageId> {
        self.pool
            .page_of_address(address)
            .or_else(|| self.window.resident_at(address).map(PageId))
    }

    fn lookup(&self, address: usize, page_size: usize) -> Result<Allocation, MemError> {
        if let Some(page) = self.pool.page_of_address(address) {
            let offset = address - self.pool.page_address(page) as usize;
            return match self.uses[page.index()] {
                PageUse::Small { arena, class }
                    if offset.is_multiple_of(SIZE_CLASSES[usize::from(class)])
                        && offset + SIZE_CLASSES[usize::from(class)] <= page_size =>
                {
                    Ok(Allocation {
                        usable: SIZE_CLASSES[usize::from(class)],
                        arena: usize::from(arena),
                    })
                }
                PageUse::Whole { arena } if offset == 0 => Ok(Allocation {
                    usable: page_size,
                    arena: usize::from(arena),
                }),
                other => Err(MemError::InvalidFree(format!(
                    "{address:#x} is not the start of an allocation (page {} is {other:?})",
                    page.0
                ))),
            };
        }
        if let Some((first, pages)) = self.window.span_at(address) {
            let pool_page = self.window.span_pages(first)[0];
            if let PageUse::Span { arena } = self.uses[pool_page as usize] {
                return Ok(Allocation {
                    usable: pages * page_size,
                    arena: usize::from(arena),
                });
            }
        }
        Err(MemError::InvalidFree(format!(
            "{address:#x} was not allocated from this pool"
        )))
    }

    fn free(&mut self, address: usize, page_size: usize) -> Result<(), MemError> {
        // Fast path: a small object (one table look-up, no second pass).
        if let Some(page) = self.pool.page_of_address(address)
            && let PageUse::Small { arena, class } = self.uses[page.index()]
        {
            let object = SIZE_CLASSES[usize::from(class)];
            let offset = address - self.pool.page_address(page) as usize;
            if offset.is_multiple_of(object) && offset + object <= page_size {
                let state = &mut self.arenas[usize::from(arena)].classes[usize::from(class)];
                // SAFETY: `address` is the start of an object of this class
                // (checked just above), at least 16 bytes and 16-aligned,
                // owned by the allocator again from now on.
                unsafe { (address as *mut usize).write(state.free) };
                state.free = address;
                return Ok(());
            }
        }
        self.lookup(address, page_size)?;
        if let Some(page) = self.pool.page_of_address(address) {
            self.uses[page.index()] = PageUse::Free;
            return self.pool.free(page);
        }
        let (first, _) = self.window.span_at(address).expect("lookup found the span");
        self.release_span_pages(first, 0)
    }
}
