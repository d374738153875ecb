//! `tinct plan` end to end: plans re-verify with `tinct analyze`, failures
//! name the task and the reason, bad input exits 2.

mod common;

use common::{
    Exits, analyze_json, assert_exits_saying, example, fixture, json_stdout, stderr, stdout, tinct,
    write,
};
use serde_json::Value;
use std::path::Path;
use std::process::Output;

/// `tinct plan ARGS examples/kim2013.toml`, which must exit with `code`.
fn plan_kim2013(args: &[&str], code: i32) -> Output {
    tinct()
        .arg("plan")
        .args(args)
        .arg(example("kim2013.toml"))
        .exits(code)
}

#[test]
fn every_algorithm_writes_a_plan_that_analyze_accepts() {
    let dir = tempfile::tempdir().unwrap();
    for (algorithm, file) in [
        ("cata", "cata.toml"),
        ("bfd", "bfd.toml"),
        ("wfd", "wfd.json"),
    ] {
        let plan = dir.path().join(file);
        let plan_arg = plan.to_str().unwrap();
        let text = stdout(&plan_kim2013(
            &["--algorithm", algorithm, "-o", plan_arg],
            0,
        ));
        assert!(
            text.contains("partitions used") && text.contains("memory efficiency"),
            "{text}"
        );
        let analysis = analyze_json(&plan, &[]);
        assert_eq!(
            analysis["schedulable"],
            Value::Bool(true),
            "{algorithm}: {analysis}"
        );
        let tasks = analysis["tasks"].as_array().unwrap();
        assert_eq!(tasks.len(), 4);
        assert!(
            tasks
                .iter()
                .all(|t| !t["partitions"].as_array().unwrap().is_empty())
        );
    }
}

/// With the 8 partitions of kim2013 IV-D, CATA finds the paper's Table II
/// allocation and its response times.
#[test]
fn eight_partitions_give_table_ii() {
    let text = stdout(&plan_kim2013(&["--partitions", "8"], 0));
    for expected in [
        "{1-8}", "{1-3}", "{4-8}", "12.30", "25.72", "101.36", "273.78",
    ] {
        assert!(text.contains(expected), "{expected} missing:\n{text}");
    }
}

#[test]
fn json_report_has_per_core_and_total_figures() {
    let report = json_stdout(&plan_kim2013(&["--json", "--partitions", "12"], 0));
    assert_eq!(report["schedulable"], Value::Bool(true));
    assert_eq!(report["algorithm"], "cata");
    assert_eq!(report["budget"], 12);
    assert!(report["partitions_used"].as_u64().unwrap() <= 12);
    assert!(report["exact"].as_bool().unwrap());
    let efficiency = report["memory_efficiency"].as_f64().unwrap();
    assert!(efficiency > 0.0 && efficiency <= 1.0);
    let cores = report["cores"].as_array().unwrap();
    let placed: usize = cores
        .iter()
        .map(|c| c["tasks"].as_array().unwrap().len())
        .sum();
    assert_eq!(placed, 4);
    for task in cores.iter().flat_map(|c| c["tasks"].as_array().unwrap()) {
        assert!(task["wcrt_ns"].as_u64().unwrap() <= task["deadline_ns"].as_u64().unwrap());
    }
}

#[test]
fn too_few_partitions_is_a_memory_failure_naming_the_task() {
    let err = stderr(&plan_kim2013(&["--partitions", "2"], 1));
    assert!(
        err.contains("'ferret' could not be placed: memory"),
        "{err}"
    );
}

#[test]
fn overload_is_a_time_failure() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "heavy.toml",
        include_str!("fixtures/two_heavy_tasks.toml"),
    );
    let err = stderr(&tinct().arg("plan").arg(&file).exits(1));
    assert!(err.contains("'b' could not be placed: time"), "{err}");
    assert!(!dir.path().join("plan.toml").exists());
}

#[test]
fn bad_input_exits_2() {
    let out = plan_kim2013(&["--partitions", "33"], 2);
    let err = stderr(&out);
    assert!(
        err.contains("--partitions: expected 1 to 32 (the platform's N_P in ")
            && err.contains(", found 33"),
        "{err}"
    );
    tinct().args(["plan", "does-not-exist.toml"]).exits(2);
}

/// `n` identical light tasks on one core.
fn many_tasks(n: usize, partitions: u32, refill: &str) -> String {
    let mut text = format!(
        "[platform]\ncores = 1\npartitions = {partitions}\nmemory = \"1GiB\"\nrefill = \"{refill}\"\n"
    );
    for i in 0..n {
        text.push_str(&format!(
            "\n[[task]]\nname = \"t{i}\"\nperiod = \"100ms\"\nmemory = \"1MiB\"\nwcet = \"1ms\"\n"
        ));
    }
    text
}

/// Issue 10: CATA refused a 65th task on one core (a 64-bit membership
/// mask) and blamed memory. 70 tasks that fit on one core are planned by
/// every algorithm, and the plans re-verify.
#[test]
fn seventy_tasks_on_one_core_are_planned() {
    let dir = tempfile::tempdir().unwrap();
    for (algorithm, partitions, refill) in
        [("cata", 8, "0ns"), ("bfd", 128, "1us"), ("wfd", 128, "1us")]
    {
        let file = dir.path().join(format!("many-{algorithm}.toml"));
        std::fs::write(&file, many_tasks(70, partitions, refill)).unwrap();
        let plan = dir.path().join(format!("plan-{algorithm}.toml"));
        tinct()
            .args(["plan", "--algorithm", algorithm, "-o"])
            .arg(&plan)
            .arg(&file)
            .exits(0);
        let analysis = analyze_json(&plan, &[]);
        assert_eq!(analysis["schedulable"], Value::Bool(true), "{algorithm}");
        assert_eq!(analysis["tasks"].as_array().unwrap().len(), 70);
    }
}

/// A search cut by its node budget says so: the budget, not memory (the
/// private split it needs exists, sharing everything misses deadlines).
#[test]
fn a_budget_limited_search_reports_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("three.toml");
    let mut text =
        "[platform]\ncores = 1\npartitions = 4\nmemory = \"64MiB\"\nrefill = \"1ms\"\n".to_string();
    for name in ["a", "b", "c"] {
        text.push_str(&format!(
            "\n[[task]]\nname = \"{name}\"\nperiod = \"10ms\"\nmemory = \"1MiB\"\nwcet = \"2ms\"\n"
        ));
    }
    std::fs::write(&file, text).unwrap();
    let out = tinct()
        .args(["plan", "--json", "--node-budget", "1"])
        .arg(&file)
        .exits(1);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("search budget exhausted (1 nodes)") && !stderr.contains("memory"),
        "{stderr}"
    );
    let report: Value = json_stdout(&out);
    let unplaced = report["unplaced"].as_array().unwrap();
    assert!(unplaced.iter().all(|u| u["reason"] == "budget"), "{report}");
    // With the default budget the same set is planned.
    tinct().arg("plan").arg(&file).exits(0);
}

/// Issue 27: `--node-budget 0` searched with the smallest budget (14
/// nodes on kim2013, `exact: false`), where `tinct experiment random`
/// reads 0 as exhaustive. 0 is no budget everywhere: the plan is `--exact`'s.
#[test]
fn node_budget_zero_is_an_exhaustive_search() {
    let zero: Value = json_stdout(&plan_kim2013(&["--json", "--node-budget", "0"], 0));
    let exact: Value = json_stdout(&plan_kim2013(&["--json", "--exact"], 0));
    assert_eq!(zero["exact"], Value::Bool(true), "{zero}");
    assert_eq!(zero, exact);
    // A budget of 1 still cuts the search.
    let one: Value = json_stdout(&plan_kim2013(&["--json", "--node-budget", "1"], 0));
    assert_eq!(one["exact"], Value::Bool(false), "{one}");
}

/// A time failure names the task whose deadline fails and the core.
#[test]
fn a_time_failure_names_the_task_and_the_core() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "heavy.toml",
        "[platform]\ncores = 1\npartitions = 4\nmemory = \"64MiB\"\nrefill = \"10us\"\n\n[[task]]\nname = \"a\"\nperiod = \"10ms\"\nmemory = \"1MiB\"\nwcet = \"6ms\"\n\n[[task]]\nname = \"b\"\nperiod = \"20ms\"\nmemory = \"1MiB\"\nwcet = \"9ms\"\n",
    );
    for algorithm in ["cata", "bfd"] {
        let out = tinct()
            .args(["plan", "--algorithm", algorithm])
            .arg(&file)
            .exits(1);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(
                "'b' could not be placed: time — core 0: Eq. (2): task 'b' misses its deadline"
            ),
            "{algorithm}: {stderr}"
        );
    }
}

/// `--timeout` stops a long search cleanly: the partial plan is reported,
/// marked as stopped, the tasks not reached say so, and the exit status is 1.
#[test]
fn a_timeout_stops_with_the_plan_so_far() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("slow.toml");
    // 70 tasks sharing 128 partitions with a tiny Δ: an enormous search.
    std::fs::write(&file, many_tasks(70, 128, "1ns")).unwrap();
    let plan = dir.path().join("plan.toml");
    let out = tinct()
        .args(["plan", "--json", "--timeout", "1s", "-o"])
        .arg(&plan)
        .arg(&file)
        .exits(1);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("stopped by --timeout with a partial plan"),
        "{stderr}"
    );
    let report: Value = json_stdout(&out);
    assert_eq!(report["stopped"], Value::Bool(true));
    assert_eq!(report["schedulable"], Value::Bool(false));
    let unplaced = report["unplaced"].as_array().unwrap();
    assert!(!unplaced.is_empty());
    assert!(
        unplaced.iter().all(|u| u["reason"] == "timeout"),
        "{report}"
    );
    let placed: usize = report["cores"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["tasks"].as_array().unwrap().len())
        .sum();
    assert_eq!(placed + unplaced.len(), 70);
    assert!(!plan.exists(), "a partial plan is not written");
}

/// What `tinct plan -o` writes (TOML or JSON, by serde) re-reads equal:
/// `tinct analyze` of the written file gives exactly the plan's figures.
#[test]
fn written_plans_round_trip_through_analyze() {
    let dir = tempfile::tempdir().unwrap();
    let mut analyses = Vec::new();
    for name in ["plan.toml", "plan.json"] {
        let plan = dir.path().join(name);
        let report = json_stdout(&plan_kim2013(&["--json", "-o", plan.to_str().unwrap()], 0));
        let analysis = analyze_json(&plan, &[]);
        for core in report["cores"].as_array().unwrap() {
            for task in core["tasks"].as_array().unwrap() {
                let index = task["task"].as_u64().unwrap() as usize;
                let analyzed = &analysis["tasks"][index];
                assert_eq!(analyzed["name"], task["name"]);
                assert_eq!(analyzed["wcrt_ns"], task["wcrt_ns"]);
                assert_eq!(analyzed["partitions"], task["partitions"]);
                assert_eq!(analyzed["priority"], task["priority"]);
                assert_eq!(analyzed["core"], core["core"]);
            }
        }
        analyses.push(analysis);
    }
    assert_eq!(analyses[0]["tasks"], analyses[1]["tasks"]);
    // The TOML plan carries its header as comments and states Δ.
    let text = std::fs::read_to_string(dir.path().join("plan.toml")).unwrap();
    assert!(text.starts_with("# Plan written by `tinct plan"), "{text}");
    assert!(text.contains("refill = \"45.3us\""), "{text}");
}

/// Issue 10, `plan` too: with a huge C the set is not schedulable (exit 1,
/// a time failure), and with Δ = 72057594 s the plan's verdict is the
/// exact one, which `tinct analyze` confirms term by term.
#[test]
fn huge_values_never_give_a_wrong_plan() {
    let dir = tempfile::tempdir().unwrap();
    for algorithm in ["cata", "bfd", "wfd"] {
        let out = tinct()
            .args(["plan", "--algorithm", algorithm])
            .arg(fixture("huge-c.toml"))
            .exits(1);
        let text = stdout(&out);
        assert!(!text.contains("verdict: SCHEDULABLE"), "{text}");
        let err = stderr(&out);
        assert!(err.contains("could not be placed: time"), "{err}");
    }
    let huge_refill = fixture("huge-refill.toml");
    let plan = dir.path().join("plan.toml");
    tinct()
        .args(["plan", "--keep-free", "-o"])
        .arg(&plan)
        .arg(&huge_refill)
        .exits(0);
    let analysis = analyze_json(&plan, &[]);
    assert_eq!(analysis["schedulable"], Value::Bool(true));
    let sets: Vec<Vec<u64>> = analysis["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            t["partitions"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p.as_u64().unwrap())
                .collect()
        })
        .collect();
    // The plan's verdict is the exact one: R_a = C_a + ω_{a,n} = 1 ms +
    // |S(a) ∩ S(b)| · Δ, computed here in u128.
    let shared = sets[0].iter().filter(|p| sets[1].contains(p)).count() as u128;
    let expected = 1_000_000u128 + shared * 72_057_594_000_000_000u128;
    assert_eq!(
        u128::from(analysis["tasks"][0]["wcrt_ns"].as_u64().unwrap()),
        expected
    );
}

/// A task set's `dram_map` is relative to the set; a plan written into
/// another directory still names the same mapping file (absolute there),
/// and a plan written beside the map keeps the relative name.
#[test]
fn a_plan_written_elsewhere_still_finds_the_dram_map() {
    let dir = tempfile::tempdir().unwrap();
    let sets = dir.path().join("sets");
    let plans = dir.path().join("plans");
    std::fs::create_dir_all(&sets).unwrap();
    std::fs::create_dir_all(&plans).unwrap();
    std::fs::write(
        sets.join("dram-map.toml"),
        "bank_functions = [\"0x4000\", \"0x8000\"]\ncontroller_functions = []\n\
         confidence = [0.99, 0.98]\nphysical = \"host\"\nmachine = \"test\"\n",
    )
    .unwrap();
    write(
        &sets,
        "set.toml",
        "[platform]\ncores = 1\npartitions = 4\nmemory = \"64MiB\"\nrefill = \"10us\"\n\
         dram_map = \"dram-map.toml\"\n\n[[task]]\nname = \"a\"\nperiod = \"10ms\"\n\
         memory = \"1MiB\"\nwcet = { 1 = \"1ms\" }\n",
    );
    let dram_map_line = |plan: &Path| -> String {
        std::fs::read_to_string(plan)
            .unwrap()
            .lines()
            .find(|l| l.starts_with("dram_map"))
            .unwrap_or_else(|| panic!("{} lost its dram_map", plan.display()))
            .to_string()
    };
    // From the set's directory into another: the reference becomes absolute.
    let elsewhere = plans.join("plan.toml");
    tinct()
        .current_dir(&sets)
        .args(["plan", "set.toml", "-o"])
        .arg(&elsewhere)
        .assert()
        .success();
    let absolute = sets.join("dram-map.toml");
    assert_eq!(
        dram_map_line(&elsewhere),
        format!("dram_map = \"{}\"", absolute.display())
    );
    analyze_json(&elsewhere, &[]);
    // A relative -o from elsewhere, beside the map: the name stays relative.
    let beside = sets.join("plan.toml");
    tinct()
        .current_dir(dir.path())
        .args(["plan", "sets/set.toml", "-o", "sets/plan.toml"])
        .assert()
        .success();
    assert_eq!(dram_map_line(&beside), "dram_map = \"dram-map.toml\"");
    analyze_json(&beside, &[]);
    // Moving the plans directory keeps the absolute reference valid.
    let moved = dir.path().join("moved");
    std::fs::rename(&plans, &moved).unwrap();
    analyze_json(&moved.join("plan.toml"), &[]);
}

/// `plan --placement static` on the wave/mixer example: a placement that
/// re-analyzes as schedulable with the same chains, the crossing bytes in
/// the JSON, pinned cores in the written file; an impossible bound exits 1.
#[test]
fn static_placement_writes_pinned_cores() {
    let dir = tempfile::tempdir().unwrap();
    let out_file = dir.path().join("placed.toml");
    let out = tinct()
        .args(["plan", "--placement", "static", "--json", "-o"])
        .arg(&out_file)
        .arg(example("pipeline.toml"))
        .exits(0);
    let json: Value = json_stdout(&out);
    assert_eq!(json["found"], Value::Bool(true));
    assert_eq!(json["exact"], Value::Bool(true));
    let crossing: u64 = json["crossing"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["buffer"].as_u64().unwrap())
        .sum();
    assert_eq!(json["crossing_bytes"].as_u64(), Some(crossing));
    for core in json["cores"].as_array().unwrap() {
        assert!(core["utilization"].as_f64().unwrap() <= 1.0);
    }
    let analysis = analyze_json(&out_file, &[]);
    assert_eq!(analysis["schedulable"], Value::Bool(true));
    assert_eq!(analysis["chains"].as_array().unwrap().len(), 4);
    let text = std::fs::read_to_string(&out_file).unwrap();
    assert!(text.contains("--placement static"), "{text}");
    assert!(text.contains("cache_domains = [[0, 1], [2, 3]]"), "{text}");
    assert!(text.contains("trigger = \"data\""), "{text}");
    let with_bound = |bound: &str| {
        tinct()
            .args([
                "plan",
                "--placement",
                "static",
                "--utilization-bound",
                bound,
            ])
            .arg(example("pipeline.toml"))
            .output()
            .unwrap()
    };
    // A wave alone (1.5 ms every 10 ms) is above a bound of 0.1: no placement.
    assert_exits_saying(&with_bound("0.1"), 1, "no placement found");
    // A bound that is not above 0 is bad input, named.
    assert_exits_saying(
        &with_bound("NaN"),
        2,
        "--utilization-bound: expected a number above 0, found NaN",
    );
    // --placement and --algorithm do not mix.
    tinct()
        .args(["plan", "--placement", "static", "--algorithm", "bfd"])
        .arg(example("pipeline.toml"))
        .exits(2);
}

/// A graph of 13 layers of 2 timer tasks, every task feeding both of the
/// next layer: 2^13 = 8192 chains, more than the analysis enumerates. Both
/// placements refuse it up front as `tinct analyze` does (exit 2, the file
/// and `edges` named), where CATA used to search, then call its own plan a
/// bug, and the static placement to search for minutes. (The cores given
/// let `tinct analyze` reach the graph; `tinct plan` replaces them.)
#[test]
fn plan_refuses_a_graph_the_analysis_cannot_enumerate_before_searching() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("many-chains.toml");
    let mut text = String::from(
        "[platform]\ncores = 4\npartitions = 4\nmemory = \"4MiB\"\nrefill = \"0ns\"\n",
    );
    for layer in 0..13 {
        for k in 0..2 {
            text += &format!(
                "\n[[task]]\nname = \"l{layer}k{k}\"\nmemory = \"1KiB\"\nwcet = \"1us\"\nperiod = \"10ms\"\ncore = {k}\n"
            );
        }
    }
    for layer in 1..13 {
        for from in 0..2 {
            for to in 0..2 {
                text += &format!(
                    "\n[[edge]]\nfrom = \"l{}k{from}\"\nto = \"l{layer}k{to}\"\nbuffer = \"1KiB\"\n",
                    layer - 1
                );
            }
        }
    }
    std::fs::write(&file, text).unwrap();
    let expected = format!(
        "{}: edges: expected an affinity graph tinct enumerates",
        file.display()
    );
    for placement in [&[][..], &["--placement", "static"][..]] {
        let output = tinct()
            .arg("plan")
            .args(placement)
            .arg(&file)
            .output()
            .unwrap();
        assert_exits_saying(&output, 2, &expected);
    }
    let output = tinct().arg("analyze").arg(&file).output().unwrap();
    assert_exits_saying(&output, 2, &expected);
}

/// A chain t0 → … → t(n−1) of C = 1 ms, t0 every 3 s, the others
/// data-triggered, on a platform of n cores: with `--utilization-bound
/// 0.0005` each core holds one task, so the static placement's search is
/// one node per task and its analysis n rounds over n cores.
fn spread_chain(n: usize) -> String {
    let mut text =
        format!("[platform]\ncores = {n}\npartitions = 4\nmemory = \"4MiB\"\nrefill = \"0ns\"\n");
    for k in 0..n {
        let release = if k == 0 {
            "period = \"3s\"\n"
        } else {
            "trigger = \"data\"\n"
        };
        text +=
            &format!("\n[[task]]\nname = \"t{k}\"\n{release}memory = \"1KiB\"\nwcet = \"1ms\"\n");
        if k > 0 {
            text += &format!(
                "\n[[edge]]\nfrom = \"t{}\"\nto = \"t{k}\"\nbuffer = \"1KiB\"\n",
                k - 1
            );
        }
    }
    text
}

/// Issue 27: the holistic analysis that decides a complete placement
/// polled no stop flag, so `plan --placement static --timeout 2s` on a
/// 1000-task chain ran for 9 s, and a placement found after the timeout
/// was reported as found. A timeout inside that analysis now ends the
/// search as one between two nodes does: no placement, "stopped", exit 1,
/// nothing written. The search of this 2000-task chain is an eighth of its
/// analysis (a debug build on the 2-vCPU VM: 3 s of 28 s), so the 5 s
/// timeout usually falls inside the analysis, which the old code ran to
/// its end and then reported the placement found, exit 0; wherever the
/// timeout falls, the outcome is the same. assert_cmd's timeout only
/// catches a run that never stops.
#[test]
fn a_timeout_stops_the_static_placement_of_a_huge_chain() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "chain.toml", spread_chain(2000));
    let placed = dir.path().join("placed.toml");
    let output = tinct()
        .args([
            "plan",
            "--placement",
            "static",
            "--utilization-bound",
            "0.0005",
        ])
        .args(["--timeout", "5s", "--json", "-o"])
        .arg(&placed)
        .arg(&file)
        .timeout(std::time::Duration::from_secs(600))
        .output()
        .unwrap();
    assert_exits_saying(
        &output,
        1,
        "no placement found: stopped before a placement was found",
    );
    let report = json_stdout(&output);
    assert_eq!(report["stopped"], Value::Bool(true), "{report}");
    assert_eq!(report["found"], Value::Bool(false), "{report}");
    assert!(!placed.exists(), "no placement is written");
}

/// Issue 27 W1: two tasks sharing partition 1 on one core with Δ = 3 ms
/// are NOT SCHEDULABLE, and the static placement, which once dropped their
/// partitions ("cores only") and called the set schedulable, agrees: it
/// keeps the partitions and finds no placement. Without partitions the
/// tasks are charged every partition: still not schedulable.
#[test]
fn the_static_placement_never_drops_partitions_into_a_wrong_schedulable() {
    let dir = tempfile::tempdir().unwrap();
    let set = |partitions: &str| {
        format!(
            "[platform]\ncores = 1\npartitions = 2\nmemory = \"2MiB\"\nrefill = \"3ms\"\n\n\
             [[task]]\nname = \"a\"\nperiod = \"10ms\"\nmemory = \"1MiB\"\nwcet = {{ 1 = \"4ms\" }}\n{partitions}\n\n\
             [[task]]\nname = \"b\"\nperiod = \"10ms\"\nmemory = \"1MiB\"\nwcet = {{ 1 = \"4ms\" }}\n{partitions}\n"
        )
    };
    for (name, partitions) in [("given.toml", "partitions = [1]"), ("none.toml", "")] {
        let file = write(dir.path(), name, set(partitions));
        assert_eq!(analyze_json(&file, &[])["schedulable"], false, "{name}");
        let placed = dir.path().join(format!("placed-{name}"));
        let out = tinct()
            .args(["plan", "--placement", "static", "-o"])
            .arg(&placed)
            .arg(&file)
            .exits(1);
        let text = format!("{}{}", stdout(&out), stderr(&out));
        assert!(text.contains("no placement"), "{name}: {text}");
        assert!(!text.contains("SCHEDULABLE"), "{name}: {text}");
        assert!(!placed.exists(), "{name}: a plan was written");
    }
}

/// The static placement of a set whose tasks have no partitions gives each
/// core a block of its own (kim2013's reservation per core): the plan
/// names them, no partition is on two cores, and `tinct analyze` of the
/// written plan agrees it is schedulable with its cache terms.
#[test]
fn the_static_placement_reserves_each_core_its_own_partitions() {
    let dir = tempfile::tempdir().unwrap();
    let placed = dir.path().join("placed.toml");
    let out = tinct()
        .args(["plan", "--placement", "static", "-o"])
        .arg(&placed)
        .arg(example("pipeline.toml"))
        .exits(0);
    let text = stdout(&out);
    assert!(text.contains("(reserved)"), "{text}");
    let json = analyze_json(&placed, &[]);
    assert_eq!(json["schedulable"], true, "{json}");
    assert_eq!(json["shared_across_cores"], serde_json::json!([]));
    let tasks = json["tasks"].as_array().unwrap();
    assert!(
        tasks
            .iter()
            .all(|t| !t["partitions"].as_array().unwrap().is_empty()),
        "{json}"
    );
    assert!(
        tasks
            .iter()
            .any(|t| t["breakdown"]["warmup_ns"].as_u64() > Some(0)),
        "{json}"
    );
}

/// Issue 30: `--policy deadline` plans every task as a SCHED_DEADLINE
/// reservation under EDF: a set fixed priorities cannot place is placed,
/// the plan says EDF and re-analyses as schedulable; what a reservation
/// cannot be is bad input naming the task and the field; a set mixing
/// reservations and SCHED_FIFO tasks is planned core by core.
#[test]
fn policy_deadline_plans_reservations_under_edf() {
    let file = example("edf-plan.toml");
    let fixed = tinct().arg("plan").arg(&file).exits(1);
    assert!(stdout(&fixed).contains("NOT SCHEDULABLE") || stderr(&fixed).contains("slow"));
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("plan.toml");
    let planned = tinct()
        .args(["plan", "--policy", "deadline", "-o"])
        .arg(&out)
        .arg(&file)
        .exits(0);
    let text = stdout(&planned);
    assert!(text.contains("┆ EDF  ┆"), "{text}");
    assert!(text.contains("plan written to"), "{text}");
    let analysis = analyze_json(&out, &[]);
    assert_eq!(analysis["schedulable"], true);
    assert_eq!(analysis["cores"][0]["edf"]["schedulable"], true);
    for task in analysis["tasks"].as_array().unwrap() {
        assert_eq!(task["policy"], "deadline", "{task}");
    }

    let blocked = std::fs::read_to_string(&file)
        .unwrap()
        .replace("wcet = \"2ms\"\n", "wcet = \"2ms\"\nblocking = \"1ms\"\n");
    let blocked = write(dir.path(), "blocked.toml", blocked);
    let said = common::bad_input([
        "plan".as_ref(),
        "--policy".as_ref(),
        "deadline".as_ref(),
        blocked.as_os_str(),
    ]);
    assert!(
        said.contains("blocked.toml:15: task 'fast' field `blocking`: expected none: ")
            && said.trim_end().ends_with(", found 1ms"),
        "{said}"
    );
    let mixed = std::fs::read_to_string(&file).unwrap().replacen(
        "period = \"5ms\"\n",
        "period = \"5ms\"\npolicy = \"deadline\"\n",
        1,
    );
    // A set mixing both policies is planned core by core: on one core the
    // reservation leaves `slow` missing, on two each gets one.
    let two_cores = write(
        dir.path(),
        "mixed-2.toml",
        mixed.replace("cores = 1", "cores = 2"),
    );
    let mixed = write(dir.path(), "mixed.toml", mixed);
    let one = tinct().arg("plan").arg(&mixed).exits(1);
    assert!(
        stdout(&one).contains("task 'fast' could not be placed")
            && stdout(&one).contains("task 'slow' misses its deadline"),
        "{}",
        stdout(&one)
    );
    let two = tinct().arg("plan").arg(&two_cores).exits(0);
    let text = stdout(&two);
    assert!(
        text.contains("│ fast ┆ EDF  ┆") && text.contains("│ slow ┆ 2    ┆"),
        "{text}"
    );
    // `--policy deadline` with the static placement: EDF fits both on the
    // one core, as with CATA.
    let placed = tinct()
        .args(["plan", "--policy", "deadline", "--placement", "static"])
        .arg(&file)
        .exits(0);
    assert!(
        stdout(&placed).contains("verdict: SCHEDULABLE"),
        "{}",
        stdout(&placed)
    );
    // The static placement too: one core cannot hold both, two can, and
    // the written placement re-analyses with each policy kept.
    tinct()
        .args(["plan", "--placement", "static"])
        .arg(&mixed)
        .exits(1);
    let placed = dir.path().join("placed.toml");
    tinct()
        .args(["plan", "--placement", "static", "-o"])
        .arg(&placed)
        .arg(&two_cores)
        .exits(0);
    let analysis = analyze_json(&placed, &[]);
    assert_eq!(analysis["schedulable"], true, "{analysis}");
    let policies: Vec<(&str, &str)> = analysis["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["name"].as_str().unwrap(), t["policy"].as_str().unwrap()))
        .collect();
    assert_eq!(policies, [("fast", "deadline"), ("slow", "fifo")]);
}
