//! `rta::JitterRounds` (a core's analysis kept from one holistic round to
//! the next) against `rta::response_times` from scratch: after every change
//! of jitters the two agree exactly, breakdown and iteration counts
//! included, on random cores whose periods are short enough that moved
//! jitters cross release boundaries, and often shared, so that the moved
//! tasks' release zones merge. Rounds without breakdowns (the holistic
//! analysis' rounds before the last) agree on every response time, and
//! both reuse checks (release zones, each moved task in turn) give the same.

use proptest::prelude::*;
use tinct_core::analysis::rta::{CoreTask, JitterRounds, ReuseCheck, response_times};

fn task() -> impl Strategy<Value = CoreTask> {
    (
        (
            1u64..40,
            prop_oneof![Just(50u64), Just(120), Just(300), 20u64..400],
            prop_oneof![3 => Just(100u64), 1 => 50u64..=100],
        ),
        prop::collection::vec(1u32..=8, 0..3),
        0u64..30,
        prop::option::of(prop::collection::vec(1u32..=8, 0..3)),
        0u64..3,
        prop::bool::weighted(0.2),
    )
        .prop_map(
            |(
                (wcet, period, deadline_percent),
                partitions,
                blocking,
                blockers,
                overhead,
                interrupt,
            )| {
                CoreTask {
                    wcet,
                    period,
                    deadline: (period * deadline_percent / 100).max(1),
                    partitions: partitions.into_iter().collect(),
                    jitter: 0,
                    blocking,
                    blockers: blockers.map(|b| b.into_iter().collect()),
                    shielded: 0,
                    overhead,
                    interrupt: u64::from(interrupt),
                    pseudo: false,
                }
            },
        )
}

/// A jitter: small, past the period, or unbounded.
fn jitter() -> impl Strategy<Value = u64> {
    prop_oneof![6 => 0u64..500, 2 => 500u64..3000, 1 => Just(u64::MAX)]
}

/// One round: (task, new jitter) moves, and whether the round asks for
/// the breakdowns.
type Round = (Vec<(usize, u64)>, bool);

/// A core, Δ, and rounds of moves.
fn rounds() -> impl Strategy<Value = (Vec<CoreTask>, u64, Vec<Round>)> {
    (
        prop::collection::vec(task(), 1..12),
        prop_oneof![Just(0u64), 1u64..8],
        prop::collection::vec(
            (
                prop::collection::vec((0usize..12, jitter()), 0..6),
                prop::bool::weighted(0.4),
            ),
            1..12,
        ),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn rounds_equal_a_fresh_analysis((mut tasks, refill, moves) in rounds()) {
        let mut zones = JitterRounds::new();
        let mut each_move = JitterRounds::with_check(ReuseCheck::EachMove);
        let fresh = response_times(&tasks, refill);
        prop_assert_eq!(&zones.response_times(&tasks, refill), &fresh);
        prop_assert_eq!(&each_move.response_times(&tasks, refill), &fresh);
        for (round, breakdowns) in moves {
            for (k, jitter) in round {
                let n = tasks.len();
                tasks[k % n].jitter = jitter;
            }
            let fresh = response_times(&tasks, refill);
            if breakdowns {
                prop_assert_eq!(&zones.response_times(&tasks, refill), &fresh);
                prop_assert_eq!(&each_move.response_times(&tasks, refill), &fresh);
            } else {
                let wcrts: Vec<Option<u64>> = fresh.iter().map(|r| r.wcrt_ns).collect();
                prop_assert_eq!(&zones.worst_case_response_times(&tasks, refill), &wcrts);
                prop_assert_eq!(&each_move.worst_case_response_times(&tasks, refill), &wcrts);
            }
        }
        // The breakdowns of the last round, whatever the rounds before read.
        let fresh = response_times(&tasks, refill);
        prop_assert_eq!(&zones.response_times(&tasks, refill), &fresh);
        prop_assert_eq!(&each_move.response_times(&tasks, refill), &fresh);
    }

    /// Anything but a jitter changed starts afresh.
    #[test]
    fn other_changes_start_afresh((mut tasks, refill, _moves) in rounds(), k in 0usize..12) {
        let mut kept = JitterRounds::new();
        kept.response_times(&tasks, refill);
        let n = tasks.len();
        tasks[k % n].wcet += 7;
        prop_assert_eq!(kept.response_times(&tasks, refill), response_times(&tasks, refill));
        prop_assert_eq!(kept.response_times(&tasks, refill + 1), response_times(&tasks, refill + 1));
        tasks.pop();
        prop_assert_eq!(kept.response_times(&tasks, refill), response_times(&tasks, refill));
    }
}
