//! The paper's two tables (chandru-mueller Section 5), filled from this
//! run: Table 1, the standard deviation of NAS IS execution time and of
//! STREAM bandwidth over the runs under 4 banks, 8 banks and controller-local
//! allocation; Table 2, the standard deviation of the composite
//! bubblesort's execution time per (threads, pages per thread) under every
//! condition. A cell that did not run here is empty ("–"), as in the paper.

use super::composite::CompositeResult;
use super::kernels::Kernel;
use super::{Allocation, KernelResult};
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
    /// The cell of row `row`, column `column` as text (`–` when empty).
    pub fn cell_text(&self, row: usize, column: usize) -> String {
        match self.rows[row].cells[column] {
            Some(value) if value >= 100.0 => format!("{value:.1}"),
            Some(value) => format!("{value:.4}"),
            None => "–".into(),
        }
    }
}

/// The allocation filling the paper's "Controller-local" column: the
/// bank-unaware controller-local allocation where controller functions
/// are known, else NUMA first-touch local memory.
fn controller_local(kernel: &KernelResult) -> Option<&super::AllocationResult> {
    [Allocation::LocalController, Allocation::NodeLocal]
        .iter()
        .find_map(|&a| kernel.allocations.iter().find(|r| r.allocation == a))
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
        let found = kernels.iter().find(|k| k.kernel == kernel);
        let value = |result: &super::AllocationResult| {
            if kernel == Kernel::IntegerSort {
                result.time.stddev / 1e9
            } else {
                result.bandwidth_stddev_mib_s
            }
        };
        let cells = match found {
            None => vec![None; columns.len()],
            Some(k) => vec![
                k.allocations
                    .iter()
                    .find(|r| r.allocation == Allocation::Banks4)
                    .map(value),
                k.allocations
                    .iter()
                    .find(|r| r.allocation == Allocation::Banks8)
                    .map(value),
                controller_local(k).map(value),
            ],
        };
        TableRow {
            label: label.into(),
            cells,
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
        assert_eq!(table.cell_text(0, 0), "–");
        assert_eq!(table.cell_text(0, 2), format!("{:.4}", time.stddev / 1e9));
        assert!(
            table1(&[])
                .rows
                .iter()
                .all(|r| r.cells.iter().all(Option::is_none))
        );
    }
}
