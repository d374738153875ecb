//! Shared output helpers: JSON for machines, tables for people.

use serde::Serialize;

/// Prints a result struct as pretty JSON on stdout.
pub fn print_json<T: Serialize>(value: &T) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}

/// tinct's one table style and number format (tinct-report's `text`).
pub use tinct_report::text::{ms, table};
