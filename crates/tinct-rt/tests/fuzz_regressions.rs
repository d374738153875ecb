//! Inputs the fuzz targets (fuzz/, `scripts/fuzz.sh`) found, with the
//! right outcome.

use tinct_base::InputError;
use tinct_rt::RtError;
use tinct_rt::limits::MAX_TASKS;
use tinct_rt::rtapp::parse;

const MAX_THREADS: i64 = MAX_TASKS as i64;

fn refusal(text: &str) -> (Option<usize>, String, String, String) {
    match parse(text, "f.json", 1_000_000_000) {
        Err(RtError::Input(InputError {
            file,
            line,
            field,
            expected,
            found,
        })) => {
            assert_eq!(file, "f.json");
            (line, field, expected, found)
        }
        other => panic!("{text}: not refused as bad input: {other:?}"),
    }
}

/// fuzz target `rt_app`: `"instance": 224294967295` tried to build 2·10^11
/// thread specs (an allocation of 40 TB). Refused by name, with the limit.
#[test]
fn huge_instance_counts_are_refused() {
    let text = "{\n\"tasks\": {\n\"video\": {\"instance\": 224294967295, \"run\": 1000}}}";
    let (line, field, expected, found) = refusal(text);
    assert_eq!(line, Some(3));
    assert!(field.contains("tasks.video"), "{field}");
    assert!(expected.contains(&MAX_THREADS.to_string()), "{expected}");
    assert_eq!(found, "224294967295");
    // The limit holds for the file, not only per task.
    let half = MAX_THREADS / 2 + 1;
    let text = format!(
        r#"{{"tasks": {{"a": {{"instance": {half}, "run": 1}}, "b": {{"instance": {half}, "run": 1}}}}}}"#
    );
    let (_, field, _, found) = refusal(&text);
    assert!(field.contains("tasks.b"), "{field}");
    assert!(found.contains(&(2 * half).to_string()), "{found}");
    let exactly = format!(r#"{{"tasks": {{"a": {{"instance": {MAX_THREADS}, "run": 1}}}}}}"#);
    let file = parse(&exactly, "f.json", 1).unwrap();
    assert_eq!(file.spec.tasks.len() as i64, MAX_THREADS);
}

/// µs → ns and s → ns wrapped: a period of 18446744073709552 µs became
/// 384 ns (issue 10). Every time beyond 2^64 ns is refused, naming the key.
#[test]
fn times_beyond_two_to_the_64_ns_are_refused_not_wrapped() {
    for (text, field) in [
        (
            r#"{"tasks": {"t": {"run": 1, "timer": {"ref": "u", "period": 18446744073709552}}}}"#,
            "`period` in tasks.t.timer",
        ),
        (
            r#"{"tasks": {"t": {"run": 18446744073709552}}}"#,
            "`run` in tasks.t",
        ),
        (
            r#"{"tasks": {"t": {"phases": {"p": {"sleep": 9223372036854775807}}}}}"#,
            "`sleep` in tasks.t.phases.p",
        ),
        (
            r#"{"global": {"duration": 18446744074}, "tasks": {"t": {"run": 1}}}"#,
            "`duration` in global",
        ),
    ] {
        let (_, got_field, expected, _) = refusal(text);
        let key = field.split('`').nth(1).unwrap();
        let path = field.rsplit(' ').next().unwrap();
        assert!(
            got_field.contains(key) && got_field.contains(path),
            "{text}: {got_field}"
        );
        assert!(expected.contains("limit"), "{expected}");
    }
    // The longest time a run represents (limits::MAX_TIME_NS) is read exactly.
    let max_us = tinct_rt::limits::MAX_TIME_NS / 1000;
    let text = format!(
        r#"{{"tasks": {{"t": {{"run": 1, "timer": {{"ref": "u", "period": {max_us}}}}}}}}}"#
    );
    let file = parse(&text, "f.json", 1).unwrap();
    let period = file.spec.tasks[0].phases[0]
        .steps
        .iter()
        .find_map(|step| step.timer_period());
    assert_eq!(period, Some(tinct_rt::limits::MAX_TIME_NS));
}
