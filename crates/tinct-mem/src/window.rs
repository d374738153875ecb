//! [`SpanWindow`]: a reserved virtual range where scattered colored pages
//! are placed side by side, so a multi-page allocation is contiguous in
//! virtual memory while every one of its pages keeps its physical frame.
//!
//! A pool page is moved with `mremap(MREMAP_FIXED)`, which carries the
//! physical page along (the kernel moves the page-table entry, not the
//! data). The hole it leaves is refilled at once with an inaccessible
//! placeholder mapping, so no other mapping can land there before the page
//! is moved back on free. Cost: two system calls per page each way, and up
//! to three kernel VMAs per moved page while the span lives (its window
//! page, the placeholder, the split-off rest of the pool mapping; adjacent
//! pages merge), so `vm.max_map_count` (65530 by default) bounds how many
//! span pages can exist at once (see `examples/span_vmas.rs`).

use rustix::mm::{self, MapFlags, MremapFlags, ProtFlags};
use std::ptr::NonNull;

use crate::book::PageId;
use crate::error::MemError;
use crate::lists::NIL;

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

fn move_page(from: *mut u8, to: *mut u8, len: usize) -> Result<(), MemError> {
    // SAFETY: both ranges are page-aligned ranges of mappings this crate
    // owns; `from` holds a pool page nobody references (it is allocated to
    // the span being built or freed under the pool lock) and `to` is a
    // placeholder that MREMAP_FIXED replaces.
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
        })
    }

    fn address(&self, window_page: usize) -> *mut u8 {
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
        for (offset, &pool_page) in sources.iter().enumerate() {
            let from = home(pool_page);
            let moved = move_page(from, self.address(first + offset), self.page_size)
                .and_then(|()| placeholder(from, self.page_size));
            if let Err(error) = moved {
                for (undo, &back) in sources[..offset].iter().enumerate() {
                    let _ = move_page(self.address(first + undo), home(back), self.page_size)
                        .and_then(|()| placeholder(self.address(first + undo), self.page_size));
                    self.resident[first + undo] = NIL;
                }
                return Err(error);
            }
            self.resident[first + offset] = pool_page.0;
        }
        self.span_len[first] = pages as u32;
        Ok(NonNull::new(self.address(first)).expect("window addresses are non-null"))
    }

    /// Moves the pages of the span starting at window page `first` back to
    /// their pool addresses (`home(pool_page)`) and appends them to `out`.
    pub(crate) fn remove(
        &mut self,
        first: usize,
        home: impl Fn(PageId) -> *mut u8,
        out: &mut Vec<PageId>,
    ) -> Result<(), MemError> {
        let pages = self.span_len[first] as usize;
        for page in first..first + pages {
            let pool_page = PageId(self.resident[page]);
            move_page(self.address(page), home(pool_page), self.page_size)?;
            placeholder(self.address(page), self.page_size)?;
            self.resident[page] = NIL;
            out.push(pool_page);
        }
        self.span_len[first] = 0;
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
