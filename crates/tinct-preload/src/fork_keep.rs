//! `TINCT_FORK_KEEP=1`: after `fork`, parent and child share every heap
//! page copy-on-write, and whichever writes a page first gets a copy in a
//! frame of any colour. If that is the parent, its page has lost its
//! colour. With this option the child, before it returns from `fork`,
//! takes the copies itself: it writes every area page in use (the kernel
//! copies each for the child) and drops its references to the free area
//! pages and to the pages waiting outside the area, so every page of the
//! parent is its own again and keeps its frame. The cost is one page copy
//! per page in use, paid by the child; the child's heap is then uncoloured
//! (its summary says how many pages changed frame). The coloured tops of
//! thread stacks ([`crate::thread_stacks`]) are area pages lent out: the
//! child takes them where they are (their area range is empty then), with
//! `madvise(MADV_POPULATE_WRITE)` (Linux 5.14), which makes the kernel
//! copy each page as a write would but fails, instead of faulting, on a
//! page the program made read-only or inaccessible (a guard zone in its
//! stack): such a page is skipped (the parent's write to it would fault
//! anyway). On a kernel without it the child writes each page back, as it
//! does the area's pages (there a top with a protected page kills the
//! child: the shim cannot know the protection without reading
//! /proc/self/maps).

use crate::heap::Heap;
use crate::page_kinds::Kind;

/// Runs in the child of `fork` (its only thread; every lock reset).
pub fn take_the_copies(heap: &Heap) {
    let page = heap.page_size();
    let filled = heap.filled_pages();
    let lent = crate::thread_stacks::lent();
    let populate = populate_write_works(page);
    for top in &lent {
        let bytes = top.pages * page;
        if populate {
            if populate_write(top.top, bytes) {
                continue;
            }
            // A page of it is not writable: page by page, skipping those.
            for offset in (0..bytes).step_by(page) {
                populate_write(top.top + offset, page);
            }
            continue;
        }
        for offset in (0..bytes).step_by(page) {
            let address = (top.top + offset) as *mut u8;
            // SAFETY: a page of a coloured stack top, mapped read-write
            // unless the program changed it (see the module
            // documentation); writing back the byte it holds only makes
            // the kernel copy it for this child.
            unsafe { address.write_volatile(address.read_volatile()) };
        }
    }
    let is_lent = |index: usize| {
        lent.iter()
            .any(|top| (top.first_page..top.first_page + top.pages).contains(&index))
    };
    let mut index = 0;
    while index < filled {
        if heap.kinds().get(index) == Kind::Free {
            // A run of free pages: give the child's references back.
            let start = index;
            while index < filled && heap.kinds().get(index) == Kind::Free {
                index += 1;
            }
            // SAFETY: free area pages hold nothing of the program's; in
            // this child they will fault in fresh pages when used again.
            let _ = unsafe {
                rustix::mm::madvise(
                    heap.page_address(start) as *mut std::ffi::c_void,
                    (index - start) * page,
                    rustix::mm::Advice::LinuxDontNeed,
                )
            };
            continue;
        }
        if heap.kinds().get(index) != Kind::Lost && !is_lent(index) {
            let address = heap.page_address(index) as *mut u8;
            // SAFETY: an area page in use, mapped read-write (protection
            // changes by the program are flagged: those pages are left
            // alone); writing back the byte it holds changes nothing but
            // makes the kernel copy the page for this child.
            unsafe {
                if !matches!(heap.kinds().run_of(index), Some((_, _, flags)) if flags & crate::page_kinds::PROTECTED != 0)
                {
                    address.write_volatile(address.read_volatile());
                }
            }
        }
        index += 1;
    }
    heap.with_area_mut(|area| area.release_outside_pages());
}

/// `MADV_POPULATE_WRITE` (Linux 5.14).
const MADV_POPULATE_WRITE: i32 = 23;

/// `madvise(address, bytes, MADV_POPULATE_WRITE)` (the system call, not
/// the shim's own `madvise`): true if every page is now written-to as far
/// as the kernel is concerned (copied for this process).
fn populate_write(address: usize, bytes: usize) -> bool {
    // SAFETY: MADV_POPULATE_WRITE faults pages in as writes would, without
    // changing their contents; it fails (EINVAL, EFAULT) rather than
    // signal on a page that cannot be written.
    unsafe { libc::syscall(libc::SYS_madvise, address, bytes, MADV_POPULATE_WRITE) == 0 }
}

/// True if the kernel knows `MADV_POPULATE_WRITE`: tried on a page of the
/// calling thread's stack, which is writable (EINVAL there means the
/// advice is unknown).
fn populate_write_works(page: usize) -> bool {
    let mut here = [0u8; 1];
    let here = std::hint::black_box(&mut here) as *mut [u8; 1] as usize;
    populate_write(here & !(page - 1), page)
}
