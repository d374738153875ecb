//! `tinct bench calibrate`: load-to-use latency per cache level (with the
//! TLB effect shown separately), sustained read and write bandwidth, and Δ,
//! the time to refill one cache partition (kim2013 Section II-C, Section
//! IV-B and footnote 7: "the time to fetch from memory to the L3 cache",
//! 45.3 µs for a 256 KiB partition on their Core i7-2600).
//!
//! Δ is measured directly: one partition's worth of memory (LLC size / N_P,
//! whole pages in random page order, as page coloring scatters them) is
//! read once after the LLC was wiped and once while it is warm; Δ is the
//! difference of the medians. A latency-bound variant (a random chase over
//! the same lines, no prefetching possible) is reported as an upper bound.
//!
//! TLB effects are shown two ways at every size: random-line minus
//! page-local latency (one TLB miss per load vs one per page), and the
//! random-line chase in 4 KiB pages minus the same chase within transparent
//! huge pages (same cache behaviour, 512 times the TLB reach), when the
//! kernel backs the buffer with huge pages; otherwise the JSON says
//! `THP unavailable: <reason>`.
//!
//! Latencies are reported from the fastest sample (interference on a shared
//! machine only adds time) and from the median. The page-local layout keeps
//! TLB misses to one per page; beyond the last-level cache, in-page
//! prefetching flatters it, so there the random-line latency is the one to
//! read as "memory latency".

pub mod chase;
pub mod machine;
mod measure;
mod plan;
mod report;
pub mod stream;

use crate::Result;
use crate::harness::{BenchOptions, Finished, Progress};
pub use measure::{RefillSetup, measure_bandwidth, measure_refill};
pub use plan::{Geometry, sweep_sizes};
pub use report::{
    Bandwidth, CalibrateResult, HugePages, LatencyPoint, LevelLatency, PerAccess, Refill,
    level_latencies,
};
use tinct_core::units::Bytes;

/// The bench's name: its default output directory is `tinct-bench/calibrate`.
pub const NAME: &str = "calibrate";
/// The result file a run writes, which a full run saves as this machine's
/// calibration ([`machine`]).
pub const RESULT_FILE: &str = "calibrate.json";

/// Default N_P, the number of cache partitions (kim2013 used 32).
pub const DEFAULT_PARTITIONS: u32 = 32;

/// Parameters of `tinct bench calibrate`.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct Params {
    /// Parameters shared by every bench.
    #[cfg_attr(feature = "cli", command(flatten))]
    pub common: BenchOptions,
    /// N_P: the number of cache partitions; a partition is LLC size / N_P.
    #[cfg_attr(feature = "cli", arg(long, default_value_t = DEFAULT_PARTITIONS))]
    pub partitions: u32,
    /// Largest pointer-chase working set, e.g. `256MiB` (default 4 × LLC,
    /// at least 64 MiB, at most 512 MiB; with `--quick` 2 × LLC).
    #[cfg_attr(
        feature = "cli",
        arg(long, value_name = "SIZE", value_parser = tinct_core::units::parse_size)
    )]
    pub max_size: Option<Bytes>,
}

impl Default for Params {
    /// The defaults of `tinct bench calibrate`.
    fn default() -> Self {
        Self {
            common: BenchOptions::default(),
            partitions: DEFAULT_PARTITIONS,
            max_size: None,
        }
    }
}

/// Runs `tinct bench calibrate`: measures, writes the files and returns the
/// result with its summary.
pub fn run(params: &Params, progress: &dyn Progress) -> Result<Finished<CalibrateResult>> {
    crate::harness::run::<CalibrateResult>(&params.common, params, progress)
}

/// Measures everything (no files written).
pub fn measure(params: &Params, progress: &dyn Progress) -> Result<CalibrateResult> {
    crate::harness::bench::measure::<CalibrateResult>(params, progress)
}
