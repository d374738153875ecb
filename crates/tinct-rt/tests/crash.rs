//! Crash safety of supervised runs (issue 6 item 4): a SIGSEGV in one task
//! kills the run's process, yet the supervisor returns every job recorded
//! until then, names the signal and the task, counts the jobs in flight as
//! aborted (released = completed + missed + aborted), and no thread or
//! process of the run is left behind.
//!
//! One test per file: it sets the `TINCT_TEST_CRASH` test hook in the
//! environment, which must not race with other tests.

use tinct_core::model::{Kernel, Work};
use tinct_rt::record::{Accounting, Outcome};
use tinct_rt::runtime::{RunOptions, TEST_CRASH_VAR, run};
use tinct_rt::spec::{RunSpec, TaskSpec};
use tinct_rt::testing::{TaskBuilder, child_processes, run_spec, test_options};
use tinct_rt::watchdog::StopReason;

fn task(name: &str, cpu: u32, priority: u8, period_ms: u64) -> TaskSpec {
    TaskBuilder::periodic(name, period_ms * 1_000_000)
        .cpu(cpu)
        .fifo(priority)
        .kernel(Kernel::Chase, Work::Iterations(20_000))
        .working_set(256 * 1024)
        .build()
}

#[test]
fn a_crashing_task_is_reported_and_every_recorded_job_is_kept() {
    if !tinct_sys::testing::privileged_or_skip("a supervised SCHED_FIFO run") {
        return;
    }
    let cpus = tinct_sys::sched::affinity().unwrap();
    let spec = RunSpec {
        source: "crash test".into(),
        ..run_spec(
            vec![
                task("steady", cpus[0], 80, 10),
                task("faulty", *cpus.last().unwrap(), 79, 20),
            ],
            2_000_000_000,
        )
    };
    let options = RunOptions {
        supervise: true,
        ..test_options()
    };

    // Without the hook, a supervised run is an ordinary run.
    let mut short = spec.clone();
    short.duration_ns = 200_000_000;
    let calm = run(&short, options).unwrap();
    assert_eq!(calm.stop, StopReason::Completed);
    for t in &calm.tasks {
        let a = Accounting::of(&t.records);
        assert!(a.balances() && a.released > 0 && a.aborted == 0, "{a:?}");
        assert_eq!(t.work[0].mode, "fixed", "the child's report arrived");
    }

    // SAFETY: this is the only test of this binary, so no other thread
    // reads the environment concurrently.
    unsafe { std::env::set_var(TEST_CRASH_VAR, "faulty:5") };
    let crashed = run(&spec, options).unwrap();
    // SAFETY: as above.
    unsafe { std::env::remove_var(TEST_CRASH_VAR) };

    match &crashed.stop {
        StopReason::TaskFailed { task, message } => {
            assert_eq!(task, "faulty");
            assert!(message.contains("SIGSEGV"), "{message}");
        }
        other => panic!("expected the crash to be reported, got {other:?}"),
    }
    let faulty = &crashed.tasks[1];
    assert!(faulty.error.as_deref().unwrap().contains("SIGSEGV"));
    let a = Accounting::of(&faulty.records);
    assert!(a.balances(), "{a:?}");
    assert_eq!(a.completed + a.missed, 5, "jobs 0..5 finished: {a:?}");
    let in_flight = faulty.records.iter().find(|r| r.job == 5).unwrap();
    assert_eq!(in_flight.outcome, Outcome::Aborted);
    assert!(in_flight.started(), "job 5 had started when it crashed");
    // The other task kept what it recorded before the crash (about 100 ms).
    let steady = Accounting::of(&crashed.tasks[0].records);
    assert!(steady.balances(), "{steady:?}");
    assert!(steady.completed >= 5, "{steady:?}");
    assert!(crashed.start_ns > 0);
    // Where the working sets were is known from before the release, their
    // frames included (read as root, carried from the child).
    for t in &crashed.tasks {
        match &t.placement {
            tinct_rt::memory::Placement::Heap { bytes, frames } => {
                assert_eq!(*bytes, 256 * 1024);
                assert!((64..=65).contains(&frames.len()), "{}", frames.len());
            }
            other => panic!("expected a heap working set, got {other:?}"),
        }
    }
    // Nothing of the run is left: the child was reaped, threads died with it.
    assert_eq!(child_processes(std::process::id()), Vec::<i32>::new());
}
