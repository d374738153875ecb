//! Reading traces back, for tests and for anyone who wants to check a
//! trace: the slices of every track of a `trace.json` or a
//! `trace.perfetto-trace`, and the pairs of slices of one track that
//! partially overlap (which the formats forbid and viewers draw wrong).

use super::protos::{self, track_event::Type};
use prost::Message;
use std::collections::HashMap;

/// A slice of a decoded trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrackSlice {
    /// The track: `pid/tid` in JSON, the track's name in Perfetto.
    pub track: String,
    /// Begin, ns.
    pub start_ns: u64,
    /// End, ns.
    pub end_ns: u64,
    /// Title.
    pub name: String,
    /// Category (`job`, `preemption`).
    pub category: String,
}

/// Every pair of slices of one track that partially overlap
/// (`a.start < b.start < a.end < b.end`); empty for a drawable trace.
pub fn partial_overlaps(slices: &[TrackSlice]) -> Vec<(TrackSlice, TrackSlice)> {
    let mut by_track: HashMap<&str, Vec<&TrackSlice>> = HashMap::new();
    for s in slices {
        by_track.entry(&s.track).or_default().push(s);
    }
    let mut found = Vec::new();
    for (_, mut track) in by_track {
        track.sort_by_key(|s| (s.start_ns, std::cmp::Reverse(s.end_ns)));
        let mut open: Vec<&TrackSlice> = Vec::new();
        for s in track {
            while open.last().is_some_and(|o| o.end_ns <= s.start_ns) {
                open.pop();
            }
            if let Some(o) = open.last()
                && o.end_ns < s.end_ns
            {
                found.push(((*o).clone(), s.clone()));
                continue;
            }
            open.push(s);
        }
    }
    found
}

/// Nanoseconds of a trace-event time in µs, as Perfetto reads it (rounded
/// to the nearest ns): exact for the 3-decimal values tinct writes.
fn json_ns(us: &serde_json::Value) -> Option<u64> {
    let us = us.as_f64()?;
    (us >= 0.0).then(|| (us * 1000.0).round() as u64)
}

/// The complete (`X`) events of a Chrome trace-event document, by `pid/tid`.
pub fn chrome_json_slices(doc: &serde_json::Value) -> Result<Vec<TrackSlice>, String> {
    let events = doc["traceEvents"]
        .as_array()
        .ok_or("no traceEvents array")?;
    events
        .iter()
        .filter(|e| e["ph"] == "X")
        .map(|e| {
            let start = json_ns(&e["ts"]).ok_or_else(|| format!("bad ts in {e}"))?;
            let dur = json_ns(&e["dur"]).ok_or_else(|| format!("bad dur in {e}"))?;
            Ok(TrackSlice {
                track: format!("{}/{}", e["pid"], e["tid"]),
                start_ns: start,
                end_ns: start + dur,
                name: e["name"].as_str().unwrap_or_default().to_string(),
                category: e["cat"].as_str().unwrap_or_default().to_string(),
            })
        })
        .collect()
}

/// A track of a decoded Perfetto trace.
#[derive(Clone, Debug, PartialEq)]
pub struct DecodedTrack {
    /// Its uuid.
    pub uuid: u64,
    /// Its parent's uuid (0: none).
    pub parent: u64,
    /// Its name (the thread's name for a thread track).
    pub name: String,
    /// `process`, `thread`, `counter` or `child`.
    pub kind: &'static str,
}

/// A decoded `trace.perfetto-trace`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DecodedPerfetto {
    /// Every track descriptor.
    pub tracks: Vec<DecodedTrack>,
    /// Slices rebuilt from begin/end pairs, `track` = the track's name.
    pub slices: Vec<TrackSlice>,
    /// Instant events: (track name, ns, name).
    pub instants: Vec<(String, u64, String)>,
    /// Counter values: (track name, ns, value).
    pub counters: Vec<(String, u64, i64)>,
}

/// Decodes a Perfetto trace with the same proto definitions it was written
/// with and rebuilds its slices (begin/end matched per track, in timestamp
/// order as Perfetto sorts them). An end without a begin, a slice left
/// open, or an event on an undeclared track is an error.
pub fn decode_perfetto(bytes: &[u8]) -> Result<DecodedPerfetto, String> {
    let trace = protos::Trace::decode(bytes).map_err(|e| format!("not a Perfetto trace: {e}"))?;
    let mut out = DecodedPerfetto::default();
    let mut names: HashMap<u64, String> = HashMap::new();
    let mut events = Vec::new();
    for packet in &trace.packet {
        match &packet.data {
            Some(protos::trace_packet::Data::TrackDescriptor(d)) => {
                let (name, kind) = if let Some(t) = &d.thread {
                    (t.thread_name.clone().unwrap_or_default(), "thread")
                } else if let Some(p) = &d.process {
                    (p.process_name.clone().unwrap_or_default(), "process")
                } else {
                    let name = match &d.static_or_dynamic_name {
                        Some(protos::track_descriptor::StaticOrDynamicName::Name(n)) => n.clone(),
                        None => String::new(),
                    };
                    (
                        name,
                        if d.counter.is_some() {
                            "counter"
                        } else {
                            "child"
                        },
                    )
                };
                let uuid = d.uuid.ok_or("a track descriptor without uuid")?;
                if names.insert(uuid, name.clone()).is_some() {
                    return Err(format!("track uuid {uuid} declared twice"));
                }
                out.tracks.push(DecodedTrack {
                    uuid,
                    parent: d.parent_uuid.unwrap_or(0),
                    name,
                    kind,
                });
            }
            Some(protos::trace_packet::Data::TrackEvent(e)) => {
                events.push((packet.timestamp.unwrap_or(0), e.clone()));
            }
            None => {}
        }
    }
    // Perfetto sorts packets by timestamp; ties keep their order.
    events.sort_by_key(|(ts, _)| *ts);
    let mut open: HashMap<u64, Vec<(u64, String, String)>> = HashMap::new();
    for (ts, e) in events {
        let uuid = e.track_uuid.unwrap_or(0);
        let track = names
            .get(&uuid)
            .ok_or_else(|| format!("event at {ts} on undeclared track {uuid}"))?
            .clone();
        let name = match &e.name_field {
            Some(protos::track_event::NameField::Name(n)) => n.clone(),
            None => String::new(),
        };
        match e.r#type() {
            Type::SliceBegin => {
                let category = e.categories.first().cloned().unwrap_or_default();
                open.entry(uuid).or_default().push((ts, name, category))
            }
            Type::SliceEnd => {
                let (start, name, category) = open
                    .get_mut(&uuid)
                    .and_then(Vec::pop)
                    .ok_or_else(|| format!("an end at {ts} on '{track}' without a begin"))?;
                out.slices.push(TrackSlice {
                    track,
                    start_ns: start,
                    end_ns: ts,
                    name,
                    category,
                });
            }
            Type::Instant => out.instants.push((track, ts, name)),
            Type::Counter => {
                let value = match e.counter_value_field {
                    Some(protos::track_event::CounterValueField::CounterValue(v)) => v,
                    _ => {
                        return Err(format!(
                            "a counter event at {ts} on '{track}' without value"
                        ));
                    }
                };
                out.counters.push((track, ts, value));
            }
            Type::Unspecified => return Err(format!("an event of no type at {ts}")),
        }
    }
    if let Some((uuid, _)) = open.iter().find(|(_, v)| !v.is_empty()) {
        return Err(format!("a slice left open on track {uuid}"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(track: &str, start: u64, end: u64) -> TrackSlice {
        TrackSlice {
            track: track.into(),
            start_ns: start,
            end_ns: end,
            name: String::new(),
            category: String::new(),
        }
    }

    #[test]
    fn partial_overlap_is_found_nesting_and_touching_are_not() {
        assert!(partial_overlaps(&[s("a", 0, 10), s("a", 2, 10), s("a", 10, 12)]).is_empty());
        assert!(partial_overlaps(&[s("a", 0, 10), s("b", 5, 15)]).is_empty());
        let found = partial_overlaps(&[s("a", 0, 10), s("a", 5, 15)]);
        assert_eq!(found, vec![(s("a", 0, 10), s("a", 5, 15))]);
        // Inside a parent, two children that cross each other.
        assert_eq!(
            partial_overlaps(&[s("a", 0, 100), s("a", 10, 30), s("a", 20, 40)]).len(),
            1
        );
    }

    #[test]
    fn json_times_round_to_the_nanosecond() {
        let doc = serde_json::json!({"traceEvents": [
            {"ph": "X", "pid": 1, "tid": 2, "ts": 0.001, "dur": 123.456, "name": "j"},
            {"ph": "i", "pid": 1, "tid": 2, "ts": 5.0, "name": "r"}
        ]});
        let slices = chrome_json_slices(&doc).unwrap();
        assert_eq!(
            slices,
            vec![TrackSlice {
                name: "j".into(),
                ..s("1/2", 1, 123_457)
            }]
        );
    }
}
