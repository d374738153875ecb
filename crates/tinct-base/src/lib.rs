//! The base of tinct: the facts every other crate builds on, each in one
//! place, with no OS calls and nothing to link but `thiserror` (and serde,
//! behind the default feature `serde`), so that even the LD_PRELOAD shim
//! links it.
//!
//! - [`geometry`]: the geometry of a cache ([`geometry::CacheGeometry`]:
//!   sets, ways, lines, slices) and its page colours (kim2013 Section
//!   III-C; sliced last-level caches, Section IV-A): colours, colour bits,
//!   the colour of a frame.
//! - [`input`]: [`InputError`], the one type of bad input (file, line,
//!   field, expected, found) that the libraries' errors wrap.
//! - [`list`]: the `0-3,8,10-11` list grammar of CPUs, colours, colour
//!   bits, banks, partitions and PMU bit ranges.
//! - [`stats`]: order statistics of samples (nearest-rank percentiles, the
//!   median and σ of floats).
//! - [`units`]: durations ([`Nanos`]) and sizes ([`Bytes`]), read and
//!   written exactly (`"45.3us"`, `"18MiB"`), and the one rule of every
//!   report for a time in milliseconds ([`units::ms`]).

#![forbid(unsafe_code)]

pub mod geometry;
pub mod input;
pub mod list;
pub mod stats;
pub mod units;

pub use input::InputError;
pub use units::{Bytes, Nanos};
