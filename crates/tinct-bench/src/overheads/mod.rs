//! `tinct bench overheads` (and the overheads part of `tinct bench
//! calibrate`): the platform overheads an analysis charges, each measured
//! by the code that owns the mechanism and stored in the machine
//! calibration (`tinct_core::calibration::Overheads`):
//!
//! - δ, the context-switch cost: `tinct bench crpd`'s measurement
//!   ([`crate::crpd::context_switch`], Sebek 2002 Table 1), worst case (the
//!   switch path cold after each task read twice the LLC), one switch
//!   between two threads on one CPU;
//! - the release latency and jitter: tinct-rt's
//!   ([`tinct_rt::release_latency::measure`]), one SCHED_FIFO thread per
//!   CPU with jobs of no work at a 1 ms period, the jobs whose thread slept
//!   until the release (as cyclictest counts);
//! - the timer tick: [`tick`], the time a busy thread loses to each tick,
//!   picked out of all its interruptions by the tick's period.
//!
//! The value each `*_ns` key holds is the largest observed: on a virtual
//! machine that includes host stalls of tens of milliseconds, which the
//! records' 99th percentiles and medians show apart. An overhead that could
//! not be measured is absent, with the reason in `unmeasured`.

pub mod tick;

use crate::crpd::{self, SwitchCost};
use crate::harness::{BenchOptions, Durations, Finished, OutputDir, Progress, RunHeader, Summary};
use crate::{Error, Result};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};
use tinct_core::calibration::{OverheadRecord, Overheads, TickRecord};
use tinct_core::saved_calibration::{not_a_calibration, parse_file};
use tinct_core::units::Nanos;
use tinct_rt::release_latency::{self, LatencyRun};
use tinct_sys::signals::StopFlag;

/// SCHED_FIFO priority of the context-switch pair and the busy loop.
const FIFO_PRIORITY: u8 = crpd::DEFAULT_FIFO_PRIORITY;
/// SCHED_FIFO priority of the release-latency threads (cyclictest's usual).
const LATENCY_PRIORITY: u8 = 95;
/// Period of the release-latency threads.
const LATENCY_PERIOD_NS: u64 = 1_000_000;

/// Parameters of `tinct bench overheads`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Params {
    /// Parameters shared by every bench (`--reps`: context-switch samples).
    pub common: BenchOptions,
    /// Seconds of release-latency measurement and of the busy loop each
    /// (default 10; quick: 1 whatever is given).
    pub seconds: Option<u64>,
    /// The calibration file to store the overheads in (its `overheads`
    /// object is replaced, everything else kept); `None`: not stored.
    pub calibration: Option<PathBuf>,
}

impl Params {
    /// The parameters of a run that stores what it measures into
    /// `explicit` (`--calibration FILE`), else into this machine's `saved`
    /// calibration when that file exists and the run is not quick
    /// ([`calibration_target`]); with the note to show when nothing is stored.
    pub fn storing(
        common: BenchOptions,
        seconds: Option<u64>,
        explicit: Option<PathBuf>,
        saved: Option<PathBuf>,
    ) -> (Self, Option<&'static str>) {
        let saved = saved.filter(|path| path.is_file());
        let (calibration, note) = calibration_target(explicit, saved, common.quick);
        let params = Self {
            common,
            seconds,
            calibration,
        };
        (params, note)
    }
}

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

/// How to measure (shared by `overheads` and `calibrate`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setup {
    /// The CPUs: the first one for the context switch and the busy loop,
    /// all of them for the release latency.
    pub cpus: Vec<u32>,
    /// Context-switch samples per case.
    pub switch_reps: u32,
    /// Release-latency and busy-loop duration each, seconds.
    pub seconds: u64,
    /// Seed of the context-switch order.
    pub seed: u64,
    /// The last-level cache, bytes (the worst-case switch reads twice it).
    pub llc_bytes: u64,
}

impl Setup {
    /// The setup for `options` on the CPUs and cache of `header` (quick:
    /// 30 switches and 1 s; full: 200 switches and `seconds`).
    pub fn of(options: &BenchOptions, header: &RunHeader, seconds: u64) -> Result<Self> {
        if seconds == 0 {
            return Err(Error::InvalidInput(
                "--seconds: expected at least 1 second, found 0".into(),
            ));
        }
        Ok(Self {
            cpus: header.cpus.clone(),
            switch_reps: options.reps_or(30, 200)?,
            seconds: if options.quick { 1 } else { seconds },
            seed: options.seed,
            llc_bytes: header.machine.llc().map_or(8 << 20, |c| c.size_bytes),
        })
    }
}

/// Runs `tinct bench overheads`: measures, stores the overheads in
/// `params.calibration` if given, writes `overheads.json` and
/// `overheads.csv`, and returns the result with its summary.
pub fn run(params: &Params, progress: &dyn Progress) -> Result<Finished<OverheadsResult>> {
    let options = &params.common;
    let cpus = options.cpus(1)?;
    let mut header = RunHeader::new("overheads", options, options.reps_or(30, 200)?, cpus);
    let setup = Setup::of(options, &header, params.seconds.unwrap_or(10))?;
    // A file that cannot take the result is refused before the measurement.
    if let Some(path) = &params.calibration {
        read_calibration(path)?;
    }
    progress.start(progress_steps(setup.switch_reps), "overheads");
    let measured = measure(&setup, progress)?;
    progress.finish();
    header.record_rounds(progress.stop_requested());
    // A run stopped early is never stored: the calibration keeps the
    // overheads of a complete run.
    let stored = params
        .calibration
        .as_ref()
        .filter(|_| !header.interrupted)
        .map(|path| store(path, &measured.overheads));
    let mut result = OverheadsResult {
        header,
        measured,
        stored_in: None,
    };
    let mut failure = None;
    match stored {
        Some(Ok(path)) => result.stored_in = Some(path),
        Some(Err(e)) => failure = Some(e),
        None => {}
    }
    let mut out = OutputDir::create(options.out_dir("overheads"))?;
    write(&result, &mut out)?;
    if let Some(e) = failure {
        return Err(e);
    }
    let mut summary = summary(&result, &out);
    summary.interruption(&result.header, out.path());
    if result.header.interrupted && params.calibration.is_some() {
        summary.note(
            "interrupted: the overheads measured were NOT stored in the calibration file (only a complete run is)",
        );
    }
    Ok(Finished { result, summary })
}

/// Why an overhead is absent when Ctrl-C came before its measurement.
const STOPPED_BEFORE: &str = "not measured: the run was interrupted (Ctrl-C) before it";
/// How a record's `measured_by` says a stop cut the measurement short.
const STOPPED_DURING: &str = "stopped (Ctrl-C) after";

/// The progress steps [`measure`] reports for `switch_reps` context-switch
/// samples: each sample of the two switch cases (and their warm-up), then
/// one step for the release latency and one for the busy loop.
pub fn progress_steps(switch_reps: u32) -> u64 {
    (u64::from(switch_reps) + 1) * 2 + 2
}

fn privileged() -> bool {
    tinct_sys::privilege::Privileges::read(&tinct_sys::SysRoot::live()).is_ok_and(|p| p.is_root())
}

/// Measures the three overheads; one that fails is `unmeasured`, with why.
/// A stop ([`Progress::stop_requested`]) ends the run at the next of the
/// three: the overheads not reached are `unmeasured` as such (the context
/// switch keeps the whole rounds it finished). It also ends the one under
/// way: the release latency at once when the caller has a
/// [`Progress::stop_flag`], with the jobs released until then; the busy
/// loop after its current slice, with the slices it finished.
pub fn measure(setup: &Setup, progress: &dyn Progress) -> Result<Measured> {
    let cpu = *setup.cpus.first().ok_or_else(|| {
        Error::InvalidInput("--cpus: expected at least one CPU, found none".into())
    })?;
    let root = privileged();
    let mut overheads = Overheads::default();
    progress.set_message("context switch");
    let fifo = root.then_some(FIFO_PRIORITY);
    let context_switch = match crpd::context_switch(
        cpu,
        setup.llc_bytes,
        setup.switch_reps,
        setup.seed,
        fifo,
        progress,
    ) {
        Ok((cost, policy)) => {
            // δ is one switch: the slower of a preemption's two (Sebek's
            // interrupt and resume), in the worst case.
            let one_switch = if cost.worst.interrupt.max >= cost.worst.resume.max {
                &cost.worst.interrupt
            } else {
                &cost.worst.resume
            };
            overheads.set_context_switch(record(
                one_switch,
                format!(
                    "tinct bench crpd's context switch, worst case (each thread read {} before handing over, so the switch path ran cold), \
                     the slower of a preemption's interrupt and resume switches between two threads on CPU {cpu} under {}",
                    tinct_core::units::Bytes(cost.wipe_bytes),
                    policy_name(policy)
                ),
            ));
            Some(cost)
        }
        Err(e) => {
            overheads.set_unmeasured("context_switch", e.to_string());
            None
        }
    };
    progress.set_message("release latency");
    let release_latency = if progress.stop_requested() {
        overheads.set_unmeasured("release_latency", STOPPED_BEFORE);
        None
    } else if root {
        let stop = progress.stop_flag().unwrap_or_default();
        match measure_release_latency(setup, &stop) {
            Ok(measured) => {
                let length = if measured.stopped {
                    format!("{STOPPED_DURING} {} jobs", measured.all.count)
                } else {
                    format!("{} s", setup.seconds)
                };
                overheads.set_release_latency(record(
                    &measured.woke,
                    format!(
                        "tinct-rt's release latency: one SCHED_FIFO {LATENCY_PRIORITY} thread on each of CPU {}, jobs of no work every {}, {length}; \
                         jobs whose thread slept until the release, as cyclictest counts",
                        tinct_sys::format_cpu_list(&measured.cpus),
                        Nanos(measured.period_ns),
                    ),
                ));
                Some(measured)
            }
            Err(e) => {
                overheads.set_unmeasured("release_latency", e.to_string());
                None
            }
        }
    } else {
        overheads.set_unmeasured(
            "release_latency",
            "needs SCHED_FIFO and mlockall: run as root",
        );
        None
    };
    progress.inc(1);
    progress.set_message("timer tick");
    let busy_loop = if progress.stop_requested() {
        overheads.set_unmeasured("tick", STOPPED_BEFORE);
        None
    } else {
        measure_tick(&mut overheads, setup, cpu, fifo, progress)
    };
    progress.inc(1);
    Ok(Measured {
        overheads,
        context_switch,
        release_latency,
        busy_loop,
    })
}

/// The busy loop behind the tick, the tick stored in `overheads` (or why
/// it is absent).
fn measure_tick(
    overheads: &mut Overheads,
    setup: &Setup,
    cpu: u32,
    fifo: Option<u8>,
    progress: &dyn Progress,
) -> Option<BusyLoop> {
    let stop = || progress.stop_requested();
    match tick::record(
        cpu,
        setup.seconds.saturating_mul(1_000_000_000),
        fifo,
        &stop,
    ) {
        Ok(seen) => {
            let busy = busy_loop(&seen, fifo);
            match (&busy.tick, busy.tick_period_ns) {
                (Some(costs), Some(period_ns)) => overheads.set_tick(TickRecord {
                    cost: record(
                        costs,
                        format!(
                            "a busy loop on CPU {cpu} under {} for {}: {} of its {} interruptions at the phase of a {} tick \
                             (HZ {}); their lost time",
                            policy_name(fifo),
                            Nanos(seen.busy_ns),
                            costs.count,
                            seen.gaps.len(),
                            Nanos(period_ns),
                            1_000_000_000 / period_ns
                        ),
                    ),
                    period_ns,
                }),
                _ => overheads.set_unmeasured(
                    "tick",
                    format!(
                        "no periodic interruption at a tick period of HZ 1000, 300, 250 or 100 among the busy loop's {} \
                         interruptions on CPU {cpu} (nohz_full CPU, or a window too short)",
                        seen.gaps.len()
                    ),
                ),
            }
            Some(busy)
        }
        Err(e) => {
            overheads.set_unmeasured("tick", e.to_string());
            None
        }
    }
}

fn policy_name(fifo: Option<u8>) -> String {
    fifo.map_or("SCHED_OTHER".into(), |p| format!("SCHED_FIFO {p}"))
}

/// An overhead record from a distribution.
fn record(d: &Durations, measured_by: String) -> OverheadRecord {
    OverheadRecord {
        max_ns: d.max,
        p99_ns: d.p99,
        median_ns: d.median,
        min_ns: d.min,
        samples: d.count,
        measured_by,
    }
}

fn measure_release_latency(setup: &Setup, stop: &StopFlag) -> Result<ReleaseLatency> {
    let run = LatencyRun {
        cpus: setup.cpus.clone(),
        priority: LATENCY_PRIORITY,
        period_ns: LATENCY_PERIOD_NS,
        jobs: setup.seconds.saturating_mul(1_000_000_000) / LATENCY_PERIOD_NS,
        staggered: false,
    };
    let latencies = release_latency::measure(&run, stop)
        .map_err(|e| Error::Measurement(format!("release latency: {e}")))?;
    let none = || {
        Error::Measurement(if latencies.stopped {
            "not measured: the run was interrupted (Ctrl-C) before its first release".into()
        } else {
            "release latency: no job was released".into()
        })
    };
    Ok(ReleaseLatency {
        cpus: run.cpus,
        period_ns: run.period_ns,
        woke: Durations::of(&latencies.woke).ok_or_else(none)?,
        all: Durations::of(&latencies.all).ok_or_else(none)?,
        stopped: latencies.stopped,
    })
}

fn busy_loop(seen: &tick::Interruptions, fifo: Option<u8>) -> BusyLoop {
    let lost: Vec<u64> = seen.gaps.iter().map(|g| g.lost_ns).collect();
    let total: u128 = lost.iter().map(|&l| u128::from(l)).sum();
    let found = tick::find_tick(seen);
    BusyLoop {
        cpu: seen.cpu,
        fifo,
        busy_ns: seen.busy_ns,
        loop_ns: seen.loop_ns,
        threshold_ns: seen.threshold_ns,
        interruptions: Durations::of(&lost),
        lost_fraction: total as f64 / seen.busy_ns.max(1) as f64,
        tick_period_ns: found.as_ref().map(|t| t.period_ns),
        tick: found.as_ref().and_then(|t| Durations::of(&t.costs)),
        truncated: seen.truncated,
    }
}

/// Where `tinct bench overheads` stores what it measured ([`Params::calibration`]):
/// `explicit` (`--calibration FILE`), else this machine's `saved`
/// calibration (when it exists) if the run is not quick. With no file, the
/// note to show says why nothing is stored.
pub fn calibration_target(
    explicit: Option<PathBuf>,
    saved: Option<PathBuf>,
    quick: bool,
) -> (Option<PathBuf>, Option<&'static str>) {
    match (explicit, saved, quick) {
        (Some(path), _, _) => (Some(path), None),
        (None, Some(saved), false) => (Some(saved), None),
        (None, Some(_), true) => (
            None,
            Some("(--quick: not stored in this machine's calibration)"),
        ),
        (None, None, _) => (
            None,
            Some(
                "(no saved calibration of this machine: run `tinct bench calibrate`, which measures the overheads too, or give --calibration FILE)",
            ),
        ),
    }
}

/// Replaces the `overheads` object of the calibration file at `path` (which
/// must be one: `refill` is checked), keeping everything else, atomically.
/// Returns the path as shown.
pub fn store(path: &Path, overheads: &Overheads) -> Result<String> {
    let shown = path.display().to_string();
    let mut value = read_calibration(path)?;
    let object = value.as_object_mut().ok_or_else(|| {
        Error::InvalidInput(format!(
            "{shown}: expected a JSON object, found another value"
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
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let failed = |source: std::io::Error| Error::Write {
        path: path.to_path_buf(),
        source,
    };
    let mut file = tempfile::NamedTempFile::new_in(dir).map_err(failed)?;
    file.write_all(format!("{text}\n").as_bytes())
        .map_err(failed)?;
    file.persist(path).map_err(|e| failed(e.error))?;
    Ok(shown)
}

/// The calibration file at `path` as JSON, checked to be one (its
/// `refill` reads as tinct-core's calibration type).
fn read_calibration(path: &Path) -> Result<serde_json::Value> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        Error::InvalidInput(not_a_calibration(
            path,
            &format!("found an unreadable file ({e})"),
        ))
    })?;
    parse_file(path, &text).map_err(Error::InvalidInput)?;
    serde_json::from_str(&text)
        .map_err(|e| Error::InvalidInput(not_a_calibration(path, &format!("found {e}"))))
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

fn write(result: &OverheadsResult, out: &mut OutputDir) -> Result<()> {
    out.write_json("overheads.json", result)?;
    out.write_csv("overheads.csv", &rows(&result.measured.overheads))?;
    Ok(())
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

fn summary_notes(s: &mut Summary, o: &Overheads) {
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

fn summary(result: &OverheadsResult, out: &OutputDir) -> Summary {
    let mut s = Summary::of_run(&result.header);
    summary_rows(&mut s, &result.measured.overheads);
    if let Some(busy) = &result.measured.busy_loop {
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
    match &result.stored_in {
        Some(path) => s.fact("stored in", path.clone()),
        None => s.fact("stored in", "nowhere (no calibration file given)"),
    };
    s.note("stored value = the largest observed (a bound covers the worst case seen); p99 and median show what is typical");
    if result.header.machine.virtualized == Some(true) {
        s.note("virtual machine: the maxima include host stalls (the hypervisor taking the vCPU away), which no guest setting removes");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::{BenchOptions, Params, Progress, Setup, StopFlag, calibration_target, measure};
    use std::path::PathBuf;

    /// Raises its stop flag 300 ms after the release latency starts (and
    /// answers `stop_requested` from it): a Ctrl-C during that measurement.
    struct StopDuringReleaseLatency {
        stop: StopFlag,
    }

    impl Progress for StopDuringReleaseLatency {
        fn set_message(&self, message: &str) {
            if message == "release latency" {
                let stop = self.stop.clone();
                std::thread::spawn(move || {
                    std::thread::sleep(std::time::Duration::from_millis(300));
                    stop.raise();
                });
            }
        }

        fn stop_requested(&self) -> bool {
            self.stop.is_raised()
        }

        fn stop_flag(&self) -> Option<StopFlag> {
            Some(self.stop.clone())
        }
    }

    #[test]
    fn a_stop_ends_the_release_latency_under_way_and_skips_the_tick() {
        if !tinct_sys::testing::privileged_or_skip("release latency (SCHED_FIFO, mlockall)") {
            return;
        }
        // A minute of release latency, stopped 300 ms in (or during its
        // setup: then its first jobs only, or unmeasured; never a minute).
        let setup = Setup {
            cpus: tinct_sys::sched::affinity().unwrap(),
            switch_reps: 5,
            seconds: 60,
            seed: 1,
            llc_bytes: 1 << 20,
        };
        let progress = StopDuringReleaseLatency {
            stop: StopFlag::new(),
        };
        let measured = measure(&setup, &progress).unwrap();
        match &measured.release_latency {
            Some(latency) => {
                assert!(latency.stopped);
                assert!(
                    latency.all.count < 60_000 * setup.cpus.len() as u64,
                    "{} jobs: the measurement ran to its end",
                    latency.all.count
                );
                let record = measured.overheads.release_latency.as_ref().unwrap();
                assert!(
                    record.measured_by.contains(super::STOPPED_DURING),
                    "{}",
                    record.measured_by
                );
                let mut summary = crate::harness::Summary::default();
                super::summary_notes(&mut summary, &measured.overheads);
                assert!(
                    format!("{summary:?}").contains("release_latency cut short by the Ctrl-C"),
                    "{summary:?}"
                );
            }
            None => assert!(
                measured.overheads.unmeasured["release_latency"].contains("interrupted"),
                "{:?}",
                measured.overheads.unmeasured
            ),
        }
        assert!(measured.busy_loop.is_none(), "the tick was not reached");
        assert!(measured.overheads.unmeasured["tick"].contains("interrupted"));
    }

    #[test]
    fn a_saved_calibration_that_does_not_exist_is_not_a_target() {
        let dir = tempfile::tempdir().unwrap();
        let absent = dir.path().join("absent.json");
        let (params, note) = Params::storing(BenchOptions::default(), Some(3), None, Some(absent));
        assert_eq!(params.calibration, None);
        assert_eq!(params.seconds, Some(3));
        assert!(note.unwrap().contains("no saved calibration"));
        let present = dir.path().join("calibrate.json");
        std::fs::write(&present, "{}").unwrap();
        let (params, note) =
            Params::storing(BenchOptions::default(), None, None, Some(present.clone()));
        assert_eq!((params.calibration, note), (Some(present), None));
    }

    #[test]
    fn the_overheads_go_to_the_named_file_else_to_a_full_runs_saved_calibration() {
        let named = Some(PathBuf::from("named.json"));
        let saved = Some(PathBuf::from("saved.json"));
        assert_eq!(
            calibration_target(named.clone(), saved.clone(), true),
            (named, None)
        );
        assert_eq!(
            calibration_target(None, saved.clone(), false),
            (saved.clone(), None)
        );
        let (quick, note) = calibration_target(None, saved, true);
        assert_eq!(quick, None);
        assert!(note.unwrap().contains("--quick"));
        let (none, note) = calibration_target(None, None, false);
        assert_eq!(none, None);
        assert!(note.unwrap().contains("no saved calibration"));
    }
}
