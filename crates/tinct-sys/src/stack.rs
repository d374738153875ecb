//! Running a closure on a stack of the caller's memory.
//!
//! A thread's stack is memory it touches on every job: a task whose cache
//! partitions are enforced by page colouring must have its stack in its
//! own colours too, or the stack's lines can evict another core's
//! partition (kim2013 Eq. 2 assumes they cannot). The threads library
//! places a thread's stack itself, so the runtime switches the thread onto
//! a stack taken from the task's coloured pages for the job loop, with
//! [`run_on_stack`] (stack switching by the `psm` crate, the one the Rust
//! compiler's own `stacker` uses).
//!
//! The lowest page of the given memory is a guard: it is made inaccessible
//! for the call, so an overflow faults (SIGSEGV) instead of writing below
//! the stack, and is given back readable and writable after it.

use rustix::mm::{MprotectFlags, mprotect};
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};

/// Why a stack was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StackError {
    /// The memory does not start on a page boundary.
    #[error("a stack must start on a page boundary; found address {address:#x}")]
    Unaligned {
        /// Its first byte.
        address: usize,
    },
    /// Too small for a guard page and [`MIN_STACK_BYTES`] above it.
    #[error(
        "a stack needs at least {needed} bytes (a guard page and {MIN_STACK_BYTES}); found {found}"
    )]
    TooSmall {
        /// The bytes it needs.
        needed: usize,
        /// The bytes it has.
        found: usize,
    },
    /// The guard page could not be protected.
    #[error("cannot protect the stack's guard page: {0}")]
    Guard(String),
}

/// The least usable stack [`run_on_stack`] accepts above its guard page.
pub const MIN_STACK_BYTES: usize = 64 * 1024;

/// Runs `f` on `stack` (page-aligned; its first page becomes the guard,
/// the rest the stack, growing down from its end) and returns its value.
/// A panic in `f` is caught on that stack and resumed on the caller's, so
/// it unwinds as if `f` had run here.
pub fn run_on_stack<R>(stack: &mut [u8], f: impl FnOnce() -> R) -> Result<R, StackError> {
    let page = rustix::param::page_size();
    let address = stack.as_mut_ptr() as usize;
    if !address.is_multiple_of(page) {
        return Err(StackError::Unaligned { address });
    }
    let needed = page + MIN_STACK_BYTES;
    if stack.len() < needed {
        return Err(StackError::TooSmall {
            needed,
            found: stack.len(),
        });
    }
    let usable = (stack.len() - page) / page * page;
    let guard = stack.as_mut_ptr();
    // SAFETY: `guard` is the first page of `stack`, which this call borrows
    // exclusively, so no other reference reads or writes it while it is
    // inaccessible; it is made accessible again below before the borrow
    // ends.
    unsafe { mprotect(guard.cast(), page, MprotectFlags::empty()) }
        .map_err(|e| StackError::Guard(e.to_string()))?;
    // SAFETY: the base is page-aligned (checked), the `usable` bytes above
    // the guard are writable memory this call borrows exclusively for the
    // whole of `on_stack`, and `f` cannot unwind across the switch: its
    // panic is caught on the new stack and resumed after the switch back.
    let outcome = unsafe {
        psm::on_stack(guard.add(page), usable, || {
            catch_unwind(AssertUnwindSafe(f))
        })
    };
    // SAFETY: as above: the guard page of the exclusively borrowed `stack`,
    // back to the protection the caller gave it.
    let restored = unsafe {
        mprotect(
            guard.cast(),
            page,
            MprotectFlags::READ | MprotectFlags::WRITE,
        )
    };
    let value = outcome.unwrap_or_else(|panic| resume_unwind(panic));
    restored.map_err(|e| StackError::Guard(e.to_string()))?;
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Page-aligned memory of `pages` pages (a leaked vector is enough for
    /// a test: the alignment is what matters).
    fn aligned(pages: usize) -> &'static mut [u8] {
        let page = rustix::param::page_size();
        let raw: &'static mut [u8] = Vec::leak(vec![0u8; (pages + 1) * page]);
        let skip = raw.as_ptr().align_offset(page);
        &mut raw[skip..skip + pages * page]
    }

    /// (readable, writable) of the mapping holding `address`.
    fn protection_of(address: usize) -> (bool, bool) {
        crate::footprint::mappings_of_self()
            .unwrap()
            .into_iter()
            .find(|m| m.range.contains(&address))
            .map(|m| (m.readable, m.writable))
            .unwrap()
    }

    #[test]
    fn the_closure_runs_on_the_given_stack_above_its_guard() {
        let page = rustix::param::page_size();
        let stack = aligned(32);
        let range = stack.as_ptr() as usize..stack.as_ptr() as usize + stack.len();
        let guard = range.start;
        let (local, guard_seen) = run_on_stack(stack, || {
            let local = 0u64;
            let at = std::hint::black_box(&local) as *const u64 as usize;
            (at, protection_of(guard))
        })
        .unwrap();
        assert!(
            (range.start + page..range.end).contains(&local),
            "a local at {local:#x}, the stack {range:x?}"
        );
        assert_eq!(guard_seen, (false, false), "the guard page during the call");
        assert_eq!(
            protection_of(guard),
            (true, true),
            "the guard page after it"
        );
    }

    #[test]
    fn a_panic_unwinds_to_the_caller_and_the_guard_is_given_back() {
        let stack = aligned(32);
        let guard = stack.as_ptr() as usize;
        let caught = catch_unwind(AssertUnwindSafe(|| {
            run_on_stack(stack, || panic!("in the job loop")).unwrap()
        }));
        let message = caught.unwrap_err();
        assert_eq!(message.downcast_ref::<&str>(), Some(&"in the job loop"));
        assert_eq!(protection_of(guard), (true, true));
    }

    #[test]
    fn unaligned_or_small_memory_is_refused() {
        let stack = aligned(32);
        assert!(matches!(
            run_on_stack(&mut stack[1..], || ()),
            Err(StackError::Unaligned { .. })
        ));
        assert!(matches!(
            run_on_stack(&mut stack[..8192], || ()),
            Err(StackError::TooSmall { .. })
        ));
    }
}
