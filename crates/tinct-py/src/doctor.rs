//! `tinct doctor` for Python: what this machine (or a captured sysfs and
//! procfs tree) offers for cache-aware real-time work, as the same JSON
//! and the same text the command prints.

use crate::errors::{bad_argument, failed};
use crate::units;
use pyo3::prelude::*;
use tinct_doctor::{doctor_json, doctor_text};

/// `color_bits=` as text (`None`: not given).
fn bits(color_bits: Option<&Bound<'_, PyAny>>) -> PyResult<Option<String>> {
    color_bits
        .map(|b| units::text(b, "color_bits", "colour bits such as \"12-16\""))
        .transpose()
}

/// The examination of `root` (`None`: this machine), with the colour
/// probe when `probe_colors`; the GIL is released while it runs.
fn examine(
    py: Python<'_>,
    root: Option<&Bound<'_, PyAny>>,
    probe_colors: Option<&Bound<'_, PyAny>>,
    color_bits: Option<&Bound<'_, PyAny>>,
) -> PyResult<(tinct_doctor::Report, Option<tinct_doctor::ColorProbe>)> {
    let root = root.map(|r| units::path(r, "root")).transpose()?;
    let probe_colors = probe_colors
        .map(|p| units::flag(p, "probe_colors"))
        .transpose()?
        == Some(true);
    let color_bits = bits(color_bits)?;
    if probe_colors && root.is_some() {
        return Err(bad_argument(
            "probe_colors",
            "probe_colors: expected no root (the probe measures this machine), found both",
        ));
    }
    py.detach(|| tinct_doctor::examine(root.as_deref(), probe_colors, color_bits.as_deref()))
        .map_err(|e| {
            // The flag in the field, renamed to the keyword argument.
            let text = e.to_string();
            match text.strip_prefix("--color-bits ") {
                Some(rest) => bad_argument("color_bits", format!("color_bits: {rest}")),
                None => {
                    let rest = text.strip_prefix("--root ").unwrap_or(&text);
                    bad_argument("root", format!("root: {rest}"))
                }
            }
        })
}

/// `tinct doctor --json` as Python objects.
#[pyfunction]
#[pyo3(
    signature = (root = None, probe_colors = None, color_bits = None),
    text_signature = "(root=None, probe_colors=False, color_bits=None)"
)]
pub(crate) fn doctor_report<'py>(
    py: Python<'py>,
    root: Option<&Bound<'_, PyAny>>,
    probe_colors: Option<&Bound<'_, PyAny>>,
    color_bits: Option<&Bound<'_, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let (report, probe) = examine(py, root, probe_colors, color_bits)?;
    let text = doctor_json(&report, probe.as_ref()).map_err(failed)?;
    py.import("json")?.call_method1("loads", (text,))
}

/// `tinct doctor`'s text, byte for byte.
#[pyfunction]
#[pyo3(
    signature = (root = None, probe_colors = None, color_bits = None),
    text_signature = "(root=None, probe_colors=False, color_bits=None)"
)]
pub(crate) fn doctor_report_text(
    py: Python<'_>,
    root: Option<&Bound<'_, PyAny>>,
    probe_colors: Option<&Bound<'_, PyAny>>,
    color_bits: Option<&Bound<'_, PyAny>>,
) -> PyResult<String> {
    let (report, probe) = examine(py, root, probe_colors, color_bits)?;
    Ok(doctor_text(&report, probe.as_ref()))
}

/// The colour bits every colouring command would use on this machine:
/// `color_bits` (as `--color-bits`), else `TINCT_COLOR_BITS`, the machine
/// file, the derived rule (`tinct_sys::color_source`), as a dict with the
/// bits, the number of colours, the source and the description. Unknown
/// or malformed bits raise `BadInput` with the CLI's message.
#[pyfunction]
#[pyo3(signature = (color_bits = None))]
pub(crate) fn resolve_color_bits<'py>(
    py: Python<'py>,
    color_bits: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let color_bits = bits(color_bits)?;
    use tinct_sys::color_source::{ColorRequest, resolve};
    let live = tinct_sys::SysRoot::live();
    let page = tinct_sys::system::PageSize::read(&live).map_or(4096, |p| p.bytes);
    let resolved = resolve(
        ColorRequest::flag("--color-bits", color_bits.as_deref()),
        page,
    )
    .map_err(|e| bad_argument("color_bits", e.to_string()))?;
    let value = serde_json::json!({
        "bits": resolved.bits,
        "colors": resolved.colors(),
        "source": resolved.source,
        "rule": resolved.geometry.rule,
        "description": resolved.describe(),
    });
    py.import("json")?
        .call_method1("loads", (value.to_string(),))
}
