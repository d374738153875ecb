//! The one-screen summary a bench prints at the end.

use comfy_table::{ContentArrangement, Table, presets::UTF8_FULL_CONDENSED};
use std::fmt::Write as _;

/// A title, a few key facts, an optional table and notes.
#[derive(Debug)]
pub struct Summary {
    title: String,
    facts: Vec<(String, String)>,
    table: Option<Table>,
    notes: Vec<String>,
}

impl Summary {
    /// An empty summary titled `title`.
    pub fn new(title: impl Into<String>) -> Self {
        Self {
            title: title.into(),
            facts: Vec::new(),
            table: None,
            notes: Vec::new(),
        }
    }

    /// Adds a `key: value` line.
    pub fn fact(&mut self, key: impl Into<String>, value: impl Into<String>) -> &mut Self {
        self.facts.push((key.into(), value.into()));
        self
    }

    /// Starts the table with `header` (replacing any previous one).
    pub fn table(&mut self, header: &[&str]) -> &mut Self {
        let mut table = Table::new();
        table
            .load_preset(UTF8_FULL_CONDENSED)
            .set_content_arrangement(ContentArrangement::Dynamic)
            .set_header(header.iter().copied());
        self.table = Some(table);
        self
    }

    /// Adds a table row (starts a header-less table if there is none).
    pub fn row(&mut self, cells: Vec<String>) -> &mut Self {
        self.table
            .get_or_insert_with(|| {
                let mut t = Table::new();
                t.load_preset(UTF8_FULL_CONDENSED);
                t
            })
            .add_row(cells);
        self
    }

    /// Adds a note printed after the table.
    pub fn note(&mut self, note: impl Into<String>) -> &mut Self {
        self.notes.push(note.into());
        self
    }

    /// The summary as text.
    pub fn render(&self) -> String {
        let mut text = String::new();
        let _ = writeln!(text, "{}", self.title);
        let width = self.facts.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
        for (key, value) in &self.facts {
            let _ = writeln!(text, "  {key:<width$}  {value}");
        }
        if let Some(table) = &self.table {
            let _ = writeln!(text, "{table}");
        }
        for note in &self.notes {
            let _ = writeln!(text, "note: {note}");
        }
        text
    }

    /// Prints the summary on stdout.
    pub fn print(&self) {
        print!("{}", self.render());
    }
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
        let text = s.render();
        assert!(text.starts_with("calibrate\n"));
        assert!(text.contains("refill   45.3us"));
        assert!(text.contains("L1") && text.contains("1.2"));
        assert!(text.ends_with("note: a VM cannot show isolation\n"));
    }
}
