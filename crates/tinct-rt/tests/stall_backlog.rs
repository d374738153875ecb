//! A stopped process's backlog (issue 27): the run stopped (SIGSTOP) for
//! 100 ms in the middle of a job of `low`, then continued. The releases of
//! `high` that came during the stop run first, back to back, so `low` ends
//! later than the stall alone explains; those jobs were released after
//! `low`'s bound had passed, and met it only because the stall held it
//! there: the job is blamed on the host stall, never left unexplained.
//!
//! One test per file: it signals the child processes of this process.
//! It needs SCHED_FIFO (root): the sentinel's gaps are evidence only at
//! top priority.

use std::time::Duration;
use tinct_core::model::{Kernel, Work};
use tinct_core::units::Nanos;
use tinct_rt::attribution::Cause;
use tinct_rt::run_in_dir::run_in_dir;
use tinct_rt::runtime::RunOptions;
use tinct_rt::spec::{BlockingShows, Bound};
use tinct_rt::testing::{TaskBuilder, run_spec, stop_during_a_job, test_options};

const MS: u64 = 1_000_000;
const STALL: Duration = Duration::from_millis(100);

fn bound(wcet_ns: u64, wcrt_ns: u64) -> Bound {
    Bound {
        wcet_ns,
        wcrt_ns: Some(wcrt_ns),
        wcrt_nocint_ns: Some(wcrt_ns),
        blocking_ns: Some(0),
        blocking_shows: BlockingShows::Nowhere,
    }
}

#[test]
fn the_backlog_of_a_stopped_run_is_blamed_on_the_stall() {
    if !tinct_sys::testing::privileged_or_skip("a SCHED_FIFO run whose sentinel measures stalls") {
        return;
    }
    let cpu = *tinct_sys::sched::affinity().unwrap().last().unwrap();
    // `high`: 1 ms every 5 ms; `low`: 20 ms every 250 ms, its WCRT 30 ms
    // (C 25 ms and 5 of `high`'s jobs). A 100 ms stop lets about 20 of
    // `high`'s releases pile up: ~20 ms that run ahead of `low` on SIGCONT.
    let high = TaskBuilder::periodic("high", 5 * MS)
        .cpu(cpu)
        .fifo(60)
        .kernel(Kernel::Compute, Work::Target(Nanos(MS)))
        .bound(bound(2 * MS, 3 * MS))
        .build();
    let low = TaskBuilder::periodic("low", 250 * MS)
        .cpu(cpu)
        .fifo(50)
        .kernel(Kernel::Compute, Work::Target(Nanos(20 * MS)))
        .bound(bound(25 * MS, 30 * MS))
        .build();
    let spec = run_spec(vec![high, low], 1_500 * MS);
    let options = RunOptions {
        supervise: true,
        ..test_options()
    };
    // Past setup and calibration, in the middle of a job.
    let stopper = stop_during_a_job("tinct-low", STALL);
    let dir = tempfile::tempdir().unwrap();
    let recorded = run_in_dir(&spec, None, options, dir.path()).unwrap();
    let stopped_at = stopper.join().unwrap();
    assert!(
        recorded.summary.stop.is_completed(),
        "{:?}",
        recorded.summary.stop
    );

    // The job of `low` the stop hit: the longest response among those
    // that finished after it.
    let low = &recorded.result.tasks[1];
    let hit = low
        .records
        .iter()
        .filter(|r| r.finish_ns.is_some_and(|f| f > stopped_at))
        .max_by_key(|r| r.response_ns())
        .expect("a job of low finished after the process was stopped");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("summary.json")).unwrap())
            .unwrap();
    let late = summary["tasks"][1]["late"].as_array().unwrap();
    let entry = late
        .iter()
        .find(|j| j["job"].as_u64() == Some(hit.job))
        .unwrap_or_else(|| panic!("job {} of low is among the late jobs: {late:?}", hit.job));
    assert_eq!(entry["cause"], Cause::HostStall.name(), "{entry}");
    // The stall (about 100 ms) with `high`'s backlog covers it; every job
    // the stop made late is explained (another cause may be named for a
    // job a loaded host made late, but none is left unexplained).
    let explanation = entry["explanation"].as_str().unwrap();
    assert!(explanation.starts_with("host stall of "), "{entry}");
    if entry["stall_ns"].as_u64() < entry["exceedance_ns"].as_u64() {
        assert!(explanation.contains("(the stall's backlog)"), "{entry}");
    }
    assert_eq!(summary["unexplained"], 0, "{summary}");
}
