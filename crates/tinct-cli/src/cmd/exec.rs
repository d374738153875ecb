//! `tinct exec --colors 0-15 [--pool 512MiB] [--strict] [--stats]
//! [--cpus 0] [--fifo PRIO] -- CMD ARGS...`: runs an unmodified program
//! with its heap in the given page colors (kim2013 Section III-A: cache
//! reservation without changing application software).
//!
//! It sets `LD_PRELOAD` to `libtinct_preload.so` (named by
//! `TINCT_PRELOAD_LIB`, found next to the `tinct` binary, or the copy
//! embedded in the binary, see [`super::shim::find_shim`]) and the shim's `TINCT_*`
//! variables (`tinct_mem::ShimConfig::to_env`), pins and prioritises
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
use tinct_mem::ShimConfig;
use tinct_mem::XorFunctions;
use tinct_sys::SysRoot;
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
    let shim = shim_config(&args)?;
    let cpus = match &args.cpus {
        None => None,
        Some(text) => Some(non_empty_list("--cpus", text, "0-3,8", "CPU")?),
    };
    let l3_partitions = match &args.l3_partitions {
        None => None,
        Some(text) => Some(non_empty_list("--l3-partitions", text, "2-3", "partition")?),
    };
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
            let path = isolation::frame_report_path().map_err(|e| {
                anyhow::anyhow!("--stats: cannot make a directory for the frame reports: {e}")
            })?;
            shim.frame_report = Some(path.clone());
            frames = Some(path);
        }
        command.envs(shim.to_env());
        command.env(
            "LD_PRELOAD",
            preload_value(&library, std::env::var_os("LD_PRELOAD")),
        );
        // CPython allocates small objects from its own mmap'd arenas, which
        // no malloc shim sees; PYTHONMALLOC=malloc routes them through malloc.
        if std::env::var_os("PYTHONMALLOC").is_none() {
            command.env("PYTHONMALLOC", "malloc");
        }
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
        eprint!("{}", isolation::report(path));
        let _ = std::fs::remove_dir_all(path.parent().unwrap_or(path));
    }
    if let Some(removed) = removed {
        removed.map_err(|e| anyhow::anyhow!("cannot remove the resctrl group: {e}"))?;
    }
    Ok(exit_code_of(status))
}

/// `--stats`: the proof (or not) that the program's heap is isolated, from
/// the frames its processes were given, through tinct-sim's model of this
/// machine's last-level cache.
mod isolation {
    use std::fmt::Write;
    use std::path::Path;
    use tinct_sim::isolation::{TaskFrames, check};

    /// A private directory for the frame reports, and the path prefix the
    /// shim writes `<prefix>.<pid>` to.
    pub fn frame_report_path() -> std::io::Result<std::path::PathBuf> {
        use std::os::unix::fs::DirBuilderExt;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let dir = std::env::temp_dir().join(format!("tinct-exec-{}-{nanos:x}", std::process::id()));
        std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
        Ok(dir.join("frames"))
    }

    /// The report printed after the program's own summary.
    pub fn report(path: &Path) -> String {
        let reports = match tinct_mem::read_frame_reports(path) {
            Ok(reports) if !reports.is_empty() => reports,
            Ok(_) => {
                return "tinct exec: isolation not checked: no process of the program built a \
                        colored heap (it never called malloc)\n"
                    .into();
            }
            Err(e) => return format!("tinct exec: isolation not checked: {e}\n"),
        };
        if reports.iter().any(|r| r.uncolored) {
            return "tinct exec: isolation not checked: the heap ran uncolored (frame numbers \
                    unreadable)\n"
                .into();
        }
        let Ok(model) = tinct_rt::isolation::LlcModel::of_machine() else {
            return "tinct exec: isolation not checked: this machine's last-level cache geometry \
                    is unknown\n"
                .into();
        };
        let (llc, geometry) = (model.name, model.geometry);
        let tasks: Vec<TaskFrames> = reports
            .iter()
            .map(|r| TaskFrames::new(format!("{}[{}]", r.command, r.pid), r.frames.clone()))
            .collect();
        let result = match check(&geometry, reports[0].page_size, &tasks) {
            Ok(result) => result,
            Err(e) => return format!("tinct exec: isolation not checked: {e}\n"),
        };
        let mut out = format!(
            "tinct exec: the heap in the {llc} model ({} sets, {} colors of {} B pages):\n",
            result.total_sets, result.colors, result.page_size
        );
        for task in &result.tasks {
            let colors: Vec<u32> = task.colors.iter().map(|&c| c as u32).collect();
            let others: Vec<String> = task
                .evicted_by
                .iter()
                .map(|s| format!("{} ({} sets)", s.task, s.sets))
                .collect();
            let _ = writeln!(
                out,
                "  {}: {} pages in colors {}, can occupy {} of {} sets ({:.1} %); {}",
                task.name,
                task.pages,
                tinct_sys::format_cpu_list(&colors),
                task.sets,
                result.total_sets,
                100.0 * task.sets as f64 / result.total_sets as f64,
                if others.is_empty() {
                    "no other process of the program can evict its lines".to_string()
                } else {
                    format!("shares sets with {}", others.join(", "))
                }
            );
        }
        out
    }
}

/// The shim's settings from the arguments (`None` without colors, banks
/// or controllers: no shim), each list checked with the flag's name.
fn shim_config(args: &Args) -> Result<Option<ShimConfig>, CliError> {
    if args.colors.is_none() && args.banks.is_none() && args.controllers.is_none() {
        return Ok(None);
    }
    let optional_list = |flag: &str, text: &Option<String>, what: &str| {
        text.as_deref()
            .map(|t| non_empty_list(flag, t, "0-15,32", what))
            .transpose()
    };
    let functions = |flag: &str, text: &Option<String>| -> Result<Vec<u64>, CliError> {
        let Some(text) = text else {
            return Ok(Vec::new());
        };
        XorFunctions::parse(text)
            .map(|f| f.masks().to_vec())
            .map_err(|e| {
                CliError::Input(format!(
                    "{flag} {text:?}: expected hexadecimal address masks such as \
                     0x2000,0x4000 ({e})"
                ))
            })
    };
    let pool_bytes = tinct_core::units::parse_size(&args.pool)
        .map_err(|e| {
            CliError::Input(format!(
                "--pool {:?}: expected a size such as 512MiB ({e})",
                args.pool
            ))
        })?
        .0;
    if pool_bytes < tinct_mem::shim_config::MIN_POOL {
        return Err(CliError::Input(format!(
            "--pool {:?}: expected at least 1MiB",
            args.pool
        )));
    }
    let color_bits = optional_list("--color-bits", &args.color_bits, "bit")?;
    let page = tinct_sys::system::PageSize::read(&SysRoot::live()).map_or(4096, |p| p.bytes);
    let geometry = match &color_bits {
        Some(bits) => tinct_sys::cache_slices::explicit_color_geometry(bits, page, "--color-bits")
            .map(Some)
            .map_err(|e| CliError::Input(format!("--color-bits: {e}")))?,
        None => tinct_mem::machine_color_geometry(page).ok(),
    };
    let bank_mode = tinct_mem::Modes::parse(&args.bank_mode)
        .map_err(|e| CliError::Input(format!("--bank-mode {:?}: {e}", args.bank_mode)))?;
    if bank_mode != tinct_mem::Modes::EXACT && args.banks.is_none() && args.controllers.is_none() {
        return Err(CliError::Input(format!(
            "--bank-mode {}: expected --banks or --controllers to fall back from",
            bank_mode.names()
        )));
    }
    let (bank_functions, controller_functions) = match &args.dram_map {
        None => (
            functions("--bank-functions", &args.bank_functions)?,
            functions("--controller-functions", &args.controller_functions)?,
        ),
        Some(path) => dram_map_functions(path, page)?,
    };
    for (flag, given, masks, source) in [
        (
            "--banks",
            args.banks.is_some(),
            &bank_functions,
            "--bank-functions",
        ),
        (
            "--controllers",
            args.controllers.is_some(),
            &controller_functions,
            "--controller-functions",
        ),
    ] {
        if given && masks.is_empty() {
            return Err(CliError::Input(format!(
                "{flag}: expected the DRAM functions too: {source} 0x...,0x... or --dram-map FILE \
                 (from `tinct bench dram-map`)"
            )));
        }
    }
    let config = ShimConfig {
        colors: optional_list("--colors", &args.colors, "color")?.unwrap_or_default(),
        color_bits,
        bank_mode,
        mmap: args.mmap,
        fork_keep: args.fork_keep,
        banks: optional_list("--banks", &args.banks, "bank")?,
        controllers: optional_list("--controllers", &args.controllers, "controller")?,
        bank_functions,
        controller_functions,
        strict: args.strict,
        stats: args.stats,
        allow_uncolored: args.allow_uncolored,
        pool_bytes,
        ..ShimConfig::colored(Vec::new())
    };
    config.validate().map_err(CliError::Input)?;
    // The shim of every process of the program would otherwise read the
    // cache topology from sysfs again: give it the bits (start-up cost).
    let mut config = config;
    if config.color_bits.is_none()
        && let Some(bits) = geometry.as_ref().and_then(|g| g.colors.color_bits().ok())
    {
        config.color_bits = Some(bits.collect());
    }
    if !config.colors.is_empty()
        && let Some(geometry) = &geometry
    {
        config
            .check_colors_exist(geometry.colors.colors)
            .map_err(|e| CliError::Input(format!("--colors: {e} ({})", geometry.rule)))?;
    }
    Ok(Some(config))
}

/// The bank and controller functions of a `tinct bench dram-map` file,
/// each reduced to the part a page allocator controls (functions that read
/// bits inside a page vary within a page), with what was left out said.
fn dram_map_functions(path: &Path, page: u64) -> Result<(Vec<u64>, Vec<u64>), CliError> {
    let map =
        tinct_core::dram_map::DramMap::load(path).map_err(|e| CliError::Input(e.to_string()))?;
    if map.physical == tinct_core::dram_map::AddressKind::Guest {
        eprintln!(
            "tinct exec: {}: measured on a virtual machine (guest-physical addresses): its \
             banks are not the host's",
            path.display()
        );
    }
    let reduce = |what: &str, masks: &[u64]| -> Result<Vec<u64>, CliError> {
        let functions = XorFunctions::from_masks(masks.to_vec())
            .map_err(|e| CliError::Input(format!("--dram-map {}: {what}: {e}", path.display())))?;
        let (kept, lost) = functions.page_granular(page);
        if lost > 0 {
            eprintln!(
                "tinct exec: {}: {lost} of the {what} bits read address bits inside a page and \
                 cannot be chosen by page; using the {} page-granular functions",
                path.display(),
                kept.masks().len()
            );
        }
        Ok(kept.masks().to_vec())
    };
    Ok((
        reduce("bank", &map.bank_functions)?,
        reduce("controller", &map.controller_functions)?,
    ))
}

/// A list such as `0-3,8` from `flag`, with at least one entry.
fn non_empty_list(flag: &str, text: &str, example: &str, what: &str) -> Result<Vec<u32>, CliError> {
    let list = tinct_sys::parse_cpu_list(text).map_err(|e| {
        CliError::Input(format!(
            "{flag} {text:?}: expected a list such as {example} ({e})"
        ))
    })?;
    if list.is_empty() {
        return Err(CliError::Input(format!(
            "{flag}: expected at least one {what}"
        )));
    }
    Ok(list)
}

/// The program's exit status as ours (128 + signal if it was killed).
fn exit_code_of(status: std::process::ExitStatus) -> ExitCode {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => ExitCode::from(code as u8),
        (None, Some(signal)) => ExitCode::from(128u8.wrapping_add(signal as u8)),
        _ => ExitCode::FAILURE,
    }
}

/// The shim first, then whatever was preloaded already.
fn preload_value(shim: &Path, existing: Option<OsString>) -> OsString {
    let mut value = shim.as_os_str().to_os_string();
    if let Some(existing) = existing.filter(|e| !e.is_empty()) {
        value.push(":");
        value.push(existing);
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shim_goes_first_in_ld_preload() {
        let shim = Path::new("/x/libtinct_preload.so");
        assert_eq!(preload_value(shim, None), "/x/libtinct_preload.so");
        assert_eq!(
            preload_value(shim, Some("".into())),
            "/x/libtinct_preload.so"
        );
        assert_eq!(
            preload_value(shim, Some("/y/other.so".into())),
            "/x/libtinct_preload.so:/y/other.so"
        );
    }
}
