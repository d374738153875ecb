//! The summary and reports on request, for a program a signal is about to
//! end: the protocol is `tinct_mem::shim_config::report_request`'s.
//!
//! [`start`] runs as a constructor. In the process `tinct exec` waits for
//! (its parent is the supervisor the variable names, and so is the
//! socket's peer) it sends [`READY`] before the program's `main` runs,
//! then starts a thread that names itself [`LISTENER`] and sleeps in
//! `recv` until asked. The thread has every signal blocked, so a signal
//! meant for the program never lands on it (a program that waits for
//! signals with `sigwait` still gets them), and a small stack (a program
//! that locks its memory locks little more). Asked, it answers
//! [`RECEIVED`], writes the summary and frame report through
//! [`crate::process::write_reports_once`] (the exit path then does not
//! repeat them) and answers [`WRITTEN`] or [`NOT_WRITTEN`]. Its scheduling
//! and CPUs are the program's, as a thread the program made. The exit
//! path sends `EXITING` ([`report_socket::note_exiting`]) before it
//! writes them.
//!
//! The descriptor is the program's to reuse: before each `recv` and
//! `send` the thread checks it is still the socket it was given (the same
//! device and inode); when it is not, the thread ends. `recv` on anything
//! but a socket fails, so it never reads a byte of the program's pipe.
//!
//! A shimmed process that finds the socket but is not the supervisor's
//! child (one the program started) closes it; a descriptor number that
//! names something else there is left alone.

use std::ffi::CStr;

use tinct_mem::shim_config::report_request::{
    LISTENER, NOT_WRITTEN, READY, RECEIVED, REPORT_SOCKET_C, ReportSocket, WRITE, WRITTEN,
};

use crate::process::{Occasion, built_heap, write_reports_once};
use crate::report_socket::{self, identity, send};

/// The listener's stack: the reports format text and read frames with
/// the heap's memory, not the stack.
const STACK_BYTES: usize = 256 << 10;

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
    let Some(identity) = identity(socket.fd) else {
        return;
    };
    // Ready before `main` runs: from here a request is answered.
    if !send(socket.fd, identity, READY) {
        return;
    }
    report_socket::listening_on(socket.fd, identity);
    spawn_listener(Listener {
        fd: socket.fd,
        identity,
    });
}

/// The socket the listener serves: its number and what it must still be.
#[derive(Clone, Copy)]
struct Listener {
    fd: i32,
    identity: (u64, u64),
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

/// Starts the detached listener thread with every signal blocked (it
/// inherits the mask in force when it is made) and a small stack.
fn spawn_listener(listener: Listener) {
    // The descriptor and its identity travel in a leaked box: the thread
    // owns it for the life of the process.
    let argument = Box::into_raw(Box::new(listener));
    // SAFETY: plain libc calls on local, initialised values: the thread
    // attributes, two signal sets, and the thread's id; `listen` is an
    // `extern "C"` function that lives as long as the process (the shim is
    // preloaded, never unloaded), and its argument is the leaked box.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut previous: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut previous);
        let mut attributes: libc::pthread_attr_t = std::mem::zeroed();
        libc::pthread_attr_init(&mut attributes);
        libc::pthread_attr_setdetachstate(&mut attributes, libc::PTHREAD_CREATE_DETACHED);
        libc::pthread_attr_setstacksize(&mut attributes, STACK_BYTES);
        let mut thread: libc::pthread_t = std::mem::zeroed();
        // glibc's own pthread_create: the shim's thread is not the
        // program's, its stack neither coloured nor counted.
        if crate::thread_stacks::create_uncounted(&mut thread, &attributes, listen, argument.cast())
            != 0
        {
            drop(Box::from_raw(argument));
        }
        libc::pthread_attr_destroy(&mut attributes);
        libc::pthread_sigmask(libc::SIG_SETMASK, &previous, std::ptr::null_mut());
    }
}

/// The listener: writes the reports each time it is asked, until the
/// supervisor's end is closed or the descriptor is no longer its socket.
extern "C" fn listen(argument: *mut libc::c_void) -> *mut libc::c_void {
    // SAFETY: the argument is the box `spawn_listener` leaked for this
    // thread alone.
    let Listener { fd, identity } = *unsafe { Box::from_raw(argument.cast::<Listener>()) };
    let name = std::ffi::CString::new(LISTENER).unwrap_or_default();
    // SAFETY: naming the calling thread with a NUL-terminated name of
    // fewer than 16 bytes.
    unsafe { libc::pthread_setname_np(libc::pthread_self(), name.as_ptr()) };
    loop {
        let Some(byte) = receive(fd, identity) else {
            return std::ptr::null_mut();
        };
        if byte != WRITE {
            continue;
        }
        if !send(fd, identity, RECEIVED) {
            return std::ptr::null_mut();
        }
        let written = built_heap().is_some_and(|heap| write_reports_once(heap, Occasion::Request));
        if !send(fd, identity, if written { WRITTEN } else { NOT_WRITTEN }) {
            return std::ptr::null_mut();
        }
    }
}

/// The next byte from the supervisor; `None` when it is gone or `fd` is
/// no longer the socket.
fn receive(fd: i32, identity: (u64, u64)) -> Option<u8> {
    loop {
        if self::identity(fd) != Some(identity) {
            return None;
        }
        let mut byte = 0u8;
        // SAFETY: receiving one byte into a local.
        let got = unsafe { libc::recv(fd, (&mut byte as *mut u8).cast(), 1, 0) };
        match got {
            1 => return Some(byte),
            n if n < 0
                && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted => {}
            _ => return None,
        }
    }
}
