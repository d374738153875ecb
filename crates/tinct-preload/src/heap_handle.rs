//! Where the process-wide heap is, once built: one pointer, published by
//! [`crate::process`] when it has built the heap, read by every module
//! that must not build it (the thread stacks, the fork handlers' helpers).
//! Kept apart from `process` so those modules need not import it.

use std::sync::atomic::{AtomicPtr, Ordering};

use crate::heap::Heap;

static HEAP: AtomicPtr<Heap> = AtomicPtr::new(std::ptr::null_mut());

/// The heap if it has been built (never builds it).
#[inline]
pub fn built_heap() -> Option<&'static Heap> {
    let ptr = HEAP.load(Ordering::Acquire);
    // SAFETY: a published heap is leaked and never freed.
    (!ptr.is_null()).then(|| unsafe { &*ptr })
}

/// Publishes the heap, built once and leaked for the life of the process.
pub fn publish(heap: &'static Heap) {
    HEAP.store(heap as *const Heap as *mut Heap, Ordering::Release);
}
