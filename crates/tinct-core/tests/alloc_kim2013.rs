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
