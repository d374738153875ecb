//! Planning SCHED_DEADLINE reservations (issue 30): the placement
//! searches test a core of reservations with the EDF test of `tinct
//! analyze`, so the two agree on every core; a set EDF can place and
//! fixed priorities cannot is planned as reservations, and the plan
//! re-reads and re-analyses as what was planned.

use proptest::prelude::*;
use tinct_core::PartitionSet;
use tinct_core::alloc::{Algorithm, Instance, PlanOptions, as_reservations, plan, unsupported};
use tinct_core::analysis::{analyze, core_feasible_so_far};
use tinct_core::format::{Syntax, parse, to_toml};
use tinct_core::model::{Overheads, Platform, Task, TaskPolicy, TaskSet, WcetTable};
use tinct_core::units::{Bytes, Nanos};

const US: u64 = 1_000;
const PERIODS_US: [u64; 6] = [1_000, 2_000, 2_500, 4_000, 5_000, 10_000];
const PARTITIONS: u32 = 8;

/// One task of a random core: (period, C, D, J) in µs, S, the file's
/// runtime in ns (`None`: the one a job needs) and whether it is a
/// reservation (else a SCHED_FIFO task, with no runtime).
type Spec = (u64, u64, u64, u64, Vec<u32>, Option<u64>, bool);

fn spec() -> impl Strategy<Value = Spec> {
    (
        0..PERIODS_US.len(),
        1u64..=40,
        10u64..=100,
        0u64..=100,
        prop::collection::btree_set(1..=PARTITIONS, 1..=3),
        prop::option::of(50u64..=200),
        0u8..10,
        0u8..3,
    )
        .prop_map(
            |(p, c_pct, d_pct, jitter, partitions, runtime_pct, kind, policy)| {
                let period = PERIODS_US[p];
                let wcet = (period * c_pct / 100).max(2);
                let deadline = wcet + (period - wcet) * d_pct / 100;
                // One in ten with a jitter that leaves no kernel deadline.
                let jitter = if kind == 0 {
                    deadline
                } else {
                    jitter.min(deadline / 4)
                };
                // One in three a SCHED_FIFO task.
                let reservation = policy != 0;
                let runtime = runtime_pct
                    .filter(|_| reservation)
                    .map(|pct| (wcet * US * pct / 100).clamp(1024, deadline * US));
                (
                    period,
                    wcet,
                    deadline,
                    jitter,
                    partitions.into_iter().collect(),
                    runtime,
                    reservation,
                )
            },
        )
}

/// (Δ, ε, tick period, release latency, δ) in µs.
type Platformish = (u64, u64, Option<u64>, u64, u64);

fn platform() -> impl Strategy<Value = Platformish> {
    (
        0u64..=20,
        0u64..=3,
        prop::option::of(prop::sample::select(vec![1_000u64, 4_000])),
        0u64..=30,
        0u64..=5,
    )
}

fn core_set(tasks: &[Spec], (refill, tick, tick_period, latency, switch): Platformish) -> TaskSet {
    let platform = Platform {
        cores: 1,
        partitions: PARTITIONS,
        memory: Bytes(64 << 20),
        refill: Nanos(refill * US),
        overheads: Overheads {
            tick: Nanos(tick * US),
            tick_period: tick_period.map(|p| Nanos(p * US)),
            release_latency: Nanos(latency * US),
            context_switch: Nanos(switch * US),
        },
        cache_domains: None,
        color_bits: None,
        dram_map: None,
    };
    let tasks = tasks
        .iter()
        .enumerate()
        .map(
            |(i, (period, wcet, deadline, jitter, partitions, runtime, reservation))| Task {
                deadline: Nanos(deadline * US),
                core: Some(0),
                partitions: Some(PartitionSet::from_iter(partitions.iter().copied())),
                jitter: Nanos(jitter * US),
                policy: if *reservation {
                    TaskPolicy::Deadline
                } else {
                    TaskPolicy::Fifo
                },
                runtime: runtime.map(Nanos),
                ..Task::periodic(
                    format!("t{i}"),
                    Nanos(period * US),
                    Bytes(1024),
                    WcetTable::constant(Nanos(wcet * US)),
                )
            },
        )
        .collect();
    TaskSet::new(platform, tasks)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// The searches' test of a core ([`Instance::schedulable`] on the core
    /// as MinCacheAlloc builds it: the tick, then each task at its C^{|S|}
    /// and S in rank order) is the analysis' verdict of that core, for
    /// cores of reservations and cores that mix them with SCHED_FIFO
    /// tasks.
    #[test]
    fn the_search_test_of_a_core_is_the_analysis_verdict(
        tasks in prop::collection::vec(spec(), 1..=6),
        platform in platform(),
    ) {
        let set = core_set(&tasks, platform);
        let inst = Instance::new(&set);
        let all: Vec<usize> = (0..set.tasks.len()).collect();
        let order = inst.by_priority(&all);
        let fits = inst.schedulable(&core_of(&set, &inst, &order), &order, inst.refill);
        match analyze(&set) {
            Ok(analysis) => prop_assert_eq!(
                fits,
                analysis.schedulable,
                "{:?}",
                analysis.cores[0].edf
            ),
            // Undecidable within the test's limits: not a fit either.
            Err(_) => prop_assert!(!fits),
        }
    }

    /// The static placement's pruning test of a core
    /// ([`core_feasible_so_far`]) is the analysis' verdict of that core
    /// (no data triggers here, so no jitter is inherited).
    #[test]
    fn the_static_placements_test_of_a_core_is_the_analysis_verdict(
        tasks in prop::collection::vec(spec(), 1..=6),
        platform in platform(),
    ) {
        let set = core_set(&tasks, platform);
        let ranks = set.ranks();
        let members = tinct_core::analysis::core_members(&set, 0, &ranks);
        let feasible = core_feasible_so_far(&set, &members);
        match analyze(&set) {
            Ok(analysis) => prop_assert_eq!(feasible, analysis.schedulable),
            Err(_) => prop_assert!(!feasible),
        }
    }

    /// MinCacheAlloc's pruning: the tasks of the first k ranks failing
    /// means the first k + 1 fail too (a task of a later rank only adds
    /// demand, interrupts and cache terms; every reservation ranks above
    /// every SCHED_FIFO task).
    #[test]
    fn a_failing_prefix_never_fits_with_one_more_task(
        tasks in prop::collection::vec(spec(), 2..=6),
        platform in platform(),
    ) {
        let set = core_set(&tasks, platform);
        let inst = Instance::new(&set);
        let all: Vec<usize> = (0..set.tasks.len()).collect();
        let order = inst.by_priority(&all);
        let fits = |k: usize| {
            let prefix = &order[..k];
            inst.schedulable(&core_of(&set, &inst, prefix), prefix, inst.refill)
        };
        for k in 1..order.len() {
            prop_assert!(fits(k) || !fits(k + 1), "the first {} fail, {} fit", k, k + 1);
        }
    }
}

/// The core MinCacheAlloc builds for the tasks `order` (rank order): the
/// tick, then each at its C^{|S|} with its S.
fn core_of(
    set: &TaskSet,
    inst: &Instance,
    order: &[usize],
) -> Vec<tinct_core::analysis::rta::CoreTask> {
    let mut core = inst.core_tasks();
    for &i in order {
        let task = &inst.tasks[i];
        let s = set.tasks[i].partitions.unwrap();
        core.push(task.core_task(task.wcet_at(s.len()), s));
    }
    core
}

/// Two tasks on one core that EDF fits (U = 0.886, within the 0.90 the
/// kernel admits) and rate-monotonic priorities do not (the 7 ms task's
/// response 7.4 ms).
const EDF_ONLY: &str = include_str!("../../../examples/edf-plan.toml");

#[test]
fn a_set_only_edf_fits_is_planned_as_reservations_and_re_analysed_so() {
    let set = parse(EDF_ONLY, "edf-only.toml", Syntax::Toml).unwrap();
    let options = PlanOptions::default();
    let fixed = plan(&set, Algorithm::Cata, &options);
    assert!(
        !fixed.schedulable,
        "rate-monotonic priorities miss: {fixed:?}"
    );
    let reservations = as_reservations(&set, "edf-only.toml").unwrap();
    assert_eq!(unsupported(&reservations), None);
    for algorithm in [Algorithm::Cata, Algorithm::Bfd, Algorithm::Wfd] {
        let planned = plan(&reservations, algorithm, &options);
        assert!(planned.schedulable, "{algorithm:?}: {planned:?}");
        let file = planned.planned.as_ref().unwrap();
        assert!(
            file.tasks
                .iter()
                .all(|t| t.is_deadline() && t.priority.is_none())
        );
        assert!(
            planned.cores[0]
                .tasks
                .iter()
                .all(|t| t.policy == TaskPolicy::Deadline)
        );
        // The written plan reads back and analyses as planned.
        let again = parse(&to_toml(file, &[]), "plan.toml", Syntax::Toml).unwrap();
        let analysis = analyze(&again).unwrap();
        assert!(analysis.schedulable, "{:?}", analysis.cores[0].edf);
        assert!(analysis.cores[0].edf.as_ref().unwrap().schedulable);
    }
}

/// U = 0.943: EDF's demand fits, the kernel's admission bound (0.90)
/// does not; the unplaced task says the EDF test refused it, not Eq. (2).
#[test]
fn a_core_past_the_admission_bound_refuses_the_task_by_the_edf_test() {
    let over = EDF_ONLY.replace("wcet = \"3.4ms\"", "wcet = \"3.8ms\"");
    assert_ne!(over, EDF_ONLY);
    let set = parse(&over, "over.toml", Syntax::Toml).unwrap();
    let reservations = as_reservations(&set, "over.toml").unwrap();
    let planned = plan(&reservations, Algorithm::Cata, &PlanOptions::default());
    assert!(!planned.schedulable);
    let unplaced = &planned.unplaced[0];
    // CATA places by average utilization: `slow` (0.54) first.
    assert_eq!(unplaced.name, "fast");
    assert!(
        unplaced
            .message
            .contains("EDF: the reservations do not fit the core"),
        "{}",
        unplaced.message
    );
}

#[test]
fn what_a_reservation_cannot_have_is_refused() {
    let blocked = EDF_ONLY.replace("wcet = \"2ms\"\n", "wcet = \"2ms\"\nblocking = \"1ms\"\n");
    let set = parse(&blocked, "blocked.toml", Syntax::Toml).unwrap();
    let error = as_reservations(&set, "blocked.toml").unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("blocked.toml:15: task 'fast' field `blocking`"),
        "{error}"
    );
    assert_eq!(error.line, Some(15));
    assert_eq!(error.found, "1ms");
}

/// `fast` a reservation, `slow` a SCHED_FIFO task: on one core `slow`
/// misses below the reservation (its interference with jitter D − C = 3 ms
/// gives 7.4 ms), so every algorithm puts them on two cores, and the plan
/// keeps each task's policy, gives the SCHED_FIFO task a priority and the
/// reservation none, and re-reads and re-analyses as planned.
#[test]
fn a_set_mixing_reservations_and_fifo_tasks_is_planned_core_by_core() {
    let mixed = EDF_ONLY.replacen(
        "period = \"5ms\"\n",
        "period = \"5ms\"\npolicy = \"deadline\"\n",
        1,
    );
    let one_core = parse(&mixed, "mixed.toml", Syntax::Toml).unwrap();
    assert_eq!(unsupported(&one_core), None);
    let options = PlanOptions::default();
    let planned = plan(&one_core, Algorithm::Cata, &options);
    assert!(!planned.schedulable, "{planned:?}");
    assert_eq!(planned.unplaced.len(), 1, "{planned:?}");
    let two_cores = parse(
        &mixed.replace("cores = 1", "cores = 2"),
        "mixed.toml",
        Syntax::Toml,
    )
    .unwrap();
    for algorithm in [Algorithm::Cata, Algorithm::Bfd, Algorithm::Wfd] {
        let planned = plan(&two_cores, algorithm, &options);
        assert!(planned.schedulable, "{algorithm:?}: {planned:?}");
        assert_eq!(
            planned.cores.iter().filter(|c| !c.tasks.is_empty()).count(),
            2
        );
        let file = planned.planned.as_ref().unwrap();
        let task = |name: &str| file.tasks.iter().find(|t| t.name == name).unwrap();
        assert!(task("fast").is_deadline() && task("fast").priority.is_none());
        assert!(!task("slow").is_deadline() && task("slow").priority.is_some());
        let again = parse(&to_toml(file, &[]), "plan.toml", Syntax::Toml).unwrap();
        let analysis = analyze(&again).unwrap();
        assert!(analysis.schedulable, "{analysis:?}");
        assert_eq!(Some(&analysis), planned.analysis.as_ref());
    }
}

/// A reservation with a short deadline (1 ms of 10 ms) beside a
/// SCHED_FIFO task released every 200 µs, ε = 2 µs: near the largest C
/// that fits, the FIFO task's release interrupts decide it, and the
/// searches' test must charge them as the analysis does, C by C. Again
/// with that task data-triggered by a producer whose deadline (200 µs) it
/// inherits as the jitter of its release.
#[test]
fn a_fifo_tasks_releases_count_in_the_demand_of_the_reservations_beside_it() {
    for consumer in [false, true] {
        let mut verdicts = Vec::new();
        for c_us in 900..=1_000 {
            let mut text = format!(
                "[platform]\ncores = 1\npartitions = 4\nmemory = \"64MiB\"\nrefill = \"0ns\"\n\
                 overheads = {{ tick = \"2us\" }}\n\n\
                 [[task]]\nname = \"r\"\npolicy = \"deadline\"\nperiod = \"10ms\"\n\
                 deadline = \"1ms\"\nmemory = \"1MiB\"\nwcet = \"{c_us}us\"\ncore = 0\n\
                 partitions = [1]\n\n\
                 [[task]]\nname = \"f\"\nperiod = \"200us\"\ndeadline = \"200us\"\n\
                 memory = \"1MiB\"\nwcet = \"1us\"\ncore = 0\npartitions = [2]\n"
            );
            if consumer {
                text.push_str(
                    "trigger = \"data\"\n\n\
                     [[task]]\nname = \"p\"\nperiod = \"200us\"\ndeadline = \"200us\"\n\
                     memory = \"1MiB\"\nwcet = \"1us\"\ncore = 0\npartitions = [3]\n\n\
                     [[edge]]\nfrom = \"p\"\nto = \"f\"\nbuffer = \"1KiB\"\n",
                );
            }
            let set = parse(&text, "boundary.toml", Syntax::Toml).unwrap();
            let inst = Instance::new(&set);
            let all: Vec<usize> = (0..set.tasks.len()).collect();
            let order = inst.by_priority(&all);
            let reservation_only = inst.reservations_fit(&core_of(&set, &inst, &order), &order, 0);
            let analysis = analyze(&set).unwrap();
            let edf = analysis.cores[0].edf.as_ref().unwrap();
            assert_eq!(
                reservation_only, edf.schedulable,
                "consumer {consumer}, C = {c_us} µs: {edf:?}"
            );
            verdicts.push(edf.schedulable);
        }
        // The sweep crosses the boundary: it tests the charge, not a constant.
        assert!(
            verdicts[0] && !verdicts[verdicts.len() - 1],
            "consumer {consumer}: {verdicts:?}"
        );
    }
}
