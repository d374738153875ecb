//! Measuring `tinct bench coherence`: the versions of each array size and
//! the false-sharing variant, interleaved.

use super::kernels::{self, ArrayPair, Function, Padded, SameLine};
use super::placement::Placement;
use super::plan::{Loops, Plan};
use super::report::ApplicationResult;
use super::{FalseSharingResult, ParallelResult, SizeResult, WARMUP_ROUNDS};
use crate::harness::Ratio;
use crate::harness::counters::{default_events, prefixed};
use crate::harness::{ConditionCounters, Interleaved, Progress};
use crate::pinned_threads::{Job, run_together};
use crate::scheduling_and_load::RunConditions;
use crate::{Error, Result};
use tinct_sys::perf::CounterEvent;

/// What [`measure`] found.
pub struct Measured {
    pub sizes: Vec<SizeResult>,
    pub false_sharing: Vec<FalseSharingResult>,
    pub run_conditions: RunConditions,
    /// Counter totals per condition (`ROWSxCOLS/condition`,
    /// `false-sharing/placement/layout`).
    pub counters: Vec<ConditionCounters>,
}

/// Every size, then the false-sharing variant, under every available placement.
pub(super) fn measure(plan: &Plan, progress: &dyn Progress) -> Result<Measured> {
    let available: Vec<&Placement> = plan.placements.iter().filter(|p| p.available()).collect();
    let conditions_per_size = 1 + 2 * available.len() as u64 + APPLICATIONS.len() as u64;
    let total = u64::from(plan.run.reps + WARMUP_ROUNDS)
        * (conditions_per_size * plan.sizes.len() as u64 + 2 * available.len() as u64);
    progress.start(total, "coherence");
    let mut run_conditions = RunConditions::start(plan.fifo)?;
    let mut events = default_events();
    events.extend(plan.fig9.counters());
    let setup = Setup {
        reps: plan.run.reps,
        loops: plan.loops,
        events,
        increments: plan.increments,
        sequential_cpu: plan.run.cpus[0],
        allowed: plan.run.cpus.clone(),
        fifo: plan.fifo,
        progress,
    };
    let mut sizes = Vec::with_capacity(plan.sizes.len());
    let mut counters = Vec::new();
    // Ctrl-C: the sizes and placements measured so far are the result.
    for (index, &rows) in plan.sizes.iter().enumerate() {
        if progress.stop_requested() {
            break;
        }
        progress.set_message(&format!("{rows}x{rows}"));
        let seed = plan.run.seed.wrapping_add(index as u64);
        let Some((size, totals)) = measure_size(rows, seed, &available, &setup)? else {
            break;
        };
        sizes.push(size);
        counters.extend(prefixed(&format!("{rows}x{rows}/"), &totals));
    }
    progress.set_message("false sharing");
    let mut false_sharing = Vec::with_capacity(available.len());
    for (index, placement) in available.iter().enumerate() {
        if progress.stop_requested() {
            break;
        }
        let seed = plan.run.seed.wrapping_add(1000 + index as u64);
        let Some((result, totals)) = measure_false_sharing(placement, seed, &setup)? else {
            break;
        };
        false_sharing.push(result);
        let prefix = format!("false-sharing/{}/", placement.kind.name());
        counters.extend(prefixed(&prefix, &totals));
    }
    progress.finish();
    run_conditions.finish();
    Ok(Measured {
        sizes,
        false_sharing,
        run_conditions,
        counters,
    })
}

/// What every measurement of a run shares.
struct Setup<'a> {
    reps: u32,
    loops: Loops,
    /// Counted per condition: the harness's default events and Fig. 9's.
    events: Vec<CounterEvent>,
    increments: u64,
    sequential_cpu: u32,
    /// The CPUs the run may use (where the OS places whole applications).
    allowed: Vec<u32>,
    fifo: Option<u8>,
    progress: &'a dyn Progress,
}

/// The conditions of one size: sequential, shared and private per
/// placement, then the three versions as whole applications.
#[derive(Debug, Clone, Copy)]
enum Condition {
    Sequential,
    Shared(usize),
    Private(usize),
    Application(Version),
}

/// One of gracioli's three applications (Figure 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Version {
    Sequential,
    ParallelShared,
    ParallelPrivate,
}

/// The versions timed as whole applications, in their order of conditions.
const APPLICATIONS: [(Version, &str); 3] = [
    (Version::Sequential, "application/sequential"),
    (Version::ParallelShared, "application/parallel-shared"),
    (Version::ParallelPrivate, "application/parallel-private"),
];

fn measure_size(
    rows: usize,
    seed: u64,
    placements: &[&Placement],
    setup: &Setup<'_>,
) -> Result<Option<(SizeResult, Vec<ConditionCounters>)>> {
    let elements = rows * rows;
    let repetitions = setup.loops.repetitions(elements);
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
    let first_application = conditions.len();
    for (version, name) in APPLICATIONS {
        conditions.push(Condition::Application(version));
        names.push(name.to_string());
    }
    let samples = Interleaved::new(names, setup.reps)
        .warmup(WARMUP_ROUNDS)
        .seed(seed)
        .counting(setup.events.clone())
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
            Condition::Application(version) => {
                run_application(version, elements, repetitions, setup)
            }
        })?;
    if samples.rounds_completed == 0 {
        return Ok(None); // stopped before its first round ended
    }
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
            shared_over_sequential: Ratio::of(&shared, &sequential),
            private_over_sequential: Ratio::of(&private, &sequential),
            shared,
            private,
        });
    }
    let (app_sequential, app_shared, app_private) = (
        stats(first_application)?,
        stats(first_application + 1)?,
        stats(first_application + 2)?,
    );
    let application = ApplicationResult {
        shared_over_sequential: Ratio::of(&app_shared, &app_sequential),
        private_over_sequential: Ratio::of(&app_private, &app_sequential),
        sequential: app_sequential,
        shared: app_shared,
        private: app_private,
    };
    let result = SizeResult {
        rows,
        cols: rows,
        bytes_per_array: elements as u64 * 8,
        repetitions,
        sequential,
        parallel,
        application,
    };
    Ok(Some((result, samples.counters)))
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

/// One of the three applications timed whole, as `time` timed gracioli's
/// runs (Fig. 4(a)), process start and exit aside: its arrays mapped and
/// written with zeros (a page fault per page), its threads created (one
/// for the sequential version), placed by the OS on the allowed CPUs under
/// the run's policy and joined, and its arrays unmapped, all inside the
/// timed region.
fn run_application(
    version: Version,
    elements: usize,
    repetitions: u64,
    setup: &Setup<'_>,
) -> Result<u64> {
    let started = std::time::Instant::now();
    // One thread per entry, placed by the OS: its functions in order, on its arrays.
    let run = |threads: Vec<(&ArrayPair, &[Function])>| {
        let jobs = threads
            .into_iter()
            .map(|input| Job {
                cpus: setup.allowed.clone(),
                input,
            })
            .collect();
        run_together(jobs, setup.fifo, |_, (arrays, functions)| {
            for &function in functions {
                kernels::run_function(arrays, function, repetitions);
            }
        })
        .map(drop)
    };
    const FIRST: &[Function] = &[Function::First];
    const SECOND: &[Function] = &[Function::Second];
    match version {
        Version::Sequential => {
            let arrays = ArrayPair::mapped(elements)?;
            run(vec![(&arrays, &[Function::First, Function::Second])])?;
            drop(arrays);
        }
        Version::ParallelShared => {
            let arrays = ArrayPair::mapped(elements)?;
            run(vec![(&arrays, FIRST), (&arrays, SECOND)])?;
            drop(arrays);
        }
        Version::ParallelPrivate => {
            let own = [ArrayPair::mapped(elements)?, ArrayPair::mapped(elements)?];
            run(vec![(&own[0], FIRST), (&own[1], SECOND)])?;
            drop(own);
        }
    }
    Ok(crate::pinned_threads::nanos(started.elapsed()))
}

fn measure_false_sharing(
    placement: &Placement,
    seed: u64,
    setup: &Setup<'_>,
) -> Result<Option<(FalseSharingResult, Vec<ConditionCounters>)>> {
    let (increments, fifo) = (setup.increments, setup.fifo);
    let line = SameLine::default();
    let padded = [Padded::default(), Padded::default()];
    let samples = Interleaved::new(["same-line", "separate-lines"], setup.reps)
        .warmup(WARMUP_ROUNDS)
        .seed(seed)
        .counting(setup.events.clone())
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
    if samples.rounds_completed == 0 {
        return Ok(None); // stopped before its first round ended
    }
    let (same_line, separate_lines) = match (samples.stats(0), samples.stats(1)) {
        (Some(a), Some(b)) => (a, b),
        _ => return Err(Error::Measurement("false sharing: no samples".into())),
    };
    let result = FalseSharingResult {
        placement: placement.kind,
        cpus: placement.cpus,
        slowdown: Ratio::of(&same_line, &separate_lines),
        same_line,
        separate_lines,
    };
    Ok(Some((result, samples.counters)))
}
