//! Standard output: whether it was open when the process started, and a
//! write to it that fails.
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

/// Makes a standard output that cannot be written (a full disk,
/// `> /dev/full`) an output failure with exit status 1, not a panic (101):
/// `println!` panics with "failed printing to stdout" there. The line
/// `{program}: error: cannot write the output to stdout: {cause}` goes to
/// stderr. Any other panic keeps the default report.
pub fn exit_on_stdout_failure(program: &'static str) {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied());
        match message.and_then(|m| m.strip_prefix("failed printing to stdout: ")) {
            Some(cause) => {
                eprintln!("{program}: error: cannot write the output to stdout: {cause}");
                std::process::exit(1);
            }
            None => default(info),
        }
    }));
}

/// Writes `text` to stdout and flushes it; a reader that went away
/// (`| head`) is not an error.
pub fn write_stdout(text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}
