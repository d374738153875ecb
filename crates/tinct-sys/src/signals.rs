//! Process-wide signal dispositions a command-line tool needs.

/// Restores the default action of SIGPIPE (terminate quietly).
///
/// Rust programs start with SIGPIPE ignored, so writing to a closed pipe
/// (`tinct analyze x.toml | head`) makes `println!` panic. Command-line
/// tools expect to just stop, as `cat` does; call this first in `main`.
pub fn restore_default_sigpipe() {
    // SAFETY: `signal` with SIG_DFL installs no handler code; it only resets
    // the disposition of SIGPIPE, before any thread is started.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn sigpipe_disposition_is_default_after_restore() {
        super::restore_default_sigpipe();
        let mut old = std::mem::MaybeUninit::<libc::sigaction>::zeroed();
        // SAFETY: a null new action only queries the current disposition into `old`.
        let rc = unsafe { libc::sigaction(libc::SIGPIPE, std::ptr::null(), old.as_mut_ptr()) };
        assert_eq!(rc, 0);
        // SAFETY: sigaction succeeded and filled `old`.
        let old = unsafe { old.assume_init() };
        assert_eq!(old.sa_sigaction, libc::SIG_DFL);
    }
}
