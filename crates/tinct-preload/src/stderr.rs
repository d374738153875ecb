//! Writing to stderr from inside the allocator: no buffering, no locks,
//! no allocation, and through a saved copy of file descriptor 2 when the
//! program has closed its own (the exit summary). The heap warns through
//! it and the report prints through it; neither needs the other.

use std::sync::atomic::{AtomicI32, Ordering};

/// A copy of file descriptor 2 taken when the heap was built: programs
/// such as coreutils close stderr in an `atexit` handler, before the exit
/// summary is written.
static SAVED_STDERR: AtomicI32 = AtomicI32::new(-1);

/// Keeps a close-on-exec copy of stderr for [`write_stderr`] at exit.
pub fn save_stderr() {
    // SAFETY: F_DUPFD_CLOEXEC duplicates fd 2 (if open) into a new fd >= 100.
    let fd = unsafe { libc::fcntl(2, libc::F_DUPFD_CLOEXEC, 100) };
    if fd >= 0 {
        SAVED_STDERR.store(fd, Ordering::Relaxed);
    }
}

/// Writes `text` to stderr directly (no buffering, no locks), through the
/// saved copy if there is one.
pub fn write_stderr(text: &str) {
    let fd = match SAVED_STDERR.load(Ordering::Relaxed) {
        -1 => 2,
        saved => saved,
    };
    let mut bytes = text.as_bytes();
    while !bytes.is_empty() {
        // SAFETY: writing our own initialised buffer to a file descriptor.
        let written = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
        if written <= 0 {
            return;
        }
        bytes = &bytes[written as usize..];
    }
}
