//! The output directory of a bench run: JSON, CSV and SVG files, each
//! written atomically ([`write_atomically`]); and the one-line TOML
//! fragments a bench prints for pasting into a task set.

use super::counters::ConditionCounters;
use crate::{Error, Result};
use serde::Serialize;
use std::io::Write;
use std::path::{Path, PathBuf};
use tinct_report::LineChart;
use tinct_report::stats::Durations;

/// A directory that receives a bench's files and remembers what it wrote.
#[derive(Debug)]
pub struct OutputDir {
    dir: PathBuf,
    written: Vec<PathBuf>,
}

impl OutputDir {
    /// Creates `dir` (and its parents) if needed.
    pub fn create(dir: impl Into<PathBuf>) -> Result<Self> {
        let dir = dir.into();
        std::fs::create_dir_all(&dir).map_err(|source| Error::Write {
            path: dir.clone(),
            source,
        })?;
        Ok(Self {
            dir,
            written: Vec::new(),
        })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Every file written so far.
    pub fn written(&self) -> &[PathBuf] {
        &self.written
    }

    /// Every file written so far plus `last` (a JSON result about to be
    /// written that lists the run's files, itself included), as strings.
    pub fn files_with(&self, last: &str) -> Vec<String> {
        self.written
            .iter()
            .cloned()
            .chain(std::iter::once(self.dir.join(last)))
            .map(|p| p.display().to_string())
            .collect()
    }

    /// Writes `value` as pretty JSON to `name` (e.g. `calibrate.json`).
    pub fn write_json<T: Serialize>(&mut self, name: &str, value: &T) -> Result<PathBuf> {
        let text = serde_json::to_string_pretty(value).map_err(|source| Error::Json {
            what: name.to_string(),
            source,
        })?;
        self.write_text(name, &(text + "\n"))
    }

    /// Writes `rows` as CSV with a header taken from the row struct's fields.
    pub fn write_csv<T: Serialize>(&mut self, name: &str, rows: &[T]) -> Result<PathBuf> {
        let csv_error = |source| Error::Csv {
            path: self.dir.join(name),
            source,
        };
        let mut writer = csv::Writer::from_writer(Vec::new());
        for row in rows {
            writer.serialize(row).map_err(csv_error)?;
        }
        let bytes = writer.into_inner().map_err(|e| Error::Write {
            path: self.dir.join(name),
            source: e.into_error(),
        })?;
        self.write_bytes(name, &bytes)
    }

    /// Writes `rows` as CSV with the header `columns` (parts of the header
    /// line as it reads, `a,b,c`, joined: [`DISTRIBUTION_COLUMNS`] among
    /// them), each row's cells taken from its [`Columns`] by name: a
    /// report's CSV derived from its own serde form rather than from a row
    /// struct repeating its fields.
    /// A row without one of the columns (the bench named a field its
    /// report does not have) is an error naming the column; the files
    /// written before it stay.
    pub fn write_columns(
        &mut self,
        name: &str,
        columns: &[&str],
        rows: impl IntoIterator<Item = Columns>,
    ) -> Result<PathBuf> {
        let mut writer = csv::Writer::from_writer(Vec::new());
        let header: Vec<&str> = columns.iter().flat_map(|part| part.split(',')).collect();
        let mut records = vec![header.iter().map(|c| c.to_string()).collect()];
        for row in rows {
            let cells = header.iter().map(|column| {
                row.cell(column).ok_or_else(|| Error::Write {
                    path: self.dir.join(name),
                    source: std::io::Error::other(format!(
                        "the header names the column {column}, which a row does not have \
                         (its columns: {})",
                        row.names()
                    )),
                })
            });
            records.push(cells.collect::<Result<Vec<_>>>()?);
        }
        for record in records {
            writer.write_record(&record).map_err(|source| Error::Csv {
                path: self.dir.join(name),
                source,
            })?;
        }
        let bytes = writer.into_inner().map_err(|e| Error::Write {
            path: self.dir.join(name),
            source: e.into_error(),
        })?;
        self.write_bytes(name, &bytes)
    }

    /// Writes per-condition counter totals as CSV: one row per condition
    /// and event (`total` empty and `unavailable` giving the kernel's
    /// reason where there is no count).
    pub fn write_counters_csv(
        &mut self,
        name: &str,
        counters: &[ConditionCounters],
    ) -> Result<PathBuf> {
        #[derive(Serialize)]
        struct Row<'a> {
            condition: &'a str,
            runs: u64,
            event: &'a str,
            total: Option<u64>,
            estimated: bool,
            unavailable: Option<&'a str>,
        }
        let rows: Vec<Row<'_>> = counters
            .iter()
            .flat_map(|c| {
                c.events.iter().map(|e| Row {
                    condition: &c.condition,
                    runs: c.runs,
                    event: &e.event,
                    total: e.total,
                    estimated: e.estimated,
                    unavailable: e.unavailable.as_deref(),
                })
            })
            .collect();
        self.write_csv(name, &rows)
    }

    /// Writes `chart` as SVG (tinct-report's renderer).
    pub fn write_svg(&mut self, name: &str, chart: &LineChart) -> Result<PathBuf> {
        self.write_text(name, &chart.to_svg())
    }

    /// Writes `text` to `name`.
    pub fn write_text(&mut self, name: &str, text: &str) -> Result<PathBuf> {
        self.write_bytes(name, text.as_bytes())
    }

    /// Writes `bytes` to `name` atomically and remembers the file.
    fn write_bytes(&mut self, name: &str, bytes: &[u8]) -> Result<PathBuf> {
        let path = self.dir.join(name);
        write_atomically(&path, bytes).map_err(|source| Error::Write {
            path: path.clone(),
            source,
        })?;
        self.written.push(path.clone());
        Ok(path)
    }
}

/// Writes `bytes` to `path` through a temporary file in the same directory,
/// synced and then renamed over `path`: a reader (or a run killed halfway)
/// sees the old file or the new one, never half of one. As `std::fs::write`
/// would: a new file gets 0666 less the umask, a file replaced keeps its
/// permissions, and a symbolic link is followed (its target is replaced,
/// the link stays).
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let target = match std::fs::canonicalize(path) {
        Ok(resolved) => resolved,
        Err(_) => path.to_path_buf(),
    };
    let existing = std::fs::metadata(&target).ok().map(|m| m.permissions());
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut file = tempfile::Builder::new()
        .prefix(".tinct-")
        .permissions(std::fs::Permissions::from_mode(0o666))
        .tempfile_in(dir)?;
    if let Some(permissions) = existing {
        file.as_file().set_permissions(permissions)?;
    }
    file.write_all(bytes)?;
    file.as_file().sync_all()?;
    file.persist(&target).map_err(|e| e.error)?;
    Ok(())
}

/// One CSV row as named cells: the fields of a value's serde form, nested
/// objects flattened with `_` between the names (a distribution `baseline`
/// gives `baseline_count`, `baseline_median_ns`, ...), plus the columns a
/// bench adds with [`Columns::with`]. [`OutputDir::write_columns`] picks
/// the ones its header names.
#[derive(Debug, Clone, Default)]
pub struct Columns(serde_json::Map<String, serde_json::Value>);

impl Columns {
    /// The fields of `value` (a struct), flattened.
    pub fn of<T: Serialize>(value: &T) -> Columns {
        Columns::default().with("", value)
    }

    /// The [`DISTRIBUTION_COLUMNS`] of `durations`.
    pub fn distribution(durations: &Durations) -> Columns {
        Columns::of(&DurationColumns::from(durations))
    }

    /// Adds `value` as the column `name` (replacing one of that name); a
    /// struct adds its fields flattened under `name_` (under no prefix when
    /// `name` is empty).
    pub fn with<T: Serialize>(mut self, name: &str, value: T) -> Columns {
        // Serializing a report's own types into JSON values cannot fail.
        let value = serde_json::to_value(value).unwrap_or(serde_json::Value::Null);
        self.insert(name, value);
        self
    }

    fn insert(&mut self, name: &str, value: serde_json::Value) {
        match value {
            serde_json::Value::Object(fields) => {
                for (field, value) in fields {
                    let full = match name {
                        "" => field,
                        _ => format!("{name}_{field}"),
                    };
                    self.insert(&full, value);
                }
            }
            value => {
                self.0.insert(name.to_string(), value);
            }
        }
    }

    /// The cell of `column`: a string as it is, `null` empty, anything else
    /// as JSON writes it (numbers as the CSV writer would).
    fn cell(&self, column: &str) -> Option<String> {
        Some(match self.0.get(column)? {
            serde_json::Value::String(text) => text.clone(),
            serde_json::Value::Null => String::new(),
            value => value.to_string(),
        })
    }

    /// The names of the row's columns, comma-separated.
    fn names(&self) -> String {
        self.0
            .keys()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// A value followed by fields derived from it, written as one object: a
/// report stores what it measured and derives rates and ratios only when
/// it is written (and [`Columns::of`] a pair gives both in a CSV row).
#[derive(Debug, Serialize)]
pub struct WithDerived<'a, T, D> {
    /// The stored value: its fields come first.
    #[serde(flatten)]
    pub value: &'a T,
    /// The fields derived from it, after.
    #[serde(flatten)]
    pub derived: D,
}

/// Writes `pairs` as a sequence of [`WithDerived`], for a report field's
/// `#[serde(serialize_with)]`.
pub fn serialize_derived<'a, S, T, D>(
    pairs: impl IntoIterator<Item = (&'a T, D)>,
    serializer: S,
) -> std::result::Result<S::Ok, S::Error>
where
    S: serde::Serializer,
    T: Serialize + 'a,
    D: Serialize,
{
    let items = pairs.into_iter();
    serializer.collect_seq(items.map(|(value, derived)| WithDerived { value, derived }))
}

/// The header of a [`DurationColumns`], as [`OutputDir::write_columns`]
/// takes it.
pub const DISTRIBUTION_COLUMNS: &str = "count,min_ns,median_ns,p99_ns,max_ns,mean_ns,stddev_ns";

/// The CSV columns of one distribution (`count, min_ns, median_ns, p99_ns,
/// max_ns, mean_ns, stddev_ns`), for the tables several benches flatten
/// their distributions into: a row is a tuple `(key, DurationColumns)`,
/// whose header is the key struct's fields followed by these (the csv
/// crate flattens tuples; it cannot flatten `#[serde(flatten)]`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct DurationColumns {
    /// Samples.
    pub count: u64,
    /// Smallest sample, ns.
    pub min_ns: u64,
    /// Median, ns.
    pub median_ns: u64,
    /// 99th percentile, ns.
    pub p99_ns: u64,
    /// Largest sample, ns.
    pub max_ns: u64,
    /// Mean, rounded to ns.
    pub mean_ns: u64,
    /// Standard deviation, rounded to ns.
    pub stddev_ns: u64,
}

impl From<&Durations> for DurationColumns {
    fn from(d: &Durations) -> Self {
        Self {
            count: d.count,
            min_ns: d.min,
            median_ns: d.median,
            p99_ns: d.p99,
            max_ns: d.max,
            mean_ns: d.mean.round() as u64,
            stddev_ns: d.stddev.round() as u64,
        }
    }
}

/// `key = value` as one line of TOML (no newline), written by toml_edit so
/// that the key and the value are always quoted as TOML requires: the lines
/// a bench prints for pasting into a task set (`refill = "45.3us"`,
/// `wcet = { 1 = "5ms", 2 = "4ms" }`).
pub fn toml_line(key: &str, value: impl Into<toml_edit::Value>) -> String {
    let mut doc = toml_edit::DocumentMut::new();
    doc.insert(key, toml_edit::value(value));
    doc.to_string().trim_end_matches('\n').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tinct_report::{Series, SeriesStyle};

    #[derive(Serialize)]
    struct Row {
        size_bytes: u64,
        median_ns: u64,
    }

    #[test]
    fn columns_come_from_the_serde_form_flattened_and_read_as_a_row_struct_would() {
        #[derive(Serialize)]
        struct Point {
            size_bytes: u64,
            fraction: f64,
            estimate: Option<f64>,
            baseline: Durations,
        }
        #[derive(Serialize)]
        struct Flat {
            level: &'static str,
            size_bytes: u64,
            baseline_median_ns: u64,
            fraction: f64,
            estimate: Option<f64>,
            whole: f64,
        }
        let baseline = Durations::of(&[10, 20, 30]).unwrap();
        let point = Point {
            size_bytes: 4096,
            fraction: 0.125,
            estimate: None,
            baseline,
        };
        let tmp = tempfile::tempdir().unwrap();
        let mut out = OutputDir::create(tmp.path()).unwrap();
        let row = Columns::of(&point).with("level", "L2").with("whole", 2.0);
        let columns = &[
            "level,size_bytes",
            "baseline_median_ns,fraction,estimate,whole",
        ];
        let derived = out.write_columns("derived.csv", columns, [row]).unwrap();
        let flat = Flat {
            level: "L2",
            size_bytes: 4096,
            baseline_median_ns: 20,
            fraction: 0.125,
            estimate: None,
            whole: 2.0,
        };
        let by_struct = out.write_csv("flat.csv", &[flat]).unwrap();
        assert_eq!(
            std::fs::read_to_string(derived).unwrap(),
            std::fs::read_to_string(by_struct).unwrap()
        );
        // A column the rows do not have is an error naming it, not a panic.
        let row = Columns::of(&point);
        let e = out
            .write_columns("typo.csv", &["size_bytes,fractoin"], [row])
            .unwrap_err()
            .to_string();
        assert!(e.contains("typo.csv") && e.contains("fractoin"), "{e}");
        assert!(!tmp.path().join("typo.csv").exists());
    }

    #[test]
    fn derived_fields_follow_the_stored_ones_and_reach_csv_rows() {
        #[derive(Serialize)]
        struct Point {
            size: u64,
            ns: u64,
        }
        #[derive(Serialize)]
        struct PerByte {
            ns_per_byte: f64,
        }
        let points = [Point { size: 4, ns: 2 }, Point { size: 8, ns: 2 }];
        let per_byte = |p: &Point| PerByte {
            ns_per_byte: p.ns as f64 / p.size as f64,
        };
        let mut json = serde_json::Serializer::new(Vec::new());
        serialize_derived(points.iter().map(|p| (p, per_byte(p))), &mut json).unwrap();
        assert_eq!(
            String::from_utf8(json.into_inner()).unwrap(),
            r#"[{"size":4,"ns":2,"ns_per_byte":0.5},{"size":8,"ns":2,"ns_per_byte":0.25}]"#
        );
        let row = Columns::of(&points[0]).with("", per_byte(&points[0]));
        assert_eq!(row.cell("ns_per_byte").as_deref(), Some("0.5"));
    }

    #[test]
    fn writes_json_csv_svg() {
        let tmp = tempfile::tempdir().unwrap();
        let mut out = OutputDir::create(tmp.path().join("a/b")).unwrap();
        out.write_json("r.json", &serde_json::json!({"x": 1}))
            .unwrap();
        let rows = [
            Row {
                size_bytes: 1,
                median_ns: 2,
            },
            Row {
                size_bytes: 3,
                median_ns: 4,
            },
        ];
        let csv_path = out.write_csv("r.csv", &rows).unwrap();
        let chart = LineChart::new("t", "x", "y").add_series(Series::new(
            "s",
            SeriesStyle::Line,
            vec![(0.0, 0.0), (1.0, 1.0)],
        ));
        out.write_svg("r.svg", &chart).unwrap();
        assert_eq!(out.written().len(), 3);
        assert_eq!(
            std::fs::read_to_string(csv_path).unwrap(),
            "size_bytes,median_ns\n1,2\n3,4\n"
        );
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.path().join("r.json")).unwrap())
                .unwrap();
        assert_eq!(json["x"], 1);
    }

    #[test]
    fn an_atomic_write_gets_the_permissions_a_plain_write_would() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let plain = tmp.path().join("plain");
        std::fs::write(&plain, "x").unwrap();
        let atomic = tmp.path().join("atomic");
        write_atomically(&atomic, b"x").unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&atomic), mode(&plain));
        // A file replaced keeps its permissions (a calibration file the
        // user made private stays private), whatever the umask.
        std::fs::set_permissions(&atomic, std::fs::Permissions::from_mode(0o600)).unwrap();
        write_atomically(&atomic, b"y").unwrap();
        assert_eq!(mode(&atomic), 0o600);
        // A symbolic link stays a link; its target gets the new bytes.
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&plain, &link).unwrap();
        write_atomically(&link, b"z").unwrap();
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read_to_string(&plain).unwrap(), "z");
    }

    #[test]
    fn a_key_and_a_distribution_flatten_into_one_csv_row() {
        #[derive(Serialize)]
        struct Key<'a> {
            case: &'a str,
        }
        let tmp = tempfile::tempdir().unwrap();
        let mut out = OutputDir::create(tmp.path()).unwrap();
        let d = Durations::of(&[10, 20, 30]).unwrap();
        let path = out
            .write_csv("d.csv", &[(Key { case: "a" }, DurationColumns::from(&d))])
            .unwrap();
        assert_eq!(
            std::fs::read_to_string(path).unwrap(),
            format!(
                "case,count,min_ns,median_ns,p99_ns,max_ns,mean_ns,stddev_ns\n\
                 a,3,10,{},{},30,20,{}\n",
                d.median,
                d.p99,
                d.stddev.round()
            )
        );
    }

    #[test]
    fn a_toml_line_quotes_what_toml_requires_and_reads_back() {
        assert_eq!(toml_line("refill", "45.3us"), r#"refill = "45.3us""#);
        let awkward = toml_line("a key", "say \"hi\"\\ there");
        assert!(!awkward.contains('\n'), "{awkward}");
        let doc: toml_edit::DocumentMut = awkward.parse().unwrap();
        assert_eq!(doc["a key"].as_str(), Some("say \"hi\"\\ there"));
    }
}
