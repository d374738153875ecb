//! The exit reports (issue 27): written once per process however it ends
//! — `exit`, `_exit`/`_Exit` (no exit handlers), or a signal, for which
//! the supervisor asks first (`tinct_mem::shim_config::report_request`) —
//! and never by a child that skips its parent's exit handlers with
//! `_exit` (a `vfork` child's memory is its parent's).
//!
//! Run uncoloured where frame numbers are unreadable: what is tested does
//! not depend on placement.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{compile_c, run_ok, under_shim, with_args};
use tinct_mem::shim_config::report_request::{
    LISTENER, READY, RECEIVED, REPORT_SOCKET, ReportSocket, WRITE, WRITTEN,
};

const LIMIT: Duration = Duration::from_secs(60);

/// A running program, killed (SIGKILL) and reaped when dropped, so that a
/// failed assertion leaves nothing behind.
struct Running(std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// How many summaries of process `pid` `stderr` holds (each starts
/// `tinct-preload[<pid>]: colors`); every process's with `None`.
fn summaries(stderr: &str, pid: Option<u32>) -> usize {
    match pid {
        Some(pid) => stderr
            .matches(&format!("tinct-preload[{pid}]: colors "))
            .count(),
        None => stderr
            .lines()
            .filter(|l| l.starts_with("tinct-preload[") && l.contains("]: colors "))
            .count(),
    }
}

#[test]
fn a_process_that_ends_with_underscore_exit_still_reports_once() {
    let dir = tempfile::tempdir().unwrap();
    let exits = compile_c("exits", dir.path());
    for how in ["_exit", "_Exit"] {
        let (_, stderr) = run_ok(
            under_shim(with_args(&exits, &[how]), &[("TINCT_STATS", "1")]),
            LIMIT,
        );
        assert_eq!(summaries(&stderr, None), 1, "{how}: {stderr}");
    }
}

/// A child that skips its parent's exit handlers with `_exit` writes
/// nothing: a `vfork` child's writes would be its parent's (they would
/// mark the parent's reports written), and a `fork` child that skips them
/// (a failed `exec`, a worker) asked for that. The parent reports at its
/// exit.
#[test]
fn a_child_that_calls_underscore_exit_writes_nothing_and_its_parent_reports() {
    let dir = tempfile::tempdir().unwrap();
    let exits = compile_c("exits", dir.path());
    for how in ["vfork", "fork"] {
        let (stdout, stderr) = run_ok(
            under_shim(with_args(&exits, &[how]), &[("TINCT_STATS", "1")]),
            LIMIT,
        );
        let child: u32 = stdout
            .trim()
            .strip_prefix("child ")
            .and_then(|pid| pid.parse().ok())
            .unwrap_or_else(|| panic!("{how}: expected `child PID`, found {stdout:?}"));
        assert_eq!(summaries(&stderr, Some(child)), 0, "{how}: {stderr}");
        assert_eq!(summaries(&stderr, None), 1, "{how}: the parent's: {stderr}");
    }
}

/// A socket pair: ours, and the program's (inherited across exec).
fn report_socket() -> (UnixStream, OwnedFd) {
    let (ours, theirs) = UnixStream::pair().unwrap();
    let theirs = OwnedFd::from(theirs);
    rustix::io::fcntl_setfd(&theirs, rustix::io::FdFlags::empty()).unwrap();
    ours.set_read_timeout(Some(LIMIT)).unwrap();
    (ours, theirs)
}

/// The next byte from the shim (within [`LIMIT`]).
fn next_byte(ours: &mut UnixStream) -> u8 {
    let mut byte = [0u8];
    ours.read_exact(&mut byte)
        .expect("a byte from the shim within the limit");
    byte[0]
}

/// Waits for the program's first line on stdout and returns it.
fn first_line(child: &mut std::process::Child) -> String {
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    line
}

/// `exits MODE` under the shim with stats, told to listen on `theirs`
/// (closed here once the program has it), its stderr into `stderr`.
fn listening(
    exits: &std::path::Path,
    mode: &str,
    theirs: OwnedFd,
    stderr: &std::path::Path,
) -> Running {
    let socket = ReportSocket {
        fd: theirs.as_raw_fd(),
        supervisor: std::process::id(),
    };
    let child = under_shim(with_args(exits, &[mode]), &[("TINCT_STATS", "1")])
        .env(REPORT_SOCKET, socket.to_env_value())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(stderr).unwrap())
        .spawn()
        .unwrap();
    drop(theirs);
    Running(child)
}

/// Asks for the reports as the supervisor does: READY came before the
/// program's `main`, then RECEIVED and WRITTEN answer the request.
fn ask(ours: &mut UnixStream) {
    assert_eq!(next_byte(ours), READY, "ready before main");
    ours.write_all(&[WRITE]).unwrap();
    assert_eq!(next_byte(ours), RECEIVED);
    assert_eq!(next_byte(ours), WRITTEN);
}

#[test]
fn asked_before_a_signal_the_shim_reports_once_and_the_signal_still_ends_it() {
    let dir = tempfile::tempdir().unwrap();
    let exits = compile_c("exits", dir.path());
    let stderr_path = dir.path().join("stderr");
    let (mut ours, theirs) = report_socket();
    let mut program = listening(&exits, "pause", theirs, &stderr_path);
    assert_eq!(first_line(&mut program.0), "ready\n");
    ask(&mut ours);
    let written = std::fs::read_to_string(&stderr_path).unwrap();
    assert_eq!(summaries(&written, Some(program.0.id())), 1, "{written}");

    let pid = rustix::process::Pid::from_raw(program.0.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let status =
        tinct_sys::testing::wait_within(&mut program.0, LIMIT, "the program after SIGTERM");
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(libc::SIGTERM), "{status}");
}

/// Asked, then ending normally after all (its exit handlers run): the
/// summary is not written a second time.
#[test]
fn asked_and_then_exiting_normally_the_program_reports_once() {
    let dir = tempfile::tempdir().unwrap();
    let exits = compile_c("exits", dir.path());
    let stderr_path = dir.path().join("stderr");
    let (mut ours, theirs) = report_socket();
    let mut program = listening(&exits, "line", theirs, &stderr_path);
    assert_eq!(first_line(&mut program.0), "ready\n");
    ask(&mut ours);
    program.0.stdin.take().unwrap().write_all(b"end\n").unwrap();
    let status = tinct_sys::testing::wait_within(&mut program.0, LIMIT, "the program");
    let all = std::fs::read_to_string(&stderr_path).unwrap();
    assert!(status.success(), "{status}: {all}");
    assert_eq!(summaries(&all, Some(program.0.id())), 1, "{all}");
}

/// The children of process `parent` (from each process's `stat`).
fn children_of(parent: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                stat.rsplit_once(") ")
                    .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok())
                    == Some(parent)
            })
        })
        .collect()
}

/// True if a thread of `pid` is the shim's listener.
fn listens(pid: u32) -> bool {
    tinct_sys::supervise::has_thread_named(pid as i32, LISTENER)
}

#[test]
fn only_the_supervisors_own_child_listens_and_others_leave_the_number_alone() {
    let dir = tempfile::tempdir().unwrap();
    let exits = compile_c("exits", dir.path());
    let (mut ours, theirs) = report_socket();
    let fd = theirs.as_raw_fd();
    let socket = ReportSocket {
        fd,
        supervisor: std::process::id(),
    };
    // The shell is the supervisor's child and listens; the program it
    // starts is not, and closes the socket it inherited.
    let script = format!("\"{}\" pause; true", exits.display());
    let mut shell = Running(
        under_shim(Command::new("sh"), &[])
            .args(["-c", &script])
            .env(REPORT_SOCKET, socket.to_env_value())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    drop(theirs);
    assert_eq!(first_line(&mut shell.0), "ready\n");
    assert_eq!(next_byte(&mut ours), READY, "the shell listens");
    let grandchildren = children_of(shell.0.id());
    let inherited: Vec<_> = grandchildren
        .iter()
        .map(|pid| {
            (
                listens(*pid),
                std::fs::read_link(format!("/proc/{pid}/fd/{fd}")).ok(),
            )
        })
        .collect();
    for pid in grandchildren {
        let _ = rustix::process::kill_process(
            rustix::process::Pid::from_raw(pid as i32).unwrap(),
            rustix::process::Signal::KILL,
        );
    }
    tinct_sys::testing::wait_within(&mut shell.0, LIMIT, "sh after its program was killed");
    assert!(
        matches!(inherited[..], [(false, None)]),
        "one program, neither listening nor keeping the socket: {inherited:?}"
    );

    // A descriptor of the same number that is not the supervisor's socket
    // (a pipe here) is the program's own: left open, and no one listens.
    let (read, _write) = std::io::pipe().unwrap();
    let read = OwnedFd::from(read);
    rustix::io::fcntl_setfd(&read, rustix::io::FdFlags::empty()).unwrap();
    let foreign = ReportSocket {
        fd: read.as_raw_fd(),
        supervisor: std::process::id(),
    };
    let mut program = Running(
        under_shim(with_args(&exits, &["pause"]), &[])
            .env(REPORT_SOCKET, foreign.to_env_value())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    assert_eq!(first_line(&mut program.0), "ready\n");
    let kept = std::fs::read_link(format!("/proc/{}/fd/{}", program.0.id(), foreign.fd));
    let listening = listens(program.0.id());
    drop(program);
    assert!(
        kept.as_ref()
            .is_ok_and(|target| target.to_string_lossy().starts_with("pipe:")),
        "{kept:?}"
    );
    assert!(!listening);
}
