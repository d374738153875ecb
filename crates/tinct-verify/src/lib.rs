//! tinct-verify: what a run produced, and whether it kept its promises —
//! the "verify" step of tinct's loop (measure → model → analyze → enforce
//! → verify).
//!
//! tinct-rt runs a workload and returns its records
//! ([`tinct_rt::runtime::RunResult`]); this crate turns them into the run's
//! products. [`output`] checks the run directory before the first release
//! and writes `jobs.csv`, the traces `trace.perfetto-trace` and
//! `trace.json` (tinct-report's writers), `summary.json` (the verdict, its
//! statistics tinct-report's `Distribution`: max, p99, mean and
//! ρ = μ + 2σ of demarchi Eq. (1)), `machine.json`, `analysis.json`,
//! rt-app-style thread logs and kim2013 Fig. 8 and 10; it reads a run
//! directory back and makes its HTML report. [`attribution`] explains every
//! job that exceeded its bound (a host stall, execution above C, colouring
//! not effective, or unexplained). [`isolation`] proves from the frames
//! each working set was given, through tinct-sim's model of the last-level
//! cache, which tasks can evict which. [`run_in_dir`] is all of it in one
//! call, as `tinct run` does it.
//!
//! Errors are tinct-rt's [`tinct_rt::RtError`]: reading and writing a run
//! directory fails the ways a run does (bad input, a write, the colour
//! bits), and one type reaches the CLI's exit statuses.
#![forbid(unsafe_code)]

pub mod attribution;
pub mod isolation;
pub mod output;
pub mod run_in_dir;
