//! Process-wide signal dispositions a command-line tool needs: SIGPIPE's
//! default action, and the one stop request of a long measurement
//! ([`stop_on_signals`]: the first Ctrl-C asks it to stop and keep what it
//! recorded, a second one ends the process at once, as `tinct run` does).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

/// The exit status of a process ended by a second SIGINT or SIGTERM
/// (128 + SIGINT, what shells report for Ctrl-C).
pub const INTERRUPTED_EXIT_STATUS: i32 = 130;

/// A request to stop, raised once (by a signal, or by a caller) and seen by
/// every clone.
#[derive(Debug, Clone, Default)]
pub struct StopFlag(Arc<AtomicBool>);

impl StopFlag {
    /// A flag not raised, not tied to any signal.
    pub fn new() -> Self {
        Self::default()
    }

    /// Raises the flag.
    pub fn raise(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// True once the flag was raised.
    pub fn is_raised(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }

    /// The flag itself, for APIs that take an `AtomicBool`.
    pub fn shared(&self) -> Arc<AtomicBool> {
        self.0.clone()
    }
}

/// The process's stop flag, armed on the first call: the first SIGINT or
/// SIGTERM raises it (the measurement stops at its next step and writes
/// what it recorded); a second one, the flag already raised, ends the
/// process at once with [`INTERRUPTED_EXIT_STATUS`]. Later calls return the
/// same flag and register nothing more.
pub fn stop_on_signals() -> StopFlag {
    static ARMED: OnceLock<StopFlag> = OnceLock::new();
    ARMED
        .get_or_init(|| {
            let flag = StopFlag::new();
            for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
                // Registering fails only for a forbidden signal (SIGKILL,
                // SIGSTOP, ...); these two are not. The conditional exit is
                // registered first, so the signal that raises the flag does
                // not also end the process.
                let _ = signal_hook::flag::register_conditional_shutdown(
                    signal,
                    INTERRUPTED_EXIT_STATUS,
                    flag.shared(),
                );
                let _ = signal_hook::flag::register(signal, flag.shared());
            }
            flag
        })
        .clone()
}

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
    fn one_signal_raises_the_armed_flag_once_for_every_caller() {
        let flag = super::stop_on_signals();
        assert!(!flag.is_raised());
        let again = super::stop_on_signals();
        signal_hook::low_level::raise(signal_hook::consts::SIGTERM).unwrap();
        assert!(
            flag.is_raised() && again.is_raised(),
            "the same flag, raised"
        );
        // (A second signal would end the test process: not sent here; the
        // CLI's tests send a second Ctrl-C to a bench.)
    }

    #[test]
    fn a_new_flag_is_raised_by_its_caller_only() {
        let flag = super::StopFlag::new();
        let clone = flag.clone();
        assert!(!clone.is_raised());
        flag.raise();
        assert!(clone.is_raised());
        assert!(flag.shared().load(std::sync::atomic::Ordering::SeqCst));
    }

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
