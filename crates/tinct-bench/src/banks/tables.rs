//! The paper's two tables (chandru-mueller Section 5), filled from this
//! run: Table 1, the standard deviation of NAS IS execution time and of
//! STREAM bandwidth over the runs under 4 banks, 8 banks and controller-local
//! allocation; Table 2, the standard deviation of the composite
//! bubblesort's execution time per (threads, pages per thread) under every
//! condition. A cell that did not run here is empty ("–"), as in the paper.

use super::composite::CompositeResult;
use super::kernels::Kernel;
use super::{Allocation, AllocationResult, KernelResult};
use serde::{Deserialize, Serialize};

/// A table of optional numbers with labelled rows and columns.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Table {
    /// What it shows.
    pub title: String,
    /// The unit of every cell.
    pub unit: String,
    /// Column headers.
    pub columns: Vec<String>,
    /// The rows.
    pub rows: Vec<TableRow>,
}

/// One row.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TableRow {
    /// Row label.
    pub label: String,
    /// One cell per column; `None` where the condition did not run.
    pub cells: Vec<Option<f64>>,
}

impl Table {
    /// The table as records of text: a header (an empty corner, then the
    /// columns), then each row's label and its cells as `cell` writes them.
    pub fn records(&self, cell: fn(Option<f64>) -> String) -> Vec<Vec<String>> {
        let header = std::iter::once(String::new()).chain(self.columns.iter().cloned());
        let rows = self.rows.iter().map(|row| {
            let cells = row.cells.iter().map(|&c| cell(c));
            std::iter::once(row.label.clone()).chain(cells).collect()
        });
        std::iter::once(header.collect()).chain(rows).collect()
    }

    /// A cell as a person reads it (`–` when empty).
    pub fn cell_text(value: Option<f64>) -> String {
        match value {
            Some(value) if value >= 100.0 => format!("{value:.1}"),
            Some(value) => format!("{value:.4}"),
            None => "–".into(),
        }
    }
}

/// The result of `allocation` under `kernel`, if it ran.
fn result(kernel: &KernelResult, allocation: Allocation) -> Option<&AllocationResult> {
    kernel
        .allocations
        .iter()
        .find(|r| r.allocation == allocation)
}

/// The allocation filling the paper's "Controller-local" column: the
/// bank-unaware controller-local allocation where controller functions
/// are known, else NUMA first-touch local memory.
fn controller_local(kernel: &KernelResult) -> Option<&AllocationResult> {
    [Allocation::LocalController, Allocation::NodeLocal]
        .into_iter()
        .find_map(|a| result(kernel, a))
}

/// Table 1: standard deviations for IS (execution time, s) and STREAM add
/// (bandwidth, MiB/s) under 4 banks, 8 banks and controller-local.
pub fn table1(kernels: &[KernelResult]) -> Table {
    let columns = ["4 Banks", "8 Banks", "Controller-local"];
    let rows = [
        ("NAS IS (time, s)", Kernel::IntegerSort),
        ("STREAM add (bandwidth, MiB/s)", Kernel::Add),
    ]
    .into_iter()
    .map(|(label, kernel)| {
        let value = |result: &AllocationResult| match kernel {
            Kernel::IntegerSort => result.time.stddev / 1e9,
            _ => result.bandwidth_stddev_mib_s,
        };
        let found = kernels.iter().find(|k| k.kernel == kernel);
        let results = [
            found.and_then(|k| result(k, Allocation::Banks4)),
            found.and_then(|k| result(k, Allocation::Banks8)),
            found.and_then(controller_local),
        ];
        TableRow {
            label: label.into(),
            cells: results.map(|r| r.map(value)).to_vec(),
        }
    })
    .collect();
    Table {
        title: "Table 1: standard deviations for IS and STREAM".into(),
        unit: "IS: s; STREAM: MiB/s".into(),
        columns: columns.iter().map(|c| c.to_string()).collect(),
        rows,
    }
}

/// Table 2: standard deviation of the composite benchmark's execution time
/// (the longest thread of a run, s) per (threads, pages) and condition.
pub fn table2(composite: &[CompositeResult]) -> Table {
    Table {
        title: "Table 2: standard deviation for composite benchmark execution".into(),
        unit: "s".into(),
        columns: Allocation::TABLE2
            .iter()
            .map(|a| a.name().to_string())
            .collect(),
        rows: composite
            .iter()
            .map(|run| TableRow {
                label: format!("{},{}", run.threads, run.pages),
                cells: Allocation::TABLE2
                    .iter()
                    .map(|&a| {
                        run.conditions
                            .iter()
                            .find(|c| c.allocation == a)
                            .map(|c| c.time.stddev / 1e9)
                    })
                    .collect(),
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::composite::CompositeCondition;
    use super::*;
    use crate::harness::Durations;

    #[test]
    fn table2_has_the_papers_columns_and_empty_cells() {
        let time = Durations::of(&[1_000_000_000, 3_000_000_000]).unwrap();
        let run = CompositeResult {
            threads: 32,
            pages: 2,
            iterations: 1,
            conditions: vec![CompositeCondition {
                allocation: Allocation::Banks8,
                time,
                fallback_pages: vec![0],
            }],
        };
        let table = table2(&[run]);
        assert_eq!(
            table.columns,
            [
                "2banks",
                "4banks",
                "8banks",
                "ctrl-local",
                "opposite-ctrl",
                "1node",
                "2nodes",
                "circular-alloc"
            ]
        );
        assert_eq!(table.rows[0].label, "32,2");
        let records = table.records(Table::cell_text);
        assert_eq!(records[0][1..], table.columns);
        assert_eq!(records[1][..3], ["32,2", "–", "–"]);
        assert_eq!(records[1][3], format!("{:.4}", time.stddev / 1e9));
        assert!(
            table1(&[])
                .rows
                .iter()
                .all(|r| r.cells.iter().all(Option::is_none))
        );
    }
}
