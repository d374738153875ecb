//! `tinct doctor`: what this machine offers for cache-aware real-time work
//! and what the user must change. [`diagnose`] gathers the facts under a
//! [`tinct_sys::SysRoot`] (plus live probes on `/`) and turns them into
//! [`Finding`]s; the CLI prints the same [`Report`] as a table or as JSON.

#![forbid(unsafe_code)]

mod checks;
pub mod color_probe;
mod facts;
pub mod text;

pub use checks::subject;
pub use facts::{Facts, MigrationSettings, TOPOLOGY_FILE};
pub use text::{doctor_json, doctor_text};

use std::path::PathBuf;
use tinct_base::InputError;
use tinct_base::geometry::GeometryError;
use tinct_sys::SysRoot;
use tinct_sys::topology::{ColorGeometry, PageColors};

/// How serious a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// Fine as it is.
    Ok,
    /// Works, but results or guarantees are weaker until fixed.
    Warning,
    /// The feature named in the subject cannot work until fixed.
    Blocker,
    /// A live probe that was not run (doctor was pointed at a fixture tree).
    NotProbed,
}

impl Level {
    /// Lower-case label for tables.
    pub fn label(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Warning => "warning",
            Self::Blocker => "blocker",
            Self::NotProbed => "not probed",
        }
    }
}

/// One line of the diagnosis.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Finding {
    /// What was examined, e.g. `RT throttling`.
    pub subject: String,
    /// Ok, warning, blocker or not probed.
    pub level: Level,
    /// What was found, in words and numbers.
    pub found: String,
    /// The concrete change to make (a command, sysctl or kernel argument), if any.
    pub fix: Option<String>,
}

/// One cache instance with its page colors, for the cache table.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CacheRow {
    /// `L1d`, `L2`, `L3`, ...
    pub name: String,
    /// Level.
    pub level: u8,
    /// `data`, `instruction` or `unified`.
    #[serde(rename = "type")]
    pub kind: tinct_sys::topology::CacheType,
    /// Capacity in bytes.
    pub size_bytes: u64,
    /// Associativity.
    pub ways: Option<u32>,
    /// Number of sets.
    pub sets: Option<u32>,
    /// Line size in bytes.
    pub line_bytes: Option<u32>,
    /// CPUs sharing this instance, e.g. `0-1`.
    pub shared_cpus: String,
    /// Page colors for the base page size.
    pub colors: Option<PageColors>,
}

/// Which cache partitioning mechanism this machine supports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Backend {
    /// Page coloring (tinct-mem) only.
    Coloring,
    /// Hardware cache allocation through resctrl only.
    Resctrl,
    /// Both.
    Both,
    /// Neither.
    None,
}

impl Backend {
    /// Lower-case label: `coloring`, `resctrl`, `both`, `none`.
    pub fn label(self) -> &'static str {
        match self {
            Self::Coloring => "coloring",
            Self::Resctrl => "resctrl",
            Self::Both => "both",
            Self::None => "none",
        }
    }
}

/// The result of `tinct doctor`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Report {
    /// The root the facts were read from.
    pub root: PathBuf,
    /// True if the root is `/` and live probes ran.
    pub live: bool,
    /// The diagnosis, one finding per subject.
    pub findings: Vec<Finding>,
    /// The cache hierarchy with page colors.
    pub caches: Vec<CacheRow>,
    /// The last-level cache's page colours under the rule the evidence
    /// supports (way size or sliced), with the reason; `None` if unknown.
    pub llc_colors: Option<ColorGeometry>,
    /// The cache partitioning backend summary.
    pub backend: Backend,
    /// Everything that was read, for machines.
    pub facts: Facts,
}

impl Report {
    /// The finding about `subject`, if any.
    pub fn finding(&self, subject: &str) -> Option<&Finding> {
        self.findings.iter().find(|f| f.subject == subject)
    }

    /// Number of findings at `level`.
    pub fn count(&self, level: Level) -> usize {
        self.findings.iter().filter(|f| f.level == level).count()
    }
}

/// What `--probe-colors` found: its report, or why it could not run.
pub type ColorProbe = Result<tinct_sys::color_probe::ProbeReport, tinct_sys::Error>;

/// The whole examination `tinct doctor` (and `tinct.doctor()` in Python)
/// makes: the diagnosis of the tree under `root` (`None`: this machine),
/// and, when `probe_colors`, the live colour probe with its finding added.
/// Refuses a `root` that is not a directory, saying what it found.
///
/// `color_bits` (`--color-bits`) are candidate LLC colour bits: the probe
/// tests them instead of the way-size rule's, and on the live system the
/// report says which bits the commands use and where they come from
/// (`tinct_sys::color_source`). Bad input (bits that are not bits of a
/// page colour, a root that is not a directory) names the flag and its
/// value as the field.
pub fn examine(
    root: Option<&std::path::Path>,
    probe_colors: bool,
    color_bits: Option<&str>,
) -> std::result::Result<(Report, Option<ColorProbe>), InputError> {
    let page = rustix::param::page_size() as u64;
    let given = color_bits
        .map(|text| {
            let field = format!("--color-bits {text}");
            let bits = tinct_base::list::parse_list(text)
                .map_err(|e| InputError::new("", &field, "bits such as 12-15", e.reason))?;
            PageColors::of_bits(&bits, page).map_err(|e| {
                let expected = match e {
                    GeometryError::ExplicitBits { page_shift, .. } => format!(
                        "consecutive address bits starting at the page offset bit {page_shift} \
                         (e.g. {page_shift}-{}), each below 64",
                        page_shift + 4
                    ),
                    other => format!("bits that colour pages of {page} bytes ({other})"),
                };
                InputError::new("", &field, expected, tinct_base::list::format_list(&bits))
            })?;
            Ok::<_, InputError>(bits)
        })
        .transpose()?;
    // The probe tests the bits given, else the bits in force (what the
    // commands would use; `--save` saves them with the probe's verdict).
    let given = given.or_else(|| {
        tinct_sys::color_source::resolve(Default::default(), page)
            .ok()
            .map(|resolved| resolved.bits)
    });
    let candidate = given
        .as_ref()
        .and_then(|bits| bits.first().zip(bits.last()))
        .map(|(&low, &high)| (low, high + 1));
    let root = match root {
        Some(dir) if !dir.is_dir() => {
            return Err(InputError::new(
                "",
                format!("--root {}", dir.display()),
                "a directory holding sys/ and proc/",
                if dir.exists() { "a file" } else { "nothing" },
            ));
        }
        Some(dir) => SysRoot::at(dir),
        None => SysRoot::live(),
    };
    let mut report = diagnose(&root);
    if root.is_live() {
        report.findings.push(colours_in_force(color_bits));
    }
    let probe = probe_colors.then(|| {
        let options = tinct_sys::color_probe::ProbeOptions {
            llc_bits: candidate,
            ..Default::default()
        };
        let probe = tinct_sys::color_probe::probe_colors(options);
        report.findings.push(color_probe::finding(&probe));
        probe
    });
    Ok((report, probe))
}

/// The colour bits every colouring command would use here, and their
/// source; or why there are none, with the ways to give them.
fn colours_in_force(flag: Option<&str>) -> Finding {
    use tinct_sys::color_source::{ColorRequest, resolve};
    let page = rustix::param::page_size() as u64;
    match resolve(ColorRequest::flag("--color-bits", flag), page) {
        Ok(resolved) => Finding {
            subject: subject::COLOURS_IN_FORCE.into(),
            level: Level::Ok,
            found: resolved.describe(),
            fix: None,
        },
        Err(e) => Finding {
            subject: subject::COLOURS_IN_FORCE.into(),
            level: Level::Warning,
            found: e.to_string(),
            fix: None,
        },
    }
}

/// Reads everything under `root` (and runs the live probes if `root` is `/`)
/// and returns the diagnosis. Never fails: a fact that cannot be read becomes
/// a warning that says why.
pub fn diagnose(root: &SysRoot) -> Report {
    let facts = Facts::gather(root);
    let page_bytes = facts.page_size.as_ref().map_or(4096, |p| p.bytes);
    let llc_colors = checks::llc_colors(&facts).and_then(Result::ok);
    let llc = facts
        .topology
        .as_ref()
        .and_then(|t| t.last_level_caches().first().map(|c| (*c).clone()));
    let caches = facts
        .topology
        .as_ref()
        .map(|t| {
            t.caches
                .iter()
                .map(|c| CacheRow {
                    name: c.name(),
                    level: c.level,
                    kind: c.kind,
                    size_bytes: c.size_bytes,
                    ways: c.ways,
                    sets: c.sets,
                    line_bytes: c.line_bytes,
                    shared_cpus: tinct_sys::cpulist::format_cpu_list(&c.shared_cpus),
                    // The LLC under its rule (fewer colours when sliced),
                    // none where the rule refuses (not the way size's).
                    colors: match (&llc_colors, &llc) {
                        (Some(geometry), Some(llc)) if llc == c => Some(geometry.colors.clone()),
                        (None, Some(llc)) if llc == c => None,
                        _ => c.page_colors(page_bytes),
                    },
                })
                .collect()
        })
        .unwrap_or_default();
    let (findings, backend) = checks::findings(&facts);
    Report {
        root: root.base().to_path_buf(),
        live: root.is_live(),
        findings,
        caches,
        llc_colors,
        backend,
        facts,
    }
}
