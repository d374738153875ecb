//! Inputs the fuzz targets (fuzz/, `scripts/fuzz.sh`) found, with the
//! right outcome.

use tinct_rt::RtError;
use tinct_rt::rtapp::{MAX_THREADS, parse};

fn refusal(text: &str) -> (Option<usize>, String, String, String) {
    match parse(text, "f.json", 1_000_000_000) {
        Err(RtError::Input {
            file,
            line,
            field,
            expected,
            found,
        }) => {
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
    assert_eq!(field, "`instance` in tasks.video");
    assert!(expected.contains(&MAX_THREADS.to_string()), "{expected}");
    assert_eq!(found, "224294967295");
    // The limit holds for the file, not only per task.
    let half = MAX_THREADS / 2 + 1;
    let text = format!(
        r#"{{"tasks": {{"a": {{"instance": {half}, "run": 1}}, "b": {{"instance": {half}, "run": 1}}}}}}"#
    );
    let (_, field, _, found) = refusal(&text);
    assert_eq!(field, "`instance` in tasks.b");
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
        assert_eq!(got_field, field, "{text}");
        assert!(expected.contains("2^64 ns"), "{expected}");
    }
    // The largest representable values are read exactly.
    let text = r#"{"global": {"duration": 18446744073}, "tasks": {"t": {"run": 1, "timer": {"ref": "u", "period": 18446744073709551}}}}"#;
    let file = parse(text, "f.json", 1).unwrap();
    assert_eq!(file.spec.duration_ns, 18_446_744_073_000_000_000);
    let timer = file.spec.tasks[0].phases[0].timer.unwrap();
    assert_eq!(timer.period_ns, 18_446_744_073_709_551_000);
}
