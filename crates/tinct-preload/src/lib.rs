//! `libtinct_preload.so`: unmodified programs get their heap from their
//! cache partition (kim2013 Section III-A: no change to application
//! software; Section III-C: pages of the partition's colors, handed out
//! round robin, freed pages first).
//!
//! ```text
//! TINCT_COLORS=0-15 LD_PRELOAD=libtinct_preload.so program args...
//! tinct exec --colors 0-15 -- program args...      # the same, set up for you
//! ```
//!
//! The malloc family ([`exports`]) is served by a colored tinct-mem pool
//! ([`heap`]) built on the first allocation from the settings in the
//! environment (`tinct_mem::ShimConfig`, the contract `tinct exec` writes): colors, and optionally DRAM banks and
//! controllers (`TINCT_BANKS`: pages in both a requested color and a
//! requested bank). The shim's own data lives in the uncolored
//! [`bootstrap`] arena, so building the pool never recurses into `malloc`.
//! [`process`] holds the process-wide heap, the `fork` handlers and the
//! exit report ([`report`]); [`stderr`] writes from inside the allocator.

#![warn(missing_docs)]

pub mod bootstrap;
#[cfg(not(test))]
pub mod exports;
pub mod heap;
pub mod lock;
pub mod process;
pub mod report;
pub mod stderr;

/// The shim's own Rust allocations never go through the `malloc` it replaces.
#[cfg(not(test))]
#[global_allocator]
static GLOBAL: bootstrap::BootstrapAlloc = bootstrap::BootstrapAlloc;
