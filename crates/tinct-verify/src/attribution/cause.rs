//! Why a job exceeded its bound ([`Cause`]): the causes in the order they
//! are tried, and their names in `jobs.csv` and `summary.json`.

use serde::{Deserialize, Serialize};

/// Why a job exceeded its bound.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// Not run under the real-time policy the bound assumes.
    NotRealTime,
    /// Host stalls at least as long as the exceedance.
    HostStall,
    /// A SCHED_DEADLINE job that executed past its runtime Q: the kernel's
    /// CBS throttled it until the reservation's next replenishment.
    CbsThrottle,
    /// Execution time above the modelled C (its own or a higher-priority job's).
    ExecAboveC,
    /// Platform overhead: its CPU ran none of the jobs of its priority or
    /// above for part of its response (release latency, context switches,
    /// the kernel's own work), at least the rest of the exceedance.
    PlatformOverhead,
    /// The isolation page colouring should give is absent.
    ColouringNotEffective,
    /// None of the above, for a task the analysis found no WCRT for: it
    /// predicted that the task can miss its deadline.
    Predicted,
    /// None of the above, for a task no analysis bounds (its deadline is
    /// the bound).
    NoAnalysis,
    /// None of the above, for a job above the analysis' WCRT: the analysis
    /// or its inputs are wrong.
    Unexplained,
}

impl Cause {
    /// Every cause, in the order they are tried.
    pub const ALL: [Cause; 9] = [
        Cause::NotRealTime,
        Cause::HostStall,
        Cause::CbsThrottle,
        Cause::ExecAboveC,
        Cause::PlatformOverhead,
        Cause::ColouringNotEffective,
        Cause::Predicted,
        Cause::NoAnalysis,
        Cause::Unexplained,
    ];

    /// The name in `jobs.csv` and `summary.json`.
    pub fn name(self) -> &'static str {
        match self {
            Cause::NotRealTime => "not_real_time",
            Cause::HostStall => "host_stall",
            Cause::CbsThrottle => "cbs_throttle",
            Cause::ExecAboveC => "exec_above_c",
            Cause::PlatformOverhead => "platform_overhead",
            Cause::ColouringNotEffective => "colouring_not_effective",
            Cause::Predicted => "predicted",
            Cause::NoAnalysis => "no_analysis",
            Cause::Unexplained => "unexplained",
        }
    }
}
