//! Helpers shared by tinct-verify's integration tests.

use std::time::Duration;
use tempfile::TempDir;
use tinct_rt::record::JobRecord;
use tinct_rt::runtime::RunOptions;
use tinct_rt::spec::TaskSpec;
use tinct_rt::testing::{run_spec, stop_during_a_job, test_options};
use tinct_verify::run_in_dir::{Recorded, run_in_dir};

/// A supervised run of `tasks` for 1.5 s into a temporary directory, its
/// process stopped for `stall` in the middle of a job of the thread `comm`
/// (past setup and calibration): the directory, what the run recorded and
/// the instant (`clock::now_ns`) all its threads were stopped. The run
/// must complete.
pub fn stalled_run(
    tasks: Vec<TaskSpec>,
    comm: &'static str,
    stall: Duration,
) -> (TempDir, Recorded, u64) {
    let spec = run_spec(tasks, 1_500_000_000);
    let options = RunOptions {
        supervise: true,
        ..test_options()
    };
    let stopper = stop_during_a_job(comm, stall);
    let dir = tempfile::tempdir().unwrap();
    let recorded = run_in_dir(&spec, None, options, dir.path()).unwrap();
    let stopped_at = stopper.join().unwrap();
    assert!(
        recorded.summary.stop.is_completed(),
        "{:?}",
        recorded.summary.stop
    );
    (dir, recorded, stopped_at)
}

/// Each job's (release, start, finish) relative to `at`, for a failure's
/// message.
pub fn jobs_relative_to(records: &[JobRecord], at: u64) -> Vec<(i128, i128, Option<i128>)> {
    let at = i128::from(at);
    records
        .iter()
        .map(|r| {
            (
                r.release_ns as i128 - at,
                r.start_ns as i128 - at,
                r.finish_ns.map(|f| f as i128 - at),
            )
        })
        .collect()
}
