//! Process-wide signal dispositions a command-line tool needs: SIGPIPE's
//! default action, and the stop requests of a long measurement. Every
//! SIGINT/SIGTERM handler of tinct is registered here:
//! - [`stop_on_signals`]: the process's one stop flag (benches, `tinct
//!   monitor`): the first Ctrl-C asks to stop and keep what was recorded,
//!   a second one ends the process at once;
//! - [`SignalScope`]: the same rule for one run's own flags, held while the
//!   run lasts (`tinct run`'s runtime), or a flag raised by every signal
//!   for a supervisor that escalates by itself, or the last of
//!   [`PASSED_ON_SIGNALS`] received, for a supervisor that passes each on
//!   to the program it waits for (`tinct exec`).
//!
//! The handlers only store to atomics or call `_exit` (signal-hook's
//! `flag` actions): async-signal-safe, and nothing allocates once
//! registered.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
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

    /// A flag over an existing `AtomicBool` (raising one raises the other).
    pub fn sharing(flag: Arc<AtomicBool>) -> Self {
        Self(flag)
    }

    /// Lowers the flag; true if it was raised (each raise is taken once).
    pub fn take(&self) -> bool {
        self.0.swap(false, Ordering::SeqCst)
    }
}

/// SIGINT and SIGTERM handlers held for a scope (one run), removed when
/// dropped (signals then reach the handlers registered before it, if any).
///
/// Once the last scope is dropped, a SIGINT or SIGTERM is ignored, not
/// fatal: signal-hook keeps its handler installed with no action left
/// (`signal_hook_registry::unregister` does not restore the default). A
/// program that runs on afterwards and wants Ctrl-C back holds
/// [`stop_on_signals`] (or its own handler): `tinct run` arms it when the
/// run ends, so that while the run's files are made a first Ctrl-C lets
/// them be written and a second ends the process at once.
#[derive(Debug)]
#[must_use = "the handlers are removed when the scope is dropped"]
pub struct SignalScope {
    ids: Vec<signal_hook::SigId>,
}

impl SignalScope {
    /// The first SIGINT or SIGTERM raises `stop` and every flag of `also`;
    /// a second one, `stop` already raised, ends the process at once with
    /// [`INTERRUPTED_EXIT_STATUS`].
    pub fn stop_then_exit(stop: &StopFlag, also: &[&StopFlag]) -> Self {
        let mut ids = Vec::new();
        for signal in STOP_SIGNALS {
            // Registering fails only for a forbidden signal (SIGKILL,
            // SIGSTOP, ...); these two are not. The conditional exit is
            // registered first (signal-hook runs a signal's actions in
            // registration order), so the signal that raises `stop` does
            // not also end the process.
            ids.extend(
                signal_hook::flag::register_conditional_shutdown(
                    signal,
                    INTERRUPTED_EXIT_STATUS,
                    stop.shared(),
                )
                .ok(),
            );
            for flag in std::iter::once(stop).chain(also.iter().copied()) {
                ids.extend(signal_hook::flag::register(signal, flag.shared()).ok());
            }
        }
        Self { ids }
    }

    /// Every SIGINT or SIGTERM raises `each`, and none ends the process:
    /// for a supervisor that [`StopFlag::take`]s each request and escalates
    /// by itself (forward a stop to its child, then kill it).
    pub fn raise_each_time(each: &StopFlag) -> Self {
        let ids = STOP_SIGNALS
            .into_iter()
            .filter_map(|signal| signal_hook::flag::register(signal, each.shared()).ok())
            .collect();
        Self { ids }
    }
}

impl SignalScope {
    /// Every one of [`PASSED_ON_SIGNALS`] stores its number in `last`, and
    /// none ends the process: for a supervisor that passes each signal on
    /// to the program it waits for ([`crate::supervise::SignalRelay`]).
    pub fn note_each(last: &Arc<AtomicUsize>) -> Self {
        let ids = PASSED_ON_SIGNALS
            .into_iter()
            .filter_map(|signal| {
                signal_hook::flag::register_usize(signal, last.clone(), signal as usize).ok()
            })
            .collect();
        Self { ids }
    }
}

/// The signals a supervisor passes on to the program it waits for: those
/// that ask a process to end (a terminal's Ctrl-C, `kill`, a closed
/// terminal).
pub const PASSED_ON_SIGNALS: [i32; 3] = [
    signal_hook::consts::SIGINT,
    signal_hook::consts::SIGTERM,
    signal_hook::consts::SIGHUP,
];

impl Drop for SignalScope {
    fn drop(&mut self) {
        for id in self.ids.drain(..) {
            signal_hook::low_level::unregister(id);
        }
    }
}

/// The signals that ask a measurement to stop.
const STOP_SIGNALS: [i32; 2] = [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM];

/// The process's stop flag, armed on the first call: the first SIGINT or
/// SIGTERM raises it (the measurement stops at its next step and writes
/// what it recorded); a second one, the flag already raised, ends the
/// process at once with [`INTERRUPTED_EXIT_STATUS`]. Later calls return the
/// same flag and register nothing more.
pub fn stop_on_signals() -> StopFlag {
    // The scope lives in the static: registered for the whole process.
    static ARMED: OnceLock<(StopFlag, SignalScope)> = OnceLock::new();
    ARMED
        .get_or_init(|| {
            let flag = StopFlag::new();
            let scope = SignalScope::stop_then_exit(&flag, &[]);
            (flag, scope)
        })
        .0
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
