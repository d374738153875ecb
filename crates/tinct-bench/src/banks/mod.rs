//! `tinct bench banks`: DRAM bank and controller contention, after
//! Chandru & Mueller (Sections 4-5, Tables 1 and 2).
//!
//! N pinned threads run the same memory kernel at the same time, each on its
//! own memory, under several allocations:
//! * **default**: the ordinary heap (the paper's "default allocator": banks
//!   chosen by chance);
//! * **own-bank**: thread *i* gets pages of bank *i* only (the paper's
//!   "colored allocation", each color/bank private to one thread);
//! * **shared-bank**: every thread gets pages of one bank (pathological);
//! * **own-controller** / **shared-controller**: the same one level up, when
//!   controller functions are given (several controllers).
//!
//! Bank and controller placement needs the DRAM address functions of the
//! machine (bank bits / XOR masks, as DRAMA prints them), which Linux does
//! not expose. They come from `--bank-functions` / `--controller-functions`;
//! without them only the default allocation runs and the output says bank
//! placement is unknown here. Kernels: STREAM-like copy, scale, add, triad
//! and a random-access kernel. Reported per kernel and allocation: execution
//! time (min/median/p99/max), bandwidth, and the standard deviation over runs
//! (the paper's Tables 1 and 2).

pub mod kernels;
mod measure;
pub mod numa;
mod plan;
mod report;

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
    /// Kernels to run (default: all).
    pub kernels: Option<Vec<Kernel>>,
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
        }
    }
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
    let measured = measure::measure(&plan, progress)?;
    let mut report = assemble(plan, measured, machine);
    report::write(&mut report, &params.common)?;
    Ok(Finished {
        summary: report::summary(&report),
        result: report,
    })
}

/// The report of a measured plan, with the caveats a reader needs.
fn assemble(plan: plan::Plan, measured: measure::Measured, machine: Machine) -> Report {
    let notes = notes(&plan, &measured, &machine);
    let bank_placement_known = plan.bank_known();
    Report {
        header: RunHeader {
            bench: "banks".into(),
            quick: plan.quick,
            reps: plan.reps,
            seed: plan.seed,
            cpus: plan.cpus,
            machine,
            counters: measured.counters.clone(),
        },
        parameters: Parameters {
            threads: plan.thread_cpus.len(),
            thread_cpus: plan.thread_cpus,
            bytes_per_thread: plan.pages_per_thread as u64 * plan.page_bytes,
            bank_functions: plan.mapping.bank.masks().to_vec(),
            controller_functions: plan.mapping.controller.masks().to_vec(),
            banks: plan.mapping.banks(),
            controllers: plan.mapping.controllers(),
            warmup_rounds: WARMUP_ROUNDS,
        },
        run_conditions: measured.run_conditions,
        bank_placement_known,
        frames_unreadable: measured.frames_unreadable,
        moved_pages: measured.moved_pages,
        kernels: measured.kernels,
        skipped: plan.skipped,
        notes,
        files: Vec::new(),
    }
}

fn notes(plan: &plan::Plan, measured: &measure::Measured, machine: &Machine) -> Vec<String> {
    let mut notes = Vec::new();
    if !plan.bank_known() {
        notes.push(
            "bank placement unknown here: only the default allocation ran. Give the DRAM bank \
             functions (--bank-functions 0x...,0x..., e.g. from DRAMA) to compare own-bank and \
             shared-bank allocations"
                .into(),
        );
    } else {
        notes.push(
            "bank functions were given on the command line; tinct cannot check them against the \
             hardware"
                .into(),
        );
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
