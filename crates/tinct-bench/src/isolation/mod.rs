//! `tinct bench isolation`: inter-core cache interference with and without
//! cache reservation, after kim2013 Section IV-C and Figure 7.
//!
//! A cache-sensitive victim runs jobs on one CPU while aggressors sweep large
//! working sets on the other CPUs. Four conditions, interleaved round by
//! round:
//! * **alone, reserved**: the victim alone, its pages from its own half of
//!   the page colors (its isolated WCET, as kim2013 profiles it);
//! * **contended, reserved**: the same, with aggressors whose pages come
//!   from the other, disjoint half of the colors (tinct-mem colored
//!   allocation, kim2013 Section III-C);
//! * **alone, unreserved** and **contended, unreserved**: everybody on the
//!   ordinary heap, competing for the whole cache.
//!
//! Each condition's per-job execution times give its distribution; the
//! inflation ratio is contended / alone (WCET, p99 and median) with and
//! without reservation. The first job of every block is a warm-up and is not
//! recorded (kim2013 Section III-B treats cache warm-up as extrinsic).
//!
//! Reservation is by page coloring, or by resctrl L3 cache allocation
//! (`--reservation resctrl`, or `auto` when resctrl offers it): then the
//! victim thread and the aggressor threads run in two control groups with
//! disjoint capacity masks, and their memory is ordinary heap (see
//! [`reservation`]).

pub mod kernels;
mod measure;
mod plan;
mod report;
pub mod reservation;

use crate::harness::{BenchOptions, Durations, Finished, Machine, Progress, RunHeader};
use crate::scheduling_and_load::RunConditions;
use crate::{Error, Result};
use reservation::{ResctrlRecord, ReservationChoice};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use tinct_core::units::Bytes;
use tinct_report::stats::ratio;

/// Parameters of `tinct bench isolation`.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// Parameters shared by every bench.
    pub common: BenchOptions,
    /// Victim working set (default: a quarter of the LLC; quick: 2MiB).
    pub victim_size: Option<Bytes>,
    /// Working set of each aggressor (default: twice the LLC; quick: 8MiB).
    pub aggressor_size: Option<Bytes>,
    /// Recorded jobs per condition and round (default 50; quick: 10).
    pub jobs: Option<u32>,
    /// Percentage of the page colors reserved for the victim (the
    /// aggressors get the rest).
    pub victim_colors: u32,
    /// SCHED_FIFO priority of the victim and the aggressors (1-99; needs
    /// root or CAP_SYS_NICE), as kim2013 ran its tasks.
    pub fifo: Option<u8>,
    /// How the reserved conditions reserve the cache.
    pub reservation: ReservationChoice,
    /// Where resctrl is mounted (a fake tree in tests).
    pub resctrl_root: PathBuf,
}

impl Default for Params {
    /// The defaults of `tinct bench isolation`.
    fn default() -> Self {
        Self {
            common: BenchOptions::default(),
            victim_size: None,
            aggressor_size: None,
            jobs: None,
            victim_colors: 50,
            fifo: None,
            reservation: ReservationChoice::Auto,
            resctrl_root: PathBuf::from(tinct_sys::resctrl::DEFAULT_MOUNT),
        }
    }
}

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

    /// The name used in tables, JSON and CSV.
    pub fn name(self) -> &'static str {
        match self {
            Condition::AloneReserved => "alone-reserved",
            Condition::ContendedReserved => "contended-reserved",
            Condition::AloneUnreserved => "alone-unreserved",
            Condition::ContendedUnreserved => "contended-unreserved",
        }
    }

    fn reserved(self) -> bool {
        matches!(
            self,
            Condition::AloneReserved | Condition::ContendedReserved
        )
    }

    fn contended(self) -> bool {
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

/// Contended over alone, for one reservation setting.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Inflation {
    /// WCET(contended) / WCET(alone).
    pub wcet: f64,
    /// p99(contended) / p99(alone).
    pub p99: f64,
    /// median(contended) / median(alone).
    pub median: f64,
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
    /// Scheduling policy and machine load during the run.
    pub run_conditions: RunConditions,
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
    /// Inflation with cache reservation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inflation_reserved: Option<Inflation>,
    /// Inflation without cache reservation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inflation_unreserved: Option<Inflation>,
    /// Caveats.
    pub notes: Vec<String>,
    /// Files written.
    pub files: Vec<String>,
}

const WARMUP_ROUNDS: u32 = 1;

/// Runs the bench, writes `isolation.json`, `isolation.csv` (every job)
/// and `isolation.svg` (per-job times, as kim2013 Figure 7), and returns
/// the report with its summary.
pub fn run(params: &Params, progress: &dyn Progress) -> Result<Finished<Report>> {
    let machine = Machine::describe();
    let llc = machine.llc().map_or(32 << 20, |c| c.size_bytes);
    let plan = plan::plan(params, llc)?;
    crate::harness::interleaved::start_rounds();
    let measured = measure::measure(&plan, progress)?;
    let mut report = assemble(&plan, &measured, machine, progress.stop_requested())?;
    report.header.record_rounds(progress.stop_requested());
    report::write(&mut report, &measured.job_times, &params.common)?;
    let mut summary = report::summary(&report);
    summary.interruption(&report.header, &params.common.out_dir("isolation"));
    Ok(Finished {
        summary,
        result: report,
    })
}

/// Each condition's distributions and the inflations, with the notes; a
/// run `stopped` before its first round ended has neither (whole rounds
/// are kept: every condition has jobs or none has).
fn assemble(
    plan: &plan::Plan,
    measured: &measure::Measured,
    machine: Machine,
    stopped: bool,
) -> Result<Report> {
    let mut conditions = Vec::with_capacity(Condition::ALL.len());
    let no_round = stopped && measured.job_times.iter().all(Vec::is_empty);
    for (times, &condition) in measured.job_times.iter().zip(&Condition::ALL) {
        if no_round {
            break;
        }
        let cpu: Vec<u64> = times.iter().map(|t| t.cpu_ns).collect();
        let wall: Vec<u64> = times.iter().map(|t| t.wall_ns).collect();
        let (Some(jobs), Some(jobs_wall)) = (Durations::of(&cpu), Durations::of(&wall)) else {
            return Err(Error::Measurement(format!(
                "no jobs for {}",
                condition.name()
            )));
        };
        conditions.push(ConditionResult {
            condition,
            reserved: condition.reserved(),
            contended: condition.contended(),
            jobs,
            jobs_wall,
        });
    }
    let inflation = |contended: usize, alone: usize| {
        let (c, a) = (
            &conditions.get(contended)?.jobs,
            &conditions.get(alone)?.jobs,
        );
        Some(Inflation {
            wcet: ratio(c.max, a.max),
            p99: ratio(c.p99, a.p99),
            median: ratio(c.median, a.median),
        })
    };
    let (inflation_reserved, inflation_unreserved) = (inflation(1, 0), inflation(3, 2));
    let notes = notes(plan, measured, &machine);
    Ok(Report {
        header: RunHeader::of_run(
            "isolation",
            plan.run.clone(),
            machine,
            measured.counters.clone(),
        ),
        run_conditions: measured.run_conditions.clone(),
        parameters: Parameters {
            victim_cpu: plan.run.cpus[0],
            aggressor_cpus: plan.aggressor_cpus().to_vec(),
            victim_bytes: plan.victim_pages as u64 * plan.page_bytes,
            aggressor_bytes: plan.aggressor_pages as u64 * plan.page_bytes,
            jobs_per_round: plan.jobs_per_round,
            colors: plan.colors,
            victim_colors: plan.victim_colors,
            warmup_rounds: WARMUP_ROUNDS,
        },
        reservation: if plan.by_resctrl() {
            "resctrl"
        } else {
            "page-coloring"
        }
        .into(),
        reservation_reason: measured.reservation_reason.clone(),
        resctrl: resctrl_status(measured),
        resctrl_groups: measured.resctrl_groups.clone(),
        frames_unreadable: measured.frames_unreadable.clone(),
        moved_pages: measured.moved_pages,
        conditions,
        inflation_reserved,
        inflation_unreserved,
        notes,
        files: Vec::new(),
    })
}

/// What resctrl offers here, in words.
fn resctrl_status(measured: &measure::Measured) -> String {
    let reason = &measured.reservation_reason;
    match tinct_sys::resctrl::ResctrlStatus::read(&tinct_sys::SysRoot::live()) {
        _ if measured.resctrl_groups.is_some() => reason.clone(),
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

fn notes(plan: &plan::Plan, measured: &measure::Measured, machine: &Machine) -> Vec<String> {
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
