//! `tinct run` proves (or refutes) that its colouring isolates: the frames
//! of every task's working set go through tinct-sim's model of this
//! machine's last-level cache, and summary.json and the printed verdict say
//! per task which cache sets it can occupy and who can evict it (issue 11
//! item 6). A task set's `[platform] color_bits` decide the colours, and
//! the run says which rule it used (issue 16 item 4).
//!
//! Real SCHED_FIFO runs of 300 ms on two CPUs with small working sets: they
//! need root (frame numbers, SCHED_FIFO); without it they skip, unless
//! TINCT_REQUIRE_PRIVILEGED=1 makes them fail.

use assert_cmd::Command;
use serde_json::Value;
use std::path::Path;
use std::sync::Mutex;

static SERIAL: Mutex<()> = Mutex::new(());

/// Two CPUs this process may run on (the first and the last allowed).
fn two_cpus() -> (u32, u32) {
    let cpus = tinct_sys::sched::affinity().unwrap();
    assert!(
        cpus.len() >= 2,
        "these tests run tasks on two CPUs; this process may use only {cpus:?}"
    );
    (cpus[0], cpus[cpus.len() - 1])
}

/// This machine's page colours under its own rule (what a task set without
/// `color_bits` gets).
fn machine_colors() -> u32 {
    let spec = tinct_rt::spec::RunSpec::new("probe", Vec::new(), 1);
    tinct_rt::memory::ColorLayout::of_spec(&spec)
        .unwrap()
        .mapping
        .colors()
}

/// A planned task set: `platform` lines, then one task per `(name, cpu,
/// partitions)`, each a pointer chase over `working_set` bytes.
fn plan(platform: &str, tasks: &[(&str, u32, &[u32])], working_set: u64) -> String {
    let mut text = format!("[platform]\n{platform}\nmemory = \"1GiB\"\nrefill = \"45.3us\"\n");
    for (name, cpu, partitions) in tasks {
        let partitions: Vec<String> = partitions.iter().map(u32::to_string).collect();
        text.push_str(&format!(
            "\n[[task]]\nname = \"{name}\"\nperiod = \"50ms\"\nmemory = \"64KiB\"\n\
             wcet = {{ 1 = \"5ms\" }}\ncore = {cpu}\npartitions = [{}]\n\
             body = {{ kernel = \"chase\", working_set = \"{working_set}B\", iterations = 2000 }}\n",
            partitions.join(", ")
        ));
    }
    text
}

/// Partitions of eight colours each under the machine's rule (at most 256,
/// the format's limit), and a working set of two pages of each colour of a
/// partition: every colour of a task's partitions then holds its pages.
fn eight_colour_partitions() -> (u32, u64) {
    let partitions = (machine_colors() / 8).clamp(2, 256);
    let colours_per_partition = u64::from(machine_colors() / partitions);
    (partitions, 2 * colours_per_partition * 4096)
}

/// Runs `text` as a plan for 300 ms; the summary and what was printed.
fn run(dir: &Path, text: &str) -> (Value, String) {
    let file = dir.join("plan.toml");
    std::fs::write(&file, text).unwrap();
    let out = dir.join("run");
    let output = Command::cargo_bin("tinct")
        .unwrap()
        .args([
            "run",
            file.to_str().unwrap(),
            "--duration",
            "300ms",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let summary =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    (summary, stdout)
}

fn task<'a>(summary: &'a Value, name: &str) -> &'a Value {
    summary["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap()
}

fn evictors(summary: &Value, name: &str) -> Vec<String> {
    task(summary, name)["isolation"]["evicted_by"]
        .as_array()
        .unwrap_or_else(|| panic!("task {name} has no proof: {summary}"))
        .iter()
        .map(|e| e["task"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn disjoint_partitions_on_two_cpus_are_proven_isolated() {
    if !tinct_sys::testing::privileged_or_skip("tinct run (frame numbers, SCHED_FIFO)") {
        return;
    }
    let _guard = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let (first, second) = two_cpus();
    let (partitions, working_set) = eight_colour_partitions();
    let platform = format!("cores = {}\npartitions = {partitions}", second + 1);
    // c shares a's partition on a's CPU, as kim2013 lets one core's tasks do.
    let text = plan(
        &platform,
        &[("a", first, &[1]), ("b", second, &[2]), ("c", first, &[1])],
        working_set,
    );
    let dir = tempfile::tempdir().unwrap();
    let (summary, stdout) = run(dir.path(), &text);
    let isolation = &summary["isolation"];
    assert_eq!(isolation["status"], "isolated", "{isolation}");
    assert!(
        isolation["color_rule"]
            .as_str()
            .unwrap()
            .contains(&format!("{} colours", machine_colors())),
        "{isolation}"
    );
    assert_eq!(evictors(&summary, "a"), ["c"]);
    assert_eq!(evictors(&summary, "b"), Vec::<String>::new());
    assert_eq!(evictors(&summary, "c"), ["a"]);
    let pairs = isolation["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 1, "{isolation}");
    assert_eq!(pairs[0]["sharing"]["kind"], "planned_on_one_cpu");
    for name in ["a", "b", "c"] {
        let proof = &task(&summary, name)["isolation"];
        let sets = proof["sets"].as_u64().unwrap();
        assert!(sets > 0 && sets < proof["total_sets"].as_u64().unwrap());
        assert!(
            stdout.contains(&format!("  {name}: ")) && stdout.contains("can occupy"),
            "{stdout}"
        );
    }
    assert!(stdout.contains("cache isolation: ISOLATED"), "{stdout}");
    assert!(
        stdout.contains("  b: ") && stdout.contains("no other task can evict its lines"),
        "{stdout}"
    );
    assert!(!stdout.contains("!!!"), "{stdout}");
}

#[test]
fn partitions_shared_across_cpus_name_the_evicting_pair() {
    if !tinct_sys::testing::privileged_or_skip("tinct run (frame numbers, SCHED_FIFO)") {
        return;
    }
    let _guard = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let (first, second) = two_cpus();
    let (partitions, working_set) = eight_colour_partitions();
    let platform = format!("cores = {}\npartitions = {partitions}", second + 1);
    let text = plan(
        &platform,
        &[
            ("a", first, &[1]),
            ("b", second, &[1, 2]),
            ("c", second, &[3]),
        ],
        // b's pages cover both partitions, so every colour of partition 1.
        2 * working_set,
    );
    let dir = tempfile::tempdir().unwrap();
    let (summary, stdout) = run(dir.path(), &text);
    let isolation = &summary["isolation"];
    assert_eq!(isolation["status"], "not_isolated", "{isolation}");
    let pairs = isolation["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 1, "{isolation}");
    assert_eq!(pairs[0]["tasks"][0]["task"], "a");
    assert_eq!(pairs[0]["tasks"][1]["task"], "b");
    assert_eq!(pairs[0]["sharing"]["kind"], "planned_across_cpus");
    assert_eq!(pairs[0]["sharing"]["partitions"], serde_json::json!([1]));
    assert_eq!(evictors(&summary, "a"), ["b"]);
    assert_eq!(evictors(&summary, "b"), ["a"]);
    assert_eq!(evictors(&summary, "c"), Vec::<String>::new());
    assert!(
        stdout.contains("cache isolation: NOT ISOLATED: 1 pair(s)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("can be evicted by b (")
            && stdout.contains("can run at the same time, partitions {1} shared by the plan"),
        "{stdout}"
    );
}

#[test]
fn a_task_sets_color_bits_colour_the_run_and_the_run_says_so() {
    if !tinct_sys::testing::privileged_or_skip("tinct run (frame numbers, SCHED_FIFO)") {
        return;
    }
    let _guard = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let (first, second) = two_cpus();
    // 32 colours on bits 12-16, 8 per partition: a working set of 8 pages
    // takes each colour of its partition once.
    let platform = format!(
        "cores = {}\npartitions = 4\ncolor_bits = [12, 13, 14, 15, 16]",
        second + 1
    );
    let text = plan(
        &platform,
        &[("a", first, &[1]), ("b", second, &[2])],
        8 * 4096,
    );
    let dir = tempfile::tempdir().unwrap();
    let (summary, stdout) = run(dir.path(), &text);
    for (name, colors) in [("a", "0-7"), ("b", "8-15")] {
        let placement = &task(&summary, name)["placement"];
        assert_eq!(placement["placement"], "colored", "{placement}");
        assert_eq!(placement["machine_colors"], 32, "{placement}");
        assert_eq!(placement["colors"], colors, "{placement}");
        assert_eq!(
            placement["pages_outside_colors"], 0,
            "every page checked against bits 12-16: {placement}"
        );
    }
    let rule = "explicit colour bits: 32 colours on physical address bits 12-16 (given by the \
                task set's [platform] color_bits)";
    assert_eq!(summary["isolation"]["color_rule"], rule);
    assert!(stdout.contains(rule), "{stdout}");
    assert_eq!(summary["isolation"]["status"], "isolated");
}

#[test]
fn colour_bits_the_cache_does_not_have_are_caught_by_the_proof() {
    if !tinct_sys::testing::privileged_or_skip("tinct run (frame numbers, SCHED_FIFO)") {
        return;
    }
    let _guard = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let (first, second) = two_cpus();
    // Four times the cache's colours: partitions 1 and 2 differ only in the
    // two bits above the cache's set index, so the plan keeps them disjoint
    // while their pages fall in the same sets.
    let colours = machine_colors();
    let bits: Vec<String> = (12..12 + colours.trailing_zeros() + 2)
        .map(|b| b.to_string())
        .collect();
    let platform = format!(
        "cores = {}\npartitions = 4\ncolor_bits = [{}]",
        second + 1,
        bits.join(", ")
    );
    // One page of each colour of a partition: every set index of the cache.
    let text = plan(
        &platform,
        &[("a", first, &[1]), ("b", second, &[2])],
        u64::from(colours) * 4096,
    );
    let dir = tempfile::tempdir().unwrap();
    let (summary, stdout) = run(dir.path(), &text);
    let isolation = &summary["isolation"];
    assert_eq!(isolation["status"], "not_isolated", "{isolation}");
    assert_eq!(isolation["pairs"][0]["sharing"]["kind"], "disjoint_in_plan");
    assert_eq!(
        isolation["pairs"][0]["sets"], isolation["model"]["sets"],
        "every set of the cache is shared"
    );
    let alarm = format!(
        "!!! tasks 'a' (CPU {first}) and 'b' (CPU {second}) can evict each other in {} cache \
         sets although the plan gives them disjoint partitions {{1}} and {{2}}: the colouring \
         does not isolate",
        isolation["model"]["sets"]
    );
    assert!(stdout.contains(&alarm), "{stdout}");
}
