//! `tinct bench coherence`: the shared-memory contention benchmark of
//! Gracioli et al. 2011 (Section III, Figure 3), on this machine.
//!
//! Three versions of one pipeline application over two `ROWS x COLS`
//! arrays, for a sweep of array sizes:
//! * **sequential**: function 1 then function 2 on one CPU (no coherence
//!   traffic; the "implemented in hardware" reference);
//! * **parallel-shared**: function 1 and function 2 at the same time on two
//!   threads, both reading and writing both arrays at the same positions;
//! * **parallel-private**: the paper's best case, two threads each with its
//!   own arrays (it should take about half the sequential time).
//!
//! The parallel versions run under each thread placement of the paper (same
//! CPU, SMT siblings, different cores, different dies, OS-chosen); the
//! placements this machine lacks are listed with the reason. Each
//! condition runs `reps` times, interleaved with the others; the WCET is the
//! largest observed time, as in the paper (10 runs, WCET extracted), and the
//! slowdown is parallel WCET / sequential WCET (the paper's "up to 3.8x").
//! A false-sharing variant times two threads incrementing their own
//! counters when the counters share one cache line and when they do not.
//!
//! Two loop modes: by default the work per run is the same at every size
//! (the repetition count is `work / (ROWS x COLS)`), so sizes compare at
//! equal work; with `repetitions` each size runs the paper's fixed loop
//! (`--repetitions 10000` is gracioli's, so large arrays take long).
//!
//! Every condition is also counted with the coherence events of the
//! paper's Fig. 9 (L2 requests in the I and S states, LLC misses, snoop
//! hit, invalidate, share, share-and-invalidate: tinct-sys's
//! [`tinct_sys::perf::coherence`] table for this CPU) besides the harness's
//! default counters; where the machine has no PMU each is reported
//! unavailable with the kernel's reason.

pub mod kernels;
mod measure;
pub mod placement;
mod report;

use crate::harness::{
    BenchOptions, Durations, Finished, Machine, Progress, RunHeader, RunSettings,
};
use crate::scheduling_and_load::RunConditions;
use crate::{Error, Result};
use placement::{Placement, PlacementKind};
use serde::{Deserialize, Serialize};

/// Parameters of `tinct bench coherence`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Params {
    /// Parameters shared by every bench.
    pub common: BenchOptions,
    /// Array dimensions to sweep (ROWS = COLS), each in 1..=16384
    /// (default 64..2048 as in the paper; quick: 64 and 512).
    pub sizes: Option<Vec<usize>>,
    /// Element updates per function per run; the repetition loop count of a
    /// size is this divided by ROWS x COLS (default 2^24; quick: 2^21).
    pub work: Option<u64>,
    /// The paper's mode: this many repetitions of the loop at every size
    /// (gracioli: 10 000), instead of the same work at every size.
    pub repetitions: Option<u64>,
    /// SCHED_FIFO priority of the measuring threads (1-99; needs root or
    /// CAP_SYS_NICE). Recommended on a busy machine.
    pub fifo: Option<u8>,
    /// Increments per thread in the false-sharing variant
    /// (default 2^25; quick: 2^20).
    pub increments: Option<u64>,
}

/// The parameters as run (written to `coherence.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Parameters {
    /// Array dimensions swept (ROWS = COLS).
    pub sizes: Vec<usize>,
    /// Element updates per function per run, in the equal-work mode
    /// (`null` in the fixed-repetitions mode).
    pub work_per_function: Option<u64>,
    /// Loop repetitions at every size, in the paper's fixed-repetitions
    /// mode (`null` in the equal-work mode).
    pub fixed_repetitions: Option<u64>,
    /// Bytes of one array element.
    pub element_bytes: u64,
    /// Increments per thread in the false-sharing variant.
    pub false_sharing_increments: u64,
    /// Unrecorded warm-up rounds before the measured ones.
    pub warmup_rounds: u32,
    /// CPU of the sequential version.
    pub sequential_cpu: u32,
}

/// Parallel versions under one placement, for one array size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParallelResult {
    /// Placement name.
    pub placement: PlacementKind,
    /// The two threads' CPUs (`null` when the OS chooses).
    pub cpus: Option<[u32; 2]>,
    /// Parallel version sharing both arrays.
    pub shared: Durations,
    /// Best case: each thread with its own arrays.
    pub private: Durations,
    /// WCET(parallel-shared) / WCET(sequential): the paper's slowdown.
    pub shared_over_sequential_wcet: f64,
    /// WCET(parallel-private) / WCET(sequential) (about 0.5 expected).
    pub private_over_sequential_wcet: f64,
    /// Median(parallel-shared) / median(sequential).
    pub shared_over_sequential_median: f64,
    /// Median(parallel-private) / median(sequential).
    pub private_over_sequential_median: f64,
}

/// Every version at one array size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SizeResult {
    /// Rows (= columns).
    pub rows: usize,
    /// Columns.
    pub cols: usize,
    /// Bytes of one array.
    pub bytes_per_array: u64,
    /// Repetitions of the loop over the arrays in each function.
    pub repetitions: u64,
    /// Sequential version (function 1 then function 2 on one CPU).
    pub sequential: Durations,
    /// Parallel versions, one entry per available placement.
    pub parallel: Vec<ParallelResult>,
}

/// The false-sharing variant under one placement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FalseSharingResult {
    /// Placement name.
    pub placement: PlacementKind,
    /// The two threads' CPUs (`null` when the OS chooses).
    pub cpus: Option<[u32; 2]>,
    /// Both counters on one cache line.
    pub same_line: Durations,
    /// Each counter on its own 128-byte block.
    pub separate_lines: Durations,
    /// Median(same line) / median(separate lines).
    pub slowdown_median: f64,
    /// WCET(same line) / WCET(separate lines).
    pub slowdown_wcet: f64,
}

/// The largest slowdown of the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Worst {
    /// Array dimension (ROWS = COLS).
    pub rows: usize,
    /// Placement.
    pub placement: PlacementKind,
    /// WCET(parallel-shared) / WCET(sequential).
    pub shared_over_sequential_wcet: f64,
}

/// One counter of gracioli Fig. 9 as this run counted it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fig9Counter {
    /// `l2-request-i`, ...
    pub key: String,
    /// The figure's label.
    pub label: String,
    /// The vendor's event on this CPU (empty if the CPU is not in the table).
    pub vendor_name: String,
    /// The event's name in `counters` of the header, if it has an encoding.
    pub counter: Option<String>,
    /// Why it has no encoding here, if it has none.
    pub unresolved: Option<String>,
}

/// Every ordering the report states, measured on medians, and whether it held.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ordering {
    /// Array dimension.
    pub rows: usize,
    /// Placement.
    pub placement: PlacementKind,
    /// `parallel-shared > parallel-private` (the cost of coherence).
    pub shared_slower_than_private: bool,
    /// `parallel-private < sequential` (two CPUs beat one; not expected
    /// on one CPU).
    pub private_faster_than_sequential: bool,
}

/// The result of `tinct bench coherence` (written as `coherence.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Bench, options, machine (the harness's common header).
    #[serde(flatten)]
    pub header: RunHeader,
    /// Parameters.
    pub parameters: Parameters,
    /// Scheduling policy and machine load during the run.
    pub run_conditions: RunConditions,
    /// Every placement of the paper, with its CPUs or why it was skipped.
    pub placements: Vec<Placement>,
    /// One entry per array size, ascending.
    pub sizes: Vec<SizeResult>,
    /// The false-sharing variant, one entry per available placement.
    pub false_sharing: Vec<FalseSharingResult>,
    /// The largest parallel-shared slowdown over all sizes and placements.
    pub worst: Option<Worst>,
    /// The orderings of the medians at each size and placement.
    pub orderings: Vec<Ordering>,
    /// The machine (from `/proc/cpuinfo`) and how the Fig. 9 events were encoded.
    pub fig9_machine: String,
    /// The counters of gracioli Fig. 9, counted per condition (their
    /// totals are in `counters`).
    pub fig9: Vec<Fig9Counter>,
    /// Caveats for the reader.
    pub notes: Vec<String>,
    /// Files written.
    pub files: Vec<String>,
}

const QUICK_SIZES: [usize; 2] = [64, 512];
const FULL_SIZES: [usize; 6] = [64, 128, 256, 512, 1024, 2048];
const WARMUP_ROUNDS: u32 = 1;
/// Element updates per function per run of the quick mode: long enough
/// (a few ms) that thread start-up and wake-up skew do not decide the
/// orderings (see the README for how this was checked).
const QUICK_WORK: u64 = 1 << 21;
/// Repetitions of the quick mode.
const QUICK_REPS: u32 = 5;

/// The validated parameters and the machine's placements: what to measure.
struct Plan {
    /// Quick, reps, seed, and the CPUs (the sequential version's first).
    run: RunSettings,
    sizes: Vec<usize>,
    loops: Loops,
    increments: u64,
    fifo: Option<u8>,
    placements: Vec<Placement>,
    fig9: tinct_sys::perf::coherence::Fig9Events,
}

/// How many times a run goes over the arrays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Loops {
    /// The same element updates per function at every size.
    EqualWork(u64),
    /// The paper's fixed repetition count.
    Fixed(u64),
}

impl Loops {
    /// Repetitions of the loop over `elements` elements.
    fn repetitions(self, elements: usize) -> u64 {
        match self {
            Loops::EqualWork(work) => (work / elements as u64).max(1),
            Loops::Fixed(repetitions) => repetitions,
        }
    }
}

/// Runs the bench, writes `coherence.json`, `coherence.csv` and two SVG
/// plots into the output directory, and returns the report with its summary.
pub fn run(params: &Params, progress: &dyn Progress) -> Result<Finished<Report>> {
    let plan = plan(params)?;
    crate::harness::interleaved::start_rounds();
    let measured = measure::measure(&plan, progress)?;
    let mut report = assemble(plan, measured);
    report.header.record_rounds(progress.stop_requested());
    report::write(&mut report, &params.common)?;
    let mut summary = report::summary(&report);
    summary.interruption(&report.header, &params.common.out_dir("coherence"));
    Ok(Finished {
        summary,
        result: report,
    })
}

/// Checks the parameters and finds the placements this machine offers.
fn plan(params: &Params) -> Result<Plan> {
    let common = &params.common;
    let quick = common.quick;
    let reps = common.reps_or(QUICK_REPS, 10)?;
    let sizes = match &params.sizes {
        Some(sizes) => sizes.clone(),
        None if quick => QUICK_SIZES.to_vec(),
        None => FULL_SIZES.to_vec(),
    };
    if let Some(bad) = sizes.iter().find(|&&s| s == 0 || s > 16384) {
        return Err(Error::InvalidInput(format!(
            "--sizes: expected array dimensions in 1..=16384, found {bad}"
        )));
    }
    let loops = match (params.work, params.repetitions) {
        (Some(_), Some(_)) => {
            return Err(Error::InvalidInput(
                "--work and --repetitions: expected one of them, found both".into(),
            ));
        }
        (_, Some(0)) => {
            return Err(Error::InvalidInput(
                "--repetitions: expected at least 1, found 0".into(),
            ));
        }
        (_, Some(repetitions)) => Loops::Fixed(repetitions),
        (Some(work), None) => Loops::EqualWork(work),
        (None, None) => Loops::EqualWork(if quick { QUICK_WORK } else { 1 << 24 }),
    };
    let increments = params
        .increments
        .unwrap_or(if quick { 1 << 20 } else { 1 << 25 });
    if loops == Loops::EqualWork(0) || increments == 0 {
        return Err(Error::InvalidInput(
            "--work and --increments: expected at least 1, found 0".into(),
        ));
    }
    let cpus = common.cpus(1)?;
    let topology = tinct_sys::topology::Topology::read(&tinct_sys::SysRoot::live())?;
    let placements = placement::placements(&topology, &cpus);
    let fig9 = tinct_sys::perf::coherence::resolve(&tinct_sys::SysRoot::live())?;
    Ok(Plan {
        run: common.settings(reps, cpus),
        sizes,
        loops,
        increments,
        fifo: params.fifo,
        placements,
        fig9,
    })
}

/// The report of a measured plan: the worst slowdown and the notes.
fn assemble(plan: Plan, measured: measure::Measured) -> Report {
    let machine = Machine::describe();
    let worst = measured
        .sizes
        .iter()
        .flat_map(|s| s.parallel.iter().map(move |p| (s.rows, p)))
        .max_by(|a, b| {
            a.1.shared_over_sequential_wcet
                .total_cmp(&b.1.shared_over_sequential_wcet)
        })
        .map(|(rows, p)| Worst {
            rows,
            placement: p.placement,
            shared_over_sequential_wcet: p.shared_over_sequential_wcet,
        });
    let mut notes: Vec<String> = plan
        .placements
        .iter()
        .filter_map(|p| {
            p.skipped
                .as_ref()
                .map(|why| format!("placement {} skipped: {why}", p.kind.name()))
        })
        .collect();
    if machine.virtualized == Some(true) {
        notes.push(
            "virtual machine: vCPUs may share physical cores or be descheduled by the host, so \
             placements are guest placements only"
                .into(),
        );
    }
    if plan.run.cpus.len() < 2 {
        notes.push("one CPU: the parallel versions cannot run in parallel".into());
    }
    notes.extend(measured.run_conditions.notes(machine.online_cpus.len()));
    let orderings = measured
        .sizes
        .iter()
        .flat_map(|s| {
            s.parallel.iter().map(|p| Ordering {
                rows: s.rows,
                placement: p.placement,
                shared_slower_than_private: p.shared.median > p.private.median,
                private_faster_than_sequential: p.private.median < s.sequential.median,
            })
        })
        .collect();
    let fig9 = plan
        .fig9
        .events
        .iter()
        .map(|r| Fig9Counter {
            key: r.event.key().into(),
            label: r.event.label().into(),
            vendor_name: r.vendor_name.clone(),
            counter: r.counter.as_ref().ok().map(|c| c.name.clone()),
            unresolved: r.counter.as_ref().err().cloned(),
        })
        .collect();
    let fig9_machine = format!(
        "{}; encoded with {}",
        plan.fig9
            .microarchitecture
            .clone()
            .unwrap_or_else(|| "a CPU outside the Fig. 9 table".into()),
        plan.fig9.encoded_with
    );
    let (work_per_function, fixed_repetitions) = match plan.loops {
        Loops::EqualWork(work) => (Some(work), None),
        Loops::Fixed(repetitions) => (None, Some(repetitions)),
    };
    Report {
        parameters: Parameters {
            sizes: plan.sizes,
            work_per_function,
            fixed_repetitions,
            element_bytes: 8,
            false_sharing_increments: plan.increments,
            warmup_rounds: WARMUP_ROUNDS,
            sequential_cpu: plan.run.cpus[0],
        },
        header: RunHeader::of_run("coherence", plan.run, machine, measured.counters),
        run_conditions: measured.run_conditions,
        placements: plan.placements,
        sizes: measured.sizes,
        false_sharing: measured.false_sharing,
        worst,
        orderings,
        fig9_machine,
        fig9,
        notes,
        files: Vec::new(),
    }
}
