//! `tinct experiment kim2013`: the setting of kim2013 Section IV-E.

use crate::error::CliError;
use crate::output::{print_json, table};
use serde::Serialize;
use std::path::PathBuf;
use std::process::ExitCode;
use tinct_core::alloc::{
    Algorithm, Instance, SearchOptions, allocate, cata::spend_leftover, least_partitions,
};
use tinct_core::format::{Syntax, parse};
use tinct_core::generate::replicate;
use tinct_core::units::Bytes;

/// Table I as shipped in examples/ (compiled in, so the command runs anywhere).
const TABLE_I: &str = include_str!("../../../../../examples/kim2013.toml");

/// Arguments of `tinct experiment kim2013`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Table I task set to duplicate (default: the shipped examples/kim2013.toml).
    #[arg(long)]
    pub file: Option<PathBuf>,
    /// Print JSON instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Search nodes per MinCacheAlloc call (default: exhaustive, every result exact).
    #[arg(long)]
    pub node_budget: Option<u64>,
}

/// One algorithm in one setting.
#[derive(Debug, Serialize)]
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
#[derive(Debug, Serialize)]
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
#[derive(Debug, Serialize)]
pub struct Report {
    /// N_C, N_P.
    pub cores: u32,
    /// N_P.
    pub partitions: u32,
    /// Per setting and algorithm.
    pub rows: Vec<Row>,
    /// CATA vs BFD and WFD, next to the paper.
    pub comparisons: Vec<Comparison>,
    /// The paper's other published facts and ours.
    pub facts: Vec<(String, String)>,
}

/// Runs the experiment.
pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let base = match &args.file {
        Some(path) => crate::calibration::load_task_set(path, None)?.0,
        None => parse(TABLE_I, "examples/kim2013.toml", Syntax::Toml)?,
    };
    let options = SearchOptions {
        node_budget: args.node_budget,
        ..SearchOptions::EXACT
    };
    let mut rows = Vec::new();
    for copies in [2usize, 3, 4] {
        for memory_mib in [1024u64, 2048] {
            let mut set = replicate(&base, copies);
            set.platform.memory = Bytes(memory_mib << 20);
            let inst = Instance::new(&set);
            for algorithm in Algorithm::ALL {
                rows.push(setting(
                    &inst,
                    algorithm,
                    copies * base.tasks.len(),
                    memory_mib,
                    &options,
                ));
            }
        }
    }
    let report = Report {
        cores: base.platform.cores,
        partitions: base.platform.partitions,
        comparisons: comparisons(&rows),
        facts: facts(&rows),
        rows,
    };
    if args.json {
        print_json(&report)?;
    } else {
        print_human(&report);
    }
    Ok(ExitCode::SUCCESS)
}

fn setting(
    inst: &Instance,
    algorithm: Algorithm,
    tasks: usize,
    memory_mib: u64,
    options: &SearchOptions,
) -> Row {
    let least = least_partitions(inst, algorithm, options);
    let mut full = allocate(inst, algorithm, inst.partitions, options);
    if algorithm == Algorithm::Cata && full.schedulable() {
        spend_leftover(inst, &mut full, options);
    }
    let n_p = f64::from(inst.partitions);
    Row {
        tasks,
        memory_mib,
        algorithm,
        partitions_needed: least.as_ref().map(|a| a.partitions_used()),
        partitions_percent: least
            .as_ref()
            .map(|a| 100.0 * f64::from(a.partitions_used()) / n_p),
        memory_efficiency_percent: least.as_ref().map(|a| 100.0 * a.memory_efficiency(inst)),
        utilization_percent: full.schedulable().then(|| 100.0 * full.total_utilization()),
        exact: full.exact && least.as_ref().is_none_or(|a| a.exact),
    }
}

/// Differences CATA − baseline (or baseline − CATA where less is better), in points.
fn comparisons(rows: &[Row]) -> Vec<Comparison> {
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

fn facts(rows: &[Row]) -> Vec<(String, String)> {
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

fn opt(v: Option<f64>) -> String {
    v.map_or_else(|| "fails".to_string(), |v| format!("{v:.1}"))
}

fn print_human(report: &Report) {
    println!(
        "kim2013 IV-E: Table I duplicated, N_C = {}, N_P = {}, Δ = 45.3 us",
        report.cores, report.partitions
    );
    let mut t = table(&[
        "n",
        "M_total (MiB)",
        "algorithm",
        "partitions needed",
        "% of N_P (Fig. 11)",
        "memory eff. % (Fig. 12)",
        "utilization % all partitions (Fig. 13)",
        "exact",
    ]);
    for r in &report.rows {
        t.add_row(vec![
            r.tasks.to_string(),
            r.memory_mib.to_string(),
            r.algorithm.name().to_string(),
            r.partitions_needed
                .map_or_else(|| "fails".to_string(), |p| p.to_string()),
            opt(r.partitions_percent),
            opt(r.memory_efficiency_percent),
            opt(r.utilization_percent),
            if r.exact { "yes" } else { "budget" }.to_string(),
        ]);
    }
    println!("{t}");
    println!(
        "\nCATA against the baselines (percentage points, over settings where both schedule):"
    );
    let mut t = table(&["figure", "vs", "paper", "tinct", "direction"]);
    for c in &report.comparisons {
        let ours = match (c.ours_min, c.ours_max) {
            (Some(lo), Some(hi)) => format!("{lo:.1} to {hi:.1} points"),
            _ => "no common setting".to_string(),
        };
        t.add_row(vec![
            c.quantity.clone(),
            c.against.name().to_string(),
            c.paper.clone(),
            ours,
            if c.direction_holds {
                "holds"
            } else {
                "DIFFERS"
            }
            .to_string(),
        ]);
    }
    println!("{t}");
    println!("\nOther published facts:");
    for (paper, ours) in &report.facts {
        println!("  paper: {paper}; tinct: {ours}");
    }
}
