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
use tinct_report::stats::ratio;

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
    /// (controller, bank) of each thread's pages (empty when not bank-aware).
    pub banks: Vec<Vec<[u32; 2]>>,
    /// Per thread, pages from a fallback step of Algorithm 1 (empty when not bank-aware).
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
    /// Why placement is unknown even with functions (frames unreadable), if so.
    pub frames_unreadable: Option<String>,
    /// Pages whose frame changed during the run (`null` if unknown).
    pub moved_pages: Option<usize>,
    /// One entry per kernel.
    pub kernels: Vec<KernelResult>,
    /// The composite bubblesort runs (Table 2).
    pub composite: Vec<CompositeResult>,
    /// The paper's Table 1: standard deviations of IS time and STREAM add bandwidth.
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

    /// Writes `banks.csv`, `banks-composite.csv`, the paper's tables
    /// (`banks-table1.csv`, `banks-table2.csv` when the composite ran) and
    /// `banks.svg`.
    fn write(&self, out: &mut OutputDir) -> Result<()> {
        let rows = self.kernels.iter().flat_map(|k| {
            let row = move |a: &AllocationResult| Columns::distribution(&a.time).with("", a);
            k.allocations
                .iter()
                .map(move |a| row(a).with("kernel", k.kernel))
        });
        let bandwidth = "bandwidth_mib_s,bandwidth_stddev_mib_s";
        let columns = ["kernel,allocation", DISTRIBUTION_COLUMNS, bandwidth];
        out.write_columns("banks.csv", &columns, rows)?;
        if !self.composite.is_empty() {
            let rows = self.composite.iter().flat_map(|run| {
                run.conditions.iter().map(move |c| {
                    let fallback_pages: usize = c.fallback_pages.iter().sum();
                    Columns::distribution(&c.time)
                        .with("", run)
                        .with("allocation", c.allocation)
                        .with("fallback_pages", fallback_pages)
                })
            });
            let columns = [
                "threads,pages,allocation",
                DISTRIBUTION_COLUMNS,
                "fallback_pages",
            ];
            out.write_columns("banks-composite.csv", &columns, rows)?;
        }
        let csv_cell = |cell: Option<f64>| cell.map(|v| v.to_string()).unwrap_or_default();
        for (name, table) in [("table1", &self.table1), ("table2", &self.table2)] {
            if !table.rows.is_empty() {
                out.write_csv(&format!("banks-{name}.csv"), &table.records(csv_cell))?;
            }
        }
        // Bandwidth per kernel (x = kernel index), one series per allocation.
        let mut chart = LineChart::new(
            "Aggregate bandwidth per kernel and allocation (median run)",
            "kernel (1 copy, 2 scale, 3 add, 4 triad, 5 random, 6 integer-sort)",
            "MiB/s",
        );
        for allocation in self.kernels.iter().take(1).flat_map(|k| &k.allocations) {
            let points = self.kernels.iter().filter_map(|k| {
                let x = Kernel::ALL.iter().position(|&kk| kk == k.kernel)? as f64 + 1.0;
                let a = k
                    .allocations
                    .iter()
                    .find(|a| a.allocation == allocation.allocation)?;
                Some((x, a.bandwidth_mib_s))
            });
            let name = allocation.allocation.name();
            chart.series.push(Series::new(
                name,
                SeriesStyle::LineWithMarkers,
                points.collect(),
            ));
        }
        out.write_svg("banks.svg", &chart)?;
        Ok(())
    }

    /// The one-screen summary.
    fn summary(&self, _: &super::Params, _: &OutputDir) -> Summary {
        let p = &self.parameters;
        let mut s = Summary::titled("tinct bench banks (Chandru & Mueller)", &self.header);
        let cpus = tinct_sys::format_cpu_list(&p.thread_cpus);
        let each = human_bytes(p.bytes_per_thread);
        s.fact(
            "threads",
            format!("{} on CPUs {cpus}, {each} each", p.threads),
        );
        s.fact(
            "bank placement",
            if self.bank_placement_known || p.controllers > 1 {
                format!(
                    "{} banks x {} controllers from {}; Algorithm 1 mode {}",
                    p.banks, p.controllers, p.functions_from, p.bank_mode
                )
            } else {
                "UNKNOWN here (no --bank-functions or --dram-map): no bank-aware condition".into()
            },
        );
        let warmup = p.warmup_rounds;
        let runs = format!(
            "{} per condition (+{warmup} warm-up), interleaved",
            self.header.reps
        );
        s.fact("runs", runs);
        let lines: Vec<Line> = self
            .kernels
            .iter()
            .flat_map(Line::of_kernel)
            .chain(self.composite.iter().flat_map(Line::of_composite))
            .collect();
        s.columns(
            &lines,
            &[
                ("kernel", |l| l.what.clone()),
                ("allocation", |l| l.allocation.name().into()),
                ("median ms", |l| ms(l.time.median)),
                ("max ms", |l| ms(l.time.max)),
                ("stddev ms", |l| ms(l.time.stddev.round() as u64)),
                ("MiB/s", |l| {
                    l.bandwidth.map_or("-".into(), |b| format!("{:.0}", b[0]))
                }),
                ("MiB/s stddev", |l| {
                    l.bandwidth.map_or("-".into(), |b| format!("{:.0}", b[1]))
                }),
                ("vs default", |l| format!("{:.2}x", l.over_default)),
            ],
        );
        for table in [&self.table1, &self.table2] {
            let records = table.records(Table::cell_text);
            let [columns, rows @ ..] = &records[..] else {
                continue;
            };
            if !rows.is_empty() {
                s.note(format!(
                    "{} ({}): {}",
                    table.title,
                    table.unit,
                    columns[1..].join(" | ")
                ));
                for row in rows {
                    s.note(format!("  {}: {}", row[0], row[1..].join(" | ")));
                }
            }
        }
        for l in lines.iter().filter(|l| l.fallback_pages > 0) {
            s.note(format!(
                "{} under {}: {} pages from a fallback step of Algorithm 1 (not the requested bank)",
                l.what, l.allocation.name(), l.fallback_pages
            ));
        }
        for skip in &self.skipped {
            s.note(format!("{} skipped: {}", skip.condition, skip.reason));
        }
        s.notes.extend(self.notes.iter().cloned());
        s
    }
}

/// One line of the summary's table: a kernel, or a composite
/// configuration, under one allocation.
struct Line<'a> {
    what: String,
    allocation: Allocation,
    time: &'a Durations,
    /// Median-run bandwidth and its standard deviation, MiB/s (kernels only).
    bandwidth: Option<[f64; 2]>,
    over_default: f64,
    fallback_pages: usize,
}

impl<'a> Line<'a> {
    fn of_kernel(k: &'a KernelResult) -> impl Iterator<Item = Line<'a>> {
        k.allocations.iter().map(|a| Line {
            what: k.kernel.name().into(),
            allocation: a.allocation,
            time: &a.time,
            bandwidth: Some([a.bandwidth_mib_s, a.bandwidth_stddev_mib_s]),
            over_default: a.median_over_default,
            fallback_pages: a.fallback_pages.iter().sum(),
        })
    }

    fn of_composite(run: &'a CompositeResult) -> impl Iterator<Item = Line<'a>> {
        let default = run.conditions.first().map_or(0, |c| c.time.median);
        run.conditions.iter().map(move |c| Line {
            what: format!("bsort {}x{}", run.threads, run.pages),
            allocation: c.allocation,
            time: &c.time,
            bandwidth: None,
            over_default: ratio(c.time.median, default),
            fallback_pages: c.fallback_pages.iter().sum(),
        })
    }
}

/// The caveats a reader of the run needs.
fn notes(plan: &Plan, measured: &Measured, machine: &Machine) -> Vec<String> {
    let mut notes = vec![if !plan.bank_known() && !plan.controller_known() {
        "bank placement unknown here: no bank-aware condition ran. Give the DRAM functions \
         (--bank-functions 0x...,0x... and --controller-functions, e.g. from DRAMA, or \
         --dram-map FILE from `tinct bench dram-map`) to compare the paper's conditions"
            .into()
    } else if plan.functions_from.starts_with("--") {
        "bank functions were given on the command line; tinct cannot check them against the \
         hardware"
            .into()
    } else {
        let from = &plan.functions_from;
        format!("bank functions read from {from} (measured by `tinct bench dram-map`)")
    }];
    let cpus = plan.run.cpus.len();
    let oversubscribed: Vec<String> = (plan.composite.iter())
        .filter(|&&(threads, _)| threads > cpus)
        .map(|(threads, pages)| format!("{threads}x{pages}"))
        .collect();
    if !oversubscribed.is_empty() {
        notes.push(format!(
            "composite {}: more threads than the {cpus} CPUs, so threads share CPUs (pinned round \
             robin) and a run's longest thread includes waiting for its CPU",
            oversubscribed.join(", ")
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
