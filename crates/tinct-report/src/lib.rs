//! Reporting helpers shared by tinct's commands.
//!
//! [`LineChart`] writes a small, self-contained SVG line chart (series of
//! (x, y) points with names, axis labels and a title) without any font or
//! system dependency. Output is deterministic: the same chart gives the same
//! bytes, so plots can be compared and committed. [`schedulability`] writes
//! the files of tinct-core's random study (CSV, SVG, JSON).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod schedulability;
mod svg;

pub use svg::{LineChart, Series, nice_ticks};

/// Errors of this crate.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A file could not be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file.
        path: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}
