//! `tinct bench calibrate | crpd | wcet-profile` end to end: each `--quick`
//! run works, its JSON has the fields and types the schemas below require,
//! and its numbers are consistent with each other. Never an absolute time:
//! only orderings and ratios with generous tolerances (this is a shared,
//! noisy VM).

use assert_cmd::Command;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use tinct_bench::harness::schema::{self, COMMON, Kind};

/// The benches pin threads and time memory: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn bench(args: &[&str]) -> std::process::Output {
    Command::cargo_bin("tinct")
        .unwrap()
        .arg("bench")
        .args(args)
        .arg("--no-progress")
        .output()
        .unwrap()
}

fn run_ok(args: &[&str]) -> String {
    let output = bench(args);
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    assert!(
        output.status.success(),
        "tinct bench {args:?} failed: {}\nstdout:\n{stdout}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn validate(json: &Value, fields: &[(&str, Kind)], stats: &[&str]) {
    let mut errors = Vec::new();
    for group in [COMMON, fields] {
        if let Err(e) = schema::check(json, group) {
            errors.extend(e);
        }
    }
    for prefix in stats {
        if let Err(e) = schema::check_stats(json, prefix) {
            errors.extend(e);
        }
    }
    assert!(
        errors.is_empty(),
        "schema violations:\n{}",
        errors.join("\n")
    );
}

fn assert_files(dir: &Path, names: &[&str]) {
    for name in names {
        let path = dir.join(name);
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(!text.trim().is_empty(), "{} is empty", path.display());
        if name.ends_with(".svg") {
            assert!(
                text.starts_with("<svg") && text.trim_end().ends_with("</svg>"),
                "{name} is no SVG"
            );
            assert!(!text.contains("NaN"), "{name} has NaN coordinates");
        }
        if name.ends_with(".csv") {
            assert!(text.lines().count() >= 2, "{name} has no data rows");
        }
    }
}

fn f(value: &Value) -> f64 {
    value
        .as_f64()
        .unwrap_or_else(|| panic!("not a number: {value}"))
}

fn u(value: &Value) -> u64 {
    value
        .as_u64()
        .unwrap_or_else(|| panic!("not an unsigned integer: {value}"))
}

const CALIBRATE: &[(&str, Kind)] = &[
    ("partitions", Kind::Unsigned),
    ("latency[].size_bytes", Kind::Unsigned),
    ("latency[].fits_in", Kind::String),
    ("latency[].accesses_per_sample", Kind::Unsigned),
    ("latency[].random_ns_per_access", Kind::Number),
    ("latency[].page_local_ns_per_access", Kind::Number),
    ("latency[].random_min_ns_per_access", Kind::Number),
    ("latency[].page_local_min_ns_per_access", Kind::Number),
    ("latency[].tlb_penalty_ns", Kind::Number),
    ("levels[].level", Kind::String),
    ("levels[].probe_bytes", Kind::Unsigned),
    ("levels[].ns_per_access", Kind::Number),
    ("levels[].random_ns_per_access", Kind::Number),
    ("levels[].min_ns_per_access", Kind::Number),
    ("levels[].random_min_ns_per_access", Kind::Number),
    ("huge_pages.measured", Kind::Bool),
    ("huge_pages.note", Kind::String),
    ("bandwidth.buffer_bytes", Kind::Unsigned),
    ("bandwidth.read_gb_per_s", Kind::Number),
    ("bandwidth.write_gb_per_s", Kind::Number),
    ("refill.partitions", Kind::Unsigned),
    ("refill.partition_bytes", Kind::Unsigned),
    ("refill.llc_bytes", Kind::Unsigned),
    ("refill.refill_ns", Kind::Unsigned),
    ("refill.refill_latency_bound_ns", Kind::Unsigned),
    ("refill.refill", Kind::String),
    ("refill.platform_line", Kind::String),
];

#[test]
fn calibrate_quick_is_consistent() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("cal");
    let stdout = run_ok(&["calibrate", "--quick", "--out", out.to_str().unwrap()]);
    let json = read_json(&out.join("calibrate.json"));
    validate(
        &json,
        CALIBRATE,
        &[
            "latency[].random",
            "latency[].page_local",
            "bandwidth.read",
            "bandwidth.write",
            "refill.cold_pages",
            "refill.warm_pages",
            "refill.cold_chase",
            "refill.warm_chase",
        ],
    );
    assert_eq!(json["bench"], "calibrate");
    assert_eq!(json["quick"], true);
    // The huge-page chase sits next to the 4 KiB chase, or the JSON says why not.
    let huge = &json["huge_pages"];
    if huge["measured"] == true {
        let measured = json["latency"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["huge_random_min_ns_per_access"].is_number())
            .inspect(|p| {
                assert!(p["huge_tlb_penalty_ns"].is_number(), "{p}");
                assert!(p["huge_random"]["median_ns"].is_u64(), "{p}");
            })
            .count();
        assert!(measured > 0);
        assert_eq!(huge["sizes_measured"], measured);
    } else {
        let note = huge["note"].as_str().unwrap();
        assert!(note.starts_with("THP unavailable: "), "{note}");
    }
    assert_files(
        &out,
        &[
            "latency.csv",
            "conditions.csv",
            "latency.svg",
            "refill.toml",
        ],
    );

    // Latency grows with the working set across levels: each level at least
    // half the one below (noise), and memory clearly slower than L1. The
    // fastest samples are compared (interference only adds time).
    let levels = json["levels"].as_array().unwrap();
    assert!(
        levels.len() >= 2,
        "expected a latency for at least two levels: {levels:?}"
    );
    for pair in levels.windows(2) {
        let (lower, upper) = (
            f(&pair[0]["random_ns_per_access"]),
            f(&pair[1]["random_ns_per_access"]),
        );
        assert!(
            upper >= 0.5 * lower,
            "{} ({upper:.1} ns) is much faster than {} ({lower:.1} ns)",
            pair[1]["level"],
            pair[0]["level"]
        );
    }
    let first = f(&levels[0]["random_min_ns_per_access"]);
    let last = f(&levels[levels.len() - 1]["random_min_ns_per_access"]);
    assert!(
        last >= 2.0 * first,
        "the largest working set ({last:.1} ns) is not slower than the smallest ({first:.1} ns)"
    );
    let sizes: Vec<u64> = json["latency"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| u(&p["size_bytes"]))
        .collect();
    assert!(
        sizes.windows(2).all(|w| w[0] < w[1]),
        "sizes not increasing: {sizes:?}"
    );

    // Δ is positive, and a partition refilled at the measured read bandwidth
    // takes about as long (within a factor of 20 either way: page order,
    // prefetching and the warm baseline all differ from a stream).
    let refill = &json["refill"];
    let refill_ns = u(&refill["refill_ns"]) as f64;
    assert!(refill_ns > 0.0);
    let partition = u(&refill["partition_bytes"]) as f64;
    assert_eq!(
        u(&refill["partition_bytes"]),
        u(&refill["llc_bytes"]) / u(&refill["partitions"])
    );
    let streamed_ns = partition / f(&json["bandwidth"]["read_gb_per_s"]);
    let ratio = refill_ns / streamed_ns;
    assert!(
        (0.05..=20.0).contains(&ratio),
        "Δ = {refill_ns} ns but {partition} B at the read bandwidth take {streamed_ns:.0} ns (ratio {ratio:.2})"
    );
    // The latency-bound refill is not faster than the streamed one by much.
    assert!(u(&refill["refill_latency_bound_ns"]) as f64 >= 0.5 * refill_ns);

    // The [platform] line is in the task-set syntax and matches the JSON.
    let line = refill["platform_line"].as_str().unwrap();
    let value = line
        .strip_prefix("refill = \"")
        .and_then(|v| v.strip_suffix('"'))
        .unwrap();
    let parsed = tinct_core::units::parse_duration(value).unwrap();
    assert!(parsed.0 as f64 >= refill_ns && (parsed.0 as f64) < refill_ns + 100.0);
    assert!(stdout.contains(line), "the summary does not print {line}");
    let toml = std::fs::read_to_string(out.join("refill.toml")).unwrap();
    assert!(toml.lines().any(|l| l == line));
}

const CRPD: &[(&str, Kind)] = &[
    ("policy", Kind::String),
    ("switch.wipe_bytes", Kind::Unsigned),
    ("levels[].level", Kind::String),
    ("levels[].cache_bytes", Kind::Unsigned),
    ("levels[].ways", Kind::Unsigned),
    ("levels[].max_crpd_ns", Kind::Integer),
    ("levels[].max_crpd_at_bytes", Kind::Unsigned),
    ("levels[].max_crpd_at_percent", Kind::Number),
    ("levels[].theory_zero_percent", Kind::Number),
    ("levels[].crpd_mean_abs_error", Kind::Number),
    ("levels[].points[].size_bytes", Kind::Unsigned),
    ("levels[].points[].percent_of_level", Kind::Number),
    ("levels[].points[].crpd_ns", Kind::Integer),
    ("levels[].points[].crpd_fraction", Kind::Number),
    ("levels[].points[].crpd_fraction_theory", Kind::Number),
    ("levels[].points[].baseline_ns_per_access", Kind::Number),
    ("levels[].points[].miss_ratio_estimate", Kind::NumberOrNull),
    ("levels[].points[].miss_ratio_theory", Kind::Number),
];

#[test]
fn crpd_quick_is_consistent() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("crpd");
    run_ok(&["crpd", "--quick", "--out", out.to_str().unwrap()]);
    let json = read_json(&out.join("crpd.json"));
    validate(
        &json,
        CRPD,
        &[
            "switch.best",
            "switch.worst",
            "levels[].points[].baseline",
            "levels[].points[].preempted",
        ],
    );
    assert_files(&out, &["crpd.csv", "switch.csv"]);
    // Root may use SCHED_FIFO, and the bench says which policy it ran under.
    let policy = json["policy"].as_str().unwrap();
    assert!(policy == "other" || policy.starts_with("fifo("), "{policy}");

    // Sebek's worst case (caches wiped by both tasks) is not cheaper than
    // the best case (both tasks empty).
    assert!(u(&json["switch"]["worst"]["median_ns"]) >= u(&json["switch"]["best"]["median_ns"]));

    for level in json["levels"].as_array().unwrap() {
        let name = level["level"].as_str().unwrap();
        assert_files(
            &out,
            &[
                &format!("crpd-{name}.svg"),
                &format!("miss-ratio-{name}.svg"),
            ],
        );
        let ways = u(&level["ways"]) as f64;
        let points = level["points"].as_array().unwrap();
        // A preemption that wipes the level costs the victim something somewhere.
        assert!(
            level["max_crpd_ns"].as_i64().unwrap() > 0,
            "no CRPD at all at {name}"
        );
        let max = level["max_crpd_ns"].as_i64().unwrap();
        assert!(points.iter().all(|p| p["crpd_ns"].as_i64().unwrap() <= max));
        // The theory columns are Sebek's Figures 5 and 7 at the point's size.
        for p in points {
            let x = f(&p["percent_of_level"]) / 100.0;
            let theory = f(&p["crpd_fraction_theory"]);
            if x <= 1.0 {
                assert!((theory - x).abs() < 1e-9);
                assert_eq!(f(&p["miss_ratio_theory"]), 0.0);
            } else if ways > 0.0 && x >= 1.0 + 1.0 / ways {
                assert_eq!(theory, 0.0);
                assert_eq!(f(&p["miss_ratio_theory"]), 1.0);
            }
            if let Some(estimate) = p["miss_ratio_estimate"].as_f64() {
                assert!((0.0..=1.0).contains(&estimate));
            }
        }
        if ways > 0.0 {
            assert!((f(&level["theory_zero_percent"]) - 100.0 * (1.0 + 1.0 / ways)).abs() < 1e-9);
        }
        // The victim's own pass gets slower per load once it outgrows the level.
        let per_load: Vec<f64> = points
            .iter()
            .map(|p| f(&p["baseline_ns_per_access"]))
            .collect();
        assert!(
            per_load[per_load.len() - 1] >= per_load[0],
            "{name}: 200 % of the level is faster per load than 25 %: {per_load:?}"
        );
    }
}

/// libtinct_preload.so next to the tinct binary, built if missing.
fn shim() -> PathBuf {
    let tinct = PathBuf::from(env!("CARGO_BIN_EXE_tinct"));
    let shim = tinct.parent().unwrap().join("libtinct_preload.so");
    if !shim.is_file() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = std::process::Command::new(cargo)
            .args(["build", "-p", "tinct-preload"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .unwrap();
        assert!(status.success(), "cannot build tinct-preload");
    }
    assert!(
        shim.is_file(),
        "{} is missing after building tinct-preload",
        shim.display()
    );
    shim
}

const WCET_PROFILE: &[(&str, Kind)] = &[
    ("task", Kind::String),
    ("body.kernel", Kind::String),
    ("body.working_set_bytes", Kind::Unsigned),
    ("body.memory_iterations", Kind::Unsigned),
    ("partitions", Kind::Unsigned),
    ("jobs_per_launch", Kind::Unsigned),
    ("placement.colored", Kind::Bool),
    ("placement.colors", Kind::Unsigned),
    ("placement.note", Kind::String),
    ("points[].p", Kind::Unsigned),
    ("points[].colors", Kind::Array),
    ("points[].wcet_ns", Kind::Unsigned),
    ("points[].acet_ns", Kind::Unsigned),
    ("points[].table_ns", Kind::Unsigned),
    ("wcet_line", Kind::String),
    ("refill", Kind::String),
    ("refill_source", Kind::String),
    ("taskset", Kind::String),
    ("counters", Kind::String),
    ("points[].llc_misses_max", Kind::NumberOrNull),
];

fn check_profile(json: &Value, out: &Path, jobs_per_p: u64) {
    validate(json, WCET_PROFILE, &["points[].jobs"]);
    assert_files(
        out,
        &[
            "wcet-profile.csv",
            "figure6.svg",
            "wcet.toml",
            "taskset.toml",
        ],
    );
    let points = json["points"].as_array().unwrap();
    let mut previous_table = u64::MAX;
    let mut previous_colors = 0;
    for p in points {
        assert_eq!(u(&p["jobs"]["count"]), jobs_per_p);
        // WCET is the maximum observed time; ACET the mean; the table value
        // is at least the WCET and never increases with p.
        assert_eq!(u(&p["wcet_ns"]), u(&p["jobs"]["max_ns"]));
        assert!(u(&p["acet_ns"]) <= u(&p["wcet_ns"]));
        assert!(u(&p["table_ns"]) >= u(&p["wcet_ns"]));
        assert!(u(&p["table_ns"]) <= previous_table);
        previous_table = u(&p["table_ns"]);
        // More partitions, more colors.
        let colors = p["colors"].as_array().unwrap().len();
        assert!(colors > previous_colors);
        previous_colors = colors;
    }
    let line = json["wcet_line"].as_str().unwrap();
    assert!(
        std::fs::read_to_string(out.join("wcet.toml"))
            .unwrap()
            .contains(line)
    );
    // The task-set file is accepted by `tinct analyze` unchanged, and its
    // wcet table is the line.
    let taskset = out.join("taskset.toml");
    let text = std::fs::read_to_string(&taskset).unwrap();
    assert!(text.contains(line), "taskset.toml lacks {line}");
    let analyze = Command::cargo_bin("tinct")
        .unwrap()
        .arg("analyze")
        .arg(&taskset)
        .output()
        .unwrap();
    assert!(
        analyze.status.success(),
        "tinct analyze rejected the profile: {}{}",
        String::from_utf8_lossy(&analyze.stdout),
        String::from_utf8_lossy(&analyze.stderr)
    );
}

#[test]
fn wcet_profile_quick_on_colored_memory_is_accepted_by_analyze() {
    if !tinct_sys::testing::privileged_or_skip(
        "wcet-profile on colored memory (pagemap frame numbers)",
    ) {
        return;
    }
    let shim = shim();
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("wp");
    let stdout = run_ok(&[
        "wcet-profile",
        "--quick",
        "--working-set",
        "256KiB",
        "--refill",
        "45.3us",
        "--preload",
        shim.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let json = read_json(&out.join("wcet-profile.json"));
    check_profile(&json, &out, 2 * 5);
    assert!(stdout.contains(json["wcet_line"].as_str().unwrap()));
    let ps: Vec<u64> = json["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| u(&p["p"]))
        .collect();
    assert_eq!(ps, vec![1, 8, 16, 32]);
    assert_eq!(json["refill"], "45.3us");
    // Every working-set page the workers checked lies in its partitions' colors.
    assert_eq!(json["placement"]["colored"], true);
    assert_eq!(
        f(&json["placement"]["pages_in_colors_ratio"]),
        1.0,
        "{}",
        json["placement"]["note"]
    );
    for p in json["points"].as_array().unwrap() {
        assert!(u(&p["pages_checked"]) > 0);
        assert_eq!(p["pages_checked"], p["pages_in_colors"]);
    }
}

#[test]
fn wcet_profile_takes_the_body_from_a_task_set() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.toml");
    std::fs::write(
        &input,
        r#"
[platform]
cores = 2
partitions = 8
memory = "256MiB"
refill = "20us"

[[task]]
name = "sensor"
period = "50ms"
memory = "512KiB"
wcet = { 1 = "5ms" }
body = { kernel = "read", working_set = "128KiB", iterations = 4096 }
"#,
    )
    .unwrap();
    let out = dir.path().join("wp");
    run_ok(&[
        "wcet-profile",
        "--quick",
        "--uncolored",
        "--taskset",
        input.to_str().unwrap(),
        "--task",
        "sensor",
        "--p",
        "1,4,8",
        "--jobs",
        "3",
        "--out",
        out.to_str().unwrap(),
    ]);
    let json = read_json(&out.join("wcet-profile.json"));
    check_profile(&json, &out, 2 * 3);
    assert_eq!(json["task"], "sensor");
    assert_eq!(json["partitions"], 8);
    assert_eq!(json["body"]["kernel"], "read");
    assert_eq!(u(&json["body"]["working_set_bytes"]), 128 << 10);
    assert_eq!(u(&json["body"]["memory_iterations"]), 4096);
    assert_eq!(json["refill"], "20us");
    // Without the shim the output says the partitions were not enforced.
    assert_eq!(json["placement"]["colored"], false);
    assert!(
        json["placement"]["note"]
            .as_str()
            .unwrap()
            .contains("NOT enforced")
    );
    let taskset = tinct_core::format::load(&out.join("taskset.toml")).unwrap();
    assert_eq!(taskset.tasks[0].name, "sensor");
    assert_eq!(
        taskset.tasks[0].period,
        tinct_core::units::Nanos(50_000_000)
    );
}

#[test]
fn bad_options_exit_2_and_say_what_was_expected() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["calibrate", "--quick", "--partitions", "0"],
            "--partitions",
        ),
        (&["calibrate", "--quick", "--reps", "0"], "--reps"),
        (&["calibrate", "--quick", "--cpus", "4000"], "--cpus"),
        (&["crpd", "--quick", "--level", "9"], "--level"),
        (
            &["wcet-profile", "--quick", "--uncolored", "--p", "99"],
            "--p",
        ),
        (
            &["wcet-profile", "--quick", "--uncolored", "--kernel", "spin"],
            "--kernel",
        ),
        (
            &[
                "wcet-profile",
                "--quick",
                "--uncolored",
                "--taskset",
                "/nonexistent.toml",
                "--task",
                "a",
            ],
            "nonexistent",
        ),
    ];
    for (args, needle) in cases {
        let output = bench(args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
        assert!(
            stderr.contains("expected"),
            "{args:?} does not say what was expected: {stderr}"
        );
        assert!(!stderr.contains("stack backtrace"), "{args:?}: {stderr}");
    }
}
