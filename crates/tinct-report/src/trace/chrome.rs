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
use serde::Serialize;
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use std::io::Write;

fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

/// A job's or thread's arguments, as a JSON object in their order.
struct Args<'a>(&'a [(String, ArgValue)]);

impl Serialize for Args<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (key, value) in self.0 {
            match value {
                ArgValue::Uint(n) => map.serialize_entry(key, n)?,
                ArgValue::Text(t) => map.serialize_entry(key, t)?,
            }
        }
        map.end()
    }
}

/// One trace event; the fields a kind has not are left out.
#[derive(Serialize)]
struct Event<'a, A: Serialize> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    cat: Option<&'a str>,
    ph: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    s: Option<&'static str>,
    pid: u32,
    tid: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    ts: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dur: Option<f64>,
    args: A,
}

impl<'a, A: Serialize> Event<'a, A> {
    fn metadata(name: &'a str, tid: u64, args: A) -> Self {
        Event {
            name,
            cat: None,
            ph: "M",
            s: None,
            pid: 1,
            tid,
            ts: None,
            dur: None,
            args,
        }
    }
}

/// A one-entry JSON object.
struct One<'a, V: Serialize>(&'a str, V);

impl<V: Serialize> Serialize for One<'_, V> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(1))?;
        map.serialize_entry(self.0, &self.1)?;
        map.end()
    }
}

/// The events of `run`, written as they are made (a run of 100 000 jobs
/// never holds its document in memory).
struct Events<'a>(&'a TraceRun);

impl Serialize for Events<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let run = self.0;
        let mut seq = serializer.serialize_seq(None)?;
        seq.serialize_element(&Event::metadata(
            "process_name",
            0,
            One("name", &run.process_name),
        ))?;
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
                seq.serialize_element(&Event::metadata("thread_name", tid, One("name", &name)))?;
                seq.serialize_element(&Event::metadata(
                    "thread_sort_index",
                    tid,
                    One("sort_index", tid),
                ))?;
                for slice in slices {
                    seq.serialize_element(&Event {
                        name: &slice.name,
                        cat: Some(slice.category),
                        ph: "X",
                        s: None,
                        pid: 1,
                        tid,
                        ts: Some(us(slice.start_ns)),
                        dur: Some(us(slice.end_ns - slice.start_ns)),
                        args: Args(&slice.args),
                    })?;
                }
            }
            for instant in &thread.instants {
                seq.serialize_element(&Event {
                    name: &instant.name,
                    cat: Some(instant.category),
                    ph: "i",
                    s: Some("t"),
                    pid: 1,
                    tid: own_tid,
                    ts: Some(us(instant.ts_ns)),
                    dur: None,
                    args: Args(&instant.args),
                })?;
            }
            for counter in &thread.counters {
                let name = format!("{}: {}", thread.name, counter.name);
                for &(ts, value) in &counter.points {
                    seq.serialize_element(&Event {
                        name: &name,
                        cat: None,
                        ph: "C",
                        s: None,
                        pid: 1,
                        tid: own_tid,
                        ts: Some(us(ts)),
                        dur: None,
                        args: One(&counter.name, value),
                    })?;
                }
            }
        }
        seq.end()
    }
}

/// The whole document: the events, the display unit, the run's facts.
#[derive(Serialize)]
struct Document<'a> {
    #[serde(rename = "traceEvents")]
    trace_events: Events<'a>,
    #[serde(rename = "displayTimeUnit")]
    display_time_unit: &'static str,
    #[serde(rename = "otherData")]
    other_data: Metadata<'a>,
}

/// The run's facts as one JSON object.
struct Metadata<'a>(&'a [(String, String)]);

impl Serialize for Metadata<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (key, value) in self.0 {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

fn document(run: &TraceRun) -> Document<'_> {
    Document {
        trace_events: Events(run),
        display_time_unit: "ms",
        other_data: Metadata(&run.metadata),
    }
}

/// Writes the trace-event document of `run` to `out`, streamed.
pub fn write_chrome_json(run: &TraceRun, out: impl Write) -> serde_json::Result<()> {
    serde_json::to_writer(out, &document(run))
}

/// The trace-event document of `run`, as a value (for checks and tests;
/// files are written with [`write_chrome_json`]).
pub fn chrome_json(run: &TraceRun) -> serde_json::Value {
    serde_json::to_value(document(run)).unwrap_or(serde_json::Value::Null)
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
