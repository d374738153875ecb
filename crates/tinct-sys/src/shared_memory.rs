//! [`SharedWords`]: memory shared with forked children, as atomic words.
//!
//! A `MAP_SHARED | MAP_ANONYMOUS` mapping stays shared between a process
//! and the children it forks afterwards, so a supervisor can read what a
//! child wrote even when the child died of a signal. Exposing the mapping
//! as `[AtomicU64]` keeps every access safe: any bit pattern is a valid
//! word, and atomic loads and stores are well defined between processes
//! (the same physical memory, the same cache coherence).

use std::ptr::NonNull;
use std::sync::atomic::AtomicU64;

use crate::{Error, Result};

/// A zero-filled shared anonymous mapping of `len` 64-bit words, unmapped
/// on drop (in the process that drops it; a forked child keeps its view).
#[derive(Debug)]
pub struct SharedWords {
    start: NonNull<AtomicU64>,
    len: usize,
}

// SAFETY: the mapping is only reached through `&[AtomicU64]`, which is
// `Sync`; the raw pointer is an address owned by this value.
unsafe impl Send for SharedWords {}
// SAFETY: as above: shared access is atomic.
unsafe impl Sync for SharedWords {}

impl SharedWords {
    /// Maps `len` zeroed words (at least one) shared with future children.
    pub fn new(len: usize) -> Result<Self> {
        let bytes = len.max(1).checked_mul(8).ok_or_else(|| {
            Error::InvalidArgument(format!("{len} shared words do not fit the address space"))
        })?;
        // SAFETY: a fresh anonymous mapping at an address the kernel chooses
        // cannot alias any existing Rust object.
        let raw = unsafe {
            rustix::mm::mmap_anonymous(
                std::ptr::null_mut(),
                bytes,
                rustix::mm::ProtFlags::READ | rustix::mm::ProtFlags::WRITE,
                rustix::mm::MapFlags::SHARED,
            )
        }
        .map_err(|errno| {
            Error::syscall(
                format!("mmap(MAP_SHARED|MAP_ANONYMOUS, {bytes} bytes)"),
                errno.into(),
            )
        })?;
        let start = NonNull::new(raw.cast::<AtomicU64>()).ok_or_else(|| {
            Error::syscall("mmap", std::io::Error::other("returned a null mapping"))
        })?;
        Ok(SharedWords {
            start,
            len: len.max(1),
        })
    }

    /// The words.
    pub fn words(&self) -> &[AtomicU64] {
        // SAFETY: the mapping holds `len` words, page aligned, zero-filled
        // by the kernel (a valid `AtomicU64` is any 8 bytes), and lives as
        // long as `self`; every access through the slice is atomic.
        unsafe { std::slice::from_raw_parts(self.start.as_ptr(), self.len) }
    }

    /// Number of words.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always false (a mapping holds at least one word).
    pub fn is_empty(&self) -> bool {
        false
    }
}

impl Drop for SharedWords {
    fn drop(&mut self) {
        // SAFETY: the mapping was created by `new` with this length and no
        // reference into it outlives `self` (`words` borrows `self`).
        let _ = unsafe { rustix::mm::munmap(self.start.as_ptr().cast(), self.len * 8) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    #[test]
    fn words_start_at_zero_and_keep_what_is_stored() {
        let shared = SharedWords::new(1000).unwrap();
        assert_eq!(shared.len(), 1000);
        assert!(
            shared
                .words()
                .iter()
                .all(|w| w.load(Ordering::Relaxed) == 0)
        );
        shared.words()[999].store(42, Ordering::Relaxed);
        assert_eq!(shared.words()[999].load(Ordering::Relaxed), 42);
    }
}
