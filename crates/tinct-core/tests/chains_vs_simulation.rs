//! The end-to-end bound of a chain is never below the latency observed in
//! a simulation of it (issue 13): random chains over one or two cores,
//! data-triggered hops (a consumer released when its producers' jobs of the
//! same index are done) and sampling hops (a timer-triggered consumer reads
//! the latest output when its job starts), beside independent timer tasks;
//! every core fixed-priority preemptive, timer tasks released together at
//! 0 with random jitter per job. The latency of a source job is from its
//! nominal release to the completion of the last job its data reaches.
//!
//! Time is in ticks of 1 µs; the analysis sees the same numbers in ns.

mod common;

use proptest::prelude::*;
use tinct_core::analysis::analyze;
use tinct_core::model::{Edge, Task, TaskSet, Trigger};
use tinct_core::units::{Bytes, Nanos};

const TICK_NS: u64 = 1_000;
const PERIODS: [u64; 6] = [30, 40, 60, 80, 120, 240];

#[derive(Clone, Debug)]
struct SimTask {
    core: u32,
    wcet: u64,
    period: u64,
    jitter: u64,
    trigger: Trigger,
    /// Unique priority rank, 1 the highest.
    rank: u32,
}

#[derive(Clone, Debug)]
struct System {
    cores: u32,
    tasks: Vec<SimTask>,
    /// (producer, consumer).
    edges: Vec<(usize, usize)>,
}

fn task_set(system: &System) -> TaskSet {
    let mut set = TaskSet::new(
        common::platform(system.cores),
        system
            .tasks
            .iter()
            .enumerate()
            .map(|(i, t)| Task {
                priority: Some(t.rank),
                core: Some(t.core),
                jitter: Nanos(t.jitter * TICK_NS),
                trigger: t.trigger,
                ..common::numbered_task(i, Nanos(t.period * TICK_NS), Nanos(t.wcet * TICK_NS))
            })
            .collect(),
    );
    set.edges = system
        .edges
        .iter()
        .map(|&(from, to)| Edge {
            from,
            to,
            buffer: Bytes(64),
        })
        .collect();
    set
}

/// Per task, per job index: (start, finish) of the jobs that ran.
type Runs = Vec<Vec<(i64, i64)>>;

/// Simulates every core tick by tick until `horizon`.
fn simulate(system: &System, horizon: i64, delays: &[Vec<i64>]) -> Runs {
    let n = system.tasks.len();
    let producers: Vec<Vec<usize>> = (0..n)
        .map(|c| {
            system
                .edges
                .iter()
                .filter(|&&(_, to)| to == c && system.tasks[c].trigger == Trigger::Data)
                .map(|&(from, _)| from)
                .collect()
        })
        .collect();
    let mut runs: Runs = vec![Vec::new(); n];
    // Per task: the next job's index, its release (once known) and progress.
    let mut next_job = vec![0usize; n];
    let mut done = vec![0u64; n];
    let mut started: Vec<Option<i64>> = vec![None; n];
    for now in 0..horizon {
        for core in 0..system.cores {
            // The ready job of each task on this core: its next one, once released.
            let ready = (0..n)
                .filter(|&i| system.tasks[i].core == core)
                .filter(|&i| {
                    let k = next_job[i];
                    let release = match system.tasks[i].trigger {
                        Trigger::Timer => Some(k as i64 * system.tasks[i].period as i64),
                        Trigger::Data => producers[i]
                            .iter()
                            .map(|&p| runs[p].get(k).map(|r| r.1))
                            .try_fold(0, |latest, f| f.map(|f| latest.max(f))),
                    };
                    release.is_some_and(|r| r + delays[i].get(k).copied().unwrap_or(0) <= now)
                })
                .min_by_key(|&i| system.tasks[i].rank);
            if let Some(i) = ready {
                started[i].get_or_insert(now);
                done[i] += 1;
                if done[i] == system.tasks[i].wcet {
                    runs[i].push((started[i].take().unwrap_or(now), now + 1));
                    next_job[i] += 1;
                    done[i] = 0;
                }
            }
        }
    }
    runs
}

/// The latency of source job `k` along `chain`, if it completed in time.
fn latency(system: &System, chain: &[usize], runs: &Runs, k: usize) -> Option<u64> {
    let source = chain[0];
    let nominal = k as i64 * system.tasks[source].period as i64;
    let mut job = k;
    let mut written = runs[source].get(job)?.1;
    for &task in &chain[1..] {
        job = match system.tasks[task].trigger {
            Trigger::Data => job,
            // The first job that starts after the data was written reads it.
            Trigger::Timer => runs[task].iter().position(|&(start, _)| start >= written)?,
        };
        written = runs[task].get(job)?.1;
    }
    Some((written - nominal) as u64)
}

fn system_strategy() -> impl Strategy<Value = System> {
    (
        1u32..=2,
        2usize..=4,
        0..PERIODS.len(),
        prop::option::of((1usize..4, 0..PERIODS.len())),
        prop::collection::vec((0u32..2, 1u64..=12, 0u64..=30), 6),
        prop::collection::vec((0..PERIODS.len(), 1u64..=12), 0..=2),
        any::<u64>(),
    )
        .prop_map(|(cores, length, p, sampling, chain_raw, others, seed)| {
            let mut tasks = Vec::new();
            let mut edges = Vec::new();
            let mut period = PERIODS[p];
            // Where a sampling hop (a timer-triggered task) sits, if any.
            let sample_at = sampling.filter(|&(at, _)| at < length);
            for (k, &(core, c_pct, j_pct)) in chain_raw.iter().take(length).enumerate() {
                let trigger = if k == 0 {
                    Trigger::Timer
                } else if let Some((at, q)) = sample_at.filter(|&(at, _)| at == k) {
                    let _ = at;
                    period = PERIODS[q];
                    Trigger::Timer
                } else {
                    Trigger::Data
                };
                tasks.push(SimTask {
                    core: core % cores,
                    wcet: (period * c_pct / 100).max(1),
                    period,
                    jitter: if trigger == Trigger::Timer {
                        period * j_pct / 100
                    } else {
                        0
                    },
                    trigger,
                    rank: 0,
                });
                if k > 0 {
                    edges.push((k - 1, k));
                }
            }
            for (k, &(q, c_pct)) in others.iter().enumerate() {
                let period = PERIODS[q];
                tasks.push(SimTask {
                    core: k as u32 % cores,
                    wcet: (period * c_pct / 100).max(1),
                    period,
                    jitter: 0,
                    trigger: Trigger::Timer,
                    rank: 0,
                });
            }
            // Random unique ranks.
            let mut order: Vec<usize> = (0..tasks.len()).collect();
            let mut state = seed | 1;
            for i in (1..order.len()).rev() {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                order.swap(i, (state % (i as u64 + 1)) as usize);
            }
            for (rank, &i) in order.iter().enumerate() {
                tasks[i].rank = rank as u32 + 1;
            }
            System {
                cores,
                tasks,
                edges,
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn chain_bounds_cover_simulated_latencies(system in system_strategy(), seed in any::<u64>()) {
        let analysis = analyze(&task_set(&system)).unwrap();
        prop_assert_eq!(analysis.chains.len(), 1);
        let chain = &analysis.chains[0];
        let path: Vec<usize> = (0..chain.task_indices.len()).collect();
        prop_assert_eq!(&chain.task_indices, &path);
        let Some(bound) = chain.bound_ns else {
            // Some task of the chain misses: no bound to check.
            prop_assert!(chain.task_indices.iter().any(|&i| analysis.tasks[i].wcrt_ns.is_none()));
            return Ok(());
        };
        // Release jitter of timer tasks: random per job, the first job of
        // each at its worst (the synchronous critical instant).
        let mut state = seed | 1;
        let delays: Vec<Vec<i64>> = system
            .tasks
            .iter()
            .map(|t| {
                (0..64)
                    .map(|k| {
                        state ^= state << 13;
                        state ^= state >> 7;
                        state ^= state << 17;
                        if k == 0 { t.jitter as i64 } else { (state % (t.jitter + 1)) as i64 }
                    })
                    .collect()
            })
            .collect();
        let horizon = 8 * 240;
        let runs = simulate(&system, horizon, &delays);
        let mut observed = 0;
        for k in 0..64 {
            if let Some(latency) = latency(&system, &path, &runs, k) {
                observed += 1;
                prop_assert!(
                    latency * TICK_NS <= bound,
                    "source job {}: latency {} above the bound {}", k, latency * TICK_NS, bound
                );
            }
        }
        prop_assert!(observed > 0, "no chain instance completed");
    }
}

/// By hand (ms): p on core 0 (C 2, T 10, J 1) feeds c on core 1 (data,
/// C 3) beside x (C 1, T 5, higher priority); s on core 0 (C 1, T 20)
/// samples c's output.
/// R_p = 1 + 2 = 3; c inherits J_c = R_p = 3: w_c = 3 + ⌈w/5⌉·1 = 4, R_c = 7;
/// R_s: w = 1 + ⌈(w + 1)/10⌉·2 = 3. Chain p → c → s: R_c + T_s + R_s = 30.
#[test]
fn a_two_core_pipeline_by_hand() {
    let text = include_str!("fixtures/two_core_pipeline.toml");
    let set =
        tinct_core::format::parse(text, "set.toml", tinct_core::format::Syntax::Toml).unwrap();
    let analysis = analyze(&set).unwrap();
    const MS: u64 = 1_000_000;
    let r: Vec<Option<u64>> = analysis.tasks.iter().map(|t| t.wcrt_ns).collect();
    assert_eq!(r, vec![Some(3 * MS), Some(7 * MS), Some(MS), Some(3 * MS)]);
    assert_eq!(analysis.tasks[1].jitter_inherited_ns, Some(3 * MS));
    assert_eq!(analysis.chains.len(), 1);
    let chain = &analysis.chains[0];
    assert_eq!(chain.tasks, vec!["p", "c", "s"]);
    assert_eq!(chain.bound_ns, Some(30 * MS));
    assert_eq!(chain.sampling_hops, 1);
    assert!(
        analysis.holistic_rounds >= 2,
        "the jitter was inherited in a second round"
    );
}

/// A chain of `length` tasks of C = 1 µs, each on its own core, the first
/// timer-triggered (T = 100 ms), the others data-triggered.
fn long_chain(length: usize) -> String {
    let mut text = format!(
        "[platform]\ncores = {length}\npartitions = 4\nmemory = \"4MiB\"\nrefill = \"0ns\"\n"
    );
    for k in 0..length {
        let trigger = if k == 0 {
            "period = \"100ms\""
        } else {
            "trigger = \"data\""
        };
        text += &format!(
            "\n[[task]]\nname = \"t{k}\"\nmemory = \"1KiB\"\nwcet = \"1us\"\ncore = {k}\n{trigger}\n"
        );
    }
    for k in 1..length {
        text += &format!(
            "\n[[edge]]\nfrom = \"t{}\"\nto = \"t{k}\"\nbuffer = \"1KiB\"\n",
            k - 1
        );
    }
    text
}

/// Jitter moves one edge per round, so a chain through 1001 tasks needs
/// 1001 rounds: more than the 1000 of `MAX_ROUNDS`, which used to call it
/// unsettled and the set NOT SCHEDULABLE. R of the k-th task is k µs.
#[test]
fn a_chain_longer_than_the_base_round_limit_settles() {
    let set = tinct_core::format::parse(
        &long_chain(1001),
        "chain.toml",
        tinct_core::format::Syntax::Toml,
    )
    .unwrap();
    let analysis = analyze(&set).unwrap();
    assert!(analysis.schedulable, "{:?}", analysis.reasons);
    assert_eq!(analysis.tasks[1000].wcrt_ns, Some(1_001_000));
    assert!(analysis.holistic_rounds > tinct_core::analysis::MAX_ROUNDS);
}

/// Issue 27: a stop flag (a timeout) reaches the holistic analysis, which
/// used to run its 1001 rounds to the end whatever was asked: already set,
/// the analysis gives up with no result; clear, it is `analyze`.
#[test]
fn a_set_stop_flag_stops_the_analysis_of_a_long_chain() {
    use std::sync::atomic::AtomicBool;
    use tinct_core::analysis::analyze_until;
    let set = tinct_core::format::parse(
        &long_chain(1001),
        "chain.toml",
        tinct_core::format::Syntax::Toml,
    )
    .unwrap();
    assert_eq!(analyze_until(&set, Some(&AtomicBool::new(true))), Ok(None));
    assert_eq!(
        analyze_until(&set, Some(&AtomicBool::new(false))),
        Ok(Some(analyze(&set).unwrap()))
    );
}

/// Every task meets its deadline, but the chain's end-to-end bound
/// (R_a + T_b + R_b + T_c + R_c with sampling hops of 10^10 s) passes
/// 2^64 − 1 ns: the set is not SCHEDULABLE, and says why.
#[test]
fn a_chain_whose_bound_overflows_is_not_schedulable() {
    let task = |name: &str| {
        format!(
            "\n[[task]]\nname = \"{name}\"\nperiod = \"10000000000s\"\nmemory = \"1KiB\"\nwcet = \"1ms\"\n"
        )
    };
    let edge = |from: &str, to: &str| {
        format!("\n[[edge]]\nfrom = \"{from}\"\nto = \"{to}\"\nbuffer = \"1KiB\"\n")
    };
    let text = format!(
        "[platform]\ncores = 1\npartitions = 4\nmemory = \"4MiB\"\nrefill = \"0ns\"\n{}{}{}{}{}",
        task("a"),
        task("b"),
        task("c"),
        edge("a", "b"),
        edge("b", "c")
    );
    let set =
        tinct_core::format::parse(&text, "ov.toml", tinct_core::format::Syntax::Toml).unwrap();
    let analysis = analyze(&set).unwrap();
    assert!(analysis.tasks.iter().all(|t| t.schedulable));
    assert_eq!(analysis.chains[0].bound_ns, None);
    assert!(!analysis.schedulable);
    assert!(
        analysis.reasons.iter().any(|r| r == "chain a → b → c has no end-to-end bound: its latency passes 2^64 − 1 ns"),
        "{:?}",
        analysis.reasons
    );
}
