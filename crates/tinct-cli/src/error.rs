//! Exit statuses and how errors reach the user.
//!
//! - 0: the command ran (an analysis that says "not schedulable" still ran);
//! - 1: the command ran and failed at its job (no plan exists, a run was
//!   stopped by the watchdog, ...);
//! - 2: bad input (a file that does not parse or validate, bad arguments).
//!
//! Errors are printed as one plain paragraph, never with a backtrace (this
//! environment sets `RUST_BACKTRACE=1`, which `anyhow` would honour).

use std::process::ExitCode;

/// An error of the `tinct` binary, classified by exit status.
#[derive(Debug)]
pub enum CliError {
    /// Bad input: exit status 2.
    Input(String),
    /// The command could not do its job: exit status 1.
    Failed(anyhow::Error),
}

impl From<tinct_core::format::InputError> for CliError {
    fn from(e: tinct_core::format::InputError) -> Self {
        CliError::Input(e.to_string())
    }
}

impl From<anyhow::Error> for CliError {
    fn from(e: anyhow::Error) -> Self {
        CliError::Failed(e)
    }
}

impl From<std::io::Error> for CliError {
    fn from(e: std::io::Error) -> Self {
        CliError::Failed(e.into())
    }
}

/// Turns a subcommand's result into the process exit status, printing the
/// error (with its chain of causes, without a backtrace) on stderr.
pub fn finish(result: Result<ExitCode, CliError>) -> ExitCode {
    match result {
        Ok(code) => code,
        Err(CliError::Input(message)) => {
            eprintln!("tinct: error: {message}");
            ExitCode::from(2)
        }
        Err(CliError::Failed(error)) => {
            eprint!("tinct: error: {error}");
            for cause in error.chain().skip(1) {
                eprint!(": {cause}");
            }
            eprintln!();
            ExitCode::from(1)
        }
    }
}
