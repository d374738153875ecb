//! [`ColoredBuffer`]: a safe, owned view of colored memory, so crates
//! without `unsafe` (benches, the runtime) can use colored working sets as
//! ordinary slices.

use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

use crate::error::MemError;
use crate::page_book::Modes;
use crate::shared_pool::{MIN_ALIGN, SharedPool, StepCounts};

/// A zero-filled, contiguous buffer allocated from a [`SharedPool`] and
/// freed when dropped. It dereferences to `[u8]`; [`ColoredBuffer::words`]
/// gives the same bytes as `u64` words.
#[derive(Debug)]
pub struct ColoredBuffer<'pool> {
    pool: &'pool SharedPool,
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the buffer owns its bytes exclusively (no other handle to them
// exists), and the pool it frees them to is `Sync`.
unsafe impl Send for ColoredBuffer<'_> {}
// SAFETY: shared access only reads the bytes through `&[u8]`.
unsafe impl Sync for ColoredBuffer<'_> {}

impl SharedPool {
    /// A zero-filled buffer of `len` bytes from pages of `colors` (see
    /// [`SharedPool::alloc`]; multi-page buffers take the same number of
    /// pages from each color).
    pub fn buffer(&self, colors: &[u32], len: usize) -> Result<ColoredBuffer<'_>, MemError> {
        let ptr = self.alloc(colors, len, MIN_ALIGN)?;
        Ok(ColoredBuffer::zeroed(self, ptr, len))
    }

    /// A zero-filled buffer of `len` bytes from pages of `colors` that
    /// starts on a page boundary (a thread's stack, whose first page
    /// becomes its guard).
    pub fn page_aligned_buffer(
        &self,
        colors: &[u32],
        len: usize,
    ) -> Result<ColoredBuffer<'_>, MemError> {
        let ptr = self.alloc(colors, len, self.page_size())?;
        Ok(ColoredBuffer::zeroed(self, ptr, len))
    }

    /// A zero-filled buffer of `len` bytes whose pages were chosen with
    /// chandru-mueller Algorithm 1 (see [`SharedPool::alloc_bank_span`]),
    /// and how many pages each step served.
    pub fn bank_buffer(
        &self,
        controller: u32,
        bank: u32,
        len: usize,
        modes: Modes,
    ) -> Result<(ColoredBuffer<'_>, StepCounts), MemError> {
        let span = self.alloc_bank_span(controller, bank, len, modes)?;
        Ok((ColoredBuffer::zeroed(self, span.ptr, len), span.steps))
    }
}

impl<'pool> ColoredBuffer<'pool> {
    fn zeroed(pool: &'pool SharedPool, ptr: NonNull<u8>, len: usize) -> Self {
        // SAFETY: `ptr` was just allocated with at least `len` bytes and is
        // not shared yet.
        unsafe { ptr.as_ptr().write_bytes(0, len) };
        Self { pool, ptr, len }
    }

    /// The bytes as 64-bit words (the buffer is 16-byte aligned; a
    /// trailing partial word is left out).
    pub fn words(&mut self) -> &mut [u64] {
        // SAFETY: the allocation is at least MIN_ALIGN (16) aligned, holds
        // `len` initialized bytes owned by `self`, and the returned slice
        // borrows `self` mutably, so it is the only view.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr().cast::<u64>(), self.len / 8) }
    }

    /// First byte (for translating pages through pagemap).
    pub fn as_ptr(&self) -> *const u8 {
        self.ptr.as_ptr()
    }
}

impl Deref for ColoredBuffer<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: `len` initialized bytes owned by `self` (zero-filled at
        // creation), borrowed for the lifetime of `&self`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl DerefMut for ColoredBuffer<'_> {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `deref`, with exclusive access through `&mut self`.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for ColoredBuffer<'_> {
    fn drop(&mut self) {
        let freed = self.pool.free(self.ptr);
        debug_assert!(
            freed.is_ok(),
            "a buffer frees its own allocation: {freed:?}"
        );
    }
}
