//! Self-contained HTML pages: one file with its style, its script and its
//! charts inline, which loads nothing from anywhere (a Content Security
//! Policy forbids every fetch), so it can be mailed, archived and opened
//! offline.
//!
//! A [`Page`] is sections of [`Block`]s: text, warnings, lists, tables
//! (cells may be shaded as a heat map), charts (SVG from [`crate::chart`],
//! the same documents the run and bench directories hold) and collapsible
//! details. Interactivity is what the charts need and no more: hovering a
//! point or a bar shows its label (SVG `<title>`), the mouse wheel zooms a
//! chart around the pointer, dragging pans it and a double click resets it.
//! The page records script errors, failed loads and CSP violations in
//! `data-tinct-errors` on `<html>` and sets `data-tinct-ready="yes"` once
//! its script has run, so a headless browser test can check both.

use crate::chart::escape;
use base64::Engine;
use std::fmt::Write;

/// A whole page.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Page {
    /// `<title>` and top heading.
    pub title: String,
    /// A line under the title.
    pub subtitle: String,
    /// The sections, in order.
    pub sections: Vec<Section>,
}

/// A headed part of a page.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Section {
    /// Heading.
    pub heading: String,
    /// Content.
    pub blocks: Vec<Block>,
}

impl Section {
    /// An empty section headed `heading`.
    pub fn new(heading: impl Into<String>) -> Section {
        Section {
            heading: heading.into(),
            blocks: Vec::new(),
        }
    }

    /// Adds a block.
    pub fn push(&mut self, block: Block) -> &mut Section {
        self.blocks.push(block);
        self
    }
}

/// How a cell or a line reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Tone {
    /// Plain.
    #[default]
    Plain,
    /// Good news (green).
    Good,
    /// Bad news (red, bold).
    Bad,
}

impl Tone {
    fn class(self) -> &'static str {
        match self {
            Tone::Plain => "",
            Tone::Good => " class=\"good\"",
            Tone::Bad => " class=\"bad\"",
        }
    }
}

/// One table cell.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Cell {
    /// Text.
    pub text: String,
    /// Tone.
    pub tone: Tone,
    /// Heat-map shade in [0, 1] (the cell's background), if any.
    pub heat: Option<f64>,
}

impl Cell {
    /// A plain cell.
    pub fn new(text: impl Into<String>) -> Cell {
        Cell {
            text: text.into(),
            ..Cell::default()
        }
    }

    /// A cell in `tone`.
    pub fn toned(text: impl Into<String>, tone: Tone) -> Cell {
        Cell {
            text: text.into(),
            tone,
            heat: None,
        }
    }

    /// A cell shaded by `heat` (clamped to [0, 1]).
    pub fn heat(text: impl Into<String>, heat: f64) -> Cell {
        Cell {
            text: text.into(),
            tone: Tone::Plain,
            heat: Some(if heat.is_finite() {
                heat.clamp(0.0, 1.0)
            } else {
                0.0
            }),
        }
    }
}

impl<T: Into<String>> From<T> for Cell {
    fn from(text: T) -> Cell {
        Cell::new(text)
    }
}

/// A table with a header row.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    /// Column titles.
    pub header: Vec<String>,
    /// Rows of cells.
    pub rows: Vec<Vec<Cell>>,
}

impl Table {
    /// An empty table with these column titles.
    pub fn new(header: &[&str]) -> Table {
        Table {
            header: header.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row.
    pub fn row(&mut self, cells: Vec<Cell>) -> &mut Table {
        self.rows.push(cells);
        self
    }
}

/// A piece of a section.
#[derive(Clone, Debug, PartialEq)]
pub enum Block {
    /// A paragraph.
    Text(String),
    /// A line in a tone (a verdict, a warning).
    Line(String, Tone),
    /// A bulleted list.
    List(Vec<(String, Tone)>),
    /// A table.
    Table(Table),
    /// Charts side by side, each an SVG document from [`crate::chart`]
    /// (inlined: tinct's own, made interactive by the page's script).
    Charts(Vec<String>),
    /// SVG files from elsewhere (a bench directory), each `(name, text)`:
    /// shown as images from `data:` URLs, where no script in them runs and
    /// nothing they name is fetched — never inlined.
    Images(Vec<(String, String)>),
    /// Preformatted text (a file's content).
    Pre(String),
    /// A collapsed part, opened by clicking its summary.
    Details(String, Vec<Block>),
}

const STYLE: &str = "
body{font-family:sans-serif;margin:1.5em auto;max-width:1500px;padding:0 1em;color:#222}
h1{font-size:1.5em;margin-bottom:.2em}h2{font-size:1.2em;border-bottom:1px solid #ccc;margin-top:1.6em}
.sub{color:#555;margin-top:0}
table{border-collapse:collapse;margin:.6em 0;font-size:.9em}
th,td{border:1px solid #ccc;padding:.25em .55em;text-align:left;vertical-align:top}
th{background:#f2f2f2}
.good{color:#05693a}.bad{color:#b00020;font-weight:bold}
.charts{display:flex;flex-wrap:wrap;gap:.8em}
svg.tinct-chart{max-width:100%;height:auto;border:1px solid #e3e3e3;cursor:zoom-in}
pre{background:#f7f7f7;padding:.6em;overflow:auto;max-height:30em;font-size:.85em}
details{margin:.6em 0}summary{cursor:pointer;color:#0a4f8a}
.hint{color:#777;font-size:.85em}
";

/// Runs first: records every error the page meets.
const WATCH: &str = "(function(){var d=document.documentElement,n=0;
function note(){n+=1;d.setAttribute('data-tinct-errors',String(n));}
d.setAttribute('data-tinct-errors','0');
window.addEventListener('error',note,true);
window.addEventListener('unhandledrejection',note);
document.addEventListener('securitypolicyviolation',note);
var e=console.error;console.error=function(){note();return e.apply(console,arguments);};})();";

/// Runs last: zoom (wheel), pan (drag) and reset (double click) on every
/// chart, then says the page is ready.
const INTERACT: &str = "(function(){
document.querySelectorAll('svg.tinct-chart').forEach(function(svg){
var base=svg.getAttribute('viewBox').split(' ').map(Number),vb=base.slice(),drag=null;
function set(){svg.setAttribute('viewBox',vb.join(' '));}
function at(e){var r=svg.getBoundingClientRect();return[vb[0]+(e.clientX-r.left)/r.width*vb[2],vb[1]+(e.clientY-r.top)/r.height*vb[3]];}
svg.addEventListener('wheel',function(e){e.preventDefault();var p=at(e),k=e.deltaY<0?0.8:1.25;
var w=Math.min(base[2],vb[2]*k),h=Math.min(base[3],vb[3]*k);
vb=[p[0]-(p[0]-vb[0])*w/vb[2],p[1]-(p[1]-vb[1])*h/vb[3],w,h];set();},{passive:false});
svg.addEventListener('mousedown',function(e){drag=[e.clientX,e.clientY,vb[0],vb[1]];e.preventDefault();});
window.addEventListener('mouseup',function(){drag=null;});
svg.addEventListener('mousemove',function(e){if(!drag)return;var r=svg.getBoundingClientRect();
vb[0]=drag[2]-(e.clientX-drag[0])/r.width*vb[2];vb[1]=drag[3]-(e.clientY-drag[1])/r.height*vb[3];set();});
svg.addEventListener('dblclick',function(){vb=base.slice();set();});});
document.documentElement.setAttribute('data-tinct-ready','yes');})();";

fn block(out: &mut String, b: &Block) {
    match b {
        Block::Text(t) => {
            let _ = writeln!(out, "<p>{}</p>", escape(t));
        }
        Block::Line(t, tone) => {
            let _ = writeln!(out, "<p{}>{}</p>", tone.class(), escape(t));
        }
        Block::List(items) => {
            out.push_str("<ul>\n");
            for (t, tone) in items {
                let _ = writeln!(out, "<li{}>{}</li>", tone.class(), escape(t));
            }
            out.push_str("</ul>\n");
        }
        Block::Table(t) => table(out, t),
        Block::Charts(svgs) => {
            out.push_str("<div class=\"charts\">\n");
            for svg in svgs {
                out.push_str(svg);
            }
            out.push_str("</div>\n");
        }
        Block::Images(images) => {
            out.push_str("<div class=\"charts\">\n");
            for (name, svg) in images {
                let _ = writeln!(
                    out,
                    "<img class=\"chart-image\" alt=\"{}\" src=\"data:image/svg+xml;base64,{}\">",
                    escape(name),
                    base64::engine::general_purpose::STANDARD.encode(svg)
                );
            }
            out.push_str("</div>\n");
        }
        Block::Pre(t) => {
            let _ = writeln!(out, "<pre>{}</pre>", escape(t));
        }
        Block::Details(summary, blocks) => {
            let _ = writeln!(out, "<details><summary>{}</summary>", escape(summary));
            for b in blocks {
                block(out, b);
            }
            out.push_str("</details>\n");
        }
    }
}

fn table(out: &mut String, t: &Table) {
    out.push_str("<table>\n<tr>");
    for h in &t.header {
        let _ = write!(out, "<th>{}</th>", escape(h));
    }
    out.push_str("</tr>\n");
    for row in &t.rows {
        out.push_str("<tr>");
        for c in row {
            let style = c.heat.map_or_else(String::new, |h| {
                // White to the palette's blue (#0072B2), by heat.
                let mix = |full: f64| (255.0 - (255.0 - full) * h).round() as u8;
                format!(
                    " style=\"background:#{:02x}{:02x}{:02x}\"",
                    mix(0.0),
                    mix(114.0),
                    mix(178.0)
                )
            });
            let _ = write!(out, "<td{}{style}>{}</td>", c.tone.class(), escape(&c.text));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
}

/// A CSP source naming the inline script `text` by its SHA-256.
fn script_hash(text: &str) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(text.as_bytes());
    format!(
        "'sha256-{}'",
        base64::engine::general_purpose::STANDARD.encode(digest)
    )
}

impl Page {
    /// The page as one HTML document.
    pub fn to_html(&self) -> String {
        let mut out = String::with_capacity(64 * 1024);
        out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
        // Only the page's own two scripts may run: named by their hashes,
        // no 'unsafe-inline', so no script or handler that input smuggles
        // into the page runs.
        let _ = writeln!(
            out,
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
             script-src {} {}; style-src 'unsafe-inline'; img-src data:\">",
            script_hash(WATCH),
            script_hash(INTERACT)
        );
        let _ = writeln!(out, "<title>{}</title>", escape(&self.title));
        let _ = writeln!(out, "<script>{WATCH}</script>");
        let _ = writeln!(out, "<style>{STYLE}</style>\n</head>\n<body>");
        let _ = writeln!(out, "<h1>{}</h1>", escape(&self.title));
        if !self.subtitle.is_empty() {
            let _ = writeln!(out, "<p class=\"sub\">{}</p>", escape(&self.subtitle));
        }
        out.push_str(
            "<p class=\"hint\">Charts: hover a point for its value, wheel to zoom, drag to pan, \
             double-click to reset.</p>\n",
        );
        for s in &self.sections {
            let _ = writeln!(out, "<h2>{}</h2>", escape(&s.heading));
            for b in &s.blocks {
                block(&mut out, b);
            }
        }
        let _ = writeln!(out, "<script>{INTERACT}</script>\n</body>\n</html>");
        out
    }
}

/// A JSON value as a two-column table: one row per leaf (`a.b.c`), arrays of
/// plain values joined by commas, arrays of objects one compact object per
/// line (a machine description, bench options).
pub fn json_table(value: &serde_json::Value) -> Table {
    fn leaf(v: &serde_json::Value) -> String {
        match v {
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Null => "—".into(),
            serde_json::Value::Array(items) if items.iter().all(|i| !i.is_object()) => {
                items.iter().map(leaf).collect::<Vec<_>>().join(", ")
            }
            serde_json::Value::Array(items) => items
                .iter()
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join("\n"),
            other => other.to_string(),
        }
    }
    fn walk(prefix: &str, v: &serde_json::Value, t: &mut Table) {
        match v {
            serde_json::Value::Object(map) => {
                for (k, v) in map {
                    let key = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    walk(&key, v, t);
                }
            }
            other => {
                t.row(vec![Cell::new(prefix), Cell::new(leaf(other))]);
            }
        }
    }
    let mut t = Table::new(&["fact", "value"]);
    walk("", value, &mut t);
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LineChart;

    fn page() -> Page {
        let mut s = Section::new("Verdict <1>");
        s.push(Block::Line("SCHEDULABLE & fine".into(), Tone::Good));
        let mut t = Table::new(&["task", "CPU 0"]);
        t.row(vec![Cell::new("a"), Cell::heat("3", 1.0)]);
        s.push(Block::Table(t));
        s.push(Block::Charts(vec![
            LineChart::new("c", "x", "y")
                .with_series("s", vec![(0.0, 1.0)])
                .to_svg(),
        ]));
        s.push(Block::Details(
            "raw".into(),
            vec![Block::Pre("{\"a\": \"<b>\"}".into())],
        ));
        Page {
            title: "tinct report".into(),
            subtitle: "run x".into(),
            sections: vec![s],
        }
    }

    #[test]
    fn the_page_is_one_document_that_fetches_nothing() {
        let html = page().to_html();
        assert!(html.starts_with("<!DOCTYPE html>") && html.trim_end().ends_with("</html>"));
        assert!(html.contains("default-src 'none'"));
        for fetch in ["src=", "href=", "@import", "url("] {
            assert!(!html.contains(fetch), "{fetch} in the page");
        }
        assert!(html.contains("Verdict &lt;1&gt;") && html.contains("SCHEDULABLE &amp; fine"));
        assert!(html.contains("{&quot;a&quot;: &quot;&lt;b&gt;&quot;}"));
        assert!(html.contains("class=\"tinct-chart\""));
        assert!(
            html.contains("background:#0072b2"),
            "full heat is the palette blue"
        );
        assert!(html.find("data-tinct-errors").unwrap() < html.find("<style>").unwrap());
        assert!(html.contains("data-tinct-ready"));
    }

    #[test]
    fn json_facts_become_rows() {
        let t = json_table(&serde_json::json!({
            "cpu": "x", "online": [0, 1], "caches": [{"name": "L1"}], "vm": null, "n": 2,
            "nested": {"a": true}
        }));
        let rows: Vec<(String, String)> = t
            .rows
            .iter()
            .map(|r| (r[0].text.clone(), r[1].text.clone()))
            .collect();
        assert!(rows.contains(&("online".into(), "0, 1".into())));
        assert!(rows.contains(&("caches".into(), "{\"name\":\"L1\"}".into())));
        assert!(rows.contains(&("vm".into(), "—".into())));
        assert!(rows.contains(&("nested.a".into(), "true".into())));
    }
}
