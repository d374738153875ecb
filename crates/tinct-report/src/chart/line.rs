//! [`LineChart`]: series of (x, y) points drawn as lines, markers or
//! steps, with an optional log2 x axis and labelled vertical marker lines.

use super::{
    HEIGHT, LEFT, PLOT_H, PLOT_W, TOP, YAxis, border_and_axis_labels, color, escape, hover, label,
    legend_entry, nice_ticks, open, write_svg, y_grid,
};
use crate::ReportError;
use std::fmt::Write;
use std::path::Path;

/// How a series is drawn.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SeriesStyle {
    /// A solid line with a marker at every point (measurements).
    #[default]
    LineWithMarkers,
    /// A solid line.
    Line,
    /// A dashed line (theory, bounds).
    Dashed,
    /// Markers only.
    Markers,
    /// A step function: each point's y holds until the next point's x
    /// (empirical CDFs, histogram outlines).
    Steps,
}

impl SeriesStyle {
    fn draws_line(self) -> bool {
        self != SeriesStyle::Markers
    }

    fn draws_markers(self) -> bool {
        matches!(self, SeriesStyle::Markers | SeriesStyle::LineWithMarkers)
    }

    fn dash_attribute(self) -> &'static str {
        if self == SeriesStyle::Dashed {
            r#" stroke-dasharray="6,4""#
        } else {
            ""
        }
    }
}

/// One named series of (x, y) points.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// Legend entry.
    pub name: String,
    /// Points in drawing order; non-finite values are skipped.
    pub points: Vec<(f64, f64)>,
    /// How it is drawn.
    pub style: SeriesStyle,
    /// Hover labels of the markers, one per point (empty: none).
    pub labels: Vec<String>,
    /// Points drawn even when the series is thinned (`true` at their
    /// index; empty: none), and what they are, for the chart's note.
    pub kept: (Vec<bool>, String),
}

impl Series {
    /// A series named `name` drawn in `style`.
    pub fn new(name: impl Into<String>, style: SeriesStyle, points: Vec<(f64, f64)>) -> Series {
        Series {
            name: name.into(),
            points,
            style,
            labels: Vec::new(),
            kept: (Vec::new(), String::new()),
        }
    }

    /// Series from `items`, each read by `point` as a point `(series name,
    /// style, x, y)` or as none: one series per name, in the order the
    /// names first come, drawn in the style of its first point.
    pub fn grouped<T>(
        items: impl IntoIterator<Item = T>,
        point: impl FnMut(T) -> Option<(String, SeriesStyle, f64, f64)>,
    ) -> Vec<Series> {
        let mut series: Vec<Series> = Vec::new();
        for (name, style, x, y) in items.into_iter().filter_map(point) {
            match series.iter_mut().find(|s| s.name == name) {
                Some(s) => s.points.push((x, y)),
                None => series.push(Series::new(name, style, vec![(x, y)])),
            }
        }
        series
    }

    /// The same series with the points `keep` marks drawn even when it is
    /// thinned (see [`MAX_DRAWN_POINTS`]); `what` names them in the note
    /// (`every miss`).
    pub fn with_kept(mut self, keep: Vec<bool>, what: impl Into<String>) -> Series {
        self.kept = (keep, what.into());
        self
    }

    /// The same series with a hover label per point (shown on the markers).
    pub fn with_labels(mut self, labels: Vec<String>) -> Series {
        self.labels = labels;
        self
    }
}

/// A series with more points than this is thinned when drawn: per pixel
/// column of the plot, the points of lowest and highest y (the extremes a
/// reader sees), in their order, and every point it keeps
/// ([`Series::with_kept`]); the chart says so below the plot. 1M markers
/// once made a 98 MB page.
pub const MAX_DRAWN_POINTS: usize = 2 * PLOT_W as usize;

/// Indices of the points (`(x px, y px)`) drawn of a series: all of them up
/// to [`MAX_DRAWN_POINTS`], else the lowest and highest per pixel column
/// and those `keep` marks, in order.
fn thinned(points: &[(f64, f64)], keep: &[bool]) -> Vec<usize> {
    if points.len() <= MAX_DRAWN_POINTS {
        return (0..points.len()).collect();
    }
    let mut extremes: std::collections::BTreeMap<i64, (usize, usize)> = Default::default();
    for (i, &(x, y)) in points.iter().enumerate() {
        let column = (x - LEFT).floor().clamp(0.0, PLOT_W - 1.0) as i64;
        let (low, high) = extremes.entry(column).or_insert((i, i));
        if y < points[*low].1 {
            *low = i;
        }
        if y > points[*high].1 {
            *high = i;
        }
    }
    let mut drawn = vec![false; points.len()];
    for (low, high) in extremes.into_values() {
        drawn[low] = true;
        drawn[high] = true;
    }
    (0..points.len())
        .filter(|&i| drawn[i] || keep.get(i).copied().unwrap_or(false))
        .collect()
}

/// What the chart says of a thinned series: how many of its points are
/// drawn and which.
fn thinning_note(series: &Series, drawn: usize, total: usize) -> String {
    let kept = if series.kept.1.is_empty() {
        String::new()
    } else {
        format!(", and {}", series.kept.1)
    };
    format!(
        "thinned: '{}' draws {drawn} of {total} points (per pixel column the lowest and \
         highest{kept})",
        series.name
    )
}

/// A line chart with a title, axis labels and any number of series.
#[derive(Clone, Debug, PartialEq)]
pub struct LineChart {
    /// Title above the plot.
    pub title: String,
    /// Label of the x axis.
    pub x_label: String,
    /// Label of the y axis.
    pub y_label: String,
    /// The lines.
    pub series: Vec<Series>,
    /// Fixed x range; by default the data's range.
    pub x_range: Option<(f64, f64)>,
    /// Fixed y range; by default the data's range (including 0 when
    /// [`y_from_zero`](Self::y_from_zero)).
    pub y_range: Option<(f64, f64)>,
    /// The default y range includes 0 (true unless changed).
    pub y_from_zero: bool,
    /// Log2 x axis (sizes), ticks at powers of two labelled `4K`, `1M`, ...;
    /// points with x ≤ 0 are skipped.
    pub log2_x: bool,
    /// Labelled vertical lines at these x values (e.g. cache sizes).
    pub x_markers: Vec<(f64, String)>,
}

impl LineChart {
    /// An empty chart.
    pub fn new(
        title: impl Into<String>,
        x_label: impl Into<String>,
        y_label: impl Into<String>,
    ) -> LineChart {
        LineChart {
            title: title.into(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            series: Vec::new(),
            x_range: None,
            y_range: None,
            y_from_zero: true,
            log2_x: false,
            x_markers: Vec::new(),
        }
    }

    /// Adds a series drawn as a line with markers.
    pub fn with_series(self, name: impl Into<String>, points: Vec<(f64, f64)>) -> LineChart {
        self.add_series(Series::new(name, SeriesStyle::default(), points))
    }

    /// Adds `series` (any style).
    pub fn add_series(mut self, series: Series) -> LineChart {
        self.series.push(series);
        self
    }

    /// Fixes the y range (e.g. 0..1 for ratios).
    pub fn with_y_range(mut self, low: f64, high: f64) -> LineChart {
        self.y_range = Some((low, high));
        self
    }

    /// Fixes the x range.
    pub fn with_x_range(mut self, low: f64, high: f64) -> LineChart {
        self.x_range = Some((low, high));
        self
    }

    /// The point as drawn: x through the log2 axis; `None` if it cannot be
    /// drawn (non-finite, or x ≤ 0 on a log axis).
    fn drawable(&self, (x, y): (f64, f64)) -> Option<(f64, f64)> {
        let x = if self.log2_x {
            (x > 0.0).then(|| x.log2())?
        } else {
            x
        };
        (x.is_finite() && y.is_finite()).then_some((x, y))
    }

    fn data_range(&self, pick: impl Fn((f64, f64)) -> f64, include_zero: bool) -> (f64, f64) {
        let values = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().filter_map(|&p| self.drawable(p)))
            .map(&pick);
        let (mut low, mut high) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| {
            (l.min(v), h.max(v))
        });
        if !low.is_finite() {
            (low, high) = (0.0, 1.0);
        }
        if include_zero {
            low = low.min(0.0);
        }
        if high - low < 1e-12 {
            high = low + 1.0;
        }
        (low, high)
    }

    /// The chart as an SVG document.
    pub fn to_svg(&self) -> String {
        let (x0, x1) = match self.x_range {
            Some((low, high)) if self.log2_x => (low.max(f64::MIN_POSITIVE).log2(), high.log2()),
            Some(range) => range,
            None => self.data_range(|p| p.0, false),
        };
        let (y0, y1) = self
            .y_range
            .unwrap_or_else(|| self.data_range(|p| p.1, self.y_from_zero));
        let axis = YAxis { y0, y1 };
        let sx = |x: f64| LEFT + (x - x0) / (x1 - x0) * PLOT_W;
        let mut out = String::new();
        open(&mut out, &self.title);
        for tick in self.x_ticks(x0, x1) {
            let x = sx(tick);
            let _ = writeln!(
                out,
                r##"<line x1="{x:.1}" y1="{TOP:.1}" x2="{x:.1}" y2="{:.1}" stroke="#e5e5e5"/><text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
                TOP + PLOT_H,
                TOP + PLOT_H + 18.0,
                self.x_label_of(tick)
            );
        }
        y_grid(&mut out, axis);
        border_and_axis_labels(&mut out, &self.x_label, &self.y_label);
        for (x, text) in &self.x_markers {
            let Some((x, _)) = self.drawable((*x, 0.0)) else {
                continue;
            };
            let x = sx(x);
            if !(LEFT..=LEFT + PLOT_W).contains(&x) {
                continue;
            }
            let _ = writeln!(
                out,
                r##"<line x1="{x:.1}" y1="{TOP:.1}" x2="{x:.1}" y2="{:.1}" stroke="#888" stroke-dasharray="2,3"/><text x="{:.1}" y="{:.1}" font-size="10" fill="#555">{}</text>"##,
                TOP + PLOT_H,
                x + 3.0,
                TOP + 12.0,
                escape(text)
            );
        }
        let mut notes = Vec::new();
        for (k, series) in self.series.iter().enumerate() {
            let color = color(k);
            let dash = series.style.dash_attribute();
            let all: Vec<(usize, (f64, f64))> = series
                .points
                .iter()
                .enumerate()
                .filter_map(|(i, &p)| {
                    let (x, y) = self.drawable(p)?;
                    Some((i, (sx(x), axis.to_px(y))))
                })
                .collect();
            let pixels: Vec<(f64, f64)> = all.iter().map(|&(_, p)| p).collect();
            let keep: Vec<bool> = all
                .iter()
                .map(|&(i, _)| series.kept.0.get(i).copied().unwrap_or(false))
                .collect();
            let drawn = thinned(&pixels, &keep);
            if drawn.len() < all.len() {
                notes.push(thinning_note(series, drawn.len(), all.len()));
            }
            let points: Vec<(f64, f64, Option<&str>)> = drawn
                .iter()
                .map(|&d| {
                    let (i, (x, y)) = all[d];
                    (x, y, series.labels.get(i).map(String::as_str))
                })
                .collect();
            if series.style.draws_line() && points.len() > 1 {
                let mut path: Vec<String> = Vec::with_capacity(points.len() * 2);
                for (i, (x, y, _)) in points.iter().enumerate() {
                    if series.style == SeriesStyle::Steps && i > 0 {
                        // Hold the previous y until this x, then rise or fall.
                        path.push(format!("{x:.1},{:.1}", points[i - 1].1));
                    }
                    path.push(format!("{x:.1},{y:.1}"));
                }
                let _ = writeln!(
                    out,
                    r#"<polyline fill="none" stroke="{color}" stroke-width="2"{dash} points="{}"/>"#,
                    path.join(" ")
                );
            }
            for (x, y, text) in points.iter().filter(|_| series.style.draws_markers()) {
                let _ = writeln!(
                    out,
                    r#"<circle cx="{x:.1}" cy="{y:.1}" r="3" fill="{color}">{}</circle>"#,
                    hover(*text)
                );
            }
            legend_entry(&mut out, k, &series.name, dash, false);
        }
        for (k, note) in notes.iter().enumerate() {
            let _ = writeln!(
                out,
                r##"<text x="4" y="{:.1}" font-size="10" fill="#555">{}</text>"##,
                HEIGHT - 3.0 - 11.0 * k as f64,
                escape(note)
            );
        }
        out.push_str("</svg>\n");
        out
    }

    /// Ticks of the x axis (in drawn coordinates): round values, or whole
    /// powers of two (at most about 10) on a log2 axis.
    fn x_ticks(&self, x0: f64, x1: f64) -> Vec<f64> {
        if !self.log2_x {
            return nice_ticks(x0, x1, 8);
        }
        let step = ((x1 - x0) / 10.0).ceil().max(1.0);
        let first = x0.ceil();
        let count = ((x1 - first) / step + 1e-9).floor().max(-1.0) as i64;
        (0..=count).map(|i| first + step * i as f64).collect()
    }

    fn x_label_of(&self, tick: f64) -> String {
        if self.log2_x {
            size_label(tick.exp2())
        } else {
            label(tick)
        }
    }

    /// Writes [`LineChart::to_svg`] to `path`.
    pub fn write(&self, path: &Path) -> Result<(), ReportError> {
        write_svg(path, &self.to_svg())
    }
}

/// A byte size as a short tick label: `512`, `4K`, `1M`, `2G`.
fn size_label(bytes: f64) -> String {
    let b = bytes.round() as u64;
    match b {
        _ if b >= 1 << 30 => format!("{}G", b >> 30),
        _ if b >= 1 << 20 => format!("{}M", b >> 20),
        _ if b >= 1 << 10 => format!("{}K", b >> 10),
        _ => b.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A million markers are thinned to the extremes per pixel
    /// column plus the kept points, in order, and the chart says so; a
    /// series within the limit is drawn whole, without a note.
    #[test]
    fn grouped_series_keep_their_names_in_first_seen_order() {
        let series = Series::grouped(1..=5u32, |i| {
            let (name, style) = match i % 3 {
                0 => return None,
                1 => ("odd-ish", SeriesStyle::Line),
                _ => ("even-ish", SeriesStyle::Dashed),
            };
            Some((name.to_string(), style, f64::from(i), f64::from(i * 10)))
        });
        let names: Vec<&str> = series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["odd-ish", "even-ish"]);
        assert_eq!(series[0].points, [(1.0, 10.0), (4.0, 40.0)]);
        assert_eq!(series[1].points, [(2.0, 20.0), (5.0, 50.0)]);
        assert_eq!(series[1].style, SeriesStyle::Dashed);
    }

    #[test]
    fn a_huge_series_is_thinned_to_its_extremes_and_kept_points_and_says_so() {
        let n = 1_000_000usize;
        // A saw tooth, with two "misses" that are neither extreme of their column.
        let points: Vec<(f64, f64)> = (0..n).map(|i| (i as f64, (i % 97) as f64)).collect();
        let mut keep = vec![false; n];
        keep[500_010] = true;
        keep[700_020] = true;
        let series =
            Series::new("observed", SeriesStyle::Markers, points).with_kept(keep, "every miss");
        let svg = LineChart::new("t", "job", "ms").add_series(series).to_svg();
        let circles = svg.matches("<circle").count();
        assert!(
            circles <= MAX_DRAWN_POINTS + 2,
            "{circles} markers drawn of {n}"
        );
        assert!(svg.len() < 200_000, "{} bytes", svg.len());
        let y = |v: f64| (YAxis { y0: 0.0, y1: 96.0 }).to_px(v);
        let sx = |x: f64| LEFT + x / (n as f64 - 1.0) * PLOT_W;
        for (x, v) in [(500_010.0, 500_010.0 % 97.0), (700_020.0, 700_020.0 % 97.0)] {
            let marker = format!(r#"cx="{:.1}" cy="{:.1}""#, sx(x), y(v));
            assert!(svg.contains(&marker), "kept point {x} drawn ({marker})");
        }
        assert!(
            svg.contains(&format!(r#"cy="{:.1}""#, y(96.0))),
            "the highest"
        );
        assert!(
            svg.contains(&format!(r#"cy="{:.1}""#, y(0.0))),
            "the lowest"
        );
        let note = format!(
            "thinned: 'observed' draws {circles} of {n} points (per pixel column the \
             lowest and highest, and every miss)"
        );
        assert!(svg.contains(&note), "the note: {note}");
        let small = LineChart::new("t", "job", "ms")
            .add_series(Series::new(
                "observed",
                SeriesStyle::Markers,
                (0..100).map(|i| (i as f64, i as f64)).collect(),
            ))
            .to_svg();
        assert_eq!(small.matches("<circle").count(), 100);
        assert!(!small.contains("thinned"));
    }

    #[test]
    fn svg_has_every_series_and_label_escaped() {
        let chart = LineChart::new("ratio <vs> U", "utilization", "schedulable")
            .with_series("cata", vec![(0.5, 1.0), (1.0, 0.5)])
            .with_series("b&fd", vec![(0.5, 0.8), (1.0, f64::NAN)])
            .with_y_range(0.0, 1.0);
        let svg = chart.to_svg();
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
        assert!(svg.contains("ratio &lt;vs&gt; U") && svg.contains("b&amp;fd"));
        assert_eq!(
            svg.matches("<polyline").count(),
            1,
            "a one-point series draws no line"
        );
        assert_eq!(
            svg.matches("<circle").count(),
            3,
            "the NaN point is skipped"
        );
        assert_eq!(svg, chart.to_svg(), "deterministic");
    }

    #[test]
    fn styles_decide_lines_markers_and_dashes() {
        let points = vec![(1.0, 2.0), (2.0, 4.0)];
        let chart = LineChart::new("t", "x", "y")
            .add_series(Series::new("line", SeriesStyle::Line, points.clone()))
            .add_series(Series::new("theory", SeriesStyle::Dashed, points.clone()))
            .add_series(Series::new("dots", SeriesStyle::Markers, points));
        let svg = chart.to_svg();
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert_eq!(svg.matches("<circle").count(), 2, "only the marker series");
        // The dashed line and its legend entry.
        assert_eq!(svg.matches(r#"stroke-dasharray="6,4""#).count(), 2);
    }

    #[test]
    fn log2_axis_skips_nonpositive_x_and_labels_sizes() {
        let mut chart = LineChart::new("t", "size", "ns").add_series(Series::new(
            "s",
            SeriesStyle::Markers,
            vec![(0.0, 1.0), (1024.0, 2.0), (4096.0, 3.0)],
        ));
        chart.log2_x = true;
        chart.x_markers = vec![(2048.0, "L1 <".into()), (1e9, "off the axis".into())];
        let svg = chart.to_svg();
        assert_eq!(svg.matches("<circle").count(), 2);
        assert!(svg.contains(">1K<") && svg.contains(">2K<") && svg.contains(">4K<"));
        assert!(svg.contains("L1 &lt;") && !svg.contains("off the axis"));
        assert!(!svg.contains("NaN") && !svg.contains("inf"));
    }

    #[test]
    fn y_from_zero_can_be_turned_off() {
        let mut chart =
            LineChart::new("t", "x", "y").with_series("s", vec![(5.0, 100.0), (6.0, 110.0)]);
        assert!(chart.to_svg().contains(">0<"), "the y axis starts at 0");
        chart.y_from_zero = false;
        let svg = chart.to_svg();
        assert!(!svg.contains(">0<"), "the y axis starts at the data");
        assert!(svg.contains(">102<") && svg.contains(">110<"));
    }

    #[test]
    fn steps_hold_each_value_until_the_next_x_and_labels_become_tooltips() {
        let chart = LineChart::new("cdf", "x", "F").add_series(
            Series::new(
                "s",
                SeriesStyle::Steps,
                vec![(0.0, 0.0), (1.0, 0.5), (2.0, 1.0)],
            )
            .with_labels(vec!["a".into(), "b<".into(), "c".into()]),
        );
        let svg = chart.to_svg();
        let points = svg
            .split(r#"points=""#)
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .unwrap();
        // Three points, two of them preceded by the corner that holds the previous y.
        assert_eq!(points.split(' ').count(), 5, "{points}");
        assert_eq!(svg.matches("<circle").count(), 0, "steps draw no markers");

        let labelled = LineChart::new("t", "x", "y").add_series(
            Series::new("m", SeriesStyle::Markers, vec![(0.0, 1.0), (1.0, 2.0)])
                .with_labels(vec!["job 0".into(), "job <1>".into()]),
        );
        let svg = labelled.to_svg();
        assert!(
            svg.contains("<title>job 0</title>") && svg.contains("<title>job &lt;1&gt;</title>")
        );
    }
}
