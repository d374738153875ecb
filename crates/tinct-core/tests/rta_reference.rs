//! kim2013 Eq. (2) against a reference written straight from the paper in
//! arbitrary precision (u128, where a product that does not fit is above
//! every 64-bit deadline), on random cores that include huge values: C, Δ
//! and T near 2^64. The analysis must agree task by task, or refuse the
//! task set (`TermTooLarge`) exactly when some C + ω + γ exceeds 2^64 − 1 ns.

mod common;

use proptest::prelude::*;
use tinct_core::PartitionSet;
use tinct_core::analysis::rta::{CoreTask, core_schedulable, response_times};
use tinct_core::analysis::{AnalysisError, analyze};
use tinct_core::model::{Platform, Task, TaskSet};
use tinct_core::units::{Bytes, Nanos};

/// |A ∩ B| · Δ in u128.
fn delay(a: &PartitionSet, b: &PartitionSet, refill: u64) -> u128 {
    u128::from(a.intersection_len(b)) * u128::from(refill)
}

fn union_of(tasks: &[CoreTask], members: impl Iterator<Item = usize>) -> PartitionSet {
    members.fold(PartitionSet::EMPTY, |acc, k| {
        acc.union(&tasks[k].partitions)
    })
}

/// The partitions of blk(i, j), the lower-priority holders that run in
/// i's busy window and that j can preempt: none without blocking or when j
/// is one of the `shielded` tasks directly above i, else the given ones
/// among the lower-priority tasks', or all of those when not given.
fn blockers(tasks: &[CoreTask], j: usize, i: usize) -> PartitionSet {
    let below = union_of(tasks, i + 1..tasks.len());
    if j + tasks[i].shielded as usize >= i {
        return PartitionSet::EMPTY;
    }
    match (tasks[i].blocking, tasks[i].blockers) {
        (0, _) => PartitionSet::EMPTY,
        (_, Some(known)) => known.intersection(&below),
        (_, None) => below,
    }
}

/// ω_{j,i}: S(j) against the other tasks of hep(i) (indices 0..=i) and
/// blk(i, j). For i = n (ω_{j,n}) blk(n, j) is empty.
fn warmup(tasks: &[CoreTask], j: usize, i: usize, refill: u64) -> u128 {
    let others = union_of(tasks, (0..=i).filter(|&k| k != j)).union(&blockers(tasks, j, i));
    delay(&tasks[j].partitions, &others, refill)
}

/// γ_{j,i}: S(j) against int(j, i) = tasks j+1..=i, and blk(i, j).
fn crpd(tasks: &[CoreTask], j: usize, i: usize, refill: u64) -> u128 {
    let preempted = union_of(tasks, j + 1..=i).union(&blockers(tasks, j, i));
    delay(&tasks[j].partitions, &preempted, refill)
}

/// Eq. (2) for task i, term by term, from R^0 = B_i + C_i + ω_{i,n}:
/// R^{k+1} = B_i + C_i + ω_{i,n} + Σ_{j∈hp(i)} ⌈R^k/T_j⌉ C_j
///         + Σ_{j∈hp(i)} (ω_{j,n} + (⌈R^k/T_j⌉ − 1) ω_{j,i})
///         + Σ_{j∈hp(i)} ⌈R^k/T_j⌉ γ_{j,i}.
/// `None` when an iterate exceeds D (a sum above u128 exceeds it too).
fn reference(tasks: &[CoreTask], i: usize, refill: u64) -> Option<u64> {
    reference_within(tasks, i, refill, u64::MAX).expect("no iteration limit")
}

/// [`reference`] with at most `limit` iterations (`Err` past it): the
/// recurrence converges geometrically, slowly when hp(i) fills the core.
fn reference_within(
    tasks: &[CoreTask],
    i: usize,
    refill: u64,
    limit: u64,
) -> Result<Option<u64>, ()> {
    let n = tasks.len() - 1;
    let deadline = u128::from(tasks[i].deadline);
    let own =
        u128::from(tasks[i].blocking) + u128::from(tasks[i].wcet) + warmup(tasks, i, n, refill);
    // The cache terms of each j ∈ hp(i) do not depend on R.
    let terms: Vec<(u128, u128, u128, u128)> = (0..i)
        .map(|j| {
            (
                u128::from(tasks[j].period),
                u128::from(tasks[j].wcet) + crpd(tasks, j, i, refill),
                warmup(tasks, j, n, refill),
                warmup(tasks, j, i, refill),
            )
        })
        .collect();
    let mut r = own;
    for _ in 0..limit {
        if r > deadline {
            return Ok(None);
        }
        let mut next = Some(own);
        for &(period, per_job, warmup_n, warmup_i) in &terms {
            let releases = r.div_ceil(period).max(1);
            next = next
                .and_then(|s| s.checked_add(releases.checked_mul(per_job)?))
                .and_then(|s| s.checked_add(warmup_n))
                .and_then(|s| s.checked_add((releases - 1).checked_mul(warmup_i)?));
        }
        let Some(next) = next else {
            return Ok(None);
        };
        if next == r {
            return Ok(u64::try_from(r).ok());
        }
        r = next;
    }
    Err(())
}

/// C_i + ω_{i,n} + γ_{i,n} above 2^64 − 1 for some task (the analysis refuses).
fn some_term_too_large(tasks: &[CoreTask], refill: u64) -> bool {
    let n = tasks.len() - 1;
    (0..tasks.len()).any(|i| {
        let gamma = delay(&tasks[i].partitions, &union_of(tasks, i + 1..=n), refill);
        u128::from(tasks[i].wcet) + warmup(tasks, i, n, refill) + gamma > u128::from(u64::MAX)
    })
}

/// A duration from one of several scales, so that sets mix ordinary values
/// with values near 2^64.
fn scaled() -> impl Strategy<Value = u64> {
    prop_oneof![
        3 => 1u64..1_000,
        3 => 1_000u64..10_000_000,
        2 => 10_000_000u64..1_000_000_000_000,
        2 => (u64::MAX >> 8)..=u64::MAX,
        1 => (u64::MAX - 1_000)..=u64::MAX,
    ]
}

#[derive(Clone, Debug)]
struct Draw {
    wcet: u64,
    period: u64,
    deadline_permille: u64,
    partitions: Vec<u32>,
}

fn task() -> impl Strategy<Value = Draw> {
    (
        scaled(),
        scaled(),
        1u64..=1000,
        prop::collection::vec(1u32..=256, 0..6),
    )
        .prop_map(|(wcet, period, deadline_permille, partitions)| Draw {
            wcet,
            period,
            deadline_permille,
            partitions,
        })
}

fn refill() -> impl Strategy<Value = u64> {
    prop_oneof![
        2 => Just(0u64),
        3 => 1u64..1_000_000,
        2 => (u64::MAX / 512)..=(u64::MAX / 256 + 1),
        1 => 72_057_594_000_000_000u64..=72_057_594_000_000_000,
        1 => (u64::MAX >> 4)..=u64::MAX,
    ]
}

fn core_tasks(draws: &[Draw]) -> Vec<CoreTask> {
    draws
        .iter()
        .map(|d| {
            let deadline =
                u64::try_from(u128::from(d.period) * u128::from(d.deadline_permille) / 1000)
                    .unwrap()
                    .max(1);
            CoreTask::new(
                d.wcet,
                d.period,
                deadline,
                d.partitions.iter().copied().collect(),
            )
        })
        .collect()
}

/// The same core as a task set, priorities in the given order, on one
/// core of 256 partitions of 1 GiB.
fn task_set(tasks: &[CoreTask], refill: u64) -> TaskSet {
    let platform = Platform {
        partitions: 256,
        memory: Bytes(256 << 30),
        refill: Nanos(refill),
        ..common::platform(1)
    };
    common::one_core_set(platform, tasks, |i, t| Task {
        deadline: Nanos(t.deadline),
        partitions: (!t.partitions.is_empty()).then_some(t.partitions),
        ..common::numbered_task(i, Nanos(t.period), Nanos(t.wcet))
    })
}

/// The core as the analysis charges it: with Δ > 0, a task without
/// partitions holds every partition of [`task_set`]'s platform.
fn charged(tasks: &[CoreTask], refill: u64) -> Vec<CoreTask> {
    tasks
        .iter()
        .map(|t| CoreTask {
            partitions: if refill > 0 && t.partitions.is_empty() {
                PartitionSet::range(1, 256)
            } else {
                t.partitions
            },
            ..*t
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 4000,
        max_global_rejects: 4000,
        ..ProptestConfig::default()
    })]

    #[test]
    fn eq2_equals_the_arbitrary_precision_reference(
        draws in prop::collection::vec(task(), 1..6),
        refill in refill(),
    ) {
        let tasks = core_tasks(&draws);
        // Sets whose recurrence needs more than 2 000 iterations (hp(i)
        // utilization very close to 1, so R creeps up geometrically) only
        // make the test slow; `iterations_do_not_grow_with_r_over_t` and the
        // huge-value cases below keep the long iterations covered.
        prop_assume!((0..tasks.len()).all(|i| reference_within(&tasks, i, refill, 2_000).is_ok()));
        let got = response_times(&tasks, refill);
        for (i, result) in got.iter().enumerate() {
            prop_assert_eq!(result.wcrt_ns, reference(&tasks, i, refill), "task {}", i);
            if let Some(r) = result.wcrt_ns {
                // At the fixed point the breakdown adds up to R exactly.
                let sum = u128::from(result.wcet_ns)
                    + u128::from(result.warmup_ns)
                    + u128::from(result.interference_ns)
                    + u128::from(result.hp_warmup_ns)
                    + u128::from(result.crpd_ns);
                prop_assert_eq!(sum, u128::from(r));
            }
        }
        // Through the whole analysis: equal, or refused exactly when a term
        // cannot be represented; never a wrong SCHEDULABLE. A task drawn
        // without partitions is charged all 256 when Δ > 0.
        let set = task_set(&tasks, refill);
        let tasks = charged(&tasks, refill);
        match analyze(&set) {
            Ok(analysis) => {
                prop_assert!(!some_term_too_large(&tasks, refill));
                for (i, report) in analysis.tasks.iter().enumerate() {
                    prop_assert_eq!(report.wcrt_ns, reference(&tasks, i, refill));
                    prop_assert_eq!(report.schedulable, report.wcrt_ns.is_some());
                }
                let all_meet = (0..tasks.len()).all(|i| reference(&tasks, i, refill).is_some());
                prop_assert!(!analysis.schedulable || all_meet);
            }
            Err(AnalysisError::TermTooLarge { .. }) => {
                prop_assert!(some_term_too_large(&tasks, refill));
            }
            Err(e) => prop_assert!(false, "unexpected refusal: {e}"),
        }
    }
}

/// A task on a small cache (8 partitions, so that tasks share them
/// often), with blocking B (0 in about a third of the draws) and the
/// partitions of its holders: given (any partitions, also ones no
/// lower-priority task has) or not known.
fn blocked_task() -> impl Strategy<Value = (Draw, u64, Option<Vec<u32>>, u32)> {
    let partitions = || prop::collection::vec(1u32..=8, 0..4);
    (
        (1u64..2_000, 5u64..20_000, 500u64..=1000, partitions()),
        prop_oneof![1 => Just(0u64), 2 => 1u64..2_000],
        prop::option::of(partitions()),
        0u32..4,
    )
        .prop_map(
            |((wcet, period, deadline_permille, partitions), blocking, holders, shielded)| {
                let draw = Draw {
                    wcet,
                    period,
                    deadline_permille,
                    partitions,
                };
                (draw, blocking, holders, shielded)
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 3000,
        max_global_rejects: 4000,
        ..ProptestConfig::default()
    })]

    /// With blocking, the holders run inside the busy window: ω_{j,i} and
    /// γ_{j,i} count their partitions too (blk(i)), and the start value of
    /// each task is still at or below its least fixed point, also where
    /// blk(i−1) is not within S(i) ∪ blk(i).
    #[test]
    fn eq2_with_blocking_equals_the_reference(
        draws in prop::collection::vec(blocked_task(), 1..6),
        refill in 0u64..500,
    ) {
        let mut tasks = core_tasks(&draws.iter().map(|(d, ..)| d.clone()).collect::<Vec<_>>());
        for (task, (_, blocking, holders, shielded)) in tasks.iter_mut().zip(&draws) {
            task.blocking = *blocking;
            task.blockers = holders.as_ref().map(|h| h.iter().copied().collect());
            task.shielded = *shielded;
        }
        prop_assume!((0..tasks.len()).all(|i| reference_within(&tasks, i, refill, 2_000).is_ok()));
        for (i, result) in response_times(&tasks, refill).iter().enumerate() {
            prop_assert_eq!(result.wcrt_ns, reference(&tasks, i, refill), "task {}", i);
            if let Some(r) = result.wcrt_ns {
                let sum = u128::from(result.blocking_ns)
                    + u128::from(result.wcet_ns)
                    + u128::from(result.warmup_ns)
                    + u128::from(result.interference_ns)
                    + u128::from(result.hp_warmup_ns)
                    + u128::from(result.crpd_ns);
                prop_assert_eq!(sum, u128::from(r));
            }
        }
        prop_assert_eq!(
            core_schedulable(&tasks, refill),
            (0..tasks.len()).all(|i| reference(&tasks, i, refill).is_some())
        );
    }
}

/// The cases of issue 10: a huge C or Δ, and Δ = 72057594 s with all 256
/// partitions shared, are never SCHEDULABLE.
#[test]
fn huge_terms_are_never_schedulable() {
    let all = PartitionSet::range(1, 256);
    let pair = |wcet: u64, period: u64| CoreTask::new(wcet, period, period, all);
    let max = u64::MAX;
    for (tasks, refill) in [
        (vec![pair(1_000, max), pair(max - 10, max)], 1),
        (vec![pair(1_000, max), pair(1_000, max)], max / 3),
        (
            vec![pair(1_000_000, max), pair(2_000_000, max)],
            72_057_594_000_000_000,
        ),
    ] {
        let results = response_times(&tasks, refill);
        assert!(results.iter().any(|r| r.wcrt_ns.is_none()), "{results:?}");
        let set = task_set(&tasks, refill);
        match analyze(&set) {
            Ok(analysis) => assert!(!analysis.schedulable),
            Err(e) => assert!(matches!(e, AnalysisError::TermTooLarge { .. }), "{e}"),
        }
    }
}

/// A large R/T used to cost one loop step per period of each
/// higher-priority task; now the ceiling is one division. The count of
/// iterations stays what the recurrence needs, whatever R/T is.
#[test]
fn iterations_do_not_grow_with_r_over_t() {
    let tasks = [
        CoreTask::new(1, 1_000, 1_000, PartitionSet::EMPTY),
        CoreTask::new(
            1_000_000_000_000_000,
            u64::MAX / 2,
            u64::MAX / 2,
            PartitionSet::EMPTY,
        ),
    ];
    let results = response_times(&tasks, 0);
    assert_eq!(results[1].wcrt_ns, reference(&tasks, 1, 0));
    assert!(results[1].iterations < 10, "{:?}", results[1]);
}
