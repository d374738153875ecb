//! The program's own anonymous memory on coloured pages (`TINCT_MMAP=1`),
//! and what `munmap`, `mremap`, `madvise` and `mprotect` do to area pages.
//!
//! With the option on, `mmap(NULL, len, PROT_READ | PROT_WRITE,
//! MAP_PRIVATE | MAP_ANONYMOUS [| MAP_POPULATE], -1, 0)` is served by a run
//! of area pages, zeroed (an anonymous mapping reads as zeros); any other
//! mapping (files, shared, fixed addresses, other protections, reservations
//! with `MAP_NORESERVE`, stacks, huge pages) goes to the kernel unchanged,
//! and so does a request the budget cannot serve (counted). `munmap` of
//! such a run (or of part of it) gives its pages back; `mremap` shrinks it
//! in place, grows it in place when the pages after it are free, else
//! (with `MREMAP_MAYMOVE`) moves it to a new run as the kernel does: its
//! pages move with their frames (page-table entries exchanged with the new
//! run's), and only the new part is zeroed.
//!
//! Whatever the option, calls that reach area pages are kept from
//! breaking the area: `madvise(MADV_DONTNEED)` (and `MADV_REMOVE`) zero
//! the pages instead of dropping them (a dropped page would come back as
//! a page of any colour), `MADV_FREE` and huge-page advice are ignored,
//! `mprotect` is applied and remembered so the pages are made read-write
//! again when freed, and a fixed `mmap` or `mremap` that takes area pages
//! away marks them lost (never handed out again). Everything else reaches
//! the kernel through raw system calls, never through the C library's
//! wrappers (which would call back into these functions).

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicU8, Ordering};

use crate::heap::Heap;
use crate::page_kinds::{MAPPED, PROTECTED};
use crate::process::{built_heap, heap};

/// 0 unknown, 1 off, 2 on: `TINCT_MMAP`, read once without allocating.
static ENABLED: AtomicU8 = AtomicU8::new(0);

/// True if `TINCT_MMAP` asks for coloured anonymous mappings.
pub fn enabled() -> bool {
    match ENABLED.load(Ordering::Relaxed) {
        1 => false,
        2 => true,
        _ => {
            // SAFETY: getenv reads the environment; the name is a valid C
            // string and the result is only read.
            let value = unsafe { libc::getenv(tinct_mem::shim_config::MMAP_CSTR.as_ptr()) };
            // SAFETY: non-null results of getenv are NUL-terminated strings.
            let on = !value.is_null()
                && matches!(
                    unsafe { std::ffi::CStr::from_ptr(value) }.to_bytes(),
                    b"1" | b"true" | b"yes"
                );
            ENABLED.store(if on { 2 } else { 1 }, Ordering::Relaxed);
            on
        }
    }
}

fn set_errno(value: c_int) {
    // SAFETY: the calling thread's errno slot.
    unsafe { *libc::__errno_location() = value };
}

/// A raw system call with up to five arguments returning an int.
fn raw(number: libc::c_long, a: usize, b: usize, c: usize, d: usize, e: usize) -> c_int {
    // SAFETY: the callers pass the arguments of the named system call,
    // whose memory effects they document; syscall sets errno on failure.
    unsafe { libc::syscall(number, a, b, c, d, e) as c_int }
}

/// The area pages `[first, first + pages)` that `[address, address + len)`
/// covers, and the parts of it before and after the filled area.
struct Split {
    inside: Option<(usize, usize)>,
    outside: Vec<(usize, usize)>,
}

fn split(heap: &Heap, address: usize, len: usize) -> Split {
    let page = heap.page_size();
    let start = heap.page_address(0);
    let end = heap.page_address(heap.filled_pages());
    let (from, to) = (address, address.saturating_add(len));
    let mut outside = Vec::new();
    if from < start.min(to) {
        outside.push((from, start.min(to) - from));
    }
    if to > end.max(from) {
        outside.push((end.max(from), to - end.max(from)));
    }
    let (a, b) = (from.max(start), to.min(end));
    let inside = (a < b).then(|| {
        let first = (a - start) / page;
        let last = (b - start).div_ceil(page);
        (first, last - first)
    });
    Split { inside, outside }
}

/// `mmap`.
///
/// # Safety
/// As `mmap(2)`.
pub unsafe fn mmap(
    address: *mut c_void,
    len: usize,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    offset: libc::off_t,
) -> *mut c_void {
    let plain = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS;
    let colorable = address.is_null()
        && len > 0
        && fd == -1
        && offset == 0
        && prot == libc::PROT_READ | libc::PROT_WRITE
        && flags & plain == plain
        && flags & !(plain | libc::MAP_POPULATE) == 0;
    if colorable
        && enabled()
        && let Some(heap) = heap()
    {
        let bytes = len.next_multiple_of(heap.page_size());
        // Zeroed where it can hold old data: a recycled run whole, pages
        // never handed out only their mark byte.
        let ptr = heap.alloc_pages_zeroed(bytes, heap.page_size(), MAPPED);
        if !ptr.is_null() {
            heap.counters.mapped.fetch_add(1, Ordering::Relaxed);
            return ptr.cast();
        }
        heap.counters
            .mapped_uncolored
            .fetch_add(1, Ordering::Relaxed);
    }
    // The kernel's mmap, bypassing every wrapper.
    // SAFETY: forwarded caller contract; syscall sets errno on failure.
    let result = unsafe {
        libc::syscall(libc::SYS_mmap, address, len, prot, flags, fd, offset) as *mut c_void
    };
    if result != libc::MAP_FAILED
        && flags & (libc::MAP_FIXED | libc::MAP_FIXED_NOREPLACE) != 0
        && let Some(heap) = built_heap()
        && let Some((first, pages)) = split(heap, address as usize, len).inside
    {
        heap.lose_pages(first, pages);
    }
    result
}

/// `munmap`.
///
/// # Safety
/// As `munmap(2)`.
pub unsafe fn munmap(address: *mut c_void, len: usize) -> c_int {
    let Some(heap) = built_heap() else {
        return raw(libc::SYS_munmap, address as usize, len, 0, 0, 0);
    };
    let parts = split(heap, address as usize, len);
    let Some((first, pages)) = parts.inside else {
        return raw(libc::SYS_munmap, address as usize, len, 0, 0, 0);
    };
    heap.unmap_pages(first, pages);
    for (start, bytes) in parts.outside {
        if raw(libc::SYS_munmap, start, bytes, 0, 0, 0) != 0 {
            return -1;
        }
    }
    0
}

/// `mremap` (the fifth argument is read only with `MREMAP_FIXED`).
///
/// # Safety
/// As `mremap(2)`.
pub unsafe fn mremap(
    old: *mut c_void,
    old_len: usize,
    new_len: usize,
    flags: c_int,
    new_address: *mut c_void,
) -> *mut c_void {
    let passthrough = || {
        // SAFETY: the caller's arguments, unchanged, to the kernel's mremap.
        unsafe {
            libc::syscall(
                libc::SYS_mremap,
                old as usize,
                old_len,
                new_len,
                flags as usize,
                new_address as usize,
            ) as *mut c_void
        }
    };
    let Some(heap) = built_heap() else {
        return remap_result(passthrough());
    };
    let Some(page) = heap.area_page(old as usize) else {
        return remap_result(passthrough());
    };
    let size = heap.page_size();
    let run = heap.kinds().run_of(page);
    let ours = matches!(run, Some((first, _, f)) if f & MAPPED != 0 && first == page)
        && (old as usize).is_multiple_of(size)
        && flags & (libc::MREMAP_FIXED | libc::MREMAP_DONTUNMAP) == 0;
    if !ours {
        // The kernel takes the pages away from the area.
        let result = remap_result(passthrough());
        if result != libc::MAP_FAILED {
            heap.lose_pages(page, old_len.div_ceil(size).max(1));
        }
        return result;
    }
    let (first, run_pages, run_flags) = run.expect("checked above");
    let protection = run_flags & PROTECTED;
    let old_pages = old_len.div_ceil(size).clamp(1, run_pages);
    let Some(new_pages) = new_len.checked_next_multiple_of(size).map(|b| b / size) else {
        set_errno(libc::ENOMEM);
        return libc::MAP_FAILED;
    };
    if new_pages == 0 {
        set_errno(libc::EINVAL);
        return libc::MAP_FAILED;
    }
    // Only `[old, old + old_len)` is remapped: pages of the run past it
    // stay where they are, as the kernel's mremap leaves them.
    if new_pages <= old_pages {
        heap.unmap_pages(first + new_pages, old_pages - new_pages);
        return old;
    }
    if old_pages == run_pages && heap.extend_mapped(first, run_pages, new_pages) {
        // SAFETY: the pages after the run are ours now; anonymous memory
        // reads as zeros.
        unsafe {
            std::ptr::write_bytes(
                (old as *mut u8).add(run_pages * size),
                0,
                (new_pages - run_pages) * size,
            )
        };
        return old;
    }
    if flags & libc::MREMAP_MAYMOVE == 0 {
        set_errno(libc::ENOMEM);
        return libc::MAP_FAILED;
    }
    let fresh = heap.alloc_pages(new_pages * size, size, MAPPED);
    if fresh.is_null() {
        // The budget is spent: the kernel moves it, the pages leave the area.
        let result = remap_result(passthrough());
        if result != libc::MAP_FAILED {
            heap.lose_pages(first, run_pages);
        }
        return result;
    }
    heap.counters.mapped.fetch_add(1, Ordering::Relaxed);
    let fresh_page = heap.area_page(fresh as usize).expect("a run of the area");
    if protection == 0 {
        // As the kernel's mremap: the old pages move, frames and all (the
        // run's old place takes the frames the new run had, and is freed).
        heap.swap_pages(first, fresh_page, old_pages);
    } else {
        // SAFETY: both runs are ours and distinct. (Pages with their own
        // protection are copied: a move would carry it to the other run.)
        unsafe { std::ptr::copy_nonoverlapping(old as *const u8, fresh, old_pages * size) };
    }
    // SAFETY: the new run's pages after the old contents are ours: an
    // anonymous mapping's new part reads as zeros.
    unsafe {
        std::ptr::write_bytes(
            fresh.add(old_pages * size),
            0,
            (new_pages - old_pages) * size,
        );
    }
    heap.unmap_pages(first, old_pages);
    fresh.cast()
}

fn remap_result(result: *mut c_void) -> *mut c_void {
    if result as isize == -1 {
        libc::MAP_FAILED
    } else {
        result
    }
}

/// `madvise`.
///
/// # Safety
/// As `madvise(2)`.
pub unsafe fn madvise(address: *mut c_void, len: usize, advice: c_int) -> c_int {
    let call =
        |start: usize, bytes: usize| raw(libc::SYS_madvise, start, bytes, advice as usize, 0, 0);
    let Some(heap) = built_heap() else {
        return call(address as usize, len);
    };
    let parts = split(heap, address as usize, len);
    let Some((first, pages)) = parts.inside else {
        return call(address as usize, len);
    };
    let start = heap.page_address(first).max(address as usize);
    let end = heap.page_address(first + pages).min(address as usize + len);
    match advice {
        libc::MADV_DONTNEED | libc::MADV_REMOVE | MADV_DONTNEED_LOCKED => {
            // Keep the frames: zero them instead of dropping them.
            // SAFETY: area pages the program owns and asked to discard.
            unsafe { std::ptr::write_bytes(start as *mut u8, 0, end - start) };
        }
        libc::MADV_FREE | libc::MADV_HUGEPAGE | MADV_COLLAPSE | libc::MADV_NOHUGEPAGE => {}
        _ => {
            if call(start, end - start) != 0 {
                return -1;
            }
        }
    }
    for (outside, bytes) in parts.outside {
        if call(outside, bytes) != 0 {
            return -1;
        }
    }
    0
}

/// `MADV_DONTNEED_LOCKED` (Linux 5.18).
const MADV_DONTNEED_LOCKED: c_int = 24;
/// `MADV_COLLAPSE` (Linux 6.1).
const MADV_COLLAPSE: c_int = 25;

/// `mprotect`.
///
/// # Safety
/// As `mprotect(2)`.
pub unsafe fn mprotect(address: *mut c_void, len: usize, prot: c_int) -> c_int {
    let result = raw(
        libc::SYS_mprotect,
        address as usize,
        len,
        prot as usize,
        0,
        0,
    );
    if result == 0
        && let Some(heap) = built_heap()
        && let Some((first, pages)) = split(heap, address as usize, len).inside
    {
        heap.flag_runs(first, pages, PROTECTED);
    }
    result
}
