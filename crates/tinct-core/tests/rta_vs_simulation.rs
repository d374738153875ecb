//! Classic response-time analysis against a brute-force simulation of the
//! fixed-priority preemptive schedule over the hyperperiod, with synchronous
//! release (the critical instant).

use proptest::prelude::*;
use tinct_core::PartitionSet;
use tinct_core::analysis::rta::{CoreTask, response_times};

/// Periods divide 120, so the hyperperiod stays small.
const PERIODS: [u64; 12] = [2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 24, 30];
const TICK: u64 = 1_000;

/// Simulates preemptive fixed priority (index 0 highest) on one core from a
/// synchronous release; jobs of one task run in release order. Returns, per
/// task, the first job's response time and the largest over the hyperperiod.
fn simulate(tasks: &[CoreTask]) -> Vec<(u64, u64)> {
    let hyper = tasks.iter().fold(1, |h, t| num_lcm(h, t.period));
    let n = tasks.len();
    // Pending jobs per task: (release, remaining).
    let mut pending: Vec<std::collections::VecDeque<(u64, u64)>> = vec![Default::default(); n];
    let mut next_release = vec![0u64; n];
    let mut first = vec![None; n];
    let mut worst = vec![0u64; n];
    let mut now = 0u64;
    let limit = hyper * 4;
    loop {
        for i in 0..n {
            while next_release[i] <= now && next_release[i] < hyper {
                pending[i].push_back((next_release[i], tasks[i].wcet));
                next_release[i] += tasks[i].period;
            }
        }
        let upcoming = (0..n)
            .filter(|&i| next_release[i] < hyper)
            .map(|i| next_release[i])
            .min();
        let running = (0..n).find(|&i| !pending[i].is_empty());
        match running {
            None => match upcoming {
                Some(t) => now = t,
                None => break,
            },
            Some(i) => {
                let (release, remaining) = pending[i][0];
                let until = upcoming.map_or(now + remaining, |t| t.min(now + remaining));
                let ran = until - now;
                now = until;
                if ran == remaining {
                    pending[i].pop_front();
                    let response = now - release;
                    first[i].get_or_insert(response);
                    worst[i] = worst[i].max(response);
                } else {
                    pending[i][0].1 -= ran;
                }
            }
        }
        if now > limit {
            break;
        }
    }
    (0..n)
        .map(|i| (first[i].unwrap_or(u64::MAX), worst[i]))
        .collect()
}

fn num_lcm(a: u64, b: u64) -> u64 {
    let (mut x, mut y) = (a, b);
    while y != 0 {
        (x, y) = (y, x % y);
    }
    a / x * b
}

fn task_set() -> impl Strategy<Value = Vec<CoreTask>> {
    prop::collection::vec((0..PERIODS.len(), 1u64..=100, 0u64..=100), 1..=6).prop_map(|raw| {
        let mut tasks: Vec<CoreTask> = raw
            .into_iter()
            .map(|(p, c_pct, d_pct)| {
                let period = PERIODS[p] * TICK;
                let wcet = (period * c_pct / 250).max(1);
                let deadline = wcet + (period - wcet) * d_pct / 100;
                CoreTask::new(wcet, period, deadline, PartitionSet::EMPTY)
            })
            .collect();
        tasks.sort_by_key(|t| t.deadline); // deadline-monotonic
        tasks
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    /// The analysis is exact at the critical instant and never below any
    /// job the simulation shows.
    #[test]
    fn classic_rta_matches_simulation(tasks in task_set()) {
        let analysis = response_times(&tasks, 0);
        let simulated = simulate(&tasks);
        for (i, (r, (first, worst))) in analysis.iter().zip(&simulated).enumerate() {
            match r.wcrt_ns {
                Some(r) => {
                    prop_assert_eq!(r, *first, "task {} first job", i);
                    prop_assert!(*worst <= r, "task {}: simulated {} above bound {}", i, worst, r);
                }
                None => prop_assert!(*first > tasks[i].deadline, "task {}: analysis says miss, simulation {}", i, first),
            }
        }
    }
}
