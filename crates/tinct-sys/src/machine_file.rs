//! The machine file: what a machine's sysfs cannot tell and a user (or
//! `tinct doctor --save`) has established once — the physical address bits
//! of the page colour, the DRAM bank and controller functions that
//! `tinct bench dram-map` found — so that every command on that machine
//! uses them without a flag.
//!
//! It lives at [`DEFAULT_PATH`] (`/etc/tinct/machine.toml`), or where
//! `TINCT_MACHINE_FILE` points:
//!
//! ```toml
//! # tinct machine file (tinct doctor --save)
//! [colors]
//! bits = "12-16"                     # the LLC's page-colour bits
//! evidence = "colour probe: effective with bits 12-16"
//!
//! [dram]
//! bank_functions = ["0x2040", "0x44000"]
//! controller_functions = []
//! ```
//!
//! Every key is optional; an unknown key, a malformed list or a file larger
//! than [`MAX_BYTES`] is an error naming the file, line and field.

use std::path::{Path, PathBuf};

use tinct_base::InputError;

/// `TINCT_MACHINE_FILE`: the machine file's path, instead of [`DEFAULT_PATH`].
pub const PATH_VAR: &str = "TINCT_MACHINE_FILE";
/// Where the machine file lives unless `TINCT_MACHINE_FILE` says otherwise.
pub const DEFAULT_PATH: &str = "/etc/tinct/machine.toml";
/// The largest machine file read: a few lines of TOML; a path to
/// `/dev/zero` is refused, not read without end.
pub const MAX_BYTES: u64 = 64 << 10;

/// The contents of a machine file.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MachineFile {
    /// `[colors]`: the page-colour bits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub colors: Option<ColorsEntry>,
    /// `[dram]`: the DRAM address functions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dram: Option<DramEntry>,
}

/// `[colors]` of a machine file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ColorsEntry {
    /// The physical address bits that select the LLC page colour, as a
    /// list such as `12-16` (consecutive, from the page offset bit).
    pub bits: String,
    /// How the bits were established, in words (free text, shown by
    /// `tinct doctor`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
}

/// `[dram]` of a machine file: masks in DRAMA's format (bank index bit
/// `i` = parity of address & mask `i`), as `tinct bench dram-map` writes them.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DramEntry {
    /// The bank functions, e.g. `["0x2040", "0x44000"]`.
    #[serde(default)]
    pub bank_functions: Vec<String>,
    /// The controller (channel) functions.
    #[serde(default)]
    pub controller_functions: Vec<String>,
}

/// Where the machine file is: `TINCT_MACHINE_FILE` if set (and not
/// empty), else [`DEFAULT_PATH`].
pub fn path() -> PathBuf {
    std::env::var_os(PATH_VAR)
        .filter(|p| !p.is_empty())
        .map_or_else(|| PathBuf::from(DEFAULT_PATH), PathBuf::from)
}

impl MachineFile {
    /// Reads the machine file at [`path()`]; `Ok(None)` when there is none.
    pub fn load() -> Result<Option<(PathBuf, Self)>, InputError> {
        let path = path();
        Ok(Self::read(&path)?.map(|file| (path, file)))
    }

    /// Reads the machine file at `path`; `Ok(None)` when it does not exist.
    pub fn read(path: &Path) -> Result<Option<Self>, InputError> {
        let error = |field: &str, expected: &str, found: String| InputError {
            file: path.display().to_string(),
            line: None,
            field: field.into(),
            expected: expected.into(),
            found,
        };
        let metadata = match std::fs::metadata(path) {
            Ok(metadata) => metadata,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(error("(file)", "a readable machine file", e.to_string())),
        };
        if !metadata.is_file() {
            return Err(error(
                "(file)",
                "a regular file",
                "a directory, device or FIFO".into(),
            ));
        }
        if metadata.len() > MAX_BYTES {
            return Err(error(
                "(file)",
                &format!("at most {MAX_BYTES} bytes"),
                format!("{} bytes", metadata.len()),
            ));
        }
        let text = std::fs::read_to_string(path)
            .map_err(|e| error("(file)", "a readable UTF-8 machine file", e.to_string()))?;
        Self::parse(&text, path).map(Some)
    }

    /// Parses the text of a machine file (`path` names it in errors).
    pub fn parse(text: &str, path: &Path) -> Result<Self, InputError> {
        let line_of = |offset: usize| text[..offset.min(text.len())].matches('\n').count() + 1;
        let file: Self = toml::from_str(text).map_err(|e| InputError {
            file: path.display().to_string(),
            line: e.span().map(|span| line_of(span.start)),
            field: "(TOML)".into(),
            expected: "a machine file: [colors] bits = \"12-16\", [dram] bank_functions = [...]"
                .into(),
            found: e.message().to_string(),
        })?;
        if let Some(colors) = &file.colors {
            let line = text
                .lines()
                .position(|l| l.trim_start().starts_with("bits"))
                .map(|i| i + 1);
            tinct_base::list::parse_list(&colors.bits).map_err(|e| InputError {
                file: path.display().to_string(),
                line,
                field: "colors.bits".into(),
                expected: "a list of address bits such as \"12-16\"".into(),
                found: e.to_string(),
            })?;
        }
        Ok(file)
    }

    /// The file's text, with a comment saying what wrote it.
    pub fn to_text(&self, comment: &str) -> Result<String, toml::ser::Error> {
        let body = toml::to_string(self)?;
        let mut text = String::new();
        for line in comment.lines() {
            text.push_str("# ");
            text.push_str(line);
            text.push('\n');
        }
        text.push('\n');
        text.push_str(&body);
        Ok(text)
    }

    /// Writes the file to `path` (creating its directory), atomically: a
    /// temporary file beside it, then a rename; readable by every user
    /// (mode 0644), as every user's commands read it.
    pub fn write(&self, path: &Path, comment: &str) -> std::io::Result<()> {
        use std::os::unix::fs::PermissionsExt;
        let text = self.to_text(comment).map_err(std::io::Error::other)?;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let temporary = path.with_extension(format!("tmp.{}", std::process::id()));
        std::fs::write(&temporary, text)?;
        std::fs::set_permissions(&temporary, std::fs::Permissions::from_mode(0o644))?;
        std::fs::rename(&temporary, path).inspect_err(|_| {
            let _ = std::fs::remove_file(&temporary);
        })
    }
}

/// Saves colour `bits` (e.g. `12-16`) with their `evidence` in the
/// machine file at `path`, keeping what else it holds (its `[dram]`);
/// `tinct doctor --save` calls it.
pub fn save_colors(path: &Path, bits: &str, evidence: &str) -> Result<(), InputError> {
    let mut file = MachineFile::read(path)?.unwrap_or_default();
    file.colors = Some(ColorsEntry {
        bits: bits.into(),
        evidence: Some(evidence.into()),
    });
    file.write(path, COMMENT).map_err(|e| cannot_write(path, e))
}

/// Saves DRAM bank and controller functions (address masks) in the
/// machine file at `path`, keeping its colours; `tinct doctor --save
/// --dram-map FILE` calls it with the functions of a `tinct bench
/// dram-map` file.
pub fn save_dram(path: &Path, banks: &[u64], controllers: &[u64]) -> Result<(), InputError> {
    let mut file = MachineFile::read(path)?.unwrap_or_default();
    let hex = |masks: &[u64]| masks.iter().map(|m| format!("{m:#x}")).collect();
    file.dram = Some(DramEntry {
        bank_functions: hex(banks),
        controller_functions: hex(controllers),
    });
    file.write(path, COMMENT).map_err(|e| cannot_write(path, e))
}

/// The comment at the top of a machine file tinct writes.
const COMMENT: &str = "tinct machine file: what sysfs cannot tell about this machine.\n\
     Written by `tinct doctor --save`; every tinct command on this machine reads it\n\
     (after --color-bits, TINCT_COLOR_BITS and a task set's [platform] color_bits).";

fn cannot_write(path: &Path, e: std::io::Error) -> InputError {
    InputError {
        file: path.display().to_string(),
        line: None,
        field: "(file)".into(),
        expected: "a machine file tinct can write (run as root for /etc/tinct)".into(),
        found: e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_round_trips_and_missing_is_none() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("etc/tinct/machine.toml");
        assert_eq!(MachineFile::read(&path).unwrap(), None);
        let file = MachineFile {
            colors: Some(ColorsEntry {
                bits: "12-16".into(),
                evidence: Some("probe".into()),
            }),
            dram: Some(DramEntry {
                bank_functions: vec!["0x2040".into()],
                controller_functions: Vec::new(),
            }),
        };
        file.write(&path, "written by a test\non two lines")
            .unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.starts_with("# written by a test\n# on two lines\n"),
            "{text}"
        );
        assert_eq!(MachineFile::read(&path).unwrap(), Some(file));
    }

    #[test]
    fn bad_files_name_the_file_line_and_field() {
        let path = Path::new("/etc/tinct/machine.toml");
        let err = MachineFile::parse("[colors]\nbits = \"12-x\"\n", path).unwrap_err();
        assert_eq!((err.line, err.field.as_str()), (Some(2), "colors.bits"));
        assert!(
            err.to_string()
                .starts_with("/etc/tinct/machine.toml:2: colors.bits: expected")
        );
        let err = MachineFile::parse("[colors]\nbits = \"12\"\ncolour = 1\n", path).unwrap_err();
        assert_eq!(err.line, Some(3), "{err}");
        assert!(err.found.contains("colour"), "{err}");
        let err = MachineFile::parse("[colors]\nbits = [12]\n", path).unwrap_err();
        assert_eq!(err.line, Some(2), "{err}");
    }

    #[test]
    fn saving_dram_functions_keeps_the_colours_and_is_readable_by_all() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("machine.toml");
        save_colors(&path, "12-15", "given").unwrap();
        save_dram(&path, &[0x2040, 0x44000], &[]).unwrap();
        let file = MachineFile::read(&path).unwrap().unwrap();
        assert_eq!(file.colors.unwrap().bits, "12-15");
        assert_eq!(file.dram.unwrap().bank_functions, vec!["0x2040", "0x44000"]);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o644);
    }

    #[test]
    fn saving_colours_keeps_the_dram_functions() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("machine.toml");
        std::fs::write(&path, "[dram]\nbank_functions = [\"0x2040\"]\n").unwrap();
        save_colors(&path, "12-16", "probe: effective").unwrap();
        let file = MachineFile::read(&path).unwrap().unwrap();
        assert_eq!(file.colors.unwrap().bits, "12-16");
        assert_eq!(file.dram.unwrap().bank_functions, vec!["0x2040"]);
        let err = save_colors(&dir.path().join("x/y"), "12", "e");
        assert!(err.is_ok(), "the directory is made: {err:?}");
    }

    #[test]
    fn a_device_or_a_huge_file_is_refused_not_read() {
        let err = MachineFile::read(Path::new("/dev/zero")).unwrap_err();
        assert!(err.to_string().contains("regular file"), "{err}");
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("machine.toml");
        std::fs::write(&big, vec![b'#'; MAX_BYTES as usize + 1]).unwrap();
        let err = MachineFile::read(&big).unwrap_err();
        assert!(err.to_string().contains("at most"), "{err}");
    }
}
