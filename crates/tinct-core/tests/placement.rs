//! `plan --placement static` (issue 13): on small random graphs the
//! branch-and-bound finds the least bytes crossing cache domains that any
//! assignment of tasks to cores reaches (brute force over every
//! assignment), and its placement keeps every core within the utilization
//! bound and analyses as schedulable. With Δ > 0, tasks drawn with
//! partitions keep them and the others get their core's block of the
//! partitions nobody was given (the brute force applies that rule itself).

mod common;

use proptest::prelude::*;
use tinct_core::alloc::{PlacementOptions, PlacementRefusal, UTILIZATION_TOLERANCE, place_static};
use tinct_core::analysis::analyze;
use tinct_core::model::{
    CriticalSection, Edge, Platform, Protocol, Resource, Task, TaskSet, Trigger, WcetTable,
};
use tinct_core::units::{Bytes, Nanos};

const PERIODS_MS: [u64; 5] = [5, 10, 20, 40, 50];

#[derive(Clone, Debug)]
struct Draw {
    cores: u32,
    paired_domains: bool,
    tasks: Vec<(usize, u64, bool)>,
    edges: Vec<(usize, usize, u64)>,
    shared: Option<(usize, usize)>,
    bound_percent: u64,
    /// Δ in µs (0: no cache terms).
    refill_us: u64,
    /// Per task (modulo), the partitions it is given, if any.
    given: Vec<Option<Vec<u32>>>,
}

fn build(draw: &Draw) -> TaskSet {
    let n = draw.tasks.len();
    let mut tasks: Vec<Task> = draw
        .tasks
        .iter()
        .enumerate()
        .map(|(i, &(p, c_pct, _))| {
            let period = PERIODS_MS[p] * 1_000_000;
            Task::periodic(
                format!("t{i}"),
                Nanos(period),
                Bytes(1024),
                WcetTable::constant(Nanos(period * c_pct / 100)),
            )
        })
        .collect();
    // Edges only forward (acyclic); a consumer drawn data-triggered with a
    // single producer takes its period.
    let mut edges: Vec<Edge> = Vec::new();
    for &(a, b, kib) in &draw.edges {
        let (a, b) = (a % n, b % n);
        let (from, to) = (a.min(b), a.max(b));
        if from == to || edges.iter().any(|e| e.from == from && e.to == to) {
            continue;
        }
        edges.push(Edge {
            from,
            to,
            buffer: Bytes::from_kib(kib),
        });
    }
    for (i, &(_, _, data)) in draw.tasks.iter().enumerate() {
        let inputs: Vec<usize> = edges.iter().filter(|e| e.to == i).map(|e| e.from).collect();
        if data && inputs.len() == 1 {
            tasks[i].trigger = Trigger::Data;
            tasks[i].period = tasks[inputs[0]].period;
            tasks[i].deadline = tasks[i].period;
            let c = tasks[i].wcet.worst().0.min(tasks[i].period.0 / 2).max(1);
            tasks[i].wcet = WcetTable::constant(Nanos(c));
        }
    }
    let mut resources = Vec::new();
    if let Some((a, b)) = draw.shared
        && a % n != b % n
    {
        resources.push(Resource {
            name: "r".into(),
            protocol: Protocol::Pcp,
        });
        for t in [a % n, b % n] {
            let length = Nanos((tasks[t].wcet.worst().0 / 4).max(1));
            tasks[t].critical_sections.push(CriticalSection {
                resource: 0,
                length,
            });
        }
    }
    let cache_domains = (draw.paired_domains && draw.cores.is_multiple_of(2)).then(|| {
        (0..draw.cores / 2)
            .map(|d| vec![2 * d, 2 * d + 1])
            .collect()
    });
    for (i, task) in tasks.iter_mut().enumerate() {
        if let Some(Some(given)) = draw.given.get(i) {
            task.partitions = Some(given.iter().copied().collect());
        }
    }
    let mut set = TaskSet::new(
        Platform {
            cache_domains,
            refill: Nanos(draw.refill_us * 1_000),
            ..common::platform(draw.cores)
        },
        tasks,
    );
    set.edges = edges;
    set.resources = resources;
    set
}

fn utilization(set: &TaskSet, members: impl Iterator<Item = usize>) -> f64 {
    members
        .map(|i| set.tasks[i].wcet.worst().0 as f64 / set.tasks[i].period.0 as f64)
        .sum()
}

/// kim2013's reservation per core, written out: with Δ > 0 and a task
/// without partitions, the partitions nobody was given in equal
/// consecutive blocks, one per core (none if fewer than the cores).
fn blocks(set: &TaskSet) -> Option<Vec<Vec<u32>>> {
    let unpartitioned = set.tasks.iter().any(|t| t.partitions.is_none());
    if set.platform.refill.0 == 0 || !unpartitioned {
        return None;
    }
    let free: Vec<u32> = (1..=set.platform.partitions)
        .filter(|&p| {
            !set.tasks
                .iter()
                .any(|t| t.partitions.is_some_and(|s| s.contains(p)))
        })
        .collect();
    let per = free.len() / set.platform.cores as usize;
    (per > 0).then(|| free.chunks(per).map(<[u32]>::to_vec).collect())
}

/// The least crossing bytes over every assignment, or `None`.
fn brute_force(set: &TaskSet, bound: f64) -> Option<u64> {
    let n = set.tasks.len();
    let cores = set.platform.cores as usize;
    let domain = set.platform.domain_of_cores();
    let mut best: Option<u64> = None;
    let mut assignment = vec![0usize; n];
    let ranks = set.ranks();
    loop {
        let within = (0..cores).all(|c| {
            utilization(set, (0..n).filter(|&i| assignment[i] == c))
                <= bound + UTILIZATION_TOLERANCE
        });
        if within {
            let mut planned = set.clone();
            let blocks = blocks(set);
            for (i, task) in planned.tasks.iter_mut().enumerate() {
                task.core = Some(assignment[i] as u32);
                task.priority = Some(ranks[i]);
                if task.partitions.is_none()
                    && let Some(blocks) = &blocks
                {
                    task.partitions = Some(blocks[assignment[i]].iter().copied().collect());
                }
            }
            if let Ok(analysis) = analyze(&planned)
                && analysis.schedulable
                && analysis.chains.iter().all(|c| c.bound_ns.is_some())
            {
                let cost = set
                    .edges
                    .iter()
                    .filter(|e| domain[assignment[e.from]] != domain[assignment[e.to]])
                    .map(|e| e.buffer.0)
                    .sum();
                best = Some(best.map_or(cost, |b: u64| b.min(cost)));
            }
        }
        // Next assignment (odometer).
        let mut k = 0;
        loop {
            if k == n {
                return best;
            }
            assignment[k] += 1;
            if assignment[k] < cores {
                break;
            }
            assignment[k] = 0;
            k += 1;
        }
    }
}

fn draw() -> impl Strategy<Value = Draw> {
    (
        prop::sample::select(vec![2u32, 3, 4]),
        any::<bool>(),
        prop::collection::vec((0..PERIODS_MS.len(), 5u64..=45, any::<bool>()), 2..=6),
        prop::collection::vec((0usize..6, 0usize..6, 1u64..=64), 0..=7),
        prop::option::of((0usize..6, 0usize..6)),
        prop::sample::select(vec![60u64, 80, 100]),
        prop::sample::select(vec![0u64, 0, 20]),
        prop::collection::vec(
            prop::option::weighted(0.3, prop::collection::vec(1u32..=4, 1..=2)),
            0..=6,
        ),
    )
        .prop_map(
            |(cores, paired_domains, tasks, edges, shared, bound_percent, refill_us, given)| Draw {
                cores,
                paired_domains,
                tasks,
                edges,
                shared,
                bound_percent,
                refill_us,
                given,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(150))]

    #[test]
    fn static_placement_is_optimal_and_within_the_bound(draw in draw()) {
        let set = build(&draw);
        let bound = draw.bound_percent as f64 / 100.0;
        let options = PlacementOptions {
            utilization_bound: bound,
            node_budget: None,
            stop: None,
        };
        let placement = place_static(&set, &options).unwrap();
        prop_assert!(placement.exact);
        let best = brute_force(&set, bound);
        prop_assert_eq!(placement.found, best.is_some(), "{:?}", placement.reason);
        if let Some(best) = best {
            prop_assert_eq!(placement.crossing_bytes, best);
            let planned = placement.planned.as_ref().unwrap();
            for core in 0..set.platform.cores {
                let members = (0..set.tasks.len()).filter(|&i| planned.tasks[i].core == Some(core));
                prop_assert!(utilization(&set, members) <= bound + UTILIZATION_TOLERANCE, "core {} over the bound", core);
            }
            let analysis = analyze(planned).unwrap();
            prop_assert!(analysis.schedulable);
            // Given partitions are kept; with Δ > 0 every task has some.
            for (task, placed) in set.tasks.iter().zip(&planned.tasks) {
                if task.partitions.is_some() {
                    prop_assert_eq!(task.partitions, placed.partitions);
                }
            }
            if let Some(blocks) = blocks(&set) {
                for placed in &planned.tasks {
                    let core = placed.core.unwrap() as usize;
                    prop_assert!(placed.partitions.is_some());
                    let given = |p: u32| {
                        set.tasks.iter().any(|t| t.partitions.is_some_and(|s| s.contains(p)))
                    };
                    let within = placed.partitions.unwrap().iter().all(|p| blocks[core].contains(&p) || given(p));
                    prop_assert!(within, "{:?} outside core {}'s block", placed.partitions, core);
                }
            }
            // The reported crossing edges add up to the cost.
            let listed: u64 = placement.crossing.iter().map(|e| e.buffer).sum();
            prop_assert_eq!(listed, best);
        }
    }
}

/// Two wave → mixer pairs (64 KiB and 4 KiB buffers), 0.2 of a core each
/// task, with `domains` as the platform's cache domains.
fn pairs(domains: &str) -> TaskSet {
    let text = format!(
        r#"
[platform]
cores = 4
partitions = 4
memory = "4MiB"
refill = "0ns"
{domains}

[[task]]
name = "wave"
period = "10ms"
memory = "1KiB"
wcet = "2ms"

[[task]]
name = "mixer"
trigger = "data"
memory = "1KiB"
wcet = "2ms"

[[task]]
name = "wave2"
period = "10ms"
memory = "1KiB"
wcet = "2ms"

[[task]]
name = "mixer2"
trigger = "data"
memory = "1KiB"
wcet = "2ms"

[[edge]]
from = "wave"
to = "mixer"
buffer = "64KiB"

[[edge]]
from = "wave2"
to = "mixer2"
buffer = "4KiB"
"#
    );
    tinct_core::format::parse(&text, "set.toml", tinct_core::format::Syntax::Toml).unwrap()
}

/// Two producer → consumer pairs on two domains of two cores: each pair
/// fits in one domain, so nothing crosses; with one core per domain and a
/// bound that keeps each pair apart, the smaller buffer crosses.
#[test]
fn pairs_stay_in_their_domain() {
    let set = pairs("cache_domains = [[0, 1], [2, 3]]");
    let placement = place_static(&set, &PlacementOptions::default()).unwrap();
    assert!(placement.found && placement.exact);
    assert_eq!(placement.crossing_bytes, 0);
    let planned = placement.planned.unwrap();
    let domain = planned.platform.domain_of_cores();
    let core = |name: &str| {
        planned.tasks[planned.task_index(name).unwrap()]
            .core
            .unwrap() as usize
    };
    assert_eq!(domain[core("wave")], domain[core("mixer")]);
    // Every core its own domain and at most 0.3 per core: each core holds
    // one task, so both edges cross.
    let split = pairs("");
    let placement = place_static(
        &split,
        &PlacementOptions {
            utilization_bound: 0.3,
            ..PlacementOptions::default()
        },
    )
    .unwrap();
    assert!(placement.found);
    assert_eq!(placement.crossing_bytes, 68 * 1024);
    // At 0.45 a pair shares a core: nothing crosses.
    let placement = place_static(
        &split,
        &PlacementOptions {
            utilization_bound: 0.45,
            ..PlacementOptions::default()
        },
    )
    .unwrap();
    assert_eq!(placement.crossing_bytes, 0);
}

/// A bound that is not a number above 0 is refused before any search, as
/// bad input (never a verdict on the set: NaN would cap nothing).
#[test]
fn a_bound_that_is_not_above_zero_is_refused() {
    let set = pairs("");
    for bound in [f64::NAN, 0.0, -1.0, f64::INFINITY] {
        let options = PlacementOptions {
            utilization_bound: bound,
            ..PlacementOptions::default()
        };
        let refused = PlacementRefusal::UtilizationBound(bound);
        assert_eq!(
            options.check().unwrap_err().to_string(),
            refused.to_string()
        );
        assert_eq!(
            place_static(&set, &options).unwrap_err().to_string(),
            format!("utilization bound: expected a number above 0, found {bound}")
        );
        let error = refused.input_error("--utilization-bound");
        assert_eq!(
            (
                error.file.as_str(),
                error.field.as_str(),
                error.expected.as_str()
            ),
            ("", "--utilization-bound", "a number above 0")
        );
        assert_eq!(error.found, bound.to_string());
    }
    assert!(PlacementOptions::default().check().is_ok());
}
