//! Every late job explained: each job whose response time exceeds its
//! bound — the analysis' WCRT (kim2013 Eq. 2) or, without one, its
//! deadline — gets one cause, the first of these that holds:
//!
//! 1. [`Cause::NotRealTime`]: the job did not run under the real-time
//!    policy the bound assumes (`--no-rt`): the bound does not apply.
//! 2. [`Cause::HostStall`]: the [`crate::sentinel`] of its CPU measured
//!    stalls within the job's busy window at least as long as the
//!    exceedance; without them the job would have met its bound. The busy
//!    window starts at the job's release, or earlier at the start of the
//!    stretch during which this task's or higher-priority jobs were pending
//!    on its CPU without a pause ([`BUSY_GAP_NS`]): the level-i busy
//!    period, since a stall there delays the job as well.
//! 3. [`Cause::ExecAboveC`]: its own execution time, and those of the
//!    earlier and higher-priority jobs in its busy window, exceeded their
//!    modelled C by at least the exceedance (with the stall time, if any):
//!    without the excess it would have met its bound.
//! 4. [`Cause::PlatformOverhead`]: the part of its response during which
//!    its CPU ran none of the run's jobs of its priority or above (release
//!    latency, context switches, the kernel's own work; at most the
//!    sentinel's stall threshold per dispatch in the window, since a
//!    longer gap that the top-priority sentinel did not see as a stall
//!    means something the analysis does not know ran above the job), with any stall and
//!    execution above C, covers the exceedance: the analysis did not charge
//!    (enough) platform overhead (`tinct analyze --overheads measured`).
//! 5. [`Cause::ColouringNotEffective`]: the task's working set was meant to
//!    be isolated by page colouring, shares the last-level cache with
//!    another task of the run, and the isolation is absent: the colour
//!    probe finds colouring not effective (or cannot tell), or the working
//!    set was not coloured at all (`--uncolored`).
//! 6. None of these, by what the bound is:
//!    - [`Cause::Predicted`]: the analysis found no WCRT for the task (its
//!      response-time iteration passed the deadline), so the deadline is
//!      the bound and the analysis itself said a job can miss it;
//!    - [`Cause::NoAnalysis`]: no analysis bounds the task (an rt-app file,
//!      a task set run without analysis): the deadline is the bound and
//!      there is no prediction to contradict;
//!    - [`Cause::Unexplained`]: the bound is the analysis' WCRT, so the
//!      analysis or its inputs are wrong, and `tinct run` makes it loud
//!      (see [`crate::output::Summary::unexplained`], which counts exactly
//!      these jobs).
//!
//! A stall shorter than the exceedance is still reported beside another
//! cause. Aborted jobs have no response time and are not attributed.

pub use crate::colouring::Colouring;
use crate::memory::Placement;
use crate::record::{JobRecord, Outcome};
use crate::runtime::{RunResult, TaskRun};
use crate::sentinel::SentinelReport;
use serde::{Deserialize, Serialize};
use tinct_sys::sched::Policy;

/// Two jobs of one CPU closer than this belong to one busy stretch (the
/// switch between them takes microseconds).
pub const BUSY_GAP_NS: u64 = 100_000;

/// Why a job exceeded its bound.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// Not run under the real-time policy the bound assumes.
    NotRealTime,
    /// Host stalls at least as long as the exceedance.
    HostStall,
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
    pub const ALL: [Cause; 8] = [
        Cause::NotRealTime,
        Cause::HostStall,
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
            Cause::ExecAboveC => "exec_above_c",
            Cause::PlatformOverhead => "platform_overhead",
            Cause::ColouringNotEffective => "colouring_not_effective",
            Cause::Predicted => "predicted",
            Cause::NoAnalysis => "no_analysis",
            Cause::Unexplained => "unexplained",
        }
    }
}

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

/// Late jobs per cause.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CauseCounts {
    /// Not under the real-time policy.
    pub not_real_time: u64,
    /// Host stalls.
    pub host_stall: u64,
    /// Execution time above C.
    pub exec_above_c: u64,
    /// Platform overhead (release latency, the kernel's own work).
    #[serde(default)]
    pub platform_overhead: u64,
    /// Colouring not effective.
    pub colouring_not_effective: u64,
    /// Predicted by the analysis (no WCRT within the deadline).
    #[serde(default)]
    pub predicted: u64,
    /// No analysis bounds the task.
    #[serde(default)]
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

/// What the attribution needs besides the records.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Evidence<'a> {
    /// The sentinel's stalls (none: no stall can be claimed).
    pub sentinel: Option<&'a SentinelReport>,
    /// Whether colouring isolates here.
    pub colouring: Colouring,
    /// The CPU sets that share one last-level cache (empty: unknown, taken
    /// as one cache shared by every CPU).
    pub llc_domains: &'a [Vec<u32>],
}

impl<'a> Evidence<'a> {
    /// What a run recorded: its sentinel's stalls, what it knew about
    /// colouring, the machine's last-level caches.
    pub fn of(result: &'a RunResult) -> Evidence<'a> {
        Evidence {
            sentinel: result.sentinel.as_ref(),
            colouring: result.colouring,
            llc_domains: &result.llc_domains,
        }
    }
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

/// The priority a task's jobs run at (FIFO/RR priority, else 0).
fn priority(task: &TaskRun) -> u8 {
    match task.spec.scheduling.policy {
        Policy::Fifo(p) | Policy::RoundRobin(p) => p,
        _ => 0,
    }
}

/// A job's bound and what it is.
fn bound_of(task: &TaskRun, record: &JobRecord) -> Option<(u64, BoundKind)> {
    match task.spec.bound.and_then(|b| b.wcrt_ns) {
        Some(wcrt) => Some((wcrt, BoundKind::Wcrt)),
        None => (record.deadline_ns != u64::MAX).then(|| {
            (
                record.deadline_ns.saturating_sub(record.release_ns),
                BoundKind::Deadline,
            )
        }),
    }
}

/// A finished job that started and ended on one CPU: (cpu, start, finish).
fn on_one_cpu(r: &JobRecord) -> Option<(u32, u64, u64)> {
    let finish = r.finish_ns?;
    (r.started() && r.cpu == r.cpu_end).then_some((r.cpu, r.start_ns, finish))
}

/// The start of job `r`'s busy window: its release, or the start of the
/// level-`prio` busy period on its CPU that was going on when it was
/// released: a stretch without a pause during which jobs of priority ≥
/// `prio` were pending (released and not finished). Pending, not running:
/// a job a stall kept from starting still holds up the jobs after it.
fn window_start(result: &RunResult, r: &JobRecord, prio: u8) -> u64 {
    let intervals: Vec<(u64, u64)> = result
        .tasks
        .iter()
        .filter(|t| priority(t) >= prio)
        .flat_map(|t| &t.records)
        .filter_map(|other| {
            let (cpu, _, finish) = on_one_cpu(other)?;
            (cpu == r.cpu && other.release_ns < r.release_ns).then_some((other.release_ns, finish))
        })
        .collect();
    let mut begin = r.release_ns;
    // Walk back over the stretches that reach the current start.
    let mut changed = true;
    while changed {
        changed = false;
        for &(start, finish) in &intervals {
            if start < begin && finish.saturating_add(BUSY_GAP_NS) >= begin {
                begin = start;
                changed = true;
            }
        }
    }
    begin
}

/// The CPUs `task` shares a last-level cache with, through another task.
fn shares_cache(result: &RunResult, index: usize, llc_domains: &[Vec<u32>]) -> Vec<String> {
    let all_cpus = |t: &TaskRun| -> Vec<u32> {
        let mut cpus: Vec<u32> = t
            .records
            .iter()
            .filter(|r| r.started())
            .flat_map(|r| [r.cpu, r.cpu_end])
            .collect();
        cpus.extend(t.spec.cpus.iter().flatten());
        cpus.sort_unstable();
        cpus.dedup();
        cpus
    };
    let domain_of = |cpu: u32| -> Option<usize> {
        if llc_domains.is_empty() {
            return Some(0);
        }
        llc_domains.iter().position(|d| d.contains(&cpu))
    };
    let mine: Vec<Option<usize>> = all_cpus(&result.tasks[index])
        .into_iter()
        .map(domain_of)
        .collect();
    result
        .tasks
        .iter()
        .enumerate()
        .filter(|&(i, t)| {
            i != index
                && !matches!(t.placement, Placement::None)
                && all_cpus(t)
                    .into_iter()
                    .any(|c| mine.contains(&domain_of(c)))
        })
        .map(|(_, t)| t.spec.name.clone())
        .collect()
}

/// Why the isolation colouring should give is absent for this task, if it is.
fn isolation_absent(placement: &Placement, colouring: Colouring) -> Option<&'static str> {
    match placement {
        Placement::Uncolored { .. } => {
            Some("its working set was not coloured (--uncolored: S(i) NOT enforced)")
        }
        Placement::Colored { .. } => match colouring {
            Colouring::NotEffective => Some(
                "the colour probe finds colouring not effective here, so colours do not keep \
                 other tasks out of its cache",
            ),
            Colouring::Inconclusive => {
                Some("the colour probe cannot show colouring effective here (inconclusive)")
            }
            Colouring::Effective | Colouring::Unknown => None,
        },
        Placement::None | Placement::Heap { .. } => None,
    }
}

fn ms(ns: u64) -> String {
    format!("{:.3} ms", ns as f64 / 1e6)
}

/// Explains every job of `result` that exceeded its bound.
pub fn attribute(result: &RunResult, evidence: &Evidence<'_>) -> Attribution {
    let t0 = result.start_ns;
    let mut out = Attribution::default();
    for (index, task) in result.tasks.iter().enumerate() {
        let prio = priority(task);
        let sharing = shares_cache(result, index, evidence.llc_domains);
        let isolation = isolation_absent(&task.placement, evidence.colouring);
        let wants_rt = task.spec.scheduling.policy.is_realtime();
        let mut stalls = Vec::with_capacity(task.records.len());
        let mut bounds = Vec::with_capacity(task.records.len());
        let mut causes = vec![None; task.records.len()];
        let mut late = Vec::new();
        for (k, r) in task.records.iter().enumerate() {
            let bound = bound_of(task, r);
            bounds.push(bound.map(|(b, _)| b));
            let (Some(finish), Some(response)) = (r.finish_ns, r.response_ns()) else {
                stalls.push(0);
                continue;
            };
            let from = window_start(result, r, prio);
            let cpus = [r.cpu, r.cpu_end];
            let stall = evidence
                .sentinel
                .filter(|s| {
                    s.cpus
                        .iter()
                        .filter(|w| cpus.contains(&w.cpu))
                        .all(|w| w.top_priority)
                })
                .map_or(0, |s| s.stalled_within(&cpus, from, finish));
            stalls.push(stall);
            let Some((bound_ns, kind)) = bound else {
                continue;
            };
            if response <= bound_ns || r.outcome == Outcome::Aborted {
                continue;
            }
            let exceedance = response - bound_ns;
            let over_c = exec_above_c(result, task, r, prio, from, finish);
            // Platform latency is what the sentinel does not call a stall:
            // up to its threshold per dispatch in the window. Longer, with
            // no stall seen at the top priority, something the analysis
            // does not know ran above the job.
            let threshold = evidence
                .sentinel
                .map_or(crate::sentinel::DEFAULT_THRESHOLD_NS, |s| {
                    s.options.threshold_ns
                });
            let (off_task, dispatches) = off_task_ns(result, r, prio);
            let platform_ns = off_task.min(threshold.saturating_mul(dispatches));
            let (cause, mut explanation) = if (wants_rt || kind == BoundKind::Wcrt)
                && (!result.realtime || !r.policy.is_realtime())
            {
                (
                    Cause::NotRealTime,
                    format!(
                        "not run under a real-time policy ({}{}): the bound does not apply",
                        r.policy_text(),
                        if result.realtime { "" } else { ", --no-rt" }
                    ),
                )
            } else if stall >= exceedance {
                (Cause::HostStall, format!("host stall of {}", ms(stall)))
            } else if let Some((_, detail)) = over_c
                .as_ref()
                .filter(|(excess, _)| excess.saturating_add(stall) >= exceedance)
            {
                // The excess (with any stall) covers the exceedance: without
                // it the job would have met its bound.
                (
                    Cause::ExecAboveC,
                    format!("execution time above the modelled C ({detail})"),
                )
            } else if stall
                .saturating_add(over_c.as_ref().map_or(0, |(excess, _)| *excess))
                .saturating_add(platform_ns)
                >= exceedance
            {
                (
                    Cause::PlatformOverhead,
                    format!(
                        "platform overhead: {} of its response with no job of its priority or above running on CPU {} \
                         (release latency, context switches, the kernel's own work){}; charge it with `tinct analyze --overheads measured`",
                        ms(platform_ns),
                        r.cpu,
                        over_c.as_ref().map_or(String::new(), |(excess, _)| format!(
                            ", with execution above C by {}",
                            ms(*excess)
                        ))
                    ),
                )
            } else if let (Some(why), false) = (isolation, sharing.is_empty()) {
                (
                    Cause::ColouringNotEffective,
                    format!(
                        "colouring not effective: {why}; it shares the last-level cache with {}",
                        sharing.join(", ")
                    ),
                )
            } else if kind == BoundKind::Deadline {
                match task.spec.bound {
                    Some(_) => (
                        Cause::Predicted,
                        format!(
                            "predicted: the analysis finds no WCRT for '{}' within its deadline D {} \
                             (its response-time iteration passed D): it said this task can miss",
                            task.spec.name,
                            ms(bound_ns)
                        ),
                    ),
                    None => (
                        Cause::NoAnalysis,
                        format!(
                            "no analysis bounds '{}': it missed its deadline D {} with no cause above",
                            task.spec.name,
                            ms(bound_ns)
                        ),
                    ),
                }
            } else {
                let missing = match (evidence.colouring, &task.placement) {
                    (Colouring::Unknown, Placement::Colored { .. }) if !sharing.is_empty() => {
                        "; colouring was not probed (tinct run --probe-colors)"
                    }
                    _ => "",
                };
                (
                    Cause::Unexplained,
                    format!(
                        "unexplained: no stall and no execution above C long enough to cover it{missing}"
                    ),
                )
            };
            causes[k] = Some(cause);
            if stall > 0 && cause != Cause::HostStall {
                explanation.push_str(&format!("; also a host stall of {}", ms(stall)));
            }
            if let (Some((excess, _)), false) = (
                &over_c,
                matches!(cause, Cause::ExecAboveC | Cause::PlatformOverhead),
            ) {
                explanation.push_str(&format!("; also execution above C by {}", ms(*excess)));
            }
            late.push(LateJob {
                job: r.job,
                release_ns: r.release_ns.saturating_sub(t0),
                response_ns: response,
                bound_ns,
                bound: kind,
                exceedance_ns: exceedance,
                stall_ns: stall,
                exec_ns: r.exec_ns,
                wcet_ns: task.spec.bound.map(|b| b.wcet_ns),
                cause,
                explanation,
            });
        }
        out.stall_ns.push(stalls);
        out.bound_ns.push(bounds);
        out.cause.push(causes);
        out.late.push(late);
    }
    out
}

/// The time between job `r`'s release and finish that its CPU spent on
/// none of the run's jobs of priority ≥ `prio` (its own included):
/// release latencies, context switches, the kernel's own work, the
/// sentinel; and how many dispatches of such jobs fell in that window
/// (each may carry one release latency).
fn off_task_ns(result: &RunResult, r: &JobRecord, prio: u8) -> (u64, u64) {
    let Some(finish) = r.finish_ns else {
        return (0, 0);
    };
    let mut busy = r.exec_ns;
    let mut dispatches = 1u64;
    for (cpu, start, end, exec) in result
        .tasks
        .iter()
        .filter(|t| priority(t) >= prio)
        .flat_map(|t| &t.records)
        .filter(|other| !std::ptr::eq(*other, r))
        .filter_map(|other| on_one_cpu(other).map(|(c, s, e)| (c, s, e, other.exec_ns)))
    {
        let overlap = end.min(finish).saturating_sub(start.max(r.release_ns));
        if cpu == r.cpu && overlap > 0 {
            busy = busy.saturating_add(exec.min(overlap));
            dispatches += 1;
        }
    }
    (
        finish.saturating_sub(r.release_ns).saturating_sub(busy),
        dispatches,
    )
}

/// How much the jobs that could delay `r` executed beyond their modelled
/// C, in all: `r` itself, the earlier jobs of its task and the
/// higher-priority jobs that ran on its CPU within its busy window
/// `[from, finish]` (each ns above C delays `r` by as much), with the
/// largest of them in words; `None` when every one stayed within its C.
fn exec_above_c(
    result: &RunResult,
    task: &TaskRun,
    r: &JobRecord,
    prio: u8,
    from: u64,
    finish: u64,
) -> Option<(u64, String)> {
    let mut total = 0u64;
    let mut largest: Option<(u64, String)> = None;
    let mut note = |excess: u64, words: String| {
        total = total.saturating_add(excess);
        if largest.as_ref().is_none_or(|(l, _)| excess > *l) {
            largest = Some((excess, words));
        }
    };
    if let Some(c) = task.spec.bound.map(|b| b.wcet_ns)
        && r.exec_ns > c
    {
        note(r.exec_ns - c, format!("{} > C {}", ms(r.exec_ns), ms(c)));
    }
    for t in result.tasks.iter().filter(|t| priority(t) >= prio) {
        let own = std::ptr::eq(t, task);
        if !own && priority(t) == prio {
            continue;
        }
        let Some(c) = t.spec.bound.map(|b| b.wcet_ns) else {
            continue;
        };
        for other in &t.records {
            let Some((cpu, start, end)) = on_one_cpu(other) else {
                continue;
            };
            let counts = !own || other.job != r.job;
            if counts && cpu == r.cpu && start < finish && end > from && other.exec_ns > c {
                note(
                    other.exec_ns - c,
                    format!(
                        "{} '{}' job {}: {} > C {}",
                        if own { "earlier" } else { "higher-priority" },
                        t.spec.name,
                        other.job,
                        ms(other.exec_ns),
                        ms(c)
                    ),
                );
            }
        }
    }
    let (_, words) = largest?;
    Some((
        total,
        format!("{} above C in all; the most: {words}", ms(total)),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sentinel::{CpuWatch, SentinelOptions, Stall};
    use crate::spec::{Bound, Scheduling};
    use crate::testing::TaskBuilder;
    use crate::watchdog::StopReason;

    const MS: u64 = 1_000_000;
    const US: u64 = MS / 1000;
    const T0: u64 = 1_000 * MS;

    /// A completed job on CPU 1 under SCHED_FIFO 50, times in ns from T0,
    /// its deadline 100 ms after its release.
    fn job(job: u64, release: u64, start: u64, finish: u64, exec: u64) -> JobRecord {
        JobRecord {
            start_ns: T0 + start,
            finish_ns: Some(T0 + finish),
            exec_ns: exec,
            cpu: 1,
            cpu_end: 1,
            policy: Policy::Fifo(50),
            outcome: Outcome::Completed,
            ..JobRecord::never_started(job, 0, T0 + release, T0 + release + 100 * MS)
        }
    }

    /// A coloured task on CPU 1 at FIFO `prio`, period and deadline 100 ms,
    /// with the analysis' C and WCRT (`None`: the analysis found none).
    fn task(name: &str, prio: u8, c: u64, wcrt: Option<u64>, records: Vec<JobRecord>) -> TaskRun {
        TaskRun {
            spec: TaskBuilder::periodic(name, 100 * MS)
                .cpu(1)
                .fifo(prio)
                .deadline(100 * MS)
                .steps(vec![])
                .bound(Bound {
                    wcet_ns: c,
                    wcrt_ns: wcrt,
                    wcrt_nocint_ns: wcrt,
                    blocking_ns: Some(0),
                    blocking_shows: crate::spec::BlockingShows::Nowhere,
                })
                .build(),
            tid: 1,
            records,
            placement: Placement::Colored {
                bytes: 4096,
                partitions: vec![1],
                colors: "0-15".into(),
                color_count: 16,
                machine_colors: 512,
                pages: 1,
                pages_outside_colors: Some(0),
                frame_drift: None,
                frames: vec![],
            },
            rates: None,
            work: vec![],
            scheduling: Scheduling::of(Policy::Fifo(prio)),
            counters_unavailable: None,
            error: None,
        }
    }

    /// A task with a WCRT whose jobs are `records`.
    fn bounded(name: &str, prio: u8, c: u64, wcrt: u64, records: Vec<JobRecord>) -> TaskRun {
        task(name, prio, c, Some(wcrt), records)
    }

    /// Asserts that `late`'s explanation says `text` (and shows it if not).
    #[track_caller]
    fn assert_explains(late: &LateJob, text: &str) {
        assert!(late.explanation.contains(text), "{}", late.explanation);
    }

    /// A run of `tasks` and the evidence the attribution is given: the
    /// fixture of every test here.
    struct Scenario {
        result: RunResult,
        stalls: Option<SentinelReport>,
        colouring: Colouring,
        llc_domains: Vec<Vec<u32>>,
    }

    impl Scenario {
        fn of(tasks: Vec<TaskRun>) -> Scenario {
            Scenario {
                result: RunResult {
                    start_ns: T0,
                    end_ns: T0 + 1000 * MS,
                    stop: StopReason::Completed,
                    realtime: true,
                    memory_locked: true,
                    rt_throttling: String::new(),
                    watchdog_factor: 3.0,
                    watchdog: crate::spec::WatchdogMode::Realtime,
                    rtapp_log: None,
                    notes: vec![],
                    tasks,
                    sentinel: None,
                    llc_domains: vec![],
                    colouring: Colouring::Unknown,
                },
                stalls: None,
                colouring: Colouring::Unknown,
                llc_domains: vec![],
            }
        }

        /// Task `a` alone (FIFO 50, C 4 ms, WCRT 5 ms) with these jobs.
        fn a(jobs: Vec<JobRecord>) -> Scenario {
            Scenario::of(vec![bounded("a", 50, 4 * MS, 5 * MS, jobs)])
        }

        /// Task `a`: job 0 within its bound, job 1 at 20 ms late by 10 ms
        /// with an execution of 4 ms.
        fn late() -> Scenario {
            Scenario::a(vec![
                job(0, 0, 0, 4 * MS, 4 * MS),
                job(1, 100 * MS, 100 * MS, 115 * MS, 4 * MS),
            ])
        }

        /// With `task` first (the tests give it a higher priority).
        fn above(mut self, task: TaskRun) -> Scenario {
            self.result.tasks.insert(0, task);
            self
        }

        /// With `task` last.
        fn below(mut self, task: TaskRun) -> Scenario {
            self.result.tasks.push(task);
            self
        }

        /// With a top-priority sentinel on CPU 1 that saw these stalls
        /// (ns from T0).
        fn stalls(mut self, stalls: &[(u64, u64)]) -> Scenario {
            self.stalls = Some(SentinelReport {
                options: SentinelOptions::default(),
                cpus: vec![CpuWatch {
                    cpu: 1,
                    top_priority: true,
                    wakes: 100,
                    cpu_time_ns: Some(1),
                    stalls: stalls
                        .iter()
                        .map(|&(a, b)| Stall {
                            start_ns: T0 + a,
                            end_ns: T0 + b,
                        })
                        .collect(),
                    dropped: 0,
                    dropped_ns: 0,
                    steal_ns: None,
                }],
            });
            self
        }

        fn colouring(mut self, colouring: Colouring) -> Scenario {
            self.colouring = colouring;
            self
        }

        fn attribute(&self) -> Attribution {
            attribute(
                &self.result,
                &Evidence {
                    sentinel: self.stalls.as_ref(),
                    colouring: self.colouring,
                    llc_domains: &self.llc_domains,
                },
            )
        }

        /// The one late job of the one task.
        fn only_late(&self) -> LateJob {
            let a = self.attribute();
            assert_eq!(a.late.len(), 1);
            assert_eq!(a.late[0].len(), 1, "{:?}", a.late);
            a.late[0][0].clone()
        }
    }

    #[test]
    fn a_stall_as_long_as_the_exceedance_explains_the_job() {
        let a = Scenario::late()
            .stalls(&[(104 * MS, 115 * MS), (MS, 3 * MS)])
            .attribute();
        let late = &a.late[0][0];
        assert_eq!(a.late[0].len(), 1);
        assert_eq!(late.cause, Cause::HostStall);
        assert_eq!((late.exceedance_ns, late.stall_ns), (10 * MS, 11 * MS));
        assert_eq!(late.explanation, "host stall of 11.000 ms");
        assert_eq!(
            a.stall_ns[0],
            vec![2 * MS, 11 * MS],
            "every job's stall time"
        );
        assert_eq!(a.bound_ns[0], vec![Some(5 * MS); 2]);
        assert_eq!(a.cause[0], vec![None, Some(Cause::HostStall)]);
    }

    #[test]
    fn a_short_stall_does_not_explain_it_and_the_next_cause_is_tried() {
        let short = Scenario::late()
            .stalls(&[(104 * MS, 110 * MS)])
            .colouring(Colouring::Effective);
        let late = short.only_late();
        assert_eq!(late.cause, Cause::Unexplained);
        assert!(
            late.explanation.ends_with("also a host stall of 6.000 ms"),
            "{}",
            late.explanation
        );

        // Not at top priority (SCHED_OTHER sentinel): its gaps prove nothing.
        let mut weak = Scenario::late()
            .stalls(&[(100 * MS, 120 * MS)])
            .colouring(Colouring::Effective);
        weak.stalls.as_mut().unwrap().cpus[0].top_priority = false;
        assert_eq!(weak.only_late().cause, Cause::Unexplained);
    }

    #[test]
    fn execution_above_c_is_blamed_before_colouring() {
        // 10 ms late; executed 15 ms against C = 4 ms: 11 ms above C
        // covers the 10 ms.
        let mut scenario = Scenario::late();
        scenario.result.tasks[0].records[1].exec_ns = 15 * MS;
        let late = scenario.only_late();
        assert_eq!(late.cause, Cause::ExecAboveC);
        assert_eq!(
            late.explanation,
            "execution time above the modelled C (11.000 ms above C in all; the most: 15.000 ms > C 4.000 ms)"
        );
        // 2 ms above C cannot explain 10 ms of lateness: unexplained, with
        // the excess named beside it.
        scenario.result.tasks[0].records[1].exec_ns = 6 * MS;
        let late = scenario.only_late();
        assert_eq!(late.cause, Cause::Unexplained);
        assert!(
            late.explanation
                .ends_with("also execution above C by 2.000 ms"),
            "{}",
            late.explanation
        );
    }

    #[test]
    fn a_higher_priority_job_above_its_c_in_the_busy_window_is_named() {
        // `hi` (C 2 ms) ran 98-111 ms with 13 ms of execution (11 ms above
        // C); `a`'s job 1, released at 100 ms inside that stretch, is 10 ms
        // late.
        let a = Scenario::late()
            .above(bounded(
                "hi",
                60,
                2 * MS,
                2 * MS,
                vec![job(7, 98 * MS, 98 * MS, 111 * MS, 13 * MS)],
            ))
            .attribute();
        let hi_late = &a.late[0][0];
        assert_eq!(hi_late.cause, Cause::ExecAboveC);
        let late = &a.late[1][0];
        assert_eq!(late.cause, Cause::ExecAboveC);
        assert_explains(late, "higher-priority 'hi' job 7: 13.000 ms > C 2.000 ms");
    }

    #[test]
    fn an_earlier_job_of_its_own_task_running_over_c_delays_the_next() {
        // Job 1 ran 100-190 ms (90 ms of execution, C 4 ms); job 2,
        // released at 180 ms, waited for it: both are late, both above C
        // (job 2 through job 1).
        let a = Scenario::a(vec![
            job(1, 100 * MS, 100 * MS, 190 * MS, 90 * MS),
            job(2, 180 * MS, 190 * MS, 194 * MS, 4 * MS),
        ])
        .attribute();
        assert_eq!(a.late[0].len(), 2);
        assert!(a.late[0].iter().all(|j| j.cause == Cause::ExecAboveC));
        assert_explains(&a.late[0][1], "earlier 'a' job 1: 90.000 ms > C 4.000 ms");
    }

    #[test]
    fn the_busy_window_reaches_back_over_a_higher_priority_stretch() {
        // `hi` ran 90-101 ms and a stall 92-99 ms hit it; `a` released at
        // 100 ms finished at 115 ms (10 ms late, so the 7 ms stall alone
        // does not cover it), but a stall before its release counts.
        let stalls = [(92 * MS, 99 * MS), (105 * MS, 108 * MS)];
        let other = |name: &str, prio: u8| {
            bounded(
                name,
                prio,
                20 * MS,
                20 * MS,
                vec![job(0, 90 * MS, 90 * MS, 101 * MS, 4 * MS)],
            )
        };
        let a = Scenario::late()
            .above(other("hi", 60))
            .stalls(&stalls)
            .attribute();
        let late = &a.late[1][0];
        assert_eq!(
            late.stall_ns,
            10 * MS,
            "7 ms before the release, 3 ms after"
        );
        assert_eq!(late.cause, Cause::HostStall);
        // A lower-priority stretch before the release does not count.
        let a = Scenario::late()
            .below(other("lo", 10))
            .stalls(&stalls)
            .attribute();
        assert_eq!(a.late[0][0].stall_ns, 3 * MS);
    }

    #[test]
    fn a_stall_that_kept_the_previous_job_from_starting_delays_this_one() {
        // A stall 18-44 ms: job 1 (released 20 ms) starts only at 44 ms and
        // ends at 48; job 2, released at 40 ms while job 1 was pending,
        // runs 48-52 ms: 7 ms late, and its own window (40-52 ms) holds
        // only 4 ms of the stall. The level-i busy period began at job 1's
        // release, so 24 ms of the stall count and explain it.
        let a = Scenario::a(vec![
            job(0, 0, 0, 4 * MS, 4 * MS),
            job(1, 20 * MS, 44 * MS, 48 * MS, 4 * MS),
            job(2, 40 * MS, 48 * MS, 52 * MS, 4 * MS),
        ])
        .stalls(&[(18 * MS, 44 * MS)])
        .attribute();
        assert_eq!(a.stall_ns[0], vec![0, 24 * MS, 24 * MS]);
        assert_eq!(
            a.cause[0],
            vec![None, Some(Cause::HostStall), Some(Cause::HostStall)]
        );
    }

    #[test]
    fn a_job_ready_but_not_dispatched_is_blamed_on_platform_overhead() {
        // WCRT 4.1 ms; released at 100 ms, started 150 µs later with nothing
        // else on its CPU, 4 ms of execution (= C): 50 µs late, covered by
        // the 150 µs it waited to be dispatched.
        let lone = |start: u64| {
            Scenario::of(vec![bounded(
                "a",
                50,
                4 * MS,
                4 * MS + 100 * US,
                vec![job(1, 100 * MS, start, start + 4 * MS, 4 * MS)],
            )])
        };
        let late = lone(100 * MS + 150 * US).only_late();
        assert_eq!(late.cause, Cause::PlatformOverhead);
        assert_explains(&late, "overhead: 0.150 ms of its response");
        // 3 ms not dispatched is beyond platform latency (the sentinel's
        // stall threshold) and no stall was seen: something unknown ran.
        assert_eq!(lone(103 * MS).only_late().cause, Cause::Unexplained);
        // The same 150 µs spent running a higher-priority job (within its
        // C) is interference the analysis models: unexplained.
        let a = lone(100 * MS + 150 * US)
            .above(bounded(
                "hi",
                60,
                MS,
                MS,
                vec![job(0, 100 * MS, 100 * MS, 100 * MS + 150 * US, 150 * US)],
            ))
            .attribute();
        assert_eq!(a.late[1][0].cause, Cause::Unexplained);
    }

    #[test]
    fn colouring_explains_a_shared_cache_only_when_the_probe_says_it_is_absent() {
        let shared = |colouring| {
            Scenario::late()
                .below(bounded("b", 40, 4 * MS, 50 * MS, vec![]))
                .colouring(colouring)
        };
        let with = |colouring| shared(colouring).attribute().late[0][0].clone();
        let late = with(Colouring::NotEffective);
        assert_eq!(late.cause, Cause::ColouringNotEffective);
        assert_explains(&late, "shares the last-level cache with b");
        assert_eq!(
            with(Colouring::Inconclusive).cause,
            Cause::ColouringNotEffective
        );
        assert_eq!(with(Colouring::Effective).cause, Cause::Unexplained);
        let unknown = with(Colouring::Unknown);
        assert_eq!(unknown.cause, Cause::Unexplained);
        assert_explains(&unknown, "--probe-colors");
        // Another cache: nothing shared.
        let mut separate = shared(Colouring::NotEffective);
        separate.llc_domains = vec![vec![0], vec![1]];
        assert_eq!(
            separate.attribute().late[0][0].cause,
            Cause::ColouringNotEffective,
            "b is on CPU 1 too"
        );
        separate.result.tasks[1].spec.cpus = Some(vec![0]);
        assert_eq!(separate.attribute().late[0][0].cause, Cause::Unexplained);
    }

    #[test]
    fn without_real_time_scheduling_the_bound_does_not_apply() {
        let mut scenario = Scenario::late().stalls(&[(100 * MS, 120 * MS)]);
        scenario.result.realtime = false;
        scenario.result.tasks[0].records[1].policy = Policy::Other;
        let late = scenario.only_late();
        assert_eq!(late.cause, Cause::NotRealTime);
        assert_explains(&late, "--no-rt");
    }

    #[test]
    fn without_a_wcrt_the_deadline_is_the_bound_and_aborted_jobs_are_skipped() {
        let mut scenario = Scenario::late();
        let task = &mut scenario.result.tasks[0];
        task.spec.bound = None;
        task.records[1].finish_ns = Some(T0 + 230 * MS);
        task.records
            .push(JobRecord::never_started(2, 0, T0 + 200 * MS, T0 + 300 * MS));
        let a = scenario.attribute();
        assert_eq!(a.late[0].len(), 1);
        let late = &a.late[0][0];
        assert_eq!(
            (late.bound, late.bound_ns, late.exceedance_ns),
            (BoundKind::Deadline, 100 * MS, 30 * MS)
        );
        assert_eq!(late.wcet_ns, None);
        assert_eq!(a.stall_ns[0].len(), 3);
        // No analysis to contradict: a result, not an unexplained
        // exceedance of the analysis' bound.
        assert_eq!(late.cause, Cause::NoAnalysis);
        assert_explains(late, "'a'");
        let counts = CauseCounts::of(&a.late[0]);
        assert_eq!((counts.no_analysis, counts.total()), (1, 1));
        assert_eq!(counts.unexplained, 0);
        assert_eq!(counts.describe(), "no analysis 1");
    }

    /// `a` (FIFO 50) has a WCRT of 5 ms and is 10 ms late with nothing to
    /// explain it; `p` (FIFO 40) has none (the analysis diverged past its
    /// deadline of 100 ms) and misses it by 30 ms.
    fn unexplained_and_predicted() -> Scenario {
        Scenario::late().colouring(Colouring::Effective).below(task(
            "p",
            40,
            4 * MS,
            None,
            vec![job(0, 300 * MS, 300 * MS, 430 * MS, 4 * MS)],
        ))
    }

    #[test]
    fn a_miss_the_analysis_predicted_is_not_unexplained() {
        let a = unexplained_and_predicted().attribute();
        let predicted = &a.late[1][0];
        assert_eq!(a.late[1].len(), 1);
        assert_eq!(
            (predicted.bound, predicted.bound_ns, predicted.exceedance_ns),
            (BoundKind::Deadline, 100 * MS, 30 * MS)
        );
        assert_eq!(predicted.cause, Cause::Predicted);
        assert_eq!(
            predicted.explanation,
            "predicted: the analysis finds no WCRT for 'p' within its deadline D 100.000 ms \
             (its response-time iteration passed D): it said this task can miss"
        );
        assert_eq!(a.cause[1], vec![Some(Cause::Predicted)]);
        // A cause with evidence still comes first.
        let stalled = unexplained_and_predicted()
            .stalls(&[(310 * MS, 345 * MS)])
            .attribute();
        assert_eq!(stalled.late[1][0].cause, Cause::HostStall);
    }

    #[test]
    fn the_unexplained_count_is_the_unexplained_rows_of_jobs_csv() {
        let result = unexplained_and_predicted().result;
        let mut csv = Vec::new();
        crate::output::write_jobs_csv(&mut csv, &result).unwrap();
        let mut reader = csv::Reader::from_reader(csv.as_slice());
        let column = reader
            .headers()
            .unwrap()
            .iter()
            .position(|h| h == "cause")
            .unwrap();
        let causes: Vec<String> = reader
            .records()
            .map(|row| row.unwrap()[column].to_string())
            .collect();
        let rows = |cause: Cause| causes.iter().filter(|c| *c == cause.name()).count() as u64;
        assert_eq!((rows(Cause::Unexplained), rows(Cause::Predicted)), (1, 1));
        let summary = crate::output::summarize("x.toml", 1000 * MS, &result);
        assert_eq!(summary.unexplained, rows(Cause::Unexplained));
        assert_eq!(summary.causes.unexplained, rows(Cause::Unexplained));
        assert_eq!(summary.causes.predicted, rows(Cause::Predicted));
        assert_eq!(summary.causes.total(), 2);
    }
}
