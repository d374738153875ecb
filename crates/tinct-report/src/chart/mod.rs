//! Hand-written SVG charts: the one chart implementation of tinct (every
//! bench, every experiment, the run directory's figures and the HTML
//! report plot through it).
//!
//! [`LineChart`] draws series of (x, y) points (lines, markers, steps);
//! [`BarChart`] draws grouped bars (kim2013 Fig. 10). Both share the frame
//! drawn here: the title, round ticks ([`nice_ticks`]), axis labels and the
//! legend. Points and bars may carry a hover label (an SVG `<title>`, which
//! browsers show as a tooltip). No fonts are needed and the output is
//! deterministic.

mod bar;
mod line;

pub use bar::{BarChart, BarSeries};
pub use line::{LineChart, MAX_DRAWN_POINTS, Series, SeriesStyle};

use crate::ReportError;
use std::fmt::Write;
use std::path::Path;

const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 450.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 170.0;
const TOP: f64 = 45.0;
const BOTTOM: f64 = 60.0;
const PLOT_W: f64 = WIDTH - LEFT - RIGHT;
const PLOT_H: f64 = HEIGHT - TOP - BOTTOM;

/// Colour-blind-safe palette (Okabe-Ito), cycled.
pub const COLORS: [&str; 8] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000",
];

/// The colour of series number `k`.
fn color(k: usize) -> &'static str {
    COLORS[k % COLORS.len()]
}

/// The y axis of a chart: data range `[y0, y1]` onto the plot's height.
#[derive(Clone, Copy)]
struct YAxis {
    y0: f64,
    y1: f64,
}

impl YAxis {
    fn to_px(self, y: f64) -> f64 {
        TOP + PLOT_H - (y - self.y0) / (self.y1 - self.y0) * PLOT_H
    }
}

/// The opening of a chart: the root element, white background and title.
fn open(out: &mut String, title: &str) {
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="tinct-chart" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(out, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        out,
        r#"<text x="{:.1}" y="25" text-anchor="middle" font-size="15">{}</text>"#,
        LEFT + PLOT_W / 2.0,
        escape(title)
    );
}

/// Horizontal grid lines with round labels on the y axis.
fn y_grid(out: &mut String, axis: YAxis) {
    for tick in nice_ticks(axis.y0, axis.y1, 6) {
        let y = axis.to_px(tick);
        let _ = writeln!(
            out,
            r##"<line x1="{LEFT:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#e5e5e5"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            LEFT + PLOT_W,
            LEFT - 6.0,
            y + 4.0,
            label(tick)
        );
    }
}

/// The plot's border and both axis labels.
fn border_and_axis_labels(out: &mut String, x_label: &str, y_label: &str) {
    let _ = writeln!(
        out,
        r#"<rect x="{LEFT:.1}" y="{TOP:.1}" width="{PLOT_W:.1}" height="{PLOT_H:.1}" fill="none" stroke="black"/>"#
    );
    let _ = writeln!(
        out,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
        LEFT + PLOT_W / 2.0,
        HEIGHT - 15.0,
        escape(x_label)
    );
    let _ = writeln!(
        out,
        r#"<text transform="translate(18 {:.1}) rotate(-90)" text-anchor="middle">{}</text>"#,
        TOP + PLOT_H / 2.0,
        escape(y_label)
    );
}

/// Legend entry number `k`: a short line (dashed if `dash` says so) or
/// square in the series' colour, and its name.
fn legend_entry(out: &mut String, k: usize, name: &str, dash: &str, square: bool) {
    let color = color(k);
    let ly = TOP + 10.0 + 20.0 * k as f64;
    let lx = LEFT + PLOT_W + 15.0;
    if square {
        let _ = write!(
            out,
            r#"<rect x="{lx:.1}" y="{:.1}" width="14" height="10" fill="{color}"/>"#,
            ly - 5.0
        );
    } else {
        let _ = write!(
            out,
            r#"<line x1="{lx:.1}" y1="{ly:.1}" x2="{:.1}" y2="{ly:.1}" stroke="{color}" stroke-width="2"{dash}/>"#,
            lx + 20.0
        );
    }
    let _ = writeln!(
        out,
        r#"<text x="{:.1}" y="{:.1}">{}</text>"#,
        lx + 26.0,
        ly + 4.0,
        escape(name)
    );
}

/// A hover label as an SVG `<title>` child, or nothing.
fn hover(label: Option<&str>) -> String {
    label.map_or_else(String::new, |l| format!("<title>{}</title>", escape(l)))
}

/// Writes an SVG document to `path`.
fn write_svg(path: &Path, svg: &str) -> Result<(), ReportError> {
    std::fs::write(path, svg).map_err(|source| ReportError::Write {
        path: path.display().to_string(),
        source,
    })
}

/// Round tick values (steps of 1, 2 or 5 times a power of ten) covering
/// [low, high] with at most about `target` ticks.
pub fn nice_ticks(low: f64, high: f64, target: usize) -> Vec<f64> {
    if !(low.is_finite() && high.is_finite()) || high <= low || target == 0 {
        return Vec::new();
    }
    let raw = (high - low) / target as f64;
    let magnitude = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * magnitude);
    let first = (low / step).ceil() as i64;
    let last = (high / step + 1e-9).floor() as i64;
    (first..=last).map(|i| i as f64 * step).collect()
}

/// A tick value with at most three decimals and no trailing zeros.
fn label(value: f64) -> String {
    let text = format!("{:.3}", value);
    let text = text.trim_end_matches('0').trim_end_matches('.');
    if text == "-0" {
        "0".to_string()
    } else {
        text.to_string()
    }
}

/// Escapes text for SVG and HTML (element content and attribute values).
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_cover_the_range() {
        assert_eq!(
            nice_ticks(0.0, 1.0, 5),
            vec![0.0, 0.2, 0.4, 0.6000000000000001, 0.8, 1.0]
        );
        assert_eq!(nice_ticks(0.0, 100.0, 4), vec![0.0, 50.0, 100.0]);
        assert!(nice_ticks(1.0, 1.0, 4).is_empty());
    }

    #[test]
    fn labels_trim_zeros_and_escape_markup() {
        assert_eq!(label(2.500), "2.5");
        assert_eq!(label(-0.0001), "0");
        assert_eq!(escape(r#"<a & "b">"#), "&lt;a &amp; &quot;b&quot;&gt;");
        assert_eq!(hover(Some("x<y")), "<title>x&lt;y</title>");
        assert_eq!(hover(None), "");
    }
}
