//! What the attribution finds: each late job explained ([`LateJob`],
//! with what its bound is, [`BoundKind`]); per task and record, the stall
//! time, the bound and the cause ([`Attribution`]); the late jobs counted
//! per cause ([`CauseCounts`], as `summary.json` has them).

use super::Cause;
use serde::{Deserialize, Serialize};

/// What a job's bound is.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BoundKind {
    /// The analysis' WCRT with cache interference.
    Wcrt,
    /// The job's deadline (no WCRT).
    Deadline,
}

/// One job that exceeded its bound, explained.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LateJob {
    /// Job number.
    pub job: u64,
    /// Planned release, ns from the common release.
    pub release_ns: u64,
    /// Response time, ns.
    pub response_ns: u64,
    /// Its bound, ns.
    pub bound_ns: u64,
    /// What the bound is.
    pub bound: BoundKind,
    /// Response − bound, ns.
    pub exceedance_ns: u64,
    /// Stall time within its busy window, ns.
    pub stall_ns: u64,
    /// Its execution time (thread CPU time), ns.
    pub exec_ns: u64,
    /// The modelled C, if any.
    pub wcet_ns: Option<u64>,
    /// The cause.
    pub cause: Cause,
    /// The cause in words, with its numbers.
    pub explanation: String,
}

/// The stall time within every finished job's busy window, and the late
/// jobs explained, per task (in the order of `result.tasks`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Attribution {
    /// Per task, per record: stall ns within its busy window (0 for an
    /// aborted job).
    pub stall_ns: Vec<Vec<u64>>,
    /// Per task, per record: its bound, ns, if it has one.
    pub bound_ns: Vec<Vec<Option<u64>>>,
    /// Per task, per record: the cause, if it exceeded its bound.
    pub cause: Vec<Vec<Option<Cause>>>,
    /// Per task: its late jobs.
    pub late: Vec<Vec<LateJob>>,
}

/// Late jobs per cause.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CauseCounts {
    /// Not under the real-time policy.
    pub not_real_time: u64,
    /// Host stalls.
    pub host_stall: u64,
    /// SCHED_DEADLINE jobs the CBS throttled (execution above the runtime).
    pub cbs_throttle: u64,
    /// Execution time above C.
    pub exec_above_c: u64,
    /// Platform overhead (release latency, the kernel's own work).
    pub platform_overhead: u64,
    /// Colouring not effective.
    pub colouring_not_effective: u64,
    /// Predicted by the analysis (no WCRT within the deadline).
    pub predicted: u64,
    /// No analysis bounds the task.
    pub no_analysis: u64,
    /// Unexplained: above the analysis' WCRT with no cause.
    pub unexplained: u64,
}

impl CauseCounts {
    /// Counts `jobs`.
    pub fn of<'a>(jobs: impl IntoIterator<Item = &'a LateJob>) -> CauseCounts {
        let mut c = CauseCounts::default();
        for job in jobs {
            *c.slot(job.cause) += 1;
        }
        c
    }

    fn slot(&mut self, cause: Cause) -> &mut u64 {
        match cause {
            Cause::NotRealTime => &mut self.not_real_time,
            Cause::HostStall => &mut self.host_stall,
            Cause::CbsThrottle => &mut self.cbs_throttle,
            Cause::ExecAboveC => &mut self.exec_above_c,
            Cause::PlatformOverhead => &mut self.platform_overhead,
            Cause::ColouringNotEffective => &mut self.colouring_not_effective,
            Cause::Predicted => &mut self.predicted,
            Cause::NoAnalysis => &mut self.no_analysis,
            Cause::Unexplained => &mut self.unexplained,
        }
    }

    /// The count of `cause`.
    pub fn get(&self, cause: Cause) -> u64 {
        let mut copy = *self;
        *copy.slot(cause)
    }

    /// Every late job.
    pub fn total(&self) -> u64 {
        Cause::ALL.iter().map(|&c| self.get(c)).sum()
    }

    /// Adds `other`.
    pub fn add(&mut self, other: &CauseCounts) {
        for cause in Cause::ALL {
            *self.slot(cause) += other.get(cause);
        }
    }

    /// `host stall 2, exec above C 1` (only the causes that occur).
    pub fn describe(&self) -> String {
        let words = |c: Cause| match c {
            Cause::NotRealTime => "not real-time",
            Cause::HostStall => "host stall",
            Cause::CbsThrottle => "CBS throttle",
            Cause::ExecAboveC => "execution above C",
            Cause::PlatformOverhead => "platform overhead",
            Cause::ColouringNotEffective => "colouring not effective",
            Cause::Predicted => "predicted by the analysis",
            Cause::NoAnalysis => "no analysis",
            Cause::Unexplained => "UNEXPLAINED",
        };
        Cause::ALL
            .iter()
            .filter(|&&c| self.get(c) > 0)
            .map(|&c| format!("{} {}", words(c), self.get(c)))
            .collect::<Vec<_>>()
            .join(", ")
    }
}
