//! The checks behind tinct's fuzz targets (issue 10, item 5).
//!
//! Each target in `fuzz_targets/` hands libFuzzer's bytes to one function
//! here, which calls one public reading entry point of a tinct library and,
//! when the input is accepted, checks properties that are cheap to check
//! (printed values re-read equal, a task set written and re-read is equal,
//! an accepted task set analyzes without panic and its verdicts are
//! consistent). A check panics on a violated property, which libFuzzer
//! reports as a crash; rejected input is fine, a panic while rejecting it
//! is not.
//!
//! The checks live in this library, not in the binaries, so that the seed
//! corpora run through them in `cargo test` on stable (tests/seeds.rs) and
//! so that a target can be re-pointed at a moved API in one place.
//!
//! ```text
//! scripts/fuzz.sh 60 units cpu_list   # 60 s each; all targets without names
//! ```

#![forbid(unsafe_code)]

pub mod lists;
pub mod rt_app;
pub mod shim_config;
pub mod task_set;
pub mod units;

/// A fuzz target: its binary name (in `fuzz_targets/`, seeds in
/// `seeds/<name>/`) and the check its binary runs.
#[derive(Copy, Clone, Debug)]
pub struct Target {
    /// Binary and seed-directory name.
    pub name: &'static str,
    /// The check, called with each input.
    pub check: fn(&[u8]),
}

/// Every fuzz target (scripts/fuzz.sh runs them in `cargo fuzz list` order).
pub const TARGETS: &[Target] = &[
    Target {
        name: "task_set_toml",
        check: task_set::check_toml,
    },
    Target {
        name: "task_set_json",
        check: task_set::check_json,
    },
    Target {
        name: "rt_app",
        check: rt_app::check,
    },
    Target {
        name: "units",
        check: units::check,
    },
    Target {
        name: "cpu_list",
        check: lists::check_cpu_list,
    },
    Target {
        name: "address_functions",
        check: lists::check_address_functions,
    },
    Target {
        name: "shim_config",
        check: shim_config::check,
    },
];

/// The input as text; the readers take `&str`, so other bytes are skipped.
pub(crate) fn text(data: &[u8]) -> Option<&str> {
    std::str::from_utf8(data).ok()
}
