//! The result of `tinct bench isolation`: its types, the report assembled
//! from what was measured (distributions, inflations, notes), its files and
//! its summary.

use super::WARMUP_ROUNDS;
use super::measure::{JobTime, Measured};
use super::plan::Plan;
use super::reservation::{GroupRecord, ResctrlRecord};
use crate::harness::summary::ms;
use crate::harness::{
    Columns, Durations, LineChart, Machine, OutputDir, Ratio, RunHeader, Series, SeriesStyle,
    Summary, report_fields,
};
use crate::{Error, Result};
use serde::{Deserialize, Serialize};
use tinct_base::units::human_bytes;

/// One of the four conditions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Condition {
    /// Victim alone, reserved colors.
    AloneReserved,
    /// Victim and aggressors on disjoint colors.
    ContendedReserved,
    /// Victim alone on the heap.
    AloneUnreserved,
    /// Victim and aggressors on the heap.
    ContendedUnreserved,
}

impl Condition {
    /// Every condition, in output order.
    pub const ALL: [Condition; 4] = [
        Condition::AloneReserved,
        Condition::ContendedReserved,
        Condition::AloneUnreserved,
        Condition::ContendedUnreserved,
    ];

    /// The name used in tables, JSON and CSV: its serde name.
    pub fn name(self) -> &'static str {
        crate::choice::serde_name(&self)
    }

    /// True for the two reserved conditions.
    pub(super) fn reserved(self) -> bool {
        matches!(
            self,
            Condition::AloneReserved | Condition::ContendedReserved
        )
    }

    /// True for the two conditions with aggressors.
    pub(super) fn contended(self) -> bool {
        matches!(
            self,
            Condition::ContendedReserved | Condition::ContendedUnreserved
        )
    }
}

/// The victim's per-job execution times under one condition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConditionResult {
    /// The condition.
    pub condition: Condition,
    /// The cache was reserved (colors or resctrl masks) for the victim.
    pub reserved: bool,
    /// Aggressors running.
    pub contended: bool,
    /// Distribution of the recorded jobs' execution times: CPU time the
    /// victim thread consumed per job (time preempted by other processes is
    /// not in it).
    pub jobs: Durations,
    /// Distribution of the recorded jobs' wall-clock times (includes any
    /// time the victim was preempted).
    pub jobs_wall: Durations,
}

impl ConditionResult {
    /// The distributions of the jobs `times` recorded under `condition`.
    fn of(condition: Condition, times: &[JobTime]) -> Result<ConditionResult> {
        let of = |ns: fn(&JobTime) -> u64| Durations::of(&times.iter().map(ns).collect::<Vec<_>>());
        let (Some(jobs), Some(jobs_wall)) = (of(|t| t.cpu_ns), of(|t| t.wall_ns)) else {
            return Err(Error::Measurement(format!(
                "no jobs for {}",
                condition.name()
            )));
        };
        Ok(ConditionResult {
            condition,
            reserved: condition.reserved(),
            contended: condition.contended(),
            jobs,
            jobs_wall,
        })
    }
}

/// The parameters as run (written to `isolation.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Parameters {
    /// CPU of the victim.
    pub victim_cpu: u32,
    /// CPUs of the aggressors (one aggressor each).
    pub aggressor_cpus: Vec<u32>,
    /// Victim working set in bytes.
    pub victim_bytes: u64,
    /// Each aggressor's working set in bytes.
    pub aggressor_bytes: u64,
    /// Recorded jobs per condition and round.
    pub jobs_per_round: u32,
    /// Page colors of the machine's LLC.
    pub colors: u32,
    /// The colours' bits and where they came from (`--color-bits`,
    /// `TINCT_COLOR_BITS`, the machine file, the derived rule), or why
    /// there are none (resctrl reserves ways and needs none).
    pub color_source: String,
    /// Colors reserved for the victim (`0..victim_colors`); the aggressors
    /// have the rest (used when the reservation is by page coloring).
    pub victim_colors: u32,
    /// Unrecorded warm-up rounds.
    pub warmup_rounds: u32,
}

/// The result of `tinct bench isolation` (written as `isolation.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Bench, options, machine (the harness's common header).
    #[serde(flatten)]
    pub header: RunHeader,
    /// Parameters.
    pub parameters: Parameters,
    /// How the cache was reserved (`page-coloring` or `resctrl`).
    pub reservation: String,
    /// Why this mechanism was chosen.
    pub reservation_reason: String,
    /// What resctrl offers here.
    pub resctrl: String,
    /// The resctrl groups, masks and monitoring readings, if resctrl
    /// reserved the cache.
    pub resctrl_groups: Option<ResctrlRecord>,
    /// Why physical placement is unknown (frames unreadable), if so.
    pub frames_unreadable: Option<String>,
    /// Colored pages whose frame changed during the run (`null` if unknown).
    pub moved_pages: Option<usize>,
    /// One entry per condition.
    pub conditions: Vec<ConditionResult>,
    /// Contended over alone with cache reservation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inflation_reserved: Option<Ratio>,
    /// Contended over alone without cache reservation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inflation_unreserved: Option<Ratio>,
    /// Caveats.
    pub notes: Vec<String>,
    /// Files written.
    pub files: Vec<String>,
    /// Every recorded job per condition, for the CSV (not in the JSON).
    #[serde(skip)]
    job_times: Vec<Vec<JobTime>>,
}

impl crate::harness::Bench for Report {
    const NAME: &'static str = "isolation";
    type Plan = Plan;

    /// Each condition's distributions and the inflations, with the notes; a
    /// run `stopped` before its first round ended has neither (whole rounds
    /// are kept: every condition has jobs or none has).
    fn assemble(plan: Plan, measured: Measured, stopped: bool) -> Result<Report> {
        let no_round = stopped && measured.job_times.iter().all(Vec::is_empty);
        let conditions = Condition::ALL
            .into_iter()
            .zip(&measured.job_times)
            .filter(|_| !no_round)
            .map(|(condition, times)| ConditionResult::of(condition, times))
            .collect::<Result<Vec<_>>>()?;
        let inflation = |contended: usize, alone: usize| {
            Some(Ratio::of(
                &conditions.get(contended)?.jobs,
                &conditions.get(alone)?.jobs,
            ))
        };
        let machine = plan.machine.clone();
        Ok(Report {
            inflation_reserved: inflation(1, 0),
            inflation_unreserved: inflation(3, 2),
            notes: notes(&plan, &measured, &machine),
            header: RunHeader::of_run("isolation", plan.run.clone(), machine, measured.counters)
                .with_conditions(measured.run_conditions),
            parameters: Parameters {
                victim_cpu: plan.run.cpus[0],
                aggressor_cpus: plan.aggressor_cpus().to_vec(),
                victim_bytes: plan.victim_pages as u64 * plan.page_bytes,
                aggressor_bytes: plan.aggressor_pages as u64 * plan.page_bytes,
                jobs_per_round: plan.jobs_per_round,
                colors: plan.colors,
                color_source: plan.color_source.clone(),
                victim_colors: plan.victim_colors,
                warmup_rounds: WARMUP_ROUNDS,
            },
            reservation: if plan.by_resctrl() {
                "resctrl"
            } else {
                "page-coloring"
            }
            .into(),
            resctrl: resctrl_status(
                &measured.reservation_reason,
                measured.resctrl_groups.is_some(),
            ),
            reservation_reason: measured.reservation_reason,
            resctrl_groups: measured.resctrl_groups,
            frames_unreadable: measured.frames_unreadable,
            moved_pages: measured.moved_pages,
            conditions,
            files: Vec::new(),
            job_times: measured.job_times,
        })
    }

    report_fields!(header, files);

    /// Writes `isolation.csv` (every job) and `isolation.svg`.
    fn write(&self, out: &mut OutputDir) -> Result<()> {
        let jobs = || Condition::ALL.into_iter().zip(&self.job_times);
        let rows = jobs().flat_map(|(condition, times)| {
            times
                .iter()
                .enumerate()
                .map(move |(job, t)| Columns::of(t).with("condition", condition).with("job", job))
        });
        out.write_columns("isolation.csv", &["condition,job,cpu_ns,wall_ns"], rows)?;
        let mut chart = LineChart::new(
            "Victim execution time (CPU) per job (kim2013 Figure 7)",
            "job",
            "execution time (ms)",
        );
        chart.y_from_zero = false;
        for (condition, times) in jobs() {
            let style = match condition.contended() {
                true => SeriesStyle::Line,
                false => SeriesStyle::Dashed,
            };
            let points = times.iter().enumerate();
            let points = points.map(|(i, t)| (i as f64, t.cpu_ns as f64 / 1e6));
            chart
                .series
                .push(Series::new(condition.name(), style, points.collect()));
        }
        out.write_svg("isolation.svg", &chart)?;
        Ok(())
    }

    /// The one-screen summary.
    fn summary(&self, _: &super::Params, _: &OutputDir) -> Summary {
        let p = &self.parameters;
        let mut s = Summary::titled("tinct bench isolation (kim2013 Figure 7)", &self.header);
        let (victim_share, aggressor_share) = cache_shares(self);
        s.fact(
            "victim",
            format!(
                "CPU {}, {} pointer chase, {victim_share}",
                p.victim_cpu,
                human_bytes(p.victim_bytes),
            ),
        );
        s.fact(
            "aggressors",
            format!(
                "CPUs {}, {} each, {aggressor_share}",
                tinct_sys::format_cpu_list(&p.aggressor_cpus),
                human_bytes(p.aggressor_bytes),
            ),
        );
        s.fact(
            "reservation",
            format!("{}: {}", self.reservation, self.reservation_reason),
        );
        s.fact(
            "jobs",
            format!(
                "{} rounds x {} jobs per condition (+{} warm-up round), interleaved",
                self.header.reps, p.jobs_per_round, p.warmup_rounds
            ),
        );
        s.fact(
            "execution time",
            "CPU time of the victim thread per job (wall-clock times in the last columns)",
        );
        s.fact("resctrl", self.resctrl.clone());
        for (name, inflation) in [
            ("inflation, reserved", &self.inflation_reserved),
            ("inflation, unreserved", &self.inflation_unreserved),
        ] {
            if let Some(inflation) = inflation {
                s.fact(name, inflation.describe());
            }
        }
        s.table_of(
            "condition,jobs,min ms,median ms,p99 ms,max ms,stddev ms,wall median ms,wall max ms",
        );
        for c in &self.conditions {
            let (cpu, wall) = (&c.jobs, &c.jobs_wall);
            let mut row = vec![c.condition.name().into(), cpu.count.to_string()];
            let stddev = cpu.stddev.round() as u64;
            row.extend(
                [
                    cpu.min,
                    cpu.median,
                    cpu.p99,
                    cpu.max,
                    stddev,
                    wall.median,
                    wall.max,
                ]
                .map(ms),
            );
            s.row(row);
        }
        s.notes.extend(self.notes.iter().cloned());
        s
    }
}

/// What resctrl offers here, in words.
fn resctrl_status(reason: &str, reserved_by_resctrl: bool) -> String {
    match tinct_sys::resctrl::ResctrlStatus::read(&tinct_sys::SysRoot::live()) {
        _ if reserved_by_resctrl => reason.to_string(),
        Ok(status) if status.offers_cache_allocation() => {
            format!("resctrl offers cache allocation here; this run reserved by {reason}")
        }
        Ok(status) if status.cpu_has_cache_allocation() => {
            "the CPU has cache allocation but resctrl is not mounted; reservation by page coloring"
                .to_string()
        }
        Ok(_) => "no resctrl cache allocation here; reservation by page coloring".to_string(),
        Err(e) => format!("resctrl status unreadable ({e}); reservation by page coloring"),
    }
}

fn notes(plan: &Plan, measured: &Measured, machine: &Machine) -> Vec<String> {
    let mut notes = measured.run_conditions.notes(machine.online_cpus.len());
    if machine.virtualized == Some(true) && !plan.by_resctrl() {
        notes.push(
            "virtual machine: guest-physical page colors are probably not host cache colors, so \
             reservation by coloring cannot be shown to isolate here; run on bare metal to see \
             the effect of kim2013 Figure 7"
                .to_string(),
        );
    }
    if let Some(why) = &measured.frames_unreadable {
        notes.push(format!(
            "frame numbers unreadable ({why}): pages were filed by virtual address, the \
             'reserved' conditions are NOT reserved"
        ));
    }
    if let Some(moved) = measured.moved_pages.filter(|&m| m > 0) {
        notes.push(format!(
            "{moved} colored pages changed frames during the run (compaction or THP): their \
             colors may no longer be the reserved ones"
        ));
    }
    notes
}

/// The victim's and the aggressors' share of the cache, in words.
fn cache_shares(report: &Report) -> (String, String) {
    let p = &report.parameters;
    match &report.resctrl_groups {
        Some(groups) => {
            let group = |g: &GroupRecord| format!("resctrl group {}, L3 mask {}", g.name, g.mask);
            (group(&groups.victim), group(&groups.aggressors))
        }
        None => (
            format!("colors 0..{} of {}", p.victim_colors, p.colors),
            format!("colors {}..{}", p.victim_colors, p.colors),
        ),
    }
}
