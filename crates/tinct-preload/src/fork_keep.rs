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
//! child writes them where they are (their area range is empty then).

use crate::heap::Heap;
use crate::page_kinds::Kind;

/// Runs in the child of `fork` (its only thread; every lock reset).
pub fn take_the_copies(heap: &Heap) {
    let page = heap.page_size();
    let filled = heap.filled_pages();
    let lent = crate::thread_stacks::lent();
    for top in &lent {
        for offset in (0..top.pages * page).step_by(page) {
            let address = (top.top + offset) as *mut u8;
            // SAFETY: a page of a coloured stack top, mapped read-write;
            // writing back the byte it holds only makes the kernel copy it
            // for this child.
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
