//! [`SpanWindow`]: a reserved virtual range where scattered colored pages
//! are placed side by side, so a multi-page allocation is contiguous in
//! virtual memory while every one of its pages keeps its physical frame.
//!
//! Pool pages are moved with `mremap(MREMAP_FIXED)`, which carries the
//! physical pages along (the kernel moves the page-table entries, not the
//! data). The hole left behind is refilled at once with an inaccessible
//! placeholder mapping, so no other mapping can land there before the
//! pages are moved back on free.
//!
//! Pages are moved in *runs*: source pages that are consecutive in the
//! pool (hence in virtual memory) and go to consecutive window pages move
//! with one `mremap` and one placeholder `mmap`, whatever their number.
//! A span therefore costs two system calls per run each way, and up to
//! three kernel VMAs per run while it lives (its window run, the
//! placeholder, the split-off rest of the pool mapping), so
//! `vm.max_map_count` (65530 by default) bounds the number of live runs,
//! not pages ([`SpanWindow::live_runs`], `examples/span_vmas.rs`). The
//! pool's round robin prefers virtually contiguous pages
//! ([`crate::PageBook::alloc_colored_after`]) to make runs long.

use rustix::mm::{self, MapFlags, MremapFlags, ProtFlags};
use std::ptr::NonNull;

use crate::error::MemError;
use crate::intrusive_lists::NIL;
use crate::page_book::PageId;

/// The reserved window and which pool page sits at each window page.
#[derive(Debug)]
pub(crate) struct SpanWindow {
    start: NonNull<u8>,
    page_size: usize,
    /// Pool page at each window page, `NIL` if the window page is empty.
    resident: Vec<u32>,
    /// Number of pages of the span starting at each window page (0 if no
    /// span starts there).
    span_len: Vec<u32>,
    /// Runs (one mremap each) of all live spans.
    live_runs: usize,
    /// Largest `live_runs` seen.
    peak_runs: usize,
}

// SAFETY: the window is address space owned by this value; it is only
// touched under the shared pool's lock.
unsafe impl Send for SpanWindow {}

fn placeholder(address: *mut u8, len: usize) -> Result<(), MemError> {
    // SAFETY: `address..address+len` belongs to a mapping this crate owns
    // (the pool region or the window) and holds no live Rust reference;
    // MAP_FIXED replaces exactly that range with inaccessible memory.
    unsafe {
        mm::mmap_anonymous(
            address.cast(),
            len,
            ProtFlags::empty(),
            MapFlags::PRIVATE | MapFlags::FIXED | MapFlags::NORESERVE,
        )
    }
    .map(drop)
    .map_err(|errno| MemError::Os {
        call: format!("mmap(MAP_FIXED placeholder at {address:p}, {len} bytes)"),
        source: errno.into(),
    })
}

/// Length of the run at the start of `pages`: how many entries follow
/// the first with consecutive pool page numbers.
fn run_length<T: Copy>(pages: &[T], number: impl Fn(T) -> u32) -> usize {
    let Some(&first) = pages.first() else {
        return 0;
    };
    let start = number(first);
    1 + pages[1..]
        .iter()
        .enumerate()
        .take_while(|&(offset, &page)| number(page) == start.wrapping_add(offset as u32 + 1))
        .count()
}

/// Number of runs of consecutive pool page numbers in `pages`.
fn count_runs<T: Copy>(pages: &[T], number: impl Fn(T) -> u32) -> usize {
    let mut runs = 0;
    let mut rest = pages;
    while !rest.is_empty() {
        rest = &rest[run_length(rest, &number)..];
        runs += 1;
    }
    runs
}

fn move_pages(from: *mut u8, to: *mut u8, len: usize) -> Result<(), MemError> {
    // SAFETY: both ranges are page-aligned ranges of mappings this crate
    // owns; `from` holds pool pages nobody references (they are allocated
    // to the span being built or freed under the pool lock) and `to` is a
    // placeholder range that MREMAP_FIXED replaces.
    unsafe { mm::mremap_fixed(from.cast(), len, len, MremapFlags::MAYMOVE, to.cast()) }
        .map(drop)
        .map_err(|errno| MemError::Os {
            call: format!(
                "mremap({from:p} -> {to:p}, {len} bytes) (if ENOMEM: too many mappings, raise \
                 vm.max_map_count or use fewer multi-page allocations)"
            ),
            source: errno.into(),
        })
}

impl SpanWindow {
    /// Reserves `pages` pages of inaccessible address space.
    pub(crate) fn new(pages: usize, page_size: usize) -> Result<Self, MemError> {
        let len = pages * page_size;
        // SAFETY: a fresh mapping at a kernel-chosen address aliases nothing.
        let raw = unsafe {
            mm::mmap_anonymous(
                std::ptr::null_mut(),
                len,
                ProtFlags::empty(),
                MapFlags::PRIVATE | MapFlags::NORESERVE,
            )
        }
        .map_err(|errno| MemError::Os {
            call: format!("mmap(PROT_NONE window, {len} bytes)"),
            source: errno.into(),
        })?;
        Ok(Self {
            start: NonNull::new(raw.cast()).expect("mmap never returns null on success"),
            page_size,
            resident: vec![NIL; pages],
            span_len: vec![0; pages],
            live_runs: 0,
            peak_runs: 0,
        })
    }

    /// Address of window page `window_page`.
    pub(crate) fn address(&self, window_page: usize) -> *mut u8 {
        self.start
            .as_ptr()
            .wrapping_add(window_page * self.page_size)
    }

    /// The window's address range.
    pub(crate) fn range(&self) -> std::ops::Range<usize> {
        let start = self.start.as_ptr() as usize;
        start..start + self.resident.len() * self.page_size
    }

    /// The window page holding `address`, if inside the window.
    pub(crate) fn page_of(&self, address: usize) -> Option<usize> {
        let start = self.start.as_ptr() as usize;
        let end = start + self.resident.len() * self.page_size;
        (start..end)
            .contains(&address)
            .then(|| (address - start) / self.page_size)
    }

    /// The pool page sitting at `address`, if inside an occupied window page.
    pub(crate) fn resident_at(&self, address: usize) -> Option<u32> {
        let page = self.page_of(address)?;
        let resident = self.resident[page];
        (resident != NIL).then_some(resident)
    }

    /// Pages of the span starting exactly at `address`, if one does.
    pub(crate) fn span_at(&self, address: usize) -> Option<(usize, usize)> {
        let page = self.page_of(address)?;
        let len = self.span_len[page] as usize;
        (len > 0 && address.is_multiple_of(self.page_size)).then_some((page, len))
    }

    /// First window position with `pages` empty pages whose address is a
    /// multiple of `align` bytes.
    fn find_room(&self, pages: usize, align: usize) -> Option<usize> {
        let mut page = 0;
        while page + pages <= self.resident.len() {
            if !(self.address(page) as usize).is_multiple_of(align) {
                page += 1;
                continue;
            }
            match self.resident[page..page + pages]
                .iter()
                .rposition(|&r| r != NIL)
            {
                None => return Some(page),
                Some(occupied) => page += occupied + 1,
            }
        }
        None
    }

    /// Moves the pool pages `sources` side by side into the window (page
    /// `p` lives at `home(p)`) and returns the span's first byte. On
    /// failure every page already moved is moved back. Never allocates.
    pub(crate) fn place(
        &mut self,
        sources: &[PageId],
        home: impl Fn(PageId) -> *mut u8,
        align: usize,
    ) -> Result<NonNull<u8>, MemError> {
        let pages = sources.len();
        let first = self
            .find_room(pages, align.max(self.page_size))
            .ok_or_else(|| {
                MemError::Exhausted(format!(
                    "no contiguous room for {pages} pages in the span window of {} pages",
                    self.resident.len()
                ))
            })?;
        self.move_in(first, sources, &home)?;
        self.span_len[first] = pages as u32;
        Ok(NonNull::new(self.address(first)).expect("window addresses are non-null"))
    }

    /// Number of window pages right after the span at `first` that are
    /// empty (room to grow it in place).
    pub(crate) fn room_after(&self, first: usize) -> usize {
        let end = first + self.span_len[first] as usize;
        self.resident[end..]
            .iter()
            .take_while(|&&r| r == NIL)
            .count()
    }

    /// Grows the span at window page `first` in place by the pages
    /// `sources` (which must fit in [`SpanWindow::room_after`]). On failure
    /// the span is unchanged.
    pub(crate) fn extend(
        &mut self,
        first: usize,
        sources: &[PageId],
        home: impl Fn(PageId) -> *mut u8,
    ) -> Result<(), MemError> {
        assert!(sources.len() <= self.room_after(first), "no room to grow");
        let end = first + self.span_len[first] as usize;
        self.move_in(end, sources, &home)?;
        // A first new page that follows the last old one continues its run.
        if sources.first().map(|page| page.0) == Some(self.resident[end - 1].wrapping_add(1)) {
            self.live_runs -= 1;
        }
        self.span_len[first] += sources.len() as u32;
        Ok(())
    }

    /// Shrinks the span at window page `first` to `keep` pages (at least
    /// one), moving the others back to the pool and appending them to
    /// `out`.
    pub(crate) fn truncate(
        &mut self,
        first: usize,
        keep: usize,
        home: impl Fn(PageId) -> *mut u8,
        out: &mut Vec<PageId>,
    ) -> Result<(), MemError> {
        let end = first + self.span_len[first] as usize;
        assert!(
            keep >= 1 && first + keep <= end,
            "truncate keeps 1..=len pages"
        );
        if first + keep == end {
            return Ok(());
        }
        // A run crossing the cut becomes two runs.
        let split = self.resident[first + keep] == self.resident[first + keep - 1].wrapping_add(1);
        self.move_out(first + keep, end, &home, out)?;
        self.live_runs += usize::from(split);
        self.span_len[first] = keep as u32;
        Ok(())
    }

    /// Moves the pages of the span starting at window page `first` back to
    /// their pool addresses (`home(pool_page)`) and appends them to `out`.
    pub(crate) fn remove(
        &mut self,
        first: usize,
        home: impl Fn(PageId) -> *mut u8,
        out: &mut Vec<PageId>,
    ) -> Result<(), MemError> {
        let end = first + self.span_len[first] as usize;
        self.move_out(first, end, &home, out)?;
        self.span_len[first] = 0;
        Ok(())
    }

    /// Moves the span at window page `first` to a free place of the window
    /// with room for `pages` pages (at least its length) and returns its
    /// new first window page. The pages move with one mremap per run: no
    /// data is copied. On failure the span stays where it was.
    pub(crate) fn relocate(&mut self, first: usize, pages: usize) -> Result<usize, MemError> {
        let len = self.span_len[first] as usize;
        assert!(pages >= len, "relocate never shrinks");
        let to = self.find_room(pages, self.page_size).ok_or_else(|| {
            MemError::Exhausted(format!(
                "no contiguous room for {pages} pages in the span window of {} pages",
                self.resident.len()
            ))
        })?;
        let mut done = 0;
        while done < len {
            let run = run_length(&self.resident[first + done..first + len], |r| r);
            let bytes = run * self.page_size;
            let (from, into) = (self.address(first + done), self.address(to + done));
            if let Err(error) =
                move_pages(from, into, bytes).and_then(|()| placeholder(from, bytes))
            {
                // Put back what already moved (best effort) and keep the span.
                let mut undone = 0;
                while undone < done {
                    let back = run_length(&self.resident[to + undone..to + done], |r| r);
                    let bytes = back * self.page_size;
                    let (from, into) = (self.address(to + undone), self.address(first + undone));
                    let _ = move_pages(from, into, bytes).and_then(|()| placeholder(from, bytes));
                    let (old, new) = (first + undone, to + undone);
                    for offset in 0..back {
                        self.resident[old + offset] = self.resident[new + offset];
                        self.resident[new + offset] = NIL;
                    }
                    undone += back;
                }
                return Err(error);
            }
            for offset in done..done + run {
                self.resident[to + offset] = self.resident[first + offset];
                self.resident[first + offset] = NIL;
            }
            done += run;
        }
        self.span_len[to] = len as u32;
        self.span_len[first] = 0;
        Ok(to)
    }

    /// Occupied window pages and the pool page at each.
    pub(crate) fn residents(&self) -> impl Iterator<Item = (usize, PageId)> + '_ {
        self.resident
            .iter()
            .enumerate()
            .filter(|&(_, &resident)| resident != NIL)
            .map(|(window_page, &resident)| (window_page, PageId(resident)))
    }

    /// Runs (one kernel mapping each in the window) of all live spans.
    pub(crate) fn live_runs(&self) -> usize {
        self.live_runs
    }

    /// Largest number of live runs seen.
    pub(crate) fn peak_runs(&self) -> usize {
        self.peak_runs
    }

    /// Moves `sources` to the empty window pages starting at `at`, one
    /// mremap and one placeholder per run of consecutive pool pages. On
    /// failure moves back what was moved and leaves the window as it was.
    fn move_in(
        &mut self,
        at: usize,
        sources: &[PageId],
        home: &impl Fn(PageId) -> *mut u8,
    ) -> Result<(), MemError> {
        let mut done = 0;
        while done < sources.len() {
            let run = run_length(&sources[done..], |page| page.0);
            let from = home(sources[done]);
            let to = self.address(at + done);
            let len = run * self.page_size;
            let moved = move_pages(from, to, len).and_then(|()| {
                placeholder(from, len).inspect_err(|_| {
                    // The hole is still free: put this run back at once.
                    let _ = move_pages(to, from, len).and_then(|()| placeholder(to, len));
                })
            });
            if let Err(error) = moved {
                let mut undone = 0;
                while undone < done {
                    let back = run_length(&sources[undone..done], |page| page.0);
                    let window = self.address(at + undone);
                    let len = back * self.page_size;
                    let _ = move_pages(window, home(sources[undone]), len)
                        .and_then(|()| placeholder(window, len));
                    undone += back;
                }
                self.resident[at..at + done].fill(NIL);
                self.live_runs -= count_runs(&sources[..done], |page| page.0);
                return Err(error);
            }
            for (offset, page) in sources[done..done + run].iter().enumerate() {
                self.resident[at + done + offset] = page.0;
            }
            self.live_runs += 1;
            self.peak_runs = self.peak_runs.max(self.live_runs);
            done += run;
        }
        Ok(())
    }

    /// Moves the window pages `[start, end)` back to the pool, one mremap
    /// and one placeholder per run, appending the pool pages to `out`.
    fn move_out(
        &mut self,
        start: usize,
        end: usize,
        home: &impl Fn(PageId) -> *mut u8,
        out: &mut Vec<PageId>,
    ) -> Result<(), MemError> {
        let mut page = start;
        while page < end {
            let run = run_length(&self.resident[page..end], |resident| resident);
            let first_pool_page = PageId(self.resident[page]);
            let len = run * self.page_size;
            move_pages(self.address(page), home(first_pool_page), len)?;
            placeholder(self.address(page), len)?;
            for resident in &mut self.resident[page..page + run] {
                out.push(PageId(*resident));
                *resident = NIL;
            }
            self.live_runs -= 1;
            page += run;
        }
        Ok(())
    }

    /// Pool pages of the span at window page `first`.
    pub(crate) fn span_pages(&self, first: usize) -> &[u32] {
        &self.resident[first..first + self.span_len[first] as usize]
    }
}

impl Drop for SpanWindow {
    fn drop(&mut self) {
        // SAFETY: the window was mapped by `new`; pages moved into it are
        // owned by spans of the pool being dropped, so unmapping them with
        // the window is the pool's end of life.
        let _ = unsafe {
            mm::munmap(
                self.start.as_ptr().cast(),
                self.resident.len() * self.page_size,
            )
        };
    }
}
