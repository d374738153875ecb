//! `tinct run` of SCHED_DEADLINE reservations (issue 30): each runs
//! pinned to its core in a root domain of that CPU alone, with the runtime
//! and kernel deadline the analysis derives, and the machine's cpusets are
//! as before afterwards, also when the run's process is killed. Needs
//! root and the cpuset controller on cgroup v1; without root the tests
//! skip (or fail under TINCT_REQUIRE_PRIVILEGED=1), without the cpuset
//! hierarchy they say why they skip.

mod common;

use common::{example, run_file, run_plan_text};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tinct_sys::dl_partitions::{root_load_balance, v1_mount_point};
use tinct_sys::testing::privileged_serial;

/// The cpuset hierarchy, or why the test skips.
fn cpuset_root() -> Option<PathBuf> {
    match v1_mount_point() {
        Ok(root) => Some(root),
        Err(e) => {
            eprintln!("skipped: partitioned SCHED_DEADLINE needs the cpuset controller on v1: {e}");
            None
        }
    }
}

/// The run cpusets left under `root`.
fn partitions_left(root: &Path) -> Vec<String> {
    std::fs::read_dir(root)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("tinct-dl-"))
        .collect()
}

#[test]
fn a_light_reservation_plan_runs_partitioned_with_its_bounds() {
    let Some(_serial) = privileged_serial("tinct run (SCHED_DEADLINE, cpusets)") else {
        return;
    };
    let Some(root) = cpuset_root() else {
        return;
    };
    let balanced_before = root_load_balance(&root).unwrap();
    let run = run_file(&example("deadline-light.toml"), &["--duration", "1s"]);
    let summary = run.completes().summary();
    let stdout = run.stdout();
    assert!(
        stdout.contains("were root domains of their own"),
        "the run says how it partitioned: {stdout}"
    );
    let mut released = 0;
    for task in summary["tasks"].as_array().unwrap() {
        let name = task["name"].as_str().unwrap();
        let policy = &task["policy"]["policy"];
        let reservation = name != "logger";
        assert_eq!(policy == "deadline", reservation, "{name}: {policy}");
        assert!(
            task["bound"]["wcrt_ns"].is_u64(),
            "{name} has its EDF bound"
        );
        released += task["jobs"]["released"].as_u64().unwrap();
    }
    // 1 s: control 100, filter 50, logger 10, sensor 200.
    assert_eq!(released, 360, "{summary}");
    assert_eq!(partitions_left(&root), Vec::<String>::new());
    assert_eq!(root_load_balance(&root).unwrap(), balanced_before);
}

/// The threads of `pid` under SCHED_DEADLINE (policy 6, field 41 of stat).
fn deadline_threads(pid: i32) -> usize {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    tasks
        .flatten()
        .filter(|t| {
            std::fs::read_to_string(t.path().join("stat")).is_ok_and(|stat| {
                stat.rsplit_once(") ")
                    .and_then(|(_, rest)| rest.split_whitespace().nth(41 - 3).map(str::to_string))
                    .as_deref()
                    == Some("6")
            })
        })
        .count()
}

#[test]
fn a_killed_run_leaves_no_partition_behind() {
    let Some(_serial) = privileged_serial("tinct run (SCHED_DEADLINE, cpusets)") else {
        return;
    };
    let Some(root) = cpuset_root() else {
        return;
    };
    let balanced_before = root_load_balance(&root).unwrap();
    let out = tempfile::tempdir().unwrap();
    let mut tinct = common::tinct_process()
        .args(["run", example("deadline-light.toml").to_str().unwrap()])
        .args(["--duration", "60s", "--out"])
        .arg(out.path().join("run"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let give_up = Instant::now() + Duration::from_secs(60);
    // The run's process (the supervisor's child) once its reservations run.
    let child = loop {
        assert!(
            Instant::now() < give_up,
            "no SCHED_DEADLINE thread within 60 s"
        );
        assert!(tinct.try_wait().unwrap().is_none(), "tinct ended early");
        if let Some(&child) = tinct_rt::testing::child_processes(tinct.id()).first()
            && deadline_threads(child) == 3
        {
            break child;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    assert!(
        !partitions_left(&root).is_empty(),
        "the run made its partitions"
    );
    let pid = rustix::process::Pid::from_raw(child).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::KILL).unwrap();
    let status = loop {
        if let Some(status) = tinct.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > give_up {
            let _ = tinct.kill();
            panic!("tinct did not end after its run's process was killed");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(
        !status.success(),
        "a killed run is not a success: {status:?}"
    );
    assert_eq!(partitions_left(&root), Vec::<String>::new());
    assert_eq!(root_load_balance(&root).unwrap(), balanced_before);
}

#[test]
fn reservations_that_cannot_run_are_refused_with_the_field() {
    // No privilege needed: the plan is refused before anything runs.
    let light = std::fs::read_to_string(example("deadline-light.toml")).unwrap();
    let unpinned = run_plan_text(&light, &["--placement", "os"]);
    let stderr = unpinned.exits(2).stderr();
    assert!(
        stderr.contains("field `policy`") && stderr.contains("partitioned EDF"),
        "{stderr}"
    );
    // A release jitter leaves the kernel deadline D − J = 3 ms below the
    // file's runtime of 4 ms.
    let late = light.replace(
        "deadline = \"5ms\"\n",
        "deadline = \"5ms\"\nruntime = \"4ms\"\njitter = \"2ms\"\n",
    );
    assert_ne!(late, light);
    let refused = run_plan_text(&late, &[]);
    let stderr = refused.exits(2).stderr();
    assert!(
        stderr.contains("task 'control' field `runtime`") && stderr.contains("kernel deadline 3ms"),
        "{stderr}"
    );
    // A jitter that reaches D leaves no kernel deadline at all.
    let no_deadline = light.replace(
        "deadline = \"5ms\"\n",
        "deadline = \"5ms\"\njitter = \"5ms\"\n",
    );
    let stderr = run_plan_text(&no_deadline, &[]).exits(2).stderr();
    assert!(
        stderr.contains("task 'control' field `jitter`") && stderr.contains("D − J"),
        "{stderr}"
    );
}
