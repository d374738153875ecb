//! Partitioned SCHED_DEADLINE on this machine: a thread pinned to one CPU
//! becomes a deadline thread only inside a root domain of that CPU alone,
//! and the machine's cpusets are as before once the partitions go.

use tinct_sys::dl_partitions::{DeadlinePartitions, root_load_balance, v1_mount_point};
use tinct_sys::sched::{self, DeadlineParams, Policy, Scheduling};
use tinct_sys::testing::privileged_serial;

fn reservation() -> Scheduling {
    Scheduling {
        deadline: Some(DeadlineParams {
            runtime_ns: 1_000_000,
            deadline_ns: 10_000_000,
            period_ns: 10_000_000,
        }),
        ..Scheduling::of(Policy::Deadline)
    }
}

/// In a new thread: `enter`, then `sched_setattr` of a reservation; the
/// result and the affinity the thread then had.
fn become_deadline(
    enter: impl FnOnce() -> Result<(), String> + Send,
) -> (Result<(), String>, Vec<u32>) {
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let outcome = enter().and_then(|()| {
                    sched::set_scheduling(&reservation()).map_err(|e| e.to_string())
                });
                let affinity = sched::affinity().unwrap();
                // Back to a fair thread before it ends, as a run's threads do.
                let _ = sched::set_scheduling(&Scheduling::other());
                (outcome, affinity)
            })
            .join()
            .unwrap()
    })
}

#[test]
fn a_pinned_thread_is_a_deadline_thread_in_its_cpus_partition_and_cpusets_are_restored() {
    let Some(_serial) = privileged_serial("creating cpusets and SCHED_DEADLINE threads") else {
        return;
    };
    let root = match v1_mount_point() {
        Ok(root) => root,
        Err(e) => {
            eprintln!("skipped: partitions need the cpuset controller on cgroup v1: {e}");
            return;
        }
    };
    let cpus = sched::affinity().unwrap();
    let Some(&cpu) = cpus.last() else {
        panic!("no CPU in this thread's affinity");
    };
    let balanced_before = root_load_balance(&root).unwrap();
    let leftovers = |root: &std::path::Path| {
        std::fs::read_dir(root)
            .unwrap()
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with(&format!("tinct-dl-{}-", std::process::id()))
            })
            .count()
    };

    if cpus.len() > 1 && balanced_before {
        // The claim partitions exist for: pinned, the kernel refuses.
        let (pinned, _) =
            become_deadline(|| sched::set_affinity(&[cpu]).map_err(|e| e.to_string()));
        let error = pinned.expect_err("a pinned SCHED_DEADLINE thread outside a partition");
        assert!(error.contains("Operation not permitted"), "{error}");
    }

    let mut partitions = DeadlinePartitions::create(&[cpu]).unwrap();
    assert!(!root_load_balance(&root).unwrap());
    let (inside, affinity) = become_deadline(|| partitions.join(cpu).map_err(|e| e.to_string()));
    inside.unwrap();
    assert_eq!(affinity, vec![cpu], "joining the partition pins the thread");
    partitions.remove().unwrap();
    assert_eq!(root_load_balance(&root).unwrap(), balanced_before);
    assert_eq!(leftovers(&root), 0);
}
