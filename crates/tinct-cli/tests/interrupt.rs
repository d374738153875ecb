//! Ctrl-C in the benches and the demo (issue 13): a SIGINT sent once the
//! command says on stderr that it started ends it with exit status 130,
//! and what it finished is written, parses and says it was interrupted,
//! with fewer rounds completed than requested. Never an absolute time: the
//! signal waits for the start line (plus a short pause so that some rounds
//! can end; the assertions hold for none as well).

mod common;

use common::read_json;
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::Duration;
use tinct_sys::testing::privileged_serial;

/// What an interrupted command left: its exit status and what it wrote
/// where it said it started.
struct Interrupted {
    status: Option<i32>,
    output: String,
}

/// Where the command says it started.
#[derive(Clone, Copy)]
enum Says {
    /// The benches' start line.
    OnStderr,
    /// The demo's step lines.
    OnStdout,
}

/// Who gets the SIGINT.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Reaches {
    /// tinct alone (`kill -INT PID`).
    Tinct,
    /// tinct and its children, as a terminal's Ctrl-C does: tinct runs in
    /// a process group of its own (never the test's), which gets it.
    ItsProcessGroup,
}

/// Runs `tinct args`, sends it SIGINT once a line it writes where `says`
/// contains `started` (and `pause` later), and waits for it to end.
fn interrupt_after(args: &[&str], says: Says, started: &str, pause: Duration) -> Interrupted {
    signal_after(args, says, started, pause, 1, Reaches::Tinct)
}

/// As [`interrupt_after`], with `signals` SIGINTs 100 ms apart (apart, so
/// that the kernel does not merge a pending one with the next) sent to
/// whom `reaches` says.
fn signal_after(
    args: &[&str],
    says: Says,
    started: &str,
    pause: Duration,
    signals: usize,
    reaches: Reaches,
) -> Interrupted {
    let (stdout, stderr) = match says {
        Says::OnStderr => (Stdio::null(), Stdio::piped()),
        Says::OnStdout => (Stdio::piped(), Stdio::null()),
    };
    let mut command = common::tinct_process();
    if reaches == Reaches::ItsProcessGroup {
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
    }
    let mut child = command
        .args(args)
        .stdout(stdout)
        .stderr(stderr)
        .spawn()
        .expect("tinct starts");
    let stream: Box<dyn std::io::Read> = match says {
        Says::OnStderr => Box::new(child.stderr.take().unwrap()),
        Says::OnStdout => Box::new(child.stdout.take().unwrap()),
    };
    let mut stderr = BufReader::new(stream);
    let mut seen = String::new();
    let mut line = String::new();
    loop {
        line.clear();
        let read = stderr.read_line(&mut line).unwrap();
        seen.push_str(&line);
        if read == 0 {
            panic!("tinct {args:?} ended before saying {started:?}: {seen}");
        }
        if line.contains(started) {
            break;
        }
    }
    std::thread::sleep(pause);
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    for k in 0..signals {
        if k > 0 {
            // Sent before tinct took the previous one, a SIGINT would merge
            // into it (standard signals do not queue).
            tinct_sys::testing::wait_until_sigint_taken(child.id(), Duration::from_secs(20));
        }
        match reaches {
            Reaches::Tinct => {
                rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap()
            }
            // The group tinct leads (its pid), never the test's own.
            Reaches::ItsProcessGroup => {
                rustix::process::kill_process_group(pid, rustix::process::Signal::INT).unwrap()
            }
        }
    }
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    seen.push_str(&rest);
    let status = child.wait().unwrap();
    Interrupted {
        status: status.code(),
        output: seen,
    }
}

/// The header of an interrupted bench: interrupted, fewer rounds completed
/// than requested; returns the rounds completed.
fn interrupted_header(report: &Value) -> u64 {
    assert_eq!(report["interrupted"], Value::Bool(true), "{report}");
    let requested = report["rounds_requested"]
        .as_u64()
        .expect("rounds_requested");
    let completed = report["rounds_completed"]
        .as_u64()
        .expect("rounds_completed");
    assert!(
        completed < requested,
        "{completed} of {requested} rounds completed"
    );
    completed
}

/// Runs `tinct bench <bench> --quick <extra> --no-progress --out TMP`,
/// interrupts it `pause` after its start line, checks the exit status 130
/// and the stderr report, and returns the JSON it wrote (`<bench>.json`)
/// with the directory.
fn interrupt_bench(bench: &str, extra: &[&str], pause: Duration) -> (Value, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    let mut args = vec!["bench", bench, "--quick"];
    args.extend(extra);
    args.extend(["--no-progress", "--out", out]);
    let started = format!("tinct bench {bench}: measuring");
    let stopped = interrupt_after(&args, Says::OnStderr, &started, pause);
    assert_eq!(stopped.status, Some(130), "{}", stopped.output);
    assert!(
        stopped.output.contains("bench interrupted (Ctrl-C)")
            && stopped.output.contains("written to"),
        "{}",
        stopped.output
    );
    let report = read_json(&dir.path().join(format!("{bench}.json")));
    (report, dir)
}

#[test]
fn ctrl_c_in_bench_pipeline_keeps_the_finished_rounds_and_exits_130() {
    let Some(_serial) = privileged_serial("SCHED_FIFO pipeline bench") else {
        return;
    };
    // 40 rounds of 200 samples per policy: far longer than the pause.
    let (report, dir) = interrupt_bench(
        "pipeline",
        &["--reps", "40", "--samples", "8000"],
        Duration::from_millis(1500),
    );
    let completed = interrupted_header(&report);
    assert_eq!(report["rounds_requested"], 40);
    let policies = report["policies"].as_array().unwrap();
    if completed == 0 {
        assert!(policies.is_empty(), "no round: a header-only result");
    } else {
        assert_eq!(policies.len(), 3);
        for p in policies {
            assert_eq!(
                p["samples"].as_u64(),
                Some(200 * completed),
                "the same whole rounds for every policy: {p}"
            );
        }
        let table = std::fs::read_to_string(dir.path().join("table1.csv")).unwrap();
        assert_eq!(table.lines().count(), 4, "{table}");
    }
    // The typed report reads it back.
    let _: tinct_bench::pipeline::Report = serde_json::from_value(report).unwrap();
}

#[test]
fn ctrl_c_in_bench_crpd_keeps_the_finished_rounds_and_exits_130() {
    let Some(_serial) = privileged_serial("SCHED_FIFO crpd bench") else {
        return;
    };
    // 2000 rounds per condition: tens of seconds, far beyond the pause.
    let (report, _dir) = interrupt_bench("crpd", &["--reps", "2000"], Duration::from_millis(300));
    interrupted_header(&report);
    let _: tinct_bench::crpd::CrpdResult = serde_json::from_value(report).unwrap();
}

#[test]
fn ctrl_c_in_bench_overheads_ends_the_measurement_under_way() {
    let Some(_serial) = privileged_serial("SCHED_FIFO release latency") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // A minute of release latency after a short context-switch part: the
    // Ctrl-C lands in one of the two, and ends it where it is.
    let stopped = interrupt_after(
        &[
            "bench",
            "overheads",
            "--reps",
            "10",
            "--seconds",
            "60",
            "--no-progress",
            "--out",
            dir.path().to_str().unwrap(),
        ],
        Says::OnStderr,
        "tinct bench overheads: measuring",
        Duration::from_millis(1500),
    );
    assert_eq!(stopped.status, Some(130), "{}", stopped.output);
    let report = read_json(&dir.path().join("overheads.json"));
    assert_eq!(report["interrupted"], Value::Bool(true), "{report}");
    let unmeasured = &report["overheads"]["unmeasured"];
    match report["release_latency"].as_object() {
        // Stopped inside: the jobs released until the Ctrl-C, never the
        // minute's 60 000 per CPU.
        Some(latency) => {
            assert_eq!(latency["stopped"], Value::Bool(true), "{report}");
            let cpus = latency["cpus"].as_array().unwrap().len() as u64;
            assert!(latency["all"]["count"].as_u64().unwrap() < 60_000 * cpus);
        }
        None => assert!(
            unmeasured["release_latency"]
                .as_str()
                .is_some_and(|why| why.contains("interrupted")),
            "{report}"
        ),
    }
    assert!(
        unmeasured["tick"]
            .as_str()
            .is_some_and(|why| why.contains("interrupted")),
        "{report}"
    );
    let _: tinct_bench::overheads::OverheadsResult = serde_json::from_value(report).unwrap();
}

#[test]
fn a_second_ctrl_c_ends_a_bench_at_once() {
    let Some(_serial) = privileged_serial("SCHED_FIFO pipeline bench") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // Two rounds of 60 000 samples per policy: the first Ctrl-C waits for
    // a run of seconds to end, the second does not.
    let stopped = signal_after(
        &[
            "bench",
            "pipeline",
            "--quick",
            "--reps",
            "2",
            "--samples",
            "120000",
            "--no-progress",
            "--out",
            dir.path().to_str().unwrap(),
        ],
        Says::OnStderr,
        "tinct bench pipeline: measuring",
        // Past the set-up (a Ctrl-C there stops before any run starts,
        // which a loaded machine can stretch past 200 ms), inside the
        // first run of seconds.
        Duration::from_millis(1500),
        2,
        Reaches::Tinct,
    );
    assert_eq!(stopped.status, Some(130), "{}", stopped.output);
    assert!(
        !stopped.output.contains("bench interrupted"),
        "ended at once, not after writing: {}",
        stopped.output
    );
    assert!(!dir.path().join("pipeline.json").exists());
}

#[test]
fn ctrl_c_in_the_demo_keeps_its_files_and_says_where_it_stopped() {
    let Some(_serial) = privileged_serial("the demo's SCHED_FIFO run") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("demo");
    // Interrupted once the first step (the colour probe) is done: the demo
    // stops at a later step boundary, before its run.
    let stopped = interrupt_after(
        &["demo", "-o", out.to_str().unwrap(), "--duration", "1s"],
        Says::OnStdout,
        "1. colour probe",
        Duration::ZERO,
    );
    assert_eq!(stopped.status, Some(130), "{}", stopped.output);
    let verdict = read_json(&out.join("verdict.json"));
    assert_eq!(verdict["interrupted"], Value::Bool(true), "{verdict}");
    let phase = verdict["phase"].as_str().expect("the phase reached");
    assert!(
        ["platform", "worst cases", "plan and analysis", "run"].contains(&phase),
        "stopped after the colour probe, before the verdict: {phase}"
    );
    let steps: Vec<&str> = verdict["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(steps.first(), Some(&"colour probe"), "{verdict}");
    assert!(
        !steps.contains(&phase),
        "the phase reached is not a step done"
    );
    let files = verdict["files"].as_array().unwrap();
    assert!(files.iter().any(|f| f == "color-probe.json"), "{verdict}");
    for file in files {
        let path = out.join(file.as_str().unwrap());
        assert!(
            path.is_file(),
            "{} listed as kept, not there",
            path.display()
        );
    }
    assert!(
        !out.join("run").exists(),
        "stopped before the run: no run directory"
    );
}

#[test]
fn a_terminal_ctrl_c_that_also_ends_the_wcet_profile_workers_is_the_stop_not_a_failure() {
    let Some(_serial) = privileged_serial("the wcet-profile workers under SCHED_FIFO") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // 50 rounds of launches: the SIGINT finds a worker running (they run
    // back to back) and ends it with the bench.
    let stopped = signal_after(
        &[
            "bench",
            "wcet-profile",
            "--quick",
            "--uncolored",
            "--reps",
            "50",
            "--no-progress",
            "--out",
            dir.path().to_str().unwrap(),
        ],
        Says::OnStderr,
        "tinct bench wcet-profile: measuring",
        Duration::from_millis(700),
        1,
        Reaches::ItsProcessGroup,
    );
    assert_eq!(stopped.status, Some(130), "{}", stopped.output);
    assert!(
        stopped.output.contains("bench interrupted (Ctrl-C)")
            && stopped.output.contains("written to")
            && !stopped.output.contains("and then"),
        "the stop, not a failed worker: {}",
        stopped.output
    );
    let report = read_json(&dir.path().join("wcet-profile.json"));
    let completed = interrupted_header(&report);
    assert_eq!(report["rounds_requested"], 50, "{report}");
    let points = report["points"].as_array().unwrap();
    assert_eq!(points.is_empty(), completed == 0, "{report}");
    let _: tinct_bench::wcet_profile::WcetProfileResult = serde_json::from_value(report).unwrap();
}
