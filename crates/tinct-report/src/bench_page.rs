//! The HTML page of a bench directory (`tinct bench ... --out DIR`): what
//! every bench writes, read without knowing the bench — its result JSON
//! (the header with the bench's name, options and machine, then the
//! results), its charts (SVG) and its tables (CSV).

use crate::ReportError;
use crate::html::{Block, Cell, Page, Section, Table, json_table};
use std::path::{Path, PathBuf};

/// At most this many rows of a CSV file are shown (the file has them all).
const CSV_ROWS: usize = 200;

/// The largest file of a bench directory the page reads (results, charts,
/// tables are far smaller; a device or an endless file is refused).
const MAX_BENCH_FILE_BYTES: u64 = 64 << 20;

fn read(path: &Path) -> Result<String, ReportError> {
    use std::io::Read;
    let error = |source| ReportError::Read {
        path: path.display().to_string(),
        source,
    };
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .map_err(error)?
        .take(MAX_BENCH_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(error)?;
    if bytes.len() as u64 > MAX_BENCH_FILE_BYTES {
        return Err(error(std::io::Error::other(format!(
            "larger than {MAX_BENCH_FILE_BYTES} bytes (or endless)"
        ))));
    }
    String::from_utf8(bytes).map_err(|e| error(std::io::Error::other(e)))
}

/// The files of `dir` ending in `.ext`, sorted by name.
fn files(dir: &Path, ext: &str) -> Result<Vec<PathBuf>, ReportError> {
    let entries = std::fs::read_dir(dir).map_err(|source| ReportError::Read {
        path: dir.display().to_string(),
        source,
    })?;
    let mut found: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == ext))
        .collect();
    found.sort();
    Ok(found)
}

/// A bench result: a JSON object with the bench header's `bench` and
/// `machine` fields.
fn bench_result(text: &str) -> Option<serde_json::Value> {
    let value: serde_json::Value = serde_json::from_str(text).ok()?;
    (value["bench"].is_string() && value["machine"].is_object()).then_some(value)
}

/// True if `dir` holds at least one bench result.
pub fn is_bench_dir(dir: &Path) -> bool {
    files(dir, "json").is_ok_and(|jsons| {
        jsons
            .iter()
            .any(|p| read(p).ok().and_then(|t| bench_result(&t)).is_some())
    })
}

/// A file that looks like an SVG document. Whatever it holds, the page
/// shows it as an image ([`Block::Images`]): a script in it never runs,
/// so nothing here needs to recognise one (a blacklist of `onload`,
/// `javascript:`, … was once passed by `<svg/onload=…>`).
fn looks_like_svg(text: &str) -> bool {
    let start = text.trim_start();
    (start.starts_with("<svg") || start.starts_with("<?xml")) && text.contains("<svg")
}

fn csv_table(text: &str) -> Table {
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or_default().split(',').collect();
    let mut table = Table::new(&header);
    for line in lines.take(CSV_ROWS) {
        table.row(line.split(',').map(Cell::new).collect());
    }
    table
}

/// The page of the bench directory `dir`. Bad input: a directory that
/// cannot be read or holds no bench result.
pub fn bench_page(dir: &Path) -> Result<Page, ReportError> {
    let mut results = Vec::new();
    for path in files(dir, "json")? {
        if let Some(value) = bench_result(&read(&path)?) {
            results.push((path, value));
        }
    }
    if results.is_empty() {
        return Err(ReportError::Input(tinct_base::InputError::new(
            dir.display().to_string(),
            "",
            "a run directory (summary.json and jobs.csv) or a bench directory (a result JSON \
             with `bench` and `machine`)",
            "neither",
        )));
    }
    let names: Vec<&str> = results
        .iter()
        .filter_map(|(_, v)| v["bench"].as_str())
        .collect();
    let mut page = Page {
        title: format!("tinct bench {}", names.join(", ")),
        subtitle: format!("bench directory {}", dir.display()),
        sections: Vec::new(),
    };
    let mut charts = Section::new("Charts");
    let mut svgs = Vec::new();
    let mut skipped = Vec::new();
    for path in files(dir, "svg")? {
        let text = read(&path)?;
        let name = path
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        if looks_like_svg(&text) {
            svgs.push((name, text));
        } else {
            skipped.push(path.display().to_string());
        }
    }
    if svgs.is_empty() {
        charts.push(Block::Text("This directory has no chart.".into()));
    } else {
        charts.push(Block::Images(svgs));
    }
    if !skipped.is_empty() {
        charts.push(Block::Text(format!(
            "Not shown (not an SVG document): {}",
            skipped.join(", ")
        )));
    }
    page.sections.push(charts);
    for (path, value) in &results {
        let mut s = Section::new(format!(
            "{} ({})",
            value["bench"].as_str().unwrap_or("bench"),
            path.file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default()
        ));
        if value["quick"] == true {
            s.push(Block::Line(
                "a --quick smoke run: too few samples to conclude".into(),
                crate::html::Tone::Bad,
            ));
        }
        s.push(Block::Details(
            "options".into(),
            vec![Block::Table(json_table(&value["options"]))],
        ));
        let pretty = serde_json::to_string_pretty(value).unwrap_or_default();
        s.push(Block::Details(
            "the whole result".into(),
            vec![Block::Pre(pretty)],
        ));
        page.sections.push(s);
    }
    let mut tables = Section::new("Tables");
    for path in files(dir, "csv")? {
        let name = path.display().to_string();
        tables.push(Block::Details(
            name,
            vec![Block::Table(csv_table(&read(&path)?))],
        ));
    }
    if !tables.blocks.is_empty() {
        page.sections.push(tables);
    }
    let mut machine = Section::new("Machine");
    machine.push(Block::Table(json_table(&results[0].1["machine"])));
    page.sections.push(machine);
    Ok(page)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LineChart;

    #[test]
    fn a_bench_directory_shows_its_charts_tables_results_and_machine() {
        let dir = tempfile::tempdir().unwrap();
        let result = serde_json::json!({
            "bench": "crpd", "quick": true, "options": {"reps": 3},
            "machine": {"cpu_model": "Test CPU", "online_cpus": [0, 1]},
            "points": [1, 2]
        });
        std::fs::write(dir.path().join("crpd.json"), result.to_string()).unwrap();
        std::fs::write(dir.path().join("other.json"), "{\"not\": \"a bench\"}").unwrap();
        let chart = LineChart::new("crpd", "x", "y").with_series("s", vec![(0.0, 1.0)]);
        std::fs::write(dir.path().join("crpd.svg"), chart.to_svg()).unwrap();
        // Each passed the old blacklist; none may reach the page as markup.
        let hostile = [
            "<svg onload=\"x()\"></svg>",
            "<svg/onload=alert(1)>",
            "<svg\nonload=alert(1)>",
            "<svg\tonload=alert(1)>",
            "<svg></svg><img/src=x/onerror=alert(1)>",
            "<svg><a href=\"&#106;avascript:alert(1)\">x</a></svg>",
        ];
        for (i, svg) in hostile.iter().enumerate() {
            std::fs::write(dir.path().join(format!("evil{i}.svg")), svg).unwrap();
        }
        std::fs::write(dir.path().join("crpd.csv"), "size,ns\n1,2\n").unwrap();
        assert!(is_bench_dir(dir.path()));
        let html = bench_page(dir.path()).unwrap().to_html();
        assert!(html.contains("<title>tinct bench crpd</title>"));
        assert_eq!(html.matches("<svg").count(), 0, "no file is inlined");
        assert_eq!(
            html.matches("<img class=\"chart-image\"").count(),
            hostile.len() + 1,
            "each file an image"
        );
        for needle in ["onload", "onerror", "&#106;", "alert("] {
            assert!(!html.contains(needle), "{needle} reached the page");
        }
        assert!(
            !html.contains("'unsafe-inline'; style-src")
                && !html.contains("script-src 'unsafe-inline'")
        );
        assert!(html.contains("evil0.svg") && html.contains("crpd.svg"));
        assert!(html.contains("Test CPU") && html.contains("<td>0, 1</td>"));
        assert!(html.contains("<th>size</th>") && html.contains("--quick"));
    }

    #[test]
    fn a_directory_without_a_result_is_bad_input() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!is_bench_dir(dir.path()));
        assert!(matches!(
            bench_page(dir.path()),
            Err(ReportError::Input { .. })
        ));
    }
}
