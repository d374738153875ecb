//! `rta::JitterRounds` (a core's analysis kept from one holistic round to
//! the next) against `rta::response_times` from scratch: after every change
//! of jitters the two agree exactly, breakdown and iteration counts
//! included, on random cores whose periods are short enough that moved
//! jitters cross release boundaries.

use proptest::prelude::*;
use tinct_core::analysis::rta::{CoreTask, JitterRounds, response_times};

fn task() -> impl Strategy<Value = CoreTask> {
    (
        1u64..40,
        20u64..400,
        prop::collection::vec(1u32..=8, 0..3),
        0u64..30,
        prop::option::of(prop::collection::vec(1u32..=8, 0..3)),
        0u64..3,
        prop::bool::weighted(0.2),
    )
        .prop_map(
            |(wcet, period, partitions, blocking, blockers, overhead, interrupt)| CoreTask {
                wcet,
                period,
                deadline: period,
                partitions: partitions.into_iter().collect(),
                jitter: 0,
                blocking,
                blockers: blockers.map(|b| b.into_iter().collect()),
                shielded: 0,
                overhead,
                interrupt: u64::from(interrupt),
                pseudo: false,
            },
        )
}

/// Rounds of (task, new jitter) moves.
type Moves = Vec<Vec<(usize, u64)>>;

/// A core, Δ, and rounds of moves.
fn rounds() -> impl Strategy<Value = (Vec<CoreTask>, u64, Moves)> {
    (
        prop::collection::vec(task(), 1..10),
        prop_oneof![Just(0u64), 1u64..8],
        prop::collection::vec(prop::collection::vec((0usize..10, 0u64..500), 0..4), 1..10),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn rounds_equal_a_fresh_analysis((mut tasks, refill, moves) in rounds()) {
        let mut kept = JitterRounds::new();
        prop_assert_eq!(kept.response_times(&tasks, refill), response_times(&tasks, refill));
        for round in moves {
            for (k, jitter) in round {
                let n = tasks.len();
                tasks[k % n].jitter = jitter;
            }
            prop_assert_eq!(kept.response_times(&tasks, refill), response_times(&tasks, refill));
        }
    }

    /// Anything but a jitter changed starts afresh.
    #[test]
    fn other_changes_start_afresh((mut tasks, refill, _moves) in rounds(), k in 0usize..10) {
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
