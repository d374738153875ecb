//! [`PageMover`]: moves populated anonymous pages to another virtual
//! address, keeping their physical frames.
//!
//! Preferred: `UFFDIO_MOVE` (Linux 6.8, userfaultfd), which moves page-table
//! entries between two ranges of one mapping without splitting it: a range
//! built from scattered pages stays one kernel mapping, and one ioctl costs
//! about 2-5 µs per run here. The destination must be registered with the
//! userfaultfd while pages move in; it is registered only for the move and
//! unregistered right after, so a program that later leaves a hole in it
//! (`MADV_DONTNEED`) gets an ordinary zero page, never a fault that waits
//! for a handler. Fallback (older kernels, userfaultfd disabled): `mremap`
//! with `MREMAP_FIXED`, one per run, which splits the destination mapping
//! (about 14 µs per run here, and one kernel mapping per moved run).
//!
//! A userfaultfd belongs to the process that opened it: after `fork` the
//! child's copy still acts on the parent's memory, so a mover opened by
//! another process is dropped and reopened ([`PageMover::for_this_process`]).

use rustix::mm::{self, MremapFlags};
use std::ffi::c_void;

use crate::error::MemError;

/// `struct uffdio_api` of `<linux/userfaultfd.h>`.
#[repr(C)]
struct UffdioApi {
    api: u64,
    features: u64,
    ioctls: u64,
}

/// `struct uffdio_range`.
#[repr(C)]
struct UffdioRange {
    start: u64,
    len: u64,
}

/// `struct uffdio_register`.
#[repr(C)]
struct UffdioRegister {
    range: UffdioRange,
    mode: u64,
    ioctls: u64,
}

/// `struct uffdio_move`.
#[repr(C)]
struct UffdioMove {
    dst: u64,
    src: u64,
    len: u64,
    mode: u64,
    moved: i64,
}

const UFFDIO: u64 = 0xAA;
const UFFD_API: u64 = 0xAA;
const UFFD_USER_MODE_ONLY: libc::c_int = 1;
const UFFD_FEATURE_MOVE: u64 = 1 << 16;
const UFFDIO_REGISTER_MODE_MISSING: u64 = 1;

/// `_IOWR` / `_IOR` of `<asm-generic/ioctl.h>`.
const fn ioctl_number(direction: u64, number: u64, size: usize) -> u64 {
    (direction << 30) | ((size as u64) << 16) | (UFFDIO << 8) | number
}
const READ_WRITE: u64 = 3;
const READ: u64 = 2;
const UFFDIO_API_IOCTL: u64 = ioctl_number(READ_WRITE, 0x3F, size_of::<UffdioApi>());
const UFFDIO_REGISTER_IOCTL: u64 = ioctl_number(READ_WRITE, 0x00, size_of::<UffdioRegister>());
const UFFDIO_UNREGISTER_IOCTL: u64 = ioctl_number(READ, 0x01, size_of::<UffdioRange>());
const UFFDIO_MOVE_IOCTL: u64 = ioctl_number(READ_WRITE, 0x05, size_of::<UffdioMove>());

/// How pages are moved.
#[derive(Debug)]
enum Method {
    /// `UFFDIO_MOVE` on this userfaultfd, opened by process `pid`.
    Uffd { fd: libc::c_int, pid: u32 },
    /// `mremap(MREMAP_FIXED)`.
    Mremap,
}

/// Moves page runs; see the module documentation.
#[derive(Debug)]
pub struct PageMover {
    method: Method,
    /// Move calls made (one per run).
    calls: u64,
}

fn ioctl(fd: libc::c_int, request: u64, argument: *mut c_void) -> std::io::Result<()> {
    // SAFETY: every caller passes a userfaultfd and a pointer to the
    // structure `request` expects, valid for the call.
    let result = unsafe { libc::ioctl(fd, request as libc::c_ulong, argument) };
    if result == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

fn open_userfaultfd() -> Option<libc::c_int> {
    // SAFETY: userfaultfd(2) takes flags only and returns a new descriptor.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_userfaultfd,
            libc::O_CLOEXEC | libc::O_NONBLOCK | UFFD_USER_MODE_ONLY,
        )
    } as libc::c_int;
    if fd < 0 {
        return None;
    }
    let mut api = UffdioApi {
        api: UFFD_API,
        features: UFFD_FEATURE_MOVE,
        ioctls: 0,
    };
    if ioctl(fd, UFFDIO_API_IOCTL, (&mut api as *mut UffdioApi).cast()).is_err() {
        // SAFETY: closing the descriptor opened just above.
        unsafe { libc::close(fd) };
        return None;
    }
    Some(fd)
}

impl PageMover {
    /// A mover for this process: `UFFDIO_MOVE` where the kernel offers it,
    /// else `mremap`.
    pub fn new() -> Self {
        let method = match open_userfaultfd() {
            Some(fd) => Method::Uffd {
                fd,
                pid: std::process::id(),
            },
            None => Method::Mremap,
        };
        Self { method, calls: 0 }
    }

    /// This mover if it was opened by this process, else a fresh one (the
    /// child of `fork` must not use its parent's userfaultfd).
    pub fn for_this_process(&mut self) -> &mut Self {
        if let Method::Uffd { fd, pid } = self.method
            && pid != std::process::id()
        {
            // SAFETY: the descriptor is ours (inherited); closing our copy
            // leaves the parent's untouched.
            unsafe { libc::close(fd) };
            *self = Self::new();
        }
        self
    }

    /// `uffdio-move` or `mremap`, for reports.
    pub fn method(&self) -> &'static str {
        match self.method {
            Method::Uffd { .. } => "uffdio-move",
            Method::Mremap => "mremap",
        }
    }

    /// Move calls made so far (one per run).
    pub fn calls(&self) -> u64 {
        self.calls
    }

    /// Moves runs of pages (`(from, to, bytes)`, page-aligned, each `to`
    /// range inside `destination`) keeping their frames. `destination` is
    /// registered with the userfaultfd for the moves and unregistered
    /// after. On error, runs moved so far stay moved; the error names the
    /// failing run.
    ///
    /// # Safety
    /// Every `from` range must be populated anonymous private memory that
    /// nothing references; every `to` range must be unpopulated memory of
    /// an anonymous private mapping owned by the caller that nothing
    /// references (its contents are replaced).
    pub unsafe fn move_runs(
        &mut self,
        destination: (usize, usize),
        runs: &[(usize, usize, usize)],
    ) -> Result<(), MemError> {
        if runs.is_empty() {
            return Ok(());
        }
        let Method::Uffd { fd, .. } = self.method else {
            for &(from, to, bytes) in runs {
                // SAFETY: forwarded caller contract.
                unsafe { mremap_run(from, to, bytes)? };
                self.calls += 1;
            }
            return Ok(());
        };
        let mut range = UffdioRegister {
            range: UffdioRange {
                start: destination.0 as u64,
                len: destination.1 as u64,
            },
            mode: UFFDIO_REGISTER_MODE_MISSING,
            ioctls: 0,
        };
        if ioctl(
            fd,
            UFFDIO_REGISTER_IOCTL,
            (&mut range as *mut UffdioRegister).cast(),
        )
        .is_err()
        {
            // Registration refused (e.g. an mlocked range): mremap instead.
            self.method = Method::Mremap;
            // SAFETY: forwarded caller contract.
            return unsafe { self.move_runs(destination, runs) };
        }
        let mut result = Ok(());
        for &(from, to, bytes) in runs {
            let mut request = UffdioMove {
                dst: to as u64,
                src: from as u64,
                len: bytes as u64,
                mode: 0,
                moved: 0,
            };
            self.calls += 1;
            if ioctl(
                fd,
                UFFDIO_MOVE_IOCTL,
                (&mut request as *mut UffdioMove).cast(),
            )
            .is_ok()
                && request.moved == bytes as i64
            {
                continue;
            }
            // A page the kernel will not move (shared after fork, pinned):
            // move what is left of the run with mremap.
            let done = usize::try_from(request.moved.max(0)).unwrap_or(0);
            // SAFETY: forwarded caller contract; the first `done` bytes
            // have moved already.
            if let Err(error) = unsafe { mremap_run(from + done, to + done, bytes - done) } {
                result = Err(error);
                break;
            }
        }
        let mut unregister = UffdioRange {
            start: destination.0 as u64,
            len: destination.1 as u64,
        };
        let _ = ioctl(
            fd,
            UFFDIO_UNREGISTER_IOCTL,
            (&mut unregister as *mut UffdioRange).cast(),
        );
        result
    }
}

impl Default for PageMover {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for PageMover {
    fn drop(&mut self) {
        if let Method::Uffd { fd, .. } = self.method {
            // SAFETY: the descriptor is owned by this mover.
            unsafe { libc::close(fd) };
        }
    }
}

/// `mremap(from, bytes, bytes, MAYMOVE | FIXED, to)`.
///
/// # Safety
/// As [`PageMover::move_runs`].
unsafe fn mremap_run(from: usize, to: usize, bytes: usize) -> Result<(), MemError> {
    // SAFETY: the caller guarantees both ranges as described.
    unsafe {
        mm::mremap_fixed(
            from as *mut c_void,
            bytes,
            bytes,
            MremapFlags::MAYMOVE,
            to as *mut c_void,
        )
    }
    .map(drop)
    .map_err(|errno| MemError::Os {
        call: format!(
            "mremap({from:#x} -> {to:#x}, {bytes} bytes) (if ENOMEM: too many mappings, raise \
             vm.max_map_count)"
        ),
        source: errno.into(),
    })
}
