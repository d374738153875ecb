//! `tinct monitor` end to end: a short real command gives a valid series,
//! plot and overhead figure; a running process is attached to; Ctrl-C
//! still writes what was recorded; bad options are bad input.

mod common;

use common::{Exits, no_cpu_pmu, read_json, tinct};
use serde_json::Value;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

/// The stdout of a run that must have succeeded (else both streams shown).
fn succeeded(out: &std::process::Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The CSV's rows as (header, rows), every row as long as the header.
fn csv(dir: &Path) -> (Vec<String>, Vec<Vec<String>>) {
    let text = std::fs::read_to_string(dir.join("monitor.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<String> = lines.next().unwrap().split(',').map(String::from).collect();
    let rows: Vec<Vec<String>> = lines
        .map(|l| l.split(',').map(String::from).collect::<Vec<_>>())
        .collect();
    for row in &rows {
        assert_eq!(row.len(), header.len(), "{row:?}");
    }
    (header, rows)
}

#[test]
fn a_short_command_gives_a_series_a_plot_and_the_overhead() {
    let dir = tempfile::tempdir().unwrap();
    let out = tinct()
        .args(["monitor", "--threads", "--rate", "200", "--quiet", "--out"])
        .arg(dir.path())
        .args([
            "--",
            "sh",
            "-c",
            "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; sleep 0.1",
        ])
        .output()
        .unwrap();
    let stdout = succeeded(&out);
    assert!(
        stdout.contains("overhead of sampling at 200 Hz"),
        "{stdout}"
    );

    let (header, rows) = csv(dir.path());
    assert_eq!(header[..4], ["t_ns", "interval_ns", "tid", "thread"]);
    assert!(rows.len() >= 5, "{} rows", rows.len());
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let mut last_t = 0u64;
    for row in &rows {
        let t: u64 = row[col("t_ns")].parse().unwrap();
        assert!(t >= last_t, "timestamps ascend");
        last_t = t;
        let interval: u64 = row[col("interval_ns")].parse().unwrap();
        assert!(interval > 0 && interval <= t);
        // Software events are numbers; hardware ones empty without a PMU.
        for name in [
            "task-clock",
            "context-switches",
            "cpu-migrations",
            "page-faults",
        ] {
            row[col(name)]
                .parse::<u64>()
                .unwrap_or_else(|_| panic!("{name}: {row:?}"));
        }
        if no_cpu_pmu() {
            assert_eq!(row[col("cycles")], "", "no PMU: no count, not a zero");
            assert_eq!(row[col("miss_ratio")], "");
        }
    }
    let busy: u64 = rows
        .iter()
        .map(|r| r[col("task-clock")].parse::<u64>().unwrap())
        .sum();
    assert!(busy > 0, "the shell's loop ran on the CPU");

    let json = read_json(&dir.path().join("monitor.json"));
    assert_eq!(json["ended"], "command-exited");
    assert_eq!(json["exit_code"], 0);
    assert_eq!(json["samples"].as_array().unwrap().len(), rows.len());
    let overhead = &json["overhead"];
    assert_eq!(overhead["rate_hz"], 200);
    assert_eq!(overhead["plain"]["count"], 7);
    assert_eq!(overhead["monitored"]["count"], 7);
    let ratio = overhead["ratio"].as_f64().unwrap();
    let medians = overhead["monitored"]["median_ns"].as_f64().unwrap()
        / overhead["plain"]["median_ns"].as_f64().unwrap();
    assert!((ratio - medians).abs() < 1e-9, "{ratio} vs {medians}");
    if no_cpu_pmu() {
        let missing = json["missing"].as_array().unwrap();
        assert_eq!(missing.len(), 4, "{missing:?}");
        assert!(
            missing
                .iter()
                .all(|m| m.as_str().unwrap().contains("unavailable: ENOENT"))
        );
        assert!(
            stdout.contains("missing: cycles: unavailable: ENOENT"),
            "{stdout}"
        );
    }

    let svg = std::fs::read_to_string(dir.path().join("monitor.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert!(
        svg.contains("<polyline") || svg.contains("<path"),
        "the plot has a line"
    );
}

#[test]
fn a_running_process_is_attached_to_for_a_duration() {
    let mut sleeper = std::process::Command::new("sleep")
        .arg("5")
        .spawn()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = tinct()
        .args([
            "monitor",
            "--no-overhead",
            "--quiet",
            "--duration",
            "300ms",
            "--pid",
        ])
        .arg(sleeper.id().to_string())
        .arg("--out")
        .arg(dir.path())
        .output()
        .unwrap();
    sleeper.kill().unwrap();
    let _ = sleeper.wait();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json = read_json(&dir.path().join("monitor.json"));
    assert_eq!(json["ended"], "duration");
    assert_eq!(json["per_thread"], false);
    let samples = json["samples"].as_array().unwrap();
    assert!(
        samples.len() >= 10,
        "{} samples at 100 Hz for 300 ms",
        samples.len()
    );
    assert!(samples.iter().all(|s| s["thread"] == "all threads"));
    assert!(json["overhead"].is_null());
}

#[test]
fn ctrl_c_stops_monitoring_and_still_writes_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let bin = assert_cmd::cargo::cargo_bin("tinct");
    let mut child = std::process::Command::new(bin)
        .args(["monitor", "--no-overhead", "--quiet", "--out"])
        .arg(dir.path())
        .args(["--", "sleep", "30"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The program runs once tinct's Ctrl-C handler is in place.
    while tinct_rt::testing::child_processes(child.id()).is_empty() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "tinct monitor ended first"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(child.id() as i32).unwrap(),
        rustix::process::Signal::INT,
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json = read_json(&dir.path().join("monitor.json"));
    assert_eq!(json["ended"], "interrupted");
    assert!(!json["samples"].as_array().unwrap().is_empty());
    assert!(dir.path().join("monitor.svg").exists());
}

#[test]
fn an_event_that_is_not_one_is_bad_input_naming_the_flag() {
    let out = tinct()
        .args(["monitor", "--event", "bogus-event", "--", "true"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--event \"bogus-event\": expected a generic event (")
            && err.contains("found none of them"),
        "{err}"
    );
}

#[test]
fn bad_options_are_bad_input() {
    for args in [
        vec!["monitor"],
        vec!["monitor", "--rate", "0", "--", "true"],
        vec!["monitor", "--pid", "2147483647"],
        vec!["monitor", "--", "/nonexistent/program"],
    ] {
        let out = tinct().args(&args).output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("expected"),
            "{args:?}"
        );
    }
}

#[test]
fn sharing_says_why_the_cpu_cannot_sample_and_still_monitors() {
    let dir = tempfile::tempdir().unwrap();
    let out = tinct()
        .args(["monitor", "--sharing", "--no-overhead", "--quiet", "--out"])
        .arg(dir.path())
        .args(["--", "sleep", "0.1"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let sharing: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("sharing.json")).unwrap())
            .unwrap();
    let support = tinct_sys::perf::memory_sampling::detect(&tinct_sys::SysRoot::live()).unwrap();
    match tinct_sys::perf::memory_sampling::probe(&support) {
        Err(why) => {
            assert_eq!(sharing["unavailable"], why.as_str());
            assert!(
                stdout.contains("sharing detection by the CPU: unavailable"),
                "{stdout}"
            );
            assert!(
                stdout.contains("--plan"),
                "points to what works here: {stdout}"
            );
        }
        Ok(()) => assert!(sharing["report"].is_object(), "{sharing}"),
    }
    assert!(
        dir.path().join("monitor.csv").exists(),
        "monitoring ran all the same"
    );
}

/// `tinct monitor --plan examples/EXAMPLE`: its sharing.json and stdout.
fn plan_sharing(example: &str) -> (Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let plan = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(example);
    let out = tinct()
        .args(["monitor", "--plan"])
        .arg(&plan)
        .arg("--out")
        .arg(dir.path())
        .output()
        .unwrap();
    let stdout = succeeded(&out);
    let check =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("sharing.json")).unwrap())
            .unwrap();
    (check, stdout)
}

#[test]
fn a_plans_tasks_are_checked_for_shared_lines() {
    let (check, stdout) = plan_sharing("kim2013-table2.toml");
    let lines = check["lines"].as_array().unwrap();
    // Every task writes the job log's heartbeat: one truly shared line.
    assert!(
        lines
            .iter()
            .any(|l| l["region"] == "job log" && l["kind"] == "true"),
        "{lines:?}"
    );
    // The working sets are the tasks' own memory.
    assert!(
        lines
            .iter()
            .all(|l| !l["region"].as_str().unwrap().starts_with("working set"))
    );
    assert!(
        stdout.contains("working sets: 0 shared line(s)"),
        "{stdout}"
    );
    assert_eq!(
        check["unmodelled"],
        serde_json::json!([]),
        "no program task"
    );
    tinct()
        .args(["monitor", "--plan", "/nonexistent.toml"])
        .exits(2);
}

/// Issue 26: a program task's own accesses are not in any file, so the
/// check says which tasks it could not model instead of finding nothing.
#[test]
fn a_plans_program_tasks_are_named_as_not_modelled() {
    let (check, stdout) = plan_sharing("programs.toml");
    assert_eq!(check["unmodelled"], serde_json::json!(["filter"]));
    assert!(
        stdout.contains("NOT MODELLED: the own accesses of the program(s) of filter"),
        "{stdout}"
    );
}

/// Issue 27: a command's children are counted, not only the command (a
/// shell that starts a busy shell): the child's own thread has rows and
/// CPU time, and the summary says what is counted.
#[test]
fn the_processes_a_command_starts_are_counted_too() {
    let dir = tempfile::tempdir().unwrap();
    let busy = "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done";
    let out = tinct()
        .args([
            "monitor",
            "--threads",
            "--rate",
            "200",
            "--no-overhead",
            "--quiet",
            "--out",
        ])
        .arg(dir.path())
        .args(["--", "sh", "-c", &format!("sh -c '{busy}'; true")])
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let stdout = succeeded(&out);
    assert!(
        stdout.contains("counted: every thread of the process and of the processes it started"),
        "{stdout}"
    );
    let (header, rows) = csv(dir.path());
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let json = read_json(&dir.path().join("monitor.json"));
    let parent = json["pid"].as_i64().expect("pid").to_string();
    let child_time: u64 = rows
        .iter()
        .filter(|r| r[col("tid")] != parent)
        .map(|r| r[col("task-clock")].parse::<u64>().unwrap())
        .sum();
    assert!(
        child_time > 0,
        "the child shell's loop is counted (parent {parent}): {rows:?}"
    );
}
