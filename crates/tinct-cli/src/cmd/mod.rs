//! One module per `tinct` subcommand. Each exposes `Args` (clap) and
//! `run(Args) -> Result<ExitCode, CliError>`.

pub mod analyze;
