//! The text of `tinct experiment kim2013`: kim2013 Section IV-D (Figure 10),
//! Section IV-E (Figures 11-13) per setting and algorithm, each figure's
//! range next to the paper's with a verdict (within, close, differs), and
//! the other published facts.

use super::{Column, columns_table};
use std::fmt::{self, Write};
use tinct_core::experiment::kim2013::{CLOSE_POINTS, Comparison, ROUNDING_POINTS, Report, Row};

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

/// A range in percentage points, one decimal ("a to b", or "a" when both ends agree).
fn range(lo: f64, hi: f64) -> String {
    if format!("{lo:.1}") == format!("{hi:.1}") {
        format!("{lo:.1}")
    } else {
        format!("{lo:.1} to {hi:.1}")
    }
}

/// [`kim2013_text`] into any writer.
pub fn write_kim2013(out: &mut impl Write, report: &Report) -> fmt::Result {
    match &report.figure10 {
        Ok(f) => {
            writeln!(
                out,
                "kim2013 IV-D, Figure 10 (one core, 8 partitions, Eq. 1): without sharing {:.1} %, \
                 with Table II's sharing {:.1} % (NoCInt) / {:.1} % (CInt)",
                f.without_percent, f.with_nocint_percent, f.with_cint_percent
            )?;
            writeln!(
                out,
                "  drop without − CInt: tinct {:.1} points (without − NoCInt: {:.1}); paper: {}; \
                 {}\n",
                f.drop_points,
                f.drop_nocint_points,
                f.paper,
                f.verdict.name()
            )?;
        }
        Err(why) => writeln!(out, "kim2013 IV-D, Figure 10: not computed ({why})\n")?,
    }
    writeln!(
        out,
        "kim2013 IV-E: Table I duplicated, N_C = {}, N_P = {}, Δ = {}",
        report.cores,
        report.partitions,
        tinct_core::units::Nanos(report.refill_ns)
    )?;
    let settings: [Column<Row>; 8] = [
        ("n", |r| r.tasks.to_string()),
        ("M_total (MiB)", |r| r.memory_mib.to_string()),
        ("algorithm", |r| r.algorithm.name().to_string()),
        ("partitions needed", |r| {
            r.partitions_needed
                .map_or_else(|| "fails".to_string(), |p| p.to_string())
        }),
        ("% of N_P (Fig. 11)", |r| opt(r.partitions_percent)),
        ("memory eff. % (Fig. 12)", |r| {
            opt(r.memory_efficiency_percent)
        }),
        ("utilization % all partitions (Fig. 13)", |r| {
            opt(r.utilization_percent)
        }),
        ("exact", |r| {
            if r.exact { "yes" } else { "budget" }.to_string()
        }),
    ];
    let t = columns_table(&settings, &report.rows);
    writeln!(out, "{t}")?;
    writeln!(
        out,
        "\nCATA against the baselines (percentage points, over settings where both schedule):"
    )?;
    let comparisons: [Column<Comparison>; 6] = [
        ("figure", |c| c.quantity.clone()),
        ("vs", |c| c.against.name().to_string()),
        ("paper", |c| c.paper.clone()),
        ("paper range", |c| {
            format!("{} points", range(c.paper_min, c.paper_max))
        }),
        ("tinct range", |c| match (c.ours_min, c.ours_max) {
            (Some(lo), Some(hi)) => format!("{} points", range(lo, hi)),
            _ => "no common setting".to_string(),
        }),
        ("verdict", |c| {
            let mut verdict = c.verdict.name().to_string();
            if !c.direction_holds {
                verdict.push_str(" (a baseline beats CATA)");
            }
            verdict
        }),
    ];
    let t = columns_table(&comparisons, &report.comparisons);
    writeln!(out, "{t}")?;
    writeln!(
        out,
        "within: each end within {ROUNDING_POINTS} point of the paper's same end (it prints \
         whole percents; Figure 10: inside the paper's words); close: each within \
         {CLOSE_POINTS} points more; differs: farther, or a baseline better than CATA \
         somewhere. docs/ALLOCATION.md explains each difference."
    )?;
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
    use tinct_core::experiment::kim2013::{Comparison, Figure10, Row, Verdict};

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
            figure10: Ok(Figure10 {
                without_percent: 87.64,
                with_nocint_percent: 75.74,
                with_cint_percent: 78.14,
                drop_points: 9.5,
                drop_nocint_points: 11.9,
                paper: "almost 10 %".into(),
                paper_min: 9.0,
                paper_max: 10.0,
                verdict: Verdict::Close,
            }),
            comparisons: vec![Comparison {
                quantity: "Fig. 11".into(),
                against: Algorithm::Wfd,
                paper: "12 points fewer".into(),
                paper_min: 12.0,
                paper_max: 19.0,
                ours_min: Some(3.0),
                ours_max: Some(10.04),
                direction_holds: false,
                verdict: Verdict::Differs,
            }],
            facts: vec![("a".into(), "b".into())],
            complete: true,
        };
        let text = kim2013_text(&report);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "kim2013 IV-D, Figure 10 (one core, 8 partitions, Eq. 1): without sharing 87.6 %, \
             with Table II's sharing 75.7 % (NoCInt) / 78.1 % (CInt)"
        );
        assert_eq!(
            lines[1],
            "  drop without − CInt: tinct 9.5 points (without − NoCInt: 11.9); paper: almost 10 %; \
             close",
            "the verdict is the report's, not recomputed"
        );
        let header = lines.iter().find(|l| l.contains("IV-E")).expect(&text);
        assert_eq!(
            *header, "kim2013 IV-E: Table I duplicated, N_C = 4, N_P = 32, Δ = 20us",
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
        let comparison = lines
            .iter()
            .find(|l| l.contains("12 points fewer"))
            .expect(&text);
        assert_eq!(
            cells(comparison),
            [
                "Fig. 11",
                "wfd",
                "12 points fewer",
                "12.0 to 19.0 points",
                "3.0 to 10.0 points",
                "differs (a baseline beats CATA)"
            ]
        );
        assert!(!text.contains("holds"), "no bare direction word:\n{text}");
        assert!(text.contains("close: each within 5 points more"), "{text}");
        assert_eq!(lines.last(), Some(&"  paper: a; tinct: b"));

        let failed = Report {
            figure10: Err("needs four tasks".into()),
            ..report
        };
        assert!(
            kim2013_text(&failed)
                .starts_with("kim2013 IV-D, Figure 10: not computed (needs four tasks)")
        );
    }
}
