//! Planning `tinct bench overheads`: the CPUs, repetitions and durations
//! resolved into a [`Setup`], and the calibration file to store into
//! checked, before anything runs.

use super::Params;
use crate::harness::{BenchOptions, RunHeader};
use crate::{Error, Result};
use std::path::PathBuf;

/// What a run of `tinct bench overheads` measures, and where.
pub struct Plan {
    /// Bench, options, machine, CPUs (its log of counter totals started).
    pub header: RunHeader,
    /// How to measure.
    pub setup: Setup,
}

impl crate::harness::Plan for Plan {
    type Params = Params;
    type Measured = super::Measured;

    /// Checks the parameters (and the calibration file to store into, which
    /// must be one) and resolves the setup.
    fn plan(params: &Params) -> Result<Plan> {
        let options = &params.common;
        let cpus = options.cpus(1)?;
        let header = RunHeader::new("overheads", options, options.reps_or(30, 200)?, cpus);
        let setup = Setup::of(options, &header, params.seconds.unwrap_or(10))?;
        // A file that cannot take the result is refused before the measurement.
        if let Some(path) = &params.calibration {
            super::report::read_calibration(path)?;
        }
        Ok(Plan { header, setup })
    }

    fn measure(&self, progress: &dyn crate::harness::Progress) -> Result<super::Measured> {
        progress.start(super::progress_steps(self.setup.switch_reps), "overheads");
        let measured = super::measure(&self.setup, progress)?;
        progress.finish();
        Ok(measured)
    }
}

/// How to measure (shared by `overheads` and `calibrate`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setup {
    /// The CPUs: the first one for the context switch and the busy loop,
    /// all of them for the release latency.
    pub cpus: Vec<u32>,
    /// Context-switch samples per case.
    pub switch_reps: u32,
    /// Release-latency and busy-loop duration each, seconds.
    pub seconds: u64,
    /// Seed of the context-switch order.
    pub seed: u64,
    /// The last-level cache, bytes (the worst-case switch reads twice it).
    pub llc_bytes: u64,
}

impl Setup {
    /// The setup for `options` on the CPUs and cache of `header` (quick:
    /// 30 switches and 1 s; full: 200 switches and `seconds`).
    pub fn of(options: &BenchOptions, header: &RunHeader, seconds: u64) -> Result<Self> {
        if seconds == 0 {
            return Err(Error::option("--seconds", "at least 1 second", "0"));
        }
        Ok(Self {
            cpus: header.cpus.clone(),
            switch_reps: options.reps_or(30, 200)?,
            seconds: if options.quick { 1 } else { seconds },
            seed: options.seed,
            llc_bytes: header.machine.llc().map_or(8 << 20, |c| c.size_bytes),
        })
    }
}

/// Where `tinct bench overheads` stores what it measured ([`Params::calibration`]):
/// `explicit` (`--calibration FILE`), else this machine's `saved`
/// calibration (when it exists) if the run is not quick. With no file, the
/// note to show says why nothing is stored.
pub fn calibration_target(
    explicit: Option<PathBuf>,
    saved: Option<PathBuf>,
    quick: bool,
) -> (Option<PathBuf>, Option<&'static str>) {
    match (explicit, saved, quick) {
        (Some(path), _, _) => (Some(path), None),
        (None, Some(saved), false) => (Some(saved), None),
        (None, Some(_), true) => (
            None,
            Some("(--quick: not stored in this machine's calibration)"),
        ),
        (None, None, _) => (
            None,
            Some(
                "(no saved calibration of this machine: run `tinct bench calibrate`, which measures the overheads too, or give --calibration FILE)",
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::super::Params;
    use super::*;

    #[test]
    fn a_saved_calibration_that_does_not_exist_is_not_a_target() {
        let dir = tempfile::tempdir().unwrap();
        let absent = dir.path().join("absent.json");
        let asked = Params {
            seconds: Some(3),
            ..Params::default()
        };
        let (params, note) = asked.storing(Some(absent));
        assert_eq!(params.calibration, None);
        assert_eq!(params.seconds, Some(3));
        assert!(note.unwrap().contains("no saved calibration"));
        let present = dir.path().join("calibrate.json");
        std::fs::write(&present, "{}").unwrap();
        let (params, note) = Params::default().storing(Some(present.clone()));
        assert_eq!((params.calibration, note), (Some(present), None));
    }

    #[test]
    fn the_overheads_go_to_the_named_file_else_to_a_full_runs_saved_calibration() {
        let named = Some(PathBuf::from("named.json"));
        let saved = Some(PathBuf::from("saved.json"));
        assert_eq!(
            calibration_target(named.clone(), saved.clone(), true),
            (named, None)
        );
        assert_eq!(
            calibration_target(None, saved.clone(), false),
            (saved.clone(), None)
        );
        let (quick, note) = calibration_target(None, saved, true);
        assert_eq!(quick, None);
        assert!(note.unwrap().contains("--quick"));
        let (none, note) = calibration_target(None, None, false);
        assert_eq!(none, None);
        assert!(note.unwrap().contains("no saved calibration"));
    }
}
