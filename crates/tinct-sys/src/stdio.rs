//! Whether standard output was open when the process started.
//!
//! Rust's runtime, before `main`, reopens a closed descriptor 0, 1 or 2 on
//! `/dev/null`, so `tinct analyze F >&-` would "succeed" writing into
//! nothing. A constructor in `.init_array` runs before that runtime
//! start-up (the C library calls it before `main`), and records whether
//! descriptor 1 was closed; [`stdout_closed_at_start`] reads the record.

use std::sync::atomic::{AtomicBool, Ordering};

/// Set by [`record_stdout`] when descriptor 1 was not open.
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// Records whether descriptor 1 is open. Runs once, before `main`.
extern "C" fn record_stdout() {
    // SAFETY: fcntl(F_GETFD) only reads the descriptor's flags; it touches
    // no memory of this process and is async-signal-safe, so it may run
    // before the Rust runtime is set up.
    let flags = unsafe { libc::fcntl(libc::STDOUT_FILENO, libc::F_GETFD) };
    if flags == -1 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EBADF) {
        STDOUT_CLOSED.store(true, Ordering::Relaxed);
    }
}

/// The constructor the C library runs before `main` (and so before the
/// Rust runtime reopens closed standard descriptors).
#[used]
// SAFETY: `.init_array` holds `extern "C" fn()` pointers that the C library
// calls once at start-up, which `record_stdout` is; it takes no arguments
// and does not unwind.
#[unsafe(link_section = ".init_array")]
static RECORD_STDOUT: extern "C" fn() = record_stdout;

/// Whether standard output was closed when the process started (`>&-`):
/// whatever is written to it now goes to `/dev/null`, put there by the
/// Rust runtime, and would be lost without a word.
pub fn stdout_closed_at_start() -> bool {
    // Keep the constructor linked into every binary that asks.
    std::hint::black_box(&RECORD_STDOUT);
    STDOUT_CLOSED.load(Ordering::Relaxed)
}
