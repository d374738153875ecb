//! Measurement workbenches for tinct (`tinct bench ...`).
//!
//! [`harness`] is the shared framework every bench uses: common options,
//! machine description, statistics, an interleaved A/B(/C) repetition
//! runner, JSON/CSV/SVG writers, progress bar, one-screen summary, thread
//! pinning and a JSON schema check for tests.

#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod banks;
pub mod calibrate;
pub mod coherence;
pub mod crpd;
mod error;
pub mod harness;
pub mod isolation;
pub mod page_placement;
pub mod pinned_threads;
pub mod scheduling_and_load;
pub mod wcet_profile;

pub use error::{Error, Result};
