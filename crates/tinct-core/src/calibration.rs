//! The calibration file, `calibrate.json`: what `tinct bench calibrate`
//! writes and `tinct analyze`, `plan` and `run` read to get Δ for task sets
//! without `refill` (docs/FORMAT.md, "The calibration file").
//!
//! Only the data and its serde live here. The file holds the bench's whole
//! result (latencies, bandwidth, the refill passes' distributions); a reader
//! needs only [`RefillRecord`], and fields it does not know are ignored. The
//! bench writes its `refill` object through the same [`RefillRecord`]
//! (flattened into its larger result), so writer and reader cannot drift.

use crate::format::RefillCalibration;
use crate::units::Nanos;
use serde::{Deserialize, Serialize};

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

/// A calibration file as analysis reads it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CalibrationFile {
    /// The measured Δ.
    pub refill: RefillRecord,
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
