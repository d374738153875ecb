//! `tinct bench pipeline` (demarchi): the wave/mixer
//! benchmark of the paper's Figure 2 under each placement policy of
//! [`tinct_rt::pipeline`] — `os` (the paper's vanilla Linux), `affinity`
//! (its task-affinity heuristic, from user space) and `static` (subtrees
//! pinned in one cache domain).
//!
//! The tree ([`tree`]) runs as a tinct-rt run: one SCHED_FIFO thread per
//! wave and mixer, one-packet buffers with a blocking hand-over, each task
//! running exactly as many jobs as there are samples. The policies run
//! interleaved in rounds ([`crate::harness::Interleaved`], a seeded order
//! per round), the same number of samples each. Reported per policy
//! (`measure`, `report`): the production rate, mean, σ and ρ = μ + 2σ
//! (demarchi Eq. (1)) of the sample production time t_{n+1} − t_n, the
//! overall benchmark time, per-task execution time mean and variance
//! (Fig. 6), migrations per task (Fig. 5), the migrations map (Fig. 3, text
//! and SVG), the empirical CDF of production times (Figs. 7 and 8, SVG),
//! the LLC load and store miss rates where hardware counters exist
//! (Fig. 4: "considering both store and load operations"; the kernel's
//! reason otherwise) and Table I with each policy's improvement
//! over `os`. `background` busy SCHED_OTHER threads can run beside it
//! (the paper ran beside a distribution's usual tasks).

mod measure;
mod plan;
mod report;
pub mod tree;

use crate::Result;
use crate::harness::{BenchOptions, Finished, Progress};
pub use report::{Figures, PolicyResult, Report, TaskResult, with_figures};
use tinct_core::units::{Bytes, Nanos};
use tinct_rt::pipeline::PlacementPolicy;

/// Samples per policy of a full run (the paper's 150 000).
pub const FULL_SAMPLES: u64 = 150_000;
/// Samples per policy of a `--quick` run.
pub const QUICK_SAMPLES: u64 = 600;

/// The most `--background` busy threads per CPU used: enough to load
/// every CPU several times over, few enough that their start-up does not
/// dominate the bench.
pub const MAX_BACKGROUND_PER_CPU: usize = 8;

/// Parameters of `tinct bench pipeline`.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct Params {
    /// Parameters shared by every bench (`--reps` is the number of rounds).
    #[cfg_attr(feature = "cli", command(flatten))]
    pub common: BenchOptions,
    /// Waves (leaves of the tree; demarchi Figure 2 has 4).
    #[cfg_attr(feature = "cli", arg(long, default_value_t = Params::default().waves))]
    pub waves: u32,
    /// Mixer levels: each mixes pairs of the level below, the last one
    /// must be a single mixer (Figure 2 has 2).
    #[cfg_attr(feature = "cli", arg(long, default_value_t = Params::default().levels))]
    pub levels: u32,
    /// Bytes of one packet, e.g. `16KiB`.
    #[cfg_attr(
        feature = "cli",
        arg(
            long,
            value_name = "SIZE",
            value_parser = tinct_core::units::parse_size,
            default_value_t = Params::default().packet
        )
    )]
    pub packet: Bytes,
    /// Computation per packet of each wave and mixer, e.g. `20us`.
    #[cfg_attr(
        feature = "cli",
        arg(
            long,
            value_name = "TIME",
            value_parser = tinct_core::units::parse_duration,
            default_value_t = Params::default().work
        )
    )]
    pub work: Nanos,
    /// Samples per policy (default 150000 as in the paper; `--quick`: 600).
    #[cfg_attr(feature = "cli", arg(long, value_name = "N"))]
    pub samples: Option<u64>,
    /// Policies to compare, comma-separated (`os` is the reference of
    /// Table I's improvements).
    #[cfg_attr(
        feature = "cli",
        arg(long, value_delimiter = ',', default_value = "os,affinity,static")
    )]
    pub policies: Vec<PlacementPolicy>,
    /// Busy SCHED_OTHER threads running beside the tree (background load).
    #[cfg_attr(
        feature = "cli",
        arg(long, value_name = "N", default_value_t = Params::default().background)
    )]
    pub background: u32,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            common: BenchOptions::default(),
            waves: 4,
            levels: 2,
            packet: Bytes(16 << 10),
            work: Nanos(20_000),
            samples: None,
            policies: PlacementPolicy::ALL.to_vec(),
            background: 0,
        }
    }
}

/// Runs the bench, writes `pipeline.json` and (when a round ended) its
/// tables and charts into the output directory, and returns the report with
/// its summary.
pub fn run(params: &Params, progress: &dyn Progress) -> Result<Finished<Report>> {
    crate::harness::run::<Report>(&params.common, params, progress)
}
