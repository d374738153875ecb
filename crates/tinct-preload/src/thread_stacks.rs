//! The stacks of the program's own threads, their hot part on coloured
//! pages.
//!
//! glibc maps a thread's stack with its internal `__mmap`, which no
//! preloaded library can interpose, so the shim interposes
//! `pthread_create` instead ([`create`]): when the caller's attributes
//! carry no stack of their own (`attr` null, or no stack address set),
//! the thread gets a stack of the shim's through a copy of its attributes
//! (`pthread_attr_setstack`), and the real `pthread_create`
//! (`dlsym(RTLD_NEXT)`) does the rest.
//!
//! *Full size, coloured top.* The stack is a reservation of the full size
//! the program asked for (the attributes' stack size, or the process's
//! default from `pthread_getattr_default_np`: glibc's is RLIMIT_STACK, or
//! 2 MiB — `ARCH_STACK_DEFAULT_SIZE` on x86-64 — when RLIMIT_STACK is
//! unlimited, unless the program set another with
//! `pthread_setattr_default_np`; rounded up to whole pages) plus a guard
//! below it (the attributes' guard size, at least one page, `PROT_NONE`). Its top
//! (`TINCT_STACK_COLORED`, 256 KiB by default, at most the whole stack) is
//! where the thread starts and where glibc keeps its descriptor and TLS:
//! those pages are a run of area pages, moved there frames and all
//! (`mremap` with `MREMAP_DONTUNMAP`, so the area keeps its address range,
//! empty, until they come back). The rest is ordinary memory faulted in as
//! the thread goes deeper, as glibc's own stacks are. The run counts as
//! the area's (`TINCT_MMAP`-style, in use) while lent; the exit reports
//! list its pages as not present at their area addresses. When the budget
//! cannot serve the top, or the kernel refuses the move, the call passes
//! through unchanged (glibc's own stack, counted);
//! `TINCT_STACK_COLORED=0` passes every call through.
//!
//! *What glibc says of the stack.* For a stack its caller gave, glibc
//! reports no guard (`pthread_getattr_np` gives guard size 0), which Rust's
//! std takes for a broken thread (its stack-overflow code panics "there is
//! no guard page" as every thread starts). The shim interposes
//! `pthread_getattr_np` ([`getattr`]): for a thread on one of its stacks
//! the attributes say the guard it put below the stack; the stack's
//! address and size are glibc's already (the usable stack, above the
//! guard).
//!
//! *Executable stacks.* glibc maps its thread stacks executable when a
//! loaded object asks for that (`PT_GNU_STACK` with `PF_X`, or no
//! `PT_GNU_STACK` on x86-64): then the call passes through, counted
//! (`stacks_must_be_executable`, asked of `dl_iterate_phdr` again only
//! after a load). A limitation: an object that asks for it loaded later
//! (`dlopen`) makes glibc turn its own stacks executable
//! (`_dl_make_stacks_executable`), not the coloured ones already running,
//! which stay read-write.
//!
//! *Freeing.* With a stack of its caller's, glibc keeps the thread's
//! descriptor and TLS inside it and never frees it, and `pthread_join`
//! reads the result from it; at exit the kernel clears the thread id in
//! the descriptor (`CLONE_CHILD_CLEARTID`). So a joinable thread's stack
//! is given back once a join (`pthread_join`, `pthread_tryjoin_np`,
//! `pthread_timedjoin_np`, `pthread_clockjoin_np`) has succeeded, and a
//! detached thread's (created detached, or `pthread_detach`ed) once the
//! kernel no longer knows the thread id its start wrapper (`start`)
//! recorded (`tgkill(pid, tid, 0)` gives ESRCH, which comes after the
//! kernel's last write to the stack): checked at the next create, join
//! or detach, and before the exit reports, only for threads that have
//! begun to end (a thread-specific key's destructor, run as a thread
//! returns or calls `pthread_exit`, marks them: the probes cost one
//! system call per ending detached thread, not per live one), and only
//! for the stacks of the
//! process that made them (a record keeps its creator's pid: in a child of
//! `fork`, or a `vfork` child sharing the parent's memory, the parent's
//! thread ids are unknown, which is no sign that those threads ended). Given back, the coloured pages
//! move back into the area (reused by the next stack or block) and the
//! reservation is unmapped. A stack the program never joins, or a detached
//! thread whose id a newer thread took over, stays taken until the process
//! ends (a leak, never a stack freed while in use).
//!
//! *Fork.* The child of `fork` runs on a copy of the stack of the thread
//! that forked: if that stack is coloured, its record becomes the child's
//! (its pid and thread id); the other records stay the parent's, never
//! probed nor given back by the child (their copies in the child are
//! leaked; their tops are still lent area pages, which `TINCT_FORK_KEEP`
//! copies, see [`crate::fork_keep`]).
//!
//! *Giving back.* The top's pages move back into the area one mapping
//! (else one page) at a time; a page the kernel refuses to move stays
//! where it is and is unmapped with the reservation, and only that page
//! is marked lost in the area. The area keeps its whole address range
//! mapped throughout: the range a top left (`MREMAP_DONTUNMAP`) stays
//! mapped, empty, until a page is moved over it.
//!
//! The registry of live stacks is the shim's own memory (the bootstrap
//! arena), under a lock that `fork` takes ([`before_fork`]).

use std::cell::UnsafeCell;
use std::ffi::{CStr, c_int, c_void};
use std::sync::atomic::{AtomicI32, AtomicPtr, AtomicU8, AtomicU64, AtomicUsize, Ordering};

use crate::heap::Heap;
use crate::heap_handle::built_heap;
use crate::lock::RawLock;
use crate::page_kinds::MAPPED;

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
type GetattrFn = unsafe extern "C" fn(libc::pthread_t, *mut libc::pthread_attr_t) -> c_int;

unsafe extern "C" {
    /// glibc's `pthread_attr_getstackaddr` (obsolete, not in the `libc`
    /// crate): the stack address set in `attr`, null if none was, which
    /// `pthread_attr_getstack` cannot tell (it gives the address minus the
    /// size).
    fn pthread_attr_getstackaddr(
        attr: *const libc::pthread_attr_t,
        addr: *mut *mut c_void,
    ) -> c_int;
    /// POSIX `pthread_attr_getdetachstate` (not in the `libc` crate).
    fn pthread_attr_getdetachstate(attr: *const libc::pthread_attr_t, state: *mut c_int) -> c_int;
    /// glibc's `pthread_getattr_default_np` (2.18): the process's default
    /// thread attributes (`pthread_setattr_default_np`), into an
    /// uninitialised object.
    fn pthread_getattr_default_np(attr: *mut libc::pthread_attr_t) -> c_int;
}

/// `MREMAP_DONTUNMAP` (Linux 5.7): the source range stays mapped, empty.
const MREMAP_DONTUNMAP: c_int = 4;

/// Thread stacks counted for the reports.
#[derive(Debug)]
pub struct StackCounts {
    /// Stacks given a coloured top.
    pub colored: AtomicU64,
    /// The bytes of those tops.
    pub colored_bytes: AtomicU64,
    /// Coloured stacks given back to the area.
    pub freed: AtomicU64,
    /// Threads created with a stack of the caller's (passed through).
    pub own_stack: AtomicU64,
    /// Threads left on glibc's stack because the budget could not serve a top.
    pub budget: AtomicU64,
    /// Threads left on glibc's stack because the kernel refused to move
    /// the pages.
    pub refused: AtomicU64,
    /// Threads left on glibc's stack because a loaded object asks for
    /// executable stacks.
    pub executable: AtomicU64,
    /// Tops lent now (this process's records).
    pub lent: AtomicU64,
    /// Their bytes.
    pub lent_bytes: AtomicU64,
}

/// The process's thread-stack counts.
pub static COUNTS: StackCounts = StackCounts {
    colored: AtomicU64::new(0),
    colored_bytes: AtomicU64::new(0),
    freed: AtomicU64::new(0),
    own_stack: AtomicU64::new(0),
    budget: AtomicU64::new(0),
    refused: AtomicU64::new(0),
    executable: AtomicU64::new(0),
    lent: AtomicU64::new(0),
    lent_bytes: AtomicU64::new(0),
};

/// One coloured stack, from creation until it is given back. Boxed in
/// the bootstrap arena: its address is the start wrapper's argument.
struct Record {
    /// The reservation: its lowest address and bytes (guard included).
    low: usize,
    bytes: usize,
    /// The guard's bytes (the lowest of the reservation).
    guard: usize,
    /// Where the coloured top starts (the reservation's last `pages`).
    top: usize,
    /// The area run lent to the top: its first page and pages.
    first_page: usize,
    pages: usize,
    /// The program's start routine and argument.
    routine: StartRoutine,
    argument: *mut c_void,
    /// The thread's kernel id, written by [`start`] (0 until it runs).
    tid: AtomicI32,
    /// The process the thread runs in (its creator; after `fork`, the
    /// child for the forking thread's record): only it probes the thread
    /// id or gives the stack back.
    pid: AtomicI32,
    /// Detached (created so, or `pthread_detach`ed).
    detached: AtomicU8,
    /// Set by the thread's key destructor ([`thread_exiting`]) as it
    /// ends: only such threads' ids are probed. Always set (every stack
    /// probed) when the key could not be made.
    exiting: AtomicU8,
}

impl Record {
    fn contains(&self, address: usize) -> bool {
        (self.low..self.low + self.bytes).contains(&address)
    }

    /// True if the record is the calling process's (not a parent's, seen
    /// from a child of `fork` or `vfork`).
    fn ours(&self) -> bool {
        self.pid.load(Ordering::Relaxed) == this_process()
    }

    /// Counts its top (of `page`-byte pages) as lent, or no longer.
    fn count_lent(&self, page: usize, lent: bool) {
        let bytes = (self.pages * page) as u64;
        if lent {
            COUNTS.lent.fetch_add(1, Ordering::Relaxed);
            COUNTS.lent_bytes.fetch_add(bytes, Ordering::Relaxed);
        } else {
            COUNTS.lent.fetch_sub(1, Ordering::Relaxed);
            COUNTS.lent_bytes.fetch_sub(bytes, Ordering::Relaxed);
        }
    }
}

/// The calling process's id (the system call: a `vfork` child's own).
fn this_process() -> i32 {
    // SAFETY: the getpid system call has no preconditions; made raw so
    // that no C library's cached pid (older glibc kept one, wrong in a
    // vfork child) can answer instead of the kernel.
    unsafe { libc::syscall(libc::SYS_getpid) as i32 }
}

/// The live coloured stacks.
struct Registry {
    lock: RawLock,
    /// Boxed: a record's address is its thread's start argument, so it
    /// must not move when the vector grows.
    #[allow(clippy::vec_box)]
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

/// True if the calling thread holds the registry's lock (a report from a
/// signal handler must not wait for it).
pub fn held_by_caller() -> bool {
    REGISTRY.lock.held_by_caller()
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

/// Resets it in the child (its only thread held it), and makes the
/// record of the stack the child runs on, if coloured, the child's (see
/// the module documentation: the others stay the parent's).
pub fn after_fork_in_child() {
    REGISTRY.lock.reset_in_child();
    let here = 0u8;
    let here = &here as *const u8 as usize;
    let (pid, tid) = (this_process(), {
        // SAFETY: gettid has no preconditions.
        unsafe { libc::syscall(libc::SYS_gettid) as i32 }
    });
    let page = built_heap().map_or(4096, |heap| heap.page_size());
    REGISTRY.with(|records| {
        COUNTS.lent.store(0, Ordering::Relaxed);
        COUNTS.lent_bytes.store(0, Ordering::Relaxed);
        for record in records.iter().filter(|r| r.contains(here)) {
            record.pid.store(pid, Ordering::Relaxed);
            record.tid.store(tid, Ordering::Release);
            record.count_lent(page, true);
        }
    });
}

/// A coloured top lent out: the area run and where its pages are now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lent {
    /// The run's first area page.
    pub first_page: usize,
    /// Its pages.
    pub pages: usize,
    /// The address of the stack top holding them.
    pub top: usize,
}

/// Every coloured top lent out now (a parent's too, seen from a child of
/// `fork`: its area pages are still away).
pub fn lent() -> Vec<Lent> {
    REGISTRY.with(|records| records.iter().map(|r| lent_of(r)).collect())
}

fn lent_of(record: &Record) -> Lent {
    Lent {
        first_page: record.first_page,
        pages: record.pages,
        top: record.top,
    }
}

/// `usize::MAX` until read: the coloured top's bytes (`TINCT_STACK_COLORED`).
static COLORED_TOP: AtomicUsize = AtomicUsize::new(usize::MAX);

/// The bytes of a stack's top to colour (`TINCT_STACK_COLORED`, read once;
/// a value that is not a size is said on stderr and the default used).
pub fn colored_top() -> usize {
    let known = COLORED_TOP.load(Ordering::Relaxed);
    if known != usize::MAX {
        return known;
    }
    use tinct_mem::shim_config::{DEFAULT_STACK_COLORED, STACK_COLORED, STACK_COLORED_CSTR};
    // SAFETY: getenv reads the environment; the name is a valid C string
    // and the result is only read.
    let value = unsafe { libc::getenv(STACK_COLORED_CSTR.as_ptr()) };
    let bytes =
        if value.is_null() {
            DEFAULT_STACK_COLORED
        } else {
            // SAFETY: non-null results of getenv are NUL-terminated strings.
            let text = unsafe { CStr::from_ptr(value) }.to_string_lossy();
            tinct_base::units::parse_size(&text).map(|size| size.0).unwrap_or_else(|e| {
            crate::stderr::write_stderr(&format!(
                "tinct-preload: {STACK_COLORED}={text:?}: {e}; colouring the default {} KiB \
                 of each thread stack\n",
                DEFAULT_STACK_COLORED >> 10
            ));
            DEFAULT_STACK_COLORED
        })
        };
    let bytes = usize::try_from(bytes).unwrap_or(usize::MAX - 1);
    COLORED_TOP.store(bytes, Ordering::Relaxed);
    bytes
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
static REAL_GETATTR: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());

/// A raw system call returning an address or -1 (never the C library's
/// wrappers, which are the shim's own).
fn raw(number: libc::c_long, a: usize, b: usize, c: usize, d: usize, e: usize) -> isize {
    // SAFETY: the callers pass the arguments of the named system call and
    // own the memory it changes (documented at each call).
    unsafe { libc::syscall(number, a, b, c, d, e, 0usize) as isize }
}

/// `mremap` of `bytes` at `from` to exactly `to` (`flags` adds
/// `MREMAP_DONTUNMAP`): true if the kernel moved them.
fn remap(from: usize, to: usize, bytes: usize, flags: c_int) -> bool {
    let flags = (libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED | flags) as usize;
    raw(libc::SYS_mremap, from, bytes, bytes, flags, to) == to as isize
}

/// Moves the area run at `from` to the stack top at `to`, frames and all,
/// leaving the area's range mapped, empty (`MREMAP_DONTUNMAP`): in one
/// call, else page by page (the run may span kernel mappings). `Ok` if
/// every page moved; else every page moved so far is moved back (without
/// `DONTUNMAP`: over the area's empty range, which stays mapped; the top
/// is unmapped by the caller), and `Err` holds the pages (offsets from
/// `from`, in pages) that did not come back: empty area pages, to be
/// lost rather than handed out (they would fault in a frame of any colour).
fn lend_pages(from: usize, to: usize, bytes: usize, page: usize) -> Result<(), Vec<usize>> {
    if remap(from, to, bytes, MREMAP_DONTUNMAP) {
        return Ok(());
    }
    for offset in (0..bytes).step_by(page) {
        if !remap(from + offset, to + offset, page, MREMAP_DONTUNMAP) {
            return Err((0..offset / page)
                .filter(|&index| !remap(to + index * page, from + index * page, page, 0))
                .collect());
        }
    }
    Ok(())
}

/// Moves a top at `from` back over the area's range at `to` (mapped,
/// empty, since the pages left it): in one call, else page by page. A page
/// the kernel refuses to move stays in the top (which the caller unmaps),
/// and its area address stays mapped, empty: the pages (offsets from `to`,
/// in pages) that did not come back, none if all did.
fn take_back_pages(from: usize, to: usize, bytes: usize, page: usize) -> Vec<usize> {
    if remap(from, to, bytes, 0) {
        return Vec::new();
    }
    (0..bytes / page)
        .filter(|&index| !remap(from + index * page, to + index * page, page, 0))
        .collect()
}

/// The start wrapper of a thread on a coloured stack: records the
/// thread's kernel id, then runs the program's routine.
extern "C" fn start(record: *mut c_void) -> *mut c_void {
    // SAFETY: `record` is the live Record `create` made for this thread;
    // it is freed only after the thread has been joined or has ended.
    let record = unsafe { &*(record as *const Record) };
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::syscall(libc::SYS_gettid) } as i32;
    record.tid.store(tid, Ordering::Release);
    if let Some(key) = exit_key() {
        // SAFETY: our key; the value is this thread's record, which lives
        // until the thread has ended (after its destructor ran).
        unsafe { libc::pthread_setspecific(key, record as *const Record as *const c_void) };
    }
    (record.routine)(record.argument)
}

/// The key whose destructor marks a coloured thread as ending: 0 not
/// made yet, 1 none (`pthread_key_create` failed), else the key + 2.
static EXIT_KEY: AtomicU64 = AtomicU64::new(0);

/// The key marking ending threads ([`thread_exiting`]), made once.
fn exit_key() -> Option<libc::pthread_key_t> {
    let mut known = EXIT_KEY.load(Ordering::Acquire);
    if known == 0 {
        let mut key: libc::pthread_key_t = 0;
        // SAFETY: `key` is writable; the destructor is a plain function
        // that lives as long as the process (the shim is never unloaded).
        let made = unsafe { libc::pthread_key_create(&mut key, Some(thread_exiting)) } == 0;
        let value = if made { u64::from(key) + 2 } else { 1 };
        known = match EXIT_KEY.compare_exchange(0, value, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => value,
            Err(other) => {
                if made {
                    // SAFETY: the key just made, never used: another
                    // thread's won.
                    unsafe { libc::pthread_key_delete(key) };
                }
                other
            }
        };
    }
    (known >= 2).then(|| (known - 2) as libc::pthread_key_t)
}

/// The key's destructor: the thread (whose record `record` is) ends.
extern "C" fn thread_exiting(record: *mut c_void) {
    // SAFETY: the value `start` set: the live record of this thread.
    let record = unsafe { &*(record as *const Record) };
    record.exiting.store(1, Ordering::Release);
}

/// Why a stack of the shim's could not be made.
enum NoStack {
    Budget,
    Refused,
}

/// A reservation of `usable + guard` bytes whose lowest `guard` bytes are
/// `PROT_NONE` and whose top `colored` bytes are a run of area pages:
/// `(low, top, first page)`.
fn make_stack(
    heap: &Heap,
    usable: usize,
    guard: usize,
    colored: usize,
) -> Result<(usize, usize, usize), NoStack> {
    let page = heap.page_size();
    let bytes = usable + guard;
    let run = heap.alloc_pages(colored, page, MAPPED) as usize;
    if run == 0 {
        return Err(NoStack::Budget);
    }
    let first_page = heap.area_page(run).expect("a run of the area");
    // As glibc maps its stacks (allocatestack.c).
    let low = raw(
        libc::SYS_mmap,
        0,
        bytes,
        (libc::PROT_READ | libc::PROT_WRITE) as usize,
        (libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK) as usize,
        usize::MAX, // fd -1
    );
    if low < 0 {
        heap.unmap_pages(first_page, colored / page);
        return Err(NoStack::Refused);
    }
    let low = low as usize;
    let top = low + bytes - colored;
    // The guard: PROT_NONE, as glibc's. The top: the run's pages, frames
    // and all; the area keeps its range, empty, until they come back.
    let lent = if raw(
        libc::SYS_mprotect,
        low,
        guard,
        libc::PROT_NONE as usize,
        0,
        0,
    ) != 0
    {
        Err(Vec::new())
    } else {
        lend_pages(run, top, colored, page)
    };
    if let Err(stayed) = lent {
        raw(libc::SYS_munmap, low, bytes, 0, 0, 0);
        give_back_run(heap, first_page, colored / page, &stayed);
        return Err(NoStack::Refused);
    }
    Ok((low, top, first_page))
}

/// Frees the area run of `pages` at `first_page` but the pages (offsets
/// in it) in `stayed`, which are marked lost (their area address is
/// mapped, empty: never to be handed out).
fn give_back_run(heap: &Heap, first_page: usize, pages: usize, stayed: &[usize]) {
    // The stretches between them first (a run is found from its first
    // page, which a lost page would hide), then the lost ones.
    let mut from = 0;
    for &stays in stayed.iter().chain(std::iter::once(&pages)) {
        if stays > from {
            heap.unmap_pages(first_page + from, stays - from);
        }
        from = stays + 1;
    }
    for &stays in stayed {
        heap.lose_pages(first_page + stays, 1);
    }
}

/// glibc's `pthread_create`, for the shim's own threads: their stacks are
/// glibc's, neither coloured nor counted.
///
/// # Safety
/// As `pthread_create(3)`.
pub unsafe fn create_uncounted(
    thread: *mut libc::pthread_t,
    attr: *const libc::pthread_attr_t,
    routine: StartRoutine,
    argument: *mut c_void,
) -> c_int {
    // SAFETY: glibc's pthread_create has this signature.
    let real_create: CreateFn =
        unsafe { std::mem::transmute(real(&REAL_CREATE, c"pthread_create")) };
    // SAFETY: forwarded caller contract.
    unsafe { real_create(thread, attr, routine, argument) }
}

/// `pthread_create`: see the module documentation. `heap_of` gives the
/// heap, building it if need be (a program may create its first thread
/// before its first allocation); it is passed in so that this module
/// does not depend on the one that builds the heap.
///
/// # Safety
/// As `pthread_create(3)`.
pub unsafe fn create(
    thread: *mut libc::pthread_t,
    attr: *const libc::pthread_attr_t,
    routine: StartRoutine,
    argument: *mut c_void,
    heap_of: impl FnOnce() -> Option<&'static Heap>,
) -> c_int {
    // SAFETY: glibc's pthread_create has this signature.
    let real_create: CreateFn =
        unsafe { std::mem::transmute(real(&REAL_CREATE, c"pthread_create")) };
    reclaim_ended();
    let pass = || {
        // SAFETY: the caller's arguments, unchanged.
        unsafe { real_create(thread, attr, routine, argument) }
    };
    if colored_top() == 0 {
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
    if stacks_must_be_executable() {
        COUNTS.executable.fetch_add(1, Ordering::Relaxed);
        return pass();
    }
    let Some(heap) = heap_of() else {
        return pass();
    };
    // A copy of the caller's attributes (glibc's pthread_attr_t is a
    // plain struct; its extension, the CPU set and signal mask, is shared
    // read-only and never freed through the copy), or the process's
    // defaults (`pthread_setattr_default_np`: stack size, guard, CPU set).
    // SAFETY: an all-zero pthread_attr_t is a valid destination for
    // pthread_getattr_default_np or a byte copy.
    let mut copy: libc::pthread_attr_t = unsafe { std::mem::zeroed() };
    if attr.is_null() {
        // SAFETY: `copy` is writable; glibc initialises it.
        if unsafe { pthread_getattr_default_np(&mut copy) } != 0 {
            return pass();
        }
    } else {
        // SAFETY: `attr` points to the caller's attributes object.
        copy = unsafe { std::ptr::read(attr) };
    }
    let destroy = |copy: &mut libc::pthread_attr_t| {
        if attr.is_null() {
            // SAFETY: initialised by pthread_getattr_default_np above (a
            // stack set in it is not glibc's to free).
            unsafe { libc::pthread_attr_destroy(copy) };
        }
    };
    let (mut size, mut guard, mut detach) = (0usize, 0usize, 0 as c_int);
    // SAFETY: `copy` is an initialised attributes object; the outputs are
    // writable. (The stack size is glibc's default when none is set.)
    unsafe {
        libc::pthread_attr_getstacksize(&copy, &mut size);
        libc::pthread_attr_getguardsize(&copy, &mut guard);
        pthread_attr_getdetachstate(&copy, &mut detach);
    }
    let page = heap.page_size();
    let usable = size.max(libc::PTHREAD_STACK_MIN).next_multiple_of(page);
    let guard = guard.next_multiple_of(page).max(page);
    let colored = colored_top().next_multiple_of(page).min(usable);
    let (low, top, first_page) = match make_stack(heap, usable, guard, colored) {
        Ok(stack) => stack,
        Err(why) => {
            destroy(&mut copy);
            match why {
                NoStack::Budget => &COUNTS.budget,
                NoStack::Refused => &COUNTS.refused,
            }
            .fetch_add(1, Ordering::Relaxed);
            return pass();
        }
    };
    let record = Box::new(Record {
        low,
        bytes: usable + guard,
        guard,
        top,
        first_page,
        pages: colored / page,
        routine,
        argument,
        tid: AtomicI32::new(0),
        pid: AtomicI32::new(this_process()),
        exiting: AtomicU8::new(u8::from(exit_key().is_none())),
        detached: AtomicU8::new(u8::from(detach == libc::PTHREAD_CREATE_DETACHED)),
    });
    let record_ptr = &*record as *const Record as *mut c_void;
    record.count_lent(page, true);
    REGISTRY.with(|records| records.push(record));
    // SAFETY: `copy` is an initialised attributes object; the stack is the
    // reservation above the guard, ours until it is given back.
    let set =
        unsafe { libc::pthread_attr_setstack(&mut copy, (low + guard) as *mut c_void, usable) };
    let result = if set == 0 {
        // SAFETY: the caller's `thread`, our attributes copy and start
        // wrapper, whose record lives until the thread is done with it.
        unsafe { real_create(thread, &copy, start, record_ptr) }
    } else {
        set
    };
    destroy(&mut copy);
    if result != 0 {
        // No thread: the stack was never used.
        release_where(|r| r.ours() && r.low == low);
        if set != 0 {
            COUNTS.refused.fetch_add(1, Ordering::Relaxed);
            return pass();
        }
        return result;
    }
    COUNTS.colored.fetch_add(1, Ordering::Relaxed);
    COUNTS
        .colored_bytes
        .fetch_add(colored as u64, Ordering::Relaxed);
    result
}

/// Gives back the stacks of records `done` picks (the registry's lock
/// is taken; the pages move back after it is released): the top's pages
/// to the area (a page the kernel refuses to move back is marked lost,
/// never handed out again; its area address stays mapped, empty), the
/// reservation to the kernel. The count. `done` must pick only records
/// that are [`Record::ours`].
fn release_where(mut done: impl FnMut(&Record) -> bool) -> usize {
    let Some(heap) = built_heap() else {
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
    let page = heap.page_size();
    let rw = (libc::PROT_READ | libc::PROT_WRITE) as usize;
    for record in &taken {
        record.count_lent(page, false);
        let run = heap.page_address(record.first_page);
        let bytes = record.pages * page;
        let stayed = take_back_pages(record.top, run, bytes, page);
        // The reservation goes, with any page that stayed in the top.
        raw(libc::SYS_munmap, record.low, record.bytes, 0, 0, 0);
        // Read-write again, should the program have changed the
        // protection of its stack's top (the pages carry it back).
        raw(libc::SYS_mprotect, run, bytes, rw, 0, 0);
        // Back to the area: each stretch of pages that came back, and
        // the pages that did not, lost.
        give_back_run(heap, record.first_page, record.pages, &stayed);
    }
    taken.len()
}

/// Counts stacks given back by a successful join or reclaim.
fn count_freed(count: usize) {
    COUNTS.freed.fetch_add(count as u64, Ordering::Relaxed);
}

/// True if the thread `tid` of this process (`pid`) has ended and the
/// kernel has let go of it (so it writes its stack no more).
fn ended(pid: i32, tid: i32) -> bool {
    // SAFETY: tgkill with signal 0 only checks that the thread exists.
    unsafe {
        libc::syscall(libc::SYS_tgkill, pid, tid, 0) == -1
            && *libc::__errno_location() == libc::ESRCH
    }
}

/// Gives back the stacks of detached threads that have ended (the
/// caller's errno is kept).
pub fn reclaim_ended() {
    // SAFETY: errno of the calling thread, kept across the probes.
    let saved = unsafe { *libc::__errno_location() };
    let pid = this_process();
    let freed = release_where(|r| {
        let tid = r.tid.load(Ordering::Acquire);
        r.pid.load(Ordering::Relaxed) == pid
            && r.detached.load(Ordering::Relaxed) != 0
            && r.exiting.load(Ordering::Acquire) != 0
            && tid != 0
            && ended(pid, tid)
    });
    count_freed(freed);
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = saved };
}

/// After a successful join of `thread`: its stack, if coloured, goes back.
fn joined(thread: libc::pthread_t) {
    // glibc's pthread_t is its descriptor's address, inside the stack.
    let address = thread as usize;
    count_freed(release_where(|r| r.ours() && r.contains(address)));
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
            for record in records.iter().filter(|r| r.ours() && r.contains(address)) {
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
        refused: load(&COUNTS.refused),
        executable: load(&COUNTS.executable),
        lent: load(&COUNTS.lent),
        lent_bytes: load(&COUNTS.lent_bytes),
    }
}

/// Coloured stacks of this process still taken (threads running, or
/// never joined); lock-free, so a report may read it anywhere.
pub fn live() -> usize {
    COUNTS.lent.load(Ordering::Relaxed) as usize
}

/// `pthread_getattr_np`: glibc's, and for a thread on a coloured stack the
/// guard the shim put below it (glibc reports none for a stack its caller
/// gave; the stack's address and size are the usable stack already).
///
/// # Safety
/// As `pthread_getattr_np(3)`.
pub unsafe fn getattr(thread: libc::pthread_t, attr: *mut libc::pthread_attr_t) -> c_int {
    // SAFETY: glibc's pthread_getattr_np has this signature.
    let real_getattr: GetattrFn =
        unsafe { std::mem::transmute(real(&REAL_GETATTR, c"pthread_getattr_np")) };
    // SAFETY: forwarded caller contract.
    let status = unsafe { real_getattr(thread, attr) };
    if status != 0 || held_by_caller() {
        return status;
    }
    // glibc's pthread_t is its descriptor's address, inside the stack.
    let address = thread as usize;
    let guard = REGISTRY.with(|records| {
        records
            .iter()
            .find(|r| r.ours() && r.contains(address))
            .map(|r| r.guard)
    });
    if let Some(guard) = guard {
        // SAFETY: `attr` was initialised by the successful call above.
        unsafe { libc::pthread_attr_setguardsize(attr, guard) };
    }
    status
}

/// `PT_GNU_STACK` (elf.h).
const PT_GNU_STACK: u32 = 0x6474_e551;
/// `PF_X` (elf.h).
const PF_X: u32 = 1;

/// The `dlpi_adds` of the last scan plus one (0: none yet), and its
/// finding (1: executable stacks asked for).
static EXEC_SCANNED_ADDS: AtomicU64 = AtomicU64::new(0);
static EXEC_ASKED: AtomicU8 = AtomicU8::new(0);

/// True if a loaded object asks for executable stacks, which glibc then
/// gives its threads (`PT_GNU_STACK` with `PF_X`; an object without
/// `PT_GNU_STACK` asks for them on x86-64, glibc's `DEFAULT_STACK_PERMS`;
/// the vDSO, which glibc does not load, is not counted). Scanned with
/// `dl_iterate_phdr` again only when objects were loaded since.
fn stacks_must_be_executable() -> bool {
    struct Scan {
        known_adds: u64,
        adds: u64,
        vdso: usize,
        executable: bool,
        unchanged: bool,
    }
    unsafe extern "C" fn visit(
        info: *mut libc::dl_phdr_info,
        size: usize,
        data: *mut c_void,
    ) -> c_int {
        // SAFETY: `data` is the Scan below; `info` is the loader's,
        // valid during the call, with `size` bytes.
        let (scan, info) = unsafe { (&mut *(data as *mut Scan), &*info) };
        if size >= std::mem::offset_of!(libc::dl_phdr_info, dlpi_subs) {
            scan.adds = info.dlpi_adds;
            if scan.known_adds == info.dlpi_adds + 1 {
                scan.unchanged = true;
                return 1;
            }
        }
        if info.dlpi_phdr.is_null() {
            return 0;
        }
        // SAFETY: the loader's program headers of this object.
        let headers =
            unsafe { std::slice::from_raw_parts(info.dlpi_phdr, usize::from(info.dlpi_phnum)) };
        let base = info.dlpi_addr as usize;
        let is_vdso = headers.iter().any(|h| {
            let start = base.wrapping_add(h.p_vaddr as usize);
            h.p_type == libc::PT_LOAD
                && (start..start.wrapping_add(h.p_memsz as usize)).contains(&scan.vdso)
        });
        if is_vdso {
            return 0;
        }
        let executable = match headers.iter().find(|h| h.p_type == PT_GNU_STACK) {
            Some(header) => header.p_flags & PF_X != 0,
            None => cfg!(target_arch = "x86_64"),
        };
        if executable {
            scan.executable = true;
            return 1;
        }
        0
    }
    let mut scan = Scan {
        known_adds: EXEC_SCANNED_ADDS.load(Ordering::Acquire),
        adds: 0,
        // SAFETY: getauxval has no preconditions.
        vdso: unsafe { libc::getauxval(libc::AT_SYSINFO_EHDR) } as usize,
        executable: false,
        unchanged: false,
    };
    // SAFETY: the callback only reads what the loader hands it and writes
    // `scan`, which outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(visit), &mut scan as *mut Scan as *mut c_void) };
    if scan.unchanged {
        return EXEC_ASKED.load(Ordering::Acquire) != 0;
    }
    EXEC_ASKED.store(u8::from(scan.executable), Ordering::Release);
    EXEC_SCANNED_ADDS.store(scan.adds + 1, Ordering::Release);
    scan.executable
}
