//! Text for people: tinct's one table style and the number formats every
//! printed report uses. The renderers of the reports (a run's verdict in
//! tinct-rt, an analysis in [`analysis`], a plan in [`plan`], …) build their text with these,
//! so the CLI and the Python package print the same bytes.

pub mod analysis;
pub mod kim2013;
pub mod plan;

pub use analysis::analysis_text;
pub use kim2013::kim2013_text;
pub use plan::{placement_text, plan_text};

use comfy_table::{ContentArrangement, Table, presets::UTF8_FULL_CONDENSED};
/// Times for people: tinct-base's one rule for milliseconds (two
/// decimals, as the paper prints them) and microseconds (one decimal).
pub use tinct_base::units::{ms, ms_with_unit, us};

/// A table with tinct's house style and the given header.
pub fn table(header: &[&str]) -> Table {
    let mut table = headerless_table();
    table.set_header(header.iter().copied());
    table
}

/// A column of a table of `T`s: its header and how a row prints in it.
pub type Column<T> = (&'static str, fn(&T) -> String);

/// A table with tinct's house style, one column per entry of `columns` and
/// one row per item of `rows`: a column's header stands beside the code of
/// its cells, so the two cannot drift apart.
pub fn columns_table<'a, T: 'a>(
    columns: &[Column<T>],
    rows: impl IntoIterator<Item = &'a T>,
) -> Table {
    let header: Vec<&str> = columns.iter().map(|(header, _)| *header).collect();
    let mut table = table(&header);
    for row in rows {
        table.add_row(column_cells(columns, row));
    }
    table
}

/// The cells of `row` under `columns`, in order.
pub fn column_cells<T>(columns: &[Column<T>], row: &T) -> Vec<String> {
    columns.iter().map(|(_, cell)| cell(row)).collect()
}

/// A table with tinct's house style and no header row.
pub fn headerless_table() -> Table {
    let mut table = Table::new();
    table
        .load_preset(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic);
    table
}

/// A bound in ms with its unit (`12.34 ms`), or `unbounded`.
pub fn bound_ms(ns: Option<u64>) -> String {
    ns.map_or_else(|| "unbounded".to_string(), ms_with_unit)
}

/// Milliseconds with two decimals, or "—" when there is no value.
pub fn opt_ms(ns: Option<u64>) -> String {
    ns.map_or_else(|| "—".into(), ms)
}

/// Microseconds with one decimal, or "—" when there is no value.
pub fn opt_us(ns: Option<u64>) -> String {
    ns.map_or_else(|| "—".into(), us)
}

/// The task set the renderers' tests print: one core, task `a` (T = 10 ms,
/// C = 2 ms, partition 1) above task `b` (T = 20 ms, C = `wcet_b`,
/// partition 2).
#[cfg(test)]
pub(crate) mod fixture {
    /// The task set's text (TOML): `tests/fixtures/two_tasks.toml` with
    /// `wcet_b` for its `{wcet_b}`.
    pub(crate) fn two_tasks(wcet_b: &str) -> String {
        include_str!("../../tests/fixtures/two_tasks.toml").replace("{wcet_b}", wcet_b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_rounded_as_printed() {
        assert_eq!(ms(1_234_567), "1.23");
        assert_eq!(opt_ms(None), "—");
        assert_eq!(us(1_250), "1.2");
        assert_eq!(opt_us(Some(2_000)), "2.0");
    }

    #[test]
    fn a_table_has_its_header_and_rows() {
        let mut t = table(&["task", "R max"]);
        t.add_row(vec!["a", "1.00"]);
        let text = t.to_string();
        assert!(
            text.lines()
                .any(|l| l.contains("task") && l.contains("R max"))
        );
        assert!(text.lines().any(|l| l.contains('a') && l.contains("1.00")));
    }
}
