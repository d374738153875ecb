//! The result of `tinct bench wcet-profile`: its types, the result
//! assembled from the launches (the non-increasing table, the placement,
//! the `wcet` line and the task-set file), its files and its summary.

use super::condition::Condition;
use super::measure::{Launches, Measured};
use super::plan::Plan;
use super::table;
use crate::harness::{Columns, DurationColumns};
use crate::harness::{
    Durations, LineChart, OutputDir, RunHeader, Series, SeriesStyle, Summary, report_fields,
};
use crate::{Error, Result};
use serde::{Deserialize, Serialize};
use tinct_base::units::human_bytes;
use tinct_core::units::Nanos;
use tinct_report::stats::evt::{EvtOptions, EvtReport};

/// The job body being profiled, resolved to fixed work.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfiledBody {
    /// Kernel name.
    pub kernel: String,
    /// Working set in bytes.
    pub working_set_bytes: u64,
    /// Memory iterations per job.
    pub memory_iterations: u64,
    /// Compute iterations per job.
    pub compute_iterations: u64,
    /// The program whose jobs are profiled (a program body);
    /// `None` for one of tinct's kernels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program: Option<ProfiledProgram>,
}

/// A program body being profiled: started once per launch under the
/// shim, asked for its jobs over its protocol.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfiledProgram {
    /// The program (its path, resolved) and its arguments.
    pub command: Vec<String>,
    /// How its jobs are asked for.
    pub protocol: tinct_core::model::JobProtocol,
    /// Its anonymous mmap coloured too (`body.mmap`), as in the run.
    #[serde(default)]
    pub mmap: bool,
}

/// What the co-runners of one condition at one p did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CoRunnerTotals {
    /// True if they ran in the colours of the partitions the task does not use.
    pub colored: bool,
    /// Bytes each aggressor swept.
    pub bytes_per_cpu: u64,
    /// Sweeps over all launches and aggressors.
    pub sweeps: u64,
    /// Pages of their buffers checked through pagemap, and of those in the
    /// expected colours (0 and 0 when uncoloured).
    pub pages_checked: u64,
    /// Of `pages_checked`, pages in the expected colours.
    pub pages_in_colors: u64,
}

/// The jobs of one condition at one p.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConditionPoint {
    /// The condition.
    pub condition: Condition,
    /// Order statistics of the jobs.
    pub jobs: Durations,
    /// The nearest-rank 99.9th percentile, ns.
    pub p999_ns: u64,
    /// The EVT fit of the jobs (pWCET, or why the data do not support one).
    pub evt: EvtReport,
    /// The chosen statistic (`--use`) of these jobs, ns.
    pub statistic_ns: Option<u64>,
    /// Why there is no statistic, if there is none.
    pub statistic_missing: Option<String>,
    /// The most LLC misses of one job (`None` without counters).
    pub llc_misses_max: Option<u64>,
    /// Pages of the working sets whose frames were checked.
    pub pages_checked: u64,
    /// Of those, pages in the partition's colors.
    pub pages_in_colors: u64,
    /// The co-runners (co-run conditions only).
    pub co_runners: Option<CoRunnerTotals>,
    /// Every measured job, ns, in the order they ran (launch after launch).
    pub job_ns: Vec<u64>,
}

/// C^p measured at one p.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfilePoint {
    /// Number of partitions.
    pub p: u32,
    /// Page colors of partitions 1..=p.
    pub colors: Vec<u32>,
    /// One entry per condition, in the order asked.
    pub conditions: Vec<ConditionPoint>,
    /// The largest statistic over the conditions, ns (`None` if a
    /// condition has none).
    pub statistic_ns: Option<u64>,
    /// The condition it came from.
    pub worst_condition: Option<Condition>,
    /// The value written to the table: the largest statistic over this and
    /// every larger p, rounded up to a microsecond, so the table never
    /// increases with p (the format requires it; measurement noise can
    /// break it). `None` without a statistic.
    pub table_ns: Option<u64>,
}

/// How the working set was placed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Placement {
    /// True if the shim served the working set from the colors of p partitions.
    pub colored: bool,
    /// The shim used, if any.
    pub preload: Option<String>,
    /// Page colors of the last-level cache.
    pub colors: u32,
    /// The colours' bits and where they came from (`--color-bits`,
    /// `TINCT_COLOR_BITS`, the task set, the machine file, the derived
    /// rule); `None` when uncoloured.
    pub color_source: Option<String>,
    /// Pages checked over all launches and the share in the right colors.
    pub pages_in_colors_ratio: Option<f64>,
    /// What this means.
    pub note: String,
}

/// Where the co-runners of the co-run conditions run, and on what memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CoRunnerSetup {
    /// One aggressor on each of these CPUs.
    pub cpus: Vec<u32>,
    /// True if they run in the partitions the task does not use.
    pub colored: bool,
    /// Why coloured or not.
    pub reason: String,
    /// The colour probe's finding on the last-level cache, when it ran.
    pub color_probe: Option<String>,
    /// Bytes each uncoloured aggressor sweeps (twice the LLC, at least 16 MiB).
    pub uncolored_bytes_per_cpu: u64,
    /// The last-level cache's size.
    pub llc_bytes: u64,
}

/// Where the table went with `--write-taskset`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WrittenTaskSet {
    /// The file.
    pub path: String,
    /// `created` (a new task-set file) or `updated` (the task's `wcet` replaced).
    pub action: String,
    /// The task whose table was written.
    pub task: String,
}

/// Everything `tinct bench wcet-profile` measured (`wcet-profile.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WcetProfileResult {
    /// Bench, options, machine.
    #[serde(flatten)]
    pub header: RunHeader,
    /// Task name written.
    pub task: String,
    /// The body.
    pub body: ProfiledBody,
    /// N_P.
    pub partitions: u32,
    /// Measured jobs per launch.
    pub jobs_per_launch: u32,
    /// Placement.
    pub placement: Placement,
    /// The conditions, in the order asked.
    pub conditions: Vec<Condition>,
    /// The co-runners (with a co-run condition).
    pub co_runners: Option<CoRunnerSetup>,
    /// The statistic that became C^p (`max`, `p99.9`, `pwcet:1e-9`).
    pub statistic: String,
    /// How the EVT fits were made.
    pub evt: EvtOptions,
    /// One point per profiled p, ascending.
    pub points: Vec<ProfilePoint>,
    /// The `wcet = { … }` line (table values), when every point has the statistic.
    pub wcet_line: Option<String>,
    /// Why there is no table, if there is none.
    pub table_missing: Option<String>,
    /// Δ written to the task set (absent when the run was stopped before
    /// its first round ended: nothing was written, Δ not measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refill: Option<String>,
    /// Where Δ came from (absent with `refill`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refill_source: Option<String>,
    /// The complete task-set file written (`taskset.toml`), when there is a table.
    pub taskset: Option<String>,
    /// The task-set file the table was written into (`--write-taskset`).
    pub written_taskset: Option<WrittenTaskSet>,
    /// Whether LLC misses were counted, and if not why.
    pub counters: String,
}

impl crate::harness::Bench for WcetProfileResult {
    const NAME: &'static str = "wcet-profile";
    type Plan = super::plan::PinnedPlan;

    /// The result of the measured plan: the table made non-increasing, the
    /// placement, the `wcet` line and, with Δ, the task-set file; a run
    /// stopped before its first round ended has no point and no table.
    fn assemble(
        pinned: super::plan::PinnedPlan,
        measured: Measured,
        _stopped: bool,
    ) -> Result<Self> {
        // The measuring thread stays on the task's CPU until the report is
        // assembled (Δ is measured there).
        let super::plan::PinnedPlan { _pin, plan, .. } = pinned;
        let Measured {
            launches,
            mut points,
            refill,
        } = measured;
        // A run stopped before every (p, condition) had one launch has no
        // point (and no Δ): the header, body, plan and placement, no table.
        let stopped_early = launches.is_empty();
        let table_missing = match stopped_early {
            true => Some("stopped before the first round finished: nothing measured".into()),
            false => table::make_non_increasing(&mut points),
        };
        let placement = placement(&plan, &points, &launches);
        let mut header = plan.header;
        let (wcet_line, taskset) = match (&table_missing, &refill) {
            (Some(_), _) => (None, None),
            (None, None) => (Some(table::wcet_line(&points)), None),
            (None, Some((refill, refill_source))) => {
                let period = plan
                    .period
                    .unwrap_or_else(|| table::default_period(&points));
                let written = table::task_set(&table::TaskSetInput {
                    name: &plan.name,
                    body: &plan.body,
                    points: &points,
                    partitions: plan.partitions,
                    cores: header.machine.online_cpus.len().max(1) as u32,
                    period,
                    refill: *refill,
                })
                .map_err(|e| {
                    Error::Measurement(format!("the written task set does not validate: {e}"))
                })?;
                let header_lines = vec![
                    format!(
                        "C^p ({} over {}) measured by `tinct bench wcet-profile` on {}",
                        plan.statistic,
                        plan.conditions
                            .iter()
                            .map(|c| c.name())
                            .collect::<Vec<_>>()
                            .join(", "),
                        header.machine.one_line()
                    ),
                    format!("placement: {}", placement.note),
                    format!("refill: {refill_source}"),
                ];
                (
                    Some(table::wcet_line(&points)),
                    Some(tinct_core::format::to_toml(&written, &header_lines)),
                )
            }
        };
        let counters = match launches.reports().find_map(|r| r.counters_note.clone()) {
            _ if stopped_early => "not counted: stopped before the first round".into(),
            Some(note) => note,
            None => "LLC misses counted per job (hardware counter LLC-load-misses)".into(),
        };
        header.add_logged_counters();
        Ok(WcetProfileResult {
            counters,
            wcet_line,
            table_missing,
            taskset,
            written_taskset: None,
            header,
            task: plan.name,
            partitions: plan.partitions,
            jobs_per_launch: plan.jobs,
            body: plan.body,
            placement,
            conditions: plan.conditions,
            co_runners: plan.co_runners,
            statistic: plan.statistic.to_string(),
            evt: plan.evt,
            points,
            refill: refill.as_ref().map(|(refill, _)| refill.to_string()),
            refill_source: refill.map(|(_, source)| source),
        })
    }

    report_fields!(header);

    /// Writes the table into `--write-taskset`, never an interrupted
    /// profile's (its table is partial).
    fn store(&mut self, input: &super::plan::Input) -> Result<()> {
        if let Some(path) = input
            .params
            .write_taskset
            .as_ref()
            .filter(|_| !self.header.interrupted)
        {
            self.written_taskset = Some(super::taskset_file::write(path, &input.params, self)?);
        }
        Ok(())
    }

    /// Writes `wcet-profile.csv` (one
    /// row per p and condition), `figure6.svg` (and `llc-misses.svg` when the
    /// hardware counted misses), and, when there is a table, `wcet.toml` (the
    /// line) and `taskset.toml` (the whole file).
    fn write(&self, out: &mut OutputDir) -> Result<()> {
        out.write_columns("wcet-profile.csv", &[CONDITION_COLUMNS], rows(&self.points))?;
        out.write_svg("figure6.svg", &figure6(self))?;
        let mut misses = LineChart::new(
            format!("Worst-case LLC misses per job of `{}`", self.task),
            "cache partitions p",
            "LLC misses (max per job)",
        );
        let mut any_misses = false;
        for (i, condition) in self.conditions.iter().enumerate() {
            let series: Vec<(f64, f64)> = self
                .points
                .iter()
                .filter_map(|p| Some((f64::from(p.p), p.conditions.get(i)?.llc_misses_max? as f64)))
                .collect();
            if !series.is_empty() {
                any_misses = true;
                misses = misses.add_series(Series::new(
                    format!("LLC-load-misses, {condition}"),
                    SeriesStyle::LineWithMarkers,
                    series,
                ));
            }
        }
        if any_misses {
            out.write_svg("llc-misses.svg", &misses)?;
        }
        if let Some(line) = &self.wcet_line {
            out.write_text("wcet.toml", &format!("{line}\n"))?;
        }
        if let Some(taskset) = &self.taskset {
            out.write_text("taskset.toml", taskset)?;
        }
        Ok(())
    }

    /// The one-screen summary.
    fn summary(&self, input: &super::plan::Input, out: &OutputDir) -> Summary {
        let mut s = Summary::of_run(&self.header);
        s.fact(
            "body",
            match &self.body.program {
                Some(program) => format!(
                    "program `{}` ({} protocol), its heap's pool sized for {}; a job timed from \
                     its request to its end",
                    program.command.join(" "),
                    program.protocol.name(),
                    human_bytes(self.body.working_set_bytes)
                ),
                None => format!(
                    "{} over {}, {} memory + {} compute iterations per job",
                    self.body.kernel,
                    human_bytes(self.body.working_set_bytes),
                    self.body.memory_iterations,
                    self.body.compute_iterations
                ),
            },
        );
        s.fact(
            "run",
            format!(
                "CPU {}, {} launches × {} jobs per p and condition, N_P = {} over {} colors",
                self.header.cpus[0],
                self.header.reps,
                self.jobs_per_launch,
                self.partitions,
                self.placement.colors
            ),
        );
        let exceedance = self
            .evt
            .exceedances
            .first()
            .map_or("-".to_string(), |p| format!("{p:e}"));
        s.fact(
            "EVT",
            format!(
                "block maxima of {} jobs, GEV/Gumbel by PWM; pWCET at {exceedance} per job",
                self.evt.block_size
            ),
        );
        s.table(&[
            "p",
            "condition",
            "jobs",
            "median",
            "p99",
            "p99.9",
            "max",
            "pWCET",
            "C^p written",
        ]);
        for point in &self.points {
            for c in &point.conditions {
                let chosen = point.worst_condition == Some(c.condition);
                s.row(vec![
                    point.p.to_string(),
                    c.condition.name().to_string(),
                    c.jobs.count.to_string(),
                    Nanos(c.jobs.median).to_string(),
                    Nanos(c.jobs.p99).to_string(),
                    Nanos(c.p999_ns).to_string(),
                    Nanos(c.jobs.max).to_string(),
                    pwcet_cell(c),
                    match (chosen, point.table_ns) {
                        (true, Some(ns)) => Nanos(ns).to_string(),
                        _ => String::new(),
                    },
                ]);
            }
        }
        if let (Some(refill), Some(source)) = (&self.refill, &self.refill_source) {
            s.fact("refill", format!("{refill} ({source})"));
        }
        match (&self.wcet_line, &self.table_missing) {
            (Some(line), _) => {
                s.fact("paste", line.clone());
                s.fact(
                    "output",
                    match &self.taskset {
                        Some(_) => format!(
                            "{} (taskset.toml: `tinct analyze` takes it as is)",
                            out.path().display()
                        ),
                        // Interrupted before Δ was measured.
                        None => format!(
                            "{} (no taskset.toml: stopped before Δ was measured)",
                            out.path().display()
                        ),
                    },
                );
            }
            (None, why) => {
                s.fact("output", out.path().display().to_string());
                s.note(format!(
                    "no C^p table with --use {}: {}",
                    self.statistic,
                    why.as_deref().unwrap_or("unknown")
                ));
            }
        }
        if let Some(written) = &self.written_taskset {
            s.fact(
                "task set",
                format!(
                    "{} {} (task `{}`)",
                    written.action, written.path, written.task
                ),
            );
        }
        s.note(format!(
            "C^p written = {} of the worst condition at each p, raised to be non-increasing in p and rounded up to 1 µs",
            self.statistic
        ));
        if let Some(co) = &self.co_runners {
            s.note(format!(
                "co-runners on CPU {}: {}",
                tinct_sys::format_cpu_list(&co.cpus),
                co.reason
            ));
        }
        let unsupported: Vec<String> = self
            .points
            .iter()
            .flat_map(|p| {
                p.conditions
                    .iter()
                    .filter(|c| !c.evt.supported)
                    .map(move |c| {
                        format!("p = {} {}: {}", p.p, c.condition, c.evt.problems.join("; "))
                    })
            })
            .take(3)
            .collect();
        if !unsupported.is_empty() {
            s.note(format!(
                "pWCET not supported by the data (first {}): {}",
                unsupported.len(),
                unsupported.join(" | ")
            ));
        }
        s.note(format!("placement: {}", self.placement.note));
        s.note(self.counters.clone());
        if self.header.machine.virtualized == Some(true) {
            s.note("virtual machine: guest-physical colors need not be host cache colors, so C^p may not fall with p here");
        }
        if self.header.interrupted && input.params.write_taskset.is_some() {
            s.note("interrupted: the partial table was not written into --write-taskset");
        }
        s
    }
}

/// Where the working sets lay, and what that means for the table.
fn placement(plan: &Plan, points: &[ProfilePoint], launches: &Launches) -> Placement {
    let conditions = || points.iter().flat_map(|p| &p.conditions);
    let checked: u64 = conditions().map(|c| c.pages_checked).sum();
    let in_colors: u64 = conditions().map(|c| c.pages_in_colors).sum();
    let unchecked = launches.reports().find_map(|r| r.unchecked_reason.clone());
    let preload = &plan.preload;
    Placement {
        colored: preload.is_some(),
        preload: preload.as_ref().map(|p| p.display().to_string()),
        colors: plan.colors,
        color_source: plan.color_source.clone(),
        pages_in_colors_ratio: (checked > 0).then(|| in_colors as f64 / checked as f64),
        note: match (preload, checked, unchecked) {
            (None, _, _) => "--uncolored: the working set came from the ordinary heap; partitions were NOT enforced, \
                             every p saw the whole cache, so the table is NOT a safe C^p for p < N_P"
                .into(),
            (Some(_), 0, reason) => format!(
                "served by the shim, but the placement could not be checked: {}",
                reason.unwrap_or_else(|| "unknown reason".into())
            ),
            (Some(_), _, _) => format!(
                "served by the shim from the colors of partitions 1..=p; {in_colors} of {checked} working-set pages \
                 checked in those colors"
            ),
        },
    }
}

/// The columns of `wcet-profile.csv`: one row per p and condition, its
/// jobs' distribution (mean and σ rounded to ns), its EVT fit (the pWCET at
/// the first requested exceedance, supported or not: see evt_supported)
/// and its placement.
const CONDITION_COLUMNS: &str = "p,condition,colors,jobs,min_ns,median_ns,p99_ns,p999_ns,max_ns,\
     mean_ns,stddev_ns,evt_blocks,evt_model,evt_supported,pwcet_ns,statistic_ns,table_ns,\
     pages_checked,pages_in_colors,llc_misses_max,co_runner_sweeps";

fn rows(points: &[ProfilePoint]) -> impl Iterator<Item = Columns> + '_ {
    points.iter().flat_map(|point| {
        point.conditions.iter().map(move |c| {
            Columns::of(c)
                .with("", DurationColumns::from(&c.jobs))
                .with("p", point.p)
                .with("colors", point.colors.len())
                .with("jobs", c.jobs.count)
                .with("pwcet_ns", c.evt.pwcet.first().and_then(|p| p.ns))
                .with("table_ns", point.table_ns)
                .with("co_runner_sweeps", c.co_runners.as_ref().map(|r| r.sweeps))
        })
    })
}

/// kim2013 Figure 6: the worst observed job per p under each condition, the
/// C^p written, and the mean (ACET) alone.
fn figure6(result: &WcetProfileResult) -> LineChart {
    let ms = |ns: u64| ns as f64 / 1e6;
    let mut chart = LineChart::new(
        format!(
            "C^p of `{}` ({} over {})",
            result.task,
            result.body.kernel,
            human_bytes(result.body.working_set_bytes)
        ),
        "cache partitions p",
        "execution time per job (ms)",
    );
    for (i, condition) in result.conditions.iter().enumerate() {
        chart = chart.add_series(Series::new(
            format!("max observed, {condition}"),
            SeriesStyle::LineWithMarkers,
            result
                .points
                .iter()
                .filter_map(|p| Some((f64::from(p.p), ms(p.conditions.get(i)?.jobs.max))))
                .collect(),
        ));
    }
    let table: Vec<(f64, f64)> = result
        .points
        .iter()
        .filter_map(|p| Some((f64::from(p.p), ms(p.table_ns?))))
        .collect();
    if !table.is_empty() {
        chart = chart.add_series(Series::new(
            format!("C^p written ({}, non-increasing)", result.statistic),
            SeriesStyle::Markers,
            table,
        ));
    }
    if let Some(i) = result.conditions.iter().position(|c| c.name() == "alone") {
        chart = chart.add_series(Series::new(
            "ACET (mean), alone",
            SeriesStyle::Dashed,
            result
                .points
                .iter()
                .filter_map(|p| Some((f64::from(p.p), p.conditions.get(i)?.jobs.mean / 1e6)))
                .collect(),
        ));
    }
    chart
}

/// The pWCET cell of a condition: the value at the first exceedance, or why not.
fn pwcet_cell(c: &ConditionPoint) -> String {
    match (c.evt.supported, c.evt.pwcet.first().and_then(|p| p.ns)) {
        (true, Some(ns)) => Nanos(ns).to_string(),
        (false, Some(ns)) => format!("({}, unsupported)", Nanos(ns)),
        (_, None) if c.evt.model.is_none() => format!("- ({} block(s))", c.evt.blocks),
        (_, None) => "-".into(),
    }
}
