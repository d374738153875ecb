//! `tinct analyze` end to end: exit statuses, the table, the JSON contract.

mod common;

use assert_cmd::Command;
use common::{
    Exits, analyze_json, bad_input, example, fixture, json_stdout, stderr, stdout, tinct, write,
};
use serde_json::Value;

#[test]
fn table_ii_prints_the_papers_numbers() {
    let out = tinct()
        .arg("analyze")
        .arg(example("kim2013-table2.toml"))
        .exits(0);
    let text = stdout(&out);
    for number in [
        "11.94", "12.30", "25.09", "25.72", "98.55", "101.36", "179.88", "273.78",
    ] {
        assert!(text.contains(number), "{number} missing from:\n{text}");
    }
    assert!(text.contains("verdict: SCHEDULABLE"), "{text}");
}

#[test]
fn json_has_the_documented_fields() {
    let json = analyze_json(&example("kim2013-table2.toml"), &[]);
    assert_eq!(json["schedulable"], Value::Bool(true));
    let tasks = json["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 4);
    for field in [
        "name",
        "core",
        "priority",
        "deadline_ns",
        "wcrt_ns",
        "wcrt_nocint_ns",
        "schedulable",
    ] {
        assert!(
            tasks.iter().all(|t| t.get(field).is_some()),
            "task field {field} missing"
        );
    }
    let r4 = tasks[3]["wcrt_ns"].as_u64().unwrap();
    assert_eq!((r4 as f64 / 1e4).round(), 27378.0, "273.78 ms, got {r4} ns");
    let cores = json["cores"].as_array().unwrap();
    for field in ["utilization", "utilization_bound", "memory_feasible"] {
        assert!(
            cores.iter().all(|c| c.get(field).is_some()),
            "core field {field} missing"
        );
    }
}

/// A task whose iteration passes D reports `wcrt_ns: null`, and the
/// command still exits 0 (the analysis ran).
#[test]
fn unschedulable_sets_report_null_and_exit_zero() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "over.toml",
        include_str!("fixtures/unschedulable.toml"),
    );
    let json = analyze_json(&file, &[]);
    assert_eq!(json["schedulable"], Value::Bool(false));
    assert_eq!(json["tasks"][1]["wcrt_ns"], Value::Null);
    assert_eq!(json["tasks"][1]["schedulable"], Value::Bool(false));
    assert_eq!(json["tasks"][0]["schedulable"], Value::Bool(true));
}

#[test]
fn bad_input_exits_two_with_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "bad.toml",
        "[platform]\ncores = 1\npartitions = 4\nmemory = \"64MiB\"\nrefill = \"1us\"\n[[task]]\nname = \"a\"\nperiod = \"10ms\"\ndeadline = \"20ms\"\nmemory = \"1MiB\"\nwcet = \"1ms\"\n",
    );
    let out = tinct().arg("analyze").arg(&file).exits(2);
    let err = stderr(&out);
    assert!(
        err.contains("bad.toml:9: task 'a' field `deadline`"),
        "{err}"
    );
    assert!(!err.contains("stack backtrace"), "{err}");

    // Unassigned cores are bad input for analyze.
    let out = tinct().arg("analyze").arg(example("kim2013.toml")).exits(2);
    let err = stderr(&out);
    assert!(
        err.contains("kim2013.toml:") && err.contains("field `core`"),
        "{err}"
    );

    tinct()
        .arg("analyze")
        .arg(dir.path().join("missing.toml"))
        .exits(2);
}

/// Without `refill`, Δ comes from a calibration: `--calibration FILE`,
/// `$TINCT_CALIBRATION`, or the one `tinct bench calibrate` saved; scaled
/// from the calibration's partition size to the set's.
#[test]
fn refill_defaults_to_the_machines_calibration() {
    let dir = tempfile::tempdir().unwrap();
    let table2 = std::fs::read_to_string(example("kim2013-table2.toml")).unwrap();
    let no_refill = dir.path().join("set.toml");
    std::fs::write(&no_refill, table2.replace("refill = \"45.3us\"\n", "")).unwrap();
    let calibration = dir.path().join("calibrate.json");
    // Measured with 16 partitions: the set's 32 partitions are half as large.
    std::fs::write(
        &calibration,
        r#"{"bench": "calibrate", "refill": {"refill_ns": 90600, "partitions": 16}}"#,
    )
    .unwrap();
    // `tinct analyze`, with no calibration but the ones the test gives.
    let isolated = || {
        let mut cmd = tinct();
        cmd.arg("analyze")
            .env("HOME", dir.path())
            .env_remove("XDG_STATE_HOME")
            .env_remove("TINCT_CALIBRATION");
        cmd
    };
    let json_of = |cmd: &mut Command| json_stdout(&cmd.arg("--json").exits(0));

    let out = isolated().arg(&no_refill).exits(2);
    let err = stderr(&out);
    assert!(
        err.contains("platform field `refill`") && err.contains("tinct bench calibrate"),
        "{err}"
    );

    let out = isolated()
        .arg("--calibration")
        .arg(&calibration)
        .arg(&no_refill)
        .exits(0);
    let text = stdout(&out);
    assert!(text.contains("45.3us (from calibration"), "{text}");
    assert!(text.contains("273.78"), "{text}");

    let json = json_of(
        isolated()
            .env("TINCT_CALIBRATION", &calibration)
            .arg(&no_refill),
    );
    assert_eq!(json["refill_ns"], Value::from(45_300));
    assert!(
        json["refill_source"]
            .as_str()
            .unwrap()
            .starts_with("from calibration")
    );

    // A saved calibration is found without being named; the file's own key wins over it.
    let saved = dir.path().join(".local/state/tinct/calibrate.json");
    std::fs::create_dir_all(saved.parent().unwrap()).unwrap();
    std::fs::copy(&calibration, &saved).unwrap();
    let json = json_of(isolated().arg(&no_refill));
    assert_eq!(json["refill_ns"], Value::from(45_300));
    let json = json_of(isolated().arg(example("kim2013-table2.toml")));
    assert_eq!(json["refill_source"], Value::from("from the file"));

    // A broken calibration is bad input.
    std::fs::write(&calibration, "{}").unwrap();
    let out = isolated()
        .arg("--calibration")
        .arg(&calibration)
        .arg(&no_refill)
        .exits(2);
    assert!(stderr(&out).contains("refill.refill_ns"));
}

/// Issue 10: a huge C, or a huge Δ with every partition shared, used to wrap
/// and print SCHEDULABLE. Now the iterate passes D (exit 0, NOT
/// SCHEDULABLE) or, when a term of Eq. (1)-(2) itself exceeds 2^64 ns, the
/// file is refused naming the task (exit 2).
#[test]
fn huge_values_are_never_schedulable() {
    // Huge C, no shared partitions: the sum passes D.
    let json = analyze_json(&fixture("huge-c.toml"), &[]);
    assert_eq!(json["schedulable"], Value::Bool(false), "{json}");
    assert_eq!(json["tasks"][1]["wcrt_ns"], Value::Null);

    // Δ = 72057594 s with all 256 partitions shared: ω + γ exceeds 2^64 ns.
    let out = tinct()
        .arg("analyze")
        .arg(fixture("huge-refill.toml"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stdout.contains("verdict: SCHEDULABLE"), "{stdout}");
    assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
    assert!(
        stderr.contains("huge-refill.toml:8: task 'a': C + ω + γ")
            && stderr.contains("exceeds 2^64 ns"),
        "{stderr}"
    );
    // The same Δ through --refill on a set that shares partitions.
    let out = tinct()
        .args(["analyze", "--refill", "72057594s"])
        .arg(example("kim2013-table2.toml"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains("verdict: SCHEDULABLE"), "{stdout}");
    assert!(matches!(out.status.code(), Some(0 | 2)));
}

/// The ceiling ⌈R/T⌉ is one division when R/T is large: a refill time of
/// 1 000 000 s (R/T around 10^7 for the 40 ms task) used to step one
/// period at a time. The verdict is the right one.
#[test]
fn a_large_refill_time_is_analyzed_not_stepped() {
    let json = analyze_json(&example("kim2013-table2.toml"), &["--refill", "1000000s"]);
    assert_eq!(json["schedulable"], Value::Bool(false));
    assert_eq!(json["refill_ns"], 1_000_000_000_000_000u64);
}

/// Issue 10: `tinct analyze /dev/zero` grew to 2.7 GB. Input is read up to
/// the documented 16 MiB and refused past it (exit 2).
#[test]
fn an_endless_file_is_refused_at_the_limit() {
    let err = bad_input(["analyze", "/dev/zero"]);
    assert!(
        err.contains("/dev/zero: file: expected a task-set file of at most 16777216 bytes"),
        "{err}"
    );
}

/// `--overheads none` gives today's numbers exactly: the whole JSON but the
/// source line equals the analysis of the set without overheads.
#[test]
fn overheads_none_is_todays_analysis() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(example("kim2013-table2.toml")).unwrap();
    let with = dir.path().join("with.toml");
    std::fs::write(
        &with,
        text.replace(
            "[platform]\n",
            "[platform]\noverheads = { context_switch = \"50us\", release_latency = \"1ms\" }\n",
        ),
    )
    .unwrap();
    let mut plain = analyze_json(&example("kim2013-table2.toml"), &[]);
    let mut none = analyze_json(&with, &["--overheads", "none"]);
    assert_eq!(none["overheads_source"]["from"], "--overheads none");
    for json in [&mut plain, &mut none] {
        json.as_object_mut().unwrap().remove("overheads_source");
    }
    assert_eq!(plain, none);
    // Without the flag the file's own overheads are charged.
    let charged = analyze_json(&with, &[]);
    assert_eq!(charged["overheads"]["context_switch_ns"], 50_000);
    assert_eq!(charged["tasks"][0]["overhead_ns"], 100_000);
    assert_eq!(charged["tasks"][0]["jitter_ns"], 1_000_000);
    assert!(
        charged["tasks"][3]["wcrt_ns"].as_u64() > plain["tasks"][3]["wcrt_ns"].as_u64(),
        "overheads lengthen the response time"
    );
}

/// `--overheads measured` reads the calibration's maxima; a missing one is
/// reported (text and JSON), not taken as zero silently.
#[test]
fn measured_overheads_come_from_the_calibration() {
    let dir = tempfile::tempdir().unwrap();
    let calibration = write(
        dir.path(),
        "calibrate.json",
        r#"{"bench": "calibrate",
            "refill": {"partitions": 32, "refill_ns": 45300},
            "overheads": {"context_switch_ns": 20000, "release_latency_ns": 100000,
                          "unmeasured": {"tick": "no periodic interruption found"}}}"#,
    );
    let args = [
        "--overheads",
        "measured",
        "--calibration",
        calibration.to_str().unwrap(),
    ];
    let json = analyze_json(&example("kim2013-table2.toml"), &args);
    assert_eq!(json["overheads"]["context_switch_ns"], 20_000);
    assert_eq!(json["overheads"]["release_latency_ns"], 100_000);
    assert_eq!(json["overheads"]["tick_ns"], 0);
    let source = &json["overheads_source"];
    assert!(source["from"].as_str().unwrap().contains("calibrate.json"));
    assert_eq!(source["missing"][0]["name"], "tick");
    assert_eq!(
        source["missing"][0]["why"],
        "no periodic interruption found"
    );
    for task in json["tasks"].as_array().unwrap() {
        assert_eq!(task["overhead_ns"], 40_000);
        assert_eq!(task["jitter_ns"], 100_000);
    }
    let out = tinct()
        .arg("analyze")
        .args(args)
        .arg(example("kim2013-table2.toml"))
        .output()
        .unwrap();
    let text = stdout(&out);
    assert!(text.contains("δ = 20us per context switch"), "{text}");
    assert!(
        text.contains("tick NOT included: no periodic interruption found"),
        "{text}"
    );
    assert!(
        text.contains("J (ms)") && text.contains("2δ (ms)"),
        "{text}"
    );
    // The same file named directly.
    let direct = analyze_json(
        &example("kim2013-table2.toml"),
        &["--overheads", calibration.to_str().unwrap()],
    );
    assert_eq!(direct["overheads"], json["overheads"]);
}

/// Without a calibration, `--overheads measured` is bad input (exit 2).
#[test]
fn measured_without_a_calibration_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = tinct()
        .args(["analyze", "--overheads", "measured"])
        .arg(example("kim2013-table2.toml"))
        .env_remove("TINCT_CALIBRATION")
        .env("HOME", dir.path())
        .env("XDG_STATE_HOME", dir.path())
        .exits(2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--overheads measured"), "{err}");
}

/// Two tasks on core 0 sharing `bus` under pcp (p: C 2 ms, J 1 ms, a
/// 0.1 ms section; q: a 0.5 ms section) and a consumer of p on core 1;
/// Δ = 0 (no partitions, no cache term).
const PIPE: &str = include_str!("fixtures/pipe_with_jitter_and_blocking.toml");

/// Jitter, blocking and a chain: the JSON carries every new term and the
/// text shows them.
#[test]
fn new_terms_reach_json_and_text() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "pipe.toml", PIPE);
    let json = analyze_json(&file, &[]);
    let tasks = &json["tasks"];
    assert_eq!(tasks[0]["blocking_ns"], 500_000);
    assert_eq!(tasks[0]["jitter_ns"], 1_000_000);
    // p: R = 1 + 0.5 + 2 = 3.5 ms; c inherits it: R = 3.5 + 3 = 6.5 ms.
    assert_eq!(tasks[0]["wcrt_ns"], 3_500_000);
    assert_eq!(tasks[2]["trigger"], "data");
    assert_eq!(tasks[2]["jitter_inherited_ns"], 3_500_000);
    assert_eq!(tasks[2]["wcrt_ns"], 6_500_000);
    assert_eq!(json["chains"][0]["tasks"], serde_json::json!(["p", "c"]));
    assert_eq!(json["chains"][0]["bound_ns"], 6_500_000);
    assert!(tasks[0]["breakdown"]["blocking_ns"].is_u64());
    let text = stdout(&tinct().arg("analyze").arg(&file).exits(0));
    assert!(text.contains("p → c: 6.50 ms"), "{text}");
    assert!(
        text.contains("B = 0.50 ms (pcp: the longest section, 'q' on 'bus')"),
        "{text}"
    );
    // A resource used on two cores is refused, naming the task.
    std::fs::write(
        &file,
        std::fs::read_to_string(&file)
            .unwrap()
            .replace("wcet = \"3ms\"\ncore = 1", "wcet = \"3ms\"\ncore = 1\ncritical_sections = [{ resource = \"bus\", length = \"0.1ms\" }]"),
    )
    .unwrap();
    let out = tinct().arg("analyze").arg(&file).exits(2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("resource 'bus'") && err.contains("one core"),
        "{err}"
    );
}

/// An explicit `blocking` below the B_i the file's own sections give is
/// not used: the analysis takes the derived one and says so on stderr
/// (file, line, field, both values), in the notes and in the JSON.
#[test]
fn explicit_blocking_below_the_derived_one_is_replaced_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    // p's derived B is q's 0.5 ms section.
    let file = write(
        dir.path(),
        "low.toml",
        PIPE.replace("jitter = \"1ms\"", "jitter = \"1ms\"\nblocking = \"0.1ms\""),
    );
    let json = analyze_json(&file, &[]);
    assert_eq!(json["tasks"][0]["blocking_ns"], 500_000, "the derived B_i");
    assert_eq!(
        json["tasks"][0]["wcrt_ns"], 3_500_000,
        "J 1 + B 0.5 + C 2 ms"
    );
    let warning = &json["warnings"][0];
    assert_eq!(warning["line"], 11, "the task's line");
    assert_eq!(warning["field"], "task 'p' field `blocking`");
    assert_eq!(warning["blocking"]["explicit_ns"], 100_000);
    assert_eq!(warning["blocking"]["derived_ns"], 500_000);
    let out = tinct().arg("analyze").arg(&file).exits(0);
    let err = String::from_utf8_lossy(&out.stderr);
    let expected = format!(
        "tinct: warning: {}:11: task 'p' field `blocking`: the explicit `blocking` 100us is below \
         the B_i 500us derived",
        file.display()
    );
    assert!(err.contains(&expected), "{err}");
    assert!(err.contains("the analysis uses the larger, 500us"), "{err}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("note: task 'p': the explicit `blocking` 100us is below"),
        "{text}"
    );
    // `tinct plan` analyses the same set and warns the same way.
    let out = tinct()
        .args(["plan", "--placement", "static"])
        .arg(&file)
        .exits(0);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&expected), "plan: {err}");
}

/// Issue 27: a standard output that cannot be written (`> /dev/full`) is
/// an output failure (exit 1, said on stderr), not a panic (101).
#[test]
fn a_full_stdout_is_an_output_failure_not_a_panic() {
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        panic!("/dev/full is missing: every Linux system has it");
    };
    for (args, file) in [
        (vec!["analyze", "--json"], "light.toml"),
        (vec!["analyze"], "light.toml"),
        (vec!["plan"], "kim2013.toml"),
    ] {
        let mut child = common::tinct_process()
            .args(&args)
            .arg(common::example(file))
            .stdout(full.try_clone().unwrap())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let status = tinct_sys::testing::wait_within(
            &mut child,
            std::time::Duration::from_secs(120),
            "tinct writing to /dev/full",
        );
        let mut err = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
        assert_eq!(status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains("cannot write the output to stdout"),
            "{args:?}: {err}"
        );
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

/// `>&-`: Rust's runtime reopens a closed stdout on /dev/null before
/// `main`, so tinct used to exit 0 having written nothing anywhere. It
/// says so and exits 1, as coreutils do, for every command (checked
/// before the arguments are even parsed).
#[test]
fn a_closed_stdout_is_an_output_failure() {
    for args in [
        vec!["analyze", "--json"],
        vec!["analyze"],
        vec!["plan"],
        vec!["--version"],
    ] {
        let mut closed = assert_cmd::Command::new("sh");
        closed
            .envs(common::mechanism_env())
            .arg("-c")
            .arg(r#"exec "$0" "$@" >&-"#)
            .arg(assert_cmd::cargo::cargo_bin("tinct"))
            .args(&args);
        if args[0] != "--version" {
            closed.arg(common::example("light.toml"));
        }
        let out = closed
            .timeout(std::time::Duration::from_secs(120))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains("standard output is closed"), "{args:?}: {err}");
    }
    // A stdout sent to /dev/null on purpose is open: it still works.
    let mut to_null = common::tinct_process();
    to_null
        .args(["analyze", "--json"])
        .arg(common::example("light.toml"))
        .stdout(std::process::Stdio::null());
    assert_cmd::Command::from_std(to_null)
        .timeout(std::time::Duration::from_secs(120))
        .assert()
        .success();
}

/// A one-task set in JSON whose platform memory is `memory`, as written.
fn json_set(memory: &str) -> String {
    format!(
        "{{\n  \"platform\": {{\"cores\": 1, \"partitions\": 8,\n    \"memory\": {memory}, \"refill\": \"45.3us\"}},\n  \"task\": [{{\"name\": \"a\", \"period\": \"10ms\", \"memory\": \"1MiB\", \"wcet\": \"2ms\"}}]\n}}\n"
    )
}

/// Issue 27: `memory: 18446744073709551616` was reported as "found
/// 18446744073709552000", NaN and a byte-order mark as "found expected
/// value". Each names the file, the line and what is there, exit 2.
#[test]
fn json_values_serde_misreports_are_named_as_written() {
    let dir = tempfile::tempdir().unwrap();
    for (name, text, says) in [
        (
            "big.json",
            json_set("18446744073709551616"),
            "big.json:3: platform field `memory`: expected a size such as \"18MiB\" (B, KiB, MiB, GiB) or a whole number of bytes, found 18446744073709551616\n",
        ),
        (
            "nan.json",
            json_set("NaN"),
            "nan.json:3: syntax: expected a number, or a duration or size as a string such as \"40ms\" (JSON has no NaN or infinity), found NaN\n",
        ),
        (
            "bom.json",
            format!("\u{feff}{}", json_set("\"64MiB\"")),
            "bom.json:1: syntax: expected a task-set file (see docs/FORMAT.md) in UTF-8 without a byte-order mark, found a byte-order mark",
        ),
    ] {
        let file = write(dir.path(), name, text);
        let stderr = bad_input([std::ffi::OsStr::new("analyze"), file.as_os_str()]);
        assert!(stderr.contains(says), "{name}: {stderr}");
        assert!(!stderr.contains("expected value"), "{name}: {stderr}");
    }
}

/// The stderr of `tinct analyze --overheads FILE` on the shipped kim2013
/// example, which must refuse it (exit 2).
fn refused_with_overheads(file: &std::path::Path) -> String {
    bad_input([
        std::ffi::OsStr::new("analyze"),
        std::ffi::OsStr::new("--overheads"),
        file.as_os_str(),
        example("kim2013-table2.toml").as_os_str(),
    ])
}

/// Issue 27: an `overheads` object without `bench` was read as a task set
/// and refused as "unknown key overheads"; the message says what the file
/// needs.
#[test]
fn overheads_without_their_bench_say_what_the_file_needs() {
    let dir = tempfile::tempdir().unwrap();
    let overheads = write(
        dir.path(),
        "overheads.json",
        r#"{"overheads": {"context_switch_ns": 5000}}"#,
    );
    let stderr = refused_with_overheads(&overheads);
    assert!(
        stderr.contains("overheads.json: overheads file: expected a bench result naming its bench beside `overheads`")
            && stderr.contains(r#"{"bench": "overheads", "overheads": "#)
            && stderr.contains("found an `overheads` object without a `bench` key"),
        "{stderr}"
    );
    assert!(!stderr.contains("unknown key"), "{stderr}");
}

/// Issue 27: a context switch of 2^63 ns made C + 2δ overflow and the
/// refusal blamed the refill time Δ. It blames δ: the set's field, or the
/// overheads file that gives it.
#[test]
fn a_huge_context_switch_is_blamed_not_the_refill_time() {
    let dir = tempfile::tempdir().unwrap();
    let text = "[platform]\ncores = 1\npartitions = 8\nmemory = \"64MiB\"\nrefill = \"45.3us\"\n\
                overheads = { context_switch = \"9223372036854775808ns\" }\n\n\
                [[task]]\nname = \"a\"\nperiod = \"10ms\"\nmemory = \"1MiB\"\nwcet = \"2ms\"\n";
    let file = write(dir.path(), "cs.toml", text);
    let stderr = bad_input([std::ffi::OsStr::new("analyze"), file.as_os_str()]);
    assert!(
        stderr.contains("cs.toml: platform field `overheads.context_switch`: expected ")
            && stderr.contains("found δ = 9223372036.854775808s ("),
        "{stderr}"
    );
    assert!(!stderr.contains("refill time Δ"), "{stderr}");

    let overheads = write(
        dir.path(),
        "huge.json",
        r#"{"bench": "overheads", "overheads": {"context_switch_ns": 9223372036854775808}}"#,
    );
    let stderr = refused_with_overheads(&overheads);
    assert!(
        stderr.contains("huge.json: overhead `context_switch`: expected ")
            && stderr.contains("context switch δ"),
        "{stderr}"
    );
    assert!(!stderr.contains("refill time Δ"), "{stderr}");
}

/// Issue 27: a `--timeout` beyond 2^64 − 1 ns said "value too large"
/// without the limit.
#[test]
fn a_timeout_too_large_states_the_limit() {
    let stderr = bad_input([
        std::ffi::OsStr::new("plan"),
        std::ffi::OsStr::new("--timeout"),
        std::ffi::OsStr::new("99999999999s"),
        example("kim2013.toml").as_os_str(),
    ]);
    assert!(
        stderr.contains(
            "value too large: the largest is 18446744073.709551615s (2^64 − 1 ns, about 584 years)"
        ),
        "{stderr}"
    );
}
