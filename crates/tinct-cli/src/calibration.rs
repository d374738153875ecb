//! The machine's measured refill time Δ, as the default for task sets whose
//! `[platform]` has no `refill` key.
//!
//! `tinct bench calibrate` (a full run, not `--quick`) saves its
//! `calibrate.json` as this machine's calibration. `tinct analyze`,
//! `tinct plan` and `tinct run` then use it, in this order of precedence:
//! the file's own `refill` key, `--calibration FILE`, `$TINCT_CALIBRATION`,
//! and the saved calibration at `$XDG_STATE_HOME/tinct/calibrate.json`
//! (default `~/.local/state/tinct/calibrate.json`). Every output that used
//! it says so.

use crate::error::CliError;
use std::path::{Path, PathBuf};
use tinct_core::calibration::CalibrationFile;
use tinct_core::format::{LoadOptions, Loaded, RefillCalibration, load_with};
use tinct_core::units::Nanos;

/// The environment variable naming a calibration file.
pub const ENV: &str = "TINCT_CALIBRATION";

/// A calibration found on disk.
#[derive(Clone, Debug, PartialEq)]
pub struct Calibration {
    /// Where it was read from.
    pub path: PathBuf,
    /// Δ and the N_P it was measured with.
    pub refill: RefillCalibration,
}

/// Where a full `tinct bench calibrate` saves its result for this machine.
pub fn saved_path() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(ENV) {
        return Some(PathBuf::from(path));
    }
    let state = std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".local/state"))
        })?;
    Some(state.join("tinct").join("calibrate.json"))
}

/// Reads `refill.refill_ns` and `refill.partitions` of a `calibrate.json`
/// (tinct-core's [`CalibrationFile`]; the rest of the file is ignored).
pub fn read(path: &Path) -> Result<Calibration, CliError> {
    let bad = |what: String| {
        CliError::Input(format!(
            "{}: expected a calibrate.json written by `tinct bench calibrate`, {what}",
            path.display()
        ))
    };
    let text = std::fs::read_to_string(path)
        .map_err(|e| bad(format!("found an unreadable file ({e})")))?;
    let file: CalibrationFile = serde_json::from_str(&text).map_err(|e| {
        bad(format!(
            "with whole numbers at refill.refill_ns and refill.partitions, found {e}"
        ))
    })?;
    let refill = RefillCalibration::from(file.refill);
    if refill.refill == Nanos::ZERO || refill.partitions == 0 {
        return Err(bad("found a zero refill time or partition count".into()));
    }
    Ok(Calibration {
        path: path.to_path_buf(),
        refill,
    })
}

/// The calibration to use: `explicit` (which must exist), else the saved one
/// if there is one.
pub fn find(explicit: Option<&Path>) -> Result<Option<Calibration>, CliError> {
    match explicit {
        Some(path) => read(path).map(Some),
        None => match saved_path() {
            Some(path) if path.exists() => read(&path).map(Some),
            _ => Ok(None),
        },
    }
}

/// Loads a task set, taking Δ from the calibration when the file has none.
/// Returns the calibration that was used, if any.
pub fn load_task_set(
    file: &Path,
    explicit: Option<&Path>,
) -> Result<(tinct_core::TaskSet, Option<Calibration>), CliError> {
    let calibration = find(explicit)?;
    let options = LoadOptions {
        default_refill: calibration.as_ref().map(|c| c.refill),
    };
    let Loaded {
        set,
        refill_from_calibration,
    } = load_with(file, &options)?;
    Ok((set, calibration.filter(|_| refill_from_calibration)))
}

/// Saves a fresh `calibrate.json` as this machine's calibration.
pub fn save(calibrate_json: &Path) -> std::io::Result<PathBuf> {
    let target = saved_path().ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("neither ${ENV}, $XDG_STATE_HOME nor $HOME is set"),
        )
    })?;
    if let Some(dir) = target.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::copy(calibrate_json, &target)?;
    Ok(target)
}
