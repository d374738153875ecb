//! [`BarChart`]: grouped bars, one group per category (a core, say) and one
//! bar per series in each group, with an optional limit line per group
//! (kim2013 Fig. 10: predicted and observed utilization per core against
//! the Liu-Layland bound).

use super::{
    LEFT, PLOT_H, PLOT_W, TOP, YAxis, border_and_axis_labels, color, escape, hover, legend_entry,
    open, write_svg, y_grid,
};
use crate::ReportError;
use std::fmt::Write;
use std::path::Path;

/// One named series of bars, a value per category.
#[derive(Clone, Debug, PartialEq)]
pub struct BarSeries {
    /// Legend entry.
    pub name: String,
    /// The bar of each category (`None` or non-finite: no bar).
    pub values: Vec<Option<f64>>,
}

impl BarSeries {
    /// A series named `name`.
    pub fn new(name: impl Into<String>, values: Vec<Option<f64>>) -> BarSeries {
        BarSeries {
            name: name.into(),
            values,
        }
    }
}

/// Grouped bars with a title, axis labels and a legend.
#[derive(Clone, Debug, PartialEq)]
pub struct BarChart {
    /// Title above the plot.
    pub title: String,
    /// Label under the groups.
    pub x_label: String,
    /// Label of the y axis.
    pub y_label: String,
    /// The groups, left to right.
    pub categories: Vec<String>,
    /// The bars of each group, in legend order.
    pub series: Vec<BarSeries>,
    /// A dashed limit line across each group (`None`: none for that group).
    pub limits: Vec<Option<f64>>,
    /// Legend entry of the limit lines.
    pub limit_name: String,
    /// Fixed y range; by default 0 to the highest bar or limit.
    pub y_range: Option<(f64, f64)>,
}

impl BarChart {
    /// An empty chart over `categories`.
    pub fn new(
        title: impl Into<String>,
        x_label: impl Into<String>,
        y_label: impl Into<String>,
        categories: Vec<String>,
    ) -> BarChart {
        BarChart {
            title: title.into(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            categories,
            series: Vec::new(),
            limits: Vec::new(),
            limit_name: String::new(),
            y_range: None,
        }
    }

    /// Adds a series of bars.
    pub fn with_series(mut self, series: BarSeries) -> BarChart {
        self.series.push(series);
        self
    }

    /// Sets a limit line per category, named `name` in the legend.
    pub fn with_limits(mut self, name: impl Into<String>, limits: Vec<Option<f64>>) -> BarChart {
        self.limit_name = name.into();
        self.limits = limits;
        self
    }

    fn finite(value: Option<f64>) -> Option<f64> {
        value.filter(|v| v.is_finite())
    }

    fn y_axis(&self) -> YAxis {
        let (y0, y1) = self.y_range.unwrap_or_else(|| {
            let high = self
                .series
                .iter()
                .flat_map(|s| s.values.iter().copied())
                .chain(self.limits.iter().copied())
                .filter_map(Self::finite)
                .fold(0.0f64, f64::max);
            (0.0, if high > 0.0 { high * 1.05 } else { 1.0 })
        });
        YAxis { y0, y1 }
    }

    /// The chart as an SVG document.
    pub fn to_svg(&self) -> String {
        let axis = self.y_axis();
        let mut out = String::new();
        open(&mut out, &self.title);
        y_grid(&mut out, axis);
        border_and_axis_labels(&mut out, &self.x_label, &self.y_label);
        let groups = self.categories.len().max(1) as f64;
        let group_w = PLOT_W / groups;
        let bars = self.series.len().max(1) as f64;
        let bar_w = group_w * 0.8 / bars;
        let clamp = |y: f64| axis.to_px(y).clamp(TOP, TOP + PLOT_H);
        for (g, category) in self.categories.iter().enumerate() {
            let gx = LEFT + group_w * g as f64;
            let _ = writeln!(
                out,
                r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
                gx + group_w / 2.0,
                TOP + PLOT_H + 18.0,
                escape(category)
            );
            for (k, series) in self.series.iter().enumerate() {
                let Some(value) = Self::finite(series.values.get(g).copied().flatten()) else {
                    continue;
                };
                let x = gx + group_w * 0.1 + bar_w * k as f64;
                let (top, bottom) = (clamp(value.max(0.0)), clamp(value.min(0.0)));
                let _ = writeln!(
                    out,
                    r#"<rect x="{x:.1}" y="{top:.1}" width="{:.1}" height="{:.1}" fill="{}">{}</rect>"#,
                    bar_w * 0.92,
                    (bottom - top).max(0.0),
                    color(k),
                    hover(Some(&format!("{category}, {}: {value:.4}", series.name)))
                );
            }
            if let Some(limit) = Self::finite(self.limits.get(g).copied().flatten()) {
                let y = clamp(limit);
                let _ = writeln!(
                    out,
                    r##"<line x1="{:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#000" stroke-width="2" stroke-dasharray="6,4">{}</line>"##,
                    gx + group_w * 0.05,
                    gx + group_w * 0.95,
                    hover(Some(&format!(
                        "{category}, {}: {limit:.4}",
                        self.limit_name
                    )))
                );
            }
        }
        for (k, series) in self.series.iter().enumerate() {
            legend_entry(&mut out, k, &series.name, "", true);
        }
        if self.limits.iter().any(|l| Self::finite(*l).is_some()) {
            let k = self.series.len();
            let ly = TOP + 10.0 + 20.0 * k as f64;
            let lx = LEFT + PLOT_W + 15.0;
            let _ = writeln!(
                out,
                r##"<line x1="{lx:.1}" y1="{ly:.1}" x2="{:.1}" y2="{ly:.1}" stroke="#000" stroke-width="2" stroke-dasharray="6,4"/><text x="{:.1}" y="{:.1}">{}</text>"##,
                lx + 20.0,
                lx + 26.0,
                ly + 4.0,
                escape(&self.limit_name)
            );
        }
        out.push_str("</svg>\n");
        out
    }

    /// Writes [`BarChart::to_svg`] to `path`.
    pub fn write(&self, path: &Path) -> Result<(), ReportError> {
        write_svg(path, &self.to_svg())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart() -> BarChart {
        BarChart::new(
            "utilization",
            "core",
            "U",
            vec!["core 0".into(), "core 1".into()],
        )
        .with_series(BarSeries::new("predicted", vec![Some(0.5), Some(0.25)]))
        .with_series(BarSeries::new("observed", vec![Some(0.4), None]))
        .with_limits("bound", vec![Some(0.75), None])
    }

    #[test]
    fn one_bar_per_present_value_and_a_limit_per_group_that_has_one() {
        let svg = chart().to_svg();
        // Background, border, 3 bars, 2 legend squares.
        assert_eq!(svg.matches("<rect").count(), 2 + 3 + 2, "{svg}");
        assert_eq!(
            svg.matches(r#"stroke-dasharray="6,4""#).count(),
            2,
            "limit and legend"
        );
        assert!(svg.contains("<title>core 0, predicted: 0.5000</title>"));
        assert!(svg.contains("<title>core 0, bound: 0.7500</title>"));
        assert!(
            !svg.contains("core 1, observed"),
            "no bar for a missing value"
        );
        assert_eq!(svg, chart().to_svg(), "deterministic");
    }

    #[test]
    fn bars_are_proportional_to_their_values() {
        let svg = chart().with_series(BarSeries::new("x", vec![])).to_svg();
        let heights: Vec<f64> = svg
            .lines()
            .filter(|l| l.contains("<title>core 0, p") || l.contains("<title>core 0, o"))
            .map(|l| {
                let h = l.split(r#"height=""#).nth(1).unwrap();
                h[..h.find('"').unwrap()].parse().unwrap()
            })
            .collect();
        assert_eq!(heights.len(), 2);
        assert!(
            (heights[0] / heights[1] - 0.5 / 0.4).abs() < 0.01,
            "{heights:?}"
        );
    }
}
