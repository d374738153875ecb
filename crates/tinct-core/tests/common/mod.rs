//! Helpers shared by tinct-core's integration tests.
#![allow(dead_code)]

use tinct_core::format::{InputError, Syntax, parse};
use tinct_core::model::{Overheads, Platform, Task, TaskSet, WcetTable};
use tinct_core::units::{Bytes, Nanos};

/// `cores` cores with 4 partitions of 1 MiB, Δ = 0 and no overheads: the
/// platform of tests about the recurrence, not the cache.
pub fn platform(cores: u32) -> Platform {
    Platform {
        cores,
        partitions: 4,
        memory: Bytes(4 << 20),
        refill: Nanos(0),
        overheads: Overheads::NONE,
        cache_domains: None,
        color_bits: None,
        dram_map: None,
    }
}

/// The error reading `text` as `set.toml` (it must be refused).
pub fn error(text: &str) -> InputError {
    parse(text, "set.toml", Syntax::Toml).expect_err("must be rejected")
}

/// Asserts the message names file, line and field, and contains `found`.
pub fn assert_names(err: &InputError, line: usize, field: &str, found: &str) {
    let message = err.to_string();
    assert!(
        message.starts_with(&format!("set.toml:{line}: ")),
        "line {line} not in: {message}"
    );
    assert!(message.contains(field), "field {field} not in: {message}");
    assert!(message.contains(found), "found {found} not in: {message}");
    assert!(message.contains("expected"), "no expectation in: {message}");
}

/// Task `t{index}`: periodic with `period` and a constant C of `wcet`, one
/// byte of memory (the cache plays no part), everything else default.
pub fn numbered_task(index: usize, period: Nanos, wcet: Nanos) -> Task {
    Task::periodic(
        format!("t{index}"),
        period,
        Bytes(1),
        WcetTable::constant(wcet),
    )
}

/// One core's task set: `task(i, item)` for each of `items` on core 0 of
/// `platform`, highest priority first (the i-th gets priority i + 1).
pub fn one_core_set<T>(
    platform: Platform,
    items: &[T],
    task: impl Fn(usize, &T) -> Task,
) -> TaskSet {
    TaskSet::new(
        platform,
        items
            .iter()
            .enumerate()
            .map(|(i, item)| Task {
                priority: Some(i as u32 + 1),
                core: Some(0),
                ..task(i, item)
            })
            .collect(),
    )
}

/// Three tasks on one core, highest priority first, Δ = 0 (no cache term:
/// they have no partitions; `overheads`: a `[platform]` line or nothing):
/// τ1 C = 1 ms, T = D = 5 ms, J = 2 ms;
/// τ2 C = 2 ms, T = D = 12 ms, a 0.5 ms section on `bus`;
/// τ3 C = 3 ms, T = D = 20 ms, a 1 ms section on `bus`
/// (`fixtures/three_tasks.toml` with `{protocol}` and `{overheads}` filled in).
pub fn three_tasks(protocol: &str, overheads: &str) -> String {
    include_str!("../fixtures/three_tasks.toml")
        .replace("{overheads}", overheads)
        .replace("{protocol}", protocol)
}
