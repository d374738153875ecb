//! `tinct exec --colors 0-15 [--pool 512MiB] [--strict] [--stats]
//! [--cpus 0] [--fifo PRIO] -- CMD ARGS...`: runs an unmodified program
//! with its heap in the given page colors (kim2013 Section III-A: cache
//! reservation without changing application software).
//!
//! It sets `LD_PRELOAD` to `libtinct_preload.so` (named by
//! `TINCT_PRELOAD_LIB`, found next to the `tinct` binary, or the copy
//! embedded in the binary, see [`super::shim::find_shim`]) and the shim's `TINCT_*`
//! variables (`tinct_exec`: the settings from the arguments, the
//! environment, the isolation proof of `--stats`), pins and prioritises
//! itself, then replaces itself with the program (`execvp`), which
//! inherits all of it (`tinct_exec::launch`).
//!
//! With `--l3-partitions` it also (or instead) reserves L3 ways through
//! resctrl (`tinct_sys::resctrl::reserve_l3_for_this_process`): a control
//! group `tinct-<pid>` with the partitions' capacity mask, which `tinct`
//! joins before starting the program (children inherit the group); it then
//! waits for the program and removes the group.

use crate::error::CliError;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;
use tinct_exec::{
    ExecRequest, L3Request, Launch, LaunchError, launch, non_empty_list, preload_ignored,
};

/// Arguments of `tinct exec`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Page colors of the last-level cache to serve the heap from, e.g. `0-15,32`
    /// (see `tinct doctor` for the number of colors).
    #[arg(long, value_name = "LIST", required_unless_present_any = ["l3_partitions", "banks", "controllers"])]
    pub colors: Option<String>,
    /// Reserve these cache partitions (1-based, as S(i) in a plan) with
    /// hardware cache allocation (resctrl L3 capacity mask), e.g. `2-3`.
    #[arg(long, value_name = "LIST")]
    pub l3_partitions: Option<String>,
    /// N_P, the number of partitions the L3 mask bits are split into
    /// (default: one per mask bit).
    #[arg(long, value_name = "N", requires = "l3_partitions")]
    pub partitions: Option<u32>,
    /// resctrl mount point (default: from /proc/mounts); for tests.
    #[arg(long, value_name = "DIR", hide = true, requires = "l3_partitions")]
    pub resctrl_root: Option<PathBuf>,
    /// Physical address bits of the page colour, e.g. `12-16`, instead of
    /// the last-level cache's rule (`tinct doctor` shows it and why).
    #[arg(long, value_name = "LIST")]
    pub color_bits: Option<String>,
    /// DRAM banks to serve the heap from, e.g. `1,2` (in every controller;
    /// with `--colors`, pages must be in both). Needs `--bank-functions`
    /// or `--dram-map`.
    #[arg(long, value_name = "LIST")]
    pub banks: Option<String>,
    /// The DRAM bank functions of this machine as XOR masks in DRAMA format,
    /// e.g. `0x2040,0x44000` (bank bit i = parity of address & mask i).
    #[arg(long, value_name = "MASKS", conflicts_with = "dram_map")]
    pub bank_functions: Option<String>,
    /// The DRAM mapping file `tinct bench dram-map` wrote (its bank and
    /// controller functions; those that read bits inside a page cannot be
    /// controlled by a page allocator and are left out, as the shim says).
    #[arg(long, value_name = "FILE")]
    pub dram_map: Option<PathBuf>,
    /// chandru-mueller Algorithm 1's fallbacks once the requested banks are
    /// spent, comma-separated: `exact` (none: the allocation falls back to
    /// uncoloured memory, or fails with --strict), `restricted` (the
    /// requested controllers' fullest other bank), `unrestricted` (the
    /// fullest controller and bank), `split` (any page of the colours).
    /// The summary (--stats) says how many requests and pages each step
    /// served.
    #[arg(long, value_name = "MODES", default_value = "exact")]
    pub bank_mode: String,
    /// Serve the program's own anonymous mmap (private, read-write) from
    /// coloured pages too, not only its heap.
    #[arg(long)]
    pub mmap: bool,
    /// After fork, let the child take the copy-on-write copies of the heap,
    /// so the parent keeps its pages' colours when it writes them (the
    /// child's heap is then uncoloured, and it pays one page copy per
    /// heap page).
    #[arg(long)]
    pub fork_keep: bool,
    /// DRAM controllers to serve the heap from. Needs
    /// `--controller-functions` (or a `--dram-map` that has them).
    #[arg(long, value_name = "LIST")]
    pub controllers: Option<String>,
    /// The DRAM controller functions as XOR masks, like `--bank-functions`.
    #[arg(long, value_name = "MASKS", conflicts_with = "dram_map")]
    pub controller_functions: Option<String>,
    /// The most memory the shim populates: it starts with one small
    /// segment (at most 2 MiB) and grows on demand, keeping pages of the requested colours (so the heap can
    /// grow to about SIZE × requested / all colors).
    #[arg(long, value_name = "SIZE", default_value = "512MiB")]
    pub pool: String,
    /// When the colored pool is full, fail the allocation (ENOMEM) instead
    /// of falling back to uncolored memory; and refuse (exit 2) a program
    /// the shim cannot be loaded into (statically linked, set-ID, or a
    /// script of such an interpreter) instead of running it uncoloured.
    #[arg(long)]
    pub strict: bool,
    /// Print a summary on stderr when the program exits (pages per color,
    /// fallbacks, peak), and the cache sets the heap of each of its
    /// processes can occupy in tinct-sim's model of this machine's
    /// last-level cache, with any other process that can evict its lines
    /// (the program then runs as a child of tinct).
    #[arg(long)]
    pub stats: bool,
    /// Run even if physical frame numbers are unreadable (no placement
    /// control; the shim says so).
    #[arg(long)]
    pub allow_uncolored: bool,
    /// Pin the program to these CPUs, e.g. `0` or `0-1`.
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<String>,
    /// Run the program under SCHED_FIFO with this priority (1-99, higher wins).
    #[arg(long, value_name = "PRIO", value_parser = clap::value_parser!(u8).range(1..=99))]
    pub fifo: Option<u8>,
    /// The program and its arguments.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}

/// Checks the arguments, then has `tinct_exec::launch` set up the
/// environment, pinning and priority and exec the program; prints what it
/// reports. Returns only on failure or when the program was waited for.
pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let request = ExecRequest {
        colors: args.colors.as_deref(),
        color_bits: args.color_bits.as_deref(),
        banks: args.banks.as_deref(),
        bank_functions: args.bank_functions.as_deref(),
        controllers: args.controllers.as_deref(),
        controller_functions: args.controller_functions.as_deref(),
        dram_map: args.dram_map.as_deref(),
        bank_mode: &args.bank_mode,
        pool: &args.pool,
        mmap: args.mmap,
        fork_keep: args.fork_keep,
        strict: args.strict,
        stats: args.stats,
        allow_uncolored: args.allow_uncolored,
    };
    let shim = request
        .shim_config(&mut |note| eprintln!("tinct exec: {note}"))
        .map_err(CliError::Input)?;
    let list = |flag: &str, text: &Option<String>, example: &str, what: &str| {
        text.as_deref()
            .map(|t| non_empty_list(flag, t, example, what).map_err(CliError::Input))
            .transpose()
    };
    let cpus = list("--cpus", &args.cpus, "0-3,8", "CPU")?;
    let l3_partitions = list("--l3-partitions", &args.l3_partitions, "2-3", "partition")?;
    let shim = match shim {
        Some(config) => Some((config, super::shim::find_shim()?)),
        None => None,
    };
    if let Some((config, _)) = &shim {
        check_the_shim_loads(&args.command, config.strict)?;
    }
    let launched = launch(
        Launch {
            command: args.command,
            shim,
            l3_partitions: l3_partitions.map(|partitions| L3Request {
                partitions,
                n_p: args.partitions,
                resctrl_root: args.resctrl_root,
            }),
            cpus,
            fifo: args.fifo,
            stats: args.stats,
        },
        &mut |reservation| eprintln!("tinct exec: {reservation}"),
    );
    let ended = launched.map_err(|e| match e {
        LaunchError::Request(message) => CliError::Input(message),
        LaunchError::Failed(message) => CliError::Failed(anyhow::anyhow!(message)),
    })?;
    if let Some(passed_on) = &ended.passed_on {
        eprintln!("tinct exec: {passed_on}");
    }
    if let Some(report) = &ended.isolation_report {
        eprint!("{report}");
    }
    if let Some(e) = ended.removal_error {
        return Err(CliError::Failed(anyhow::anyhow!(
            "cannot remove the resctrl group: {e}"
        )));
    }
    Ok(ExitCode::from(ended.exit_status))
}

/// A program the dynamic loader will not load the shim into (statically
/// linked, set-ID, or a script of such an interpreter) would run
/// uncoloured: with `--strict` that is bad input, refused before it
/// starts; without, one warning line.
fn check_the_shim_loads(command: &[OsString], strict: bool) -> Result<(), CliError> {
    let Some(ignored) = command.first().and_then(|p| preload_ignored(p)) else {
        return Ok(());
    };
    if strict {
        return Err(CliError::Input(format!(
            "--strict: expected a program the shim can be loaded into, found that {ignored}; \
             it would run uncoloured (drop --strict to run it so)"
        )));
    }
    eprintln!("tinct exec: warning: the program will run uncoloured: {ignored}");
    Ok(())
}
