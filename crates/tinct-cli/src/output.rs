//! Shared output helpers: JSON for machines, tables for people.

use comfy_table::{ContentArrangement, Table, presets::UTF8_FULL_CONDENSED};
use serde::Serialize;

/// Prints a result struct as pretty JSON on stdout.
pub fn print_json<T: Serialize>(value: &T) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}

/// A table with tinct's house style and the given header.
pub fn table(header: &[&str]) -> Table {
    let mut table = Table::new();
    table
        .load_preset(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_header(header.iter().copied());
    table
}

/// Milliseconds with two decimals, as the paper prints them.
pub fn ms(ns: u64) -> String {
    format!("{:.2}", ns as f64 / 1e6)
}
