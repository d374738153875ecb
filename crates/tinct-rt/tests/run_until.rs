//! `runtime::run_until`: a caller's stop flag ends a run as a SIGINT does,
//! in this process or in a supervised child (forwarded as SIGTERM), and a
//! flag raised before the run ends it at its first release (that job is
//! still released: the task does not look at the stop before it, as after
//! a SIGINT during setup).

use tinct_rt::record::Accounting;
use tinct_rt::runtime::{RunOptions, RunResult, run_until};
use tinct_rt::testing::{test_options, ticking_run};
use tinct_rt::watchdog::StopReason;
use tinct_sys::signals::StopFlag;

/// The caller's signals stay the test harness's; no sentinel (not needed).
fn options(supervise: bool) -> RunOptions {
    RunOptions {
        realtime: false,
        sentinel: None,
        supervise,
        ..test_options()
    }
}

/// A 30 s run of one task every 5 ms, until `stop`; `raise_after` raises
/// it from another thread that long after the call (`None`: raised before).
fn run_stopped(supervise: bool, raise_after: Option<std::time::Duration>) -> RunResult {
    let spec = ticking_run(30_000_000_000);
    let stop = StopFlag::new();
    std::thread::scope(|scope| {
        match raise_after {
            None => stop.raise(),
            Some(after) => {
                let stopper = stop.clone();
                scope.spawn(move || {
                    std::thread::sleep(after);
                    stopper.raise();
                });
            }
        }
        run_until(&spec, options(supervise), &stop).unwrap()
    })
}

fn assert_stopped_early(result: &RunResult) {
    assert_eq!(
        result.stop,
        StopReason::Signal,
        "{}",
        result.stop.describe()
    );
    let records = &result.tasks[0].records;
    assert!(Accounting::of(records).balances());
    let released = records.len() as u64;
    // 30 s of jobs every 5 ms would be 6000.
    assert!(
        released < 5_000,
        "{released} jobs: the run went on to its end"
    );
}

#[test]
fn a_raised_flag_stops_an_in_process_run_and_keeps_its_jobs() {
    let result = run_stopped(false, Some(std::time::Duration::from_millis(500)));
    assert_stopped_early(&result);
}

#[test]
fn a_raised_flag_stops_a_supervised_run_and_keeps_its_jobs() {
    let result = run_stopped(true, Some(std::time::Duration::from_millis(500)));
    assert_stopped_early(&result);
}

#[test]
fn a_flag_raised_before_the_run_ends_it_at_its_first_release() {
    for supervise in [false, true] {
        let result = run_stopped(supervise, None);
        assert_stopped_early(&result);
        assert!(
            result.tasks[0].records.len() <= 1,
            "supervise {supervise}: {} jobs released after the stop",
            result.tasks[0].records.len()
        );
    }
}
