//! `tinct doctor` end to end: live on this machine and on the fixture trees
//! of tinct-sys.

mod common;

use common::{find_by, json_stdout, tinct};
use serde_json::Value;
use std::path::PathBuf;

fn doctor(args: &[&str]) -> (Value, std::process::Output) {
    let output = tinct().arg("doctor").args(args).output().unwrap();
    let json = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
    (json, output)
}

/// The report's finding about `subject`.
fn finding<'a>(report: &'a Value, subject: &str) -> &'a Value {
    find_by(&report["findings"], "subject", subject)
}

fn fixture(name: &str) -> String {
    tinct_sys::testing::fixture_path(name).display().to_string()
}

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

#[test]
fn live_json_reports_pmu_resctrl_and_pagemap_as_sysfs_says() {
    let (report, output) = doctor(&["--json"]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(report["live"], true);
    // Every finding has the four fields and a known level.
    for f in report["findings"].as_array().unwrap() {
        let level = f["level"].as_str().unwrap();
        assert!(["ok", "warning", "blocker"].contains(&level), "{f}");
        assert!(
            f["subject"].is_string() && f["found"].is_string() && f.get("fix").is_some(),
            "{f}"
        );
    }
    // Hardware events: a warning with the vPMU fix exactly when sysfs has no CPU PMU.
    let has_pmu = ["cpu", "cpu_core", "cpu_atom"].iter().any(|d| {
        PathBuf::from("/sys/bus/event_source/devices")
            .join(d)
            .exists()
    });
    let hw = finding(&report, "perf events (hardware)");
    if has_pmu {
        assert_eq!(hw["level"], "ok", "{hw}");
    } else {
        assert_eq!(hw["level"], "warning", "{hw}");
        assert!(
            hw["fix"]
                .as_str()
                .unwrap()
                .contains("bare metal or enable vPMU"),
            "{hw}"
        );
        assert!(hw["found"].as_str().unwrap().contains("ENOENT"), "{hw}");
    }
    // resctrl: mounted (ok) or not (warning), as /proc/mounts says.
    let mounted = std::fs::read_to_string("/proc/mounts")
        .unwrap()
        .lines()
        .any(|l| l.contains(" resctrl "));
    let resctrl = finding(&report, "resctrl");
    assert_eq!(
        resctrl["level"],
        if mounted { "ok" } else { "warning" },
        "{resctrl}"
    );
    assert_eq!(
        report["facts"]["resctrl"]["mount_point"].is_null(),
        !mounted
    );
    // pagemap: readable as root (PFN shown), blocker otherwise.
    let pagemap = finding(&report, "pagemap PFNs");
    if is_root() {
        assert_eq!(pagemap["level"], "ok", "{pagemap}");
        assert_eq!(report["facts"]["pagemap_probe"]["result"], "readable");
        assert!(report["facts"]["pagemap_probe"]["pfn"].as_u64().unwrap() > 0);
        // Colouring as a backend also needs LLC colours the topology gives
        // (a KVM guest of a sliced L3 gives none: `llc_colors` null).
        let colours = report["llc_colors"]["colors"]["colors"].as_u64();
        let backend = report["backend"].as_str().unwrap();
        if colours.is_some_and(|c| c > 1) {
            assert!(["coloring", "both"].contains(&backend), "{backend}");
        } else {
            assert!(["none", "resctrl"].contains(&backend), "{backend}");
            let said = finding(&report, "cache partitioning backend");
            assert!(
                said["found"]
                    .as_str()
                    .unwrap()
                    .contains("page coloring: no"),
                "{said}"
            );
        }
    } else {
        assert_eq!(pagemap["level"], "blocker", "{pagemap}");
    }
    // The cache table agrees with sysfs for cpu0's last cache index.
    let caches = report["caches"].as_array().unwrap();
    assert!(!caches.is_empty());
    let llc = caches
        .iter()
        .max_by_key(|c| c["level"].as_u64().unwrap())
        .unwrap();
    // Its colours are the rule's (tinct-sys's cache_slices, which a sliced
    // or virtual machine's LLC can give fewer than the way size: never more),
    // or none where the rule refuses.
    let way = llc["size_bytes"].as_u64().unwrap() / llc["ways"].as_u64().unwrap();
    let rule = tinct_sys::cache_slices::machine_color_geometry(&tinct_sys::SysRoot::live(), 4096);
    match (&llc["colors"]["colors"], rule) {
        (serde_json::Value::Number(n), Ok(rule)) => {
            let colors = n.as_u64().unwrap();
            assert_eq!(colors, rule.colors.colors, "{llc}");
            assert!(colors <= (way / 4096).max(1), "{llc}");
        }
        (colors, rule) => assert!(colors.is_null() && rule.is_err(), "{llc} {rule:?}"),
    }
}

#[test]
fn human_report_names_every_subject_and_exits_zero() {
    let output = tinct().arg("doctor").output().unwrap();
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).unwrap();
    for subject in [
        "CPUs and SMT",
        "cache hierarchy",
        "page colors",
        "NUMA nodes",
        "pagemap PFNs",
        "SCHED_FIFO",
        "RLIMIT_MEMLOCK",
        "RT throttling",
        "perf events (hardware)",
        "perf events (software)",
        "resctrl",
        "kernel and preemption",
        "frequency governor",
        "isolcpus / nohz_full",
        "cache partitioning backend",
    ] {
        assert!(text.contains(subject), "missing {subject}:\n{text}");
    }
    assert!(text.contains("color bits"));
}

#[test]
fn fixture_root_reports_probes_as_not_probed() {
    let (report, output) = doctor(&["--json", "--root", &fixture("intel-2node")]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(report["live"], false);
    assert_eq!(report["backend"], "resctrl");
    assert_eq!(finding(&report, "SCHED_FIFO")["level"], "not_probed");
    assert_eq!(finding(&report, "pagemap PFNs")["level"], "not_probed");
    assert!(report["facts"]["pagemap_probe"].is_null());
    let resctrl = finding(&report, "resctrl");
    assert!(
        resctrl["found"].as_str().unwrap().contains("fffff"),
        "{resctrl}"
    );

    let (report, _) = doctor(&["--json", "--root", &fixture("kvm-epyc")]);
    let hw = finding(&report, "perf events (hardware)");
    assert_eq!(hw["level"], "warning");
    assert!(hw["fix"].as_str().unwrap().contains("vPMU"));
}

#[test]
fn a_missing_root_is_bad_input() {
    let (_, output) = doctor(&["--root", "/nonexistent/tinct-fixture"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--root /nonexistent/tinct-fixture")
            && stderr.contains("expected a directory"),
        "{stderr}"
    );
}

#[test]
fn an_unprivileged_user_gets_blockers_with_fixes() {
    if !tinct_sys::testing::privileged_or_skip("dropping to uid 65534 with setpriv") {
        return;
    }
    // A copy in a world-readable directory, in case the target directory
    // lies under a path uid 65534 may not traverse (e.g. /root).
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let binary = dir.path().join("tinct");
    std::fs::copy(assert_cmd::cargo::cargo_bin("tinct"), &binary).unwrap();
    let run = || {
        std::process::Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(&binary)
            .args(["doctor", "--json"])
            .output()
            .expect("setpriv (util-linux) is needed to run doctor as another user")
    };
    // A test thread forking at the moment of the copy can hold the new file
    // open for writing until its exec: ETXTBSY. That passes; try again.
    let mut output = run();
    for _ in 0..50 {
        if !String::from_utf8_lossy(&output.stderr).contains("Text file busy") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
        output = run();
    }
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: Value = json_stdout(&output);
    let pagemap = finding(&report, "pagemap PFNs");
    assert_eq!(pagemap["level"], "blocker", "{pagemap}");
    assert!(
        pagemap["fix"].as_str().unwrap().contains("cap_sys_admin"),
        "{pagemap}"
    );
    assert_eq!(report["facts"]["pagemap_probe"]["result"], "pfn_hidden");
    let fifo = finding(&report, "SCHED_FIFO");
    assert_eq!(fifo["level"], "blocker", "{fifo}");
    assert!(
        fifo["fix"].as_str().unwrap().contains("cap_sys_nice"),
        "{fifo}"
    );
    // Without readable PFNs coloring is out; resctrl only if the machine has it.
    assert!(["none", "resctrl"].contains(&report["backend"].as_str().unwrap()));
}

/// Issue 10: `doctor --root` on a tree holding a FIFO where a file should
/// be blocked for ever, and a malformed cache file lost the whole topology.
/// Now both are findings naming the file, and the command finishes.
#[test]
fn a_fifo_and_a_malformed_cache_file_in_the_root_are_findings() {
    let tree = tempfile::tempdir().unwrap();
    let copied = std::process::Command::new("cp")
        .args(["-r", &format!("{}/.", fixture("kvm-epyc"))])
        .arg(tree.path())
        .status()
        .unwrap();
    assert!(copied.success());
    let cpuinfo = tree.path().join("proc/cpuinfo");
    std::fs::remove_file(&cpuinfo).unwrap();
    tinct_sys::testing::make_fifo(&cpuinfo).unwrap();
    std::fs::write(
        tree.path()
            .join("sys/devices/system/cpu/cpu1/cache/index2/size"),
        "lots\n",
    )
    .unwrap();
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("tinct"))
        .args(["doctor", "--json", "--root"])
        .arg(tree.path())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // A hang guard, not a timing claim: the command must end by itself.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            panic!("tinct doctor --root hangs on a FIFO");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success());
    let report: Value = json_stdout(&output);
    let cpuinfo = finding(&report, "reading cpuinfo");
    assert!(
        cpuinfo["found"].as_str().unwrap().contains("found a FIFO"),
        "{cpuinfo}"
    );
    let cache = finding(&report, "reading topology file");
    assert!(
        cache["found"]
            .as_str()
            .unwrap()
            .contains("cpu1/cache/index2/size"),
        "{cache}"
    );
    // The CPUs survive, so the isolation advice names CPU 1.
    let isolation = finding(&report, "isolcpus / nohz_full");
    assert!(
        isolation["fix"].as_str().unwrap().contains("managed_irq,1"),
        "{isolation}"
    );
}
