//! The report on request: how `tinct exec` gets the shim's summary and
//! frame report out of a program a signal is about to end.
//!
//! The shim writes them at exit (`.fini_array`, `_exit`), which a fatal
//! signal skips. So `tinct exec --stats` hands its direct child one end of
//! a socket pair and names it in [`REPORT_SOCKET`] (`<fd>:<pid of tinct
//! exec>`). The shim's constructor, in the process whose parent is that
//! pid and whose descriptor's peer is that pid, sends [`READY`] and starts
//! the thread [`LISTENER`] (every signal blocked, so it never takes one
//! meant for the program). Before `tinct exec` passes on a signal the
//! program neither catches, ignores nor blocks in every thread (or kills
//! it for not ending), it sends [`WRITE`]; the thread answers [`RECEIVED`]
//! at once, writes the summary and frame report in normal context, where
//! taking the allocator's locks is safe, marks them written (the exit path
//! does not repeat them) and answers [`WRITTEN`] (or [`NOT_WRITTEN`]). A
//! program that catches the signal ends through its own handler and
//! writes them at exit as usual: one summary either way.
//!
//! The exit path sends [`EXITING`] as it starts, before it writes them
//! (or waits while a request writes them, or finds them written): from
//! then on the program is ending on its own, and writing the reports
//! (reading every page's frame) can take longer than the grace period the
//! supervisor gives a program after passing on a signal. Told, the
//! supervisor asks nothing more and waits (bounded) for the program to
//! end instead of killing it in the middle of its reports or saying it
//! killed a program that in fact exited.
//!
//! A shimmed process that inherits the descriptor but is not the
//! supervisor's child (one the program started) closes it in its
//! constructor; one whose descriptor number names something else leaves it
//! alone. Processes without the shim keep it, as any inherited descriptor.

/// `TINCT_REPORT_SOCKET`: `<fd>:<pid>`, the descriptor of the program's end
/// of the socket and the pid of the supervisor holding the other.
pub const REPORT_SOCKET: &str = "TINCT_REPORT_SOCKET";
/// [`REPORT_SOCKET`] as a C string, for `getenv` in a constructor.
pub const REPORT_SOCKET_C: &std::ffi::CStr = c"TINCT_REPORT_SOCKET";
/// Shim → supervisor: the report thread is listening.
pub const READY: u8 = b'r';
/// Supervisor → shim: write the summary and reports now.
pub const WRITE: u8 = b'W';
/// Shim → supervisor: the request arrived (the writing starts).
pub const RECEIVED: u8 = b'a';
/// Shim → supervisor: they are written.
pub const WRITTEN: u8 = b'w';
/// Shim → supervisor: they could not be written (none is asked for, or
/// another writer did not finish in time).
pub const NOT_WRITTEN: u8 = b'n';
/// Shim → supervisor: the program is ending (its exit path has started
/// and writes the reports now).
pub const EXITING: u8 = b'x';
/// The name of the shim's listening thread (`/proc/<pid>/task/*/comm`):
/// the supervisor asks only while it exists, and leaves it out when it
/// looks at which threads block a signal.
pub const LISTENER: &str = "tinct-report";

/// The value of [`REPORT_SOCKET`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReportSocket {
    /// The program's end of the socket pair.
    pub fd: i32,
    /// The supervisor's pid (the program's parent, the socket's peer).
    pub supervisor: u32,
}

impl ReportSocket {
    /// `<fd>:<pid>`, as the shim reads it.
    pub fn to_env_value(self) -> String {
        format!("{}:{}", self.fd, self.supervisor)
    }

    /// Reads `<fd>:<pid>`; `None` for anything else (the shim then does
    /// not listen: the variable is tinct exec's, never a user's).
    pub fn parse(value: &str) -> Option<ReportSocket> {
        let (fd, supervisor) = value.split_once(':')?;
        let fd: i32 = fd.parse().ok().filter(|&fd| fd > 2)?;
        let supervisor: u32 = supervisor.parse().ok().filter(|&pid| pid > 0)?;
        Some(ReportSocket { fd, supervisor })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_spellings_of_the_name_agree() {
        assert_eq!(REPORT_SOCKET_C.to_str(), Ok(REPORT_SOCKET));
    }

    #[test]
    fn the_value_reads_back_and_nothing_else_reads() {
        let socket = ReportSocket {
            fd: 7,
            supervisor: 4242,
        };
        assert_eq!(ReportSocket::parse(&socket.to_env_value()), Some(socket));
        for bad in [
            "", "7", "7:", ":4242", "x:4242", "7:x", "2:4242", "-1:4242", "7:0", "7:4242:1",
        ] {
            assert_eq!(ReportSocket::parse(bad), None, "{bad:?}");
        }
    }
}
