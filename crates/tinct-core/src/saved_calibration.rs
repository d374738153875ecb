//! This machine's calibration on disk: where a full `tinct bench calibrate`
//! keeps its `calibrate.json`, and how a task set without `refill` takes
//! its Δ from one (docs/FORMAT.md, "The calibration file").
//!
//! Order of precedence: the task-set file's own `refill` key, an explicit
//! calibration file (`--calibration FILE`), `$TINCT_CALIBRATION`, and the
//! saved calibration at `$XDG_STATE_HOME/tinct/calibrate.json` (default
//! `~/.local/state/tinct/calibrate.json`). Every output that used it says
//! so ([`RefillSource`]). The environment is passed in as a lookup, so this module stays free
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
/// needs; the rest of the file is ignored), the error naming the file.
pub fn read_file(path: &Path) -> Result<CalibrationFile, InputError> {
    let text = read_capped(path)?;
    parse_calibration(path, &text)
}

/// The text of the calibration file at `path`, at most
/// [`crate::format::MAX_FILE_BYTES`] (a path such as /dev/zero is refused,
/// not read without end).
pub fn read_capped(path: &Path) -> Result<String, InputError> {
    crate::format::read_text(path, crate::format::MAX_FILE_BYTES, "calibrate.json")
        .map_err(|e| not_a_calibration(path, "", e.found))
}

/// Parses the text of the `calibrate.json` at `path` (named in the
/// message), the error as one sentence.
pub fn parse_file(path: &Path, text: &str) -> Result<CalibrationFile, String> {
    parse_calibration(path, text).map_err(|e| e.to_string())
}

/// [`parse_file`] with its error typed: the file, the line, what was
/// expected and found.
fn parse_calibration(path: &Path, text: &str) -> Result<CalibrationFile, InputError> {
    serde_json::from_str(text).map_err(|e| {
        not_a_calibration(
            path,
            " with whole numbers at refill.refill_ns and refill.partitions",
            e.to_string(),
        )
        .at_line(Some(e.line()))
    })
}

/// The error for a file at `path` that is not a calibration: a
/// calibrate.json was expected (`with` says what it needed), `found` was
/// found.
pub fn not_a_calibration(path: &Path, with: &str, found: String) -> InputError {
    InputError::new(
        path.display().to_string(),
        "",
        format!("a calibrate.json written by `tinct bench calibrate`{with}"),
        found,
    )
}

/// Reads Δ and N_P of a `calibrate.json`; a zero of either is refused.
pub fn read(path: &Path) -> Result<Calibration, InputError> {
    let refill = RefillCalibration::from(read_file(path)?.refill);
    if refill.refill == Nanos::ZERO || refill.partitions == 0 {
        return Err(not_a_calibration(
            path,
            " with a refill time and partition count above zero",
            format!(
                "refill_ns {} and partitions {}",
                refill.refill.0, refill.partitions
            ),
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
) -> Result<Option<Calibration>, InputError> {
    match explicit {
        Some(path) => read(path).map(Some),
        None => match saved {
            Some(path) if path.exists() => read(&path).map(Some),
            _ => Ok(None),
        },
    }
}

/// Where the refill time Δ of a loaded task set came from, as every output
/// that used it says.
#[derive(Clone, Debug, PartialEq)]
pub enum RefillSource {
    /// The task-set file's own `[platform] refill`.
    File,
    /// A calibration, because the file had no `refill`.
    Calibration(Calibration),
    /// The caller's override (`--refill` on the command line).
    Override,
}

impl RefillSource {
    /// The source after the value, as `tinct analyze` prints it: "from the
    /// file", "from calibration PATH (Δ′ measured with N partitions)",
    /// "from --refill".
    pub fn describe(&self) -> String {
        match self {
            Self::File => "from the file".to_string(),
            Self::Calibration(c) => format!(
                "from calibration {} ({} measured with {} partitions)",
                c.path.display(),
                c.refill.refill,
                c.refill.partitions
            ),
            Self::Override => "from --refill".to_string(),
        }
    }

    /// The value `refill` and its source, as `tinct plan` prints them and
    /// writes them into a plan's header: "Δ 45.3us from the file", "Δ …
    /// from calibration PATH", "Δ … from --refill".
    pub fn describe_value(&self, refill: Nanos) -> String {
        match self {
            Self::Calibration(c) => format!("Δ {refill} from calibration {}", c.path.display()),
            other => format!("Δ {refill} {}", other.describe()),
        }
    }
}

/// Loads a task set, taking Δ from `calibration` when the file has none;
/// `refill`, when given, overrides either. Returns where Δ came from.
pub fn load_task_set(
    file: &Path,
    calibration: Option<Calibration>,
    refill: Option<Nanos>,
) -> Result<(TaskSet, RefillSource), InputError> {
    let options = LoadOptions {
        default_refill: calibration.as_ref().map(|c| c.refill),
    };
    let Loaded {
        mut set,
        refill_from_calibration,
    } = load_with(file, &options)?;
    let source = match (refill, calibration.filter(|_| refill_from_calibration)) {
        (Some(refill), _) => {
            set.platform.refill = refill;
            RefillSource::Override
        }
        (None, Some(calibration)) => RefillSource::Calibration(calibration),
        (None, None) => RefillSource::File,
    };
    Ok((set, source))
}

/// Saves the fresh `calibrate.json` at `calibrate_json` as this machine's
/// calibration, at `target` ([`saved_path`]; `None` when the environment
/// names no place), creating its directory. Returns where it went.
pub fn save(calibrate_json: &Path, target: Option<PathBuf>) -> std::io::Result<PathBuf> {
    let target = target.ok_or_else(|| {
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
        assert_eq!(error.file, zero.display().to_string());
        assert_eq!(error.found, "refill_ns 0 and partitions 16");
        assert!(error.expected.contains("above zero"), "{error}");
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

    #[test]
    fn the_refill_source_says_file_calibration_or_override_and_the_override_wins() {
        let dir = std::env::temp_dir().join(format!("tinct-refill-src-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let task = "[[task]]\nname = \"a\"\nperiod = \"10ms\"\nmemory = \"4KiB\"\nwcet = { 1 = \"1ms\" }\n";
        let platform = "[platform]\ncores = 1\npartitions = 32\nmemory = \"1MiB\"\n";
        let with = dir.join("with.toml");
        std::fs::write(&with, format!("{platform}refill = \"1us\"\n\n{task}")).unwrap();
        let without = dir.join("without.toml");
        std::fs::write(&without, format!("{platform}\n{task}")).unwrap();
        let cal = dir.join("cal.json");
        std::fs::write(
            &cal,
            r#"{"refill": {"partitions": 16, "refill_ns": 90600}}"#,
        )
        .unwrap();
        let calibration = || Some(read(&cal).unwrap());

        // The file's own Δ, and an override that wins over the calibration.
        for (file, refill, expected, kind, words) in [
            (
                &with,
                None,
                Nanos(1_000),
                RefillSource::File,
                "Δ 1us from the file",
            ),
            (
                &without,
                Some(Nanos(7_000)),
                Nanos(7_000),
                RefillSource::Override,
                "Δ 7us from --refill",
            ),
        ] {
            let (set, source) = load_task_set(file, calibration(), refill).unwrap();
            assert_eq!((set.platform.refill, &source), (expected, &kind));
            assert_eq!(source.describe_value(set.platform.refill), words);
        }

        let (set, source) = load_task_set(&without, calibration(), None).unwrap();
        assert!(matches!(source, RefillSource::Calibration(_)));
        let words = format!(
            "from calibration {} (90.6us measured with 16 partitions)",
            cal.display()
        );
        assert_eq!(source.describe(), words);
        assert_eq!(
            source.describe_value(set.platform.refill),
            format!(
                "Δ {} from calibration {}",
                set.platform.refill,
                cal.display()
            )
        );

        let target = dir.join("state/tinct/calibrate.json");
        assert_eq!(save(&cal, Some(target.clone())).unwrap(), target);
        assert_eq!(read(&target).unwrap().refill, read(&cal).unwrap().refill);
        assert!(save(&cal, None).unwrap_err().to_string().contains(ENV));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
