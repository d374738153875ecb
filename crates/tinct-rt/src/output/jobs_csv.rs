//! `jobs.csv`: one row per released job, times relative to the common
//! release. The header is always written, even for a run without a job.

use super::relative;
use crate::record::Outcome;
use crate::runtime::RunResult;
use serde::Serialize;
use std::io::Write;

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
    context_switches: Option<u64>,
    cpu_migrations: Option<u64>,
    outcome: Outcome,
    scheduling: &'static str,
}

/// The columns of `jobs.csv`, in order: the field names of its rows
/// (a test keeps the two equal). Written first, so even a run that
/// released no job leaves a file with its header.
pub const COLUMNS: [&str; 23] = [
    "task",
    "job",
    "phase",
    "release_ns",
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
    "outcome",
    "scheduling",
];

/// Writes the rows of `jobs.csv` (the header, then one row per released
/// job) to `out`.
pub fn write_jobs_csv(out: impl Write, result: &RunResult) -> csv::Result<()> {
    let mut writer = csv::WriterBuilder::new()
        .has_headers(false)
        .from_writer(out);
    writer.write_record(COLUMNS)?;
    let t0 = result.start_ns;
    let scheduling = if result.realtime {
        "SCHED_FIFO"
    } else {
        "SCHED_OTHER"
    };
    for task in &result.tasks {
        for r in &task.records {
            let started = r.started();
            writer.serialize(CsvRow {
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
                context_switches: r.counters.context_switches,
                cpu_migrations: r.counters.cpu_migrations,
                outcome: r.outcome,
                scheduling,
            })?;
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
            .serialize(CsvRow {
                task: "a",
                job: record.job,
                phase: 0,
                release_ns: 0,
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
                scheduling: "SCHED_FIFO",
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
        assert!(text.lines().nth(4).unwrap().contains("aborted"));
    }
}
