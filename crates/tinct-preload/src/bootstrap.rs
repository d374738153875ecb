//! The bootstrap arena: plain (uncolored) memory that never calls malloc.
//!
//! It serves three kinds of request:
//! * the shim's own Rust allocations (it is the crate's `#[global_allocator]`,
//!   so building the colored pool cannot recurse into the `malloc` it
//!   replaces);
//! * `malloc` calls that arrive while the pool is being built (on the
//!   building thread) or from inside the allocator;
//! * the fallback of a full pool when `TINCT_STRICT` is off (counted).
//!
//! Blocks are powers of two carved from one reserved `MAP_NORESERVE`
//! region; freed blocks go to a free list per size and are reused first.
//! Each block starts with a 16-byte header right before the user pointer:
//! the size class and the offset back to the block start (which differs
//! from 16 only for over-aligned requests), whose top bit marks the block
//! freed. [`Bootstrap::check`] reads the header before a block is freed or
//! reallocated: a freed block is a double free, a header that is not one
//! a pointer the arena never handed out (see [`crate::misuse`]).
//!
//! Zeroed blocks (`calloc` of a fallback) are written only where they can
//! hold old data: a block never used before is fresh anonymous memory, and
//! a freed large block gave its interior back to the kernel (it reads as
//! zeros), so a gigabyte `calloc` stays lazy as with glibc.

use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::lock::RawLock;
use crate::misuse::{self, Call, Misuse};

/// Bytes in front of every pointer handed out.
const HEADER: usize = 16;
/// Smallest block: 2^5 = 32 bytes.
const MIN_CLASS: u32 = 5;
/// Largest block: 2^40 bytes (bounded by the reservation anyway).
const MAX_CLASS: u32 = 40;
/// Blocks of at least 2^22 bytes (4 MiB) give their interior pages back to
/// the kernel when freed. Smaller ones stay resident for reuse: a program
/// whose coloured pool is spent falls back here for every block, and
/// giving each one back and faulting it in again made a 4-thread stress 10
/// times slower than glibc.
const RELEASE_CLASS: u32 = 22;
/// Marks a header written by this arena.
const MAGIC: u64 = 0x7ec7_b007;
/// The bit of the header's offset word that marks a freed block.
const FREED: u64 = 1 << 63;
/// The page size the arena assumes for releasing interiors (where pages
/// are larger, `madvise` refuses the range and [`Bootstrap::free`] clears
/// the interior instead: correct, and slower).
const RELEASE_PAGE: usize = 4096;

/// Sizes tried for the reservation, largest first.
const RESERVATIONS: [usize; 4] = [64 << 30, 16 << 30, 4 << 30, 1 << 30];

/// The arena. One instance, [`BOOTSTRAP`], serves the whole process.
#[derive(Debug)]
pub struct Bootstrap {
    lock: RawLock,
    start: AtomicUsize,
    len: AtomicUsize,
    /// Next never-used byte (guarded by `lock`).
    bump: AtomicUsize,
    /// Head of the free list of each class (guarded by `lock`).
    free: [AtomicUsize; MAX_CLASS as usize + 1],
    /// Bytes currently handed out (block sizes).
    in_use: AtomicUsize,
}

/// The process-wide arena.
pub static BOOTSTRAP: Bootstrap = Bootstrap::new();

/// The shim's Rust allocations go to the bootstrap arena.
#[derive(Debug)]
pub struct BootstrapAlloc;

// SAFETY: `Bootstrap::alloc` returns blocks of at least `size` bytes
// aligned to `align` (or null), never handed out twice until freed, and
// `free` takes back exactly what `alloc` returned.
unsafe impl GlobalAlloc for BootstrapAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        BOOTSTRAP.alloc(layout.size(), layout.align())
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        BOOTSTRAP.alloc_zeroed(layout.size(), layout.align())
    }

    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: `ptr` came from `alloc` above (GlobalAlloc contract).
        unsafe { BOOTSTRAP.free(ptr) }
    }
}

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: AtomicUsize = AtomicUsize::new(0);

impl Bootstrap {
    /// An arena that reserves its region on first use.
    pub const fn new() -> Self {
        Self {
            lock: RawLock::new(),
            start: AtomicUsize::new(0),
            len: AtomicUsize::new(0),
            bump: AtomicUsize::new(0),
            free: [EMPTY; MAX_CLASS as usize + 1],
            in_use: AtomicUsize::new(0),
        }
    }

    /// True if `ptr` was handed out by this arena (an address range test,
    /// no lock).
    pub fn contains(&self, ptr: *const u8) -> bool {
        let start = self.start.load(Ordering::Acquire);
        let address = ptr as usize;
        start != 0 && address >= start && address < start + self.len.load(Ordering::Relaxed)
    }

    /// Bytes currently handed out (whole blocks).
    pub fn bytes_in_use(&self) -> usize {
        self.in_use.load(Ordering::Relaxed)
    }

    /// `size` bytes aligned to `align` (a power of two), or null when the
    /// reservation is exhausted or cannot be made.
    pub fn alloc(&self, size: usize, align: usize) -> *mut u8 {
        self.alloc_block(size, align).0
    }

    /// As [`Bootstrap::alloc`], zero-filled. Only bytes that can hold old
    /// data are written: none of a block never used before (fresh
    /// anonymous memory, zero already: a large zeroed table or `calloc`
    /// costs nothing until it is touched), and of a reused large block
    /// only its first page (its interior was given back when it was
    /// freed, see [`Bootstrap::free`]).
    pub fn alloc_zeroed(&self, size: usize, align: usize) -> *mut u8 {
        let (ptr, clean_from) = self.alloc_block(size, align);
        if !ptr.is_null() {
            let dirty = clean_from.saturating_sub(ptr as usize).min(size);
            // SAFETY: the block has at least `size` bytes at `ptr`, and
            // `dirty <= size`.
            unsafe { std::ptr::write_bytes(ptr, 0, dirty) };
        }
        ptr
    }

    /// A block, and the address from which on it reads as zeros (its
    /// start if never used, the end of its first page if a large block
    /// reused, `usize::MAX` if it may hold old data anywhere).
    fn alloc_block(&self, size: usize, align: usize) -> (*mut u8, usize) {
        let null = (std::ptr::null_mut(), usize::MAX);
        let align = align.max(HEADER);
        if !align.is_power_of_two() {
            return null;
        }
        let slack = if align > HEADER { align } else { HEADER };
        let Some(need) = size.checked_add(slack) else {
            return null;
        };
        let Some(block_size) = need.max(1 << MIN_CLASS).checked_next_power_of_two() else {
            return null;
        };
        let class = block_size.trailing_zeros();
        if class > MAX_CLASS {
            return null;
        }
        self.lock.lock();
        let (block, fresh) = self.take_block(class);
        self.lock.unlock();
        if block == 0 {
            return null;
        }
        self.in_use.fetch_add(1 << class, Ordering::Relaxed);
        let clean_from = if fresh {
            block
        } else if class >= RELEASE_CLASS {
            block + RELEASE_PAGE
        } else {
            usize::MAX
        };
        let user = (block + HEADER).next_multiple_of(align);
        let header = (user - HEADER) as *mut u64;
        // SAFETY: `block..block + 2^class` is ours and `user - HEADER >=
        // block`, with `user + size <= block + 2^class` by the choice of
        // class; the header slot is 8-byte aligned (user is 16-aligned).
        unsafe {
            header.write((MAGIC << 8) | u64::from(class));
            header.add(1).write((user - block) as u64);
        }
        (user as *mut u8, clean_from)
    }

    /// A block of `class` (0 if none) and whether it is fresh (never used).
    fn take_block(&self, class: u32) -> (usize, bool) {
        let head = self.free[class as usize].load(Ordering::Relaxed);
        if head != 0 {
            // SAFETY: a free block's first word holds the next free block
            // of its class, written by `free` under the lock we hold.
            let next = unsafe { (head as *const usize).read() };
            self.free[class as usize].store(next, Ordering::Relaxed);
            return (head, false);
        }
        if self.start.load(Ordering::Relaxed) == 0 && !self.reserve() {
            return (0, false);
        }
        let size = 1usize << class;
        // Large blocks start on a page so their interior can be released.
        let alignment = if class >= RELEASE_CLASS {
            RELEASE_PAGE
        } else {
            HEADER
        };
        let block = self
            .bump
            .load(Ordering::Relaxed)
            .next_multiple_of(alignment);
        let end = self.start.load(Ordering::Relaxed) + self.len.load(Ordering::Relaxed);
        if block.checked_add(size).is_none_or(|e| e > end) {
            return (0, false);
        }
        self.bump.store(block + size, Ordering::Relaxed);
        (block, true)
    }

    fn reserve(&self) -> bool {
        for len in RESERVATIONS {
            // SAFETY: a fresh private anonymous mapping at a kernel-chosen
            // address aliases nothing.
            // (rustix makes the system call itself: the C library's mmap
            // is the shim's own, see `anonymous_memory`.)
            let raw = unsafe {
                rustix::mm::mmap_anonymous(
                    std::ptr::null_mut(),
                    len,
                    rustix::mm::ProtFlags::READ | rustix::mm::ProtFlags::WRITE,
                    rustix::mm::MapFlags::PRIVATE | rustix::mm::MapFlags::NORESERVE,
                )
            };
            if let Ok(raw) = raw {
                // Transparent huge pages would be wasteful here (many
                // small blocks, sparse use); failure to advise is harmless.
                // SAFETY: advising our own fresh mapping.
                let _ =
                    unsafe { rustix::mm::madvise(raw, len, rustix::mm::Advice::LinuxNoHugepage) };
                self.len.store(len, Ordering::Relaxed);
                self.bump.store(raw as usize, Ordering::Relaxed);
                self.start.store(raw as usize, Ordering::Release);
                return true;
            }
        }
        false
    }

    /// The header of a block handed out at `address` (class, offset word).
    ///
    /// # Safety
    /// `address` must lie in the arena at least [`HEADER`] bytes past its
    /// start, 8-aligned.
    unsafe fn header(address: usize) -> (u64, u64) {
        let header = (address - HEADER) as *const u64;
        // SAFETY: the 16 bytes in front of `address` lie in the arena's
        // mapping (the caller's contract), readable anywhere in it.
        unsafe { (header.read(), header.add(1).read()) }
    }

    /// Whether `ptr` is a block this arena handed out and has not taken
    /// back: `Ok((class, offset))`, else what is wrong. Reads only the
    /// arena's own mapping and takes no lock; a header is recognised by
    /// its magic number, class and offset, so a pointer inside a block
    /// is found unless the program wrote a header's exact bytes there.
    pub fn check(&self, ptr: *const u8) -> Result<(u32, usize), Misuse> {
        let address = ptr as usize;
        let start = self.start.load(Ordering::Acquire);
        if !self.contains(ptr) || address < start + HEADER || !address.is_multiple_of(HEADER) {
            return Err(Misuse::NotFromMalloc);
        }
        // SAFETY: checked just above: in the arena, past its first header,
        // 16-aligned.
        let (word, offset) = unsafe { Self::header(address) };
        if offset & FREED != 0 {
            return Err(Misuse::DoubleFree);
        }
        let class = (word & 0xff) as u32;
        let offset = offset as usize;
        let valid = word >> 8 == MAGIC
            && (MIN_CLASS..=MAX_CLASS).contains(&class)
            && offset >= HEADER
            && offset.is_multiple_of(HEADER)
            && offset < 1 << class
            && address - offset >= start;
        if valid {
            Ok((class, offset))
        } else {
            Err(Misuse::NotFromMalloc)
        }
    }

    /// Bytes usable at `ptr` (from `alloc`; 0 if it is not a live block).
    pub fn usable_size(&self, ptr: *const u8) -> usize {
        self.check(ptr)
            .map_or(0, |(class, offset)| (1usize << class) - offset)
    }

    /// Returns a block, or aborts the process if `ptr` is not a live block
    /// of this arena ([`Bootstrap::check`]: a double free, or a pointer it
    /// never handed out).
    ///
    /// A large block gives its interior back to the kernel, so it reads as
    /// zeros when reused; should `madvise` fail (a program that locked
    /// its memory), the interior is cleared instead, so that stays true.
    /// (A large block aligned past its first page loses its header with
    /// its interior: freeing it again aborts as a pointer never handed
    /// out rather than as a double free.)
    ///
    /// # Safety
    /// `ptr` must come from [`Bootstrap::alloc`] of this arena, or be a
    /// pointer the caller wants checked (it aborts, it is never freed).
    pub unsafe fn free(&self, ptr: *mut u8) {
        let (class, offset) = match self.check(ptr) {
            Ok(header) => header,
            Err(misuse) => misuse::abort(Call::Free, misuse, ptr),
        };
        let block = ptr as usize - offset;
        let size = 1usize << class;
        // SAFETY: a live block's header (checked above); the offset word
        // is not the free list's link (the block's first word).
        unsafe {
            (ptr.sub(HEADER) as *mut u64)
                .add(1)
                .write(offset as u64 | FREED)
        };
        if class >= RELEASE_CLASS {
            // Give the interior back; the first page keeps the list link.
            let interior = (block + RELEASE_PAGE) as *mut u8;
            // SAFETY: the pages lie inside the freed block, which nobody
            // uses any more; MADV_DONTNEED makes them read as zero later.
            let released = unsafe {
                rustix::mm::madvise(
                    interior.cast(),
                    size - RELEASE_PAGE,
                    rustix::mm::Advice::LinuxDontNeed,
                )
            };
            if released.is_err() {
                // SAFETY: the same freed interior, ours to write.
                unsafe { std::ptr::write_bytes(interior, 0, size - RELEASE_PAGE) };
            }
        }
        self.in_use.fetch_sub(size, Ordering::Relaxed);
        self.lock.lock();
        let head = self.free[class as usize].load(Ordering::Relaxed);
        // SAFETY: the block is ours again; its first word becomes the link.
        unsafe { (block as *mut usize).write(head) };
        self.free[class as usize].store(block, Ordering::Relaxed);
        self.lock.unlock();
    }

    /// True if the calling thread holds the arena's lock (it was
    /// interrupted inside it).
    pub fn held_by_caller(&self) -> bool {
        self.lock.held_by_caller()
    }

    /// For `pthread_atfork`: take the lock before `fork`.
    pub fn before_fork(&self) {
        self.lock.lock();
    }

    /// For `pthread_atfork`: release it in the parent after `fork`.
    pub fn after_fork_in_parent(&self) {
        self.lock.unlock();
    }

    /// For `pthread_atfork`: release it in the child after `fork`.
    pub fn after_fork_in_child(&self) {
        self.lock.reset_in_child();
    }
}

impl Default for Bootstrap {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_aligned_disjoint_and_reused_after_free() {
        let arena = Bootstrap::new();
        let mut blocks = Vec::new();
        for (i, align) in [1usize, 16, 64, 4096, 65536]
            .iter()
            .cycle()
            .take(60)
            .enumerate()
        {
            let size = 1 + i * 977;
            let ptr = arena.alloc(size, *align);
            assert!(!ptr.is_null());
            assert!(arena.contains(ptr));
            assert_eq!(ptr as usize % align.max(&16), 0, "align {align}");
            assert!(arena.usable_size(ptr) >= size);
            // SAFETY: the block has at least `size` bytes.
            unsafe { std::ptr::write_bytes(ptr, i as u8, size) };
            blocks.push((ptr, size, i as u8));
        }
        for &(ptr, size, fill) in &blocks {
            // SAFETY: each block is live and was filled with its own byte.
            let bytes = unsafe { std::slice::from_raw_parts(ptr, size) };
            assert!(bytes.iter().all(|&b| b == fill), "blocks overlap");
        }
        let (first, size, _) = blocks[1];
        // SAFETY: `first` is live and freed once.
        unsafe { arena.free(first) };
        let again = arena.alloc(size, 16);
        assert_eq!(again, first, "a freed block of the class is reused first");
        assert!(!arena.contains(std::ptr::null()));
        // Zeroed blocks read as zero, fresh or reused.
        let fresh = arena.alloc_zeroed(5000, 16);
        // SAFETY: `fresh` is a live block of 5000 bytes.
        let bytes = unsafe { std::slice::from_raw_parts(fresh, 5000) };
        assert!(bytes.iter().all(|&b| b == 0));
        // SAFETY: live, then freed once; the same class is reused.
        unsafe {
            std::ptr::write_bytes(fresh, 9, 5000);
            arena.free(fresh);
        }
        let reused = arena.alloc_zeroed(5000, 16);
        assert_eq!(reused, fresh);
        // SAFETY: `reused` is a live block of 5000 bytes.
        let bytes = unsafe { std::slice::from_raw_parts(reused, 5000) };
        assert!(bytes.iter().all(|&b| b == 0));
        assert!(!arena.contains(&blocks as *const _ as *const u8));
    }

    #[test]
    fn impossible_requests_return_null() {
        let arena = Bootstrap::new();
        assert!(arena.alloc(usize::MAX - 8, 16).is_null());
        assert!(
            arena.alloc(16, 48).is_null(),
            "alignment not a power of two"
        );
        assert!(arena.alloc(1 << 41, 16).is_null());
        assert!(arena.alloc(1, 1 << 63).is_null(), "a block past 2^64 bytes");
    }

    #[test]
    fn freed_and_foreign_pointers_are_told_apart_from_live_blocks() {
        let arena = Bootstrap::new();
        let small = arena.alloc(100, 16);
        let aligned = arena.alloc(5000, 4096);
        assert_eq!(arena.check(small), Ok((7, 16)));
        assert_eq!(arena.check(aligned).map(|(class, _)| class), Ok(14));
        assert_eq!(
            arena.check(small.wrapping_add(16)),
            Err(Misuse::NotFromMalloc)
        );
        assert_eq!(
            arena.check(small.wrapping_add(8)),
            Err(Misuse::NotFromMalloc)
        );
        let outside = 0u64;
        assert_eq!(
            arena.check(&outside as *const u64 as *const u8),
            Err(Misuse::NotFromMalloc)
        );
        assert_eq!(arena.usable_size(small.wrapping_add(32)), 0);
        // SAFETY: live blocks, freed once.
        unsafe {
            arena.free(small);
            arena.free(aligned);
        }
        assert_eq!(arena.check(small), Err(Misuse::DoubleFree));
        assert_eq!(arena.check(aligned), Err(Misuse::DoubleFree));
        assert_eq!(arena.usable_size(small), 0);
        let again = arena.alloc(100, 16);
        assert_eq!(again, small, "reused");
        assert_eq!(arena.check(again), Ok((7, 16)), "live again");
    }

    #[test]
    fn a_reused_large_block_reads_as_zeros_past_its_first_page() {
        let arena = Bootstrap::new();
        let size = 6 << 20;
        let first = arena.alloc_zeroed(size, 16);
        // SAFETY: a live block of `size` bytes.
        let bytes = unsafe { std::slice::from_raw_parts_mut(first, size) };
        assert!(bytes.iter().step_by(4096).all(|&b| b == 0), "fresh");
        bytes.fill(0xee);
        // SAFETY: live, freed once.
        unsafe { arena.free(first) };
        let again = arena.alloc_zeroed(size, 16);
        assert_eq!(again, first, "the freed block of the class is reused");
        // SAFETY: a live block of `size` bytes.
        let bytes = unsafe { std::slice::from_raw_parts(again, size) };
        assert!(bytes.iter().all(|&b| b == 0), "cleared and released");
    }

    #[test]
    fn in_use_counts_whole_blocks() {
        let arena = Bootstrap::new();
        let ptr = arena.alloc(100, 16);
        assert_eq!(arena.bytes_in_use(), 128);
        // SAFETY: live, freed once.
        unsafe { arena.free(ptr) };
        assert_eq!(arena.bytes_in_use(), 0);
    }
}
