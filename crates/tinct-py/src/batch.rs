//! The batch API: fixed-priority response-time analysis of many
//! independent one-core task sets in one call, arrays in and arrays out,
//! with the GIL released and the sets spread over a rayon pool, so Python
//! overhead does not dominate a schedulability study.
//!
//! Each set is analyzed by tinct-core's `rta::response_times` with Δ = 0
//! and no partitions: Joseph and Pandya's exact test (kim2013's "NoCInt"),
//! the same code `TaskSet.analyze` runs. Priorities follow
//! `TaskSet.ranks`: the given priorities (smaller is higher), else
//! deadline-monotonic, ties broken by column order.

use crate::errors::bad_argument;
use numpy::{PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::prelude::*;
use rayon::prelude::*;
use tinct_core::PartitionSet;
use tinct_core::analysis::rta::{CoreTask, response_times};

/// The arrays of one batch, row-major (sets × tasks).
struct Batch<'a> {
    tasks: usize,
    wcet: &'a [u64],
    period: &'a [u64],
    deadline: &'a [u64],
    priority: Option<&'a [u64]>,
}

/// The first element that makes a set unanalyzable: (field, set, task,
/// expected, found).
type Refusal = (&'static str, usize, usize, &'static str, u64);

impl Batch<'_> {
    /// The file rules that the analysis relies on (docs/FORMAT.md): C > 0,
    /// T > 0, 0 < D ≤ T (constrained deadlines). C > D is allowed: such a
    /// task simply misses its deadline.
    fn check(&self) -> Result<(), Refusal> {
        let at = |k: usize| (k / self.tasks.max(1), k % self.tasks.max(1));
        for k in 0..self.wcet.len() {
            let (s, i) = at(k);
            if self.wcet[k] == 0 {
                return Err(("wcet", s, i, "a WCET above zero", 0));
            }
            if self.period[k] == 0 {
                return Err(("period", s, i, "a period above zero", 0));
            }
            if self.deadline[k] == 0 {
                return Err(("deadline", s, i, "a deadline above zero", 0));
            }
            if self.deadline[k] > self.period[k] {
                return Err((
                    "deadline",
                    s,
                    i,
                    "a deadline at most the period (constrained deadlines D ≤ T)",
                    self.deadline[k],
                ));
            }
        }
        Ok(())
    }

    /// Analyzes set `s` into `response` (its row) and returns whether every
    /// task meets its deadline. `order` and `tasks` are scratch space.
    fn analyze_set(
        &self,
        s: usize,
        response: &mut [u64],
        order: &mut Vec<usize>,
        tasks: &mut Vec<CoreTask>,
    ) -> bool {
        let row = s * self.tasks..(s + 1) * self.tasks;
        let (wcet, period, deadline) = (
            &self.wcet[row.clone()],
            &self.period[row.clone()],
            &self.deadline[row.clone()],
        );
        let key = self.priority.map_or(deadline, |p| &p[row]);
        order.clear();
        order.extend(0..self.tasks);
        order.sort_unstable_by_key(|&i| (key[i], i));
        tasks.clear();
        tasks.extend(
            order
                .iter()
                .map(|&i| CoreTask::new(wcet[i], period[i], deadline[i], PartitionSet::EMPTY)),
        );
        let mut schedulable = true;
        for (result, &i) in response_times(tasks, 0).iter().zip(order.iter()) {
            response[i] = result.wcrt_ns.unwrap_or(0);
            schedulable &= result.wcrt_ns.is_some();
        }
        schedulable
    }

    /// Every set, spread over the current rayon pool.
    fn run(&self, sets: usize) -> (Vec<bool>, Vec<u64>) {
        let mut schedulable = vec![true; sets];
        let mut response = vec![0u64; sets * self.tasks];
        if self.tasks == 0 {
            return (schedulable, response);
        }
        schedulable
            .par_iter_mut()
            .zip(response.par_chunks_mut(self.tasks))
            .enumerate()
            .for_each_init(
                || {
                    (
                        Vec::with_capacity(self.tasks),
                        Vec::with_capacity(self.tasks),
                    )
                },
                |(order, tasks), (s, (ok, row))| *ok = self.analyze_set(s, row, order, tasks),
            );
        (schedulable, response)
    }
}

fn slice<'a>(array: &'a PyReadonlyArray2<'_, u64>, name: &str) -> PyResult<&'a [u64]> {
    array.as_slice().map_err(|_| {
        bad_argument(
            name,
            format!("{name}: expected a C-contiguous uint64 array"),
        )
    })
}

/// Low-level batch RTA (the public wrapper is `tinct.analyze_batch`, which
/// checks and converts the arrays). Arrays are uint64, C-contiguous, shape
/// (sets, tasks), in nanoseconds; `priority` is optional (smaller is
/// higher). Returns (schedulable bool[sets], response times uint64[sets,
/// tasks], 0 where a task misses its deadline).
#[pyfunction]
#[pyo3(signature = (wcet, period, deadline, priority = None, threads = None))]
#[allow(clippy::type_complexity)]
pub(crate) fn analyze_batch_arrays<'py>(
    py: Python<'py>,
    wcet: PyReadonlyArray2<'py, u64>,
    period: PyReadonlyArray2<'py, u64>,
    deadline: PyReadonlyArray2<'py, u64>,
    priority: Option<PyReadonlyArray2<'py, u64>>,
    threads: Option<&Bound<'py, PyAny>>,
) -> PyResult<(Bound<'py, PyArray1<bool>>, Bound<'py, PyArray2<u64>>)> {
    let shape = [wcet.shape()[0], wcet.shape()[1]];
    for (name, other) in [("period", period.shape()), ("deadline", deadline.shape())]
        .into_iter()
        .chain(priority.as_ref().map(|p| ("priority", p.shape())))
    {
        if other != shape {
            return Err(bad_argument(
                name,
                format!(
                    "{name}: expected the shape of wcet {:?}, found {:?}",
                    shape, other
                ),
            ));
        }
    }
    let batch = Batch {
        tasks: shape[1],
        wcet: slice(&wcet, "wcet")?,
        period: slice(&period, "period")?,
        deadline: slice(&deadline, "deadline")?,
        priority: priority
            .as_ref()
            .map(|p| slice(p, "priority"))
            .transpose()?,
    };
    let pool = crate::pools::pool(threads)?;
    let outcome = py.detach(|| {
        batch.check()?;
        Ok(pool.install(|| batch.run(shape[0])))
    });
    let (schedulable, response) = outcome.map_err(|(field, s, i, expected, found): Refusal| {
        bad_argument(
            field,
            format!("{field}[{s}, {i}] (set {s}, task {i}): expected {expected}, found {found} ns"),
        )
    })?;
    let response = PyArray1::from_vec(py, response).reshape(shape)?;
    Ok((PyArray1::from_vec(py, schedulable), response))
}
