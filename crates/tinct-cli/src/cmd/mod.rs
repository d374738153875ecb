//! One module per `tinct` subcommand. Each exposes `Args` (clap) and
//! `run(Args) -> Result<ExitCode, CliError>`.

pub(crate) mod analyze;
pub(crate) mod bench;
pub(crate) mod demo;
pub(crate) mod doctor;
pub(crate) mod exec;
pub(crate) mod experiment;
pub(crate) mod monitor;
pub(crate) mod plan;
pub(crate) mod report;
pub(crate) mod run;
pub(crate) mod shim;
