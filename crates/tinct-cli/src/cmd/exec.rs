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
use std::process::ExitCode;
use tinct_exec::{ExecRequest, L3Request, Launch, LaunchError, launch, non_empty_list};
use tinct_rt::loader;

/// Arguments of `tinct exec`: its options are tinct-rt's `ExecRequest`
/// (feature `cli`), declared on its fields.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    #[command(flatten)]
    pub request: ExecRequest,
    /// The program and its arguments.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}

/// Checks the arguments, then has `tinct_exec::launch` set up the
/// environment, pinning and priority and exec the program; prints what it
/// reports. Returns only on failure or when the program was waited for.
pub(crate) fn run(args: Args) -> Result<ExitCode, CliError> {
    let Args { request, command } = args;
    let shim = request.shim_config(&mut |note| eprintln!("tinct exec: {note}"))?;
    let list = |flag: &str, text: &Option<String>, example: &str, what: &str| {
        text.as_deref()
            .map(|t| non_empty_list(flag, t, example, what))
            .transpose()
    };
    let cpus = list("--cpus", &request.cpus, "0-3,8", "CPU")?;
    let l3_partitions = list(
        "--l3-partitions",
        &request.l3_partitions,
        "2-3",
        "partition",
    )?;
    let shim = match shim {
        Some(config) => Some((config, super::shim::find_shim()?)),
        None => None,
    };
    // A program the loader will not load the shim into runs uncoloured:
    // refused with `--strict`, else said.
    if let Some((config, _)) = &shim
        && let Some(warning) = loader::check_loads(&command, config.strict)?
    {
        eprintln!("tinct exec: warning: {warning}");
    }
    let launched = launch(
        Launch {
            command,
            shim,
            l3_partitions: l3_partitions.map(|partitions| L3Request {
                partitions,
                n_p: request.partitions,
                resctrl_root: request.resctrl_root,
            }),
            cpus,
            fifo: request.fifo,
            stats: request.stats,
        },
        &mut |reservation| eprintln!("tinct exec: {reservation}"),
    );
    let ended = launched.map_err(|e| match e {
        LaunchError::Request(e) => CliError::Input(e),
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
