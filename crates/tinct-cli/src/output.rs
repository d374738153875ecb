//! Shared output helpers: JSON for machines, and the
//! check of every command's output path before it starts.

use serde::Serialize;
use std::path::Path;
use tinct_report::output_path::OutputPathError;

use crate::error::CliError;

/// Prints a result struct as pretty JSON on stdout.
pub(crate) fn print_json<T: Serialize>(value: &T) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}

/// Checks a command's output directory (`flag`, e.g. `--out`) before any
/// work, creating nothing (tinct-report's `output_path::check_dir`):
/// refused as bad input (exit 2) when it is a file, lies under one or
/// cannot be written.
pub(crate) fn output_dir(path: &Path, flag: &str) -> Result<(), CliError> {
    tinct_report::output_path::check_dir(path).map_err(|e| output_path_error(flag, e))
}

/// Checks a command's output file (`flag`, e.g. `-o`) before any work: not
/// a directory, in a directory that exists; refused as bad input (exit 2).
pub(crate) fn output_file(path: &Path, flag: &str) -> Result<(), CliError> {
    tinct_report::output_path::check_file(path).map_err(|e| output_path_error(flag, e))
}

fn output_path_error(flag: &str, e: OutputPathError) -> CliError {
    CliError::Input(OutputPathError {
        field: flag.into(),
        ..e
    })
}

/// Warns on stderr, located in `file`, of each input the analysis did not
/// use as written (an explicit `blocking` below the derived B_i): the same
/// lines from `analyze`, `plan` and `run` (which notes them).
pub(crate) fn warn_inputs(file: &Path, analysis: Option<&tinct_core::analysis::Analysis>) {
    for warning in analysis.into_iter().flat_map(|a| &a.warnings) {
        eprintln!(
            "tinct: warning: {}",
            warning.located(&file.display().to_string())
        );
    }
}
