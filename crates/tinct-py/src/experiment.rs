//! The studies (tinct-core's `experiment`): the random study, by shard,
//! with its merge and its files, and kim2013 Figures 11-13; and the
//! random task-set generator they draw from.

use crate::errors::{BadInput, Stopped, bad_argument, failed};
use crate::json::{from_python, to_python};
use crate::stop::stop_after;
use crate::taskset::PyTaskSet;
use crate::units::{count, duration, number, size};
use pyo3::prelude::*;
use std::path::PathBuf;
use tinct_core::experiment::random::{MergeError, Params, Point, Shard, ShardFile, merge};
use tinct_core::experiment::study::RandomStudy;
use tinct_core::experiment::{Hooks, kim2013, parallel};
use tinct_core::generate::{RandomParams, random_task_set, rng_for};
use tinct_report::schedulability;

/// The parameters of a random study, checked (what `params.json` holds).
///
/// Every argument is the option of `tinct experiment random` of the same
/// name, with the same default: n = 8 tasks, N_C = 4 cores, N_P = 32
/// partitions, M_total = 1 GiB, Δ = 45.3 µs, periods 10 ms to 1 s, task
/// memory 1 to 64 MiB, σ_max = 0.5 (the generator's defaults, tinct-core's
/// `RandomParams::default`), utilization 2.0 to 5.0 by 0.25, 100 sets per
/// point, seed 1, 20 000 search nodes per MinCacheAlloc call
/// (`node_budget=0`: no budget, an exhaustive search, as everywhere).
/// Durations and sizes are strings with units ("10ms", "64MiB") or whole
/// ns / bytes. Raises `BadInput` for a study tinct refuses (a `memory`
/// below one byte per partition included), with the values found, and for
/// an argument of the wrong type or out of range (`crate::units`), naming
/// it.
#[pyfunction]
#[pyo3(signature = (*, tasks = None, cores = None, partitions = None, memory = None, refill = None, period_min = None, period_max = None, task_memory_min = None, task_memory_max = None, sensitivity_max = None, util_min = None, util_max = None, util_step = None, sets = None, seed = None, node_budget = None), text_signature = "(*, tasks=None, cores=None, partitions=None, memory=None, refill=None, period_min=None, period_max=None, task_memory_min=None, task_memory_max=None, sensitivity_max=None, util_min=2.0, util_max=5.0, util_step=0.25, sets=100, seed=1, node_budget=None)")]
#[allow(clippy::too_many_arguments)]
pub(crate) fn random_params<'py>(
    py: Python<'py>,
    tasks: Option<&Bound<'py, PyAny>>,
    cores: Option<&Bound<'py, PyAny>>,
    partitions: Option<&Bound<'py, PyAny>>,
    memory: Option<&Bound<'py, PyAny>>,
    refill: Option<&Bound<'py, PyAny>>,
    period_min: Option<&Bound<'py, PyAny>>,
    period_max: Option<&Bound<'py, PyAny>>,
    task_memory_min: Option<&Bound<'py, PyAny>>,
    task_memory_max: Option<&Bound<'py, PyAny>>,
    sensitivity_max: Option<&Bound<'py, PyAny>>,
    util_min: Option<&Bound<'py, PyAny>>,
    util_max: Option<&Bound<'py, PyAny>>,
    util_step: Option<&Bound<'py, PyAny>>,
    sets: Option<&Bound<'py, PyAny>>,
    seed: Option<&Bound<'py, PyAny>>,
    node_budget: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let whole = |value: Option<&Bound<'py, PyAny>>, name: &str, most: u64| {
        value.map(|v| count(v, name, (0, most), "")).transpose()
    };
    let real = |value: Option<&Bound<'py, PyAny>>, name: &str, default: f64| {
        value.map_or(Ok(default), |v| number(v, name))
    };
    let int32 = u64::from(u32::MAX);
    let search = crate::plan::search_options(node_budget, 20_000)?;
    let d = RandomParams::default();
    type Read = fn(&Bound<'_, PyAny>, &str) -> PyResult<u64>;
    let or = |value: Option<&Bound<'py, PyAny>>, default: u64, read: Read, name: &str| {
        value.map_or(Ok(default), |v| read(v, name))
    };
    let study = RandomStudy {
        generator: RandomParams {
            tasks: whole(tasks, "tasks", usize::MAX as u64)?.map_or(d.tasks, |n| n as usize),
            cores: whole(cores, "cores", int32)?.map_or(d.cores, |n| n as u32),
            partitions: whole(partitions, "partitions", int32)?.map_or(d.partitions, |n| n as u32),
            total_memory: or(memory, d.total_memory, size, "memory")?,
            refill_ns: or(refill, d.refill_ns, duration, "refill")?,
            period_min_ns: or(period_min, d.period_min_ns, duration, "period_min")?,
            period_max_ns: or(period_max, d.period_max_ns, duration, "period_max")?,
            memory_min: or(task_memory_min, d.memory_min, size, "task_memory_min")?,
            memory_max: or(task_memory_max, d.memory_max, size, "task_memory_max")?,
            sensitivity_max: real(sensitivity_max, "sensitivity_max", d.sensitivity_max)?,
        },
        util_min: real(util_min, "util_min", 2.0)?,
        util_max: real(util_max, "util_max", 5.0)?,
        util_step: real(util_step, "util_step", 0.25)?,
        sets_per_point: whole(sets, "sets", u64::MAX)?.unwrap_or(100),
        seed: whole(seed, "seed", u64::MAX)?.unwrap_or(1),
        node_budget: search.node_budget,
    };
    let params = study
        .params()
        .map_err(|e| bad_argument("params", e.to_string()))?;
    to_python(py, &params)
}

/// Shard `index` of `count` of the random study (work items index−1
/// modulo count), on `threads` threads (default: every core), with the GIL
/// released: the shard file `tinct experiment random --shard I/N` writes,
/// as a dict. A `timeout` (seconds) raises `Stopped` whose `partial` holds
/// the sets done.
#[pyfunction]
#[pyo3(signature = (params, index = None, count = None, threads = None, timeout = None), text_signature = "(params, index=1, count=1, threads=None, timeout=None)")]
pub(crate) fn random_shard<'py>(
    py: Python<'py>,
    params: &Bound<'py, PyAny>,
    index: Option<&Bound<'py, PyAny>>,
    count: Option<&Bound<'py, PyAny>>,
    threads: Option<&Bound<'py, PyAny>>,
    timeout: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let params: Params = from_python(params, "params")?;
    let whole = |value: Option<&Bound<'py, PyAny>>, why: &str| {
        value.map_or(Ok(1), |v| self::count(v, "shard", (0, u64::MAX), why))
    };
    let index = whole(index, "I of I/N")?;
    let count = whole(count, "N of I/N")?;
    if index == 0 || index > count {
        return Err(bad_argument(
            "shard",
            format!("shard: expected I/N with 1 ≤ I ≤ N, found {index}/{count}"),
        ));
    }
    let pool = crate::pools::pool(threads)?;
    let stop = stop_after(timeout)?;
    let shard = Shard { index, count };
    let hooks = Hooks {
        progress: None,
        stop: Some(&stop),
    };
    let computed = py.detach(|| pool.install(|| parallel::compute(&params, shard, hooks)));
    let file = ShardFile {
        params,
        shard: index,
        shards: count,
        points: computed.points.clone(),
    };
    let result = to_python(py, &file)?;
    if !computed.complete() {
        return Err(Stopped::new_err((
            format!(
                "stopped by timeout after {} of {} task sets: `partial` holds the sets done (the `sets` counts)",
                computed.done, computed.total
            ),
            result.unbind(),
        )));
    }
    Ok(result)
}

/// Checks that `shards` (dicts from `random_shard`) belong to one study and
/// cover it exactly once, and sums them into what one unsharded run
/// computes: `{"params": ..., "points": [...]}`.
#[pyfunction]
pub(crate) fn merge_shards<'py>(
    py: Python<'py>,
    shards: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let files: Vec<ShardFile> = from_python(shards, "shards")?;
    let (params, points) = merge(&files).map_err(|e| {
        let at = |i: usize| format!("shards[{i}]");
        let message = match &e {
            MergeError::Different { index } => format!("{}: {e} as {}", at(*index), at(0)),
            MergeError::OutOfRange { index, .. } | MergeError::Counts { index, .. } => {
                format!("{}: {e}", at(*index))
            }
            MergeError::Twice { index, first, .. } => {
                format!("{}: {e} (also as {})", at(*index), at(*first))
            }
            MergeError::Empty | MergeError::Missing { .. } => format!("shards: {e}"),
        };
        BadInput::new_err((
            message,
            Option::<String>::None,
            Option::<usize>::None,
            "shards",
        ))
    })?;
    to_python(py, &Merged { params, points })
}

/// A whole study's counts.
#[derive(serde::Serialize)]
struct Merged {
    params: Params,
    points: Vec<Point>,
}

/// Writes `params.json`, `results.csv` and `schedulability.svg` into `out`
/// (created): the bytes `tinct experiment random` (or `merge`) writes.
#[pyfunction]
pub(crate) fn write_results(
    out: &Bound<'_, PyAny>,
    params: &Bound<'_, PyAny>,
    points: &Bound<'_, PyAny>,
) -> PyResult<()> {
    let out = crate::units::path(out, "out")?;
    let params: Params = from_python(params, "params")?;
    let points: Vec<Point> = from_python(points, "points")?;
    schedulability::write_results(&out, &params, &points).map_err(failed)
}

/// Writes `shard-I-of-N.json` into `out` (created), as
/// `tinct experiment random --shard I/N` does, and returns its path.
#[pyfunction]
pub(crate) fn write_shard(out: &Bound<'_, PyAny>, shard: &Bound<'_, PyAny>) -> PyResult<PathBuf> {
    let out = crate::units::path(out, "out")?;
    let file: ShardFile = from_python(shard, "shard")?;
    schedulability::write_shard(&out, &file).map_err(failed)
}

/// kim2013 Section IV-E, Figures 11-13: Table I (or `base`) duplicated to
/// n = 8, 12, 16 at 1 and 2 GiB, BFD, WFD and CATA side by side, with the
/// paper's published comparisons: what `tinct experiment kim2013 --json`
/// prints. Exhaustive unless `node_budget` is given (0: exhaustive too).
#[pyfunction]
#[pyo3(signature = (base = None, node_budget = None, timeout = None))]
pub(crate) fn kim2013_study<'py>(
    py: Python<'py>,
    base: Option<PyRef<'py, PyTaskSet>>,
    node_budget: Option<&Bound<'py, PyAny>>,
    timeout: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let base = match base {
        Some(set) => set.set.clone(),
        None => kim2013::table_i().map_err(|e| crate::errors::bad_input(&e))?,
    };
    let options = crate::plan::search_options(node_budget, 0)?;
    let stop = stop_after(timeout)?;
    let hooks = Hooks {
        progress: None,
        stop: Some(&stop),
    };
    let report = py.detach(|| kim2013::run(&base, &options, hooks));
    let result = to_python(py, &report)?;
    if !report.complete {
        return Err(Stopped::new_err((
            format!(
                "stopped by timeout after {} of {} settings × algorithms: `partial` holds them",
                report.rows.len(),
                kim2013::UNITS
            ),
            result.unbind(),
        )));
    }
    Ok(result)
}

/// Random task set number `stream` of a study seeded with `seed`, at total
/// utilization `utilization` (UUniFast-Discard, log-uniform periods, random
/// C^p curves; see tinct-core's `generate`), or `None` when
/// UUniFast-Discard gives up. `generator` is the `generator` dict of
/// `random_params` (default: its defaults). The same (seed, stream) gives
/// the same set everywhere: set k of point p of a study is stream
/// p·sets + k.
#[pyfunction]
#[pyo3(signature = (utilization, seed = None, stream = None, generator = None), text_signature = "(utilization, seed=1, stream=0, generator=None)")]
pub(crate) fn random_task_set_for(
    utilization: &Bound<'_, PyAny>,
    seed: Option<&Bound<'_, PyAny>>,
    stream: Option<&Bound<'_, PyAny>>,
    generator: Option<&Bound<'_, PyAny>>,
) -> PyResult<Option<PyTaskSet>> {
    let utilization = number(utilization, "utilization")?;
    let whole = |value: Option<&Bound<'_, PyAny>>, name: &str, default: u64| {
        value.map_or(Ok(default), |v| count(v, name, (0, u64::MAX), ""))
    };
    let seed = whole(seed, "seed", 1)?;
    let stream = whole(stream, "stream", 0)?;
    let params: RandomParams = match generator {
        Some(g) => from_python(g, "generator")?,
        None => RandomParams::default(),
    };
    if params.tasks == 0 || params.cores == 0 || params.partitions == 0 || !utilization.is_finite()
    {
        return Err(bad_argument(
            "generator",
            format!(
                "generator: expected tasks, cores and partitions above zero and a finite utilization, found {}, {}, {} and {utilization}",
                params.tasks, params.cores, params.partitions
            ),
        ));
    }
    let mut rng = rng_for(seed, stream);
    Ok(random_task_set(&params, utilization, &mut rng)
        .map(|set| PyTaskSet::new(set, format!("random set {seed}/{stream}"))))
}
