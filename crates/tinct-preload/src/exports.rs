//! The C symbols that replace glibc's allocator (glibc manual, "Replacing
//! malloc": malloc, free, calloc, realloc, plus aligned_alloc,
//! malloc_usable_size, memalign, posix_memalign, pvalloc, valloc).
//!
//! Each function only checks its C contract (overflow, alignment, errno)
//! and forwards to the process [`Heap`](crate::heap::Heap); before the heap
//! exists (the calling thread is building it) requests go to the bootstrap
//! arena. `free` and `realloc` of a pointer that is not a live block abort
//! the process, as glibc's do (see [`crate::misuse`]); the building
//! thread's own calls are the exception: there nothing but the bootstrap
//! arena's blocks is known yet, and other pointers are left alone.
//!
//! The aligned allocations follow the glibc they replace
//! (`malloc/malloc.c`, `_mid_memalign`): `memalign` serves an alignment
//! up to 16 as `malloc`, rounds one that is not a power of two up to one,
//! and refuses one above `SIZE_MAX / 2 + 1` (EINVAL); `aligned_alloc` is
//! `memalign` up to glibc 2.37 and, from 2.38 on (C17), refuses an
//! alignment that is not a power of two (EINVAL) — the shim asks the C
//! library it runs with which it is (`gnu_get_libc_version`);
//! `posix_memalign` refuses one that is not a power of two multiple of
//! `sizeof(void *)` (EINVAL, POSIX) and leaves `*memptr` alone on failure.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicU8, Ordering};

use crate::bootstrap::BOOTSTRAP;
use crate::process::heap;

/// Smallest alignment of every pointer (as glibc on x86-64).
const MIN_ALIGN: usize = 16;

fn set_errno(value: c_int) {
    // SAFETY: __errno_location returns the calling thread's errno slot.
    unsafe { *libc::__errno_location() = value };
}

fn allocate(size: usize, align: usize) -> *mut c_void {
    let ptr = match heap() {
        Some(heap) => heap.alloc(size, align),
        None => BOOTSTRAP.alloc(size, align),
    };
    if ptr.is_null() {
        set_errno(libc::ENOMEM);
    }
    ptr.cast()
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) as usize }
}

/// C `malloc`.
#[unsafe(no_mangle)]
pub extern "C" fn malloc(size: usize) -> *mut c_void {
    allocate(size, MIN_ALIGN)
}

/// C `free`: aborts the process on a double free, a pointer this
/// allocator never returned, or one inside a block.
///
/// # Safety
/// `ptr` is null or a pointer from this allocator (one that is not is
/// found and aborts, see [`crate::heap`]).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn free(ptr: *mut c_void) {
    if ptr.is_null() {
        return;
    }
    let ptr = ptr.cast::<u8>();
    match heap() {
        // SAFETY: forwarded caller contract.
        Some(heap) => unsafe { heap.free(ptr) },
        None if BOOTSTRAP.contains(ptr) => {
            // SAFETY: forwarded caller contract; the arena checks it.
            unsafe { BOOTSTRAP.free(ptr) }
        }
        None => {}
    }
}

/// C23 `free_sized`.
///
/// # Safety
/// As [`free`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn free_sized(ptr: *mut c_void, _size: usize) {
    // SAFETY: forwarded caller contract.
    unsafe { free(ptr) }
}

/// C23 `free_aligned_sized`.
///
/// # Safety
/// As [`free`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn free_aligned_sized(ptr: *mut c_void, _align: usize, _size: usize) {
    // SAFETY: forwarded caller contract.
    unsafe { free(ptr) }
}

/// C `calloc`: zeroed, with overflow check. Memory fresh from the kernel
/// is not written (see [`Heap::alloc_zeroed`](crate::heap::Heap::alloc_zeroed)).
#[unsafe(no_mangle)]
pub extern "C" fn calloc(count: usize, size: usize) -> *mut c_void {
    let Some(total) = count.checked_mul(size) else {
        set_errno(libc::ENOMEM);
        return std::ptr::null_mut();
    };
    let ptr = match heap() {
        Some(heap) => heap.alloc_zeroed(total),
        None => BOOTSTRAP.alloc_zeroed(total, MIN_ALIGN),
    };
    if ptr.is_null() {
        set_errno(libc::ENOMEM);
    }
    ptr.cast()
}

/// C `realloc`: aborts the process on a freed pointer, one this allocator
/// never returned, or one inside a block, as [`free`].
///
/// # Safety
/// `ptr` is null or a pointer from this allocator (see [`free`]).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn realloc(ptr: *mut c_void, size: usize) -> *mut c_void {
    let result = match heap() {
        // SAFETY: forwarded caller contract.
        Some(heap) => unsafe { heap.realloc(ptr.cast(), size) },
        None => {
            // The building thread: stay in the bootstrap arena.
            let fresh = BOOTSTRAP.alloc(size, MIN_ALIGN);
            if !fresh.is_null() && !ptr.is_null() && BOOTSTRAP.contains(ptr.cast()) {
                let old = BOOTSTRAP.usable_size(ptr.cast());
                // SAFETY: both blocks are live and distinct.
                unsafe {
                    std::ptr::copy_nonoverlapping(ptr.cast::<u8>(), fresh, old.min(size));
                    BOOTSTRAP.free(ptr.cast());
                }
            }
            fresh
        }
    };
    if result.is_null() && size != 0 {
        set_errno(libc::ENOMEM);
    }
    result.cast()
}

/// `reallocarray` (BSD, glibc 2.26): realloc with overflow check.
///
/// # Safety
/// As [`realloc`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn reallocarray(ptr: *mut c_void, count: usize, size: usize) -> *mut c_void {
    match count.checked_mul(size) {
        // SAFETY: forwarded caller contract.
        Some(total) => unsafe { realloc(ptr, total) },
        None => {
            set_errno(libc::ENOMEM);
            std::ptr::null_mut()
        }
    }
}

/// POSIX `posix_memalign`: EINVAL unless `align` is a power of two and a
/// multiple of `sizeof(void *)`.
///
/// # Safety
/// `out` must be valid for a pointer write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posix_memalign(out: *mut *mut c_void, align: usize, size: usize) -> c_int {
    if !align.is_power_of_two() || !align.is_multiple_of(size_of::<*mut c_void>()) {
        return libc::EINVAL;
    }
    let ptr = allocate(size, align);
    if ptr.is_null() {
        return libc::ENOMEM;
    }
    // SAFETY: the caller guarantees `out` is writable.
    unsafe { out.write(ptr) };
    0
}

/// C11 `aligned_alloc`, as the glibc it replaces: `memalign` up to glibc
/// 2.37; from 2.38 on, EINVAL (null) unless `align` is a power of two.
#[unsafe(no_mangle)]
pub extern "C" fn aligned_alloc(align: usize, size: usize) -> *mut c_void {
    if aligned_alloc_is_c17() && !align.is_power_of_two() {
        set_errno(libc::EINVAL);
        return std::ptr::null_mut();
    }
    memalign(align, size)
}

/// Obsolete `memalign`, as glibc's `_mid_memalign`: an alignment up to 16
/// is `malloc`'s, one that is not a power of two is rounded up to one, and
/// one above `SIZE_MAX / 2 + 1` is refused (EINVAL, null).
#[unsafe(no_mangle)]
pub extern "C" fn memalign(align: usize, size: usize) -> *mut c_void {
    match align.max(MIN_ALIGN).checked_next_power_of_two() {
        Some(align) => allocate(size, align),
        None => {
            set_errno(libc::EINVAL);
            std::ptr::null_mut()
        }
    }
}

/// 0 not asked yet, 1 `aligned_alloc` is `memalign` (glibc before 2.38),
/// 2 it refuses alignments that are not powers of two (glibc 2.38 on).
static ALIGNED_ALLOC_C17: AtomicU8 = AtomicU8::new(0);

/// True if the C library the shim runs with is glibc 2.38 or later, whose
/// `aligned_alloc` refuses alignments that are not powers of two (asked
/// once, without allocating).
fn aligned_alloc_is_c17() -> bool {
    match ALIGNED_ALLOC_C17.load(Ordering::Relaxed) {
        1 => false,
        2 => true,
        _ => {
            // SAFETY: gnu_get_libc_version returns a static NUL-terminated
            // string (it never fails).
            let version = unsafe { std::ffi::CStr::from_ptr(libc::gnu_get_libc_version()) };
            let c17 = refuses_odd_alignments(version.to_bytes());
            ALIGNED_ALLOC_C17.store(if c17 { 2 } else { 1 }, Ordering::Relaxed);
            c17
        }
    }
}

/// True for a glibc version (`"2.36"`, `"2.38.9000"`) of 2.38 or later.
fn refuses_odd_alignments(version: &[u8]) -> bool {
    let mut parts = version
        .split(|&b| b == b'.')
        .map(|part| std::str::from_utf8(part).ok()?.parse::<u32>().ok());
    match (parts.next().flatten(), parts.next().flatten()) {
        (Some(major), Some(minor)) => (major, minor) >= (2, 38),
        _ => false,
    }
}

/// Obsolete `valloc`: page-aligned.
#[unsafe(no_mangle)]
pub extern "C" fn valloc(size: usize) -> *mut c_void {
    allocate(size, page_size())
}

/// Obsolete `pvalloc`: page-aligned, size rounded up to whole pages.
#[unsafe(no_mangle)]
pub extern "C" fn pvalloc(size: usize) -> *mut c_void {
    let page = page_size();
    match size.max(1).checked_next_multiple_of(page) {
        Some(rounded) => allocate(rounded, page),
        None => {
            set_errno(libc::ENOMEM);
            std::ptr::null_mut()
        }
    }
}

/// GNU `malloc_usable_size` (0 for null).
///
/// # Safety
/// `ptr` is null or a live pointer from this allocator.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn malloc_usable_size(ptr: *mut c_void) -> usize {
    let ptr = ptr.cast::<u8>();
    match heap() {
        Some(heap) => heap.usable_size(ptr),
        None if BOOTSTRAP.contains(ptr) => BOOTSTRAP.usable_size(ptr),
        None => 0,
    }
}

/// Exports the `mmap` of [`crate::anonymous_memory`] under each name
/// given, with that name's doc comment: one body for the C names that
/// mean the same call.
macro_rules! export_mmap {
    ($($(#[doc = $doc:literal])+ $name:ident;)+) => {$(
        $(#[doc = $doc])+
        ///
        /// # Safety
        /// As `mmap(2)`.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(
            address: *mut c_void, len: usize, prot: c_int, flags: c_int, fd: c_int,
            offset: libc::off_t,
        ) -> *mut c_void {
            // SAFETY: forwarded caller contract.
            unsafe { crate::anonymous_memory::mmap(address, len, prot, flags, fd, offset) }
        }
    )+};
}

export_mmap! {
    /// C `mmap` (see [`crate::anonymous_memory`]: coloured with
    /// `TINCT_MMAP=1`, the kernel's otherwise).
    mmap;
    /// `mmap64` (the same as `mmap` on 64-bit Linux).
    mmap64;
}

/// C `munmap`.
///
/// # Safety
/// As `munmap(2)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn munmap(address: *mut c_void, len: usize) -> c_int {
    // SAFETY: forwarded caller contract.
    unsafe { crate::anonymous_memory::munmap(address, len) }
}

/// C `mremap`. Declared variadic in C; on x86-64 and arm64 Linux the
/// optional fifth argument arrives in the fifth integer register either
/// way, and it is read only with `MREMAP_FIXED`.
///
/// # Safety
/// As `mremap(2)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mremap(
    old: *mut c_void,
    old_len: usize,
    new_len: usize,
    flags: c_int,
    new_address: *mut c_void,
) -> *mut c_void {
    // SAFETY: forwarded caller contract.
    unsafe { crate::anonymous_memory::mremap(old, old_len, new_len, flags, new_address) }
}

/// C `madvise`.
///
/// # Safety
/// As `madvise(2)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn madvise(address: *mut c_void, len: usize, advice: c_int) -> c_int {
    // SAFETY: forwarded caller contract.
    unsafe { crate::anonymous_memory::madvise(address, len, advice) }
}

/// C `mprotect`.
///
/// # Safety
/// As `mprotect(2)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mprotect(address: *mut c_void, len: usize, prot: c_int) -> c_int {
    // SAFETY: forwarded caller contract.
    unsafe { crate::anonymous_memory::mprotect(address, len, prot) }
}

/// C `_exit`: the exit reports first (a program that ends itself with
/// `_exit`, as dash does on a trapped signal, skips `.fini_array`), then
/// the process ends as glibc's `_exit` ends it.
#[unsafe(no_mangle)]
pub extern "C" fn _exit(status: c_int) -> ! {
    crate::process::end_process(status)
}

/// C `_Exit`: as [`_exit`].
#[unsafe(no_mangle)]
pub extern "C" fn _Exit(status: c_int) -> ! {
    crate::process::end_process(status)
}

/// C `pthread_create`: a thread without a stack of its own gets one of
/// coloured pages ([`crate::thread_stacks`]).
///
/// # Safety
/// As `pthread_create(3)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_create(
    thread: *mut libc::pthread_t,
    attr: *const libc::pthread_attr_t,
    routine: crate::thread_stacks::StartRoutine,
    argument: *mut c_void,
) -> c_int {
    // SAFETY: forwarded caller contract.
    unsafe { crate::thread_stacks::create(thread, attr, routine, argument, heap) }
}

/// C `pthread_join`: a coloured stack goes back once joined.
///
/// # Safety
/// As `pthread_join(3)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_join(thread: libc::pthread_t, result: *mut *mut c_void) -> c_int {
    // SAFETY: forwarded caller contract.
    unsafe { crate::thread_stacks::join(thread, result) }
}

/// GNU `pthread_tryjoin_np`, as [`pthread_join`].
///
/// # Safety
/// As `pthread_tryjoin_np(3)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_tryjoin_np(
    thread: libc::pthread_t,
    result: *mut *mut c_void,
) -> c_int {
    // SAFETY: forwarded caller contract.
    unsafe { crate::thread_stacks::tryjoin(thread, result) }
}

/// GNU `pthread_timedjoin_np`, as [`pthread_join`].
///
/// # Safety
/// As `pthread_timedjoin_np(3)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_timedjoin_np(
    thread: libc::pthread_t,
    result: *mut *mut c_void,
    deadline: *const libc::timespec,
) -> c_int {
    // SAFETY: forwarded caller contract.
    unsafe { crate::thread_stacks::timedjoin(thread, result, deadline) }
}

/// GNU `pthread_clockjoin_np`, as [`pthread_join`].
///
/// # Safety
/// As `pthread_clockjoin_np(3)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_clockjoin_np(
    thread: libc::pthread_t,
    result: *mut *mut c_void,
    clock: libc::clockid_t,
    deadline: *const libc::timespec,
) -> c_int {
    // SAFETY: forwarded caller contract.
    unsafe { crate::thread_stacks::clockjoin(thread, result, clock, deadline) }
}

/// C `pthread_detach`: a coloured stack goes back once the thread ended.
///
/// # Safety
/// As `pthread_detach(3)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_detach(thread: libc::pthread_t) -> c_int {
    // SAFETY: forwarded caller contract.
    unsafe { crate::thread_stacks::detach(thread) }
}

/// GNU `pthread_getattr_np`: for a thread on a coloured stack, the guard
/// below it too ([`crate::thread_stacks::getattr`]).
///
/// # Safety
/// As `pthread_getattr_np(3)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_getattr_np(
    thread: libc::pthread_t,
    attr: *mut libc::pthread_attr_t,
) -> c_int {
    // SAFETY: forwarded caller contract.
    unsafe { crate::thread_stacks::getattr(thread, attr) }
}

/// `.fini_array` entry: the exit summary and page report run when the
/// process exits normally (after `atexit` handlers).
#[used]
#[unsafe(link_section = ".fini_array")]
static AT_EXIT: extern "C" fn() = crate::process::at_exit;

/// `.init_array` entry: in the program `tinct exec --stats` waits for, a
/// thread that writes the summary and reports when asked, before a signal
/// ends the program ([`crate::report_on_request`]).
#[used]
#[unsafe(link_section = ".init_array")]
static REPORT_ON_REQUEST: extern "C" fn() = crate::report_on_request::start;
