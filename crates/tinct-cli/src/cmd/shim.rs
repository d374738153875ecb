//! Where `tinct` finds the LD_PRELOAD shim for `exec` and the benches that
//! start programs on colored memory: one lookup for every command.

use crate::error::CliError;
use std::path::{Path, PathBuf};
use tinct_mem::shim_config::{PRELOAD_LIB, PRELOAD_LIB_VAR, locate_shim, shim_candidates};

/// The shim built into this binary (build.rs), if it was embedded.
mod embedded {
    include!(concat!(env!("OUT_DIR"), "/embedded_shim.rs"));
}

/// `TINCT_PRELOAD_LIB`, else `libtinct_preload.so` next to the `tinct`
/// binary (or in `../lib`, as a package installs it), else the copy
/// embedded in this binary, written once to the user's cache
/// (`tinct_sys::user_cache`: `~/.cache/tinct/libtinct_preload-<hash>.so`).
/// A shim beside the binary wins over the embedded one so that a
/// development build (`cargo build -p tinct-preload`) is used as built.
pub(crate) fn find_shim() -> Result<PathBuf, CliError> {
    let exe = std::env::current_exe()
        .map_err(|e| anyhow::anyhow!("cannot locate the tinct binary: {e}"))?;
    let dir = exe.parent().unwrap_or(Path::new("/"));
    if let Some(found) = locate_shim(dir)? {
        return Ok(found);
    }
    let Some(bytes) = embedded::SHIM else {
        let [beside, lib] = shim_candidates(dir);
        return Err(CliError::Failed(anyhow::anyhow!(
            "{PRELOAD_LIB} not found next to {} (looked in {} and {}) and not embedded in this \
             build (feature embed-shim): build it with `cargo build -p tinct-preload` (same \
             profile as tinct) or set {PRELOAD_LIB_VAR}",
            exe.display(),
            beside.display(),
            lib.display()
        )));
    };
    tinct_sys::user_cache::install("libtinct_preload", "so", bytes).map_err(|e| {
        CliError::Failed(anyhow::anyhow!(
            "cannot write the embedded {PRELOAD_LIB} to the cache: {e} (or set {PRELOAD_LIB_VAR})"
        ))
    })
}
