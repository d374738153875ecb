//! Scoped SIGINT/SIGTERM handlers ([`tinct_sys::signals::SignalScope`]):
//! what a run registers while it lasts and removes after.
//!
//! One test raises signals at this process: no other test here may hold a
//! stop-then-exit scope at the same time, so the signal tests are one.

use tinct_sys::signals::{SignalScope, StopFlag};

fn raise(signal: libc::c_int) {
    // SAFETY: `raise` sends a signal to the calling thread; a handler is
    // registered for it by the scope under test.
    let rc = unsafe { libc::raise(signal) };
    assert_eq!(rc, 0);
}

#[test]
fn scopes_raise_their_flags_while_they_live_and_not_after() {
    // A supervisor's scope: every signal is a request, none ends the process.
    let requests = StopFlag::new();
    let supervisor = SignalScope::raise_each_time(&requests);
    raise(libc::SIGINT);
    assert!(requests.take(), "the first request");
    assert!(!requests.is_raised(), "taken");
    raise(libc::SIGTERM);
    assert!(requests.take(), "a second request, the process still alive");
    drop(supervisor);

    // A run's scope: the first signal raises its stop flag and the others.
    let signaled = StopFlag::new();
    let stop = StopFlag::new();
    let run = SignalScope::stop_then_exit(&signaled, &[&stop]);
    raise(libc::SIGTERM);
    assert!(signaled.is_raised() && stop.is_raised());
    assert!(
        !requests.is_raised(),
        "the dropped scope's handlers are gone"
    );
    drop(run);
    // (A second signal now would end this process with status 130: the
    // CLI's tests send a second Ctrl-C to `tinct run`.)
}

/// Every SIGINT/SIGTERM handler is registered in tinct-sys's `signals`
/// module: no other source file registers one of its own.
#[test]
fn signal_handlers_have_one_home() {
    let crates = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let home = std::path::Path::new("tinct-sys/src/signals.rs");
    let mut offenders = Vec::new();
    let mut dirs = vec![crates.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                if !path.ends_with("target") {
                    dirs.push(path);
                }
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs")
                || path.strip_prefix(&crates).unwrap() == home
                || path.ends_with("signal_scopes.rs")
            {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            if text.contains("signal_hook::flag")
                || text.contains("signal_hook::low_level::register")
            {
                offenders.push(path.display().to_string());
            }
        }
    }
    assert_eq!(
        offenders,
        Vec::<String>::new(),
        "SIGINT/SIGTERM handlers registered outside tinct_sys::signals"
    );
}
