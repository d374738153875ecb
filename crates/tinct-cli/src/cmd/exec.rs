//! `tinct exec --colors 0-15 [--pool 512MiB] [--strict] [--stats]
//! [--cpus 0] [--fifo PRIO] -- CMD ARGS...`: runs an unmodified program
//! with its heap in the given page colors (kim2013 Section III-A: cache
//! reservation without changing application software).
//!
//! It sets `LD_PRELOAD` to `libtinct_preload.so` (named by
//! `TINCT_PRELOAD_LIB`, found next to the `tinct` binary, or the copy
//! embedded in the binary, see [`super::shim::find_shim`]) and the shim's `TINCT_*`
//! variables (`tinct_rt::exec`: the settings from the arguments, the
//! environment, the isolation proof of `--stats`), pins and prioritises
//! itself, then replaces itself with the program (`execvp`), which
//! inherits all of it.
//!
//! With `--l3-partitions` it also (or instead) reserves L3 ways through
//! resctrl (`tinct_sys::resctrl::reserve_l3_for_this_process`): a control
//! group `tinct-<pid>` with the partitions' capacity mask, which `tinct`
//! joins before starting the program (children inherit the group); it then
//! waits for the program and removes the group.

use crate::error::CliError;
use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use tinct_rt::exec::{
    ExecRequest, exit_status_of, frame_report_path, isolation_report, non_empty_list, program_env,
};
use tinct_sys::resctrl::reserve_l3_for_this_process;

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
    /// The most memory the shim populates: it starts with 2 MiB and grows
    /// on demand, keeping pages of the requested colours (so the heap can
    /// grow to about SIZE × requested / all colors).
    #[arg(long, value_name = "SIZE", default_value = "512MiB")]
    pub pool: String,
    /// When the colored pool is full, fail the allocation (ENOMEM) instead
    /// of falling back to uncolored memory.
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

/// Checks the arguments, sets up the environment, pinning and priority,
/// and execs the program. Returns only on failure.
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
    let (program, rest) = args.command.split_first().expect("clap requires CMD");
    let mut command = Command::new(program);
    command.args(rest);
    let library = match &shim {
        Some(_) => Some(super::shim::find_shim()?),
        None => None,
    };
    let reservation = match &l3_partitions {
        None => None,
        Some(partitions) => {
            let reservation = reserve_l3_for_this_process(
                args.resctrl_root.as_deref(),
                args.partitions,
                partitions,
            )
            .map_err(|e| match e.is_bad_request() {
                true => CliError::Input(format!("--l3-partitions: {e}")),
                false => CliError::Failed(anyhow::anyhow!("--l3-partitions: {e}")),
            })?;
            eprintln!("tinct exec: {reservation}");
            Some(reservation)
        }
    };
    if let Some(cpus) = &cpus {
        tinct_sys::sched::set_affinity(cpus).map_err(|e| {
            anyhow::anyhow!(
                "cannot pin to CPUs {}: {e}",
                tinct_sys::format_cpu_list(cpus)
            )
        })?;
    }
    if let Some(priority) = args.fifo {
        tinct_sys::sched::set_fifo(priority).map_err(|e| {
            anyhow::anyhow!(
                "cannot set SCHED_FIFO priority {priority}: {e} (run as root or grant \
                 CAP_SYS_NICE, e.g. `setcap cap_sys_nice+ep $(which tinct)`)"
            )
        })?;
    }
    let mut frames = None;
    if let (Some(mut shim), Some(library)) = (shim, library) {
        if args.stats {
            let path = frame_report_path().map_err(|e| {
                anyhow::anyhow!("--stats: cannot make a directory for the frame reports: {e}")
            })?;
            shim.frame_report = Some(path.clone());
            frames = Some(path);
        }
        command.envs(program_env(
            &shim,
            &library,
            std::env::var_os("LD_PRELOAD"),
            std::env::var_os("PYTHONMALLOC").is_some(),
        ));
    }
    if reservation.is_none() && frames.is_none() {
        let error = command.exec();
        return Err(CliError::Failed(anyhow::anyhow!(
            "cannot run {}: {error}",
            Path::new(program).display()
        )));
    }
    // With a resctrl group to remove or frames to check, stay until the
    // program ends.
    let status = command.status();
    let removed = reservation.map(|r| r.remove());
    let status = status
        .map_err(|error| anyhow::anyhow!("cannot run {}: {error}", Path::new(program).display()))?;
    if let Some(path) = &frames {
        eprint!("{}", isolation_report(path));
        let _ = std::fs::remove_dir_all(path.parent().unwrap_or(path));
    }
    if let Some(removed) = removed {
        removed.map_err(|e| anyhow::anyhow!("cannot remove the resctrl group: {e}"))?;
    }
    Ok(ExitCode::from(exit_status_of(status)))
}
