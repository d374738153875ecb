//! `tinct demo`: the whole loop on this machine — the colour probe, Δ and
//! the platform overheads, each body's worst case measured, the task set
//! written with those C, planned (CATA) and analysed with the overheads,
//! run, and every task's observed response times against its bound. The
//! logic is `tinct_bench::demo`; this file parses and prints.

use crate::cmd::bench::common::duration;
use crate::cmd::bench::{cli_error, worker_command};
use crate::cmd::run::{exit_code, print_verdict};
use crate::error::CliError;
use crate::output::{ms, table};
use std::path::PathBuf;
use std::process::ExitCode;
use tinct_bench::demo::{self, DemoVerdict, InterruptedVerdict, Outcome};
use tinct_core::units::Nanos;

/// Arguments of `tinct demo`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// How long the run lasts.
    #[arg(long, default_value = "5s", value_parser = duration)]
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
}

/// Runs the demo. Exit status as `tinct run`'s: 0 when the run completed
/// (late jobs with a cause are results), 3 when a job exceeded its bound
/// with no cause found, 1 when it was stopped or failed, 2 on bad input;
/// 130 after Ctrl-C (SIGINT or SIGTERM) in any step: the files written so
/// far are kept, `verdict.json` says where it stopped (a second Ctrl-C
/// exits at once).
pub fn run(args: Args) -> Result<ExitCode, CliError> {
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
        stop: tinct_sys::signals::stop_on_signals(),
    };
    let worker = worker_command().map_err(cli_error)?;
    let mut step = 0;
    let progress = |line: &str| {
        step += 1;
        println!("{step}. {line}");
    };
    let progress = std::cell::RefCell::new(progress);
    let outcome =
        demo::run(&params, &worker, &|line| (progress.borrow_mut())(line)).map_err(cli_error)?;
    let interrupted = ExitCode::from(tinct_sys::signals::INTERRUPTED_EXIT_STATUS as u8);
    match outcome {
        Outcome::Done(done) => {
            print_verdict(&done.recorded.summary);
            print_comparison(&done.verdict);
            if done.verdict.interrupted {
                eprintln!(
                    "tinct: demo interrupted (Ctrl-C) during its run: the jobs recorded until                      then are in {}, the verdict in {}",
                    args.out.join("run").display(),
                    args.out.join("verdict.json").display()
                );
                return Ok(interrupted);
            }
            Ok(exit_code(&done.recorded))
        }
        Outcome::Interrupted(verdict) => {
            print_interrupted(&verdict, &args.out);
            Ok(interrupted)
        }
    }
}

/// Where an interrupted demo stopped and which files it kept (stderr).
fn print_interrupted(verdict: &InterruptedVerdict, out: &std::path::Path) {
    eprintln!(
        "tinct: demo interrupted (Ctrl-C) at step '{}'{}; kept in {}: {}",
        verdict.phase,
        verdict
            .error
            .as_ref()
            .map_or(String::new(), |e| format!(" (which then failed: {e})")),
        out.display(),
        verdict
            .files
            .iter()
            .map(String::as_str)
            .chain(["verdict.json"])
            .collect::<Vec<_>>()
            .join(", ")
    );
}

/// Measured C, bound and observation per task, and the demo's conclusion.
fn print_comparison(verdict: &DemoVerdict) {
    println!(
        "\nthe loop closed: C measured (max, {}), bound with the overheads ({}), observed",
        verdict.conditions.join(", "),
        verdict.overheads.from
    );
    let mut t = table(&[
        "task",
        "CPU",
        "|S|",
        "C (ms)",
        "exec max (ms)",
        "T = D (ms)",
        "bound (ms)",
        "observed max (ms)",
        "jobs",
        "late",
        "unexplained",
    ]);
    for task in &verdict.tasks {
        t.add_row(vec![
            task.name.clone(),
            task.cpu.map_or("-".into(), |c| c.to_string()),
            task.partitions.map_or("-".into(), |p| p.to_string()),
            ms(task.c_ns),
            ms(task.exec_max_ns),
            ms(task.period_ns),
            task.bound_ns.map_or("> D".into(), ms),
            ms(task.observed_max_ns),
            task.jobs.to_string(),
            task.late.to_string(),
            task.unexplained.to_string(),
        ]);
    }
    println!("{t}");
    for task in verdict.tasks.iter().filter(|t| t.exec_max_ns > t.c_ns) {
        println!(
            "note: '{}' executed up to {} ms, above its measured C {} ms: the maximum of the \
             demo's short profile (40 jobs per p) is no safe worst case (`tinct bench \
             wcet-profile` measures 100 jobs per launch, `--use pwcet:P` extrapolates); the \
             bound {}",
            task.name,
            ms(task.exec_max_ns),
            ms(task.c_ns),
            if task.late == 0 {
                "held on the analysis' slack"
            } else {
                "was exceeded: see the causes above"
            }
        );
    }
    if !verdict.coloured {
        println!(
            "note: working sets NOT coloured (physical frame numbers need root): S(i) not enforced"
        );
    }
    if let Some(note) = &verdict.isolation_absent {
        println!("note: {note}");
    }
    println!(
        "analysis: {} (periods × {}); {}",
        if verdict.schedulable {
            "SCHEDULABLE"
        } else {
            "NOT SCHEDULABLE"
        },
        verdict.period_scale,
        if verdict.bound_met {
            "every job within its bound".to_string()
        } else if verdict.unexplained == 0 {
            format!(
                "{} job(s) above their bound, every one with its cause",
                verdict.late
            )
        } else {
            format!(
                "{} job(s) above their bound, {} UNEXPLAINED",
                verdict.late, verdict.unexplained
            )
        }
    );
    println!("demo took {:.1} s", verdict.seconds);
}
