//! Reporting helpers shared by tinct's commands.
//!
//! [`trace`] writes a run's job records as traces a person can read: one
//! track per thread in Perfetto's protobuf format and in Chrome JSON.
//! [`html`] makes self-contained pages (no network: style, script and
//! charts inline), [`bench_page`] the page of a bench directory.
//!
//! [`stats`] is the one statistics type of the workspace: [`Durations`] for
//! nanoseconds, [`Counts`] for unit-free event counts.
//!
//! [`chart`] is the one chart implementation: [`LineChart`] writes a small,
//! self-contained SVG line chart (series of (x, y) points with names and
//! styles, axis labels, a title, an optional log2 x axis and marker lines)
//! and [`BarChart`] grouped bars, without any font or system dependency.
//! Every plot of tinct (benches, experiments, run figures) goes through it. It is
//! written here rather than on plotters' SVG backend, which cannot lay out
//! text without a font backend and fonts (see Cargo.toml). Output is
//! deterministic: the same chart gives the same bytes, so plots can be
//! compared and committed. [`schedulability`] writes the files of
//! tinct-core's random study (CSV, SVG, JSON). [`output_path`] checks
//! every command's output path (`-o`, `--out`) before any work starts.
//!
//! [`text`] is the text of reports for people: tinct's one table style,
//! the number formats and the analysis and plan renderers, so that every
//! front end (the CLI, the Python package) prints the same bytes.
#![forbid(unsafe_code)]

pub mod bench_page;
pub mod chart;
pub mod html;
pub mod output_path;
pub mod schedulability;
pub mod stats;
pub mod text;
pub mod trace;

pub use stats::{Counts, Distribution, Durations};

pub use chart::{
    BarChart, BarSeries, LineChart, MAX_DRAWN_POINTS, Series, SeriesStyle, nice_ticks,
};

/// Errors of this crate.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A file or directory could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A directory that is not what a report is made from: bad input, the
    /// directory its file.
    #[error(transparent)]
    Input(#[from] tinct_base::InputError),
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
