//! The one-screen summary a bench ends with, as data: a front end renders
//! it ([`super::summary_text`] as text with a table).

/// A title, a few key facts, an optional table and notes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// First line.
    pub title: String,
    /// `key: value` lines, in order.
    pub facts: Vec<(String, String)>,
    /// Column headers of the table (empty: a header-less table).
    pub header: Vec<String>,
    /// Table rows.
    pub rows: Vec<Vec<String>>,
    /// Notes printed after the table.
    pub notes: Vec<String>,
}

impl Summary {
    /// An empty summary titled `title`.
    pub fn new(title: impl Into<String>) -> Self {
        Self {
            title: title.into(),
            ..Self::default()
        }
    }

    /// The summary of a bench run: titled `tinct bench <bench>` (with
    /// `(quick)` for a quick run), its first fact the machine.
    pub fn of_run(header: &super::RunHeader) -> Self {
        let quick = if header.quick { " (quick)" } else { "" };
        Self::titled(format!("tinct bench {}{quick}", header.bench), header)
    }

    /// A summary titled `title`, its first fact the machine of `header`.
    pub fn titled(title: impl Into<String>, header: &super::RunHeader) -> Self {
        let mut summary = Self::new(title);
        summary.fact("machine", header.machine.one_line());
        summary
    }

    /// For a run stopped early, the fact `interrupted: N of M rounds
    /// finished before the stop; written to DIR` (the caller shows it).
    pub fn interruption(&mut self, header: &super::RunHeader, dir: &std::path::Path) -> &mut Self {
        if header.interrupted {
            let said = match (header.rounds_completed, header.rounds_requested) {
                (Some(0), _) => format!(
                    "stopped before the first round finished: nothing measured, the run's \
                     header (parameters, platform) written to {}",
                    dir.display()
                ),
                (Some(done), Some(asked)) if done >= asked => format!(
                    "all {asked} rounds finished, the stop came in a later step (the \
                     notes say what it left unmeasured); written to {}",
                    dir.display()
                ),
                (Some(done), Some(asked)) => format!(
                    "{done} of {asked} rounds finished before the stop; written to {}",
                    dir.display()
                ),
                _ => format!(
                    "the steps finished before the stop; written to {}",
                    dir.display()
                ),
            };
            self.fact("interrupted", said);
        }
        self
    }

    /// Adds a `key: value` line.
    pub fn fact(&mut self, key: impl Into<String>, value: impl Into<String>) -> &mut Self {
        self.facts.push((key.into(), value.into()));
        self
    }

    /// Starts the table with `header` (replacing any previous one).
    pub fn table(&mut self, header: &[&str]) -> &mut Self {
        self.header = header.iter().map(|h| h.to_string()).collect();
        self.rows.clear();
        self
    }

    /// Starts the table with the header `columns`, comma-separated.
    pub fn table_of(&mut self, columns: &str) -> &mut Self {
        self.table(&columns.split(',').collect::<Vec<_>>())
    }

    /// Adds a table row.
    pub fn row(&mut self, cells: Vec<String>) -> &mut Self {
        self.rows.push(cells);
        self
    }

    /// Sets the table to one row per item of `rows` and one column per
    /// entry of `columns`, each header beside the code of its cells
    /// (replacing any previous table).
    pub fn columns<'a, T: 'a>(
        &mut self,
        rows: impl IntoIterator<Item = &'a T>,
        columns: &[Column<T>],
    ) -> &mut Self {
        self.header = columns
            .iter()
            .map(|(header, _)| header.to_string())
            .collect();
        let cells = |row| tinct_report::text::column_cells(columns, row);
        self.rows = rows.into_iter().map(cells).collect();
        self
    }

    /// Adds a note printed after the table.
    pub fn note(&mut self, note: impl Into<String>) -> &mut Self {
        self.notes.push(note.into());
        self
    }

    /// What a bench stopped by Ctrl-C kept: its `interrupted` fact; a run
    /// without one saw the stop only after its last step, which is said
    /// instead.
    pub fn interrupted_note(&self) -> String {
        self.facts
            .iter()
            .find(|(key, _)| key == "interrupted")
            .map_or_else(
                || {
                    "the stop came after the last step: the run is complete and so are its files"
                        .into()
                },
                |(_, value)| value.clone(),
            )
    }
}

/// A column of a summary table: its header and how a row prints in it.
pub use tinct_report::text::Column;
/// Nanoseconds as milliseconds with two decimals, for summary tables.
pub use tinct_report::text::ms;

/// Nanoseconds as summary cells, each the duration as tinct writes it
/// (`1.2ms`, `850ns`): the distribution columns of a summary row.
pub fn nanos_cells<const N: usize>(ns: [u64; N]) -> [String; N] {
    ns.map(|ns| tinct_core::units::Nanos(ns).to_string())
}

/// What a bench run gives back: its result (also written to its files) and
/// the one-screen summary to show.
#[derive(Debug, Clone)]
pub struct Finished<R> {
    /// The result, as written to the bench's JSON.
    pub result: R,
    /// The summary.
    pub summary: Summary,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ms_has_two_decimals() {
        assert_eq!(ms(1_234_567), "1.23");
        assert_eq!(ms(0), "0.00");
    }

    #[test]
    fn nanos_cells_write_durations_in_order() {
        let [median, max] = nanos_cells([850, 1_200_000]);
        assert_eq!(median, tinct_core::units::Nanos(850).to_string());
        assert_eq!(max, tinct_core::units::Nanos(1_200_000).to_string());
        assert_ne!(median, max);
    }

    #[test]
    fn a_new_table_replaces_the_old_one() {
        let mut s = Summary::new("calibrate");
        s.fact("refill", "45.3us");
        s.table(&["a"]).row(vec!["1".into()]);
        s.table(&["level", "ns"])
            .row(vec!["L1".into(), "1.2".into()]);
        assert_eq!(s.header, ["level", "ns"]);
        assert_eq!(s.rows, vec![vec!["L1".to_string(), "1.2".into()]]);
        assert_eq!(s.facts, vec![("refill".into(), "45.3us".into())]);
        s.table_of("level,ρ=μ+2σ (µs)");
        assert_eq!(s.header, ["level", "ρ=μ+2σ (µs)"]);
        assert!(s.rows.is_empty());
    }

    #[test]
    fn a_column_table_has_a_header_and_a_cell_per_column_and_row() {
        let mut s = Summary::new("banks");
        s.table(&["old"]).row(vec!["gone".into()]);
        let columns: [Column<(u32, f64)>; 2] =
            [("n", |r| r.0.to_string()), ("x", |r| format!("{:.1}", r.1))];
        s.columns(&[(1, 0.5), (2, 1.5)], &columns);
        assert_eq!(s.header, ["n", "x"]);
        assert_eq!(s.rows, [["1", "0.5"], ["2", "1.5"]]);
    }

    #[test]
    fn the_interrupted_note_is_the_fact_or_says_the_bench_ran_to_its_end() {
        let mut s = Summary::new("crpd");
        assert!(s.interrupted_note().contains("after the last step"));
        s.fact("interrupted", "after 2 of 5 rounds");
        assert_eq!(s.interrupted_note(), "after 2 of 5 rounds");
    }

    #[test]
    fn an_interrupted_run_says_how_far_it_got_and_where_it_wrote() {
        use crate::harness::{BenchOptions, RunHeader};
        let mut header = RunHeader::new("pipeline", &BenchOptions::default(), 5, vec![0]);
        let mut s = Summary::new("pipeline");
        s.interruption(&header, std::path::Path::new("out"));
        assert!(s.facts.is_empty(), "a complete run says nothing");
        header.interrupted = true;
        header.rounds_requested = Some(5);
        header.rounds_completed = Some(2);
        s.interruption(&header, std::path::Path::new("out"));
        assert_eq!(
            s.facts,
            vec![(
                "interrupted".to_string(),
                "2 of 5 rounds finished before the stop; written to out".to_string()
            )]
        );
        header.rounds_completed = Some(5);
        let mut later = Summary::new("overheads");
        later.interruption(&header, std::path::Path::new("out"));
        assert!(
            later
                .interrupted_note()
                .starts_with("all 5 rounds finished, the stop came in a later step"),
            "{:?}",
            later.facts
        );
        header.rounds_completed = Some(0);
        let mut none = Summary::new("pipeline");
        none.interruption(&header, std::path::Path::new("out"));
        assert!(
            none.interrupted_note()
                .starts_with("stopped before the first round finished")
                && none.interrupted_note().ends_with("written to out"),
            "{:?}",
            none.facts
        );
    }

    #[test]
    fn a_runs_summary_is_titled_by_its_bench_and_starts_with_the_machine() {
        use crate::harness::{BenchOptions, RunHeader};
        let mut header = RunHeader::new("crpd", &BenchOptions::default(), 3, vec![0]);
        header.quick = false;
        let s = Summary::of_run(&header);
        assert_eq!(s.title, "tinct bench crpd");
        assert_eq!(s.facts[0].0, "machine");
        assert_eq!(s.facts[0].1, header.machine.one_line());
        header.quick = true;
        assert_eq!(Summary::of_run(&header).title, "tinct bench crpd (quick)");
    }
}
