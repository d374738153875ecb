//! Keeping coloured pages on their frames: `mlock` and what else moves
//! pages on Linux.
//!
//! A coloured page is only coloured while it stays on the frame it was
//! chosen for: a page the kernel migrates to another frame takes that
//! frame's colour, so the cache partition silently stops existing (seen in
//! CI: freshly coloured pages migrated within milliseconds). What moves an
//! anonymous page, and what tinct does about it:
//!
//! * **Reclaim (swap-out).** `mlock` keeps the page resident
//!   (`Documentation/admin-guide/mm/concepts.rst`, mlock(2)). Pools and
//!   coloured areas lock their pages by default ([`Locking::IfAllowed`]).
//! * **Compaction** (`echo 1 > /proc/sys/vm/compact_memory`, kcompactd,
//!   direct compaction of huge-page allocations): migrates mlocked pages
//!   too unless `vm.compact_unevictable_allowed = 0`
//!   (`Documentation/admin-guide/sysctl/vm.rst`, "compact_unevictable_allowed":
//!   "When set to 1, compaction is allowed to examine the unevictable lru
//!   (mlocked pages) for pages to compact"; the default is 1, and 0 on
//!   `CONFIG_PREEMPT_RT`). A global sysctl: user space can only read it;
//!   `tinct doctor` reports it with the fix.
//! * **Proactive compaction** (`vm.compaction_proactiveness`, default 20,
//!   vm.rst "compaction_proactiveness"): kcompactd compacts in the
//!   background; 0 turns it off. Same limit as above: mlocked pages move
//!   unless `compact_unevictable_allowed = 0`. Reported by `tinct doctor`.
//! * **khugepaged / THP collapse** copies small pages into a new huge page
//!   (`Documentation/admin-guide/mm/transhuge.rst`): every page of a
//!   coloured range would change frame. Coloured ranges are marked
//!   `MADV_NOHUGEPAGE` (the pool's [`crate::Pool`] region after population,
//!   the [`crate::ColoredArea`] reservation from the start), which keeps
//!   khugepaged away whatever `transparent_hugepage/enabled` says (unless
//!   it is `never`, which keeps it away too). THP `defrag=always` makes
//!   huge-page faults compact synchronously, which migrates other pages:
//!   reported by `tinct doctor`.
//! * **NUMA balancing** (`kernel.numa_balancing`,
//!   `Documentation/admin-guide/sysctl/kernel.rst`, "numa_balancing"):
//!   migrates pages towards the node that touches them. Compaction can be
//!   told to spare unevictable (mlocked) pages; other migration cannot
//!   (commit 5bbe3547aa3b "mm: allow compaction of unevictable pages":
//!   "pages which are marked as unevictable are protected from compaction,
//!   but not from other types of migration"), so locked coloured pages can
//!   move on a multi-node machine. A global sysctl, reported by
//!   `tinct doctor`; the fix is `sysctl kernel.numa_balancing=0`.
//! * **Memory hot-remove, CMA, memory failure** migrate pages too; rare on
//!   the machines tinct targets, not guarded.
//!
//! Because the global settings are the administrator's, a run checks after
//! the fact that its pages held ([`crate::frame_drift`]).

use std::ffi::c_void;

use rustix::mm;

use crate::error::MemError;

/// Whether coloured memory is `mlock`ed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Locking {
    /// Lock; when the kernel refuses (RLIMIT_MEMLOCK, no CAP_IPC_LOCK) keep
    /// the memory unlocked and record why (`unlocked_reason` of the pool
    /// or area): never a silently unlocked range.
    #[default]
    IfAllowed,
    /// Lock, and fail with the kernel's refusal and the fix.
    Required,
    /// Do not lock (the caller locks, e.g. `mlockall`, or accepts that
    /// pages may be swapped and migrated); recorded as the unlocked reason.
    Off,
}

/// The reason recorded for memory left unlocked by [`Locking::Off`].
pub const LOCKING_OFF: &str = "locking turned off by the caller";

/// The fix for a refused `mlock`, for messages.
pub const MLOCK_FIX: &str =
    "raise RLIMIT_MEMLOCK (e.g. `ulimit -l unlimited`) or grant CAP_IPC_LOCK";

/// Locks `len` bytes at `start` as `locking` asks. `Ok(None)`: locked;
/// `Ok(Some(reason))`: left unlocked, and why; `Err`: locking was
/// [`Locking::Required`] and the kernel refused.
///
/// # Safety
/// The range must be a mapping the caller owns (locking does not change
/// its contents, but it must not belong to anyone else's accounting).
pub(crate) unsafe fn lock_range(
    start: usize,
    len: usize,
    locking: Locking,
) -> Result<Option<String>, MemError> {
    if locking == Locking::Off {
        return Ok(Some(LOCKING_OFF.into()));
    }
    if len == 0 {
        return Ok(None);
    }
    // SAFETY: forwarded caller contract; mlock changes no contents.
    match unsafe { mm::mlock(start as *mut c_void, len) } {
        Ok(()) => Ok(None),
        Err(errno) if locking == Locking::IfAllowed => Ok(Some(format!(
            "mlock({len} bytes) refused: {} ({MLOCK_FIX})",
            std::io::Error::from(errno)
        ))),
        Err(errno) => Err(MemError::Os {
            call: format!("mlock({len} bytes) ({MLOCK_FIX})"),
            source: errno.into(),
        }),
    }
}

/// True if the mapping holding `address` is mlocked (`lo` in smaps), for
/// the tests of the modules that lock.
#[cfg(test)]
pub(crate) fn is_locked(address: usize) -> bool {
    let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
    let mut inside = false;
    for line in smaps.lines() {
        let range = line.split_once(' ').and_then(|(r, _)| r.split_once('-'));
        if let Some((start, end)) = range
            && let (Ok(start), Ok(end)) = (
                usize::from_str_radix(start, 16),
                usize::from_str_radix(end, 16),
            )
        {
            inside = (start..end).contains(&address);
        } else if inside && let Some(flags) = line.strip_prefix("VmFlags:") {
            return flags.split_whitespace().any(|f| f == "lo");
        }
    }
    panic!("no mapping holds {address:#x}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::region::map_private;

    #[test]
    fn off_is_recorded_and_required_locks_or_names_the_fix() {
        let page = rustix::param::page_size();
        let raw = map_private(page, false, "test").unwrap() as usize;
        // SAFETY: our own fresh mapping.
        let off = unsafe { lock_range(raw, page, Locking::Off) }.unwrap();
        assert_eq!(off.as_deref(), Some(LOCKING_OFF));
        // SAFETY: as above.
        match unsafe { lock_range(raw, page, Locking::Required) } {
            Ok(reason) => assert_eq!(reason, None, "Required never leaves a reason"),
            Err(e) => assert!(e.to_string().contains("RLIMIT_MEMLOCK"), "{e}"),
        }
        // SAFETY: as above; the range is ours and unused.
        unsafe { mm::munmap(raw as *mut c_void, page) }.unwrap();
    }
}
