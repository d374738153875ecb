//! Traces of a run that a person can read in Perfetto (ui.perfetto.dev) or
//! any Chrome trace viewer: one track per thread, its jobs as slices.
//!
//! The writers take one [`TraceRun`] — the threads and their job records,
//! times in nanoseconds from the run's common release — and write
//!
//! - [`perfetto_trace`]: Perfetto's native protobuf format (TracePackets
//!   with TrackDescriptors and TrackEvents; [`protos`] is generated from a
//!   vendored subset of Perfetto's own .proto files), and
//! - [`chrome_json`]: the Chrome trace-event JSON for tools that want it.
//!
//! Both draw the same [`layout`]: on a thread's track the jobs never
//! partially overlap (a job that would is moved to an extra "overlap" lane
//! of that thread); a job that ran on two CPUs is marked with both in its
//! name and an instant where the migration was seen; a pinned job's
//! preemptions are visible as nested slices naming the job that ran on its
//! CPU meanwhile; releases and deadline misses are instant events; per-job
//! values (response time, execution time, counters) are counter tracks.
//! [`check`] reads both files back for tests: the slices of every track and
//! whether any two partially overlap.

pub mod check;
mod chrome;
pub mod layout;
mod perfetto;

pub use chrome::{chrome_json, write_chrome_json};
pub use perfetto::{perfetto_trace, protos};

/// A run as the trace writers see it.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceRun {
    /// The process track's name (e.g. `tinct run plan.toml [SCHED_FIFO]`).
    pub process_name: String,
    /// Facts shown with the trace (source file, scheduling, why it stopped).
    pub metadata: Vec<(String, String)>,
    /// The run's end from the common release: a job that started but was
    /// stopped before it finished is drawn until here.
    pub end_ns: u64,
    /// The threads, in display order.
    pub threads: Vec<TraceThread>,
}

/// One thread (a task) and its jobs.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceThread {
    /// Unique name.
    pub name: String,
    /// The one CPU the thread may run on, if its affinity is exactly one
    /// CPU: only then are its preemptions inferred from other threads' jobs.
    pub pinned_cpu: Option<u32>,
    /// Its jobs, in release order.
    pub jobs: Vec<TraceJob>,
}

/// How a job ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobOutcome {
    /// Finished by its deadline.
    Completed,
    /// Finished after its deadline.
    Missed,
    /// Stopped before it finished, or never started.
    Aborted,
}

impl JobOutcome {
    /// `completed`, `missed` or `aborted`.
    pub fn word(self) -> &'static str {
        match self {
            JobOutcome::Completed => "completed",
            JobOutcome::Missed => "missed",
            JobOutcome::Aborted => "aborted",
        }
    }
}

/// One job; times in nanoseconds from the common release.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceJob {
    /// Job number within its thread.
    pub job: u64,
    /// Phase index (rt-app phases; 0 for plans).
    pub phase: u32,
    /// Planned release.
    pub release_ns: u64,
    /// Absolute deadline, if the job has one.
    pub deadline_ns: Option<u64>,
    /// Start, if it started.
    pub start_ns: Option<u64>,
    /// Finish, if it finished.
    pub finish_ns: Option<u64>,
    /// CPU at the start.
    pub cpu_start: Option<u32>,
    /// CPU at the finish (or where it was last seen).
    pub cpu_end: Option<u32>,
    /// How it ended.
    pub outcome: JobOutcome,
    /// Involuntary context switches during the job.
    pub preemptions: u32,
    /// Per-job values drawn as counter tracks of the thread.
    pub values: Vec<JobValue>,
}

/// The unit of a per-job value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueUnit {
    /// Nanoseconds.
    Nanoseconds,
    /// A count of events (or a CPU number).
    Count,
}

/// One per-job value (response time, LLC misses, ...).
#[derive(Clone, Debug, PartialEq)]
pub struct JobValue {
    /// Counter track name, the same for every job of a thread.
    pub name: String,
    /// Its unit.
    pub unit: ValueUnit,
    /// The value.
    pub value: u64,
}

impl JobValue {
    /// A value named `name` in `unit`.
    pub fn new(name: impl Into<String>, unit: ValueUnit, value: u64) -> JobValue {
        JobValue {
            name: name.into(),
            unit,
            value,
        }
    }
}

/// Errors of the trace writers.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TraceError {
    /// A value does not fit the format (Perfetto counters are signed 64-bit).
    #[error(
        "thread '{thread}' job {job}: {what} = {value} does not fit a Perfetto counter (at most {})",
        i64::MAX
    )]
    ValueTooLarge {
        /// The thread.
        thread: String,
        /// The job.
        job: u64,
        /// The value's name.
        what: String,
        /// The value.
        value: u64,
    },
    /// A thread count that does not fit the format's thread ids.
    #[error("{threads} threads and lanes do not fit Perfetto's 32-bit thread ids")]
    TooManyThreads {
        /// Threads and lanes.
        threads: usize,
    },
}

#[cfg(test)]
pub(crate) mod fixture {
    use super::*;

    /// A started job of `thread` on `cpu` from `start` to `finish`.
    pub(crate) fn job(job: u64, release: u64, start: u64, finish: u64, cpu: u32) -> TraceJob {
        TraceJob {
            job,
            phase: 0,
            release_ns: release,
            deadline_ns: Some(release + 100),
            start_ns: Some(start),
            finish_ns: Some(finish),
            cpu_start: Some(cpu),
            cpu_end: Some(cpu),
            outcome: if finish <= release + 100 {
                JobOutcome::Completed
            } else {
                JobOutcome::Missed
            },
            preemptions: 0,
            values: vec![JobValue::new(
                "response time",
                ValueUnit::Nanoseconds,
                finish.saturating_sub(release),
            )],
        }
    }

    /// Two threads pinned to CPU 0 (`hi` preempts `lo` once), one unpinned
    /// thread whose second job migrates, and an aborted and an unstarted job.
    pub(crate) fn run() -> TraceRun {
        let mut lo_preempted = job(0, 0, 1, 60, 0);
        lo_preempted.preemptions = 1;
        let mut migrated = job(1, 100, 105, 150, 1);
        migrated.cpu_end = Some(0);
        let mut aborted = job(2, 200, 210, 0, 0);
        aborted.finish_ns = None;
        aborted.outcome = JobOutcome::Aborted;
        aborted.values.clear();
        let never = TraceJob {
            start_ns: None,
            finish_ns: None,
            cpu_start: None,
            cpu_end: None,
            outcome: JobOutcome::Aborted,
            values: vec![],
            ..job(1, 100, 0, 0, 0)
        };
        TraceRun {
            process_name: "tinct run test".into(),
            metadata: vec![("source".into(), "t.toml".into())],
            end_ns: 300,
            threads: vec![
                TraceThread {
                    name: "hi".into(),
                    pinned_cpu: Some(0),
                    jobs: vec![job(0, 0, 20, 30, 0), job(1, 100, 100, 180, 0)],
                },
                TraceThread {
                    name: "lo".into(),
                    pinned_cpu: Some(0),
                    jobs: vec![lo_preempted, never],
                },
                TraceThread {
                    name: "free".into(),
                    pinned_cpu: None,
                    jobs: vec![job(0, 0, 2, 40, 1), migrated, aborted],
                },
            ],
        }
    }
}
