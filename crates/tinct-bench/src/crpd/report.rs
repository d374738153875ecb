//! The result of `tinct bench crpd` (`crpd.json`): its types, the files
//! and the summary.

use super::{CacheKind, CodeOrder, SwitchCost, SwitchRow};
use crate::Result;
use crate::harness::{
    Columns, DISTRIBUTION_COLUMNS, Durations, LineChart, OutputDir, RunHeader, Series, SeriesStyle,
    Summary, report_fields,
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
    /// CRPD = median(preempted) − median(baseline), ns (noise may make it slightly negative).
    pub crpd_ns: i64,
    /// Safe bound: max(preempted) − min(baseline), ns.
    pub crpd_bound_ns: i64,
    /// CRPD / the sweep's maximum CRPD.
    pub crpd_fraction: f64,
    /// Sebek Figure 7 at this size.
    pub crpd_fraction_theory: f64,
    /// Median ns per load (data) or cache line executed (code) of the baseline pass.
    pub baseline_ns_per_access: f64,
    /// Miss ratio from the baseline latency, (t − t_hit) / (t_miss − t_hit) between the
    /// smallest size's and the largest's (`None` if t_miss ≤ t_hit).
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
    /// The first size beyond the maximum with a CRPD below 10 % of it, in % of the level.
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
            let level = Columns::default()
                .with("level", &l.level)
                .with("cache", l.cache);
            l.points.iter().map(move |p| level.clone().with("", p))
        });
        out.write_columns("crpd.csv", &[POINT_COLUMNS], rows)?;
        if let Some(sw) = &self.switch {
            let no_cache = sw.no_cache.measured.as_ref();
            let cases = [("best", Some(&sw.best)), ("worst", Some(&sw.worst))];
            let mut rows = Vec::new();
            for (case, row) in cases
                .into_iter()
                .chain([("no-cache-approximation", no_cache)])
            {
                let Some(r) = row else { continue };
                // Interrupt, resume, total, and the wake-up alone where it was measured.
                let parts = [
                    ("interrupt", &r.interrupt),
                    ("resume", &r.resume),
                    ("total", &r.total),
                ];
                let wakeup = r.wakeup.as_ref().map(|w| ("wakeup", w));
                for (part, d) in parts.into_iter().chain(wakeup) {
                    rows.push(
                        Columns::distribution(d)
                            .with("case", case)
                            .with("part", part),
                    );
                }
            }
            out.write_columns("switch.csv", &["case,part", DISTRIBUTION_COLUMNS], rows)?;
        }
        out.write_counters_csv("crpd-counters.csv", &self.header.counters)?;
        for level in &self.levels {
            // Sebek's curve `figure` from 0 to 200 % of the level.
            let theory = |figure: u8, curve: fn(f64, u32) -> f64| {
                let x = (0..=64).map(|i| f64::from(i) * 200.0 / 64.0);
                let points = x.map(|x| (x, curve(x / 100.0, level.ways))).collect();
                Series::new(
                    format!("Sebek 2002 Fig. {figure}"),
                    SeriesStyle::Dashed,
                    points,
                )
            };
            // The measured curve, after `start`.
            let measured =
                |name: String, start: &[(f64, f64)], y: fn(&CrpdPoint) -> Option<f64>| {
                    let points = level
                        .points
                        .iter()
                        .filter_map(|p| Some((p.percent_of_level, y(p)?)));
                    let points = start.iter().copied().chain(points).collect();
                    Series::new(name, SeriesStyle::LineWithMarkers, points)
                };
            let (l, bytes) = (&level.level, human_bytes(level.cache_bytes));
            let title = format!("CRPD vs working set, {l} ({bytes}, {}-way)", level.ways);
            let (max, bound) = (
                level.max_crpd_ns as f64 / 1e3,
                level.max_crpd_bound_ns as f64 / 1e3,
            );
            let name = format!("measured, medians (max {max:.1} us; bound {bound:.1} us)");
            let crpd = LineChart::new(
                title,
                "victim working set (% of the level)",
                "CRPD / max CRPD",
            )
            .add_series(measured(name, &[(0.0, 0.0)], |p| Some(p.crpd_fraction)))
            .add_series(theory(7, super::theory::crpd_fraction));
            out.write_svg(&format!("crpd-{l}.svg"), &crpd)?;
            let title = format!("Miss ratio vs working set, {l}");
            let miss = LineChart::new(title, "working set (% of the level)", "miss ratio")
                .add_series(measured("estimated from latency".into(), &[], |p| {
                    p.miss_ratio_estimate
                }))
                .add_series(theory(5, super::theory::miss_ratio));
            out.write_svg(&format!("miss-ratio-{l}.svg"), &miss)?;
        }
        Ok(())
    }

    report_fields!(header);

    /// The one-screen summary.
    fn summary(&self, _: &super::Params, out: &OutputDir) -> Summary {
        let mut s = Summary::of_run(&self.header);
        let (cpu, policy, reps) = (self.header.cpus[0], &self.policy, self.header.reps);
        let run =
            format!("CPU {cpu}, victim and preempter under {policy}, {reps} reps per condition");
        s.fact("run", run);
        if let Some(sw) = &self.switch {
            // A Table 1 row: its two switches, the interrupt split where a
            // wake-up was measured, and their sum.
            let table1 = |row: &SwitchRow| {
                let wakeup = row.wakeup.as_ref().map(|w| us(w.median));
                let split = match (wakeup, row.switch_median_ns()) {
                    (Some(w), Some(switch)) => format!(" (wake-up {w} + switch {})", us(switch)),
                    (Some(w), None) => format!(" (wake-up {w} not below it: no split)"),
                    (None, _) => String::new(),
                };
                let [interrupt, resume, total] =
                    [&row.interrupt, &row.resume, &row.total].map(|d| us(d.median));
                let max = us(row.total.max);
                format!(
                    "interrupt {interrupt}{split} + resume {resume} = {total} us median, max {max} us"
                )
            };
            s.fact("preemption, best case", table1(&sw.best));
            let wiped = human_bytes(sw.wipe_bytes);
            let worst = format!("{} ({wiped} wiped by each task)", table1(&sw.worst));
            s.fact("preemption, worst case", worst);
            let no_cache = match &sw.no_cache.measured {
                Some(row) => format!("{} — {}", table1(row), sw.no_cache.name),
                None => sw.no_cache.note.clone(),
            };
            s.fact("preemption, no cache", no_cache);
        }
        s.columns(
            &self.levels,
            &[
                ("level", |l| {
                    format!("{} {}", l.level, human_bytes(l.cache_bytes))
                }),
                ("victim", |l| match (l.cache, l.code_miss_ratio) {
                    (CacheKind::Instruction, Some(ratio)) => format!("code, miss ratio {ratio:.2}"),
                    (CacheKind::Instruction, None) => "code".into(),
                    (CacheKind::Data, _) => "data (chase)".into(),
                }),
                ("ways", |l| l.ways.to_string()),
                ("max CRPD us", |l| {
                    format!("{:.1}", l.max_crpd_ns as f64 / 1e3)
                }),
                ("bound us", |l| {
                    format!("{:.1}", l.max_crpd_bound_ns as f64 / 1e3)
                }),
                ("at", |l| {
                    format!(
                        "{:.1}% ({})",
                        l.max_crpd_at_percent,
                        human_bytes(l.max_crpd_at_bytes)
                    )
                }),
                ("<10% of max at", |l| {
                    l.measured_below_10_percent_at
                        .map_or("-".into(), |p| format!("{p:.1}%"))
                }),
                ("theory zero", |l| format!("{:.1}%", l.theory_zero_percent)),
                ("|Fig7 err|", |l| format!("{:.2}", l.crpd_mean_abs_error)),
                ("|Fig5 err|", |l| {
                    l.miss_ratio_mean_abs_error
                        .map_or("-".into(), |e| format!("{e:.2}"))
                }),
            ],
        );
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
