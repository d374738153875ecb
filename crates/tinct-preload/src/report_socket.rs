//! The socket `tinct exec` gave the program (see
//! [`crate::report_on_request`]): whether a descriptor is still that
//! socket, sending it one byte, and the exit path's notice that the
//! program is ending ([`EXITING`]), which the process writing its reports
//! at exit sends without knowing about the listener.

use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};

use tinct_mem::shim_config::report_request::EXITING;

/// The process that listens on the socket (0: none), and the socket's
/// number and identity there, for [`note_exiting`] ([`listening_on`]
/// sets them). A child of `fork` inherits them but is not that process:
/// it sends nothing.
static SOCKET_OWNER: AtomicI32 = AtomicI32::new(0);
static SOCKET_FD: AtomicI32 = AtomicI32::new(-1);
static SOCKET_DEVICE: AtomicU64 = AtomicU64::new(0);
static SOCKET_INODE: AtomicU64 = AtomicU64::new(0);

/// Tells the supervisor that the program is ending ([`EXITING`]): its
/// exit path has started and writes the reports now, which may take
/// longer than the grace the supervisor gives a program after passing on
/// a signal. Only in the process that listens, while the descriptor is
/// still the socket; never blocks, never raises SIGPIPE, allocates
/// nothing.
pub fn note_exiting() {
    let owner = SOCKET_OWNER.load(Ordering::Acquire);
    // SAFETY: getpid takes nothing and cannot fail.
    if owner == 0 || owner != unsafe { libc::getpid() } {
        return;
    }
    let identity = (
        SOCKET_DEVICE.load(Ordering::Relaxed),
        SOCKET_INODE.load(Ordering::Relaxed),
    );
    send(SOCKET_FD.load(Ordering::Relaxed), identity, EXITING);
}

/// Records that this process listens on `fd`, which has `identity`: from
/// here [`note_exiting`] speaks on it.
pub fn listening_on(fd: i32, identity: (u64, u64)) {
    SOCKET_FD.store(fd, Ordering::Relaxed);
    SOCKET_DEVICE.store(identity.0, Ordering::Relaxed);
    SOCKET_INODE.store(identity.1, Ordering::Relaxed);
    // SAFETY: getpid takes nothing and cannot fail.
    SOCKET_OWNER.store(unsafe { libc::getpid() }, Ordering::Release);
}

/// The device and inode `fd` names, if it is open.
pub fn identity(fd: i32) -> Option<(u64, u64)> {
    // SAFETY: fstat writes a `stat` into the zeroed local.
    let mut status: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: as above; a bad descriptor makes the call fail.
    (unsafe { libc::fstat(fd, &mut status) } == 0).then_some((status.st_dev, status.st_ino))
}

/// Sends one byte; false if the supervisor is gone or `fd` is no longer
/// the socket (never SIGPIPE, never blocking).
pub fn send(fd: i32, identity: (u64, u64), byte: u8) -> bool {
    loop {
        if self::identity(fd) != Some(identity) {
            return false;
        }
        // SAFETY: sending one byte from a local.
        let sent = unsafe {
            libc::send(
                fd,
                (&byte as *const u8).cast(),
                1,
                libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT,
            )
        };
        if sent == 1 {
            return true;
        }
        if sent < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        return false;
    }
}
