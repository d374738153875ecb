//! The process-wide heap: built on the first allocation, `fork` handlers,
//! thread exits, and what happens at exit (`TINCT_STATS`, the reports).

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU8, Ordering};

use crate::bootstrap::BOOTSTRAP;
use crate::heap::{BuildError, Heap};
pub use crate::heap_handle::built_heap;
use crate::lock::RawLock;
use crate::report;
use crate::stderr::{save_stderr, write_stderr};

/// Held while the heap is built; a `malloc` from the building thread (the
/// pool's own setup calling into libc) sees it held and uses the bootstrap
/// arena.
static BUILDING: RawLock = RawLock::new();
static FORK_HANDLERS: AtomicBool = AtomicBool::new(false);
/// With `TINCT_FORK_KEEP`: the pipe (read end, write end) on which the
/// child says it has taken the copies; the parent waits for it.
static FORK_PIPE: [AtomicI32; 2] = [AtomicI32::new(-1), AtomicI32::new(-1)];

/// The heap, built on first use; `None` while it is being built by the
/// calling thread (the caller then serves the request from the bootstrap
/// arena).
#[inline]
pub fn heap() -> Option<&'static Heap> {
    built_heap().or_else(build)
}

#[cold]
fn build() -> Option<&'static Heap> {
    if BUILDING.held_by_caller() {
        return None;
    }
    BUILDING.lock();
    if let Some(heap) = built_heap() {
        BUILDING.unlock();
        return Some(heap);
    }
    let config = match tinct_mem::ShimConfig::from_env() {
        Ok(config) => config,
        Err(message) => die(&message, 2),
    };
    let heap = match Heap::new(config, thread_ended) {
        Ok(heap) => heap,
        Err(BuildError::FramesUnreadable(message)) => die(
            &format!("{message}; or set TINCT_ALLOW_UNCOLORED=1 to run without colors"),
            1,
        ),
        Err(BuildError::Other(message)) => die(&message, 1),
    };
    if let Some(reason) = heap.with_area(|a| a.uncolored_reason().map(str::to_string)) {
        write_stderr(&format!(
            "tinct-preload: running UNCOLORED (TINCT_ALLOW_UNCOLORED=1): {reason}\n"
        ));
    }
    if heap.config().stats {
        save_stderr();
    }
    OWNER.store(std::process::id() as i32, Ordering::Release);
    let leaked: &'static Heap = Box::leak(Box::new(heap));
    crate::heap_handle::publish(leaked);
    BUILDING.unlock();
    install_fork_handlers();
    Some(leaked)
}

/// Prints `message` and ends the process with `code` (no exit handlers:
/// they could allocate).
fn die(message: &str, code: i32) -> ! {
    write_stderr(&format!("tinct-preload: {message}\n"));
    // SAFETY: _exit ends the process at once; nothing is left to uphold.
    unsafe { libc::_exit(code) }
}

fn install_fork_handlers() {
    if FORK_HANDLERS.swap(true, Ordering::AcqRel) {
        return;
    }
    // SAFETY: the handlers are plain functions that live as long as the
    // process (the library is never unloaded: it is preloaded).
    unsafe {
        libc::pthread_atfork(
            Some(before_fork),
            Some(after_fork_parent),
            Some(after_fork_child),
        );
    }
}

/// Takes every lock of the allocator so that the child of `fork` never
/// inherits one held by a thread that does not exist there.
extern "C" fn before_fork() {
    // First: the registry's lock is taken before the bootstrap arena's.
    crate::thread_stacks::before_fork();
    BUILDING.lock();
    if let Some(heap) = built_heap() {
        if heap.config().fork_keep {
            let mut ends = [-1; 2];
            // SAFETY: pipe2 writes two descriptors into `ends`.
            if unsafe { libc::pipe2(ends.as_mut_ptr(), libc::O_CLOEXEC) } == 0 {
                FORK_PIPE[0].store(ends[0], Ordering::Relaxed);
                FORK_PIPE[1].store(ends[1], Ordering::Relaxed);
            }
        }
        heap.lock_all();
    }
    BOOTSTRAP.before_fork();
}

extern "C" fn after_fork_parent() {
    BOOTSTRAP.after_fork_in_parent();
    crate::thread_stacks::after_fork_in_parent();
    if let Some(heap) = built_heap() {
        heap.counters.forks.fetch_add(1, Ordering::Relaxed);
        heap.unlock_all();
    }
    BUILDING.unlock();
    let (read, write) = take_fork_pipe();
    if read >= 0 {
        // Wait until the child has taken the copies (or has died: end of
        // file), so no page of ours is written while it is still shared.
        let mut byte = 0u8;
        // SAFETY: our own pipe's descriptors; `byte` is writable.
        unsafe {
            libc::close(write);
            while libc::read(read, (&mut byte as *mut u8).cast(), 1) < 0
                && *libc::__errno_location() == libc::EINTR
            {}
            libc::close(read);
        }
    }
}

extern "C" fn after_fork_child() {
    BOOTSTRAP.after_fork_in_child();
    crate::thread_stacks::after_fork_in_child();
    // The child's reports are its own, whatever its parent had written.
    REPORTS.store(NOT_WRITTEN, Ordering::Release);
    let (read, write) = take_fork_pipe();
    if let Some(heap) = built_heap() {
        heap.reset_locks_in_child();
        // The summary's growth times are this process's own.
        heap.with_area_mut(tinct_mem::ColoredArea::restart_growth_times);
        if heap.config().fork_keep {
            crate::fork_keep::take_the_copies(heap);
        }
    }
    BUILDING.reset_in_child();
    if write >= 0 {
        // SAFETY: our own pipe's descriptors.
        unsafe {
            libc::close(read);
            libc::write(write, [1u8].as_ptr().cast(), 1);
            libc::close(write);
        }
    }
}

/// The fork pipe's ends, forgotten (-1, -1 if there is none).
fn take_fork_pipe() -> (i32, i32) {
    (
        FORK_PIPE[0].swap(-1, Ordering::Relaxed),
        FORK_PIPE[1].swap(-1, Ordering::Relaxed),
    )
}

/// The `pthread_key_create` destructor: a thread ends, its cache goes back.
pub extern "C" fn thread_ended(cache: *mut libc::c_void) {
    if let Some(heap) = built_heap()
        && !cache.is_null()
    {
        // SAFETY: the key's value is this thread's cache, set by
        // `Heap::create_cache`; the thread is ending and uses it no more.
        unsafe { heap.retire_cache(cache.cast()) };
    }
}

/// The process that built the heap. Only it writes the reports from
/// `_exit`: a child of `fork` that calls `_exit` (a failed `exec`, a
/// worker that skips its parent's exit handlers) is left as it was, and a
/// `vfork` child, which shares the parent's memory, writes nothing there.
static OWNER: AtomicI32 = AtomicI32::new(0);

/// `_exit(status)` for the program ([`crate::exports`]): the exit reports
/// in the process that built the heap, unless the calling thread holds a
/// lock of the allocator (`_exit` from a signal handler that interrupted
/// `malloc`: waiting for it would never end), then the `exit_group`
/// system call, as glibc's `_exit` makes it.
pub fn end_process(status: i32) -> ! {
    if let Some(heap) = built_heap()
        && OWNER.load(Ordering::Acquire) == std::process::id() as i32
        && !allocator_held_by_caller(heap)
    {
        write_reports_once(heap, Occasion::Exit);
    }
    loop {
        // SAFETY: exit_group takes an int and does not return.
        unsafe { libc::syscall(libc::SYS_exit_group, status) };
    }
}

/// True if the calling thread holds any lock the reports take (the
/// thread-stack registry's included: a handler that interrupted a
/// `pthread_create`, join or detach).
fn allocator_held_by_caller(heap: &Heap) -> bool {
    BUILDING.held_by_caller()
        || BOOTSTRAP.held_by_caller()
        || heap.held_by_caller()
        || crate::thread_stacks::held_by_caller()
}

/// Runs at exit (from `.fini_array`): the stats summary, the frame report
/// and the page report, unless they were written on request already
/// ([`crate::report_on_request`]).
pub extern "C" fn at_exit() {
    if let Some(heap) = built_heap() {
        write_reports_once(heap, Occasion::Exit);
    }
}

/// When the reports are written.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Occasion {
    /// At exit: all of them, the page report last (it stops the process
    /// for its checker).
    Exit,
    /// Asked before a signal ends the program: the summary and the frame
    /// report (no one waits to check a page report then).
    Request,
}

/// The reports' state: not written, being written, written.
static REPORTS: AtomicU8 = AtomicU8::new(NOT_WRITTEN);
const NOT_WRITTEN: u8 = 0;
const WRITING: u8 = 1;
const WRITTEN: u8 = 2;

/// How long a caller that finds the reports being written waits for them:
/// less than the supervisor waits for an answer
/// (`tinct_exec::report_request::REPORT_WAIT`, 10 s).
const WAIT_FOR_WRITER: std::time::Duration = std::time::Duration::from_secs(5);

/// The stats summary, the frame report and the page report, once per
/// process: the exit path and a request ([`crate::report_on_request`])
/// never both write them. A caller that finds them being written waits
/// (at most `WAIT_FOR_WRITER`, 5 s) until they are, so that exit does not
/// cut them off. True if they are written (by this call or before);
/// false if none is asked for or the wait ran out.
pub fn write_reports_once(heap: &Heap, occasion: Occasion) -> bool {
    let config = heap.config();
    if !config.stats && config.frame_report.is_none() && config.page_report.is_none() {
        return false;
    }
    if occasion == Occasion::Exit {
        // The program is ending: a supervisor must not take the time the
        // reports take for a program that does not end.
        crate::report_socket::note_exiting();
    }
    if REPORTS
        .compare_exchange(NOT_WRITTEN, WRITING, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        let since = std::time::Instant::now();
        while REPORTS.load(Ordering::Acquire) != WRITTEN {
            if since.elapsed() > WAIT_FOR_WRITER {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        return true;
    }
    // One reading of the area for all three, so they agree.
    let snapshot = report::Snapshot::take(heap);
    if config.stats {
        write_stderr(&report::summary(heap, &snapshot));
    }
    if let Some(path) = &config.frame_report {
        report::write_frame_report(heap, &snapshot, path);
    }
    REPORTS.store(WRITTEN, Ordering::Release);
    if let (Some(path), Occasion::Exit) = (&config.page_report, occasion) {
        report::write_page_report(heap, &snapshot, path);
    }
    true
}
