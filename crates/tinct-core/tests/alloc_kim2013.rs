//! kim2013 IV-E (Figures 11-13): Table I duplicated to n = 8, 12, 16 tasks,
//! N_C = 4, N_P = 32, M_total = 1024 and 2048 MiB. The directions of every
//! comparison in the paper must hold with tinct's allocators:
//! - Figure 11: CATA needs no more partitions than BFD and WFD;
//! - Figure 12: CATA's memory space efficiency is at least theirs;
//! - Figure 13: with all 32 partitions CATA's total utilization is at most theirs;
//! - CATA reaches 97 % memory efficiency at n = 8, M_total = 1024 MiB (the
//!   paper's number) and BFD fails n = 16 at 1024 MiB.
//!
//! Runs the exact search (no node budget).

use tinct_core::alloc::{Algorithm, Instance, SearchOptions, allocate, cata, least_partitions};
use tinct_core::generate::replicate;
use tinct_core::units::Bytes;

struct Outcome {
    needed: Option<u32>,
    efficiency: Option<f64>,
    utilization: Option<f64>,
}

fn run(inst: &Instance, algorithm: Algorithm) -> Outcome {
    let options = SearchOptions::EXACT;
    let least = least_partitions(inst, algorithm, &options);
    let mut full = allocate(inst, algorithm, 32, &options);
    if algorithm == Algorithm::Cata && full.schedulable() {
        cata::spend_leftover(inst, &mut full, &options);
    }
    assert!(full.exact && least.as_ref().is_none_or(|a| a.exact));
    Outcome {
        needed: least.as_ref().map(|a| a.partitions_used()),
        efficiency: least.as_ref().map(|a| a.memory_efficiency(inst)),
        utilization: full.schedulable().then(|| full.total_utilization()),
    }
}

#[test]
fn figures_11_to_13_directions_hold() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/kim2013.toml");
    let table_i = tinct_core::format::load(&path).unwrap();
    for copies in [2, 3, 4] {
        for mib in [1024u64, 2048] {
            let mut set = replicate(&table_i, copies);
            set.platform.memory = Bytes(mib << 20);
            let inst = Instance::new(&set);
            let cata = run(&inst, Algorithm::Cata);
            let needed = cata.needed.expect("CATA schedules every setting");
            let efficiency = cata.efficiency.unwrap();
            let utilization = cata.utilization.unwrap();
            for baseline in [Algorithm::Bfd, Algorithm::Wfd] {
                let other = run(&inst, baseline);
                let label = format!("n={} M={mib} vs {baseline:?}", 4 * copies);
                if let Some(n) = other.needed {
                    assert!(needed <= n, "{label}: partitions {needed} > {n}");
                    assert!(
                        efficiency >= other.efficiency.unwrap() - 1e-12,
                        "{label}: efficiency"
                    );
                }
                if let Some(u) = other.utilization {
                    assert!(
                        utilization <= u + 1e-12,
                        "{label}: utilization {utilization} > {u}"
                    );
                }
            }
            if copies == 2 && mib == 1024 {
                assert!(
                    (efficiency - 0.97).abs() < 0.005,
                    "paper: 97 %, tinct: {efficiency}"
                );
            }
            if copies == 4 && mib == 1024 {
                assert!(
                    run(&inst, Algorithm::Bfd).needed.is_none(),
                    "paper: BFD fails n = 16 at 1024 MiB"
                );
            }
        }
    }
}

/// Figures 10-13 of the shipped curves against the paper: CATA is at least
/// as good as both baselines in every setting (each figure's direction),
/// each verdict is its range's end against the paper's, and Figure 11
/// against BFD's low end is bounded by memory: at n = 8 and 2048 MiB BFD
/// schedules with its memory minimum (Σ⌈M_i / 64 MiB⌉ = 10) and no
/// algorithm can use fewer than ⌈Σ M_i / 64 MiB⌉ = 6, so while BFD fits
/// there no curves reach the paper's 16 points; that bound is checked, and
/// the rest of Figure 11 against the paper's ends (docs/ALLOCATION.md).
#[test]
fn figures_10_to_13_ranges_against_the_papers() {
    use tinct_core::experiment::Hooks;
    use tinct_core::experiment::kim2013::{self, CLOSE_POINTS, ROUNDING_POINTS, Verdict};
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/kim2013.toml");
    let table_i = tinct_core::format::load(&path).unwrap();
    let report = kim2013::run(&table_i, &SearchOptions::EXACT, Hooks::default());
    assert!(report.complete);
    // C₃² was chosen for this drop: the value confirms the tuning only.
    let figure10 = report.figure10.as_ref().unwrap();
    assert_eq!(figure10.verdict, Verdict::Within, "{figure10:?}");
    let row = |n: usize, m: u64, a: Algorithm| {
        report
            .rows
            .iter()
            .find(|r| r.tasks == n && r.memory_mib == m && r.algorithm == a)
            .unwrap()
    };
    for c in &report.comparisons {
        assert!(c.direction_holds, "{c:?}");
        let ours = c.ours_min.zip(c.ours_max);
        assert_eq!(
            c.verdict,
            kim2013::classify(ours, (c.paper_min, c.paper_max), c.direction_holds)
        );
        let structural = c.quantity.starts_with("Figure 11") && c.against == Algorithm::Bfd;
        if !structural {
            continue;
        }
        // n = 8 at 2048 MiB: BFD at its memory minimum, CATA above the memory bound.
        let mut set = replicate(&table_i, 2);
        set.platform.memory = Bytes(2048 << 20);
        let inst = Instance::new(&set);
        let bfd_least: u32 = inst.tasks.iter().map(|t| t.min_partitions).sum();
        let total: u64 = inst.tasks.iter().map(|t| t.memory).sum();
        let any_least = total.div_ceil(inst.total_memory / u64::from(inst.partitions));
        assert_eq!(
            row(8, 2048, Algorithm::Bfd).partitions_needed,
            Some(bfd_least)
        );
        let best_gain = 100.0 * (f64::from(bfd_least) - any_least as f64) / 32.0;
        assert!(
            best_gain < c.paper_min - ROUNDING_POINTS,
            "the paper's low end is reachable: {best_gain}"
        );
        let others: Vec<f64> = report
            .rows
            .iter()
            .filter(|r| r.algorithm == Algorithm::Cata && !(r.tasks == 8 && r.memory_mib == 2048))
            .filter_map(|cata| {
                let bfd = row(cata.tasks, cata.memory_mib, Algorithm::Bfd);
                Some(bfd.partitions_percent? - cata.partitions_percent?)
            })
            .collect();
        // The five other settings; BFD fails n = 16 at 1024 MiB.
        assert_eq!(others.len(), 4, "{others:?}");
        let lo = others.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = others.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let slack = ROUNDING_POINTS + CLOSE_POINTS;
        assert!(
            (lo - c.paper_min).abs() <= slack && (hi - c.paper_max).abs() <= slack,
            "Figure 11 vs BFD without n = 8 at 2048 MiB: {lo} to {hi} points"
        );
    }
    // IV-E's facts: 97 %, BFD fails n = 16 at 1024 MiB and schedules it at 2048.
    let efficiency = row(8, 1024, Algorithm::Cata)
        .memory_efficiency_percent
        .unwrap();
    assert!((efficiency - 97.0).abs() <= ROUNDING_POINTS, "{efficiency}");
    assert_eq!(row(16, 1024, Algorithm::Bfd).partitions_needed, None);
    assert!(row(16, 2048, Algorithm::Bfd).partitions_needed.is_some());
}
