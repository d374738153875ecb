//! tinct on a machine whose page-colour bits cannot be derived (issue 25):
//! every test reads its cache topology from tinct-sys's fixture of a KVM
//! guest of an Intel Xeon (L3 300 MiB 20-way: a 15 MiB way), so these run
//! alike on every host. What needs no colours works; what must colour
//! refuses in one line naming the three ways to give the bits; each of
//! those ways works and the command says which one it used.

mod common;

use common::{assert_exits_saying, example, read_json, stderr, stdout, tinct_on_unknown_machine};
use std::process::Output;
use std::time::Duration;
use tinct_sys::testing::{privileged_or_skip, privileged_serial};

/// Far above any of these commands on a loaded machine, far below CI's limit.
const LIMIT: Duration = Duration::from_secs(240);

/// The three ways the one-line refusal names.
const THREE_WAYS: [&str; 3] = ["--color-bits", "TINCT_COLOR_BITS", "tinct doctor --save"];

fn unknown(args: &[&str]) -> Output {
    tinct_on_unknown_machine()
        .args(args)
        .timeout(LIMIT)
        .output()
        .unwrap()
}

/// A refusal: exit 2, one line on stderr, naming the three ways, said once.
fn assert_refused_in_one_line(output: &Output) {
    let err = assert_exits_saying(output, 2, "page-colour bits of this machine are unknown");
    assert_eq!(err.trim_end().lines().count(), 1, "one line:\n{err}");
    for way in THREE_WAYS {
        assert!(err.contains(way), "{way} named:\n{err}");
    }
    assert!(err.contains("not a power of two"), "why:\n{err}");
}

#[test]
fn the_fixture_is_a_machine_whose_bits_cannot_be_derived() {
    let root = tinct_sys::SysRoot::at(common::unknown_colours_machine());
    let refused = tinct_sys::cache_slices::machine_color_geometry(&root, 4096).unwrap_err();
    assert!(refused.contains("not a power of two"), "{refused}");
}

#[test]
fn exec_with_colours_refuses_before_the_program_starts() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let output = unknown(&[
        "exec",
        "--colors",
        "0-3",
        "--",
        "touch",
        marker.to_str().unwrap(),
    ]);
    assert_refused_in_one_line(&output);
    assert!(!marker.exists(), "the program must not run uncoloured");
    // The same for a program that would never call malloc.
    assert_refused_in_one_line(&unknown(&["exec", "--colors", "0-3", "--", "true"]));
}

#[test]
fn a_coloured_run_refuses_before_its_directory_exists() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let output = unknown(&[
        "run",
        example("light.toml").to_str().unwrap(),
        "--duration",
        "1s",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_refused_in_one_line(&output);
    assert!(
        !out.exists(),
        "no run directory for a run that never started"
    );
}

#[test]
fn an_uncoloured_run_completes_and_says_why_it_is_uncoloured() {
    let Some(_serial) = privileged_serial("tinct run (SCHED_FIFO)") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let output = unknown(&[
        "run",
        example("light.toml").to_str().unwrap(),
        "--uncolored",
        "--duration",
        "1s",
        "--watchdog-factor",
        common::TEST_WATCHDOG_FACTOR,
        "--out",
        out.to_str().unwrap(),
    ]);
    common::assert_completed(&output);
    let text = stdout(&output);
    assert!(text.contains("UNCOLORED"), "{text}");
    let summary = read_json(&out.join("summary.json"));
    let reason = summary["isolation"]["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("page-colour bits are unknown"), "{summary}");
}

#[test]
fn analyze_plan_and_doctor_need_no_colours() {
    let set = example("kim2013-table2.toml");
    let analyzed = unknown(&["analyze", set.to_str().unwrap()]);
    assert_eq!(analyzed.status.code(), Some(0), "{}", stderr(&analyzed));
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.toml");
    let planned = unknown(&[
        "plan",
        example("kim2013.toml").to_str().unwrap(),
        "-o",
        plan.to_str().unwrap(),
    ]);
    assert_eq!(planned.status.code(), Some(0), "{}", stderr(&planned));
    let doctor = unknown(&["doctor"]);
    assert_eq!(doctor.status.code(), Some(0), "{}", stderr(&doctor));
    assert!(stdout(&doctor).contains("colour bits in force"));
    // What to do next: the bits safe to assume, how to check, how to save
    // (the doctor of that machine's tree: TINCT_TOPOLOGY_ROOT moves only
    // the colour rule of commands, `--root` the whole diagnosis).
    let output = tinct_on_unknown_machine()
        .args(["doctor", "--json", "--root"])
        .arg(common::unknown_colours_machine())
        .timeout(LIMIT)
        .output()
        .unwrap();
    let tree: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let colours = finding(&tree, "page colors");
    let fix = colours["fix"].as_str().unwrap_or_default();
    for words in [
        "safe to assume: bits 12-15",
        "the probe cannot confirm them",
        "tinct doctor --save --color-bits 12-15",
    ] {
        assert!(fix.contains(words), "{words}: {fix}");
    }
    let json = doctor_json(&[]);
    let in_force = finding(&json, "colour bits in force");
    assert_eq!(in_force["level"], "warning", "{in_force}");
}

/// `tinct doctor --json` on the unknown machine, with `env` added.
fn doctor_json(env: &[(&str, &std::path::Path)]) -> serde_json::Value {
    let output = tinct_on_unknown_machine()
        .args(["doctor", "--json"])
        .envs(env.iter().copied())
        .timeout(LIMIT)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    serde_json::from_slice(&output.stdout).unwrap()
}

/// The finding of `subject` in a doctor report.
fn finding<'a>(json: &'a serde_json::Value, subject: &str) -> &'a serde_json::Value {
    json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["subject"] == subject)
        .unwrap_or_else(|| panic!("no {subject}: {json}"))
}

#[test]
fn each_source_of_the_bits_is_used_and_named() {
    let dir = tempfile::tempdir().unwrap();
    let machine_file = dir.path().join("etc/tinct/machine.toml");
    // The environment.
    let json = doctor_json(&[("TINCT_COLOR_BITS", std::path::Path::new("12-15"))]);
    let found = finding(&json, "colour bits in force")["found"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        found.contains("16 colours on physical address bits 12-15 (from TINCT_COLOR_BITS)"),
        "{found}"
    );
    // Nothing to save without bits: bad input, and no file.
    let nothing = tinct_on_unknown_machine()
        .args(["doctor", "--save"])
        .env("TINCT_MACHINE_FILE", &machine_file)
        .timeout(LIMIT)
        .output()
        .unwrap();
    let err = assert_exits_saying(
        &nothing,
        2,
        "--save: expected known page-colour bits to save",
    );
    assert!(err.contains("found nothing to save: "), "{err}");
    assert!(!machine_file.exists());
    // Saved once, then used by every command without a flag.
    let saved = tinct_on_unknown_machine()
        .args(["doctor", "--save", "--color-bits", "12-14"])
        .env("TINCT_MACHINE_FILE", &machine_file)
        .timeout(LIMIT)
        .output()
        .unwrap();
    assert_exits_saying(&saved, 0, "saved colour bits 12-14");
    let text = std::fs::read_to_string(&machine_file).unwrap();
    assert!(text.contains("bits = \"12-14\""), "{text}");
    let json = doctor_json(&[("TINCT_MACHINE_FILE", &machine_file)]);
    let found = finding(&json, "colour bits in force")["found"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        found.contains("8 colours on physical address bits 12-14 (from the machine file")
            && found.contains("from --color-bits"),
        "the source and the evidence saved with it: {found}"
    );
    // A broken machine file is bad input naming its line.
    std::fs::write(&machine_file, "[colors]\nbits = \"12-x\"\n").unwrap();
    let broken = tinct_on_unknown_machine()
        .args(["exec", "--colors", "0", "--", "true"])
        .env("TINCT_MACHINE_FILE", &machine_file)
        .timeout(LIMIT)
        .output()
        .unwrap();
    let err = assert_exits_saying(&broken, 2, "machine.toml:2: colors.bits: expected");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
}

#[test]
fn bad_bits_are_bad_input_naming_where_they_came_from() {
    let output = tinct_on_unknown_machine()
        .args(["exec", "--colors", "0", "--", "true"])
        .env("TINCT_COLOR_BITS", "13-15")
        .timeout(LIMIT)
        .output()
        .unwrap();
    assert_exits_saying(
        &output,
        2,
        "TINCT_COLOR_BITS=13-15: expected consecutive physical address bits from the page offset bit 12",
    );
    let output = unknown(&[
        "exec",
        "--color-bits",
        "12-x",
        "--colors",
        "0",
        "--",
        "true",
    ]);
    assert_exits_saying(&output, 2, "--color-bits 12-x: expected");
    // Every bench checks the flag, even one that colours nothing.
    let output = unknown(&["bench", "calibrate", "--quick", "--color-bits", "12-40"]);
    assert_exits_saying(&output, 2, "expected at most 16 colour bits");
}

#[test]
fn exec_with_bits_from_the_environment_colours_a_python_program() {
    if !privileged_or_skip("the shim reads frame numbers") {
        return;
    }
    common::shim();
    let output = tinct_on_unknown_machine()
        .args(["exec", "--colors", "0-3", "--", "python3", "-c", "print(1)"])
        .env("TINCT_COLOR_BITS", "12-15")
        .timeout(LIMIT)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "1\n");
    let err = stderr(&output);
    assert!(
        err.contains("16 colours on physical address bits 12-15 (from TINCT_COLOR_BITS)"),
        "exec says which source it used:\n{err}"
    );
}

#[test]
fn benches_that_colour_take_the_same_override() {
    let Some(_serial) = privileged_serial("tinct bench isolation (frame numbers)") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let refused = unknown(&[
        "bench",
        "isolation",
        "--quick",
        "--no-progress",
        "--out",
        dir.path().join("refused").to_str().unwrap(),
    ]);
    assert_refused_in_one_line(&refused);
    let out = dir.path().join("isolation");
    let output = tinct_on_unknown_machine()
        .args([
            "bench",
            "isolation",
            "--quick",
            "--reps",
            "1",
            "--jobs",
            "2",
        ])
        .args(["--no-progress", "--out", out.to_str().unwrap()])
        .env("TINCT_COLOR_BITS", "12-15")
        .timeout(LIMIT)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report = read_json(&out.join("isolation.json"));
    let parameters = &report["parameters"];
    assert_eq!(parameters["colors"], 16, "{report}");
    assert!(
        parameters["color_source"]
            .as_str()
            .is_some_and(|s| s.contains("(from TINCT_COLOR_BITS)")),
        "{parameters}"
    );
}

#[test]
fn wcet_profile_refuses_colours_it_cannot_have_and_runs_uncoloured_when_asked() {
    // Its co-run condition puts the co-runners on a second CPU.
    let cpus = tinct_sys::sched::affinity().unwrap();
    if cpus.len() < 2 {
        eprintln!("skipped: wcet-profile's co-runners need 2 CPUs, this process has {cpus:?}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let refused = unknown(&[
        "bench",
        "wcet-profile",
        "--quick",
        "--working-set",
        "64KiB",
        "--no-progress",
        "--out",
        &out("refused"),
    ]);
    assert_refused_in_one_line(&refused);
    assert!(!dir.path().join("refused").exists());
    let uncoloured = unknown(&[
        "bench",
        "wcet-profile",
        "--quick",
        "--uncolored",
        "--jobs",
        "3",
        "--working-set",
        "64KiB",
        "--no-progress",
        "--out",
        &out("uncoloured"),
    ]);
    assert_eq!(uncoloured.status.code(), Some(0), "{}", stderr(&uncoloured));
    assert!(dir.path().join("uncoloured/wcet-profile.json").is_file());
}

#[test]
fn the_demo_runs_its_whole_loop_uncoloured_and_says_why() {
    let Some(_serial) = privileged_serial("tinct demo (SCHED_FIFO)") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("demo");
    let output = unknown(&["demo", "--duration", "1s", "--out", out.to_str().unwrap()]);
    let text = stdout(&output);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{text}\nstderr:\n{}",
        stderr(&output)
    );
    assert!(
        text.contains("the colour bits are unknown here, so the whole loop runs uncoloured"),
        "{text}"
    );
    assert!(
        text.contains(
            "uncoloured, the whole loop: the page-colour bits of this machine are unknown"
        ),
        "the note says why and how to give them: {text}"
    );
    let verdict = read_json(&out.join("verdict.json"));
    assert_eq!(verdict["coloured"], false, "{verdict}");
    assert!(
        verdict["colours"]
            .as_str()
            .is_some_and(|c| c.contains("unknown")),
        "{verdict}"
    );
    let summary = read_json(&out.join("run/summary.json"));
    for task in summary["tasks"].as_array().unwrap() {
        assert_ne!(task["placement"]["placement"], "colored", "{task}");
    }
}

#[test]
fn the_proof_never_proves_isolation_from_bits_it_cannot_check() {
    let Some(_serial) = privileged_serial("tinct run (frame numbers, SCHED_FIFO)") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // light.toml with 16 partitions, so that 16 colours (bits 12-15) do.
    let light = std::fs::read_to_string(example("light.toml")).unwrap();
    assert!(light.contains("partitions = 32\n"), "{light}");
    let plan = dir.path().join("light16.toml");
    std::fs::write(
        &plan,
        light.replace("partitions = 32\n", "partitions = 16\n"),
    )
    .unwrap();
    let run = |bits: &str| {
        let out = dir.path().join(format!("run-{bits}"));
        let output = tinct_on_unknown_machine()
            .arg("run")
            .arg(&plan)
            .args(["--duration", "300ms", "--watchdog-factor"])
            .arg(common::TEST_WATCHDOG_FACTOR)
            .arg("--out")
            .arg(&out)
            .env("TINCT_COLOR_BITS", bits)
            .timeout(LIMIT)
            .output()
            .unwrap();
        common::assert_completed(&output);
        read_json(&out.join("summary.json"))["isolation"].clone()
    };
    // Bits beyond those safe to assume (12-15 here): nothing on this
    // machine can tell whether the cache has them, so no proof.
    let beyond = run("12-20");
    assert_eq!(beyond["status"], "unavailable", "{beyond}");
    assert!(
        beyond["reason"]
            .as_str()
            .is_some_and(|r| r.contains("safe to assume (bits 12-15)")),
        "{beyond}"
    );
    // Within them, the proof is made with them, and says so.
    let within = run("12-15");
    // Too few colours for the plan's partitions: bad input before the run.
    let few = tinct_on_unknown_machine()
        .args([
            "run",
            example("light.toml").to_str().unwrap(),
            "--duration",
            "300ms",
        ])
        .arg("--out")
        .arg(dir.path().join("few"))
        .env("TINCT_COLOR_BITS", "12-15")
        .timeout(LIMIT)
        .output()
        .unwrap();
    assert_exits_saying(
        &few,
        2,
        "platform.partitions: expected at most as many partitions as colours",
    );
    assert!(!dir.path().join("few").exists());
    assert_ne!(within["status"], "unavailable", "{within}");
    assert!(
        within["model"]["name"]
            .as_str()
            .is_some_and(|n| n.contains("within those safe to assume")),
        "{within}"
    );
}
