//! kim2013 Section IV-E (Figures 11-13): Table I duplicated to n = 8, 12,
//! 16 tasks, N_C = 4, N_P = 32, M_total = 1024 and 2048 MiB; BFD, WFD and
//! CATA side by side with the paper's published comparisons.

use super::Hooks;
use crate::alloc::{Algorithm, Instance, PlanOptions, SearchOptions, least_partitions_until, plan};
use crate::generate::replicate;
use crate::model::TaskSet;
use crate::units::Bytes;
use serde::{Deserialize, Serialize};
use std::sync::atomic::AtomicBool;

/// Table I as shipped in examples/ (compiled in, so the study runs anywhere).
pub const TABLE_I: &str = include_str!("../../../../examples/kim2013.toml");

/// One algorithm in one setting.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// n.
    pub tasks: usize,
    /// M_total in MiB.
    pub memory_mib: u64,
    /// The algorithm.
    pub algorithm: Algorithm,
    /// Figure 11: least partitions that schedule the set (`None`: even N_P fails).
    pub partitions_needed: Option<u32>,
    /// The same as a percentage of N_P.
    pub partitions_percent: Option<f64>,
    /// Figure 12: memory space efficiency at that count, percent.
    pub memory_efficiency_percent: Option<f64>,
    /// Figure 13: total utilization with all N_P partitions, percent (`None`: fails).
    pub utilization_percent: Option<f64>,
    /// Every MinCacheAlloc call was proven optimal.
    pub exact: bool,
}

/// CATA against a baseline on one figure: the paper's published range and ours.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// What is compared.
    pub quantity: String,
    /// The baseline.
    pub against: Algorithm,
    /// The paper's sentence, as published.
    pub paper: String,
    /// Our differences in percentage points over the settings where both schedule.
    pub ours_min: Option<f64>,
    /// Largest difference.
    pub ours_max: Option<f64>,
    /// Whether CATA is at least as good in every such setting (the direction of the figure).
    pub direction_holds: bool,
}

/// The whole experiment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// N_C, N_P.
    pub cores: u32,
    /// N_P.
    pub partitions: u32,
    /// Δ, the partition refill time of the base set, ns.
    #[serde(default)]
    pub refill_ns: u64,
    /// Per setting and algorithm.
    pub rows: Vec<Row>,
    /// CATA vs BFD and WFD, next to the paper.
    pub comparisons: Vec<Comparison>,
    /// The paper's other published facts and ours.
    pub facts: Vec<(String, String)>,
    /// Every setting was computed (false when stopped by a timeout).
    pub complete: bool,
}

/// Runs every setting (copies 2, 3, 4 of `base` at 1024 and 2048 MiB) with
/// every algorithm; a stop keeps the settings done (`complete` says so).
pub fn run(base: &TaskSet, options: &SearchOptions, hooks: Hooks) -> Report {
    let mut rows = Vec::new();
    let mut complete = true;
    'settings: for copies in [2usize, 3, 4] {
        for memory_mib in [1024u64, 2048] {
            let mut set = replicate(base, copies);
            set.platform.memory = Bytes(memory_mib << 20);
            for algorithm in Algorithm::ALL {
                if hooks.stopped() {
                    complete = false;
                    break 'settings;
                }
                let row = setting(&set, algorithm, memory_mib, options, hooks.stop);
                if hooks.stopped() {
                    // Cut short inside: its numbers are not the setting's.
                    complete = false;
                    break 'settings;
                }
                rows.push(row);
                hooks.tick();
            }
        }
    }
    Report {
        cores: base.platform.cores,
        partitions: base.platform.partitions,
        refill_ns: base.platform.refill.0,
        comparisons: comparisons(&rows),
        facts: facts(&rows),
        rows,
        complete,
    }
}

/// Settings × algorithms the study computes (for progress bars).
pub const UNITS: u64 = 18;

/// Figures 11-13 for one algorithm in one setting.
fn setting(
    set: &TaskSet,
    algorithm: Algorithm,
    memory_mib: u64,
    options: &SearchOptions,
    stop: Option<&AtomicBool>,
) -> Row {
    let inst = Instance::new(set);
    let least = least_partitions_until(&inst, algorithm, options, stop);
    // Figure 13: all N_P partitions, CATA with its leftover step.
    let full = plan(
        set,
        algorithm,
        &PlanOptions {
            search: *options,
            stop,
            ..PlanOptions::default()
        },
    );
    let n_p = f64::from(inst.partitions);
    Row {
        tasks: set.tasks.len(),
        memory_mib,
        algorithm,
        partitions_needed: least.as_ref().map(|a| a.partitions_used()),
        partitions_percent: least
            .as_ref()
            .map(|a| 100.0 * f64::from(a.partitions_used()) / n_p),
        memory_efficiency_percent: least.as_ref().map(|a| 100.0 * a.memory_efficiency(&inst)),
        utilization_percent: full
            .unplaced
            .is_empty()
            .then_some(100.0 * full.total_utilization),
        exact: full.exact && least.as_ref().is_none_or(|a| a.exact),
    }
}

/// Differences CATA − baseline (or baseline − CATA where less is better), in points.
pub fn comparisons(rows: &[Row]) -> Vec<Comparison> {
    type Pick = fn(&Row) -> Option<f64>;
    let figures: [(&str, Pick, f64, [&str; 2]); 3] = [
        (
            "Figure 11: partitions needed (% of N_P), baseline − CATA",
            |r| r.partitions_percent,
            -1.0,
            ["16% to 25% less than BFD", "12% to 19% less than WFD"],
        ),
        (
            "Figure 12: memory space efficiency (%), CATA − baseline",
            |r| r.memory_efficiency_percent,
            1.0,
            ["25% to 39% more than BFD", "14% to 35% more than WFD"],
        ),
        (
            "Figure 13: total utilization with all partitions (%), baseline − CATA",
            |r| r.utilization_percent,
            -1.0,
            ["29% to 44% less than BFD", "14% to 49% less than WFD"],
        ),
    ];
    let mut out = Vec::new();
    for (quantity, pick, sign, paper) in figures {
        for (k, against) in [Algorithm::Bfd, Algorithm::Wfd].into_iter().enumerate() {
            let diffs: Vec<f64> = rows
                .iter()
                .filter(|r| r.algorithm == Algorithm::Cata)
                .filter_map(|cata| {
                    let base = rows.iter().find(|r| {
                        r.algorithm == against
                            && r.tasks == cata.tasks
                            && r.memory_mib == cata.memory_mib
                    })?;
                    Some(sign * (pick(cata)? - pick(base)?))
                })
                .collect();
            // Where the baseline fails and CATA does not, CATA is better too.
            let baseline_fails_alone =
                rows.iter()
                    .filter(|r| r.algorithm == Algorithm::Cata)
                    .all(|cata| {
                        let base = rows.iter().find(|r| {
                            r.algorithm == against
                                && r.tasks == cata.tasks
                                && r.memory_mib == cata.memory_mib
                        });
                        pick(cata).is_some() || base.is_some_and(|b| pick(b).is_none())
                    });
            out.push(Comparison {
                quantity: quantity.to_string(),
                against,
                paper: paper[k].to_string(),
                ours_min: diffs.iter().copied().reduce(f64::min),
                ours_max: diffs.iter().copied().reduce(f64::max),
                direction_holds: baseline_fails_alone && diffs.iter().all(|&d| d >= -1e-9),
            });
        }
    }
    out
}

/// The paper's other published facts, each next to tinct's figure.
pub fn facts(rows: &[Row]) -> Vec<(String, String)> {
    let find = |n: usize, m: u64, a: Algorithm| {
        rows.iter()
            .find(|r| r.tasks == n && r.memory_mib == m && r.algorithm == a)
    };
    let fmt = |v: Option<f64>| v.map_or_else(|| "fails".to_string(), |v| format!("{v:.1} %"));
    let needed = |r: Option<&Row>| {
        r.and_then(|r| r.partitions_needed)
            .map_or("fails".to_string(), |p| p.to_string())
    };
    vec![
        (
            "CATA memory efficiency, n = 8, M_total = 1024 MiB: 97 %".to_string(),
            fmt(find(8, 1024, Algorithm::Cata).and_then(|r| r.memory_efficiency_percent)),
        ),
        (
            "BFD fails n = 16 at M_total = 1024 MiB".to_string(),
            format!("BFD needs: {}", needed(find(16, 1024, Algorithm::Bfd))),
        ),
        (
            "BFD schedules n = 16 at M_total = 2048 MiB".to_string(),
            format!("BFD needs: {}", needed(find(16, 2048, Algorithm::Bfd))),
        ),
    ]
}
