//! `tinct run --rt-app` on tinct's own workloads (examples/rt-app/, which
//! together use every key and event of rt-app's grammar): each runs
//! unchanged, exits 0, and every thread's jobs balance (released =
//! completed + missed + aborted). They need root (real-time policies,
//! SCHED_DEADLINE, task groups); without it they skip, unless
//! TINCT_REQUIRE_PRIVILEGED=1 makes them fail.

mod common;

use common::{Exits, balanced_job_counts, example, find_by, read_json, stdout, tinct};
use serde_json::Value;
use std::path::PathBuf;

/// A workload of examples/rt-app/.
fn workload(name: &str) -> PathBuf {
    example("rt-app").join(name)
}

/// Runs `name` for `duration` into a fresh directory; returns its
/// summary, stdout and the directory.
fn run(name: &str, duration: &str) -> (Value, String, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let output = tinct()
        .args(["run", "--rt-app"])
        .arg(workload(name))
        .args(["--duration", duration])
        // These runs check grammar, policies and accounting, not timing: a
        // host stall of tens of ms (seen on this VM under load) must not
        // let the watchdog (3 × D by default) stop a 10 ms-period job.
        .args(["--watchdog-factor", "20", "--out"])
        .arg(&out)
        .exits(0);
    let summary = read_json(&out.join("summary.json"));
    for task in summary["tasks"].as_array().unwrap() {
        balanced_job_counts(task);
    }
    assert_eq!(summary["balanced"], true);
    (summary, stdout(&output), dir)
}

/// The task `name` of a summary.json.
fn task<'a>(summary: &'a Value, name: &str) -> &'a Value {
    find_by(&summary["tasks"], "name", name)
}

fn released(summary: &Value, name: &str) -> u64 {
    task(summary, name)["jobs"]["released"].as_u64().unwrap()
}

#[test]
fn tincts_own_workloads_run_unchanged_and_balance() {
    if !tinct_sys::testing::privileged_or_skip("rt-app workloads with real-time policies") {
        return;
    }
    // Synchronisation: every thread made progress through its events.
    let (sync, _, _) = run("sync.json", "600ms");
    for name in [
        "producer",
        "consumer",
        "dispatcher",
        "stage1",
        "stage2",
        "server",
    ] {
        assert!(released(&sync, name) > 0, "{name}: {sync}");
    }
    assert_eq!(
        released(&sync, "stage1"),
        released(&sync, "stage2"),
        "barrier partners pass together"
    );

    // Policies: each as asked, read back from the kernel.
    let (policies, stdout, _) = run("policies.json", "600ms");
    assert!(stdout.contains("note: task groups"), "{stdout}");
    let schedule = |name: &str| task(&policies, name)["scheduling"].to_string();
    assert!(
        schedule("nice").contains("SCHED_OTHER nice -5"),
        "{policies}"
    );
    assert!(schedule("batch").contains("SCHED_BATCH nice 5"));
    assert!(schedule("idle").contains("SCHED_IDLE"));
    assert!(schedule("deadline").contains("SCHED_DEADLINE"));
    for policy in [
        "SCHED_FIFO 20",
        "SCHED_FIFO 30",
        "SCHED_RR 25",
        "SCHED_OTHER",
    ] {
        assert!(
            schedule("shifting").contains(policy),
            "{policy}: {}",
            schedule("shifting")
        );
    }

    // Memory: the colored task's pages all came from its partitions' colors.
    let (memory, _, _) = run("memory.json", "600ms");
    let placement = &task(&memory, "colored")["placement"];
    assert_eq!(placement["placement"], "colored", "{placement}");
    assert_eq!(placement["pages_outside_colors"], 0, "{placement}");
    assert_eq!(
        released(&memory, "helper-fork-0"),
        5,
        "forked, then its 5 loops"
    );

    // Housekeeping: rt-app-style logs beside tinct's files.
    let (housekeeping, stdout, dir) = run("housekeeping.json", "500ms");
    assert!(stdout.contains("note: `ftrace`"), "{stdout}");
    let log = std::fs::read_to_string(dir.path().join("run/housekeeping-repeated.log")).unwrap();
    let rows: Vec<&str> = log.lines().filter(|l| !l.starts_with('#')).collect();
    assert!(!rows.is_empty(), "{log}");
    assert!(
        rows.iter().all(|r| r.split_whitespace().count() == 11),
        "{log}"
    );
    assert!(released(&housekeeping, "numbered-1") > 0);

    let (periodic, _, _) = run("periodic.json", "500ms");
    assert!(released(&periodic, "video") > 0);
}

#[test]
fn the_watchdog_flag_takes_off_rt_or_all_and_refuses_anything_else() {
    let bad = tinct()
        .args(["run", "--rt-app"])
        .arg(workload("periodic.json"))
        .args(["--watchdog", "sometimes"])
        .assert()
        .code(2);
    let stderr = String::from_utf8_lossy(&bad.get_output().stderr).to_string();
    assert!(stderr.contains("expected off, rt or all"), "{stderr}");
    if !tinct_sys::testing::privileged_or_skip("an overloaded SCHED_FIFO rt-app run") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("overloaded.json");
    std::fs::write(
        &file,
        r#"{ "tasks": { "hog": { "policy": "SCHED_FIFO", "priority": 10, "loop": 2,
            "runtime": 40000, "timer": { "ref": "t", "period": 10000 } } } }"#,
    )
    .unwrap();
    let run = |watchdog: &str| {
        tinct()
            .args(["run", "--rt-app"])
            .arg(&file)
            .args(["--duration", "300ms", "--watchdog", watchdog, "--out"])
            .arg(dir.path().join(watchdog))
            .output()
            .unwrap()
    };
    let guarded = run("rt");
    assert_eq!(guarded.status.code(), Some(1), "stopped by the watchdog");
    assert!(String::from_utf8_lossy(&guarded.stderr).contains("WATCHDOG"));
    let off = run("off");
    assert_eq!(
        off.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&off.stderr)
    );
}

#[test]
fn an_overloaded_deadline_reservation_runs_to_its_end_unless_the_watchdog_guards_all() {
    if !tinct_sys::testing::privileged_or_skip("an overloaded SCHED_DEADLINE rt-app run") {
        return;
    }
    // rt-app's deadline_no_reclaim-3: 30 ms of work on a reservation of
    // 10 ms every 30 ms. The kernel's CBS throttles it: its jobs are late
    // (about 90 ms, 3 × the deadline, each) but the CPU is never starved.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("deadline_no_reclaim-3.json");
    std::fs::write(
        &file,
        r#"{ "tasks": { "thread0": { "policy": "SCHED_DEADLINE", "loop": 3,
            "dl-runtime": 10000, "dl-period": 30000, "dl-deadline": 30000,
            "run": 30000, "timer": { "ref": "unique", "period": 30000 } } },
            "global": { "duration": 1, "calibration": "CPU0" } }"#,
    )
    .unwrap();
    let run = |extra: &[&str], name: &str| {
        tinct()
            .args(["run", "--rt-app"])
            .arg(&file)
            .args(extra)
            .arg("--out")
            .arg(dir.path().join(name))
            .output()
            .unwrap()
    };
    let default = run(&[], "default");
    assert_eq!(
        default.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&default.stdout),
        String::from_utf8_lossy(&default.stderr)
    );
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("default/summary.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(summary["stop"]["reason"], "completed");
    assert_eq!(
        summary["tasks"][0]["jobs"]["completed"].as_u64().unwrap()
            + summary["tasks"][0]["jobs"]["missed"].as_u64().unwrap(),
        3,
        "{summary}"
    );
    assert!(
        summary["misses"].as_u64().unwrap() > 0,
        "late, as designed: {summary}"
    );
    // Guarded too (watchdog factor 2: a 90 ms job passes 2 × 30 ms).
    let guarded = run(&["--watchdog", "all", "--watchdog-factor", "2"], "all");
    assert_eq!(guarded.status.code(), Some(1), "stopped by the watchdog");
    assert!(String::from_utf8_lossy(&guarded.stderr).contains("WATCHDOG"));
}

/// Issue 27: an `io_device` that is a FIFO nobody reads is refused at once
/// (exit 2 naming the field), not waited on in `open` before the first
/// release for ever. `assert_cmd`'s timeout is the hang guard.
#[test]
fn a_fifo_io_device_without_a_reader_is_refused_not_waited_on() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success(), "mkfifo failed");
    let file = common::write(
        dir.path(),
        "io.json",
        format!(
            r#"{{"global": {{"io_device": "{}"}},
                "tasks": {{"w": {{"iorun": 100, "sleep": 1000}}}}}}"#,
            fifo.display()
        ),
    );
    let out = tinct()
        .args(["run", "--no-sentinel", "--duration", "1s", "--rt-app"])
        .arg(&file)
        .arg("--out")
        .arg(dir.path().join("run"))
        .timeout(std::time::Duration::from_secs(30))
        .exits(2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("global.io_device") && err.contains("no reader"),
        "{err}"
    );
    assert!(
        !dir.path().join("run").exists(),
        "an empty run directory was left to look like a run"
    );
}

/// Issue 27: with `--watchdog off` an overrunning task (50 ms of work every
/// 10 ms) does not drain its backlog past the run's end: the releases due
/// behind it are recorded, never started, and no job starts after the end
/// (given 2 s for a host stall between the check and the start).
#[test]
fn the_run_ends_at_its_duration_even_with_a_backlog_and_no_watchdog() {
    let dir = tempfile::tempdir().unwrap();
    let file = common::write(
        dir.path(),
        "over.json",
        r#"{"tasks": {"o": {"run": 50000, "timer": {"ref": "t", "period": 10000, "mode": "absolute"}}}}"#,
    );
    let out = dir.path().join("run");
    let status = tinct()
        .args([
            "run",
            "--no-sentinel",
            "--watchdog",
            "off",
            "--duration",
            "1s",
            "--rt-app",
        ])
        .arg(&file)
        .arg("--out")
        .arg(&out)
        .timeout(std::time::Duration::from_secs(60))
        .output()
        .unwrap();
    // 0, or 1 when the late jobs' deadlines count as a stop; never a hang.
    assert!(matches!(status.status.code(), Some(0 | 1)), "{status:?}");
    let summary = read_json(&out.join("summary.json"));
    for task in summary["tasks"].as_array().unwrap() {
        balanced_job_counts(task);
    }
    let csv = std::fs::read_to_string(out.join("jobs.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let column = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (start, outcome) = (column("start_ns"), column("outcome"));
    let mut never_started = 0;
    for line in csv.lines().skip(1) {
        let cells: Vec<&str> = line.split(',').collect();
        match cells[start].parse::<u64>() {
            Ok(at) => assert!(
                at < 3_000_000_000, // 2 s past the end for any host stall; a drained backlog runs to 5 s
                "a job started at {at} ns, past the end: {line}"
            ),
            Err(_) => never_started += 1,
        }
        assert!(!cells[outcome].is_empty(), "{line}");
    }
    assert!(
        never_started > 0,
        "the backlog is recorded as never started:\n{csv}"
    );
}
