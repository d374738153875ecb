//! The event engine's semantics, checked from the per-job records of real
//! runs (rt-app workloads written inline): signals order producers and
//! consumers, priority inheritance bounds blocking, barriers release all
//! parties together, a shared timer alternates its threads, re-entered
//! phases keep `t_next += period`, release jitter stays in its bounds, and
//! the policy in force is read back per job. Orderings and counts only,
//! never absolute times (a noisy shared VM): threads are ordered by the
//! engine's own signals, not by release offsets.

use tinct_rt::record::{Accounting, JobRecord, Outcome};
use tinct_rt::runtime::{RunOptions, RunResult, run};
use tinct_rt::spec::{Policy, WatchdogMode};
use tinct_rt::testing::{records, test_options};
use tinct_rt::watchdog::StopReason;
use tinct_sys::testing::{privileged_serial, serial};

const MS: u64 = 1_000_000;

fn run_rtapp(text: &str, duration_ns: u64) -> RunResult {
    let file = tinct_rt::rtapp::parse(text, "inline.json", duration_ns).unwrap();
    let result = run(&file.spec, test_options()).unwrap();
    for task in &result.tasks {
        let a = Accounting::of(&task.records);
        assert!(a.balances(), "{}: {a:?}", task.spec.name);
    }
    result
}

fn finished(records: &[JobRecord]) -> Vec<JobRecord> {
    records
        .iter()
        .filter(|r| r.finish_ns.is_some() && r.outcome != Outcome::Aborted)
        .copied()
        .collect()
}

#[test]
fn a_consumer_never_runs_before_its_producers_signal() {
    let Some(_serial) = privileged_serial("SCHED_FIFO threads") else {
        return;
    };
    let result = run_rtapp(
        r#"{ "tasks": {
          "producer": { "policy": "SCHED_FIFO", "priority": 20, "cpus": [0],
                        "runtime": 2000, "signal": "ready",
                        "timer": { "ref": "p", "period": 10000 } },
          "consumer": { "policy": "SCHED_FIFO", "priority": 30, "cpus": [1],
                        "lock": "m", "wait": { "ref": "ready", "mutex": "m" },
                        "unlock": "m", "runtime": 1000 } } }"#,
        400 * MS,
    );
    let producer = finished(records(&result, "producer"));
    let consumer = finished(records(&result, "consumer"));
    assert!(producer.len() >= 10, "{}", producer.len());
    assert!(
        consumer.len() >= 5,
        "the consumer woke on signals: {}",
        consumer.len()
    );
    assert!(
        consumer.len() <= producer.len(),
        "one wake-up per signal at most"
    );
    for (i, c) in consumer.iter().enumerate() {
        // The producer's signal comes after its runtime step: no earlier
        // than its start plus its run time. The consumer's work (its
        // runtime step) starts no later than its finish minus its run time.
        let signal_not_before = producer[i].start_ns + producer[i].run_ns;
        let work_started_by = c.finish_ns.unwrap() - c.run_ns;
        assert!(
            work_started_by >= signal_not_before,
            "consumer job {i} ran {} µs before the producer's signal",
            (signal_not_before - work_started_by) / 1000
        );
    }
}

/// Runs the priority-inversion scenario on one CPU: `low` locks `m`, then
/// wakes `high` and `medium` (`broad` from inside its section, so both are
/// released while `m` is held, whatever the host's timing) and computes
/// 20 ms before it unlocks; `high` wants `m` at once, `medium` (no lock)
/// computes 60 ms. Returns the instants `high` and `medium` finished.
fn inversion(pi: bool) -> (u64, u64) {
    let result = run_rtapp(
        &format!(
            r#"{{ "global": {{ "pi_enabled": {pi} }}, "tasks": {{
              "low":    {{ "policy": "SCHED_FIFO", "priority": 10, "cpus": [0], "loop": 1,
                          "lock": "m", "broad": "go", "runtime": 20000, "unlock": "m" }},
              "high":   {{ "policy": "SCHED_FIFO", "priority": 30, "cpus": [0], "loop": 1,
                          "lock0": "h", "wait": {{ "ref": "go", "mutex": "h" }}, "unlock0": "h",
                          "lock1": "m", "runtime": 1000, "unlock1": "m" }},
              "medium": {{ "policy": "SCHED_FIFO", "priority": 20, "cpus": [0], "loop": 1,
                          "lock": "w", "wait": {{ "ref": "go", "mutex": "w" }}, "unlock": "w",
                          "runtime": 60000 }} }} }}"#
        ),
        500 * MS,
    );
    let finish = |name: &str| {
        let done = finished(records(&result, name));
        assert_eq!(done.len(), 1, "{name}: {:?}", records(&result, name));
        done[0].finish_ns.unwrap()
    };
    (finish("high"), finish("medium"))
}

#[test]
fn priority_inheritance_bounds_blocking_by_the_critical_section() {
    let Some(_serial) = privileged_serial("SCHED_FIFO threads") else {
        return;
    };
    // With PI, low runs its section at high's priority: medium cannot
    // preempt it, and high is done before medium's 60 ms.
    let (high, medium) = inversion(true);
    assert!(
        high < medium,
        "under PI high finished {} ms after medium",
        (high - medium) / MS
    );
    // Without, medium preempts the holder and high waits for all of
    // medium's work (unbounded inversion).
    let (high, medium) = inversion(false);
    assert!(
        high > medium,
        "without PI medium must delay high: high finished {} ms before medium",
        (medium - high) / MS
    );
}

#[test]
fn a_barrier_releases_all_parties_together() {
    let _serial = serial();
    let result = run_rtapp(
        r#"{ "tasks": {
          "quick": { "loop": 20, "runtime": 1000, "barrier": "B" },
          "slow":  { "loop": 20, "runtime": 5000, "barrier": "B" } } }"#,
        2_000 * MS,
    );
    let quick = finished(records(&result, "quick"));
    let slow = finished(records(&result, "slow"));
    assert_eq!((quick.len(), slow.len()), (20, 20));
    for (q, s) in quick.iter().zip(&slow) {
        // Each leaves the barrier only once the other arrived.
        let slow_arrived = s.start_ns + s.run_ns;
        let quick_arrived = q.start_ns + q.run_ns;
        assert!(q.finish_ns.unwrap() >= slow_arrived, "job {}", q.job);
        assert!(s.finish_ns.unwrap() >= quick_arrived, "job {}", s.job);
    }
}

#[test]
fn a_shared_timer_alternates_its_threads() {
    let _serial = serial();
    let result = run_rtapp(
        r#"{ "tasks": {
          "a": { "runtime": 500, "timer": { "ref": "t", "period": 50000, "mode": "absolute" } },
          "b": { "runtime": 500, "timer": { "ref": "t", "period": 50000, "mode": "absolute" } } } }"#,
        800 * MS,
    );
    // After the common first release, every tick of the one timer releases
    // the thread that used it: 50 ms apart, a and b in turn.
    let mut ticks: Vec<(u64, &str)> = Vec::new();
    for name in ["a", "b"] {
        for r in records(&result, name).iter().skip(1) {
            ticks.push((r.release_ns, name));
        }
    }
    ticks.sort();
    assert!(ticks.len() >= 10, "{}", ticks.len());
    for pair in ticks.windows(2) {
        assert_eq!(pair[1].0 - pair[0].0, 50 * MS, "{pair:?}");
        assert_ne!(pair[0].1, pair[1].1, "the same thread twice: {pair:?}");
    }
    let a = records(&result, "a");
    assert_eq!(
        a[2].release_ns - a[1].release_ns,
        100 * MS,
        "each thread: 2 periods"
    );
}

#[test]
fn re_entered_phases_keep_t_next_plus_period() {
    let _serial = serial();
    // Absolute timers: the grid is the property under test. In relative
    // mode (rt-app's default) a job made late by a host stall restarts
    // the grid from "now", which this test once saw on a loaded VM.
    let result = run_rtapp(
        r#"{ "tasks": { "p": { "loop": 3, "phases": {
          "one": { "loop": 2, "runtime": 1000, "timer": { "ref": "t", "period": 10000, "mode": "absolute" } },
          "two": { "loop": 1, "runtime": 2000, "timer": { "ref": "t", "period": 10000, "mode": "absolute" } } } } } }"#,
        500 * MS,
    );
    let r = records(&result, "p");
    assert_eq!(r.len(), 9, "3 passes of 2 + 1 jobs");
    let first = r[0].release_ns;
    for (k, job) in r.iter().enumerate() {
        assert_eq!(
            job.release_ns - first,
            k as u64 * 10 * MS,
            "job {k} (phase {}): one grid across phases and passes",
            job.phase
        );
    }
    let phases: Vec<u32> = r.iter().map(|j| j.phase).collect();
    assert_eq!(phases, [0, 0, 1, 0, 0, 1, 0, 0, 1]);
}

#[test]
fn release_jitter_is_seeded_bounded_and_recorded() {
    let _serial = serial();
    use tinct_rt::testing::{TaskBuilder, run_spec};
    let task = TaskBuilder::periodic("j", 5 * MS)
        .jitter(2 * MS)
        .jobs(40)
        .build();
    let spec = run_spec(vec![task], 400 * MS);
    let result = run(&spec, test_options()).unwrap();
    let r = &result.tasks[0].records;
    assert_eq!(r.len(), 40);
    assert!(r.iter().all(|j| j.jitter_ns <= 2 * MS));
    assert!(r.iter().all(|j| j.start_ns >= j.release_ns + j.jitter_ns));
    let distinct: std::collections::BTreeSet<u64> = r.iter().map(|j| j.jitter_ns).collect();
    assert!(distinct.len() > 20, "random offsets: {distinct:?}");
    // The same seed gives the same offsets.
    let again = run(&spec, test_options()).unwrap();
    let offsets = |r: &[JobRecord]| r.iter().map(|j| j.jitter_ns).collect::<Vec<_>>();
    assert_eq!(offsets(r), offsets(&again.tasks[0].records));
}

#[test]
fn the_policy_in_force_is_read_back_per_job_and_phase() {
    let Some(_serial) = privileged_serial("real-time and nice policies") else {
        return;
    };
    let result = run_rtapp(
        r#"{ "tasks": { "t": { "loop": 1, "phases": {
          "nice":  { "loop": 2, "priority": 5, "runtime": 200 },
          "fifo":  { "loop": 2, "policy": "SCHED_FIFO", "priority": 21, "runtime": 200 },
          "rr":    { "loop": 2, "policy": "SCHED_RR", "priority": 22, "runtime": 200 },
          "batch": { "loop": 2, "policy": "SCHED_BATCH", "priority": -3, "runtime": 200 },
          "idle":  { "loop": 2, "policy": "SCHED_IDLE", "runtime": 200 } } } } }"#,
        1_000 * MS,
    );
    let seen: Vec<(Policy, i8)> = records(&result, "t")
        .iter()
        .map(|r| (r.policy, r.nice))
        .collect();
    assert_eq!(
        seen,
        [
            (Policy::Other, 5),
            (Policy::Other, 5),
            (Policy::Fifo(21), 0),
            (Policy::Fifo(21), 0),
            (Policy::RoundRobin(22), 0),
            (Policy::RoundRobin(22), 0),
            (Policy::Batch, -3),
            (Policy::Batch, -3),
            (Policy::Idle, 0),
            (Policy::Idle, 0),
        ]
    );
}

#[test]
fn a_deadline_thread_runs_under_its_reservation() {
    let Some(_serial) = privileged_serial("SCHED_DEADLINE") else {
        return;
    };
    let result = run_rtapp(
        r#"{ "tasks": { "dl": { "policy": "SCHED_DEADLINE", "dl-runtime": 3000,
          "dl-period": 20000, "runtime": 1000, "timer": { "ref": "t", "period": 20000 } } } }"#,
        200 * MS,
    );
    let r = records(&result, "dl");
    assert!(r.len() >= 5);
    assert!(
        r.iter()
            .filter(|j| j.started())
            .all(|j| j.policy == Policy::Deadline)
    );
}

/// A SCHED_DEADLINE job runs above the sentinels (SCHED_FIFO 99), so it
/// delays the sentinel of its CPU for as long as it runs; that is not the
/// host's stall. A reservation busy 7 ms of every 10 ms would, uncorrected,
/// make the sentinels record about 0.65 of the run as stalls; the time the
/// sentinel waited runnable behind it (its run delay) is taken off, so
/// what is left is the host's own, which stays far below 0.3 of the run
/// unless the host is stealing a third of the machine.
#[test]
fn a_deadline_job_that_delays_the_sentinel_is_no_host_stall() {
    let Some(_serial) = privileged_serial("SCHED_DEADLINE") else {
        return;
    };
    if tinct_sys::usage::RunDelay::of_current_thread().is_none() {
        // Then the sentinels of CPUs with reservations do not watch, and
        // there is nothing to measure.
        eprintln!("skipped: this kernel keeps no run delay (/proc/thread-self/schedstat)");
        return;
    }
    let duration = 1_000 * MS;
    let result = run_rtapp(
        r#"{ "tasks": { "dl": { "policy": "SCHED_DEADLINE", "dl-runtime": 8000,
          "dl-period": 10000, "runtime": 7000, "timer": { "ref": "t", "period": 10000 } } } }"#,
        duration,
    );
    let busy: u64 = records(&result, "dl").iter().map(|j| j.exec_ns).sum();
    assert!(busy > duration / 3, "the reservation ran {busy} ns");
    let sentinel = result.sentinel.as_ref().expect("the sentinels ran");
    assert!(
        sentinel.cpus.iter().all(|c| c.wakes > 0),
        "every CPU watched: {sentinel:?}"
    );
    let stalled: u64 = sentinel.cpus.iter().map(|c| c.stalled_ns()).sum();
    assert!(
        stalled < duration * 3 / 10,
        "{stalled} ns of stalls in a {duration} ns run beside {busy} ns of SCHED_DEADLINE work: {sentinel:?}"
    );
}

/// A deadline thread pinned to one CPU runs there, in a root domain of
/// that CPU alone (`tinct_sys::dl_partitions`), not on every CPU.
#[test]
fn a_deadline_thread_pinned_to_one_cpu_runs_there() {
    let Some(_serial) = privileged_serial("SCHED_DEADLINE in a cpuset partition") else {
        return;
    };
    if let Err(e) = tinct_sys::dl_partitions::v1_mount_point() {
        eprintln!("skipped: partitions need the cpuset controller on cgroup v1: {e}");
        return;
    }
    let cpu = *tinct_sys::sched::affinity().unwrap().last().unwrap();
    let result = run_rtapp(
        &format!(
            r#"{{ "tasks": {{ "dl": {{ "policy": "SCHED_DEADLINE", "dl-runtime": 3000,
              "dl-period": 20000, "cpus": [{cpu}], "runtime": 1000,
              "timer": {{ "ref": "t", "period": 20000 }} }} }} }}"#
        ),
        200 * MS,
    );
    let r = records(&result, "dl");
    assert!(r.len() >= 5, "{} jobs", r.len());
    for job in r.iter().filter(|j| j.started()) {
        assert_eq!(job.policy, Policy::Deadline);
        assert_eq!((job.cpu, job.cpu_end), (cpu, cpu), "job {}", job.job);
    }
}

/// A run with partitions refuses, before any thread starts, deadline
/// threads that could not live in them: one that leaves its partition in
/// a later phase, and one not pinned beside pinned ones.
#[test]
fn deadline_threads_that_cannot_live_in_partitions_are_refused() {
    let Some(_serial) = privileged_serial("SCHED_DEADLINE in a cpuset partition") else {
        return;
    };
    let refused = |text: &str| {
        let file = tinct_rt::rtapp::parse(text, "inline.json", 100 * MS).unwrap();
        match run(&file.spec, test_options()) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("ran: {text}"),
        }
    };
    let leaves = refused(
        r#"{ "tasks": { "dl": { "policy": "SCHED_DEADLINE", "dl-runtime": 3000,
          "dl-period": 20000, "cpus": [0], "phases": {
            "a": { "run": 1000, "timer": { "ref": "t", "period": 20000 } },
            "b": { "policy": "SCHED_FIFO", "priority": 10, "run": 1000,
                   "timer": { "ref": "t", "period": 20000 } } } } } }"#,
    );
    assert!(
        leaves.contains("SCHED_DEADLINE on CPU 0 in every phase"),
        "{leaves}"
    );
    let unpinned = refused(
        r#"{ "tasks": {
          "pinned": { "policy": "SCHED_DEADLINE", "dl-runtime": 3000, "dl-period": 20000,
            "cpus": [0], "run": 1000, "timer": { "ref": "a", "period": 20000 } },
          "free": { "policy": "SCHED_DEADLINE", "dl-runtime": 3000, "dl-period": 20000,
            "run": 1000, "timer": { "ref": "b", "period": 20000 } } } }"#,
    );
    assert!(
        unpinned.contains("task 'free'") && unpinned.contains("one CPU for every SCHED_DEADLINE"),
        "{unpinned}"
    );
}

#[test]
fn the_watchdog_guards_real_time_jobs_only_by_default_and_can_be_off() {
    let Some(_serial) = privileged_serial("SCHED_FIFO threads") else {
        return;
    };
    // A job of 60 ms against a 10 ms period: 6 × its deadline.
    let overloaded = |policy: &str| {
        format!(
            r#"{{ "tasks": {{ "t": {{ "policy": "{policy}", "loop": 2, "runtime": 60000,
                "timer": {{ "ref": "t", "period": 10000 }} }} }} }}"#
        )
    };
    let with = |text: &str, watchdog: WatchdogMode| {
        let file = tinct_rt::rtapp::parse(text, "inline.json", 300 * MS).unwrap();
        run(
            &file.spec,
            RunOptions {
                handle_signals: false,
                watchdog,
                ..RunOptions::default()
            },
        )
        .unwrap()
        .stop
    };
    assert!(matches!(
        with(&overloaded("SCHED_FIFO"), WatchdogMode::Realtime),
        StopReason::Overrun { .. }
    ));
    assert_eq!(
        with(&overloaded("SCHED_OTHER"), WatchdogMode::Realtime),
        StopReason::Completed,
        "a SCHED_OTHER job is not guarded by default"
    );
    assert!(matches!(
        with(&overloaded("SCHED_OTHER"), WatchdogMode::All),
        StopReason::Overrun { .. }
    ));
    assert_eq!(
        with(&overloaded("SCHED_FIFO"), WatchdogMode::Off),
        StopReason::Completed
    );
    // rt-app's deadline_no_reclaim-3 shape, overloaded further: 60 ms of
    // work on a reservation of 10 ms every 30 ms takes about 180 ms, six
    // times its deadline. The kernel's CBS throttles it, so by default it
    // runs to its end; `--watchdog all` still guards it.
    let deadline = r#"{ "tasks": { "dl": { "policy": "SCHED_DEADLINE", "loop": 2,
        "dl-runtime": 10000, "dl-period": 30000, "dl-deadline": 30000,
        "run": 60000, "timer": { "ref": "t", "period": 30000 } } } }"#;
    assert_eq!(
        with(deadline, WatchdogMode::Realtime),
        StopReason::Completed,
        "a SCHED_DEADLINE job is throttled by the kernel, not stopped by default"
    );
    assert!(matches!(
        with(deadline, WatchdogMode::All),
        StopReason::Overrun { .. }
    ));
}

#[test]
fn threads_blocked_at_the_end_are_let_go_and_their_jobs_aborted() {
    let _serial = serial();
    let result = run_rtapp(
        r#"{ "tasks": { "waiter": { "suspend": "nobody-resumes-me", "runtime": 100 } } }"#,
        200 * MS,
    );
    assert_eq!(result.stop, StopReason::Completed);
    let r = records(&result, "waiter");
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].outcome, Outcome::Aborted);
    assert_eq!(r[0].finish_ns, None, "no finish for an aborted job");
}

/// Issue 27: two threads locking two mutexes in opposite order deadlock
/// (a barrier makes sure each holds its first before asking for the
/// second; `b` asks 10 ms later, so the two look at the run's end at
/// different moments). At the end `a` gives up and unlocks what it held,
/// which lets `b` take its lock and finish after the end: that job was
/// still in progress at the end, so it is aborted too, never completed.
#[test]
fn a_job_still_in_progress_at_the_end_is_aborted_not_completed() {
    let _serial = serial();
    let result = run_rtapp(
        r#"{ "tasks": {
          "a": { "loop": 1, "lock": "m1", "barrier": "both", "lock1": "m2",
                 "unlock": "m2", "unlock1": "m1" },
          "b": { "loop": 1, "lock": "m2", "barrier": "both", "run": 10000,
                 "lock1": "m1", "unlock": "m1", "unlock1": "m2" } } }"#,
        200 * MS,
    );
    for task in ["a", "b"] {
        let r = records(&result, task);
        assert_eq!(r.len(), 1, "{task}: {r:?}");
        assert_eq!(r[0].outcome, Outcome::Aborted, "{task}: {:?}", r[0]);
        assert_eq!(r[0].finish_ns, None, "{task}: cut at the end, no finish");
        assert!(r[0].started(), "{task} started its job");
    }
}

#[test]
fn task_groups_hold_their_threads_and_are_removed() {
    let Some(_serial) = privileged_serial("cgroup v2 task groups") else {
        return;
    };
    let result = run_rtapp(
        r#"{ "tasks": { "g": { "taskgroup": "/tg1", "phases": {
          "in":  { "loop": 2, "runtime": 500, "sleep": 1000 },
          "sub": { "loop": 2, "taskgroup": "/tg1/tg11", "runtime": 500, "sleep": 1000 } } } } }"#,
        100 * MS,
    );
    assert!(
        result
            .notes
            .iter()
            .any(|n| n.contains("/tg1") && n.contains("created")),
        "{:?}",
        result.notes
    );
    let a = Accounting::of(records(&result, "g"));
    assert!(a.completed >= 4, "{a:?}");
    let root = tinct_sys::cgroup::mount_point()
        .unwrap()
        .join(
            tinct_sys::cgroup::own_group()
                .unwrap()
                .trim_start_matches('/'),
        )
        .join(format!("tinct-run-{}", std::process::id()));
    assert!(!root.exists(), "the run's groups were removed");
}
