//! tinct's own SVG line chart (tinct-report's `LineChart`, the renderer of
//! every tinct plot) for Python scripts that have no matplotlib.

use pyo3::prelude::*;
use tinct_report::LineChart;

/// An SVG line chart: `series` is a list of (name, [(x, y), ...]); the
/// axes span the data unless `x_range` / `y_range` (low, high) are given.
/// Deterministic: the same chart gives the same bytes.
#[pyfunction]
#[pyo3(signature = (title, x_label, y_label, series, x_range = None, y_range = None))]
pub(crate) fn line_chart_svg(
    title: String,
    x_label: String,
    y_label: String,
    series: Vec<(String, Vec<(f64, f64)>)>,
    x_range: Option<(f64, f64)>,
    y_range: Option<(f64, f64)>,
) -> String {
    let mut chart = LineChart::new(title, x_label, y_label);
    if let Some((low, high)) = x_range {
        chart = chart.with_x_range(low, high);
    }
    if let Some((low, high)) = y_range {
        chart = chart.with_y_range(low, high);
    }
    for (name, points) in series {
        chart = chart.with_series(name, points);
    }
    chart.to_svg()
}
