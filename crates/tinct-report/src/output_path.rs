//! Where a command writes its files, checked before any work is done: the
//! one place output paths (`-o`, `--out`) are probed, so that every
//! command refuses a path it cannot write the same way, at once, as bad
//! input — not after minutes of measurement, and not with the operating
//! system's error text alone.
//!
//! - [`check_dir`]: a directory for several files (a bench, the demo, a
//!   monitor recording, a study), checked without creating anything: not
//!   a file, under no file, and the directory (or its nearest existing
//!   parent) takes a probe file, written and removed;
//! - [`prepare_dir`]: the same, then created with its parents (a run's
//!   directory, made before the first release).
//! - [`check_file`]: a path for one file (a plan, a report page): not a
//!   directory, in a directory that exists.

use std::io::Write;
use std::path::{Path, PathBuf};

/// An output path that cannot take what the command writes: bad input,
/// tinct's one input-error type, whose `file` is the path as the user gave
/// it (the caller names the flag as its `field`).
pub type OutputPathError = tinct_base::InputError;

/// What a regular file or another non-directory at `path` is, in words.
fn kind_of(path: &Path) -> &'static str {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_file() => "a regular file",
        Ok(meta) if meta.is_dir() => "a directory",
        Ok(_) => "a special file (not a directory)",
        Err(_) => "nothing",
    }
}

/// The first existing ancestor of `path` (itself included, nearest to the
/// root first) that is not a directory, if any: nothing can be created
/// below it.
fn blocking_ancestor(path: &Path) -> Option<PathBuf> {
    let mut ancestors: Vec<&Path> = path
        .ancestors()
        .filter(|a| !a.as_os_str().is_empty())
        .collect();
    ancestors.reverse();
    ancestors
        .into_iter()
        .find(|a| std::fs::metadata(a).is_ok_and(|m| !m.is_dir()))
        .map(Path::to_path_buf)
}

/// What is at `path` when it cannot be a directory, or the error's text.
fn found(path: &Path, error: Option<&std::io::Error>) -> String {
    match blocking_ancestor(path) {
        Some(a) if a == path => kind_of(path).to_string(),
        Some(a) => format!("{} is {}", a.display(), kind_of(&a)),
        None => error.map_or_else(|| "an unusable path".to_string(), unwritable),
    }
}

fn dir_refused(path: &Path, error: Option<&std::io::Error>) -> OutputPathError {
    OutputPathError::new(
        path.display().to_string(),
        "",
        "a directory to write the files in (created if missing)",
        found(path, error),
    )
}

/// Why a place cannot be written, without the probe file's random name
/// (tempfile adds it to its errors): the OS error alone.
fn unwritable(error: &std::io::Error) -> String {
    let os = match error.raw_os_error() {
        Some(code) => std::io::Error::from_raw_os_error(code).to_string(),
        // tempfile's errors end in " at path <the probe>".
        None => {
            let text = error.to_string();
            text.split(" at path ").next().unwrap_or(&text).to_string()
        }
    };
    format!("a place this process cannot write: {os}")
}

/// Writes and removes a probe file in the directory `dir`.
fn probe(dir: &Path) -> std::io::Result<()> {
    let probe = tempfile::Builder::new()
        .prefix(".tinct-probe-")
        .tempfile_in(dir)?;
    probe.as_file().write_all(b"probe\n")?;
    probe.as_file().sync_all()?;
    probe.close()
}

/// Checks that `path` can become a directory this process writes files
/// in, creating nothing: neither it nor a path above it is a file, and
/// it — or, while it does not exist, its nearest existing parent — takes a
/// probe file (written, then removed).
pub fn check_dir(path: &Path) -> Result<(), OutputPathError> {
    if blocking_ancestor(path).is_some() {
        return Err(dir_refused(path, None));
    }
    let existing = path
        .ancestors()
        .map(|a| {
            if a.as_os_str().is_empty() {
                Path::new(".")
            } else {
                a
            }
        })
        .find(|a| a.is_dir())
        .unwrap_or(Path::new("."));
    probe(existing).map_err(|e| dir_refused(path, Some(&e)))
}

/// Makes `path` a directory this process can write files in: checked as
/// [`check_dir`], then created with its parents and probed.
pub fn prepare_dir(path: &Path) -> Result<(), OutputPathError> {
    check_dir(path)?;
    std::fs::create_dir_all(path).map_err(|e| dir_refused(path, Some(&e)))?;
    probe(path).map_err(|e| dir_refused(path, Some(&e)))
}

/// Checks that `path` can name a file to be written: not an existing
/// directory, its parent an existing directory that takes a probe file
/// (written, then removed), and an existing file at `path` opens for
/// writing (not truncated). Nothing is left behind.
pub fn check_file(path: &Path) -> Result<(), OutputPathError> {
    let refused = |found: String| {
        OutputPathError::new(
            path.display().to_string(),
            "",
            "a file path in an existing directory",
            found,
        )
    };
    if path.is_dir() {
        return Err(refused("a directory".into()));
    }
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if let Some(a) = blocking_ancestor(parent) {
        return Err(refused(format!("{} is {}", a.display(), kind_of(&a))));
    }
    if !parent.is_dir() {
        return Err(refused(format!(
            "no directory {} (create it first)",
            parent.display()
        )));
    }
    probe(parent).map_err(|e| refused(unwritable(&e)))?;
    if path.exists() {
        std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(|e| refused(unwritable(&e)))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_in_a_place_that_cannot_be_written_is_refused() {
        // /proc takes no new files, even from root.
        let e = check_file(Path::new("/proc/tinct-output-test")).unwrap_err();
        assert!(e.found.contains("cannot write"), "{}", e.found);
        assert!(!e.found.contains(".tinct-probe-"), "{}", e.found);
        let tmp = tempfile::tempdir().unwrap();
        check_file(&tmp.path().join("plan.toml")).unwrap();
        assert_eq!(
            std::fs::read_dir(tmp.path()).unwrap().count(),
            0,
            "probe removed"
        );
    }

    #[test]
    fn a_directory_is_created_and_probed() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("a/b");
        prepare_dir(&dir).unwrap();
        assert!(dir.is_dir());
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "probe removed");
        prepare_dir(&dir).unwrap();
    }

    #[test]
    fn a_directory_is_checked_without_creating_it() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("a/b");
        check_dir(&dir).unwrap();
        assert!(!tmp.path().join("a").exists(), "nothing created");
        assert_eq!(
            std::fs::read_dir(tmp.path()).unwrap().count(),
            0,
            "probe removed"
        );
    }

    #[test]
    fn a_file_or_a_path_under_one_is_not_a_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("f");
        std::fs::write(&file, "x").unwrap();
        let e = prepare_dir(&file).unwrap_err();
        assert_eq!(e.found, "a regular file");
        assert_eq!(
            e.to_string(),
            format!(
                "{}: expected a directory to write the files in (created if missing), found a regular file",
                file.display()
            )
        );
        let e = prepare_dir(&file.join("sub/dir")).unwrap_err();
        assert_eq!(e.found, format!("{} is a regular file", file.display()));
        assert_eq!(check_dir(&file).unwrap_err().found, "a regular file");
        assert_eq!(check_dir(&file.join("sub")).unwrap_err(), e_under(&file));
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "x", "untouched");
    }

    fn e_under(file: &Path) -> OutputPathError {
        OutputPathError::new(
            file.join("sub").display().to_string(),
            "",
            "a directory to write the files in (created if missing)",
            format!("{} is a regular file", file.display()),
        )
    }

    #[test]
    fn a_file_path_is_not_a_directory_and_lies_in_one() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("f");
        std::fs::write(&file, "x").unwrap();
        check_file(&file).unwrap();
        check_file(&tmp.path().join("new.toml")).unwrap();
        check_file(Path::new("relative.toml")).unwrap();
        assert_eq!(check_file(tmp.path()).unwrap_err().found, "a directory");
        let e = check_file(&file.join("p.toml")).unwrap_err();
        assert_eq!(e.found, format!("{} is a regular file", file.display()));
        assert!(
            check_file(&tmp.path().join("no/p.toml"))
                .unwrap_err()
                .found
                .starts_with("no directory")
        );
    }
}
