//! tinct-sim: a set-associative cache model that proves page colorings correct.
//!
//! Real hardware in a virtual machine cannot show whether two tasks' pages
//! share cache sets: guest-physical colors need not be host colors. This crate
//! answers the question functionally. It models one shared cache (sets, ways,
//! line size, LRU or tree-PLRU replacement, optional Intel-style slice hash),
//! replays physical-address streams from several cores into it, and counts
//! hits, misses, evictions and *cross-core* evictions (a line inserted by one
//! core evicted by another core's access).
//!
//! The argument it checks (cache reservation by page coloring, Kim et al.
//! 2013, Section III-C): two working sets drawn from disjoint color sets map
//! to disjoint cache sets, so a replay never shows a cross-core eviction,
//! whatever the working-set sizes; uncolored or overlapping sets do.
//!
//! Layout:
//! - the cache shape, set index and slice hash: [`CacheGeometry`] and
//!   [`SliceHash`], tinct-base's (re-exported here);
//! - [`replacement`]: LRU and tree-PLRU state of one set;
//! - [`cache`]: the cache itself and its counters;
//! - [`color`]: page colors of a geometry;
//! - [`synthetic_memory`]: synthetic physical memory handing out colored frames;
//! - [`stream`]: access patterns over a working set of pages;
//! - [`replay`]: interleaved replay of several cores and its report;
//! - [`isolation`]: the sets each task's frames can occupy and who can
//!   evict whom (what `tinct exec --stats` prints for a program's heap);
//! - [`sharing`]: which tasks share cache lines, true or false sharing,
//!   from address streams or CPU memory samples (gracioli Section IV).
//!
//! Checking an allocation (for instance the frames tinct-mem handed to two
//! tasks) takes one call:
//!
//! ```
//! use tinct_sim::{CacheGeometry, PageColoring, ReplayConfig, SyntheticMemory, replay_pages};
//!
//! let l2 = CacheGeometry::new(1 << 20, 8, 64)?; // 1 MiB, 8-way: 32 colors of 4 KiB
//! let mut memory = SyntheticMemory::new(PageColoring::new(&l2, 4096)?, 64 << 20, 1)?;
//! let task_a = memory.take_colored(&[0, 1, 2, 3], 64)?; // 256 KiB on 4 colors
//! let task_b = memory.take_colored(&[4, 5, 6, 7], 64)?;
//! let report = replay_pages(&l2, &[task_a, task_b], &ReplayConfig::new(10_000, 7))?;
//! assert!(report.isolated());
//! println!("{}", serde_json::to_string_pretty(&report).unwrap());
//! # Ok::<(), tinct_sim::SimError>(())
//! ```
//!
//! Everything is pure Rust: no OS calls, no `unsafe`.
#![forbid(unsafe_code)]

pub mod cache;
pub mod color;
pub mod error;
pub mod isolation;
pub mod replacement;
pub mod replay;
pub mod sharing;
pub mod stream;
pub mod synthetic_memory;

pub use cache::{AccessOutcome, Cache, CoreCounters, Eviction, MAX_CORES};
pub use color::PageColoring;
pub use error::SimError;
pub use isolation::{IsolationReport, TaskFrames};
pub use replacement::Replacement;
pub use replay::{Interleave, ReplayConfig, ReplayReport, replay_pages, replay_streams};
pub use stream::AccessPattern;
pub use synthetic_memory::SyntheticMemory;
pub use tinct_base::geometry::{CacheGeometry, SliceHash};
