//! `tinct.TaskSet`: a validated task set (kim2013 Section II-C), read from
//! a file, a string or a dict in the file schema (docs/FORMAT.md), written
//! back the same way, analyzed and planned.

use crate::errors::{bad_argument, bad_input, failed};
use crate::json::{json_text, to_python};
use crate::plan::{PlanArgs, PyPlan};
use crate::units;
use pyo3::prelude::*;
use std::path::PathBuf;
use tinct_core::TaskSet;
use tinct_core::format::{self, MAX_TASKS, Syntax};
use tinct_core::generate::replicate;
use tinct_core::overheads::{ChargeError, ChargedAnalysis, OverheadsChoice};
use tinct_core::saved_calibration;

/// A validated task set: the platform {N_C, N_P, M_total, Δ} and its tasks
/// {C^p, T, D, M, priority, core, S(i)} in file order.
///
/// Build one with `TaskSet.load(path)`, `TaskSet.parse(text)` or
/// `TaskSet.from_dict(d)` (the file schema of docs/FORMAT.md: durations as
/// strings with units, e.g. "40ms"); every rule is checked and a violation
/// raises `BadInput` naming the file, line and field, as `tinct` does.
#[pyclass(name = "TaskSet", module = "tinct", frozen, eq)]
#[derive(Clone)]
pub struct PyTaskSet {
    /// The set.
    pub set: TaskSet,
    /// Where it came from, for messages: a path, "<string>" or "<dict>".
    pub file: String,
    /// The file its relative references (`dram_map`) are relative to: the
    /// path it was read from, or that of the set it was planned or
    /// replicated from; `None`: the current directory (a set from a
    /// string, a dict or a generator).
    pub source: Option<PathBuf>,
}

/// Equal platforms and tasks (where the sets were read from, and the
/// lines of their tasks there, do not count).
impl PartialEq for PyTaskSet {
    fn eq(&self, other: &PyTaskSet) -> bool {
        self.set.platform == other.set.platform && self.set.tasks == other.set.tasks
    }
}

impl PyTaskSet {
    /// Wraps a set built in Rust (a generator), or parsed from text.
    pub fn new(set: TaskSet, file: impl Into<String>) -> PyTaskSet {
        PyTaskSet {
            set,
            file: file.into(),
            source: None,
        }
    }

    /// A set made from this one (a plan, copies), named `file` in
    /// messages; its references stay relative to this set's source.
    pub fn derived(&self, set: TaskSet, file: impl Into<String>) -> PyTaskSet {
        PyTaskSet {
            set,
            file: file.into(),
            source: self.source.clone(),
        }
    }
}

fn syntax(name: &str) -> PyResult<Syntax> {
    match name.to_ascii_lowercase().as_str() {
        "toml" => Ok(Syntax::Toml),
        "json" => Ok(Syntax::Json),
        _ => Err(bad_argument(
            "syntax",
            format!("syntax: expected \"toml\" or \"json\", found \"{name}\""),
        )),
    }
}

#[pymethods]
impl PyTaskSet {
    /// Reads, parses and validates a task-set file (TOML, or JSON when the
    /// name ends in .json). The file must give `refill` (Δ).
    #[staticmethod]
    fn load(path: &Bound<'_, PyAny>) -> PyResult<PyTaskSet> {
        let path = units::path(path, "path")?;
        let set = format::load(&path).map_err(|e| bad_input(&e))?;
        Ok(PyTaskSet {
            file: path.display().to_string(),
            source: Some(path),
            set,
        })
    }

    /// Parses and validates task-set text; `file` names it in messages.
    #[staticmethod]
    #[pyo3(
        signature = (text, syntax = None, file = None),
        text_signature = "(text, syntax=\"toml\", file=\"<string>\")"
    )]
    fn parse(
        text: &Bound<'_, PyAny>,
        syntax: Option<&Bound<'_, PyAny>>,
        file: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTaskSet> {
        let text = units::text(text, "text", "task-set text")?;
        let syntax = syntax
            .map(|s| units::text(s, "syntax", "\"toml\" or \"json\""))
            .transpose()?;
        let file = file
            .map(|f| units::text(f, "file", "a name for messages"))
            .transpose()?;
        PyTaskSet::parse_text(
            &text,
            syntax.as_deref().unwrap_or("toml"),
            file.as_deref().unwrap_or("<string>"),
        )
    }

    /// A task set from a dict in the file schema, e.g.
    /// `{"platform": {"cores": 1, "partitions": 8, "memory": "64MiB",
    /// "refill": "45.3us"}, "task": [{"name": "a", "period": "10ms",
    /// "memory": "1MiB", "wcet": "2ms"}]}`. Messages name the file
    /// "<dict>" and the line of the key in `json.dumps(d, indent=2)`.
    /// Values JSON cannot hold (bytes, sets, NaN, lone surrogates, nesting
    /// deeper than 32) raise `BadInput` naming where they are, e.g.
    /// `<dict>["task"][0]["name"]`; numpy numbers are read as numbers.
    #[staticmethod]
    fn from_dict(value: &Bound<'_, PyAny>) -> PyResult<PyTaskSet> {
        let text = json_text(value, "<dict>", Some("<dict>"))?;
        PyTaskSet::parse_text(&text, "json", "<dict>")
    }

    /// The set as a TOML task-set file; `header` lines become comments.
    #[pyo3(signature = (header = None))]
    fn to_toml(&self, header: Option<&Bound<'_, PyAny>>) -> PyResult<String> {
        Ok(format::to_toml(&self.set, &header_lines(header)?))
    }

    /// The set as a JSON task-set file.
    fn to_json(&self) -> String {
        format::to_json(&self.set)
    }

    /// The set as a dict in the file schema (what `from_dict` reads back
    /// into an equal set).
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        py.import("json")?.call_method1("loads", (self.to_json(),))
    }

    /// Writes the set to `path` (JSON if the name ends in .json, else TOML
    /// with `header` as comments), as `tinct plan -o` does: a relative
    /// `dram_map`, and a program body's relative program, are rewritten to
    /// name the same file from `path` (relative to the set's own file, or
    /// to the current directory for a set that came from a string or a
    /// dict). Reading it back gives an equal set, those references aside.
    #[pyo3(signature = (path, header = None))]
    fn save(&self, path: &Bound<'_, PyAny>, header: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let path = units::path(path, "path")?;
        let header = header_lines(header)?;
        let source = self.source.as_deref().unwrap_or(std::path::Path::new("."));
        format::write_file(&path, &self.set, source, &header).map_err(failed)
    }

    /// Where the set was read from ("<string>", "<dict>" or a path).
    #[getter]
    fn file(&self) -> &str {
        &self.file
    }

    /// The platform as the analysis sees it: cores, partitions, memory
    /// (bytes) and refill (Δ, ns).
    #[getter]
    fn platform<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_python(py, &self.set.platform)
    }

    /// The tasks in file order, as the model holds them (times in ns,
    /// sizes in bytes, `wcet` as {p: C^p}).
    #[getter]
    fn tasks<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_python(py, &self.set.tasks)
    }

    /// Task names in file order.
    #[getter]
    fn names(&self) -> Vec<String> {
        self.set.tasks.iter().map(|t| t.name.clone()).collect()
    }

    /// Unique priority ranks 1..=n (1 the highest) in file order: the one
    /// order the analysis, the allocators and `tinct run` use.
    fn ranks(&self) -> Vec<u32> {
        self.set.ranks()
    }

    /// `copies` copies of every task (kim2013 IV-E duplicates Table I),
    /// names suffixed, cores and partitions dropped. At most 10 000 tasks
    /// in all (the format's limit, so that the copies can be saved and
    /// loaded again); any other count raises `BadInput`.
    fn replicate(&self, copies: &Bound<'_, PyAny>) -> PyResult<PyTaskSet> {
        // The copies must stay a task set the format takes back.
        let tasks = self.set.tasks.len().max(1);
        let why = format!("copies of {tasks} task(s): a task set holds at most {MAX_TASKS} tasks");
        let most = (MAX_TASKS / tasks) as u64;
        let copies = crate::units::count(copies, "copies", (1, most), &why)?;
        Ok(self.derived(replicate(&self.set, copies as usize), self.file.clone()))
    }

    /// The analysis of `tinct analyze --json` as a dict: per task (file
    /// order) core, priority, S(i), C, ω, γ, WCRT with (Eq. 2) and without
    /// cache interference (`None` past the deadline) and the term-by-term
    /// breakdown; per core Eq. (1) and Eq. (3); the verdict and reasons;
    /// `overheads_source`, the overheads charged and where they came from.
    /// Every task needs a core (`plan` assigns them); a term that does not
    /// fit in 64-bit nanoseconds raises `BadInput`, as `tinct analyze`
    /// exits 2.
    ///
    /// `overheads` is `tinct analyze --overheads`: `None` (the set's own
    /// `[platform] overheads`, if any), `"none"`, `"measured"` (the
    /// machine calibration: `calibration`, else $TINCT_CALIBRATION, else
    /// the one `tinct bench calibrate` saved) or the path of a calibration
    /// or task-set file giving them. `calibration` is `--calibration`: a
    /// `calibrate.json`, checked like the CLI checks it.
    #[pyo3(signature = (overheads = None, calibration = None))]
    fn analyze<'py>(
        &self,
        py: Python<'py>,
        overheads: Option<&Bound<'py, PyAny>>,
        calibration: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let charged = self.analysis(py, overheads, calibration)?;
        to_python(py, &charged.report(None))
    }

    /// The same analysis as `analyze`, as the text `tinct analyze` prints
    /// (tinct_report::text): per core the response-time table, Eq. (1) and
    /// Eq. (3), then chains, notes and the verdict. Δ is the set's own.
    #[pyo3(signature = (overheads = None, calibration = None))]
    fn analysis_text(
        &self,
        py: Python<'_>,
        overheads: Option<&Bound<'_, PyAny>>,
        calibration: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<String> {
        let charged = self.analysis(py, overheads, calibration)?;
        Ok(tinct_report::text::analysis_text(
            &charged.analysis,
            "from the file",
            &charged.source,
        ))
    }

    /// Assigns cores, priorities and cache partitions (kim2013 CATA,
    /// Algorithms 1-3, or the BFD/WFD baselines) and analyzes the result.
    /// Defaults are `tinct plan`'s: CATA, all N_P partitions, a node budget
    /// of 2 000 000 per MinCacheAlloc call (`None`: that default; 0 or
    /// `exact=True` search exhaustively, as `tinct plan --node-budget 0`
    /// and `--exact`), leftover partitions spent unless `keep_free`.
    /// `timeout` (seconds) stops with the tasks placed so far. `policy =
    /// "deadline"` plans every task as a SCHED_DEADLINE reservation under
    /// EDF, as `tinct plan --policy deadline`.
    #[pyo3(
        signature = (algorithm = None, partitions = None, node_budget = None, exact = None, keep_free = None, timeout = None, policy = None),
        text_signature = "($self, algorithm=\"cata\", partitions=None, node_budget=None, exact=False, keep_free=False, timeout=None, policy=None)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn plan(
        &self,
        py: Python<'_>,
        algorithm: Option<&Bound<'_, PyAny>>,
        partitions: Option<&Bound<'_, PyAny>>,
        node_budget: Option<&Bound<'_, PyAny>>,
        exact: Option<&Bound<'_, PyAny>>,
        keep_free: Option<&Bound<'_, PyAny>>,
        timeout: Option<&Bound<'_, PyAny>>,
        policy: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyPlan> {
        let policy = policy
            .map(|p| units::text(p, "policy", "\"deadline\""))
            .transpose()?;
        let algorithm = algorithm
            .map(|a| units::text(a, "algorithm", "\"cata\", \"bfd\" or \"wfd\""))
            .transpose()?;
        let exact = exact.map(|e| units::flag(e, "exact")).transpose()? == Some(true);
        let keep_free = keep_free.map(|k| units::flag(k, "keep_free")).transpose()? == Some(true);
        let partitions = partitions
            .map(|p| crate::units::count(p, "partitions", (1, u64::from(u32::MAX)), ""))
            .transpose()?
            .map(|p| p as u32);
        let search = crate::plan::search_options(node_budget, 2_000_000)?;
        let args = PlanArgs {
            algorithm: algorithm.as_deref().unwrap_or("cata"),
            partitions,
            node_budget: if exact { None } else { search.node_budget },
            keep_free,
            timeout,
            policy: policy.as_deref(),
        };
        crate::plan::plan(py, self, &args)
    }

    fn __len__(&self) -> usize {
        self.set.tasks.len()
    }

    fn __repr__(&self) -> String {
        let p = &self.set.platform;
        format!(
            "TaskSet({} tasks, {} cores, {} partitions, Δ = {}, from {})",
            self.set.tasks.len(),
            p.cores,
            p.partitions,
            p.refill,
            self.file
        )
    }
}

/// `header=` as lines (`None`: none).
fn header_lines(header: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<String>> {
    header
        .map(|h| units::lines(h, "header"))
        .transpose()
        .map(Option::unwrap_or_default)
}

impl PyTaskSet {
    /// `parse` once the arguments are text.
    fn parse_text(text: &str, syntax: &str, file: &str) -> PyResult<PyTaskSet> {
        let set = format::parse(text, file, self::syntax(syntax)?).map_err(|e| bad_input(&e))?;
        Ok(PyTaskSet::new(set, file))
    }

    /// The analysis `analyze` and `analysis_text` give, with the overheads
    /// charged and where they came from.
    fn analysis(
        &self,
        py: Python<'_>,
        overheads: Option<&Bound<'_, PyAny>>,
        calibration: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<ChargedAnalysis> {
        let overheads = overheads.map(|o| units::path(o, "overheads")).transpose()?;
        let calibration = calibration
            .map(|c| units::path(c, "calibration"))
            .transpose()?;
        let choice = match overheads {
            None => OverheadsChoice::TaskSet,
            Some(path) => match path.to_str() {
                Some(text) => OverheadsChoice::parse(text)
                    .map_err(|e| bad_argument("overheads", format!("overheads: {e}")))?,
                None => OverheadsChoice::File(path),
            },
        };
        if let Some(path) = &calibration {
            saved_calibration::read(path)
                .map_err(|e| bad_argument("calibration", e.to_string()))?;
        }
        let saved = saved_calibration::saved_path(|name| std::env::var_os(name));
        let file = std::path::Path::new(&self.file);
        py.detach(|| ChargedAnalysis::of(&self.set, file, &choice, calibration.as_deref(), saved))
            .map_err(|e| match e {
                ChargeError::Overheads(e) => bad_argument("overheads", e.to_string()),
                ChargeError::Input(e) => bad_input(&e),
            })
    }
}
