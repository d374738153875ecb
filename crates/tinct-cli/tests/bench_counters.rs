//! Counters in the benches (issue 15): every condition of a bench carries
//! its counter totals, each event either counted or unavailable with the
//! kernel's reason (never a fake zero); the coherence bench counts the
//! events of gracioli Fig. 9 and runs the paper's fixed loop on request.

use assert_cmd::Command;
use serde_json::Value;
use std::path::Path;
use std::sync::Mutex;
use tinct_bench::coherence;

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

fn tinct() -> Command {
    Command::cargo_bin("tinct").unwrap()
}

fn run_bench(dir: &Path, bench: &str, args: &[&str]) -> (Value, String) {
    let output = tinct()
        .args(["bench", bench])
        .args(args)
        .arg("--out")
        .arg(dir)
        .arg("--no-progress")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    assert!(
        output.status.success(),
        "tinct bench {bench} {args:?} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = std::fs::read_to_string(dir.join(format!("{bench}.json"))).unwrap();
    (serde_json::from_str(&text).unwrap(), stdout)
}

fn no_cpu_pmu() -> bool {
    tinct_sys::perf::EventSources::read(&tinct_sys::SysRoot::live())
        .unwrap()
        .cpu_pmus
        .is_empty()
}

/// Every condition has a total or a reason for every event, never both,
/// never neither; hardware events have reasons where there is no PMU;
/// the software events count (the bench runs as root in CI).
fn assert_counters(json: &Value, runs_per_condition: Option<u64>) -> Vec<String> {
    let counters = json["counters"].as_array().expect("counters in the header");
    assert!(!counters.is_empty());
    let mut names = Vec::new();
    for c in counters {
        if let Some(runs) = runs_per_condition {
            assert_eq!(c["runs"].as_u64(), Some(runs), "{c}");
        }
        for e in c["events"].as_array().unwrap() {
            let (total, why) = (&e["total"], &e["unavailable"]);
            assert!(total.is_null() != why.is_null(), "a total or a reason: {e}");
            let name = e["event"].as_str().unwrap();
            if ["task-clock", "context-switches", "page-faults"].contains(&name)
                && tinct_sys::testing::privileged_or_skip("kernel software events")
            {
                assert!(total.is_u64(), "software events count: {e}");
            }
            if name == "task-clock" {
                assert!(total.as_u64().is_some_and(|t| t > 0), "{e}");
            }
            if no_cpu_pmu() && name == "cycles" {
                assert!(why.as_str().unwrap().starts_with("ENOENT"), "{e}");
            }
        }
        names.push(c["condition"].as_str().unwrap().to_string());
    }
    names
}

#[test]
fn coherence_counts_every_condition_with_the_fig9_events() {
    let _serial = serial();
    let tmp = tempfile::tempdir().unwrap();
    let args = [
        "--sizes",
        "32,64",
        "--work",
        "65536",
        "--increments",
        "65536",
        "--reps",
        "2",
    ];
    let (json, stdout) = run_bench(tmp.path(), "coherence", &args);
    let report: coherence::Report = serde_json::from_value(json.clone()).unwrap();
    assert_eq!(serde_json::to_value(&report).unwrap(), json, "round trip");
    let names = assert_counters(&json, Some(2));
    assert!(names.iter().any(|n| n == "32x32/sequential"), "{names:?}");
    assert!(
        names.iter().any(|n| n.starts_with("false-sharing/")),
        "{names:?}"
    );
    // The seven counters of Fig. 9, each counted or explained.
    let fig9 = json["fig9"].as_array().unwrap();
    let keys: Vec<&str> = fig9.iter().map(|f| f["key"].as_str().unwrap()).collect();
    assert_eq!(
        keys,
        [
            "l2-request-i",
            "l2-request-s",
            "llc-misses",
            "snoop-hit",
            "snoop-invalidate",
            "snoop-share",
            "snoop-share-invalidate"
        ]
    );
    for f in fig9 {
        match f["counter"].as_str() {
            Some(name) => {
                let listed = json["counters"][0]["events"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|e| e["event"] == name);
                assert!(listed, "{name} is counted per condition");
            }
            None => assert!(f["unresolved"].is_string(), "{f}"),
        }
    }
    assert!(stdout.contains("Fig. 9 counters"), "{stdout}");
    if no_cpu_pmu() {
        assert!(stdout.contains("unavailable: ENOENT"), "{stdout}");
    }
    // One CSV row per condition and event, plus the header.
    let csv = std::fs::read_to_string(tmp.path().join("coherence-counters.csv")).unwrap();
    let rows: usize = report.header.counters.iter().map(|c| c.events.len()).sum();
    assert_eq!(csv.lines().count(), 1 + rows);
    assert!(
        !csv.contains(",0,false,ENOENT"),
        "a reason never comes with a 0"
    );
}

#[test]
fn coherence_runs_the_papers_fixed_loop() {
    let _serial = serial();
    let tmp = tempfile::tempdir().unwrap();
    let args = [
        "--sizes",
        "16,32",
        "--repetitions",
        "300",
        "--increments",
        "4096",
        "--reps",
        "2",
    ];
    let (json, stdout) = run_bench(tmp.path(), "coherence", &args);
    assert_eq!(json["parameters"]["fixed_repetitions"], 300);
    assert!(json["parameters"]["work_per_function"].is_null());
    for size in json["sizes"].as_array().unwrap() {
        assert_eq!(size["repetitions"], 300, "the same loop at every size");
    }
    assert!(stdout.contains("300 repetitions at every size"), "{stdout}");
    let orderings = json["orderings"].as_array().unwrap();
    assert_eq!(
        orderings.len(),
        2 * json["sizes"][0]["parallel"].as_array().unwrap().len()
    );
}

#[test]
fn coherence_refuses_both_loop_modes_and_a_zero_loop() {
    for args in [
        vec!["--work", "100", "--repetitions", "10"],
        vec!["--repetitions", "0"],
    ] {
        let output = tinct()
            .args(["bench", "coherence", "--no-progress"])
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("--repetitions"), "{stderr}");
    }
}

#[test]
fn crpd_splits_the_switch_and_measures_the_instruction_cache() {
    let _serial = serial();
    let tmp = tempfile::tempdir().unwrap();
    let args = [
        "--quick",
        "--cache",
        "instruction",
        "--words-per-line",
        "1,2",
        "--reps",
        "3",
    ];
    let (json, stdout) = run_bench(tmp.path(), "crpd", &args);
    let result: tinct_bench::crpd::CrpdResult = serde_json::from_value(json.clone()).unwrap();
    assert_eq!(serde_json::to_value(&result).unwrap(), json, "round trip");
    // Table 1: interrupt + resume of every preemption make its total.
    let sw = &result.switch;
    for row in [&sw.best, &sw.worst]
        .into_iter()
        .chain(sw.no_cache.measured.as_ref())
    {
        assert_eq!(row.total.count, 3);
        assert!(
            row.total.min >= row.interrupt.min + row.resume.min,
            "{row:?}"
        );
        assert!(
            row.total.max <= row.interrupt.max + row.resume.max,
            "{row:?}"
        );
    }
    assert!(sw.no_cache.name.contains("no cache (approximation"));
    assert!(stdout.contains("preemption, no cache"), "{stdout}");
    // The instruction-cache sweep: the code's miss ratio is 2 lines in 3
    // instructions, and the bound is never below the median difference.
    let level = &result.levels[0];
    assert_eq!(level.cache, tinct_bench::crpd::CacheKind::Instruction);
    assert_eq!(level.words_per_line.as_deref(), Some(&[1, 2][..]));
    assert!((level.code_miss_ratio.unwrap() - 2.0 / 3.0).abs() < 1e-12);
    assert!(
        level.level == "L1i" || level.level.starts_with('L'),
        "{}",
        level.level
    );
    for p in &level.points {
        assert!(p.crpd_bound_ns >= p.crpd_ns, "{p:?}");
    }
    assert!(level.max_crpd_bound_ns >= level.max_crpd_ns);
    assert!(stdout.contains("code, miss ratio 0.67"), "{stdout}");
    // Counters per condition: the switch cases and every sweep point.
    let names = assert_counters(&json, Some(3));
    assert!(names.iter().any(|n| n == "switch/best"), "{names:?}");
    assert!(names.iter().any(|n| n.ends_with("/preempted")), "{names:?}");
    let csv = std::fs::read_to_string(tmp.path().join("switch.csv")).unwrap();
    assert!(
        csv.lines().next().unwrap().starts_with("case,part,"),
        "{csv}"
    );
    assert!(
        csv.contains("worst,interrupt") && csv.contains("worst,resume"),
        "{csv}"
    );
}

#[test]
fn crpd_refuses_words_per_line_it_cannot_generate() {
    for args in [
        vec!["--words-per-line", "2"],
        vec!["--cache", "instruction", "--words-per-line", "16"],
        vec!["--cache", "instruction", "--words-per-line", "0"],
    ] {
        let output = tinct()
            .args(["bench", "crpd", "--quick", "--no-progress"])
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("--words-per-line"), "{stderr}");
    }
}

#[test]
fn calibrate_logs_the_totals_of_every_interleaved_run() {
    let _serial = serial();
    let tmp = tempfile::tempdir().unwrap();
    let (json, _) = run_bench(tmp.path(), "calibrate", &["--quick", "--reps", "2"]);
    let names = assert_counters(&json, None);
    assert!(names.iter().any(|n| n.starts_with("run 1/")), "{names:?}");
    assert!(
        names.iter().any(|n| n.ends_with("/read")),
        "bandwidth: {names:?}"
    );
}
