//! The result of `tinct bench wcet-profile`: its types, the result
//! assembled from the launches (the non-increasing table, the placement,
//! the `wcet` line and the task-set file), its files and its summary.

use super::condition::Condition;
use super::measure::{Launches, Measured};
use super::plan::Plan;
use super::table;
use crate::harness::summary::nanos_cells;
use crate::harness::{Columns, DurationColumns, Durations, LineChart, OutputDir, RunHeader};
use crate::harness::{Series, SeriesStyle, Summary, report_fields};
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
    /// The program whose jobs are profiled; `None` for one of tinct's kernels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program: Option<ProfiledProgram>,
}

/// A program body: started once per launch under the shim, asked for its jobs.
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
    /// Pages of their buffers checked through pagemap (0 when uncoloured).
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
    /// The largest statistic over the conditions, ns (`None` if one has none).
    pub statistic_ns: Option<u64>,
    /// The condition it came from.
    pub worst_condition: Option<Condition>,
    /// The table value: the largest statistic over this and every larger p,
    /// rounded up to 1 µs, so the table never increases with p (the format
    /// requires it; noise can break it). `None` without a statistic.
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
    /// Of the pages checked over all launches, the share in the right colors.
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
    /// Δ written to the task set (absent when the run stopped before its
    /// first round ended: nothing written, Δ not measured).
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
    fn assemble(pinned: super::plan::PinnedPlan, measured: Measured, _: bool) -> Result<Self> {
        // The measuring thread stays on the task's CPU until the report is
        // assembled (Δ is measured there).
        let super::plan::PinnedPlan { _pin, plan, .. } = pinned;
        let (launches, mut points, refill) = (measured.launches, measured.points, measured.refill);
        // A run stopped before every (p, condition) had one launch has no
        // point (and no Δ): the header, body, plan and placement, no table.
        let stopped_early = launches.is_empty();
        let table_missing = match stopped_early {
            true => Some("stopped before the first round finished: nothing measured".into()),
            false => table::make_non_increasing(&mut points),
        };
        let placement = placement(&plan, &points, &launches);
        let wcet_line = table_missing.is_none().then(|| table::wcet_line(&points));
        let taskset = match (&wcet_line, &refill) {
            (Some(_), Some(refill)) => Some(task_set(&plan, &points, &placement.note, refill)?),
            _ => None,
        };
        let counters = match launches.reports().find_map(|r| r.counters_note.clone()) {
            _ if stopped_early => "not counted: stopped before the first round".into(),
            Some(note) => note,
            None => "LLC misses counted per job (hardware counter LLC-load-misses)".into(),
        };
        let mut header = plan.header;
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
        let path = input.params.write_taskset.as_ref();
        if let Some(path) = path.filter(|_| !self.header.interrupted) {
            self.written_taskset = Some(super::taskset_file::write(path, &input.params, self)?);
        }
        Ok(())
    }

    /// Writes `wcet-profile.csv` (one row per p and condition),
    /// `figure6.svg` (and `llc-misses.svg` when the hardware counted
    /// misses), and, when there is a table, `wcet.toml` (the line) and
    /// `taskset.toml` (the whole file).
    fn write(&self, out: &mut OutputDir) -> Result<()> {
        out.write_columns("wcet-profile.csv", &[CONDITION_COLUMNS], rows(&self.points))?;
        out.write_svg("figure6.svg", &self.figure6())?;
        let misses = self.per_condition("LLC-load-misses", |c| Some(c.llc_misses_max? as f64));
        if misses.iter().any(|series| !series.points.is_empty()) {
            let title = format!("Worst-case LLC misses per job of `{}`", self.task);
            let chart = LineChart::new(title, "cache partitions p", "LLC misses (max per job)");
            let drawn = misses.into_iter().filter(|line| !line.points.is_empty());
            out.write_svg("llc-misses.svg", &drawn.fold(chart, LineChart::add_series))?;
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
        let (body, ws) = (&self.body, human_bytes(self.body.working_set_bytes));
        let body = match &body.program {
            Some(program) => format!(
                "program `{}` ({} protocol), its heap's pool sized for {ws}; a job timed from its \
                 request to its end",
                program.command.join(" "),
                program.protocol.name(),
            ),
            None => format!(
                "{} over {ws}, {} memory + {} compute iterations per job",
                body.kernel, body.memory_iterations, body.compute_iterations
            ),
        };
        s.fact("body", body);
        let (cpu, reps, jobs) = (self.header.cpus[0], self.header.reps, self.jobs_per_launch);
        let (partitions, colors) = (self.partitions, self.placement.colors);
        let run = format!(
            "CPU {cpu}, {reps} launches × {jobs} jobs per p and condition, N_P = {partitions} over \
             {colors} colors"
        );
        s.fact("run", run);
        let (block, first) = (self.evt.block_size, self.evt.exceedances.first());
        let exceedance = first.map_or("-".into(), |p| format!("{p:e}"));
        let evt = format!(
            "block maxima of {block} jobs, GEV/Gumbel by PWM; pWCET at {exceedance} per job"
        );
        s.fact("EVT", evt);
        s.table_of("p,condition,jobs,median,p99,p99.9,max,pWCET,C^p written");
        for point in &self.points {
            for c in &point.conditions {
                let chosen = point.worst_condition == Some(c.condition);
                let written = point.table_ns.filter(|_| chosen);
                let (p, condition, jobs) = (point.p, c.condition, &c.jobs);
                let mut row = vec![p.to_string(), condition.to_string(), jobs.count.to_string()];
                row.extend(nanos_cells([jobs.median, jobs.p99, c.p999_ns, jobs.max]));
                row.push(pwcet_cell(c));
                row.push(written.map(|ns| Nanos(ns).to_string()).unwrap_or_default());
                s.row(row);
            }
        }
        if let (Some(refill), Some(source)) = (&self.refill, &self.refill_source) {
            s.fact("refill", format!("{refill} ({source})"));
        }
        let dir = out.path().display();
        if let Some(line) = &self.wcet_line {
            s.fact("paste", line.clone());
            let output = match &self.taskset {
                Some(_) => format!("{dir} (taskset.toml: `tinct analyze` takes it as is)"),
                None => format!("{dir} (no taskset.toml: stopped before Δ was measured)"),
            };
            s.fact("output", output);
        } else {
            let (statistic, why) = (&self.statistic, self.table_missing.as_deref());
            let missing = format!(
                "no C^p table with --use {statistic}: {}",
                why.unwrap_or("unknown")
            );
            s.fact("output", dir.to_string());
            s.note(missing);
        }
        if let Some(WrittenTaskSet { path, action, task }) = &self.written_taskset {
            s.fact("task set", format!("{action} {path} (task `{task}`)"));
        }
        s.note(format!(
            "C^p written = {} of the worst condition at each p, raised to be non-increasing in p \
             and rounded up to 1 µs",
            self.statistic
        ));
        if let Some(co) = &self.co_runners {
            let cpus = tinct_sys::format_cpu_list(&co.cpus);
            s.note(format!("co-runners on CPU {cpus}: {}", co.reason));
        }
        let unsupported: Vec<String> = (self.points.iter())
            .flat_map(|p| p.conditions.iter().map(move |c| (p.p, c)))
            .filter(|(_, c)| !c.evt.supported)
            .map(|(p, c)| format!("p = {p} {}: {}", c.condition, c.evt.problems.join("; ")))
            .take(3)
            .collect();
        if !unsupported.is_empty() {
            let (n, all) = (unsupported.len(), unsupported.join(" | "));
            let unsupported = format!("pWCET not supported by the data (first {n}): {all}");
            s.note(unsupported);
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

impl WcetProfileResult {
    /// kim2013 Figure 6: the worst observed job per p under each condition,
    /// the C^p written, and the mean (ACET) alone.
    fn figure6(&self) -> LineChart {
        let ms = |ns: u64| ns as f64 / 1e6;
        let ws = human_bytes(self.body.working_set_bytes);
        let title = format!("C^p of `{}` ({} over {ws})", self.task, self.body.kernel);
        let chart = LineChart::new(title, "cache partitions p", "execution time per job (ms)");
        let mut chart = (self.per_condition("max observed", |c| Some(ms(c.jobs.max))))
            .into_iter()
            .fold(chart, LineChart::add_series);
        let table = over_p(&self.points, |p| Some(ms(p.table_ns?)));
        if !table.is_empty() {
            let name = format!("C^p written ({}, non-increasing)", self.statistic);
            chart = chart.add_series(Series::new(name, SeriesStyle::Markers, table));
        }
        if let Some(i) = self.conditions.iter().position(|c| c.name() == "alone") {
            let acet = over_p(&self.points, |p| Some(p.conditions.get(i)?.jobs.mean / 1e6));
            chart = chart.add_series(Series::new("ACET (mean), alone", SeriesStyle::Dashed, acet));
        }
        chart
    }

    /// One series per condition, `{what}, {condition}`: `y` of its jobs at each p that has it.
    fn per_condition(&self, what: &str, y: impl Fn(&ConditionPoint) -> Option<f64>) -> Vec<Series> {
        let series = |(i, condition)| {
            let points = over_p(&self.points, |p| y(p.conditions.get(i)?));
            let name = format!("{what}, {condition}");
            Series::new(name, SeriesStyle::LineWithMarkers, points)
        };
        self.conditions.iter().enumerate().map(series).collect()
    }
}

/// The points (p, `y`) of the profiled p that have a `y`.
fn over_p(points: &[ProfilePoint], y: impl Fn(&ProfilePoint) -> Option<f64>) -> Vec<(f64, f64)> {
    let point = |p: &ProfilePoint| Some((f64::from(p.p), y(p)?));
    points.iter().filter_map(point).collect()
}

/// The complete task-set file of the table with Δ, under a comment saying
/// how it was measured.
fn task_set(
    plan: &Plan,
    points: &[ProfilePoint],
    note: &str,
    refill: &(Nanos, String),
) -> Result<String> {
    let (refill, refill_source) = refill;
    let written = table::task_set(&table::TaskSetInput {
        name: &plan.name,
        body: &plan.body,
        points,
        partitions: plan.partitions,
        cores: plan.header.machine.online_cpus.len().max(1) as u32,
        period: plan.period.unwrap_or_else(|| table::default_period(points)),
        refill: *refill,
    })
    .map_err(|e| Error::Measurement(format!("the written task set does not validate: {e}")))?;
    let conditions: Vec<&str> = plan.conditions.iter().map(|c| c.name()).collect();
    let (statistic, conditions) = (&plan.statistic, conditions.join(", "));
    let comment = [
        format!(
            "C^p ({statistic} over {conditions}) measured by `tinct bench wcet-profile` on {}",
            plan.header.machine.one_line()
        ),
        format!("placement: {note}"),
        format!("refill: {refill_source}"),
    ];
    Ok(tinct_core::format::to_toml(&written, &comment))
}

/// Where the working sets lay, and what that means for the table.
fn placement(plan: &Plan, points: &[ProfilePoint], launches: &Launches) -> Placement {
    let conditions = || points.iter().flat_map(|p| &p.conditions);
    let checked: u64 = conditions().map(|c| c.pages_checked).sum();
    let in_colors: u64 = conditions().map(|c| c.pages_in_colors).sum();
    let unchecked = launches.reports().find_map(|r| r.unchecked_reason.clone());
    let note = match (&plan.preload, checked) {
        (None, _) => "--uncolored: the working set came from the ordinary heap; partitions were \
                      NOT enforced, every p saw the whole cache, so the table is NOT a safe C^p \
                      for p < N_P"
            .into(),
        (Some(_), 0) => format!(
            "served by the shim, but the placement could not be checked: {}",
            unchecked.as_deref().unwrap_or("unknown reason")
        ),
        (Some(_), _) => format!(
            "served by the shim from the colors of partitions 1..=p; {in_colors} of {checked} \
             working-set pages checked in those colors"
        ),
    };
    Placement {
        colored: plan.preload.is_some(),
        preload: plan.preload.as_ref().map(|p| p.display().to_string()),
        colors: plan.colors,
        color_source: plan.color_source.clone(),
        pages_in_colors_ratio: (checked > 0).then(|| in_colors as f64 / checked as f64),
        note,
    }
}

/// The columns of `wcet-profile.csv`, one row per p and condition: its jobs,
/// EVT fit (pWCET at the first exceedance, supported or not) and placement.
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

/// The pWCET cell of a condition: the value at the first exceedance, or why not.
fn pwcet_cell(c: &ConditionPoint) -> String {
    match (c.evt.supported, c.evt.pwcet.first().and_then(|p| p.ns)) {
        (true, Some(ns)) => Nanos(ns).to_string(),
        (false, Some(ns)) => format!("({}, unsupported)", Nanos(ns)),
        (_, None) if c.evt.model.is_none() => format!("- ({} block(s))", c.evt.blocks),
        (_, None) => "-".into(),
    }
}
