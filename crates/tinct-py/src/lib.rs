//! `tinct._tinct`, the extension module under the `tinct` Python package:
//! tinct-core's task model, analyses, allocation, generators and studies,
//! a batch response-time analysis over numpy arrays, and `tinct doctor`.
//!
//! Results cross into Python as the JSON the CLI prints (see `json`), so
//! Python sees exactly what `tinct … --json` shows. Long computations
//! release the GIL. The public, documented API is the Python package
//! (`python/tinct/`); this module is its engine.
#![forbid(unsafe_code)]

mod batch;
mod chart;
mod doctor;
mod errors;
mod experiment;
mod jobs;
mod json;
mod plan;
mod pools;
mod stop;
mod taskset;
mod units;

use pyo3::prelude::*;

/// The extension module.
#[pymodule]
fn _tinct(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<taskset::PyTaskSet>()?;
    m.add_class::<plan::PyPlan>()?;
    m.add_class::<jobs::PyJobs>()?;
    m.add_function(wrap_pyfunction!(jobs::jobs, m)?)?;
    m.add_function(wrap_pyfunction!(batch::analyze_batch_arrays, m)?)?;
    m.add_function(wrap_pyfunction!(experiment::random_params, m)?)?;
    m.add_function(wrap_pyfunction!(experiment::random_shard, m)?)?;
    m.add_function(wrap_pyfunction!(experiment::merge_shards, m)?)?;
    m.add_function(wrap_pyfunction!(experiment::write_results, m)?)?;
    m.add_function(wrap_pyfunction!(experiment::write_shard, m)?)?;
    m.add_function(wrap_pyfunction!(experiment::kim2013_study, m)?)?;
    m.add_function(wrap_pyfunction!(experiment::random_task_set_for, m)?)?;
    m.add_function(wrap_pyfunction!(chart::line_chart_svg, m)?)?;
    m.add_function(wrap_pyfunction!(doctor::doctor_report, m)?)?;
    m.add_function(wrap_pyfunction!(doctor::doctor_report_text, m)?)?;
    m.add_function(wrap_pyfunction!(doctor::resolve_color_bits, m)?)?;
    m.add_function(wrap_pyfunction!(units::parse_duration_ns, m)?)?;
    m.add_function(wrap_pyfunction!(units::parse_size_bytes, m)?)?;
    Ok(())
}
