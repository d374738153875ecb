//! tinct-rt: runs a planned task set for real and records every job.
//!
//! A [`spec::RunSpec`] describes periodic threads (built from a planned
//! task-set file and its analysis by [`spec::RunSpec::from_plan`] or
//! [`plan::load_plan`], or from an rt-app workload file by [`rtapp::load`]),
//! inside the named [`limits`]. [`runtime::run`] starts one thread per
//! task — SCHED_FIFO at the plan's priority, pinned, memory locked —
//! releases all of them at one common instant with absolute-time
//! `clock_nanosleep`, runs each job's body ([`kernels`], optionally
//! [`calibrate`]d to a target execution time) over a [`working_set`] taken
//! from the page colors of the task's partitions S(i) ([`memory`],
//! tinct-mem) and records every job in a preallocated
//! [`shared_log::SharedLog`] (no allocation and no I/O while tasks run;
//! hardware [`counters`] through tinct-sys). Under supervision the tasks run
//! in a forked child, so a crash in one still leaves every recorded job. A
//! top-priority [`watchdog`] stops runaway runs; SIGINT and SIGTERM stop
//! the run cleanly. The [`output`] module checks the run directory before
//! the first release and writes `jobs.csv`, the traces
//! `trace.perfetto-trace` and `trace.json` (tinct-report's writers),
//! `summary.json`, `machine.json`, `analysis.json` and kim2013 Fig. 8 and
//! 10, reads a run directory back and makes its HTML report; the verdict's statistics (max, p99, mean and
//! ρ = μ + 2σ of demarchi Eq. (1)) are tinct-report's `Distribution`.
//! [`isolation`] proves from the frames each working set was given, through
//! tinct-sim's model of the last-level cache, which tasks can evict which.
//! [`run_in_dir`] is all of it in one call, as `tinct run` does it;
//! [`testing`] has builders for tests.
//! [`critical_sections`] runs a task set's shared resources (pcp, pip) and
//! release jitter; [`rtapp`] reads rt-app's whole grammar into the same
//! event engine ([`spec::Step`]).
//! [`pipeline`] runs a task set's affinity graph: one-packet buffers,
//! data-triggered tasks and the `os`/`affinity`/`static` placements.
//! [`monitor`] samples the counters of any process over time (`tinct monitor`).
//! A [`sentinel`] thread per CPU measures host stalls during a run, and
//! [`attribution`] explains every job that exceeded its bound (a stall,
//! execution above C, colouring not effective, or unexplained).
#![forbid(unsafe_code)]

pub mod attribution;
pub mod calibrate;
pub mod clock;
pub mod colouring;
pub mod counters;
pub mod critical_sections;
mod error;
pub mod exec;
pub mod isolation;
pub mod kernels;
pub mod limits;
pub mod loader;
pub mod memory;
pub mod monitor;
pub mod output;
pub mod pipeline;
pub mod plan;
pub mod program_heap;
pub mod record;
pub mod release_latency;
pub mod rtapp;
pub mod run_in_dir;
pub mod runtime;
pub mod sentinel;
pub mod shared_log;
pub mod spec;
pub mod testing;
pub mod watchdog;
pub mod working_set;

pub use error::{Result, RtError};
