//! The result of `tinct bench overheads` (`overheads.json`): its types, the
//! calibration file it stores into, the files and the summary (whose facts
//! `calibrate` shows too).

use super::measure::STOPPED_DURING;
use crate::crpd::SwitchCost;
use crate::harness::{Durations, OutputDir, RunHeader, Summary, report_fields, write_atomically};
use crate::{Error, InputError, Result};
use serde::{Deserialize, Serialize};
use std::path::Path;
use tinct_core::calibration::Overheads;
use tinct_core::saved_calibration::parse_file;
use tinct_core::units::Nanos;

/// The release-latency measurement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReleaseLatency {
    /// One thread on each of these CPUs.
    pub cpus: Vec<u32>,
    /// Their period, ns.
    pub period_ns: u64,
    /// Jobs whose thread slept until the release (what is stored).
    pub woke: Durations,
    /// Every job, backlogged ones after a stall included.
    pub all: Durations,
    /// True if a stop (Ctrl-C) ended the measurement early: the jobs
    /// released until then.
    #[serde(default)]
    pub stopped: bool,
}

/// What the busy loop of the tick measurement saw.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BusyLoop {
    /// The CPU.
    pub cpu: u32,
    /// SCHED_FIFO priority (`None`: SCHED_OTHER, other threads' time counts too).
    pub fifo: Option<u8>,
    /// Busy time, ns.
    pub busy_ns: u64,
    /// The loop's fastest iteration, ns.
    pub loop_ns: u64,
    /// Reads further apart than this were an interruption, ns.
    pub threshold_ns: u64,
    /// Every interruption's lost time (`None`: there was none).
    pub interruptions: Option<Durations>,
    /// Share of the busy time lost to interruptions.
    pub lost_fraction: f64,
    /// The tick's period, when found.
    pub tick_period_ns: Option<u64>,
    /// The tick's interruptions.
    pub tick: Option<Durations>,
    /// True if the recording stopped early (too many interruptions).
    pub truncated: bool,
}

/// Everything the overhead measurements found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    /// What the calibration stores.
    pub overheads: Overheads,
    /// The context-switch cost, best and worst case.
    pub context_switch: Option<SwitchCost>,
    /// The release latency.
    pub release_latency: Option<ReleaseLatency>,
    /// The busy loop behind the tick.
    pub busy_loop: Option<BusyLoop>,
}

/// Everything `tinct bench overheads` measured (`overheads.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OverheadsResult {
    /// Bench, options, machine.
    #[serde(flatten)]
    pub header: RunHeader,
    /// The measurements.
    #[serde(flatten)]
    pub measured: Measured,
    /// The calibration file the overheads were stored in.
    pub stored_in: Option<String>,
}

/// Replaces the `overheads` object of the calibration file at `path` (which
/// must be one: `refill` is checked), keeping everything else, atomically.
/// Returns the path as shown.
pub fn store(path: &Path, overheads: &Overheads) -> Result<String> {
    let shown = path.display().to_string();
    let mut value = read_calibration(path)?;
    let object = value.as_object_mut().ok_or_else(|| {
        Error::Input(InputError::new(
            shown.to_string(),
            "",
            "a JSON object",
            "another value",
        ))
    })?;
    let written = serde_json::to_value(overheads).map_err(|source| Error::Json {
        what: "overheads".into(),
        source,
    })?;
    object.insert("overheads".into(), written);
    let text = serde_json::to_string_pretty(&value).map_err(|source| Error::Json {
        what: "calibration".into(),
        source,
    })?;
    write_atomically(path, format!("{text}\n").as_bytes()).map_err(|source| Error::Write {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(shown)
}

/// The calibration file at `path` as JSON, checked to be one (its
/// `refill` reads as tinct-core's calibration type).
pub(super) fn read_calibration(path: &Path) -> Result<serde_json::Value> {
    let text =
        tinct_core::format::read_text(path, tinct_core::format::MAX_FILE_BYTES, "calibrate.json")?;
    let refused = |found: String| {
        Error::Input(InputError::new(
            path.display().to_string(),
            "",
            "a calibrate.json written by `tinct bench calibrate`",
            found,
        ))
    };
    parse_file(path, &text).map_err(refused)?;
    serde_json::from_str(&text).map_err(|e| refused(e.to_string()))
}

#[derive(Serialize)]
struct Row<'a> {
    overhead: &'a str,
    max_ns: u64,
    p99_ns: u64,
    median_ns: u64,
    min_ns: u64,
    samples: u64,
    measured_by: &'a str,
}

/// The stored records as CSV rows.
fn rows(o: &Overheads) -> Vec<Row<'_>> {
    [
        ("context_switch", o.context_switch.as_ref()),
        ("release_latency", o.release_latency.as_ref()),
        ("tick", o.tick.as_ref().map(|t| &t.cost)),
    ]
    .into_iter()
    .filter_map(|(name, r)| {
        r.map(|r| Row {
            overhead: name,
            max_ns: r.max_ns,
            p99_ns: r.p99_ns,
            median_ns: r.median_ns,
            min_ns: r.min_ns,
            samples: r.samples,
            measured_by: &r.measured_by,
        })
    })
    .collect()
}

impl crate::harness::Bench for OverheadsResult {
    const NAME: &'static str = "overheads";
    type Plan = super::plan::Plan;

    fn assemble(plan: super::plan::Plan, measured: Measured, _stopped: bool) -> Result<Self> {
        Ok(OverheadsResult {
            header: plan.header,
            measured,
            stored_in: None,
        })
    }

    /// Stores the overheads in the calibration file (`params.calibration`),
    /// never those of a run stopped early: the calibration keeps a complete
    /// run's.
    fn store(&mut self, params: &super::Params) -> Result<()> {
        if let Some(path) = params
            .calibration
            .as_ref()
            .filter(|_| !self.header.interrupted)
        {
            self.stored_in = Some(store(path, &self.measured.overheads)?);
        }
        Ok(())
    }

    /// Writes `overheads.csv`.
    fn write(&self, out: &mut OutputDir) -> Result<()> {
        out.write_csv("overheads.csv", &rows(&self.measured.overheads))?;
        Ok(())
    }

    report_fields!(header);

    /// The one-screen summary.
    fn summary(&self, params: &super::Params, out: &OutputDir) -> Summary {
        let mut s = Summary::of_run(&self.header);
        summary_rows(&mut s, &self.measured.overheads);
        if let Some(busy) = &self.measured.busy_loop {
            s.fact(
                "busy loop",
                format!(
                    "CPU {}: {:.3} % of {} lost to {} interruptions (largest {})",
                    busy.cpu,
                    busy.lost_fraction * 100.0,
                    Nanos(busy.busy_ns),
                    busy.interruptions.map_or(0, |d| d.count),
                    Nanos(busy.interruptions.map_or(0, |d| d.max))
                ),
            );
        }
        s.fact("output", out.path().display().to_string());
        match &self.stored_in {
            Some(path) => s.fact("stored in", path.clone()),
            None => s.fact("stored in", "nowhere (no calibration file given)"),
        };
        s.note("stored value = the largest observed (a bound covers the worst case seen); p99 and median show what is typical");
        if self.header.machine.virtualized == Some(true) {
            s.note("virtual machine: the maxima include host stalls (the hypervisor taking the vCPU away), which no guest setting removes");
        }
        if self.header.interrupted && params.calibration.is_some() {
            s.note(
                "interrupted: the overheads measured were NOT stored in the calibration file (only a complete run is)",
            );
        }
        s
    }
}

/// The overheads as summary facts, one line each (`calibrate` prints them
/// beside its own table).
pub fn summary_facts(s: &mut Summary, o: &Overheads) {
    for row in rows(o) {
        s.fact(
            row.overhead,
            format!(
                "{} stored (max), p99 {}, median {}, {} samples",
                Nanos(row.max_ns),
                Nanos(row.p99_ns),
                Nanos(row.median_ns),
                row.samples
            ),
        );
    }
    summary_notes(s, o);
}

/// The overheads as a summary table (`overheads` prints it).
fn summary_rows(s: &mut Summary, o: &Overheads) {
    s.table(&["overhead", "stored (max)", "p99", "median", "samples"]);
    for row in rows(o) {
        s.row(vec![
            row.overhead.to_string(),
            Nanos(row.max_ns).to_string(),
            Nanos(row.p99_ns).to_string(),
            Nanos(row.median_ns).to_string(),
            row.samples.to_string(),
        ]);
    }
    summary_notes(s, o);
}

pub(super) fn summary_notes(s: &mut Summary, o: &Overheads) {
    if let Some(record) = &o.release_latency
        && record.measured_by.contains(STOPPED_DURING)
    {
        s.note(format!(
            "release_latency cut short by the Ctrl-C: its figures are those of the {} jobs released until then",
            record.samples
        ));
    }
    for (name, why) in &o.unmeasured {
        s.note(format!(
            "{name} not measured (absent from the calibration): {why}"
        ));
    }
    if let Some(period) = o.tick_period_ns {
        s.fact(
            "tick period",
            format!("{} (HZ {})", Nanos(period), 1_000_000_000 / period.max(1)),
        );
    }
    if let Some(jitter) = o.release_jitter_ns {
        s.fact(
            "release jitter",
            format!("{} (max − min release latency)", Nanos(jitter)),
        );
    }
}
