//! `tinct doctor`'s report for people and for machines: the findings and
//! caches of [`crate::Report`] as tables, the colour probe's
//! table, and the JSON of both, so every front end prints the same bytes.

use crate::{ColorProbe, Level, Report};
use serde_json::Value;
use std::fmt::Write;
use tinct_base::units::human_bytes;
use tinct_report::text::table;
use tinct_sys::color_probe::Verdict;

/// The doctor's text: the findings table, the caches table (when the
/// machine showed any), the one-line count, then the colour probe's table
/// when it ran.
pub fn doctor_text(report: &Report, probe: Option<&ColorProbe>) -> String {
    let mut text = report_text(report);
    if let Some(probe) = probe {
        text.push_str(&color_probe_text(probe));
    }
    text
}

/// The doctor's JSON: the report, with the colour probe's report (or its
/// error) under `color_probe` when it ran; pretty, ending in a newline.
pub fn doctor_json(report: &Report, probe: Option<&ColorProbe>) -> serde_json::Result<String> {
    let mut value = serde_json::to_value(report)?;
    if let (Some(probe), Some(object)) = (probe, value.as_object_mut()) {
        object.insert("color_probe".into(), color_probe_json(probe));
    }
    Ok(serde_json::to_string_pretty(&value)? + "\n")
}

/// The colour probe as JSON: its report, or `{"error": …}`.
fn color_probe_json(probe: &ColorProbe) -> Value {
    match probe {
        Ok(report) => serde_json::to_value(report).unwrap_or(Value::Null),
        Err(e) => serde_json::json!({ "error": e.to_string() }),
    }
}

/// The colour probe's table, one row per cache level; nothing when the
/// probe failed (its finding says why).
fn color_probe_text(probe: &ColorProbe) -> String {
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
    fit_when_not_a_terminal(&mut levels);
    format!(
        "\ncolor probe{}:\n{levels}\n",
        if report.virtual_machine {
            " (virtual machine)"
        } else {
            ""
        }
    )
}

/// The findings, the caches and the count line.
fn report_text(report: &Report) -> String {
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
            marker(f.level).to_string(),
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

/// A finding's level as the table shows it: the ones to act on in capitals.
fn marker(level: Level) -> &'static str {
    match level {
        Level::Ok => "ok",
        Level::Warning => "WARNING",
        Level::Blocker => "BLOCKER",
        Level::NotProbed => "not probed",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose;

    fn kvm_epyc() -> Report {
        diagnose(&tinct_sys::testing::fixture_tree("kvm-epyc"))
    }

    #[test]
    fn the_text_has_a_row_per_finding_and_cache_and_the_count_line() {
        let report = kvm_epyc();
        let text = doctor_text(&report, None);
        assert!(text.starts_with("tinct doctor: the tree under "), "{text}");
        for finding in &report.findings {
            assert!(text.contains(&finding.subject), "{}", finding.subject);
        }
        assert!(!report.caches.is_empty());
        for cache in &report.caches {
            assert!(text.contains(&cache.name), "{}", cache.name);
        }
        let count = format!(
            "{} ok, {} warning(s), {} blocker(s), {} not probed",
            report.count(Level::Ok),
            report.count(Level::Warning),
            report.count(Level::Blocker),
            report.count(Level::NotProbed)
        );
        assert!(text.trim_end().ends_with(&count), "{text}");
        // A fixture has no live probes: they are marked, not hidden.
        assert!(report.count(Level::NotProbed) > 0);
        assert!(text.contains("not probed"));
    }

    #[test]
    fn a_failed_color_probe_adds_no_table_but_its_error_to_the_json() {
        let report = kvm_epyc();
        let failed: ColorProbe = Err(tinct_sys::Error::Io {
            path: "/sys/probe".into(),
            source: std::io::Error::other("gone"),
        });
        assert_eq!(
            doctor_text(&report, Some(&failed)),
            doctor_text(&report, None)
        );
        let json: Value = serde_json::from_str(&doctor_json(&report, Some(&failed)).unwrap())
            .expect("the JSON parses");
        assert_eq!(json["color_probe"]["error"], "cannot read /sys/probe: gone");
        let without: Value = serde_json::from_str(&doctor_json(&report, None).unwrap()).unwrap();
        assert!(without.get("color_probe").is_none());
        assert_eq!(json["findings"], without["findings"]);
    }
}
