//! The text of `tinct experiment kim2013`: kim2013 Section IV-E (Figures
//! 11-13) per setting and algorithm, CATA against the baselines next to the
//! paper's published comparisons, and the other published facts.

use super::table;
use std::fmt::{self, Write};
use tinct_core::experiment::kim2013::Report;

/// The study as people read it.
pub fn kim2013_text(report: &Report) -> String {
    let mut out = String::new();
    write_kim2013(&mut out, report).expect("writing to a String cannot fail");
    out
}

/// A percentage with one decimal, or "fails".
fn opt(v: Option<f64>) -> String {
    v.map_or_else(|| "fails".to_string(), |v| format!("{v:.1}"))
}

/// [`kim2013_text`] into any writer.
pub fn write_kim2013(out: &mut impl Write, report: &Report) -> fmt::Result {
    writeln!(
        out,
        "kim2013 IV-E: Table I duplicated, N_C = {}, N_P = {}, Δ = {}",
        report.cores,
        report.partitions,
        tinct_core::units::Nanos(report.refill_ns)
    )?;
    let mut t = table(&[
        "n",
        "M_total (MiB)",
        "algorithm",
        "partitions needed",
        "% of N_P (Fig. 11)",
        "memory eff. % (Fig. 12)",
        "utilization % all partitions (Fig. 13)",
        "exact",
    ]);
    for r in &report.rows {
        t.add_row(vec![
            r.tasks.to_string(),
            r.memory_mib.to_string(),
            r.algorithm.name().to_string(),
            r.partitions_needed
                .map_or_else(|| "fails".to_string(), |p| p.to_string()),
            opt(r.partitions_percent),
            opt(r.memory_efficiency_percent),
            opt(r.utilization_percent),
            if r.exact { "yes" } else { "budget" }.to_string(),
        ]);
    }
    writeln!(out, "{t}")?;
    writeln!(
        out,
        "\nCATA against the baselines (percentage points, over settings where both schedule):"
    )?;
    let mut t = table(&["figure", "vs", "paper", "tinct", "direction"]);
    for c in &report.comparisons {
        let ours = match (c.ours_min, c.ours_max) {
            (Some(lo), Some(hi)) => format!("{lo:.1} to {hi:.1} points"),
            _ => "no common setting".to_string(),
        };
        t.add_row(vec![
            c.quantity.clone(),
            c.against.name().to_string(),
            c.paper.clone(),
            ours,
            if c.direction_holds {
                "holds"
            } else {
                "DIFFERS"
            }
            .to_string(),
        ]);
    }
    writeln!(out, "{t}")?;
    writeln!(out, "\nOther published facts:")?;
    for (paper, ours) in &report.facts {
        writeln!(out, "  paper: {paper}; tinct: {ours}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tinct_core::alloc::Algorithm;
    use tinct_core::experiment::kim2013::{Comparison, Row};

    #[test]
    fn rows_comparisons_and_facts_are_printed() {
        let report = Report {
            cores: 4,
            partitions: 32,
            refill_ns: 20_000,
            rows: vec![Row {
                tasks: 8,
                memory_mib: 128,
                algorithm: Algorithm::Bfd,
                partitions_needed: None,
                partitions_percent: None,
                memory_efficiency_percent: Some(41.25),
                utilization_percent: None,
                exact: false,
            }],
            comparisons: vec![Comparison {
                quantity: "Fig. 11".into(),
                against: Algorithm::Wfd,
                paper: "12 points fewer".into(),
                ours_min: Some(3.0),
                ours_max: Some(10.04),
                direction_holds: false,
            }],
            facts: vec![("a".into(), "b".into())],
            complete: true,
        };
        let text = kim2013_text(&report);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0], "kim2013 IV-E: Table I duplicated, N_C = 4, N_P = 32, Δ = 20us",
            "Δ is the file's, not a constant"
        );
        let cells = |line: &str| -> Vec<String> {
            line.split(['│', '┆'])
                .map(|c| c.trim().to_string())
                .filter(|c| !c.is_empty())
                .collect()
        };
        let row = lines.iter().find(|l| l.contains("bfd")).expect(&text);
        assert_eq!(
            cells(row),
            [
                "8", "128", "bfd", "fails", "fails", "41.2", "fails", "budget"
            ]
        );
        let comparison = lines.iter().find(|l| l.contains("DIFFERS")).expect(&text);
        assert_eq!(
            cells(comparison),
            [
                "Fig. 11",
                "wfd",
                "12 points fewer",
                "3.0 to 10.0 points",
                "DIFFERS"
            ]
        );
        assert_eq!(lines.last(), Some(&"  paper: a; tinct: b"));
    }
}
