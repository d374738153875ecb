//! `tinct run` under supervision: colored working sets reported in the run
//! directory, and a crash in one task (the `TINCT_TEST_CRASH=TASK:JOB` test
//! hook raises SIGSEGV at the start of that job) still leaves jobs.csv,
//! trace.json and summary.json, reports the signal and the task, and exits 1.
//! Needs root (SCHED_FIFO, frame numbers); TINCT_REQUIRE_PRIVILEGED=1 turns
//! a skip into a failure.

mod common;

use common::{
    assert_exits_saying, balanced_job_counts, example, find_by, nobody_dir, read_json,
    run_as_nobody, run_completes, stdout, tinct,
};
use serde_json::Value;
use std::path::PathBuf;
use tinct_sys::testing::privileged_serial;

fn light() -> PathBuf {
    example("light.toml")
}

fn balanced(summary: &Value) {
    assert_eq!(summary["balanced"], true, "{summary}");
    for task in summary["tasks"].as_array().unwrap() {
        balanced_job_counts(task);
    }
}

#[test]
fn every_working_set_is_reported_colored_and_checked() {
    let Some(_serial) = privileged_serial("tinct run (SCHED_FIFO, frame numbers)") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let stdout = run_completes(
        &["run", light().to_str().unwrap(), "--duration", "400ms"],
        &out,
    );
    assert!(!stdout.contains("NOT enforced"), "{stdout}");
    assert!(stdout.contains("every page checked"), "{stdout}");
    let summary = read_json(&out.join("summary.json"));
    balanced(&summary);
    let mut colored = 0;
    for task in summary["tasks"].as_array().unwrap() {
        let placement = &task["placement"];
        if placement["placement"] == "none" {
            continue; // a compute-only body has no working set
        }
        colored += 1;
        assert_eq!(placement["placement"], "colored", "{placement}");
        assert_eq!(placement["pages_outside_colors"], 0, "{placement}");
        assert!(
            placement.get("frames").is_none(),
            "frames stay out of the file"
        );
    }
    assert!(
        colored >= 2,
        "light.toml has tasks with working sets: {summary}"
    );
}

#[test]
fn a_crash_in_one_task_still_writes_the_run_directory() {
    let Some(_serial) = privileged_serial("tinct run (SCHED_FIFO)") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let output = tinct()
        .env("TINCT_TEST_CRASH", "control:3")
        .args([
            "run",
            light().to_str().unwrap(),
            "--duration",
            "3s",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    let stderr = assert_exits_saying(&output, 1, "SIGSEGV");
    assert!(stderr.contains("control"), "{stderr}");
    let summary = read_json(&out.join("summary.json"));
    balanced(&summary);
    assert_eq!(summary["stop"]["reason"], "task_failed");
    assert_eq!(summary["stop"]["task"], "control");
    let control = find_by(&summary["tasks"], "name", "control");
    // Jobs 0, 1, 2 finished (100 ms period), job 3 crashed: aborted.
    assert_eq!(
        control["jobs"]["completed"].as_u64().unwrap()
            + control["jobs"]["missed"].as_u64().unwrap(),
        3
    );
    assert!(control["jobs"]["aborted"].as_u64().unwrap() >= 1);
    for task in summary["tasks"].as_array().unwrap() {
        let placement = &task["placement"]["placement"];
        assert!(
            placement == "colored" || placement == "none",
            "placements are known from before the release: {task}"
        );
    }
    let csv = std::fs::read_to_string(out.join("jobs.csv")).unwrap();
    assert!(csv.lines().count() > 4, "{csv}");
    let trace = read_json(&out.join("trace.json"));
    assert!(
        trace["traceEvents"]
            .as_array()
            .is_some_and(|e| !e.is_empty())
    );
}

#[test]
fn unreadable_frames_refuse_the_run_unless_uncolored_is_asked_for() {
    let Some(_serial) = privileged_serial("dropping to user nobody") else {
        return;
    };
    // A copy of the binary and the plan that user nobody can read.
    let (dir, binary, plan) = nobody_dir(&light());
    let run_without_rt = |extra: &[&str], out: &str| {
        let args = [&["--duration", "300ms", "--no-rt"], extra].concat();
        run_as_nobody(&binary, &plan, &args, &dir.path().join(out))
    };
    let refused = run_without_rt(&[], "refused");
    let stderr = assert_exits_saying(&refused, 1, "frame numbers are unreadable");
    assert!(stderr.contains("--uncolored"), "{stderr}");
    assert!(!dir.path().join("refused").join("jobs.csv").exists());

    let ran = run_without_rt(&["--uncolored"], "uncolored");
    assert_exits_saying(&ran, 0, "");
    let stdout = stdout(&ran);
    assert!(
        stdout.contains("UNCOLORED") && stdout.contains("NOT enforced"),
        "{stdout}"
    );
    let summary = read_json(&dir.path().join("uncolored").join("summary.json"));
    balanced(&summary);
    for task in summary["tasks"].as_array().unwrap() {
        let placement = &task["placement"]["placement"];
        assert!(placement == "uncolored" || placement == "none", "{task}");
        assert!(task["isolation"].is_null(), "{task}");
    }
    // No frames, no proof: the run says so, and why.
    let isolation = &summary["isolation"];
    assert_eq!(isolation["status"], "unavailable", "{isolation}");
    assert!(
        isolation["reason"]
            .as_str()
            .is_some_and(|r| r.contains("--uncolored") && r.contains("unreadable")),
        "{isolation}"
    );
    assert!(
        stdout.contains("cache isolation: proof not available: the working sets were not coloured"),
        "{stdout}"
    );
}
