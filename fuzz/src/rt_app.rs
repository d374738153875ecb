//! rt-app workload files through `tinct_rt::rtapp::parse`.
//!
//! rt-app gives times in whole µs (events, timer periods) and whole
//! seconds (`global.duration`), so in an accepted file every duration in
//! nanoseconds is a multiple of 1 000 (of 10^9 for the run's duration): a
//! wrapped conversion is not (2^64 is neither), which is how a period of
//! 18446744073709552 µs turning into 384 ns shows up here. A file starts
//! at most `limits::MAX_TASKS` threads. A refusal names the file, a field and
//! what was expected.

use tinct_core::format::InputError;
use tinct_core::model::Work;
use tinct_rt::RtError;
use tinct_rt::rtapp;
use tinct_rt::spec::Step;

/// The name the check gives the input in messages.
const FILE: &str = "fuzz-input.json";
/// The run duration a file without `global.duration` gets.
const DEFAULT_DURATION_NS: u64 = 7_000_000_000;

/// The target.
pub fn check(data: &[u8]) {
    let Some(text) = crate::text(data) else {
        return;
    };
    let file = match rtapp::parse(text, FILE, DEFAULT_DURATION_NS) {
        Ok(file) => file,
        Err(RtError::Input(InputError {
            file,
            field,
            expected,
            ..
        })) => {
            assert_eq!(file, FILE);
            assert!(!field.trim().is_empty() && !expected.trim().is_empty());
            return;
        }
        Err(other) => panic!("reading is not running: {other}"),
    };
    let spec = &file.spec;
    assert!(!spec.tasks.is_empty(), "a run without tasks");
    assert!(
        spec.tasks.len() as i64 <= tinct_rt::limits::MAX_TASKS as i64,
        "{} threads",
        spec.tasks.len()
    );
    if file.duration_from_file {
        assert!(
            spec.duration_ns > 0 && spec.duration_ns.is_multiple_of(1_000_000_000),
            "duration {} ns is not whole seconds",
            spec.duration_ns
        );
    } else {
        assert_eq!(spec.duration_ns, DEFAULT_DURATION_NS);
    }
    for task in &spec.tasks {
        for phase in &task.phases {
            for step in &phase.steps {
                let ns = match *step {
                    Step::Timer { period_ns, .. } => {
                        assert!(
                            period_ns >= 1_000,
                            "task {}: timer period {period_ns} ns is below 1 µs",
                            task.name
                        );
                        period_ns
                    }
                    Step::Busy { duration_ns } | Step::Sleep { duration_ns } => duration_ns,
                    Step::Kernel {
                        work: Work::Target(target),
                        ..
                    } => target.0,
                    _ => continue,
                };
                assert!(whole_us(ns), "task {}: {step:?} is not whole µs", task.name);
            }
        }
    }
}

fn whole_us(ns: u64) -> bool {
    ns.is_multiple_of(1_000)
}
