//! `jobs.csv`: one row per released job, times relative to the common
//! release, with its bound, the stall time within its busy window and, if
//! it exceeded its bound, the cause ([`crate::attribution`]); and
//! `stalls.csv`, every stall the sentinel saw. The header is always
//! written, even for a run without a job.

use super::relative;
use crate::attribution::{Cause, Evidence, attribute};
use serde::{Deserialize, Serialize};
use std::io::Write;
use tinct_rt::record::Outcome;
use tinct_rt::runtime::RunResult;

/// One line of `jobs.csv`, as written and as read back
/// ([`crate::output::read`]). Times are ns from the common release.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobRow {
    /// Task (thread) name.
    pub task: String,
    /// Job number within the task.
    pub job: u64,
    /// Phase index.
    pub phase: u32,
    /// Planned release.
    pub release_ns: u64,
    /// The release jitter drawn for the job (task-set `jitter`), ns.
    pub jitter_ns: u64,
    /// Absolute deadline, if any.
    pub deadline_ns: Option<u64>,
    /// Start, if it started.
    pub start_ns: Option<u64>,
    /// Finish, if it finished (an aborted job has none).
    pub finish_ns: Option<u64>,
    /// Finish − release, for finished jobs.
    pub response_ns: Option<u64>,
    /// Thread CPU time.
    pub exec_ns: u64,
    /// Start − release.
    pub latency_ns: Option<u64>,
    /// CPU at the start.
    pub cpu: Option<u32>,
    /// CPU at the end.
    pub cpu_end: Option<u32>,
    /// 1 if it ended on another CPU.
    pub migrations: u32,
    /// Involuntary context switches.
    pub preemptions: u32,
    /// Voluntary context switches.
    pub voluntary_switches: u32,
    /// Core cycles, when counted.
    pub cycles: Option<u64>,
    /// Instructions, when counted.
    pub instructions: Option<u64>,
    /// LLC read accesses, when counted.
    pub llc_references: Option<u64>,
    /// LLC read misses, when counted.
    pub llc_misses: Option<u64>,
    /// Context switches during the job (software event), when counted.
    pub context_switches: Option<u64>,
    /// CPU migrations during the job (software event), when counted.
    pub cpu_migrations: Option<u64>,
    /// Pipelines: the sample this job handed over (or took), from 1
    /// ([`tinct_rt::record::Flow`]); empty for other tasks.
    pub sample: Option<u64>,
    /// Pipelines: untaken samples this job's hand-overs replaced (lost).
    pub lost: u32,
    /// Pipelines: the CPU of the producer whose hand-over released the job.
    pub producer_cpu: Option<u32>,
    /// Pipelines, `affinity` placement: what moving the job cost, ns.
    pub move_ns: Option<u64>,
    /// Time spent waiting to lock mutexes, ns (compare with the
    /// analysis' B_i; under pcp blocking shows as `latency_ns` instead).
    pub blocked_ns: u64,
    /// How it ended.
    pub outcome: Outcome,
    /// The policy the kernel reported in force at the job's start (empty
    /// for a job that never started).
    pub scheduling: String,
    /// Its bound: the analysis' WCRT, else its relative deadline, ns.
    pub bound_ns: Option<u64>,
    /// Stall time the sentinel measured within its busy window, ns (0 for
    /// an aborted job or without a sentinel).
    pub stall_ns: u64,
    /// Why it exceeded its bound (`host_stall`, `cbs_throttle`, `exec_above_c`, `platform_overhead`,
    /// `colouring_not_effective`, `not_real_time`, `predicted`, `no_analysis`,
    /// `unexplained`); empty
    /// for a job within its bound.
    pub cause: String,
}

/// The columns of `jobs.csv`, in order: the field names of its rows
/// (a test keeps the two equal). Written first, so even a run that
/// released no job leaves a file with its header.
pub const COLUMNS: [&str; 32] = [
    "task",
    "job",
    "phase",
    "release_ns",
    "jitter_ns",
    "deadline_ns",
    "start_ns",
    "finish_ns",
    "response_ns",
    "exec_ns",
    "latency_ns",
    "cpu",
    "cpu_end",
    "migrations",
    "preemptions",
    "voluntary_switches",
    "cycles",
    "instructions",
    "llc_references",
    "llc_misses",
    "context_switches",
    "cpu_migrations",
    "sample",
    "lost",
    "producer_cpu",
    "move_ns",
    "blocked_ns",
    "outcome",
    "scheduling",
    "bound_ns",
    "stall_ns",
    "cause",
];

/// Writes the rows of `jobs.csv` (the header, then one row per released
/// job, [`job_rows`]) to `out`.
pub fn write_jobs_csv(out: impl Write, result: &RunResult) -> csv::Result<()> {
    write_rows(out, &job_rows(result))
}

/// Writes `jobs.csv` of rows already made: the header, then `rows`.
pub fn write_rows(out: impl Write, rows: &[JobRow]) -> csv::Result<()> {
    let mut writer = csv::WriterBuilder::new()
        .has_headers(false)
        .from_writer(out);
    writer.write_record(COLUMNS)?;
    for row in rows {
        writer.serialize(row)?;
    }
    writer.flush()?;
    Ok(())
}

/// The rows of `jobs.csv`, one per released job, task by task, each with
/// its bound and the cause of a late job (`crate::attribution`).
pub fn job_rows(result: &RunResult) -> Vec<JobRow> {
    let t0 = result.start_ns;
    let explained = attribute(result, &Evidence::of(result));
    let mut rows = Vec::new();
    for (i, task) in result.tasks.iter().enumerate() {
        for (k, r) in task.records.iter().enumerate() {
            let started = r.started();
            rows.push(JobRow {
                task: task.spec.name.clone(),
                job: r.job,
                phase: r.phase,
                release_ns: relative(r.release_ns, t0),
                jitter_ns: r.jitter_ns,
                deadline_ns: (r.deadline_ns != u64::MAX).then(|| relative(r.deadline_ns, t0)),
                start_ns: started.then(|| relative(r.start_ns, t0)),
                finish_ns: r.finish_ns.map(|f| relative(f, t0)),
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
                context_switches: r.counters.context_switches,
                cpu_migrations: r.counters.cpu_migrations,
                outcome: r.outcome,
                // The policy the kernel reported in force; a job that never
                // started has none.
                scheduling: if started {
                    r.policy_text()
                } else {
                    String::new()
                },
                sample: r.flow.sample,
                lost: r.flow.lost,
                producer_cpu: r.flow.producer_cpu,
                move_ns: r.flow.move_ns,
                blocked_ns: r.flow.blocked_ns,
                bound_ns: explained.bound_ns[i][k],
                stall_ns: explained.stall_ns[i][k],
                cause: explained.cause[i][k].map_or("", Cause::name).to_string(),
            });
        }
    }
    rows
}

/// Writes `stalls.csv`: one row per stall the sentinel kept (`cpu`,
/// `start_ns`, `end_ns` from the common release, `length_ns`), CPU by CPU.
pub fn write_stalls_csv(
    out: impl Write,
    result: &RunResult,
    report: &tinct_rt::sentinel::SentinelReport,
) -> csv::Result<()> {
    let mut writer = csv::Writer::from_writer(out);
    writer.write_record(["cpu", "start_ns", "end_ns", "length_ns"])?;
    for watch in &report.cpus {
        for stall in &watch.stalls {
            writer.write_record([
                watch.cpu.to_string(),
                relative(stall.start_ns, result.start_ns).to_string(),
                relative(stall.end_ns, result.start_ns).to_string(),
                stall.len_ns().to_string(),
            ])?;
        }
    }
    writer.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::fixture::result;

    #[test]
    fn the_header_names_the_fields_of_a_row_and_is_written_without_jobs() {
        // What csv's own header for a serialized row would be.
        let mut with_header = csv::Writer::from_writer(Vec::new());
        let r = result();
        let record = &r.tasks[0].records[0];
        with_header
            .serialize(JobRow {
                task: "a".into(),
                job: record.job,
                phase: 0,
                release_ns: 0,
                jitter_ns: 0,
                deadline_ns: None,
                start_ns: None,
                finish_ns: None,
                response_ns: None,
                exec_ns: 0,
                latency_ns: None,
                cpu: None,
                cpu_end: None,
                migrations: 0,
                preemptions: 0,
                voluntary_switches: 0,
                cycles: None,
                instructions: None,
                llc_references: None,
                llc_misses: None,
                context_switches: None,
                cpu_migrations: None,
                outcome: Outcome::Completed,
                scheduling: "SCHED_FIFO 90".into(),
                sample: None,
                lost: 0,
                producer_cpu: None,
                move_ns: None,
                blocked_ns: 0,
                bound_ns: None,
                stall_ns: 0,
                cause: String::new(),
            })
            .unwrap();
        let text = String::from_utf8(with_header.into_inner().unwrap()).unwrap();
        assert_eq!(text.lines().next().unwrap(), COLUMNS.join(","));

        let mut empty = r.clone();
        empty.tasks[0].records.clear();
        let mut out = Vec::new();
        write_jobs_csv(&mut out, &empty).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), COLUMNS.join(",") + "\n");

        let mut out = Vec::new();
        write_jobs_csv(&mut out, &r).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.lines().count(), 5, "{text}");
        let aborted = text.lines().nth(4).unwrap();
        assert!(aborted.contains("aborted"), "{aborted}");
        assert!(
            text.lines().nth(1).unwrap().contains("SCHED_FIFO 90"),
            "the policy in force: {text}"
        );
        assert!(
            text.lines().nth(2).unwrap().contains("SCHED_OTHER nice -3"),
            "read back per job, not assumed: {text}"
        );
        // The bound (WCRT 30 ns), the stall time and the cause of the one
        // job above it (149 ns of execution against C = 10 ns).
        assert!(text.lines().nth(1).unwrap().ends_with(",30,0,"), "{text}");
        assert!(
            text.lines().nth(3).unwrap().ends_with(",30,0,exec_above_c"),
            "{text}"
        );
    }
}
