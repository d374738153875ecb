//! The verdict of a run: per task, observed response and execution times
//! (max, p99, mean, ρ = μ + 2σ of demarchi Eq. 1) next to the analysis'
//! bounds, the job counts, and every job that exceeded its bound with its
//! cause ([`crate::attribution`]); the largest blocking met at a lock
//! next to the analysis' B_i; the sentinel's stalls; written as
//! `summary.json`.

use crate::attribution::{Attribution, CauseCounts, Evidence, LateJob, attribute};
use crate::isolation::{Proof, RunIsolation, TaskIsolation};
use serde::{Deserialize, Serialize};
use tinct_report::stats::{Counts, Durations};
use tinct_rt::colouring::Colouring;
use tinct_rt::memory::Placement;
use tinct_rt::record::{Accounting, JobRecord, Outcome};
use tinct_rt::runtime::{RunResult, TaskRun, WorkNote};
use tinct_rt::spec::{BlockingShows, Bound, Policy, WatchdogMode};
use tinct_rt::watchdog::StopReason;

/// Says how the run was scheduled, in every output.
pub fn scheduling_note(realtime: bool) -> &'static str {
    if realtime {
        "the policies the workload asks for (real time where it asks for it)"
    } else {
        "SCHED_OTHER (--no-rt: no real-time guarantee; observed times are not evidence for the bounds)"
    }
}

/// The verdict on one task, in a word: `EXCEEDS BOUND` (its observed
/// response time passed the analysis' WCRT), `MISSED` (a deadline miss),
/// `FAILED` (setup error or panic), `no job completed` (nothing to judge),
/// `within bound` or `ok`.
pub fn verdict_word(
    exceeds_bound: bool,
    missed: u64,
    failed: bool,
    has_bound: bool,
    completed: u64,
) -> &'static str {
    if exceeds_bound {
        "EXCEEDS BOUND"
    } else if missed > 0 {
        "MISSED"
    } else if failed {
        "FAILED"
    } else if completed == 0 {
        "no job completed"
    } else if has_bound {
        "within bound"
    } else {
        "ok"
    }
}

/// Observed versus predicted, for one task.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskVerdict {
    /// Task name.
    pub name: String,
    /// CPUs it was pinned to.
    pub cpus: Option<Vec<u32>>,
    /// The policy in force at its first started job, as the kernel
    /// reported it (the requested one if no job started).
    pub policy: Policy,
    /// Every policy its jobs ran under, in words, in order of first use.
    pub scheduling: Vec<String>,
    /// Per phase: its relative deadline and its job counts.
    pub phases: Vec<PhaseVerdict>,
    /// Job counts (`released = completed + missed + aborted`).
    pub jobs: Accounting,
    /// True if the counts balance.
    pub balanced: bool,
    /// Response time (finish − planned release) of finished jobs.
    pub response: Durations,
    /// Execution time (thread CPU time) of finished jobs.
    pub exec: Durations,
    /// Release latency (start − planned release) of started jobs.
    pub latency: Durations,
    /// Preemptions (involuntary context switches) over all jobs.
    pub preemptions: u64,
    /// Jobs that ended on another CPU than they started on.
    pub migrations: u64,
    /// The analysis' prediction, if the run came from an analysed task set.
    pub bound: Option<Bound>,
    /// Blocking observed at locks next to the analysis' B_i.
    pub blocking: BlockingVerdict,
    /// Observed max response time > WCRT with cache interference (kim2013 Eq. 2).
    pub exceeds_bound: bool,
    /// Observed max response time > WCRT without cache interference.
    pub exceeds_bound_nocint: bool,
    /// Where the working set lived.
    pub placement: Placement,
    /// The proof that its working set is isolated: the cache sets it can
    /// occupy and who can evict it ([`crate::isolation`]); `None` when the
    /// run's `isolation` says the proof is not available.
    pub isolation: Option<TaskIsolation>,
    /// LLC read misses per finished job, when hardware counters are available.
    pub llc_misses: Option<Counts>,
    /// Instructions per finished job, when hardware counters are available.
    pub instructions: Option<Counts>,
    /// Why hardware counters are missing, if they are.
    pub counters_unavailable: Option<String>,
    /// How each job's work was decided.
    pub work: Vec<WorkNote>,
    /// Setup error or panic, if any.
    pub error: Option<String>,
    /// Its program, when its body is one: the command, its pid and how it
    /// ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program: Option<tinct_rt::runtime::ProgramRun>,
    /// Its jobs that exceeded their bound, per cause (required when read:
    /// a file without it was never attributed, and 0 would claim it was).
    pub causes: CauseCounts,
    /// Those jobs, each with its cause.
    pub late: Vec<LateJob>,
}

/// Observed blocking versus the analysis' B_i, for one task.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockingVerdict {
    /// The longest time one of its jobs waited to lock a mutex (the largest
    /// `blocked_ns` of jobs.csv), ns; 0 for a task that locks nothing.
    pub observed_max_ns: u64,
    /// B_i of the analysis, ns (`None`: no analysis, or B_i unbounded).
    pub bound_ns: Option<u64>,
    /// Where a job meets its blocking at run time.
    pub shows: BlockingShows,
    /// That, in words (under `pcp` the blocking is release latency, not
    /// `observed_max_ns`).
    pub note: String,
    /// The wait at a lock exceeded B_i where the analysis says it is met
    /// there (`pip`/`none` resources only): the analysis' inputs (section
    /// lengths, priorities) or its assumptions do not hold.
    pub exceeds_bound: bool,
}

/// No lock waited at and no bound: the verdict of a task without shared
/// resources (and of a task of a `summary.json` written before blocking
/// was observed).
impl Default for BlockingVerdict {
    fn default() -> BlockingVerdict {
        BlockingVerdict::of(&[], None)
    }
}

impl BlockingVerdict {
    /// The verdict on a task's blocking from its job records and bound.
    fn of(records: &[JobRecord], bound: Option<Bound>) -> BlockingVerdict {
        let observed_max_ns = records.iter().map(|r| r.flow.blocked_ns).max().unwrap_or(0);
        let bound_ns = bound.and_then(|b| b.blocking_ns);
        let shows = bound.map_or(BlockingShows::Nowhere, |b| b.blocking_shows);
        let at_lock = matches!(shows, BlockingShows::AtLock | BlockingShows::Both);
        BlockingVerdict {
            observed_max_ns,
            bound_ns,
            shows,
            note: shows.describe().to_string(),
            exceeds_bound: at_lock && bound_ns.is_some_and(|b| observed_max_ns > b),
        }
    }
}

impl BlockingVerdict {
    /// Words the verdict of task `index` of `result` by the mutexes it
    /// locks: without a bound (no analysis) where their blocking shows, and
    /// each one tasks on other CPUs lock too named with their CPUs. Such a
    /// resource is global: the uniprocessor protocols (pcp, pip; Sha,
    /// Rajkumar and Lehoczky 1990) bound no blocking across cores, and
    /// tinct's analysis refuses it, so no B_i covers it.
    fn name_shared_resources(&mut self, result: &RunResult, index: usize) {
        let locked = locked_mutexes(&result.tasks[index].spec);
        if locked.is_empty() {
            return;
        }
        if self.shows == BlockingShows::Nowhere {
            self.shows = BlockingShows::of_protocols(locked.iter().map(|&m| {
                result
                    .mutexes
                    .get(m)
                    .is_some_and(|r| matches!(r.protocol, tinct_sys::sync::Protocol::Protect(_)))
            }));
            self.note = self.shows.describe().to_string();
        }
        let global: Vec<String> = locked
            .iter()
            .filter_map(|&m| used_across_cpus(result, m))
            .collect();
        if !global.is_empty() {
            self.note = format!(
                "{}: a resource used on two cores is a global resource; the uniprocessor \
                 protocols (pcp, pip) do not bound blocking across cores and the analysis gives \
                 no B_i for it (the waits above are observed, not bounded)",
                global.join("; ")
            );
        }
    }
}

/// The mutexes the steps of `task` lock (indices in the run's mutexes).
fn locked_mutexes(task: &tinct_rt::spec::TaskSpec) -> std::collections::BTreeSet<usize> {
    task.phases
        .iter()
        .flat_map(|p| &p.steps)
        .filter_map(tinct_rt::spec::Step::locked_mutex)
        .collect()
}

/// The CPUs a task may run on: those it (or a phase) is pinned to, else
/// those its jobs ran on.
fn cpus_of(task: &TaskRun) -> std::collections::BTreeSet<u32> {
    let pinned: std::collections::BTreeSet<u32> = task
        .spec
        .cpus
        .iter()
        .chain(task.spec.phases.iter().filter_map(|p| p.cpus.as_ref()))
        .flatten()
        .copied()
        .collect();
    if !pinned.is_empty() {
        return pinned;
    }
    task.records
        .iter()
        .filter(|r| r.started())
        .flat_map(|r| [r.cpu, r.cpu_end])
        .collect()
}

/// Mutex `m` in words with its users and their CPUs, when its users run on
/// more than one CPU: `resource 'bus' (pcp) is used on CPUs 0 and 1 ('hi'
/// on 0, 'lo' on 1)`.
fn used_across_cpus(result: &RunResult, m: usize) -> Option<String> {
    let users: Vec<(&str, std::collections::BTreeSet<u32>)> = result
        .tasks
        .iter()
        .filter(|t| locked_mutexes(&t.spec).contains(&m))
        .map(|t| (t.spec.name.as_str(), cpus_of(t)))
        .collect();
    let cpus: std::collections::BTreeSet<u32> =
        users.iter().flat_map(|(_, c)| c.iter().copied()).collect();
    if cpus.len() < 2 {
        return None;
    }
    let list = |set: &std::collections::BTreeSet<u32>| {
        let words: Vec<String> = set.iter().map(u32::to_string).collect();
        match words.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
            _ => words.join(""),
        }
    };
    let mutex = result.mutexes.get(m);
    let protocol = match mutex.map(|r| r.protocol) {
        Some(tinct_sys::sync::Protocol::Protect(_)) => "pcp",
        Some(tinct_sys::sync::Protocol::Inherit) => "pip",
        _ => "none",
    };
    let who: Vec<String> = users
        .iter()
        .map(|(name, c)| format!("'{name}' on {}", list(c)))
        .collect();
    Some(format!(
        "resource '{}' ({protocol}) is used on CPUs {} ({})",
        mutex.map_or("?", |r| r.name.as_str()),
        list(&cpus),
        who.join(", ")
    ))
}

/// One phase of a task in the verdict.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PhaseVerdict {
    /// Phase name.
    pub name: String,
    /// Relative deadline of its jobs, if any.
    pub deadline_ns: Option<u64>,
    /// Its job counts.
    pub jobs: Accounting,
}

/// The whole verdict, written as `summary.json` and read back from it
/// ([`crate::output::RunFiles`]). A key added after the first version
/// (here and in the task verdicts) takes its default when a
/// `summary.json` of an older tinct lacks it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Workload file.
    pub source: String,
    /// Scheduling, said plainly (SCHED_OTHER runs say so).
    pub scheduling: String,
    /// True under SCHED_FIFO.
    pub realtime: bool,
    /// Planned duration.
    pub duration_ns: u64,
    /// From the common release to the last finish.
    pub observed_ns: u64,
    /// Why the run ended.
    pub stop: StopReason,
    /// The reason, in words.
    pub stop_description: String,
    /// `mlockall` succeeded.
    pub memory_locked: bool,
    /// The kernel's RT throttling, as found (tinct never changes it).
    pub rt_throttling: String,
    /// Watchdog overrun factor.
    pub watchdog_factor: f64,
    /// Which jobs the watchdog guarded.
    pub watchdog: WatchdogMode,
    /// Notes on how the run was set up (and, when coloured pages moved
    /// during the run, the warning with the `tinct doctor` hint).
    pub notes: Vec<String>,
    /// Pages of the coloured working sets that were on another frame after
    /// the run than when placed (tinct-mem's `FrameDrift`, summed over the
    /// tasks; `None`: no coloured working set was checked). Not 0: the
    /// kernel migrated pages and their partitions may not have held.
    pub colored_pages_moved: Option<u64>,
    /// Pages of the coloured working sets that were no longer present after
    /// the run (swapped out or unmapped: their frame, so their colour, is
    /// unknown; `FrameDrift::absent` summed over the tasks; `None`: no
    /// coloured working set was checked). Not 0: those pages are counted
    /// neither as moved nor as held.
    pub colored_pages_absent: Option<u64>,
    /// Per task.
    pub tasks: Vec<TaskVerdict>,
    /// Tasks whose observed response time exceeded their bound.
    pub bound_exceeded: Vec<String>,
    /// Total deadline misses.
    pub misses: u64,
    /// Every task's counts balance.
    pub balanced: bool,
    /// Jobs that exceeded their bound, per cause, over every task
    /// (required when read, as each task's).
    pub causes: CauseCounts,
    /// Jobs that exceeded the analysis' WCRT with no cause found (cause
    /// `unexplained`, the same count as `causes.unexplained` and as the
    /// `unexplained` rows of `jobs.csv`): the analysis or its inputs are
    /// wrong. Loud: `tinct run` exits with
    /// status 3 when this is not 0 (docs: README, "Run").
    pub unexplained: u64,
    /// What was known about page colouring.
    pub colouring: Colouring,
    /// What the stall sentinels saw (`None`: no sentinel ran).
    pub sentinel: Option<SentinelSummary>,
    /// The proof that the colouring isolates the working sets, or why
    /// there is none ([`crate::isolation`]).
    pub isolation: RunIsolation,
}

impl Summary {
    /// True if the run ended as planned with no miss and no bound exceeded.
    pub fn clean(&self) -> bool {
        self.stop.is_completed() && self.misses == 0 && self.bound_exceeded.is_empty()
    }

    /// Writes the isolation `proof` into the summary (its run-level
    /// `isolation` and each task's, in order).
    pub fn attach_isolation(&mut self, proof: Proof) {
        self.isolation = proof.run;
        for (verdict, isolation) in self.tasks.iter_mut().zip(proof.tasks) {
            verdict.isolation = isolation;
        }
    }
}

/// The stall sentinel of a run, in `summary.json` (every stall is in
/// `stalls.csv`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SentinelSummary {
    /// Wake-up period, ns.
    pub period_ns: u64,
    /// A wake-up this late is a stall, ns.
    pub threshold_ns: u64,
    /// True if every sentinel ran at SCHED_FIFO 99, above every task (its
    /// stalls are evidence); false under `--no-rt`.
    pub top_priority: bool,
    /// Per CPU watched.
    pub cpus: Vec<SentinelCpu>,
}

/// What the sentinel of one CPU saw and cost.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SentinelCpu {
    /// The CPU.
    pub cpu: u32,
    /// Wake-ups.
    pub wakes: u64,
    /// Its own CPU time, ns (`None`: its process died first).
    pub cpu_time_ns: Option<u64>,
    /// That CPU time as a share of the run's observed time (what it took
    /// from the tasks, its context switches not included).
    pub cpu_share: Option<f64>,
    /// Stalls seen (kept and, past the log's capacity, dropped).
    pub stalls: u64,
    /// Their total length, ns.
    pub stalled_ns: u64,
    /// The longest, ns.
    pub longest_ns: u64,
    /// Steal time the kernel counted on this CPU during the run, ns (USER_HZ
    /// resolution; `None`: not read).
    pub steal_ns: Option<u64>,
}

impl SentinelSummary {
    fn of(report: &tinct_rt::sentinel::SentinelReport, observed_ns: u64) -> SentinelSummary {
        SentinelSummary {
            period_ns: report.options.period_ns,
            threshold_ns: report.options.threshold_ns,
            top_priority: report.top_priority(),
            cpus: report
                .cpus
                .iter()
                .map(|w| SentinelCpu {
                    cpu: w.cpu,
                    wakes: w.wakes,
                    cpu_time_ns: w.cpu_time_ns,
                    cpu_share: w
                        .cpu_time_ns
                        .filter(|_| observed_ns > 0)
                        .map(|t| t as f64 / observed_ns as f64),
                    stalls: (w.stalls.len() as u64).saturating_add(w.dropped),
                    stalled_ns: w.stalled_ns(),
                    longest_ns: w.longest_ns(),
                    steal_ns: w.steal_ns,
                })
                .collect(),
        }
    }
}

fn verdict(task: &TaskRun, late: Vec<LateJob>) -> TaskVerdict {
    let finished: Vec<&JobRecord> = task
        .records
        .iter()
        .filter(|r| r.outcome != Outcome::Aborted)
        .collect();
    let response: Vec<u64> = finished.iter().filter_map(|r| r.response_ns()).collect();
    let exec: Vec<u64> = finished.iter().map(|r| r.exec_ns).collect();
    let latency: Vec<u64> = task.records.iter().filter_map(|r| r.latency_ns()).collect();
    let jobs = Accounting::of(&task.records);
    let response = Durations::of_or_zero(&response);
    // A job stopped before it finished (the watchdog, the run's end) whose
    // execution alone passed the bound exceeded it: its response time is
    // at least its execution time.
    let aborted_over = |b: u64| {
        task.records
            .iter()
            .any(|r| r.outcome == Outcome::Aborted && r.exec_ns > b)
    };
    let over = |b: Option<u64>| {
        b.is_some_and(|b| (response.count > 0 && response.max > b) || aborted_over(b))
    };
    TaskVerdict {
        name: task.spec.name.clone(),
        cpus: task.spec.cpus.clone(),
        policy: task
            .records
            .iter()
            .find(|r| r.started())
            .map_or(task.scheduling.policy, |r| r.policy),
        scheduling: {
            let mut seen: Vec<String> = Vec::new();
            for text in task
                .records
                .iter()
                .filter(|r| r.started())
                .map(JobRecord::policy_text)
            {
                if !seen.contains(&text) {
                    seen.push(text);
                }
            }
            seen
        },
        phases: task
            .spec
            .phases
            .iter()
            .enumerate()
            .map(|(i, phase)| {
                let records: Vec<JobRecord> = task
                    .records
                    .iter()
                    .filter(|r| r.phase as usize == i)
                    .copied()
                    .collect();
                PhaseVerdict {
                    name: phase.name.clone(),
                    deadline_ns: task.spec.deadline_of(phase),
                    jobs: Accounting::of(&records),
                }
            })
            .collect(),
        jobs,
        balanced: jobs.balances(),
        exec: Durations::of_or_zero(&exec),
        latency: Durations::of_or_zero(&latency),
        preemptions: task.records.iter().map(|r| u64::from(r.preemptions)).sum(),
        migrations: task.records.iter().map(|r| u64::from(r.migrations())).sum(),
        bound: task.spec.bound,
        blocking: BlockingVerdict::of(&task.records, task.spec.bound),
        exceeds_bound: over(task.spec.bound.and_then(|b| b.wcrt_ns)),
        exceeds_bound_nocint: over(task.spec.bound.and_then(|b| b.wcrt_nocint_ns)),
        response,
        placement: task.placement.clone(),
        isolation: None,
        llc_misses: counter_distribution(&finished, |r| r.counters.llc_misses),
        instructions: counter_distribution(&finished, |r| r.counters.instructions),
        counters_unavailable: task.counters_unavailable.clone(),
        work: task.work.clone(),
        error: task.error.clone(),
        program: task.program.clone(),
        causes: CauseCounts::of(&late),
        late,
    }
}

fn counter_distribution(
    jobs: &[&JobRecord],
    value: impl Fn(&JobRecord) -> Option<u64>,
) -> Option<Counts> {
    let values: Option<Vec<u64>> = jobs.iter().map(|r| value(r)).collect();
    values.and_then(|v| Counts::of(&v))
}

/// Computes the verdict of a run.
pub fn summarize(source: &str, duration_ns: u64, result: &RunResult) -> Summary {
    let Attribution { late, .. } = attribute(result, &Evidence::of(result));
    let tasks: Vec<TaskVerdict> = result
        .tasks
        .iter()
        .zip(late)
        .enumerate()
        .map(|(index, (task, late))| {
            let mut verdict = verdict(task, late);
            verdict.blocking.name_shared_resources(result, index);
            verdict
        })
        .collect();
    let mut causes = CauseCounts::default();
    for task in &tasks {
        causes.add(&task.causes);
    }
    // The attribution gives `unexplained` only to jobs above the
    // analysis' WCRT (a predicted miss and a task without analysis have
    // their own causes), so this count is `jobs.csv`'s `unexplained` rows.
    let unexplained = causes.unexplained;
    let last_finish = result
        .tasks
        .iter()
        .flat_map(|t| &t.records)
        .map(JobRecord::last_seen_ns)
        .max()
        .unwrap_or(result.start_ns);
    let observed_ns = last_finish.saturating_sub(result.start_ns);
    let drift = colored_frame_drift(result);
    let mut notes = result.notes.clone();
    notes.extend(drift.and_then(|d| d.warning()));
    Summary {
        colored_pages_moved: drift.map(|d| d.moved),
        colored_pages_absent: drift.map(|d| d.absent),
        causes,
        unexplained,
        colouring: result.colouring,
        sentinel: result
            .sentinel
            .as_ref()
            .map(|s| SentinelSummary::of(s, observed_ns)),
        source: source.to_string(),
        scheduling: scheduling_note(result.realtime).to_string(),
        realtime: result.realtime,
        duration_ns,
        observed_ns,
        stop_description: result.stop.describe(),
        stop: result.stop.clone(),
        memory_locked: result.memory_locked,
        rt_throttling: result.rt_throttling.clone(),
        watchdog_factor: result.watchdog_factor,
        watchdog: result.watchdog,
        notes,
        bound_exceeded: tasks
            .iter()
            .filter(|t| t.exceeds_bound)
            .map(|t| t.name.clone())
            .collect(),
        misses: tasks.iter().map(|t| t.jobs.missed).sum(),
        balanced: tasks.iter().all(|t| t.balanced),
        tasks,
        isolation: RunIsolation::not_checked(),
    }
}

/// The frame drift of every coloured working set that was checked, summed
/// (`None`: none was).
fn colored_frame_drift(result: &RunResult) -> Option<tinct_mem::FrameDrift> {
    result
        .tasks
        .iter()
        .filter_map(|task| match &task.placement {
            tinct_rt::memory::Placement::Colored { frame_drift, .. } => *frame_drift,
            _ => None,
        })
        .reduce(|mut total, drift| {
            total.add(drift);
            total
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::fixture::result;

    #[test]
    fn the_verdict_counts_jobs_and_flags_an_exceeded_bound() {
        let s = summarize("x.toml", 400, &result());
        let t = &s.tasks[0];
        assert_eq!(
            (
                t.jobs.released,
                t.jobs.completed,
                t.jobs.missed,
                t.jobs.aborted
            ),
            (4, 2, 1, 1)
        );
        assert!(s.balanced);
        assert_eq!(t.response.max, 150);
        assert!(t.exceeds_bound && t.exceeds_bound_nocint);
        assert_eq!(s.bound_exceeded, vec!["a".to_string()]);
        assert_eq!(s.misses, 1);
        assert!(!s.clean());
        assert_eq!(t.latency.count, 3);
        assert_eq!(t.phases.len(), 1);
        assert_eq!(t.phases[0].deadline_ns, Some(100));
        assert_eq!(t.phases[0].jobs, t.jobs);
        assert_eq!(t.scheduling, ["SCHED_FIFO 90", "SCHED_OTHER nice -3"]);
        // The one job above its WCRT of 30 ns, explained: 149 ns of
        // execution against C = 10 ns.
        assert_eq!(t.late.len(), 1);
        assert_eq!(t.late[0].job, 2);
        assert_eq!(t.causes.exec_above_c, 1);
        assert_eq!(s.causes, t.causes);
        assert_eq!(s.unexplained, 0);
        assert!(s.sentinel.is_none());
        assert_eq!(t.blocking.observed_max_ns, 0, "no job waited at a lock");
        assert_eq!(t.blocking.bound_ns, Some(0));
        assert!(!t.blocking.exceeds_bound);
    }

    /// A run without real-time scheduling (`--no-rt`) says so in its
    /// summary: its times are no evidence for the bounds.
    #[test]
    fn a_run_without_real_time_scheduling_says_so() {
        let mut run = result();
        run.realtime = false;
        let s = summarize("x.toml", 400, &run);
        assert!(!s.realtime);
        assert!(s.scheduling.contains("SCHED_OTHER"), "{}", s.scheduling);
        assert!(summarize("x.toml", 400, &result()).realtime);
    }

    /// A pcp resource locked on CPUs 0 and 1, in a set the
    /// analysis refused (no bounds): the blocking note names the resource,
    /// its CPUs and users, never "no shared resources"; a task that locks
    /// nothing keeps that note.
    #[test]
    fn a_resource_used_on_two_cpus_is_named_with_its_cpus() {
        use tinct_rt::spec::{MutexSpec, Protocol, Step};
        use tinct_rt::testing::TaskBuilder;
        let mut run = result();
        let record = run.tasks[0].records[0];
        let template = run.tasks[0].clone();
        let user = |name: &str, cpu: u32| {
            let spec = TaskBuilder::periodic(name, 100)
                .cpu(cpu)
                .steps(vec![Step::Lock { mutex: 0 }, Step::Unlock { mutex: 0 }])
                .build();
            let mut waited = record;
            waited.flow.blocked_ns = 1_150_000;
            TaskRun {
                spec,
                records: vec![waited],
                ..template.clone()
            }
        };
        run.tasks[0].spec.bound = None;
        run.tasks.push(user("hi", 0));
        run.tasks.push(user("lo", 1));
        run.mutexes = vec![MutexSpec {
            name: "bus".into(),
            protocol: Protocol::Protect(50),
        }];
        let s = summarize("x.toml", 400, &run);
        assert_eq!(s.tasks[0].blocking.note, "no shared resources");
        for t in &s.tasks[1..] {
            let note = &t.blocking.note;
            assert!(
                note.contains(
                    "resource 'bus' (pcp) is used on CPUs 0 and 1 ('hi' on 0, 'lo' on 1)"
                ) && note.contains("global resource"),
                "{}: {note}",
                t.name
            );
            assert_ne!(t.blocking.shows, BlockingShows::Nowhere);
            assert_eq!(t.blocking.observed_max_ns, 1_150_000);
        }
    }

    #[test]
    fn moved_coloured_pages_are_counted_and_warned_about() {
        let colored = |drift: Option<tinct_mem::FrameDrift>| tinct_rt::memory::Placement::Colored {
            stack_bytes: 0,
            stack_frames: Vec::new(),
            bytes: 4096,
            partitions: vec![1],
            colors: "0".into(),
            color_count: 1,
            machine_colors: 8,
            pages: 1,
            pages_outside_colors: Some(0),
            frame_drift: drift,
            frames: vec![],
        };
        // Four pages compared: `moved` (`recolored` of them), `absent`.
        let drift = |moved, recolored, absent| {
            colored(Some(tinct_mem::FrameDrift {
                pages: 4,
                moved,
                recolored,
                absent,
            }))
        };
        let mut run = result();
        assert_eq!(summarize("x.toml", 400, &run).colored_pages_moved, None);
        assert_eq!(summarize("x.toml", 400, &run).colored_pages_absent, None);
        run.tasks[0].placement = drift(0, 0, 0);
        let held = summarize("x.toml", 400, &run);
        assert_eq!(held.colored_pages_moved, Some(0));
        assert_eq!(held.colored_pages_absent, Some(0));
        assert!(!held.notes.iter().any(|n| n.contains("tinct doctor")));
        run.tasks[0].placement = drift(3, 2, 0);
        let moved = summarize("x.toml", 400, &run);
        assert_eq!(moved.colored_pages_moved, Some(3));
        assert_eq!(moved.colored_pages_absent, Some(0));
        assert!(
            moved
                .notes
                .iter()
                .any(|n| n.contains("3 of 4") && n.contains("tinct doctor")),
            "{:?}",
            moved.notes
        );
        // Pages swapped out by the end: absent, beside the moved ones, and
        // the note says so.
        run.tasks[0].placement = drift(1, 0, 2);
        let absent = summarize("x.toml", 400, &run);
        assert_eq!(
            (absent.colored_pages_moved, absent.colored_pages_absent),
            (Some(1), Some(2))
        );
        assert!(
            absent
                .notes
                .iter()
                .any(|n| n.contains("2 of 4 coloured pages were no longer present")),
            "{:?}",
            absent.notes
        );
    }

    #[test]
    fn a_job_stopped_after_running_past_its_bound_exceeds_it() {
        // Only the job the watchdog stopped, with 40 ns of execution
        // against a WCRT of 30 ns: no finished job, yet the bound was passed.
        let mut run = result();
        let task = &mut run.tasks[0];
        let mut stopped = task.records[0];
        stopped.outcome = Outcome::Aborted;
        stopped.finish_ns = None;
        stopped.exec_ns = 40;
        task.records = vec![stopped];
        let s = summarize("x.toml", 400, &run);
        assert!(
            s.tasks[0].exceeds_bound,
            "stopped at 40 ns of execution > WCRT 30 ns"
        );
        assert_eq!(s.bound_exceeded, vec!["a".to_string()]);
        // Within its bound when stopped: not exceeded, and nothing to judge.
        run.tasks[0].records[0].exec_ns = 20;
        let s = summarize("x.toml", 400, &run);
        assert!(!s.tasks[0].exceeds_bound);
        let t = &s.tasks[0];
        assert_eq!(
            verdict_word(
                t.exceeds_bound,
                t.jobs.missed,
                false,
                true,
                t.jobs.completed
            ),
            "no job completed"
        );
    }

    #[test]
    fn blocking_above_b_i_is_flagged_at_the_lock_and_never_under_the_ceiling() {
        let records: Vec<JobRecord> = [40, 250, 0]
            .iter()
            .enumerate()
            .map(|(job, &blocked)| {
                let mut r = JobRecord::never_started(job as u64, 0, 0, 1000);
                r.flow.blocked_ns = blocked;
                r
            })
            .collect();
        let bound = |shows| Bound {
            wcet_ns: 10,
            wcrt_ns: Some(500),
            wcrt_nocint_ns: Some(500),
            blocking_ns: Some(200),
            blocking_shows: shows,
        };
        let pip = BlockingVerdict::of(&records, Some(bound(BlockingShows::AtLock)));
        assert_eq!((pip.observed_max_ns, pip.bound_ns), (250, Some(200)));
        assert!(
            pip.exceeds_bound,
            "250 ns waited at the lock > B_i = 200 ns"
        );
        let within = BlockingVerdict::of(&records[..1], Some(bound(BlockingShows::Both)));
        assert!(!within.exceeds_bound, "40 ns ≤ 200 ns");
        let pcp = BlockingVerdict::of(&records, Some(bound(BlockingShows::BeforeStart)));
        assert!(!pcp.exceeds_bound);
        assert!(pcp.note.contains("release latency"), "{}", pcp.note);
        let none = BlockingVerdict::of(&records, None);
        assert_eq!((none.bound_ns, none.exceeds_bound), (None, false));
    }
}
