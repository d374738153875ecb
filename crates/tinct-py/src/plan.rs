//! `TaskSet.plan(...)`: tinct-core's plan API (kim2013 Algorithm 3 with its
//! leftover step, or BFD/WFD), and `tinct.Plan`, its result.

use crate::errors::{bad_argument, bad_input};
use crate::json::to_python;
use crate::stop::stop_after;
use crate::taskset::PyTaskSet;
use pyo3::prelude::*;
use tinct_core::alloc::{self, Algorithm, Plan, PlanOptions, PlanRefusal, SearchOptions};

/// The search a `node_budget=` argument asks for: a whole number of nodes
/// per MinCacheAlloc call (`None`: `default`), 0 meaning no budget (an
/// exhaustive search), as everywhere in tinct
/// ([`SearchOptions::node_budget_option`]).
pub(crate) fn search_options(
    node_budget: Option<&Bound<'_, PyAny>>,
    default: u64,
) -> PyResult<SearchOptions> {
    let nodes = node_budget
        .map(|n| {
            crate::units::count(
                n,
                "node_budget",
                (0, u64::MAX),
                "0: no budget, an exhaustive search",
            )
        })
        .transpose()?
        .unwrap_or(default);
    Ok(SearchOptions::node_budget_option(nodes))
}

/// How to plan, as `TaskSet.plan` received it.
pub(crate) struct PlanArgs<'a, 'py> {
    /// "cata", "bfd" or "wfd".
    pub algorithm: &'a str,
    /// Partitions the plan may use (`None`: all N_P).
    pub partitions: Option<u32>,
    /// MinCacheAlloc's node budget (`None`: exhaustive).
    pub node_budget: Option<u64>,
    /// CATA: keep unneeded partitions free.
    pub keep_free: bool,
    /// Seconds before stopping with the tasks placed so far.
    pub timeout: Option<&'a Bound<'py, PyAny>>,
    /// "deadline": every task a SCHED_DEADLINE reservation (`None`: each
    /// task's own policy).
    pub policy: Option<&'a str>,
}

/// An algorithm by the name the CLI and the files use.
pub(crate) fn algorithm(name: &str) -> PyResult<Algorithm> {
    Algorithm::ALL
        .into_iter()
        .find(|a| a.name() == name.to_ascii_lowercase())
        .ok_or_else(|| {
            bad_argument(
                "algorithm",
                format!("algorithm: expected \"cata\", \"bfd\" or \"wfd\", found \"{name}\""),
            )
        })
}

/// Plans `set` with the GIL released.
pub(crate) fn plan(py: Python<'_>, set: &PyTaskSet, args: &PlanArgs<'_, '_>) -> PyResult<PyPlan> {
    let algorithm = algorithm(args.algorithm)?;
    let reservations = match args.policy {
        None => None,
        Some("deadline") => Some(
            alloc::as_reservations(&set.set, &set.file)
                .map_err(|why| bad_argument("task", why.to_string()))?,
        ),
        Some(other) => {
            return Err(bad_argument(
                "policy",
                format!("policy: expected \"deadline\", found \"{other}\""),
            ));
        }
    };
    let inner = reservations.as_ref().unwrap_or(&set.set);
    // Refused as `tinct plan` refuses it (exit 2).
    let budget =
        alloc::check_request(inner, &set.file, args.partitions).map_err(
            |refusal| match refusal {
                // The set itself: a resource shared between tasks.
                PlanRefusal::Unsupported(why) => bad_argument("task", why.to_string()),
                PlanRefusal::Partitions(e) => bad_argument("partitions", e.to_string()),
                PlanRefusal::Graph(e) => bad_input(&e),
            },
        )?;
    let stop = stop_after(args.timeout)?;
    let options = PlanOptions {
        partitions: Some(budget),
        search: SearchOptions {
            node_budget: args.node_budget,
            ..SearchOptions::EXACT
        },
        keep_free: args.keep_free,
        stop: Some(&stop),
    };
    let plan = py.detach(|| alloc::plan(inner, algorithm, &options));
    Ok(PyPlan {
        set: set.clone(),
        plan,
    })
}

/// A plan: where every task goes (core, priority, partitions S(i)), the
/// planned task set and its analysis.
#[pyclass(name = "Plan", module = "tinct", frozen)]
pub struct PyPlan {
    /// The set planned (its name and source for the planned set).
    set: PyTaskSet,
    plan: Plan,
}

#[pymethods]
impl PyPlan {
    /// What `tinct plan --json` prints about the plan, as a dict:
    /// algorithm, schedulable, budget, partitions used and needed, memory
    /// efficiency, total utilization, exact, nodes, stopped, cores (with
    /// their tasks), unplaced tasks with the reasons each core refused them.
    #[getter]
    fn report<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_python(py, &self.plan)
    }

    /// Every task placed and the planned set analyzes as schedulable.
    #[getter]
    fn schedulable(&self) -> bool {
        self.plan.schedulable
    }

    /// The task set with `core`, `priority` and `partitions` filled in
    /// (unplaced tasks keep none); `save` it to get what `tinct plan -o`
    /// writes, `analyze` it to re-check.
    #[getter]
    fn planned(&self) -> Option<PyTaskSet> {
        self.plan.planned.clone().map(|planned| {
            self.set
                .derived(planned, format!("plan of {}", self.set.file))
        })
    }

    /// The analysis of the planned set (as `TaskSet.analyze` gives it),
    /// when every task was placed; else `None`.
    #[getter]
    fn analysis<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.plan
            .analysis
            .as_ref()
            .map(|a| to_python(py, a))
            .transpose()
    }

    fn __repr__(&self) -> String {
        let p = &self.plan;
        format!(
            "Plan({}, {}, {} of {} partitions used, {} unplaced)",
            p.algorithm.name(),
            if p.schedulable {
                "schedulable"
            } else {
                "NOT schedulable"
            },
            p.partitions_used,
            p.budget,
            p.unplaced.len()
        )
    }
}
