//! [`AnonymousWords`]: zero-filled 64-bit atomic words in a private
//! anonymous mapping of their own, unmapped on drop.
//!
//! Heap memory of the same size may come from the allocator's free lists
//! with no page fault and go back to them with no system call (glibc
//! raises its mmap threshold after the first large free). A program that
//! must pay the kernel's part of memory every time (gracioli's
//! applications timed whole, `tinct bench coherence`) takes its arrays
//! from here: each page faults in on its first touch, and the drop gives
//! every page back with `munmap`.

use std::ops::Deref;
use std::ptr::NonNull;
use std::sync::atomic::AtomicU64;

use crate::{Error, Result};

/// `len` zero-filled atomic words in a mapping of their own.
#[derive(Debug)]
pub struct AnonymousWords {
    start: NonNull<AtomicU64>,
    len: usize,
}

// SAFETY: the value owns its mapping exclusively; the words are atomics,
// so sharing `&[AtomicU64]` between threads is sound.
unsafe impl Send for AnonymousWords {}
// SAFETY: as above, every access goes through `&[AtomicU64]`.
unsafe impl Sync for AnonymousWords {}

impl AnonymousWords {
    /// Maps `len` words (at least one page), untouched: no page is backed
    /// until it is first written or read.
    pub fn new(len: usize) -> Result<Self> {
        let bytes = Self::bytes_of(len)?;
        // SAFETY: a fresh anonymous private mapping at an address the
        // kernel chooses cannot alias any existing Rust object.
        let raw = unsafe {
            rustix::mm::mmap_anonymous(
                std::ptr::null_mut(),
                bytes,
                rustix::mm::ProtFlags::READ | rustix::mm::ProtFlags::WRITE,
                rustix::mm::MapFlags::PRIVATE,
            )
        }
        .map_err(|errno| Error::syscall(format!("mmap(anonymous, {bytes} bytes)"), errno.into()))?;
        let start = NonNull::new(raw.cast::<AtomicU64>())
            .ok_or_else(|| Error::InvalidArgument("mmap returned a null mapping".into()))?;
        Ok(Self { start, len })
    }

    /// Bytes mapped for `len` words: at least one byte's page.
    fn bytes_of(len: usize) -> Result<usize> {
        len.max(1)
            .checked_mul(std::mem::size_of::<AtomicU64>())
            .ok_or_else(|| Error::InvalidArgument(format!("{len} words do not fit in memory")))
    }
}

impl Deref for AnonymousWords {
    type Target = [AtomicU64];
    fn deref(&self) -> &[AtomicU64] {
        // SAFETY: the mapping holds `len` readable, writable words, zero
        // filled by the kernel (a valid AtomicU64 each), aligned to a page,
        // owned by `self` and mapped for its lifetime; all access is atomic.
        unsafe { std::slice::from_raw_parts(self.start.as_ptr(), self.len) }
    }
}

impl Drop for AnonymousWords {
    fn drop(&mut self) {
        if let Ok(bytes) = Self::bytes_of(self.len) {
            // SAFETY: the mapping of `bytes` bytes was created in `new` and
            // no reference into it outlives `self`.
            let _ = unsafe { rustix::mm::munmap(self.start.as_ptr().cast(), bytes) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering::Relaxed;

    /// The words read as zero, keep what is written, and their first touch
    /// is a page fault each time a new mapping is made (the process's
    /// minor faults grow by at least the pages touched).
    #[test]
    fn fresh_words_are_zero_and_fault_in_on_first_touch_every_time() {
        let page_words = rustix::param::page_size() / 8;
        let pages = 64;
        for _ in 0..2 {
            let before = crate::usage::thread_minor_faults().unwrap();
            let words = AnonymousWords::new(pages * page_words).unwrap();
            assert_eq!(words.len(), pages * page_words);
            assert!(
                words
                    .iter()
                    .step_by(page_words)
                    .all(|w| w.load(Relaxed) == 0)
            );
            words
                .iter()
                .step_by(page_words)
                .for_each(|w| w.store(7, Relaxed));
            assert!(
                words
                    .iter()
                    .step_by(page_words)
                    .all(|w| w.load(Relaxed) == 7)
            );
            let faults = crate::usage::thread_minor_faults().unwrap() - before;
            assert!(
                faults >= pages as u64,
                "{faults} faults for {pages} fresh pages"
            );
        }
        assert!(AnonymousWords::new(usize::MAX).is_err());
    }
}
