//! `tinct doctor`: what this machine offers for cache-aware real-time work
//! and what to change. The diagnosis lives in `tinct_sys::doctor`; this
//! module only parses arguments and prints.

use crate::error::CliError;
use crate::output::table;
use std::path::PathBuf;
use std::process::ExitCode;
use tinct_sys::SysRoot;
use tinct_sys::doctor::{Level, Report, diagnose, human_bytes};

/// Arguments of `tinct doctor`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Print the report as JSON (the same struct as the tables).
    #[arg(long)]
    pub json: bool,
    /// Read sysfs and procfs under DIR instead of / (a fixture or a copy of
    /// another machine made with crates/tinct-sys/tests/fixtures/capture.sh);
    /// live probes are then reported as "not probed".
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Also measure whether page coloring partitions this machine's caches
    /// (pointer chases through same-color vs spread pages; a few seconds,
    /// needs root). Answers effective / not effective / inconclusive.
    #[arg(long, conflicts_with = "root")]
    pub probe_colors: bool,
}

/// Runs the diagnosis and prints it. Exit status 0 whenever it ran, even
/// with blockers; 2 if `--root` is not a directory.
pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let root = match &args.root {
        Some(dir) if !dir.is_dir() => {
            return Err(CliError::Input(format!(
                "--root {}: expected a directory holding sys/ and proc/, found {}",
                dir.display(),
                if dir.exists() { "a file" } else { "nothing" }
            )));
        }
        Some(dir) => SysRoot::at(dir),
        None => SysRoot::live(),
    };
    let mut report = diagnose(&root);
    let probe = if args.probe_colors {
        let probe = tinct_sys::color_probe::probe_colors(Default::default());
        report
            .findings
            .push(tinct_sys::doctor::color_probe::finding(&probe));
        Some(probe)
    } else {
        None
    };
    let text = if args.json {
        let mut value = serde_json::to_value(&report).map_err(anyhow::Error::from)?;
        if let (Some(probe), Some(object)) = (&probe, value.as_object_mut()) {
            object.insert("color_probe".into(), color_probe::to_json(probe));
        }
        serde_json::to_string_pretty(&value).map_err(anyhow::Error::from)? + "\n"
    } else {
        let mut text = render_human(&report);
        if let Some(probe) = &probe {
            text.push_str(&color_probe::render(probe));
        }
        text
    };
    write_stdout(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// `--probe-colors`: the JSON and the table (the finding is
/// `tinct_sys::doctor::color_probe::finding`).
mod color_probe {
    use super::table;
    use tinct_sys::color_probe::{ProbeReport, Verdict};

    pub fn to_json(probe: &Result<ProbeReport, tinct_sys::Error>) -> serde_json::Value {
        match probe {
            Ok(report) => serde_json::to_value(report).unwrap_or(serde_json::Value::Null),
            Err(e) => serde_json::json!({ "error": e.to_string() }),
        }
    }

    pub fn render(probe: &Result<ProbeReport, tinct_sys::Error>) -> String {
        let Ok(report) = probe else {
            return String::new();
        };
        let mut levels = table(&[
            "cache",
            "verdict",
            "same color ns/load",
            "spread ns/load",
            "median ratio",
            "rounds agreeing",
            "lines (pages)",
        ]);
        for l in &report.levels {
            let agreeing = match l.verdict {
                Verdict::NotEffective => l.rounds_not_effective,
                _ => l.rounds_effective,
            };
            levels.add_row(vec![
                l.cache.clone(),
                l.verdict.label().to_string(),
                format!("{:.1}", l.conflict_ns),
                format!("{:.1}", l.control_ns),
                format!("{:.2}", l.ratio),
                format!("{agreeing}/{}", l.rounds),
                format!("{} ({})", l.lines, l.pages),
            ]);
        }
        super::fit_when_not_a_terminal(&mut levels);
        format!(
            "\ncolor probe{}:\n{levels}\n",
            if report.virtual_machine {
                " (virtual machine)"
            } else {
                ""
            }
        )
    }
}

/// Writes `text` to stdout; a reader that went away (`| head`) is not an error.
fn write_stdout(text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

fn render_human(report: &Report) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let source = if report.live {
        "this machine".to_string()
    } else {
        format!("the tree under {}", report.root.display())
    };
    let _ = writeln!(out, "tinct doctor: {source}\n");
    let mut findings = table(&["subject", "level", "found", "fix"]);
    for f in &report.findings {
        findings.add_row(vec![
            f.subject.clone(),
            marker(f.level),
            f.found.clone(),
            f.fix.clone().unwrap_or_default(),
        ]);
    }
    fit_when_not_a_terminal(&mut findings);
    let _ = writeln!(out, "{findings}\n");
    if !report.caches.is_empty() {
        let mut caches = table(&[
            "cache",
            "size",
            "ways",
            "sets",
            "line",
            "shared CPUs",
            "colors",
            "color bits",
        ]);
        let optional = |v: Option<u32>| v.map_or("?".to_string(), |v| v.to_string());
        for c in &report.caches {
            let (colors, bits) = match &c.colors {
                Some(colors) => (
                    colors.colors.to_string(),
                    match colors.address_bits {
                        Some((low, high)) if high > low => format!("{low}-{}", high - 1),
                        Some(_) => "none".to_string(),
                        None => "unknown".to_string(),
                    },
                ),
                None => ("?".to_string(), "?".to_string()),
            };
            caches.add_row(vec![
                c.name.clone(),
                human_bytes(c.size_bytes),
                optional(c.ways),
                optional(c.sets),
                optional(c.line_bytes),
                c.shared_cpus.clone(),
                colors,
                bits,
            ]);
        }
        fit_when_not_a_terminal(&mut caches);
        let _ = writeln!(out, "{caches}\n");
    }
    let _ = writeln!(
        out,
        "cache partitioning backend: {}; {} ok, {} warning(s), {} blocker(s), {} not probed",
        report.backend.label(),
        report.count(Level::Ok),
        report.count(Level::Warning),
        report.count(Level::Blocker),
        report.count(Level::NotProbed),
    );
    out
}

/// Without a terminal (a pipe, a file) comfy-table knows no width and would
/// not wrap; wrap at 120 columns then.
fn fit_when_not_a_terminal(table: &mut comfy_table::Table) {
    if table.width().is_none() {
        table.set_width(120);
    }
}

fn marker(level: Level) -> String {
    match level {
        Level::Ok => "ok".into(),
        Level::Warning => "WARNING".into(),
        Level::Blocker => "BLOCKER".into(),
        Level::NotProbed => "not probed".into(),
    }
}
