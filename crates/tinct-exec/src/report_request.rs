//! `tinct exec --stats` asking the shim for its summary and reports before
//! a signal ends the program without its exit handlers (the protocol and
//! why: `tinct_mem::shim_config::report_request`).
//!
//! Every wait is bounded and ends early when the program does: the shim
//! must say it received the request within [`RECEIPT_WAIT`] (a program
//! that replaced itself with one without the shim, or whose listener
//! cannot run, costs that much), then that it wrote the reports within
//! [`REPORT_WAIT`]. Nothing written to the socket can raise SIGPIPE.

use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};
use tinct_mem::shim_config::report_request::{
    EXITING, LISTENER, NOT_WRITTEN, READY, RECEIVED, REPORT_SOCKET, ReportSocket, WRITE, WRITTEN,
};

/// How long `tinct exec` waits for the shim to write its reports once it
/// received the request: reading every heap page's frame once and writing
/// two files.
pub const REPORT_WAIT: Duration = Duration::from_secs(10);

/// How long `tinct exec` waits for the shim to say it received a request.
pub const RECEIPT_WAIT: Duration = Duration::from_millis(500);

/// How often a wait looks whether the program has ended meanwhile.
const LOOK: Duration = Duration::from_millis(20);

/// What came of asking the shim for its reports.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Asked {
    /// They are written.
    Written,
    /// The shim answered that it could not write them.
    NotWritten,
    /// No shim listens in the program (it has not started yet, it was not
    /// preloaded, the program replaced itself with one without it, or it
    /// closed the socket): nothing was asked.
    NotListening,
    /// Asked, but no answer came in time.
    NoAnswer,
    /// Asked, and the program ended before it answered (the signal that
    /// made tinct ask reached it too: a terminal's Ctrl-C goes to the
    /// whole process group).
    EndedFirst,
    /// The program is ending on its own ([`EXITING`], before or while
    /// asked): its exit path writes the reports, as at any exit.
    Exiting,
}

/// The supervisor's end of the report socket, and the program's until the
/// program has started.
#[derive(Debug)]
pub struct ReportRequests {
    ours: UnixStream,
    theirs: Option<OwnedFd>,
    /// The shim said [`READY`] at least once.
    ready: bool,
    /// The shim said the program is ending ([`EXITING`]).
    exiting: bool,
}

impl ReportRequests {
    /// A socket pair: ours closed on exec, the program's inherited by it.
    pub fn new() -> std::io::Result<Self> {
        let (ours, theirs) = UnixStream::pair()?;
        let theirs = OwnedFd::from(theirs);
        rustix::io::fcntl_setfd(&theirs, rustix::io::FdFlags::empty())?;
        ours.set_nonblocking(true)?;
        Ok(Self {
            ours,
            theirs: Some(theirs),
            ready: false,
            exiting: false,
        })
    }

    /// The variable that tells the program's shim where to listen.
    pub fn env(&self) -> Option<(&'static str, String)> {
        use std::os::fd::AsRawFd;
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

    /// Asks the shim in process `pid` to write its reports now and waits
    /// for them: at most [`RECEIPT_WAIT`] for the receipt, then `limit`,
    /// each cut short when `ended()` says the program has ended. A
    /// program ending on its own is not asked, and one that says so while
    /// asked is [`Asked::Exiting`] unless the reports were written.
    pub fn ask(&mut self, pid: i32, limit: Duration, ended: &dyn Fn() -> bool) -> Asked {
        self.take_pending();
        if self.exiting {
            return Asked::Exiting;
        }
        match self.ask_now(pid, limit, ended) {
            Asked::Written => Asked::Written,
            _ if self.exiting => Asked::Exiting,
            answer => answer,
        }
    }

    /// [`ReportRequests::ask`] once the program has not said it is ending.
    fn ask_now(&mut self, pid: i32, limit: Duration, ended: &dyn Fn() -> bool) -> Asked {
        if !self.ready || !tinct_sys::supervise::has_thread_named(pid, LISTENER) || ended() {
            return Asked::NotListening;
        }
        let sent = rustix::net::send(
            self.ours.as_fd(),
            &[WRITE],
            rustix::net::SendFlags::NOSIGNAL | rustix::net::SendFlags::DONTWAIT,
        );
        // No answer: because the program ended, or in time.
        let unanswered = || {
            if ended() {
                Asked::EndedFirst
            } else {
                Asked::NoAnswer
            }
        };
        if sent != Ok(1) {
            return unanswered();
        }
        match self.next_answer(RECEIPT_WAIT, ended) {
            Some(RECEIVED) => {}
            _ => return unanswered(),
        }
        match self.next_answer(limit, ended) {
            Some(WRITTEN) => Asked::Written,
            Some(NOT_WRITTEN) => Asked::NotWritten,
            _ => unanswered(),
        }
    }

    /// Waits until `ended()` says the program has ended, looking every
    /// 20 ms, at most `limit`: true if it ended.
    pub fn wait_for_end(limit: Duration, ended: &dyn Fn() -> bool) -> bool {
        let deadline = Instant::now() + limit;
        while !ended() {
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(LOOK.min(deadline.saturating_duration_since(Instant::now())));
        }
        true
    }

    /// The next byte other than [`READY`] and [`EXITING`] within `limit`, looking every
    /// [`LOOK`] whether the program has ended; `None` if none came.
    fn next_answer(&mut self, limit: Duration, ended: &dyn Fn() -> bool) -> Option<u8> {
        let deadline = Instant::now() + limit;
        loop {
            match self.read_byte() {
                Ok(Some(READY)) => self.ready = true,
                Ok(Some(EXITING)) => self.exiting = true,
                Ok(Some(byte)) => return Some(byte),
                Ok(None) => {
                    if Instant::now() >= deadline || ended() {
                        return None;
                    }
                    std::thread::sleep(
                        LOOK.min(deadline.saturating_duration_since(Instant::now())),
                    );
                }
                Err(()) => return None,
            }
        }
    }

    /// One byte if one is there (never waits); `Err` when the program's
    /// end is closed.
    fn read_byte(&mut self) -> Result<Option<u8>, ()> {
        let mut byte = [0u8];
        match std::io::Read::read(&mut self.ours, &mut byte) {
            Ok(1) => Ok(Some(byte[0])),
            Ok(_) => Err(()),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Ok(None),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => Ok(None),
            Err(_) => Err(()),
        }
    }

    /// Reads what the shim has sent so far without waiting: a [`READY`]
    /// says it listens, an [`EXITING`] that the program is ending.
    fn take_pending(&mut self) {
        while let Ok(Some(byte)) = self.read_byte() {
            self.ready |= byte == READY;
            self.exiting |= byte == EXITING;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    /// The requests and the shim's end of their socket, as a stream.
    fn pair() -> (ReportRequests, UnixStream) {
        let mut requests = ReportRequests::new().unwrap();
        let theirs = UnixStream::from(requests.theirs.take().unwrap());
        (requests, theirs)
    }

    #[test]
    fn a_program_that_said_it_is_ending_is_not_asked() {
        let (mut requests, mut shim) = pair();
        shim.write_all(&[READY, EXITING]).unwrap();
        let pid = std::process::id() as i32;
        let asked = requests.ask(pid, Duration::from_secs(5), &|| false);
        assert_eq!(asked, Asked::Exiting);
        shim.set_nonblocking(true).unwrap();
        let mut sent = [0u8; 1];
        let read = shim.read(&mut sent);
        assert!(
            read.as_ref()
                .is_err_and(|e| e.kind() == std::io::ErrorKind::WouldBlock),
            "nothing asked: {read:?} {sent:?}"
        );
    }

    #[test]
    fn a_program_that_starts_ending_while_asked_is_exiting_not_unwritten() {
        let (mut requests, mut shim) = pair();
        shim.write_all(&[READY]).unwrap();
        // The shim's listener (a thread of that name in this process, as
        // `ask` looks for it): it receives the request, then the exit path
        // says the program is ending, and the listener could not write.
        let (named, is_named) = std::sync::mpsc::channel();
        let listener = std::thread::Builder::new()
            .name(LISTENER.to_string())
            .spawn(move || {
                // Named (std names a thread before it runs): `ask` sees it.
                named.send(()).unwrap();
                let mut request = [0u8; 1];
                shim.read_exact(&mut request).unwrap();
                assert_eq!(request[0], WRITE);
                shim.write_all(&[RECEIVED, EXITING, NOT_WRITTEN]).unwrap();
            })
            .unwrap();
        is_named.recv().unwrap();
        let pid = std::process::id() as i32;
        let asked = requests.ask(pid, Duration::from_secs(10), &|| false);
        listener.join().unwrap();
        assert_eq!(asked, Asked::Exiting);
    }
}
