//! Line charts as SVG.
//!
//! Benches describe a chart as a [`LineChart`] and render it through the
//! [`SvgRenderer`] trait, so the renderer can be switched (to tinct-report's
//! writer once it exists) without touching any bench. [`BuiltinSvg`] is a
//! small self-contained renderer: axes, ticks, a legend, lines, dashed lines
//! and markers, linear or log2 x axis.

use serde::Serialize;
use std::fmt::Write as _;

/// How a series is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SeriesStyle {
    /// A solid line with markers (measurements).
    LineWithMarkers,
    /// A solid line.
    Line,
    /// A dashed line (theory, bounds).
    Dashed,
    /// Markers only.
    Markers,
}

/// One named series of (x, y) points.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Series {
    /// Legend label.
    pub name: String,
    /// Points in drawing order.
    pub points: Vec<(f64, f64)>,
    /// Drawing style.
    pub style: SeriesStyle,
}

impl Series {
    /// A series named `name` with `style`.
    pub fn new(name: impl Into<String>, style: SeriesStyle, points: Vec<(f64, f64)>) -> Self {
        Self {
            name: name.into(),
            points,
            style,
        }
    }
}

/// A chart with one or more series.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LineChart {
    /// Title on top.
    pub title: String,
    /// X axis label.
    pub x_label: String,
    /// Y axis label.
    pub y_label: String,
    /// Log2 x axis (sizes); points with x <= 0 are dropped.
    pub log2_x: bool,
    /// Y axis starts at zero (otherwise at the smallest value).
    pub y_from_zero: bool,
    /// The series.
    pub series: Vec<Series>,
    /// Vertical marker lines with a label (e.g. cache sizes).
    pub x_markers: Vec<(f64, String)>,
}

impl LineChart {
    /// An empty chart.
    pub fn new(
        title: impl Into<String>,
        x_label: impl Into<String>,
        y_label: impl Into<String>,
    ) -> Self {
        Self {
            title: title.into(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            log2_x: false,
            y_from_zero: true,
            series: Vec::new(),
            x_markers: Vec::new(),
        }
    }

    /// Adds a series.
    pub fn with_series(mut self, series: Series) -> Self {
        self.series.push(series);
        self
    }
}

/// Renders a chart to an SVG document.
pub trait SvgRenderer {
    /// The SVG text of `chart`.
    fn render(&self, chart: &LineChart) -> String;
}

/// The built-in renderer (no dependencies, no fonts needed).
#[derive(Debug, Clone, Copy, Default)]
pub struct BuiltinSvg;

const WIDTH: f64 = 880.0;
const HEIGHT: f64 = 460.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 310.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 60.0;
const COLORS: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];

impl SvgRenderer for BuiltinSvg {
    fn render(&self, chart: &LineChart) -> String {
        let tx = |x: f64| if chart.log2_x { x.log2() } else { x };
        let points = chart
            .series
            .iter()
            .flat_map(|s| s.points.iter())
            .filter(|(x, y)| x.is_finite() && y.is_finite() && (!chart.log2_x || *x > 0.0));
        let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
        for &(x, y) in points {
            x0 = x0.min(tx(x));
            x1 = x1.max(tx(x));
            y0 = y0.min(y);
            y1 = y1.max(y);
        }
        if x0 > x1 {
            (x0, x1, y0, y1) = (0.0, 1.0, 0.0, 1.0);
        }
        if chart.y_from_zero {
            y0 = y0.min(0.0);
        }
        if (x1 - x0).abs() < f64::EPSILON {
            x1 = x0 + 1.0;
        }
        let (y_ticks, y0, y1) = nice_ticks(y0, y1);
        let plot_w = WIDTH - LEFT - RIGHT;
        let plot_h = HEIGHT - TOP - BOTTOM;
        let px = |x: f64| LEFT + (tx(x) - x0) / (x1 - x0) * plot_w;
        let py = |y: f64| TOP + plot_h - (y - y0) / (y1 - y0) * plot_h;

        let mut svg = String::new();
        let _ = writeln!(
            svg,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">"#
        );
        let _ = writeln!(svg, r#"<rect width="100%" height="100%" fill="white"/>"#);
        let _ = writeln!(
            svg,
            r#"<text x="{}" y="22" text-anchor="middle" font-size="15">{}</text>"#,
            LEFT + plot_w / 2.0,
            escape(&chart.title)
        );
        // Axes and grid.
        let _ = writeln!(
            svg,
            r#"<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="none" stroke="black"/>"#
        );
        for &y in &y_ticks {
            let (right, sy, label) = (LEFT + plot_w, py(y), format_tick(y));
            let (label_x, label_y) = (LEFT - 6.0, sy + 4.0);
            let _ = writeln!(
                svg,
                r##"<line x1="{LEFT}" x2="{right}" y1="{sy:.1}" y2="{sy:.1}" stroke="#ddd"/><text x="{label_x}" y="{label_y:.1}" text-anchor="end">{label}</text>"##
            );
        }
        for x in x_ticks(x0, x1, chart.log2_x) {
            let sx = LEFT + (x - x0) / (x1 - x0) * plot_w;
            let label = if chart.log2_x {
                format_size_tick(x.exp2())
            } else {
                format_tick(x)
            };
            let _ = writeln!(
                svg,
                r##"<line x1="{sx:.1}" x2="{sx:.1}" y1="{TOP}" y2="{}" stroke="#eee"/><text x="{sx:.1}" y="{}" text-anchor="middle">{label}</text>"##,
                TOP + plot_h,
                TOP + plot_h + 16.0
            );
        }
        for (x, label) in &chart.x_markers {
            if chart.log2_x && *x <= 0.0 {
                continue;
            }
            let sx = px(*x);
            if !(LEFT..=LEFT + plot_w).contains(&sx) {
                continue;
            }
            let _ = writeln!(
                svg,
                r##"<line x1="{sx:.1}" x2="{sx:.1}" y1="{TOP}" y2="{}" stroke="#888" stroke-dasharray="2,3"/><text x="{:.1}" y="{}" font-size="10" fill="#555">{}</text>"##,
                TOP + plot_h,
                sx + 3.0,
                TOP + 12.0,
                escape(label)
            );
        }
        let _ = writeln!(
            svg,
            r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
            LEFT + plot_w / 2.0,
            HEIGHT - 18.0,
            escape(&chart.x_label)
        );
        let _ = writeln!(
            svg,
            r#"<text transform="translate(18,{}) rotate(-90)" text-anchor="middle">{}</text>"#,
            TOP + plot_h / 2.0,
            escape(&chart.y_label)
        );
        // Series and legend.
        for (i, series) in chart.series.iter().enumerate() {
            let color = COLORS[i % COLORS.len()];
            let pts: Vec<(f64, f64)> = series
                .points
                .iter()
                .filter(|(x, y)| x.is_finite() && y.is_finite() && (!chart.log2_x || *x > 0.0))
                .map(|&(x, y)| (px(x), py(y)))
                .collect();
            let line = !matches!(series.style, SeriesStyle::Markers);
            let markers = matches!(
                series.style,
                SeriesStyle::Markers | SeriesStyle::LineWithMarkers
            );
            let dash = if series.style == SeriesStyle::Dashed {
                r#" stroke-dasharray="6,4""#
            } else {
                ""
            };
            if line && pts.len() > 1 {
                let path: Vec<String> = pts.iter().map(|(x, y)| format!("{x:.1},{y:.1}")).collect();
                let _ = writeln!(
                    svg,
                    r#"<polyline fill="none" stroke="{color}" stroke-width="2"{dash} points="{}"/>"#,
                    path.join(" ")
                );
            }
            if markers {
                for (x, y) in &pts {
                    let _ = writeln!(
                        svg,
                        r#"<circle cx="{x:.1}" cy="{y:.1}" r="3" fill="{color}"/>"#
                    );
                }
            }
            let ly = TOP + 10.0 + 18.0 * i as f64;
            let lx = WIDTH - RIGHT + 12.0;
            let _ = writeln!(
                svg,
                r#"<line x1="{lx}" x2="{}" y1="{ly}" y2="{ly}" stroke="{color}" stroke-width="2"{dash}/><text x="{}" y="{}">{}</text>"#,
                lx + 24.0,
                lx + 30.0,
                ly + 4.0,
                escape(&series.name)
            );
        }
        svg.push_str("</svg>\n");
        svg
    }
}

/// Ticks at 1, 2 or 5 × 10^k covering `[lo, hi]`, and the widened range.
fn nice_ticks(lo: f64, hi: f64) -> (Vec<f64>, f64, f64) {
    let span = if hi - lo > f64::EPSILON {
        hi - lo
    } else {
        hi.abs().max(1.0)
    };
    let raw = span / 5.0;
    let magnitude = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|&s| s >= raw)
        .unwrap_or(10.0 * magnitude);
    let start = (lo / step).floor() * step;
    let end = ((if hi - lo > f64::EPSILON {
        hi
    } else {
        lo + span
    }) / step)
        .ceil()
        * step;
    let ticks = (0..=((end - start) / step).round() as usize)
        .map(|i| start + step * i as f64)
        .collect();
    (ticks, start, end)
}

fn x_ticks(x0: f64, x1: f64, log2: bool) -> Vec<f64> {
    if log2 {
        let step = ((x1 - x0) / 10.0).ceil().max(1.0);
        let mut t = x0.ceil();
        let mut ticks = Vec::new();
        while t <= x1 + 1e-9 {
            ticks.push(t);
            t += step;
        }
        ticks
    } else {
        nice_ticks(x0, x1)
            .0
            .into_iter()
            .filter(|&t| t >= x0 - 1e-9 && t <= x1 + 1e-9)
            .collect()
    }
}

fn format_tick(v: f64) -> String {
    if v == v.round() && v.abs() < 1e9 {
        format!("{}", v as i64)
    } else {
        format!("{v:.3}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    }
}

fn format_size_tick(bytes: f64) -> String {
    let b = bytes.round() as u64;
    if b >= 1 << 30 {
        format!("{}G", b >> 30)
    } else if b >= 1 << 20 {
        format!("{}M", b >> 20)
    } else if b >= 1 << 10 {
        format!("{}K", b >> 10)
    } else {
        format!("{b}")
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_every_series_and_escapes() {
        let chart = LineChart::new("a < b", "x", "y")
            .with_series(Series::new(
                "measured",
                SeriesStyle::LineWithMarkers,
                vec![(1.0, 2.0), (2.0, 4.0)],
            ))
            .with_series(Series::new(
                "theory",
                SeriesStyle::Dashed,
                vec![(1.0, 1.0), (2.0, 3.0)],
            ));
        let svg = BuiltinSvg.render(&chart);
        assert!(svg.starts_with("<svg"));
        assert!(svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert_eq!(svg.matches("<circle").count(), 2);
        assert!(svg.contains("a &lt; b"));
        assert!(svg.contains("stroke-dasharray=\"6,4\""));
    }

    #[test]
    fn log_axis_drops_nonpositive_x() {
        let mut chart = LineChart::new("t", "size", "ns").with_series(Series::new(
            "s",
            SeriesStyle::Markers,
            vec![(0.0, 1.0), (1024.0, 2.0), (4096.0, 3.0)],
        ));
        chart.log2_x = true;
        let svg = BuiltinSvg.render(&chart);
        assert_eq!(svg.matches("<circle").count(), 2);
        assert!(svg.contains(">1K<") && svg.contains(">4K<"));
        assert!(!svg.contains("NaN") && !svg.contains("inf"));
    }

    #[test]
    fn nice_ticks_cover_the_range() {
        let (ticks, lo, hi) = nice_ticks(0.0, 97.0);
        assert_eq!(lo, 0.0);
        assert!(hi >= 97.0);
        assert_eq!(ticks, vec![0.0, 20.0, 40.0, 60.0, 80.0, 100.0]);
        let (ticks, _, _) = nice_ticks(5.0, 5.0);
        assert!(ticks.len() >= 2);
    }
}
