//! [`PageKinds`]: what each page of the coloured area holds, readable
//! without a lock (so `free` and `malloc_usable_size` find an object's
//! size without taking one).
//!
//! One `u32` per area page:
//!
//! | bits 31-30 | meaning | low bits |
//! |---|---|---|
//! | 0 | free, or not yet filled | 1 once handed out and freed, else 0 |
//! | 1 | carved into objects of one size class | class index |
//! | 2 | first page of a run (a block of whole pages) | pages (28 bits), flags |
//! | 3 | a later page of a run | offset to the first page (28 bits), flags |
//!
//! Flags (bits 28-29 of run pages): [`MAPPED`] the run was handed out by
//! the shim's `mmap`, [`PROTECTED`] the program changed its protection.

use std::sync::atomic::{AtomicU32, Ordering};

const KIND_SHIFT: u32 = 30;
const SMALL: u32 = 1 << KIND_SHIFT;
const RUN_START: u32 = 2 << KIND_SHIFT;
const RUN_BODY: u32 = 3 << KIND_SHIFT;
/// The run came from the shim's `mmap` (freed by `munmap`, not `free`).
pub const MAPPED: u32 = 1 << 28;
/// The program changed the run's protection (restored when it is freed).
pub const PROTECTED: u32 = 1 << 29;
const COUNT_MASK: u32 = (1 << 28) - 1;
/// The class byte that marks a lost page.
const LOST_CLASS: u32 = 0xff;
/// A free page that was handed out before (kind bits 0: still free).
const FREED: u32 = 1;

/// Largest run, in pages (2^28 - 1).
pub const MAX_RUN_PAGES: usize = COUNT_MASK as usize;

/// What one area page holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Free, or beyond the filled part of the area.
    Free,
    /// Objects of size class `class`.
    Small {
        /// Index into `tinct_mem::SIZE_CLASSES`.
        class: usize,
    },
    /// The first page of a run of `pages` pages.
    RunStart {
        /// Pages of the run.
        pages: usize,
        /// [`MAPPED`] | [`PROTECTED`].
        flags: u32,
    },
    /// Given to the kernel by the program (`mremap` to a fixed address,
    /// `mmap` over it): never handed out again.
    Lost,
    /// Page `offset` of a run (offset ≥ 1).
    RunBody {
        /// Pages from the run's first page.
        offset: usize,
        /// [`MAPPED`] | [`PROTECTED`].
        flags: u32,
    },
}

/// Atomic integers: all-zero bytes are a valid value (0).
pub trait ZeroIsValid {}
impl ZeroIsValid for AtomicU32 {}
impl ZeroIsValid for std::sync::atomic::AtomicU8 {}

/// `len` atomics at zero, from zeroed memory (the shim's allocator does
/// not write fresh memory: a table for a large budget costs nothing until
/// its pages are touched).
pub fn zeroed_atomics<T: ZeroIsValid>(len: usize) -> Box<[T]> {
    let layout = std::alloc::Layout::array::<T>(len).expect("a table that fits in memory");
    if layout.size() == 0 {
        return Box::new([]);
    }
    // SAFETY: a non-zero layout; the memory is zeroed, and all-zero bytes
    // are a valid `T` (an atomic integer, `ZeroIsValid`); the box owns the
    // allocation with exactly this layout (a `[T]` of `len`).
    unsafe {
        let memory = std::alloc::alloc_zeroed(layout).cast::<T>();
        if memory.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        Box::from_raw(std::ptr::slice_from_raw_parts_mut(memory, len))
    }
}

/// The kinds of every page of an area.
#[derive(Debug)]
pub struct PageKinds {
    words: Box<[AtomicU32]>,
}

impl PageKinds {
    /// All free, for `pages` pages.
    pub fn new(pages: usize) -> Self {
        Self {
            words: zeroed_atomics(pages),
        }
    }

    /// The kind of page `index` (`Free` beyond the end).
    #[inline]
    pub fn get(&self, index: usize) -> Kind {
        let Some(word) = self.words.get(index) else {
            return Kind::Free;
        };
        let word = word.load(Ordering::Acquire);
        let count = (word & COUNT_MASK) as usize;
        let flags = word & (MAPPED | PROTECTED);
        match word & (3 << KIND_SHIFT) {
            SMALL if word & 0xff == LOST_CLASS => Kind::Lost,
            SMALL => Kind::Small {
                class: (word & 0xff) as usize,
            },
            RUN_START => Kind::RunStart {
                pages: count,
                flags,
            },
            RUN_BODY => Kind::RunBody {
                offset: count,
                flags,
            },
            _ => Kind::Free,
        }
    }

    /// Pages this table covers.
    pub fn len_pages(&self) -> usize {
        self.words.len()
    }

    /// Page `index` was given to the kernel: never handed out again.
    pub fn set_lost(&self, index: usize) {
        self.words[index].store(SMALL | LOST_CLASS, Ordering::Release);
    }

    /// Page `index` holds objects of `class`.
    pub fn set_small(&self, index: usize, class: usize) {
        self.words[index].store(SMALL | class as u32, Ordering::Release);
    }

    /// Pages `start..start + pages` are one run with `flags`.
    pub fn set_run(&self, start: usize, pages: usize, flags: u32) {
        debug_assert!(pages <= MAX_RUN_PAGES);
        self.words[start].store(RUN_START | flags | pages as u32, Ordering::Release);
        for offset in 1..pages {
            self.words[start + offset].store(RUN_BODY | flags | offset as u32, Ordering::Release);
        }
    }

    /// Adds `flag` to every page of the run at `start`.
    pub fn flag_run(&self, start: usize, pages: usize, flag: u32) {
        for word in &self.words[start..start + pages] {
            word.fetch_or(flag, Ordering::AcqRel);
        }
    }

    /// Pages `start..start + pages` are free again (they were handed out).
    pub fn set_free(&self, start: usize, pages: usize) {
        for word in &self.words[start..start + pages] {
            word.store(FREED, Ordering::Release);
        }
    }

    /// True if page `index` is free and was handed out before (so a
    /// `free` of its start is a double free, not a wild pointer).
    pub fn was_freed(&self, index: usize) -> bool {
        self.words
            .get(index)
            .is_some_and(|word| word.load(Ordering::Acquire) == FREED)
    }

    /// The run holding page `index`: (first page, pages, flags).
    pub fn run_of(&self, index: usize) -> Option<(usize, usize, u32)> {
        match self.get(index) {
            Kind::RunStart { pages, flags } => Some((index, pages, flags)),
            Kind::RunBody { offset, flags } => match self.get(index.checked_sub(offset)?) {
                Kind::RunStart { pages, .. } => Some((index - offset, pages, flags)),
                _ => None,
            },
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip_and_runs_are_found_from_any_page() {
        let kinds = PageKinds::new(16);
        kinds.set_small(0, 23);
        kinds.set_run(2, 5, MAPPED);
        assert_eq!(kinds.get(0), Kind::Small { class: 23 });
        assert_eq!(kinds.get(1), Kind::Free);
        assert_eq!(
            kinds.get(2),
            Kind::RunStart {
                pages: 5,
                flags: MAPPED
            }
        );
        assert_eq!(kinds.run_of(6), Some((2, 5, MAPPED)));
        kinds.flag_run(2, 5, PROTECTED);
        assert_eq!(kinds.run_of(4), Some((2, 5, MAPPED | PROTECTED)));
        assert!(!kinds.was_freed(2), "in use");
        kinds.set_free(2, 5);
        assert_eq!(kinds.run_of(4), None);
        assert_eq!(kinds.get(4), Kind::Free);
        assert!(
            kinds.was_freed(4) && !kinds.was_freed(1),
            "freed, never used"
        );
        kinds.set_lost(3);
        assert_eq!(kinds.get(3), Kind::Lost);
        assert_eq!(kinds.get(99), Kind::Free, "beyond the end");
    }
}
