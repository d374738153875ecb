//! tinct-mem: a colored, bank- and controller-aware page pool and byte
//! allocator for real-time tasks on stock Linux.
//!
//! * [`mapping`]: physical address → cache color, DRAM bank and controller
//!   (bit lists or DRAMA-style XOR masks), and N_P partitions → colors.
//! * [`PageBook`]: free lists by color and by (controller, bank); colored
//!   allocation as in Kim et al. 2013 (Section III-C, footnote 5) and
//!   bank-aware allocation as in Chandru & Mueller, Algorithm 1. It holds no
//!   memory, so tests can build it from synthetic frame numbers.
//! * [`Pool`]: one anonymous mapping, THP refused, populated, locked
//!   when allowed ([`locking`]: what else moves pages), translated in bulk through `/proc/self/pagemap`.
//! * [`SharedPool`]: a thread-safe pool with a byte allocator (size
//!   classes, whole pages, contiguous multi-page spans of colored pages),
//!   and [`ColoredBuffer`], a safe slice over colored memory for crates
//!   without `unsafe`.
//!
//! * [`ColoredArea`]: one contiguous range whose every page is of the
//!   requested colours (and banks), grown on demand with pages moved in by
//!   [`page_mover`] (`UFFDIO_MOVE`): the LD_PRELOAD shim's memory.
//!
//! * [`ShimConfig`]: the `TINCT_*` environment contract of the LD_PRELOAD
//!   shim, written by `tinct exec` and read by the shim.
//!
//! The C ABI lives in the crate `tinct-mem-ffi` (`include/tinct_mem.h`).

mod buffer;
pub mod colored_area;
mod error;
pub mod frame_drift;
pub mod gf2;
mod intrusive_lists;
pub mod locking;
pub mod machine;
pub mod mapping;
mod page_book;
pub mod page_mover;
mod pool;
mod region;
pub mod row_conflict;
mod shared_pool;
pub mod shim_config;
mod span_window;

pub use buffer::ColoredBuffer;
pub use colored_area::{AreaSpec, ColoredArea, GrowthStats};
pub use error::MemError;
pub use frame_drift::FrameDrift;
pub use locking::Locking;
pub use machine::{machine_color_geometry, machine_mapping};
pub use mapping::{AddressMapping, PageClass, PartitionColors, XorFunctions};
pub use page_book::{
    BankCounts, BankGrant, BankRequest, ColorCursor, Counts, DEFAULT_CHUNK_BYTES, Modes, PageBook,
    PageId, PoolStats, Step,
};
pub use pool::{BankOptions, Pool, PoolOptions};
pub use shared_pool::{
    Allocation, BankPages, BankSpan, MAX_SMALL, MIN_ALIGN, SIZE_CLASSES, SharedPool, StepCounts,
    UsedPage, size_class,
};
pub use shim_config::{FrameReport, Residue, ShimConfig, ThreadStacks, read_frame_reports};
