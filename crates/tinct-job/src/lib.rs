//! The `futex` job protocol of tinct's program bodies (see
//! docs/FORMAT.md, "A program of your own as the body"): the lower-overhead
//! sibling of the `lines` protocol. tinct and the program share one page
//! (a memfd named by `TINCT_JOB_FD` in the program's environment) holding
//! two futex words, one per direction:
//!
//! - tinct writes the next job's number and its release instant, then
//!   the job's sequence word `release` (wake), as soon as the previous job
//!   has ended;
//! - the program, blocked in [`Jobs::wait`] (C: `tinct_job_wait()`),
//!   sleeps on the word until that instant (an absolute CLOCK_MONOTONIC
//!   futex timeout, the same timer path as tinct's own periodic threads'
//!   `clock_nanosleep`), wakes, does the job, and stores the same sequence
//!   in `done` (wake) in [`Jobs::done`] (C: `tinct_job_done()`), which is
//!   the job's end as tinct records it;
//! - [`STOP`] in `release` asks the program to exit.
//!
//! No pipe, no line to format or parse, no system call on the program's
//! side beyond the futex calls, and nothing between the timer's expiry and
//! the program's wake-up: its release latency is the platform's, as a
//! periodic thread's is. The futexes are shared (not
//! `FUTEX_PRIVATE_FLAG`): the words live in a page of two processes.
//!
//! This crate is three things: the page's layout and tinct's side
//! ([`Server`]); a Rust program's API ([`Jobs`], an iterator: `for job in
//! Jobs::from_env()? { ... }` ends each job when the loop comes round);
//! and, as `libtinct_job.so` with `include/tinct_job.h`, the C functions
//! `tinct_job_wait` and `tinct_job_done`.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

/// The variable naming the shared page's file descriptor in the program.
pub const JOB_FD_VAR: &str = "TINCT_JOB_FD";
/// `release` holding this asks the program to exit.
pub const STOP: u32 = u32::MAX;
/// The page's first word: "TNJB".
pub const MAGIC: u32 = u32::from_le_bytes(*b"TNJB");
/// The layout's version.
pub const VERSION: u32 = 4;

/// The shared page's layout (the first bytes of the page).
#[repr(C)]
#[derive(Debug)]
pub struct JobPage {
    /// [`MAGIC`], written before the page is shared.
    magic: u32,
    /// [`VERSION`].
    version: u32,
    /// The released job's sequence (1, 2, …; never 0 or [`STOP`]), or
    /// [`STOP`]: tinct writes it, the program waits on it.
    release: AtomicU32,
    /// The sequence of the last job the program ended: the program writes
    /// it, tinct waits on it.
    done: AtomicU32,
    /// The released job's number, written before `release`.
    job: AtomicU64,
    /// When the program's wait returned the job (CLOCK_MONOTONIC ns),
    /// written before `done`: the job's start as the program saw it.
    started_ns: AtomicU64,
    /// When the program ended the job (CLOCK_MONOTONIC ns), written
    /// before `done`.
    ended_ns: AtomicU64,
    /// 1 once the program first waits for a job: it has started up, and a
    /// release now finds it waiting (a futex word, tinct waits on it).
    ready: AtomicU32,
    /// When the released job starts (CLOCK_MONOTONIC ns; 0: at once),
    /// written before `release`: the program sleeps until then.
    release_at_ns: AtomicU64,
    /// The sequence of the last job the program took, written after
    /// `started_ns`, or [`STOP`] once tinct took the released job back
    /// ([`Server::withdraw`]). One compare-and-swap on each side decides
    /// whether a job released ahead was taken or withdrawn: a job tinct
    /// records as never started is never run.
    taken: AtomicU32,
}

/// CLOCK_MONOTONIC now, ns (tinct's clock of releases).
pub fn monotonic_ns() -> u64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a writable timespec; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    (now.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(now.tv_nsec as u64)
}

/// The sequence word of job `job`: 1 + `job` modulo `STOP - 1`, so never
/// 0 (no job yet) nor [`STOP`], and never the previous job's.
pub fn sequence_of(job: u64) -> u32 {
    (job % u64::from(STOP - 1)) as u32 + 1
}

/// `FUTEX_WAIT` on `word` while it holds `expected`, for at most `timeout`
/// (`None`: until woken): [`futex_wait_until`] now + `timeout`. Returns
/// when woken, on timeout, on a signal, or at once if the word already
/// differs: the caller looks again.
pub fn futex_wait(word: &AtomicU32, expected: u32, timeout: Option<Duration>) {
    let until = timeout
        .map(|t| monotonic_ns().saturating_add(u64::try_from(t.as_nanos()).unwrap_or(u64::MAX)));
    futex_wait_until(word, expected, until);
}

/// `FUTEX_WAIT_BITSET` on `word` while it holds `expected`, until the
/// CLOCK_MONOTONIC instant `until_ns` (`None`: until woken): the absolute
/// timer of a periodic thread's `clock_nanosleep(TIMER_ABSTIME)`. Returns
/// when woken, at the instant, on a signal, or at once if the word already
/// differs: the caller looks again.
pub fn futex_wait_until(word: &AtomicU32, expected: u32, until_ns: Option<u64>) {
    let limit = until_ns.map(|ns| libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    });
    let limit_ptr = limit
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `word` is a live, aligned 32-bit atomic (in a shared mapping
    // or this process's memory); the timeout, if any, outlives the call.
    // FUTEX_WAIT_BITSET reads the word and sleeps only while it equals
    // `expected`, until the absolute CLOCK_MONOTONIC timeout; with every
    // bit of the mask it is woken by FUTEX_WAKE.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT_BITSET,
            expected,
            limit_ptr,
            std::ptr::null::<u32>(),
            u32::MAX,
        );
    }
}

/// `FUTEX_WAKE`: wakes the waiters on `word`.
pub fn futex_wake(word: &AtomicU32) {
    // SAFETY: `word` is a live, aligned 32-bit atomic; FUTEX_WAKE only
    // wakes waiters on its address.
    unsafe {
        libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE, i32::MAX);
    }
}

/// A mapping of the shared page.
#[derive(Debug)]
struct Mapping {
    page: *mut JobPage,
    len: usize,
}

// SAFETY: the page is only accessed through atomics (and the two words
// written before it is shared); the pointer is valid until drop.
unsafe impl Send for Mapping {}
// SAFETY: as above.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Maps the file `fd` (at least one page) shared, read-write.
    fn of(fd: RawFd) -> io::Result<Mapping> {
        // SAFETY: sysconf has no memory effects.
        let len = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as usize;
        // SAFETY: a new shared mapping of `len` bytes of `fd`; the result
        // is checked before use.
        let address = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if address == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Mapping {
            page: address.cast(),
            len,
        })
    }

    fn page(&self) -> &JobPage {
        // SAFETY: the mapping is at least a page, aligned, alive while
        // `self` is; JobPage is plain integers and atomics.
        unsafe { &*self.page }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmapping the mapping this value owns; nothing refers to
        // it past `self`.
        unsafe {
            libc::munmap(self.page.cast(), self.len);
        }
    }
}

/// tinct's side: the page, created for one program.
#[derive(Debug)]
pub struct Server {
    fd: OwnedFd,
    mapping: Mapping,
}

impl Server {
    /// A new page (a memfd, close-on-exec: the program's copy is made
    /// inheritable in the child, see [`Server::fd`]).
    pub fn new() -> io::Result<Server> {
        // SAFETY: a NUL-terminated name; the result is checked.
        let raw = unsafe { libc::memfd_create(c"tinct-job".as_ptr(), libc::MFD_CLOEXEC) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: memfd_create returned a new descriptor this value owns.
        let first = unsafe { OwnedFd::from_raw_fd(raw) };
        // Above the standard streams: the child's stdin, stdout and
        // stderr are set up before the descriptor is made inheritable, so
        // a page on 0, 1 or 2 (a host process with them closed) would be
        // overwritten.
        // SAFETY: duplicating a descriptor this value owns; checked below.
        let raised = unsafe { libc::fcntl(first.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 3) };
        if raised < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fcntl returned a new descriptor this value owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raised) };
        drop(first);
        // SAFETY: sysconf has no memory effects.
        let len = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096);
        // SAFETY: sizing the descriptor created above.
        if unsafe { libc::ftruncate(fd.as_raw_fd(), len as libc::off_t) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let mapping = Mapping::of(fd.as_raw_fd())?;
        // SAFETY: the page is new and not yet shared: plain writes.
        unsafe {
            (*mapping.page).magic = MAGIC;
            (*mapping.page).version = VERSION;
        }
        Ok(Server { fd, mapping })
    }

    /// The page's descriptor: the program gets it (made inheritable in
    /// the child between fork and exec) and its number in [`JOB_FD_VAR`].
    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Releases job `job` at once: [`Server::release_at`] now.
    pub fn release(&self, job: u64) {
        self.release_at(job, 0);
    }

    /// Releases job `job` at the CLOCK_MONOTONIC instant `at_ns` (at once
    /// if it has passed): its number and instant, then its sequence, then
    /// a wake. The program, waiting, sleeps until the instant on its own
    /// timer; call it as soon as the previous job has ended.
    pub fn release_at(&self, job: u64, at_ns: u64) {
        let page = self.mapping.page();
        page.job.store(job, Ordering::Relaxed);
        page.release_at_ns.store(at_ns, Ordering::Relaxed);
        page.release.store(sequence_of(job), Ordering::Release);
        futex_wake(&page.release);
    }

    /// True once the program ended job `job`.
    pub fn is_done(&self, job: u64) -> bool {
        self.mapping.page().done.load(Ordering::Acquire) == sequence_of(job)
    }

    /// Waits up to `timeout` for the program to end job `job` (it may
    /// return early: look with [`Server::is_done`]).
    pub fn wait_done(&self, job: u64, timeout: Duration) {
        let done = &self.mapping.page().done;
        let now = done.load(Ordering::Acquire);
        if now != sequence_of(job) {
            futex_wait(done, now, Some(timeout));
        }
    }

    /// When the program started and ended job `job` (CLOCK_MONOTONIC ns,
    /// its own readings), once it has ended it; `None` before.
    pub fn times(&self, job: u64) -> Option<(u64, u64)> {
        let page = self.mapping.page();
        self.is_done(job).then(|| {
            (
                page.started_ns.load(Ordering::Relaxed),
                page.ended_ns.load(Ordering::Relaxed),
            )
        })
    }

    /// When the program took job `job` (its own reading, CLOCK_MONOTONIC
    /// ns), once it has, ended or not; `None` before.
    pub fn started(&self, job: u64) -> Option<u64> {
        let page = self.mapping.page();
        (page.taken.load(Ordering::Acquire) == sequence_of(job))
            .then(|| page.started_ns.load(Ordering::Relaxed))
    }

    /// Takes job `job` back unless the program has taken it (a run that
    /// ends while a job released ahead waits for its instant or for the
    /// program): `None` when it was taken back, and the page then asks the
    /// program to exit; the program's start of it when it had taken it.
    /// One compare-and-swap decides against the program's own.
    pub fn withdraw(&self, job: u64) -> Option<u64> {
        let page = self.mapping.page();
        let sequence = sequence_of(job);
        let mut current = page.taken.load(Ordering::Acquire);
        loop {
            if current == sequence {
                return Some(page.started_ns.load(Ordering::Relaxed));
            }
            if current == STOP {
                break;
            }
            match page
                .taken
                .compare_exchange(current, STOP, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => break,
                Err(now) => current = now,
            }
        }
        self.stop();
        None
    }

    /// True once the program waits for its first job (its start-up done).
    pub fn is_ready(&self) -> bool {
        self.mapping.page().ready.load(Ordering::Acquire) != 0
    }

    /// Waits up to `timeout` for the program to be ready (it may return
    /// early: look with [`Server::is_ready`]).
    pub fn wait_ready(&self, timeout: Duration) {
        let ready = &self.mapping.page().ready;
        if ready.load(Ordering::Acquire) == 0 {
            futex_wait(ready, 0, Some(timeout));
        }
    }

    /// Asks the program to exit.
    pub fn stop(&self) {
        let page = self.mapping.page();
        page.release.store(STOP, Ordering::Release);
        futex_wake(&page.release);
    }
}

/// What a [`Jobs::wait_for`] came back with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// The next job, by number.
    Job(u64),
    /// tinct asks the program to exit.
    Stop,
    /// Nothing yet (the time was up, or a signal came).
    TimedOut,
}

/// A program's side: the jobs tinct releases, in order. Dropping it ends
/// a job still open (a loop left with `break`).
#[derive(Debug)]
pub struct Jobs {
    mapping: Mapping,
    /// The sequence of the last job returned (0: none yet).
    seen: AtomicU32,
    /// A job returned and not yet ended.
    open: std::sync::atomic::AtomicBool,
}

impl Jobs {
    /// The page tinct named in [`JOB_FD_VAR`]; an error names what is
    /// wrong (not started by tinct with `protocol = "futex"`).
    pub fn from_env() -> io::Result<Jobs> {
        let text = std::env::var(JOB_FD_VAR).map_err(|_| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("{JOB_FD_VAR} is not set: run this program as a tinct task with protocol = \"futex\""),
            )
        })?;
        let fd: RawFd = text.trim().parse().map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{JOB_FD_VAR}={text:?}: expected a file descriptor number"),
            )
        })?;
        Jobs::from_fd(fd)
    }

    /// The page of descriptor `fd` (kept open by the caller).
    pub fn from_fd(fd: RawFd) -> io::Result<Jobs> {
        let mapping = Mapping::of(fd)?;
        let page = mapping.page();
        if page.magic != MAGIC || page.version != VERSION {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "descriptor {fd} is not tinct's job page (magic {:#x}, version {})",
                    page.magic, page.version
                ),
            ));
        }
        // A job a previous `Jobs` of this process ended is not returned
        // again.
        let seen = page.done.load(Ordering::Acquire);
        Ok(Jobs {
            mapping,
            seen: AtomicU32::new(seen),
            open: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Blocks until tinct releases the next job and returns its number;
    /// `None` when tinct asks the program to exit. Ends a job still open.
    /// One thread waits; any thread may end the job it got.
    pub fn wait(&self) -> Option<u64> {
        loop {
            match self.wait_for(None) {
                Wait::Job(job) => return Some(job),
                Wait::Stop => return None,
                Wait::TimedOut => {}
            }
        }
    }

    /// [`Jobs::wait`] for at most `timeout` (`None`: no limit), so that a
    /// caller can look at other things (an interpreter's signals) between
    /// waits; it may also return [`Wait::TimedOut`] early, on a signal.
    /// A job released for a later instant is returned at that instant.
    pub fn wait_for(&self, timeout: Option<Duration>) -> Wait {
        self.done();
        let page = self.mapping.page();
        if page.ready.swap(1, Ordering::AcqRel) == 0 {
            futex_wake(&page.ready);
        }
        let give_up_at = timeout.map(|t| {
            monotonic_ns().saturating_add(u64::try_from(t.as_nanos()).unwrap_or(u64::MAX))
        });
        let mut waited = false;
        loop {
            let release = page.release.load(Ordering::Acquire);
            if release == STOP {
                return Wait::Stop;
            }
            let due = (release != 0 && release != self.seen.load(Ordering::Relaxed))
                .then(|| page.release_at_ns.load(Ordering::Relaxed));
            let now = monotonic_ns();
            if due.is_some_and(|at| now >= at) {
                let before = page.taken.load(Ordering::Acquire);
                if before == STOP {
                    return Wait::Stop; // taken back by tinct
                }
                page.started_ns.store(now, Ordering::Relaxed);
                match page.taken.compare_exchange(
                    before,
                    release,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                ) {
                    Ok(_) => {}
                    Err(STOP) => return Wait::Stop, // taken back meanwhile
                    // Another waiter of this page took it (one thread
                    // should wait): look again.
                    Err(_) => continue,
                }
                self.seen.store(release, Ordering::Relaxed);
                self.open.store(true, Ordering::Release);
                return Wait::Job(page.job.load(Ordering::Relaxed));
            }
            if waited && timeout.is_some() {
                return Wait::TimedOut;
            }
            // Until the word changes (a release, a stop), the released
            // job's instant, or the caller's limit.
            let until = match (due, give_up_at) {
                (Some(at), Some(limit)) => Some(at.min(limit)),
                (at, limit) => at.or(limit),
            };
            futex_wait_until(&page.release, release, until);
            waited = true;
        }
    }

    /// Ends the job [`Jobs::wait`] returned: this is the job's end as
    /// tinct records it. False if no job was open.
    pub fn done(&self) -> bool {
        if !self.open.swap(false, Ordering::AcqRel) {
            return false;
        }
        let page = self.mapping.page();
        page.ended_ns.store(monotonic_ns(), Ordering::Relaxed);
        page.done
            .store(self.seen.load(Ordering::Relaxed), Ordering::Release);
        futex_wake(&page.done);
        true
    }
}

impl Drop for Jobs {
    fn drop(&mut self) {
        self.done();
    }
}

/// `for job in jobs { ... }`: each turn ends the previous job and waits
/// for the next; the loop ends when tinct asks the program to exit.
impl Iterator for Jobs {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        self.wait()
    }
}

/// The C functions' jobs (one per process), opened by the first
/// `tinct_job_wait`.
static C_JOBS: OnceLock<Jobs> = OnceLock::new();

/// C: `int64_t tinct_job_wait(void)`: the next job's number, -1 when tinct
/// asks the program to exit, -2 on an error (errno set).
#[unsafe(no_mangle)]
pub extern "C" fn tinct_job_wait() -> i64 {
    let jobs = match C_JOBS.get() {
        Some(jobs) => jobs,
        None => match Jobs::from_env() {
            Ok(opened) => C_JOBS.get_or_init(|| opened),
            Err(e) => {
                let code = e.raw_os_error().unwrap_or(match e.kind() {
                    io::ErrorKind::NotFound => libc::ENOENT,
                    _ => libc::EINVAL,
                });
                // SAFETY: errno is this thread's.
                unsafe { *libc::__errno_location() = code };
                return -2;
            }
        },
    };
    match jobs.wait() {
        Some(job) => i64::try_from(job).unwrap_or(i64::MAX),
        None => -1,
    }
}

/// C: `int tinct_job_done(void)`: ends the job `tinct_job_wait` returned;
/// 0, or -1 if none was open.
#[unsafe(no_mangle)]
pub extern "C" fn tinct_job_done() -> i32 {
    match C_JOBS.get().map(Jobs::done) {
        Some(true) => 0,
        _ => -1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both sides in one process, the program's in a thread: every job
    /// released is seen once, in order, and its end is seen by tinct.
    #[test]
    fn jobs_go_round_in_order_and_stop_ends_the_loop() {
        let server = Server::new().unwrap();
        let mut jobs = Jobs::from_fd(server.fd()).unwrap();
        assert!(server.fd() > 2, "the page is above the standard streams");
        assert!(!server.is_ready(), "not ready before it waits");
        let program = std::thread::spawn(move || {
            let mut seen = Vec::new();
            for job in jobs.by_ref() {
                seen.push(job);
            }
            seen
        });
        let since = std::time::Instant::now();
        while !server.is_ready() {
            assert!(since.elapsed() < Duration::from_secs(30), "never ready");
            server.wait_ready(Duration::from_millis(10));
        }
        for job in 0..50u64 {
            let released = monotonic_ns();
            server.release(job);
            let since = std::time::Instant::now();
            while !server.is_done(job) {
                assert!(server.times(job).is_none(), "no times before the end");
                assert!(since.elapsed() < Duration::from_secs(30), "job {job} hung");
                server.wait_done(job, Duration::from_millis(10));
            }
            let (started, ended) = server.times(job).unwrap();
            assert!(
                released <= started && started <= ended && ended <= monotonic_ns(),
                "job {job}: released {released}, started {started}, ended {ended}"
            );
        }
        server.stop();
        assert_eq!(program.join().unwrap(), (0..50).collect::<Vec<_>>());
    }

    /// A loop left with `break` ends its job when the jobs are dropped;
    /// an end from another thread than the waiter's counts.
    #[test]
    fn a_job_left_open_is_ended_by_drop_and_any_thread_may_end_it() {
        let server = Server::new().unwrap();
        let jobs = std::sync::Arc::new(Jobs::from_fd(server.fd()).unwrap());
        server.release(0);
        assert_eq!(jobs.wait(), Some(0));
        let other = std::sync::Arc::clone(&jobs);
        assert!(std::thread::spawn(move || other.done()).join().unwrap());
        assert!(server.is_done(0));
        assert!(!jobs.done(), "no job is open any more");
        server.release(1);
        assert_eq!(jobs.wait(), Some(1));
        drop(jobs);
        assert!(server.is_done(1), "dropping the jobs ended job 1");
    }

    #[test]
    fn a_descriptor_that_is_not_the_page_is_refused() {
        let file = tempfile::tempfile().unwrap();
        file.set_len(4096).unwrap();
        let error = Jobs::from_fd(file.as_raw_fd()).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidData, "{error}");
    }

    /// A second `Jobs` of the same page does not return a job the first
    /// ended; a bounded wait times out without a release.
    #[test]
    fn a_new_jobs_resumes_after_the_ended_job_and_waits_can_time_out() {
        let server = Server::new().unwrap();
        let first = Jobs::from_fd(server.fd()).unwrap();
        server.release(0);
        assert_eq!(first.wait(), Some(0));
        drop(first);
        let second = Jobs::from_fd(server.fd()).unwrap();
        assert_eq!(
            second.wait_for(Some(Duration::from_millis(1))),
            Wait::TimedOut
        );
        server.release(1);
        assert_eq!(second.wait_for(Some(Duration::from_secs(30))), Wait::Job(1));
    }

    /// A job released for a later instant is not returned before it, and
    /// the program's start is its own reading at or after the instant;
    /// a bounded wait before the instant times out.
    #[test]
    fn a_job_released_for_an_instant_starts_at_it() {
        let server = Server::new().unwrap();
        let jobs = Jobs::from_fd(server.fd()).unwrap();
        // An instant a minute away: a bounded wait before it times out,
        // however long this thread is kept off its CPU.
        server.release_at(0, monotonic_ns() + 60_000_000_000);
        assert_eq!(
            jobs.wait_for(Some(Duration::from_millis(1))),
            Wait::TimedOut,
            "not before its instant"
        );
        assert_eq!(server.started(0), None, "not taken yet");
        // The same job moved to an instant 50 ms away.
        let at = monotonic_ns() + 50_000_000;
        server.release_at(0, at);
        assert_eq!(jobs.wait(), Some(0));
        let returned = monotonic_ns();
        assert!(returned >= at, "returned {} ns early", at - returned);
        let taken = server.started(0).expect("taken, not yet ended");
        assert!(at <= taken && taken <= returned, "{at} {taken} {returned}");
        assert!(jobs.done());
        let (started, ended) = server.times(0).unwrap();
        assert!(at <= started && started <= ended, "{at} {started} {ended}");
        // An instant already past releases at once.
        server.release_at(1, 1);
        assert_eq!(jobs.wait_for(Some(Duration::from_secs(30))), Wait::Job(1));
        // A job taken cannot be withdrawn: its start is given instead.
        assert!(server.withdraw(1).is_some_and(|start| start >= at));
    }

    /// A job withdrawn before the program took it is never run: the
    /// program is asked to exit instead, whoever comes first at the word.
    #[test]
    fn a_job_withdrawn_before_its_instant_is_never_run() {
        let server = Server::new().unwrap();
        let jobs = Jobs::from_fd(server.fd()).unwrap();
        server.release_at(0, monotonic_ns() + 20_000_000);
        assert_eq!(server.withdraw(0), None, "taken back");
        assert_eq!(jobs.wait_for(Some(Duration::from_secs(30))), Wait::Stop);
        assert_eq!(server.started(0), None);
        // Many races of the two sides: a job is run exactly when tinct
        // sees it taken.
        for job in 0..200u64 {
            let server = Server::new().unwrap();
            let jobs = Jobs::from_fd(server.fd()).unwrap();
            server.release_at(job, monotonic_ns() + (job % 5) * 20_000);
            let program = std::thread::spawn(move || jobs.wait_for(Some(Duration::from_secs(30))));
            std::thread::sleep(Duration::from_micros((job % 7) * 10));
            let withdrawn = server.withdraw(job);
            let ran = program.join().unwrap();
            assert_eq!(
                withdrawn.is_some(),
                ran == Wait::Job(job),
                "job {job}: withdrawn {withdrawn:?}, the program {ran:?}"
            );
        }
    }

    #[test]
    fn sequences_skip_zero_and_stop() {
        assert_eq!(sequence_of(0), 1);
        assert_eq!(sequence_of(u64::from(STOP) - 2), STOP - 1);
        assert_eq!(sequence_of(u64::from(STOP) - 1), 1);
        assert_ne!(sequence_of(5), sequence_of(6));
    }
}
