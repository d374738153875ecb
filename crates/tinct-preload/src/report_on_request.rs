//! The summary and reports on request, for a program a signal is about to
//! end: the protocol is `tinct_mem::shim_config::report_request`'s.
//!
//! [`start`] runs as a constructor. In the process `tinct exec` waits for
//! (its parent is the supervisor the variable names, and so is the
//! socket's peer) it starts a thread that says [`READY`],
//! names itself `tinct-report`, then sleeps in `read` until asked; it has every signal
//! blocked, so a signal meant for the program never lands on it (a program
//! that waits for signals with `sigwait` still gets them). Asked, it writes
//! the reports through [`crate::process::write_reports_once`] (the exit
//! path then does not repeat them) and answers [`WRITTEN`]. Its scheduling
//! and CPUs are the program's, as a thread the program made.
//!
//! Any other process that finds the socket (a child the program started
//! inherits it) closes it; a descriptor number that names something else
//! there is left alone.

use std::ffi::CStr;

use tinct_mem::shim_config::report_request::{
    READY, REPORT_SOCKET_C, ReportSocket, WRITE, WRITTEN,
};

use crate::process::{built_heap, write_reports_once};

/// The constructor: listens if this process is the one `tinct exec`
/// waits for (see the module's documentation); does nothing otherwise.
pub extern "C" fn start() {
    let Some(socket) = requested() else {
        return;
    };
    if peer_pid(socket.fd) != Some(socket.supervisor) {
        // The number names something else here: not ours to touch.
        return;
    }
    // SAFETY: getppid takes nothing and cannot fail.
    let parent = unsafe { libc::getppid() };
    if u32::try_from(parent).ok() != Some(socket.supervisor) {
        // A descendant of the program: the socket is not for it.
        // SAFETY: the descriptor is the supervisor's socket (its peer was
        // checked), which this process does not use.
        unsafe { libc::close(socket.fd) };
        return;
    }
    spawn_listener(socket.fd);
}

/// The variable's value, if set and well formed (read without allocating:
/// constructors run before the program's `main`).
fn requested() -> Option<ReportSocket> {
    // SAFETY: the name is NUL-terminated; getenv returns a pointer into
    // the environment, read at once, before anything can change it.
    let value = unsafe { libc::getenv(REPORT_SOCKET_C.as_ptr()) };
    if value.is_null() {
        return None;
    }
    // SAFETY: a non-null getenv result is a NUL-terminated string.
    let value = unsafe { CStr::from_ptr(value) };
    ReportSocket::parse(value.to_str().ok()?)
}

/// The pid of the process at the other end of the Unix socket `fd`, if
/// `fd` is one.
fn peer_pid(fd: i32) -> Option<u32> {
    let mut credentials = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut length = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `credentials` and `length` are writable and `length` is
    // the size of `credentials`; a bad descriptor makes the call fail.
    let got = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut credentials as *mut libc::ucred).cast(),
            &mut length,
        )
    };
    (got == 0).then(|| u32::try_from(credentials.pid).ok())?
}

/// Starts the detached thread [`listen`] on `fd` with every signal
/// blocked (it inherits the mask in force when it is made).
fn spawn_listener(fd: i32) {
    // SAFETY: plain libc calls on local, initialised values: the thread
    // attributes, two signal sets, and the thread's id; `listen` is an
    // `extern "C"` function that lives as long as the process (the shim is
    // preloaded, never unloaded), and its argument is the descriptor
    // number carried in the pointer, not a pointer.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut previous: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut previous);
        let mut attributes: libc::pthread_attr_t = std::mem::zeroed();
        libc::pthread_attr_init(&mut attributes);
        libc::pthread_attr_setdetachstate(&mut attributes, libc::PTHREAD_CREATE_DETACHED);
        let mut thread: libc::pthread_t = std::mem::zeroed();
        libc::pthread_create(&mut thread, &attributes, listen, fd as usize as *mut _);
        libc::pthread_attr_destroy(&mut attributes);
        libc::pthread_sigmask(libc::SIG_SETMASK, &previous, std::ptr::null_mut());
    }
}

/// The listener: says it is ready, then writes the reports each time it
/// is asked, until the supervisor's end is closed.
extern "C" fn listen(fd: *mut libc::c_void) -> *mut libc::c_void {
    let fd = fd as usize as i32;
    if !send(fd, READY) {
        return std::ptr::null_mut();
    }
    // Named once it listens: who sees the name may ask.
    // SAFETY: naming the calling thread with a NUL-terminated name of
    // fewer than 16 bytes.
    unsafe { libc::pthread_setname_np(libc::pthread_self(), c"tinct-report".as_ptr()) };
    loop {
        let mut byte = 0u8;
        // SAFETY: reading one byte into a local.
        let read = unsafe { libc::read(fd, (&mut byte as *mut u8).cast(), 1) };
        if read < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        if read <= 0 {
            return std::ptr::null_mut();
        }
        if byte == WRITE {
            if let Some(heap) = built_heap() {
                write_reports_once(heap);
            }
            if !send(fd, WRITTEN) {
                return std::ptr::null_mut();
            }
        }
    }
}

/// Sends one byte; false if the supervisor is gone (never SIGPIPE).
fn send(fd: i32, byte: u8) -> bool {
    loop {
        // SAFETY: sending one byte from a local.
        let sent = unsafe { libc::send(fd, (&byte as *const u8).cast(), 1, libc::MSG_NOSIGNAL) };
        if sent == 1 {
            return true;
        }
        if sent < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        return false;
    }
}
