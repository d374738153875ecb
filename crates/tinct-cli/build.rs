//! Embeds the LD_PRELOAD shim (`libtinct_preload.so`) in the `tinct`
//! binary, so that `cargo install --path crates/tinct-cli` gives a `tinct`
//! whose `exec` works without a separate build of the shim (it writes the
//! embedded copy to a per-user cache on first use: tinct_sys::user_cache).
//!
//! Cargo has no stable way to depend on another crate's cdylib, so this
//! script builds tinct-preload with a nested `cargo build` of the same
//! profile and target into its own target directory under OUT_DIR (the
//! outer build holds the lock of the workspace's target directory), with
//! debug information stripped (it would make the binary tens of MiB).
//!
//! Without the default feature `embed-shim` nothing is built and `tinct
//! exec` needs the shim beside the binary or in TINCT_PRELOAD_LIB.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let out_dir = PathBuf::from(env("OUT_DIR"));
    let generated = out_dir.join("embedded_shim.rs");
    if std::env::var_os("CARGO_FEATURE_EMBED_SHIM").is_none() {
        write(
            &generated,
            "/// Not embedded (feature `embed-shim` off).\npub const SHIM: Option<&[u8]> = None;\n",
        );
        return;
    }
    let manifest_dir = PathBuf::from(env("CARGO_MANIFEST_DIR"));
    let workspace = manifest_dir.join("../..");
    for watched in [
        "crates/tinct-preload",
        "crates/tinct-mem",
        "crates/tinct-sys",
        "crates/tinct-base",
        "Cargo.toml",
        "Cargo.lock",
        ".cargo/config.toml",
    ] {
        println!(
            "cargo:rerun-if-changed={}",
            workspace.join(watched).display()
        );
    }
    let target = env("TARGET");
    let release = env("PROFILE") == "release";
    let target_dir = out_dir.join("shim-target");
    let mut cargo = Command::new(env("CARGO"));
    cargo
        .current_dir(&workspace)
        .args([
            "build",
            "--quiet",
            "-p",
            "tinct-preload",
            "--lib",
            "--target",
        ])
        .arg(&target)
        .arg("--target-dir")
        .arg(&target_dir)
        .env("CARGO_PROFILE_DEV_DEBUG", "false")
        .env("CARGO_PROFILE_RELEASE_DEBUG", "false")
        .env("CARGO_PROFILE_DEV_STRIP", "debuginfo")
        .env("CARGO_PROFILE_RELEASE_STRIP", "debuginfo")
        // `cargo clippy` runs build scripts with clippy as the workspace
        // wrapper: the shim is built, not linted, here.
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
        .env_remove("CLIPPY_ARGS")
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_BUILD_TARGET_DIR");
    if release {
        cargo.arg("--release");
    }
    let status = cargo
        .status()
        .unwrap_or_else(|e| panic!("cannot run cargo to build the shim: {e}"));
    assert!(
        status.success(),
        "building libtinct_preload.so for embedding failed ({status}); build without it with \
         --no-default-features"
    );
    let library = target_dir
        .join(&target)
        .join(if release { "release" } else { "debug" })
        .join("libtinct_preload.so");
    assert!(library.is_file(), "{} was not built", library.display());
    write(
        &generated,
        &format!(
            "/// libtinct_preload.so, built by build.rs.\npub const SHIM: Option<&[u8]> = Some(include_bytes!({:?}));\n",
            library.display().to_string()
        ),
    );
}

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("cargo sets {name} for build scripts"))
}

fn write(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
}
