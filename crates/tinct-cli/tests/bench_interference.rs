//! `tinct bench coherence`, `banks` and `isolation` end to end: each
//! `--quick` run exits 0, its JSON reads back into the bench's report type
//! and writes out unchanged (write → read → equal), and
//! its numbers are internally consistent (counts, orderings, ratios that must
//! equal the statistics they are computed from, placements that match this
//! machine's topology). Nothing here asserts on absolute time: the machine
//! is shared and noisy. The runs are serialized so they do not disturb each
//! other. The last tests check the counters every bench records (issue 15),
//! with crpd's and calibrate's.

mod common;

use common::{Exits, bad_input, check_bench_json, f, no_cpu_pmu, read_json, stdout, tinct, u};
use serde_json::Value;
use std::path::Path;
use tinct_bench::harness::{Durations, as_written};
use tinct_bench::{banks, coherence, isolation};
use tinct_sys::testing::{privileged_serial, serial};

/// A coherence run of a fraction of a second: two small sizes, 2 reps.
const SMALL_COHERENCE: [&str; 8] = [
    "--sizes",
    "32,64",
    "--work",
    "65536",
    "--increments",
    "65536",
    "--reps",
    "2",
];

/// Runs `tinct bench <args> --out <dir> --no-progress`, expects exit 0 and
/// returns (JSON of `<bench>.json`, stdout).
fn run_bench(dir: &Path, bench: &str, args: &[&str]) -> (Value, String) {
    let output = tinct()
        .args(["bench", bench])
        .args(args)
        .arg("--out")
        .arg(dir)
        .arg("--no-progress")
        .exits(0);
    (
        read_json(&dir.join(format!("{bench}.json"))),
        stdout(&output),
    )
}

fn coherence_distributions(r: &coherence::Report) -> Vec<&Durations> {
    let sizes = r.sizes.iter().flat_map(|s| {
        let app = &s.application;
        std::iter::once(&s.sequential)
            .chain(s.parallel.iter().flat_map(|p| [&p.shared, &p.private]))
            .chain([&app.sequential, &app.shared, &app.private])
    });
    let sharing = r
        .false_sharing
        .iter()
        .flat_map(|f| [&f.same_line, &f.separate_lines]);
    sizes.chain(sharing).collect()
}

fn banks_distributions(r: &banks::Report) -> Vec<&Durations> {
    let composite = r
        .composite
        .iter()
        .flat_map(|run| run.conditions.iter().map(|c| &c.time));
    r.kernels
        .iter()
        .flat_map(|k| k.allocations.iter().map(|a| &a.time))
        .chain(composite)
        .collect()
}

fn isolation_distributions(r: &isolation::Report) -> Vec<&Durations> {
    r.conditions
        .iter()
        .flat_map(|c| [&c.jobs, &c.jobs_wall])
        .collect()
}

fn assert_ratio(ratio: &Value, numerator: &Value, denominator: &Value, what: &str) {
    let expected = u(numerator) as f64 / u(denominator) as f64;
    assert!(
        (f(ratio) - expected).abs() <= 1e-9 * expected.max(1.0),
        "{what}: {ratio} but {numerator} / {denominator} = {expected}"
    );
}

fn csv_lines(path: &Path) -> usize {
    std::fs::read_to_string(path).unwrap().lines().count()
}

#[test]
fn coherence_quick_is_consistent_with_the_topology() {
    let _serial = serial();
    let tmp = tempfile::tempdir().unwrap();
    let (json, stdout) = run_bench(tmp.path(), "coherence", &["--quick"]);
    check_bench_json(&json, coherence_distributions);
    let reps = u(&json["reps"]);
    assert_eq!(json["quick"], true);

    // Every placement of the paper is listed: available ones are measured
    // at every size, skipped ones say why and appear in the notes.
    let placements = json["placements"].as_array().unwrap();
    let kinds: Vec<&str> = placements
        .iter()
        .map(|p| p["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "same-cpu",
            "smt-siblings",
            "different-cores",
            "different-dies",
            "os-chosen"
        ]
    );
    let available: Vec<&str> = placements
        .iter()
        .filter(|p| p["skipped"].is_null())
        .map(|p| p["kind"].as_str().unwrap())
        .collect();
    let notes = json["notes"].to_string();
    for p in placements.iter().filter(|p| !p["skipped"].is_null()) {
        let kind = p["kind"].as_str().unwrap();
        assert!(
            notes.contains(kind),
            "skipped {kind} is not in the notes: {notes}"
        );
        assert!(
            stdout.contains(kind),
            "skipped {kind} is not in the summary"
        );
    }
    // The SMT placement exists exactly when this machine has SMT siblings.
    let topology = tinct_sys::topology::Topology::read(&tinct_sys::SysRoot::live()).unwrap();
    let allowed: Vec<u32> = json["cpus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| u(c) as u32)
        .collect();
    let has_smt = topology
        .smt_sibling_groups()
        .iter()
        .any(|g| g.iter().filter(|c| allowed.contains(c)).count() >= 2);
    assert_eq!(available.contains(&"smt-siblings"), has_smt);
    assert!(
        allowed.len() < 2
            || available.contains(&"different-cores")
            || available.contains(&"different-dies")
            || available.contains(&"smt-siblings"),
        "two CPUs must give some two-CPU placement: {available:?}"
    );

    let sizes = json["sizes"].as_array().unwrap();
    let swept: Vec<u64> = sizes.iter().map(|s| u(&s["rows"])).collect();
    let listed: Vec<u64> = json["parameters"]["sizes"]
        .as_array()
        .unwrap()
        .iter()
        .map(u)
        .collect();
    assert_eq!(swept, listed);
    assert!(
        swept.windows(2).all(|w| w[0] < w[1]),
        "sizes ascend: {swept:?}"
    );
    let work = u(&json["parameters"]["work_per_function"]);
    for size in sizes {
        let elements = u(&size["rows"]) * u(&size["cols"]);
        assert_eq!(u(&size["bytes_per_array"]), elements * 8);
        let repetitions = u(&size["repetitions"]);
        assert_eq!(repetitions, (work / elements).max(1));
        assert_eq!(u(&size["sequential"]["count"]), reps);
        let parallel = size["parallel"].as_array().unwrap();
        let measured: Vec<&str> = parallel
            .iter()
            .map(|p| p["placement"].as_str().unwrap())
            .collect();
        assert_eq!(measured, available);
        for p in parallel {
            assert_eq!(u(&p["shared"]["count"]), reps);
            assert_eq!(u(&p["private"]["count"]), reps);
            let seq = &size["sequential"];
            assert_ratio(
                &p["shared_over_sequential_wcet"],
                &p["shared"]["max_ns"],
                &seq["max_ns"],
                "shared/seq WCET",
            );
            assert_ratio(
                &p["private_over_sequential_wcet"],
                &p["private"]["max_ns"],
                &seq["max_ns"],
                "private/seq WCET",
            );
            assert_ratio(
                &p["shared_over_sequential_median"],
                &p["shared"]["median_ns"],
                &seq["median_ns"],
                "shared/seq median",
            );
        }
        // Fig. 4(a): the three versions as whole applications, their
        // ratios those of their own sequential version.
        let app = &size["application"];
        for version in ["sequential", "shared", "private"] {
            assert_eq!(u(&app[version]["count"]), reps, "application {version}");
        }
        for (ratio, version) in [
            ("shared_over_sequential_wcet", "shared"),
            ("private_over_sequential_wcet", "private"),
        ] {
            assert_ratio(
                &app[ratio],
                &app[version]["max_ns"],
                &app["sequential"]["max_ns"],
                ratio,
            );
        }
    }
    assert!(
        stdout.contains("Fig. 4(a) vs 4(b)") && stdout.contains("as whole applications"),
        "the summary compares Fig. 4(a) with 4(b):\n{stdout}"
    );
    let csv = std::fs::read_to_string(tmp.path().join("coherence.csv")).unwrap();
    for variant in [
        "application-sequential",
        "application-parallel-shared",
        "application-parallel-private",
    ] {
        assert_eq!(
            csv.lines()
                .filter(|l| l.contains(&format!(",{variant},")))
                .count(),
            sizes.len(),
            "one {variant} row per size in coherence.csv"
        );
    }
    // The worst slowdown is the largest of all.
    let largest = sizes
        .iter()
        .flat_map(|s| s["parallel"].as_array().unwrap())
        .map(|p| f(&p["shared_over_sequential_wcet"]))
        .fold(0.0, f64::max);
    assert_eq!(f(&json["worst"]["shared_over_sequential_wcet"]), largest);

    let false_sharing = json["false_sharing"].as_array().unwrap();
    let fs_placements: Vec<&str> = false_sharing
        .iter()
        .map(|p| p["placement"].as_str().unwrap())
        .collect();
    assert_eq!(fs_placements, available);
    for p in false_sharing {
        assert_ratio(
            &p["slowdown_median"],
            &p["same_line"]["median_ns"],
            &p["separate_lines"]["median_ns"],
            "false sharing",
        );
    }
    // One CSV row per condition and size, plus the header (three of them
    // whole applications).
    let conditions = 1 + 2 * available.len() + 3;
    assert_eq!(
        csv_lines(&tmp.path().join("coherence.csv")),
        1 + sizes.len() * conditions
    );
    assert!(
        stdout.contains("shared/seq"),
        "summary table missing:\n{stdout}"
    );
}

#[test]
fn coherence_rejects_bad_sizes() {
    let stderr = bad_input(["bench", "coherence", "--sizes", "0", "--no-progress"]);
    assert!(stderr.contains("--sizes"), "{stderr}");
}

#[test]
fn banks_quick_without_bank_functions_says_placement_is_unknown() {
    let _serial = serial();
    let tmp = tempfile::tempdir().unwrap();
    let (json, stdout) = run_bench(tmp.path(), "banks", &["--quick"]);
    check_bench_json(&json, banks_distributions);
    assert_eq!(json["bank_placement_known"], false);
    assert!(stdout.contains("UNKNOWN"), "{stdout}");
    let skipped = json["skipped"].to_string();
    assert!(
        skipped.contains("own-bank") && skipped.contains("shared-bank"),
        "{skipped}"
    );
    assert!(skipped.contains("bank placement unknown"), "{skipped}");
    let kernels = json["kernels"].as_array().unwrap();
    let names: Vec<&str> = kernels
        .iter()
        .map(|k| k["kernel"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["copy", "scale", "add", "triad", "random", "integer-sort"]
    );
    for condition in ["2banks", "4banks", "8banks", "ctrl-local", "circular-alloc"] {
        assert!(skipped.contains(condition), "{condition}: {skipped}");
    }
    // The paper's tables are there, with empty cells for what did not run.
    let table1 = &json["table1"];
    assert_eq!(table1["rows"].as_array().unwrap().len(), 2);
    assert!(
        table1["rows"][0]["cells"].as_array().unwrap()[..2]
            .iter()
            .all(Value::is_null)
    );
    let composite = json["composite"].as_array().unwrap();
    assert_eq!(composite.len(), 2);
    for run in composite {
        assert_eq!(run["conditions"].as_array().unwrap().len(), 1);
        assert_eq!(run["conditions"][0]["allocation"], "default");
    }
    let threads = u(&json["parameters"]["threads"]);
    for k in kernels {
        let allocations = k["allocations"].as_array().unwrap();
        assert_eq!(allocations.len(), 1);
        assert_eq!(allocations[0]["allocation"], "default");
        assert_eq!(f(&allocations[0]["median_over_default"]), 1.0);
        check_bandwidth(k, threads);
    }
    assert_eq!(csv_lines(&tmp.path().join("banks.csv")), 1 + kernels.len());
}

/// Bandwidth is the bytes of a run over the median time, and the bytes are
/// passes x elements x bytes per element x threads.
fn check_bandwidth(kernel: &Value, threads: u64) {
    let bytes = u(&kernel["bytes_per_run"]);
    assert!(bytes > 0);
    assert_eq!(bytes % (threads * u(&kernel["passes"])), 0, "{kernel}");
    for a in kernel["allocations"].as_array().unwrap() {
        let median_s = u(&a["time"]["median_ns"]) as f64 / 1e9;
        let expected = bytes as f64 / 1048576.0 / median_s;
        let found = f(&a["bandwidth_mib_s"]);
        assert!(
            (found - expected).abs() <= 1e-6 * expected,
            "{found} vs {expected}"
        );
        assert!(f(&a["bandwidth_stddev_mib_s"]) >= 0.0);
    }
}

#[test]
fn banks_with_functions_runs_every_allocation_on_the_right_banks() {
    let _serial = serial();
    let tmp = tempfile::tempdir().unwrap();
    let (json, stdout) = run_bench(
        tmp.path(),
        "banks",
        &[
            "--quick",
            "--kernels",
            "triad,random",
            "--bank-functions",
            "0x2000,0x4000",
            "--controller-functions",
            "0x8000",
        ],
    );
    check_bench_json(&json, banks_distributions);
    assert_eq!(json["bank_placement_known"], true);
    assert_eq!(u(&json["parameters"]["banks"]), 4);
    assert_eq!(u(&json["parameters"]["controllers"]), 2);
    assert!(stdout.contains("4 banks x 2 controllers"), "{stdout}");
    let threads = u(&json["parameters"]["threads"]) as usize;
    for k in json["kernels"].as_array().unwrap() {
        let allocations = k["allocations"].as_array().unwrap();
        let names: Vec<&str> = allocations
            .iter()
            .map(|a| a["allocation"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "default",
                "own-bank",
                "shared-bank",
                "own-controller",
                "shared-controller",
                "2banks",
                "4banks",
                "ctrl-local",
                "opposite-ctrl",
                "circular-alloc"
            ]
        );
        // Exact mode (the default): no page from a fallback step.
        for a in &allocations[1..] {
            let fallback = a["fallback_pages"].as_array().unwrap();
            assert!(fallback.iter().all(|p| u(p) == 0), "{a}");
        }
        // 2banks / 4banks: every bank a thread got is on its own group's
        // controller (threads split evenly over the two controllers).
        for i in [5, 6] {
            for (t, banks) in allocations[i]["banks"]
                .as_array()
                .unwrap()
                .iter()
                .enumerate()
            {
                let group = (t * 2 / threads) as u64;
                for bank in banks.as_array().unwrap() {
                    assert_eq!(u(&bank[0]), group, "{}: thread {t}", names[i]);
                    let wanted = if i == 5 { 2 } else { 4 };
                    assert!(u(&bank[1]) < wanted, "{}: thread {t}", names[i]);
                }
            }
        }
        check_bandwidth(k, threads as u64);
        let banks_of =
            |i: usize| -> Vec<Value> { allocations[i]["banks"].as_array().unwrap().clone() };
        let own = banks_of(1);
        assert_eq!(own.len(), threads);
        for (i, a) in own.iter().enumerate() {
            for b in own.iter().skip(i + 1) {
                assert_ne!(a, b, "own-bank threads share a bank");
            }
        }
        let shared = banks_of(2);
        assert_eq!(shared.len(), threads);
        assert!(
            shared.iter().all(|b| *b == shared[0]),
            "shared-bank threads differ: {shared:?}"
        );
        for (i, a) in allocations.iter().enumerate() {
            assert_ratio(
                &a["median_over_default"],
                &a["time"]["median_ns"],
                &allocations[0]["time"]["median_ns"],
                &format!("allocation {i}"),
            );
        }
    }
    let skipped = json["skipped"].to_string();
    assert!(
        skipped.contains("8 banks per controller asked, the functions give 4"),
        "{skipped}"
    );
    // The composite ran every Table 2 condition that runs here, and Table 2
    // has a row per configuration.
    for run in json["composite"].as_array().unwrap() {
        let conditions: Vec<&str> = run["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["allocation"].as_str().unwrap())
            .collect();
        assert_eq!(
            conditions,
            [
                "default",
                "2banks",
                "4banks",
                "ctrl-local",
                "opposite-ctrl",
                "circular-alloc"
            ]
        );
    }
    let table2 = &json["table2"];
    assert_eq!(table2["rows"].as_array().unwrap().len(), 2);
    assert!(table2["rows"][0]["cells"][0].is_f64());
    assert!(
        table2["rows"][0]["cells"][2].is_null(),
        "8banks did not run"
    );
    assert!(stdout.contains("Table 2"), "{stdout}");
    for file in [
        "banks-composite.csv",
        "banks-table1.csv",
        "banks-table2.csv",
    ] {
        assert!(tmp.path().join(file).is_file(), "{file}");
    }
    if tinct_sys::testing::privileged_or_skip("bank placement from physical frames") {
        assert!(
            json["frames_unreadable"].is_null(),
            "{}",
            json["frames_unreadable"]
        );
        assert!(json["moved_pages"].is_u64());
    }
}

#[test]
fn banks_reads_a_dram_map_and_uses_algorithm_1_fallbacks() {
    let _serial = serial();
    let tmp = tempfile::tempdir().unwrap();
    let map = tmp.path().join("dram-map.toml");
    // Two page-granular bank functions, one sub-page one (left out).
    std::fs::write(
        &map,
        "bank_functions = [\"0x2000\", \"0x4000\", \"0x40\"]\n\
         controller_functions = []\nconfidence = []\nphysical = \"host\"\nmachine = \"test\"\n",
    )
    .unwrap();
    let (json, stdout) = run_bench(
        tmp.path(),
        "banks",
        &[
            "--quick",
            "--kernels",
            "add",
            "--composite",
            "none",
            "--dram-map",
            map.to_str().unwrap(),
            "--bank-mode",
            "restricted,unrestricted",
        ],
    );
    check_bench_json(&json, banks_distributions);
    assert_eq!(u(&json["parameters"]["banks"]), 4);
    assert_eq!(json["parameters"]["bank_mode"], "restricted,unrestricted");
    assert!(
        json["parameters"]["functions_from"]
            .as_str()
            .unwrap()
            .ends_with("dram-map.toml"),
        "{}",
        json["parameters"]["functions_from"]
    );
    let skipped = json["skipped"].to_string();
    assert!(skipped.contains("1 bank bits of --dram-map"), "{skipped}");
    assert!(json["composite"].as_array().unwrap().is_empty());
    assert!(stdout.contains("read from"), "{stdout}");
    let stderr = bad_input([
        "bench",
        "banks",
        "--quick",
        "--no-progress",
        "--dram-map",
        map.to_str().unwrap(),
        "--bank-functions",
        "0x2000",
    ]);
    assert!(stderr.contains("--dram-map"), "{stderr}");
    let stderr = bad_input([
        "bench",
        "banks",
        "--quick",
        "--no-progress",
        "--composite",
        "4/0",
    ]);
    assert!(stderr.contains("THREADS/PAGES"), "{stderr}");
}

#[test]
fn banks_rejects_functions_a_page_allocator_cannot_control() {
    for (masks, expected) in [("0x40", "--bank-functions"), ("zz", "--bank-functions")] {
        let stderr = bad_input([
            "bench",
            "banks",
            "--quick",
            "--no-progress",
            "--bank-functions",
            masks,
        ]);
        assert!(stderr.contains(expected), "{masks}: {stderr}");
    }
    let stderr = bad_input([
        "bench",
        "banks",
        "--quick",
        "--no-progress",
        "--size",
        "1KiB",
    ]);
    assert!(stderr.contains("--size"), "{stderr}");
}

#[test]
fn isolation_quick_reports_every_condition_and_consistent_inflation() {
    let _serial = serial();
    let tmp = tempfile::tempdir().unwrap();
    let (json, stdout) = run_bench(tmp.path(), "isolation", &["--quick"]);
    check_bench_json(&json, isolation_distributions);
    let reps = u(&json["reps"]);
    let p = &json["parameters"];
    let jobs = u(&p["jobs_per_round"]);
    assert!(u(&p["victim_colors"]) > 0 && u(&p["victim_colors"]) < u(&p["colors"]));
    let cpus = json["cpus"].as_array().unwrap();
    assert_eq!(p["victim_cpu"], cpus[0]);
    assert_eq!(p["aggressor_cpus"].as_array().unwrap()[..], cpus[1..]);
    let conditions = json["conditions"].as_array().unwrap();
    let names: Vec<&str> = conditions
        .iter()
        .map(|c| c["condition"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "alone-reserved",
            "contended-reserved",
            "alone-unreserved",
            "contended-unreserved"
        ]
    );
    for c in conditions {
        assert_eq!(u(&c["jobs"]["count"]), reps * jobs, "{c}");
    }
    let jobs_of = |i: usize| &conditions[i]["jobs"];
    assert_ratio(
        &json["inflation_reserved"]["wcet"],
        &jobs_of(1)["max_ns"],
        &jobs_of(0)["max_ns"],
        "reserved WCET",
    );
    assert_ratio(
        &json["inflation_reserved"]["median"],
        &jobs_of(1)["median_ns"],
        &jobs_of(0)["median_ns"],
        "reserved median",
    );
    assert_ratio(
        &json["inflation_unreserved"]["wcet"],
        &jobs_of(3)["max_ns"],
        &jobs_of(2)["max_ns"],
        "unreserved WCET",
    );
    assert_ratio(
        &json["inflation_unreserved"]["p99"],
        &jobs_of(3)["p99_ns"],
        &jobs_of(2)["p99_ns"],
        "unreserved p99",
    );
    // Every recorded job is in the CSV, and a job's CPU time never exceeds
    // its wall-clock time (beyond the two clocks' granularity).
    let csv = std::fs::read_to_string(tmp.path().join("isolation.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("condition,job,cpu_ns,wall_ns"));
    let mut rows = 0;
    for line in lines {
        let fields: Vec<&str> = line.split(',').collect();
        let (cpu, wall): (u64, u64) = (fields[2].parse().unwrap(), fields[3].parse().unwrap());
        assert!(cpu > 0, "{line}");
        assert!(
            cpu <= wall + wall / 100 + 50_000,
            "CPU time above wall time: {line}"
        );
        rows += 1;
    }
    assert_eq!(rows, 4 * reps * jobs);
    for c in conditions {
        assert_eq!(u(&c["jobs_wall"]["count"]), reps * jobs);
    }
    assert!(json["run_conditions"]["fifo_priority"].is_null());
    if json["machine"]["virtualized"] == true {
        assert!(
            json["notes"].to_string().contains("virtual machine"),
            "the VM caveat is missing"
        );
    }
    assert!(stdout.contains("inflation, reserved"), "{stdout}");
    if tinct_sys::testing::privileged_or_skip("reservation by coloring from physical frames") {
        assert!(
            json["frames_unreadable"].is_null(),
            "{}",
            json["frames_unreadable"]
        );
    }
}

#[test]
fn isolation_rejects_bad_color_share() {
    let stderr = bad_input([
        "bench",
        "isolation",
        "--quick",
        "--no-progress",
        "--victim-colors",
        "100",
    ]);
    assert!(stderr.contains("--victim-colors"), "{stderr}");
}

#[test]
fn fifo_runs_are_recorded_and_bad_priorities_rejected() {
    let stderr = bad_input([
        "bench",
        "coherence",
        "--quick",
        "--no-progress",
        "--fifo",
        "0",
    ]);
    assert!(stderr.contains("--fifo"), "{stderr}");
    let Some(_serial) = privileged_serial("SCHED_FIFO measuring threads") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let small = [&SMALL_COHERENCE[..], &["--fifo", "5"]].concat();
    let (json, _) = run_bench(tmp.path(), "coherence", &small);
    check_bench_json(&json, coherence_distributions);
    assert_eq!(json["run_conditions"]["fifo_priority"], 5);
    let (json, _) = run_bench(
        tmp.path(),
        "isolation",
        &["--quick", "--reps", "1", "--jobs", "3", "--fifo", "5"],
    );
    assert_eq!(json["run_conditions"]["fifo_priority"], 5);
    assert_eq!(u(&json["conditions"][0]["jobs"]["count"]), 3);
}

/// Hexadecimal masks of a `L3:0=f;1=f` schemata line.
fn schemata_masks(line: &str) -> Vec<u64> {
    line.trim()
        .strip_prefix("L3:")
        .unwrap_or_else(|| panic!("not an L3 schemata line: {line:?}"))
        .split(';')
        .map(|entry| u64::from_str_radix(entry.split_once('=').unwrap().1, 16).unwrap())
        .collect()
}

#[test]
fn isolation_with_resctrl_uses_two_groups_with_disjoint_masks_and_removes_them() {
    let _serial = serial();
    let tmp = tempfile::tempdir().unwrap();
    let resctrl = tempfile::tempdir().unwrap();
    tinct_sys::resctrl::fake::write_tree(resctrl.path(), 2, 8).unwrap();
    // Watch the groups while the bench runs: their schemata and tasks are
    // gone once it ends.
    let root = resctrl.path().to_path_buf();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watcher = {
        let (root, done) = (root.clone(), done.clone());
        std::thread::spawn(move || {
            let mut seen: std::collections::BTreeMap<String, (String, String)> = Default::default();
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                for entry in std::fs::read_dir(&root).unwrap().flatten() {
                    let name = entry.file_name().to_string_lossy().into_owned();
                    if !name.starts_with("tinct-isolation-") {
                        continue;
                    }
                    let read = |f: &str| std::fs::read_to_string(entry.path().join(f));
                    if let (Ok(schemata), Ok(tasks)) = (read("schemata"), read("tasks")) {
                        let known = seen.entry(name).or_default();
                        if tasks.len() >= known.1.len() {
                            *known = (schemata, tasks);
                        }
                    }
                }
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            seen
        })
    };
    let (json, stdout) = run_bench(
        tmp.path(),
        "isolation",
        &[
            "--quick",
            "--reps",
            "1",
            "--jobs",
            "2",
            "--reservation",
            "resctrl",
            "--resctrl-root",
            &root.display().to_string(),
        ],
    );
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let seen = watcher.join().unwrap();
    check_bench_json(&json, isolation_distributions);
    assert_eq!(json["reservation"], "resctrl", "{}", json["reservation"]);
    assert!(stdout.contains("resctrl group"), "{stdout}");
    let groups = &json["resctrl_groups"];
    let victim_mask = u64::from_str_radix(
        groups["victim"]["mask"]
            .as_str()
            .unwrap()
            .trim_start_matches("0x"),
        16,
    )
    .unwrap();
    let aggressor_mask = u64::from_str_radix(
        groups["aggressors"]["mask"]
            .as_str()
            .unwrap()
            .trim_start_matches("0x"),
        16,
    )
    .unwrap();
    assert_eq!(victim_mask & aggressor_mask, 0, "{groups}");
    assert_eq!(victim_mask | aggressor_mask, 0xff, "{groups}");
    assert!(victim_mask != 0 && aggressor_mask != 0, "{groups}");
    // The groups' files, as written during the run: disjoint masks on both
    // domains, numeric thread ids (one victim thread; the aggressor threads
    // of every contended-reserved block).
    for (role, mask) in [("victim", victim_mask), ("aggressors", aggressor_mask)] {
        let name = groups[role]["name"].as_str().unwrap();
        let (schemata, tasks) = seen
            .get(name)
            .unwrap_or_else(|| panic!("group {name} never seen; saw {seen:?}"));
        assert_eq!(schemata_masks(schemata), [mask, mask], "{name}: {schemata}");
        assert_eq!(
            schemata.trim(),
            groups[role]["schemata"].as_str().unwrap(),
            "{name}"
        );
        let tids: Vec<i32> = tasks
            .lines()
            .map(|l| {
                l.parse()
                    .unwrap_or_else(|_| panic!("{name}/tasks: not a thread id: {l:?}"))
            })
            .collect();
        assert!(!tids.is_empty(), "{name}/tasks is empty");
        let recorded: Vec<i32> = groups[role]["threads"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| i32::try_from(t.as_i64().unwrap()).unwrap())
            .collect();
        assert!(
            tids.iter().all(|t| *t > 0 && recorded.contains(t)),
            "{name}: tasks {tids:?}, JSON threads {recorded:?}"
        );
    }
    // One victim thread; one aggressor thread per aggressor CPU and
    // contended-reserved block (one warm-up round + one recorded round).
    let aggressor_cpus = json["parameters"]["aggressor_cpus"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(groups["victim"]["threads"].as_array().unwrap().len(), 1);
    assert_eq!(
        groups["aggressors"]["threads"].as_array().unwrap().len(),
        2 * aggressor_cpus,
        "{groups}"
    );
    let victim_tids = &seen[groups["victim"]["name"].as_str().unwrap()].1;
    let aggressor_tids = &seen[groups["aggressors"]["name"].as_str().unwrap()].1;
    assert!(
        victim_tids
            .lines()
            .all(|t| !aggressor_tids.lines().any(|a| a == t)),
        "the victim thread is in the aggressors' group: {victim_tids} / {aggressor_tids}"
    );
    // Every group was removed; the unreserved conditions moved the victim
    // back to the default group.
    let left: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("tinct-"))
        .collect();
    assert!(left.is_empty(), "groups left behind: {left:?}");
    let default_tasks = std::fs::read_to_string(root.join("tasks")).unwrap();
    assert!(
        default_tasks
            .lines()
            .any(|t| victim_tids.lines().any(|v| v == t)),
        "victim never moved to the default group: {default_tasks}"
    );
}

#[test]
fn isolation_reservation_auto_and_resctrl_without_resctrl() {
    let empty = tempfile::tempdir().unwrap();
    let root = empty.path().display().to_string();
    let stderr = bad_input([
        "bench",
        "isolation",
        "--quick",
        "--no-progress",
        "--reservation",
        "resctrl",
        "--resctrl-root",
        &root,
    ]);
    assert!(stderr.contains("--reservation resctrl"), "{stderr}");
    assert!(
        stderr.contains("no resctrl L3 cache allocation"),
        "{stderr}"
    );
    // Auto on this machine's real mount: resctrl when it offers L3
    // allocation, else coloring with the reason.
    let _serial = serial();
    let tmp = tempfile::tempdir().unwrap();
    let (json, _) = run_bench(
        tmp.path(),
        "isolation",
        &["--quick", "--reps", "1", "--jobs", "2"],
    );
    let offered = tinct_sys::resctrl::Resctrl::at("/sys/fs/resctrl")
        .l3()
        .is_ok();
    if offered {
        assert_eq!(json["reservation"], "resctrl");
    } else {
        assert_eq!(json["reservation"], "page-coloring");
        assert!(json["resctrl_groups"].is_null());
        let reason = json["reservation_reason"].as_str().unwrap();
        assert!(
            reason.contains("no resctrl L3 cache allocation"),
            "{reason}"
        );
    }
}

// Counters in the benches (issue 15): every condition of a bench carries
// its counter totals, each event either counted or unavailable with the
// kernel's reason (never a fake zero); the coherence bench counts the
// events of gracioli Fig. 9 and runs the paper's fixed loop on request;
// crpd splits Table 1 and measures the instruction cache.

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
    let (json, stdout) = run_bench(tmp.path(), "coherence", &SMALL_COHERENCE);
    let report: coherence::Report = serde_json::from_value(json.clone()).unwrap();
    assert_eq!(
        serde_json::to_value(as_written(&report)).unwrap(),
        json,
        "round trip"
    );
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
        // No PMU at all (ENOENT), or a CPU whose Fig. 9 encodings tinct
        // does not know: a reason either way, never a zero.
        assert!(
            stdout.contains("unavailable: ENOENT")
                || stdout.contains("unavailable: no Fig. 9 encodings"),
            "{stdout}"
        );
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
    let args: Vec<&str> = "--sizes 16,32 --repetitions 300 --increments 4096 --reps 2"
        .split(' ')
        .collect();
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
fn crpd_splits_the_switch_and_measures_the_instruction_cache() {
    let _serial = serial();
    let tmp = tempfile::tempdir().unwrap();
    let args: Vec<&str> = "--quick --cache instruction --words-per-line 1,2 --reps 3"
        .split(' ')
        .collect();
    let (json, stdout) = run_bench(tmp.path(), "crpd", &args);
    let result: tinct_bench::crpd::CrpdResult = serde_json::from_value(json.clone()).unwrap();
    assert_eq!(
        serde_json::to_value(as_written(&result)).unwrap(),
        json,
        "round trip"
    );
    // Table 1: interrupt + resume of every preemption make its total.
    let sw = result
        .switch
        .as_ref()
        .expect("a complete run measured the switch");
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
fn loop_modes_and_generated_code_they_cannot_run_are_bad_input() {
    let cases = [
        ("coherence --work 100 --repetitions 10", "--repetitions"),
        ("coherence --repetitions 0", "--repetitions"),
        ("crpd --quick --words-per-line 2", "--words-per-line"),
        (
            "crpd --quick --cache instruction --words-per-line 16",
            "--words-per-line",
        ),
        (
            "crpd --quick --cache instruction --words-per-line 0",
            "--words-per-line",
        ),
    ];
    for (args, option) in cases {
        let mut all = vec!["bench", "--no-progress"];
        all.splice(1..1, args.split(' '));
        let stderr = bad_input(&all);
        assert!(stderr.contains(option), "{args:?}: {stderr}");
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
