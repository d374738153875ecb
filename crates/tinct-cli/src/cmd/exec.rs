//! `tinct exec --colors 0-15 [--pool 512MiB] [--strict] [--stats]
//! [--cpus 0] [--fifo PRIO] -- CMD ARGS...`: runs an unmodified program
//! with its heap in the given page colors (kim2013 Section III-A: cache
//! reservation without changing application software).
//!
//! It sets `LD_PRELOAD` to `libtinct_preload.so` (found next to the `tinct`
//! binary, or named by `TINCT_PRELOAD_LIB`) and the shim's `TINCT_*`
//! variables, pins and prioritises itself, then replaces itself with the
//! program (`execvp`), which inherits all of it.
//!
//! With `--l3-partitions` it also (or instead) reserves L3 ways through
//! resctrl: a control group `tinct-<pid>` with the partitions' capacity
//! mask, which `tinct` joins before starting the program (children inherit
//! the group); it then waits for the program and removes the group.

use crate::error::CliError;
use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use tinct_sys::SysRoot;
use tinct_sys::topology::Topology;

/// The environment variable naming the shim explicitly.
pub const PRELOAD_LIB_VAR: &str = "TINCT_PRELOAD_LIB";
/// The shim's file name.
pub const PRELOAD_LIB: &str = "libtinct_preload.so";

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
    /// DRAM banks to serve the heap from, e.g. `1,2` (in every controller;
    /// with `--colors`, pages must be in both). Needs `--bank-functions`.
    #[arg(long, value_name = "LIST", requires = "bank_functions")]
    pub banks: Option<String>,
    /// The DRAM bank functions of this machine as XOR masks in DRAMA format,
    /// e.g. `0x2040,0x44000` (bank bit i = parity of address & mask i).
    #[arg(long, value_name = "MASKS")]
    pub bank_functions: Option<String>,
    /// DRAM controllers to serve the heap from. Needs `--controller-functions`.
    #[arg(long, value_name = "LIST", requires = "controller_functions")]
    pub controllers: Option<String>,
    /// The DRAM controller functions as XOR masks, like `--bank-functions`.
    #[arg(long, value_name = "MASKS")]
    pub controller_functions: Option<String>,
    /// Pool size: all colors are mapped and translated, the requested ones
    /// are kept (so the heap can grow to about SIZE × requested / all colors).
    #[arg(long, value_name = "SIZE", default_value = "512MiB")]
    pub pool: String,
    /// When the colored pool is full, fail the allocation (ENOMEM) instead
    /// of falling back to uncolored memory.
    #[arg(long)]
    pub strict: bool,
    /// Print a summary on stderr when the program exits (pages per color,
    /// fallbacks, peak).
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
    let colors = match &args.colors {
        None => None,
        Some(text) => {
            let colors = tinct_sys::parse_cpu_list(text).map_err(|e| {
                CliError::Input(format!(
                    "--colors {text:?}: expected a list such as 0-15,32 ({e})"
                ))
            })?;
            if colors.is_empty() {
                return Err(CliError::Input(
                    "--colors: expected at least one color".into(),
                ));
            }
            check_colors_exist(&colors)?;
            Some(colors)
        }
    };
    let pool = tinct_core::units::parse_size(&args.pool).map_err(|e| {
        CliError::Input(format!(
            "--pool {:?}: expected a size such as 512MiB ({e})",
            args.pool
        ))
    })?;
    if pool.0 < 1 << 20 {
        return Err(CliError::Input(format!(
            "--pool {:?}: expected at least 1MiB",
            args.pool
        )));
    }
    let cpus = match &args.cpus {
        None => None,
        Some(text) => {
            let cpus = tinct_sys::parse_cpu_list(text)
                .map_err(|e| CliError::Input(format!("--cpus {text:?}: {e}")))?;
            if cpus.is_empty() {
                return Err(CliError::Input("--cpus: expected at least one CPU".into()));
            }
            Some(cpus)
        }
    };
    let l3_partitions = match &args.l3_partitions {
        None => None,
        Some(text) => Some(
            tinct_sys::parse_cpu_list(text)
                .ok()
                .filter(|p| !p.is_empty())
                .ok_or_else(|| {
                    CliError::Input(format!(
                        "--l3-partitions {text:?}: expected partition numbers such as 2-3"
                    ))
                })?,
        ),
    };
    let (program, rest) = args.command.split_first().expect("clap requires CMD");
    let mut command = Command::new(program);
    command.args(rest);
    let dram = [
        (&args.banks, "TINCT_BANKS"),
        (&args.bank_functions, "TINCT_BANK_FUNCTIONS"),
        (&args.controllers, "TINCT_CONTROLLERS"),
        (&args.controller_functions, "TINCT_CONTROLLER_FUNCTIONS"),
    ];
    if colors.is_some() || args.banks.is_some() || args.controllers.is_some() {
        let shim = find_shim()?;
        if let Some(colors) = &colors {
            command.env("TINCT_COLORS", tinct_sys::format_cpu_list(colors));
        }
        for (value, name) in dram {
            if let Some(value) = value {
                command.env(name, value);
            }
        }
        command.env("TINCT_POOL", &args.pool);
        for (flag, name) in [
            (args.strict, "TINCT_STRICT"),
            (args.stats, "TINCT_STATS"),
            (args.allow_uncolored, "TINCT_ALLOW_UNCOLORED"),
        ] {
            if flag {
                command.env(name, "1");
            }
        }
        command.env(
            "LD_PRELOAD",
            preload_value(&shim, std::env::var_os("LD_PRELOAD")),
        );
        // CPython allocates small objects from its own mmap'd arenas, which
        // no malloc shim sees; PYTHONMALLOC=malloc routes them through malloc.
        if std::env::var_os("PYTHONMALLOC").is_none() {
            command.env("PYTHONMALLOC", "malloc");
        }
    }
    let group = match &l3_partitions {
        Some(partitions) => Some(join_l3_group(&args, partitions)?),
        None => None,
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
    let Some(group) = group else {
        let error = command.exec();
        return Err(CliError::Failed(anyhow::anyhow!(
            "cannot run {}: {error}",
            Path::new(program).display()
        )));
    };
    // With a resctrl group, stay to remove it when the program ends.
    let status = command.status();
    let removed = group.remove();
    let status = status
        .map_err(|error| anyhow::anyhow!("cannot run {}: {error}", Path::new(program).display()))?;
    removed.map_err(|e| anyhow::anyhow!("cannot remove the resctrl group: {e}"))?;
    Ok(exit_code_of(status))
}

/// Creates the resctrl group for `partitions` (under the resctrl lock),
/// writes its L3 mask on every domain and moves this process into it, so
/// the program started next inherits it.
fn join_l3_group(
    args: &Args,
    partitions: &[u32],
) -> Result<tinct_sys::resctrl_backend::Group, CliError> {
    use tinct_sys::resctrl_backend::{Resctrl, partition_mask};
    let resctrl = match &args.resctrl_root {
        Some(dir) => Resctrl::at(dir),
        None => Resctrl::live().map_err(|e| anyhow::anyhow!("--l3-partitions: {e}"))?,
    };
    let l3 = resctrl.l3().map_err(|e| {
        anyhow::anyhow!("--l3-partitions: this machine offers no L3 allocation: {e}")
    })?;
    let n_p = args.partitions.unwrap_or(l3.cbm_bits);
    let mask = partition_mask(&l3, n_p, partitions)
        .map_err(|e| CliError::Input(format!("--l3-partitions: {e}")))?;
    let _lock = resctrl.lock().map_err(anyhow::Error::from)?;
    let group = resctrl
        .create_group(&format!("tinct-{}", std::process::id()))
        .map_err(anyhow::Error::from)?;
    let masks: Vec<(u32, u64)> = l3.domains.iter().map(|&d| (d, mask)).collect();
    group.set_l3_masks(&masks).map_err(anyhow::Error::from)?;
    group
        .assign_tasks(&[std::process::id() as i32])
        .map_err(anyhow::Error::from)?;
    eprintln!(
        "tinct exec: L3 mask {mask:#x} (partitions {} of {n_p}) on domains {:?}, resctrl group {}",
        tinct_sys::format_cpu_list(partitions),
        l3.domains,
        group.name()
    );
    Ok(group)
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

/// Colors beyond the last-level cache's count are bad input (when the
/// geometry is known).
fn check_colors_exist(colors: &[u32]) -> Result<(), CliError> {
    let root = SysRoot::live();
    let page = tinct_sys::system::PageSize::read(&root).map_or(4096, |p| p.bytes);
    let available = Topology::read(&root).ok().and_then(|t| {
        t.last_level_caches()
            .first()
            .and_then(|c| c.page_colors(page))
            .map(|c| c.colors)
    });
    match (available, colors.last()) {
        (Some(count), Some(&highest)) if u64::from(highest) >= count => {
            Err(CliError::Input(format!(
                "--colors: color {highest} does not exist: expected colors 0-{} (the last-level cache \
             has {count} page colors)",
                count - 1
            )))
        }
        _ => Ok(()),
    }
}

/// `TINCT_PRELOAD_LIB`, else `libtinct_preload.so` next to the `tinct`
/// binary (or in `../lib`, as installed).
fn find_shim() -> Result<PathBuf, CliError> {
    if let Some(explicit) = std::env::var_os(PRELOAD_LIB_VAR) {
        let path = PathBuf::from(explicit);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(CliError::Input(format!(
                "{PRELOAD_LIB_VAR}={}: expected the path of {PRELOAD_LIB}, found no such file",
                path.display()
            )))
        };
    }
    let exe = std::env::current_exe()
        .map_err(|e| anyhow::anyhow!("cannot locate the tinct binary: {e}"))?;
    let dir = exe.parent().unwrap_or(Path::new("/"));
    let candidates = [dir.join(PRELOAD_LIB), dir.join("../lib").join(PRELOAD_LIB)];
    candidates
        .iter()
        .find(|p| p.is_file())
        .map(|p| p.canonicalize().unwrap_or_else(|_| p.clone()))
        .ok_or_else(|| {
            CliError::Failed(anyhow::anyhow!(
                "{PRELOAD_LIB} not found next to {} (looked in {} and {}): build it with `cargo \
                 build -p tinct-preload` (same profile as tinct) or set {PRELOAD_LIB_VAR}",
                exe.display(),
                candidates[0].display(),
                candidates[1].display()
            ))
        })
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
