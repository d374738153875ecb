//! The calibration file, `calibrate.json`: what `tinct bench calibrate`
//! writes and `tinct analyze`, `plan` and `run` read to get Δ for task sets
//! without `refill`, and the platform overheads of this machine
//! (docs/FORMAT.md, "The calibration file").
//!
//! Only the data and its serde live here. The file holds the bench's whole
//! result (latencies, bandwidth, the refill passes' distributions); a reader
//! needs only [`RefillRecord`] and [`Overheads`], and fields it does not
//! know are ignored. The bench writes its `refill` and `overheads` objects
//! through the same types, so writer and reader cannot drift.

use crate::format::RefillCalibration;
use crate::units::Nanos;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Δ and the N_P it was measured with: the fields of calibrate.json's
/// `refill` object that analysis reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefillRecord {
    /// N_P: the partition whose refill was timed is LLC / N_P.
    pub partitions: u32,
    /// Δ, the refill time of one partition, in nanoseconds (kim2013 §II-C).
    pub refill_ns: u64,
}

impl From<RefillRecord> for RefillCalibration {
    fn from(record: RefillRecord) -> Self {
        RefillCalibration {
            refill: Nanos(record.refill_ns),
            partitions: record.partitions,
        }
    }
}

/// One measured platform overhead: the distribution of its samples and
/// what produced them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OverheadRecord {
    /// The largest sample, ns: the value the `*_ns` key beside it holds.
    pub max_ns: u64,
    /// The nearest-rank 99th percentile, ns.
    pub p99_ns: u64,
    /// The median, ns.
    pub median_ns: u64,
    /// The smallest sample, ns.
    pub min_ns: u64,
    /// How many samples.
    pub samples: u64,
    /// What was measured and how (bench, policy, CPUs, duration).
    pub measured_by: String,
}

/// The timer tick: the cost of one tick interruption and the tick period.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TickRecord {
    /// The cost of one tick (the time a busy thread lost to it).
    #[serde(flatten)]
    pub cost: OverheadRecord,
    /// The tick period found, ns (1 / CONFIG_HZ).
    pub period_ns: u64,
}

/// The platform overheads of this machine, each measured by the bench that
/// owns it and absent — never zero — when it was not measured (`unmeasured`
/// says why).
///
/// The `*_ns` keys are what an analysis charges: the largest value observed,
/// since a bound must cover the worst case that was seen (the records beside
/// them give the 99th percentile and the sample count for a reader who
/// accepts a probabilistic view). On a virtual machine the maxima include
/// host stalls.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Overheads {
    /// δ, the cost of one context switch, ns (sebek2002: a job pays two,
    /// C' = C + 2δ).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_switch_ns: Option<u64>,
    /// The release latency of a periodic SCHED_FIFO thread (actual start −
    /// planned release), ns: the release jitter a task can suffer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release_latency_ns: Option<u64>,
    /// The spread of the release latency (max − min), ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release_jitter_ns: Option<u64>,
    /// The cost of one timer tick, ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tick_ns: Option<u64>,
    /// The tick period, ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tick_period_ns: Option<u64>,
    /// How δ was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_switch: Option<OverheadRecord>,
    /// How the release latency was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release_latency: Option<OverheadRecord>,
    /// How the tick was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tick: Option<TickRecord>,
    /// The overheads that were not measured, by name (`context_switch`,
    /// `release_latency`, `tick`), and why.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub unmeasured: BTreeMap<String, String>,
}

impl Overheads {
    /// Records δ (the `context_switch_ns` key is the record's maximum).
    pub fn set_context_switch(&mut self, record: OverheadRecord) {
        self.context_switch_ns = Some(record.max_ns);
        self.unmeasured.remove("context_switch");
        self.context_switch = Some(record);
    }

    /// Records the release latency (`release_latency_ns` its maximum,
    /// `release_jitter_ns` its maximum minus its minimum).
    pub fn set_release_latency(&mut self, record: OverheadRecord) {
        self.release_latency_ns = Some(record.max_ns);
        self.release_jitter_ns = Some(record.max_ns.saturating_sub(record.min_ns));
        self.unmeasured.remove("release_latency");
        self.release_latency = Some(record);
    }

    /// Records the tick (`tick_ns` the cost's maximum, `tick_period_ns` the period).
    pub fn set_tick(&mut self, record: TickRecord) {
        self.tick_ns = Some(record.cost.max_ns);
        self.tick_period_ns = Some(record.period_ns);
        self.unmeasured.remove("tick");
        self.tick = Some(record);
    }

    /// Notes that overhead `name` was not measured, and why.
    pub fn set_unmeasured(&mut self, name: &str, why: impl Into<String>) {
        self.unmeasured.insert(name.to_string(), why.into());
    }

    /// True if every `*_ns` key that has a record beside it equals what
    /// the record says (a file edited by hand, or written by something
    /// else, may not).
    pub fn is_consistent(&self) -> bool {
        self.inconsistency().is_none()
    }

    /// The first `*_ns` key that differs from the record beside it, in
    /// words (`None` when they all agree). An analysis charges the key, so
    /// one below the measured maximum, or absent beside a measurement,
    /// would understate the overhead. A key without a record is a value
    /// given by hand, as in a task set's `[platform] overheads`.
    pub fn inconsistency(&self) -> Option<String> {
        let record = |r: &Option<OverheadRecord>| r.as_ref().map(|r| r.max_ns);
        let checks = [
            (
                "context_switch_ns",
                self.context_switch_ns,
                record(&self.context_switch),
                "context_switch.max_ns",
            ),
            (
                "release_latency_ns",
                self.release_latency_ns,
                record(&self.release_latency),
                "release_latency.max_ns",
            ),
            (
                "release_jitter_ns",
                self.release_jitter_ns,
                self.release_latency
                    .as_ref()
                    .map(|r| r.max_ns.saturating_sub(r.min_ns)),
                "release_latency.max_ns − min_ns",
            ),
            (
                "tick_ns",
                self.tick_ns,
                self.tick.as_ref().map(|t| t.cost.max_ns),
                "tick.max_ns",
            ),
            (
                "tick_period_ns",
                self.tick_period_ns,
                self.tick.as_ref().map(|t| t.period_ns),
                "tick.period_ns",
            ),
        ];
        checks.into_iter().find_map(|(key, value, measured, from)| {
            let measured = measured?;
            (value != Some(measured)).then(|| {
                let value = value.map_or_else(|| "absent".to_string(), |ns| ns.to_string());
                format!("`{key}` is {value} but its record's {from} is {measured}")
            })
        })
    }
}

/// A calibration file as analysis reads it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CalibrationFile {
    /// The measured Δ.
    pub refill: RefillRecord,
    /// The measured platform overheads (absent in files written before
    /// they were measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overheads: Option<Overheads>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_calibration_round_trips_and_ignores_what_it_does_not_read() {
        let file = CalibrationFile {
            refill: RefillRecord {
                partitions: 16,
                refill_ns: 90_600,
            },
            overheads: None,
        };
        let text = serde_json::to_string(&file).unwrap();
        assert_eq!(
            serde_json::from_str::<CalibrationFile>(&text).unwrap(),
            file
        );
        let bench_output = r#"{"bench": "calibrate", "latency": [],
            "refill": {"partitions": 16, "llc_bytes": 8388608, "refill_ns": 90600,
                       "refill": "90.6us"}}"#;
        assert_eq!(
            serde_json::from_str::<CalibrationFile>(bench_output).unwrap(),
            file
        );
        let delta = RefillCalibration::from(file.refill);
        assert_eq!((delta.refill, delta.partitions), (Nanos(90_600), 16));
    }

    fn record(max_ns: u64, min_ns: u64) -> OverheadRecord {
        OverheadRecord {
            max_ns,
            p99_ns: max_ns,
            median_ns: min_ns,
            min_ns,
            samples: 100,
            measured_by: "a test".into(),
        }
    }

    #[test]
    fn overheads_round_trip_and_missing_ones_stay_absent() {
        let mut overheads = Overheads::default();
        overheads.set_unmeasured("tick", "no periodic interruption found");
        overheads.set_context_switch(record(33_500, 5_600));
        overheads.set_release_latency(record(130_000, 4_000));
        assert_eq!(overheads.context_switch_ns, Some(33_500));
        assert_eq!(
            (overheads.release_latency_ns, overheads.release_jitter_ns),
            (Some(130_000), Some(126_000))
        );
        assert!(overheads.is_consistent());
        let file = CalibrationFile {
            refill: RefillRecord {
                partitions: 32,
                refill_ns: 120_300,
            },
            overheads: Some(overheads.clone()),
        };
        let json = serde_json::to_value(&file).unwrap();
        let written = &json["overheads"];
        assert_eq!(written["context_switch_ns"], 33_500);
        // Not measured: absent, never zero; the reason is there.
        assert!(written.get("tick_ns").is_none() && written.get("tick").is_none());
        assert_eq!(
            written["unmeasured"]["tick"],
            "no periodic interruption found"
        );
        assert_eq!(
            serde_json::from_value::<CalibrationFile>(json).unwrap(),
            file
        );
        // Measuring it later removes the note.
        overheads.set_tick(TickRecord {
            cost: record(20_000, 2_000),
            period_ns: 4_000_000,
        });
        assert!(overheads.unmeasured.is_empty());
        assert_eq!(
            (overheads.tick_ns, overheads.tick_period_ns),
            (Some(20_000), Some(4_000_000))
        );
        assert!(overheads.is_consistent());
        overheads.tick_ns = Some(1);
        assert!(!overheads.is_consistent());
        assert_eq!(
            overheads.inconsistency().unwrap(),
            "`tick_ns` is 1 but its record's tick.max_ns is 20000"
        );
        overheads.tick_ns = Some(20_000);
        overheads.context_switch_ns = None;
        assert_eq!(
            overheads.inconsistency().unwrap(),
            "`context_switch_ns` is absent but its record's context_switch.max_ns is 33500"
        );
    }

    #[test]
    fn a_file_without_overheads_reads_as_none() {
        let old = r#"{"refill": {"partitions": 16, "refill_ns": 90600}}"#;
        assert_eq!(
            serde_json::from_str::<CalibrationFile>(old)
                .unwrap()
                .overheads,
            None
        );
        let negative = r#"{"refill": {"partitions": 16, "refill_ns": 90600},
                          "overheads": {"context_switch_ns": -5}}"#;
        assert!(serde_json::from_str::<CalibrationFile>(negative).is_err());
    }

    #[test]
    fn a_missing_or_negative_field_is_refused() {
        for bad in [
            "{}",
            r#"{"refill": {"partitions": 16}}"#,
            r#"{"refill": {"partitions": 16, "refill_ns": -1}}"#,
            r#"{"refill": {"partitions": 16, "refill_ns": 1.5}}"#,
        ] {
            assert!(
                serde_json::from_str::<CalibrationFile>(bad).is_err(),
                "{bad}"
            );
        }
    }
}
