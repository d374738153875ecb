//! `tinct bench banks`: DRAM bank and controller contention, after
//! Chandru & Mueller (Sections 4-5, Figures 4-9, Tables 1 and 2).
//!
//! N pinned threads run the same memory kernel at the same time, each on its
//! own memory, under several allocations:
//! * **default**: the ordinary heap (the paper's "default allocator": banks
//!   chosen by chance);
//! * **own-bank**: thread *i* gets pages of bank *i* only;
//! * **shared-bank**: every thread gets pages of one bank (pathological);
//! * **own-controller** / **shared-controller**: the same one level up;
//! * the paper's conditions ([`Allocation::name`] gives its labels): threads
//!   fall in one group per controller (the paper's quadrants); **2banks**,
//!   **4banks**, **8banks**: "colored allocation", thread *j* of a group
//!   gets bank *j mod c* of its own controller (c colours per controller;
//!   the paper wraps bank indices the same way); **ctrl-local**: pages of
//!   its own controller, any bank; **opposite-ctrl**: of the opposite
//!   controller; **circular-alloc**: every thread's pages from every
//!   controller in turn (tasks of each quadrant accessing all quadrants);
//!   **1node** / **2nodes**: every thread's memory on NUMA node 0, or
//!   spread over two nodes (by first touch; NUMA machines only).
//!
//! Each thread's pages are taken with chandru-mueller Algorithm 1 under
//! `--bank-mode` (exact by default); `fallback_pages` says how many pages of
//! a thread came from a fallback step. Bank and controller placement needs
//! the DRAM address functions (`--bank-functions` / `--controller-functions`
//! as XOR masks, or `--dram-map` from `tinct bench dram-map`); without them
//! only the allocations that need none run, and every skipped condition is
//! listed with its reason.
//!
//! Kernels: STREAM-like copy, scale, add, triad, random access and an
//! integer sort after NAS IS ([`kernels`]). Reported per kernel and
//! allocation: execution time (min/median/p99/max), bandwidth and their
//! standard deviations; then the paper's two tables: Table 1 (standard
//! deviation of IS time and of STREAM add bandwidth under 4 banks, 8
//! banks and controller-local) and Table 2 (standard deviation of the
//! composite bubblesort's time per (threads, pages per thread): 32/2,
//! 8/10, 32/10, 48/10, under every condition; [`composite`]).

pub mod composite;
pub mod kernels;
mod measure;
pub mod numa;
mod plan;
mod report;
pub mod tables;

use crate::Result;
use crate::harness::{BenchOptions, Finished, Progress};
use kernels::Kernel;
pub use report::{Allocation, AllocationResult, KernelResult, Parameters, Report, Skipped};
use tinct_core::units::Bytes;

/// Parameters of `tinct bench banks`.
#[derive(Debug, Clone, Default, PartialEq)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct Params {
    /// Parameters shared by every bench.
    #[cfg_attr(feature = "cli", command(flatten))]
    pub common: BenchOptions,
    /// Threads, one per CPU of `--cpus` (default: every allowed CPU).
    #[cfg_attr(feature = "cli", arg(long, value_name = "N"))]
    pub threads: Option<usize>,
    /// Memory per thread, split into the three STREAM arrays
    /// (default 48MiB; `--quick`: 3MiB).
    #[cfg_attr(
        feature = "cli",
        arg(long, value_name = "SIZE", value_parser = tinct_core::units::parse_size)
    )]
    pub size: Option<Bytes>,
    /// DRAM bank functions as XOR masks, DRAMA style (`0x2000,0x44000`);
    /// every mask must read only bits at or above the page size.
    #[cfg_attr(feature = "cli", arg(long, value_name = "MASKS"))]
    pub bank_functions: Option<String>,
    /// DRAM controller (channel) functions as XOR masks.
    #[cfg_attr(feature = "cli", arg(long, value_name = "MASKS"))]
    pub controller_functions: Option<String>,
    /// The DRAM mapping file `tinct bench dram-map` wrote, instead of
    /// --bank-functions / --controller-functions (its functions that read
    /// bits inside a page are left out: no page allocation can choose them).
    #[cfg_attr(
        feature = "cli",
        arg(
            long,
            value_name = "FILE",
            conflicts_with_all = ["bank_functions", "controller_functions"]
        )
    )]
    pub dram_map: Option<std::path::PathBuf>,
    /// chandru-mueller Algorithm 1's fallbacks when a thread's bank runs
    /// out, comma-separated: exact (none), restricted, unrestricted, split.
    #[cfg_attr(
        feature = "cli",
        arg(
            long,
            value_name = "MODES",
            default_value = "exact",
            value_parser = tinct_mem::Modes::parse
        )
    )]
    pub bank_mode: tinct_mem::Modes,
    /// Kernels to run: copy, scale, add, triad, random, integer-sort
    /// (default: all).
    #[cfg_attr(feature = "cli", arg(long, value_delimiter = ','))]
    pub kernels: Option<Vec<Kernel>>,
    /// Composite bubblesort configurations THREADS/PAGES, comma-separated
    /// (default the paper's 32/2,8/10,32/10,48/10; `--quick`: N/2,N/10 with N = min(4, CPUs);
    /// `none` for none).
    // `std::vec::Vec`: clap takes the list as one value (parsed by
    // `composite::parse_configurations`), not as values of a repeated option.
    #[cfg_attr(
        feature = "cli",
        arg(long, value_name = "T/P,...", value_parser = composite::parse_configurations)
    )]
    pub composite: Option<std::vec::Vec<(usize, usize)>>,
    /// Run the measuring threads under SCHED_FIFO with this priority
    /// (1-99; needs root or CAP_SYS_NICE). Recommended on a busy machine.
    #[cfg_attr(feature = "cli", arg(long, value_name = "PRIORITY"))]
    pub fifo: Option<u8>,
}

/// Unrecorded warm-up rounds before the measured ones.
const WARMUP_ROUNDS: u32 = 1;

/// Runs the bench, writes `banks.json`, `banks.csv` and `banks.svg` into the
/// output directory, and returns the report with its summary.
pub fn run(params: &Params, progress: &dyn Progress) -> Result<Finished<Report>> {
    crate::harness::run::<Report>(&params.common, params, progress)
}
