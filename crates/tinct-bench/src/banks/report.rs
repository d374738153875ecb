//! The result of `tinct bench banks`: the allocations compared, the result
//! types, the report assembled from what was measured (with the caveats a
//! reader needs), its files and its summary.

use super::WARMUP_ROUNDS;
use super::composite::CompositeResult;
use super::kernels::Kernel;
use super::measure::Measured;
use super::plan::Plan;
use super::tables::Table;
use crate::Result;
use crate::choice::{Choice, serde_name};
use crate::harness::summary::ms;
use crate::harness::{
    Columns, DISTRIBUTION_COLUMNS, Durations, LineChart, Machine, OutputDir, RunHeader, Series,
    SeriesStyle, Summary, report_fields,
};
use serde::{Deserialize, Serialize};
use tinct_base::units::human_bytes;

/// How the threads' memory was allocated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Allocation {
    /// The ordinary heap.
    Default,
    /// Thread i: pages of bank i only.
    OwnBank,
    /// All threads: pages of one bank.
    SharedBank,
    /// Thread i: pages of controller i only (any bank).
    OwnController,
    /// All threads: pages of one controller.
    SharedController,
    /// NUMA: each thread's memory first touched on its own node.
    #[serde(rename = "controller-local")]
    NodeLocal,
    /// NUMA: each thread's memory first touched on another node.
    #[serde(rename = "controller-remote")]
    NodeRemote,
    /// Thread j of a controller's group: bank j mod 2 of that controller.
    #[serde(rename = "2banks")]
    Banks2,
    /// Thread j of a controller's group: bank j mod 4 of that controller.
    #[serde(rename = "4banks")]
    Banks4,
    /// Thread j of a controller's group: bank j mod 8 of that controller.
    #[serde(rename = "8banks")]
    Banks8,
    /// Every thread: pages of its group's controller, any bank.
    #[serde(rename = "ctrl-local")]
    LocalController,
    /// Every thread: pages of the controller opposite its group's.
    #[serde(rename = "opposite-ctrl")]
    OppositeController,
    /// Every thread: its pages from every controller in turn.
    #[serde(rename = "circular-alloc")]
    Circular,
    /// NUMA: every thread's memory on node 0.
    #[serde(rename = "1node")]
    OneNode,
    /// NUMA: the threads' memory spread over two nodes.
    #[serde(rename = "2nodes")]
    TwoNodes,
}

impl Allocation {
    /// The name used in tables, JSON and CSV: its serde name.
    pub fn name(self) -> &'static str {
        serde_name(&self)
    }

    /// Colours (banks) per controller of the 2/4/8banks conditions.
    pub fn banks_per_controller(self) -> Option<u32> {
        match self {
            Allocation::Banks2 => Some(2),
            Allocation::Banks4 => Some(4),
            Allocation::Banks8 => Some(8),
            _ => None,
        }
    }

    /// The paper's Table 2 columns, in its order.
    pub const TABLE2: [Allocation; 8] = [
        Allocation::Banks2,
        Allocation::Banks4,
        Allocation::Banks8,
        Allocation::LocalController,
        Allocation::OppositeController,
        Allocation::OneNode,
        Allocation::TwoNodes,
        Allocation::Circular,
    ];
}

/// A condition that did not run here, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skipped {
    /// What was skipped.
    pub condition: String,
    /// Why.
    pub reason: String,
}

/// One allocation under one kernel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AllocationResult {
    /// The allocation.
    pub allocation: Allocation,
    /// (controller, bank) of each thread's pages (empty for default and
    /// controller-level allocations).
    pub banks: Vec<Vec<[u32; 2]>>,
    /// Per thread, pages served by a fallback step of Algorithm 1 (not
    /// from the requested bank or controller); empty when not bank-aware.
    pub fallback_pages: Vec<usize>,
    /// Controller-local/remote: per thread, the fraction of its pages found
    /// on the intended NUMA node (empty otherwise or when frames are unreadable).
    pub on_intended_node: Vec<f64>,
    /// Execution time of a run (first thread start to last thread end).
    pub time: Durations,
    /// Aggregate bandwidth of the median run, MiB/s.
    pub bandwidth_mib_s: f64,
    /// Standard deviation of the per-run bandwidth, MiB/s.
    pub bandwidth_stddev_mib_s: f64,
    /// Standard deviation of the execution time relative to its mean.
    pub time_cv: f64,
    /// Median time / median time of the default allocation.
    pub median_over_default: f64,
}

/// One kernel under every allocation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelResult {
    /// The kernel.
    pub kernel: Kernel,
    /// Passes over the memory per run.
    pub passes: u64,
    /// Bytes moved by all threads in one run.
    pub bytes_per_run: u64,
    /// One entry per allocation that ran.
    pub allocations: Vec<AllocationResult>,
}

/// The parameters as run (written to `banks.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Parameters {
    /// Threads.
    pub threads: usize,
    /// CPU of each thread.
    pub thread_cpus: Vec<u32>,
    /// Memory per thread in bytes (three arrays).
    pub bytes_per_thread: u64,
    /// Bank functions (XOR masks), empty when unknown.
    pub bank_functions: Vec<u64>,
    /// Controller functions (XOR masks), empty when unknown.
    pub controller_functions: Vec<u64>,
    /// Where the functions came from (`--dram-map` file, or the options).
    pub functions_from: String,
    /// Algorithm 1's fallback modes (`exact`: none).
    pub bank_mode: String,
    /// Banks per controller under those functions.
    pub banks: u32,
    /// Controllers under those functions.
    pub controllers: u32,
    /// Unrecorded warm-up rounds.
    pub warmup_rounds: u32,
}

/// The result of `tinct bench banks` (written as `banks.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Bench, options, machine (the harness's common header).
    #[serde(flatten)]
    pub header: RunHeader,
    /// Parameters.
    pub parameters: Parameters,
    /// True when bank functions were given (placement by bank is possible).
    pub bank_placement_known: bool,
    /// Why physical placement is unknown even with functions (frames
    /// unreadable), if so.
    pub frames_unreadable: Option<String>,
    /// Pages whose frame changed during the run (`null` if unknown).
    pub moved_pages: Option<usize>,
    /// One entry per kernel.
    pub kernels: Vec<KernelResult>,
    /// The composite bubblesort runs (Table 2).
    pub composite: Vec<CompositeResult>,
    /// The paper's Table 1: standard deviations of IS time and STREAM add
    /// bandwidth.
    pub table1: Table,
    /// The paper's Table 2: standard deviations of the composite's time.
    pub table2: Table,
    /// Conditions that did not run, with the reason.
    pub skipped: Vec<Skipped>,
    /// Caveats.
    pub notes: Vec<String>,
    /// Files written.
    pub files: Vec<String>,
}

impl crate::harness::Bench for Report {
    const NAME: &'static str = "banks";
    type Plan = Plan;

    /// The report of a measured plan, with the caveats a reader needs.
    fn assemble(plan: Plan, measured: Measured, _stopped: bool) -> Result<Report> {
        let machine = plan.machine.clone();
        let notes = notes(&plan, &measured, &machine);
        let bank_placement_known = plan.bank_known();
        Ok(Report {
            header: RunHeader::of_run("banks", plan.run, machine, measured.counters.clone())
                .with_conditions(measured.run_conditions),
            parameters: Parameters {
                threads: plan.thread_cpus.len(),
                thread_cpus: plan.thread_cpus,
                bytes_per_thread: plan.pages_per_thread as u64 * plan.page_bytes,
                bank_functions: plan.mapping.bank.masks().to_vec(),
                controller_functions: plan.mapping.controller.masks().to_vec(),
                functions_from: plan.functions_from.clone(),
                bank_mode: plan.bank_mode.names(),
                banks: plan.mapping.banks(),
                controllers: plan.mapping.controllers(),
                warmup_rounds: WARMUP_ROUNDS,
            },
            bank_placement_known,
            frames_unreadable: measured.frames_unreadable,
            moved_pages: measured.moved_pages,
            table1: super::tables::table1(&measured.kernels),
            table2: super::tables::table2(&measured.composite),
            kernels: measured.kernels,
            composite: measured.composite,
            skipped: plan.skipped,
            notes,
            files: Vec::new(),
        })
    }

    report_fields!(header, files);

    /// Writes `banks.csv` and `banks.svg`.
    fn write(&self, out: &mut OutputDir) -> Result<()> {
        let rows = self.kernels.iter().flat_map(|k| {
            k.allocations.iter().map(|a| {
                Columns::distribution(&a.time)
                    .with("kernel", k.kernel)
                    .with("allocation", a.allocation)
                    .with("bandwidth_mib_s", a.bandwidth_mib_s)
                    .with("bandwidth_stddev_mib_s", a.bandwidth_stddev_mib_s)
            })
        });
        let columns = [
            "kernel,allocation",
            DISTRIBUTION_COLUMNS,
            "bandwidth_mib_s,bandwidth_stddev_mib_s",
        ];
        out.write_columns("banks.csv", &columns, rows)?;
        let composite: Vec<_> = self
            .composite
            .iter()
            .flat_map(|run| {
                run.conditions.iter().map(|c| {
                    Columns::distribution(&c.time)
                        .with("threads", run.threads)
                        .with("pages", run.pages)
                        .with("allocation", c.allocation)
                        .with("fallback_pages", c.fallback_pages.iter().sum::<usize>())
                })
            })
            .collect();
        if !composite.is_empty() {
            let columns = [
                "threads,pages,allocation",
                DISTRIBUTION_COLUMNS,
                "fallback_pages",
            ];
            out.write_columns("banks-composite.csv", &columns, composite)?;
        }
        out.write_csv("banks-table1.csv", &table_records(&self.table1))?;
        if !self.table2.rows.is_empty() {
            out.write_csv("banks-table2.csv", &table_records(&self.table2))?;
        }
        // Bandwidth per kernel (x = kernel index), one series per allocation.
        let mut chart = LineChart::new(
            "Aggregate bandwidth per kernel and allocation (median run)",
            "kernel (1 copy, 2 scale, 3 add, 4 triad, 5 random, 6 integer-sort)",
            "MiB/s",
        );
        let allocations: Vec<Allocation> = self
            .kernels
            .first()
            .map(|k| k.allocations.iter().map(|a| a.allocation).collect())
            .unwrap_or_default();
        for allocation in allocations {
            let points = self
                .kernels
                .iter()
                .filter_map(|k| {
                    let x = Kernel::ALL.iter().position(|&kk| kk == k.kernel)? as f64 + 1.0;
                    let a = k.allocations.iter().find(|a| a.allocation == allocation)?;
                    Some((x, a.bandwidth_mib_s))
                })
                .collect();
            chart.series.push(Series::new(
                allocation.name(),
                SeriesStyle::LineWithMarkers,
                points,
            ));
        }
        out.write_svg("banks.svg", &chart)?;
        Ok(())
    }

    /// The one-screen summary.
    fn summary(&self, _: &super::Params, _: &OutputDir) -> Summary {
        let mut s = Summary::titled("tinct bench banks (Chandru & Mueller)", &self.header);
        s.fact(
            "threads",
            format!(
                "{} on CPUs {}, {} each",
                self.parameters.threads,
                tinct_sys::format_cpu_list(&self.parameters.thread_cpus),
                human_bytes(self.parameters.bytes_per_thread)
            ),
        );
        s.fact(
            "bank placement",
            if self.bank_placement_known || self.parameters.controllers > 1 {
                format!(
                    "{} banks x {} controllers from {}; Algorithm 1 mode {}",
                    self.parameters.banks,
                    self.parameters.controllers,
                    self.parameters.functions_from,
                    self.parameters.bank_mode
                )
            } else {
                "UNKNOWN here (no --bank-functions or --dram-map): no bank-aware condition".into()
            },
        );
        s.fact(
            "runs",
            format!(
                "{} per condition (+{} warm-up), interleaved",
                self.header.reps, self.parameters.warmup_rounds
            ),
        );
        s.table(&[
            "kernel",
            "allocation",
            "median ms",
            "max ms",
            "stddev ms",
            "MiB/s",
            "MiB/s stddev",
            "vs default",
        ]);
        for k in &self.kernels {
            for a in &k.allocations {
                s.row(vec![
                    k.kernel.name().into(),
                    a.allocation.name().into(),
                    ms(a.time.median),
                    ms(a.time.max),
                    ms(a.time.stddev.round() as u64),
                    format!("{:.0}", a.bandwidth_mib_s),
                    format!("{:.0}", a.bandwidth_stddev_mib_s),
                    format!("{:.2}x", a.median_over_default),
                ]);
            }
        }
        for run in &self.composite {
            let default = run.conditions.first().map_or(0, |c| c.time.median);
            for c in &run.conditions {
                s.row(vec![
                    format!("bsort {}x{}", run.threads, run.pages),
                    c.allocation.name().into(),
                    ms(c.time.median),
                    ms(c.time.max),
                    ms(c.time.stddev.round() as u64),
                    "-".into(),
                    "-".into(),
                    if default == 0 {
                        "-".into()
                    } else {
                        format!("{:.2}x", c.time.median as f64 / default as f64)
                    },
                ]);
            }
        }
        for line in table_lines(&self.table1)
            .into_iter()
            .chain(if self.table2.rows.is_empty() {
                Vec::new()
            } else {
                table_lines(&self.table2)
            })
        {
            s.note(line);
        }
        for k in &self.kernels {
            for a in &k.allocations {
                let fallback: usize = a.fallback_pages.iter().sum();
                if fallback > 0 {
                    s.note(format!(
                        "{} under {}: {fallback} pages from a fallback step of Algorithm 1 (not the \
                         requested bank)",
                        k.kernel.name(),
                        a.allocation.name()
                    ));
                }
            }
        }
        for skip in &self.skipped {
            s.note(format!("{} skipped: {}", skip.condition, skip.reason));
        }
        s.notes.extend(self.notes.iter().cloned());
        s
    }
}

fn notes(plan: &Plan, measured: &Measured, machine: &Machine) -> Vec<String> {
    let mut notes = Vec::new();
    if !plan.bank_known() && !plan.controller_known() {
        notes.push(
            "bank placement unknown here: no bank-aware condition ran. Give the DRAM functions \
             (--bank-functions 0x...,0x... and --controller-functions, e.g. from DRAMA, or \
             --dram-map FILE from `tinct bench dram-map`) to compare the paper's conditions"
                .into(),
        );
    } else if plan.functions_from.starts_with("--") {
        notes.push(
            "bank functions were given on the command line; tinct cannot check them against the \
             hardware"
                .into(),
        );
    } else {
        notes.push(format!(
            "bank functions read from {} (measured by `tinct bench dram-map`)",
            plan.functions_from
        ));
    }
    let oversubscribed = plan
        .composite
        .iter()
        .filter(|&&(threads, _)| threads > plan.run.cpus.len())
        .map(|(threads, pages)| format!("{threads}x{pages}"))
        .collect::<Vec<_>>();
    if !oversubscribed.is_empty() {
        notes.push(format!(
            "composite {}: more threads than the {} CPUs, so threads share CPUs (pinned round \
             robin) and a run's longest thread includes waiting for its CPU",
            oversubscribed.join(", "),
            plan.run.cpus.len()
        ));
    }
    if let Some(why) = &measured.frames_unreadable {
        notes.push(format!(
            "frame numbers unreadable ({why}): pages were filed by virtual address, so bank \
             placement is NOT controlled"
        ));
    }
    notes.extend(measured.run_conditions.notes(machine.online_cpus.len()));
    if machine.virtualized == Some(true) {
        notes.push(
            "virtual machine: guest-physical addresses are not host-physical, so bank functions \
             of the host do not apply to guest frames"
                .into(),
        );
    }
    let classes = plan.mapping.banks() * plan.mapping.controllers();
    let threads = plan.threads();
    if threads > 1 && plan.bank_known() && threads as u32 > classes {
        notes.push(format!(
            "{threads} threads over {classes} banks: own-bank threads share banks"
        ));
    }
    notes
}

/// A table as CSV records: a header, then one record per row (empty cells
/// where the condition did not run).
fn table_records(table: &Table) -> Vec<Vec<String>> {
    let mut records = vec![
        std::iter::once(String::new())
            .chain(table.columns.iter().cloned())
            .collect::<Vec<_>>(),
    ];
    for row in &table.rows {
        records.push(
            std::iter::once(row.label.clone())
                .chain(
                    row.cells
                        .iter()
                        .map(|c| c.map(|v| v.to_string()).unwrap_or_default()),
                )
                .collect(),
        );
    }
    records
}

/// A table as summary lines: its title and unit, then one line per row.
fn table_lines(table: &Table) -> Vec<String> {
    let mut lines = vec![format!(
        "{} ({}): {}",
        table.title,
        table.unit,
        table.columns.join(" | ")
    )];
    for (r, row) in table.rows.iter().enumerate() {
        let cells: Vec<String> = (0..table.columns.len())
            .map(|c| table.cell_text(r, c))
            .collect();
        lines.push(format!("  {}: {}", row.label, cells.join(" | ")));
    }
    lines
}
