//! One module per `tinct` subcommand. Each exposes `Args` (clap) and
//! `run(Args) -> Result<ExitCode, CliError>`.

pub mod analyze;
pub mod bench;
pub mod demo;
pub mod doctor;
pub mod exec;
pub mod experiment;
pub mod monitor;
pub mod plan;
pub mod report;
pub mod run;
pub mod shim;
