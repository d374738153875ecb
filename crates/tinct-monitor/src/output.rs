//! The files of a monitoring run: `monitor.csv` (one row per sample and
//! thread: every event's count, empty where it does not count, and the
//! derived IPC, miss ratio and rates), `monitor.json` (the recording, the
//! events with their availability, the overhead) and `monitor.svg`
//! (sebek2002 Fig. 6: each thread's miss ratio over time; where the machine
//! has no LLC counters, each thread's CPU share over time, saying so).
//! `monitor.json` reads back as the type that writes it ([`MonitorFile`],
//! [`read`]).

use super::overhead::Overhead;
use super::{PerfEvent, Recording};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use tinct_report::{LineChart, Series, SeriesStyle};
use tinct_rt::{Result, RtError};

/// `monitor.json`: the recording, the events that do not count and the
/// overhead; written from a borrowed recording ([`write()`]), read back
/// owned ([`read`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MonitorFile<'a> {
    /// The recording's own fields.
    #[serde(flatten)]
    pub recording: Cow<'a, Recording>,
    /// Events that do not count here, each with the kernel's reason
    /// ([`Recording::missing`]).
    pub missing: Vec<String>,
    /// The measured cost of sampling, when it was measured.
    pub overhead: Option<Cow<'a, Overhead>>,
}

impl<'a> MonitorFile<'a> {
    /// The file of `recording` and `overhead`.
    pub fn of(recording: &'a Recording, overhead: Option<&'a Overhead>) -> MonitorFile<'a> {
        MonitorFile {
            recording: Cow::Borrowed(recording),
            missing: recording.missing(),
            overhead: overhead.map(Cow::Borrowed),
        }
    }
}

/// Writes the three files into `dir` (created if needed); the paths written.
pub fn write(
    dir: &Path,
    recording: &Recording,
    overhead: Option<&Overhead>,
) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).map_err(|source| write_error(dir, source))?;
    let csv = dir.join("monitor.csv");
    write_csv(&csv, recording)?;
    let json = dir.join("monitor.json");
    let text = serde_json::to_string_pretty(&MonitorFile::of(recording, overhead))
        .map_err(|e| write_error(&json, std::io::Error::other(e)))?;
    std::fs::write(&json, text + "\n").map_err(|source| write_error(&json, source))?;
    let svg = dir.join("monitor.svg");
    chart(recording)
        .write(&svg)
        .map_err(|e| write_error(&svg, std::io::Error::other(e.to_string())))?;
    Ok(vec![csv, json, svg])
}

/// Reads `monitor.json` at `path`; a file that does not read is bad input
/// naming it, the line (for a value of the recording, the line where its
/// object ends: its keys are flattened into the file's) and what was
/// expected.
pub fn read(path: &Path) -> Result<MonitorFile<'static>> {
    const FIELD: &str = "monitor.json";
    let bad = |line: Option<usize>, found: String| {
        RtError::Input(tinct_base::InputError {
            file: path.display().to_string(),
            line,
            field: FIELD.into(),
            expected: "monitor.json as `tinct monitor` writes it".into(),
            found,
        })
    };
    let text = tinct_core::format::read_text(path, MAX_MONITOR_FILE_BYTES, FIELD)
        .map_err(|e| bad(None, e.found))?;
    serde_json::from_str(&text).map_err(|e| bad(Some(e.line()), e.to_string()))
}

/// The largest `monitor.json` [`read`] reads: far above a recording's (a
/// sample per thread and period), and a device or an endless file is
/// refused, not read without end.
pub const MAX_MONITOR_FILE_BYTES: u64 = 512 << 20;

fn write_error(path: &Path, source: std::io::Error) -> RtError {
    RtError::Write {
        path: path.display().to_string(),
        source,
    }
}

/// Writes `value` as `sharing.json` into `dir` (created if needed).
pub fn write_sharing<T: Serialize>(dir: &Path, value: &T) -> Result<PathBuf> {
    std::fs::create_dir_all(dir).map_err(|source| write_error(dir, source))?;
    let path = dir.join("sharing.json");
    let text = serde_json::to_string_pretty(value)
        .map_err(|e| write_error(&path, std::io::Error::other(e)))?;
    std::fs::write(&path, text + "\n").map_err(|source| write_error(&path, source))?;
    Ok(path)
}

/// The derived columns, after the events'.
const DERIVED: [&str; 6] = [
    "ipc",
    "miss_ratio",
    "cpu_share",
    "context_switches_per_s",
    "cpu_migrations_per_s",
    "page_faults_per_s",
];

fn write_csv(path: &Path, recording: &Recording) -> Result<()> {
    let error = |e: csv::Error| write_error(path, std::io::Error::other(e));
    let mut out = csv::Writer::from_path(path).map_err(error)?;
    let names = recording.event_names();
    let mut header = vec!["t_ns", "interval_ns", "tid", "thread"];
    header.extend(names.iter().map(String::as_str));
    header.extend(DERIVED);
    out.write_record(&header).map_err(error)?;
    let text = |v: Option<f64>| v.map(|v| format!("{v:.6}")).unwrap_or_default();
    for s in &recording.samples {
        let mut row = vec![
            s.t_ns.to_string(),
            s.interval_ns.to_string(),
            s.tid.to_string(),
            s.thread.clone(),
        ];
        row.extend(
            s.counts
                .iter()
                .map(|c| c.map(|c| c.to_string()).unwrap_or_default()),
        );
        row.extend([
            text(s.ipc(&names)),
            text(s.miss_ratio(&names)),
            text(s.cpu_share(&names)),
            text(s.rate(&names, PerfEvent::ContextSwitches)),
            text(s.rate(&names, PerfEvent::CpuMigrations)),
            text(s.rate(&names, PerfEvent::PageFaults)),
        ]);
        out.write_record(&row).map_err(error)?;
    }
    out.flush().map_err(|source| write_error(path, source))
}

/// Sebek's Fig. 6 where the miss ratio counts; the CPU share otherwise.
fn chart(recording: &Recording) -> LineChart {
    let names = recording.event_names();
    let any_miss_ratio = recording
        .samples
        .iter()
        .any(|s| s.miss_ratio(&names).is_some());
    let (title, y_label) = if any_miss_ratio {
        (
            format!("LLC miss ratio per thread over time: {}", recording.target),
            "LLC miss ratio (%)",
        )
    } else {
        let why = recording
            .events
            .iter()
            .find(|e| e.event == PerfEvent::LlcMisses.name())
            .map(|e| e.availability.to_string())
            .unwrap_or_else(|| "not asked for".into());
        (
            format!("CPU share per thread over time (miss ratio {why})"),
            "CPU share (% of the interval, task-clock)",
        )
    };
    let pick = |s: &super::Sample| {
        let value = if any_miss_ratio {
            s.miss_ratio(&names)
        } else {
            s.cpu_share(&names)
        };
        value.map(|v| v * 100.0)
    };
    let mut by_thread: BTreeMap<(i32, String), Vec<(f64, f64)>> = BTreeMap::new();
    for s in &recording.samples {
        if let Some(y) = pick(s) {
            by_thread
                .entry((s.tid, s.thread.clone()))
                .or_default()
                .push((tinct_base::units::ms_f64(s.t_ns), y));
        }
    }
    let mut chart = LineChart::new(title, "time (ms)", y_label);
    for ((tid, name), points) in by_thread {
        chart = chart.add_series(Series::new(
            format!("{name} [{tid}]"),
            SeriesStyle::Line,
            points,
        ));
    }
    chart
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::sample::Sample;
    use super::super::{Ended, EventStatus};
    use super::*;
    use tinct_base::InputError;
    use tinct_sim::sharing::MemorySample;
    use tinct_sys::perf::Availability;

    /// A recording of one thread, 4 samples, with or without the hardware
    /// counters (the text's tests use it too).
    pub(crate) fn recording(with_llc: bool) -> Recording {
        let events: Vec<EventStatus> = PerfEvent::MONITORING
            .iter()
            .map(|e| EventStatus {
                event: e.name().into(),
                availability: if e.is_hardware() && !with_llc {
                    Availability::Unavailable("ENOENT: no such event on this machine".into())
                } else {
                    Availability::Counting
                },
            })
            .collect();
        let hw = |v| with_llc.then_some(v);
        let samples = (1..=4)
            .map(|i| Sample {
                t_ns: i * 10_000_000,
                interval_ns: 10_000_000,
                tid: 42,
                thread: "worker".into(),
                counts: vec![
                    hw(1000),
                    hw(2000),
                    hw(100),
                    hw(10 * i),
                    Some(5_000_000),
                    Some(1),
                    Some(0),
                    Some(3),
                ],
            })
            .collect();
        Recording {
            target: "test".into(),
            pid: 42,
            per_thread: true,
            rate_hz: 100,
            started_unix_s: 0,
            duration_ns: 40_000_000,
            ended: Ended::CommandExited,
            exit_code: Some(0),
            events,
            threads_seen: 1,
            totals: Some(vec![
                hw(4000),
                hw(8000),
                hw(400),
                hw(100),
                Some(20_000_000),
                Some(4),
                Some(0),
                Some(12),
            ]),
            samples,
            memory_samples: Vec::new(),
            memory_sampling_failed: None,
        }
    }

    #[test]
    fn the_files_hold_every_sample_and_empty_cells_for_missing_counts() {
        let dir = tempfile::tempdir().unwrap();
        let written = write(dir.path(), &recording(false), None).unwrap();
        assert_eq!(written.len(), 3);
        let csv = std::fs::read_to_string(dir.path().join("monitor.csv")).unwrap();
        let mut lines = csv.lines();
        let header = lines.next().unwrap();
        assert!(
            header.starts_with("t_ns,interval_ns,tid,thread,cycles,"),
            "{header}"
        );
        let first: Vec<&str> = lines.next().unwrap().split(',').collect();
        assert_eq!(first[4], "", "cycles: no count, an empty cell, not 0");
        assert_eq!(lines.count(), 3);
        let json: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join("monitor.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(json["samples"].as_array().unwrap().len(), 4);
        assert!(
            json["missing"][0]
                .as_str()
                .unwrap()
                .starts_with("cycles: unavailable: ENOENT")
        );
        let svg = std::fs::read_to_string(dir.path().join("monitor.svg")).unwrap();
        assert!(
            svg.contains("CPU share") && svg.contains("unavailable: ENOENT"),
            "{svg}"
        );
    }

    #[test]
    fn monitor_json_reads_back_equal_and_writes_the_same_bytes() {
        let mut recording = recording(false);
        recording.memory_samples = vec![MemorySample {
            thread: "worker [42]".into(),
            address: 0x7f00_0040,
            store: false,
            hitm: true,
        }];
        recording.memory_sampling_failed = Some("EACCES on thread 43".into());
        recording.exit_code = None;
        recording.ended = Ended::Interrupted;
        let times = tinct_report::Durations::of(&[1_000_000, 1_100_000, 1_050_000]).unwrap();
        let overhead = Overhead {
            rate_hz: 100,
            workload: "a reference loop".into(),
            plain: times,
            monitored: tinct_report::Durations::of(&[1_020_000, 1_150_000]).unwrap(),
            ratio: 1_085_000.0 / 1_050_000.0,
            samples_per_run: 11,
        };
        for overhead in [None, Some(&overhead)] {
            let dir = tempfile::tempdir().unwrap();
            write(dir.path(), &recording, overhead).unwrap();
            let path = dir.path().join("monitor.json");
            let file = read(&path).unwrap();
            let written = MonitorFile::of(&recording, overhead);
            assert_eq!(file, written);
            assert_eq!(file.recording.into_owned(), recording);
            assert!(
                std::fs::read_to_string(&path).unwrap()
                    == serde_json::to_string_pretty(&written).unwrap() + "\n",
                "monitor.json reads back to other bytes"
            );
        }
    }

    #[test]
    fn a_broken_monitor_json_is_bad_input_naming_it_and_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("monitor.json");
        let line_of = |text: &str| {
            std::fs::write(&path, text).unwrap();
            match read(&path) {
                Err(RtError::Input(InputError {
                    file, line, found, ..
                })) => {
                    assert!(file.ends_with("monitor.json"), "{file}");
                    assert!(found.contains("invalid type: integer `1`"), "{found}");
                    line
                }
                other => panic!("expected bad input, got {other:?}"),
            }
        };
        assert_eq!(line_of("{\n\"missing\": 1\n}"), Some(2));
        // The recording's keys are flattened into the file's object: serde
        // reads them whole before their values, so the line is that of
        // the object's end.
        assert_eq!(
            line_of("{\n\"target\": 1,\n\"missing\": [],\n\"overhead\": null\n}"),
            Some(5)
        );
    }

    #[test]
    fn with_llc_counters_the_plot_is_the_miss_ratio() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), &recording(true), None).unwrap();
        let svg = std::fs::read_to_string(dir.path().join("monitor.svg")).unwrap();
        assert!(svg.contains("LLC miss ratio"), "{svg}");
        let csv = std::fs::read_to_string(dir.path().join("monitor.csv")).unwrap();
        let row: Vec<&str> = csv.lines().nth(1).unwrap().split(',').collect();
        let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
        let col = |name| header.iter().position(|h| *h == name).unwrap();
        assert_eq!(row[col("ipc")], "2.000000");
        assert_eq!(row[col("miss_ratio")], "0.100000");
    }
}
