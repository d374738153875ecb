//! The result of `tinct bench crpd` (`crpd.json`): its types, the files
//! and the summary.

use super::{CacheKind, CodeOrder, SwitchCost, SwitchRow};
use crate::Result;
use crate::harness::{Columns, DISTRIBUTION_COLUMNS};
use crate::harness::{
    Durations, LineChart, OutputDir, RunHeader, Series, SeriesStyle, Summary, report_fields,
};
use serde::{Deserialize, Serialize};
use tinct_base::units::human_bytes;
use tinct_report::text::us;

/// One working-set size of a CRPD sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CrpdPoint {
    /// The victim's working set (data) or code (instruction) in bytes.
    pub size_bytes: u64,
    /// The working set as a percentage of the level's capacity.
    pub percent_of_level: f64,
    /// Timed victim pass after an empty preemption.
    pub baseline: Durations,
    /// Timed victim pass after a preemption that wiped the level.
    pub preempted: Durations,
    /// CRPD = median(preempted) − median(baseline), ns (may be slightly
    /// negative where there is none, by noise).
    pub crpd_ns: i64,
    /// Safe bound: max(preempted) − min(baseline), ns.
    pub crpd_bound_ns: i64,
    /// CRPD / the sweep's maximum CRPD.
    pub crpd_fraction: f64,
    /// Sebek Figure 7 at this size.
    pub crpd_fraction_theory: f64,
    /// Median ns per load (data) or per cache line executed (instruction)
    /// of the baseline pass.
    pub baseline_ns_per_access: f64,
    /// Miss ratio estimated from the baseline latency, (t − t_hit) /
    /// (t_miss − t_hit), with t_hit the smallest size's and t_miss the
    /// largest size's latency (`None` if t_miss ≤ t_hit).
    pub miss_ratio_estimate: Option<f64>,
    /// Sebek Figure 5 at this size.
    pub miss_ratio_theory: f64,
}

/// A CRPD sweep over one cache level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LevelSweep {
    /// `L1d`, `L1i`, `L2`, `L3`.
    pub level: String,
    /// Data (chase) or instruction (generated code) victim.
    pub cache: CacheKind,
    /// Capacity in bytes.
    pub cache_bytes: u64,
    /// Associativity used for the theoretical curves (0 = fully associative).
    pub ways: u32,
    /// Bytes the preempter reads or executes to wipe the level (2 × capacity).
    pub wipe_bytes: u64,
    /// Instruction mode: instructions per cache line of the generated code.
    pub words_per_line: Option<Vec<u32>>,
    /// Instruction mode: the code's miss ratio once it outgrows the cache.
    pub code_miss_ratio: Option<f64>,
    /// Instruction mode: the order its lines are visited in.
    pub code_order: Option<CodeOrder>,
    /// The sweep.
    pub points: Vec<CrpdPoint>,
    /// The largest CRPD measured (medians), ns.
    pub max_crpd_ns: i64,
    /// The largest safe bound, ns.
    pub max_crpd_bound_ns: i64,
    /// Where the largest CRPD was measured, in bytes.
    pub max_crpd_at_bytes: u64,
    /// Where it was measured, in percent of the level.
    pub max_crpd_at_percent: f64,
    /// Where Figure 7 reaches zero again, 100 · (1 + 1/A) percent.
    pub theory_zero_percent: f64,
    /// The first size beyond the maximum where the measured CRPD is below
    /// 10 % of the maximum, in percent of the level (`None` if none).
    pub measured_below_10_percent_at: Option<f64>,
    /// Mean |measured − theory| of the normalized CRPD curve.
    pub crpd_mean_abs_error: f64,
    /// Mean |estimated − theory| of the miss ratio (points with an estimate).
    pub miss_ratio_mean_abs_error: Option<f64>,
}

/// Everything `tinct bench crpd` measured (`crpd.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CrpdResult {
    /// Bench, options, machine, counter totals per condition.
    #[serde(flatten)]
    pub header: RunHeader,
    /// Scheduling policy of both tasks (`fifo(10)` or `other`).
    pub policy: String,
    /// Context-switch cost (absent when the run was stopped before its
    /// first round ended).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub switch: Option<SwitchCost>,
    /// One sweep per level.
    pub levels: Vec<LevelSweep>,
}

/// The columns of `crpd.csv`, from a point's fields and its level's.
const POINT_COLUMNS: &str = "level,cache,size_bytes,percent_of_level,baseline_median_ns,\
     baseline_p99_ns,preempted_median_ns,preempted_p99_ns,baseline_min_ns,preempted_max_ns,\
     crpd_ns,crpd_bound_ns,crpd_fraction,crpd_fraction_theory,baseline_ns_per_access,\
     miss_ratio_estimate,miss_ratio_theory";

/// The `switch.csv` rows of one Table 1 row: interrupt, resume, total,
/// and the wake-up alone where it was measured.
fn switch_rows(case: &str, row: &SwitchRow) -> Vec<Columns> {
    let parts = [
        ("interrupt", Some(&row.interrupt)),
        ("resume", Some(&row.resume)),
        ("total", Some(&row.total)),
        ("wakeup", row.wakeup.as_ref()),
    ];
    parts
        .into_iter()
        .filter_map(|(part, s)| {
            Some(
                Columns::distribution(s?)
                    .with("case", case)
                    .with("part", part),
            )
        })
        .collect()
}

impl crate::harness::Bench for CrpdResult {
    const NAME: &'static str = "crpd";
    type Plan = super::plan::Plan;

    /// The report is what the plan's measurement returned.
    fn assemble(_: super::plan::Plan, result: CrpdResult, _stopped: bool) -> Result<Self> {
        Ok(result)
    }

    /// Writes `crpd.csv`, `switch.csv` (Table 1),
    /// `crpd-counters.csv`, and per level `crpd-<level>.svg` (Figure 7) and
    /// `miss-ratio-<level>.svg` (Figure 5).
    fn write(&self, out: &mut OutputDir) -> Result<()> {
        let rows = self.levels.iter().flat_map(|l| {
            l.points.iter().map(|p| {
                Columns::of(p)
                    .with("level", &l.level)
                    .with("cache", l.cache)
            })
        });
        out.write_columns("crpd.csv", &[POINT_COLUMNS], rows)?;
        if let Some(sw) = &self.switch {
            let mut switch_csv = Vec::new();
            switch_csv.extend(switch_rows("best", &sw.best));
            switch_csv.extend(switch_rows("worst", &sw.worst));
            if let Some(row) = &sw.no_cache.measured {
                switch_csv.extend(switch_rows("no-cache-approximation", row));
            }
            out.write_columns(
                "switch.csv",
                &["case,part", DISTRIBUTION_COLUMNS],
                switch_csv,
            )?;
        }
        out.write_counters_csv("crpd-counters.csv", &self.header.counters)?;
        for level in &self.levels {
            let theory_x: Vec<f64> = (0..=64).map(|i| f64::from(i) * 200.0 / 64.0).collect();
            let crpd = LineChart::new(
                format!(
                    "CRPD vs working set, {} ({}, {}-way)",
                    level.level,
                    human_bytes(level.cache_bytes),
                    level.ways
                ),
                "victim working set (% of the level)",
                "CRPD / max CRPD",
            )
            .add_series(Series::new(
                format!(
                    "measured, medians (max {:.1} us; bound {:.1} us)",
                    level.max_crpd_ns as f64 / 1e3,
                    level.max_crpd_bound_ns as f64 / 1e3
                ),
                SeriesStyle::LineWithMarkers,
                std::iter::once((0.0, 0.0))
                    .chain(
                        level
                            .points
                            .iter()
                            .map(|p| (p.percent_of_level, p.crpd_fraction)),
                    )
                    .collect(),
            ))
            .add_series(Series::new(
                "Sebek 2002 Fig. 7",
                SeriesStyle::Dashed,
                theory_x
                    .iter()
                    .map(|&x| (x, super::theory::crpd_fraction(x / 100.0, level.ways)))
                    .collect(),
            ));
            out.write_svg(&format!("crpd-{}.svg", level.level), &crpd)?;
            let miss = LineChart::new(
                format!("Miss ratio vs working set, {}", level.level),
                "working set (% of the level)",
                "miss ratio",
            )
            .add_series(Series::new(
                "estimated from latency",
                SeriesStyle::LineWithMarkers,
                level
                    .points
                    .iter()
                    .filter_map(|p| Some((p.percent_of_level, p.miss_ratio_estimate?)))
                    .collect(),
            ))
            .add_series(Series::new(
                "Sebek 2002 Fig. 5",
                SeriesStyle::Dashed,
                theory_x
                    .iter()
                    .map(|&x| (x, super::theory::miss_ratio(x / 100.0, level.ways)))
                    .collect(),
            ));
            out.write_svg(&format!("miss-ratio-{}.svg", level.level), &miss)?;
        }
        Ok(())
    }

    report_fields!(header);

    /// The one-screen summary.
    fn summary(&self, _: &super::Params, out: &OutputDir) -> Summary {
        let mut s = Summary::of_run(&self.header);
        s.fact(
            "run",
            format!(
                "CPU {}, victim and preempter under {}, {} reps per condition",
                self.header.cpus[0], self.policy, self.header.reps
            ),
        );
        if let Some(sw) = &self.switch {
            let table1 = |row: &SwitchRow| {
                let split = match (&row.wakeup, row.switch_median_ns()) {
                    (Some(wakeup), Some(switch)) => {
                        format!(" (wake-up {} + switch {})", us(wakeup.median), us(switch))
                    }
                    (Some(wakeup), None) => {
                        format!(" (wake-up {} not below it: no split)", us(wakeup.median))
                    }
                    (None, _) => String::new(),
                };
                format!(
                    "interrupt {}{split} + resume {} = {} us median, max {} us",
                    us(row.interrupt.median),
                    us(row.resume.median),
                    us(row.total.median),
                    us(row.total.max)
                )
            };
            s.fact("preemption, best case", table1(&sw.best));
            s.fact(
                "preemption, worst case",
                format!(
                    "{} ({} wiped by each task)",
                    table1(&sw.worst),
                    human_bytes(sw.wipe_bytes)
                ),
            );
            s.fact(
                "preemption, no cache",
                match &sw.no_cache.measured {
                    Some(row) => format!("{} — {}", table1(row), sw.no_cache.name),
                    None => sw.no_cache.note.clone(),
                },
            );
        }
        s.table(&[
            "level",
            "victim",
            "ways",
            "max CRPD us",
            "bound us",
            "at",
            "<10% of max at",
            "theory zero",
            "|Fig7 err|",
            "|Fig5 err|",
        ]);
        for l in &self.levels {
            let victim = match (l.cache, l.code_miss_ratio) {
                (CacheKind::Instruction, Some(ratio)) => format!("code, miss ratio {ratio:.2}"),
                (CacheKind::Instruction, None) => "code".into(),
                (CacheKind::Data, _) => "data (chase)".into(),
            };
            s.row(vec![
                format!("{} {}", l.level, human_bytes(l.cache_bytes)),
                victim,
                l.ways.to_string(),
                format!("{:.1}", l.max_crpd_ns as f64 / 1e3),
                format!("{:.1}", l.max_crpd_bound_ns as f64 / 1e3),
                format!(
                    "{:.1}% ({})",
                    l.max_crpd_at_percent,
                    human_bytes(l.max_crpd_at_bytes)
                ),
                l.measured_below_10_percent_at
                    .map_or("-".into(), |p| format!("{p:.1}%")),
                format!("{:.1}%", l.theory_zero_percent),
                format!("{:.2}", l.crpd_mean_abs_error),
                l.miss_ratio_mean_abs_error
                    .map_or("-".into(), |e| format!("{e:.2}")),
            ]);
        }
        s.fact("output", out.path().display().to_string());
        s.note("CRPD = median victim pass after a wiping preemption − after an empty one (same two context switches); bound = slowest pass after a wiping preemption − fastest after an empty one");
        if let Some(sw) = &self.switch {
            s.note(sw.preemption.clone());
            if sw.no_cache.measured.is_some() {
                s.note(sw.no_cache.note.clone());
            }
        }
        if self.header.machine.virtualized == Some(true) {
            s.note("virtual machine: the host and other guests share the caches; real replacement is not LRU, so the curves are indicative");
        }
        s
    }
}
