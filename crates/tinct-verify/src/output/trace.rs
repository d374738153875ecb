//! The run's traces, `trace.perfetto-trace` (Perfetto's protobuf) and
//! `trace.json` (Chrome trace events): the job records handed to
//! tinct-report's trace writers ([`tinct_report::trace`]), which draw one
//! track per task with its jobs as slices that never partially overlap.

use super::relative;
use super::summary::scheduling_note;
use tinct_report::trace::{JobOutcome, JobValue, TraceJob, TraceRun, TraceThread, ValueUnit};
use tinct_rt::record::{JobRecord, Outcome};
use tinct_rt::runtime::RunResult;

/// The per-job values drawn as counter tracks: response, execution and
/// release latency, the CPU at the start, preemptions, and every hardware
/// counter that was read.
fn values(r: &JobRecord) -> Vec<JobValue> {
    let ns = |name: &str, v: Option<u64>| v.map(|v| JobValue::new(name, ValueUnit::Nanoseconds, v));
    let count = |name: &str, v: Option<u64>| v.map(|v| JobValue::new(name, ValueUnit::Count, v));
    let started = r.started();
    [
        ns("response time", r.response_ns()),
        ns("execution time", started.then_some(r.exec_ns)),
        ns("release latency", r.latency_ns()),
        count("CPU", started.then_some(u64::from(r.cpu))),
        count("preemptions", started.then_some(u64::from(r.preemptions))),
        count("cycles", r.counters.cycles),
        count("instructions", r.counters.instructions),
        count("LLC references", r.counters.llc_references),
        count("LLC misses", r.counters.llc_misses),
    ]
    .into_iter()
    .flatten()
    .collect()
}

fn job(r: &JobRecord, t0: u64) -> TraceJob {
    let started = r.started();
    TraceJob {
        job: r.job,
        phase: r.phase,
        release_ns: relative(r.release_ns, t0),
        deadline_ns: (r.deadline_ns != u64::MAX).then(|| relative(r.deadline_ns, t0)),
        start_ns: started.then(|| relative(r.start_ns, t0)),
        // An aborted job has no finish.
        finish_ns: r.finish_ns.filter(|_| started).map(|f| relative(f, t0)),
        cpu_start: started.then_some(r.cpu),
        cpu_end: started.then_some(r.cpu_end),
        outcome: match r.outcome {
            Outcome::Completed => JobOutcome::Completed,
            Outcome::Missed => JobOutcome::Missed,
            Outcome::Aborted => JobOutcome::Aborted,
        },
        preemptions: r.preemptions,
        values: values(r),
    }
}

/// The run as tinct-report's trace writers take it: times from the common
/// release, one thread per task (pinned when its affinity is one CPU).
pub fn trace_run(source: &str, result: &RunResult) -> TraceRun {
    let t0 = result.start_ns;
    let last = result
        .tasks
        .iter()
        .flat_map(|t| &t.records)
        .map(|r| r.finish_ns.unwrap_or(0).max(r.release_ns))
        .fold(result.end_ns, u64::max);
    TraceRun {
        process_name: format!("tinct run {source} [{}]", scheduling_note(result.realtime)),
        metadata: vec![
            ("source".into(), source.to_string()),
            ("scheduling".into(), scheduling_note(result.realtime).into()),
            ("stop".into(), result.stop.describe()),
        ],
        end_ns: relative(last, t0),
        threads: result
            .tasks
            .iter()
            .map(|task| TraceThread {
                name: task.spec.name.clone(),
                pinned_cpu: match task.spec.cpus.as_deref() {
                    Some([cpu]) => Some(*cpu),
                    _ => None,
                },
                jobs: task.records.iter().map(|r| job(r, t0)).collect(),
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::fixture::result;
    use tinct_report::trace::check::{chrome_json_slices, decode_perfetto, partial_overlaps};
    use tinct_report::trace::{chrome_json, perfetto_trace};

    #[test]
    fn each_task_is_a_thread_track_with_a_slice_per_started_job() {
        let run = trace_run("x.toml", &result());
        assert_eq!(run.threads.len(), 1);
        assert_eq!(run.threads[0].pinned_cpu, Some(1));
        let jobs = &run.threads[0].jobs;
        assert_eq!(jobs[0].start_ns, Some(2));
        assert_eq!(jobs[3].start_ns, None, "never started");
        assert_eq!(jobs[2].outcome, JobOutcome::Missed);

        let json = chrome_json(&run);
        let slices = chrome_json_slices(&json).unwrap();
        assert_eq!(slices.len(), 3);
        assert!(
            slices.iter().all(|s| s.track == "1/1"),
            "one track for the task"
        );
        assert!(partial_overlaps(&slices).is_empty());

        let decoded = decode_perfetto(&perfetto_trace(&run).unwrap()).unwrap();
        assert_eq!(decoded.slices.len(), 3);
        assert!(decoded.slices.iter().all(|s| s.track == "a"));
        let misses = decoded
            .instants
            .iter()
            .filter(|i| i.2.starts_with("deadline miss"))
            .count();
        assert_eq!(misses, 1);
        let response: Vec<i64> = decoded
            .counters
            .iter()
            .filter(|c| c.0 == "response time")
            .map(|c| c.2)
            .collect();
        assert_eq!(response, [12, 25, 150]);
    }
}
