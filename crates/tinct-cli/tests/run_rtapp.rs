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
    run_exiting(name, duration, &[0])
}

/// [`run`] for a run that may also end with one of `codes`.
fn run_exiting(name: &str, duration: &str, codes: &[i32]) -> (Value, String, tempfile::TempDir) {
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
        .output()
        .unwrap();
    assert!(
        output
            .status
            .code()
            .is_some_and(|code| codes.contains(&code)),
        "expected exit {codes:?}: {}\nstdout:\n{}\nstderr:\n{}",
        output.status,
        stdout(&output),
        String::from_utf8_lossy(&output.stderr)
    );
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
            r#"{{"tasks": {{"w": {{"iorun": 100, "sleep": 1000}}}},
                "global": {{"io_device": "{}"}}}}"#,
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
        err.contains("io.json:2:") && err.contains("global.io_device") && err.contains("no reader"),
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

/// `tinct run --rt-app FILE --duration DURATION --out DIR/run` (no
/// sentinel, the tests' watchdog factor: a host stall must not stop the
/// run), with a hang guard of `timeout_s`: its output.
fn run_text(
    dir: &std::path::Path,
    text: &str,
    duration: &str,
    timeout_s: u64,
) -> std::process::Output {
    let file = common::write(dir, "w.json", text);
    tinct()
        .args(["run", "--no-sentinel", "--duration", duration])
        .args([
            "--watchdog-factor",
            common::TEST_WATCHDOG_FACTOR,
            "--rt-app",
        ])
        .arg(&file)
        .arg("--out")
        .arg(dir.join("run"))
        .timeout(std::time::Duration::from_secs(timeout_s))
        .output()
        .unwrap()
}

/// Issue 27: every string of an rt-app file that reaches a path, a thread
/// name or a cgroup, and every value the kernel refuses, is bad input
/// (exit 2) naming the file's line and the field — before anything runs.
#[test]
fn hostile_rt_app_files_are_refused_with_exit_2_naming_line_and_field() {
    let cases: [(&str, &str, &[&str]); 7] = [
        (
            "a typo after a multi-line comment, at the file's line",
            "{\n/* one\n   two\n   three */\n\"tasks\": {\n \"a\": {\n  \"rnu\": 10 } } }",
            &["w.json:7:", "`rnu`"],
        ),
        (
            "a log_basename leaving the run directory",
            "{ \"tasks\": { \"a\": { \"run\": 10, \"sleep\": 10 } },\n \"global\": { \"log_basename\": \"../escaped\" } }",
            &["w.json:2:", "`log_basename` in global", "../escaped"],
        ),
        (
            "a task name with a /",
            "{ \"tasks\": {\n \"a/b\": { \"run\": 10, \"sleep\": 10 } },\n \"global\": { \"log_basename\": \"log\" } }",
            &["w.json:2:", "task name \"a/b\""],
        ),
        (
            "two threads named x-0",
            "{ \"tasks\": {\n \"x\": { \"instance\": 2, \"run\": 10, \"sleep\": 10 },\n \"x-0\": { \"run\": 10, \"sleep\": 10 } } }",
            &["w.json:3:", "\"x-0\" twice", "task \"x\"", "task \"x-0\""],
        ),
        (
            "a phase pinned to CPU 4095",
            "{ \"tasks\": { \"a\": { \"phases\": {\n \"p\": { \"run\": 10, \"sleep\": 10 },\n \"q\": { \"cpus\": [4095], \"run\": 10, \"sleep\": 10 } } } } }",
            &[
                "w.json:3:",
                "phase 'q'",
                "CPU 4095",
                "a CPU this process may use",
            ],
        ),
        (
            "a task group named like a cgroup file",
            "{ \"tasks\": { \"a\": {\n \"taskgroup\": \"/cgroup.procs\", \"run\": 10, \"sleep\": 10 } } }",
            &["w.json:2:", "`taskgroup` in tasks.a", "cgroup.procs"],
        ),
        (
            "a deadline period of 366 days",
            "{ \"tasks\": {\n \"d\": { \"policy\": \"SCHED_DEADLINE\", \"dl-runtime\": 1000, \"dl-period\": 31622400000000, \"run\": 10 } } }",
            &[
                "w.json:2:",
                "dl-period 31622400000000",
                "sched_deadline_period",
            ],
        ),
    ];
    for (what, text, expected) in cases {
        let dir = tempfile::tempdir().unwrap();
        let out = run_text(dir.path(), text, "1s", 60);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{what}: {err}");
        for needle in expected {
            assert!(err.contains(needle), "{what}: no {needle:?} in\n{err}");
        }
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, ["w.json"], "{what}: nothing is written");
    }
}

/// Issue 27: an unclosed `/*` names the line where it opens (it said
/// "invalid data", no line).
#[test]
fn an_unclosed_comment_names_the_line_it_opens_on() {
    let dir = tempfile::tempdir().unwrap();
    let text = "{ \"tasks\": { \"a\": { \"run\": 10 } } }\n\n/* a note\n that never ends\n";
    let out = run_text(dir.path(), text, "1s", 60);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("w.json:3:") && err.contains("never closed"),
        "{err}"
    );
}

/// Issue 27: a job in a long `sleep` is aborted when the run ends, as one
/// blocked in a `wait` is (the run ends at its duration), instead of
/// holding the run until the watchdog's "past duration plus grace" (exit
/// 1). `assert_cmd`'s timeout is the hang guard.
#[test]
fn a_sleep_ends_at_the_end_of_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_text(
        dir.path(),
        r#"{ "tasks": { "s": { "run": 100, "sleep": 100000000000 } } }"#,
        "1s",
        60,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let summary = read_json(&dir.path().join("run/summary.json"));
    let s = task(&summary, "s");
    assert_eq!(balanced_job_counts(s), [1, 0, 0, 1], "{s}");
}

/// Issue 27: a failed `iorun` write names the device and the errno.
#[test]
fn a_failed_io_write_names_the_device_and_the_errno() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_text(
        dir.path(),
        r#"{ "global": { "io_device": "/dev/full" },
             "tasks": { "w": { "iorun": 100, "sleep": 1000 } } }"#,
        "1s",
        60,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("/dev/full") && err.contains("No space left on device"),
        "{err}"
    );
}

/// Issue 27: an rt-app run into the directory of an earlier plan run
/// leaves only its own files: `tinct report` shows no analysis of the
/// earlier plan and none of its tasks.
#[test]
fn an_rt_app_run_replaces_an_earlier_plan_run_in_its_directory() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let earlier = tinct()
        .args(["run", "--no-rt", "--no-sentinel", "--duration", "300ms"])
        .arg(example("light.toml"))
        .arg("--out")
        .arg(&out)
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    common::assert_completed(&earlier);
    assert!(
        out.join("analysis.json").is_file(),
        "the plan run's analysis"
    );
    tinct()
        .arg("report")
        .arg(&out)
        .timeout(std::time::Duration::from_secs(120))
        .exits(0);
    let later = run_text(
        dir.path(),
        r#"{ "tasks": { "solo": { "run": 100, "sleep": 10000 } } }"#,
        "300ms",
        60,
    );
    assert_eq!(
        later.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&later.stderr)
    );
    for stale in ["analysis.json", "report.html", "fig10-utilization.svg"] {
        assert!(!out.join(stale).exists(), "{stale} of the plan run is left");
    }
    let report = tinct()
        .arg("report")
        .arg(&out)
        .timeout(std::time::Duration::from_secs(120))
        .exits(0);
    let page = std::fs::read_to_string(out.join("report.html")).unwrap();
    let said = format!("{}{page}", stdout(&report));
    assert!(!said.contains("SCHEDULABLE"), "the plan's verdict is shown");
    for task in ["sensor", "filter", "control", "logger"] {
        assert!(!said.contains(task), "the plan's task {task} is shown");
    }
    assert!(said.contains("solo"));
}

/// Issue 27: 500 instances of one light task start and the 2 s run ends
/// (it took about 17 s to start: every thread calibrated the compute
/// kernel for itself, some 15 ms of CPU each). The compute rate is
/// measured once per CPU set, so every instance does the same work per
/// job. The timeout is a generous hang guard, not a measure of speed.
#[test]
fn five_hundred_instances_start_and_share_one_calibration() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_text(
        dir.path(),
        r#"{ "tasks": { "light": { "instance": 500, "run": 100,
             "timer": { "ref": "unique", "period": 100000 } } } }"#,
        "2s",
        120,
    );
    common::assert_completed(&out);
    let summary = read_json(&dir.path().join("run/summary.json"));
    let tasks = summary["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 500);
    for t in tasks {
        assert!(balanced_job_counts(t)[0] > 0, "{t}");
    }
    let work = &tasks[0]["work"];
    assert!(
        tasks.iter().all(|t| t["work"] == *work),
        "one calibration for every instance: {work} and {}",
        tasks.iter().find(|t| t["work"] != *work).unwrap()["work"]
    );
}

/// Issue 30: a file whose threads are all periodic reservations pinned to
/// one CPU each is analysed as partitioned EDF (C = dl-runtime), and every
/// job has that bound.
#[test]
fn pinned_reservations_are_analysed_and_bounded() {
    if !tinct_sys::testing::privileged_or_skip("SCHED_DEADLINE threads in cpuset partitions") {
        return;
    }
    if let Err(e) = tinct_sys::dl_partitions::v1_mount_point() {
        eprintln!("skipped: partitions need the cpuset controller on cgroup v1: {e}");
        return;
    }
    // What is checked is the analysis, not the timing: exit 3 (a job past
    // its bound with no explanation) is accepted here. A SCHED_DEADLINE
    // job preempts the stall sentinel of its CPU, so a host stall of the
    // whole VM seen on the other CPU does not explain it (seen in CI: a
    // 12.9 ms job 0 beside an 11.4 ms stall found on the other CPU).
    let (summary, stdout, _dir) = run_exiting("deadline.json", "1s", &[0, 3]);
    assert!(
        stdout.contains("analysed as SCHED_DEADLINE reservations on their CPUs"),
        "{stdout}"
    );
    // Alone on its CPU, a reservation's job is bounded by its runtime.
    for (name, runtime_ns) in [("control", 2_000_000u64), ("video", 6_000_000)] {
        let t = task(&summary, name);
        assert_eq!(t["bound"]["wcrt_ns"].as_u64(), Some(runtime_ns), "{t}");
        assert_eq!(t["policy"]["policy"], "deadline", "{t}");
    }
}
