//! Measurement workbenches for tinct (`tinct bench ...`).
//!
//! Every bench is a module with a parameter struct (`Params`), a
//! `run(&Params, &dyn Progress) -> Result<Finished<Report>>` that measures,
//! writes its JSON, CSV and SVG files and returns its result with a
//! one-screen summary, and result types that derive `Serialize` and
//! `Deserialize`. Nothing here prints. With the feature `cli` (tinct-cli
//! turns it on) each `Params` derives `clap::Args`: every option of `tinct
//! bench` is declared once, on its field, whose doc comment is its help
//! text, and `cli` holds the value parsers clap needs beyond the
//! library's own parsing functions; the CLI parses, calls `run` and prints.
//!
//! ```no_run
//! use tinct_bench::{calibrate, harness::NoProgress};
//!
//! let params = calibrate::Params { partitions: 16, ..Default::default() };
//! let finished = calibrate::run(&params, &NoProgress)?; // writes the files
//! // Absent only when Ctrl-C stopped the run before Δ was measured.
//! if let Some(refill) = &finished.result.refill {
//!     println!("Δ = {} ns", refill.delta.refill_ns);
//! }
//! # Ok::<(), tinct_bench::Error>(())
//! ```
//!
//! [`harness`] is the shared framework every bench uses: common parameters,
//! machine description, an interleaved A/B(/C) repetition runner, JSON/CSV/SVG
//! writers, the progress trait, the summary as data and as text, and thread
//! pinning.
//! Statistics and charts are tinct-report's.

#![forbid(unsafe_code)]

pub mod banks;
pub mod calibrate;
pub mod choice;
#[cfg(feature = "cli")]
pub mod cli;
pub mod coherence;
pub mod crpd;
pub mod demo;
pub mod dram_map;
mod error;
pub mod harness;
pub mod isolation;
pub mod overheads;
pub mod page_placement;
pub mod pinned_threads;
pub mod pipeline;
pub mod scheduling_and_load;
pub mod wcet_profile;

pub use error::{Error, InputError, Result};
