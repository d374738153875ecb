//! A supervised run whose process is stopped (SIGSTOP) and then killed:
//! the supervisor notices the death only later, yet counts jobs only up to
//! the run's last sign of life (the heartbeat in the shared log) — no job
//! released after the child stopped appears (issue 10 item 4: releases at
//! 610, 612, 614 ms used to be invented for a child killed at 609 ms).
//!
//! One test per file: it signals the child processes of this process.

use rustix::process::{Pid, Signal, kill_process};
use tinct_rt::clock::now_ns;
use tinct_rt::record::{Accounting, Outcome};
use tinct_rt::runtime::{RunOptions, run};
use tinct_rt::spec::Step;
use tinct_rt::testing::{TaskBuilder, child_processes, first_child, run_spec, wait_until_stopped};
use tinct_rt::watchdog::StopReason;

#[test]
fn no_job_after_the_childs_last_sign_of_life_is_counted() {
    // One long job on a 2 ms absolute grid: while it runs, releases pile up
    // (each one released, never started). A 10 s deadline keeps the
    // watchdog away.
    let late = TaskBuilder::periodic("late", 2_000_000)
        .deadline(10_000_000_000)
        .steps(vec![Step::Busy {
            duration_ns: 2_000_000_000,
        }])
        .build();
    let spec = run_spec(vec![late], 3_000_000_000);
    let options = RunOptions {
        realtime: false,
        handle_signals: false,
        supervise: true,
        ..RunOptions::default()
    };
    let stopper = std::thread::spawn(|| {
        let child = first_child(std::time::Duration::from_millis(5));
        let pid = Pid::from_raw(child).unwrap();
        // Into the job, then stop the child and note when.
        std::thread::sleep(std::time::Duration::from_millis(400));
        kill_process(pid, Signal::STOP).unwrap();
        // Stopped once every thread is (not when `kill` returns).
        wait_until_stopped(child);
        let stopped_at = now_ns();
        // The supervisor notices only after the kill, 200 ms later.
        std::thread::sleep(std::time::Duration::from_millis(200));
        kill_process(pid, Signal::KILL).unwrap();
        stopped_at
    });
    let result = run(&spec, options).unwrap();
    let stopped_at = stopper.join().unwrap();
    match &result.stop {
        StopReason::TaskFailed { message, .. } => {
            assert!(message.contains("SIGKILL"), "{message}")
        }
        other => panic!("expected the death to be reported, got {other:?}"),
    }
    let records = &result.tasks[0].records;
    let a = Accounting::of(records);
    assert!(a.balances(), "{a:?}");
    assert!(
        a.aborted >= 2,
        "the job in flight and releases during it: {a:?}"
    );
    assert!(records.iter().all(|r| r.outcome == Outcome::Aborted));
    let last = records.iter().map(|r| r.release_ns).max().unwrap();
    assert!(
        last <= stopped_at,
        "a release {} ms after the child was stopped was counted",
        (last - stopped_at) as f64 / 1e6
    );
    assert!(
        records.iter().all(|r| r.finish_ns.is_none()),
        "an aborted job has no finish time, never an invented one: {records:?}"
    );
    assert_eq!(child_processes(std::process::id()), Vec::<i32>::new());
}
