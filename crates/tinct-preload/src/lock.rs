//! [`RawLock`]: a futex mutex that never allocates, can be taken in one
//! function and released in another (as `pthread_atfork` handlers need),
//! and knows its owner so a re-entrant call can be detected instead of
//! dead-locking.
//!
//! The three-state protocol is the one of Drepper, "Futexes Are Tricky"
//! (2011), mutex take 2: 0 unlocked, 1 locked, 2 locked with waiters.

use std::cell::Cell;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering, compiler_fence};

const UNLOCKED: u32 = 0;
const LOCKED: u32 = 1;
const CONTENDED: u32 = 2;

/// A non-recursive futex mutex without a guard type.
#[derive(Debug)]
pub struct RawLock {
    state: AtomicU32,
    /// `pthread_self()` of the holder, 0 when free.
    owner: AtomicUsize,
}

impl Default for RawLock {
    fn default() -> Self {
        Self::new()
    }
}

thread_local! {
    /// The lock the calling thread is taking, from before its first try
    /// until its ownership is published (0: none). Taking the lock and
    /// publishing the owner are two steps; a signal handler that runs
    /// between them on this thread (a `_exit` that writes the reports)
    /// must still see the lock as its thread's, or it waits for itself.
    static TAKING: Cell<usize> = const { Cell::new(0) };
}

/// An identity of the calling thread that costs no system call.
pub fn thread_identity() -> usize {
    // SAFETY: pthread_self has no preconditions and never fails.
    unsafe { libc::pthread_self() as usize }
}

fn futex(word: &AtomicU32, op: libc::c_int, value: u32) {
    // SAFETY: `word` is a valid, aligned u32 for the duration of the call;
    // FUTEX_WAIT/FUTEX_WAKE on a private futex read it and touch nothing else.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            op | libc::FUTEX_PRIVATE_FLAG,
            value,
            std::ptr::null::<libc::timespec>(),
        );
    }
}

impl RawLock {
    /// An unlocked lock.
    pub const fn new() -> Self {
        Self {
            state: AtomicU32::new(UNLOCKED),
            owner: AtomicUsize::new(0),
        }
    }

    /// True if the calling thread holds the lock (a call from inside the
    /// allocator, e.g. a library function that calls malloc), or is taking
    /// it (a signal handler that interrupted [`RawLock::lock`]).
    pub fn held_by_caller(&self) -> bool {
        self.owner.load(Ordering::Relaxed) == thread_identity()
            || TAKING.with(Cell::get) == self.address()
    }

    fn address(&self) -> usize {
        self as *const Self as usize
    }

    /// Takes the lock, sleeping on the futex while another thread holds it.
    pub fn lock(&self) {
        let previous = TAKING.with(|taking| taking.replace(self.address()));
        // Seen by a handler on this thread before the lock can be ours.
        compiler_fence(Ordering::SeqCst);
        if self
            .state
            .compare_exchange(UNLOCKED, LOCKED, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            self.lock_contended();
        }
        self.owner.store(thread_identity(), Ordering::Relaxed);
        compiler_fence(Ordering::SeqCst);
        TAKING.with(|taking| taking.set(previous));
    }

    #[cold]
    fn lock_contended(&self) {
        let mut spins = 0;
        while spins < 100 {
            if self.state.load(Ordering::Relaxed) == UNLOCKED
                && self
                    .state
                    .compare_exchange(UNLOCKED, LOCKED, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                return;
            }
            std::hint::spin_loop();
            spins += 1;
        }
        while self.state.swap(CONTENDED, Ordering::Acquire) != UNLOCKED {
            futex(&self.state, libc::FUTEX_WAIT, CONTENDED);
        }
    }

    /// Releases the lock. The caller must hold it.
    pub fn unlock(&self) {
        self.owner.store(0, Ordering::Relaxed);
        if self.state.swap(UNLOCKED, Ordering::Release) == CONTENDED {
            futex(&self.state, libc::FUTEX_WAKE, 1);
        }
    }

    /// Resets the lock to unlocked without waking anyone: for the child of
    /// `fork`, where the only thread is the one that held it in the parent.
    pub fn reset_in_child(&self) {
        self.owner.store(0, Ordering::Relaxed);
        self.state.store(UNLOCKED, Ordering::Release);
    }

    /// Runs `f` with the lock held.
    pub fn with<R>(&self, f: impl FnOnce() -> R) -> R {
        self.lock();
        let result = f();
        self.unlock();
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn excludes_other_threads() {
        struct Shared {
            lock: RawLock,
            counter: std::cell::UnsafeCell<u64>,
        }
        // SAFETY: (test) `counter` is only touched with `lock` held.
        unsafe impl Sync for Shared {}
        let shared = Arc::new(Shared {
            lock: RawLock::new(),
            counter: std::cell::UnsafeCell::new(0),
        });
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let shared = Arc::clone(&shared);
                std::thread::spawn(move || {
                    for _ in 0..20_000 {
                        // SAFETY: the lock serialises every access.
                        shared.lock.with(|| unsafe { *shared.counter.get() += 1 });
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        // SAFETY: all threads joined.
        assert_eq!(unsafe { *shared.counter.get() }, 80_000);
    }

    #[test]
    fn knows_its_holder() {
        let lock = RawLock::new();
        assert!(!lock.held_by_caller());
        lock.lock();
        assert!(lock.held_by_caller());
        let other = std::thread::scope(|s| s.spawn(|| lock.held_by_caller()).join().unwrap());
        assert!(!other);
        lock.unlock();
        assert!(!lock.held_by_caller());
        lock.lock();
        lock.reset_in_child();
        assert!(!lock.held_by_caller());
        lock.lock();
        lock.unlock();
    }
}
