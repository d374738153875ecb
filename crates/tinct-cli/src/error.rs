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
use tinct_base::InputError;

/// An error of the `tinct` binary, classified by exit status.
#[derive(Debug)]
pub(crate) enum CliError {
    /// Bad input at its file, line and field, with what was expected and
    /// found (tinct's one input-error type): exit status 2.
    Input(InputError),
    /// The command could not do its job: exit status 1.
    Failed(anyhow::Error),
}

impl CliError {
    /// A command-line argument the command refuses (a flag, or the
    /// arguments as a whole): bad input with it as the field and no file,
    /// as `InputError` names input given on the command line, e.g.
    /// `--strict: expected …, found …`.
    pub(crate) fn flag(flag: &str, expected: impl Into<String>, found: impl Into<String>) -> Self {
        CliError::Input(InputError::new("", flag, expected, found))
    }
}

impl From<InputError> for CliError {
    fn from(e: InputError) -> Self {
        CliError::Input(e)
    }
}

/// A bench's bad options are input errors (exit 2); everything else failed
/// the bench (exit 1).
impl From<tinct_bench::Error> for CliError {
    fn from(e: tinct_bench::Error) -> Self {
        match e {
            tinct_bench::Error::Input(input) => CliError::Input(input),
            other => CliError::Failed(other.into()),
        }
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

/// An error with its chain of causes, each said once: a cause whose text
/// the message already holds (`cannot write X: <io error>` with the same
/// io error as its source) is not repeated.
fn failure_text(error: &anyhow::Error) -> String {
    let mut text = error.to_string();
    for cause in error.chain().skip(1) {
        let cause = cause.to_string();
        if !text.contains(&cause) {
            text.push_str(": ");
            text.push_str(&cause);
        }
    }
    text
}

/// Turns a subcommand's result into the process exit status, printing the
/// error (with its chain of causes, without a backtrace) on stderr.
pub(crate) fn finish(result: Result<ExitCode, CliError>) -> ExitCode {
    match result {
        Ok(code) => code,
        Err(CliError::Input(error)) => {
            eprintln!("tinct: error: {error}");
            ExitCode::from(2)
        }
        Err(CliError::Failed(error)) => {
            eprintln!("tinct: error: {}", failure_text(&error));
            ExitCode::from(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_benchs_bad_options_exit_2_and_its_failures_exit_1() {
        let input = CliError::from(tinct_bench::Error::option("--p", "1..=32", "40"));
        assert!(
            matches!(input, CliError::Input(e) if e.to_string() == "--p: expected 1..=32, found 40")
        );
        let failed = CliError::from(tinct_bench::Error::Measurement("no clock".into()));
        assert!(matches!(failed, CliError::Failed(e) if e.to_string().contains("no clock")));
    }

    #[test]
    fn a_cause_already_in_the_message_is_said_once() {
        let io = std::io::Error::from_raw_os_error(17);
        let io_text = io.to_string();
        // tinct-bench's write error: `cannot write {path}: {source}`, with
        // the io error as its source too.
        let error = anyhow::Error::new(tinct_bench::Error::Write {
            path: "afile".into(),
            source: io,
        });
        assert_eq!(
            failure_text(&error),
            format!("cannot write afile: {io_text}")
        );
        // A cause the message does not hold is kept.
        let error = anyhow::anyhow!("inner").context("outer");
        assert_eq!(failure_text(&error), "outer: inner");
    }
}
