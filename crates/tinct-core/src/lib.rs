//! tinct's pure core: the task-set model of kim2013, its file formats, and
//! the cache-aware schedulability analysis (Eq. 1-3).
//!
//! This crate never talks to the operating system and contains no `unsafe`:
//! everything here is deterministic arithmetic on integer nanoseconds and
//! bytes, testable and fast enough to sit inside exhaustive allocation
//! searches.
#![forbid(unsafe_code)]

pub mod alloc;
pub mod analysis;
pub mod calibration;
#[cfg(feature = "cli")]
pub mod cli;
pub mod dram_map;
pub mod experiment;
pub mod format;
pub mod generate;
pub mod limits;
pub mod model;
pub mod overheads;
pub mod partitions;
pub mod saved_calibration;
#[cfg(feature = "parallel")]
pub mod timeout;
/// Durations and sizes: tinct-base's `units`, re-exported under the path
/// task sets, the analysis and the fuzz targets have always used.
pub use tinct_base::units;

pub use model::{Platform, Task, TaskSet};
pub use partitions::PartitionSet;
pub use units::{Bytes, Nanos};
