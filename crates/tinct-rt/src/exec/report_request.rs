//! `tinct exec --stats` asking the shim for its summary and reports before
//! a signal ends the program without its exit handlers (the protocol and
//! why: `tinct_mem::shim_config::report_request`).

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};
use tinct_mem::shim_config::report_request::{READY, REPORT_SOCKET, ReportSocket, WRITE, WRITTEN};

/// How long `tinct exec` waits for the shim to write its reports once
/// asked: reading every heap page's frame once and writing two files.
pub const REPORT_WAIT: Duration = Duration::from_secs(10);

/// What came of asking the shim for its reports.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Asked {
    /// They are written.
    Written,
    /// No shim listens in the program (it has not started yet, it was
    /// not preloaded, or it closed the socket): nothing was asked.
    NotListening,
    /// Asked, but no answer came within [`REPORT_WAIT`] (or the program
    /// closed the socket meanwhile).
    NoAnswer,
}

/// The supervisor's end of the report socket, and the program's until the
/// program has started.
#[derive(Debug)]
pub struct ReportRequests {
    ours: UnixStream,
    theirs: Option<OwnedFd>,
    /// The shim said [`READY`].
    ready: bool,
}

impl ReportRequests {
    /// A socket pair: ours closed on exec, the program's inherited by it.
    pub fn new() -> std::io::Result<Self> {
        let (ours, theirs) = UnixStream::pair()?;
        let theirs = OwnedFd::from(theirs);
        rustix::io::fcntl_setfd(&theirs, rustix::io::FdFlags::empty())?;
        Ok(Self {
            ours,
            theirs: Some(theirs),
            ready: false,
        })
    }

    /// The variable that tells the program's shim where to listen.
    pub fn env(&self) -> Option<(&'static str, String)> {
        let theirs = self.theirs.as_ref()?;
        let socket = ReportSocket {
            fd: theirs.as_raw_fd(),
            supervisor: std::process::id(),
        };
        Some((REPORT_SOCKET, socket.to_env_value()))
    }

    /// The program has started with its end: ours closes it here, so that
    /// the program's end of the socket is the only one.
    pub fn started(&mut self) {
        self.theirs = None;
    }

    /// Asks the shim to write its reports now and waits for them, at
    /// most `limit`.
    pub fn ask(&mut self, limit: Duration) -> Asked {
        self.take_pending();
        if !self.ready {
            return Asked::NotListening;
        }
        if self.ours.write_all(&[WRITE]).is_err() {
            return Asked::NoAnswer;
        }
        let deadline = Instant::now() + limit;
        let mut byte = [0u8];
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || self.ours.set_read_timeout(Some(left)).is_err() {
                return Asked::NoAnswer;
            }
            match self.ours.read(&mut byte) {
                Ok(1) if byte[0] == WRITTEN => return Asked::Written,
                Ok(1) => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                _ => return Asked::NoAnswer,
            }
        }
    }

    /// Reads what the shim has sent so far without waiting: a [`READY`]
    /// says it listens.
    fn take_pending(&mut self) {
        if self.ours.set_nonblocking(true).is_err() {
            return;
        }
        let mut bytes = [0u8; 16];
        while let Ok(n @ 1..) = self.ours.read(&mut bytes) {
            self.ready |= bytes[..n].contains(&READY);
        }
        let _ = self.ours.set_nonblocking(false);
    }
}
