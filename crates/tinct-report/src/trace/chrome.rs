//! `trace.json`: the [`layout`](super::layout) as Chrome trace events.
//!
//! One process (`pid` 1); each thread's lane 0 is a `tid` named after the
//! thread, further lanes are `tid`s named `<thread> (overlap lane k)`.
//! Slices are complete (`X`) events, releases, deadline misses and
//! migrations thread-scoped instants (`i`), per-job values counter (`C`)
//! events named `<thread>: <value>`. Times are µs as the format requires,
//! written with three decimals so that a reader rounding to the nearest
//! nanosecond (as Perfetto does) gets the exact integer nanoseconds back
//! for runs up to about 26 days (2^51 ns).

use super::TraceRun;
use super::layout::{ArgValue, lay_out};
use serde_json::{Map, Value, json};

fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

fn args(list: &[(String, ArgValue)]) -> Value {
    let map: Map<String, Value> = list
        .iter()
        .map(|(k, v)| {
            let v = match v {
                ArgValue::Uint(n) => json!(n),
                ArgValue::Text(t) => json!(t),
            };
            (k.clone(), v)
        })
        .collect();
    Value::Object(map)
}

/// The trace-event document of `run`.
pub fn chrome_json(run: &TraceRun) -> Value {
    let mut events = vec![json!({
        "name": "process_name", "ph": "M", "pid": 1, "tid": 0,
        "args": { "name": run.process_name }
    })];
    let mut tid = 0u64;
    for thread in lay_out(run) {
        let own_tid = tid + 1;
        for (lane, slices) in thread.lanes.iter().enumerate() {
            tid += 1;
            let name = if lane == 0 {
                thread.name.clone()
            } else {
                format!("{} (overlap lane {lane})", thread.name)
            };
            events.push(json!({
                "name": "thread_name", "ph": "M", "pid": 1, "tid": tid, "args": { "name": name }
            }));
            events.push(json!({
                "name": "thread_sort_index", "ph": "M", "pid": 1, "tid": tid,
                "args": { "sort_index": tid }
            }));
            for s in slices {
                events.push(json!({
                    "name": s.name, "cat": s.category, "ph": "X", "pid": 1, "tid": tid,
                    "ts": us(s.start_ns), "dur": us(s.end_ns - s.start_ns),
                    "args": args(&s.args)
                }));
            }
        }
        for i in &thread.instants {
            events.push(json!({
                "name": i.name, "cat": i.category, "ph": "i", "s": "t",
                "pid": 1, "tid": own_tid, "ts": us(i.ts_ns), "args": args(&i.args)
            }));
        }
        for c in &thread.counters {
            let name = format!("{}: {}", thread.name, c.name);
            for &(ts, value) in &c.points {
                let mut values = Map::new();
                values.insert(c.name.clone(), json!(value));
                events.push(json!({
                    "name": name, "ph": "C", "pid": 1, "tid": own_tid, "ts": us(ts),
                    "args": values
                }));
            }
        }
    }
    let other: Map<String, Value> = run
        .metadata
        .iter()
        .map(|(k, v)| (k.clone(), json!(v)))
        .collect();
    json!({
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": other
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::check::{chrome_json_slices, partial_overlaps};
    use crate::trace::fixture::run;

    #[test]
    fn one_track_per_thread_and_no_partial_overlap() {
        let doc = chrome_json(&run());
        let events = doc["traceEvents"].as_array().unwrap();
        let names: Vec<&str> = events
            .iter()
            .filter(|e| e["name"] == "thread_name")
            .map(|e| e["args"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["hi", "lo", "free"]);
        let slices = chrome_json_slices(&doc).unwrap();
        assert_eq!(slices.len(), 2 + 2 + 3);
        assert!(partial_overlaps(&slices).is_empty());
        let preempted = slices
            .iter()
            .find(|s| s.name == "preempted by hi #0")
            .unwrap();
        assert_eq!(
            (
                preempted.track.as_str(),
                preempted.start_ns,
                preempted.end_ns
            ),
            ("1/2", 20, 30)
        );
        let count = |ph: &str, cat: &str| {
            events
                .iter()
                .filter(|e| e["ph"] == ph && (cat.is_empty() || e["cat"] == cat))
                .count()
        };
        assert_eq!(count("i", "release"), 7);
        assert_eq!(count("i", "migration"), 1);
        assert_eq!(count("C", ""), 5, "a response time per finished job");
        assert_eq!(doc["otherData"]["source"], "t.toml");
    }

    #[test]
    fn the_old_per_cpu_overlap_cannot_happen() {
        // Two unpinned threads whose jobs interleave on one CPU: each on its own track.
        let mut r = run();
        for t in &mut r.threads {
            t.pinned_cpu = None;
        }
        let slices = chrome_json_slices(&chrome_json(&r)).unwrap();
        assert!(partial_overlaps(&slices).is_empty());
        assert!(slices.iter().all(|s| !s.name.starts_with("preempted")));
    }
}
