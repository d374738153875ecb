//! The attribution itself: for every job above its bound, the first cause
//! that holds (see [`crate::attribution`] for the order), in words with its
//! numbers, from the records and the [`Evidence`] of the run.

use super::busy_window::{exec_above_c, off_task_ns, priority, window_start};
use super::cache_sharing::{isolation_absent, shares_cache};
use super::timeline::Level;
use super::{Attribution, BoundKind, Cause, LateJob};
use std::collections::HashMap;
use tinct_base::units::ms_with_unit;
use tinct_rt::colouring::Colouring;
use tinct_rt::memory::Placement;
use tinct_rt::record::{JobRecord, Outcome};
use tinct_rt::runtime::{RunResult, TaskRun};
use tinct_rt::sentinel::SentinelReport;
use tinct_sys::sched::Policy;

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

/// What the attribution finds for one task: per record its stall and
/// bound, and cause when late; its late jobs.
type TaskFindings = (Vec<u64>, Vec<Option<u64>>, Vec<Option<Cause>>, Vec<LateJob>);

/// Explains every job of `result` that exceeded its bound. The tasks are
/// taken by priority, so that each CPU's `Level` (module `timeline`) is built once per
/// priority and only one priority's are held at a time.
pub fn attribute(result: &RunResult, evidence: &Evidence<'_>) -> Attribution {
    let mut order: Vec<usize> = (0..result.tasks.len()).collect();
    order.sort_by_key(|&i| priority(&result.tasks[i]));
    let mut findings: Vec<Option<TaskFindings>> = vec![None; result.tasks.len()];
    let mut levels: HashMap<u32, Level> = HashMap::new();
    for index in order {
        let prio = priority(&result.tasks[index]);
        if levels.values().next().is_some_and(|l| l.floor() != prio) {
            levels.clear();
        }
        findings[index] = Some(explain_task(result, evidence, index, &mut levels));
    }
    let mut out = Attribution::default();
    for (stalls, bounds, causes, late) in findings.into_iter().flatten() {
        out.stall_ns.push(stalls);
        out.bound_ns.push(bounds);
        out.cause.push(causes);
        out.late.push(late);
    }
    out
}

/// The findings for task `index`; `levels` are the CPUs' levels at its
/// priority built so far.
fn explain_task(
    result: &RunResult,
    evidence: &Evidence<'_>,
    index: usize,
    levels: &mut HashMap<u32, Level>,
) -> TaskFindings {
    let t0 = result.start_ns;
    let task = &result.tasks[index];
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
        let level = levels
            .entry(r.cpu)
            .or_insert_with(|| Level::new(result, r.cpu, prio));
        let from = window_start(level, r);
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
        let over_c = exec_above_c(result, level, index, r, from, finish);
        // Platform latency is what the sentinel does not call a stall:
        // up to its threshold per dispatch in the window. Longer, with
        // no stall seen at the top priority, something the analysis
        // does not know ran above the job.
        let threshold = evidence
            .sentinel
            .map_or(tinct_rt::sentinel::DEFAULT_THRESHOLD_NS, |s| {
                s.options.threshold_ns
            });
        let (off_task, dispatches) = off_task_ns(level, index, r);
        let platform_ns = off_task.min(threshold.saturating_mul(dispatches));
        // Higher-priority jobs released after the bound had passed met the
        // job only because it was still running: had the stall not held it
        // past its bound, they would have come after it (a stall's backlog).
        let backlog = if stall > 0 && stall < exceedance {
            let after_bound = r.release_ns.saturating_add(bound_ns);
            u64::try_from(level.above_released_within(after_bound, from, finish))
                .unwrap_or(u64::MAX)
        } else {
            0
        };
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
            (
                Cause::HostStall,
                format!("host stall of {}", ms_with_unit(stall)),
            )
        } else if stall.saturating_add(backlog) >= exceedance {
            (
                Cause::HostStall,
                format!(
                    "host stall of {}, then {} of higher-priority jobs released after its bound had passed \
                     ran ahead of it (the stall's backlog)",
                    ms_with_unit(stall),
                    ms_with_unit(backlog)
                ),
            )
        } else if let Some((overrun, runtime)) = throttled(task, k) {
            let who = if overrun.job == r.job {
                "it".to_string()
            } else {
                format!(
                    "job {} of its task, earlier in its busy window (the reservation's budget \
                     is its jobs' together),",
                    overrun.job
                )
            };
            (
                Cause::CbsThrottle,
                format!(
                    "CBS throttle: {who} executed {} past its SCHED_DEADLINE runtime {}, so the \
                     kernel stopped it until the reservation's next replenishment (the bound \
                     holds for jobs within their runtime)",
                    ms_with_unit(overrun.exec_ns - runtime),
                    ms_with_unit(runtime)
                ),
            )
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
                    ms_with_unit(platform_ns),
                    r.cpu,
                    over_c.as_ref().map_or(String::new(), |(excess, _)| format!(
                        ", with execution above C by {}",
                        ms_with_unit(*excess)
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
                        ms_with_unit(bound_ns)
                    ),
                ),
                None => (
                    Cause::NoAnalysis,
                    format!(
                        "no analysis bounds '{}': it missed its deadline D {} with no cause above",
                        task.spec.name,
                        ms_with_unit(bound_ns)
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
            explanation.push_str(&format!("; also a host stall of {}", ms_with_unit(stall)));
        }
        if let (Some((excess, _)), false) = (
            &over_c,
            matches!(cause, Cause::ExecAboveC | Cause::PlatformOverhead),
        ) {
            explanation.push_str(&format!(
                "; also execution above C by {}",
                ms_with_unit(*excess)
            ));
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
    (stalls, bounds, causes, late)
}

/// The job of `task` whose overrun of its runtime Q throttled job `k`,
/// with that Q: job `k` itself or an earlier one it queued behind (each
/// still running when the next was released: a reservation's jobs share
/// its budget), that executed past Q without suspending (a job that sleeps
/// may get a fresh budget at its wake-up), when job `k` finished no
/// earlier than the replenishment a throttle waits for, one period after
/// the overrunning job's release. Reservations with GRUB reclaiming run
/// past Q without a throttle: none.
fn throttled(task: &TaskRun, k: usize) -> Option<(&JobRecord, u64)> {
    let records = &task.records[..=k];
    let finish = records[k].finish_ns?;
    let mut at = k;
    loop {
        let r = &records[at];
        if let Some(reservation) = deadline_reservation(task, r)
            && r.exec_ns > reservation.runtime_ns
            && r.voluntary_switches == 0
            && finish >= r.release_ns.saturating_add(reservation.period_ns)
        {
            return Some((r, reservation.runtime_ns));
        }
        let queued = at > 0 && records[at - 1].finish_ns.is_some_and(|f| f > r.release_ns);
        if !queued {
            return None;
        }
        at -= 1;
    }
}

/// The SCHED_DEADLINE reservation job `r` ran under: the scheduling in
/// force at its phase (the last phase up to it that sets one, else the
/// task's), when the job ran under SCHED_DEADLINE without reclaiming.
fn deadline_reservation(task: &TaskRun, r: &JobRecord) -> Option<tinct_sys::sched::DeadlineParams> {
    if r.policy != Policy::Deadline {
        return None;
    }
    let phases = task.spec.phases.get(..=r.phase as usize).unwrap_or(&[]);
    let in_force = phases
        .iter()
        .rev()
        .find_map(|p| p.scheduling)
        .unwrap_or(task.spec.scheduling);
    (in_force.policy == Policy::Deadline && !in_force.reclaim)
        .then_some(in_force.deadline)
        .flatten()
}
