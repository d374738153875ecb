//! `tinct bench coherence`: the shared-memory contention benchmark of
//! Gracioli et al. 2011 (Section III, Figure 3), on this machine.
//!
//! Three versions of one pipeline application over two `ROWS x COLS`
//! arrays, for a sweep of array sizes:
//! * **sequential**: function 1 then function 2 on one CPU (no coherence
//!   traffic; the "implemented in hardware" reference);
//! * **parallel-shared**: function 1 and function 2 at the same time on two
//!   threads, both reading and writing both arrays at the same positions;
//! * **parallel-private**: the paper's best case, two threads each with its
//!   own arrays (it should take about half the sequential time).
//!
//! * **as whole applications** (Fig. 4(a) against 4(b)): the three versions
//!   again, each timed as the paper timed its runs with `time` (process
//!   start and exit aside): the arrays' mapping and first touch, the
//!   threads' creation and join and the unmapping inside the timed region,
//!   threads placed by the OS. The versions above time the computation
//!   alone, the kernel's part taken out entirely; gracioli's optimised
//!   kernel (Fig. 4(b)) reduced that part (fewer locks, atomics and shared
//!   kernel data), so it lies between the two timings, where a user-space
//!   tool cannot swap the kernel ([`report::ApplicationResult`]).
//!
//! The parallel versions run under each thread placement of the paper (same
//! CPU, SMT siblings, different cores, different dies, OS-chosen); the
//! placements this machine lacks are listed with the reason. Each
//! condition runs `reps` times, interleaved with the others; the WCET is the
//! largest observed time, as in the paper (10 runs, WCET extracted), and the
//! slowdown is parallel WCET / sequential WCET (the paper's "up to 3.8x").
//! A false-sharing variant times two threads incrementing their own
//! counters when the counters share one cache line and when they do not.
//!
//! Two loop modes: by default the work per run is the same at every size
//! (the repetition count is `work / (ROWS x COLS)`), so sizes compare at
//! equal work; with `repetitions` each size runs the paper's fixed loop
//! (`--repetitions 10000` is gracioli's, so large arrays take long).
//!
//! Every condition is also counted with the coherence events of the
//! paper's Fig. 9 (L2 requests in the I and S states, LLC misses, snoop
//! hit, invalidate, share, share-and-invalidate: tinct-sys's
//! [`fig9`] table for this CPU) besides the harness's
//! default counters; where the machine has no PMU each is reported
//! unavailable with the kernel's reason.

pub mod fig9;
pub mod kernels;
mod measure;
pub mod placement;
mod plan;
mod report;

use crate::Result;
use crate::harness::{BenchOptions, Finished, Progress};
pub use report::{
    ApplicationResult, FalseSharingResult, Fig9Counter, Ordering, ParallelResult, Parameters,
    Report, SizeResult, Worst,
};

/// Parameters of `tinct bench coherence`.
#[derive(Debug, Clone, Default, PartialEq)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct Params {
    /// Parameters shared by every bench.
    #[cfg_attr(feature = "cli", command(flatten))]
    pub common: BenchOptions,
    /// Array dimensions to sweep (ROWS = COLS), e.g. `64,256,1024`
    /// (default 64..2048 as in the paper; `--quick`: 64,512).
    #[cfg_attr(
        feature = "cli",
        arg(long, value_delimiter = ',', value_name = "N,...")
    )]
    pub sizes: Option<Vec<usize>>,
    /// Element updates per function per run; the repetition loop count of a
    /// size is this divided by ROWS x COLS (default 2^24; `--quick`: 2^21).
    #[cfg_attr(
        feature = "cli",
        arg(long, value_name = "N", conflicts_with = "repetitions")
    )]
    pub work: Option<u64>,
    /// The paper's loop instead: this many repetitions at every size
    /// (Gracioli et al. ran 10000).
    #[cfg_attr(feature = "cli", arg(long, value_name = "N"))]
    pub repetitions: Option<u64>,
    /// Run the measuring threads under SCHED_FIFO with this priority
    /// (1-99; needs root or CAP_SYS_NICE). Recommended on a busy machine.
    #[cfg_attr(feature = "cli", arg(long, value_name = "PRIORITY"))]
    pub fifo: Option<u8>,
    /// Increments per thread in the false-sharing variant
    /// (default 2^25; `--quick`: 2^20).
    #[cfg_attr(feature = "cli", arg(long, value_name = "N"))]
    pub increments: Option<u64>,
}

/// Unrecorded warm-up rounds before the measured ones.
const WARMUP_ROUNDS: u32 = 1;

/// Runs the bench, writes `coherence.json`, `coherence.csv` and two SVG
/// plots into the output directory, and returns the report with its summary.
pub fn run(params: &Params, progress: &dyn Progress) -> Result<Finished<Report>> {
    crate::harness::run::<Report>(&params.common, params, progress)
}
