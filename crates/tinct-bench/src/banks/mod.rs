//! `tinct bench banks`: DRAM bank and controller contention, after
//! Chandru & Mueller (Sections 4-5, Figures 4-9, Tables 1 and 2).
//!
//! N pinned threads run the same memory kernel at the same time, each on its
//! own memory, under several allocations:
//! * **default**: the ordinary heap (the paper's "default allocator": banks
//!   chosen by chance);
//! * **own-bank**: thread *i* gets pages of bank *i* only;
//! * **shared-bank**: every thread gets pages of one bank (pathological);
//! * **own-controller** / **shared-controller**: the same one level up;
//! * the paper's conditions ([`Allocation::name`] gives its labels): threads
//!   fall in one group per controller (the paper's quadrants); **2banks**,
//!   **4banks**, **8banks**: "colored allocation", thread *j* of a group
//!   gets bank *j mod c* of its own controller (c colours per controller;
//!   the paper wraps bank indices the same way); **ctrl-local**: pages of
//!   its own controller, any bank; **opposite-ctrl**: of the opposite
//!   controller; **circular-alloc**: every thread's pages from every
//!   controller in turn (tasks of each quadrant accessing all quadrants);
//!   **1node** / **2nodes**: every thread's memory on NUMA node 0, or
//!   spread over two nodes (by first touch; NUMA machines only).
//!
//! Each thread's pages are taken with chandru-mueller Algorithm 1 under
//! `--bank-mode` (exact by default); `fallback_pages` says how many pages of
//! a thread came from a fallback step. Bank and controller placement needs
//! the DRAM address functions (`--bank-functions` / `--controller-functions`
//! as XOR masks, or `--dram-map` from `tinct bench dram-map`); without them
//! only the allocations that need none run, and every skipped condition is
//! listed with its reason.
//!
//! Kernels: STREAM-like copy, scale, add, triad, random access and an
//! integer sort after NAS IS ([`kernels`]). Reported per kernel and
//! allocation: execution time (min/median/p99/max), bandwidth and their
//! standard deviations; then the paper's two tables: Table 1 (standard
//! deviation of IS time and of STREAM add bandwidth under 4 banks, 8
//! banks and controller-local) and Table 2 (standard deviation of the
//! composite bubblesort's time per (threads, pages per thread): 32/2,
//! 8/10, 32/10, 48/10, under every condition; [`composite`]).

pub mod composite;
pub mod kernels;
mod measure;
pub mod numa;
mod plan;
mod report;
pub mod tables;

use crate::Result;
use crate::harness::{BenchOptions, Durations, Finished, Machine, Progress, RunHeader};
use crate::scheduling_and_load::RunConditions;
use kernels::Kernel;
use serde::{Deserialize, Serialize};
use tinct_core::units::Bytes;

/// Parameters of `tinct bench banks`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Params {
    /// Parameters shared by every bench.
    pub common: BenchOptions,
    /// Threads, one per CPU of `common.cpus` (default: every allowed CPU).
    pub threads: Option<usize>,
    /// Memory per thread, split into the three STREAM arrays
    /// (default 48MiB; quick: 3MiB).
    pub size: Option<Bytes>,
    /// DRAM bank functions as XOR masks, DRAMA style (`0x2000,0x44000`);
    /// every mask must read only bits at or above the page size.
    pub bank_functions: Option<String>,
    /// DRAM controller (channel) functions as XOR masks.
    pub controller_functions: Option<String>,
    /// A DRAM mapping file from `tinct bench dram-map` instead of the two
    /// function lists (only its page-granular part can be used).
    pub dram_map: Option<std::path::PathBuf>,
    /// chandru-mueller Algorithm 1's fallbacks when a thread's bank runs
    /// out (default: exact, none).
    pub bank_mode: tinct_mem::Modes,
    /// Kernels to run (default: all).
    pub kernels: Option<Vec<Kernel>>,
    /// Composite bubblesort configurations (threads, pages per thread);
    /// default the paper's 32/2, 8/10, 32/10, 48/10 (quick: N/2 and N/10
    /// with N = min(4, CPUs); none with an empty list).
    pub composite: Option<Vec<(usize, usize)>>,
    /// SCHED_FIFO priority of the measuring threads (1-99; needs root or
    /// CAP_SYS_NICE). Recommended on a busy machine.
    pub fifo: Option<u8>,
}

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
    /// The name used in tables, JSON and CSV.
    pub fn name(self) -> &'static str {
        match self {
            Allocation::Default => "default",
            Allocation::OwnBank => "own-bank",
            Allocation::SharedBank => "shared-bank",
            Allocation::OwnController => "own-controller",
            Allocation::SharedController => "shared-controller",
            Allocation::NodeLocal => "controller-local",
            Allocation::NodeRemote => "controller-remote",
            Allocation::Banks2 => "2banks",
            Allocation::Banks4 => "4banks",
            Allocation::Banks8 => "8banks",
            Allocation::LocalController => "ctrl-local",
            Allocation::OppositeController => "opposite-ctrl",
            Allocation::Circular => "circular-alloc",
            Allocation::OneNode => "1node",
            Allocation::TwoNodes => "2nodes",
        }
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
    /// Scheduling policy and machine load during the run.
    pub run_conditions: RunConditions,
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
    pub composite: Vec<composite::CompositeResult>,
    /// The paper's Table 1: standard deviations of IS time and STREAM add
    /// bandwidth.
    pub table1: tables::Table,
    /// The paper's Table 2: standard deviations of the composite's time.
    pub table2: tables::Table,
    /// Conditions that did not run, with the reason.
    pub skipped: Vec<Skipped>,
    /// Caveats.
    pub notes: Vec<String>,
    /// Files written.
    pub files: Vec<String>,
}

const WARMUP_ROUNDS: u32 = 1;

/// Runs the bench, writes `banks.json`, `banks.csv` and `banks.svg`, and
/// returns the report with its summary.
pub fn run(params: &Params, progress: &dyn Progress) -> Result<Finished<Report>> {
    let plan = plan::plan(params)?;
    let machine = Machine::describe();
    crate::harness::interleaved::start_rounds();
    let measured = measure::measure(&plan, progress)?;
    let mut report = assemble(plan, measured, machine);
    report.header.record_rounds(progress.stop_requested());
    report::write(&mut report, &params.common)?;
    let mut summary = report::summary(&report);
    summary.interruption(&report.header, &params.common.out_dir("banks"));
    Ok(Finished {
        summary,
        result: report,
    })
}

/// The report of a measured plan, with the caveats a reader needs.
fn assemble(plan: plan::Plan, measured: measure::Measured, machine: Machine) -> Report {
    let notes = notes(&plan, &measured, &machine);
    let bank_placement_known = plan.bank_known();
    Report {
        header: RunHeader::of_run("banks", plan.run, machine, measured.counters.clone()),
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
        run_conditions: measured.run_conditions,
        bank_placement_known,
        frames_unreadable: measured.frames_unreadable,
        moved_pages: measured.moved_pages,
        table1: tables::table1(&measured.kernels),
        table2: tables::table2(&measured.composite),
        kernels: measured.kernels,
        composite: measured.composite,
        skipped: plan.skipped,
        notes,
        files: Vec::new(),
    }
}

fn notes(plan: &plan::Plan, measured: &measure::Measured, machine: &Machine) -> Vec<String> {
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
