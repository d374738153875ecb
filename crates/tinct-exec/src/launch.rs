//! Starting the program of `tinct exec` (kim2013 Section III-A): reserve
//! L3 ways through resctrl, pin, raise to SCHED_FIFO, set the shim's
//! environment, then either replace this process with the program
//! (`execvp`, nothing left to do afterwards) or, when a resctrl group must
//! be removed or the frames checked, run it as a child and wait.

use super::report_request::{Asked, REPORT_WAIT, ReportRequests};
use super::{exit_status_of, frame_report_path, isolation_report, program_env};
use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use tinct_base::InputError;
use tinct_base::geometry::PageColors;
use tinct_mem::ShimConfig;
use tinct_mem::shim_config::report_request::LISTENER;
use tinct_sys::resctrl::{L3Reservation, ReservationError, reserve_l3_for_this_process};
use tinct_sys::supervise::{
    ChildExit, ChildProcess, SignalRelay, ends_without_exit_handlers, signal_name,
};

/// What to start and how, every part already checked.
#[derive(Debug)]
pub struct Launch {
    /// The program and its arguments (at least the program).
    pub command: Vec<OsString>,
    /// The shim's settings and the library to preload (`None`: no shim).
    pub shim: Option<(ShimConfig, PathBuf)>,
    /// Cache partitions (1-based) to reserve through resctrl.
    pub l3_partitions: Option<L3Request>,
    /// CPUs to pin the program to.
    pub cpus: Option<Vec<u32>>,
    /// SCHED_FIFO priority (1-99).
    pub fifo: Option<u8>,
    /// Check the frames the program's processes were given (`--stats`).
    pub stats: bool,
}

/// An L3 reservation to make (`--l3-partitions`).
#[derive(Debug)]
pub struct L3Request {
    /// The partitions, 1-based, as S(i) in a plan.
    pub partitions: Vec<u32>,
    /// N_P (`None`: one partition per mask bit).
    pub n_p: Option<u32>,
    /// The resctrl mount (`None`: where /proc/mounts says).
    pub resctrl_root: Option<PathBuf>,
}

/// Why the program did not start or could not be waited for.
#[derive(Debug, PartialEq, Eq)]
pub enum LaunchError {
    /// The request itself is wrong (bad input, exit status 2): the flag
    /// (or the command) as the field, what was expected and found.
    Request(InputError),
    /// The machine refused (exit status 1).
    Failed(String),
}

/// How a waited-for program ended.
#[derive(Debug)]
pub struct Ended {
    /// Its exit status as `tinct exec`'s ([`exit_status_of`]).
    pub exit_status: u8,
    /// The isolation proof of its frames (with `stats`), to print.
    pub isolation_report: Option<String>,
    /// Why the resctrl group could not be removed, if it could not.
    pub removal_error: Option<String>,
    /// The signal `tinct exec` received while waiting and passed on.
    pub passed_on: Option<PassedOnSignal>,
}

/// Starts `launch`. `reserved` hears of the resctrl reservation once it is
/// made (before the program starts). Returns only when the program was
/// waited for, or on failure: without a resctrl group or `stats` the
/// program replaces this process.
pub fn launch(
    launch: Launch,
    reserved: &mut dyn FnMut(&L3Reservation),
) -> Result<Ended, LaunchError> {
    let failed = LaunchError::Failed;
    let Some((program, rest)) = launch.command.split_first() else {
        return Err(LaunchError::Request(InputError::new(
            "",
            "CMD",
            "a program to run",
            "none",
        )));
    };
    let mut command = Command::new(program);
    command.args(rest);
    let reservation = match &launch.l3_partitions {
        None => None,
        Some(request) => {
            let reservation = reserve_l3_for_this_process(
                request.resctrl_root.as_deref(),
                request.n_p,
                &request.partitions,
            )
            .map_err(|e| match e {
                // tinct-sys names N_P and the partitions; here they are flags.
                ReservationError::Partitions(tinct_sys::Error::Input(refused)) => {
                    let field = match refused.field.as_str() {
                        "N_P" => "--partitions",
                        _ => "--l3-partitions",
                    };
                    LaunchError::Request(InputError {
                        field: field.into(),
                        ..refused
                    })
                }
                other => failed(format!("--l3-partitions: {other}")),
            })?;
            reserved(&reservation);
            Some(reservation)
        }
    };
    if let Some(cpus) = &launch.cpus {
        tinct_sys::sched::set_affinity(cpus).map_err(|e| {
            failed(format!(
                "cannot pin to CPUs {}: {e}",
                tinct_sys::format_cpu_list(cpus)
            ))
        })?;
    }
    if let Some(priority) = launch.fifo {
        tinct_sys::sched::set_fifo(priority).map_err(|e| {
            failed(format!(
                "cannot set SCHED_FIFO priority {priority}: {e} (run as root or grant \
                 CAP_SYS_NICE, e.g. `setcap cap_sys_nice+ep $(which tinct)`)"
            ))
        })?;
    }
    let mut frames = None;
    let mut index_span_bytes = rustix::param::page_size() as u64;
    if let Some((mut shim, library)) = launch.shim {
        // The address span the colour bits index: the way of their colours.
        if let Some(colors) = shim
            .color_bits
            .as_ref()
            .and_then(|bits| PageColors::of_bits(bits, index_span_bytes).ok())
        {
            index_span_bytes = colors.way_bytes;
        }
        if launch.stats {
            let path = frame_report_path().map_err(|e| {
                failed(format!(
                    "--stats: cannot make a directory for the frame reports: {e}"
                ))
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
    let cannot_run = |error: std::io::Error| {
        failed(format!(
            "cannot run {}: {error}",
            Path::new(program).display()
        ))
    };
    if reservation.is_none() && frames.is_none() {
        return Err(cannot_run(command.exec()));
    }
    // With a resctrl group to remove or frames to check, stay until the
    // program ends; a SIGINT, SIGTERM or SIGHUP meanwhile is passed on to
    // it (armed before it starts), so that it is not left running and what
    // it recorded is still reported.
    // With frames to check, the shim's reports are asked for before a
    // signal ends the program without its exit handlers.
    let mut requests = match frames {
        Some(_) => Some(
            ReportRequests::new()
                .map_err(|e| failed(format!("--stats: cannot make the report socket: {e}")))?,
        ),
        None => None,
    };
    if let Some((name, value)) = requests.as_ref().and_then(ReportRequests::env) {
        command.env(name, value);
    }
    let relay = SignalRelay::arm();
    let spawned = command.spawn();
    if let Some(requests) = &mut requests {
        requests.started();
    }
    let mut asked = None;
    let waited = spawned.map_err(cannot_run).and_then(|child| {
        let child = ChildProcess::adopt(child.id());
        let pid = child.pid();
        // Before a signal that ends the program without its exit handlers
        // (or the SIGKILL after the grace period), the shim's reports.
        let mut before = |signal: Option<i32>| {
            let Some(requests) = &mut requests else {
                return;
            };
            if signal.is_some_and(|s| !ends_without_exit_handlers(pid, s, LISTENER)) {
                return;
            }
            let answer = requests.ask(pid, REPORT_WAIT, &|| child.has_ended());
            if signal.is_none() && answer == Asked::Exiting {
                // The grace is over, but the program is ending on its own:
                // its exit path writes the reports (reading every page's
                // frame takes a while, the longer on a loaded machine).
                // Killing it now would cut them off and misstate how it
                // ended; it is killed only if it does not end in time.
                ReportRequests::wait_for_end(REPORT_WAIT, &|| child.has_ended());
            }
            asked = Some(match asked {
                Some(Asked::Written) => Asked::Written,
                _ => answer,
            });
        };
        relay
            .wait_with(&child, STOP_GRACE, &mut before)
            .map_err(|e| {
                failed(format!(
                    "cannot wait for {}: {e}",
                    Path::new(program).display()
                ))
            })
    });
    drop(relay);
    let removed = reservation.map(|r| r.remove());
    let waited = waited?;
    let ended_by = match waited.exit {
        ChildExit::Signaled(signal) => Some(signal),
        ChildExit::Exited(_) => None,
    };
    let isolation_report = frames.map(|path| {
        let report = isolation_report(&path, index_span_bytes, ended_by);
        let _ = std::fs::remove_dir_all(path.parent().unwrap_or(&path));
        report
    });
    Ok(Ended {
        exit_status: exit_status_of(raw_status(waited.exit)),
        isolation_report,
        removal_error: removed.and_then(Result::err).map(|e| e.to_string()),
        passed_on: waited.signal.map(|signal| PassedOnSignal {
            signal,
            killed: waited.killed,
            report: asked,
        }),
    })
}

/// How long a program may take to end after a signal was passed on to it
/// before it is killed (as `tinct run`'s supervisor allows its child).
pub const STOP_GRACE: std::time::Duration =
    std::time::Duration::from_nanos(tinct_rt::runtime::STOP_GRACE_NS);

/// A signal `tinct exec` received and passed on to the program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PassedOnSignal {
    /// The signal's number.
    pub signal: i32,
    /// True if the program was killed for not ending within [`STOP_GRACE`].
    pub killed: bool,
    /// With `--stats`, what came of asking the shim for its reports before
    /// a signal ended the program without its exit handlers (`None`: not
    /// needed, the program caught or ignored the signal).
    pub report: Option<Asked>,
}

impl std::fmt::Display for PassedOnSignal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} passed on to the program", signal_name(self.signal))?;
        if self.killed {
            write!(
                f,
                "; it had not ended {} s later and was killed (SIGKILL)",
                STOP_GRACE.as_secs()
            )?;
        }
        match self.report {
            Some(Asked::Written) => write!(
                f,
                "; the shim wrote its summary and frame report first, when asked (the program \
                 ended without running its exit handlers)"
            ),
            Some(Asked::NoAnswer) => write!(
                f,
                "; the shim did not write its summary and frame report in time when asked (no \
                 answer within {} s)",
                REPORT_WAIT.as_secs()
            ),
            Some(Asked::EndedFirst) => write!(
                f,
                "; the program ended (the signal reached it too) before the shim, asked, could \
                 write its summary and frame report"
            ),
            Some(Asked::NotWritten) => write!(
                f,
                "; the shim, asked for its summary and frame report, could not write them"
            ),
            Some(Asked::NotListening | Asked::Exiting) | None => Ok(()),
        }
    }
}

/// A reaped child's end as the wait status std reads.
fn raw_status(exit: ChildExit) -> std::process::ExitStatus {
    use std::os::unix::process::ExitStatusExt;
    match exit {
        ChildExit::Exited(code) => std::process::ExitStatus::from_raw((code & 0xff) << 8),
        ChildExit::Signaled(signal) => std::process::ExitStatus::from_raw(signal & 0x7f),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bare(words: &[&str]) -> Launch {
        Launch {
            command: words.iter().map(OsString::from).collect(),
            shim: None,
            l3_partitions: None,
            cpus: None,
            fifo: None,
            stats: false,
        }
    }

    #[test]
    fn no_program_is_a_bad_request_and_an_absent_cpu_a_failure() {
        let mut heard = 0;
        let error = launch(bare(&[]), &mut |_| heard += 1).unwrap_err();
        assert!(matches!(error, LaunchError::Request(_)), "{error:?}");
        let absent_cpu = Launch {
            cpus: Some(vec![4095]),
            ..bare(&["true"])
        };
        match launch(absent_cpu, &mut |_| heard += 1).unwrap_err() {
            LaunchError::Failed(message) => {
                assert!(
                    message.starts_with("cannot pin to CPUs 4095: "),
                    "{message}"
                )
            }
            other => panic!("expected a failure, found {other:?}"),
        }
        assert_eq!(heard, 0);
    }

    #[test]
    fn with_a_resctrl_group_the_program_is_waited_for_and_the_group_removed() {
        let resctrl = tempfile::tempdir().unwrap();
        tinct_sys::resctrl::fake::write_tree(resctrl.path(), 2, 8).unwrap();
        let request = |partitions: Vec<u32>| L3Request {
            partitions,
            n_p: Some(4),
            resctrl_root: Some(resctrl.path().to_path_buf()),
        };
        let mut heard = Vec::new();
        let exits_3 = Launch {
            l3_partitions: Some(request(vec![2])),
            ..bare(&["sh", "-c", "exit 3"])
        };
        let ended = launch(exits_3, &mut |r| heard.push(r.to_string())).unwrap();
        assert_eq!(ended.exit_status, 3);
        assert_eq!(ended.removal_error, None);
        assert!(ended.isolation_report.is_none());
        assert_eq!(heard.len(), 1, "{heard:?}");
        let group = resctrl.path().join(format!("tinct-{}", std::process::id()));
        assert!(!group.exists(), "{} left behind", group.display());

        let outside = Launch {
            l3_partitions: Some(request(vec![9])),
            ..bare(&["true"])
        };
        match launch(outside, &mut |r| heard.push(r.to_string())).unwrap_err() {
            LaunchError::Request(error) => assert_eq!(
                error,
                InputError::new("", "--l3-partitions", "partitions 1..=4", "9")
            ),
            other => panic!("expected a bad request, found {other:?}"),
        }
        assert_eq!(heard.len(), 1);
    }
}
