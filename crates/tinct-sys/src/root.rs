//! [`SysRoot`]: where sysfs and procfs live, so every reader can run against
//! a fixture tree copied from a real machine as well as against `/`.

use crate::error::{Error, Result};
use std::io::{ErrorKind, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use tinct_base::InputError;

/// The largest file [`SysRoot::read`] accepts. sysfs files hold at most a
/// page; the largest procfs files doctor reads (`cpuinfo` of a many-core
/// machine, `smaps` of a fixture's process) are a few MiB. A copied tree
/// could hold anything (`/dev/zero` behind a symlink): larger is refused.
pub const MAX_FILE_BYTES: u64 = 16 << 20;

/// `TINCT_TOPOLOGY_ROOT`: the tree [`SysRoot::cache_topology`] reads.
pub const TOPOLOGY_ROOT_VAR: &str = "TINCT_TOPOLOGY_ROOT";

/// The root directory under which `/sys` and `/proc` are read.
///
/// `SysRoot::live()` is the running system; `SysRoot::at(dir)` is a fixture
/// tree with the same layout (`dir/sys/...`, `dir/proc/...`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SysRoot {
    base: PathBuf,
}

impl Default for SysRoot {
    fn default() -> Self {
        Self::live()
    }
}

impl SysRoot {
    /// The running system (`/`).
    pub fn live() -> Self {
        Self {
            base: PathBuf::from("/"),
        }
    }

    /// Where the page-colour rule reads the cache topology and the CPU's
    /// identity: `TINCT_TOPOLOGY_ROOT` ([`TOPOLOGY_ROOT_VAR`]) if set, a
    /// copy of another machine's `/sys` and `/proc`, else the running
    /// system. Only the derived colour rule reads it (`tinct doctor --root`
    /// is the way to see a whole other machine): CI runs the colouring
    /// tests again as if on a machine whose colour bits cannot be derived.
    pub fn cache_topology() -> Self {
        std::env::var_os(TOPOLOGY_ROOT_VAR)
            .filter(|dir| !dir.is_empty())
            .map_or_else(Self::live, Self::at)
    }

    /// A tree rooted at `dir` (a fixture or a copy of another machine).
    pub fn at(dir: impl Into<PathBuf>) -> Self {
        Self { base: dir.into() }
    }

    /// The root directory.
    pub fn base(&self) -> &Path {
        &self.base
    }

    /// True if this is the running system, where live probes (syscalls) make sense.
    pub fn is_live(&self) -> bool {
        self.base == Path::new("/")
    }

    /// `rel` (written as an absolute path like `/sys/kernel/realtime`) under the root.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.base.join(rel.trim_start_matches('/'))
    }

    /// True if `rel` exists under the root.
    pub fn exists(&self, rel: &str) -> bool {
        self.path(rel).exists()
    }

    /// The whole content of `rel`, which must be a regular file of at most
    /// [`MAX_FILE_BYTES`] (sysfs and procfs files are regular files).
    ///
    /// The file is opened non-blocking and checked with `fstat` before it is
    /// read, so a FIFO, socket or device in a copied tree is refused at once
    /// instead of blocking (a FIFO) or growing without end (`/dev/zero`).
    pub fn read(&self, rel: &str) -> Result<String> {
        let path = self.path(rel);
        let io = |source: std::io::Error| Error::Io {
            path: path.clone(),
            source,
        };
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&path)
            .map_err(io)?;
        let kind = file.metadata().map_err(io)?.file_type();
        if !kind.is_file() {
            return Err(Error::NotRegularFile {
                path: path.clone(),
                found: describe_file_type(kind),
            });
        }
        let mut bytes = Vec::new();
        file.take(MAX_FILE_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(io)?;
        if bytes.len() as u64 > MAX_FILE_BYTES {
            return Err(Error::FileTooLarge {
                path: path.clone(),
                limit: MAX_FILE_BYTES,
            });
        }
        String::from_utf8(bytes).map_err(|e| {
            io(std::io::Error::new(
                ErrorKind::InvalidData,
                format!("not UTF-8 text ({e})"),
            ))
        })
    }

    /// The content of `rel`, or `None` if it does not exist (or is not
    /// readable for lack of permission, as in `/sys/kernel/debug`).
    pub fn read_optional(&self, rel: &str) -> Result<Option<String>> {
        match self.read(rel) {
            Ok(text) => Ok(Some(text)),
            Err(Error::Io { source, .. })
                if matches!(
                    source.kind(),
                    ErrorKind::NotFound | ErrorKind::PermissionDenied
                ) =>
            {
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// The first line of `rel`, trimmed.
    pub fn read_line(&self, rel: &str) -> Result<String> {
        Ok(first_line(&self.read(rel)?))
    }

    /// The first line of `rel`, trimmed, or `None` if the file does not exist.
    pub fn read_line_optional(&self, rel: &str) -> Result<Option<String>> {
        Ok(self.read_optional(rel)?.map(|t| first_line(&t)))
    }

    /// The first line of `rel` parsed as `T`; `expected` describes `T` in the error.
    pub fn parse<T: FromStr>(&self, rel: &str, expected: &str) -> Result<T> {
        let line = self.read_line(rel)?;
        line.parse()
            .map_err(|_| self.parse_error(rel, 1, expected, &line))
    }

    /// Like [`SysRoot::parse`], but `None` if the file does not exist.
    pub fn parse_optional<T: FromStr>(&self, rel: &str, expected: &str) -> Result<Option<T>> {
        match self.read_line_optional(rel)? {
            None => Ok(None),
            Some(line) => line
                .parse()
                .map(Some)
                .map_err(|_| self.parse_error(rel, 1, expected, &line)),
        }
    }

    /// The entry names of directory `rel`, sorted; empty if it does not exist.
    pub fn list_dir(&self, rel: &str) -> Result<Vec<String>> {
        let path = self.path(rel);
        let entries = match std::fs::read_dir(&path) {
            Ok(entries) => entries,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => return Err(Error::Io { path, source }),
        };
        let mut names = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|source| Error::Io {
                path: path.clone(),
                source,
            })?;
            names.push(entry.file_name().to_string_lossy().into_owned());
        }
        names.sort();
        Ok(names)
    }

    /// An [`Error::Input`] at `line` (1-based) of `rel`: what was expected
    /// and what was found there (quoted).
    pub fn parse_error(&self, rel: &str, line: usize, expected: &str, found: &str) -> Error {
        Error::Input(
            InputError::new(
                self.path(rel).display().to_string(),
                "",
                expected,
                format!("{found:?}"),
            )
            .at_line(Some(line)),
        )
    }
}

/// "a FIFO", "a directory", ... for [`Error::NotRegularFile`].
fn describe_file_type(kind: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else {
        "not a regular file"
    }
}

fn first_line(text: &str) -> String {
    text.lines().next().unwrap_or("").trim().to_string()
}

/// Numbers of the entries of a sysfs directory named `<prefix><number>`
/// (`cpu0`, `node1`, `index3`), sorted numerically.
pub(crate) fn numbered_entries(names: &[String], prefix: &str) -> Vec<u32> {
    let mut numbers: Vec<u32> = names
        .iter()
        .filter_map(|name| name.strip_prefix(prefix)?.parse().ok())
        .collect();
    numbers.sort_unstable();
    numbers
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joins_absolute_paths_under_the_base() {
        let root = SysRoot::at("/tmp/fx");
        assert_eq!(
            root.path("/sys/kernel"),
            PathBuf::from("/tmp/fx/sys/kernel")
        );
        assert!(!root.is_live());
        assert!(SysRoot::live().is_live());
    }

    #[test]
    fn missing_files_are_none_and_bad_numbers_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("n"), "12x\n").unwrap();
        let root = SysRoot::at(dir.path());
        assert_eq!(root.read_optional("/absent").unwrap(), None);
        let err = root.parse::<u32>("/n", "an integer").unwrap_err();
        let text = err.to_string();
        assert!(text.contains("/n:1: expected"), "{text}");
        assert!(text.contains("\"12x\""), "{text}");
        assert!(text.contains("an integer"), "{text}");
    }

    #[test]
    fn fifos_and_devices_are_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        crate::testing::make_fifo(&dir.path().join("fifo")).unwrap();
        std::os::unix::fs::symlink("/dev/zero", dir.path().join("zero")).unwrap();
        std::fs::create_dir(dir.path().join("dir")).unwrap();
        let root = SysRoot::at(dir.path());
        for (rel, found) in [
            ("/fifo", "a FIFO"),
            ("/zero", "a character device"),
            ("/dir", "a directory"),
        ] {
            let text = root.read(rel).unwrap_err().to_string();
            assert!(
                text.contains(&format!("expected a regular file, found {found}")),
                "{rel}: {text}"
            );
            assert!(
                root.read_optional(rel).is_err(),
                "{rel}: an error, not None"
            );
        }
    }

    #[test]
    fn files_over_the_limit_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let big = std::fs::File::create(dir.path().join("big")).unwrap();
        big.set_len(MAX_FILE_BYTES + 1).unwrap();
        std::fs::write(dir.path().join("ok"), "x\n").unwrap();
        let root = SysRoot::at(dir.path());
        let text = root.read("/big").unwrap_err().to_string();
        assert!(text.contains("larger than 16777216 bytes"), "{text}");
        assert_eq!(root.read("/ok").unwrap(), "x\n");
    }

    #[test]
    fn numbered_entries_sort_numerically_and_skip_others() {
        let names: Vec<String> = ["cpu10", "cpu2", "cpufreq", "cpu0"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(numbered_entries(&names, "cpu"), vec![0, 2, 10]);
    }
}
