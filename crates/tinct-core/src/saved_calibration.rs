//! This machine's calibration on disk: where a full `tinct bench calibrate`
//! keeps its `calibrate.json`, and how a task set without `refill` takes
//! its Δ from one (docs/FORMAT.md, "The calibration file").
//!
//! Order of precedence: the task-set file's own `refill` key, an explicit
//! calibration file (`--calibration FILE`), `$TINCT_CALIBRATION`, and the
//! saved calibration at `$XDG_STATE_HOME/tinct/calibrate.json` (default
//! `~/.local/state/tinct/calibrate.json`). Every output that used it says
//! so. The environment is passed in as a lookup, so this module stays free
//! of OS calls and its rules are testable without touching the process's
//! environment.

use crate::TaskSet;
use crate::calibration::CalibrationFile;
use crate::format::{InputError, LoadOptions, Loaded, RefillCalibration, load_with};
use crate::units::Nanos;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

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

/// Where a full `tinct bench calibrate` saves its result for this machine,
/// from the environment `lookup` gives (`std::env::var_os` in a program):
/// `$TINCT_CALIBRATION`, else under `$XDG_STATE_HOME`, else under
/// `$HOME/.local/state`; `None` when none is set.
pub fn saved_path(lookup: impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    if let Some(path) = lookup(ENV) {
        return Some(PathBuf::from(path));
    }
    let state = lookup("XDG_STATE_HOME")
        .map(PathBuf::from)
        .or_else(|| lookup("HOME").map(|home| PathBuf::from(home).join(".local/state")))?;
    Some(state.join("tinct").join("calibrate.json"))
}

/// Reads a `calibrate.json` as [`CalibrationFile`] (the fields analysis
/// needs; the rest of the file is ignored), the message naming the file.
pub fn read_file(path: &Path) -> Result<CalibrationFile, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| not_a_calibration(path, &format!("found an unreadable file ({e})")))?;
    parse_file(path, &text)
}

/// Parses the text of the `calibrate.json` at `path` (named in the message).
pub fn parse_file(path: &Path, text: &str) -> Result<CalibrationFile, String> {
    serde_json::from_str(text).map_err(|e| {
        not_a_calibration(
            path,
            &format!("with whole numbers at refill.refill_ns and refill.partitions, found {e}"),
        )
    })
}

/// The message for a file that is not a calibration: `what` was wrong.
pub fn not_a_calibration(path: &Path, what: &str) -> String {
    format!(
        "{}: expected a calibrate.json written by `tinct bench calibrate`, {what}",
        path.display()
    )
}

/// Reads Δ and N_P of a `calibrate.json`; a zero of either is refused.
pub fn read(path: &Path) -> Result<Calibration, String> {
    let refill = RefillCalibration::from(read_file(path)?.refill);
    if refill.refill == Nanos::ZERO || refill.partitions == 0 {
        return Err(not_a_calibration(
            path,
            "found a zero refill time or partition count",
        ));
    }
    Ok(Calibration {
        path: path.to_path_buf(),
        refill,
    })
}

/// The calibration to use: `explicit` (which must exist and read), else the
/// one at `saved` if a file is there.
pub fn find(
    explicit: Option<&Path>,
    saved: Option<PathBuf>,
) -> Result<Option<Calibration>, String> {
    match explicit {
        Some(path) => read(path).map(Some),
        None => match saved {
            Some(path) if path.exists() => read(&path).map(Some),
            _ => Ok(None),
        },
    }
}

/// Loads a task set, taking Δ from `calibration` when the file has none.
/// Returns the calibration when it was used.
pub fn load_task_set(
    file: &Path,
    calibration: Option<Calibration>,
) -> Result<(TaskSet, Option<Calibration>), InputError> {
    let options = LoadOptions {
        default_refill: calibration.as_ref().map(|c| c.refill),
    };
    let Loaded {
        set,
        refill_from_calibration,
    } = load_with(file, &options)?;
    Ok((set, calibration.filter(|_| refill_from_calibration)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let pairs: Vec<(String, OsString)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), OsString::from(v)))
            .collect();
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        }
    }

    #[test]
    fn the_saved_path_follows_the_variables_in_order() {
        let all = [
            (ENV, "/explicit.json"),
            ("XDG_STATE_HOME", "/state"),
            ("HOME", "/home/u"),
        ];
        assert_eq!(saved_path(env(&all)), Some("/explicit.json".into()));
        assert_eq!(
            saved_path(env(&all[1..])),
            Some("/state/tinct/calibrate.json".into())
        );
        assert_eq!(
            saved_path(env(&all[2..])),
            Some("/home/u/.local/state/tinct/calibrate.json".into())
        );
        assert_eq!(saved_path(env(&[])), None);
    }

    #[test]
    fn a_zero_refill_or_a_missing_file_is_refused_with_the_path() {
        let dir = std::env::temp_dir().join(format!("tinct-saved-cal-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let zero = dir.join("zero.json");
        std::fs::write(&zero, r#"{"refill": {"partitions": 16, "refill_ns": 0}}"#).unwrap();
        let error = read(&zero).unwrap_err();
        assert!(
            error.contains("zero.json") && error.contains("zero refill"),
            "{error}"
        );
        let good = dir.join("good.json");
        std::fs::write(
            &good,
            r#"{"refill": {"partitions": 16, "refill_ns": 90600}}"#,
        )
        .unwrap();
        assert_eq!(read(&good).unwrap().refill.refill, Nanos(90_600));
        assert_eq!(find(None, Some(dir.join("absent.json"))), Ok(None));
        assert!(find(Some(&dir.join("absent.json")), None).is_err());
        assert_eq!(find(None, Some(good.clone())).unwrap().unwrap().path, good);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
