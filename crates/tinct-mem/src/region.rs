//! [`Region`]: one anonymous private mapping with 4 KiB pages only,
//! populated up front and optionally locked.

use rustix::mm::{self, Advice, MapFlags, ProtFlags};
use std::ffi::c_void;
use std::ptr::NonNull;

use crate::error::MemError;

/// How to set a region up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegionOptions {
    /// `mlock` the region (keeps frames resident; needs RLIMIT_MEMLOCK or
    /// CAP_IPC_LOCK).
    pub lock: bool,
}

/// An anonymous mapping owned by the pool, unmapped on drop.
#[derive(Debug)]
pub struct Region {
    start: NonNull<u8>,
    len: usize,
}

// SAFETY: the region is plain memory owned by this value; the raw pointer
// is only an address, and access to the bytes is coordinated by the pool.
unsafe impl Send for Region {}
// SAFETY: as above; `Region` itself offers no interior mutability.
unsafe impl Sync for Region {}

fn os_error(call: String) -> impl FnOnce(rustix::io::Errno) -> MemError {
    move |errno| MemError::Os {
        call,
        source: errno.into(),
    }
}

impl Region {
    /// Maps `len` bytes (a multiple of the page size), refuses transparent
    /// huge pages with `MADV_NOHUGEPAGE` *before* any page is touched (a
    /// huge page would put 512 consecutive frames, i.e. every color, behind
    /// one mapping), then populates every page with
    /// `MADV_POPULATE_WRITE` (or by touching, on kernels before 5.14) and
    /// locks it if asked.
    pub fn new(len: usize, options: RegionOptions) -> Result<Self, MemError> {
        let page = rustix::param::page_size();
        if len == 0 || !len.is_multiple_of(page) {
            return Err(MemError::Request(format!(
                "pool size {len} bytes: expected a non-zero multiple of the page size {page}"
            )));
        }
        // SAFETY: a fresh anonymous private mapping at an address the
        // kernel chooses cannot alias any existing Rust object.
        let raw = unsafe {
            mm::mmap_anonymous(
                std::ptr::null_mut(),
                len,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::PRIVATE,
            )
        }
        .map_err(os_error(format!("mmap(anonymous, {len} bytes)")))?;
        let region = Region {
            start: NonNull::new(raw.cast::<u8>()).expect("mmap never returns null on success"),
            len,
        };
        // SAFETY: the range is exactly the mapping created above.
        unsafe { mm::madvise(raw, len, Advice::LinuxNoHugepage) }
            .map_err(os_error(format!("madvise(MADV_NOHUGEPAGE, {len} bytes)")))?;
        region.populate()?;
        if options.lock {
            // SAFETY: locking our own mapping does not change its contents.
            unsafe { mm::mlock(raw, len) }.map_err(|errno| MemError::Os {
                call: format!(
                    "mlock({len} bytes) (raise RLIMIT_MEMLOCK, e.g. `ulimit -l unlimited`, or \
                     grant CAP_IPC_LOCK)"
                ),
                source: errno.into(),
            })?;
        }
        Ok(region)
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

    /// First byte.
    pub fn start(&self) -> *mut u8 {
        self.start.as_ptr()
    }

    /// Gives the pages `[offset, offset + len)` back to the kernel
    /// (`MADV_DONTNEED`); touching them again would fault in new frames.
    pub fn discard(&self, offset: usize, len: usize) -> Result<(), MemError> {
        assert!(offset + len <= self.len, "discard range outside the region");
        let start = self.start.as_ptr().wrapping_add(offset);
        // SAFETY: the range lies inside our mapping (asserted above); the
        // caller has retired these pages, so nothing references them.
        unsafe { mm::madvise(start.cast(), len, Advice::LinuxDontNeed) }.map_err(|errno| {
            MemError::Os {
                call: format!("madvise(MADV_DONTNEED, {start:p}, {len} bytes)"),
                source: errno.into(),
            }
        })
    }

    /// True if `address` lies inside the region.
    pub fn contains(&self, address: usize) -> bool {
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
