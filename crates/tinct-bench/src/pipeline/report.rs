//! The result of `tinct bench pipeline` (`pipeline.json`): its types, each
//! policy's numbers and Table I's comparison with `os` from the rounds
//! measured; the files and the summary: Table I (`table1.csv`),
//! per-task numbers (`tasks.csv`, Figs. 5 and 6 as `migrations.svg` and
//! `exec.svg`), the migrations map (`migrations.txt`, `map-<policy>.svg`,
//! Fig. 3), the ECDF of production times (`ecdf.svg`, Figs. 7 and 8) and
//! the counter totals (`counters.csv`).

use super::measure::{Chunk, Measured};
use super::plan::Plan;
use crate::Result;
use crate::harness::counters::MissRate;
use crate::harness::{
    Columns, ConditionCounters, Durations, LineChart, OutputDir, RunHeader, Series, SeriesStyle,
    Summary, report_fields,
};
use serde::{Deserialize, Serialize};
use tinct_report::text::opt_us;
use tinct_report::{BarChart, BarSeries};
use tinct_rt::pipeline::PlacementPolicy;
use tinct_sys::perf::PerfEvent;

/// One task's numbers under one policy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskResult {
    /// `wave0`, ..., `mixer0`, ...
    pub name: String,
    /// Execution time per packet (thread CPU time), Fig. 6.
    pub exec: Durations,
    /// Its variance σ², ns² (Fig. 6 plots the variance).
    pub exec_variance_ns2: f64,
    /// Migrations over every round (Fig. 5).
    pub migrations: u64,
    /// The CPU of each of the first samples of the first round (Fig. 3).
    pub map: Vec<u32>,
}

/// Everything measured under one policy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PolicyResult {
    /// `os`, `affinity` or `static`.
    pub policy: String,
    /// Samples produced (every round).
    pub samples: u64,
    /// Sample production time t_{n+1} − t_n: μ, σ and ρ = μ + 2σ.
    pub production: Durations,
    /// Production rate 1 / μ, samples per second.
    pub production_rate_hz: f64,
    /// Overall benchmark time: Σ over rounds of release to last sample, ns.
    pub overall_ns: u64,
    /// Per task, in tree order (waves, then mixers).
    pub tasks: Vec<TaskResult>,
    /// What each affinity move cost (`None`: no move).
    pub moves: Option<Durations>,
    /// LLC load misses / LLC loads over the policy's runs (Fig. 4's load
    /// miss rate), or why the hardware did not count them.
    pub load_miss_rate: MissRate,
    /// LLC store misses / LLC stores over the policy's runs (Fig. 4's
    /// store miss rate), or why the hardware did not count them.
    pub store_miss_rate: MissRate,
    /// ρ of `os` over this policy's ρ (Table I's determinism gain; > 1 is better).
    pub rho_gain_over_os: Option<f64>,
    /// How much shorter the overall time is than under `os`, percent.
    pub overall_gain_over_os_percent: Option<f64>,
}

/// The result of `tinct bench pipeline`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// What ran, where (`reps` is the number of rounds).
    #[serde(flatten)]
    pub header: RunHeader,
    /// Waves, mixer levels, packet bytes and work per packet.
    pub waves: u32,
    /// Mixer levels.
    pub levels: u32,
    /// Bytes per packet.
    pub packet_bytes: u64,
    /// Computation per packet, ns.
    pub work_ns: u64,
    /// Busy SCHED_OTHER threads that ran beside the tree.
    pub background: u32,
    /// One entry per policy, in the order asked.
    pub policies: Vec<PolicyResult>,
    /// Files written.
    pub files: Vec<String>,
    /// Every policy's samples, chunk by chunk, for the tables and charts
    /// (not in the JSON).
    #[serde(skip)]
    chunks: Vec<Vec<Chunk>>,
}

impl crate::harness::Bench for Report {
    const NAME: &'static str = "pipeline";
    type Plan = Plan;

    /// The report of a measured plan: each policy's numbers and Table I's
    /// comparison with `os`; no policy when no round ended.
    fn assemble(plan: Plan, measured: Measured, _stopped: bool) -> Result<Report> {
        let mut header = plan.header;
        header.add_counters("", &measured.samples);
        let mut policies: Vec<PolicyResult> = plan
            .policies
            .iter()
            .zip(&measured.chunks)
            .zip(&measured.samples.counters)
            .map(|((policy, chunks), counters)| {
                policy_result(*policy, chunks, &plan.task_names, counters)
            })
            .collect();
        compare_with_os(&mut policies);
        let mut report = Report {
            header,
            waves: plan.tree.waves,
            levels: plan.tree.levels,
            packet_bytes: plan.tree.packet_bytes,
            work_ns: plan.tree.work_ns,
            background: plan.background,
            policies,
            files: Vec::new(),
            chunks: Vec::new(),
        };
        if measured.samples.rounds_completed == 0 {
            // Stopped before any round ended: a header-only result says so.
            report.policies.clear();
        }
        report.chunks = measured.chunks;
        Ok(report)
    }

    report_fields!(header, files);

    /// Writes every file but the JSON.
    fn write(&self, out: &mut OutputDir) -> Result<()> {
        if self.policies.is_empty() {
            return Ok(());
        }
        let chunks = &self.chunks;
        out.write_columns(
            "table1.csv",
            &[TABLE1_COLUMNS],
            self.policies.iter().map(table_row),
        )?;
        let tasks = self.policies.iter().flat_map(|p| {
            p.tasks.iter().map(|t| {
                Columns::of(t)
                    .with("policy", &p.policy)
                    .with("task", &t.name)
                    .with("exec_mean_us", us(t.exec.mean))
                    .with("exec_variance_us2", t.exec_variance_ns2 / 1e6)
                    .with("exec_max_us", us(t.exec.max as f64))
            })
        });
        let columns = ["policy,task,exec_mean_us,exec_variance_us2,exec_max_us,migrations"];
        out.write_columns("tasks.csv", &columns, tasks)?;
        out.write_counters_csv("counters.csv", &self.header.counters)?;
        out.write_text("migrations.txt", &migrations_map(&self.policies))?;
        let names: Vec<String> = self
            .policies
            .first()
            .map(|p| p.tasks.iter().map(|t| t.name.clone()).collect())
            .unwrap_or_default();
        let bars = |title: &str, y: &str, value: &dyn Fn(&PolicyResult, usize) -> f64| {
            self.policies.iter().fold(
                BarChart::new(title, "task", y, names.clone()),
                |chart, p| {
                    chart.with_series(BarSeries::new(
                        p.policy.clone(),
                        (0..names.len()).map(|t| Some(value(p, t))).collect(),
                    ))
                },
            )
        };
        let exec = bars(
            "Execution time per packet (demarchi Fig. 6)",
            "mean (µs)",
            &|p, t| us(p.tasks[t].exec.mean),
        );
        out.write_text("exec.svg", &exec.to_svg())?;
        let migrations = bars(
            "Migrations per task (demarchi Fig. 5)",
            "migrations",
            &|p, t| p.tasks[t].migrations as f64,
        );
        out.write_text("migrations.svg", &migrations.to_svg())?;
        for p in &self.policies {
            let map = p.tasks.iter().enumerate().fold(
                LineChart::new(
                    format!("Migrations map, {} (demarchi Fig. 3)", p.policy),
                    "sample",
                    "CPU (+ task offset)",
                ),
                |chart, (t, task)| {
                    // Each task in its own band: CPU c of task t at t + c / (cpus + 1).
                    let band = self.header.cpus.len() as f64 + 1.0;
                    chart.add_series(Series::new(
                        task.name.clone(),
                        SeriesStyle::Steps,
                        task.map
                            .iter()
                            .enumerate()
                            .map(|(i, &cpu)| (i as f64, t as f64 + f64::from(cpu) / band))
                            .collect(),
                    ))
                },
            );
            out.write_svg(&format!("map-{}.svg", p.policy), &map)?;
        }
        let ecdf = self.policies.iter().zip(chunks).fold(
            LineChart::new(
                "Sample production time, empirical CDF (demarchi Figs. 7 and 8)",
                "production time (µs)",
                "fraction of samples",
            ),
            |chart, (p, chunks)| {
                let intervals: Vec<u64> =
                    chunks.iter().flat_map(|c| c.intervals_ns.clone()).collect();
                let cdf = tinct_report::stats::empirical_cdf(&intervals);
                let step = cdf.len().div_ceil(ECDF_POINTS).max(1);
                let mut points: Vec<(f64, f64)> = cdf
                    .iter()
                    .step_by(step)
                    .map(|&(v, f)| (us(v as f64), f))
                    .collect();
                if let Some(&(v, f)) = cdf.last() {
                    points.push((us(v as f64), f));
                }
                chart.add_series(Series::new(p.policy.clone(), SeriesStyle::Steps, points))
            },
        );
        out.write_svg("ecdf.svg", &ecdf)?;
        Ok(())
    }

    /// The one-screen summary: Table I (the files are the driver's note).
    fn summary(&self, _: &super::Params, _: &OutputDir) -> Summary {
        let mut s = Summary::new(format!(
            "pipeline: {} waves, {} mixer levels, {} B packets, {} µs per packet (demarchi Table I)",
            self.waves,
            self.levels,
            self.packet_bytes,
            self.work_ns as f64 / 1e3
        ));
        s.fact("rounds", self.header.reps.to_string());
        s.fact("CPUs", tinct_sys::format_cpu_list(&self.header.cpus));
        s.table(&[
            "policy",
            "samples",
            "rate (1/s)",
            "mean (µs)",
            "σ (µs)",
            "ρ=μ+2σ (µs)",
            "overall (s)",
            "ρ gain vs os",
            "overall vs os",
            "LLC load miss",
            "LLC store miss",
            "move median (µs)",
        ]);
        for p in &self.policies {
            s.row(vec![
                p.policy.clone(),
                p.samples.to_string(),
                format!("{:.0}", p.production_rate_hz),
                format!("{:.1}", us(p.production.mean)),
                format!("{:.1}", us(p.production.stddev)),
                format!("{:.1}", us(p.production.rho)),
                format!("{:.2}", p.overall_ns as f64 / 1e9),
                p.rho_gain_over_os
                    .map_or("—".into(), |g| format!("x{g:.2}")),
                p.overall_gain_over_os_percent
                    .map_or("—".into(), |g| format!("{g:+.1} %")),
                short_rate(&p.load_miss_rate),
                short_rate(&p.store_miss_rate),
                opt_us(p.moves.as_ref().map(|m| m.median)),
            ]);
        }
        let mut reasons: Vec<String> = Vec::new();
        for p in &self.policies {
            for rate in [&p.load_miss_rate, &p.store_miss_rate] {
                if let Some(why) = &rate.unavailable
                    && !reasons.contains(why)
                {
                    reasons.push(why.clone());
                }
            }
        }
        for why in reasons {
            s.note(format!("load/store miss rates (Fig. 4): {why}"));
        }
        s
    }
}

/// Fig. 4's load and store miss rates of one policy's counter totals.
fn miss_rates(counters: &ConditionCounters) -> (MissRate, MissRate) {
    (
        counters.miss_rate(PerfEvent::LlcReferences.name(), PerfEvent::LlcMisses.name()),
        counters.miss_rate(
            PerfEvent::LlcStores.name(),
            PerfEvent::LlcStoreMisses.name(),
        ),
    )
}

fn policy_result(
    policy: PlacementPolicy,
    chunks: &[Chunk],
    names: &[String],
    counters: &ConditionCounters,
) -> PolicyResult {
    let (load_miss_rate, store_miss_rate) = miss_rates(counters);
    let intervals: Vec<u64> = chunks.iter().flat_map(|c| c.intervals_ns.clone()).collect();
    let production = Durations::of_or_zero(&intervals);
    let tasks = names
        .iter()
        .enumerate()
        .map(|(t, name)| {
            let exec: Vec<u64> = chunks.iter().flat_map(|c| c.exec_ns[t].clone()).collect();
            let exec = Durations::of_or_zero(&exec);
            TaskResult {
                name: name.clone(),
                exec_variance_ns2: exec.stddev * exec.stddev,
                exec,
                migrations: chunks.iter().map(|c| c.migrations[t]).sum(),
                map: chunks.first().map(|c| c.map[t].clone()).unwrap_or_default(),
            }
        })
        .collect();
    let moves: Vec<u64> = chunks.iter().flat_map(|c| c.moves_ns.clone()).collect();
    PolicyResult {
        policy: policy.name().into(),
        samples: chunks.iter().map(|c| c.intervals_ns.len() as u64 + 1).sum(),
        production_rate_hz: if production.mean > 0.0 {
            1e9 / production.mean
        } else {
            0.0
        },
        production,
        overall_ns: chunks.iter().map(|c| c.overall_ns).sum(),
        tasks,
        moves: Durations::of(&moves),
        load_miss_rate,
        store_miss_rate,
        rho_gain_over_os: None,
        overall_gain_over_os_percent: None,
    }
}

/// Table I's improvement columns: each policy against `os`, when `os` ran.
fn compare_with_os(policies: &mut [PolicyResult]) {
    let Some(os) = policies.iter().find(|p| p.policy == "os").cloned() else {
        return;
    };
    for p in policies {
        p.rho_gain_over_os = (p.production.rho > 0.0).then(|| os.production.rho / p.production.rho);
        p.overall_gain_over_os_percent = (os.overall_ns > 0)
            .then(|| (os.overall_ns as f64 - p.overall_ns as f64) / os.overall_ns as f64 * 100.0);
    }
}

/// At most this many points per ECDF curve in the SVG (evenly spaced ranks).
const ECDF_POINTS: usize = 2000;

/// The columns of Table I (`table1.csv`); the miss rates (Fig. 4) are
/// misses / accesses, or `unavailable: <reason>`.
const TABLE1_COLUMNS: &str = "policy,samples,production_rate_hz,mean_us,stddev_us,rho_us,overall_s,\
     rho_gain_over_os,overall_gain_over_os_percent,llc_load_miss_rate,llc_store_miss_rate";

fn us(ns: f64) -> f64 {
    ns / 1e3
}

/// A miss rate in a CSV cell: the ratio (not a percentage), or the reason.
fn csv_rate(rate: &MissRate) -> String {
    match rate.rate {
        Some(r) => r.to_string(),
        None => rate.describe(),
    }
}

/// One policy's row of Table I.
fn table_row(p: &PolicyResult) -> Columns {
    Columns::of(p)
        .with("mean_us", us(p.production.mean))
        .with("stddev_us", us(p.production.stddev))
        .with("rho_us", us(p.production.rho))
        .with("overall_s", p.overall_ns as f64 / 1e9)
        .with("llc_load_miss_rate", csv_rate(&p.load_miss_rate))
        .with("llc_store_miss_rate", csv_rate(&p.store_miss_rate))
}

/// The migrations map of Fig. 3: per policy, a line per task with the CPU
/// of each of its first jobs.
pub fn migrations_map(policies: &[PolicyResult]) -> String {
    let mut text = String::new();
    for p in policies {
        text.push_str(&format!("{}:\n", p.policy));
        let width = p.tasks.iter().map(|t| t.name.len()).max().unwrap_or(0);
        for t in &p.tasks {
            let cpus: Vec<String> = t.map.iter().map(u32::to_string).collect();
            text.push_str(&format!("  {:width$}  {}\n", t.name, cpus.join(" ")));
        }
    }
    text
}

/// A miss rate in the table: a percentage, or `unavailable` (the reason
/// goes in a note below the table).
fn short_rate(rate: &MissRate) -> String {
    match rate.rate {
        Some(r) => format!("{:.1} %", r * 100.0),
        None => "unavailable".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::EventTotal;

    fn totals(events: &[(&str, Option<u64>)]) -> ConditionCounters {
        ConditionCounters {
            condition: "os".into(),
            runs: 2,
            events: events
                .iter()
                .map(|&(event, total)| EventTotal {
                    event: event.into(),
                    total,
                    estimated: false,
                    unavailable: total.is_none().then(|| "ENOENT (no such event)".into()),
                })
                .collect(),
        }
    }

    #[test]
    fn fig4_rates_are_misses_over_accesses_or_the_kernels_reason() {
        let counted = totals(&[
            ("LLC-loads", Some(1000)),
            ("LLC-load-misses", Some(30)),
            ("LLC-stores", Some(200)),
            ("LLC-store-misses", Some(50)),
        ]);
        let (load, store) = miss_rates(&counted);
        assert_eq!(load.rate, Some(0.03));
        assert_eq!(store.rate, Some(0.25));
        assert_eq!((store.accesses, store.misses), (Some(200), Some(50)));
        let no_pmu = totals(&[
            ("LLC-loads", None),
            ("LLC-load-misses", None),
            ("LLC-stores", None),
            ("LLC-store-misses", None),
        ]);
        let (load, store) = miss_rates(&no_pmu);
        for rate in [load, store] {
            assert_eq!(rate.rate, None);
            let why = rate.unavailable.unwrap();
            assert!(
                why.starts_with("unavailable: LLC-") && why.contains("ENOENT"),
                "{why}"
            );
        }
    }
}
