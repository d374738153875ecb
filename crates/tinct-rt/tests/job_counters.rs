//! Per-job counters of a real run: the kernel's context switches and
//! migrations are recorded for every job even where the machine has no
//! hardware counters, and hardware counts are either there or explained.

use tinct_core::model::{Kernel, Work};
use tinct_rt::runtime::{RunOptions, run};
use tinct_rt::spec::Step;
use tinct_rt::testing::{TaskBuilder, run_spec};

#[test]
fn every_job_records_its_context_switches_and_migrations() {
    if !tinct_sys::testing::privileged_or_skip("a SCHED_FIFO run counting kernel events") {
        return;
    }
    let cpu = tinct_sys::sched::affinity().unwrap()[0];
    // Each job computes, sleeps 1 ms (one voluntary switch at least) and
    // computes again, pinned to one CPU (no migration).
    let sleeper = TaskBuilder::periodic("sleeper", 20_000_000)
        .cpu(cpu)
        .fifo(70)
        .steps(vec![
            Step::Kernel {
                kernel: Kernel::Compute,
                memory_percent: 0,
                work: Work::Iterations(1000),
            },
            Step::Sleep {
                duration_ns: 1_000_000,
            },
            Step::Kernel {
                kernel: Kernel::Compute,
                memory_percent: 0,
                work: Work::Iterations(1000),
            },
        ])
        .build();
    let result = run(
        &run_spec(vec![sleeper], 200_000_000),
        RunOptions {
            handle_signals: false,
            ..RunOptions::default()
        },
    )
    .unwrap();
    let task = &result.tasks[0];
    let finished: Vec<_> = task
        .records
        .iter()
        .filter(|r| r.response_ns().is_some())
        .collect();
    assert!(finished.len() >= 5, "{} jobs", finished.len());
    for r in &finished {
        let switches = r
            .counters
            .context_switches
            .expect("software events count everywhere");
        assert!(
            switches >= 1,
            "job {} slept but switched {switches} times",
            r.job
        );
        assert!(
            u64::from(r.voluntary_switches) <= switches,
            "getrusage's voluntary switches are a part of the kernel's count: {r:?}"
        );
        assert_eq!(r.counters.cpu_migrations, Some(0), "pinned: {r:?}");
        match (r.counters.instructions, &task.counters_unavailable) {
            (Some(_), _) => {}
            (None, Some(why)) => assert!(why.contains("instructions: E"), "{why}"),
            (None, None) => panic!("no instruction count and no reason: {r:?}"),
        }
    }
}
