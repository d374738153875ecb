//! Observed blocking next to the analysis' B_i (issue 12): a run of a
//! planned set whose two tasks share a resource carries, per task, the
//! longest wait at a lock and B_i in its summary. Times are not compared
//! (a shared VM stalls); presence, units and the task without a critical
//! section are.

use tinct_core::format::{Syntax, parse};
use tinct_rt::critical_sections::Synchronization;
use tinct_rt::runtime::run;
use tinct_rt::spec::{BlockingShows, RunSpec};
use tinct_verify::output::summarize;

const MS: u64 = 1_000_000;

fn spec(protocol: &str) -> RunSpec {
    let text = tinct_rt::testing::shared_resource_set(protocol, 0);
    let set = parse(&text, "blocking.toml", Syntax::Toml).unwrap();
    let analysis = tinct_core::analysis::analyze(&set).unwrap();
    RunSpec::from_plan(&set, Some(&analysis), "blocking.toml", 200 * MS)
        .unwrap()
        .with_synchronization(&Synchronization::of_set(&set))
        .unwrap()
}

#[test]
fn the_summary_puts_observed_blocking_next_to_b_i() {
    if !tinct_sys::testing::privileged_or_skip("SCHED_FIFO and priority inheritance") {
        return;
    }
    for (protocol, shows) in [
        ("pip", BlockingShows::AtLock),
        ("pcp", BlockingShows::BeforeStart),
    ] {
        let result = run(&spec(protocol), tinct_rt::testing::test_options()).unwrap();
        assert!(result.stop.is_completed(), "{}", result.stop.describe());
        let summary = summarize("blocking.toml", 200 * MS, &result);
        let task = |name: &str| summary.tasks.iter().find(|t| t.name == name).unwrap();
        let (high, low, free) = (task("high"), task("low"), task("free"));
        // The analysis: high can be blocked by low's 600 µs section; the
        // lowest-priority task by nobody.
        assert_eq!(high.blocking.bound_ns, Some(600_000), "{protocol}");
        assert_eq!(low.blocking.bound_ns, Some(0), "{protocol}");
        for t in [high, low, free] {
            assert_eq!(t.blocking.shows, shows, "{protocol} {}", t.name);
            assert!(t.jobs.completed >= 5, "{protocol} {}: {:?}", t.name, t.jobs);
        }
        assert_eq!(
            free.blocking.observed_max_ns, 0,
            "{protocol}: a task with no critical section never waits at a lock"
        );
        assert!(!free.blocking.exceeds_bound && !low.blocking.exceeds_bound);
        if protocol == "pcp" {
            assert_eq!(
                high.blocking.observed_max_ns, 0,
                "pcp: the holder runs at the ceiling, a job never waits at the lock"
            );
            assert!(high.blocking.note.contains("release latency"));
        }
        // summary.json: the fields, in nanoseconds.
        let json = serde_json::to_value(&summary).unwrap();
        let tasks = json["tasks"].as_array().unwrap();
        let high_json = tasks.iter().find(|t| t["name"] == "high").unwrap();
        let blocking = &high_json["blocking"];
        assert!(blocking["observed_max_ns"].is_u64(), "{blocking}");
        assert_eq!(blocking["bound_ns"], 600_000, "{blocking}");
        assert_eq!(
            blocking["shows"],
            match shows {
                BlockingShows::AtLock => "at_lock",
                _ => "before_start",
            }
        );
        assert_eq!(high_json["bound"]["blocking_ns"], 600_000);
    }
}
