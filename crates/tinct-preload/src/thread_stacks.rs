//! The stacks of the program's own threads on coloured pages.
//!
//! glibc maps a thread's stack with its internal `__mmap`, which no
//! preloaded library can interpose, so the shim interposes
//! `pthread_create` instead ([`create`]): when the caller's attributes
//! carry no stack of their own (`attr` null, or no stack address set),
//! the thread gets a run of area pages as its stack through a copy of its
//! attributes (`pthread_attr_setstack`), and the real `pthread_create`
//! (`dlsym(RTLD_NEXT)`) does the rest. The stack is never smaller than
//! the program asked for: its usable size is the attributes' stack size
//! (glibc's default, RLIMIT_STACK or 8 MiB, when none is set), rounded up
//! to whole pages, with the guard (the attributes' guard size, at least one
//! page, `PROT_NONE`) below it. The whole stack is area pages: the area
//! has no way to lend pages to another mapping without leaving holes in
//! it, so a stack is not part coloured, part lazily faulted; it costs its
//! full size of the budget, and is served from it like a `TINCT_MMAP=1`
//! run. When the budget cannot serve it, or `TINCT_STACKS=0`, the call
//! passes through unchanged (glibc's own stack, counted).
//!
//! *Freeing.* With a stack of its caller's, glibc keeps the thread's
//! descriptor and TLS inside it and never frees it, and `pthread_join`
//! reads the result from it; at exit the kernel clears the thread id in
//! the descriptor (`CLONE_CHILD_CLEARTID`). So a joinable thread's stack
//! is given back once a join (`pthread_join`, `pthread_tryjoin_np`,
//! `pthread_timedjoin_np`, `pthread_clockjoin_np`) has succeeded, and a
//! detached thread's (created detached, or `pthread_detach`ed) once the
//! kernel no longer knows the thread id its start wrapper ([`start`])
//! recorded (`tgkill(pid, tid, 0)` gives ESRCH, which comes after the
//! kernel's last write to the stack): checked at the next create, join
//! or detach. A stack the program never joins, or a detached thread whose
//! id a newer thread took over, stays taken until the process ends (a
//! leak, never a stack freed while in use).
//!
//! The registry of live stacks is the shim's own memory (the bootstrap
//! arena), under a lock that `fork` takes ([`before_fork`]).

use std::cell::UnsafeCell;
use std::ffi::{CStr, c_int, c_void};
use std::sync::atomic::{AtomicI32, AtomicPtr, AtomicU8, AtomicU64, Ordering};

use crate::lock::RawLock;
use crate::page_kinds::MAPPED;
use crate::process::heap;

/// A thread's start routine.
pub type StartRoutine = extern "C" fn(*mut c_void) -> *mut c_void;

type CreateFn = unsafe extern "C" fn(
    *mut libc::pthread_t,
    *const libc::pthread_attr_t,
    StartRoutine,
    *mut c_void,
) -> c_int;
type JoinFn = unsafe extern "C" fn(libc::pthread_t, *mut *mut c_void) -> c_int;
type TimedJoinFn =
    unsafe extern "C" fn(libc::pthread_t, *mut *mut c_void, *const libc::timespec) -> c_int;
type ClockJoinFn = unsafe extern "C" fn(
    libc::pthread_t,
    *mut *mut c_void,
    libc::clockid_t,
    *const libc::timespec,
) -> c_int;
type DetachFn = unsafe extern "C" fn(libc::pthread_t) -> c_int;

unsafe extern "C" {
    /// glibc's `pthread_attr_getstackaddr` (obsolete, not in the `libc`
    /// crate): the stack address set in `attr`, null if none was, which
    /// `pthread_attr_getstack` cannot tell (it gives the address minus the
    /// size).
    fn pthread_attr_getstackaddr(attr: *const libc::pthread_attr_t, addr: *mut *mut c_void)
    -> c_int;
    /// POSIX `pthread_attr_getdetachstate` (not in the `libc` crate).
    fn pthread_attr_getdetachstate(attr: *const libc::pthread_attr_t, state: *mut c_int) -> c_int;
}

/// Thread stacks counted for the reports.
#[derive(Debug, Default)]
pub struct StackCounts {
    /// Stacks served from area pages.
    pub colored: AtomicU64,
    /// Their bytes (guard included).
    pub colored_bytes: AtomicU64,
    /// Coloured stacks given back to the area.
    pub freed: AtomicU64,
    /// Threads created with a stack of the caller's (passed through).
    pub own_stack: AtomicU64,
    /// Threads left on glibc's stack because the budget could not serve one.
    pub budget: AtomicU64,
}

/// The process's thread-stack counts.
pub static COUNTS: StackCounts = StackCounts {
    colored: AtomicU64::new(0),
    colored_bytes: AtomicU64::new(0),
    freed: AtomicU64::new(0),
    own_stack: AtomicU64::new(0),
    budget: AtomicU64::new(0),
};

/// One coloured stack, from creation until it is given back. Boxed in
/// the bootstrap arena: its address is the start wrapper's argument.
struct Record {
    /// First area page of the run (the guard's), and its pages.
    first_page: usize,
    pages: usize,
    /// Lowest and highest address of the run.
    low: usize,
    high: usize,
    /// The program's start routine and argument.
    routine: StartRoutine,
    argument: *mut c_void,
    /// The thread's kernel id, written by [`start`] (0 until it runs).
    tid: AtomicI32,
    /// Detached (created so, or `pthread_detach`ed).
    detached: AtomicU8,
}

/// The live coloured stacks.
struct Registry {
    lock: RawLock,
    records: UnsafeCell<Vec<Box<Record>>>,
}

// SAFETY: `records` is only touched with `lock` held.
unsafe impl Sync for Registry {}

static REGISTRY: Registry = Registry {
    lock: RawLock::new(),
    records: UnsafeCell::new(Vec::new()),
};

impl Registry {
    /// Runs `f` on the records, lock held.
    fn with<R>(&self, f: impl FnOnce(&mut Vec<Box<Record>>) -> R) -> R {
        self.lock.with(|| {
            // SAFETY: the lock is held: no other reference to the records.
            f(unsafe { &mut *self.records.get() })
        })
    }
}

/// Takes the registry's lock before `fork` (the child must not inherit it
/// held by a thread it does not have).
pub fn before_fork() {
    REGISTRY.lock.lock();
}

/// Releases it in the parent after `fork`.
pub fn after_fork_in_parent() {
    REGISTRY.lock.unlock();
}

/// Resets it in the child (its only thread held it).
pub fn after_fork_in_child() {
    REGISTRY.lock.reset_in_child();
}

/// 0 unknown, 1 off, 2 on: `TINCT_STACKS`, read once without allocating.
static ENABLED: AtomicU8 = AtomicU8::new(0);

/// False if `TINCT_STACKS` turns coloured stacks off (`0`, `false`, `no`).
pub fn enabled() -> bool {
    match ENABLED.load(Ordering::Relaxed) {
        1 => false,
        2 => true,
        _ => {
            // SAFETY: getenv reads the environment; the name is a valid C
            // string and the result is only read.
            let value = unsafe { libc::getenv(tinct_mem::shim_config::STACKS_CSTR.as_ptr()) };
            // SAFETY: non-null results of getenv are NUL-terminated strings.
            let off = !value.is_null()
                && matches!(
                    unsafe { CStr::from_ptr(value) }.to_bytes(),
                    b"0" | b"false" | b"no"
                );
            ENABLED.store(if off { 1 } else { 2 }, Ordering::Relaxed);
            !off
        }
    }
}

/// The next definition of `name` after the shim (glibc's), looked up once
/// into `slot`.
fn real(slot: &AtomicPtr<c_void>, name: &CStr) -> *mut c_void {
    let mut found = slot.load(Ordering::Acquire);
    if found.is_null() {
        // SAFETY: dlsym with RTLD_NEXT and a NUL-terminated name only
        // reads the loaded objects' symbol tables.
        found = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) };
        if found.is_null() {
            crate::stderr::write_stderr(&format!(
                "tinct-preload: dlsym(RTLD_NEXT, {name:?}) found nothing: expected glibc's\n"
            ));
            std::process::abort();
        }
        slot.store(found, Ordering::Release);
    }
    found
}

static REAL_CREATE: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
static REAL_JOIN: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
static REAL_TRYJOIN: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
static REAL_TIMEDJOIN: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
static REAL_CLOCKJOIN: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
static REAL_DETACH: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());

/// The start wrapper of a thread on a coloured stack: records the
/// thread's kernel id, then runs the program's routine.
extern "C" fn start(record: *mut c_void) -> *mut c_void {
    // SAFETY: `record` is the live Record `create` made for this thread;
    // it is freed only after the thread has been joined or has ended.
    let record = unsafe { &*(record as *const Record) };
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::syscall(libc::SYS_gettid) } as i32;
    record.tid.store(tid, Ordering::Release);
    (record.routine)(record.argument)
}

/// `pthread_create`: see the module documentation.
///
/// # Safety
/// As `pthread_create(3)`.
pub unsafe fn create(
    thread: *mut libc::pthread_t,
    attr: *const libc::pthread_attr_t,
    routine: StartRoutine,
    argument: *mut c_void,
) -> c_int {
    // SAFETY: glibc's pthread_create has this signature.
    let real_create: CreateFn = unsafe { std::mem::transmute(real(&REAL_CREATE, c"pthread_create")) };
    reclaim_ended();
    let pass = || {
        // SAFETY: the caller's arguments, unchanged.
        unsafe { real_create(thread, attr, routine, argument) }
    };
    if !enabled() {
        return pass();
    }
    if !attr.is_null() {
        let mut own: *mut c_void = std::ptr::null_mut();
        // SAFETY: `attr` is the caller's initialised attributes object.
        if unsafe { pthread_attr_getstackaddr(attr, &mut own) } != 0 || !own.is_null() {
            COUNTS.own_stack.fetch_add(1, Ordering::Relaxed);
            return pass();
        }
    }
    let Some(heap) = heap() else {
        return pass();
    };
    // A copy of the caller's attributes (glibc's pthread_attr_t is a
    // plain struct; its extension, the CPU set and signal mask, is shared
    // read-only and never freed through the copy), or defaults.
    // SAFETY: an all-zero pthread_attr_t is a valid destination for
    // pthread_attr_init or a byte copy.
    let mut copy: libc::pthread_attr_t = unsafe { std::mem::zeroed() };
    if attr.is_null() {
        // SAFETY: `copy` is writable.
        if unsafe { libc::pthread_attr_init(&mut copy) } != 0 {
            return pass();
        }
    } else {
        // SAFETY: `attr` points to the caller's attributes object.
        copy = unsafe { std::ptr::read(attr) };
    }
    let (mut size, mut guard, mut detach) = (0usize, 0usize, 0 as c_int);
    // SAFETY: `copy` is an initialised attributes object; the outputs are
    // writable.
    unsafe {
        libc::pthread_attr_getstacksize(&copy, &mut size);
        libc::pthread_attr_getguardsize(&copy, &mut guard);
        pthread_attr_getdetachstate(&copy, &mut detach);
    }
    let page = heap.page_size();
    let usable = size.max(libc::PTHREAD_STACK_MIN).next_multiple_of(page);
    let guard = guard.next_multiple_of(page).max(page);
    let bytes = usable + guard;
    let low = heap.alloc_pages(bytes, page, MAPPED) as usize;
    if low == 0 {
        COUNTS.budget.fetch_add(1, Ordering::Relaxed);
        return pass();
    }
    // SAFETY: the guard pages are the start of the run just taken; the
    // shim's mprotect flags the run so freeing it restores read-write.
    unsafe { crate::anonymous_memory::mprotect(low as *mut c_void, guard, libc::PROT_NONE) };
    let first_page = heap.area_page(low).expect("a run of the area");
    let record = Box::new(Record {
        first_page,
        pages: bytes / page,
        low,
        high: low + bytes,
        routine,
        argument,
        tid: AtomicI32::new(0),
        detached: AtomicU8::new(u8::from(detach == libc::PTHREAD_CREATE_DETACHED)),
    });
    let record_ptr = &*record as *const Record as *mut c_void;
    REGISTRY.with(|records| records.push(record));
    // SAFETY: `copy` is an initialised attributes object; the stack is the
    // run above the guard, ours until it is given back.
    let set = unsafe { libc::pthread_attr_setstack(&mut copy, (low + guard) as *mut c_void, usable) };
    // SAFETY: the caller's `thread`, our attributes copy and start wrapper.
    let result = if set == 0 {
        unsafe { real_create(thread, &copy, start, record_ptr) }
    } else {
        libc::EINVAL
    };
    if attr.is_null() {
        // SAFETY: initialised by pthread_attr_init above (the stack set in
        // it is not glibc's to free).
        unsafe { libc::pthread_attr_destroy(&mut copy) };
    }
    if result != 0 {
        // No thread: the stack was never used.
        release_where(|r| r.low == low);
        if set != 0 {
            return pass();
        }
        return result;
    }
    COUNTS.colored.fetch_add(1, Ordering::Relaxed);
    COUNTS
        .colored_bytes
        .fetch_add(bytes as u64, Ordering::Relaxed);
    result
}

/// Gives back the stacks of records `done` picks (the registry's lock
/// is taken; the area's pages are freed after it is released).
fn release_where(mut done: impl FnMut(&Record) -> bool) -> usize {
    let Some(heap) = crate::process::built_heap() else {
        return 0;
    };
    let taken: Vec<Box<Record>> = REGISTRY.with(|records| {
        let mut taken = Vec::new();
        let mut index = 0;
        while index < records.len() {
            if done(&records[index]) {
                taken.push(records.swap_remove(index));
            } else {
                index += 1;
            }
        }
        taken
    });
    for record in &taken {
        heap.unmap_pages(record.first_page, record.pages);
    }
    taken.len()
}

/// Counts stacks given back by a successful join or reclaim.
fn count_freed(count: usize) {
    COUNTS.freed.fetch_add(count as u64, Ordering::Relaxed);
}

/// True if the thread `tid` of this process has ended and the kernel has
/// let go of it (so it writes its stack no more).
fn ended(tid: i32) -> bool {
    // SAFETY: getpid and tgkill with signal 0 only check that the thread exists.
    unsafe {
        libc::syscall(libc::SYS_tgkill, libc::getpid(), tid, 0) == -1
            && *libc::__errno_location() == libc::ESRCH
    }
}

/// Gives back the stacks of detached threads that have ended.
fn reclaim_ended() {
    // SAFETY: errno of the calling thread, kept across the probes.
    let saved = unsafe { *libc::__errno_location() };
    let freed = release_where(|r| {
        let tid = r.tid.load(Ordering::Acquire);
        r.detached.load(Ordering::Relaxed) != 0 && tid != 0 && ended(tid)
    });
    count_freed(freed);
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = saved };
}

/// After a successful join of `thread`: its stack, if coloured, goes back.
fn joined(thread: libc::pthread_t) {
    // glibc's pthread_t is its descriptor's address, inside the stack.
    let address = thread as usize;
    count_freed(release_where(|r| (r.low..r.high).contains(&address)));
    reclaim_ended();
}

/// `pthread_join`.
///
/// # Safety
/// As `pthread_join(3)`.
pub unsafe fn join(thread: libc::pthread_t, result: *mut *mut c_void) -> c_int {
    // SAFETY: glibc's pthread_join has this signature.
    let real_join: JoinFn = unsafe { std::mem::transmute(real(&REAL_JOIN, c"pthread_join")) };
    // SAFETY: forwarded caller contract.
    let status = unsafe { real_join(thread, result) };
    if status == 0 {
        joined(thread);
    }
    status
}

/// `pthread_tryjoin_np`.
///
/// # Safety
/// As `pthread_tryjoin_np(3)`.
pub unsafe fn tryjoin(thread: libc::pthread_t, result: *mut *mut c_void) -> c_int {
    // SAFETY: glibc's pthread_tryjoin_np has this signature.
    let real_join: JoinFn =
        unsafe { std::mem::transmute(real(&REAL_TRYJOIN, c"pthread_tryjoin_np")) };
    // SAFETY: forwarded caller contract.
    let status = unsafe { real_join(thread, result) };
    if status == 0 {
        joined(thread);
    }
    status
}

/// `pthread_timedjoin_np`.
///
/// # Safety
/// As `pthread_timedjoin_np(3)`.
pub unsafe fn timedjoin(
    thread: libc::pthread_t,
    result: *mut *mut c_void,
    deadline: *const libc::timespec,
) -> c_int {
    // SAFETY: glibc's pthread_timedjoin_np has this signature.
    let real_join: TimedJoinFn =
        unsafe { std::mem::transmute(real(&REAL_TIMEDJOIN, c"pthread_timedjoin_np")) };
    // SAFETY: forwarded caller contract.
    let status = unsafe { real_join(thread, result, deadline) };
    if status == 0 {
        joined(thread);
    }
    status
}

/// `pthread_clockjoin_np`.
///
/// # Safety
/// As `pthread_clockjoin_np(3)`.
pub unsafe fn clockjoin(
    thread: libc::pthread_t,
    result: *mut *mut c_void,
    clock: libc::clockid_t,
    deadline: *const libc::timespec,
) -> c_int {
    // SAFETY: glibc's pthread_clockjoin_np has this signature.
    let real_join: ClockJoinFn =
        unsafe { std::mem::transmute(real(&REAL_CLOCKJOIN, c"pthread_clockjoin_np")) };
    // SAFETY: forwarded caller contract.
    let status = unsafe { real_join(thread, result, clock, deadline) };
    if status == 0 {
        joined(thread);
    }
    status
}

/// `pthread_detach`: a coloured stack is given back once the thread ended.
///
/// # Safety
/// As `pthread_detach(3)`.
pub unsafe fn detach(thread: libc::pthread_t) -> c_int {
    // SAFETY: glibc's pthread_detach has this signature.
    let real_detach: DetachFn =
        unsafe { std::mem::transmute(real(&REAL_DETACH, c"pthread_detach")) };
    // SAFETY: forwarded caller contract.
    let status = unsafe { real_detach(thread) };
    if status == 0 {
        // Marked after: the stack is given back only once the thread has
        // ended, which a later reclaim checks, however soon it ends.
        let address = thread as usize;
        REGISTRY.with(|records| {
            for record in records.iter().filter(|r| (r.low..r.high).contains(&address)) {
                record.detached.store(1, Ordering::Relaxed);
            }
        });
    }
    reclaim_ended();
    status
}

/// The counts so far, for the reports.
pub fn counts() -> tinct_mem::ThreadStacks {
    let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
    tinct_mem::ThreadStacks {
        colored: load(&COUNTS.colored),
        colored_bytes: load(&COUNTS.colored_bytes),
        freed: load(&COUNTS.freed),
        own_stack: load(&COUNTS.own_stack),
        budget: load(&COUNTS.budget),
    }
}

/// Coloured stacks still taken (threads running, or never joined).
pub fn live() -> usize {
    REGISTRY.with(|records| records.len())
}
