//! `runtime::run_until` given the process's Ctrl-C flag
//! (`tinct_sys::signals::stop_on_signals`) by a caller that leaves
//! `handle_signals` on: the first SIGINT stops the run, which keeps its
//! jobs; it does not end the process (the caller's handler raises the flag
//! before the run's handler looks at it).
//!
//! One test per file: it signals this process.

use tinct_rt::record::Accounting;
use tinct_rt::runtime::{RunOptions, run_until};
use tinct_rt::testing::ticking_run;
use tinct_rt::watchdog::StopReason;

#[test]
fn the_first_ctrl_c_stops_the_run_and_not_the_process() {
    let ctrl_c = tinct_sys::signals::stop_on_signals();
    let spec = ticking_run(30_000_000_000);
    let sender = std::thread::spawn(|| {
        std::thread::sleep(std::time::Duration::from_millis(500));
        // SAFETY: sends SIGINT to this process, which registered handlers
        // for it (stop_on_signals, and the run's while it runs).
        unsafe { libc::kill(libc::getpid(), libc::SIGINT) };
    });
    let options = RunOptions {
        realtime: false,
        sentinel: None,
        ..RunOptions::default()
    };
    // Before the fix the process exited here with status 130.
    let result = run_until(&spec, options, &ctrl_c).unwrap();
    sender.join().unwrap();
    assert!(options.handle_signals);
    assert_eq!(result.stop, StopReason::Signal);
    let records = &result.tasks[0].records;
    assert!(!records.is_empty(), "the jobs before the signal are kept");
    assert!(Accounting::of(records).balances());
    assert!(records.len() < 5_000, "{} jobs: not stopped", records.len());
}
