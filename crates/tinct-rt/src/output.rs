//! The verdict of a run and the run directory: `summary.json`, `jobs.csv`
//! and a Chrome / Perfetto trace-event `trace.json`.
//!
//! All three are written after the threads have been joined (at the end of
//! the run, after a watchdog stop, or after SIGINT/SIGTERM), from the
//! records in memory. Times in the files are nanoseconds relative to the
//! common release (the trace uses microseconds, as its format requires).

use crate::memory::Placement;
use crate::record::{Accounting, JobRecord, Outcome};
use crate::runtime::{RunResult, TaskRun, WorkNote};
use crate::spec::{Bound, Policy};
use crate::watchdog::StopReason;
use crate::{Result, RtError};
use serde::Serialize;
use serde_json::{Value, json};
use std::path::Path;
use tinct_report::stats::{Counts, Durations};

/// Says how the run was scheduled, in every output.
pub fn scheduling_note(realtime: bool) -> &'static str {
    if realtime {
        "SCHED_FIFO (real time)"
    } else {
        "SCHED_OTHER (--no-rt: no real-time guarantee; observed times are not evidence for the bounds)"
    }
}

/// Observed versus predicted, for one task.
#[derive(Clone, Debug, Serialize)]
pub struct TaskVerdict {
    /// Task name.
    pub name: String,
    /// CPUs it was pinned to.
    pub cpus: Option<Vec<u32>>,
    /// The policy it ran under.
    pub policy: Policy,
    /// Relative deadline of its first phase, if any.
    pub deadline_ns: Option<u64>,
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
    /// Observed max response time > WCRT with cache interference (kim2013 Eq. 2).
    pub exceeds_bound: bool,
    /// Observed max response time > WCRT without cache interference.
    pub exceeds_bound_nocint: bool,
    /// Where the working set lived.
    pub placement: Placement,
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
}

/// The whole verdict, written as `summary.json`.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    /// Workload file.
    pub source: String,
    /// Scheduling, said plainly (SCHED_OTHER runs say so).
    pub scheduling: &'static str,
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
    /// Per task.
    pub tasks: Vec<TaskVerdict>,
    /// Tasks whose observed response time exceeded their bound.
    pub bound_exceeded: Vec<String>,
    /// Total deadline misses.
    pub misses: u64,
    /// Every task's counts balance.
    pub balanced: bool,
}

impl Summary {
    /// True if the run ended as planned with no miss and no bound exceeded.
    pub fn clean(&self) -> bool {
        self.stop.is_completed() && self.misses == 0 && self.bound_exceeded.is_empty()
    }
}

fn verdict(task: &TaskRun) -> TaskVerdict {
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
    let over = |b: Option<u64>| b.is_some_and(|b| response.count > 0 && response.max > b);
    TaskVerdict {
        name: task.spec.name.clone(),
        cpus: task.spec.cpus.clone(),
        policy: task.policy,
        deadline_ns: task
            .spec
            .phases
            .first()
            .and_then(|p| task.spec.deadline_of(p)),
        jobs,
        balanced: jobs.balances(),
        exec: Durations::of_or_zero(&exec),
        latency: Durations::of_or_zero(&latency),
        preemptions: task.records.iter().map(|r| u64::from(r.preemptions)).sum(),
        migrations: task.records.iter().map(|r| u64::from(r.migrations())).sum(),
        bound: task.spec.bound,
        exceeds_bound: over(task.spec.bound.and_then(|b| b.wcrt_ns)),
        exceeds_bound_nocint: over(task.spec.bound.and_then(|b| b.wcrt_nocint_ns)),
        response,
        placement: task.placement.clone(),
        llc_misses: counter_distribution(&finished, |r| r.counters.llc_misses),
        instructions: counter_distribution(&finished, |r| r.counters.instructions),
        counters_unavailable: task.counters_unavailable.clone(),
        work: task.work.clone(),
        error: task.error.clone(),
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
    let tasks: Vec<TaskVerdict> = result.tasks.iter().map(verdict).collect();
    let last_finish = result
        .tasks
        .iter()
        .flat_map(|t| &t.records)
        .map(|r| r.finish_ns.max(r.release_ns))
        .max()
        .unwrap_or(result.start_ns);
    Summary {
        source: source.to_string(),
        scheduling: scheduling_note(result.realtime),
        realtime: result.realtime,
        duration_ns,
        observed_ns: last_finish.saturating_sub(result.start_ns),
        stop_description: result.stop.describe(),
        stop: result.stop.clone(),
        memory_locked: result.memory_locked,
        rt_throttling: result.rt_throttling.clone(),
        watchdog_factor: result.watchdog_factor,
        bound_exceeded: tasks
            .iter()
            .filter(|t| t.exceeds_bound)
            .map(|t| t.name.clone())
            .collect(),
        misses: tasks.iter().map(|t| t.jobs.missed).sum(),
        balanced: tasks.iter().all(|t| t.balanced),
        tasks,
    }
}

/// One line of `jobs.csv`.
#[derive(Serialize)]
struct CsvRow<'a> {
    task: &'a str,
    job: u64,
    phase: u32,
    release_ns: u64,
    deadline_ns: Option<u64>,
    start_ns: Option<u64>,
    finish_ns: Option<u64>,
    response_ns: Option<u64>,
    exec_ns: u64,
    latency_ns: Option<u64>,
    cpu: Option<u32>,
    cpu_end: Option<u32>,
    migrations: u32,
    preemptions: u32,
    voluntary_switches: u32,
    cycles: Option<u64>,
    instructions: Option<u64>,
    llc_references: Option<u64>,
    llc_misses: Option<u64>,
    outcome: Outcome,
    scheduling: &'static str,
}

fn relative(t: u64, t0: u64) -> u64 {
    t.saturating_sub(t0)
}

/// Writes `jobs.csv` (one row per released job).
pub fn write_jobs_csv(path: &Path, result: &RunResult) -> Result<()> {
    let error = |e: csv::Error| RtError::Write {
        path: path.display().to_string(),
        source: e.into(),
    };
    let mut writer = csv::Writer::from_path(path).map_err(error)?;
    let t0 = result.start_ns;
    let scheduling = if result.realtime {
        "SCHED_FIFO"
    } else {
        "SCHED_OTHER"
    };
    for task in &result.tasks {
        for r in &task.records {
            let started = r.started();
            writer
                .serialize(CsvRow {
                    task: &task.spec.name,
                    job: r.job,
                    phase: r.phase,
                    release_ns: relative(r.release_ns, t0),
                    deadline_ns: (r.deadline_ns != u64::MAX).then(|| relative(r.deadline_ns, t0)),
                    start_ns: started.then(|| relative(r.start_ns, t0)),
                    finish_ns: started.then(|| relative(r.finish_ns, t0)),
                    response_ns: r.response_ns(),
                    exec_ns: r.exec_ns,
                    latency_ns: r.latency_ns(),
                    cpu: started.then_some(r.cpu),
                    cpu_end: started.then_some(r.cpu_end),
                    migrations: r.migrations(),
                    preemptions: r.preemptions,
                    voluntary_switches: r.voluntary_switches,
                    cycles: r.counters.cycles,
                    instructions: r.counters.instructions,
                    llc_references: r.counters.llc_references,
                    llc_misses: r.counters.llc_misses,
                    outcome: r.outcome,
                    scheduling,
                })
                .map_err(error)?;
        }
    }
    writer.flush().map_err(|e| RtError::Write {
        path: path.display().to_string(),
        source: e,
    })
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

/// The trace-event document: one track per CPU (`tid` = CPU + 1), one
/// complete (`X`) slice per started job on the CPU it started on, and
/// instant (`i`) events for releases and deadlines on the task's CPU.
pub fn trace_events(source: &str, result: &RunResult) -> Value {
    let t0 = result.start_ns;
    let mut events = vec![json!({
        "name": "process_name", "ph": "M", "pid": 1, "tid": 0,
        "args": { "name": format!("tinct run {source} [{}]", scheduling_note(result.realtime)) }
    })];
    let mut cpus: Vec<u32> = result
        .tasks
        .iter()
        .flat_map(|t| t.records.iter().filter(|r| r.started()).map(|r| r.cpu))
        .collect();
    cpus.extend(
        result
            .tasks
            .iter()
            .filter_map(|t| t.spec.cpus.as_ref().and_then(|c| c.first().copied())),
    );
    cpus.sort_unstable();
    cpus.dedup();
    for cpu in &cpus {
        events.push(json!({
            "name": "thread_name", "ph": "M", "pid": 1, "tid": cpu + 1,
            "args": { "name": format!("CPU {cpu}") }
        }));
    }
    for task in &result.tasks {
        let home = task.spec.cpus.as_ref().and_then(|c| c.first().copied());
        for r in &task.records {
            let track = if r.started() {
                r.cpu
            } else {
                home.unwrap_or(0)
            } + 1;
            events.push(json!({
                "name": format!("release {}", task.spec.name), "cat": "release", "ph": "i", "s": "t",
                "ts": us(relative(r.release_ns, t0)), "pid": 1, "tid": track,
                "args": { "task": task.spec.name, "job": r.job }
            }));
            if r.deadline_ns != u64::MAX {
                events.push(json!({
                    "name": format!("deadline {}", task.spec.name), "cat": "deadline", "ph": "i", "s": "t",
                    "ts": us(relative(r.deadline_ns, t0)), "pid": 1, "tid": track,
                    "args": { "task": task.spec.name, "job": r.job }
                }));
            }
            if r.started() {
                events.push(json!({
                    "name": task.spec.name, "cat": "job", "ph": "X",
                    "ts": us(relative(r.start_ns, t0)),
                    "dur": us(r.finish_ns.saturating_sub(r.start_ns)),
                    "pid": 1, "tid": track,
                    "args": {
                        "job": r.job, "outcome": r.outcome, "response_ns": r.response_ns(),
                        "exec_ns": r.exec_ns, "preemptions": r.preemptions, "cpu_end": r.cpu_end,
                        "llc_misses": r.counters.llc_misses, "instructions": r.counters.instructions
                    }
                }));
            }
        }
    }
    json!({
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": { "source": source, "scheduling": scheduling_note(result.realtime), "stop": result.stop.describe() }
    })
}

/// Writes `summary.json`, `jobs.csv` and `trace.json` into `dir` (created
/// if needed).
pub fn write_run_dir(dir: &Path, summary: &Summary, result: &RunResult) -> Result<()> {
    let write_error = |path: &Path| {
        let path = path.display().to_string();
        move |e: std::io::Error| RtError::Write { path, source: e }
    };
    std::fs::create_dir_all(dir).map_err(write_error(dir))?;
    let summary_path = dir.join("summary.json");
    let text = serde_json::to_string_pretty(summary).map_err(|e| RtError::Write {
        path: summary_path.display().to_string(),
        source: e.into(),
    })?;
    std::fs::write(&summary_path, text + "\n").map_err(write_error(&summary_path))?;
    write_jobs_csv(&dir.join("jobs.csv"), result)?;
    let trace_path = dir.join("trace.json");
    let trace = trace_events(&summary.source, result).to_string();
    std::fs::write(&trace_path, trace).map_err(write_error(&trace_path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{Phase, TaskSpec, Timer};

    fn record(
        job: u64,
        release: u64,
        start: u64,
        finish: u64,
        deadline: u64,
        outcome: Outcome,
    ) -> JobRecord {
        JobRecord {
            job,
            phase: 0,
            release_ns: release,
            deadline_ns: deadline,
            start_ns: start,
            finish_ns: finish,
            exec_ns: finish - start,
            cpu: 1,
            cpu_end: 1,
            preemptions: 0,
            voluntary_switches: 0,
            counters: Default::default(),
            outcome,
        }
    }

    fn result() -> RunResult {
        let spec = TaskSpec {
            name: "a".into(),
            cpus: Some(vec![1]),
            policy: Policy::Fifo(90),
            deadline_ns: Some(100),
            offset_ns: 0,
            phases: vec![Phase {
                name: "main".into(),
                loops: None,
                steps: vec![],
                timer: Some(Timer {
                    period_ns: 100,
                    absolute: true,
                }),
            }],
            loops: None,
            working_set: 0,
            partitions: vec![],
            bound: Some(Bound {
                wcet_ns: 10,
                wcrt_ns: Some(30),
                wcrt_nocint_ns: Some(20),
            }),
        };
        RunResult {
            start_ns: 1000,
            end_ns: 1400,
            stop: StopReason::Signal,
            realtime: true,
            memory_locked: true,
            rt_throttling: "950000 µs per 1000000 µs".into(),
            watchdog_factor: 3.0,
            tasks: vec![TaskRun {
                spec,
                records: vec![
                    record(0, 1000, 1002, 1012, 1100, Outcome::Completed),
                    record(1, 1100, 1101, 1125, 1200, Outcome::Completed),
                    record(2, 1200, 1201, 1350, 1300, Outcome::Missed),
                    JobRecord::never_started(3, 0, 1300, 1400),
                ],
                placement: Placement::None,
                rates: None,
                work: vec![],
                policy: Policy::Fifo(90),
                counters_unavailable: None,
                error: None,
            }],
        }
    }

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
    }

    #[test]
    fn the_trace_has_a_slice_per_started_job_and_instants_for_releases() {
        let trace = trace_events("x.toml", &result());
        let events = trace["traceEvents"].as_array().unwrap();
        let count = |ph: &str, cat: &str| {
            events
                .iter()
                .filter(|e| e["ph"] == ph && (cat.is_empty() || e["cat"] == cat))
                .count()
        };
        assert_eq!(count("X", "job"), 3);
        assert_eq!(count("i", "release"), 4);
        assert_eq!(count("i", "deadline"), 4);
        let first = events.iter().find(|e| e["ph"] == "X").unwrap();
        assert_eq!(first["ts"], 0.002);
        assert_eq!(first["tid"], 2, "CPU 1 is track 2");
    }

    #[test]
    fn the_run_directory_has_all_three_files() {
        let dir = tempfile::tempdir().unwrap();
        let r = result();
        let s = summarize("x.toml", 400, &r);
        write_run_dir(dir.path(), &s, &r).unwrap();
        let csv = std::fs::read_to_string(dir.path().join("jobs.csv")).unwrap();
        assert_eq!(csv.lines().count(), 5, "{csv}");
        assert!(csv.lines().nth(4).unwrap().contains("aborted"));
        let summary: Value = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join("summary.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(summary["tasks"][0]["jobs"]["released"], 4);
        let _: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("trace.json")).unwrap())
                .unwrap();
    }
}
