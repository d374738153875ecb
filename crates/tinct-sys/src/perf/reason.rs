//! Why an event does not count, in the kernel's words: the errno of
//! `perf_event_open` with its usual meaning for perf events
//! (perf_event_open(2), ERRORS). A report prints `unavailable: <reason>`
//! where a count would be, never a zero.

use std::fmt;

/// Whether one event of a counter set counts.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(tag = "state", content = "reason"))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum Availability {
    /// The event is open and counting.
    Counting,
    /// The event could not be opened (or encoded); the reason.
    Unavailable(String),
}

impl Availability {
    /// True for [`Availability::Counting`].
    pub fn is_counting(&self) -> bool {
        matches!(self, Self::Counting)
    }

    /// The reason, for an unavailable event.
    pub fn reason(&self) -> Option<&str> {
        match self {
            Self::Counting => None,
            Self::Unavailable(why) => Some(why),
        }
    }
}

impl fmt::Display for Availability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Counting => f.write_str("counting"),
            Self::Unavailable(why) => write!(f, "unavailable: {why}"),
        }
    }
}

/// Symbolic names and meanings of the errnos `perf_event_open` returns.
pub fn errno_name(errno: i32) -> Option<&'static str> {
    Some(match errno {
        libc::ENOENT => "ENOENT: no such event on this machine",
        libc::EACCES => "EACCES: not allowed by perf_event_paranoid",
        libc::EPERM => "EPERM: not permitted",
        libc::EOPNOTSUPP => "EOPNOTSUPP: not supported",
        libc::ENODEV => "ENODEV: no such PMU",
        libc::EINVAL => "EINVAL: invalid event",
        libc::EMFILE => "EMFILE: too many open files",
        libc::ESRCH => "ESRCH: no such thread",
        libc::ENOSPC => "ENOSPC: no free counter",
        libc::E2BIG => "E2BIG: attribute too large for this kernel",
        _ => return None,
    })
}

/// `ENOENT: no such event on this machine (No such file or directory)`: the
/// errno's name and meaning, then the system's message.
pub fn describe_error(error: &std::io::Error) -> String {
    let message = error.to_string();
    // "No such file or directory (os error 2)" → without the number.
    let message = message
        .split(" (os error")
        .next()
        .unwrap_or(&message)
        .to_string();
    match error.raw_os_error().and_then(errno_name) {
        Some(name) => format!("{name} ({message})"),
        None => message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_name_the_errno_and_keep_the_message() {
        let enoent = std::io::Error::from_raw_os_error(libc::ENOENT);
        assert_eq!(
            describe_error(&enoent),
            "ENOENT: no such event on this machine (No such file or directory)"
        );
        let odd = std::io::Error::from_raw_os_error(libc::EXDEV);
        assert!(!describe_error(&odd).is_empty());
        let why = Availability::Unavailable(describe_error(&enoent));
        assert!(why.to_string().starts_with("unavailable: ENOENT"));
        assert_eq!(Availability::Counting.reason(), None);
    }
}
