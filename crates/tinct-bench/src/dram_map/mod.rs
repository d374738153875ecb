//! `tinct bench dram-map`: the DRAM address mapping (bank, rank, channel
//! XOR functions) found from user space, with pagemap and row-buffer
//! conflict timing, as DRAMA did (Pessl et al., USENIX Security 2016) but
//! by linear algebra instead of a search, checking itself and refusing to
//! guess ([`solver`]). The solver is tested against a simulated DRAM that
//! follows published Intel and AMD mappings ([`simulated`]).
//!
//! Writes `dram-map.json` (everything measured, the functions with their
//! confidence, or why it refused), `dram-map.csv` (one line per function),
//! `dram-map.svg` (the latency histogram and its threshold) and, only when
//! the mapping was found, `dram-map.toml`: the file `tinct exec
//! --dram-map`, `tinct bench banks --dram-map` and a task set's `[platform]
//! dram_map` read (`tinct_core::dram_map::DramMap`).
//!
//! Row-buffer timing tells same-bank pairs from others; it cannot tell a
//! channel from a bank, so every function is written as a bank function.
//! On a virtual machine the addresses are guest-physical, not the host's:
//! the file says so (`physical = "guest"`) and the summary warns.

mod measure;
mod plan;
mod report;
pub mod simulated;
pub mod solver;

use crate::Result;
use crate::harness::{BenchOptions, Finished, Progress};
pub use report::Report;
use tinct_core::units::Bytes;

/// Parameters of `tinct bench dram-map`.
#[derive(Debug, Clone, Default, PartialEq)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct Params {
    /// Parameters shared by every bench (`--quick`: a small buffer, few
    /// samples).
    #[cfg_attr(feature = "cli", command(flatten))]
    pub common: BenchOptions,
    /// Memory to sample addresses from; it must span the address bits the
    /// functions read (default 1GiB; `--quick`: 64MiB).
    #[cfg_attr(
        feature = "cli",
        arg(long, value_name = "SIZE", value_parser = tinct_core::units::parse_size)
    )]
    pub buffer: Option<Bytes>,
    /// Addresses sampled (default 2048; `--quick`: 512).
    #[cfg_attr(feature = "cli", arg(long, value_name = "N"))]
    pub samples: Option<usize>,
    /// Timed repetitions per measurement, of which the median counts
    /// (default 32; `--quick`: 8).
    #[cfg_attr(feature = "cli", arg(long, value_name = "N"))]
    pub rounds: Option<usize>,
}

/// Runs the bench, writes `dram-map.json`, `dram-map.csv`, `dram-map.svg`
/// and (when a map was found) `dram-map.toml` into the output directory, and
/// returns the report with its summary.
pub fn run(params: &Params, progress: &dyn Progress) -> Result<Finished<Report>> {
    crate::harness::run::<Report>(&params.common, params, progress)
}
