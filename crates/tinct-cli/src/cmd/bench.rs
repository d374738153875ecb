//! `tinct bench <subcommand>`: the measurement workbenches of tinct-bench.
//!
//! Each bench's options are its library parameter type, which derives
//! `clap::Args` (tinct-bench's feature `cli`: every option is declared and
//! documented once, on the field). This module adds `--no-progress`, calls
//! the bench with a progress bar ([`progress_bar`]), and prints the summary
//! the library returns (rendered by `tinct_bench::harness::summary_text`).
//! The library writes the JSON, CSV and SVG files.

mod progress_bar;

use crate::error::CliError;
use progress_bar::Bar;
use std::process::ExitCode;
use tinct_bench::harness::{BenchOptions, Finished, Progress};
use tinct_bench::wcet_profile::WorkerCommand;
use tinct_bench::{
    banks, calibrate, coherence, crpd, dram_map, isolation, overheads, pipeline, wcet_profile,
};

/// Options of `tinct bench`.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    #[command(subcommand)]
    bench: Bench,
}

/// A bench's parameters, and the one option of the CLI's own: the bar.
#[derive(clap::Args, Debug)]
struct Measure<P: clap::Args> {
    #[command(flatten)]
    params: P,
    /// No progress bar (it is hidden anyway when stderr is not a terminal).
    #[arg(long)]
    no_progress: bool,
}

#[derive(clap::Subcommand, Debug)]
enum Bench {
    /// Load-to-use latency per cache level (pointer chase, with and without
    /// huge pages), read/write bandwidth and the partition refill time Δ.
    Calibrate(Measure<calibrate::Params>),
    /// The platform overheads an analysis charges: context-switch cost δ,
    /// release latency and jitter, timer tick; stored in the calibration.
    Overheads(Measure<overheads::Params>),
    /// Context-switch cost and cache-related preemption delay against the
    /// theoretical curves of Sebek 2002 (Figures 5 and 7).
    Crpd(Measure<crpd::Params>),
    /// C^p: the WCET of one job body for p = 1..N_P cache partitions
    /// (kim2013 Figure 6) alone, cold and with co-runners, with percentiles
    /// and an EVT pWCET, as a task-set `wcet` line and a task-set file.
    WcetProfile(Box<Measure<wcet_profile::Params>>),
    /// One wcet-profile worker process (internal).
    #[command(hide = true)]
    WcetWorker {
        /// The job, as JSON (written by `tinct bench wcet-profile`).
        job: String,
    },
    /// The co-runners of one wcet-profile launch (internal).
    #[command(hide = true)]
    WcetCorunner {
        /// The job, as JSON (written by `tinct bench wcet-profile`).
        job: String,
    },
    /// Shared-memory contention (Gracioli et al.): sequential, parallel-shared
    /// and parallel-private versions per thread placement, and false sharing.
    Coherence(Measure<coherence::Params>),
    /// DRAM bank/controller contention (Chandru & Mueller): own-bank, default
    /// and shared-bank allocations under STREAM-like and random-access kernels.
    Banks(Measure<banks::Params>),
    /// The DRAM address mapping (bank XOR functions) from row-buffer
    /// conflict timing and pagemap, each function with its confidence;
    /// writes dram-map.toml (for exec, banks and task sets) only when found.
    DramMap(Measure<dram_map::Params>),
    /// Inter-core cache interference on a victim with and without cache
    /// reservation by page coloring (kim2013 Figure 7).
    Isolation(Measure<isolation::Params>),
    /// The wave/mixer pipeline of De Marchi et al. (Figure 2) under the os,
    /// affinity and static placements: production rate, ρ = μ + 2σ,
    /// migrations, ECDF and Table I.
    Pipeline(Measure<pipeline::Params>),
}

impl Bench {
    /// The options every bench that writes files takes, with the name of
    /// its default output directory (`tinct-bench/<name>`).
    fn common(&self) -> Option<(&BenchOptions, &'static str)> {
        match self {
            Bench::Calibrate(a) => Some((&a.params.common, calibrate::NAME)),
            Bench::Overheads(a) => Some((&a.params.common, "overheads")),
            Bench::Crpd(a) => Some((&a.params.common, "crpd")),
            Bench::WcetProfile(a) => Some((&a.params.common, "wcet-profile")),
            Bench::Coherence(a) => Some((&a.params.common, "coherence")),
            Bench::Banks(a) => Some((&a.params.common, "banks")),
            Bench::DramMap(a) => Some((&a.params.common, "dram-map")),
            Bench::Isolation(a) => Some((&a.params.common, "isolation")),
            Bench::Pipeline(a) => Some((&a.params.common, "pipeline")),
            Bench::WcetWorker { .. } | Bench::WcetCorunner { .. } => None,
        }
    }
}

/// Runs the chosen bench.
pub(crate) fn run(args: Args) -> Result<ExitCode, CliError> {
    // The output directory is checked before anything is measured.
    if let Some((common, name)) = args.bench.common() {
        crate::output::output_dir(&common.out_dir(name), "--out")?;
    }
    match args.bench {
        Bench::Calibrate(a) => measure(&a.params, a.no_progress, calibrate::run).inspect(|&code| {
            if code == ExitCode::SUCCESS {
                save_calibration(&a.params)
            }
        }),
        Bench::Overheads(a) => {
            let (params, note) = a.params.storing(crate::calibration::saved_path());
            if let Some(note) = note {
                println!("{note}");
            }
            measure(&params, a.no_progress, overheads::run)
        }
        Bench::Crpd(a) => measure(&a.params, a.no_progress, crpd::run),
        Bench::WcetProfile(mut a) => {
            // The task-set file the table goes into is checked before
            // minutes of measuring, as the output directory is.
            if let Some(path) = &a.params.write_taskset {
                crate::output::output_file(path, "--write-taskset")?;
            }
            let worker = WorkerCommand::this_tinct()?;
            // The same shim as `tinct exec` (embedded copy included), unless
            // one is named or the run is uncolored.
            if a.params.preload.is_none() && !a.params.uncolored {
                a.params.preload = Some(super::shim::find_shim()?);
            }
            measure(&a.params, a.no_progress, |params, bar| {
                wcet_profile::run(params, &worker, bar)
            })
        }
        Bench::WcetWorker { job } => wcet_profile::worker::main(&job)
            .map(|line| println!("{line}"))
            .map(|()| ExitCode::SUCCESS)
            .map_err(CliError::from),
        Bench::WcetCorunner { job } => {
            wcet_profile::co_runners::main(&job, &mut std::io::stdout(), &mut std::io::stdin())
                .map(|line| println!("{line}"))
                .map(|()| ExitCode::SUCCESS)
                .map_err(CliError::from)
        }
        Bench::Coherence(a) => measure(&a.params, a.no_progress, coherence::run),
        Bench::Banks(a) => measure(&a.params, a.no_progress, banks::run),
        Bench::DramMap(a) => measure(&a.params, a.no_progress, dram_map::run),
        Bench::Isolation(a) => measure(&a.params, a.no_progress, isolation::run),
        Bench::Pipeline(a) => measure(&a.params, a.no_progress, pipeline::run),
    }
}

/// Runs one bench on its parameters with a progress bar (unless
/// `no_progress`) and shows what it returns ([`show`]).
fn measure<P, R>(
    params: &P,
    no_progress: bool,
    bench: impl FnOnce(&P, &dyn Progress) -> tinct_bench::Result<Finished<R>>,
) -> Result<ExitCode, CliError> {
    let bar = Bar::new(!no_progress);
    show(bench(params, &bar), &bar)
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
fn save_calibration(params: &calibrate::Params) {
    let target = crate::calibration::saved_path();
    let saving = calibrate::machine::save(params, target.as_deref());
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
            assert!(!args.no_progress, "{} draws its bar by default", $name);
            args.params
        }};
    }

    #[test]
    fn without_options_every_bench_takes_the_librarys_defaults() {
        use tinct_bench::*;
        assert_eq!(
            defaults!("calibrate", Calibrate),
            calibrate::Params::default()
        );
        assert_eq!(
            defaults!("overheads", Overheads),
            overheads::Params::default()
        );
        assert_eq!(defaults!("crpd", Crpd), crpd::Params::default());
        assert_eq!(
            defaults!("coherence", Coherence),
            coherence::Params::default()
        );
        assert_eq!(defaults!("banks", Banks), banks::Params::default());
        assert_eq!(defaults!("dram-map", DramMap), dram_map::Params::default());
        assert_eq!(
            defaults!("isolation", Isolation),
            isolation::Params::default()
        );
        assert_eq!(defaults!("pipeline", Pipeline), pipeline::Params::default());
        assert_eq!(
            defaults!("wcet-profile", WcetProfile),
            wcet_profile::Params::default()
        );
    }

    #[test]
    fn the_options_reach_the_librarys_fields() {
        let Bench::WcetProfile(profile) = parse([
            "wcet-profile",
            "--no-progress",
            "--quick",
            "--conditions",
            "cold,co-run",
            "--exceedance",
            "1e-9,1e-12",
            "--p",
            "1-4",
            "--use",
            "p99.9",
        ]) else {
            panic!("wcet-profile parsed as another bench")
        };
        assert!(profile.no_progress);
        let params = &profile.params;
        assert!(params.common.quick);
        use tinct_bench::wcet_profile::condition::Condition;
        assert_eq!(params.conditions, [Condition::Cold, Condition::CoRun]);
        assert_eq!(params.exceedances, [1e-9, 1e-12]);
        assert_eq!(params.p_list.as_deref(), Some("1-4"));
        assert_eq!(params.statistic.to_string(), "p99.9");
        let Bench::Banks(banks) = parse(["banks", "--composite", "8/10,32/2", "--kernels", "add"])
        else {
            panic!("banks parsed as another bench")
        };
        assert_eq!(banks.params.composite, Some(vec![(8, 10), (32, 2)]));
        assert_eq!(
            banks.params.kernels,
            Some(vec![tinct_bench::banks::kernels::Kernel::Add])
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
            Bench::WcetWorker { .. }
        ));
        assert!(matches!(
            job(WorkerCommand::CO_RUNNER_PREFIX),
            Bench::WcetCorunner { .. }
        ));
    }
}
