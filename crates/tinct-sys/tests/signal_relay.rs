//! [`tinct_sys::supervise::SignalRelay`] at the end of its grace period:
//! a child that ends on its own meanwhile is not killed, nor said to be.
//!
//! The test raises SIGTERM at this process (the relay takes it): it is
//! alone in its own test binary.

use std::io::BufRead;
use std::os::unix::process::CommandExt;
use std::time::Duration;
use tinct_sys::supervise::{ChildExit, ChildProcess, SignalRelay};

#[test]
#[allow(
    clippy::zombie_processes,
    reason = "the relay reaps the child, through the adopted handle"
)]
fn a_child_that_ends_while_the_grace_runs_out_exited_and_was_not_killed() {
    let relay = SignalRelay::arm();
    // The shell catches SIGTERM and ends only once the grace has run out
    // (as a program whose exit path writes reports past it): its trap
    // waits for the file `before(None)` makes at the end of the grace.
    let dir = tempfile::tempdir().unwrap();
    let grace_over = dir.path().join("grace-over");
    let mut command = std::process::Command::new("sh");
    command
        .args([
            "-c",
            "trap 'while [ ! -e \"$1\" ]; do sleep 0.01; done; exit 3' TERM; echo ready; \
             while :; do sleep 0.05; done",
            "sh",
        ])
        .arg(&grace_over)
        .stdout(std::process::Stdio::piped());
    // SAFETY: the hook only calls signal(2) with SIG_DFL: async-signal-safe,
    // no allocation (a shell cannot trap a signal ignored on entry).
    unsafe {
        command.pre_exec(|| {
            libc::signal(libc::SIGTERM, libc::SIG_DFL);
            Ok(())
        });
    }
    let mut shell = command.spawn().unwrap();
    let mut line = String::new();
    std::io::BufReader::new(shell.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line, "ready\n", "the trap is set");
    let child = ChildProcess::adopt(shell.id());
    // SAFETY: `raise` sends a signal to the calling thread; the relay
    // registered a handler for it.
    assert_eq!(unsafe { libc::raise(libc::SIGTERM) }, 0);
    // At the end of the grace, `before` waits until the child has ended
    // (as `tinct exec` does for a program that said it is exiting).
    let mut asked_at_the_end = 0;
    let passed = relay
        .wait_with(&child, Duration::from_millis(10), &mut |signal| {
            if signal.is_none() {
                asked_at_the_end += 1;
                std::fs::write(&grace_over, "").unwrap();
                let deadline = std::time::Instant::now() + Duration::from_secs(30);
                while !child.has_ended() {
                    assert!(std::time::Instant::now() < deadline, "sh never ended");
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
        })
        .unwrap();
    assert_eq!(passed.signal, Some(libc::SIGTERM));
    assert_eq!(asked_at_the_end, 1, "the grace ran out once");
    assert_eq!(passed.exit, ChildExit::Exited(3), "it ended on its own");
    assert!(!passed.killed, "a child that exited was not killed");
}
