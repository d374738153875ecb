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

mod common;

use common::{TEST_WATCHDOG_FACTOR, assert_completed, read_json, stdout, tinct, write};
use serde_json::Value;
use std::path::Path;
use tinct_sys::testing::privileged_serial;

/// Two CPUs this process may run on (the first and the last allowed).
fn two_cpus() -> (u32, u32) {
    let cpus = tinct_sys::sched::affinity().unwrap();
    assert!(
        cpus.len() >= 2,
        "these tests run tasks on two CPUs; this process may use only {cpus:?}"
    );
    (cpus[0], cpus[cpus.len() - 1])
}

/// The page colours a task set without `color_bits` gets from `tinct`
/// (its tests give the mechanism's bits in `TINCT_COLOR_BITS`).
fn machine_colors() -> u32 {
    let mut spec = tinct_rt::spec::RunSpec::new("probe", Vec::new(), 1);
    spec.color_bits_flag = Some(tinct_sys::testing::MECHANISM_COLOR_BITS_TEXT.into());
    tinct_rt::memory::ColorLayout::of_spec(&spec)
        .unwrap()
        .mapping
        .colors()
}

/// Which of the two CPUs a task is pinned to.
#[derive(Clone, Copy)]
enum Cpu {
    First,
    Second,
}

/// Runs for 300 ms a plan of `[platform]` with `platform` (N_P and, if
/// wanted, `color_bits`) whose tasks `(name, CPU, partitions)` each chase
/// a pointer over `working_set` bytes; the summary and what was printed.
/// `None` (a skip) without root.
fn run_plan(
    platform: &str,
    tasks: &[(&str, Cpu, &[u32])],
    working_set: u64,
) -> Option<(Value, String)> {
    run_plan_on(platform, tasks, working_set, common::unsliced_machine())
}

/// [`run_plan`] with the cache topology of the colour rule and the proof's
/// model read from `topology` (`TINCT_TOPOLOGY_ROOT`): the proof's model
/// follows the machine's rule, so the tests give their own machine.
fn run_plan_on(
    platform: &str,
    tasks: &[(&str, Cpu, &[u32])],
    working_set: u64,
    topology: &Path,
) -> Option<(Value, String)> {
    let working_sets = vec![working_set; tasks.len()];
    run_plan_with(platform, tasks, &working_sets, topology)
}

/// [`run_plan_on`] with a working set per task (0: a compute-only task).
fn run_plan_with(
    platform: &str,
    tasks: &[(&str, Cpu, &[u32])],
    working_sets: &[u64],
    topology: &Path,
) -> Option<(Value, String)> {
    let _serial = privileged_serial("tinct run (frame numbers, SCHED_FIFO)")?;
    let (first, second) = two_cpus();
    let mut text = format!(
        "[platform]\ncores = {}\n{platform}\nmemory = \"1GiB\"\nrefill = \"45.3us\"\n",
        first.max(second) + 1
    );
    for ((name, cpu, partitions), &working_set) in tasks.iter().zip(working_sets) {
        let core = match cpu {
            Cpu::First => first,
            Cpu::Second => second,
        };
        let partitions: Vec<String> = partitions.iter().map(u32::to_string).collect();
        // A working set of 0 makes the task compute-only: partitions, no memory.
        let body = if working_set == 0 {
            "kernel = \"compute\", iterations = 2000".to_string()
        } else {
            format!("kernel = \"chase\", working_set = \"{working_set}B\", iterations = 2000")
        };
        text.push_str(&format!(
            "\n[[task]]\nname = \"{name}\"\nperiod = \"50ms\"\nmemory = \"64KiB\"\n\
             wcet = {{ 1 = \"5ms\" }}\ncore = {core}\npartitions = [{}]\n\
             body = {{ {body} }}\n",
            partitions.join(", ")
        ));
    }
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "plan.toml", text);
    let out = dir.path().join("run");
    let output = tinct()
        .env("TINCT_TOPOLOGY_ROOT", topology)
        .args(["run", file.to_str().unwrap(), "--duration", "300ms"])
        .args(["--watchdog-factor", TEST_WATCHDOG_FACTOR, "--out"])
        .arg(&out)
        .timeout(std::time::Duration::from_secs(240))
        .output()
        .unwrap();
    assert_completed(&output);
    Some((read_json(&out.join("summary.json")), stdout(&output)))
}

/// `partitions = N` of eight colours each under the tests' colour bits (at
/// most 256, the format's limit), and a working set of two pages of each
/// colour of a partition: every colour of a task's partitions then holds
/// its pages.
fn eight_colour_partitions() -> (String, u64) {
    let partitions = (machine_colors() / 8).clamp(2, 256);
    let colours_per_partition = u64::from(machine_colors() / partitions);
    (
        format!("partitions = {partitions}"),
        2 * colours_per_partition * 4096,
    )
}

/// Task `name`, the `index`-th of the plan (the summary keeps its order).
fn task<'a>(summary: &'a Value, index: usize, name: &str) -> &'a Value {
    let task = &summary["tasks"][index];
    assert_eq!(task["name"], name, "{summary}");
    task
}

/// The working sets and stacks are proven isolated, and the residue (the
/// process's other resident pages) was read: the verdict is ISOLATED
/// exactly when the residue reaches no set of the tasks' partitions (a
/// process's code alone is megabytes of pages of every colour, so it
/// always does in practice), and the text says which.
fn assert_isolated_but_for_the_residue(summary: &Value, stdout: &str) {
    let isolation = &summary["isolation"];
    let residue = &isolation["residue"];
    let bytes = residue["bytes"].as_u64().unwrap_or(0);
    assert!(bytes > 0, "the residue was read: {isolation}");
    assert_eq!(residue["unread"], serde_json::json!([]), "{isolation}");
    let kinds: Vec<&str> = residue["kinds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["kind"].as_str().unwrap())
        .collect();
    assert!(kinds.contains(&"code"), "{kinds:?}");
    let reached = residue["sets_in_partitions"].as_u64().unwrap();
    if reached > 0 {
        assert_eq!(isolation["status"], "isolated_except", "{isolation}");
        assert!(
            stdout.contains("cache isolation: ISOLATED EXCEPT: ")
                && stdout.contains("the analysis (kim2013 Eq. 1-3) assumes no other core"),
            "{stdout}"
        );
    } else {
        assert_eq!(isolation["status"], "isolated", "{isolation}");
    }
}

/// The tasks that can evict task `name` (the `index`-th), by the proof.
fn evictors(summary: &Value, index: usize, name: &str) -> Vec<String> {
    task(summary, index, name)["isolation"]["evicted_by"]
        .as_array()
        .unwrap_or_else(|| panic!("task {name} has no proof: {summary}"))
        .iter()
        .map(|e| e["task"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn disjoint_partitions_on_two_cpus_are_proven_isolated() {
    let (platform, working_set) = eight_colour_partitions();
    // c shares a's partition on a's CPU, as kim2013 lets one core's tasks do.
    let tasks: [(&str, Cpu, &[u32]); 3] = [
        ("a", Cpu::First, &[1]),
        ("b", Cpu::Second, &[2]),
        ("c", Cpu::First, &[1]),
    ];
    let Some((summary, stdout)) = run_plan(&platform, &tasks, working_set) else {
        return;
    };
    let isolation = &summary["isolation"];
    assert_isolated_but_for_the_residue(&summary, &stdout);
    assert!(
        isolation["color_rule"]
            .as_str()
            .unwrap()
            .contains(&format!("{} colours", machine_colors())),
        "{isolation}"
    );
    assert_eq!(evictors(&summary, 0, "a"), ["c"]);
    assert_eq!(evictors(&summary, 1, "b"), Vec::<String>::new());
    assert_eq!(evictors(&summary, 2, "c"), ["a"]);
    let pairs = isolation["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 1, "{isolation}");
    assert_eq!(pairs[0]["sharing"]["kind"], "planned_on_one_cpu");
    for (index, name) in ["a", "b", "c"].into_iter().enumerate() {
        let proof = &task(&summary, index, name)["isolation"];
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
    // A host stall may push a job past its bound (a loud line naming the
    // stall); what this test forbids is an isolation alarm.
    assert!(
        !stdout
            .lines()
            .any(|line| line.starts_with("!!! tasks ") && line.contains("can evict each other")),
        "{stdout}"
    );
    assert!(!stdout.contains("can evict each other in"), "{stdout}");
}

/// A compute-only task with partitions beside a task with a working set:
/// its stack alone is coloured, and the proof counts it as its lines (it
/// was once read as a working set whose frames could not be read, which
/// made the whole proof unavailable).
#[test]
fn a_compute_only_tasks_stack_is_in_the_proof() {
    let (platform, working_set) = eight_colour_partitions();
    let tasks: [(&str, Cpu, &[u32]); 2] =
        [("memory", Cpu::First, &[1]), ("compute", Cpu::Second, &[2])];
    let Some((summary, stdout)) = run_plan_with(
        &platform,
        &tasks,
        &[working_set, 0],
        common::unsliced_machine(),
    ) else {
        return;
    };
    assert_isolated_but_for_the_residue(&summary, &stdout);
    let compute = task(&summary, 1, "compute");
    assert_eq!(compute["placement"]["placement"], "colored", "{compute}");
    assert_eq!(compute["placement"]["bytes"], 0, "{compute}");
    let sets = compute["isolation"]["sets"].as_u64().unwrap();
    assert!(sets > 0, "its stack occupies sets: {compute}");
    assert_eq!(evictors(&summary, 0, "memory"), Vec::<String>::new());
    assert_eq!(evictors(&summary, 1, "compute"), Vec::<String>::new());
}

#[test]
fn partitions_shared_across_cpus_name_the_evicting_pair() {
    let (platform, working_set) = eight_colour_partitions();
    let tasks: [(&str, Cpu, &[u32]); 3] = [
        ("a", Cpu::First, &[1]),
        ("b", Cpu::Second, &[1, 2]),
        ("c", Cpu::Second, &[3]),
    ];
    // Twice the pages: b's cover both its partitions, so every colour of 1.
    let Some((summary, stdout)) = run_plan(&platform, &tasks, 2 * working_set) else {
        return;
    };
    let isolation = &summary["isolation"];
    assert_eq!(isolation["status"], "not_isolated", "{isolation}");
    let pairs = isolation["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 1, "{isolation}");
    assert_eq!(pairs[0]["tasks"][0]["task"], "a");
    assert_eq!(pairs[0]["tasks"][1]["task"], "b");
    assert_eq!(pairs[0]["sharing"]["kind"], "planned_across_cpus");
    assert_eq!(pairs[0]["sharing"]["partitions"], serde_json::json!([1]));
    assert_eq!(evictors(&summary, 0, "a"), ["b"]);
    assert_eq!(evictors(&summary, 1, "b"), ["a"]);
    assert_eq!(evictors(&summary, 2, "c"), Vec::<String>::new());
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
    // 32 colours on bits 12-16, 8 per partition: a working set of 8 pages
    // takes each colour of its partition once.
    let platform = "partitions = 4\ncolor_bits = [12, 13, 14, 15, 16]";
    let tasks: [(&str, Cpu, &[u32]); 2] = [("a", Cpu::First, &[1]), ("b", Cpu::Second, &[2])];
    let Some((summary, stdout)) = run_plan(platform, &tasks, 8 * 4096) else {
        return;
    };
    for (index, (name, colors)) in [("a", "0-7"), ("b", "8-15")].into_iter().enumerate() {
        let placement = &task(&summary, index, name)["placement"];
        assert_eq!(placement["placement"], "colored", "{placement}");
        assert_eq!(placement["machine_colors"], 32, "{placement}");
        assert_eq!(placement["colors"], colors, "{placement}");
        assert_eq!(
            placement["pages_outside_colors"], 0,
            "every page checked against bits 12-16: {placement}"
        );
        // The stack its jobs ran on is among those pages.
        assert!(
            placement["stack_bytes"].as_u64().unwrap() >= 512 * 1024,
            "{placement}"
        );
    }
    let rule = "explicit colour bits: 32 colours on physical address bits 12-16 (given by the \
                task set's [platform] color_bits (";
    let said = summary["isolation"]["color_rule"]
        .as_str()
        .unwrap_or_default();
    assert!(
        said.starts_with(rule) && said.ends_with("plan.toml))"),
        "{said}"
    );
    assert!(stdout.contains(rule), "{stdout}");
    assert_isolated_but_for_the_residue(&summary, &stdout);
}

#[test]
fn colour_bits_the_cache_does_not_have_are_caught_by_the_proof() {
    // The cache is tinct-sys's fixture of a Zen guest, whose rule derives
    // bits 12-17, so that the proof knows the set index on any host. The
    // task set gives bits up to two above the mechanism's 512 colours:
    // partitions 1 and 2 differ only in bits above the cache's set index,
    // so the plan keeps them disjoint while their pages share sets.
    let topology = tinct_sys::testing::fixture_path("kvm-epyc");
    let colours = machine_colors();
    let bits: Vec<String> = (12..12 + colours.trailing_zeros() + 2)
        .map(|b| b.to_string())
        .collect();
    let platform = format!("partitions = 4\ncolor_bits = [{}]", bits.join(", "));
    let tasks: [(&str, Cpu, &[u32]); 2] = [("a", Cpu::First, &[1]), ("b", Cpu::Second, &[2])];
    // One page of each colour of a partition: every set index of the cache.
    let Some((summary, stdout)) =
        run_plan_on(&platform, &tasks, u64::from(colours) * 4096, &topology)
    else {
        return;
    };
    let isolation = &summary["isolation"];
    assert_eq!(isolation["status"], "not_isolated", "{isolation}");
    assert_eq!(isolation["pairs"][0]["sharing"]["kind"], "disjoint_in_plan");
    assert_eq!(
        isolation["pairs"][0]["sets"], isolation["model"]["sets"],
        "every set of the cache is shared"
    );
    let (first, second) = two_cpus();
    let alarm = format!(
        "!!! tasks 'a' (CPU {first}) and 'b' (CPU {second}) can evict each other in {} cache \
         sets although the plan gives them disjoint partitions {{1}} and {{2}}: the colouring \
         does not isolate",
        isolation["model"]["sets"]
    );
    assert!(stdout.contains(&alarm), "{stdout}");
}
