//! The report on request: how `tinct exec` gets the shim's summary and
//! frame report out of a program a signal is about to end.
//!
//! The shim writes them at exit (`.fini_array`), which a fatal signal
//! skips. So `tinct exec --stats` hands its direct child one end of a
//! socket pair and names it in [`REPORT_SOCKET`] (`<fd>:<pid of tinct
//! exec>`). The shim's constructor, in the process whose parent is that
//! pid and whose descriptor's peer is that pid, starts a thread that
//! sends [`READY`] and waits on the socket (all signals blocked, so it
//! never takes one meant for the program). Before `tinct exec` passes on
//! a signal the program does not catch (or kills it for not ending), it
//! sends [`WRITE`]; the thread writes the summary and reports in normal
//! context, where taking the allocator's locks is safe, marks them
//! written (the exit path does not repeat them) and answers [`WRITTEN`].
//! A program that catches the signal ends through its own handler and
//! writes them at exit as usual: exactly one summary either way.
//!
//! Any other process that inherits the descriptor (a child the program
//! starts) closes it in its constructor; one whose descriptor number
//! names something else leaves it alone.

/// `TINCT_REPORT_SOCKET`: `<fd>:<pid>`, the descriptor of the program's end
/// of the socket and the pid of the supervisor holding the other.
pub const REPORT_SOCKET: &str = "TINCT_REPORT_SOCKET";
/// [`REPORT_SOCKET`] as a C string, for `getenv` in a constructor.
pub const REPORT_SOCKET_C: &std::ffi::CStr = c"TINCT_REPORT_SOCKET";
/// Shim → supervisor: the report thread is listening.
pub const READY: u8 = b'r';
/// Supervisor → shim: write the summary and reports now.
pub const WRITE: u8 = b'W';
/// Shim → supervisor: they are written (or there was nothing to write).
pub const WRITTEN: u8 = b'w';

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
