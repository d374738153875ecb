//! The one-screen [`Summary`] of a bench as text with a table, for a front
//! end to print.

use super::Summary;
use std::fmt::Write as _;
use tinct_report::text::{headerless_table, table as titled_table};

/// The summary as text: title, aligned facts, the table, notes.
pub fn render(summary: &Summary) -> String {
    let mut text = String::new();
    let _ = writeln!(text, "{}", summary.title);
    let width = summary
        .facts
        .iter()
        .map(|(k, _)| k.len())
        .max()
        .unwrap_or(0);
    for (key, value) in &summary.facts {
        let _ = writeln!(text, "  {key:<width$}  {value}");
    }
    if !summary.header.is_empty() || !summary.rows.is_empty() {
        // tinct's one table style (tinct-report's `text`).
        let mut table = if summary.header.is_empty() {
            headerless_table()
        } else {
            let header: Vec<&str> = summary.header.iter().map(String::as_str).collect();
            titled_table(&header)
        };
        for row in &summary.rows {
            table.add_row(row);
        }
        let _ = writeln!(text, "{table}");
    }
    for note in &summary.notes {
        let _ = writeln!(text, "note: {note}");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_facts_table_and_notes() {
        let mut s = Summary::new("calibrate");
        s.fact("machine", "test").fact("refill", "45.3us");
        s.table(&["level", "ns"])
            .row(vec!["L1".into(), "1.2".into()]);
        s.note("a VM cannot show isolation");
        let text = render(&s);
        assert!(text.starts_with("calibrate\n"));
        assert!(text.contains("refill   45.3us"));
        assert!(text.contains("L1") && text.contains("1.2") && text.contains("level"));
        assert!(text.ends_with("note: a VM cannot show isolation\n"));
    }

    #[test]
    fn no_table_without_rows_or_header() {
        let text = render(&Summary::new("t"));
        assert_eq!(text, "t\n");
    }
}
