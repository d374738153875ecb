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

pub mod kernels;
pub mod placement;

use crate::scheduling_and_load::RunConditions;
use crate::harness::schema::Kind;
use crate::harness::{
    BenchOptions, Durations, Interleaved, LineChart, Machine, OutputDir, Progress, RunHeader,
    Series, SeriesStyle, Summary,
};
use crate::pinned_threads::{Job, run_together};
use crate::{Error, Result};
use kernels::{ArrayPair, Function, Padded, SameLine};
use placement::{Placement, PlacementKind};
use serde::Serialize;

/// Options of `tinct bench coherence`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// Common bench options.
    #[command(flatten)]
    pub common: BenchOptions,
    /// Array dimensions to sweep (ROWS = COLS), e.g. `64,256,1024`
    /// (default 64..2048 as in the paper; `--quick`: 64,512).
    #[arg(long, value_delimiter = ',', value_name = "N,...")]
    pub sizes: Option<Vec<usize>>,
    /// Element updates per function per run; the repetition loop count of a
    /// size is this divided by ROWS x COLS (default 2^24; `--quick`: 2^19).
    #[arg(long, value_name = "N")]
    pub work: Option<u64>,
    /// Run the measuring threads under SCHED_FIFO with this priority
    /// (1-99; needs root or CAP_SYS_NICE). Recommended on a busy machine.
    #[arg(long, value_name = "PRIORITY")]
    pub fifo: Option<u8>,
    /// Increments per thread in the false-sharing variant
    /// (default 2^25; `--quick`: 2^20).
    #[arg(long, value_name = "N")]
    pub increments: Option<u64>,
}

/// The measured parameters of a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Parameters {
    /// Array dimensions swept (ROWS = COLS).
    pub sizes: Vec<usize>,
    /// Element updates per function per run.
    pub work_per_function: u64,
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
#[derive(Debug, Clone, PartialEq, Serialize)]
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
#[derive(Debug, Clone, PartialEq, Serialize)]
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
#[derive(Debug, Clone, PartialEq, Serialize)]
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
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Worst {
    /// Array dimension (ROWS = COLS).
    pub rows: usize,
    /// Placement.
    pub placement: PlacementKind,
    /// WCET(parallel-shared) / WCET(sequential).
    pub shared_over_sequential_wcet: f64,
}

/// The result of `tinct bench coherence` (written as `coherence.json`).
#[derive(Debug, Clone, Serialize)]
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
    /// Caveats for the reader.
    pub notes: Vec<String>,
    /// Files written.
    pub files: Vec<String>,
}

/// The JSON fields `coherence.json` must have, beyond
/// [`crate::harness::schema::COMMON`].
pub const SCHEMA: &[(&str, Kind)] = &[
    ("parameters.sizes", Kind::Array),
    ("parameters.work_per_function", Kind::Unsigned),
    ("parameters.sequential_cpu", Kind::Unsigned),
    ("placements[].kind", Kind::String),
    ("placements[].allowed", Kind::Array),
    ("placements[].skipped", Kind::StringOrNull),
    ("sizes[].rows", Kind::Unsigned),
    ("sizes[].bytes_per_array", Kind::Unsigned),
    ("sizes[].repetitions", Kind::Unsigned),
    ("sizes[].sequential", Kind::Object),
    ("sizes[].parallel[].placement", Kind::String),
    ("sizes[].parallel[].shared", Kind::Object),
    ("sizes[].parallel[].private", Kind::Object),
    (
        "sizes[].parallel[].shared_over_sequential_wcet",
        Kind::Number,
    ),
    (
        "sizes[].parallel[].private_over_sequential_wcet",
        Kind::Number,
    ),
    ("false_sharing[].placement", Kind::String),
    ("false_sharing[].same_line", Kind::Object),
    ("false_sharing[].separate_lines", Kind::Object),
    ("false_sharing[].slowdown_median", Kind::Number),
    ("run_conditions", Kind::Object),
    ("run_conditions.load_average_start", Kind::NumberOrNull),
    ("notes", Kind::Array),
    ("files", Kind::Array),
];

const QUICK_SIZES: [usize; 2] = [64, 512];
const FULL_SIZES: [usize; 6] = [64, 128, 256, 512, 1024, 2048];
const WARMUP_ROUNDS: u32 = 1;

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}

/// Runs the bench, writes `coherence.json`, `coherence.csv` and two SVG
/// plots into the output directory, and returns the report.
pub fn run(args: &Args) -> Result<Report> {
    let common = &args.common;
    let quick = common.quick;
    let reps = common.reps_or(3, 10)?;
    let sizes = match &args.sizes {
        Some(sizes) => sizes.clone(),
        None if quick => QUICK_SIZES.to_vec(),
        None => FULL_SIZES.to_vec(),
    };
    if let Some(bad) = sizes.iter().find(|&&s| s == 0 || s > 16384) {
        return Err(Error::InvalidInput(format!(
            "--sizes: expected array dimensions in 1..=16384, found {bad}"
        )));
    }
    let work = args.work.unwrap_or(if quick { 1 << 19 } else { 1 << 24 });
    let increments = args
        .increments
        .unwrap_or(if quick { 1 << 20 } else { 1 << 25 });
    if work == 0 || increments == 0 {
        return Err(Error::InvalidInput(
            "--work and --increments: expected at least 1, found 0".into(),
        ));
    }
    let cpus = common.cpus(1)?;
    let topology = tinct_sys::topology::Topology::read(&tinct_sys::SysRoot::live())?;
    let placements = placement::placements(&topology, &cpus);
    let available: Vec<&Placement> = placements.iter().filter(|p| p.available()).collect();
    let machine = Machine::describe();
    let parameters = Parameters {
        sizes: sizes.clone(),
        work_per_function: work,
        element_bytes: 8,
        false_sharing_increments: increments,
        warmup_rounds: WARMUP_ROUNDS,
        sequential_cpu: cpus[0],
    };

    let conditions_per_size = 1 + 2 * available.len() as u64;
    let total = u64::from(reps + WARMUP_ROUNDS)
        * (conditions_per_size * sizes.len() as u64 + 2 * available.len() as u64);
    let progress = Progress::new(total, "coherence", !common.no_progress);
    let mut run_conditions = RunConditions::start(args.fifo)?;
    let setup = Setup {
        reps,
        work,
        increments,
        sequential_cpu: cpus[0],
        fifo: args.fifo,
        progress: &progress,
    };
    let mut size_results = Vec::with_capacity(sizes.len());
    for (index, &rows) in sizes.iter().enumerate() {
        progress.set_message(format!("{rows}x{rows}"));
        let seed = common.seed.wrapping_add(index as u64);
        size_results.push(measure_size(rows, seed, &available, &setup)?);
    }
    progress.set_message("false sharing");
    let mut false_sharing = Vec::with_capacity(available.len());
    for (index, placement) in available.iter().enumerate() {
        let seed = common.seed.wrapping_add(1000 + index as u64);
        false_sharing.push(measure_false_sharing(placement, seed, &setup)?);
    }
    progress.finish();
    run_conditions.finish();

    let worst = size_results
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
    let mut notes: Vec<String> = placements
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
    if cpus.len() < 2 {
        notes.push("one CPU: the parallel versions cannot run in parallel".into());
    }
    notes.extend(run_conditions.notes(machine.online_cpus.len()));
    let mut report = Report {
        header: RunHeader {
            bench: "coherence".into(),
            quick,
            reps,
            seed: common.seed,
            cpus,
            machine,
        },
        parameters,
        run_conditions,
        placements,
        sizes: size_results,
        false_sharing,
        worst,
        notes,
        files: Vec::new(),
    };
    write_outputs(&mut report, common)?;
    Ok(report)
}

/// What every measurement of a run shares.
struct Setup<'a> {
    reps: u32,
    work: u64,
    increments: u64,
    sequential_cpu: u32,
    fifo: Option<u8>,
    progress: &'a Progress,
}

/// The conditions of one size: sequential, then shared and private per placement.
#[derive(Debug, Clone, Copy)]
enum Condition {
    Sequential,
    Shared(usize),
    Private(usize),
}

fn measure_size(
    rows: usize,
    seed: u64,
    placements: &[&Placement],
    setup: &Setup<'_>,
) -> Result<SizeResult> {
    let elements = rows * rows;
    let repetitions = (setup.work / elements as u64).max(1);
    let fifo = setup.fifo;
    let shared = ArrayPair::zeroed(elements);
    let private = [ArrayPair::zeroed(elements), ArrayPair::zeroed(elements)];
    let mut conditions = vec![Condition::Sequential];
    let mut names = vec!["sequential".to_string()];
    for (i, p) in placements.iter().enumerate() {
        conditions.push(Condition::Shared(i));
        names.push(format!("parallel-shared/{}", p.kind.name()));
        conditions.push(Condition::Private(i));
        names.push(format!("parallel-private/{}", p.kind.name()));
    }
    let samples = Interleaved::new(names, setup.reps)
        .warmup(WARMUP_ROUNDS)
        .seed(seed)
        .run(setup.progress, |c| match conditions[c] {
            Condition::Sequential => run_together(
                vec![Job {
                    cpus: vec![setup.sequential_cpu],
                    input: (),
                }],
                fifo,
                |_, ()| {
                    kernels::run_function(&shared, Function::First, repetitions);
                    kernels::run_function(&shared, Function::Second, repetitions);
                },
            )
            .map(|t| t.elapsed_ns),
            Condition::Shared(p) => run_pair(placements[p], [&shared, &shared], repetitions, fifo),
            Condition::Private(p) => {
                run_pair(placements[p], [&private[0], &private[1]], repetitions, fifo)
            }
        })?;
    let stats = |c: usize| {
        samples
            .stats(c)
            .ok_or_else(|| Error::Measurement(format!("no samples for {}", samples.conditions[c])))
    };
    let sequential = stats(0)?;
    let mut parallel = Vec::with_capacity(placements.len());
    for (i, p) in placements.iter().enumerate() {
        let (shared, private) = (stats(1 + 2 * i)?, stats(2 + 2 * i)?);
        parallel.push(ParallelResult {
            placement: p.kind,
            cpus: p.cpus,
            shared_over_sequential_wcet: ratio(shared.max, sequential.max),
            private_over_sequential_wcet: ratio(private.max, sequential.max),
            shared_over_sequential_median: ratio(shared.median, sequential.median),
            private_over_sequential_median: ratio(private.median, sequential.median),
            shared,
            private,
        });
    }
    Ok(SizeResult {
        rows,
        cols: rows,
        bytes_per_array: elements as u64 * 8,
        repetitions,
        sequential,
        parallel,
    })
}

/// Function 1 on thread 0 with `arrays[0]`, function 2 on thread 1 with
/// `arrays[1]`, placed by `placement`; the time from first start to last end.
fn run_pair(
    placement: &Placement,
    arrays: [&ArrayPair; 2],
    repetitions: u64,
    fifo: Option<u8>,
) -> Result<u64> {
    let jobs = vec![
        Job {
            cpus: placement.cpus_of(0),
            input: (arrays[0], Function::First),
        },
        Job {
            cpus: placement.cpus_of(1),
            input: (arrays[1], Function::Second),
        },
    ];
    run_together(jobs, fifo, |_, (arrays, function)| {
        kernels::run_function(arrays, function, repetitions)
    })
    .map(|t| t.elapsed_ns)
}

fn measure_false_sharing(
    placement: &Placement,
    seed: u64,
    setup: &Setup<'_>,
) -> Result<FalseSharingResult> {
    let (increments, fifo) = (setup.increments, setup.fifo);
    let line = SameLine::default();
    let padded = [Padded::default(), Padded::default()];
    let samples = Interleaved::new(["same-line", "separate-lines"], setup.reps)
        .warmup(WARMUP_ROUNDS)
        .seed(seed)
        .run(setup.progress, |c| {
            let counters = if c == 0 {
                [&line.counters[0], &line.counters[1]]
            } else {
                [&padded[0].counter, &padded[1].counter]
            };
            let jobs = (0..2)
                .map(|i| Job {
                    cpus: placement.cpus_of(i),
                    input: counters[i],
                })
                .collect();
            run_together(jobs, fifo, |_, counter| kernels::count(counter, increments))
                .map(|t| t.elapsed_ns)
        })?;
    let (same_line, separate_lines) = match (samples.stats(0), samples.stats(1)) {
        (Some(a), Some(b)) => (a, b),
        _ => return Err(Error::Measurement("false sharing: no samples".into())),
    };
    Ok(FalseSharingResult {
        placement: placement.kind,
        cpus: placement.cpus,
        slowdown_median: ratio(same_line.median, separate_lines.median),
        slowdown_wcet: ratio(same_line.max, separate_lines.max),
        same_line,
        separate_lines,
    })
}

/// One CSV row: one condition at one size.
#[derive(Debug, Serialize)]
struct CsvRow {
    rows: usize,
    variant: &'static str,
    placement: &'static str,
    count: u64,
    min_ns: u64,
    median_ns: u64,
    p99_ns: u64,
    wcet_ns: u64,
    stddev_ns: u64,
    wcet_over_sequential: f64,
}

fn csv_rows(report: &Report) -> Vec<CsvRow> {
    let mut rows = Vec::new();
    for size in &report.sizes {
        let row = |variant, placement, s: &Durations, r| CsvRow {
            rows: size.rows,
            variant,
            placement,
            count: s.count,
            min_ns: s.min,
            median_ns: s.median,
            p99_ns: s.p99,
            wcet_ns: s.max,
            stddev_ns: s.stddev.round() as u64,
            wcet_over_sequential: r,
        };
        rows.push(row("sequential", "", &size.sequential, 1.0));
        for p in &size.parallel {
            let name = p.placement.name();
            rows.push(row(
                "parallel-shared",
                name,
                &p.shared,
                p.shared_over_sequential_wcet,
            ));
            rows.push(row(
                "parallel-private",
                name,
                &p.private,
                p.private_over_sequential_wcet,
            ));
        }
    }
    rows
}

fn charts(report: &Report) -> (LineChart, LineChart) {
    let mut wcet = LineChart::new(
        "Gracioli benchmark: WCET per version (ms)",
        "array dimension (ROWS = COLS)",
        "WCET (ms)",
    );
    wcet.log2_x = true;
    let ms = |ns: u64| ns as f64 / 1e6;
    wcet.series.push(Series::new(
        "sequential",
        SeriesStyle::LineWithMarkers,
        report
            .sizes
            .iter()
            .map(|s| (s.rows as f64, ms(s.sequential.max)))
            .collect(),
    ));
    let mut slowdown = LineChart::new(
        "Parallel-shared WCET / sequential WCET",
        "array dimension (ROWS = COLS)",
        "slowdown (x)",
    );
    slowdown.log2_x = true;
    let placements: Vec<PlacementKind> = report
        .sizes
        .first()
        .map(|s| s.parallel.iter().map(|p| p.placement).collect())
        .unwrap_or_default();
    for kind in placements {
        let points = |pick: &dyn Fn(&ParallelResult) -> f64| -> Vec<(f64, f64)> {
            report
                .sizes
                .iter()
                .filter_map(|s| {
                    let p = s.parallel.iter().find(|p| p.placement == kind)?;
                    Some((s.rows as f64, pick(p)))
                })
                .collect()
        };
        wcet.series.push(Series::new(
            format!("shared, {}", kind.name()),
            SeriesStyle::LineWithMarkers,
            points(&|p| ms(p.shared.max)),
        ));
        wcet.series.push(Series::new(
            format!("private, {}", kind.name()),
            SeriesStyle::Dashed,
            points(&|p| ms(p.private.max)),
        ));
        slowdown.series.push(Series::new(
            kind.name(),
            SeriesStyle::LineWithMarkers,
            points(&|p| p.shared_over_sequential_wcet),
        ));
    }
    let first = report.sizes.first().map_or(1.0, |s| s.rows as f64);
    let last = report.sizes.last().map_or(1.0, |s| s.rows as f64);
    slowdown.series.push(Series::new(
        "1x (no slowdown)",
        SeriesStyle::Dashed,
        vec![(first, 1.0), (last, 1.0)],
    ));
    (wcet, slowdown)
}

fn write_outputs(report: &mut Report, common: &BenchOptions) -> Result<()> {
    let mut out = OutputDir::create(common.out_dir("coherence"))?;
    out.write_csv("coherence.csv", &csv_rows(report))?;
    let (wcet, slowdown) = charts(report);
    out.write_svg("coherence-wcet.svg", &wcet)?;
    out.write_svg("coherence-slowdown.svg", &slowdown)?;
    report.files = out.files_with("coherence.json");
    out.write_json("coherence.json", report)?;
    Ok(())
}

impl Report {
    /// The one-screen summary.
    pub fn summary(&self) -> Summary {
        let mut s = Summary::new("tinct bench coherence (Gracioli et al. 2011)");
        s.fact("machine", self.header.machine.one_line());
        s.fact(
            "runs",
            format!(
                "{} per condition (+{} warm-up), interleaved; WCET = largest run",
                self.header.reps, self.parameters.warmup_rounds
            ),
        );
        if let Some(w) = &self.worst {
            s.fact(
                "worst slowdown",
                format!(
                    "{:.2}x parallel-shared vs sequential WCET at {}x{}, {}",
                    w.shared_over_sequential_wcet,
                    w.rows,
                    w.rows,
                    w.placement.name()
                ),
            );
        }
        for f in &self.false_sharing {
            s.fact(
                format!("false sharing, {}", f.placement.name()),
                format!(
                    "{:.2}x (median {} vs {} ms)",
                    f.slowdown_median,
                    ms(f.same_line.median),
                    ms(f.separate_lines.median)
                ),
            );
        }
        s.table(&[
            "size",
            "placement",
            "seq WCET ms",
            "shared WCET ms",
            "private WCET ms",
            "shared/seq WCET",
            "private/seq WCET",
            "shared/seq median",
        ]);
        for size in &self.sizes {
            for p in &size.parallel {
                s.row(vec![
                    format!("{}x{}", size.rows, size.cols),
                    p.placement.name().into(),
                    ms(size.sequential.max),
                    ms(p.shared.max),
                    ms(p.private.max),
                    format!("{:.2}", p.shared_over_sequential_wcet),
                    format!("{:.2}", p.private_over_sequential_wcet),
                    format!("{:.2}", p.shared_over_sequential_median),
                ]);
            }
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
