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

mod measure;
mod plan;
mod report;
pub mod tick;

use crate::Result;
use crate::harness::{BenchOptions, Finished, Progress};
pub use measure::{measure, progress_steps};
pub use plan::{Setup, calibration_target};
pub use report::{BusyLoop, Measured, OverheadsResult, ReleaseLatency, store, summary_facts};
use std::path::PathBuf;

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

/// Runs `tinct bench overheads`: measures, stores the overheads in
/// `params.calibration` if given, writes `overheads.json` and
/// `overheads.csv`, and returns the result with its summary.
pub fn run(params: &Params, progress: &dyn Progress) -> Result<Finished<OverheadsResult>> {
    let plan = plan::plan(params)?;
    progress.start(progress_steps(plan.setup.switch_reps), "overheads");
    let measured = measure(&plan.setup, progress)?;
    progress.finish();
    let mut header = plan.header;
    header.record_rounds(progress.stop_requested());
    report::store_and_write(params, header, measured)
}
