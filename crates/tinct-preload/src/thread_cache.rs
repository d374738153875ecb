//! Per-thread caches of small objects: a thread allocates and frees
//! objects of the size classes from its own lists, without a lock, and
//! only goes to the heap's central lists (one lock, a few dozen
//! instructions) for a batch at a time. No thread waits while another
//! grows the area: growth holds a lock of its own.
//!
//! Objects are linked through their first word while free (every class is
//! at least 16 bytes); the heap writes a free tag into their second word
//! (see [`crate::heap`]: how a double free is found). A cache is created on a thread's first small
//! allocation (its memory comes from the bootstrap arena), registered so
//! the exit summary can add up its counters, and given back when the
//! thread ends (a `pthread_key_create` destructor, which needs no malloc).

use std::cell::Cell;

use tinct_mem::SIZE_CLASSES;

/// Number of size classes.
pub const CLASSES: usize = SIZE_CLASSES.len();

/// Objects moved between a cache and the central lists at a time: about
/// 4 KiB worth, between 4 and 64 objects.
pub fn batch(class: usize) -> u32 {
    (4096 / SIZE_CLASSES[class]).clamp(4, 64) as u32
}

/// A singly linked list of free objects (linked through their first word).
#[derive(Debug, Clone, Copy, Default)]
pub struct ObjectList {
    /// First object (address), 0 if empty.
    pub head: usize,
    /// Objects in the list.
    pub count: u32,
}

impl ObjectList {
    /// Pushes a free object.
    ///
    /// # Safety
    /// `object` must be a free object of at least 8 bytes, 8-aligned, that
    /// nothing else uses.
    #[inline]
    pub unsafe fn push(&mut self, object: usize) {
        // SAFETY: the caller gives us the object; its first word is ours.
        unsafe { (object as *mut usize).write(self.head) };
        self.head = object;
        self.count += 1;
    }

    /// Pops an object.
    #[inline]
    pub fn pop(&mut self) -> Option<usize> {
        if self.head == 0 {
            return None;
        }
        let object = self.head;
        // SAFETY: objects in the list are free and linked by `push`.
        self.head = unsafe { (object as *const usize).read() };
        self.count -= 1;
        Some(object)
    }

    /// Moves up to `count` objects from the front of `self` to `into`.
    pub fn move_to(&mut self, into: &mut ObjectList, count: u32) {
        for _ in 0..count {
            let Some(object) = self.pop() else {
                return;
            };
            // SAFETY: `object` was just taken from a list of free objects.
            unsafe { into.push(object) };
        }
    }
}

/// What one thread counted (added to the heap's totals when the thread
/// ends or the process exits).
#[derive(Debug, Clone, Copy, Default)]
pub struct LocalCounters {
    /// Small objects handed out.
    pub small: u64,
    /// Small objects freed.
    pub small_frees: u64,
}

/// One thread's cache.
#[derive(Debug)]
pub struct ThreadCache {
    /// Free objects per size class.
    pub lists: [ObjectList; CLASSES],
    /// This thread's counts.
    pub counters: LocalCounters,
    /// The next cache in the heap's registry.
    pub next: *mut ThreadCache,
}

/// The calling thread's cache pointer: null before its first small
/// allocation, [`DEAD`] after its destructor ran.
pub fn current() -> *mut ThreadCache {
    CURRENT.with(Cell::get)
}

/// Sets the calling thread's cache pointer.
pub fn set_current(cache: *mut ThreadCache) {
    CURRENT.with(|c| c.set(cache));
}

/// The cache pointer of a thread whose cache was given back: its later
/// small allocations go to the central lists directly.
pub const DEAD: *mut ThreadCache = std::ptr::dangling_mut::<ThreadCache>();

thread_local! {
    static CURRENT: Cell<*mut ThreadCache> = const { Cell::new(std::ptr::null_mut()) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_push_pop_and_move_in_batches() {
        let mut objects = vec![0u64; 64];
        let mut list = ObjectList::default();
        for i in 0..8 {
            // SAFETY: each 64-byte slot of the vector is a free object.
            unsafe { list.push(objects.as_mut_ptr().wrapping_add(i * 8) as usize) };
        }
        assert_eq!(list.count, 8);
        let mut other = ObjectList::default();
        list.move_to(&mut other, 5);
        assert_eq!((list.count, other.count), (3, 5));
        let last = objects.as_mut_ptr().wrapping_add(7 * 8) as usize;
        assert_eq!(
            other.pop(),
            Some(objects.as_mut_ptr().wrapping_add(3 * 8) as usize)
        );
        assert_ne!(other.pop(), Some(last));
        list.move_to(&mut other, 10);
        assert_eq!((list.count, other.count), (0, 6));
        assert_eq!(list.pop(), None);
        assert_eq!(batch(0), 64);
        assert_eq!(batch(CLASSES - 1), 4);
    }
}
