//! Real runs of the runtime, kept short (well under a second each) and
//! light. Runs that need SCHED_FIFO detect root and, with
//! TINCT_REQUIRE_PRIVILEGED=1, fail instead of skipping.

use tinct_core::model::{Kernel, Work};
use tinct_core::units::Nanos;
use tinct_rt::record::Accounting;
use tinct_rt::runtime::{RunOptions, run};
use tinct_rt::spec::{Policy, RunSpec, Step, TaskSpec};
use tinct_rt::testing::{TaskBuilder, run_spec, test_options};
use tinct_rt::watchdog::StopReason;

fn task(
    name: &str,
    cpu: u32,
    priority: u8,
    period_ms: u64,
    work: Work,
    kernel: Kernel,
    working_set: u64,
) -> TaskSpec {
    TaskBuilder::periodic(name, period_ms * 1_000_000)
        .cpu(cpu)
        .fifo(priority)
        .kernel(kernel, work)
        .working_set(working_set)
        .build()
}

fn spec(tasks: Vec<TaskSpec>, duration_ms: u64) -> RunSpec {
    run_spec(tasks, duration_ms * 1_000_000)
}

fn last_cpu() -> u32 {
    *tinct_sys::sched::affinity().unwrap().last().unwrap()
}

#[test]
fn a_light_set_meets_every_deadline_and_accounts_for_every_job() {
    if !tinct_sys::testing::privileged_or_skip("a SCHED_FIFO run") {
        return;
    }
    let s = spec(
        vec![
            task(
                "chase",
                0,
                80,
                100,
                Work::Target(Nanos(2_000_000)),
                Kernel::Chase,
                256 * 1024,
            ),
            task(
                "compute",
                last_cpu(),
                79,
                150,
                Work::Iterations(10_000),
                Kernel::Compute,
                0,
            ),
        ],
        600,
    );
    let result = run(&s, test_options()).unwrap();
    assert_eq!(result.stop, StopReason::Completed);
    assert!(result.realtime);
    for t in &result.tasks {
        let a = Accounting::of(&t.records);
        assert!(a.balances(), "{}: {a:?}", t.spec.name);
        assert_eq!(a.missed + a.aborted, 0, "{}: {a:?}", t.spec.name);
        assert!(t.error.is_none(), "{:?}", t.error);
        assert_eq!(t.scheduling, t.spec.scheduling);
        // Releases at 0, T, 2T, ... before 600 ms.
        let expected = 600u64.div_ceil(t.spec.phases[0].release_timer().unwrap().1 / 1_000_000);
        assert_eq!(a.released, expected, "{}", t.spec.name);
        for r in &t.records {
            assert!(
                r.start_ns >= r.release_ns,
                "a job started before its release"
            );
            assert!(r.finish_ns.is_some_and(|f| f >= r.start_ns));
            assert_eq!(r.cpu, t.spec.cpus.as_ref().unwrap()[0], "pinned");
            assert_eq!(
                r.policy, t.spec.scheduling.policy,
                "the policy read back from the kernel at the job"
            );
        }
    }
    let chase = &result.tasks[0];
    assert_eq!(chase.work[0].mode, "calibrated");
    assert!(chase.work[0].work.memory > 0);
    assert_eq!(result.tasks[1].work[0].mode, "fixed");
    assert_eq!(result.tasks[1].work[0].work.compute, 10_000);
}

#[test]
fn an_overloaded_task_is_stopped_by_the_watchdog_and_nothing_is_lost() {
    if !tinct_sys::testing::privileged_or_skip("a SCHED_FIFO run") {
        return;
    }
    // 20 ms period, 10 s of work per job: the first job overruns 2 × D = 40 ms.
    let s = spec(
        vec![task(
            "hog",
            last_cpu(),
            50,
            20,
            Work::Iterations(u64::MAX / 4),
            Kernel::Compute,
            0,
        )],
        2_000,
    );
    let options = RunOptions {
        handle_signals: false,
        watchdog_factor: 2.0,
        ..RunOptions::default()
    };
    let result = run(&s, options).unwrap();
    match &result.stop {
        StopReason::Overrun {
            task, job, factor, ..
        } => {
            assert_eq!((task.as_str(), *job, *factor), ("hog", 0, 2.0));
        }
        other => panic!("expected a watchdog overrun, got {other:?}"),
    }
    let a = Accounting::of(&result.tasks[0].records);
    assert!(a.balances());
    assert!(
        a.aborted >= 2,
        "the stopped job and the releases during it: {a:?}"
    );
    assert_eq!(a.completed + a.missed, 0);
}

#[test]
fn without_rt_tasks_run_under_sched_other_and_say_so() {
    let t = TaskBuilder::periodic("plain", 50_000_000)
        .cpu(0)
        .kernel(Kernel::Read, Work::Iterations(1_000))
        .working_set(64 * 1024)
        .jobs(3)
        .build();
    let s = spec(vec![t], 1_000);
    let options = RunOptions {
        realtime: false,
        handle_signals: false,
        ..RunOptions::default()
    };
    let result = run(&s, options).unwrap();
    assert!(!result.realtime);
    assert_eq!(result.tasks[0].scheduling.policy, Policy::Other);
    assert!(
        result.tasks[0]
            .records
            .iter()
            .all(|r| r.policy == Policy::Other),
        "read back per job"
    );
    let a = Accounting::of(&result.tasks[0].records);
    assert_eq!(
        (a.released, a.completed),
        (3, 3),
        "loop = 3 ends the task early"
    );
    // The summary's words for it: tinct-verify's `summarize` tests.
}

#[test]
fn a_cpu_the_process_cannot_use_is_bad_input() {
    let s = spec(
        vec![task(
            "far",
            4000,
            10,
            100,
            Work::Iterations(1),
            Kernel::Compute,
            0,
        )],
        100,
    );
    let options = RunOptions {
        realtime: false,
        handle_signals: false,
        ..RunOptions::default()
    };
    let e = run(&s, options).unwrap_err().to_string();
    assert!(e.contains("CPU 4000"), "{e}");
}

#[test]
fn a_task_that_fails_stops_the_run_and_the_others_keep_their_records() {
    if !tinct_sys::testing::privileged_or_skip("a SCHED_FIFO run") {
        return;
    }
    // SCHED_FIFO priority 0 does not exist: that task's setup fails.
    let broken = task("broken", 0, 0, 50, Work::Iterations(10), Kernel::Compute, 0);
    let fine = task(
        "fine",
        last_cpu(),
        80,
        50,
        Work::Iterations(10),
        Kernel::Compute,
        0,
    );
    let result = run(&spec(vec![fine, broken], 2_000), test_options()).unwrap();
    match &result.stop {
        StopReason::TaskFailed { task, message } => {
            assert_eq!(task, "broken");
            assert!(message.contains("priority"), "{message}");
        }
        other => panic!("expected a failed task, got {other:?}"),
    }
    assert!(result.tasks[1].error.is_some());
    for t in &result.tasks {
        assert!(Accounting::of(&t.records).balances());
    }
    // The run stopped before the common release: nothing was released.
    assert!(
        result.tasks[0].records.is_empty(),
        "{:?}",
        result.tasks[0].records
    );
}

#[test]
fn a_run_that_outlives_its_duration_is_stopped() {
    // No timer and no deadline, so no overrun can fire: only the duration
    // limit (end + 1 s grace) stops this 60 s busy job. SCHED_OTHER keeps
    // the test gentle.
    let t = TaskBuilder::periodic("endless", 1_000_000)
        .cpu(0)
        .without_timer()
        .steps(vec![Step::Busy {
            duration_ns: 60_000_000_000,
        }])
        .build();
    let s = spec(vec![t], 100);
    let options = RunOptions {
        realtime: false,
        handle_signals: false,
        ..RunOptions::default()
    };
    let result = run(&s, options).unwrap();
    assert!(
        matches!(result.stop, StopReason::DurationExceeded { .. }),
        "{:?}",
        result.stop
    );
    let a = Accounting::of(&result.tasks[0].records);
    assert_eq!((a.released, a.aborted), (1, 1));
}

#[test]
fn a_working_set_that_cannot_be_allocated_refuses_the_run_before_any_release() {
    let t = task(
        "greedy",
        0,
        1,
        10,
        Work::Iterations(1),
        Kernel::Chase,
        1 << 62,
    );
    let options = RunOptions {
        realtime: false,
        handle_signals: false,
        ..RunOptions::default()
    };
    match run(&spec(vec![t], 100), options) {
        Err(tinct_rt::RtError::Task { task, message }) => {
            assert_eq!(task, "greedy");
            assert!(message.contains("cannot allocate"), "{message}");
        }
        other => panic!("expected the run to be refused, got {other:?}"),
    }
}
