//! Files a program carries inside itself and must put on disk to use (the
//! LD_PRELOAD shim that `tinct exec` embeds), written once to a per-user
//! cache directory under a name with the content's hash.
//!
//! Safe against other users: the directory is created with mode 0700 and
//! refused if it is not a directory of this user that only this user can
//! write; a file found there is used only if its bytes equal the embedded
//! ones (else it is replaced), and a new file is written to a temporary
//! name and renamed into place, so a reader never sees half a file.

use std::hash::{Hash, Hasher};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The cache directory of this user for tinct: `$XDG_CACHE_HOME/tinct`,
/// else `$HOME/.cache/tinct`, else `/tmp/tinct-<uid>` (relative values of
/// the variables are ignored, as the XDG specification asks).
pub fn cache_dir() -> PathBuf {
    let absolute = |name: &str| {
        std::env::var_os(name)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    if let Some(xdg) = absolute("XDG_CACHE_HOME") {
        return xdg.join("tinct");
    }
    if let Some(home) = absolute("HOME") {
        return home.join(".cache").join("tinct");
    }
    PathBuf::from(format!(
        "/tmp/tinct-{}",
        rustix::process::geteuid().as_raw()
    ))
}

/// `bytes` as the file `<stem>-<hash>.<extension>` in [`cache_dir`]:
/// written on first use, reused while its content is the same. If that
/// directory is not this user's alone (e.g. `sudo` kept the invoking
/// user's `HOME`), `/tmp/tinct-<uid>` is tried, under the same checks.
pub fn install(stem: &str, extension: &str, bytes: &[u8]) -> Result<PathBuf> {
    let preferred = cache_dir();
    let fallback = PathBuf::from(format!(
        "/tmp/tinct-{}",
        rustix::process::geteuid().as_raw()
    ));
    match install_in(&preferred, stem, extension, bytes) {
        Err(first) if preferred != fallback => {
            install_in(&fallback, stem, extension, bytes).map_err(|_| first)
        }
        result => result,
    }
}

/// [`install`] into `dir` (created if missing, checked in any case).
pub fn install_in(dir: &Path, stem: &str, extension: &str, bytes: &[u8]) -> Result<PathBuf> {
    ensure_private_dir(dir)?;
    let path = dir.join(format!("{stem}-{:016x}.{extension}", content_hash(bytes)));
    if std::fs::read(&path).is_ok_and(|existing| existing == bytes) {
        return Ok(path);
    }
    let temporary = dir.join(format!(".{stem}.{}.partial", std::process::id()));
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| Error::Io { path, source }
    };
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o700)
        .open(&temporary)
        .map_err(io(&temporary))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(io(&temporary))?;
    std::fs::rename(&temporary, &path).map_err(io(&path))?;
    Ok(path)
}

/// Creates `dir` (and its parents) with mode 0700 if missing, then checks
/// that it is a directory (not a symlink) owned by this user and not
/// writable by anyone else.
fn ensure_private_dir(dir: &Path) -> Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|source| Error::Io {
            path: dir.to_path_buf(),
            source,
        })?;
    let meta = std::fs::symlink_metadata(dir).map_err(|source| Error::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let uid = rustix::process::geteuid().as_raw();
    if !meta.is_dir() || meta.uid() != uid || meta.mode() & 0o022 != 0 {
        return Err(Error::InvalidArgument(format!(
            "{}: expected a directory of uid {uid} that only it can write (mode 0700), found \
             {} of uid {} with mode {:o}; remove it or set XDG_CACHE_HOME",
            dir.display(),
            if meta.is_dir() {
                "a directory"
            } else {
                "no directory"
            },
            meta.uid(),
            meta.mode() & 0o7777
        )));
    }
    Ok(())
}

/// A 64-bit hash of the content, for the file name only (the bytes are
/// compared in full before a file is reused).
fn content_hash(bytes: &[u8]) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut hasher);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn installs_once_and_replaces_a_file_with_other_bytes() {
        let base = tempfile::tempdir().unwrap();
        let dir = base.path().join("cache/tinct");
        let first = install_in(&dir, "lib", "so", b"one").unwrap();
        assert_eq!(std::fs::read(&first).unwrap(), b"one");
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        assert_eq!(install_in(&dir, "lib", "so", b"one").unwrap(), first);
        let other = install_in(&dir, "lib", "so", b"two").unwrap();
        assert_ne!(other, first, "another content, another name");
        // A file tampered with under the right name is rewritten.
        std::fs::write(&first, b"evil").unwrap();
        assert_eq!(install_in(&dir, "lib", "so", b"one").unwrap(), first);
        assert_eq!(std::fs::read(&first).unwrap(), b"one");
        let names: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().collect();
        assert_eq!(names.len(), 2, "no partial files left: {names:?}");
    }

    #[test]
    fn a_directory_others_can_write_is_refused() {
        let base = tempfile::tempdir().unwrap();
        let dir = base.path().join("shared");
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = install_in(&dir, "lib", "so", b"x").unwrap_err().to_string();
        assert!(
            err.contains("only it can write") && err.contains("777"),
            "{err}"
        );
        let link = base.path().join("link");
        std::os::unix::fs::symlink(base.path(), &link).unwrap();
        let err = install_in(&link, "lib", "so", b"x")
            .unwrap_err()
            .to_string();
        assert!(err.contains("found no directory"), "{err}");
    }
}
