//! Every validation rule: the error names the file, the line and the field,
//! what was expected and what was found.

mod common;

use common::{assert_names, error};
use tinct_core::format::{Syntax, parse};

const PLATFORM: &str = include_str!("fixtures/two_core_platform.toml");

/// One task whose table starts at line 7 (`[[task]]`), its first key at line 8.
fn doc(task_lines: &str) -> String {
    format!("{PLATFORM}\n[[task]]\n{task_lines}\n")
}

#[test]
fn deadline_above_period() {
    let err = error(&doc(
        "name = \"a\"\nperiod = \"10ms\"\ndeadline = \"12ms\"\nmemory = \"1MiB\"\nwcet = \"1ms\"",
    ));
    assert_names(&err, 10, "task 'a' field `deadline`", "12ms");
}

#[test]
fn wcet_increasing_in_p() {
    let err = error(&doc(
        "name = \"a\"\nperiod = \"10ms\"\nmemory = \"1MiB\"\nwcet = { 1 = \"2ms\", 4 = \"3ms\" }",
    ));
    assert_names(&err, 11, "task 'a' field `wcet` (C^4)", "C^4 = 3ms");
}

#[test]
fn partitions_below_memory_minimum() {
    // 256 MiB / 8 = 32 MiB per partition; 70 MiB needs 3.
    let err = error(&doc(
        "name = \"a\"\nperiod = \"10ms\"\nmemory = \"70MiB\"\nwcet = \"1ms\"\npartitions = [1, 2]",
    ));
    assert_names(&err, 12, "task 'a' field `partitions`", "2 partitions");
    assert!(err.to_string().contains("= 3 partitions"), "{err}");
}

#[test]
fn partition_out_of_range() {
    let err = error(&doc(
        "name = \"a\"\nperiod = \"10ms\"\nmemory = \"1MiB\"\nwcet = \"1ms\"\npartitions = [1, 9]",
    ));
    assert_names(&err, 12, "task 'a' field `partitions`", "partition 9");
    let err = error(&doc(
        "name = \"a\"\nperiod = \"10ms\"\nmemory = \"1MiB\"\nwcet = \"1ms\"\npartitions = [0]",
    ));
    assert_names(&err, 12, "task 'a' field `partitions`", "partition 0");
}

/// A range string is checked by its ends before it is walked: a typo such
/// as "1-99999999999" is refused at once, naming its end, where it used to
/// expand into 800 GB and abort the process.
#[test]
fn partition_range_out_of_range_is_refused_by_its_ends() {
    for (range, found) in [
        ("1-99999999999", "partition 99999999999"),
        ("3-9", "partition 9"),
        ("0-2", "partition 0"),
    ] {
        let err = error(&doc(&format!(
            "name = \"a\"\nperiod = \"10ms\"\nmemory = \"1MiB\"\nwcet = \"1ms\"\npartitions = \"{range}\""
        )));
        assert_names(&err, 12, "task 'a' field `partitions`", found);
    }
    let err = error(&doc(
        "name = \"a\"\nperiod = \"10ms\"\nmemory = \"1MiB\"\nwcet = \"1ms\"\npartitions = \"1-3,2\"",
    ));
    assert_names(&err, 12, "task 'a' field `partitions`", "partition 2 twice");
}

/// A range string is tinct-base's list grammar, as `--cpus` and
/// `--colors` read it: strides take every s-th partition, an empty item
/// is refused as the list it breaks.
#[test]
fn partition_strings_read_the_one_list_grammar() {
    let text = doc(
        "name = \"a\"\nperiod = \"10ms\"\nmemory = \"1MiB\"\nwcet = \"1ms\"\npartitions = \"1-7:2, 8\"",
    );
    let set = parse(&text, "set.toml", Syntax::Toml).unwrap();
    assert_eq!(
        set.tasks[0].partitions.as_ref().map(|p| p.to_vec()),
        Some(vec![1, 3, 5, 7, 8])
    );
    for bad in ["1,,2", "2-1", "a"] {
        let err = error(&doc(&format!(
            "name = \"a\"\nperiod = \"10ms\"\nmemory = \"1MiB\"\nwcet = \"1ms\"\npartitions = \"{bad}\""
        )));
        assert_names(
            &err,
            12,
            "task 'a' field `partitions`",
            &format!("\"{bad}\""),
        );
        assert!(err.to_string().contains("a range string such as"), "{err}");
    }
}

#[test]
fn unknown_keys_are_rejected() {
    let err = error(&doc(
        "name = \"a\"\nperiod = \"10ms\"\nmemory = \"1MiB\"\nwcet = \"1ms\"\nperoid = \"5ms\"",
    ));
    assert_names(&err, 12, "unknown key `peroid`", "peroid");
    let err = error(&format!("{PLATFORM}colors = 4\n"));
    assert_names(&err, 6, "unknown key `colors`", "colors");
}

#[test]
fn duplicate_names() {
    let task = "name = \"a\"\nperiod = \"10ms\"\nmemory = \"1MiB\"\nwcet = \"1ms\"";
    let err = error(&format!("{}\n[[task]]\n{task}\n", doc(task)));
    assert_names(&err, 14, "task 'a' field `name`", "a second task named 'a'");
}

#[test]
fn wcet_above_deadline() {
    let err = error(&doc(
        "name = \"a\"\nperiod = \"10ms\"\nmemory = \"1MiB\"\nwcet = { 1 = \"20ms\", 8 = \"11ms\" }",
    ));
    assert_names(&err, 11, "task 'a' field `wcet`", "C^8 = 11ms > D");
}

#[test]
fn zero_period() {
    let err = error(&doc(
        "name = \"a\"\nperiod = \"0ms\"\nmemory = \"1MiB\"\nwcet = \"1ms\"",
    ));
    assert_names(&err, 9, "task 'a' field `period`", "0");
}

#[test]
fn bad_units_and_types() {
    let err = error(&doc(
        "name = \"a\"\nperiod = 10\nmemory = \"1MiB\"\nwcet = \"1ms\"",
    ));
    assert_names(&err, 9, "task 'a' field `period`", "found 10");
    let err = error(&doc(
        "name = \"a\"\nperiod = \"10ms\"\nmemory = \"1MB\"\nwcet = \"1ms\"",
    ));
    assert_names(&err, 10, "task 'a' field `memory`", "\"1MB\"");
}

#[test]
fn core_out_of_range_and_priorities() {
    let err = error(&doc(
        "name = \"a\"\nperiod = \"10ms\"\nmemory = \"1MiB\"\nwcet = \"1ms\"\ncore = 2",
    ));
    assert_names(&err, 12, "task 'a' field `core`", "found 2");
    let b = "name = \"b\"\nperiod = \"10ms\"\nmemory = \"1MiB\"\nwcet = \"1ms\"";
    let err = error(&format!(
        "{}\n[[task]]\n{b}\n",
        doc("name = \"a\"\nperiod = \"10ms\"\nmemory = \"1MiB\"\nwcet = \"1ms\"\npriority = 1")
    ));
    assert_names(&err, 14, "task 'b' field `priority`", "no priority");
}

/// On a one-core platform a task without `core` is on core 0: a priority
/// it shares with a task that says `core = 0` is a tie, refused as one.
#[test]
fn a_priority_tie_with_an_implied_core_is_refused() {
    let one_core =
        "[platform]\ncores = 1\npartitions = 8\nmemory = \"256MiB\"\nrefill = \"10us\"\n";
    let text = format!(
        "{one_core}\n[[task]]\nname = \"a\"\nperiod = \"10ms\"\nmemory = \"1MiB\"\nwcet = \"1ms\"\npriority = 1\n\n[[task]]\nname = \"b\"\nperiod = \"10ms\"\nmemory = \"1MiB\"\nwcet = \"1ms\"\npriority = 1\ncore = 0\n"
    );
    let err = error(&text);
    assert_names(&err, 19, "task 'b' field `priority`", "priority 1 again");
    assert!(err.to_string().contains("task 'a' already has 1"), "{err}");
}

#[test]
fn json_errors_name_lines_too() {
    let text = r#"{
  "platform": {"cores": 1, "partitions": 4, "memory": "64MiB", "refill": "1us"},
  "task": [
    {"name": "a", "period": "10ms", "memory": "1MiB", "wcet": "1ms"},
    {"name": "b", "period": "10ms",
     "deadline": "11ms", "memory": "1MiB", "wcet": "1ms"}
  ]
}"#;
    let err = parse(text, "set.json", Syntax::Json).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("set.json:6: task 'b' field `deadline`"),
        "{err}"
    );
    let text = r#"{"platform": {"cores": 1, "partitions": 4, "memory": "64MiB", "refill": "1us"},
  "task": [{"name": "a", "period": "10ms", "memory": "1MiB", "wcet": "1ms", "speed": 3}]}"#;
    let err = parse(text, "set.json", Syntax::Json).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("set.json:2: unknown key `speed`"),
        "{err}"
    );
}

#[test]
fn toml_and_json_give_the_same_set_and_toml_round_trips() {
    let toml_text = doc(
        "name = \"a\"\nperiod = \"10ms\"\ndeadline = \"9ms\"\nmemory = \"40MiB\"\nwcet = { 2 = \"3ms\", 5 = \"2.5ms\" }\ncore = 1\npartitions = \"1-2,5\"\nbody = { kernel = \"mixed\", working_set = \"4MiB\", target = \"2ms\", memory_percent = 40 }",
    );
    let from_toml = parse(&toml_text, "a.toml", Syntax::Toml).unwrap();
    let json_text = r#"{"platform": {"cores": 2, "partitions": 8, "memory": "256MiB", "refill": "10us"},
      "task": [{"name": "a", "period": "10ms", "deadline": "9ms", "memory": "40MiB",
                "wcet": {"2": "3ms", "5": "2.5ms"}, "core": 1, "partitions": [1, 2, 5],
                "body": {"kernel": "mixed", "working_set": "4MiB", "target": "2ms", "memory_percent": 40}}]}"#;
    let from_json = parse(json_text, "a.json", Syntax::Json).unwrap();
    assert_eq!(from_toml.platform, from_json.platform);
    assert_eq!(from_toml.tasks, from_json.tasks);
    let written = tinct_core::format::to_toml(&from_toml, &["a comment".into()]);
    let reread = parse(&written, "b.toml", Syntax::Toml).unwrap();
    assert_eq!(reread.platform, from_toml.platform);
    assert_eq!(reread.tasks, from_toml.tasks);
}

#[test]
fn refill_may_come_from_a_calibration_scaled_by_partition_size() {
    use tinct_core::format::{LoadOptions, RefillCalibration, parse_with};
    let text = "[platform]\ncores = 1\npartitions = 8\nmemory = \"64MiB\"\n[[task]]\nname = \"a\"\nperiod = \"10ms\"\nmemory = \"1MiB\"\nwcet = \"1ms\"\n";
    let err = parse(text, "set.toml", Syntax::Toml).unwrap_err();
    assert!(err.to_string().contains("platform field `refill`"), "{err}");
    assert!(err.to_string().contains("tinct bench calibrate"), "{err}");
    // Measured with 32 partitions: partitions of this set are 4x larger.
    let options = LoadOptions {
        default_refill: Some(RefillCalibration {
            refill: tinct_core::Nanos(30_001),
            partitions: 32,
        }),
    };
    let loaded = parse_with(text, "set.toml", Syntax::Toml, &options).unwrap();
    assert_eq!(loaded.set.platform.refill, tinct_core::Nanos(120_004));
    assert!(loaded.refill_from_calibration);
    // An explicit key wins over the calibration.
    let explicit = text.replace(
        "memory = \"64MiB\"\n",
        "memory = \"64MiB\"\nrefill = \"7us\"\n",
    );
    let loaded = parse_with(&explicit, "set.toml", Syntax::Toml, &options).unwrap();
    assert_eq!(loaded.set.platform.refill, tinct_core::Nanos(7_000));
    assert!(!loaded.refill_from_calibration);
}

/// Issue 10: `wcet = { 1 = "2ms", 01 = "9ms" }` kept one of the two values
/// silently. The same p twice is refused, naming line and field, in TOML
/// and in JSON.
#[test]
fn the_same_p_twice_is_refused() {
    let toml_text = doc(
        "name = \"a\"\nperiod = \"10ms\"\nmemory = \"1MiB\"\nwcet = { 1 = \"2ms\", 01 = \"9ms\" }",
    );
    let err = parse(&toml_text, "dup.toml", Syntax::Toml).unwrap_err();
    let text = err.to_string();
    // The toml reader hands the keys over in its own order: either is named.
    assert!(text.contains("task 'a' field `wcet` (C^"), "{text}");
    assert!(
        text.contains("expected each p listed once (key '")
            && text.contains("already gives C^1), found key '")
            && text.contains("C^1 again"),
        "{text}"
    );
    assert_eq!(
        err.line,
        Some(
            toml_text
                .lines()
                .position(|l| l.starts_with("wcet"))
                .unwrap()
                + 1
        )
    );
    let json_text = r#"{"platform": {"cores": 1, "partitions": 8, "memory": "256MiB", "refill": "10us"},
      "task": [{"name": "a", "period": "10ms", "memory": "1MiB",
                "wcet": {"1": "2ms", "1": "9ms"}}]}"#;
    let err = parse(json_text, "dup.json", Syntax::Json).unwrap_err();
    assert!(err.to_string().contains("each p listed once"), "{err}");
    assert_eq!(err.line, Some(3));
}

/// TOML and JSON are written by serde from the reader's own structs: both
/// re-read equal, with bodies, partitions and explicit priorities.
#[test]
fn toml_and_json_writers_round_trip() {
    let toml_text = doc(
        "name = \"a \\\"quoted\\\" name\"\nperiod = \"10ms\"\ndeadline = \"9ms\"\nmemory = \"40MiB\"\nwcet = { 2 = \"3ms\", 5 = \"2.5ms\", 8 = \"2.4ms\" }\ncore = 1\npriority = 3\npartitions = \"1-2,5\"\nbody = { kernel = \"chase\", working_set = \"4MiB\", iterations = 1000 }",
    );
    let set = parse(&toml_text, "a.toml", Syntax::Toml).unwrap();
    for (text, syntax) in [
        (
            tinct_core::format::to_toml(&set, &["header".into()]),
            Syntax::Toml,
        ),
        (tinct_core::format::to_json(&set), Syntax::Json),
    ] {
        let back = parse(&text, "back", syntax).unwrap_or_else(|e| panic!("{e}\n{text}"));
        if syntax == Syntax::Toml {
            // Small tables stay on one line, as people write them.
            assert!(
                text.contains("wcet = { 2 = \"3ms\", 5 = \"2.5ms\", 8 = \"2.4ms\" }")
                    && text.contains("body = { kernel = \"chase\""),
                "{text}"
            );
        }
        assert_eq!(back.platform, set.platform, "{text}");
        assert_eq!(back.tasks, set.tasks, "{text}");
    }
}

/// Issue 10: a 50 MB task name hung the table output (a file that large is
/// now refused whole; a 1 MiB name shows the rule). Names are at most
/// 256 bytes and printable; the message names the task by position.
#[test]
fn names_are_short_and_printable() {
    let long = "x".repeat(1 << 20);
    let err = error(&doc(&format!(
        "name = \"{long}\"\nperiod = \"10ms\"\nmemory = \"1MiB\"\nwcet = \"1ms\""
    )));
    assert_names(&err, 8, "task #1 field `name`", "a name of 1048576 bytes");
    assert!(
        err.to_string().len() < 400,
        "the message does not repeat the name"
    );
    let err = error(&doc(
        "name = \"a\\nb\"\nperiod = \"10ms\"\nmemory = \"1MiB\"\nwcet = \"1ms\"",
    ));
    assert_names(&err, 8, "task #1 field `name`", "'\\n'");
}

/// More tasks than the documented limit are refused before validation.
#[test]
fn too_many_tasks_are_refused() {
    let mut text = PLATFORM.to_string();
    for i in 0..=tinct_core::format::MAX_TASKS {
        text.push_str(&format!(
            "\n[[task]]\nname = \"t{i}\"\nperiod = \"1s\"\nmemory = \"1MiB\"\nwcet = \"1us\"\n"
        ));
    }
    let err = error(&text);
    let max = tinct_core::format::MAX_TASKS;
    assert!(
        err.to_string().contains(&format!(
            "expected at most {max} tasks, found {} tasks",
            max + 1
        )),
        "{err}"
    );
}

/// Files are read up to the documented limit and no further: an endless
/// device is refused instead of growing without bound; a pipe or a small
/// file is read normally.
#[test]
fn files_are_read_up_to_the_limit() {
    let err = tinct_core::format::load(std::path::Path::new("/dev/zero")).unwrap_err();
    assert!(
        err.to_string()
            .contains("expected a task-set file of at most 16777216 bytes"),
        "{err}"
    );
    let dir = std::env::temp_dir().join(format!("tinct-limit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let big = dir.join("big.toml");
    std::fs::write(&big, vec![b'#'; (16 << 20) + 1]).unwrap();
    let err = tinct_core::format::load(&big).unwrap_err();
    assert!(err.to_string().contains("at most 16777216 bytes"), "{err}");
    let small = dir.join("small.toml");
    std::fs::write(
        &small,
        doc("name = \"a\"\nperiod = \"10ms\"\nmemory = \"1MiB\"\nwcet = \"1ms\""),
    )
    .unwrap();
    assert_eq!(tinct_core::format::load(&small).unwrap().tasks.len(), 1);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The limits of a run are checked where the file is validated, with its
/// line, so `analyze`, `plan` and `run` refuse the same files: an edge's
/// buffer, a body's target and a memory kernel's working set.
#[test]
fn the_limits_of_a_run_are_checked_with_the_line() {
    let pipeline = |buffer: &str| {
        format!(
            "{PLATFORM}\n[[task]]\nname = \"p\"\nperiod = \"10ms\"\nmemory = \"1KiB\"\nwcet = \"1ms\"\n\n\
             [[task]]\nname = \"c\"\ntrigger = \"data\"\nmemory = \"1KiB\"\nwcet = \"1ms\"\n\n\
             [[edge]]\nfrom = \"p\"\nto = \"c\"\nbuffer = \"{buffer}\"\n"
        )
    };
    parse(&pipeline("64MiB"), "set.toml", Syntax::Toml).unwrap();
    let err = error(&pipeline("1 GiB"));
    assert_names(&err, 22, "edge #1 field `buffer`", "1GiB");
    assert!(err.to_string().contains("at most 64MiB"), "{err}");

    let body = |body: &str, memory: &str| {
        doc(&format!(
            "name = \"a\"\nperiod = \"10ms\"\nmemory = \"{memory}\"\nwcet = \"1ms\"\nbody = {body}"
        ))
    };
    let err = error(&body(r#"{ kernel = "chase", working_set = "8B" }"#, "1MiB"));
    assert_names(&err, 12, "task 'a' field `body.working_set`", "8B");
    assert!(
        err.to_string()
            .contains("at least 64B for the chase kernel"),
        "{err}"
    );
    // Without `working_set` the body takes M_i.
    let err = error(&body(r#"{ kernel = "read" }"#, "32B"));
    assert_names(&err, 10, "task 'a' field `memory`", "32B");
    parse(
        &body(r#"{ kernel = "compute" }"#, "32B"),
        "set.toml",
        Syntax::Toml,
    )
    .unwrap();
    parse(
        &body(r#"{ kernel = "chase", working_set = "64B" }"#, "1MiB"),
        "set.toml",
        Syntax::Toml,
    )
    .unwrap();

    let err = error(&body(
        r#"{ kernel = "compute", target = "34560000s" }"#,
        "1MiB",
    ));
    assert_names(&err, 12, "task 'a' field `body.target`", "34560000");
    assert!(
        err.to_string().contains("the limit of times in a run"),
        "{err}"
    );
}

/// Issue 27: every file tinct reads is capped — a DRAM map or a
/// calibration naming /dev/zero is refused at the cap, not read without
/// end (the task-set and overheads files were capped already).
#[test]
fn an_endless_file_is_refused_at_the_cap_wherever_tinct_reads_one() {
    let zero = std::path::Path::new("/dev/zero");
    let map = tinct_core::dram_map::DramMap::load(zero).unwrap_err();
    assert!(map.found.contains("endless"), "{map}");
    let calibration = tinct_core::saved_calibration::read(zero).unwrap_err();
    assert_eq!(calibration.file, "/dev/zero");
    assert!(calibration.found.contains("endless"), "{calibration}");
}

/// A JSON set whose platform memory is `memory` (written as is).
fn json_with_memory(memory: &str) -> String {
    format!(
        "{{\n  \"platform\": {{\"cores\": 1, \"partitions\": 8,\n    \"memory\": {memory}, \"refill\": \"45.3us\"}},\n  \"task\": [{{\"name\": \"a\", \"period\": \"10ms\", \"memory\": \"1MiB\", \"wcet\": \"2ms\"}}]\n}}\n"
    )
}

/// Issue 27: `memory: 18446744073709551616` (2^64) was reported as "found
/// 18446744073709552000", the float JSON's parser reads it as; 2^63 gave
/// serde's "integer too large"; TOML's 2^64 serde's "invalid type: integer
/// … as i128". Each is shown as written, naming the field and its line.
#[test]
fn integers_beyond_64_bits_are_shown_as_written() {
    for (text, name, line, found) in [
        (
            json_with_memory("18446744073709551616"),
            "set.json",
            3,
            "found 18446744073709551616",
        ),
        (
            json_with_memory("9223372036854775808"),
            "set.json",
            3,
            "found 9223372036854775808",
        ),
        (json_with_memory("1e300"), "set.json", 3, "found 1e300"),
        (
            PLATFORM.replace("\"256MiB\"", "18446744073709551616")
                + "\n[[task]]\nname = \"a\"\nperiod = \"10ms\"\nmemory = \"1MiB\"\nwcet = \"1ms\"\n",
            "set.toml",
            4,
            "found 18446744073709551616",
        ),
    ] {
        let syntax = if name.ends_with("json") {
            Syntax::Json
        } else {
            Syntax::Toml
        };
        let err = parse(&text, name, syntax).unwrap_err();
        let message = err.to_string();
        assert!(
            message.starts_with(&format!(
                "{name}:{line}: platform field `memory`: expected a size"
            )),
            "{message}"
        );
        assert!(message.ends_with(found), "{message}");
    }
}

/// Issue 27: a NaN or a byte-order mark was "found expected value"
/// (serde_json's words); now the file, the line and what is there.
#[test]
fn nan_and_a_byte_order_mark_are_named_in_plain_words() {
    for (token, shown) in [
        ("NaN", "found NaN"),
        ("Infinity", "found Infinity"),
        ("-Infinity", "found -Infinity"),
    ] {
        let err = parse(&json_with_memory(token), "set.json", Syntax::Json).unwrap_err();
        let message = err.to_string();
        assert!(
            message.starts_with("set.json:3: syntax: expected a number"),
            "{message}"
        );
        assert!(message.contains("JSON has no NaN or infinity"), "{message}");
        assert!(message.ends_with(shown), "{message}");
        assert!(!message.contains("expected value"), "{message}");
    }
    let bom = format!("\u{feff}{}", json_with_memory("\"64MiB\""));
    let err = parse(&bom, "set.json", Syntax::Json).unwrap_err();
    let message = err.to_string();
    assert!(message.starts_with("set.json:1: syntax: "), "{message}");
    assert!(message.contains("found a byte-order mark"), "{message}");
    assert!(!message.contains("expected value"), "{message}");
    // Anything else where a value belongs is shown as it is.
    let err = parse(&json_with_memory("?"), "set.json", Syntax::Json).unwrap_err();
    assert_eq!(
        err.to_string(),
        "set.json:3: syntax: expected a value: a string, a number, true, false, a list [...] or \
         a table {...}, found '?' where a value belongs"
    );
    let err = parse(&json_with_memory("forty"), "set.json", Syntax::Json).unwrap_err();
    assert!(
        err.to_string()
            .ends_with("found `forty` where a value belongs"),
        "{err}"
    );
}

/// A document that is not a table named serde's type ("expected struct
/// RawTaskSet"); now what a task set is.
#[test]
fn a_document_that_is_no_table_is_named_in_plain_words() {
    let err = parse("5", "set.json", Syntax::Json).unwrap_err();
    assert_eq!(
        err.to_string(),
        "set.json:1: syntax: expected a task set: a table with [platform] and [[task]] (see \
         docs/FORMAT.md), found integer `5`"
    );
}

/// Issue 26: a body that is a program reads, writes back in TOML and JSON
/// the same, and defaults to the `lines` protocol.
#[test]
fn a_program_body_reads_and_round_trips() {
    let set = parse(
        &doc(
            "name = \"filter\"\nperiod = \"20ms\"\nmemory = \"1MiB\"\nwcet = \"5ms\"\nbody = { command = [\"./filter.py\", \"--rows\", \"64\"], mmap = true }",
        ),
        "a.toml",
        Syntax::Toml,
    )
    .unwrap();
    let program = set.tasks[0].program.as_ref().expect("a program body");
    assert_eq!(program.command, ["./filter.py", "--rows", "64"]);
    assert_eq!(program.protocol, tinct_core::model::JobProtocol::Lines);
    assert!(program.mmap);
    assert!(set.tasks[0].body.is_none(), "not a kernel body");
    for (text, syntax) in [
        (tinct_core::format::to_toml(&set, &[]), Syntax::Toml),
        (tinct_core::format::to_json(&set), Syntax::Json),
    ] {
        let back = parse(&text, "back", syntax).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(back.tasks, set.tasks, "{text}");
    }
}

/// Issue 26 item 6: a program body's mistakes name the task's body field.
#[test]
fn a_program_bodys_mistakes_name_the_field() {
    let body = |body: &str| {
        error(&doc(&format!(
            "name = \"a\"\nperiod = \"10ms\"\nmemory = \"1MiB\"\nwcet = \"1ms\"\nbody = {body}"
        )))
    };
    let err = body(r#"{ command = [] }"#);
    assert_names(&err, 12, "task 'a' field `body.command`", "[]");
    let err = body(r#"{ command = [" "] }"#);
    assert_names(&err, 12, "task 'a' field `body.command`", "\" \"");
    let err = body(r#"{ command = ["./x"], protocol = "pigeon" }"#);
    assert_names(&err, 12, "task 'a' field `body.protocol`", "\"pigeon\"");
    assert!(err.to_string().contains("one of lines"), "{err}");
    let err = body(r#"{ command = ["./x"], kernel = "chase" }"#);
    assert_names(
        &err,
        12,
        "task 'a' field `body.kernel`",
        "`kernel` beside `command`",
    );
    let err = body(r#"{ command = ["./x"], target = "1ms" }"#);
    assert_names(
        &err,
        12,
        "task 'a' field `body.target`",
        "`target` beside `command`",
    );
    let err = body(r#"{ kernel = "compute", protocol = "lines" }"#);
    assert_names(
        &err,
        12,
        "task 'a' field `body.protocol`",
        "kernel \"compute\"",
    );
    let err = body(r#"{ working_set = "1MiB" }"#);
    assert_names(&err, 12, "task 'a' field `body.kernel`", "neither");
    let err = body("{ command = [\"./x\", \"a\\u0000b\"] }");
    assert_names(&err, 12, "task 'a' field `body.command`", "\"a\\0b\"");
}

/// A program does not lock tinct's resources: sections beside a program
/// body are refused, naming them.
#[test]
fn a_program_body_has_no_critical_sections() {
    let text = format!(
        "{PLATFORM}\n[[resource]]\nname = \"bus\"\nprotocol = \"pcp\"\n\n[[task]]\nname = \"a\"\nperiod = \"10ms\"\nmemory = \"1MiB\"\nwcet = \"2ms\"\nbody = {{ command = [\"./x\"] }}\ncritical_sections = [{{ resource = \"bus\", length = \"1ms\" }}]\n"
    );
    let err = error(&text);
    assert!(
        err.to_string()
            .contains("task 'a' field `critical_sections`"),
        "{err}"
    );
    assert!(
        err.to_string()
            .contains("no critical sections with a program body"),
        "{err}"
    );
}
