//! Helpers shared by the `analyze` and `plan` tests.
#![allow(dead_code)]

use assert_cmd::Command;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A file of the repository's `examples/`.
pub fn example(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
}

/// The `tinct` binary under test.
pub fn tinct() -> Command {
    Command::cargo_bin("tinct").expect("binary built")
}

/// `tinct analyze --json` of `file` with `extra` arguments (no calibration
/// from the environment), which must exit 0.
pub fn analyze_json(file: &Path, extra: &[&str]) -> Value {
    let out = tinct()
        .args(["analyze", "--json"])
        .args(extra)
        .arg(file)
        .env_remove("TINCT_CALIBRATION")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}
