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
///
/// [`run`] stores into `calibration` only; [`Params::storing`] applies the
/// default the help text names (this machine's saved calibration).
#[derive(Debug, Clone, Default, PartialEq)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct Params {
    /// Parameters shared by every bench (`--reps`: context-switch samples).
    #[cfg_attr(feature = "cli", command(flatten))]
    pub common: BenchOptions,
    /// Seconds of release-latency measurement and of the busy loop each
    /// (default 10; `--quick`: 1).
    #[cfg_attr(feature = "cli", arg(long, value_name = "N"))]
    pub seconds: Option<u64>,
    /// Store the overheads in this calibration file (default: this
    /// machine's saved calibration, when it exists and the run is not
    /// `--quick`).
    #[cfg_attr(feature = "cli", arg(long, value_name = "FILE"))]
    pub calibration: Option<PathBuf>,
}

impl Params {
    /// These parameters storing what the run measures into `calibration`
    /// if given (`--calibration FILE`), else into this machine's `saved`
    /// calibration when that file exists and the run is not quick
    /// ([`calibration_target`]); with the note to show when nothing is stored.
    pub fn storing(self, saved: Option<PathBuf>) -> (Self, Option<&'static str>) {
        let saved = saved.filter(|path| path.is_file());
        let (calibration, note) = calibration_target(self.calibration, saved, self.common.quick);
        let params = Self {
            calibration,
            ..self
        };
        (params, note)
    }
}

/// Runs `tinct bench overheads`: measures, stores the overheads in the
/// calibration file when asked (only a complete run), writes
/// `overheads.json` and `overheads.csv` and returns the result with its
/// summary; a calibration file that could not take it fails the run after
/// the files are written.
pub fn run(params: &Params, progress: &dyn Progress) -> Result<Finished<OverheadsResult>> {
    crate::harness::run::<OverheadsResult>(&params.common, params, progress)
}
