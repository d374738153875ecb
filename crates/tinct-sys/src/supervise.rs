//! Running work in a forked child under a supervising parent.
//!
//! A crash (SIGSEGV, SIGBUS, abort) in one real-time thread kills its whole
//! process. To still write what was recorded, the work runs in a forked
//! child that records into [`crate::shared_memory::SharedWords`]; the parent
//! waits for it ([`ChildProcess::try_wait`]) and reads the words whatever
//! happened. [`record_fatal_signals`] makes the child note, just before it
//! dies, which signal killed it and in which thread.

use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

use crate::shared_memory::SharedWords;
use crate::{Error, Result};

/// Which side of a [`fork`] this is.
#[derive(Debug)]
pub enum Forked {
    /// The new child process (one thread: the one that called `fork`).
    Child,
    /// The parent, with its child.
    Parent(ChildProcess),
}

/// Forks the calling process. The child dies with SIGKILL if the parent
/// dies first (`PR_SET_PDEATHSIG`), so no real-time thread outlives its
/// supervisor, runs in its own process group, and must end with
/// [`exit_child`].
///
/// The child starts with one thread; locks that other threads of the parent
/// held at the fork stay locked in it. Call this while the process is
/// single-threaded, or keep the child to code that does not need locks
/// held elsewhere (glibc's `malloc` is safe after `fork`).
pub fn fork() -> Result<Forked> {
    let parent = rustix::process::getpid();
    // SAFETY: `fork` duplicates the process; both sides continue with their
    // own copy of memory. The child only runs Rust code of this process
    // (no handler or atfork state of ours is inconsistent), see the doc.
    let pid = unsafe { libc::fork() };
    match pid {
        -1 => Err(Error::syscall("fork", std::io::Error::last_os_error())),
        0 => {
            // SAFETY: PR_SET_PDEATHSIG takes a signal number and no pointer.
            unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) };
            // The parent may have died before the prctl: then nobody
            // supervises this child.
            if rustix::process::getppid() != Some(parent) {
                exit_child(1);
            }
            // Its own process group: a terminal's Ctrl-C reaches only the
            // parent, which decides what the child gets.
            // SAFETY: setpgid takes plain integers.
            unsafe { libc::setpgid(0, 0) };
            Ok(Forked::Child)
        }
        pid => Ok(Forked::Parent(ChildProcess { pid })),
    }
}

/// Ends a forked child at once with `code`, without running exit handlers
/// or destructors that belong to the parent's copy of the state.
pub fn exit_child(code: i32) -> ! {
    // SAFETY: `_exit` ends the process; it takes no pointer.
    unsafe { libc::_exit(code) }
}

/// How a child ended.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ChildExit {
    /// It called `exit` with this status.
    Exited(i32),
    /// A signal killed it.
    Signaled(i32),
}

/// A forked child, waited for by its parent.
#[derive(Debug)]
pub struct ChildProcess {
    pid: i32,
}

/// The signals that ask this process to end
/// ([`crate::signals::PASSED_ON_SIGNALS`]: SIGINT, SIGTERM, SIGHUP), held
/// back from the moment it is armed, to be passed on to a child it waits
/// for: arm it before starting the child, so that no signal falls between.
///
/// The supervisor sleeps until something happens: it waits in `poll` on a
/// pidfd of the child and on a pipe each of those signals writes to, so it
/// does not wake up on a CPU a real-time program may share (without
/// pidfds, before Linux 5.3, it looks every 5 ms).
#[derive(Debug)]
pub struct SignalRelay {
    last: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    /// Read end of the pipe the signals write to (none if it could not be
    /// made: then the wait looks every 5 ms).
    wake: Option<std::os::unix::net::UnixStream>,
    _scope: crate::signals::SignalScope,
    wakers: Vec<signal_hook::SigId>,
}

impl Drop for SignalRelay {
    fn drop(&mut self) {
        for id in self.wakers.drain(..) {
            signal_hook::low_level::unregister(id);
        }
    }
}

impl SignalRelay {
    /// From now until dropped, those signals no longer end this process.
    pub fn arm() -> Self {
        let last = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let scope = crate::signals::SignalScope::note_each(&last);
        let mut wakers = Vec::new();
        let wake = std::os::unix::net::UnixStream::pair()
            .ok()
            .filter(|(read, write)| {
                read.set_nonblocking(true).is_ok() && write.set_nonblocking(true).is_ok()
            })
            .and_then(|(read, write)| {
                for signal in crate::signals::PASSED_ON_SIGNALS {
                    let write = write.try_clone().ok()?;
                    wakers.push(signal_hook::low_level::pipe::register(signal, write).ok()?);
                }
                Some(read)
            });
        Self {
            last,
            wake: wake.filter(|_| wakers.len() == crate::signals::PASSED_ON_SIGNALS.len()),
            _scope: scope,
            wakers,
        }
    }

    /// Waits for `child` to end. Each signal received meanwhile is passed
    /// on to it (with SIGCONT: a stopped child must run to end); a child
    /// still there `grace` after the first one is killed. Returns as soon
    /// as it is reaped, so that the caller can report what it has.
    pub fn wait(&self, child: &ChildProcess, grace: std::time::Duration) -> Result<PassedOn> {
        self.wait_with(child, grace, &mut |_| {})
    }

    /// As [`SignalRelay::wait`], calling `before` with the child continued
    /// (SIGCONT) before each signal passed on (`Some(signal)`) and before
    /// the SIGKILL at the end of the grace period (`None`; a child that
    /// has ended when `before` returns is not killed). `tinct exec`
    /// asks the shim for its exit reports there when the signal would end
    /// the program without its exit handlers
    /// ([`ends_without_exit_handlers`]).
    pub fn wait_with(
        &self,
        child: &ChildProcess,
        grace: std::time::Duration,
        before: &mut dyn FnMut(Option<i32>),
    ) -> Result<PassedOn> {
        let pidfd = rustix::process::Pid::from_raw(child.pid).and_then(|pid| {
            rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()).ok()
        });
        let mut first: Option<(i32, std::time::Instant)> = None;
        let mut grace_over = false;
        let mut killed = false;
        loop {
            if let Some(exit) = child.try_wait()? {
                return Ok(PassedOn {
                    exit,
                    signal: first.map(|(signal, _)| signal),
                    // Killed only if the SIGKILL ended it: a child that
                    // ended on its own just before it came exited.
                    killed: killed && exit == ChildExit::Signaled(libc::SIGKILL),
                });
            }
            let signal = self.last.swap(0, Ordering::SeqCst) as i32;
            if signal != 0 {
                let _ = child.signal(libc::SIGCONT);
                before(Some(signal));
                // The child may have ended meanwhile: then no one is told.
                let _ = child.signal(signal);
                let _ = child.signal(libc::SIGCONT);
                first.get_or_insert((signal, std::time::Instant::now()));
            }
            if let Some((_, since)) = first
                && !grace_over
                && since.elapsed() > grace
            {
                grace_over = true;
                let _ = child.signal(libc::SIGCONT);
                before(None);
                // `before` may have waited for a child that was ending on
                // its own: one that has ended is not killed.
                if !child.has_ended() {
                    killed = true;
                    let _ = child.signal(libc::SIGKILL);
                }
            }
            let until_kill = first
                .filter(|_| !grace_over)
                .map(|(_, since)| grace.saturating_sub(since.elapsed()));
            self.sleep(pidfd.as_ref(), until_kill);
        }
    }

    /// Sleeps until the child ends (its pidfd is readable), one of the
    /// signals comes, or `limit` passes; every 5 ms at most without a
    /// pidfd or the signals' pipe.
    fn sleep(&self, pidfd: Option<&std::os::fd::OwnedFd>, limit: Option<std::time::Duration>) {
        use std::os::fd::AsRawFd;
        const POLL: std::time::Duration = std::time::Duration::from_millis(5);
        let (Some(pidfd), Some(wake)) = (pidfd, self.wake.as_ref()) else {
            std::thread::sleep(limit.map_or(POLL, |l| l.min(POLL)));
            return;
        };
        let mut fds = [
            libc::pollfd {
                fd: pidfd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: wake.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // Whole milliseconds, rounded up (a kill is never early); -1: no limit.
        let timeout = limit.map_or(-1, |l| {
            i32::try_from(l.as_micros().div_ceil(1000)).unwrap_or(i32::MAX)
        });
        // SAFETY: `fds` is an array of two initialised pollfd that outlives
        // the call; both descriptors are open (owned by `pidfd` and `wake`).
        let _ = unsafe { libc::poll(fds.as_mut_ptr(), 2, timeout) };
        // Empty the pipe (non-blocking): the signals themselves are in `last`.
        let mut drain = [0u8; 64];
        while matches!(std::io::Read::read(&mut &*wake, &mut drain), Ok(n) if n > 0) {}
    }
}

/// What a process does with a signal: its disposition, shared by its
/// threads, and whether every thread blocks it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum SignalAction {
    /// The default action (for SIGINT, SIGTERM and SIGHUP: the process
    /// ends at once, without exit handlers).
    Default,
    /// Ignored (`SIG_IGN`).
    Ignored,
    /// A handler of the program's catches it.
    Caught,
    /// Left at its default but blocked in every thread: the program takes
    /// it with `sigwait` or a `signalfd`, as its own event.
    Blocked,
}

/// What process `pid` does with `signal`, from the `SigIgn` and `SigCgt`
/// masks of `/proc/<pid>/status` and the `SigBlk` of each of its threads
/// but those named `skip_thread` (a helper thread of the process's that
/// blocks every signal, such as the shim's report listener).
pub fn signal_action(pid: i32, signal: i32, skip_thread: &str) -> std::io::Result<SignalAction> {
    let unreadable = |what: String| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("{what}: expected signal masks of 16 hexadecimal digits"),
        )
    };
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let action = signal_action_in(&status, signal)
        .ok_or_else(|| unreadable(format!("/proc/{pid}/status")))?;
    if action != SignalAction::Default {
        return Ok(action);
    }
    let mut threads = 0;
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))?.flatten() {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if comm.trim_end() == skip_thread {
            continue;
        }
        let Ok(status) = std::fs::read_to_string(task.path().join("status")) else {
            continue; // The thread ended meanwhile.
        };
        if !blocks_in(&status, signal)
            .ok_or_else(|| unreadable(task.path().display().to_string()))?
        {
            return Ok(SignalAction::Default);
        }
        threads += 1;
    }
    Ok(if threads > 0 {
        SignalAction::Blocked
    } else {
        SignalAction::Default
    })
}

/// The bit of `signal` in a signal mask (`None` outside 1..=64).
fn signal_bit(signal: i32) -> Option<u64> {
    1u64.checked_shl(u32::try_from(signal.checked_sub(1)?).ok()?)
}

/// The mask `field` of a `status` text.
fn mask_in(status: &str, field: &str) -> Option<u64> {
    let value = status.lines().find_map(|l| l.strip_prefix(field))?.trim();
    u64::from_str_radix(value, 16).ok()
}

/// Whether the thread whose `status` text this is blocks `signal`.
fn blocks_in(status: &str, signal: i32) -> Option<bool> {
    Some(mask_in(status, "SigBlk:")? & signal_bit(signal)? != 0)
}

/// True if a thread of process `pid` is named `name` (its
/// `/proc/<pid>/task/*/comm`); false once the process is gone.
pub fn has_thread_named(pid: i32, name: &str) -> bool {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
        .any(|task| {
            std::fs::read_to_string(task.path().join("comm"))
                .is_ok_and(|comm| comm.trim_end() == name)
        })
}

/// The disposition of `signal` in the text of a `/proc/<pid>/status`
/// (signal `n` is bit `n − 1` of each mask): [`SignalAction::Caught`],
/// [`SignalAction::Ignored`] or [`SignalAction::Default`]; `None` if a
/// mask is missing or malformed. Blocking is per thread: see
/// [`signal_action`].
pub fn signal_action_in(status: &str, signal: i32) -> Option<SignalAction> {
    let bit = signal_bit(signal)?;
    let (ignored, caught) = (mask_in(status, "SigIgn:")?, mask_in(status, "SigCgt:")?);
    Some(if caught & bit != 0 {
        SignalAction::Caught
    } else if ignored & bit != 0 {
        SignalAction::Ignored
    } else {
        SignalAction::Default
    })
}

/// True unless process `pid` is known to catch, ignore or block (in every
/// thread but `skip_thread`) `signal`, one of
/// [`crate::signals::PASSED_ON_SIGNALS`], whose default ends a process:
/// then it ends without running its exit handlers. A status that cannot
/// be read counts as the default.
pub fn ends_without_exit_handlers(pid: i32, signal: i32, skip_thread: &str) -> bool {
    signal_action(pid, signal, skip_thread).map_or(true, |action| action == SignalAction::Default)
}

/// How a child waited for by [`SignalRelay::wait`]
/// ended, and what was passed on to it meanwhile.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct PassedOn {
    /// How it ended.
    pub exit: ChildExit,
    /// The first signal passed on to it (`None`: none came).
    pub signal: Option<i32>,
    /// True if it was killed (SIGKILL) for not ending within the grace
    /// period after that signal.
    pub killed: bool,
}

impl ChildProcess {
    /// A child this process started some other way (`std::process::Command::spawn`),
    /// to be waited for through this handle (not through its `Child` too:
    /// it is reaped once), e.g. by [`SignalRelay::wait`].
    pub fn adopt(pid: u32) -> Self {
        Self { pid: pid as i32 }
    }

    /// The child's process id.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Reaps the child if it has ended (`waitpid(WNOHANG)`).
    pub fn try_wait(&self) -> Result<Option<ChildExit>> {
        let mut status = 0;
        // SAFETY: `status` is a valid, writable int; the pid is our child.
        let rc = unsafe { libc::waitpid(self.pid, &mut status, libc::WNOHANG) };
        match rc {
            0 => Ok(None),
            -1 => {
                let error = std::io::Error::last_os_error();
                if error.kind() == std::io::ErrorKind::Interrupted {
                    return Ok(None);
                }
                Err(Error::syscall(format!("waitpid({})", self.pid), error))
            }
            _ if libc::WIFSIGNALED(status) => Ok(Some(ChildExit::Signaled(libc::WTERMSIG(status)))),
            _ => Ok(Some(ChildExit::Exited(libc::WEXITSTATUS(status)))),
        }
    }

    /// True once the child has ended (a zombie not yet reaped), without
    /// reaping it (`waitid` with `WNOWAIT`); true too if it cannot be
    /// waited for at all.
    pub fn has_ended(&self) -> bool {
        // SAFETY: `info` is a zeroed, writable siginfo_t; P_PID with our
        // child's pid; WNOWAIT leaves it to be reaped by `try_wait`.
        unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            let rc = libc::waitid(
                libc::P_PID,
                self.pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            );
            match rc {
                0 => info.si_pid() != 0,
                _ => std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted,
            }
        }
    }

    /// Sends `signal` to the child.
    pub fn signal(&self, signal: i32) -> Result<()> {
        // SAFETY: `kill` takes plain integers.
        if unsafe { libc::kill(self.pid, signal) } != 0 {
            return Err(Error::syscall(
                format!("kill({}, {})", self.pid, signal_name(signal)),
                std::io::Error::last_os_error(),
            ));
        }
        Ok(())
    }
}

/// Sends `signal` to the thread `tid` of process `pid` (`tgkill`): a
/// process-directed signal is taken by whichever thread the kernel picks,
/// often the main one; this one starts where it is sent (a SIGSTOP sent
/// to a running thread stops the group at once).
pub fn signal_thread(pid: i32, tid: i32, signal: i32) -> Result<()> {
    // SAFETY: `tgkill` takes plain integers and touches no memory of ours.
    if unsafe { libc::syscall(libc::SYS_tgkill, pid, tid, signal) } != 0 {
        return Err(Error::syscall(
            format!("tgkill({pid}, {tid}, {})", signal_name(signal)),
            std::io::Error::last_os_error(),
        ));
    }
    Ok(())
}

/// The usual name of a signal number (`SIGSEGV`), or `signal N`.
pub fn signal_name(signal: i32) -> String {
    let name = match signal {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGXCPU => "SIGXCPU",
        _ => return format!("signal {signal}"),
    };
    name.into()
}

/// The signals [`record_fatal_signals`] watches: the ones a faulty thread
/// raises itself.
pub const FATAL_SIGNALS: [i32; 5] = [
    libc::SIGSEGV,
    libc::SIGBUS,
    libc::SIGILL,
    libc::SIGFPE,
    libc::SIGABRT,
];

/// The word a fatal signal is noted in (null: none).
static FATAL_WORD: AtomicPtr<AtomicU64> = AtomicPtr::new(std::ptr::null_mut());

/// A fatal signal as noted by [`record_fatal_signals`]: the signal and the
/// kernel thread id that received it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct FatalSignal {
    /// Signal number.
    pub signal: i32,
    /// Thread id (`gettid`) of the thread that got it.
    pub tid: i32,
}

impl FatalSignal {
    /// Decodes a word written by the handler (`None` for 0: no signal).
    pub fn decode(word: u64) -> Option<FatalSignal> {
        (word != 0).then_some(FatalSignal {
            signal: (word >> 32) as i32,
            tid: word as u32 as i32,
        })
    }

    fn encode(signal: i32, tid: i32) -> u64 {
        (u64::from(signal as u32) << 32) | u64::from(tid as u32)
    }
}

extern "C" fn note_fatal_signal(signal: libc::c_int) {
    let word = FATAL_WORD.load(Ordering::Acquire);
    if !word.is_null() {
        // SAFETY: `gettid` is async-signal-safe and takes no argument.
        let tid = unsafe { libc::syscall(libc::SYS_gettid) } as i32;
        // SAFETY: the pointer was set by `record_fatal_signals` to a word of
        // a `SharedWords` that the live `FatalSignalNotes` guard borrows
        // (the guard clears it on drop, before the mapping can go);
        // an atomic store is async-signal-safe.
        unsafe { (*word).store(FatalSignal::encode(signal, tid), Ordering::SeqCst) };
    }
    // SA_RESETHAND restored the default action on entry: raising again
    // (pending until this handler returns) ends the process with the
    // original signal; a hardware fault would also simply recur.
    // SAFETY: `raise` is async-signal-safe and takes a signal number.
    unsafe { libc::raise(signal) };
}

/// While alive, fatal signals are noted in a word of a [`SharedWords`]
/// (see [`record_fatal_signals`]); dropping it stops the noting, so the
/// handlers never write into a mapping that is gone. The borrow keeps the
/// mapping alive at least as long.
#[derive(Debug)]
#[must_use = "fatal signals are only noted while this guard lives"]
pub struct FatalSignalNotes<'words> {
    word: &'words AtomicU64,
}

impl Drop for FatalSignalNotes<'_> {
    fn drop(&mut self) {
        let mine = std::ptr::from_ref(self.word).cast_mut();
        let _ = FATAL_WORD.compare_exchange(
            mine,
            std::ptr::null_mut(),
            Ordering::AcqRel,
            Ordering::Acquire,
        );
    }
}

/// Installs, for the whole process, handlers of [`FATAL_SIGNALS`] that
/// store the signal and the receiving thread's id in `words[index]` and
/// then let the signal kill the process as it would have. Meant for a
/// forked child whose parent reads the word afterwards. The word is written
/// only while the returned guard lives (a child that ends with
/// [`exit_child`] never drops it).
pub fn record_fatal_signals(words: &SharedWords, index: usize) -> Result<FatalSignalNotes<'_>> {
    let word = words.words().get(index).ok_or_else(|| {
        Error::InvalidArgument(format!("word {index} of {} shared words", words.len()))
    })?;
    FATAL_WORD.store(std::ptr::from_ref(word).cast_mut(), Ordering::Release);
    let notes = FatalSignalNotes { word };
    for signal in FATAL_SIGNALS {
        // SAFETY: all-zero bytes are a valid `sigaction` (empty mask, no flags).
        let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
        action.sa_sigaction = note_fatal_signal as extern "C" fn(libc::c_int) as usize;
        action.sa_flags = libc::SA_ONSTACK | libc::SA_RESETHAND;
        // SAFETY: `action` is a complete `sigaction` whose handler only
        // makes async-signal-safe calls; the old action is not wanted.
        let rc = unsafe { libc::sigaction(signal, &action, std::ptr::null_mut()) };
        if rc != 0 {
            return Err(Error::syscall(
                format!("sigaction({})", signal_name(signal)),
                std::io::Error::last_os_error(),
            ));
        }
    }
    Ok(notes)
}

/// Raises SIGSEGV in the calling thread, as a crash would. Only for
/// testing crash handling (tinct-rt's `TINCT_TEST_CRASH` hook): under the
/// default action it kills the process.
pub fn raise_segfault() {
    // SAFETY: `raise` takes a signal number.
    unsafe { libc::raise(libc::SIGSEGV) };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The voluntary context switches of the calling thread so far.
    fn own_wake_ups() -> u64 {
        std::fs::read_to_string("/proc/thread-self/status")
            .unwrap()
            .lines()
            .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }

    #[test]
    fn a_status_says_what_each_signal_does() {
        // SIGHUP (1) caught, SIGINT (2) ignored, SIGTERM (15) default;
        // SIGRTMIN+1 (35) caught, 64 ignored.
        let status = "Name:\tx\nSigBlk:\t0000000000004000\nSigIgn:\t8000000000000002\n\
                      SigCgt:\t0000000400000001\n";
        assert_eq!(signal_action_in(status, 1), Some(SignalAction::Caught));
        assert_eq!(signal_action_in(status, 2), Some(SignalAction::Ignored));
        assert_eq!(signal_action_in(status, 15), Some(SignalAction::Default));
        assert_eq!(signal_action_in(status, 35), Some(SignalAction::Caught));
        assert_eq!(signal_action_in(status, 64), Some(SignalAction::Ignored));
        for bad in [0, -1, 65] {
            assert_eq!(signal_action_in(status, bad), None, "signal {bad}");
        }
        assert_eq!(signal_action_in("SigIgn:\t0\n", 15), None, "no SigCgt");
        assert_eq!(
            signal_action_in("SigIgn:\tzz\nSigCgt:\t0\n", 15),
            None,
            "not hexadecimal"
        );
    }

    /// `command` with SIGTERM, SIGHUP, SIGQUIT and SIGINT at their defaults
    /// when it starts, whatever this process inherited (`nohup` ignores
    /// SIGHUP, a background job SIGQUIT and SIGINT; a shell cannot trap a
    /// signal ignored on entry).
    fn with_default_signals(command: &mut std::process::Command) -> &mut std::process::Command {
        use std::os::unix::process::CommandExt;
        // SAFETY: the hook only calls signal(2) with SIG_DFL: async-signal-
        // safe, no allocation.
        unsafe {
            command.pre_exec(|| {
                for signal in [libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT, libc::SIGINT] {
                    libc::signal(signal, libc::SIG_DFL);
                }
                Ok(())
            })
        }
    }

    #[test]
    fn a_live_process_that_traps_ignores_or_leaves_a_signal_reads_so() {
        // The shell sets its traps, then says so on stdout and waits.
        let mut shell = with_default_signals(&mut std::process::Command::new("sh"))
            .args([
                "-c",
                "trap 'exit 3' TERM; trap '' HUP; echo ready; read line",
            ])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut ready = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(shell.stdout.as_mut().unwrap()),
            &mut ready,
        )
        .unwrap();
        assert_eq!(ready, "ready\n");
        let pid = shell.id() as i32;
        let actions = [libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT]
            .map(|signal| signal_action(pid, signal, "none").unwrap());
        drop(shell.stdin.take());
        crate::testing::wait_within(&mut shell, std::time::Duration::from_secs(30), "sh");
        assert_eq!(
            actions,
            [
                SignalAction::Caught,
                SignalAction::Ignored,
                SignalAction::Default
            ]
        );
        // Reaped: its status cannot be read, which counts as the default.
        assert!(signal_action(pid, libc::SIGTERM, "none").is_err());
        assert!(ends_without_exit_handlers(pid, libc::SIGTERM, "none"));
    }

    /// A program that blocks a signal in every thread takes it as an
    /// event (`sigwait`, `signalfd`): not the default, unless a thread
    /// leaves it unblocked; a thread named to be skipped does not count.
    #[test]
    fn a_signal_blocked_in_every_thread_is_the_programs_event() {
        use std::os::unix::process::CommandExt;
        let mut command = std::process::Command::new("sleep");
        with_default_signals(&mut command).arg("30");
        // SAFETY: the hook only calls sigemptyset, sigaddset and
        // sigprocmask on a local set: async-signal-safe, no allocation.
        unsafe {
            command.pre_exec(|| {
                let mut set: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut set);
                libc::sigaddset(&mut set, libc::SIGHUP);
                libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
                Ok(())
            });
        }
        let mut sleeping = command.spawn().unwrap();
        let pid = sleeping.id() as i32;
        let hup = signal_action(pid, libc::SIGHUP, "none").unwrap();
        let term = signal_action(pid, libc::SIGTERM, "none").unwrap();
        // Skipping its only thread leaves no thread that blocks it.
        let skipped = signal_action(pid, libc::SIGHUP, "sleep").unwrap();
        sleeping.kill().unwrap();
        crate::testing::wait_within(&mut sleeping, std::time::Duration::from_secs(30), "sleep");
        assert_eq!(hup, SignalAction::Blocked);
        assert_eq!(term, SignalAction::Default);
        assert_eq!(skipped, SignalAction::Default);
    }

    #[test]
    fn a_child_has_ended_before_it_is_reaped_and_stays_to_be_reaped() {
        let child = ChildProcess::adopt(
            std::process::Command::new("sleep")
                .arg("0.2")
                .spawn()
                .unwrap()
                .id(),
        );
        assert!(!child.has_ended(), "sleeping");
        let since = std::time::Instant::now();
        while !child.has_ended() {
            assert!(
                since.elapsed() < std::time::Duration::from_secs(30),
                "sleep 0.2 never ended"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(
            child.try_wait().unwrap(),
            Some(ChildExit::Exited(0)),
            "still to be reaped"
        );
    }

    /// The relay sleeps while its child runs, instead of looking every few
    /// milliseconds (200 wake-ups a second on a CPU a real-time program
    /// may share): waiting for a child that sleeps 0.5 s takes a handful.
    #[test]
    fn the_relay_sleeps_until_its_child_ends() {
        // A claim about the kernel: pidfds came with Linux 5.3; without
        // them the relay looks every 5 ms, by design.
        let own = rustix::process::Pid::from_raw(std::process::id() as i32).unwrap();
        if let Err(e) = rustix::process::pidfd_open(own, rustix::process::PidfdFlags::empty()) {
            eprintln!("skipped: no pidfd on this kernel ({e}): the relay looks every 5 ms");
            return;
        }
        let relay = SignalRelay::arm();
        assert!(relay.wake.is_some(), "the signals' pipe is made");
        // Reaped by the relay, through the adopted handle.
        let child = ChildProcess::adopt(
            std::process::Command::new("sleep")
                .arg("0.5")
                .spawn()
                .unwrap()
                .id(),
        );
        // A fresh thread: its count is the wait's alone.
        let (passed, wake_ups) = std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    let before = own_wake_ups();
                    let passed = relay.wait(&child, std::time::Duration::from_secs(30));
                    (passed, own_wake_ups() - before)
                })
                .join()
                .unwrap()
        });
        let passed = passed.unwrap();
        assert_eq!(passed.signal, None);
        assert!(!passed.killed);
        assert!(
            wake_ups < 20,
            "{wake_ups} wake-ups while waiting 0.5 s (polling every 5 ms makes 100)"
        );
    }

    #[test]
    fn fatal_signal_words_round_trip() {
        assert_eq!(FatalSignal::decode(0), None);
        let word = FatalSignal::encode(libc::SIGSEGV, 12345);
        assert_eq!(
            FatalSignal::decode(word),
            Some(FatalSignal {
                signal: libc::SIGSEGV,
                tid: 12345
            })
        );
        assert_eq!(signal_name(libc::SIGSEGV), "SIGSEGV");
        assert_eq!(signal_name(64), "signal 64");
    }

    #[test]
    fn a_child_that_segfaults_is_reported_with_its_thread() {
        let shared = SharedWords::new(4).unwrap();
        match fork().unwrap() {
            Forked::Child => {
                let Ok(_notes) = record_fatal_signals(&shared, 1) else {
                    exit_child(3);
                };
                shared.words()[0].store(crate::sched::gettid() as u64, Ordering::SeqCst);
                raise_segfault();
                exit_child(4);
            }
            Forked::Parent(child) => {
                let exit = loop {
                    if let Some(exit) = child.try_wait().unwrap() {
                        break exit;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(2));
                };
                assert_eq!(exit, ChildExit::Signaled(libc::SIGSEGV));
                let noted = FatalSignal::decode(shared.words()[1].load(Ordering::SeqCst))
                    .expect("the handler noted the signal");
                assert_eq!(noted.signal, libc::SIGSEGV);
                assert_eq!(noted.tid as u64, shared.words()[0].load(Ordering::SeqCst));
            }
        }
    }

    #[test]
    fn a_child_exit_status_is_reported() {
        match fork().unwrap() {
            Forked::Child => exit_child(7),
            Forked::Parent(child) => {
                let exit = loop {
                    if let Some(exit) = child.try_wait().unwrap() {
                        break exit;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(2));
                };
                assert_eq!(exit, ChildExit::Exited(7));
            }
        }
    }
}
