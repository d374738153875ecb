//! [`Region`]: one anonymous private mapping with 4 KiB page-table
//! entries only, populated up front (from transparent huge pages where
//! available, then split) and optionally locked.

use rustix::mm::{self, Advice, MapFlags, MprotectFlags, ProtFlags};
use std::ffi::c_void;
use std::ptr::NonNull;

use crate::error::MemError;
use crate::locking::{Locking, lock_range};

/// How to set a region up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RegionOptions {
    /// Whether to `mlock` the region (keeps frames resident and out of
    /// compaction's reach with `vm.compact_unevictable_allowed = 0`; needs
    /// RLIMIT_MEMLOCK or CAP_IPC_LOCK), see [`crate::locking`].
    pub lock: Locking,
    /// Populate interleaved over these NUMA nodes (`mbind(MPOL_INTERLEAVE)`),
    /// when there are two or more.
    pub interleave_nodes: Vec<u32>,
}

/// NUMA nodes with memory (`/sys/devices/system/node/has_memory`), empty
/// when the kernel has no NUMA.
pub(crate) fn memory_nodes() -> Vec<u32> {
    std::fs::read_to_string("/sys/devices/system/node/has_memory")
        .ok()
        .and_then(|text| tinct_sys::parse_cpu_list(text.trim()).ok())
        .unwrap_or_default()
}

/// `MADV_DONTNEED_LOCKED` of `<linux/mman.h>` (Linux 5.18).
const MADV_DONTNEED_LOCKED: libc::c_int = 24;

/// `MPOL_INTERLEAVE` of `<linux/mempolicy.h>`.
const MPOL_INTERLEAVE: libc::c_int = 3;

/// Binds `len` bytes at `start` to be populated round robin over `nodes`.
fn interleave(start: *mut c_void, len: usize, nodes: &[u32]) -> Result<(), MemError> {
    let highest = nodes.iter().copied().max().unwrap_or(0) as usize;
    let mut mask = vec![0u64; highest / 64 + 1];
    for &node in nodes {
        mask[node as usize / 64] |= 1 << (node % 64);
    }
    // SAFETY: mbind reads `mask` (maxnode bits) and changes only the
    // policy of our own fresh mapping; no memory is touched.
    let result = unsafe {
        libc::syscall(
            libc::SYS_mbind,
            start,
            len,
            MPOL_INTERLEAVE,
            mask.as_ptr(),
            (highest + 1) as libc::c_ulong,
            0 as libc::c_uint,
        )
    };
    if result != 0 {
        return Err(MemError::Os {
            call: format!(
                "mbind(MPOL_INTERLEAVE over nodes {}, {len} bytes)",
                tinct_sys::format_cpu_list(nodes)
            ),
            source: std::io::Error::last_os_error(),
        });
    }
    Ok(())
}

/// An anonymous mapping owned by the pool, unmapped on drop.
#[derive(Debug)]
pub(crate) struct Region {
    start: NonNull<u8>,
    len: usize,
    /// Why the region is not locked (`None`: locked).
    unlocked: Option<String>,
    /// Bytes of a locked region unlocked to be discarded (kernels before
    /// 5.18, see [`Region::discard`]): given back, and no longer locked.
    unlocked_by_discard: usize,
}

// SAFETY: the region is plain memory owned by this value; the raw pointer
// is only an address, and access to the bytes is coordinated by the pool.
unsafe impl Send for Region {}
// SAFETY: as above; `Region` itself offers no interior mutability.
unsafe impl Sync for Region {}

/// The error of the system call `call` (e.g. `mmap(anonymous, 4096 bytes)`).
pub(crate) fn os_error(call: String) -> impl FnOnce(rustix::io::Errno) -> MemError {
    move |errno| MemError::Os {
        call,
        source: errno.into(),
    }
}

/// A fresh private anonymous read-write mapping of `len` bytes at an
/// address the kernel chooses (`NORESERVE`: no swap reserved, for ranges
/// only partly backed); `what` names it in the error.
pub(crate) fn map_private(
    len: usize,
    no_reserve: bool,
    what: &str,
) -> Result<*mut c_void, MemError> {
    let flags = if no_reserve {
        MapFlags::PRIVATE | MapFlags::NORESERVE
    } else {
        MapFlags::PRIVATE
    };
    // SAFETY: a fresh anonymous private mapping at an address the kernel
    // chooses cannot alias any existing Rust object.
    unsafe {
        mm::mmap_anonymous(
            std::ptr::null_mut(),
            len,
            ProtFlags::READ | ProtFlags::WRITE,
            flags,
        )
    }
    .map_err(os_error(format!("mmap({what}, {len} bytes)")))
}

impl Region {
    /// Maps `len` bytes (a multiple of the page size), asks for
    /// transparent huge pages (physically contiguous frames), populates
    /// every page with `MADV_POPULATE_WRITE` (or by touching, on kernels
    /// before 5.14), then refuses huge pages with `MADV_NOHUGEPAGE` and
    /// splits every huge mapping into 4 KiB page-table entries (a huge
    /// mapping would put 512 consecutive frames, i.e. every color, behind
    /// one entry), and locks the region as `options.lock` asks.
    pub(crate) fn new(len: usize, options: RegionOptions) -> Result<Self, MemError> {
        let RegionOptions {
            lock,
            interleave_nodes,
        } = options;
        let page = rustix::param::page_size();
        if len == 0 || !len.is_multiple_of(page) {
            return Err(MemError::Request(format!(
                "pool size {len} bytes: expected a non-zero multiple of the page size {page}"
            )));
        }
        let raw = map_private(len, false, "anonymous")?;
        let mut region = Region {
            start: NonNull::new(raw.cast::<u8>()).expect("mmap never returns null on success"),
            len,
            unlocked: None,
            unlocked_by_discard: 0,
        };
        // Populate with transparent huge pages where the kernel gives them:
        // 2 MiB of physically contiguous frames, so consecutive colors sit
        // at consecutive virtual pages and a span over consecutive colors
        // moves in long runs (see `window`). Refused or unavailable THP
        // just means 4 KiB pages in whatever order the kernel hands out.
        // SAFETY: advice on exactly the mapping created above.
        let huge = unsafe { mm::madvise(raw, len, Advice::LinuxHugepage) }.is_ok();
        if interleave_nodes.len() > 1 {
            interleave(raw, len, &interleave_nodes)?;
        }
        region.populate()?;
        // From now on no huge page: khugepaged never collapses (migrates)
        // pool pages, and each 4 KiB page is mapped by its own page-table
        // entry, so it can be moved, released and colored on its own.
        // SAFETY: the range is exactly the mapping created above.
        unsafe { mm::madvise(raw, len, Advice::LinuxNoHugepage) }
            .map_err(os_error(format!("madvise(MADV_NOHUGEPAGE, {len} bytes)")))?;
        if huge {
            region.split_huge_mappings()?;
        }
        // SAFETY: locking our own mapping does not change its contents.
        region.unlocked = unsafe { lock_range(raw as usize, len, lock) }?;
        Ok(region)
    }

    /// Why the region is not locked (`None`: its pages are mlocked, except
    /// those [`Region::unlocked_by_discard`] counts).
    pub(crate) fn unlocked_reason(&self) -> Option<&str> {
        self.unlocked.as_deref()
    }

    /// Bytes of this locked region whose lock was dropped to discard them:
    /// a kernel before 5.18 has no `MADV_DONTNEED_LOCKED`, so
    /// [`Region::discard`] unlocks the range first (the rest of the region
    /// stays locked; pages touched again there would not be). 0 when every
    /// discard kept the lock, or the region was not locked.
    pub(crate) fn unlocked_by_discard(&self) -> usize {
        self.unlocked_by_discard
    }

    fn populate(&self) -> Result<(), MemError> {
        let raw = self.start.as_ptr().cast::<c_void>();
        // SAFETY: the range is our own mapping; populating writes nothing
        // visible (pages are zero-filled either way).
        match unsafe { mm::madvise(raw, self.len, Advice::LinuxPopulateWrite) } {
            Ok(()) => Ok(()),
            Err(rustix::io::Errno::INVAL) => {
                // Kernel before 5.14: touch one byte per page.
                let page = rustix::param::page_size();
                for offset in (0..self.len).step_by(page) {
                    // SAFETY: `offset < len`, inside our writable mapping,
                    // and nothing else references these bytes yet.
                    unsafe { self.start.as_ptr().add(offset).write_volatile(0) };
                }
                Ok(())
            }
            Err(errno) => Err(os_error(format!(
                "madvise(MADV_POPULATE_WRITE, {} bytes)",
                self.len
            ))(errno)),
        }
    }

    /// Splits every huge-page mapping of the region into 4 KiB page-table
    /// entries (the frames stay where they are): changing the protection
    /// of one page inside a 2 MiB huge mapping splits it, and changing it
    /// back lets the kernel merge the mapping again. Two system calls per
    /// 2 MiB.
    fn split_huge_mappings(&self) -> Result<(), MemError> {
        const HUGE: usize = 2 << 20;
        let page = rustix::param::page_size();
        let start = self.start.as_ptr() as usize;
        let end = start + self.len;
        let mut chunk = start.next_multiple_of(HUGE);
        while chunk + HUGE <= end {
            let address = chunk as *mut c_void;
            for protection in [
                MprotectFlags::READ,
                MprotectFlags::READ | MprotectFlags::WRITE,
            ] {
                // SAFETY: one page inside our own mapping; read access
                // stays, and write access is restored right after, before
                // anything else can use the pool.
                unsafe { mm::mprotect(address, page, protection) }.map_err(|errno| {
                    MemError::Os {
                        call: format!("mprotect({address:p}, {page} bytes) to split a huge page"),
                        source: errno.into(),
                    }
                })?;
            }
            chunk += HUGE;
        }
        Ok(())
    }

    /// First byte.
    pub(crate) fn start(&self) -> *mut u8 {
        self.start.as_ptr()
    }

    /// Gives the pages `[offset, offset + len)` back to the kernel
    /// (`MADV_DONTNEED`); touching them again would fault in new frames.
    ///
    /// A locked region refuses MADV_DONTNEED (EINVAL): MADV_DONTNEED_LOCKED
    /// (Linux 5.18) drops locked pages without unlocking, so the region
    /// stays one locked mapping; before 5.18 it is EINVAL too, and the
    /// range is unlocked first (splitting the mapping there), which
    /// [`Region::unlocked_by_discard`] records.
    pub(crate) fn discard(&mut self, offset: usize, len: usize) -> Result<(), MemError> {
        assert!(offset + len <= self.len, "discard range outside the region");
        let start = self.start.as_ptr().wrapping_add(offset);
        // SAFETY: the range lies inside our mapping (asserted above); the
        // caller has retired these pages, so nothing references them.
        if unsafe { libc::madvise(start.cast(), len, MADV_DONTNEED_LOCKED) } == 0 {
            return Ok(());
        }
        self.discard_unlocking(offset, len)
    }

    /// [`Region::discard`] when `MADV_DONTNEED_LOCKED` was refused: unlock
    /// the range if the region is locked (recorded), then `MADV_DONTNEED`.
    /// Crate-visible so tests force this path on any kernel.
    pub(crate) fn discard_unlocking(&mut self, offset: usize, len: usize) -> Result<(), MemError> {
        assert!(offset + len <= self.len, "discard range outside the region");
        let start = self.start.as_ptr().wrapping_add(offset);
        if self.unlocked.is_none() {
            // SAFETY: the range lies inside our mapping (asserted above);
            // unlocking changes no contents.
            unsafe { mm::munlock(start.cast(), len) }
                .map_err(os_error(format!("munlock({start:p}, {len} bytes)")))?;
            // At most the region's length: cannot overflow.
            self.unlocked_by_discard += len;
        }
        // SAFETY: the range lies inside our mapping; the caller has retired
        // these pages, so nothing references them.
        unsafe { mm::madvise(start.cast(), len, Advice::LinuxDontNeed) }.map_err(|errno| {
            MemError::Os {
                call: format!("madvise(MADV_DONTNEED, {start:p}, {len} bytes)"),
                source: errno.into(),
            }
        })
    }

    /// True if `address` lies inside the region.
    pub(crate) fn contains(&self, address: usize) -> bool {
        let start = self.start.as_ptr() as usize;
        address >= start && address < start + self.len
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: the mapping was created by `Region::new` and is unmapped
        // exactly once; every reference into it is tied to the pool's
        // lifetime or handed out as a raw pointer the user must not use
        // after dropping the pool.
        let _ = unsafe { mm::munmap(self.start.as_ptr().cast(), self.len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::locking::{Locking, is_locked};

    /// A kernel before 5.18 refuses `MADV_DONTNEED_LOCKED`: the fallback
    /// unlocks the discarded range, and the region and the pool's stats say
    /// so (forced here, whatever this kernel does).
    #[test]
    fn a_discard_that_unlocks_is_recorded() {
        let page = rustix::param::page_size();
        let mut region = match Region::new(
            4 * page,
            RegionOptions {
                lock: Locking::IfAllowed,
                interleave_nodes: Vec::new(),
            },
        ) {
            Ok(region) => region,
            Err(e) => panic!("a four-page region: {e}"),
        };
        if let Some(reason) = region.unlocked_reason() {
            // Not locked (no CAP_IPC_LOCK): nothing to unlock, nothing recorded.
            assert!(
                !tinct_sys::testing::privileges_required(),
                "the region could not be locked: {reason}"
            );
            region.discard_unlocking(page, page).unwrap();
            assert_eq!(region.unlocked_by_discard(), 0);
            return;
        }
        assert_eq!(region.unlocked_by_discard(), 0, "nothing discarded yet");
        region.discard_unlocking(page, 2 * page).unwrap();
        assert_eq!(region.unlocked_by_discard(), 2 * page);
        assert!(
            !is_locked(region.start() as usize + page),
            "the discarded range is no longer locked"
        );
        assert!(
            is_locked(region.start() as usize),
            "the pages kept stay locked"
        );
    }
}
