//! `trace.json`: the run as Chrome / Perfetto trace events.

use super::relative;
use super::summary::scheduling_note;
use crate::runtime::RunResult;
use serde_json::{Value, json};

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
            if let (true, Some(finish)) = (r.started(), r.finish_ns) {
                events.push(json!({
                    "name": task.spec.name, "cat": "job", "ph": "X",
                    "ts": us(relative(r.start_ns, t0)),
                    "dur": us(finish.saturating_sub(r.start_ns)),
                    "pid": 1, "tid": track,
                    "args": {
                        "job": r.job, "outcome": r.outcome, "response_ns": r.response_ns(),
                        "exec_ns": r.exec_ns, "preemptions": r.preemptions, "cpu_end": r.cpu_end,
                        "policy": r.policy_text(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::fixture::result;

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
}
