//! The holistic analysis the straightforward way, as the test oracle of the
//! one that keeps each core's analysis from round to round: every round
//! analyzes every core afresh ([`rta::response_times`], breakdowns
//! included) and takes its results as they come. On random chains and
//! trees of data-triggered tasks the two agree exactly.

use super::*;
use crate::format::{Syntax, parse};
use proptest::prelude::*;

/// [`analyze_within`] without kept analyses or deferred breakdowns.
fn straightforward(set: &TaskSet, members: &[Vec<usize>], refill: u64, limit: u32) -> Pass {
    let n = set.tasks.len();
    let RoundInputs {
        base,
        producers,
        data_triggered,
        blocking,
    } = RoundInputs::of(set, members, refill);
    let jitters = |inherited: &[u64]| -> Vec<u64> {
        (0..n)
            .map(|i| base[i].saturating_add(inherited[i]))
            .collect()
    };
    let fresh = |jitter: &[u64]| -> Vec<ResponseTime> {
        let mut results = vec![ResponseTime::default(); n];
        for core in members {
            let tasks = core_tasks(set, core, jitter, &blocking, &[]);
            let skip = pseudo_tasks(set, core, &[]);
            for (r, &i) in rta::response_times(&tasks, refill)
                .into_iter()
                .skip(skip)
                .zip(core)
            {
                results[i] = r;
            }
        }
        results
    };
    let mut inherited = vec![0u64; n];
    let mut rounds = 0;
    loop {
        rounds += 1;
        let mut results = fresh(&jitters(&inherited));
        let mut next = inherited.clone();
        for &c in &data_triggered {
            next[c] = producers[c]
                .iter()
                .map(|&p| results[p].wcrt_ns.unwrap_or(u64::MAX))
                .max()
                .unwrap_or(0);
        }
        let settled = next == inherited;
        if settled || rounds >= limit {
            if !settled {
                for &c in &data_triggered {
                    if next[c] != inherited[c] {
                        inherited[c] = u64::MAX;
                    }
                }
                loop {
                    results = fresh(&jitters(&inherited));
                    let mut widened = false;
                    for &c in &data_triggered {
                        let producer_misses =
                            producers[c].iter().any(|&p| results[p].wcrt_ns.is_none());
                        if producer_misses && inherited[c] != u64::MAX {
                            inherited[c] = u64::MAX;
                            widened = true;
                        }
                    }
                    if !widened {
                        break;
                    }
                }
            }
            return Pass {
                results,
                blocking,
                jitter: jitters(&inherited),
                inherited,
                rounds,
                diverged: !settled,
            };
        }
        inherited = next;
    }
}

/// One task of a random set: timer-triggered with `period` ns, or
/// data-triggered from an earlier task (`producer` picks it, `second` a
/// second producer of the same period, if any), with its WCET, core,
/// partitions, declared jitter and explicit blocking.
#[derive(Clone, Debug)]
struct Sketch {
    timer: bool,
    period: u64,
    producer: usize,
    second: Option<usize>,
    wcet: u64,
    core: u32,
    partitions: Option<Vec<u32>>,
    jitter: u64,
    blocking: u64,
}

fn sketch() -> impl Strategy<Value = Sketch> {
    (
        (prop::bool::weighted(0.3), 200u64..5000, any::<usize>()),
        prop::option::weighted(0.3, any::<usize>()),
        (1u64..300, 0u32..3),
        prop::option::weighted(0.7, prop::sample::subsequence(vec![1u32, 2, 3, 4], 1..=2)),
        (
            prop_oneof![3 => Just(0u64), 1 => 1u64..100],
            prop_oneof![4 => Just(0u64), 1 => 1u64..50],
        ),
    )
        .prop_map(
            |((timer, period, producer), second, (wcet, core), partitions, (jitter, blocking))| {
                Sketch {
                    timer,
                    period,
                    producer,
                    second,
                    wcet,
                    core,
                    partitions,
                    jitter,
                    blocking,
                }
            },
        )
}

/// A random set as a task-set file: forests of data-triggered tasks over
/// 1 to 3 cores, random priorities, Δ = 0 or not, overheads or none.
fn random_set() -> impl Strategy<Value = String> {
    (
        prop::collection::vec(sketch(), 1..14),
        1u32..=3,
        prop_oneof![Just(0u64), 1u64..200],
        prop::option::weighted(0.3, (0u64..5, 0u64..20, 0u64..3, 50u64..500)),
        any::<u64>(),
    )
        .prop_map(|(sketches, cores, refill, overheads, seed)| {
            let n = sketches.len();
            // Priorities: a permutation of 1..=n drawn from the seed.
            let mut priorities: Vec<usize> = (1..=n).collect();
            let mut state = seed;
            for k in (1..n).rev() {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                priorities.swap(k, (state >> 33) as usize % (k + 1));
            }
            let overheads = overheads.map_or(String::new(), |(cs, latency, tick, period)| {
                format!(
                    "overheads = {{ context_switch = \"{cs}ns\", release_latency = \"{latency}ns\", tick = \"{tick}ns\", tick_period = \"{period}ns\" }}\n"
                )
            });
            let mut text = format!(
                "[platform]\ncores = {cores}\npartitions = 4\nmemory = \"4MiB\"\nrefill = \"{refill}ns\"\n{overheads}"
            );
            let mut periods = Vec::with_capacity(n);
            let mut edges = Vec::new();
            for (k, s) in sketches.iter().enumerate() {
                let release = if k == 0 || s.timer {
                    periods.push(s.period);
                    format!("period = \"{}ns\"\n", s.period)
                } else {
                    let producer = s.producer % k;
                    periods.push(periods[producer]);
                    edges.push((producer, k));
                    let same: Vec<usize> = (0..k)
                        .filter(|&j| j != producer && periods[j] == periods[producer])
                        .collect();
                    if let (Some(pick), false) = (s.second, same.is_empty()) {
                        edges.push((same[pick % same.len()], k));
                    }
                    "trigger = \"data\"\n".to_string()
                };
                let partitions = s
                    .partitions
                    .as_ref()
                    .map_or(String::new(), |p| format!("partitions = {p:?}\n"));
                text += &format!(
                    "\n[[task]]\nname = \"t{k}\"\n{release}memory = \"1KiB\"\nwcet = \"{}ns\"\ncore = {}\npriority = {}\n{partitions}jitter = \"{}ns\"\nblocking = \"{}ns\"\n",
                    // C ≤ D, which the file format asks.
                    s.wcet.min(periods[k]),
                    s.core % cores,
                    priorities[k],
                    s.jitter,
                    s.blocking
                );
            }
            for (from, to) in edges {
                text += &format!("\n[[edge]]\nfrom = \"t{from}\"\nto = \"t{to}\"\nbuffer = \"1KiB\"\n");
            }
            text
        })
}

fn members(set: &TaskSet) -> Vec<Vec<usize>> {
    let ranks = set.ranks();
    (0..set.platform.cores)
        .map(|core| super::super::core_members(set, core, &ranks))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1500))]

    /// Exactly the straightforward analysis: every result with its
    /// breakdown and iteration count, the jitters, the rounds, whether it
    /// diverged; cut short after a few rounds too.
    #[test]
    fn kept_rounds_equal_the_straightforward_analysis(
        text in random_set(),
        limit in prop_oneof![Just(1u32), Just(2), Just(3), Just(5), Just(MAX_ROUNDS)],
    ) {
        let set = parse(&text, "set.toml", Syntax::Toml).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        let members = members(&set);
        for refill in [set.platform.refill.0, 0] {
            let kept = analyze_within(&set, &members, &Reservations::default(), refill, limit, None).unwrap();
            let oracle = straightforward(&set, &members, refill, limit);
            prop_assert_eq!(&kept.results, &oracle.results, "{}", text);
            prop_assert_eq!(&kept.jitter, &oracle.jitter);
            prop_assert_eq!(&kept.inherited, &oracle.inherited);
            prop_assert_eq!(kept.rounds, oracle.rounds);
            prop_assert_eq!(kept.diverged, oracle.diverged);
        }
    }
}

/// A one-core chain of 60 tasks whose tail misses (its jitters pass the
/// deadline), with cache terms: the case whose rounds re-analyze the tail.
#[test]
fn a_chain_whose_tail_misses_equals_the_straightforward_analysis() {
    let mut text = String::from(
        "[platform]\ncores = 1\npartitions = 4\nmemory = \"4MiB\"\nrefill = \"3ns\"\n",
    );
    for k in 0..60 {
        let release = if k == 0 {
            "period = \"20us\"\n"
        } else {
            "trigger = \"data\"\n"
        };
        text += &format!(
            "\n[[task]]\nname = \"t{k}\"\n{release}memory = \"1KiB\"\nwcet = \"100ns\"\npartitions = [{}]\n",
            1 + k % 2
        );
        if k > 0 {
            text += &format!(
                "\n[[edge]]\nfrom = \"t{}\"\nto = \"t{k}\"\nbuffer = \"1KiB\"\n",
                k - 1
            );
        }
    }
    let set = parse(&text, "chain.toml", Syntax::Toml).unwrap();
    let members = members(&set);
    let kept = analyze(&set, &members, &Reservations::default(), 3, None).unwrap();
    let oracle = straightforward(&set, &members, 3, max_rounds(60));
    assert_eq!(kept.results, oracle.results);
    assert_eq!(kept.rounds, oracle.rounds);
    let missed = kept.results.iter().filter(|r| r.wcrt_ns.is_none()).count();
    assert!((1..60).contains(&missed), "{missed} tasks miss");
    assert!(kept.inherited.contains(&u64::MAX));
}
