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

use crate::Result;
use crate::harness::{BenchOptions, Finished, Progress};
pub use report::{Condition, ConditionResult, Parameters, Report};
use reservation::ReservationChoice;
use std::path::PathBuf;
use tinct_core::units::Bytes;

/// Parameters of `tinct bench isolation`.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct Params {
    /// Parameters shared by every bench.
    #[cfg_attr(feature = "cli", command(flatten))]
    pub common: BenchOptions,
    /// Victim working set (default: a quarter of the LLC; `--quick`: 2MiB).
    #[cfg_attr(
        feature = "cli",
        arg(long, value_name = "SIZE", value_parser = tinct_core::units::parse_size)
    )]
    pub victim_size: Option<Bytes>,
    /// Working set of each aggressor (default: twice the LLC; `--quick`: 8MiB).
    #[cfg_attr(
        feature = "cli",
        arg(long, value_name = "SIZE", value_parser = tinct_core::units::parse_size)
    )]
    pub aggressor_size: Option<Bytes>,
    /// Recorded jobs per condition and round (default 50; `--quick`: 10).
    #[cfg_attr(feature = "cli", arg(long, value_name = "N"))]
    pub jobs: Option<u32>,
    /// Percentage of the page colors reserved for the victim (the
    /// aggressors get the rest).
    #[cfg_attr(
        feature = "cli",
        arg(long, value_name = "PERCENT", default_value_t = Params::default().victim_colors)
    )]
    pub victim_colors: u32,
    /// Run the victim and the aggressors under SCHED_FIFO with this
    /// priority (1-99; needs root or CAP_SYS_NICE), as kim2013 ran its tasks.
    #[cfg_attr(feature = "cli", arg(long, value_name = "PRIORITY"))]
    pub fifo: Option<u8>,
    /// How the reserved conditions reserve the cache: coloring (page
    /// coloring), resctrl (L3 cache allocation), or auto (resctrl when
    /// mounted and offering L3 allocation, else coloring).
    #[cfg_attr(feature = "cli", arg(long, default_value = "auto"))]
    pub reservation: ReservationChoice,
    /// Where resctrl is mounted (a fake tree in tests).
    #[cfg_attr(
        feature = "cli",
        arg(long, value_name = "DIR", default_value = tinct_sys::resctrl::DEFAULT_MOUNT)
    )]
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

/// Unrecorded warm-up rounds before the measured ones.
const WARMUP_ROUNDS: u32 = 1;

/// Runs the bench, writes `isolation.json`, `isolation.csv` and
/// `isolation.svg` into the output directory, and returns the report with
/// its summary.
pub fn run(params: &Params, progress: &dyn Progress) -> Result<Finished<Report>> {
    crate::harness::run::<Report>(&params.common, params, progress)
}
