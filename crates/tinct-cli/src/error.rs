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

/// A bench's bad options are input errors (exit 2); everything else failed
/// the bench (exit 1).
impl From<tinct_bench::Error> for CliError {
    fn from(e: tinct_bench::Error) -> Self {
        match e {
            tinct_bench::Error::InvalidInput(message) => CliError::Input(message),
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

/// Makes a standard output that cannot be written (a full disk,
/// `> /dev/full`) an output failure with exit 1, not a panic (101):
/// `println!` panics with "failed printing to stdout" there, and every
/// command prints with it. Any other panic keeps the default report.
pub fn stdout_failure_is_an_error() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied());
        match message.and_then(|m| m.strip_prefix("failed printing to stdout: ")) {
            Some(cause) => {
                eprintln!("tinct: error: cannot write the output to stdout: {cause}");
                std::process::exit(1);
            }
            None => default(info),
        }
    }));
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
        let input = CliError::from(tinct_bench::Error::InvalidInput("bad --p".into()));
        assert!(matches!(input, CliError::Input(m) if m == "bad --p"));
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
