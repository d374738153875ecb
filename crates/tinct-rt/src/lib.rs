//! tinct-rt: the engine that runs a planned task set for real and records
//! every job.
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
//! the run cleanly. A [`sentinel`] thread per CPU measures host stalls
//! during a run. [`runtime::RunResult`] is what a run returns: every job
//! record, the placement of each working set, the stalls; what it means
//! (the run directory, the verdict, the attribution of late jobs, the
//! isolation proof) is tinct-verify's.
//! [`testing`] has builders for tests.
//! [`critical_sections`] runs a task set's shared resources (pcp, pip) and
//! release jitter; [`rtapp`] reads rt-app's whole grammar into the same
//! event engine ([`spec::Step`]).
//! [`pipeline`] runs a task set's affinity graph: one-packet buffers,
//! data-triggered tasks and the `os`/`affinity`/`static` placements.
//! [`loader`] tells whether the dynamic loader will load the LD_PRELOAD
//! shim into a program (a program body's, and `tinct exec`'s).
#![forbid(unsafe_code)]

pub mod calibrate;
pub mod clock;
pub mod colouring;
pub mod counters;
pub mod critical_sections;
mod error;
pub mod kernels;
pub mod limits;
pub mod loader;
pub mod memory;
pub mod pipeline;
pub mod plan;
pub mod program_heap;
pub mod record;
pub mod release_latency;
pub mod rtapp;
pub mod runtime;
pub mod sentinel;
pub mod shared_log;
pub mod spec;
pub mod testing;
pub mod watchdog;
pub mod working_set;

pub use error::{Result, RtError};
