//! `tinct bench <subcommand>`: the measurement workbenches of tinct-bench.
//!
//! This module parses the options ([`args`]), calls the bench library with
//! its parameter struct and a progress bar ([`progress_bar`]), and prints
//! the summary the library returns (rendered by
//! `tinct_bench::harness::summary_text`). The library writes the
//! JSON, CSV and SVG files.

mod args;
pub(crate) mod common;
mod progress_bar;

use crate::error::CliError;
use progress_bar::Bar;
use std::process::ExitCode;
use tinct_bench::harness::Finished;
use tinct_bench::wcet_profile::WorkerCommand;

/// Options of `tinct bench`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    bench: Bench,
}

#[derive(clap::Subcommand, Debug)]
enum Bench {
    /// Load-to-use latency per cache level (pointer chase, with and without
    /// huge pages), read/write bandwidth and the partition refill time Δ.
    Calibrate(args::Calibrate),
    /// The platform overheads an analysis charges: context-switch cost δ,
    /// release latency and jitter, timer tick; stored in the calibration.
    Overheads(args::Overheads),
    /// Context-switch cost and cache-related preemption delay against the
    /// theoretical curves of Sebek 2002 (Figures 5 and 7).
    Crpd(args::Crpd),
    /// C^p: the WCET of one job body for p = 1..N_P cache partitions
    /// (kim2013 Figure 6) alone, cold and with co-runners, with percentiles
    /// and an EVT pWCET, as a task-set `wcet` line and a task-set file.
    WcetProfile(Box<args::WcetProfile>),
    /// One wcet-profile worker process (internal).
    #[command(hide = true)]
    WcetWorker(args::WcetWorker),
    /// The co-runners of one wcet-profile launch (internal).
    #[command(hide = true)]
    WcetCorunner(args::WcetCorunner),
    /// Shared-memory contention (Gracioli et al.): sequential, parallel-shared
    /// and parallel-private versions per thread placement, and false sharing.
    Coherence(args::Coherence),
    /// DRAM bank/controller contention (Chandru & Mueller): own-bank, default
    /// and shared-bank allocations under STREAM-like and random-access kernels.
    Banks(args::Banks),
    /// The DRAM address mapping (bank XOR functions) from row-buffer
    /// conflict timing and pagemap, each function with its confidence;
    /// writes dram-map.toml (for exec, banks and task sets) only when found.
    DramMap(args::DramMap),
    /// Inter-core cache interference on a victim with and without cache
    /// reservation by page coloring (kim2013 Figure 7).
    Isolation(args::Isolation),
    /// The wave/mixer pipeline of De Marchi et al. (Figure 2) under the
    /// os, affinity and static placements: production rate, ρ = μ + 2σ,
    /// migrations, ECDF and Table I.
    Pipeline(args::Pipeline),
}

impl Bench {
    /// The options every bench that writes files takes, with the name of
    /// its default output directory (`tinct-bench/<name>`).
    fn common(&self) -> Option<(&common::CommonArgs, &'static str)> {
        match self {
            Bench::Calibrate(a) => Some((&a.common, "calibrate")),
            Bench::Overheads(a) => Some((&a.common, "overheads")),
            Bench::Crpd(a) => Some((&a.common, "crpd")),
            Bench::WcetProfile(a) => Some((&a.common, "wcet-profile")),
            Bench::Coherence(a) => Some((&a.common, "coherence")),
            Bench::Banks(a) => Some((&a.common, "banks")),
            Bench::DramMap(a) => Some((&a.common, "dram-map")),
            Bench::Isolation(a) => Some((&a.common, "isolation")),
            Bench::Pipeline(a) => Some((&a.common, "pipeline")),
            Bench::WcetWorker(_) | Bench::WcetCorunner(_) => None,
        }
    }
}

/// Runs the chosen bench.
pub fn run(args: Args) -> Result<ExitCode, CliError> {
    // The output directory is checked before anything is measured.
    if let Some((common, name)) = args.bench.common() {
        crate::output::output_dir(&common.options().out_dir(name), "--out")?;
    }
    match args.bench {
        Bench::Calibrate(a) => measure(&a.common, |bar| {
            tinct_bench::calibrate::run(&a.params(), bar)
        })
        .inspect(|&code| {
            if code == ExitCode::SUCCESS {
                save_calibration(&a)
            }
        }),
        Bench::Overheads(a) => {
            let (params, note) = a.params(crate::calibration::saved_path());
            if let Some(note) = note {
                println!("{note}");
            }
            measure(&a.common, |bar| tinct_bench::overheads::run(&params, bar))
        }
        Bench::Crpd(a) => measure(&a.common, |bar| tinct_bench::crpd::run(&a.params(), bar)),
        Bench::WcetProfile(a) => {
            // The task-set file the table goes into is checked before
            // minutes of measuring, as the output directory is.
            if let Some(path) = &a.write_taskset {
                crate::output::output_file(path, "--write-taskset")?;
            }
            let worker = WorkerCommand::this_tinct()?;
            let mut params = a.params();
            // The same shim as `tinct exec` (embedded copy included), unless
            // one is named or the run is uncolored.
            if params.preload.is_none() && !params.uncolored {
                params.preload = Some(super::shim::find_shim()?);
            }
            measure(&a.common, |bar| {
                tinct_bench::wcet_profile::run(&params, &worker, bar)
            })
        }
        Bench::WcetWorker(a) => tinct_bench::wcet_profile::worker::main(&a.job)
            .map(|line| println!("{line}"))
            .map(|()| ExitCode::SUCCESS)
            .map_err(CliError::from),
        Bench::WcetCorunner(a) => tinct_bench::wcet_profile::co_runners::main(
            &a.job,
            &mut std::io::stdout(),
            &mut std::io::stdin(),
        )
        .map(|line| println!("{line}"))
        .map(|()| ExitCode::SUCCESS)
        .map_err(CliError::from),
        Bench::Coherence(a) => measure(&a.common, |bar| {
            tinct_bench::coherence::run(&a.params(), bar)
        }),
        Bench::Banks(a) => measure(&a.common, |bar| tinct_bench::banks::run(&a.params(), bar)),
        Bench::DramMap(a) => measure(&a.common, |bar| {
            tinct_bench::dram_map::run(&a.params(), bar)
        }),
        Bench::Isolation(a) => measure(&a.common, |bar| {
            tinct_bench::isolation::run(&a.params(), bar)
        }),
        Bench::Pipeline(a) => measure(&a.common, |bar| {
            tinct_bench::pipeline::run(&a.params(), bar)
        }),
    }
}

/// Runs one bench with a progress bar (unless `--no-progress`) and shows
/// what it returns ([`show`]).
fn measure<R>(
    common: &common::CommonArgs,
    bench: impl FnOnce(&Bar) -> tinct_bench::Result<Finished<R>>,
) -> Result<ExitCode, CliError> {
    let bar = Bar::new(!common.no_progress);
    show(bench(&bar), &bar)
}

/// Exit status of a bench stopped by SIGINT or SIGTERM (128 + SIGINT).
const INTERRUPTED: u8 = tinct_sys::signals::INTERRUPTED_EXIT_STATUS as u8;

/// Prints the summary of a finished bench: exit status 0. A bench stopped
/// by Ctrl-C returned (and wrote) the rounds it finished: that is said on
/// stderr and the status is 130, as for a bench whose stop ended in an
/// error; an output file that cannot be written is a failure (exit 1),
/// Ctrl-C or not.
fn show<R>(finished: tinct_bench::Result<Finished<R>>, bar: &Bar) -> Result<ExitCode, CliError> {
    let finished = match finished {
        Ok(finished) => finished,
        Err(e) if bar.stopped() && !e.is_output() => {
            eprintln!("tinct: bench interrupted (Ctrl-C), and then: {e}");
            return Ok(ExitCode::from(INTERRUPTED));
        }
        Err(e) => {
            if bar.stopped() {
                eprintln!("tinct: bench interrupted (Ctrl-C), and then failed:");
            }
            return Err(e.into());
        }
    };
    print!(
        "{}",
        tinct_bench::harness::summary_text::render(&finished.summary)
    );
    if bar.stopped() {
        eprintln!(
            "tinct: bench interrupted (Ctrl-C): {}",
            finished.summary.interrupted_note()
        );
        return Ok(ExitCode::from(INTERRUPTED));
    }
    Ok(ExitCode::SUCCESS)
}

/// A full calibration becomes this machine's default Δ for task sets
/// without `refill`.
fn save_calibration(args: &args::Calibrate) {
    let target = crate::calibration::saved_path();
    let saving = tinct_bench::calibrate::machine::save(&args.params(), target.as_deref());
    if saving.is_warning() {
        eprintln!("tinct: warning: {}", saving.message());
    } else {
        println!("{}", saving.message());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    /// `tinct bench ...` as the binary parses it.
    #[derive(clap::Parser, Debug)]
    struct Tinct {
        #[command(subcommand)]
        command: Top,
    }

    #[derive(clap::Subcommand, Debug)]
    enum Top {
        Bench(Args),
    }

    fn parse<'a>(args: impl IntoIterator<Item = &'a str>) -> Bench {
        let argv = ["tinct", "bench"].into_iter().chain(args);
        let Top::Bench(args) = Tinct::try_parse_from(argv).unwrap().command;
        args.bench
    }

    /// The parameters of `tinct bench NAME` without options.
    macro_rules! defaults {
        ($name:literal, $variant:ident) => {{
            let Bench::$variant(args) = parse([$name]) else {
                panic!("{} parsed as another bench", $name)
            };
            args
        }};
    }

    #[test]
    fn without_options_every_bench_takes_the_librarys_defaults() {
        use tinct_bench::*;
        let common = defaults!("calibrate", Calibrate).common.options();
        assert_eq!(common, harness::BenchOptions::default());
        let (params, _note) = defaults!("overheads", Overheads).params(None);
        assert_eq!(params, overheads::Params::default());
        assert_eq!(
            defaults!("calibrate", Calibrate).params(),
            calibrate::Params::default()
        );
        assert_eq!(defaults!("crpd", Crpd).params(), crpd::Params::default());
        assert_eq!(
            defaults!("coherence", Coherence).params(),
            coherence::Params::default()
        );
        assert_eq!(defaults!("banks", Banks).params(), banks::Params::default());
        assert_eq!(
            defaults!("dram-map", DramMap).params(),
            dram_map::Params::default()
        );
        assert_eq!(
            defaults!("isolation", Isolation).params(),
            isolation::Params::default()
        );
        assert_eq!(
            defaults!("pipeline", Pipeline).params(),
            pipeline::Params::default()
        );
        assert_eq!(
            defaults!("wcet-profile", WcetProfile).params(),
            wcet_profile::Params::default()
        );
    }

    #[test]
    fn the_worker_protocols_prefixes_name_the_hidden_subcommands() {
        let job = |prefix: [&'static str; 2]| {
            let [bench, worker] = prefix;
            assert_eq!(bench, "bench");
            parse([worker, "{}"])
        };
        assert!(matches!(
            job(WorkerCommand::WORKER_PREFIX),
            Bench::WcetWorker(_)
        ));
        assert!(matches!(
            job(WorkerCommand::CO_RUNNER_PREFIX),
            Bench::WcetCorunner(_)
        ));
    }
}
