//! `tinct doctor` for Python: what this machine (or a captured sysfs and
//! procfs tree) offers for cache-aware real-time work, as the same JSON
//! and the same text the command prints.

use crate::errors::{bad_argument, failed};
use pyo3::prelude::*;
use std::path::PathBuf;
use tinct_report::text::{doctor_json, doctor_text};

/// The examination of `root` (`None`: this machine), with the colour
/// probe when `probe_colors`; the GIL is released while it runs.
fn examine(
    py: Python<'_>,
    root: Option<PathBuf>,
    probe_colors: bool,
) -> PyResult<(
    tinct_sys::doctor::Report,
    Option<tinct_sys::doctor::ColorProbe>,
)> {
    if probe_colors && root.is_some() {
        return Err(bad_argument(
            "probe_colors",
            "probe_colors: expected no root (the probe measures this machine), found both",
        ));
    }
    py.detach(|| tinct_sys::doctor::examine(root.as_deref(), probe_colors))
        .map_err(|e| bad_argument("root", format!("root: {e}")))
}

/// `tinct doctor --json` as Python objects.
#[pyfunction]
#[pyo3(signature = (root = None, probe_colors = false))]
pub fn doctor_report<'py>(
    py: Python<'py>,
    root: Option<PathBuf>,
    probe_colors: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let (report, probe) = examine(py, root, probe_colors)?;
    let text = doctor_json(&report, probe.as_ref()).map_err(failed)?;
    py.import("json")?.call_method1("loads", (text,))
}

/// `tinct doctor`'s text, byte for byte.
#[pyfunction]
#[pyo3(signature = (root = None, probe_colors = false))]
pub fn doctor_report_text(
    py: Python<'_>,
    root: Option<PathBuf>,
    probe_colors: bool,
) -> PyResult<String> {
    let (report, probe) = examine(py, root, probe_colors)?;
    Ok(doctor_text(&report, probe.as_ref()))
}
