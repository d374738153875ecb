//! With Δ = 0 the jitter- and blocking-aware analysis is the classic
//! fixed-priority RTA that SchedCAT computes (schedcat/sched/fp/rta.py,
//! `rta_schedulable`), checked against a straightforward reference of that
//! algorithm written here (not SchedCAT's code):
//!
//!   R = J_i + B_i + C_i + Σ_{j∈hp(i)} ⌈(R + J_j)/T_j⌉ C_j,
//!
//! iterated from J_i + B_i + C_i + Σ C_j while R ≤ D_i.
//!
//! SchedCAT counts the task's own jitter inside the window that
//! higher-priority releases fall in, as an initial self-suspension they
//! may fill. Release jitter in the sense of Audsley et al. (1993), which
//! tinct analyses (R_i = J_i + w_i, w_i = B_i + C_i + Σ ⌈(w_i + J_j)/T_j⌉
//! C_j), starts that window at the actual release. The two agree exactly
//! when J_i = 0; for J_i > 0 tinct's R_i is SchedCAT's algorithm run with
//! J_i = 0 and deadline D_i − J_i, plus J_i, and never above SchedCAT's.

mod common;

use proptest::prelude::*;
use tinct_core::PartitionSet;
use tinct_core::analysis::analyze;
use tinct_core::analysis::rta::{CoreTask, response_times};
use tinct_core::model::{Task, TaskSet};
use tinct_core::units::Nanos;

#[derive(Clone, Copy, Debug)]
struct Classic {
    cost: u64,
    period: u64,
    deadline: u64,
    jitter: u64,
    blocked: u64,
}

/// The reference: SchedCAT's fixed point for task `i` (tasks in priority
/// order), in u128; `None` when an iterate passes the deadline.
fn schedcat(tasks: &[Classic], i: usize) -> Option<u64> {
    let task = tasks[i];
    let hp = &tasks[..i];
    let own = u128::from(task.blocked) + u128::from(task.jitter) + u128::from(task.cost);
    let mut time: u128 = hp.iter().map(|t| u128::from(t.cost)).sum::<u128>() + own;
    while time <= u128::from(task.deadline) {
        let demand: u128 = hp
            .iter()
            .map(|t| {
                u128::from(t.cost) * (time + u128::from(t.jitter)).div_ceil(u128::from(t.period))
            })
            .sum::<u128>()
            + own;
        if demand == time {
            return u64::try_from(time).ok();
        }
        time = demand;
    }
    None
}

fn core_task(t: &Classic) -> CoreTask {
    CoreTask {
        jitter: t.jitter,
        blocking: t.blocked,
        ..CoreTask::new(t.cost, t.period, t.deadline, PartitionSet::EMPTY)
    }
}

/// The same core as a task set with explicit `jitter` and `blocking`.
fn task_set(tasks: &[Classic]) -> TaskSet {
    common::one_core_set(common::platform(1), tasks, |i, t| Task {
        deadline: Nanos(t.deadline),
        jitter: Nanos(t.jitter),
        blocking: Some(Nanos(t.blocked)),
        ..common::numbered_task(i, Nanos(t.period), Nanos(t.cost))
    })
}

fn classic() -> impl Strategy<Value = Classic> {
    (
        1u64..=200,
        0u64..=100,
        prop_oneof![1 => Just(0u64), 2 => 0u64..=150],
        prop_oneof![1 => Just(0u64), 1 => 0u64..=40],
    )
        .prop_map(|(period_tenths, cost_pct, jitter_pct, blocked_pct)| {
            let period = period_tenths * 100_000;
            let cost = (period * cost_pct / 400).max(1);
            Classic {
                cost,
                period,
                deadline: period,
                jitter: period * jitter_pct / 100,
                blocked: period * blocked_pct / 100,
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn equals_schedcat_rta_with_delta_zero(mut tasks in prop::collection::vec(classic(), 1..8)) {
        tasks.sort_by_key(|t| t.deadline);
        let core: Vec<CoreTask> = tasks.iter().map(core_task).collect();
        let ours = response_times(&core, 0);
        let set = analyze(&task_set(&tasks)).unwrap();
        for i in 0..tasks.len() {
            let theirs = schedcat(&tasks, i);
            // Through the whole analysis (explicit jitter and blocking) too.
            prop_assert_eq!(set.tasks[i].wcrt_ns, ours[i].wcrt_ns, "task {}", i);
            if tasks[i].jitter == 0 {
                prop_assert_eq!(ours[i].wcrt_ns, theirs, "task {}", i);
            } else {
                let mut shifted = tasks.clone();
                shifted[i].jitter = 0;
                shifted[i].deadline = tasks[i].deadline.saturating_sub(tasks[i].jitter);
                let expected = if tasks[i].jitter > tasks[i].deadline {
                    None
                } else {
                    schedcat(&shifted, i).map(|w| w + tasks[i].jitter)
                };
                prop_assert_eq!(ours[i].wcrt_ns, expected, "task {}", i);
                if let (Some(r), Some(s)) = (ours[i].wcrt_ns, theirs) {
                    prop_assert!(r <= s, "task {}: {} above SchedCAT's {}", i, r, s);
                }
                if ours[i].wcrt_ns.is_none() {
                    prop_assert!(theirs.is_none(), "task {}: SchedCAT schedules it", i);
                }
            }
        }
    }
}

/// A case worked by hand where the two readings of jitter differ: τ1 C = 1,
/// T = 4; τ2 C = 1, T = 10, J = 3. tinct: w = 1 + ⌈w/4⌉ = 2, R = 5.
/// SchedCAT: R = 3 + 1 + ⌈R/4⌉ = 6 (R = 5 would see τ1's release at 4).
#[test]
fn own_jitter_differs_by_hand() {
    let tasks = [
        Classic {
            cost: 1,
            period: 4,
            deadline: 4,
            jitter: 0,
            blocked: 0,
        },
        Classic {
            cost: 1,
            period: 10,
            deadline: 10,
            jitter: 3,
            blocked: 0,
        },
    ];
    let core: Vec<CoreTask> = tasks.iter().map(core_task).collect();
    assert_eq!(response_times(&core, 0)[1].wcrt_ns, Some(5));
    assert_eq!(schedcat(&tasks, 1), Some(6));
}
