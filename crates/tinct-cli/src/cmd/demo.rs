//! `tinct demo`: the whole loop on this machine — the colour probe, Δ and
//! the platform overheads, each body's worst case measured, the task set
//! written with those C, planned (CATA) and analysed with the overheads,
//! run, and every task's observed response times against its bound. The
//! logic is `tinct_bench::demo`; this file parses and prints.

use crate::cmd::run::print_verdict;
use crate::error::CliError;
use std::path::PathBuf;
use std::process::ExitCode;
use tinct_bench::demo::{self, Outcome};
use tinct_core::units::Nanos;
use tinct_core::units::parse_duration;

/// Arguments of `tinct demo`.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// How long the run lasts.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    pub duration: Nanos,
    /// The demo's directory: every step's file is kept there.
    #[arg(long, short = 'o', default_value = "runs/demo")]
    pub out: PathBuf,
    /// Run under SCHED_OTHER (no real-time privileges needed, no guarantees).
    #[arg(long)]
    pub no_rt: bool,
    /// Seed of the measurements' random choices.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// The page colour's physical address bits, e.g. `12-16`, before
    /// TINCT_COLOR_BITS, the machine file and the bits derived from the
    /// cache topology. Where none gives them the loop runs uncoloured.
    #[arg(long, value_name = "BITS")]
    pub color_bits: Option<String>,
}

/// Runs the demo. Exit status as `tinct run`'s: 0 when the run completed
/// (late jobs with a cause are results), 3 when a job exceeded its bound
/// with no cause found, 1 when it was stopped or failed, 2 on bad input;
/// 130 after Ctrl-C (SIGINT or SIGTERM) in any step: the files written so
/// far are kept, `verdict.json` says where it stopped (a second Ctrl-C
/// exits at once); 1 when a file could not be written, Ctrl-C or not.
pub(crate) fn run(args: Args) -> Result<ExitCode, CliError> {
    crate::output::output_dir(&args.out, "--out")?;
    println!(
        "tinct demo: measure, model, analyze, plan, run and verify on this machine; every step's file in {}",
        args.out.display()
    );
    let params = demo::Params {
        out: args.out.clone(),
        duration: args.duration,
        realtime: !args.no_rt,
        seed: args.seed,
        // Not found: the profile says where it looked (and needs it only
        // for coloured memory).
        preload: crate::cmd::shim::find_shim().ok(),
        color_bits: args.color_bits.clone(),
        stop: tinct_sys::signals::stop_on_signals(),
    };
    let worker = tinct_bench::wcet_profile::WorkerCommand::this_tinct()?;
    let step = std::cell::Cell::new(0);
    let progress = |line: &str| {
        step.set(step.get() + 1);
        println!("{}. {line}", step.get());
    };
    let outcome = demo::run(&params, &worker, &progress)
        .inspect_err(|_| {
            // A failure of its own (a file that cannot be written) after a
            // Ctrl-C: the error is the outcome (exit 1), the stop is said.
            if params.stop.is_raised() {
                eprintln!(
                    "tinct: demo interrupted (Ctrl-C), and then failed; the files written so far are kept in {}",
                    args.out.display()
                );
            }
        })?;
    let interrupted = ExitCode::from(tinct_sys::signals::INTERRUPTED_EXIT_STATUS as u8);
    match outcome {
        Outcome::Done(done) => {
            print_verdict(&done.recorded.summary);
            print!("{}", demo::text::comparison_text(&done.verdict));
            if done.verdict.interrupted {
                eprintln!(
                    "tinct: demo interrupted (Ctrl-C) during its run: the jobs recorded until \
                     then are in {}, the verdict in {}",
                    args.out.join("run").display(),
                    args.out.join("verdict.json").display()
                );
                return Ok(interrupted);
            }
            Ok(ExitCode::from(done.recorded.exit_status()))
        }
        Outcome::Interrupted(verdict) => {
            eprintln!("{}", demo::text::interrupted_text(&verdict, &args.out));
            Ok(interrupted)
        }
    }
}
