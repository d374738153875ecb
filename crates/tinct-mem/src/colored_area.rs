//! [`ColoredArea`]: one contiguous virtual range whose every page lies in
//! the requested cache colours (and DRAM banks), grown on demand.
//!
//! This is the memory of the LD_PRELOAD shim. Instead of populating a
//! large pool up front and building each multi-page block from scattered
//! pages (one `mremap` per run, on every allocation and free), the area
//! starts empty and grows by *segments*: a segment is populated (from
//! transparent huge pages where the kernel gives them, so every 2 MiB holds
//! each of 512 colours once), translated through pagemap, and its pages of
//! the requested colours are moved to the end of the area
//! ([`crate::page_mover`], one `UFFDIO_MOVE` per run, the area stays one
//! kernel mapping); the other pages are unmapped at once. Each page moves
//! once in its life; blocks of any size are then contiguous area pages,
//! and allocating or freeing them moves nothing. The first segment, which
//! every process pays at start-up, is one huge page, or less when a few
//! hundred KiB of 4 KiB pages likely complete a row of the requested
//! colours (few colours, e.g. 8 of 16: see `first_segment_bytes`).
//!
//! *Round robin (kim2013 Section III-C).* Pages enter the area in rows of
//! one page per colour, in colour order: area page `k` has colour
//! `rotation[k % n]`, so any run of area pages takes the colours round
//! robin, each the same number of times (±1). Pages of a colour that runs
//! ahead wait as *spares* until every colour can give one. A colour that
//! can never have a page in the requested banks (bank functions that read
//! colour bits, found exactly by [`AddressMapping::colors_reaching`]) is
//! left out of the rotation from the start, and
//! [`ColoredArea::dropped_colors`] says so.
//!
//! *Banks (chandru-mueller).* With banks requested, only pages of the
//! requested (controller, bank) classes enter the rotation. Pages of the
//! requested colours in other banks are kept in a *reserve* when fallback
//! modes are given: once the memory budget is spent and the requested
//! banks can give no more, [`ColoredArea::grow`] continues with Algorithm
//! 1's fallbacks over the reserve (a [`PageBook`] with one-page chunks, as
//! the area moves every page on its own) and records the step that served
//! each page ([`ColoredArea::step`]).
//!
//! *Budget.* The populated memory over the area's life is bounded by
//! `budget_bytes` (`TINCT_POOL`): with `c` of `C` colours requested, about
//! `budget × c / C` of it can end up in the area (the memory
//! co-partitioning of page colouring, kim2013 Section I).
//!
//! *Locking.* A page that the kernel migrates loses its colour (see
//! [`crate::locking`]), so area pages are `mlock`ed as they enter the area
//! ([`AreaSpec::lock`]). They are locked only once moved: `UFFDIO_MOVE`
//! refuses to move between a locked and an unlocked mapping
//! (`validate_move_areas` in `mm/userfaultfd.c`), and the segments must
//! stay unlocked so their pages of other colours can be lazily freed
//! (`MADV_FREE` refuses locked pages). The locked filled part and the
//! unfilled rest are two kernel mappings. Spares and reserve pages wait
//! unlocked, and the kernel may move one to another frame while it waits:
//! compaction migrates it, and khugepaged, collapsing a segment into a
//! huge page, copies it (a move /proc/vmstat does not count as a
//! migration). So segments are `MADV_NOHUGEPAGE` once populated, and the
//! frames of the pages about to enter are read again right before they
//! move: a page found on another frame is filed again by that frame
//! (another colour's spares, the reserve, or given back;
//! [`GrowthStats::refiled_pages`] counts them), and only pages found on
//! the frame they were filed with move in. Rows are made up again and
//! read again a few times at most; spares still moving then wait for the
//! next growth, and a reserve growth stops short. Every page enters on
//! the frame it has then, and the area records that frame; a move after
//! that is the after-the-fact check's ([`crate::FrameDrift`]). Should
//! pagemap, readable when the segment was populated, fail at that moment,
//! the pages enter on the frame read then rather than fail the
//! allocation, and [`GrowthStats::unverified_pages`] and
//! [`ColoredArea::unverified_reason`] say so.
//! When the kernel refuses a lock (RLIMIT_MEMLOCK), [`Locking::IfAllowed`]
//! keeps growing unlocked and [`ColoredArea::unlocked_reason`] says from
//! which page on.

use std::collections::VecDeque;
use std::time::Instant;

use rustix::mm::{self, Advice};
use tinct_sys::pagemap::Pagemap;

use crate::error::MemError;
use crate::locking::{LOCKING_OFF, Locking, lock_range};
use crate::mapping::{AddressMapping, PageClass};
use crate::page_book::{BankRequest, Modes, PageBook, PageId, Step};
use crate::page_mover::PageMover;
use crate::region::{map_private, os_error};

/// 2 MiB: the transparent huge page, and the smallest segment.
const SEGMENT_ALIGN: usize = 2 << 20;

/// Segments up to this size are populated from transparent huge pages
/// (see [`Segment::populate`]).
const HUGE_SEGMENT_LIMIT: usize = 16 << 20;

/// Pages waiting outside the area at most this far apart are read from
/// pagemap at once (reading the entries between costs less than another
/// system call).
const NEARBY_PAGES: usize = 64;

/// Rounds of reading the frames of the pages about to enter again (see
/// [`ColoredArea::move_rows`]).
const MAX_REFILE_ROUNDS: usize = 4;

/// The first byte of every page that enters the area (so no page is all
/// zeros while it moves, see `Segment::populate`). Area memory is
/// therefore not zero-filled: whoever promises zeros (calloc, anonymous
/// mmap) clears it.
pub const PAGE_MARK: u8 = 0xA5;

/// What an area holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AreaSpec {
    /// Colours and DRAM classes of the machine (the functions).
    pub mapping: AddressMapping,
    /// The colours to serve, sorted and unique, non-empty.
    pub colors: Vec<u32>,
    /// Requested DRAM banks (`None`: any).
    pub banks: Option<Vec<u32>>,
    /// Requested DRAM controllers (`None`: any).
    pub controllers: Option<Vec<u32>>,
    /// chandru-mueller Algorithm 1's fallbacks once the requested banks
    /// are spent (EXACT: none).
    pub modes: Modes,
    /// Most memory to populate over the area's life, in bytes.
    pub budget_bytes: u64,
    /// Run without frame numbers (pages filed by virtual address, no
    /// placement control, said by [`ColoredArea::uncolored_reason`]).
    pub allow_uncolored: bool,
    /// Whether area pages are `mlock`ed as they enter the area (see the
    /// module documentation, "Locking"; [`ColoredArea::unlocked_reason`]
    /// says when they are not).
    pub lock: Locking,
}

/// How the area grew, for reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GrowthStats {
    /// Segments populated.
    pub segments: u64,
    /// Bytes populated in all.
    pub populated_bytes: u64,
    /// Time spent growing, in ns.
    pub grow_ns: u64,
    /// Time of the first growth (the start-up cost), in ns.
    pub first_grow_ns: u64,
    /// Of `grow_ns`, the time the kernel took to populate the segments
    /// (mapping them and giving every page a zeroed frame: most of it is
    /// clearing pages), in ns. The shim cannot read a page's frame before
    /// the page exists, so this is the floor of any growth; the rest of
    /// `grow_ns` (pagemap, moves, giving back other colours) is the shim's.
    pub populate_ns: u64,
    /// Move calls (one per run of pages).
    pub moves: u64,
    /// Pages waiting for a rotation row.
    pub spare_pages: u64,
    /// Pages kept for Algorithm 1's fallbacks.
    pub reserve_pages: u64,
    /// Waiting pages (spares, reserve pages) found on another frame than
    /// they were filed with when read again before entering the area, and
    /// filed again by the frame they had then (see the module
    /// documentation, "Locking").
    pub refiled_pages: u64,
    /// Pages that entered the area on the frame read when their segment
    /// was populated, not read again right before they moved: pagemap
    /// could not be read then ([`ColoredArea::unverified_reason`] says
    /// why). Their colour is as sure as that first reading.
    pub unverified_pages: u64,
}

/// How the frames of pages about to enter the area are read again
/// (`None`: not present), in the order of the addresses given.
type FramesNow = fn(&ColoredArea, &[usize]) -> Result<Vec<Option<u64>>, MemError>;

/// A page waiting outside the area: where it is and its frame.
#[derive(Debug, Clone, Copy)]
struct Outside {
    address: usize,
    frame: u64,
}

/// Pages of the requested colours in other banks, for Algorithm 1.
#[derive(Debug)]
struct Reserve {
    book: PageBook,
    addresses: Vec<usize>,
}

/// A growable range of pages of the requested placement; see the module
/// documentation.
#[derive(Debug)]
pub struct ColoredArea {
    spec: AreaSpec,
    page_size: usize,
    base: usize,
    max_pages: usize,
    frames: Vec<u64>,
    steps: Vec<Step>,
    rotation: Vec<u32>,
    dropped: Vec<u32>,
    /// `spares[color]`: pages of that colour waiting for a row.
    spares: Vec<VecDeque<Outside>>,
    reserve: Option<Reserve>,
    /// The next requested (controller, bank) for a fallback request.
    next_class: usize,
    mover: PageMover,
    stats: GrowthStats,
    uncolored: Option<String>,
    /// Why area pages (from some page on) are not locked.
    unlocked: Option<String>,
    /// Pages of other colours populated during the current growth.
    unwanted: Vec<usize>,
    /// Every segment populated (start, bytes): their pages of other
    /// colours stay mapped, lazily freed (see `release_pages`).
    segments: Vec<(usize, usize)>,
    /// Reads the frames of waiting pages again right before they enter:
    /// `ColoredArea::frames_now` (pagemap); tests put in one that fails,
    /// or that finds pages moved.
    reread: FramesNow,
    /// Whether the first segment may be smaller than a huge page (see
    /// `first_segment_bytes`); tests whose arithmetic assumes every
    /// colour in equal share, as huge pages give, turn it off.
    small_first_segment: bool,
    /// Why some pages entered without their frame read again (the first
    /// pagemap error at that point), see `GrowthStats::unverified_pages`.
    unverified: Option<String>,
}

// SAFETY: the area is address space owned by this value; its pages are
// handed out as raw addresses and the caller coordinates access to them.
unsafe impl Send for ColoredArea {}

/// Unmaps `len` bytes at `address`.
///
/// # Safety
/// The range must belong to a mapping the caller owns and nothing may
/// reference it.
unsafe fn unmap(address: usize, len: usize) {
    // SAFETY: forwarded caller contract.
    let _ = unsafe { mm::munmap(address as *mut std::ffi::c_void, len) };
}

impl ColoredArea {
    /// Reserves address space for every page the budget could give (no
    /// memory is populated until [`ColoredArea::grow`]).
    pub fn new(spec: AreaSpec) -> Result<Self, MemError> {
        let page_size = rustix::param::page_size();
        if spec.mapping.page_size != page_size as u64 {
            return Err(MemError::Mapping(format!(
                "mapping page size {}: expected the system page size {page_size}",
                spec.mapping.page_size
            )));
        }
        let colors = spec.mapping.colors();
        if spec.colors.is_empty() {
            return Err(MemError::Request(
                "no colours: expected at least one".into(),
            ));
        }
        if let Some(&bad) = spec.colors.iter().find(|&&c| c >= colors) {
            return Err(MemError::Request(format!(
                "color {bad}: expected 0..{colors}"
            )));
        }
        let budget_pages = usize::try_from(spec.budget_bytes / page_size as u64).map_err(|_| {
            MemError::Request(format!("budget of {} bytes: too large", spec.budget_bytes))
        })?;
        if budget_pages == 0 {
            return Err(MemError::Request(format!(
                "budget of {} bytes: expected at least one page",
                spec.budget_bytes
            )));
        }
        let max_pages = budget_pages;
        let len = max_pages
            .checked_mul(page_size)
            .ok_or_else(|| MemError::Request("area too large".into()))?;
        // NORESERVE: only moved-in pages use memory.
        let raw = map_private(len, true, "area reservation")?;
        // khugepaged must never collapse area pages into a new huge page:
        // that would copy them to other frames, of other colours.
        // SAFETY: advice on exactly the mapping created above.
        unsafe { mm::madvise(raw, len, Advice::LinuxNoHugepage) }.map_err(os_error(format!(
            "madvise(area, MADV_NOHUGEPAGE, {len} bytes)"
        )))?;
        let reserve = (spec.modes != Modes::EXACT
            && (spec.banks.is_some() || spec.controllers.is_some()))
        .then(|| -> Result<Reserve, MemError> {
            Ok(Reserve {
                book: PageBook::new(spec.mapping.clone(), Vec::new())?,
                addresses: Vec::new(),
            })
        })
        .transpose()?;
        let reaching = spec
            .mapping
            .colors_reaching(spec.banks.as_deref(), spec.controllers.as_deref());
        let (rotation, dropped): (Vec<u32>, Vec<u32>) =
            spec.colors.iter().partition(|&&c| reaching[c as usize]);
        let unlocked = (spec.lock == Locking::Off).then(|| LOCKING_OFF.to_string());
        Ok(Self {
            rotation,
            dropped,
            spares: vec![VecDeque::new(); colors as usize],
            reserve,
            next_class: 0,
            spec,
            page_size,
            base: raw as usize,
            max_pages,
            frames: Vec::new(),
            steps: Vec::new(),
            mover: PageMover::new(),
            stats: GrowthStats::default(),
            uncolored: None,
            unlocked,
            unwanted: Vec::new(),
            segments: Vec::new(),
            reread: Self::frames_now,
            small_first_segment: true,
            unverified: None,
        })
    }

    /// The specification.
    pub fn spec(&self) -> &AreaSpec {
        &self.spec
    }

    /// Pages in the area (all of the requested placement, or a fallback).
    pub fn pages(&self) -> usize {
        self.frames.len()
    }

    /// Page size in bytes.
    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// First byte of the area.
    pub fn base(&self) -> usize {
        self.base
    }

    /// The reserved range (filled and not yet filled).
    pub fn reserved(&self) -> std::ops::Range<usize> {
        self.base..self.base + self.max_pages * self.page_size
    }

    /// Most pages the area can hold.
    pub fn max_pages(&self) -> usize {
        self.max_pages
    }

    /// Address of area page `index`.
    pub fn page_address(&self, index: usize) -> usize {
        self.base + index * self.page_size
    }

    /// The area page holding `address`, if it is in the reserved range.
    pub fn page_index(&self, address: usize) -> Option<usize> {
        self.reserved()
            .contains(&address)
            .then(|| (address - self.base) / self.page_size)
    }

    /// The frame of area page `index` when it entered the area.
    pub fn frame(&self, index: usize) -> u64 {
        self.frames[index]
    }

    /// All frames, in area order.
    pub fn frames(&self) -> &[u64] {
        &self.frames
    }

    /// The colour, bank and controller of area page `index`.
    pub fn class(&self, index: usize) -> PageClass {
        self.spec.mapping.classify_frame(self.frames[index])
    }

    /// The step of Algorithm 1 that brought area page `index` in
    /// (`Exact` for every page of the requested placement).
    pub fn step(&self, index: usize) -> Step {
        self.steps[index]
    }

    /// The colours of the round robin (the requested ones, less
    /// [`ColoredArea::dropped_colors`]).
    pub fn rotation(&self) -> &[u32] {
        &self.rotation
    }

    /// Requested colours left out of the rotation: no address of theirs
    /// lies in the requested banks.
    pub fn dropped_colors(&self) -> &[u32] {
        &self.dropped
    }

    /// How the area grew.
    pub fn stats(&self) -> GrowthStats {
        let mut stats = self.stats;
        stats.moves = self.mover.calls();
        stats.spare_pages = self.spares.iter().map(|s| s.len() as u64).sum();
        stats.reserve_pages = self
            .reserve
            .as_ref()
            .map_or(0, |r| r.book.free_pages() as u64);
        stats
    }

    /// `uffdio-move` or `mremap`.
    pub fn move_method(&self) -> &'static str {
        self.mover.method()
    }

    /// Why frame numbers were unreadable, when running uncoloured.
    pub fn uncolored_reason(&self) -> Option<&str> {
        self.uncolored.as_deref()
    }

    /// Why area pages are not `mlock`ed (`None`: every page is), naming
    /// the first unlocked page when locking was refused part way.
    pub fn unlocked_reason(&self) -> Option<&str> {
        self.unlocked.as_deref()
    }

    /// Why some area pages entered on the frame read when their segment
    /// was populated, without it being read again right before they moved
    /// (`None`: every page's frame was read again;
    /// [`GrowthStats::unverified_pages`] counts them).
    pub fn unverified_reason(&self) -> Option<&str> {
        self.unverified.as_deref()
    }

    /// True once the budget is spent (only reserve fallbacks can still
    /// add pages).
    pub fn budget_spent(&self) -> bool {
        self.remaining_budget() < self.page_size as u64
    }

    fn remaining_budget(&self) -> u64 {
        self.spec
            .budget_bytes
            .saturating_sub(self.stats.populated_bytes)
    }

    /// Adds at least `pages` pages to the area, populating segments within
    /// the budget and then, with fallback modes, taking reserve pages per
    /// chandru-mueller Algorithm 1. Returns the pages added: fewer than
    /// asked, possibly 0, when the budget and the reserve are spent, or
    /// when the kernel moved every reserve page granted, again and again,
    /// before it could enter (they wait for the next growth).
    pub fn grow(&mut self, pages: usize) -> Result<usize, MemError> {
        let started = Instant::now();
        let before = self.pages();
        self.mover.for_this_process();
        let result = self.grow_until(before + pages);
        let unwanted = std::mem::take(&mut self.unwanted);
        // SAFETY: the unwanted pages are ours and referenced by nothing.
        unsafe { self.release_pages(&unwanted) };
        let ns = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        if self.stats.first_grow_ns == 0 && self.stats.segments > 0 {
            self.stats.first_grow_ns = ns;
        }
        self.stats.grow_ns = self.stats.grow_ns.saturating_add(ns);
        result.map(|()| self.pages() - before)
    }

    /// Starts the growth's times again (`grow_ns`, `populate_ns`) in a
    /// child of `fork`: its copy of the area keeps what the parent
    /// populated, but not the time the parent spent on it. The start-up
    /// (`first_grow_ns`) stays the parent's.
    pub fn restart_growth_times(&mut self) {
        self.stats.grow_ns = 0;
        self.stats.populate_ns = 0;
    }

    /// Segments, then reserve pages, until the area has `target` pages or
    /// nothing more can come.
    fn grow_until(&mut self, target: usize) -> Result<(), MemError> {
        if self.rotation.is_empty() && self.reserve.is_none() {
            // No colour can have a page in the requested banks.
            return Ok(());
        }
        while self.pages() < target && self.pages() < self.max_pages {
            if !self.budget_spent() {
                self.populate_segment(target - self.pages())?;
            } else if self.move_rows()? == 0
                && self.take_from_reserve()? == 0
                && self.move_rows()? == 0
            {
                // Rows first: spares `move_rows` held back, or rows made
                // by reserve pages filed again as spares (last, once the
                // reserve gives nothing), enter before fallbacks.
                break;
            }
        }
        Ok(())
    }

    /// Bytes to populate for `pages` more area pages: enough for the
    /// requested share of the colours (and banks), at least 2 MiB and half
    /// of what was populated so far (so growth takes few steps), within
    /// the budget; a first segment that small pages serve is smaller (see
    /// `first_segment_bytes`).
    fn segment_bytes(&self, pages: usize) -> usize {
        let mapping = &self.spec.mapping;
        let colors = u128::from(mapping.colors());
        let served = self.rotation.len().max(1) as u128;
        let classes = u128::from(mapping.banks()) * u128::from(mapping.controllers());
        let wanted_classes = match (&self.spec.banks, &self.spec.controllers) {
            (None, None) => classes,
            (banks, controllers) => {
                let b = banks
                    .as_ref()
                    .map_or(u128::from(mapping.banks()), |b| b.len() as u128);
                let c = controllers
                    .as_ref()
                    .map_or(u128::from(mapping.controllers()), |c| c.len() as u128);
                (b * c).max(1)
            }
        };
        let needed = (pages as u128) * colors * classes * 5 / (served * wanted_classes * 4);
        let bytes = needed.saturating_mul(self.page_size as u128);
        let bytes = u64::try_from(bytes).unwrap_or(u64::MAX);
        let small = (self.stats.populated_bytes == 0 && self.small_first_segment)
            .then(|| {
                let one_in = (colors * classes) as f64 / wanted_classes as f64;
                self.first_segment_bytes(one_in, served)
            })
            .filter(|&small| bytes <= small);
        let bytes = match small {
            // The small segment serves the request: 4 KiB pages.
            Some(small) => small,
            // Huge pages, whose frames hold every colour in equal share.
            None => bytes.max((self.stats.populated_bytes / 2).max(SEGMENT_ALIGN as u64)),
        };
        let bytes = bytes.min(self.remaining_budget());
        let page = self.page_size as u64;
        let rounded = if bytes >= SEGMENT_ALIGN as u64 {
            bytes / SEGMENT_ALIGN as u64 * SEGMENT_ALIGN as u64
        } else {
            bytes / page * page
        };
        usize::try_from(rounded).unwrap_or(usize::MAX)
    }

    /// The size of the first segment (the start-up cost of every
    /// process) when its request is small: 2 MiB, one huge page, whose
    /// frames hold every colour in order; or less when 4 KiB pages in any
    /// order are likely to complete a row sooner. A row needs one page of
    /// each of the `row` served colours, and a page is of a given one with
    /// probability 1 / `one_in` (when the bank functions read no colour
    /// bit; when they do, some colours are rarer and this runs low, and a
    /// huge page follows): the expected number of pages to draw until
    /// every colour came is `one_in × H(row)` (the coupon collector, H the
    /// harmonic number). Twice that, when it is below 1 MiB, serves the
    /// first rows and costs the kernel fewer pages to clear than one huge
    /// page: with 8 of 16 colours 348 KiB where the huge page is 2 MiB;
    /// with 256 of 512 colours it is the huge page. Later segments, up to
    /// `HUGE_SEGMENT_LIMIT`, are huge pages: their frames come in colour
    /// order, where 4 KiB pages come in the order of the kernel's free
    /// lists, recently freed frames first, whose colours may be far from
    /// even.
    fn first_segment_bytes(&self, one_in: f64, row: u128) -> u64 {
        let harmonic: f64 = (1..=row).map(|k| 1.0 / k as f64).sum();
        let expected_pages = one_in * harmonic;
        let bytes = 2.0 * expected_pages * self.page_size as f64;
        if bytes.is_finite() && bytes >= 1.0 && bytes < (SEGMENT_ALIGN / 2) as f64 {
            (bytes as u64).next_multiple_of(self.page_size as u64)
        } else {
            SEGMENT_ALIGN as u64
        }
    }

    /// Populates one segment, files its pages and moves complete rows
    /// into the area.
    fn populate_segment(&mut self, pages: usize) -> Result<(), MemError> {
        let len = self.segment_bytes(pages);
        if len == 0 {
            self.stats.populated_bytes = self.spec.budget_bytes;
            return Ok(());
        }
        let started = Instant::now();
        let segment = Segment::populate(len)?;
        let ns = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.stats.populate_ns = self.stats.populate_ns.saturating_add(ns);
        self.segments.push((segment.start, len));
        self.stats.segments += 1;
        self.stats.populated_bytes = self.stats.populated_bytes.saturating_add(len as u64);
        let frames = match self.read_frames(segment.start, len / self.page_size) {
            Ok(frames) => frames,
            Err(error) => {
                self.segments.pop();
                // SAFETY: the segment is ours and nothing references it yet.
                unsafe { unmap(segment.start, len) };
                return Err(error);
            }
        };
        for (index, &frame) in frames.iter().enumerate() {
            self.file_page(segment.start + index * self.page_size, frame)?;
        }
        self.move_rows().map(|_| ())
    }

    /// Files a page waiting outside the area by its frame: a spare of its
    /// colour, a reserve page (requested colour, other bank), or unwanted
    /// (released when this growth ends, see `release_pages`).
    fn file_page(&mut self, address: usize, frame: u64) -> Result<(), MemError> {
        let class = self.spec.mapping.classify_frame(frame);
        if self.spec.colors.binary_search(&class.color).is_err() {
            self.unwanted.push(address);
        } else if self.class_wanted(class) {
            if self.rotation.binary_search(&class.color).is_ok() {
                self.spares[class.color as usize].push_back(Outside { address, frame });
            } else {
                self.unwanted.push(address);
            }
        } else if let Some(reserve) = &mut self.reserve {
            reserve.book.extend(&[frame])?;
            reserve.addresses.push(address);
        } else {
            self.unwanted.push(address);
        }
        Ok(())
    }

    /// The frames of the pages at `addresses` now (`None`: not present),
    /// in the same order: one pagemap read per cluster of nearby pages.
    fn frames_now(&self, addresses: &[usize]) -> Result<Vec<Option<u64>>, MemError> {
        let page = self.page_size;
        let mut order: Vec<usize> = (0..addresses.len()).collect();
        order.sort_unstable_by_key(|&i| addresses[i]);
        let map = Pagemap::open_self()?;
        let mut now = vec![None; addresses.len()];
        let mut index = 0;
        while index < order.len() {
            // A cluster: pages at most `NEARBY_PAGES` apart, read at once.
            let start = addresses[order[index]];
            let mut end = index + 1;
            while end < order.len()
                && addresses[order[end]] - addresses[order[end - 1]] <= NEARBY_PAGES * page
            {
                end += 1;
            }
            let span = (addresses[order[end - 1]] - start) / page + 1;
            let entries = map.entries(start, span)?;
            for &i in &order[index..end] {
                now[i] = entries[(addresses[i] - start) / page].frame();
            }
            index = end;
        }
        Ok(now)
    }

    /// The frames of `pages` now, read again right before they enter the
    /// area (`None`: not present); in uncoloured running their recorded
    /// virtual page numbers (nothing to read again). An error means
    /// pagemap could not be read: the caller decides what enters.
    fn frames_again(&self, pages: &[Outside]) -> Result<Vec<Option<u64>>, MemError> {
        if self.uncolored.is_some() {
            return Ok(pages.iter().map(|p| Some(p.frame)).collect());
        }
        let addresses: Vec<usize> = pages.iter().map(|p| p.address).collect();
        (self.reread)(self, &addresses)
    }

    /// Notes that `pages` pages enter on the frame read when their segment
    /// was populated, because reading it again failed with `error`.
    fn note_unverified(&mut self, pages: usize, error: &MemError) {
        self.stats.unverified_pages = self.stats.unverified_pages.saturating_add(pages as u64);
        self.unverified
            .get_or_insert_with(|| format!("reading /proc/self/pagemap again failed: {error}"));
    }

    /// Files again a waiting page the kernel moved, by the frame it has
    /// now (`None`: not present, given back).
    fn refile(&mut self, address: usize, frame_now: Option<u64>) -> Result<(), MemError> {
        self.stats.refiled_pages += 1;
        match frame_now {
            Some(frame) => self.file_page(address, frame),
            None => {
                self.unwanted.push(address);
                Ok(())
            }
        }
    }

    /// Reads again the frames of the spares that the next `rows` rows
    /// would move in, files again (by the frame they have now) those the
    /// kernel moved since their frame was read, and returns how many rows
    /// from the front of the spares hold their frames: all `rows` when
    /// pagemap could not be read (they enter unverified, counted).
    fn refile_moved_spares(&mut self, rows: usize) -> Result<usize, MemError> {
        let pages: Vec<Outside> = self
            .rotation
            .iter()
            .flat_map(|&c| self.spares[c as usize].iter().take(rows).copied())
            .collect();
        let now = match self.frames_again(&pages) {
            Ok(now) => now,
            Err(error) => {
                self.note_unverified(pages.len(), &error);
                return Ok(rows);
            }
        };
        let mut moved: Vec<(usize, Option<u64>)> = Vec::new();
        let mut verified = rows;
        let mut next = 0;
        for position in 0..self.rotation.len() {
            let spares = &mut self.spares[self.rotation[position] as usize];
            // The spares that held stay at the front, in order; the moved
            // ones leave (filed again below, at the back of a queue).
            let mut kept = 0;
            for _ in 0..rows {
                let frame_now = now[next];
                next += 1;
                if frame_now == Some(spares[kept].frame) {
                    kept += 1;
                } else {
                    let page = spares.remove(kept).expect("a spare of each row");
                    moved.push((page.address, frame_now));
                }
            }
            verified = verified.min(kept);
        }
        for (address, frame_now) in moved {
            self.refile(address, frame_now)?;
        }
        Ok(verified)
    }

    /// Complete rows the spares can give (one spare of every rotation
    /// colour each), within the room left in the area.
    fn complete_rows(&self) -> usize {
        let rows = self
            .rotation
            .iter()
            .map(|&c| self.spares[c as usize].len())
            .min()
            .unwrap_or(0);
        rows.min((self.max_pages - self.pages()) / self.rotation.len().max(1))
    }

    /// Frames of `pages` pages at `start`; virtual page numbers if frames
    /// are unreadable and uncoloured running is allowed.
    fn read_frames(&mut self, start: usize, pages: usize) -> Result<Vec<u64>, MemError> {
        let read = Pagemap::open_self()
            .and_then(|map| map.frames(start, pages))
            .map_err(|e| e.to_string());
        match read {
            Ok(frames) if frames.iter().all(|&f| f != 0) => Ok(frames),
            Ok(_) => self.uncolored_frames(
                start,
                pages,
                "/proc/self/pagemap reports frame number 0: this process lacks CAP_SYS_ADMIN"
                    .into(),
            ),
            Err(reason) => self.uncolored_frames(start, pages, reason),
        }
    }

    fn uncolored_frames(
        &mut self,
        start: usize,
        pages: usize,
        reason: String,
    ) -> Result<Vec<u64>, MemError> {
        if !self.spec.allow_uncolored {
            return Err(MemError::FramesUnreadable { reason });
        }
        self.uncolored.get_or_insert(reason);
        let first = (start / self.page_size) as u64;
        Ok((first..first + pages as u64).collect())
    }

    fn class_wanted(&self, class: PageClass) -> bool {
        self.spec
            .banks
            .as_ref()
            .is_none_or(|b| b.contains(&class.bank))
            && self
                .spec
                .controllers
                .as_ref()
                .is_none_or(|c| c.contains(&class.controller))
    }

    /// Moves complete rows (one spare of every rotation colour, in colour
    /// order) to the end of the area, each page on the frame it has now
    /// (see the module documentation, "Locking"), and returns the pages
    /// moved in. Only rows whose every page was just found on its filed
    /// frame move: the rows are read again, the pages the kernel moved are
    /// filed again, the rows that held move in, and the rows made up anew
    /// are read again, at most `MAX_REFILE_ROUNDS` times (the kernel could
    /// in theory move pages as fast as they are read). Spares not found
    /// still by then wait for the next growth, to be read again.
    fn move_rows(&mut self) -> Result<usize, MemError> {
        let before = self.pages();
        for _ in 0..MAX_REFILE_ROUNDS {
            let rows = self.complete_rows();
            if rows == 0 {
                break;
            }
            let verified = self.refile_moved_spares(rows)?;
            self.append_rows(verified)?;
            if verified == rows {
                break;
            }
        }
        Ok(self.pages() - before)
    }

    /// Moves the first `rows` rows of spares into the area.
    fn append_rows(&mut self, rows: usize) -> Result<(), MemError> {
        if rows == 0 {
            return Ok(());
        }
        let mut incoming = Vec::with_capacity(rows * self.rotation.len());
        for _ in 0..rows {
            for &color in &self.rotation {
                let page = self.spares[color as usize]
                    .pop_front()
                    .expect("every colour has a spare for each row");
                incoming.push((page, Step::Exact));
            }
        }
        self.append(&incoming)
    }

    /// One page from the reserve by chandru-mueller Algorithm 1 (see
    /// `grant_from_reserve`), on the frame it has now; returns the pages
    /// added, 0 if the reserve has none.
    ///
    /// The granted page's frame is read again first (see "Locking"). A
    /// page the kernel moved is filed again by its new frame, and so is
    /// every free reserve page the kernel moved (one moved page means the
    /// kernel went through its segment: compaction, or khugepaged
    /// collapsing it), and another page is granted; at most
    /// `MAX_REFILE_ROUNDS` times, then 0 (the pages wait for the next
    /// growth). When pagemap cannot be read, the page enters on its filed
    /// frame, counted in [`GrowthStats::unverified_pages`].
    fn take_from_reserve(&mut self) -> Result<usize, MemError> {
        for _ in 0..MAX_REFILE_ROUNDS {
            let Some(incoming) = self.grant_from_reserve()? else {
                return Ok(0);
            };
            let pages: Vec<Outside> = incoming.iter().map(|&(page, _)| page).collect();
            let held = match self.frames_again(&pages) {
                Ok(now) => {
                    let mut held = Vec::with_capacity(incoming.len());
                    for ((page, step), frame_now) in incoming.into_iter().zip(now) {
                        if frame_now == Some(page.frame) {
                            held.push((page, step));
                        } else {
                            self.refile(page.address, frame_now)?;
                        }
                    }
                    held
                }
                Err(error) => {
                    self.note_unverified(incoming.len(), &error);
                    incoming
                }
            };
            if !held.is_empty() {
                self.append(&held)?;
                return Ok(held.len());
            }
            self.refile_moved_reserve()?;
        }
        Ok(0)
    }

    /// Pages granted by chandru-mueller Algorithm 1 from the reserve (the
    /// next requested (controller, bank) round robin, with the spec's
    /// fallback modes), with the step that served them; `None` if there is
    /// none.
    fn grant_from_reserve(&mut self) -> Result<Option<Vec<(Outside, Step)>>, MemError> {
        let Some(reserve) = &mut self.reserve else {
            return Ok(None);
        };
        let mapping = &self.spec.mapping;
        let controllers: Vec<u32> = self
            .spec
            .controllers
            .clone()
            .unwrap_or_else(|| (0..mapping.controllers()).collect());
        let banks: Vec<u32> = self
            .spec
            .banks
            .clone()
            .unwrap_or_else(|| (0..mapping.banks()).collect());
        let class = self.next_class % (controllers.len() * banks.len()).max(1);
        self.next_class = self.next_class.wrapping_add(1);
        let request = BankRequest {
            controller: controllers[class / banks.len()],
            bank: banks[class % banks.len()],
            size: self.page_size as u64,
            modes: self.spec.modes,
        };
        let grant = match reserve.book.alloc_bank_aware(request) {
            Ok(grant) => grant,
            Err(MemError::Exhausted(_)) => return Ok(None),
            Err(error) => return Err(error),
        };
        Ok(Some(
            (grant.first.0..grant.first.0 + grant.pages)
                .map(|page| {
                    let page = PageId(page);
                    let outside = Outside {
                        address: reserve.addresses[page.index()],
                        frame: reserve.book.frame(page),
                    };
                    (outside, grant.step)
                })
                .collect(),
        ))
    }

    /// Reads again the frames of every free reserve page and files again
    /// (by the frame it has now) each one the kernel moved: it leaves the
    /// book (retired) and comes back under a new page id if its new frame
    /// is a reserve frame. Nothing changes when pagemap cannot be read.
    fn refile_moved_reserve(&mut self) -> Result<(), MemError> {
        let Some(reserve) = &self.reserve else {
            return Ok(());
        };
        let (ids, pages): (Vec<PageId>, Vec<Outside>) = (0..reserve.book.pages())
            .map(|index| PageId(index as u32))
            .filter(|&id| !reserve.book.is_used(id))
            .map(|id| {
                let page = Outside {
                    address: reserve.addresses[id.index()],
                    frame: reserve.book.frame(id),
                };
                (id, page)
            })
            .unzip();
        let Ok(now) = self.frames_again(&pages) else {
            return Ok(());
        };
        for ((id, page), frame_now) in ids.into_iter().zip(pages).zip(now) {
            if frame_now != Some(page.frame) {
                if let Some(reserve) = &mut self.reserve {
                    reserve.book.retire(id)?;
                }
                self.refile(page.address, frame_now)?;
            }
        }
        Ok(())
    }

    /// Exchanges the filled area pages `[a, a + pages)` and `[b, b +
    /// pages)` (disjoint) page-table entry by entry: every page keeps its
    /// frame and contents and moves to the other range's addresses, with
    /// its entry frame and step, through a scratch mapping. For a block
    /// that must move without its pages being copied to other frames (the
    /// shim's `mremap` of mapped memory). On error the ranges may be left
    /// partly exchanged (the error names the move that failed).
    ///
    /// # Safety
    /// The caller owns both ranges, and nothing accesses them during the
    /// call.
    pub unsafe fn swap_pages(&mut self, a: usize, b: usize, pages: usize) -> Result<(), MemError> {
        let filled = self.pages();
        assert!(
            a.max(b) + pages <= filled && (a + pages <= b || b + pages <= a),
            "swap_pages({a}, {b}, {pages}) of {filled} pages: ranges outside or overlapping"
        );
        if pages == 0 {
            return Ok(());
        }
        let bytes = pages * self.page_size;
        let scratch = map_private(bytes, true, "a scratch range to exchange area pages")? as usize;
        let (at_a, at_b) = (self.page_address(a), self.page_address(b));
        self.mover.for_this_process();
        // SAFETY: the caller owns both ranges (populated area pages nothing
        // references); each destination is unpopulated when its pages
        // arrive: the fresh scratch mapping, then a's pages once they
        // left, then b's.
        let moved = unsafe {
            self.mover
                .move_runs((scratch, bytes), &[(at_a, scratch, bytes)])
                .and_then(|()| self.mover.move_runs((at_a, bytes), &[(at_b, at_a, bytes)]))
                .and_then(|()| {
                    self.mover
                        .move_runs((at_b, bytes), &[(scratch, at_b, bytes)])
                })
        };
        // SAFETY: the scratch mapping is ours and empty (or, on error,
        // holds pages that are lost either way).
        unsafe { unmap(scratch, bytes) };
        moved?;
        for k in 0..pages {
            self.frames.swap(a + k, b + k);
            self.steps.swap(a + k, b + k);
        }
        Ok(())
    }

    /// Moves `incoming` pages, in order, to the end of the area.
    fn append(&mut self, incoming: &[(Outside, Step)]) -> Result<(), MemError> {
        let first = self.pages();
        let page = self.page_size;
        let mut runs: Vec<(usize, usize, usize)> = Vec::new();
        for (offset, (outside, _)) in incoming.iter().enumerate() {
            let to = self.page_address(first + offset);
            match runs.last_mut() {
                Some((from, dest, bytes))
                    if *from + *bytes == outside.address && *dest + *bytes == to =>
                {
                    *bytes += page;
                }
                _ => runs.push((outside.address, to, page)),
            }
        }
        let destination = (self.page_address(first), incoming.len() * page);
        // SAFETY: the sources are populated pages of our segments that
        // nothing references (spares and reserve pages are never handed
        // out); the destination is the unfilled end of our area.
        unsafe { self.mover.move_runs(destination, &runs)? };
        for (outside, step) in incoming {
            self.frames.push(outside.frame);
            self.steps.push(*step);
        }
        self.lock_new_pages(first, destination)
    }

    /// Locks the pages just moved to `destination` (area pages from
    /// `first` on), unless an earlier lock was refused or locking is off.
    fn lock_new_pages(
        &mut self,
        first: usize,
        (start, len): (usize, usize),
    ) -> Result<(), MemError> {
        if self.unlocked.is_some() {
            return Ok(());
        }
        // SAFETY: the destination is filled area pages, ours.
        if let Some(reason) = unsafe { lock_range(start, len, self.spec.lock) }? {
            self.unlocked = Some(format!(
                "area pages from {first} on are not locked: {reason}"
            ));
        }
        Ok(())
    }

    /// Gives pages of other colours back to the kernel *lazily*
    /// (`MADV_FREE`, one call per run of neighbours): unmapped at once,
    /// their frames would be the first the kernel hands out again, so the
    /// next segment would bring the same useless colours back (measured:
    /// half of a 256 MiB budget wasted for half of the colours). Lazily
    /// freed pages stay ours, so they are not handed out again, until
    /// memory runs short, when the kernel takes them without asking.
    ///
    /// # Safety
    /// Every page must belong to one of our segments and be referenced by
    /// nothing.
    unsafe fn release_pages(&self, pages: &[usize]) {
        let mut index = 0;
        while index < pages.len() {
            let start = pages[index];
            let mut end = start + self.page_size;
            index += 1;
            while index < pages.len() && pages[index] == end {
                end += self.page_size;
                index += 1;
            }
            // SAFETY: forwarded caller contract; MADV_FREE only drops
            // contents nobody needs.
            let _ = unsafe {
                mm::madvise(
                    start as *mut std::ffi::c_void,
                    end - start,
                    Advice::LinuxFree,
                )
            };
        }
    }

    /// Unmaps every page waiting outside the area (spares and free reserve
    /// pages) and forgets them: the child of `fork` drops its references,
    /// so the parent's pages are its own again (the parent keeps their
    /// frames when it writes them).
    pub fn release_outside_pages(&mut self) {
        for spares in &mut self.spares {
            for page in spares.drain(..) {
                // SAFETY: spare pages are ours and referenced by nothing.
                unsafe { unmap(page.address, self.page_size) };
            }
        }
        if let Some(reserve) = self.reserve.take() {
            for (index, &address) in reserve.addresses.iter().enumerate() {
                if !reserve.book.is_used(PageId(index as u32)) {
                    // SAFETY: free reserve pages are ours and unused.
                    unsafe { unmap(address, self.page_size) };
                }
            }
        }
    }

    /// Re-reads the frames of the area pages in `range` now (a page that
    /// the kernel copied on write after `fork`, or migrated, has a new one).
    pub fn current_frames(
        &self,
        range: std::ops::Range<usize>,
    ) -> Result<Vec<Option<u64>>, MemError> {
        crate::frame_drift::current_frames(self.page_address(range.start), range.len())
    }
}

/// A freshly populated, 2 MiB-aligned anonymous mapping.
struct Segment {
    start: usize,
}

impl Segment {
    fn populate(len: usize) -> Result<Self, MemError> {
        let over = len + SEGMENT_ALIGN;
        let raw = map_private(over, false, "segment")?;
        let raw = raw as usize;
        let start = raw.next_multiple_of(SEGMENT_ALIGN);
        // SAFETY: the head and tail around the aligned range are ours and
        // unused.
        unsafe {
            if start > raw {
                unmap(raw, start - raw);
            }
            let end = start + len;
            if raw + over > end {
                unmap(end, raw + over - end);
            }
        }
        let pointer = start as *mut std::ffi::c_void;
        // Huge pages give 2 MiB of contiguous frames: every colour once, in
        // order, so one segment completes rows at once (with 4 KiB frames
        // in the kernel's order, every colour of 256 shows up only after
        // about 12 MiB: a slow start). But with the kernel's default
        // `defrag=madvise` asking for many of them compacts memory
        // synchronously: 160 MiB took 624-934 ms here against 147 ms in
        // 4 KiB pages. So small segments (the start-up and most growth)
        // ask for huge pages, large ones do not.
        if len <= HUGE_SEGMENT_LIMIT {
            // SAFETY: advice on our own fresh range.
            let _ = unsafe { mm::madvise(pointer, len, Advice::LinuxHugepage) };
        }
        // SAFETY: populating our own range writes zeros only.
        let populated = unsafe { mm::madvise(pointer, len, Advice::LinuxPopulateWrite) };
        match populated {
            Ok(()) => {}
            Err(rustix::io::Errno::INVAL) => {
                for offset in (0..len).step_by(rustix::param::page_size()) {
                    // SAFETY: inside our writable range; nothing else uses it.
                    unsafe { ((start + offset) as *mut u8).write_volatile(0) };
                }
            }
            Err(errno) => {
                // SAFETY: our range, unused.
                unsafe { unmap(start, len) };
                return Err(os_error(format!(
                    "madvise(MADV_POPULATE_WRITE, {len} bytes)"
                ))(errno));
            }
        }
        // Splitting a huge page (moving one 4 KiB piece of it splits it)
        // maps every subpage that is still all zeros to the kernel's shared
        // zero page (Linux 6.12+): its frame, and colour, would be gone.
        // One non-zero byte per page keeps every frame.
        for offset in (0..len).step_by(rustix::param::page_size()) {
            // SAFETY: inside our writable range; nothing else uses it.
            unsafe { ((start + offset) as *mut u8).write_volatile(PAGE_MARK) };
        }
        // From now on khugepaged must leave the segment alone: collapsing
        // it would copy the pages waiting in it to new frames (a move
        // /proc/vmstat does not count as a migration) and fill the lazily
        // freed ones again. The huge pages populated above stay.
        // SAFETY: advice on our own range; it changes no contents.
        let _ = unsafe { mm::madvise(pointer, len, Advice::LinuxNoHugepage) };
        Ok(Self { start })
    }
}

impl Drop for ColoredArea {
    fn drop(&mut self) {
        // SAFETY: the reservation and the segments are ours; pages handed
        // out from the area must not be used after it is dropped (the
        // owner's contract), and spare or reserve pages were never handed
        // out.
        unsafe {
            unmap(self.base, self.max_pages * self.page_size);
            for &(start, len) in &self.segments {
                unmap(start, len);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::locking::is_locked;
    use crate::mapping::XorFunctions;
    use std::cell::Cell;

    fn spec(colors: Vec<u32>, budget: u64) -> AreaSpec {
        AreaSpec {
            mapping: AddressMapping::new(
                rustix::param::page_size() as u64,
                XorFunctions::from_bits(&[12, 13, 14]).unwrap(),
                XorFunctions::none(),
                XorFunctions::none(),
            )
            .unwrap(),
            colors,
            banks: None,
            controllers: None,
            modes: Modes::EXACT,
            budget_bytes: budget,
            allow_uncolored: true,
            lock: Locking::IfAllowed,
        }
    }

    #[test]
    fn the_first_segment_is_small_only_when_few_pages_likely_complete_a_row() {
        let area = ColoredArea::new(spec(vec![1, 4, 6], 8 << 20)).unwrap();
        let page = area.page_size() as u64;
        // 3 of 8 colours: 8 × H(3) = 14.67 pages expected for a row; twice
        // that, in whole pages.
        let first = area.segment_bytes(1) as u64;
        assert_eq!(
            first,
            (2.0 * 8.0 * (1.0 + 0.5 + 1.0 / 3.0) * page as f64) as u64 / page * page + page
        );
        assert!(first < SEGMENT_ALIGN as u64 / 2);
        // 256 of 512 colours: 512 × H(256) ≈ 3 100 pages, over 1 MiB: one
        // huge page, which holds every colour once.
        assert_eq!(area.first_segment_bytes(512.0, 256), SEGMENT_ALIGN as u64);
        // One colour of 512: 512 pages expected, 4 MiB: the huge page.
        assert_eq!(area.first_segment_bytes(512.0, 1), SEGMENT_ALIGN as u64);
        // The first growth populates it, and rows in rotation enter (from
        // a 2 MiB segment after it if its frames completed none).
        let mut grown = ColoredArea::new(spec(vec![1, 4, 6], 8 << 20)).unwrap();
        assert!(grown.grow(1).unwrap() >= 1);
        assert_eq!(grown.segments[0].1 as u64, first);
        assert_rotation(&grown, &[1, 4, 6]);
        // The kernel's part of the growth is inside the growth's time.
        let stats = grown.stats();
        assert!(
            0 < stats.populate_ns && stats.populate_ns <= stats.grow_ns,
            "{stats:?}"
        );
        // Later segments: huge pages, at least 2 MiB.
        assert!(grown.segment_bytes(1) >= SEGMENT_ALIGN);
        // A first request past the small segment gets huge pages, not 4 KiB
        // pages of exactly its size.
        let area_64 = ColoredArea::new(spec(vec![1, 4, 6], 8 << 20)).unwrap();
        assert_eq!(area_64.segment_bytes(64), SEGMENT_ALIGN);
        // A big first request is served whole, whatever the floor.
        let roomy = ColoredArea::new(spec(vec![1, 4, 6], 1 << 30)).unwrap();
        assert!(roomy.segment_bytes(4096) >= 4096 * 8 / 3 * roomy.page_size());
    }

    #[test]
    fn the_area_grows_in_rows_of_the_requested_colours_within_its_budget() {
        let mut area = huge_first(ColoredArea::new(spec(vec![1, 4, 6], 8 << 20)));
        assert_eq!(
            area.pages(),
            0,
            "nothing is populated before the first growth"
        );
        let added = area.grow(10).unwrap();
        assert!(added >= 10 && added.is_multiple_of(3), "{added}");
        for index in 0..area.pages() {
            let color = area.class(index).color;
            assert_eq!(
                color,
                [1, 4, 6][index % 3],
                "page {index} breaks the rotation"
            );
            assert_eq!(area.step(index), Step::Exact);
        }
        // The pages hold their frames where they are now.
        let mut attempts = 1;
        while !frames_hold(&area) {
            assert!(
                attempts < 3,
                "the recorded frames are not where the pages are"
            );
            attempts += 1;
            area = huge_first(ColoredArea::new(spec(vec![1, 4, 6], 8 << 20)));
            area.grow(10).unwrap();
        }
        // Writable and contiguous.
        let bytes = area.pages() * area.page_size();
        // SAFETY: the area's pages are ours and unused.
        unsafe { std::ptr::write_bytes(area.base() as *mut u8, 7, bytes) };
        // The budget bounds growth: 8 MiB gives at most 3/8 of 2048 pages.
        while area.grow(64).unwrap() > 0 {}
        assert!(area.budget_spent());
        assert!(area.pages() <= 2048 * 3 / 8 + 3, "{}", area.pages());
        assert!(area.stats().populated_bytes <= 8 << 20);
        assert!(area.stats().segments >= 1);
    }

    /// The pages are on the frames the area recorded (always true in
    /// uncoloured mode, which records virtual page numbers). The kernel's
    /// compaction may migrate unlocked pages at any moment (it did under
    /// CI load), so callers re-check on a new area: a wrong record fails
    /// every time, a migration not three times in a row.
    fn frames_hold(area: &ColoredArea) -> bool {
        area.uncolored_reason().is_some()
            || area.current_frames(0..area.pages()).unwrap()
                == area.frames().iter().map(|&f| Some(f)).collect::<Vec<_>>()
    }

    /// Kernel mappings that overlap `range` (from `/proc/self/maps`).
    fn mappings_in(range: std::ops::Range<usize>) -> usize {
        tinct_sys::footprint::mappings_of_self()
            .unwrap()
            .iter()
            .filter(|m| m.range.start < range.end && m.range.end > range.start)
            .count()
    }

    #[test]
    fn scattered_pages_keep_the_area_one_mapping_and_their_frames() {
        // Every other colour: no two area pages were neighbours before.
        let mut area = huge_first(ColoredArea::new(spec(vec![0, 2, 4, 6], 16 << 20)));
        area.grow(1000).unwrap();
        assert!(area.pages() >= 1000);
        if area.move_method() == "uffdio-move" {
            assert!(
                mappings_in(area.reserved()) <= 2,
                "{} mappings for {} scattered pages",
                mappings_in(area.reserved()),
                area.pages()
            );
            assert!(area.stats().moves >= area.pages() as u64 / 2);
        }
        let mut attempts = 1;
        while !frames_hold(&area) {
            assert!(attempts < 3, "a moved page lost its frame");
            attempts += 1;
            area = huge_first(ColoredArea::new(spec(vec![0, 2, 4, 6], 16 << 20)));
            area.grow(1000).unwrap();
        }
    }

    #[test]
    fn swapped_pages_exchange_places_with_their_frames_and_contents() {
        let mut area = huge_first(ColoredArea::new(spec(vec![0, 2, 4, 6], 8 << 20)));
        area.grow(64).unwrap();
        let page = area.page_size();
        let fill = |area: &ColoredArea, first: usize, byte: u8| {
            for k in 0..5 {
                // SAFETY: filled area pages owned by this test.
                unsafe {
                    std::ptr::write_bytes(
                        area.page_address(first + k) as *mut u8,
                        byte + k as u8,
                        page,
                    )
                };
            }
        };
        fill(&area, 3, 10);
        fill(&area, 40, 100);
        let before = area.frames().to_vec();
        let steps: Vec<Step> = (0..area.pages()).map(|k| area.step(k)).collect();
        // SAFETY: both ranges are this test's, untouched during the call.
        unsafe { area.swap_pages(3, 40, 5) }.unwrap();
        for k in 0..5 {
            let read = |index: usize| {
                // SAFETY: a filled area page, written above.
                unsafe { *(area.page_address(index) as *const u8).add(page - 1) }
            };
            assert_eq!(
                read(40 + k),
                10 + k as u8,
                "page {k} of the first range moved"
            );
            assert_eq!(
                read(3 + k),
                100 + k as u8,
                "page {k} of the second range moved"
            );
            assert_eq!(area.frames()[40 + k], before[3 + k]);
            assert_eq!(area.frames()[3 + k], before[40 + k]);
            assert_eq!(area.step(40 + k), steps[3 + k]);
        }
        assert!(frames_hold(&area), "the bookkeeping follows the frames");
    }

    #[test]
    fn area_pages_are_locked_unless_turned_off_and_an_unlocked_area_says_why() {
        let mut locked = huge_first(ColoredArea::new(spec(vec![0, 3], 8 << 20)));
        locked.grow(64).unwrap();
        match locked.unlocked_reason() {
            None => assert!(is_locked(locked.base()), "no reason, yet not locked"),
            // Without CAP_IPC_LOCK the limit may refuse: then it is said.
            Some(reason) => assert!(reason.contains("RLIMIT_MEMLOCK"), "{reason}"),
        }
        let mut off = ColoredArea::new(AreaSpec {
            lock: Locking::Off,
            ..spec(vec![0, 3], 8 << 20)
        })
        .unwrap();
        off.grow(64).unwrap();
        assert_eq!(off.unlocked_reason(), Some(LOCKING_OFF));
        assert!(!is_locked(off.base()));
    }

    /// Pages of a fresh segment filed as spares (nothing moved in yet),
    /// as a growth leaves the pages of colours that ran ahead.
    fn file_a_segment(area: &mut ColoredArea, len: usize) {
        let segment = Segment::populate(len).unwrap();
        area.segments.push((segment.start, len));
        let frames = area
            .read_frames(segment.start, len / area.page_size)
            .unwrap();
        for (index, &frame) in frames.iter().enumerate() {
            area.file_page(segment.start + index * area.page_size, frame)
                .unwrap();
        }
    }

    #[test]
    fn a_page_the_kernel_moves_while_it_waits_enters_on_the_frame_it_has_then() {
        let colors = vec![0, 2, 4, 6];
        let mut attempts = 0;
        loop {
            attempts += 1;
            let mut area = huge_first(ColoredArea::new(spec(colors.clone(), 32 << 20)));
            area.grow(1).unwrap();
            if area.uncolored_reason().is_some() {
                return; // no frames to check without CAP_SYS_ADMIN
            }
            file_a_segment(&mut area, 4 << 20);
            // The kernel moves waiting pages to other frames (compaction
            // migrates them; khugepaged would copy them): here they are
            // dropped and faulted in again, after a decoy has taken the
            // frames they had.
            let victims: Vec<usize> = colors
                .iter()
                .flat_map(|&c| area.spares[c as usize].iter().take(40).map(|p| p.address))
                .collect();
            for &address in &victims {
                // SAFETY: a spare page of ours, referenced by nothing.
                unsafe {
                    mm::madvise(address as *mut _, area.page_size, Advice::LinuxDontNeed).unwrap()
                };
            }
            let decoy = map_private(4 << 20, false, "decoy").unwrap() as usize;
            for offset in (0..4 << 20).step_by(area.page_size) {
                // SAFETY: our own fresh mapping.
                unsafe { ((decoy + offset) as *mut u8).write_volatile(1) };
            }
            for &address in &victims {
                // SAFETY: as above; the write faults in a new page.
                unsafe { (address as *mut u8).write_volatile(PAGE_MARK) };
            }
            let recorded: Vec<u64> = colors
                .iter()
                .flat_map(|&c| area.spares[c as usize].iter().take(40).map(|p| p.frame))
                .collect();
            let now = area.frames_now(&victims).unwrap();
            let moved = recorded
                .iter()
                .zip(&now)
                .filter(|(r, n)| Some(**r) != **n)
                .count();
            assert!(
                moved > 0,
                "no waiting page changed frame: the test proves nothing"
            );
            let before = area.pages();
            area.move_rows().unwrap();
            assert!(area.pages() > before, "no row moved in");
            // SAFETY: our decoy, unused.
            unsafe { unmap(decoy, 4 << 20) };
            for index in 0..area.pages() {
                assert_eq!(
                    area.class(index).color,
                    colors[index % colors.len()],
                    "page {index} breaks the rotation"
                );
            }
            if frames_hold(&area) {
                break;
            }
            // A page the kernel migrated after it entered (compaction
            // under load) fails once, a wrong record every time.
            assert!(
                attempts < 3,
                "pages entered on other frames than recorded ({moved} moved while waiting)"
            );
        }
    }

    /// `spec` with two DRAM banks (address bit 15, frame bit 3), bank 0
    /// requested, with every fallback: pages of the requested colours in
    /// bank 1 wait in the reserve.
    fn banked_spec(colors: Vec<u32>, budget: u64) -> AreaSpec {
        AreaSpec {
            mapping: AddressMapping::new(
                rustix::param::page_size() as u64,
                XorFunctions::from_bits(&[12, 13, 14]).unwrap(),
                XorFunctions::from_bits(&[15]).unwrap(),
                XorFunctions::none(),
            )
            .unwrap(),
            banks: Some(vec![0]),
            modes: Modes::ALL,
            ..spec(colors, budget)
        }
    }

    /// How [`moving_frames`] pretends the kernel moves waiting pages.
    #[derive(Debug, Clone, Copy)]
    enum Moves {
        /// No page moves.
        Still,
        /// The page at this address reads another frame (of its colour and
        /// bank) at every reading.
        Restless(usize),
        /// Every page reads another frame at every reading.
        AllRestless,
        /// Every page moved once, within its colour and bank: each reads
        /// one other frame from now on.
        AllOnce,
        /// Every page moved once, to a frame of its colour in bank 0 (of
        /// [`banked_spec`]).
        AllToBankZero,
    }

    thread_local! {
        /// The moves [`moving_frames`] pretends, and its readings so far.
        static MOVES: Cell<(Moves, u64)> = const { Cell::new((Moves::Still, 0)) };
    }

    /// Pagemap's frames, with the pages moved as [`MOVES`] says (frame bits
    /// 9 and up change neither colour nor bank; frame bit 3 is the bank).
    fn moving_frames(
        area: &ColoredArea,
        addresses: &[usize],
    ) -> Result<Vec<Option<u64>>, MemError> {
        let mut now = area.frames_now(addresses)?;
        let (moves, readings) = MOVES.get();
        MOVES.set((moves, readings + 1));
        let restless = (readings + 1) << 10;
        for (&address, frame) in addresses.iter().zip(&mut now) {
            let change = match moves {
                Moves::Still => 0,
                Moves::Restless(page) if page == address => restless,
                Moves::Restless(_) => 0,
                Moves::AllRestless => restless,
                Moves::AllOnce => 1 << 9,
                Moves::AllToBankZero => frame.map_or(0, |f| f & (1 << 3)),
            };
            *frame = frame.map(|f| f ^ change);
        }
        Ok(now)
    }

    /// A pagemap that cannot be read.
    fn failing_frames(_: &ColoredArea, _: &[usize]) -> Result<Vec<Option<u64>>, MemError> {
        Err(MemError::Os {
            call: "pread(/proc/self/pagemap) (test)".into(),
            source: std::io::Error::from_raw_os_error(libc::EIO),
        })
    }

    fn assert_rotation(area: &ColoredArea, colors: &[u32]) {
        for index in 0..area.pages() {
            assert_eq!(
                area.class(index).color,
                colors[index % colors.len()],
                "page {index} breaks the rotation"
            );
        }
    }

    #[test]
    fn spares_that_keep_moving_wait_and_only_rows_found_still_enter() {
        let colors = vec![0, 2, 4, 6];
        let mut area = huge_first(ColoredArea::new(spec(colors.clone(), 32 << 20)));
        area.grow(1).unwrap();
        if area.uncolored_reason().is_some() {
            return; // no frames to read again without CAP_SYS_ADMIN
        }
        file_a_segment(&mut area, 2 << 20);
        const ROWS: usize = 8;
        for &color in &colors {
            let spares = &mut area.spares[color as usize];
            assert!(
                spares.len() >= ROWS,
                "{} spares of color {color}",
                spares.len()
            );
            spares.truncate(ROWS);
        }
        // The first spare of colour 0 is on another frame at every reading:
        // the rows it is not in enter, it never does.
        let restless = area.spares[0][0].address;
        let real = area.frames_now(&[restless]).unwrap()[0];
        MOVES.set((Moves::Restless(restless), 0));
        area.reread = moving_frames;
        let (before, stats) = (area.pages(), area.stats());
        let entered = area.move_rows().unwrap();
        assert_eq!(
            entered,
            (ROWS - 1) * colors.len(),
            "the rows that held enter"
        );
        assert_eq!(area.pages(), before + entered);
        assert_eq!(
            area.stats().refiled_pages - stats.refiled_pages,
            MAX_REFILE_ROUNDS as u64,
            "filed again at every round, then left waiting"
        );
        assert!(
            area.spares[0].iter().any(|p| p.address == restless),
            "the page never found on its frame waits as a spare"
        );
        assert_eq!(area.stats().unverified_pages, 0);
        assert_rotation(&area, &colors);
        // Once it holds still, it enters with the next row, on the frame
        // it has then (not the one it was last filed with).
        MOVES.set((Moves::Still, 0));
        assert_eq!(area.move_rows().unwrap(), colors.len());
        assert_eq!(Some(area.frame(area.pages() - colors.len())), real);
        assert_rotation(&area, &colors);
    }

    #[test]
    fn a_reserve_page_the_kernel_keeps_moving_stops_the_growth_short_not_endless() {
        let colors = vec![1, 4, 6];
        let mut area = huge_first(ColoredArea::new(banked_spec(colors.clone(), 2 << 20)));
        area.grow(1).unwrap();
        if area.uncolored_reason().is_some() {
            return;
        }
        assert!(area.budget_spent(), "one segment spends a 2 MiB budget");
        let (pages, stats) = (area.pages(), area.stats());
        assert!(stats.reserve_pages >= 8, "{stats:?}");
        // Every granted page, and every page of the reserve read again
        // with it, is on another frame at every reading: a few rounds, then
        // the growth returns short (it used to take grant after grant).
        MOVES.set((Moves::AllRestless, 0));
        area.reread = moving_frames;
        assert_eq!(area.grow(3).unwrap(), 0, "no page held its frame");
        assert_eq!(area.pages(), pages);
        assert_eq!(
            area.stats().reserve_pages,
            stats.reserve_pages,
            "the moved pages wait in the reserve, filed by their last frame"
        );
        assert_eq!(
            area.stats().refiled_pages - stats.refiled_pages,
            MAX_REFILE_ROUNDS as u64 * (stats.reserve_pages + 1),
            "each round: the granted page, then every free reserve page"
        );
        // Moved once and still since (compaction went through the segment
        // once): the reserve is read again whole once, and the growth gets
        // what it asked for, each page on the frame it has now.
        MOVES.set((Moves::AllOnce, 0));
        let refiled = area.stats().refiled_pages;
        assert_eq!(area.grow(3).unwrap(), 3);
        assert_eq!(
            area.stats().refiled_pages - refiled,
            stats.reserve_pages,
            "every free reserve page filed again once"
        );
        assert_eq!(area.stats().reserve_pages, stats.reserve_pages - 3);
        let now = area.frames_now(&[area.page_address(pages)]).unwrap()[0];
        assert_eq!(
            Some(area.frame(pages) ^ (1 << 9)),
            now,
            "entered with the frame the reading gave"
        );
        for index in pages..area.pages() {
            assert_ne!(area.step(index), Step::Exact, "a fallback page");
            assert!(colors.contains(&area.class(index).color));
        }
        assert_eq!(area.stats().unverified_pages, 0);
    }

    /// `area` with a first segment of huge pages, as later ones: for the
    /// tests whose arithmetic assumes every colour in equal share (4 KiB
    /// frames come in the order of the kernel's free lists, which the
    /// tests running beside refill with the colours they free).
    fn huge_first(area: Result<ColoredArea, MemError>) -> ColoredArea {
        let mut area = area.unwrap();
        area.small_first_segment = false;
        area
    }

    #[test]
    fn reserve_pages_moved_into_the_requested_banks_enter_as_rows() {
        let colors = vec![1, 4, 6];
        let mut area = huge_first(ColoredArea::new(banked_spec(colors.clone(), 2 << 20)));
        area.grow(1).unwrap();
        if area.uncolored_reason().is_some() {
            return;
        }
        assert!(area.budget_spent());
        let (pages, stats) = (area.pages(), area.stats());
        // Every reserve page now lies in bank 0: each is filed again as a
        // spare, and once the reserve is empty, the rows they make enter
        // (before, they waited for a segment the spent budget never gave).
        MOVES.set((Moves::AllToBankZero, 0));
        area.reread = moving_frames;
        let added = area.grow(3).unwrap();
        assert!(added >= 3, "{added} pages added");
        assert_eq!(added % colors.len(), 0, "whole rows");
        assert_eq!(area.stats().reserve_pages, 0);
        assert_eq!(
            area.stats().refiled_pages - stats.refiled_pages,
            stats.reserve_pages
        );
        for index in pages..area.pages() {
            assert_eq!(area.step(index), Step::Exact);
            assert_eq!(area.class(index).bank, 0);
        }
        assert_rotation(&area, &colors);
    }

    #[test]
    fn a_failed_pagemap_read_lets_pages_enter_on_their_first_frame_and_says_so() {
        let colors = vec![1, 4, 6];
        let mut area = huge_first(ColoredArea::new(banked_spec(colors.clone(), 2 << 20)));
        area.reread = failing_frames;
        // Rows of spares: the growth works (it used to fail).
        let added = area.grow(1).unwrap();
        assert!(added >= 1);
        if area.uncolored_reason().is_some() {
            // Nothing is read again without frames.
            assert_eq!(area.stats().unverified_pages, 0);
            assert_eq!(area.unverified_reason(), None);
            return;
        }
        assert_eq!(area.stats().unverified_pages, area.pages() as u64);
        let reason = area.unverified_reason().expect("a reason");
        assert!(
            reason.contains("pagemap") && reason.contains("Input/output error"),
            "{reason}"
        );
        assert_rotation(&area, &colors);
        // A reserve page: the same.
        assert!(area.budget_spent());
        assert_eq!(area.grow(2).unwrap(), 2);
        assert_eq!(area.stats().unverified_pages, area.pages() as u64);
        // Pagemap readable again: pages are verified again.
        area.reread = ColoredArea::frames_now;
        let unverified = area.stats().unverified_pages;
        assert_eq!(area.grow(2).unwrap(), 2);
        assert_eq!(area.stats().unverified_pages, unverified);
    }

    #[test]
    fn bad_specs_are_refused() {
        assert!(ColoredArea::new(spec(vec![], 1 << 20)).is_err());
        assert!(ColoredArea::new(spec(vec![8], 1 << 20)).is_err());
        assert!(ColoredArea::new(spec(vec![0], 0)).is_err());
    }
}
