//! The C ABI of tinct-mem, declared and documented in
//! `include/tinct_mem.h`; built as `libtinct_mem_ffi.so` and
//! `libtinct_mem_ffi.a`.
//!
//! Every function that can fail returns NULL, 0 or -1 and records a
//! message readable with [`tinct_last_error`] (per thread). A pool handle
//! is a `SharedPool` behind a raw pointer; all functions are thread-safe
//! except `tinct_pool_destroy`, which must be the last call on a pool.

use std::cell::RefCell;
use std::ffi::{CString, c_char, c_int, c_void};
use std::ptr::{self, NonNull};

use tinct_sys::pagemap::Pagemap;

use tinct_mem::mapping::LayoutSpec;
use tinct_mem::{
    AddressMapping, BankOptions, Counts, Locking, MIN_ALIGN, MemError, Modes, PoolOptions,
    SharedPool, Step, XorFunctions, machine_mapping,
};

/// `tinct_pool_create` flag: `mlock` the pool.
pub const TINCT_POOL_LOCK: u32 = 1;
/// `tinct_pool_create` flag: run without readable frame numbers.
pub const TINCT_POOL_UNCOLORED: u32 = 2;
/// `tinct_pool_create_banked` flag: chandru-mueller's controller-interleaved
/// pool (populated over all NUMA nodes, the same free chunks per controller).
pub const TINCT_POOL_INTERLEAVE: u32 = 4;

/// Algorithm 1 mode: fall back to the requested controller's fullest bank.
pub const TINCT_CONTROLLER_RESTRICTED: u32 = 1;
/// Algorithm 1 mode: fall back to the fullest controller and bank.
pub const TINCT_CONTROLLER_UNRESTRICTED: u32 = 2;
/// Algorithm 1 mode: fall back to any free page.
pub const TINCT_SPLIT: u32 = 4;

/// Pool totals, as `struct tinct_stats` in the header.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct TinctStats {
    /// Page size in bytes.
    pub page_size: u64,
    /// Pages in the pool.
    pub total_pages: u64,
    /// Free pages.
    pub free_pages: u64,
    /// Pages handed out.
    pub used_pages: u64,
    /// Number of colors.
    pub colors: u32,
    /// Banks per controller.
    pub banks: u32,
    /// Controllers.
    pub controllers: u32,
    /// 1 if the pool runs uncolored (no placement control).
    pub uncolored: u32,
}

/// What one bank-aware request got (`struct tinct_bank_steps`): pages per
/// step of chandru-mueller Algorithm 1.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct TinctBankSteps {
    /// Pages from the requested controller and bank.
    pub exact: u64,
    /// Pages from another bank of the requested controller.
    pub controller_restricted: u64,
    /// Pages from another controller.
    pub controller_unrestricted: u64,
    /// Pages from the SPLIT fallback.
    pub split: u64,
    /// The furthest step used: 0 exact, 1 restricted, 2 unrestricted, 3 split.
    pub furthest: u32,
}

/// Free and used pages of one color/bank/controller (`struct tinct_counts`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct TinctCounts {
    /// Free pages.
    pub free: u64,
    /// Pages handed out.
    pub used: u64,
}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn record(error: &MemError) {
    let text = error.to_string().replace('\0', " ");
    LAST_ERROR.with(|slot| *slot.borrow_mut() = CString::new(text).unwrap_or_default());
}

fn fail<T>(error: MemError, value: T) -> T {
    record(&error);
    value
}

/// The message of the last failed call on this thread ("" if none). The
/// pointer stays valid until the next failing call on this thread.
#[unsafe(no_mangle)]
pub extern "C" fn tinct_last_error() -> *const c_char {
    LAST_ERROR.with(|slot| slot.borrow().as_ptr())
}

fn options(size: usize, flags: u32) -> Result<PoolOptions, MemError> {
    if flags & !(TINCT_POOL_LOCK | TINCT_POOL_UNCOLORED) != 0 {
        return Err(MemError::Request(format!(
            "flags {flags:#x}: expected TINCT_POOL_LOCK (1) | TINCT_POOL_UNCOLORED (2) \
             (TINCT_POOL_INTERLEAVE (4) with tinct_pool_create_banked)"
        )));
    }
    Ok(PoolOptions {
        size,
        // The C API locks only when asked, as before locking by default.
        lock: if flags & TINCT_POOL_LOCK != 0 {
            Locking::Required
        } else {
            Locking::Off
        },
        uncolored: flags & TINCT_POOL_UNCOLORED != 0,
    })
}

fn into_handle(result: Result<SharedPool, MemError>) -> *mut SharedPool {
    match result {
        Ok(pool) => Box::into_raw(Box::new(pool)),
        Err(error) => fail(error, ptr::null_mut()),
    }
}

/// Creates a pool of `size` bytes with this machine's LLC colors
/// (`TINCT_COLOR_BITS` when set, else the derived rule: `machine_mapping`).
#[unsafe(no_mangle)]
pub extern "C" fn tinct_pool_create(size: usize, flags: u32) -> *mut SharedPool {
    into_handle((|| {
        let options = options(size, flags)?;
        SharedPool::new(machine_mapping(&LayoutSpec::default())?, options)
    })())
}

/// # Safety
/// `ptr` must be NULL (then `len` must be 0) or point to `len` values.
unsafe fn slice<'a, T>(ptr: *const T, len: usize) -> Result<&'a [T], MemError> {
    if len == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() {
        return Err(MemError::Request(format!("NULL array with length {len}")));
    }
    // SAFETY: the caller promises `ptr` points to `len` initialized values
    // that outlive this call.
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// Creates a pool with explicit XOR-mask functions for colors, banks and
/// controllers (each array may be NULL with length 0).
///
/// # Safety
/// Each mask pointer must be NULL (with length 0) or point to that many
/// `uint64_t` values.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tinct_pool_create_with(
    size: usize,
    flags: u32,
    color_masks: *const u64,
    ncolor_masks: usize,
    bank_masks: *const u64,
    nbank_masks: usize,
    controller_masks: *const u64,
    ncontroller_masks: usize,
) -> *mut SharedPool {
    // SAFETY: forwarded caller contract.
    into_handle(unsafe {
        pool_of_masks(
            options(size, flags),
            [
                (color_masks, ncolor_masks),
                (bank_masks, nbank_masks),
                (controller_masks, ncontroller_masks),
            ],
            BankOptions::default(),
        )
    })
}

/// Creates a pool for chandru-mueller's bank-aware allocator: explicit
/// address functions as in [`tinct_pool_create_with`], chunks of
/// `chunk_size` bytes (0: the paper's 8 KiB), and with
/// `TINCT_POOL_INTERLEAVE` in `flags` the controller-interleaved layout.
///
/// # Safety
/// As [`tinct_pool_create_with`].
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn tinct_pool_create_banked(
    size: usize,
    flags: u32,
    color_masks: *const u64,
    ncolor_masks: usize,
    bank_masks: *const u64,
    nbank_masks: usize,
    controller_masks: *const u64,
    ncontroller_masks: usize,
    chunk_size: usize,
) -> *mut SharedPool {
    let banks = BankOptions {
        chunk_bytes: match chunk_size {
            0 => BankOptions::default().chunk_bytes,
            bytes => bytes as u64,
        },
        interleave_controllers: flags & TINCT_POOL_INTERLEAVE != 0,
    };
    // SAFETY: forwarded caller contract.
    into_handle(unsafe {
        pool_of_masks(
            options(size, flags & !TINCT_POOL_INTERLEAVE),
            [
                (color_masks, ncolor_masks),
                (bank_masks, nbank_masks),
                (controller_masks, ncontroller_masks),
            ],
            banks,
        )
    })
}

/// The pool of [`tinct_pool_create_with`] and [`tinct_pool_create_banked`]:
/// `options` (an error there is the one reported), an address mapping
/// whose color, bank and controller functions are the XOR masks of the
/// three (pointer, length) arrays `masks`, and `banks`.
///
/// # Safety
/// Each pointer must be NULL (with length 0) or point to that many values.
unsafe fn pool_of_masks(
    options: Result<PoolOptions, MemError>,
    masks: [(*const u64, usize); 3],
    banks: BankOptions,
) -> Result<SharedPool, MemError> {
    let options = options?;
    let [colors, bank_masks, controllers] = masks;
    // SAFETY: forwarded caller contract.
    let (colors, bank_masks, controllers) = unsafe {
        (
            slice(colors.0, colors.1)?,
            slice(bank_masks.0, bank_masks.1)?,
            slice(controllers.0, controllers.1)?,
        )
    };
    let mapping = AddressMapping::new(
        rustix::param::page_size() as u64,
        XorFunctions::from_masks(colors.to_vec())?,
        XorFunctions::from_masks(bank_masks.to_vec())?,
        XorFunctions::from_masks(controllers.to_vec())?,
    )?;
    SharedPool::with_bank_options(mapping, options, banks)
}

/// The mode mask of comma-separated names (`exact`, `restricted`,
/// `unrestricted`, `split`, `all`), e.g. `"restricted,split"`; -1 (with a
/// message) for an unknown name or NULL.
///
/// # Safety
/// `names` must be NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tinct_bank_modes(names: *const c_char) -> i64 {
    if names.is_null() {
        return fail(MemError::Request("NULL mode names".into()), -1);
    }
    // SAFETY: the caller promises a NUL-terminated string.
    let text = unsafe { std::ffi::CStr::from_ptr(names) }.to_string_lossy();
    match Modes::parse(&text) {
        Ok(modes) => i64::from(modes.0),
        Err(error) => fail(error, -1),
    }
}

/// # Safety
/// `pool` must be NULL or a live handle from `tinct_pool_create*`.
unsafe fn pool_ref<'a>(pool: *const SharedPool) -> Result<&'a SharedPool, MemError> {
    // SAFETY: the caller promises a live handle or NULL.
    unsafe { pool.as_ref() }.ok_or_else(|| MemError::Request("NULL pool".into()))
}

/// A query that fills `out` (the `what` of its error message): resolves
/// `pool`, computes the value, writes it. Returns 0, or -1 with the last
/// error set (NULL pool, the query's error, NULL `out`).
///
/// # Safety
/// `pool` must be NULL or a live handle, and `out` NULL or writable.
unsafe fn fill<T>(
    pool: *const SharedPool,
    out: *mut T,
    what: &str,
    query: impl FnOnce(&SharedPool) -> Result<T, MemError>,
) -> c_int {
    // SAFETY: forwarded caller contract.
    let value = match unsafe { pool_ref(pool) }.and_then(query) {
        Ok(value) => value,
        Err(error) => return fail(error, -1),
    };
    if out.is_null() {
        return fail(MemError::Request(format!("NULL {what} pointer")), -1);
    }
    // SAFETY: `out` is non-null and the caller promises it is writable.
    unsafe { out.write(value) };
    0
}

/// Destroys a pool; every pointer from it becomes invalid.
///
/// # Safety
/// `pool` must be NULL or a live handle, not used afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tinct_pool_destroy(pool: *mut SharedPool) {
    if !pool.is_null() {
        // SAFETY: the handle came from `Box::into_raw` and is dropped once.
        drop(unsafe { Box::from_raw(pool) });
    }
}

/// Allocates `size` bytes aligned to `align` from pages of the given colors.
///
/// # Safety
/// `pool` must be a live handle; `colors` must point to `ncolors` values.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tinct_alloc_colored_aligned(
    pool: *const SharedPool,
    colors: *const u32,
    ncolors: usize,
    size: usize,
    align: usize,
) -> *mut c_void {
    // SAFETY: forwarded caller contract.
    let result = unsafe { pool_ref(pool).and_then(|p| Ok((p, slice(colors, ncolors)?))) }
        .and_then(|(pool, colors)| pool.alloc(colors, size, align));
    match result {
        Ok(ptr) => ptr.as_ptr().cast(),
        Err(error) => fail(error, ptr::null_mut()),
    }
}

/// Allocates `size` bytes (16-byte aligned) from pages of the given colors.
///
/// # Safety
/// As [`tinct_alloc_colored_aligned`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tinct_alloc_colored(
    pool: *const SharedPool,
    colors: *const u32,
    ncolors: usize,
    size: usize,
) -> *mut c_void {
    // SAFETY: forwarded caller contract.
    unsafe { tinct_alloc_colored_aligned(pool, colors, ncolors, size, MIN_ALIGN) }
}

/// A contiguous buffer of `size` bytes whose pages are chosen one by one
/// with chandru-mueller Algorithm 1 for `controller` and `bank` under
/// `modes` (TINCT_CONTROLLER_RESTRICTED | TINCT_CONTROLLER_UNRESTRICTED |
/// TINCT_SPLIT). If `fallback_pages` is not NULL it receives the number of
/// pages not taken from the requested bank. Free with `tinct_free`.
///
/// # Safety
/// `pool` must be a live handle; `fallback_pages` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tinct_alloc_bank(
    pool: *const SharedPool,
    controller: u32,
    bank: u32,
    size: usize,
    modes: u32,
    fallback_pages: *mut usize,
) -> *mut c_void {
    let mut steps = TinctBankSteps::default();
    // SAFETY: forwarded caller contract; `steps` is a local.
    let span = unsafe { tinct_alloc_bank_steps(pool, controller, bank, size, modes, &mut steps) };
    if !span.is_null() && !fallback_pages.is_null() {
        let fallback = steps.controller_restricted + steps.controller_unrestricted + steps.split;
        // SAFETY: non-null and writable by the caller's contract.
        unsafe { fallback_pages.write(fallback as usize) };
    }
    span
}

/// As [`tinct_alloc_bank`], reporting in `steps` (if not NULL) how many
/// pages each step of Algorithm 1 served and the furthest step used.
///
/// # Safety
/// `pool` must be a live handle; `steps` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tinct_alloc_bank_steps(
    pool: *const SharedPool,
    controller: u32,
    bank: u32,
    size: usize,
    modes: u32,
    steps: *mut TinctBankSteps,
) -> *mut c_void {
    // SAFETY: forwarded caller contract.
    let result = unsafe { pool_ref(pool) }
        .and_then(|pool| pool.alloc_bank_span(controller, bank, size, Modes(modes)));
    match result {
        Ok(span) => {
            if !steps.is_null() {
                let counted = span.steps;
                let report = TinctBankSteps {
                    exact: counted.exact as u64,
                    controller_restricted: counted.controller_restricted as u64,
                    controller_unrestricted: counted.controller_unrestricted as u64,
                    split: counted.split as u64,
                    furthest: match counted.furthest() {
                        Some(Step::Exact) | None => 0,
                        Some(Step::ControllerRestricted) => 1,
                        Some(Step::ControllerUnrestricted) => 2,
                        Some(Step::Split) => 3,
                    },
                };
                // SAFETY: non-null and writable by the caller's contract.
                unsafe { steps.write(report) };
            }
            span.ptr.as_ptr().cast()
        }
        Err(error) => fail(error, ptr::null_mut()),
    }
}

/// Resizes an allocation, keeping its colors; NULL `ptr` is an error
/// (the pool cannot know the colors).
///
/// # Safety
/// `pool` must be a live handle and `ptr` a live allocation from it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tinct_realloc(
    pool: *const SharedPool,
    ptr: *mut c_void,
    size: usize,
) -> *mut c_void {
    // SAFETY: forwarded caller contract.
    let result = unsafe { pool_ref(pool) }.and_then(|pool| {
        let ptr = NonNull::new(ptr.cast::<u8>()).ok_or_else(|| {
            MemError::Request("tinct_realloc(NULL): use tinct_alloc_colored".into())
        })?;
        pool.realloc(ptr, size)
    });
    match result {
        Ok(ptr) => ptr.as_ptr().cast(),
        Err(error) => fail(error, ptr::null_mut()),
    }
}

/// Frees an allocation (NULL is a no-op). Returns 0, or -1 on an invalid
/// pointer.
///
/// # Safety
/// `pool` must be a live handle; `ptr` must not be used afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tinct_free(pool: *const SharedPool, ptr: *mut c_void) -> c_int {
    let Some(ptr) = NonNull::new(ptr.cast::<u8>()) else {
        return 0;
    };
    // SAFETY: forwarded caller contract.
    match unsafe { pool_ref(pool) }.and_then(|pool| pool.free(ptr)) {
        Ok(()) => 0,
        Err(error) => fail(error, -1),
    }
}

/// Usable bytes of an allocation, 0 on an invalid pointer.
///
/// # Safety
/// `pool` must be a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tinct_usable_size(pool: *const SharedPool, ptr: *const c_void) -> usize {
    // SAFETY: forwarded caller contract.
    let result = unsafe { pool_ref(pool) }.and_then(|pool| {
        let ptr = NonNull::new(ptr.cast_mut().cast::<u8>())
            .ok_or_else(|| MemError::Request("NULL pointer".into()))?;
        pool.usable_size(ptr)
    });
    result.unwrap_or_else(|error| fail(error, 0))
}

/// Color of the page holding `ptr`, translated *now* through
/// /proc/self/pagemap under the pool's mapping; -1 on error.
///
/// # Safety
/// `pool` must be a live handle; `ptr` any address (it is not read).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tinct_page_color(pool: *const SharedPool, ptr: *const c_void) -> i64 {
    // SAFETY: forwarded caller contract.
    let result = unsafe { pool_ref(pool) }.and_then(|pool| {
        let physical = Pagemap::open_self()?
            .physical_address(ptr as usize)?
            .ok_or_else(|| MemError::Request(format!("page of {ptr:p} is not present")))?;
        Ok(i64::from(pool.mapping().classify(physical).color))
    });
    result.unwrap_or_else(|error| fail(error, -1))
}

/// Number of colors of the pool's mapping (0 for a NULL pool).
///
/// # Safety
/// `pool` must be NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tinct_pool_colors(pool: *const SharedPool) -> u32 {
    // SAFETY: forwarded caller contract.
    unsafe { pool_ref(pool) }.map_or(0, |pool| pool.mapping().colors())
}

/// Fills `out` with the pool's totals. Returns 0, or -1.
///
/// # Safety
/// `pool` must be a live handle and `out` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tinct_pool_stats(pool: *const SharedPool, out: *mut TinctStats) -> c_int {
    let totals = |pool: &SharedPool| {
        let stats = pool.stats();
        let mapping = pool.mapping();
        Ok(TinctStats {
            page_size: stats.page_size,
            total_pages: stats.total.free + stats.total.used,
            free_pages: stats.total.free,
            used_pages: stats.total.used,
            colors: mapping.colors(),
            banks: mapping.banks(),
            controllers: mapping.controllers(),
            uncolored: u32::from(stats.uncolored),
        })
    };
    // SAFETY: forwarded caller contract.
    unsafe { fill(pool, out, "stats", totals) }
}

/// Fills `out` with the free/used pages of one color. Returns 0, or -1.
///
/// # Safety
/// `pool` must be a live handle and `out` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tinct_pool_color_counts(
    pool: *const SharedPool,
    color: u32,
    out: *mut TinctCounts,
) -> c_int {
    let of_color = |pool: &SharedPool| {
        let stats = pool.stats();
        let Some(&Counts { free, used }) = stats.colors.get(color as usize) else {
            return Err(MemError::Request(format!(
                "color {color}: expected 0..{}",
                stats.colors.len()
            )));
        };
        Ok(TinctCounts { free, used })
    };
    // SAFETY: forwarded caller contract.
    unsafe { fill(pool, out, "counts", of_color) }
}

/// Fills `out` with the free/used pages of one (controller, bank).
/// Returns 0, or -1.
///
/// # Safety
/// `pool` must be a live handle and `out` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tinct_pool_bank_counts(
    pool: *const SharedPool,
    controller: u32,
    bank: u32,
    out: *mut TinctCounts,
) -> c_int {
    let of_bank = |pool: &SharedPool| {
        let stats = pool.stats();
        let Some(counts) = stats
            .banks
            .iter()
            .find(|b| b.controller == controller && b.bank == bank)
        else {
            let mapping = pool.mapping();
            return Err(MemError::Request(format!(
                "controller {controller} bank {bank}: expected controller 0..{} and bank 0..{}",
                mapping.controllers(),
                mapping.banks()
            )));
        };
        Ok(TinctCounts {
            free: counts.free,
            used: counts.used,
        })
    };
    // SAFETY: forwarded caller contract.
    unsafe { fill(pool, out, "counts", of_bank) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    fn last_error() -> String {
        // SAFETY: tinct_last_error returns a valid NUL-terminated string.
        unsafe { CStr::from_ptr(tinct_last_error()) }
            .to_string_lossy()
            .into_owned()
    }

    #[test]
    fn errors_set_a_message_and_return_the_failure_value() {
        // SAFETY: NULL pools and arrays are handled by the functions.
        unsafe {
            assert!(tinct_alloc_colored(ptr::null(), ptr::null(), 0, 10).is_null());
            assert!(last_error().contains("NULL pool"), "{}", last_error());
            assert_eq!(
                tinct_free(ptr::null(), ptr::null_mut()),
                0,
                "free(NULL) is a no-op"
            );
            assert_eq!(tinct_pool_colors(ptr::null()), 0);
            let mut stats = TinctStats::default();
            assert_eq!(tinct_pool_stats(ptr::null(), &mut stats), -1);
        }
        assert!(tinct_pool_create(1 << 20, 8).is_null());
        assert!(last_error().contains("flags 0x8"), "{}", last_error());
        let sub_page = [0x2040u64];
        // SAFETY: the mask array holds one value.
        let pool = unsafe {
            tinct_pool_create_with(
                1 << 20,
                0,
                ptr::null(),
                0,
                sub_page.as_ptr(),
                1,
                ptr::null(),
                0,
            )
        };
        assert!(pool.is_null());
        assert!(last_error().contains("bit 6"), "{}", last_error());
    }

    #[test]
    fn an_uncolored_pool_allocates_and_reports_through_the_abi() {
        let color_masks = [1u64 << 12, 1 << 13];
        // SAFETY: the mask array holds two values; every pointer below
        // comes from this pool and is used within its size.
        unsafe {
            let pool = tinct_pool_create_with(
                4 << 20,
                TINCT_POOL_UNCOLORED,
                color_masks.as_ptr(),
                2,
                ptr::null(),
                0,
                ptr::null(),
                0,
            );
            assert!(!pool.is_null(), "{}", last_error());
            assert_eq!(tinct_pool_colors(pool), 4);
            let colors = [1u32, 3];
            let ptr = tinct_alloc_colored_aligned(pool, colors.as_ptr(), 2, 300, 256);
            assert!(!ptr.is_null() && (ptr as usize).is_multiple_of(256));
            assert!(tinct_usable_size(pool, ptr) >= 300);
            let bad = [4u32];
            assert!(tinct_alloc_colored(pool, bad.as_ptr(), 1, 8).is_null());
            assert!(last_error().contains("color 4"), "{}", last_error());
            let mut counts = TinctCounts::default();
            assert_eq!(tinct_pool_color_counts(pool, 9, &mut counts), -1);
            assert!(last_error().contains("color 9"), "{}", last_error());
            assert_eq!(tinct_pool_color_counts(pool, 0, ptr::null_mut()), -1);
            assert!(
                last_error().contains("NULL counts pointer"),
                "{}",
                last_error()
            );
            assert_eq!(tinct_pool_bank_counts(pool, 0, 0, &mut counts), 0);
            assert_eq!(counts.used, 1, "one page carved for the size class");
            let mut local = 0u8;
            assert_eq!(tinct_free(pool, (&mut local as *mut u8).cast()), -1);
            assert_eq!(tinct_free(pool, ptr), 0);
            tinct_pool_destroy(pool);
        }
    }
}
