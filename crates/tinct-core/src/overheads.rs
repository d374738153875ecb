//! Where the platform overheads an analysis charges come from:
//! none, the machine calibration that `tinct bench calibrate` and `tinct
//! bench overheads` write ([`crate::calibration::Overheads`]), or a file
//! giving them — a calibration file, or a task-set file's
//! `[platform] overheads`.
//!
//! From a calibration, each `*_ns` key is the largest value measured, and
//! that is what is charged: a bound must cover the worst case that was
//! seen, so the 99th percentile beside it is not used. δ is
//! `context_switch_ns`; the release latency added to every task's jitter is
//! `release_latency_ns` (the whole latency, not the spread
//! `release_jitter_ns`: response times count from the nominal release, so
//! the least latency is part of the delay too); the timer interrupt is
//! `tick_ns`, and `tick_period_ns` makes the tick periodic. An overhead the
//! calibration does not have is reported missing (with the calibration's
//! reason), never taken as zero.

use crate::analysis::{Analysis, AnalysisError, analyze};
use crate::calibration::{CalibrationFile, Overheads as Measured};
use crate::format::{InputError, LoadOptions, RefillCalibration, Syntax, parse_with, read_text};
use crate::model::Overheads;
use crate::units::Nanos;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::path::Path;

/// An overhead a source does not give.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MissingOverhead {
    /// Its name: `context_switch`, `release_latency` or `tick`.
    pub name: String,
    /// Why it is missing.
    pub why: String,
}

/// The overheads to charge and where they came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OverheadsSource {
    /// What is charged (a missing overhead is zero here and listed in
    /// `missing`).
    pub overheads: Overheads,
    /// Where they came from, in words.
    pub from: String,
    /// Overheads the source does not give: not charged.
    pub missing: Vec<MissingOverhead>,
}

impl OverheadsSource {
    /// No overheads, on purpose.
    pub fn none(from: impl Into<String>) -> OverheadsSource {
        OverheadsSource {
            overheads: Overheads::NONE,
            from: from.into(),
            missing: Vec::new(),
        }
    }
}

/// The overheads of a calibration file's `overheads` object (`None`: the
/// file has none), each missing one reported with the calibration's reason.
pub fn from_calibration(measured: Option<&Measured>, from: impl Into<String>) -> OverheadsSource {
    let from = from.into();
    let Some(measured) = measured else {
        let why = "the calibration has no `overheads` (measure them: tinct bench overheads)";
        return OverheadsSource {
            overheads: Overheads::NONE,
            from,
            missing: ["context_switch", "release_latency", "tick"]
                .iter()
                .map(|name| MissingOverhead {
                    name: name.to_string(),
                    why: why.to_string(),
                })
                .collect(),
        };
    };
    let mut missing = Vec::new();
    let mut take = |name: &str, value: Option<u64>| match value {
        Some(ns) => Nanos(ns),
        None => {
            let why = measured
                .unmeasured
                .get(name)
                .cloned()
                .unwrap_or_else(|| "not in the calibration".to_string());
            missing.push(MissingOverhead {
                name: name.to_string(),
                why,
            });
            Nanos::ZERO
        }
    };
    let overheads = Overheads {
        context_switch: take("context_switch", measured.context_switch_ns),
        release_latency: take("release_latency", measured.release_latency_ns),
        tick: take("tick", measured.tick_ns),
        tick_period: measured.tick_ns.and(measured.tick_period_ns).map(Nanos),
    };
    OverheadsSource {
        overheads,
        from,
        missing,
    }
}

/// Refuses measured overheads whose `*_ns` keys (what the analysis
/// charges) differ from the records beside them, as a file edited by hand
/// may: a δ of 0 beside a measured maximum of 84 µs would be charged as 0.
fn check_records(measured: &Measured, file: &str) -> Result<(), InputError> {
    if measured.tick_period_ns == Some(0) {
        return Err(InputError {
            file: file.to_string(),
            line: None,
            field: "overheads".into(),
            expected: "a `tick_period_ns` above 0 (or none), as in a task set's `[platform] \
                       overheads`: a tick period of 0 would drop the tick"
                .into(),
            found: "`tick_period_ns` 0".into(),
        });
    }
    if let (Some(tick), Some(period)) = (measured.tick_ns, measured.tick_period_ns)
        && period > 0
        && tick >= period
    {
        return Err(InputError {
            file: file.to_string(),
            line: None,
            field: "overheads".into(),
            expected: format!(
                "a `tick_ns` below `tick_period_ns` {} (the tick would use the whole core), as \
                 in a task set's `[platform] overheads`",
                Nanos(period)
            ),
            found: format!("`tick_ns` {}", Nanos(tick)),
        });
    }
    match measured.inconsistency() {
        None => Ok(()),
        Some(found) => Err(InputError {
            file: file.to_string(),
            line: None,
            field: "overheads".into(),
            expected: "each `*_ns` key equal to the maximum its record measured (tinct bench \
                       overheads writes them so; edit a task set's `[platform] overheads` to \
                       charge other values)"
                .into(),
            found,
        }),
    }
}

/// Reads the overheads of a calibration file (JSON with `refill` and
/// `overheads`, as `tinct bench calibrate` saves it), of a bench's result
/// that measured them (`overheads.json` of `tinct bench overheads`,
/// `calibrate.json`: JSON with `bench` and `overheads`; Δ is not needed
/// for overheads), or of a task-set file's `[platform] overheads`.
pub fn read(path: &Path) -> Result<OverheadsSource, InputError> {
    let file = path.display().to_string();
    let text = read_text(path, crate::format::MAX_FILE_BYTES, "overheads file")?;
    let value: Option<serde_json::Value> = serde_json::from_str(&text).ok();
    let refused = |found: String| InputError {
        file: file.clone(),
        line: None,
        field: "overheads".into(),
        expected: "a calibration file written by `tinct bench calibrate`, or the \
                   overheads.json of `tinct bench overheads`"
            .into(),
        found,
    };
    if let Some(object) = value.as_ref().and_then(|v| v.as_object())
        && !object.contains_key("platform")
    {
        if object.contains_key("refill") {
            let calibration: CalibrationFile =
                serde_json::from_value(value.clone().unwrap_or_default())
                    .map_err(|e| refused(e.to_string()))?;
            if let Some(measured) = &calibration.overheads {
                check_records(measured, &file)?;
            }
            return Ok(from_calibration(
                calibration.overheads.as_ref(),
                format!("calibration {file}"),
            ));
        }
        // Another bench result: its `overheads` (a calibrate run stopped
        // before Δ has no `refill`, and needs none here). One stopped
        // before them has none: refused as such.
        if let Some(bench) = object.get("bench") {
            let bench = bench.as_str().unwrap_or("?");
            let Some(overheads) = object.get("overheads") else {
                return Err(refused(format!(
                    "a `tinct bench {bench}` result without `overheads` (stopped before it measured them?)"
                )));
            };
            let measured: Measured = serde_json::from_value(overheads.clone())
                .map_err(|e| refused(format!("`overheads` that does not read: {e}")))?;
            check_records(&measured, &file)?;
            return Ok(from_calibration(
                Some(&measured),
                format!("`tinct bench {bench}` result {file}"),
            ));
        }
        // Overheads alone, as someone writes them by hand from a bench's
        // result: not a task set (whose parse would only say "unknown key
        // overheads"); say what the file needs.
        if object.contains_key("overheads") {
            return Err(InputError {
                file: file.clone(),
                line: None,
                field: "overheads file".into(),
                expected: "a bench result naming its bench beside `overheads`, as `tinct bench \
                           overheads` writes it: {\"bench\": \"overheads\", \"overheads\": \
                           {\"context_switch_ns\": …}} (docs/FORMAT.md, \"Platform overheads\"), \
                           a calibration file (with `refill`), or a task set giving \
                           [platform] overheads"
                    .into(),
                found: "an `overheads` object without a `bench` key".into(),
            });
        }
    }
    // A task set: its other keys are checked as usual; a missing `refill`
    // does not matter here.
    let options = LoadOptions {
        default_refill: Some(RefillCalibration {
            refill: Nanos(1),
            partitions: 1,
        }),
    };
    let loaded = parse_with(&text, &file, Syntax::from_path(path), &options)?;
    let overheads = loaded.set.platform.overheads;
    if overheads.is_none() {
        return Err(InputError {
            file,
            line: None,
            field: "platform field `overheads`".into(),
            expected: "the overheads to charge, e.g. overheads = { context_switch = \"5us\", release_latency = \"20us\", tick = \"1us\" }".into(),
            found: "none".into(),
        });
    }
    Ok(OverheadsSource {
        overheads,
        from: format!("task-set file {file}"),
        missing: Vec::new(),
    })
}

/// Which platform overheads to charge (`tinct analyze --overheads`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OverheadsChoice {
    /// The task set's own `[platform] overheads`, if any.
    TaskSet,
    /// None at all: kim2013's and the classic analysis' numbers.
    None,
    /// The machine calibration's measured overheads.
    Measured,
    /// A calibration file or a task-set file giving them.
    File(std::path::PathBuf),
}

impl OverheadsChoice {
    /// `none`, `measured` or a file name.
    pub fn parse(text: &str) -> Result<OverheadsChoice, String> {
        Ok(match text {
            "none" => OverheadsChoice::None,
            "measured" => OverheadsChoice::Measured,
            "" => return Err("expected none, measured or a file".into()),
            path => OverheadsChoice::File(path.into()),
        })
    }

    /// The overheads this choice charges on `set` (read from the file
    /// `file`), and where they come from; `calibration` is the machine's
    /// calibration file, if there is one (for [`OverheadsChoice::Measured`]).
    pub fn resolve(
        &self,
        set: &crate::TaskSet,
        file: &Path,
        calibration: Option<&Path>,
    ) -> Result<OverheadsSource, InputError> {
        Ok(match self {
            OverheadsChoice::TaskSet if set.platform.overheads.is_none() => {
                OverheadsSource::none("the task set gives none; see --overheads")
            }
            OverheadsChoice::TaskSet => OverheadsSource {
                overheads: set.platform.overheads,
                from: format!("the task-set file {}", file.display()),
                missing: Vec::new(),
            },
            OverheadsChoice::None => OverheadsSource::none("--overheads none"),
            OverheadsChoice::File(path) => read(path)?,
            OverheadsChoice::Measured => {
                let path = calibration.ok_or_else(|| {
                    InputError::new(
                        "",
                        "--overheads measured",
                        "a calibration of this machine (run `tinct bench calibrate` or `tinct \
                         bench overheads`, or pass --calibration FILE)",
                        "none",
                    )
                })?;
                read(path)?
            }
        })
    }

    /// [`OverheadsChoice::resolve`] with the machine's calibration picked
    /// as `tinct analyze` and the Python `TaskSet.analyze` pick it:
    /// `explicit` (`--calibration FILE`), else for
    /// [`OverheadsChoice::Measured`] the saved one at `saved`
    /// ([`crate::saved_calibration::saved_path`]) when a file is there.
    pub fn resolve_with_saved(
        &self,
        set: &crate::TaskSet,
        file: &Path,
        explicit: Option<&Path>,
        saved: Option<std::path::PathBuf>,
    ) -> Result<OverheadsSource, InputError> {
        let calibration = match (self, explicit) {
            (OverheadsChoice::Measured, None) => saved.filter(|p| p.exists()),
            (_, explicit) => explicit.map(Path::to_path_buf),
        };
        self.resolve(set, file, calibration.as_deref())
    }
}

/// A task set analyzed with the overheads an [`OverheadsChoice`] charges:
/// what `tinct analyze` and Python's `TaskSet.analyze` compute and print.
#[derive(Clone, Debug)]
pub struct ChargedAnalysis {
    /// The analysis of the set with [`ChargedAnalysis::source`]'s overheads.
    pub analysis: Analysis,
    /// The overheads charged and where they came from.
    pub source: OverheadsSource,
}

/// Why a set could not be analyzed with the overheads asked for.
#[derive(Debug)]
pub enum ChargeError {
    /// The choice names no usable overheads (`--overheads`, Python's
    /// `overheads=`): where, what was expected and found.
    Overheads(InputError),
    /// The analysis refused the set, located in its file.
    Input(InputError),
}

impl std::fmt::Display for ChargeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ChargeError::Overheads(e) | ChargeError::Input(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for ChargeError {}

impl ChargedAnalysis {
    /// Analyzes `set` (read from `file`) with the overheads `choice`
    /// charges, the machine calibration picked as
    /// [`OverheadsChoice::resolve_with_saved`] picks it. A set the
    /// analysis refuses is bad input naming `file`, the task's line and the
    /// field.
    pub fn of(
        set: &crate::TaskSet,
        file: &Path,
        choice: &OverheadsChoice,
        calibration: Option<&Path>,
        saved: Option<std::path::PathBuf>,
    ) -> Result<ChargedAnalysis, ChargeError> {
        let source = choice
            .resolve_with_saved(set, file, calibration, saved)
            .map_err(ChargeError::Overheads)?;
        let mut charged = set.clone();
        charged.platform.overheads = source.overheads;
        let analysis = analyze(&charged).map_err(|e| {
            let located = e.input_error(&file.display().to_string(), &charged);
            let blamed = match &e {
                AnalysisError::TermTooLarge { cause, .. } => cause.overhead(),
                _ => None,
            };
            match blamed {
                // An overhead too large that the set itself does not give:
                // the source the choice named is at fault.
                Some(name) if *choice != OverheadsChoice::TaskSet => {
                    ChargeError::Overheads(InputError::new(
                        "",
                        format!("the overheads of {}: overhead `{name}`", source.from),
                        located.expected,
                        located.found,
                    ))
                }
                _ => ChargeError::Input(located),
            }
        })?;
        Ok(ChargedAnalysis { analysis, source })
    }

    /// The report `tinct analyze --json` prints: the analysis with
    /// `overheads_source` and, where the front end says where Δ came from,
    /// `refill_source`.
    pub fn report<'a>(&'a self, refill_source: Option<&'a str>) -> AnalysisReport<'a> {
        AnalysisReport {
            analysis: Cow::Borrowed(&self.analysis),
            refill_source: refill_source.map(Cow::Borrowed),
            overheads_source: Cow::Borrowed(&self.source),
        }
    }
}

/// The analysis with where its inputs came from, as `--json` prints it:
/// written from borrowed parts ([`ChargedAnalysis::report`]), read back
/// owned.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AnalysisReport<'a> {
    /// The analysis' own fields.
    #[serde(flatten)]
    pub analysis: Cow<'a, Analysis>,
    /// Where Δ came from (the CLI's words; absent from Python's report).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refill_source: Option<Cow<'a, str>>,
    /// The overheads charged and where they came from.
    pub overheads_source: Cow<'a, OverheadsSource>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_overheads_choice_parses_and_measured_needs_a_calibration() {
        assert_eq!(OverheadsChoice::parse("none"), Ok(OverheadsChoice::None));
        assert_eq!(
            OverheadsChoice::parse("measured"),
            Ok(OverheadsChoice::Measured)
        );
        assert_eq!(
            OverheadsChoice::parse("x.json"),
            Ok(OverheadsChoice::File("x.json".into()))
        );
        assert!(OverheadsChoice::parse("").is_err());
        let set = crate::format::parse(crate::experiment::kim2013::TABLE_I, "t.toml", Syntax::Toml)
            .unwrap();
        let error = OverheadsChoice::Measured
            .resolve(&set, Path::new("t.toml"), None)
            .unwrap_err();
        assert_eq!(error.file, "");
        assert_eq!(error.field, "--overheads measured");
        assert!(
            error.expected.starts_with("a calibration of this machine"),
            "{error}"
        );
        assert_eq!(error.found, "none");
        let none = OverheadsChoice::None
            .resolve(&set, Path::new("t.toml"), None)
            .unwrap();
        assert_eq!(none, OverheadsSource::none("--overheads none"));
    }

    #[test]
    fn measured_takes_the_explicit_calibration_else_a_saved_one_that_exists() {
        let set = crate::format::parse(crate::experiment::kim2013::TABLE_I, "t.toml", Syntax::Toml)
            .unwrap();
        let file = Path::new("t.toml");
        let absent_saved = Some(std::path::PathBuf::from(
            "/nonexistent/saved/calibrate.json",
        ));
        let error = OverheadsChoice::Measured
            .resolve_with_saved(&set, file, None, absent_saved.clone())
            .unwrap_err();
        assert_eq!(
            (error.field.as_str(), error.found.as_str()),
            ("--overheads measured", "none"),
            "a saved path with no file there is no calibration: {error}"
        );
        let error = OverheadsChoice::Measured
            .resolve_with_saved(
                &set,
                file,
                Some(Path::new("/nonexistent/explicit.json")),
                absent_saved.clone(),
            )
            .unwrap_err();
        assert_eq!(error.file, "/nonexistent/explicit.json", "{error}");
        let none = OverheadsChoice::None
            .resolve_with_saved(&set, file, None, absent_saved)
            .unwrap();
        assert_eq!(none, OverheadsSource::none("--overheads none"));
    }
    use crate::calibration::{OverheadRecord, TickRecord};

    fn record(max_ns: u64) -> OverheadRecord {
        OverheadRecord {
            max_ns,
            p99_ns: max_ns / 2,
            median_ns: max_ns / 4,
            min_ns: 1,
            samples: 10,
            measured_by: "a test".into(),
        }
    }

    #[test]
    fn the_maxima_are_charged_and_a_missing_one_is_reported() {
        let mut measured = Measured::default();
        measured.set_context_switch(record(5_000));
        measured.set_unmeasured(
            "release_latency",
            "needs SCHED_FIFO and mlockall: run as root",
        );
        measured.set_tick(TickRecord {
            cost: record(1_500),
            period_ns: 4_000_000,
        });
        let source = from_calibration(Some(&measured), "calibration c.json");
        assert_eq!(
            source.overheads,
            Overheads {
                context_switch: Nanos(5_000),
                release_latency: Nanos::ZERO,
                tick: Nanos(1_500),
                tick_period: Some(Nanos(4_000_000)),
            }
        );
        assert_eq!(
            source.missing,
            vec![MissingOverhead {
                name: "release_latency".into(),
                why: "needs SCHED_FIFO and mlockall: run as root".into(),
            }]
        );
        let none = from_calibration(None, "calibration old.json");
        assert_eq!(none.overheads, Overheads::NONE);
        assert_eq!(none.missing.len(), 3);
    }

    #[test]
    fn files_of_either_kind_are_read() {
        let dir = std::env::temp_dir().join(format!("tinct-overheads-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let calibration = dir.join("calibrate.json");
        std::fs::write(
            &calibration,
            r#"{"refill": {"partitions": 16, "refill_ns": 90600},
                "overheads": {"context_switch_ns": 7000, "unmeasured": {"tick": "no tick found"}}}"#,
        )
        .unwrap();
        let source = read(&calibration).unwrap();
        assert_eq!(source.overheads.context_switch, Nanos(7_000));
        assert!(source.from.starts_with("calibration "));
        assert_eq!(source.missing.len(), 2);
        assert!(source.missing.iter().any(|m| m.why == "no tick found"));
        let set = dir.join("set.toml");
        std::fs::write(
            &set,
            "[platform]\ncores = 1\npartitions = 1\nmemory = \"1MiB\"\n\
             overheads = { context_switch = \"2us\", tick = \"1us\" }\n\n\
             [[task]]\nname = \"a\"\nperiod = \"1ms\"\nmemory = \"1KiB\"\nwcet = \"0.1ms\"\n",
        )
        .unwrap();
        let source = read(&set).unwrap();
        assert_eq!(source.overheads.context_switch, Nanos(2_000));
        assert!(source.missing.is_empty());
        std::fs::write(
            &set,
            "[platform]\ncores = 1\npartitions = 1\nmemory = \"1MiB\"\n\n\
             [[task]]\nname = \"a\"\nperiod = \"1ms\"\nmemory = \"1KiB\"\nwcet = \"0.1ms\"\n",
        )
        .unwrap();
        let err = read(&set).unwrap_err();
        assert!(
            err.to_string().contains("platform field `overheads`"),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A key below the measurement beside it (a file edited by hand) is
    /// refused, naming the file, the key and both values: the analysis
    /// would charge δ = 0 where 84 µs were measured. A key with no record
    /// is a value given by hand and is charged as given.
    #[test]
    fn a_key_that_contradicts_its_record_is_refused() {
        let dir =
            std::env::temp_dir().join(format!("tinct-overheads-records-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("calibrate.json");
        let file = |context_switch_ns: &str| {
            format!(
                r#"{{"bench": "calibrate", "refill": {{"partitions": 4, "refill_ns": 1000}},
                    "overheads": {{ {context_switch_ns} "tick_ns": 0,
                      "context_switch": {{"max_ns": 83794, "p99_ns": 72208, "median_ns": 19609,
                                          "min_ns": 15353, "samples": 200, "measured_by": "x"}} }} }}"#
            )
        };
        for (key, found) in [
            (r#""context_switch_ns": 0,"#, "`context_switch_ns` is 0"),
            ("", "`context_switch_ns` is absent"),
        ] {
            std::fs::write(&path, file(key)).unwrap();
            let err = read(&path).unwrap_err();
            assert_eq!(err.file, path.display().to_string());
            assert_eq!(err.field, "overheads");
            assert!(
                err.found.starts_with(found)
                    && err.found.ends_with("context_switch.max_ns is 83794"),
                "{err}"
            );
        }
        std::fs::write(&path, file(r#""context_switch_ns": 83794,"#)).unwrap();
        let source = read(&path).unwrap();
        assert_eq!(source.overheads.context_switch, Nanos(83_794));
        assert_eq!(
            source.overheads.tick,
            Nanos::ZERO,
            "tick_ns 0 by hand, no record"
        );
        // A tick that would fill its whole period is refused, as in a task set.
        std::fs::write(
            &path,
            r#"{"refill": {"partitions": 4, "refill_ns": 1000},
                "overheads": {"tick_ns": 5000000, "tick_period_ns": 4000000}}"#,
        )
        .unwrap();
        let err = read(&path).unwrap_err();
        assert_eq!(err.found, "`tick_ns` 5ms", "{err}");
        assert!(err.expected.contains("below `tick_period_ns` 4ms"), "{err}");
        // A tick period of 0 is refused, not read as "no periodic tick"
        // (`--overheads FILE` once dropped the tick silently).
        std::fs::write(
            &path,
            r#"{"refill": {"partitions": 4, "refill_ns": 1000},
                "overheads": {"tick_ns": 5000, "tick_period_ns": 0}}"#,
        )
        .unwrap();
        let err = read(&path).unwrap_err();
        assert_eq!(err.found, "`tick_period_ns` 0", "{err}");
        assert_eq!(err.file, path.display().to_string());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A bench's result gives its overheads without a `refill` (the
    /// overheads.json of `tinct bench overheads`, a calibrate.json stopped
    /// after them but before Δ); one without `overheads` is refused as a
    /// bench result that lacks them, not parsed as a task set ("unknown key
    /// `bench`").
    #[test]
    fn a_bench_result_gives_its_overheads_and_one_without_them_is_refused() {
        let dir = std::env::temp_dir().join(format!("tinct-overheads-cut-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let bench = dir.join("overheads.json");
        std::fs::write(
            &bench,
            r#"{"bench": "overheads", "interrupted": false, "stored_in": null,
                "overheads": {"context_switch_ns": 4000, "release_latency_ns": 30000,
                              "tick_ns": 900, "tick_period_ns": 4000000}}"#,
        )
        .unwrap();
        let source = read(&bench).unwrap();
        assert_eq!(source.overheads.context_switch, Nanos(4000));
        assert_eq!(source.overheads.release_latency, Nanos(30_000));
        assert!(source.missing.is_empty(), "{:?}", source.missing);
        assert!(
            source.from.contains("`tinct bench overheads` result"),
            "{}",
            source.from
        );

        let cut = dir.join("calibrate.json");
        std::fs::write(
            &cut,
            r#"{"bench": "calibrate", "interrupted": true, "rounds_completed": 0}"#,
        )
        .unwrap();
        let err = read(&cut).unwrap_err().to_string();
        assert!(
            err.contains("the overheads.json of `tinct bench overheads`")
                && err.contains("a `tinct bench calibrate` result without `overheads`")
                && !err.contains("unknown key"),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Regression: `{"overheads": {...}}` without `bench` was read as a task
    /// set and refused as "unknown key overheads"; now the message says
    /// what the file needs.
    #[test]
    fn overheads_without_their_bench_are_refused_saying_what_is_needed() {
        let dir =
            std::env::temp_dir().join(format!("tinct-overheads-alone-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("overheads.json");
        std::fs::write(&path, r#"{"overheads": {"context_switch_ns": 5000}}"#).unwrap();
        let err = read(&path).unwrap_err();
        assert_eq!(err.file, path.display().to_string());
        assert_eq!(err.field, "overheads file");
        assert!(
            err.expected
                .contains(r#"{"bench": "overheads", "overheads": "#),
            "{err}"
        );
        assert_eq!(err.found, "an `overheads` object without a `bench` key");
        assert!(!err.to_string().contains("unknown key"), "{err}");
        // With its bench it reads.
        std::fs::write(
            &path,
            r#"{"bench": "overheads", "overheads": {"context_switch_ns": 5000}}"#,
        )
        .unwrap();
        assert_eq!(read(&path).unwrap().overheads.context_switch, Nanos(5_000));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Regression: δ = 2^63 ns made C + 2δ + ε + ω + γ overflow, and the
    /// refusal blamed Δ. It blames δ: the task set's field when the set
    /// gives it, the overheads file when that gives it.
    #[test]
    fn a_huge_context_switch_is_blamed_not_the_refill_time() {
        let text = |overheads: &str| {
            format!(
                "[platform]\ncores = 1\npartitions = 8\nmemory = \"64MiB\"\nrefill = \"45.3us\"\n{overheads}\n\
                 [[task]]\nname = \"a\"\nperiod = \"10ms\"\nmemory = \"1MiB\"\nwcet = \"2ms\"\n"
            )
        };
        let huge = "overheads = { context_switch = \"9223372036854775808ns\" }";
        let set = crate::format::parse(&text(huge), "cs.toml", Syntax::Toml).unwrap();
        let Err(ChargeError::Input(err)) = ChargedAnalysis::of(
            &set,
            Path::new("cs.toml"),
            &OverheadsChoice::TaskSet,
            None,
            None,
        ) else {
            panic!("the analysis must refuse δ = 2^63 ns");
        };
        assert_eq!(
            err.field, "platform field `overheads.context_switch`",
            "{err}"
        );
        assert!(
            err.found.starts_with("δ = 9223372036.854775808s ("),
            "{err}"
        );
        assert!(!err.to_string().contains("refill time Δ"), "{err}");
        assert!(err.expected.contains("context switch δ"), "{err}");

        // The same δ from an overheads file: that file is named.
        let dir = std::env::temp_dir().join(format!("tinct-overheads-huge-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("overheads.json");
        std::fs::write(
            &path,
            r#"{"bench": "overheads", "overheads": {"context_switch_ns": 9223372036854775808}}"#,
        )
        .unwrap();
        let plain = crate::format::parse(&text(""), "ok.toml", Syntax::Toml).unwrap();
        let choice = OverheadsChoice::File(path.clone());
        let Err(ChargeError::Overheads(error)) =
            ChargedAnalysis::of(&plain, Path::new("ok.toml"), &choice, None, None)
        else {
            panic!("the analysis must refuse δ = 2^63 ns");
        };
        let message = error.to_string();
        assert!(
            message.starts_with(&format!(
                "the overheads of `tinct bench overheads` result {}: overhead `context_switch`: expected",
                path.display()
            )),
            "{message}"
        );
        assert!(!message.contains("refill time Δ"), "{message}");
        assert_eq!(
            error.field,
            format!(
                "the overheads of `tinct bench overheads` result {}: overhead `context_switch`",
                path.display()
            )
        );
        std::fs::remove_dir_all(&dir).unwrap();

        // A huge C beside a small δ is blamed on the task's `wcet`.
        let huge_c = text("overheads = { context_switch = \"1ms\" }")
            .replace("wcet = \"2ms\"", "wcet = \"18446744073.709551615s\"")
            .replace("period = \"10ms\"", "period = \"18446744073.709551615s\"");
        let set = crate::format::parse(&huge_c, "c.toml", Syntax::Toml).unwrap();
        let Err(ChargeError::Input(err)) = ChargedAnalysis::of(
            &set,
            Path::new("c.toml"),
            &OverheadsChoice::TaskSet,
            None,
            None,
        ) else {
            panic!("the analysis must refuse C + 2δ above 2^64 ns");
        };
        assert_eq!(err.field, "task 'a' field `wcet`", "{err}");
        assert_eq!(err.line, Some(7), "{err}");
    }
}
