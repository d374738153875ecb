//! A run that handles signals (as `tinct run` does) and is sent SIGTERM:
//! it stops early with the reason "signal" and keeps the jobs it recorded;
//! the run's handlers are removed after it, so the next run starts clean.
//!
//! One test per file: it signals this process.

use tinct_rt::record::Accounting;
use tinct_rt::runtime::{RunOptions, run};
use tinct_rt::testing::ticking_run;
use tinct_rt::watchdog::StopReason;

fn options() -> RunOptions {
    RunOptions {
        realtime: false,
        handle_signals: true,
        sentinel: None,
        ..RunOptions::default()
    }
}

#[test]
fn a_signal_stops_the_run_and_keeps_its_records() {
    let spec = ticking_run(30_000_000_000);
    let sender = std::thread::spawn(|| {
        std::thread::sleep(std::time::Duration::from_millis(300));
        // SAFETY: sends SIGTERM to this process, whose run registered a
        // handler for it (the first signal stops the run).
        unsafe { libc::kill(libc::getpid(), libc::SIGTERM) };
    });
    let result = run(&spec, options()).unwrap();
    sender.join().unwrap();
    assert_eq!(result.stop, StopReason::Signal);
    let records = &result.tasks[0].records;
    assert!(!records.is_empty(), "the jobs before the signal are kept");
    assert!(Accounting::of(records).balances());
    let stopped_after = records.iter().map(|r| r.release_ns).max().unwrap()
        - records.iter().map(|r| r.release_ns).min().unwrap();
    assert!(
        stopped_after < 29_000_000_000,
        "the run stopped early, not at its end"
    );

    // The next run is not stopped by the signal the first one took.
    let short = ticking_run(50_000_000);
    let again = run(&short, options()).unwrap();
    assert_eq!(again.stop, StopReason::Completed);
}
