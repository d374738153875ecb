//! The result of `tinct bench overheads` (`overheads.json`): its types, the
//! calibration file it stores into, the files and the summary (whose facts
//! `calibrate` shows too).

use super::measure::STOPPED_DURING;
use crate::crpd::SwitchCost;
use crate::harness::summary::nanos_cells;
use crate::harness::{Columns, Durations, OutputDir, RunHeader, Summary};
use crate::harness::{report_fields, write_atomically};
use crate::{Error, InputError, Result};
use serde::{Deserialize, Serialize};
use std::path::Path;
use tinct_core::calibration::{OverheadRecord, Overheads};
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
    /// True if a stop (Ctrl-C) ended the measurement early: the jobs released until then.
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
    let not_an_object = || InputError::new(&shown, "", "a JSON object", "another value");
    let object = value.as_object_mut().ok_or_else(not_an_object)?;
    let json_error = |what: &'static str| {
        move |source| Error::Json {
            what: what.into(),
            source,
        }
    };
    let written = serde_json::to_value(overheads).map_err(json_error("overheads"))?;
    object.insert("overheads".into(), written);
    let text = serde_json::to_string_pretty(&value).map_err(json_error("calibration"))?;
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
    let expected = "a calibrate.json written by `tinct bench calibrate`";
    let refused = |found: String| InputError::new(path.display().to_string(), "", expected, found);
    parse_file(path, &text).map_err(refused)?;
    serde_json::from_str(&text).map_err(|e| refused(e.to_string()).into())
}

/// The stored records by name, as `overheads.csv` and the summary name them.
fn records(o: &Overheads) -> impl Iterator<Item = (&'static str, &OverheadRecord)> {
    let tick = o.tick.as_ref().map(|t| &t.cost);
    let (switch, latency) = (o.context_switch.as_ref(), o.release_latency.as_ref());
    let named = [
        ("context_switch", switch),
        ("release_latency", latency),
        ("tick", tick),
    ];
    named.into_iter().filter_map(|(name, r)| Some((name, r?)))
}

/// The columns of `overheads.csv`: one row per stored record.
const RECORD_COLUMNS: &str = "overhead,max_ns,p99_ns,median_ns,min_ns,samples,measured_by";

fn rows(o: &Overheads) -> impl Iterator<Item = Columns> + '_ {
    records(o).map(|(name, r)| Columns::of(r).with("overhead", name))
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
        let path = params.calibration.as_ref();
        if let Some(path) = path.filter(|_| !self.header.interrupted) {
            self.stored_in = Some(store(path, &self.measured.overheads)?);
        }
        Ok(())
    }

    /// Writes `overheads.csv`.
    fn write(&self, out: &mut OutputDir) -> Result<()> {
        let rows = rows(&self.measured.overheads);
        out.write_columns("overheads.csv", &[RECORD_COLUMNS], rows)?;
        Ok(())
    }

    report_fields!(header);

    /// The one-screen summary: the records as a table.
    fn summary(&self, params: &super::Params, out: &OutputDir) -> Summary {
        let mut s = Summary::of_run(&self.header);
        s.table(&["overhead", "stored (max)", "p99", "median", "samples"]);
        for (name, r) in records(&self.measured.overheads) {
            let [max, p99, median] = nanos_cells([r.max_ns, r.p99_ns, r.median_ns]);
            s.row(vec![name.into(), max, p99, median, r.samples.to_string()]);
        }
        summary_notes(&mut s, &self.measured.overheads);
        if let Some(busy) = &self.measured.busy_loop {
            let (cpu, lost, busy_ns) = (busy.cpu, busy.lost_fraction * 100.0, Nanos(busy.busy_ns));
            let interruptions = busy.interruptions.unwrap_or_default();
            let (count, largest) = (interruptions.count, Nanos(interruptions.max));
            let seen = format!(
                "CPU {cpu}: {lost:.3} % of {busy_ns} lost to {count} interruptions (largest {largest})"
            );
            s.fact("busy loop", seen);
        }
        s.fact("output", out.path().display().to_string());
        let nowhere = "nowhere (no calibration file given)";
        s.fact("stored in", self.stored_in.as_deref().unwrap_or(nowhere));
        s.note("stored value = the largest observed (a bound covers the worst case seen); p99 and median show what is typical");
        if self.header.machine.virtualized == Some(true) {
            s.note("virtual machine: the maxima include host stalls (the hypervisor taking the vCPU away), which no guest setting removes");
        }
        if self.header.interrupted && params.calibration.is_some() {
            s.note("interrupted: the overheads measured were NOT stored in the calibration file (only a complete run is)");
        }
        s
    }
}

/// The overheads as summary facts, one line each (`calibrate` prints them
/// beside its own table).
pub fn summary_facts(s: &mut Summary, o: &Overheads) {
    for (name, r) in records(o) {
        let [max, p99, median] = nanos_cells([r.max_ns, r.p99_ns, r.median_ns]);
        let samples = r.samples;
        let stored = format!("{max} stored (max), p99 {p99}, median {median}, {samples} samples");
        s.fact(name, stored);
    }
    summary_notes(s, o);
}

/// The notes and facts the records do not say: a release latency cut short,
/// the overheads not measured, the tick period and the release jitter.
pub(super) fn summary_notes(s: &mut Summary, o: &Overheads) {
    if let Some(record) = &o.release_latency
        && record.measured_by.contains(STOPPED_DURING)
    {
        s.note(format!(
            "release_latency cut short by the Ctrl-C: its figures are those of the {} jobs \
             released until then",
            record.samples
        ));
    }
    for (name, why) in &o.unmeasured {
        let unmeasured = format!("{name} not measured (absent from the calibration): {why}");
        s.note(unmeasured);
    }
    if let Some(period) = o.tick_period_ns {
        let hz = 1_000_000_000 / period.max(1);
        s.fact("tick period", format!("{} (HZ {hz})", Nanos(period)));
    }
    if let Some(jitter) = o.release_jitter_ns {
        let spread = format!("{} (max − min release latency)", Nanos(jitter));
        s.fact("release jitter", spread);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_csv_has_a_row_per_stored_record_in_its_columns() {
        let record = |max_ns| OverheadRecord {
            max_ns,
            p99_ns: 3,
            median_ns: 2,
            min_ns: 1,
            samples: 10,
            measured_by: "crpd, a, b".into(),
        };
        let overheads = Overheads {
            context_switch: Some(record(4)),
            tick: Some(tinct_core::calibration::TickRecord {
                cost: record(5),
                period_ns: 4_000_000,
            }),
            ..Overheads::default()
        };
        let tmp = tempfile::tempdir().unwrap();
        let mut out = OutputDir::create(tmp.path()).unwrap();
        let path = out
            .write_columns("o.csv", &[RECORD_COLUMNS], rows(&overheads))
            .unwrap();
        assert_eq!(
            std::fs::read_to_string(path).unwrap(),
            "overhead,max_ns,p99_ns,median_ns,min_ns,samples,measured_by\n\
             context_switch,4,3,2,1,10,\"crpd, a, b\"\n\
             tick,5,3,2,1,10,\"crpd, a, b\"\n"
        );
    }
}
