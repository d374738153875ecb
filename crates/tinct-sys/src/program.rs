//! A program of the user's as a real-time task's job body: it
//! starts with its CPUs and scheduling already set (in the child, between
//! `fork` and `exec`, so none of its threads ever runs elsewhere), dies
//! with the thread that started it (`PR_SET_PDEATHSIG`), and exchanges
//! lines with that thread: one line on its stdin asks for a job, one line
//! on its stdout says the job is done (the `lines` protocol of
//! docs/FORMAT.md). Its CPU time is read from its process CPU clock, so a
//! job's execution time counts every thread of the program.
//!
//! Nothing here allocates once the program runs: the line buffer is
//! reserved when it starts, so a real-time thread can ask for jobs.

use std::ffi::OsString;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::sched::{PreparedScheduling, Scheduling};

/// The longest reply line a program may write (bytes, newline included).
pub const MAX_LINE: usize = 64 << 10;

/// How a program and tinct agree on jobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Channel {
    /// One line on its stdin per job, one line back on its stdout.
    Lines,
    /// The futex page of [`tinct_job`]: its stdin is `/dev/null` and its
    /// stdout goes where its stderr goes.
    Futex,
}

/// How a program is started.
#[derive(Debug)]
pub struct ProgramStart<'a> {
    /// How jobs are asked for and answered.
    pub channel: Channel,
    /// The program (a path) and its arguments.
    pub command: &'a [OsString],
    /// Variables of this process's environment the program does not get
    /// (removed before `env` is added).
    pub env_remove: &'a [&'a str],
    /// Environment variables added to this process's.
    pub env: &'a [(OsString, OsString)],
    /// CPUs it may run on (`None`: this thread's).
    pub cpus: Option<&'a [u32]>,
    /// Its scheduling (`None`: this thread's).
    pub scheduling: Option<&'a Scheduling>,
    /// Where its stderr goes.
    pub stderr: std::fs::File,
}

/// A running program body.
#[derive(Debug)]
pub struct Program {
    child: Child,
    stdin: Option<ChildStdin>,
    /// Its stdout (the `lines` protocol only).
    stdout: Option<ChildStdout>,
    /// The shared page (the `futex` protocol only).
    futex: Option<tinct_job::Server>,
    /// The job last asked for.
    asked: u64,
    /// The job released ahead for its instant ([`Program::release_ahead`])
    /// and not yet asked for.
    ahead: Option<u64>,
    /// When the job last asked for was handed over (CLOCK_MONOTONIC ns):
    /// the release ahead's, or the ask's.
    asked_ns: u64,
    /// Bytes read past the last line.
    pending: Vec<u8>,
    clock: Option<libc::clockid_t>,
    /// `/proc/<pid>/task`: its threads, to move them.
    threads_dir: std::ffi::CString,
}

/// Whether a program has started up and waits for its first job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Readiness {
    /// It waits: in `tinct_job_wait` (futex), or blocked reading its stdin
    /// (lines).
    Ready,
    /// It exited first.
    Exited,
    /// Still not waiting when the time was up.
    NotReady,
    /// It cannot be told here (its current system call is unreadable).
    Unknown(String),
}

/// What came back for a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply {
    /// A line: the job is done.
    Done,
    /// `give_up` said to stop waiting first.
    GaveUp,
    /// Its stdout closed (it exited, or closed it) before the line.
    Closed,
    /// A line longer than [`MAX_LINE`].
    TooLong,
}

impl Program {
    /// Starts the program: in the child, before `exec`, it is pinned to
    /// `cpus`, given `scheduling` and told to die with the calling thread;
    /// its stdin and stdout are pipes to this process. It leads a process
    /// group of its own: what it starts is ended with it
    /// ([`Program::finish`], [`kill_group`]), and a terminal's Ctrl-C
    /// reaches this process, which ends the program through its protocol,
    /// not the program directly.
    pub fn start(start: ProgramStart<'_>) -> std::io::Result<Program> {
        let (program, arguments) = start.command.split_first().ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "no program to run")
        })?;
        let cpus = match start.cpus {
            Some(cpus) => Some(cpu_set(cpus)?),
            None => None,
        };
        let scheduling = match start.scheduling {
            Some(s) => Some(PreparedScheduling::new(s).map_err(|e| {
                std::io::Error::new(std::io::ErrorKind::InvalidInput, e.to_string())
            })?),
            None => None,
        };
        let futex = match start.channel {
            Channel::Lines => None,
            Channel::Futex => Some(tinct_job::Server::new()?),
        };
        let mut command = Command::new(program);
        command.args(arguments);
        for name in start.env_remove {
            command.env_remove(name);
        }
        command.envs(start.env.iter().map(|(k, v)| (k, v)));
        match &futex {
            None => {
                command.stdin(Stdio::piped()).stdout(Stdio::piped());
            }
            Some(server) => {
                command
                    .env(tinct_job::JOB_FD_VAR, server.fd().to_string())
                    .stdin(Stdio::null())
                    .stdout(start.stderr.try_clone()?);
            }
        }
        command.stderr(start.stderr);
        command.process_group(0);
        let inherited = futex.as_ref().map(tinct_job::Server::fd);
        // SAFETY: the hook runs in the child between fork and exec and only
        // makes system calls on values prepared before the fork (prctl,
        // sched_setaffinity through rustix, sched_setattr): async-signal-
        // safe, no allocation, no lock.
        unsafe {
            command.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // The job page survives the exec (it is close-on-exec in
                // this process, so no other program inherits it).
                if let Some(fd) = inherited
                    && libc::fcntl(fd, libc::F_SETFD, 0) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                if let Some(set) = &cpus {
                    rustix::thread::sched_setaffinity(None, set)?;
                }
                if let Some(scheduling) = &scheduling {
                    scheduling.set_on_caller()?;
                }
                Ok(())
            });
        }
        let mut child = command.spawn()?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take();
        let clock = process_clock(child.id());
        let threads_dir = std::ffi::CString::new(format!("/proc/{}/task", child.id()))
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
        Ok(Program {
            child,
            stdin,
            stdout,
            pending: Vec::with_capacity(if futex.is_some() { 0 } else { MAX_LINE }),
            futex,
            asked: 0,
            ahead: None,
            asked_ns: 0,
            clock,
            threads_dir,
        })
    }

    /// The program's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Moves every thread of the program onto `cpus` (the task's thread
    /// moved with it under the `affinity` placement), allocating nothing:
    /// its threads are read from `/proc/<pid>/task` into a buffer on the
    /// stack. A thread that ends meanwhile is skipped; one it creates
    /// meanwhile inherits the affinity of its creator.
    pub fn set_affinity(&self, cpus: &[u32]) -> std::io::Result<()> {
        use rustix::fs::{Mode, OFlags, RawDir};
        let set = cpu_set(cpus)?;
        let dir = rustix::fs::open(
            self.threads_dir.as_c_str(),
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        let mut buffer = [std::mem::MaybeUninit::<u8>::uninit(); 2048];
        let mut entries = RawDir::new(&dir, &mut buffer);
        while let Some(entry) = entries.next() {
            let entry = entry?;
            let Some(tid) = decimal(entry.file_name().to_bytes())
                .and_then(|n| i32::try_from(n).ok())
                .and_then(rustix::process::Pid::from_raw)
            else {
                continue; // "." and ".."
            };
            match rustix::thread::sched_setaffinity(Some(tid), &set) {
                Ok(()) | Err(rustix::io::Errno::SRCH) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// CPU time of every thread of the program so far, ns (0 once it is
    /// gone or where the clock cannot be read).
    pub fn cpu_ns(&self) -> u64 {
        let Some(clock) = self.clock else {
            return 0;
        };
        let mut now = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `now` is a writable timespec; the clock id names the
        // program's CPU clock (an error if it is gone).
        if unsafe { libc::clock_gettime(clock, &mut now) } != 0 {
            return 0;
        }
        (now.tv_sec as u64)
            .saturating_mul(1_000_000_000)
            .saturating_add(now.tv_nsec as u64)
    }

    /// Asks for job `job`: its number on a line to the program's stdin
    /// (formatted on the stack), or its release on the futex page. An
    /// error if the program no longer reads its stdin.
    pub fn ask_job(&mut self, job: u64) -> std::io::Result<()> {
        self.asked = job;
        if let Some(server) = &self.futex {
            if self.ahead.take() != Some(job) {
                self.asked_ns = tinct_job::monotonic_ns();
                server.release(job);
            }
            return Ok(());
        }
        self.asked_ns = tinct_job::monotonic_ns();
        let mut line = [0u8; 21];
        let mut at = line.len() - 1;
        line[at] = b'\n';
        let mut rest = job;
        loop {
            at -= 1;
            line[at] = b'0' + (rest % 10) as u8;
            rest /= 10;
            if rest == 0 {
                break;
            }
        }
        self.ask(&line[at..])
    }

    /// Releases job `job` for the CLOCK_MONOTONIC instant `at_ns`, ahead
    /// of it (the `futex` protocol; false for `lines`, which cannot): the
    /// program sleeps until the instant on its own timer, so nothing of
    /// this process lies between the timer and its wake-up. The next
    /// [`Program::ask_job`] of `job` then only waits for it.
    pub fn release_ahead(&mut self, job: u64, at_ns: u64) -> bool {
        let Some(server) = &self.futex else {
            return false;
        };
        self.asked_ns = tinct_job::monotonic_ns();
        server.release_at(job, at_ns);
        self.ahead = Some(job);
        true
    }

    /// When the job last asked for was handed over to the program
    /// (CLOCK_MONOTONIC ns): no reading of the program's for that job
    /// can be earlier.
    pub fn asked_ns(&self) -> u64 {
        self.asked_ns
    }

    /// Takes job `job`, released ahead, back unless the program has taken
    /// it (the run ends first): `None` when taken back (or under `lines`,
    /// which releases nothing ahead), and the page then asks the program
    /// to exit; when it had taken it, its start (the program's reading).
    pub fn withdraw_job(&mut self, job: u64) -> Option<u64> {
        self.ahead = None;
        self.futex.as_ref().and_then(|server| server.withdraw(job))
    }

    /// Asks the program to exit now (end of file on its stdin; the futex
    /// page's stop). [`Program::finish`] does, then waits for it.
    fn ask_to_exit(&mut self) {
        drop(self.stdin.take());
        if let Some(server) = &self.futex {
            server.stop();
        }
    }

    /// Waits for the end of the job last asked for ([`Program::ask_job`]),
    /// looking at `give_up` every `look`: its line back, or its store on
    /// the futex page; [`Reply::Closed`] once the program has exited.
    pub fn wait_reply(&mut self, give_up: &dyn Fn() -> bool, look: Duration) -> Reply {
        let Some(server) = &self.futex else {
            return self.wait_line(give_up, look);
        };
        loop {
            if server.is_done(self.asked) {
                return Reply::Done;
            }
            if give_up() {
                // An end stored just before the limit still counts.
                return if server.is_done(self.asked) {
                    Reply::Done
                } else {
                    Reply::GaveUp
                };
            }
            // Not reaped here (WNOWAIT): its pid stays its own while the
            // watchdog may still kill it; `finish` reaps it.
            if self.has_exited() {
                return if server.is_done(self.asked) {
                    Reply::Done
                } else {
                    Reply::Closed
                };
            }
            server.wait_done(self.asked, look);
        }
    }

    /// Waits up to `limit` for the program to finish starting up: under
    /// `futex` until it first waits for a job; under `lines` until its
    /// main thread sleeps in a `read` of its stdin (its current system
    /// call in `/proc/<pid>/syscall`, which a parent may read), so that a
    /// slow start-up (an interpreter, the shim's first pages) does not
    /// count in job 0.
    pub fn wait_ready(&self, limit: Duration) -> Readiness {
        let since = Instant::now();
        loop {
            if self.has_exited() {
                return Readiness::Exited;
            }
            match &self.futex {
                Some(server) if server.is_ready() => return Readiness::Ready,
                Some(_) => {}
                None => match reading_stdin(self.child.id()) {
                    Ok(true) => return Readiness::Ready,
                    Ok(false) => {}
                    Err(e) => return Readiness::Unknown(e),
                },
            }
            if since.elapsed() >= limit {
                return Readiness::NotReady;
            }
            match &self.futex {
                Some(server) => server.wait_ready(Duration::from_millis(5)),
                None => std::thread::sleep(Duration::from_millis(1)),
            }
        }
    }

    /// When the program itself started and ended the job last asked for
    /// (CLOCK_MONOTONIC ns, read on its side), once it has ended it: the
    /// `futex` protocol only (`None` for `lines`, whose program says
    /// nothing of its clock).
    pub fn job_times(&self) -> Option<(u64, u64)> {
        self.futex.as_ref().and_then(|s| s.times(self.asked))
    }

    /// Writes `line` (with its newline) to the program's stdin: asks for a
    /// job. An error if it closed its stdin or exited; never SIGPIPE (the
    /// signal is blocked in the calling thread for the write, and one it
    /// raised is taken back before it is unblocked), whatever this
    /// process does with SIGPIPE.
    pub fn ask(&mut self, line: &[u8]) -> std::io::Result<()> {
        let stdin = self.stdin.as_mut().ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::BrokenPipe, "its stdin is closed")
        })?;
        // SAFETY: signal sets on the stack, the calling thread's mask;
        // sigtimedwait with a zero timeout takes a pending SIGPIPE of this
        // thread (raised by the write) without waiting.
        unsafe {
            let mut pipe: libc::sigset_t = std::mem::zeroed();
            let mut previous: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut pipe);
            libc::sigaddset(&mut pipe, libc::SIGPIPE);
            libc::pthread_sigmask(libc::SIG_BLOCK, &pipe, &mut previous);
            let written = stdin.write_all(line);
            if written
                .as_ref()
                .is_err_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
            {
                let now = libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                };
                libc::sigtimedwait(&pipe, std::ptr::null_mut(), &now);
            }
            libc::pthread_sigmask(libc::SIG_SETMASK, &previous, std::ptr::null_mut());
            written
        }
    }

    /// Waits for one line on the program's stdout, looking at `give_up`
    /// every `look`. The line itself is not kept (its content is the
    /// program's own).
    pub fn wait_line(&mut self, give_up: &dyn Fn() -> bool, look: Duration) -> Reply {
        let Some(stdout) = self.stdout.as_ref() else {
            return Reply::Closed;
        };
        let stdout = stdout.as_raw_fd();
        loop {
            if let Some(end) = self.pending.iter().position(|&b| b == b'\n') {
                self.pending.drain(..=end);
                return Reply::Done;
            }
            if self.pending.len() >= MAX_LINE {
                return Reply::TooLong;
            }
            if give_up() {
                return Reply::GaveUp;
            }
            let mut poll = [libc::pollfd {
                fd: stdout,
                events: libc::POLLIN,
                revents: 0,
            }];
            let timeout = i32::try_from(look.as_millis().max(1)).unwrap_or(i32::MAX);
            // SAFETY: one initialised pollfd that outlives the call.
            let ready = unsafe { libc::poll(poll.as_mut_ptr(), 1, timeout) };
            if ready <= 0 {
                continue;
            }
            // No allocation: the capacity was reserved at start.
            let start = self.pending.len();
            let room = MAX_LINE - start;
            let spare = self.pending.spare_capacity_mut();
            // SAFETY: reading at most `room` bytes into the vector's spare
            // capacity (at least `room`: MAX_LINE was reserved).
            let read = unsafe { libc::read(stdout, spare.as_mut_ptr().cast(), room) };
            match usize::try_from(read) {
                Ok(0) => return Reply::Closed,
                // SAFETY: the kernel wrote `n` bytes there.
                Ok(n) => unsafe { self.pending.set_len(start + n) },
                Err(_) => {
                    let kind = std::io::Error::last_os_error().kind();
                    if !matches!(
                        kind,
                        std::io::ErrorKind::Interrupted | std::io::ErrorKind::WouldBlock
                    ) {
                        return Reply::Closed;
                    }
                }
            }
        }
    }

    /// True if the program has written to its stdout without being asked
    /// (bytes left after its last answer, or waiting in the pipe): read
    /// without waiting, kept to be seen again.
    pub fn unasked_output(&mut self) -> bool {
        if !self.pending.is_empty() {
            return true;
        }
        let Some(stdout) = self.stdout.as_ref().map(AsRawFd::as_raw_fd) else {
            return false;
        };
        let mut poll = [libc::pollfd {
            fd: stdout,
            events: libc::POLLIN,
            revents: 0,
        }];
        // SAFETY: one initialised pollfd that outlives the call; no wait.
        let ready = unsafe { libc::poll(poll.as_mut_ptr(), 1, 0) };
        if ready <= 0 || poll[0].revents & libc::POLLIN == 0 {
            return false;
        }
        let spare = self.pending.spare_capacity_mut();
        // SAFETY: reading at most MAX_LINE bytes into the empty vector's
        // spare capacity (MAX_LINE was reserved).
        let read = unsafe { libc::read(stdout, spare.as_mut_ptr().cast(), MAX_LINE) };
        match usize::try_from(read) {
            Ok(n) if n > 0 => {
                // SAFETY: the kernel wrote `n` bytes there.
                unsafe { self.pending.set_len(n) };
                true
            }
            _ => false,
        }
    }

    /// True once the program has exited, without reaping it (`waitid`
    /// with `WNOWAIT`).
    fn has_exited(&self) -> bool {
        // SAFETY: a zeroed siginfo for the kernel to fill; the pid is our
        // child's; WNOHANG never blocks, WNOWAIT leaves it to be reaped.
        unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            libc::waitid(
                libc::P_PID,
                self.child.id() as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            ) == 0
                && info.si_pid() != 0
        }
    }

    /// The program's exit status if it has exited (reaped then).
    pub fn try_exit(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Ends the program: closes its stdin (end of file asks it to exit;
    /// the futex page's stop for the `futex` protocol),
    /// waits up to `grace`, then kills it (SIGKILL). Whatever is left of
    /// its process group then (processes it started and left running, at
    /// the task's priority) is killed too, while its unreaped pid still
    /// holds the group's id. Its exit status, and whether it had to be
    /// killed.
    pub fn finish(mut self, grace: Duration) -> (Option<ExitStatus>, bool) {
        self.ask_to_exit();
        let since = Instant::now();
        let mut killed = false;
        while !self.has_exited() {
            if since.elapsed() >= grace {
                killed = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        if killed {
            // Itself, should it have left its group.
            let _ = self.child.kill();
        }
        kill_group(self.child.id());
        (self.child.wait().ok(), killed)
    }
}

/// SIGKILL to the process group that program `pid` leads (its own and
/// what it started that stayed in it). The caller keeps `pid` unreaped,
/// so the group's id cannot have been reused.
pub fn kill_group(pid: u32) {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return;
    };
    if pid > 0 {
        // SAFETY: kill(2) with a negative pid signals the group `pid`
        // leads; no memory is involved.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
}

/// True if a thread of process `pid` sleeps in `read(0, ...)`: the first
/// two fields of `/proc/<pid>/task/<tid>/syscall` are the system call's
/// number and its first argument (`running`, or `-1` outside a system
/// call, otherwise). A program that waits on its stdin through `poll` or
/// `epoll` is not seen.
fn reading_stdin(pid: u32) -> Result<bool, String> {
    let dir = format!("/proc/{pid}/task");
    let threads = std::fs::read_dir(&dir).map_err(|e| format!("{dir}: {e}"))?;
    let mut unreadable = None;
    for thread in threads.flatten() {
        let path = thread.path().join("syscall");
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                let mut fields = text.split_whitespace();
                let number = fields.next().and_then(|n| n.parse::<i64>().ok());
                if number == Some(libc::SYS_read) && fields.next() == Some("0x0") {
                    return Ok(true);
                }
            }
            // A thread that ended since the listing is no reader.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => unreadable = Some(format!("{}: {e}", path.display())),
        }
    }
    match unreadable {
        Some(why) => Err(why),
        None => Ok(false),
    }
}

/// `cpus` as a kernel CPU set.
/// The number `digits` spell in decimal (`None` for anything else).
fn decimal(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() {
        return None;
    }
    digits.iter().try_fold(0u64, |n, &d| {
        d.is_ascii_digit()
            .then(|| n.checked_mul(10)?.checked_add(u64::from(d - b'0')))
            .flatten()
    })
}

fn cpu_set(cpus: &[u32]) -> std::io::Result<rustix::thread::CpuSet> {
    let mut set = rustix::thread::CpuSet::new();
    for &cpu in cpus {
        if cpu as usize >= rustix::thread::CpuSet::MAX_CPU {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("CPU {cpu} is beyond the largest CPU set"),
            ));
        }
        set.set(cpu as usize);
    }
    Ok(set)
}

/// The CPU clock of process `pid` (all its threads).
fn process_clock(pid: u32) -> Option<libc::clockid_t> {
    let mut clock: libc::clockid_t = 0;
    // SAFETY: `clock` is writable; the pid is our child's.
    (unsafe { libc::clock_getcpuclockid(pid as libc::pid_t, &mut clock) } == 0).then_some(clock)
}

/// True if `path` names a file this process may execute.
pub fn is_executable(path: &Path) -> bool {
    rustix::fs::access(path, rustix::fs::Access::EXEC_OK).is_ok() && path.is_file()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Vec<OsString> {
        ["sh", "-c", script].map(OsString::from).to_vec()
    }

    fn start(command: &[OsString]) -> Program {
        Program::start(ProgramStart {
            channel: Channel::Lines,
            command,
            env_remove: &[],
            env: &[],
            cpus: None,
            scheduling: None,
            stderr: std::fs::File::create("/dev/null").unwrap(),
        })
        .unwrap()
    }

    const LOOK: Duration = Duration::from_millis(10);

    /// A limit for a test's waits: a hang fails it.
    fn within(limit: Duration) -> impl Fn() -> bool {
        let since = Instant::now();
        move || since.elapsed() > limit
    }

    #[test]
    fn a_line_asks_for_a_job_and_a_line_says_it_is_done() {
        // A job: read a line, spin a little, answer with a line.
        let command = sh(
            "while read job; do i=0; while [ $i -lt 2000 ]; do i=$((i+1)); done; echo done $job; done",
        );
        let mut program = start(&command);
        let before = program.cpu_ns();
        for job in 0..3 {
            program.ask(format!("{job}\n").as_bytes()).unwrap();
            assert_eq!(
                program.wait_line(&within(Duration::from_secs(30)), LOOK),
                Reply::Done
            );
        }
        let spent = program.cpu_ns().saturating_sub(before);
        let (status, killed) = program.finish(Duration::from_secs(10));
        assert!(spent > 0, "the program's CPU time grows with its jobs");
        assert!(
            status.is_some_and(|s| s.success()),
            "{status:?}: end of file ends it"
        );
        assert!(!killed);
    }

    /// Every thread of the program is moved (a Python program with three
    /// threads beside its main one); a number is read as such.
    #[test]
    fn a_program_is_moved_to_other_cpus_whole() {
        let allowed = crate::sched::affinity().unwrap();
        let mut program = start(&sh("exec python3 -c 'import sys, threading, time\n\
             for _ in range(3): threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n\
             for job in sys.stdin: print(\"done\", job.strip(), flush=True)'"));
        // Its threads exist once it has answered a job.
        program.ask(b"0\n").unwrap();
        assert_eq!(
            program.wait_line(&within(Duration::from_secs(30)), LOOK),
            Reply::Done,
            "python3 answered"
        );
        let threads = std::fs::read_dir(format!("/proc/{}/task", program.pid()))
            .unwrap()
            .count();
        assert!(threads >= 4, "{threads} threads");
        for &cpu in &allowed {
            program.set_affinity(&[cpu]).unwrap();
            let threads = std::fs::read_dir(format!("/proc/{}/task", program.pid())).unwrap();
            for thread in threads.flatten() {
                let status = std::fs::read_to_string(thread.path().join("status")).unwrap();
                let list = status
                    .lines()
                    .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                    .unwrap()
                    .trim()
                    .to_string();
                assert_eq!(list, cpu.to_string(), "{}", thread.path().display());
            }
        }
        program.ask(b"1\n").unwrap();
        assert_eq!(
            program.wait_line(&within(Duration::from_secs(30)), LOOK),
            Reply::Done,
            "it still answers where it was moved"
        );
        assert!(program.finish(Duration::from_secs(10)).0.is_some());
        assert_eq!(decimal(b"4021"), Some(4021));
        assert_eq!(decimal(b"."), None);
        assert_eq!(decimal(b""), None);
        assert_eq!(decimal(b"99999999999999999999999"), None);
    }

    /// What a program started and left running (here a `sleep` in the
    /// background of a script that exits normally) is killed with it.
    #[test]
    fn what_a_program_leaves_behind_in_its_group_is_ended_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("left.pid");
        let command = sh(&format!(
            "sleep 600 & echo $! > {}; while read job; do echo done $job; done",
            pid_file.display()
        ));
        let mut program = start(&command);
        program.ask(b"0\n").unwrap();
        assert_eq!(
            program.wait_line(&within(Duration::from_secs(30)), LOOK),
            Reply::Done
        );
        let left: i32 = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let (status, killed) = program.finish(Duration::from_secs(10));
        assert!(status.is_some_and(|s| s.success()) && !killed, "{status:?}");
        // Gone, or a zombie until its new parent reaps it.
        let since = Instant::now();
        loop {
            let state = std::fs::read_to_string(format!("/proc/{left}/stat"))
                .ok()
                .and_then(|stat| {
                    Some(
                        stat.rsplit_once(')')?
                            .1
                            .split_whitespace()
                            .next()?
                            .to_string(),
                    )
                });
            if state.as_deref().is_none_or(|s| s == "Z" || s == "X") {
                break;
            }
            assert!(
                since.elapsed() < Duration::from_secs(10),
                "the background sleep {left} outlived its program ({state:?})"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn a_program_that_never_answers_is_given_up_and_killed() {
        let mut program = start(&sh("exec sleep 60"));
        program.ask(b"0\n").unwrap();
        assert_eq!(
            program.wait_line(&within(Duration::from_millis(100)), LOOK),
            Reply::GaveUp
        );
        let (status, killed) = program.finish(Duration::from_millis(100));
        assert!(killed, "sleep does not read its stdin");
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.and_then(|s| s.signal()), Some(libc::SIGKILL));
    }

    #[test]
    fn an_exit_closes_the_reply_and_garbage_without_a_newline_is_refused() {
        let mut program = start(&sh("read job; exit 3"));
        program.ask(b"0\n").unwrap();
        assert_eq!(
            program.wait_line(&within(Duration::from_secs(30)), LOOK),
            Reply::Closed
        );
        let (status, _) = program.finish(Duration::from_secs(10));
        assert_eq!(status.and_then(|s| s.code()), Some(3));

        let mut program = start(&sh("head -c 70000 /dev/zero; sleep 60"));
        assert_eq!(
            program.wait_line(&within(Duration::from_secs(30)), LOOK),
            Reply::TooLong
        );
        program.finish(Duration::from_millis(100));
    }

    /// SIGPIPE at its default (as the `tinct` binary sets it): a write to
    /// a program that exited is an error, not the end of this process.
    #[test]
    fn asking_a_program_that_exited_is_an_error_not_a_sigpipe() {
        let mut program = start(&sh("exit 0"));
        while program.try_exit().is_none() {
            std::thread::sleep(Duration::from_millis(5));
        }
        // SAFETY: restoring the default action of SIGPIPE in this test
        // process (the test harness ignores it); put back below.
        let previous = unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
        let asked = program.ask(b"0\n");
        // SAFETY: as above.
        unsafe { libc::signal(libc::SIGPIPE, previous) };
        assert_eq!(asked.unwrap_err().kind(), std::io::ErrorKind::BrokenPipe);
    }

    #[test]
    fn a_line_written_before_it_was_asked_for_is_seen() {
        // A banner on stdout, then one answer per job.
        let mut program = start(&sh("echo banner; while read job; do echo done; done"));
        let since = Instant::now();
        while !program.unasked_output() {
            assert!(
                since.elapsed() < Duration::from_secs(30),
                "the banner never came"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        program.finish(Duration::from_secs(10));
        // One answer per job leaves nothing unasked.
        let mut program = start(&sh("while read job; do echo done; done"));
        for job in 0..3 {
            assert!(!program.unasked_output(), "job {job}");
            program.ask(b"0\n").unwrap();
            assert_eq!(
                program.wait_line(&within(Duration::from_secs(30)), LOOK),
                Reply::Done
            );
        }
        program.finish(Duration::from_secs(10));
    }

    /// A program that sleeps before it reads its stdin is not ready
    /// until it reads; one that exits is said to have exited.
    #[test]
    fn readiness_waits_for_the_first_read_of_stdin() {
        let program = start(&sh("sleep 0.3; read job"));
        assert_eq!(
            program.wait_ready(Duration::from_millis(50)),
            Readiness::NotReady,
            "still sleeping"
        );
        assert_eq!(
            program.wait_ready(Duration::from_secs(30)),
            Readiness::Ready
        );
        program.finish(Duration::from_secs(10));
        let exiting = start(&sh("exit 0"));
        assert_eq!(
            exiting.wait_ready(Duration::from_secs(30)),
            Readiness::Exited
        );
        exiting.finish(Duration::from_secs(10));
    }

    #[test]
    fn the_program_starts_on_its_cpus() {
        let cpus = crate::sched::affinity().unwrap();
        let last = [*cpus.last().unwrap()];
        let program = Program::start(ProgramStart {
            channel: Channel::Lines,
            env_remove: &[],
            command: &sh("grep Cpus_allowed_list /proc/self/status >&2; read x"),
            env: &[],
            cpus: Some(&last),
            scheduling: None,
            stderr: std::fs::File::create("/dev/null").unwrap(),
        })
        .unwrap();
        let pid = program.pid();
        let allowed = std::fs::read_to_string(format!("/proc/{pid}/status"))
            .unwrap()
            .lines()
            .find_map(|l| {
                l.strip_prefix("Cpus_allowed_list:")
                    .map(|v| v.trim().to_string())
            })
            .unwrap();
        program.finish(Duration::from_secs(10));
        assert_eq!(allowed, last[0].to_string());
    }
}
