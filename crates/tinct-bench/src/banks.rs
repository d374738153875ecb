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
pub mod numa;

use crate::scheduling_and_load::RunConditions;
use crate::harness::schema::Kind;
use crate::harness::{
    BenchOptions, Durations, Interleaved, LineChart, Machine, OutputDir, Progress, RunHeader,
    Series, SeriesStyle, Summary, machine::human_bytes,
};
use crate::page_placement::PagedMemory;
use crate::pinned_threads::{Job, run_together};
use crate::{Error, Result};
use kernels::{Arrays, Kernel};
use serde::Serialize;
use tinct_mem::{AddressMapping, PageId, XorFunctions};

/// Options of `tinct bench banks`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// Common bench options.
    #[command(flatten)]
    pub common: BenchOptions,
    /// Threads, one per CPU of `--cpus` (default: every allowed CPU).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// Memory per thread, split into the three STREAM arrays
    /// (default 48MiB; `--quick`: 3MiB).
    #[arg(long, value_name = "SIZE")]
    pub size: Option<String>,
    /// DRAM bank functions as XOR masks, DRAMA style (`0x2000,0x44000`);
    /// every mask must read only bits at or above the page size.
    #[arg(long, value_name = "MASKS")]
    pub bank_functions: Option<String>,
    /// DRAM controller (channel) functions as XOR masks.
    #[arg(long, value_name = "MASKS")]
    pub controller_functions: Option<String>,
    /// Kernels to run (default: all).
    #[arg(long, value_delimiter = ',', value_enum)]
    pub kernels: Option<Vec<Kernel>>,
    /// Run the measuring threads under SCHED_FIFO with this priority
    /// (1-99; needs root or CAP_SYS_NICE). Recommended on a busy machine.
    #[arg(long, value_name = "PRIORITY")]
    pub fifo: Option<u8>,
}

/// How the threads' memory was allocated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skipped {
    /// What was skipped.
    pub condition: String,
    /// Why.
    pub reason: String,
}

/// One allocation under one kernel.
#[derive(Debug, Clone, PartialEq, Serialize)]
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
#[derive(Debug, Clone, PartialEq, Serialize)]
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

/// Parameters of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
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
#[derive(Debug, Clone, Serialize)]
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

/// The JSON fields `banks.json` must have beyond [`crate::harness::schema::COMMON`].
pub const SCHEMA: &[(&str, Kind)] = &[
    ("parameters.threads", Kind::Unsigned),
    ("parameters.bytes_per_thread", Kind::Unsigned),
    ("parameters.banks", Kind::Unsigned),
    ("parameters.controllers", Kind::Unsigned),
    ("bank_placement_known", Kind::Bool),
    ("kernels[].kernel", Kind::String),
    ("kernels[].bytes_per_run", Kind::Unsigned),
    ("kernels[].allocations[].allocation", Kind::String),
    ("kernels[].allocations[].time", Kind::Object),
    ("kernels[].allocations[].bandwidth_mib_s", Kind::Number),
    (
        "kernels[].allocations[].bandwidth_stddev_mib_s",
        Kind::Number,
    ),
    ("kernels[].allocations[].median_over_default", Kind::Number),
    ("kernels[].allocations[].on_intended_node", Kind::Array),
    ("skipped", Kind::Array),
    ("run_conditions", Kind::Object),
    ("run_conditions.load_average_start", Kind::NumberOrNull),
    ("notes", Kind::Array),
    ("files", Kind::Array),
];

const WARMUP_ROUNDS: u32 = 1;
/// Arena slack over the expected pages per bank (physical pages are not
/// spread perfectly evenly over banks).
const ARENA_SLACK: f64 = 1.5;
/// Largest arena the bench will allocate for bank-aware placement.
const MAX_ARENA_BYTES: u64 = 4 << 30;

fn parse_functions(option: &str, text: Option<&str>) -> Result<XorFunctions> {
    match text {
        None => Ok(XorFunctions::none()),
        Some(text) => {
            XorFunctions::parse(text).map_err(|e| Error::InvalidInput(format!("{option}: {e}")))
        }
    }
}

/// Everything the measuring loop needs for one allocation: each thread's
/// pages (as page ids into the arena, or a heap buffer).
struct Plan {
    groups: Vec<Vec<PageId>>,
    banks: Vec<Vec<[u32; 2]>>,
}

/// Runs the bench, writes `banks.json`, `banks.csv` and `banks.svg`, and
/// returns the report.
pub fn run(args: &Args) -> Result<Report> {
    let common = &args.common;
    let quick = common.quick;
    let reps = common.reps_or(3, 15)?;
    let cpus = common.cpus(1)?;
    let threads = args.threads.unwrap_or(cpus.len());
    if threads == 0 || threads > cpus.len() {
        return Err(Error::InvalidInput(format!(
            "--threads: expected 1..={} (one per CPU of --cpus), found {threads}",
            cpus.len()
        )));
    }
    let thread_cpus: Vec<u32> = cpus[..threads].to_vec();
    let bytes_per_thread = match &args.size {
        Some(text) => {
            tinct_core::units::parse_size(text)
                .map_err(|e| Error::InvalidInput(format!("--size: {e}")))?
                .0
        }
        None if quick => 3 << 20,
        None => 48 << 20,
    };
    let page_bytes = rustix::param::page_size() as u64;
    if bytes_per_thread < 3 * page_bytes {
        return Err(Error::InvalidInput(format!(
            "--size: expected at least three pages ({} bytes) per thread, found {bytes_per_thread}",
            3 * page_bytes
        )));
    }
    let bank = parse_functions("--bank-functions", args.bank_functions.as_deref())?;
    let controller = parse_functions(
        "--controller-functions",
        args.controller_functions.as_deref(),
    )?;
    let mapping =
        AddressMapping::new(page_bytes, XorFunctions::none(), bank, controller).map_err(|e| {
            Error::InvalidInput(format!("--bank-functions/--controller-functions: {e}"))
        })?;
    let kernels_to_run = args.kernels.clone().unwrap_or_else(|| Kernel::ALL.to_vec());
    let machine = Machine::describe();
    let pages_per_thread = bytes_per_thread.div_ceil(page_bytes) as usize;
    let bank_known = mapping.banks() > 1;
    let controller_known = mapping.controllers() > 1;

    let mut skipped = Vec::new();
    let mut allocations = vec![Allocation::Default];
    if bank_known {
        allocations.extend([Allocation::OwnBank, Allocation::SharedBank]);
    } else {
        for a in [Allocation::OwnBank, Allocation::SharedBank] {
            skipped.push(Skipped {
                condition: a.name().into(),
                reason: "bank placement unknown here: Linux does not expose the DRAM address \
                         mapping; give --bank-functions (XOR masks as DRAMA prints them)"
                    .into(),
            });
        }
    }
    if controller_known {
        allocations.extend([Allocation::OwnController, Allocation::SharedController]);
    } else {
        for a in [Allocation::OwnController, Allocation::SharedController] {
            skipped.push(Skipped {
                condition: a.name().into(),
                reason: "one memory controller known: give --controller-functions for a machine \
                         with several"
                    .into(),
            });
        }
    }
    let arena_allocations: Vec<Allocation> = allocations[1..].to_vec();
    let topology = tinct_sys::topology::Topology::read(&tinct_sys::SysRoot::live())?;
    let numa = match remote_cpus(&topology, &thread_cpus, &cpus) {
        Ok(remote) => {
            allocations.extend([Allocation::NodeLocal, Allocation::NodeRemote]);
            Some(remote)
        }
        Err(reason) => {
            skipped.push(Skipped {
                condition: "controller-local / controller-remote".into(),
                reason,
            });
            None
        }
    };

    // The arena for bank- and controller-aware pages.
    let classes = u64::from(mapping.banks() * mapping.controllers());
    let mut arena = if !arena_allocations.is_empty() {
        let bytes =
            (classes as f64 * (threads as f64 + 1.0) * bytes_per_thread as f64 * ARENA_SLACK)
                as u64;
        if bytes > MAX_ARENA_BYTES {
            return Err(Error::InvalidInput(format!(
                "bank-aware placement of {} per thread over {classes} bank classes needs a {} \
                 arena: expected at most {}; use a smaller --size or fewer --threads",
                human_bytes(bytes_per_thread),
                human_bytes(bytes),
                human_bytes(MAX_ARENA_BYTES)
            )));
        }
        // Own-bank needs one thread's pages in each bank, shared-bank all
        // threads' pages in one; own/shared-controller the same per controller.
        let banks = mapping.banks();
        let fits = |memory: &PagedMemory| {
            let per_bank = |c, b| memory.free_in_bank(c, b);
            let per_controller = |c| (0..banks).map(|b| memory.free_in_bank(c, b)).sum::<usize>();
            let controllers = 0..mapping.controllers();
            let bank_ok = !bank_known
                || controllers
                    .clone()
                    .all(|c| (0..banks).all(|b| per_bank(c, b) >= pages_per_thread))
                    && controllers.clone().any(|c| {
                        (0..banks).any(|b| per_bank(c, b) >= (threads + 1) * pages_per_thread)
                    });
            let controller_ok = !controller_known
                || controllers
                    .clone()
                    .all(|c| per_controller(c) >= 2 * pages_per_thread)
                    && per_controller(0) >= (threads + 1) * pages_per_thread;
            bank_ok && controller_ok
        };
        Some(PagedMemory::new_fitting(&mapping, bytes, fits)?)
    } else {
        None
    };
    let mut plans = Vec::new();
    if let Some(arena) = arena.as_mut() {
        for &allocation in &arena_allocations {
            plans.push(plan(arena, allocation, threads, pages_per_thread)?);
        }
    }
    let mut heap: Vec<Vec<u64>> = (0..threads)
        .map(|_| vec![1u64; pages_per_thread * (page_bytes as usize / 8)])
        .collect();
    // Controller-local and -remote memory by first touch, and where it landed.
    let words_per_thread = pages_per_thread * (page_bytes as usize / 8);
    let mut local_heap = Vec::new();
    let mut remote_heap = Vec::new();
    let mut local_share = Vec::new();
    let mut remote_share = Vec::new();
    if let Some(remote) = &numa {
        let map = numa::NodeMap::read(&tinct_sys::SysRoot::live())?;
        for (&cpu, &(remote_cpu, remote_node)) in thread_cpus.iter().zip(remote) {
            local_heap.push(numa::first_touch(cpu, words_per_thread)?);
            remote_heap.push(numa::first_touch(remote_cpu, words_per_thread)?);
            let node = node_of_cpu(&topology, cpu).unwrap_or(0);
            if let Some(map) = &map {
                local_share.extend(numa::share_on_node(
                    local_heap.last().unwrap_or(&Vec::new()),
                    node,
                    map,
                ));
                remote_share.extend(numa::share_on_node(
                    remote_heap.last().unwrap_or(&Vec::new()),
                    remote_node,
                    map,
                ));
            }
        }
    }
    let frames_unreadable = arena
        .as_ref()
        .and_then(|a| a.placement_unknown().map(str::to_string));

    let total =
        kernels_to_run.len() as u64 * u64::from(reps + WARMUP_ROUNDS) * allocations.len() as u64;
    let progress = Progress::new(total, "banks", !common.no_progress);
    let mut run_conditions = RunConditions::start(args.fifo)?;
    let mut results = Vec::with_capacity(kernels_to_run.len());
    {
        // Every allocation's per-thread arrays, built once and reused.
        let mut per_allocation: Vec<Vec<Arrays<'_>>> = Vec::with_capacity(allocations.len());
        per_allocation.push(
            heap.iter_mut()
                .map(|words| {
                    Arrays::from_pages(words.chunks_exact_mut(page_bytes as usize / 8).collect())
                })
                .collect(),
        );
        if let Some(arena) = arena.as_mut() {
            let groups: Vec<Vec<PageId>> = plans
                .iter()
                .flat_map(|p| p.groups.iter().cloned())
                .collect();
            let mut split = arena.split(&groups)?.into_iter();
            for _ in &plans {
                per_allocation.push(
                    (0..threads)
                        .map(|_| Arrays::from_pages(split.next().unwrap_or_default()))
                        .collect(),
                );
            }
        }
        for heap in [&mut local_heap, &mut remote_heap] {
            if !heap.is_empty() {
                per_allocation.push(
                    heap.iter_mut()
                        .map(|words| {
                            Arrays::from_pages(
                                words.chunks_exact_mut(page_bytes as usize / 8).collect(),
                            )
                        })
                        .collect(),
                );
            }
        }
        for (k, &kernel) in kernels_to_run.iter().enumerate() {
            progress.set_message(kernel.name());
            let elements = per_allocation[0][0].elements_of(kernel);
            let target = if quick { 24u64 << 20 } else { 192u64 << 20 };
            let passes = (target / (elements * kernel.bytes_per_element())).max(1);
            let bytes_per_run = elements * kernel.bytes_per_element() * passes * threads as u64;
            let names: Vec<&str> = allocations.iter().map(|a| a.name()).collect();
            let samples = Interleaved::new(names, reps)
                .warmup(WARMUP_ROUNDS)
                .seed(common.seed.wrapping_add(k as u64))
                .run(&progress, |c| {
                    let jobs = per_allocation[c]
                        .iter_mut()
                        .zip(&thread_cpus)
                        .map(|(arrays, &cpu)| Job {
                            cpus: vec![cpu],
                            input: arrays,
                        })
                        .collect();
                    run_together(jobs, args.fifo, |i, arrays| {
                        kernels::run(kernel, arrays, passes, common.seed.wrapping_add(i as u64))
                    })
                    .map(|t| t.elapsed_ns)
                })?;
            let default_median = samples.stats(0).map_or(0, |s| s.median);
            let mut rows = Vec::with_capacity(allocations.len());
            for (c, &allocation) in allocations.iter().enumerate() {
                let time = samples.stats(c).ok_or_else(|| {
                    Error::Measurement(format!("no samples for {}", allocation.name()))
                })?;
                let bandwidths: Vec<f64> = samples.samples[c]
                    .iter()
                    .map(|&ns| mib_per_s(bytes_per_run, ns))
                    .collect();
                let banks = match c.checked_sub(1).and_then(|i| plans.get(i)) {
                    Some(plan) => plan.banks.clone(),
                    None => Vec::new(),
                };
                let on_intended_node = match allocation {
                    Allocation::NodeLocal => local_share.clone(),
                    Allocation::NodeRemote => remote_share.clone(),
                    _ => Vec::new(),
                };
                rows.push(AllocationResult {
                    allocation,
                    banks,
                    on_intended_node,
                    bandwidth_mib_s: mib_per_s(bytes_per_run, time.median),
                    bandwidth_stddev_mib_s: stddev(&bandwidths),
                    time_cv: if time.mean > 0.0 {
                        time.stddev / time.mean
                    } else {
                        0.0
                    },
                    median_over_default: if default_median == 0 {
                        0.0
                    } else {
                        time.median as f64 / default_median as f64
                    },
                    time,
                });
            }
            results.push(KernelResult {
                kernel,
                passes,
                bytes_per_run,
                allocations: rows,
            });
        }
    }
    progress.finish();
    run_conditions.finish();
    let moved_pages = arena.as_ref().and_then(PagedMemory::moved_pages);

    let mut notes = Vec::new();
    if !bank_known {
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
    if let Some(why) = &frames_unreadable {
        notes.push(format!(
            "frame numbers unreadable ({why}): pages were filed by virtual address, so bank \
             placement is NOT controlled"
        ));
    }
    notes.extend(run_conditions.notes(machine.online_cpus.len()));
    if machine.virtualized == Some(true) {
        notes.push(
            "virtual machine: guest-physical addresses are not host-physical, so bank functions \
             of the host do not apply to guest frames"
                .into(),
        );
    }
    if threads > 1 && bank_known && threads as u32 > mapping.banks() * mapping.controllers() {
        notes.push(format!(
            "{threads} threads over {} banks: own-bank threads share banks",
            mapping.banks() * mapping.controllers()
        ));
    }
    let mut report = Report {
        header: RunHeader {
            bench: "banks".into(),
            quick,
            reps,
            seed: common.seed,
            cpus,
            machine,
        },
        parameters: Parameters {
            threads,
            thread_cpus,
            bytes_per_thread: pages_per_thread as u64 * page_bytes,
            bank_functions: mapping.bank.masks().to_vec(),
            controller_functions: mapping.controller.masks().to_vec(),
            banks: mapping.banks(),
            controllers: mapping.controllers(),
            warmup_rounds: WARMUP_ROUNDS,
        },
        run_conditions,
        bank_placement_known: bank_known,
        frames_unreadable,
        moved_pages,
        kernels: results,
        skipped,
        notes,
        files: Vec::new(),
    };
    write_outputs(&mut report, common)?;
    Ok(report)
}

/// The NUMA node of `cpu`.
fn node_of_cpu(topology: &tinct_sys::topology::Topology, cpu: u32) -> Option<u32> {
    topology
        .numa_nodes
        .iter()
        .find(|n| n.cpus.contains(&cpu))
        .map(|n| n.id)
}

/// For each thread CPU, an allowed CPU on another NUMA node and that node;
/// or why controller-local/remote cannot run here.
fn remote_cpus(
    topology: &tinct_sys::topology::Topology,
    thread_cpus: &[u32],
    allowed: &[u32],
) -> std::result::Result<Vec<(u32, u32)>, String> {
    if topology.numa_nodes.len() < 2 {
        return Err("one NUMA node: every controller is equally near every CPU".into());
    }
    thread_cpus
        .iter()
        .map(|&cpu| {
            let home = node_of_cpu(topology, cpu);
            allowed
                .iter()
                .find_map(|&other| {
                    let node = node_of_cpu(topology, other)?;
                    (Some(node) != home).then_some((other, node))
                })
                .ok_or_else(|| {
                    format!("no allowed CPU outside the NUMA node of CPU {cpu}: widen --cpus")
                })
        })
        .collect()
}

/// Chooses each thread's pages for `allocation` from the arena.
fn plan(
    arena: &mut PagedMemory,
    allocation: Allocation,
    threads: usize,
    pages: usize,
) -> Result<Plan> {
    let (banks, controllers) = (arena.mapping().banks(), arena.mapping().controllers());
    let mut groups = Vec::with_capacity(threads);
    let mut used = Vec::with_capacity(threads);
    match allocation {
        Allocation::OwnBank | Allocation::SharedBank => {
            // Shared: the bank with the most free pages; own: thread i's bank i.
            let busiest = (0..controllers)
                .flat_map(|c| (0..banks).map(move |b| (c, b)))
                .max_by_key(|&(c, b)| (arena.free_in_bank(c, b), std::cmp::Reverse((c, b))))
                .unwrap_or((0, 0));
            for thread in 0..threads {
                let (controller, bank) = if allocation == Allocation::SharedBank {
                    busiest
                } else {
                    let class = thread as u32 % (banks * controllers);
                    (class / banks, class % banks)
                };
                groups.push(arena.take_bank(controller, bank, pages)?);
                used.push(vec![[controller, bank]]);
            }
        }
        Allocation::OwnController | Allocation::SharedController => {
            for thread in 0..threads {
                let controller = if allocation == Allocation::SharedController {
                    0
                } else {
                    thread as u32 % controllers
                };
                let mut mine = Vec::with_capacity(pages);
                let mut bank = 0;
                while mine.len() < pages {
                    let free: usize = (0..banks).map(|b| arena.free_in_bank(controller, b)).sum();
                    if free == 0 {
                        return Err(Error::Measurement(format!(
                            "controller {controller} ran out of pages: use a smaller --size"
                        )));
                    }
                    if arena.free_in_bank(controller, bank) > 0 {
                        mine.extend(arena.take_bank(controller, bank, 1)?);
                    }
                    bank = (bank + 1) % banks;
                }
                groups.push(mine);
                used.push(Vec::new());
            }
        }
        Allocation::Default | Allocation::NodeLocal | Allocation::NodeRemote => {}
    }
    Ok(Plan {
        groups,
        banks: used,
    })
}

fn mib_per_s(bytes: u64, ns: u64) -> f64 {
    if ns == 0 {
        0.0
    } else {
        bytes as f64 / (1u64 << 20) as f64 / (ns as f64 / 1e9)
    }
}

fn stddev(values: &[f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    (values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / values.len() as f64).sqrt()
}

/// One CSV row: one kernel under one allocation.
#[derive(Debug, Serialize)]
struct CsvRow {
    kernel: &'static str,
    allocation: &'static str,
    count: u64,
    min_ns: u64,
    median_ns: u64,
    p99_ns: u64,
    max_ns: u64,
    stddev_ns: u64,
    bandwidth_mib_s: f64,
    bandwidth_stddev_mib_s: f64,
}

fn write_outputs(report: &mut Report, common: &BenchOptions) -> Result<()> {
    let mut out = OutputDir::create(common.out_dir("banks"))?;
    let rows: Vec<CsvRow> = report
        .kernels
        .iter()
        .flat_map(|k| {
            k.allocations.iter().map(move |a| CsvRow {
                kernel: k.kernel.name(),
                allocation: a.allocation.name(),
                count: a.time.count,
                min_ns: a.time.min,
                median_ns: a.time.median,
                p99_ns: a.time.p99,
                max_ns: a.time.max,
                stddev_ns: a.time.stddev.round() as u64,
                bandwidth_mib_s: a.bandwidth_mib_s,
                bandwidth_stddev_mib_s: a.bandwidth_stddev_mib_s,
            })
        })
        .collect();
    out.write_csv("banks.csv", &rows)?;
    // Bandwidth per kernel (x = kernel index), one series per allocation.
    let mut chart = LineChart::new(
        "Aggregate bandwidth per kernel and allocation (median run)",
        "kernel (1 copy, 2 scale, 3 add, 4 triad, 5 random)",
        "MiB/s",
    );
    let allocations: Vec<Allocation> = report
        .kernels
        .first()
        .map(|k| k.allocations.iter().map(|a| a.allocation).collect())
        .unwrap_or_default();
    for allocation in allocations {
        let points = report
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
    report.files = out.files_with("banks.json");
    out.write_json("banks.json", report)?;
    Ok(())
}

impl Report {
    /// The one-screen summary.
    pub fn summary(&self) -> Summary {
        let mut s = Summary::new("tinct bench banks (Chandru & Mueller)");
        s.fact("machine", self.header.machine.one_line());
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
            if self.bank_placement_known {
                format!(
                    "{} banks x {} controllers from the given functions",
                    self.parameters.banks, self.parameters.controllers
                )
            } else {
                "UNKNOWN here (no --bank-functions): default allocation only".into()
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
        for skip in &self.skipped {
            s.note(format!("{} skipped: {}", skip.condition, skip.reason));
        }
        for note in &self.notes {
            s.note(note.clone());
        }
        if !self.files.is_empty() {
            s.note(format!("files: {}", self.files.join(", ")));
        }
        s
    }
}

fn ms(ns: u64) -> String {
    format!("{:.2}", ns as f64 / 1e6)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tinct_sys::topology::{NumaNode, Topology};

    fn topology(nodes: &[&[u32]]) -> Topology {
        Topology {
            online_cpus: nodes.iter().flat_map(|n| n.iter().copied()).collect(),
            cpus: Vec::new(),
            numa_nodes: nodes
                .iter()
                .enumerate()
                .map(|(id, cpus)| NumaNode {
                    id: id as u32,
                    cpus: cpus.to_vec(),
                    memory_bytes: None,
                })
                .collect(),
            caches: Vec::new(),
        }
    }

    #[test]
    fn remote_cpus_lie_on_another_node() {
        let t = topology(&[&[0, 1], &[2, 3]]);
        assert_eq!(
            remote_cpus(&t, &[0, 2], &[0, 1, 2, 3]),
            Ok(vec![(2, 1), (0, 0)])
        );
        assert_eq!(node_of_cpu(&t, 3), Some(1));
    }

    #[test]
    fn one_node_or_no_allowed_remote_cpu_is_explained() {
        let one = topology(&[&[0, 1]]);
        assert!(
            remote_cpus(&one, &[0], &[0, 1])
                .unwrap_err()
                .contains("one NUMA node")
        );
        let two = topology(&[&[0, 1], &[2, 3]]);
        assert!(
            remote_cpus(&two, &[0], &[0, 1])
                .unwrap_err()
                .contains("--cpus")
        );
    }

    #[test]
    fn bank_plans_give_each_thread_its_bank_or_all_one_bank() {
        let mapping = AddressMapping::new(
            rustix::param::page_size() as u64,
            XorFunctions::none(),
            XorFunctions::from_bits(&[13, 14]).unwrap(),
            XorFunctions::none(),
        )
        .unwrap();
        let mut arena = PagedMemory::new(mapping, 8 << 20).unwrap();
        let own = plan(&mut arena, Allocation::OwnBank, 3, 16).unwrap();
        assert_eq!(own.banks, vec![vec![[0, 0]], vec![[0, 1]], vec![[0, 2]]]);
        assert!(own.groups.iter().all(|g| g.len() == 16));
        let shared = plan(&mut arena, Allocation::SharedBank, 3, 16).unwrap();
        assert!(shared.banks.iter().all(|b| *b == shared.banks[0]));
        let pages: Vec<PageId> = own
            .groups
            .iter()
            .chain(&shared.groups)
            .flatten()
            .copied()
            .collect();
        let mut distinct = pages.clone();
        distinct.sort();
        distinct.dedup();
        assert_eq!(distinct.len(), pages.len(), "a page was handed out twice");
    }
}
