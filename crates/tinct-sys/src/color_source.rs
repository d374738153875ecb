//! Where a command's page-colour bits come from: the one resolver that
//! every colouring command (`tinct run`, `exec`, `demo`, every bench, the
//! Python package) goes through, so that one machine gets one answer and
//! each command can say where it came from.
//!
//! The sources, first that answers wins:
//!
//! 1. the command's flag (`--color-bits 12-16`);
//! 2. the environment, `TINCT_COLOR_BITS=12-16` ([`ENV_VAR`]);
//! 3. the task set's `[platform] color_bits`;
//! 4. the machine file ([`crate::machine_file`], written by
//!    `tinct doctor --save`);
//! 5. the rule derived from the cache topology ([`crate::cache_slices`]),
//!    which refuses to guess where the bits cannot be known (a way size
//!    that is not a power of two: a sliced or hashed LLC).
//!
//! When none answers, [`ColorSourceError::Unknown`] says so in one line
//! and names the three ways to give the bits. A command that needs no
//! colours never calls the resolver.
//!
//! `TINCT_TOPOLOGY_ROOT` ([`crate::TOPOLOGY_ROOT_VAR`]) makes step 5 read the
//! cache topology from a copy of another machine's `/sys` and `/proc`
//! (a fixture tree as `tinct doctor --root` reads): CI runs the colouring
//! tests again as if on a machine whose bits cannot be derived.

use std::path::{Path, PathBuf};

use tinct_base::InputError;
use tinct_base::geometry::ColorGeometry;

use crate::SysRoot;
use crate::cache_slices::{explicit_color_geometry, machine_color_geometry};
use crate::machine_file::MachineFile;

/// `TINCT_COLOR_BITS`: the colour bits for every command and the shim, e.g.
/// `12-16`.
pub const ENV_VAR: &str = "TINCT_COLOR_BITS";

/// How to give the bits, for every message that asks for them.
pub const HOW_TO_GIVE: &str = "give them with --color-bits 12-15, with TINCT_COLOR_BITS=12-15, \
     or once for this machine with `tinct doctor --save --color-bits 12-15` (the machine file; \
     `tinct doctor` says which bits are safe to assume here)";

/// Which source gave the bits.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case", tag = "kind"))]
pub enum ColorSource {
    /// A command-line flag, e.g. `--color-bits`.
    Flag {
        /// The flag's name.
        flag: String,
    },
    /// The environment variable [`ENV_VAR`].
    Environment,
    /// A task set's `[platform] color_bits`.
    TaskSet {
        /// The task-set file.
        file: PathBuf,
    },
    /// The machine file.
    MachineFile {
        /// Its path.
        file: PathBuf,
    },
    /// The rule derived from the cache topology.
    Derived,
}

impl std::fmt::Display for ColorSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Flag { flag } => write!(f, "{flag}"),
            Self::Environment => write!(f, "{ENV_VAR}"),
            Self::TaskSet { file } => {
                write!(
                    f,
                    "the task set's [platform] color_bits ({})",
                    file.display()
                )
            }
            Self::MachineFile { file } => write!(f, "the machine file {}", file.display()),
            Self::Derived => write!(f, "the cache topology"),
        }
    }
}

/// What a command knows of the bits before resolving: its flag and its
/// task set, each optional.
#[derive(Debug, Clone, Copy, Default)]
pub struct ColorRequest<'a> {
    /// The flag's name and its text, e.g. `("--color-bits", "12-16")`.
    pub flag: Option<(&'a str, &'a str)>,
    /// The task-set file and its `[platform] color_bits`.
    pub task_set: Option<(&'a Path, &'a [u32])>,
}

impl<'a> ColorRequest<'a> {
    /// A request with the flag `flag` given as `text` (if given).
    pub fn flag(flag: &'a str, text: Option<&'a str>) -> Self {
        Self {
            flag: text.map(|t| (flag, t)),
            task_set: None,
        }
    }
}

/// The resolved colours: the geometry (with the rule and its reason), the
/// bits, and the source.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct ResolvedColors {
    /// The colours, the rule and why.
    pub geometry: ColorGeometry,
    /// The physical address bits, consecutive from the page offset.
    pub bits: Vec<u32>,
    /// Which source gave them.
    pub source: ColorSource,
    /// How a machine file says its bits were established.
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub evidence: Option<String>,
}

impl ResolvedColors {
    /// The number of colours.
    pub fn colors(&self) -> u64 {
        self.geometry.colors.colors
    }

    /// `32 colours on physical address bits 12-16 (from --color-bits)`;
    /// derived bits add the rule and its reason, a machine file its
    /// evidence.
    pub fn describe(&self) -> String {
        let colors = if self.bits.is_empty() {
            "one colour, no colour bits".to_string()
        } else {
            format!(
                "{} colours on physical address bits {}",
                self.colors(),
                crate::format_cpu_list(&self.bits)
            )
        };
        match (&self.source, &self.evidence) {
            (ColorSource::Derived, _) => format!(
                "{colors} (from {}: {}: {})",
                self.source, self.geometry.rule, self.geometry.reason
            ),
            (_, Some(evidence)) => format!("{colors} (from {}; {evidence})", self.source),
            (_, None) => format!("{colors} (from {})", self.source),
        }
    }
}

/// Why no colour bits could be had.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ColorSourceError {
    /// A source gave bits that are not usable: bad input, at the file and
    /// field of the source (a flag or a variable is the field, with its
    /// value, and no file).
    #[error("{error}")]
    Invalid {
        /// The source that gave them.
        from: ColorSource,
        /// Where, what was expected and what was found (boxed: an error
        /// stays small beside the resolved colours).
        error: Box<InputError>,
    },
    /// The machine file exists but cannot be read.
    #[error("{0}")]
    MachineFile(InputError),
    /// No source gave bits and the derived rule cannot.
    #[error("the page-colour bits of this machine are unknown ({why}): {HOW_TO_GIVE}")]
    Unknown {
        /// Why the derived rule refused, in words.
        why: String,
    },
}

impl ColorSourceError {
    /// The error as tinct's input error: bits a source gave badly at that
    /// source's file and field, and bits no source gives as `flag` (the
    /// option that would have given them) expecting known bits, with the
    /// ways to give them and why the derived rule refused.
    pub fn into_input(self, flag: &str) -> InputError {
        match self {
            ColorSourceError::Invalid { error, .. } => *error,
            ColorSourceError::MachineFile(error) => error,
            ColorSourceError::Unknown { why } => InputError::new(
                "",
                flag,
                format!("known page-colour bits ({HOW_TO_GIVE})"),
                format!("none: the page-colour bits of this machine are unknown ({why})"),
            ),
        }
    }
}

/// The most colour bits a pool can file pages by (tinct-mem's address
/// functions; a task set's `color_bits` has the same limit).
pub const MAX_BITS: usize = 16;

const EXPECTED_BITS: &str = "consecutive physical address bits from the page offset, e.g. 12-16";

/// Resolves the colour bits of `request` for pages of `page_bytes`, from
/// the first source that gives them (see the module documentation).
pub fn resolve(
    request: ColorRequest<'_>,
    page_bytes: u64,
) -> Result<ResolvedColors, ColorSourceError> {
    let env = std::env::var(ENV_VAR).ok().filter(|t| !t.trim().is_empty());
    let machine_file = || MachineFile::load();
    let topology_root = SysRoot::cache_topology();
    let mut resolved = resolve_from(
        request,
        env.as_deref(),
        machine_file,
        &topology_root,
        page_bytes,
    )?;
    // A copied tree in place of this machine's caches is said, always.
    if resolved.source == ColorSource::Derived && !topology_root.is_live() {
        resolved.geometry.reason = format!(
            "the caches of {} (TINCT_TOPOLOGY_ROOT), not this machine's; {}",
            topology_root.base().display(),
            resolved.geometry.reason
        );
    }
    Ok(resolved)
}

/// [`resolve`] with its environment given: the text of [`ENV_VAR`], the
/// machine file's reader and the root of the cache topology.
pub fn resolve_from(
    request: ColorRequest<'_>,
    env: Option<&str>,
    machine_file: impl FnOnce() -> Result<Option<(PathBuf, MachineFile)>, InputError>,
    topology_root: &SysRoot,
    page_bytes: u64,
) -> Result<ResolvedColors, ColorSourceError> {
    let from_text = |text: &str, source: ColorSource, place: InputError| {
        let bits = tinct_base::list::parse_list(text).map_err(|e| ColorSourceError::Invalid {
            from: source.clone(),
            error: Box::new(InputError {
                expected: EXPECTED_BITS.into(),
                found: e.to_string(),
                ..place.clone()
            }),
        })?;
        from_bits(bits, source, place, page_bytes)
    };
    // Where each source's bits are, for its errors (what was expected and
    // found filled in there).
    let place = |file: String, field: String| InputError::new(file, field, "", "");
    if let Some((flag, text)) = request.flag {
        return from_text(
            text,
            ColorSource::Flag { flag: flag.into() },
            place(String::new(), format!("{flag} {text}")),
        );
    }
    if let Some(text) = env {
        return from_text(
            text,
            ColorSource::Environment,
            place(String::new(), format!("{ENV_VAR}={text}")),
        );
    }
    if let Some((file, bits)) = request.task_set {
        return from_bits(
            bits.to_vec(),
            ColorSource::TaskSet { file: file.into() },
            place(file.display().to_string(), "platform.color_bits".into()),
            page_bytes,
        );
    }
    if let Some((
        file,
        MachineFile {
            colors: Some(colors),
            ..
        },
    )) = machine_file().map_err(ColorSourceError::MachineFile)?
    {
        let place = place(file.display().to_string(), "colors.bits".into());
        let mut resolved = from_text(
            &colors.bits,
            ColorSource::MachineFile { file: file.clone() },
            place,
        )?;
        resolved.evidence = colors.evidence;
        return Ok(resolved);
    }
    let unknown = |why: String| ColorSourceError::Unknown {
        why: why.replace("; give them explicitly", ""),
    };
    let geometry = machine_color_geometry(topology_root, page_bytes).map_err(unknown)?;
    let bits = match geometry.colors.color_bits() {
        Ok(bits) => bits.collect(),
        Err(e) => return Err(unknown(format!("last-level cache: {e}"))),
    };
    Ok(ResolvedColors {
        geometry,
        bits,
        source: ColorSource::Derived,
        evidence: None,
    })
}

/// `tinct doctor --save`: resolves the colour bits in force (`flag`,
/// `TINCT_COLOR_BITS`, the machine file, the derived rule) and saves them
/// at [`machine_file::path()`](crate::machine_file::path) with their source and, when `probe` ran, its verdict as
/// evidence. Returns what was saved, in words; the error says why nothing
/// could be: bits given badly where they were given, or no bits known here
/// as `--save` expecting them (with the ways to give them).
pub fn save_in_force(
    flag: Option<&str>,
    probe: Option<&crate::color_probe::ProbeReport>,
) -> Result<String, InputError> {
    let page = rustix::param::page_size() as u64;
    let resolved =
        resolve(ColorRequest::flag("--color-bits", flag), page).map_err(|e| match e {
            ColorSourceError::Unknown { why } => InputError::new(
                "",
                "--save",
                format!("known page-colour bits to save ({HOW_TO_GIVE})"),
                format!(
                    "nothing to save: the page-colour bits of this machine are unknown ({why})"
                ),
            ),
            given_badly => given_badly.into_input("--color-bits"),
        })?;
    let bits = crate::format_cpu_list(&resolved.bits);
    let mut evidence = format!("from {}", resolved.source);
    if let Some(level) = probe.and_then(|p| p.last_level()) {
        evidence.push_str(&format!(
            "; colour probe: {} {} (ratio {:.2}){}",
            level.cache,
            level.verdict.label(),
            level.ratio,
            if probe.is_some_and(|p| p.virtual_machine) {
                ", on a virtual machine"
            } else {
                ""
            }
        ));
    }
    let path = crate::machine_file::path();
    crate::machine_file::save_colors(&path, &bits, &evidence)?;
    Ok(format!(
        "saved colour bits {bits} ({evidence}) in {}: every tinct command on this machine uses \
         them unless --color-bits, TINCT_COLOR_BITS or a task set says otherwise",
        path.display()
    ))
}

/// The colours of `bits` from `source`; `place` is where they were given
/// (file and field), for the error.
fn from_bits(
    bits: Vec<u32>,
    source: ColorSource,
    place: InputError,
    page_bytes: u64,
) -> Result<ResolvedColors, ColorSourceError> {
    if bits.len() > MAX_BITS {
        return Err(ColorSourceError::Invalid {
            from: source,
            error: Box::new(InputError {
                expected: format!(
                    "at most {MAX_BITS} colour bits ({} colours, the most a pool files pages by)",
                    1u64 << MAX_BITS
                ),
                found: format!("{} bits", bits.len()),
                ..place
            }),
        });
    }
    let geometry =
        explicit_color_geometry(&bits, page_bytes, &source.to_string()).map_err(|_| {
            let shift = page_bytes.trailing_zeros();
            ColorSourceError::Invalid {
                from: source.clone(),
                error: Box::new(InputError {
                    expected: format!(
                        "consecutive physical address bits from the page offset bit {shift}, each \
                     below 64 (e.g. {shift}-{})",
                        shift + 4
                    ),
                    found: if bits.is_empty() {
                        "no bits".into()
                    } else {
                        crate::format_cpu_list(&bits)
                    },
                    ..place
                }),
            }
        })?;
    Ok(ResolvedColors {
        geometry,
        bits,
        source,
        evidence: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine_file::ColorsEntry;

    /// A tree with one L3 of `size_kib` KiB and `ways` ways, of an Intel
    /// family 6 model `model` CPU with `flags`.
    fn tree(size_kib: u64, ways: u32, model: u32, flags: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let cpuinfo = format!(
            "vendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: {model}\nflags\t\t: {flags}\n"
        );
        crate::testing::write_llc_tree(dir.path(), size_kib, ways, &cpuinfo).unwrap();
        dir
    }

    fn no_file() -> Result<Option<(PathBuf, MachineFile)>, InputError> {
        Ok(None)
    }

    fn file_with(bits: &str) -> Result<Option<(PathBuf, MachineFile)>, InputError> {
        Ok(Some((
            PathBuf::from("/etc/tinct/machine.toml"),
            MachineFile {
                colors: Some(ColorsEntry {
                    bits: bits.into(),
                    evidence: Some("probe said effective".into()),
                }),
                dram: None,
            },
        )))
    }

    #[test]
    fn the_first_source_that_answers_wins_in_order() {
        let vm = tree(300 << 10, 20, 207, "fpu hypervisor");
        let root = SysRoot::at(vm.path());
        let task_set = (Path::new("set.toml"), &[12u32, 13][..]);
        let all = ColorRequest {
            flag: Some(("--color-bits", "12-15")),
            task_set: Some(task_set),
        };
        let resolved = resolve_from(all, Some("12-14"), || file_with("12"), &root, 4096).unwrap();
        assert_eq!((resolved.bits.len(), resolved.colors()), (4, 16));
        assert_eq!(resolved.source.to_string(), "--color-bits");
        let no_flag = ColorRequest { flag: None, ..all };
        let resolved =
            resolve_from(no_flag, Some("12-14"), || file_with("12"), &root, 4096).unwrap();
        assert_eq!(
            (&resolved.source, resolved.colors()),
            (&ColorSource::Environment, 8)
        );
        let resolved = resolve_from(no_flag, None, || file_with("12"), &root, 4096).unwrap();
        assert_eq!(resolved.colors(), 4);
        assert!(
            resolved.describe().contains("set.toml"),
            "{}",
            resolved.describe()
        );
        let nothing = ColorRequest::default();
        let resolved = resolve_from(nothing, None, || file_with("12"), &root, 4096).unwrap();
        assert_eq!(resolved.colors(), 2);
        assert!(
            resolved
                .describe()
                .contains("machine file /etc/tinct/machine.toml")
                && resolved.describe().contains("probe said effective"),
            "{}",
            resolved.describe()
        );
    }

    #[test]
    fn a_vm_of_a_sliced_xeon_is_unknown_in_one_line_naming_three_ways() {
        let vm = tree(300 << 10, 20, 207, "fpu hypervisor");
        let err = resolve_from(
            ColorRequest::default(),
            None,
            no_file,
            &SysRoot::at(vm.path()),
            4096,
        )
        .unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, ColorSourceError::Unknown { .. }), "{text}");
        assert!(!text.contains('\n'), "{text}");
        for way in ["--color-bits", "TINCT_COLOR_BITS", "tinct doctor --save"] {
            assert!(text.contains(way), "{way}: {text}");
        }
        assert!(text.contains("not a power of two"), "{text}");
        // As input: the flag that would have given the bits is the field.
        let input = err.into_input("--color-bits");
        assert_eq!(
            (input.file.as_str(), input.field.as_str()),
            ("", "--color-bits")
        );
        assert!(
            input
                .expected
                .starts_with("known page-colour bits (give them with"),
            "{input}"
        );
        assert!(input.found.contains("not a power of two"), "{input}");
    }

    #[test]
    fn a_power_of_two_way_is_derived_and_says_so() {
        // An unsliced (Nehalem, model 26) 32 MiB 16-way L3: a 2 MiB way.
        let plain = tree(32 << 10, 16, 26, "fpu");
        let resolved = resolve_from(
            ColorRequest::default(),
            None,
            no_file,
            &SysRoot::at(plain.path()),
            4096,
        )
        .unwrap();
        assert_eq!(resolved.source, ColorSource::Derived);
        assert_eq!(resolved.bits, vec![12, 13, 14, 15, 16, 17, 18, 19, 20]);
        assert!(
            resolved.describe().contains("cache topology"),
            "{}",
            resolved.describe()
        );
    }

    #[test]
    fn bad_bits_from_any_source_are_bad_input_naming_it() {
        let root = SysRoot::at("/nonexistent");
        let flag = ColorRequest::flag("--color-bits", Some("12-x"));
        let err = resolve_from(flag, None, no_file, &root, 4096).unwrap_err();
        assert!(
            err.to_string().starts_with("--color-bits 12-x: expected"),
            "{err}"
        );
        let err =
            resolve_from(ColorRequest::default(), Some("13-15"), no_file, &root, 4096).unwrap_err();
        assert_eq!(
            err.to_string(),
            "TINCT_COLOR_BITS=13-15: expected consecutive physical address bits from the page \
             offset bit 12, each below 64 (e.g. 12-16), found 13-15"
        );
        assert!(matches!(
            err,
            ColorSourceError::Invalid {
                from: ColorSource::Environment,
                ..
            }
        ));
        let err = resolve_from(
            ColorRequest::default(),
            None,
            || file_with("12-70"),
            &root,
            4096,
        )
        .unwrap_err();
        assert!(
            err.to_string().contains("machine.toml: colors.bits"),
            "{err}"
        );
        let broken =
            || Err(InputError::new("/etc/tinct/machine.toml", "(TOML)", "x", "y").at_line(Some(3)));
        let err = resolve_from(ColorRequest::default(), None, broken, &root, 4096).unwrap_err();
        assert!(
            err.to_string().starts_with("/etc/tinct/machine.toml:3:"),
            "{err}"
        );
    }

    #[test]
    fn no_topology_is_unknown_not_a_guess() {
        let err = resolve_from(
            ColorRequest::default(),
            None,
            no_file,
            &SysRoot::at("/nonexistent"),
            4096,
        )
        .unwrap_err();
        assert!(matches!(err, ColorSourceError::Unknown { .. }), "{err}");
    }
}
