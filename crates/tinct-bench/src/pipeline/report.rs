//! The result of `tinct bench pipeline` (`pipeline.json`): its types, each
//! policy's numbers and Table I's comparison with `os` (derived from the
//! distributions when written); the files and the summary: Table I
//! (`table1.csv`), per-task numbers (`tasks.csv`, Figs. 5 and 6 as
//! `migrations.svg` and `exec.svg`), the migrations map (`migrations.txt`,
//! `map-<policy>.svg`, Fig. 3), the ECDF of production times (`ecdf.svg`,
//! Figs. 7 and 8) and the counter totals (`counters.csv`).

use super::measure::{Chunk, Measured};
use super::plan::Plan;
use crate::Result;
use crate::harness::counters::MissRate;
use crate::harness::{
    Columns, ConditionCounters, Durations, LineChart, OutputDir, RunHeader, Series, SeriesStyle,
    Summary, report_fields, serialize_derived,
};
use serde::{Deserialize, Serialize, Serializer};
use tinct_base::units::us;
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

/// Everything measured under one policy (its [`Figures`] derived when written).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PolicyResult {
    /// `os`, `affinity` or `static`.
    pub policy: String,
    /// Samples produced (every round).
    pub samples: u64,
    /// Sample production time t_{n+1} − t_n: μ, σ and ρ = μ + 2σ.
    pub production: Durations,
    /// Overall benchmark time: Σ over rounds of release to last sample, ns.
    pub overall_ns: u64,
    /// Per task, in tree order (waves, then mixers).
    pub tasks: Vec<TaskResult>,
    /// What each affinity move cost (`None`: no move).
    pub moves: Option<Durations>,
    /// Fig. 4's LLC load misses / loads over the policy's runs, or why there is none.
    pub load_miss_rate: MissRate,
    /// Fig. 4's LLC store misses / stores over the policy's runs, or why there is none.
    pub store_miss_rate: MissRate,
}

/// Table I's figures of a policy, derived from its distributions and those
/// of `os`: written after its own fields in the JSON and in `table1.csv`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Figures {
    /// Production rate 1 / μ, samples per second.
    pub production_rate_hz: f64,
    /// ρ of `os` over this policy's ρ (Table I's determinism gain; > 1 is better).
    pub rho_gain_over_os: Option<f64>,
    /// How much shorter the overall time is than under `os`, percent.
    pub overall_gain_over_os_percent: Option<f64>,
}

/// Every policy with its [`Figures`] (the gains only when `os` ran).
pub fn with_figures(policies: &[PolicyResult]) -> impl Iterator<Item = (&PolicyResult, Figures)> {
    let os = policies.iter().find(|p| p.policy == "os");
    policies.iter().map(move |p| {
        let (mean, rho) = (p.production.mean, p.production.rho);
        let figures = Figures {
            production_rate_hz: if mean > 0.0 { 1e9 / mean } else { 0.0 },
            rho_gain_over_os: os.filter(|_| rho > 0.0).map(|os| os.production.rho / rho),
            overall_gain_over_os_percent: os.filter(|os| os.overall_ns > 0).map(|os| {
                let before = os.overall_ns as f64;
                (before - p.overall_ns as f64) / before * 100.0
            }),
        };
        (p, figures)
    })
}

fn serialize_with_figures<S: Serializer>(
    policies: &[PolicyResult],
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    serialize_derived(with_figures(policies), s)
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
    #[serde(serialize_with = "serialize_with_figures")]
    pub policies: Vec<PolicyResult>,
    /// Files written.
    pub files: Vec<String>,
    /// Every policy's samples, chunk by chunk, for the charts (not in the JSON).
    #[serde(skip)]
    chunks: Vec<Vec<Chunk>>,
}

impl crate::harness::Bench for Report {
    const NAME: &'static str = "pipeline";
    type Plan = Plan;

    /// The report of a measured plan: each policy's numbers; no policy when
    /// no round ended (a header-only result says the run stopped before).
    fn assemble(plan: Plan, measured: Measured, _stopped: bool) -> Result<Report> {
        let mut header = plan.header;
        header.add_counters("", &measured.samples);
        let policies = plan.policies.iter().zip(&measured.chunks);
        let policies = policies.zip(&measured.samples.counters);
        let policies = policies.map(|((policy, chunks), counters)| {
            policy_result(*policy, chunks, &plan.task_names, counters)
        });
        let any_round = measured.samples.rounds_completed > 0;
        Ok(Report {
            header,
            waves: plan.tree.waves,
            levels: plan.tree.levels,
            packet_bytes: plan.tree.packet_bytes,
            work_ns: plan.tree.work_ns,
            background: plan.background,
            policies: policies.filter(|_| any_round).collect(),
            files: Vec::new(),
            chunks: measured.chunks,
        })
    }

    report_fields!(header, files);

    /// Writes every file but the JSON.
    fn write(&self, out: &mut OutputDir) -> Result<()> {
        if self.policies.is_empty() {
            return Ok(());
        }
        let csv_rate = |r: &MissRate| r.rate.map_or_else(|| r.describe(), |r| r.to_string());
        let table = with_figures(&self.policies).map(|(p, figures)| {
            Columns::of(p)
                .with("", figures)
                .with("mean_us", micros(p.production.mean))
                .with("stddev_us", micros(p.production.stddev))
                .with("rho_us", micros(p.production.rho))
                .with("overall_s", p.overall_ns as f64 / 1e9)
                .with("llc_load_miss_rate", csv_rate(&p.load_miss_rate))
                .with("llc_store_miss_rate", csv_rate(&p.store_miss_rate))
        });
        out.write_columns("table1.csv", &[TABLE1_COLUMNS], table)?;
        let tasks = self.policies.iter().flat_map(|p| {
            p.tasks.iter().map(|t| {
                Columns::of(t)
                    .with("policy", &p.policy)
                    .with("task", &t.name)
                    .with("exec_mean_us", micros(t.exec.mean))
                    .with("exec_variance_us2", t.exec_variance_ns2 / 1e6)
                    .with("exec_max_us", micros(t.exec.max as f64))
            })
        });
        let columns = ["policy,task,exec_mean_us,exec_variance_us2,exec_max_us,migrations"];
        out.write_columns("tasks.csv", &columns, tasks)?;
        out.write_counters_csv("counters.csv", &self.header.counters)?;
        out.write_text("migrations.txt", &migrations_map(&self.policies))?;
        let names: Vec<String> = self.policies[0]
            .tasks
            .iter()
            .map(|t| t.name.clone())
            .collect();
        let bars = |title: &str, y: &str, value: fn(&TaskResult) -> f64| {
            let chart = BarChart::new(title, "task", y, names.clone());
            self.policies.iter().fold(chart, |chart, p| {
                let values = p.tasks.iter().map(|t| Some(value(t))).collect();
                chart.with_series(BarSeries::new(p.policy.clone(), values))
            })
        };
        let exec = bars(
            "Execution time per packet (demarchi Fig. 6)",
            "mean (µs)",
            |t| micros(t.exec.mean),
        );
        out.write_text("exec.svg", &exec.to_svg())?;
        let migrations = bars("Migrations per task (demarchi Fig. 5)", "migrations", |t| {
            t.migrations as f64
        });
        out.write_text("migrations.svg", &migrations.to_svg())?;
        // Each task in its own band: CPU c of task t at t + c / (cpus + 1).
        let band = self.header.cpus.len() as f64 + 1.0;
        for p in &self.policies {
            let title = format!("Migrations map, {} (demarchi Fig. 3)", p.policy);
            let mut map = LineChart::new(title, "sample", "CPU (+ task offset)");
            for (t, task) in p.tasks.iter().enumerate() {
                let cpus = task.map.iter().enumerate();
                let points = cpus.map(|(i, &cpu)| (i as f64, t as f64 + f64::from(cpu) / band));
                map = map.add_series(Series::new(
                    &task.name,
                    SeriesStyle::Steps,
                    points.collect(),
                ));
            }
            out.write_svg(&format!("map-{}.svg", p.policy), &map)?;
        }
        let mut ecdf = LineChart::new(
            "Sample production time, empirical CDF (demarchi Figs. 7 and 8)",
            "production time (µs)",
            "fraction of samples",
        );
        for (p, chunks) in self.policies.iter().zip(&self.chunks) {
            let cdf = tinct_report::stats::empirical_cdf(&gather(chunks, |c| &c.intervals_ns));
            let step = cdf.len().div_ceil(ECDF_POINTS).max(1);
            let points = cdf.iter().step_by(step).chain(cdf.last());
            let points = points.map(|&(v, f)| (micros(v as f64), f)).collect();
            ecdf = ecdf.add_series(Series::new(&p.policy, SeriesStyle::Steps, points));
        }
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
        s.table_of(
            "policy,samples,rate (1/s),mean (µs),σ (µs),ρ=μ+2σ (µs),overall (s),ρ gain vs os,\
             overall vs os,LLC load miss,LLC store miss,move median (µs)",
        );
        // A rate's reason, when there is none, goes in a note below the table.
        let short_rate = |r: &MissRate| r.rate.map_or("unavailable".into(), |_| r.describe());
        for (p, figures) in with_figures(&self.policies) {
            let d = &p.production;
            s.row(vec![
                p.policy.clone(),
                p.samples.to_string(),
                format!("{:.0}", figures.production_rate_hz),
                us(d.mean as u64),
                us(d.stddev as u64),
                us(d.rho as u64),
                format!("{:.2}", p.overall_ns as f64 / 1e9),
                figures
                    .rho_gain_over_os
                    .map_or("—".into(), |g| format!("x{g:.2}")),
                (figures.overall_gain_over_os_percent)
                    .map_or("—".into(), |g| format!("{g:+.1} %")),
                short_rate(&p.load_miss_rate),
                short_rate(&p.store_miss_rate),
                opt_us(p.moves.as_ref().map(|m| m.median)),
            ]);
        }
        let rates = self
            .policies
            .iter()
            .flat_map(|p| [&p.load_miss_rate, &p.store_miss_rate]);
        let mut reasons: Vec<&String> = Vec::new();
        for why in rates.filter_map(|r| r.unavailable.as_ref()) {
            if !reasons.contains(&why) {
                reasons.push(why);
                s.note(format!("load/store miss rates (Fig. 4): {why}"));
            }
        }
        s
    }
}

/// Fig. 4's load and store miss rates of one policy's counter totals.
fn miss_rates(counters: &ConditionCounters) -> (MissRate, MissRate) {
    let rate =
        |accesses: PerfEvent, misses: PerfEvent| counters.miss_rate(accesses.name(), misses.name());
    (
        rate(PerfEvent::LlcReferences, PerfEvent::LlcMisses),
        rate(PerfEvent::LlcStores, PerfEvent::LlcStoreMisses),
    )
}

/// One part of every chunk (`part`), concatenated.
fn gather(chunks: &[Chunk], part: impl Fn(&Chunk) -> &Vec<u64>) -> Vec<u64> {
    chunks
        .iter()
        .flat_map(|c| part(c).iter().copied())
        .collect()
}

fn policy_result(
    policy: PlacementPolicy,
    chunks: &[Chunk],
    names: &[String],
    counters: &ConditionCounters,
) -> PolicyResult {
    let (load_miss_rate, store_miss_rate) = miss_rates(counters);
    let task = |(t, name): (usize, &String)| {
        let exec = Durations::of_or_zero(&gather(chunks, |c| &c.exec_ns[t]));
        TaskResult {
            name: name.clone(),
            exec_variance_ns2: exec.stddev * exec.stddev,
            exec,
            migrations: chunks.iter().map(|c| c.migrations[t]).sum(),
            map: chunks.first().map(|c| c.map[t].clone()).unwrap_or_default(),
        }
    };
    PolicyResult {
        policy: policy.name().into(),
        samples: chunks.iter().map(|c| c.intervals_ns.len() as u64 + 1).sum(),
        production: Durations::of_or_zero(&gather(chunks, |c| &c.intervals_ns)),
        overall_ns: chunks.iter().map(|c| c.overall_ns).sum(),
        tasks: names.iter().enumerate().map(task).collect(),
        moves: Durations::of(&gather(chunks, |c| &c.moves_ns)),
        load_miss_rate,
        store_miss_rate,
    }
}

/// At most this many points per ECDF curve in the SVG (evenly spaced ranks).
const ECDF_POINTS: usize = 2000;

/// The columns of Table I (`table1.csv`); the miss rates (Fig. 4) are
/// misses / accesses, or `unavailable: <reason>`.
const TABLE1_COLUMNS: &str = "policy,samples,production_rate_hz,mean_us,stddev_us,rho_us,overall_s,\
     rho_gain_over_os,overall_gain_over_os_percent,llc_load_miss_rate,llc_store_miss_rate";

/// Nanoseconds in microseconds, for the CSV cells and the charts.
fn micros(ns: f64) -> f64 {
    ns / 1e3
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::EventTotal;

    /// One policy's totals: `(event, total)`, no total when it did not count.
    fn totals(events: &[(&str, Option<u64>)]) -> ConditionCounters {
        let total = |&(event, total): &(&str, Option<u64>)| EventTotal {
            event: event.into(),
            total,
            estimated: false,
            unavailable: total.is_none().then(|| "ENOENT (no such event)".into()),
        };
        let events = events.iter().map(total).collect();
        ConditionCounters {
            condition: "os".into(),
            runs: 2,
            events,
        }
    }

    #[test]
    fn fig4_rates_are_misses_over_accesses_or_the_kernels_reason() {
        let names = [
            "LLC-loads",
            "LLC-load-misses",
            "LLC-stores",
            "LLC-store-misses",
        ];
        let counted = [Some(1000), Some(30), Some(200), Some(50)];
        let (load, store) =
            miss_rates(&totals(&names.into_iter().zip(counted).collect::<Vec<_>>()));
        assert_eq!(load.rate, Some(0.03));
        assert_eq!(store.rate, Some(0.25));
        assert_eq!((store.accesses, store.misses), (Some(200), Some(50)));
        let (load, store) = miss_rates(&totals(&names.map(|n| (n, None))));
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
