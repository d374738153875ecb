//! [`Heap`]: the malloc family on a [`ColoredArea`].
//!
//! Every byte comes from the area, whose pages are all of the requested
//! colours (and banks), in colour rotation (kim2013 Section III-C: round
//! robin, so any block takes each colour equally; freed pages first). The
//! area starts with one segment and grows on demand ([`ColoredArea::grow`]).
//!
//! * Sizes up to `MAX_SMALL` (2 KiB) are objects of a size class carved
//!   from single area pages, served from a per-thread cache
//!   ([`crate::thread_cache`]) that refills from central lists a batch at
//!   a time.
//! * Larger sizes take a run of whole area pages ([`PageRuns`]: best fit
//!   among freed runs, else never-used pages). A block is contiguous in
//!   the area already: allocating, freeing or growing it in place moves no
//!   page and makes no system call.
//!
//! Three locks, never held across a system call except `grow`: `central`
//! (the runs and the central object lists), `grow` (the area while it
//! grows: other threads keep allocating from what is there), and the
//! bootstrap arena's own. When the budget is spent, strict mode fails the
//! request (ENOMEM); otherwise it is served from the uncoloured bootstrap
//! arena and counted as a fallback. A request the area could not hold even
//! at its largest falls back at once, without growing the area for it.
//!
//! *Misuse* ([`crate::misuse`]). `free` and `realloc` check the pointer
//! before they touch any list, in O(1) and without a lock or an
//! allocation, and abort the process (as glibc does) on a pointer that is
//! not a live block's start:
//!
//! * an object of a size class must sit at a multiple of the class size
//!   inside its page; a free object carries a *free tag* in its second
//!   word (its address mixed with a per-process random key, written when
//!   it is freed or carved, cleared when it is handed out), so freeing it
//!   again is found wherever it waits — this thread's cache, another's,
//!   the central lists — as glibc's tcache key finds it in its bins;
//! * a run must be freed by its first page's address; a page of a freed
//!   run is marked freed in [`PageKinds`] (a double free), one never
//!   handed out is not (a wild pointer);
//! * anything outside the area must be a live block of the bootstrap
//!   arena ([`Bootstrap::check`](crate::bootstrap::Bootstrap::check)):
//!   the allocations made while the heap was being built, fallbacks and
//!   the shim's own memory keep working; the stack, static data and other
//!   mappings do not.
//!
//! *Zeroed memory* ([`Heap::alloc_zeroed`]). Area pages are populated when
//! the area grows — their frames must be known to choose their colours —
//! so a coloured block is resident whether or not the program touches it,
//! and `calloc` cannot be lazy there. Pages never handed out before are
//! zero but for the mark byte every page enters with
//! (`tinct_mem::colored_area::PAGE_MARK`): `calloc` clears that one byte per
//! page instead of the whole block. Recycled blocks are cleared whole.
//! Fallbacks are lazy as with glibc: fresh bootstrap memory is not written.

use std::cell::UnsafeCell;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicU8, AtomicU64, AtomicUsize, Ordering};

use tinct_mem::colored_area::{AreaSpec, ColoredArea};
use tinct_mem::mapping::{FunctionSpec, LayoutSpec};
use tinct_mem::{
    Locking, MIN_ALIGN, MemError, SIZE_CLASSES, ShimConfig as Config, Step, size_class,
};

use crate::bootstrap::BOOTSTRAP;
use crate::formatting::list_or_any;
use crate::lock::RawLock;
use crate::misuse::{self, Call, Misuse};
use crate::page_kinds::{Kind, MAPPED, MAX_RUN_PAGES, PROTECTED, PageKinds};
use crate::page_runs::PageRuns;
use crate::thread_cache::{self, CLASSES, DEAD, LocalCounters, ObjectList, ThreadCache, batch};

/// Event counters, reported by `TINCT_STATS=1`.
#[derive(Debug, Default)]
pub struct Counters {
    /// Blocks of whole pages handed out.
    pub runs: AtomicU64,
    /// Blocks of whole pages freed.
    pub run_frees: AtomicU64,
    /// Allocations served uncoloured because the budget was spent.
    pub fallbacks: AtomicU64,
    /// Bytes requested by those fallbacks.
    pub fallback_bytes: AtomicU64,
    /// Allocations refused (strict mode, or impossible sizes).
    pub failures: AtomicU64,
    /// Calls made from inside the allocator, served by the bootstrap arena.
    pub internal: AtomicU64,
    /// `fork` calls seen.
    pub forks: AtomicU64,
    /// Anonymous mappings served from the area (`TINCT_MMAP=1`).
    pub mapped: AtomicU64,
    /// Anonymous mappings passed to the kernel uncoloured (budget spent,
    /// or a kind the shim does not colour).
    pub mapped_uncolored: AtomicU64,
    /// Area pages the program gave to the kernel (`mremap` with a fixed
    /// destination, `mmap` over them): never reused.
    pub lost_pages: AtomicU64,
    /// Requests served, by the furthest Algorithm 1 step among their
    /// pages (with `TINCT_STATS`): exact, restricted, unrestricted, split.
    pub requests_by_step: [AtomicU64; 4],
    /// Usable bytes handed out now (with `TINCT_STATS`).
    pub live_bytes: AtomicUsize,
    /// Largest `live_bytes` seen.
    pub peak_bytes: AtomicUsize,
}

/// What only the `central` lock guards.
#[derive(Debug)]
struct Central {
    runs: PageRuns,
    classes: [ObjectList; CLASSES],
    /// Every live thread cache (linked through `ThreadCache::next`).
    caches: *mut ThreadCache,
    /// Counts of threads that ended.
    ended: LocalCounters,
}

/// The coloured heap of the process.
#[derive(Debug)]
pub struct Heap {
    config: Config,
    colors: Vec<u32>,
    area: UnsafeCell<ColoredArea>,
    grow: RawLock,
    central: RawLock,
    state: UnsafeCell<Central>,
    kinds: PageKinds,
    /// Algorithm 1 step of each filled area page (0 exact .. 3 split).
    steps: Box<[AtomicU8]>,
    /// Area pages filled so far (published after each growth).
    filled: AtomicUsize,
    base: usize,
    page_size: usize,
    page_shift: u32,
    thread_key: libc::pthread_key_t,
    /// The key of the free tags of small objects (see the module
    /// documentation): random, with its top bit set so no tag is 0.
    tag_key: usize,
    /// The last growth error, for the summary.
    grow_error: UnsafeCell<Option<String>>,
    /// The counters.
    pub counters: Counters,
}

// SAFETY: `area` and `grow_error` are only touched with `grow` held (or
// read-only fields of the area that never change), `state` only with
// `central` held; everything else is atomic or immutable.
unsafe impl Sync for Heap {}
// SAFETY: the raw pointers in `state` are thread caches in the bootstrap
// arena, reachable from any thread under the central lock.
unsafe impl Send for Heap {}

/// The destructor of the thread-cache key: called, as a thread ends, with
/// the thread's cache (a `pthread_key_create` destructor).
pub type ThreadEnded = extern "C" fn(*mut libc::c_void);

/// Why the heap could not be built.
#[derive(Debug)]
pub enum BuildError {
    /// Frame numbers are unreadable and uncolored running was not allowed.
    FramesUnreadable(String),
    /// Anything else (bad colors, no memory, ...).
    Other(String),
}

/// A per-process random key for the free tags: 8 bytes of `getrandom`
/// (one system call when the heap is built, no allocation; not the
/// auxiliary vector's `AT_RANDOM`, whose bytes are glibc's stack canary
/// and pointer guard, which a leaked tag must not reveal), mixed with the
/// clock and addresses that ASLR moves should it fail; the top bit set.
fn random_key() -> usize {
    let mut key = 0u64;
    // SAFETY: getrandom writes at most 8 bytes into `key`.
    let got = unsafe {
        libc::getrandom(
            (&mut key as *mut u64).cast(),
            size_of::<u64>(),
            libc::GRND_NONBLOCK,
        )
    };
    if got != size_of::<u64>() as isize {
        let mut now = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes one timespec.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
        let here = &now as *const libc::timespec as u64;
        key ^= (now.tv_sec as u64).rotate_left(32)
            ^ now.tv_nsec as u64
            ^ here.rotate_left(29)
            ^ (random_key as *const () as u64).rotate_left(43);
    }
    (key as usize) | (1 << (usize::BITS - 1))
}

/// What a pointer given to `free` or `realloc` is (found by
/// [`Heap::block`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Block {
    /// An object of size class `class`.
    Small { class: usize },
    /// A run of `pages` area pages from `page`, with `flags`.
    Run {
        page: usize,
        pages: usize,
        flags: u32,
    },
    /// A live block of the bootstrap arena.
    Bootstrap,
}

/// `ceil(2^32 / size)` of every size class: `(offset * this) >> 32` is
/// `offset / size` for every offset below 2^21 (the rounding error of the
/// reciprocal, under `size`, times the offset stays below 2^32), so
/// `free` finds an object's index in its page without a division.
const RECIPROCALS: [u64; CLASSES] = {
    let mut table = [0; CLASSES];
    let mut class = 0;
    while class < CLASSES {
        table[class] = (1u64 << 32).div_ceil(SIZE_CLASSES[class] as u64);
        class += 1;
    }
    table
};

/// Pages up to this size keep every object offset below 2^21, where
/// [`RECIPROCALS`] divide exactly (the shim's pages are 4 KiB to 64 KiB).
const MAX_RECIPROCAL_PAGE: usize = 1 << 21;

fn step_index(step: Step) -> u8 {
    match step {
        Step::Exact => 0,
        Step::ControllerRestricted => 1,
        Step::ControllerUnrestricted => 2,
        Step::Split => 3,
    }
}

impl Heap {
    /// Builds the heap for `config`: the mapping, an empty area reserving
    /// address space for the budget, and its first segment. `thread_ended`
    /// is called with a thread's cache when the thread ends (the process
    /// heap's [`crate::process::thread_ended`] gives it back).
    pub fn new(config: Config, thread_ended: ThreadEnded) -> Result<Self, BuildError> {
        let functions = |masks: &[u64]| {
            (!masks.is_empty()).then(|| masks.iter().copied().map(FunctionSpec).collect())
        };
        // The shim reads the bits it is given and nothing else: the command
        // that starts it (`tinct exec`, a bench) resolved them once, from
        // its flag, the environment, the machine file or the machine's rule,
        // so every process of the program colours alike. Banks alone (no
        // colours asked for) need none: one colour.
        let color_bits = match &config.color_bits {
            None if config.colors.is_empty() => Vec::new(),
            None => {
                return Err(BuildError::Other(format!(
                    "{}: expected the page-colour bits with {} (`tinct exec` sets them; by \
                     hand, the bits `tinct doctor` prints as \"colour bits in force\", e.g. \
                     {}=12-15), found none",
                    tinct_mem::shim_config::COLOR_BITS,
                    tinct_mem::shim_config::COLORS,
                    tinct_mem::shim_config::COLOR_BITS,
                )));
            }
            Some(bits) => bits.clone(),
        };
        let spec = LayoutSpec {
            color_bits: Some(color_bits),
            bank_functions: functions(&config.bank_functions),
            controller_functions: functions(&config.controller_functions),
            ..LayoutSpec::default()
        };
        let mapping = tinct_mem::machine_mapping(&spec).map_err(|e| {
            BuildError::Other(format!("cannot work out the page colors and banks: {e}"))
        })?;
        let limit = mapping.colors();
        let colors: Vec<u32> = if config.colors.is_empty() {
            (0..limit).collect()
        } else {
            config.colors.clone()
        };
        if let Some(bad) = colors.iter().find(|&&c| c >= limit) {
            return Err(BuildError::Other(format!(
                "TINCT_COLORS: color {bad} does not exist: expected colors 0-{} (this machine's \
                 last-level cache has {limit} page colors)",
                limit - 1
            )));
        }
        let area_spec = AreaSpec {
            mapping,
            colors: colors.clone(),
            banks: config.banks.clone(),
            controllers: config.controllers.clone(),
            modes: config.bank_mode,
            budget_bytes: config.pool_bytes,
            allow_uncolored: config.allow_uncolored,
            // Locked when the kernel allows; the stats report says when not.
            lock: Locking::IfAllowed,
        };
        let mut area = ColoredArea::new(area_spec).map_err(|e| BuildError::Other(e.to_string()))?;
        let max_pages = area.max_pages().min(MAX_RUN_PAGES);
        let first = area.grow(1).map_err(|e| match e {
            MemError::FramesUnreadable { .. } => BuildError::FramesUnreadable(e.to_string()),
            other => BuildError::Other(format!("cannot build the coloured heap: {other}")),
        })?;
        if first == 0 && config.strict {
            return Err(BuildError::Other(format!(
                "TINCT_STRICT=1: no page of the {} MiB pool lies in both the requested colors \
                 ({}) and banks (TINCT_BANKS={}, TINCT_CONTROLLERS={}): expected a request the \
                 pool can serve (check that the bank functions do not read the same address \
                 bits as the colors, or raise TINCT_POOL)",
                config.pool_bytes >> 20,
                tinct_sys::format_cpu_list(&colors),
                list_or_any(config.banks.as_deref()),
                list_or_any(config.controllers.as_deref()),
            )));
        }
        if first == 0 {
            crate::stderr::write_stderr(
                "tinct-preload: WARNING: no page of the pool lies in both the requested colors \
                 and banks: every allocation falls back to uncolored memory (counted; \
                 TINCT_STRICT=1 makes this an error)\n",
            );
        }
        let mut key: libc::pthread_key_t = 0;
        // SAFETY: `key` is writable; the destructor is a plain function that
        // lives as long as the process (the shim is never unloaded).
        if unsafe { libc::pthread_key_create(&mut key, Some(thread_ended)) } != 0 {
            return Err(BuildError::Other(
                "pthread_key_create failed: no thread caches".into(),
            ));
        }
        let heap = Self {
            base: area.base(),
            page_size: area.page_size(),
            page_shift: area.page_size().trailing_zeros(),
            kinds: PageKinds::new(max_pages),
            steps: crate::page_kinds::zeroed_atomics::<AtomicU8>(max_pages),
            filled: AtomicUsize::new(0),
            grow: RawLock::new(),
            central: RawLock::new(),
            state: UnsafeCell::new(Central {
                runs: PageRuns::at(area.base() >> area.page_size().trailing_zeros()),
                classes: [ObjectList::default(); CLASSES],
                caches: null_mut(),
                ended: LocalCounters::default(),
            }),
            thread_key: key,
            tag_key: random_key(),
            grow_error: UnsafeCell::new(None),
            counters: Counters::default(),
            area: UnsafeCell::new(area),
            colors,
            config,
        };
        heap.publish_growth(|_| ());
        Ok(heap)
    }

    /// The settings.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The requested colors, sorted.
    pub fn colors(&self) -> &[u32] {
        &self.colors
    }

    /// Page size in bytes.
    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// Area pages filled so far.
    pub fn filled_pages(&self) -> usize {
        self.filled.load(Ordering::Acquire)
    }

    /// Address of area page `index`.
    pub fn page_address(&self, index: usize) -> usize {
        self.base + (index << self.page_shift)
    }

    /// The kinds of the area's pages.
    pub fn kinds(&self) -> &PageKinds {
        &self.kinds
    }

    /// The area page holding `address`, if it is a filled page.
    #[inline]
    pub fn area_page(&self, address: usize) -> Option<usize> {
        let offset = address.wrapping_sub(self.base);
        let index = offset >> self.page_shift;
        (address >= self.base && index < self.filled_pages()).then_some(index)
    }

    /// True if the calling thread holds one of the heap's locks (it was
    /// interrupted inside the allocator: a report must not wait for them).
    pub fn held_by_caller(&self) -> bool {
        self.grow.held_by_caller() || self.central.held_by_caller()
    }

    /// Runs `f` with the area, holding the growth lock (for reports).
    pub fn with_area<R>(&self, f: impl FnOnce(&ColoredArea) -> R) -> R {
        self.grow.lock();
        // SAFETY: the growth lock is held: nothing mutates the area.
        let result = f(unsafe { &*self.area.get() });
        self.grow.unlock();
        result
    }

    /// Runs `f` with the area mutable, holding the growth lock.
    pub fn with_area_mut<R>(&self, f: impl FnOnce(&mut ColoredArea) -> R) -> R {
        self.grow.lock();
        // SAFETY: the growth lock is held: no other reference to the area.
        let result = f(unsafe { &mut *self.area.get() });
        self.grow.unlock();
        result
    }

    /// The last growth error, if any (with the growth lock).
    pub fn grow_error(&self) -> Option<String> {
        self.grow.lock();
        // SAFETY: the growth lock is held.
        let error = unsafe { (*self.grow_error.get()).clone() };
        self.grow.unlock();
        error
    }

    /// Locks (for `fork`): growth, then central.
    pub fn lock_all(&self) {
        self.grow.lock();
        self.central.lock();
    }

    /// Unlocks after [`Heap::lock_all`] in the parent.
    pub fn unlock_all(&self) {
        self.central.unlock();
        self.grow.unlock();
    }

    /// Resets the locks in the child of `fork` (its only thread held them).
    pub fn reset_locks_in_child(&self) {
        self.central.reset_in_child();
        self.grow.reset_in_child();
    }

    /// Runs `f` on the central state (lock held).
    fn central<R>(&self, f: impl FnOnce(&mut Central) -> R) -> R {
        self.central.lock();
        // SAFETY: the central lock is held; no other reference lives.
        let result = f(unsafe { &mut *self.state.get() });
        self.central.unlock();
        result
    }

    /// Makes the area's new pages allocatable (growth lock held by the
    /// caller, or the heap not shared yet), then runs `then` on the central
    /// state in the same critical section (so the grower takes its run
    /// before any other thread can take the new pages).
    ///
    /// `filled` is published *before* the runs learn of the new pages: a
    /// thread may take them as soon as the central lock is released (its
    /// first attempt in [`Heap::take_run`] holds no growth lock), and
    /// `free`, `realloc` and `malloc_usable_size` find a block's page only
    /// below `filled` ([`Heap::area_page`]). Published after, a block
    /// handed out from the new pages in between looked like no block of
    /// the heap: `malloc_usable_size` said 0 and `free` aborted ("never
    /// returned by malloc"). The central lock orders the two: whoever
    /// takes a new page (under that lock) sees the new `filled`.
    fn publish_growth<R>(&self, then: impl FnOnce(&mut Central) -> R) -> R {
        // SAFETY: the caller holds the growth lock (or owns the heap).
        let area = unsafe { &*self.area.get() };
        let filled = area.pages().min(self.kinds.len_pages());
        for index in self.filled_pages()..filled {
            self.steps[index].store(step_index(area.step(index)), Ordering::Relaxed);
        }
        self.filled.store(filled, Ordering::Release);
        self.central(|central| {
            central.runs.grow_to(filled);
            then(central)
        })
    }

    /// `pages` consecutive area pages whose address is aligned to `align`
    /// pages, growing the area if needed: the first page, and whether the
    /// run was never handed out before (fresh from the frontier). `None`
    /// when the budget and reserve are spent, or at once when the area
    /// could not hold the run even at its largest.
    fn take_run(&self, pages: usize, align: usize) -> Option<(usize, bool)> {
        let take = |c: &mut Central| {
            let frontier = c.runs.frontier();
            let start = c.runs.alloc_aligned(pages, align)?;
            // (`filled` covers every page the runs hand out: see
            // `publish_growth`.)
            debug_assert!(
                start + pages <= self.filled_pages(),
                "pages {start}..{} handed out beyond the published area ({} pages)",
                start + pages,
                self.filled_pages()
            );
            Some((start, start >= frontier))
        };
        if let Some(taken) = self.central(take) {
            return Some(taken);
        }
        let hopeless = self
            .central(|c| c.runs.least_end_for(pages, align))
            .is_none_or(|end| end > self.kinds.len_pages());
        if self.grow.held_by_caller() || pages > MAX_RUN_PAGES || hopeless {
            return None;
        }
        self.grow.lock();
        let mut taken = self.central(take);
        if taken.is_none() {
            // SAFETY: the growth lock is held: this thread alone mutates the area.
            let area = unsafe { &mut *self.area.get() };
            if let Err(error) = area.grow(pages.saturating_add(align - 1)) {
                // SAFETY: the growth lock is held.
                unsafe { *self.grow_error.get() = Some(error.to_string()) };
            }
            taken = self.publish_growth(take);
        }
        self.grow.unlock();
        taken
    }

    /// `size` bytes aligned to `align` (a power of two), or null.
    pub fn alloc(&self, size: usize, align: usize) -> *mut u8 {
        self.alloc_with(size, align, false)
    }

    /// `size` zeroed bytes (C `calloc`), or null. Only what can hold old
    /// data is written: a small object whole, a recycled run whole, a run
    /// never handed out one byte per page (the mark it entered the area
    /// with), a fallback nothing unless the bootstrap arena reuses a block
    /// (see [`crate::bootstrap::Bootstrap::alloc_zeroed`]).
    pub fn alloc_zeroed(&self, size: usize) -> *mut u8 {
        self.alloc_with(size, MIN_ALIGN, true)
    }

    fn alloc_with(&self, size: usize, align: usize, zeroed: bool) -> *mut u8 {
        if self.central.held_by_caller() || self.grow.held_by_caller() {
            self.counters.internal.fetch_add(1, Ordering::Relaxed);
            return if zeroed {
                BOOTSTRAP.alloc_zeroed(size, align)
            } else {
                BOOTSTRAP.alloc(size, align)
            };
        }
        let ptr = match size_class(size, align) {
            Some(class) => {
                let object = self.alloc_small(class);
                if zeroed && !object.is_null() {
                    // SAFETY: the object has SIZE_CLASSES[class] >= size bytes.
                    unsafe { std::ptr::write_bytes(object, 0, size) };
                }
                object
            }
            None => match self.alloc_run(size, align, 0) {
                Some((run, fresh)) => {
                    if zeroed {
                        // SAFETY: a run of at least `size` bytes, just taken.
                        unsafe { self.clear_run(run, size, fresh) };
                    }
                    run
                }
                None => null_mut(),
            },
        };
        if ptr.is_null() {
            return self.fall_back(size, align, zeroed);
        }
        if self.config.stats {
            self.note_live(ptr as usize, true);
        }
        ptr
    }

    /// Zeroes the first `size` bytes of the run at `run`: if `fresh` (never
    /// handed out since its pages entered the area, where they were zero
    /// but for their first byte, `tinct_mem::colored_area::PAGE_MARK`),
    /// only the first byte of each page; else all of them.
    ///
    /// # Safety
    /// `run` must be the start of a run of at least `size` bytes that the
    /// caller owns.
    unsafe fn clear_run(&self, run: *mut u8, size: usize, fresh: bool) {
        if !fresh {
            // SAFETY: the caller's run, at least `size` bytes.
            unsafe { std::ptr::write_bytes(run, 0, size) };
            return;
        }
        for offset in (0..size).step_by(self.page_size) {
            // SAFETY: the first byte of a page of the caller's run.
            unsafe { run.add(offset).write(0) };
        }
        debug_assert!(
            (0..size)
                .step_by(self.page_size)
                // SAFETY: the last byte of a page (or of `size`) of the run.
                .all(|o| unsafe { run.add((o + self.page_size).min(size) - 1).read() } == 0),
            "a page never handed out holds data past its mark byte"
        );
    }

    /// An object of size class `class` from the calling thread's cache,
    /// its free tag cleared.
    fn alloc_small(&self, class: usize) -> *mut u8 {
        let object = self.pop_object(class);
        if object != 0 {
            // SAFETY: a free object (at least 16 bytes) now ours; its second
            // word held the free tag.
            unsafe { (object as *mut usize).add(1).write(0) };
        }
        object as *mut u8
    }

    /// A free object of size class `class` (0 if none): from the calling
    /// thread's cache, refilled a batch at a time.
    fn pop_object(&self, class: usize) -> usize {
        let mut cache = thread_cache::current();
        if cache.is_null() {
            cache = self.create_cache();
        }
        if cache.is_null() || cache == DEAD {
            // No cache: through the central list, one object at a time.
            let mut one = ObjectList::default();
            if !self.refill(&mut one, class) {
                return 0;
            }
            let object = one.pop().expect("refilled");
            self.central(|c| one.move_to(&mut c.classes[class], u32::MAX));
            return object;
        }
        // SAFETY: the cache belongs to this thread and lives until its
        // destructor, which runs on this thread after its last use here.
        let cache = unsafe { &mut *cache };
        let list = &mut cache.lists[class];
        if list.head == 0 && !self.refill(list, class) {
            return 0;
        }
        cache.counters.small += 1;
        list.pop().unwrap_or(0)
    }

    /// The free tag of the small object at `object` (never 0).
    #[inline]
    fn free_tag(&self, object: usize) -> usize {
        object ^ self.tag_key
    }

    /// Fills `list` with objects of `class`: a batch from the central
    /// list, else a fresh page carved into objects (each tagged free).
    /// False if no page is left.
    fn refill(&self, list: &mut ObjectList, class: usize) -> bool {
        self.central(|c| c.classes[class].move_to(list, batch(class)));
        if list.count > 0 {
            return true;
        }
        let Some((page, _)) = self.take_run(1, 1) else {
            return false;
        };
        self.kinds.set_small(page, class);
        let size = SIZE_CLASSES[class];
        let start = self.page_address(page);
        let objects = self.page_size / size;
        // Push in reverse, so objects are handed out in address order.
        for index in (0..objects).rev() {
            let object = start + index * size;
            // SAFETY: the page is ours alone (just taken); each object
            // slot is inside it, 16-aligned, at least 16 bytes.
            unsafe {
                list.push(object);
                (object as *mut usize).add(1).write(self.free_tag(object));
            }
        }
        self.count_request(page, 1);
        true
    }

    /// A run of whole pages for `size` bytes aligned to `align`, marked
    /// with `flags` ([`MAPPED`] for the shim's `mmap`).
    pub fn alloc_pages(&self, size: usize, align: usize, flags: u32) -> *mut u8 {
        self.alloc_run(size, align, flags)
            .map_or(null_mut(), |(run, _)| run)
    }

    /// As [`Heap::alloc_pages`], the first `size` bytes zeroed (written
    /// only where they can hold old data, as [`Heap::alloc_zeroed`]).
    pub fn alloc_pages_zeroed(&self, size: usize, align: usize, flags: u32) -> *mut u8 {
        match self.alloc_run(size, align, flags) {
            Some((run, fresh)) => {
                // SAFETY: a run of at least `size` bytes, just taken.
                unsafe { self.clear_run(run, size, fresh) };
                run
            }
            None => null_mut(),
        }
    }

    /// A run for `size` bytes aligned to `align`, and whether its pages
    /// were never handed out before.
    fn alloc_run(&self, size: usize, align: usize, flags: u32) -> Option<(*mut u8, bool)> {
        let pages = size.max(1).checked_next_multiple_of(self.page_size)? >> self.page_shift;
        let align_pages = (align >> self.page_shift).max(1);
        let (start, fresh) = self.take_run(pages, align_pages)?;
        self.kinds.set_run(start, pages, flags);
        self.counters.runs.fetch_add(1, Ordering::Relaxed);
        self.count_request(start, pages);
        Some((self.page_address(start) as *mut u8, fresh))
    }

    /// With `TINCT_STATS` and bank modes: counts a request under the
    /// furthest Algorithm 1 step among its pages.
    fn count_request(&self, start: usize, pages: usize) {
        if !self.config.stats {
            return;
        }
        let furthest = (start..start + pages)
            .map(|p| self.steps[p].load(Ordering::Relaxed))
            .max()
            .unwrap_or(0);
        self.counters.requests_by_step[furthest as usize].fetch_add(1, Ordering::Relaxed);
    }

    fn fall_back(&self, size: usize, align: usize, zeroed: bool) -> *mut u8 {
        if self.config.strict {
            self.counters.failures.fetch_add(1, Ordering::Relaxed);
            return null_mut();
        }
        let ptr = if zeroed {
            BOOTSTRAP.alloc_zeroed(size, align)
        } else {
            BOOTSTRAP.alloc(size, align)
        };
        if ptr.is_null() {
            self.counters.failures.fetch_add(1, Ordering::Relaxed);
        } else {
            self.counters.fallbacks.fetch_add(1, Ordering::Relaxed);
            self.counters
                .fallback_bytes
                .fetch_add(size as u64, Ordering::Relaxed);
        }
        ptr
    }

    /// Adds (or removes) the usable size at `ptr` to the live bytes.
    fn note_live(&self, ptr: usize, allocated: bool) {
        let usable = self.usable_size(ptr as *mut u8);
        if allocated {
            let live = self
                .counters
                .live_bytes
                .fetch_add(usable, Ordering::Relaxed)
                + usable;
            self.counters.peak_bytes.fetch_max(live, Ordering::Relaxed);
        } else {
            self.counters
                .live_bytes
                .fetch_sub(usable, Ordering::Relaxed);
        }
    }

    /// What `ptr` (not null) is, or the process aborts with the problem
    /// named for `call` ([`misuse::abort`]).
    #[inline(always)]
    fn block(&self, ptr: *mut u8, call: Call) -> Block {
        self.check(ptr)
            .unwrap_or_else(|problem| misuse::abort(call, problem, ptr))
    }

    /// What `ptr` (not null) is, or what is wrong with it: O(1), no lock,
    /// no allocation; see the module documentation for what is checked.
    #[inline(always)]
    fn check(&self, ptr: *mut u8) -> Result<Block, Misuse> {
        let address = ptr as usize;
        let Some(page) = self.area_page(address) else {
            return BOOTSTRAP.check(ptr).map(|_| Block::Bootstrap);
        };
        let offset = address - self.page_address(page);
        let problem = match self.kinds.get(page) {
            Kind::Small { class } => {
                let size = SIZE_CLASSES[class];
                let index = if self.page_size <= MAX_RECIPROCAL_PAGE {
                    ((offset as u64 * RECIPROCALS[class]) >> 32) as usize
                } else {
                    offset / size
                };
                // (`offset + size <= page size`: the object lies in the page.)
                if index * size != offset || offset + size > self.page_size {
                    Misuse::Interior
                } else {
                    // SAFETY: an object slot of a page of objects (checked
                    // just above): at least 16 bytes, readable.
                    let tag = unsafe { (ptr as *const usize).add(1).read() };
                    if tag != self.free_tag(address) {
                        return Ok(Block::Small { class });
                    }
                    Misuse::DoubleFree
                }
            }
            Kind::RunStart { pages, flags } if flags & MAPPED == 0 => {
                if offset == 0 {
                    return Ok(Block::Run { page, pages, flags });
                }
                Misuse::Interior
            }
            Kind::RunBody { flags, .. } if flags & MAPPED == 0 => Misuse::Interior,
            Kind::Free if offset == 0 && self.kinds.was_freed(page) => Misuse::DoubleFree,
            // Never handed out, the program's own mapping (TINCT_MMAP), or
            // given to the kernel.
            Kind::Free | Kind::RunStart { .. } | Kind::RunBody { .. } | Kind::Lost => {
                Misuse::NotFromMalloc
            }
        };
        Err(problem)
    }

    /// Frees `ptr` (null is ignored). A pointer that is not a live block
    /// of this heap or of the bootstrap arena aborts the process, as
    /// glibc's `free` does (see the module documentation).
    ///
    /// # Safety
    /// `ptr` must be null or a pointer from this heap (one that is not is
    /// found and aborts, unless the program wrote a free tag or an arena
    /// header's exact bytes where it points).
    pub unsafe fn free(&self, ptr: *mut u8) {
        if ptr.is_null() {
            return;
        }
        let block = self.block(ptr, Call::Free);
        // SAFETY: `block` is what `ptr` is, checked.
        unsafe { self.free_block(ptr, block) };
    }

    /// Frees the checked block `block` at `ptr`.
    ///
    /// # Safety
    /// `block` must be what [`Heap::block`] found at `ptr`, still live.
    #[inline(always)]
    unsafe fn free_block(&self, ptr: *mut u8, block: Block) {
        if self.config.stats && block != Block::Bootstrap {
            self.note_live(ptr as usize, false);
        }
        match block {
            // SAFETY: a live object of `class` (checked).
            Block::Small { class } => unsafe { self.free_small(ptr as usize, class) },
            Block::Run { page, pages, flags } => self.free_run(page, pages, flags),
            // SAFETY: a live block of the arena (checked).
            Block::Bootstrap => unsafe { BOOTSTRAP.free(ptr) },
        }
    }

    /// Returns an object to the calling thread's cache (or the central
    /// list), tagged free, giving a batch back when the cache holds too
    /// many.
    ///
    /// # Safety
    /// `object` must be a live object of `class` from this heap.
    unsafe fn free_small(&self, object: usize, class: usize) {
        // SAFETY: the object is ours again (caller's contract); its second
        // word takes the free tag (its first, the list link).
        unsafe { (object as *mut usize).add(1).write(self.free_tag(object)) };
        let cache = thread_cache::current();
        if cache.is_null() || cache == DEAD {
            // SAFETY: the object is free now (caller's contract).
            self.central(|c| unsafe { c.classes[class].push(object) });
            return;
        }
        // SAFETY: this thread's own cache, see `alloc_small`.
        let cache = unsafe { &mut *cache };
        let list = &mut cache.lists[class];
        // SAFETY: forwarded caller contract.
        unsafe { list.push(object) };
        cache.counters.small_frees += 1;
        if list.count > 2 * batch(class) {
            self.central(|c| list.move_to(&mut c.classes[class], batch(class)));
        }
    }

    /// Returns a run, restoring its protection if the program changed it.
    fn free_run(&self, start: usize, pages: usize, flags: u32) {
        if flags & PROTECTED != 0 {
            self.restore_protection(start, pages);
        }
        self.kinds.set_free(start, pages);
        self.counters.run_frees.fetch_add(1, Ordering::Relaxed);
        self.central(|c| c.runs.free(start, pages));
    }

    /// Read-write again for pages the program had `mprotect`ed.
    fn restore_protection(&self, start: usize, pages: usize) {
        // SAFETY: area pages, ours again; read-write is how the area was made.
        let _ = unsafe {
            rustix::mm::mprotect(
                self.page_address(start) as *mut std::ffi::c_void,
                pages << self.page_shift,
                rustix::mm::MprotectFlags::READ | rustix::mm::MprotectFlags::WRITE,
            )
        };
    }

    /// Bytes usable at `ptr` (0 for pointers not from this heap).
    pub fn usable_size(&self, ptr: *mut u8) -> usize {
        let address = ptr as usize;
        match self.area_page(address) {
            Some(page) => match self.kinds.get(page) {
                Kind::Small { class } => SIZE_CLASSES[class],
                Kind::RunStart { pages, .. } => pages << self.page_shift,
                _ => 0,
            },
            None if BOOTSTRAP.contains(ptr) => BOOTSTRAP.usable_size(ptr),
            None => 0,
        }
    }

    /// C `realloc`: same pointer when the block still fits (runs shrink and
    /// grow in place where the next pages are free; the last run handed
    /// out grows in place by growing the area), else allocate, copy and
    /// free. `realloc(p, 0)` frees `p` and returns null, as glibc. A
    /// pointer that is not a live block aborts the process, as in
    /// [`Heap::free`].
    ///
    /// # Safety
    /// `ptr` must be null or a pointer from this heap (see [`Heap::free`]).
    pub unsafe fn realloc(&self, ptr: *mut u8, size: usize) -> *mut u8 {
        if ptr.is_null() {
            return self.alloc(size, MIN_ALIGN);
        }
        let block = self.block(ptr, Call::Realloc);
        if size == 0 {
            // SAFETY: checked just above.
            unsafe { self.free_block(ptr, block) };
            return null_mut();
        }
        let old = match block {
            Block::Small { class } => SIZE_CLASSES[class],
            Block::Run { pages, .. } => pages << self.page_shift,
            Block::Bootstrap => BOOTSTRAP.usable_size(ptr),
        };
        match block {
            // A run stays a run: shrink or grow in place where possible.
            Block::Run { page, pages, flags } if size_class(size, MIN_ALIGN).is_none() => {
                if let Some(resized) = self.resize_run(page, pages, flags, size) {
                    return resized;
                }
            }
            // A run shrinking to a small size moves, to give its pages back.
            Block::Run { .. } => {}
            _ if size <= old => return ptr,
            _ => {}
        }
        let fresh = self.alloc(size, MIN_ALIGN);
        if !fresh.is_null() {
            // SAFETY: both blocks are live and distinct; the copy stays
            // within both; `block` is still what `ptr` is.
            unsafe {
                std::ptr::copy_nonoverlapping(ptr, fresh, old.min(size));
                self.free_block(ptr, block);
            }
        }
        fresh
    }

    /// Shrinks the run at `start` in place, or grows it into the free
    /// pages right after it ([`Heap::take_following`]); `None` if it
    /// cannot grow in place.
    fn resize_run(&self, start: usize, pages: usize, flags: u32, size: usize) -> Option<*mut u8> {
        let wanted = size.checked_next_multiple_of(self.page_size)? >> self.page_shift;
        if self.config.stats {
            self.note_live(self.page_address(start), false);
        }
        let resized = if wanted <= pages {
            if wanted < pages {
                if flags & PROTECTED != 0 {
                    self.restore_protection(start + wanted, pages - wanted);
                }
                self.kinds.set_run(start, wanted, flags);
                self.kinds.set_free(start + wanted, pages - wanted);
                self.central(|c| c.runs.free(start + wanted, pages - wanted));
            }
            true
        } else if self.take_following(start + pages, wanted - pages) {
            self.kinds.set_run(start, wanted, flags);
            true
        } else {
            false
        };
        if self.config.stats {
            self.note_live(self.page_address(start), true);
        }
        resized.then(|| self.page_address(start) as *mut u8)
    }

    /// Creates the calling thread's cache (null if the bootstrap arena is
    /// exhausted).
    fn create_cache(&self) -> *mut ThreadCache {
        let memory = BOOTSTRAP
            .alloc(size_of::<ThreadCache>(), align_of::<ThreadCache>())
            .cast::<ThreadCache>();
        if memory.is_null() {
            return memory;
        }
        // SAFETY: fresh, aligned, large enough, ours.
        unsafe {
            memory.write(ThreadCache {
                lists: [ObjectList::default(); CLASSES],
                counters: LocalCounters::default(),
                next: null_mut(),
            });
        }
        self.central(|c| {
            // SAFETY: the cache is live; the registry is guarded by `central`.
            unsafe { (*memory).next = c.caches };
            c.caches = memory;
        });
        // SAFETY: our key; the value is a pointer the destructor takes back.
        unsafe { libc::pthread_setspecific(self.thread_key, memory.cast()) };
        thread_cache::set_current(memory);
        memory
    }

    /// Gives a thread's cache back (its thread is ending): its objects to
    /// the central lists, its counts to the totals, its memory to the
    /// bootstrap arena.
    ///
    /// # Safety
    /// `cache` must be a cache of this heap whose thread uses it no more.
    pub unsafe fn retire_cache(&self, cache: *mut ThreadCache) {
        self.central(|c| {
            let mut link: *mut *mut ThreadCache = &mut c.caches;
            // SAFETY: the registry holds live caches, guarded by `central`.
            unsafe {
                while !(*link).is_null() && *link != cache {
                    link = &mut (**link).next;
                }
                if *link == cache {
                    *link = (*cache).next;
                }
                for class in 0..CLASSES {
                    (*cache).lists[class].move_to(&mut c.classes[class], u32::MAX);
                }
                c.ended.small += (*cache).counters.small;
                c.ended.small_frees += (*cache).counters.small_frees;
            }
        });
        thread_cache::set_current(DEAD);
        // SAFETY: allocated by `create_cache` from the bootstrap arena.
        unsafe { BOOTSTRAP.free(cache.cast()) };
    }

    /// Small objects handed out and freed by every thread so far.
    pub fn small_counts(&self) -> LocalCounters {
        self.central(|c| {
            let mut total = c.ended;
            let mut cache = c.caches;
            while !cache.is_null() {
                // SAFETY: registered caches are live (guarded by `central`).
                unsafe {
                    total.small += (*cache).counters.small;
                    total.small_frees += (*cache).counters.small_frees;
                    cache = (*cache).next;
                }
            }
            total
        })
    }

    /// Free pages of the area (freed runs and never used).
    pub fn free_pages(&self) -> usize {
        self.central(|c| c.runs.free_pages())
    }

    /// Marks the runs overlapping `[start, start + pages)` as lost: the
    /// program handed them to the kernel, so they never come back.
    pub fn lose_pages(&self, start: usize, pages: usize) {
        for page in start..start + pages {
            if matches!(self.kinds.get(page), Kind::Free | Kind::Lost) {
                continue;
            }
            self.kinds.set_lost(page);
            self.counters.lost_pages.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Sets `flag` on every run overlapping `[start, start + pages)`.
    pub fn flag_runs(&self, start: usize, pages: usize, flag: u32) {
        let mut page = start;
        while page < start + pages {
            match self.kinds.run_of(page) {
                Some((first, length, _)) => {
                    self.kinds.flag_run(first, length, flag);
                    page = first + length;
                }
                None => page += 1,
            }
        }
    }

    /// Frees the pages `[start, start + pages)` of mapped runs (the
    /// program's `munmap`), splitting runs that extend beyond the range.
    pub fn unmap_pages(&self, start: usize, pages: usize) {
        let end = start + pages;
        let mut page = start;
        while page < end {
            let Some((first, length, flags)) = self.kinds.run_of(page) else {
                page += 1;
                continue;
            };
            let run_end = first + length;
            if flags & MAPPED == 0 {
                page = run_end;
                continue;
            }
            let (cut_start, cut_end) = (page.max(first), end.min(run_end));
            if cut_start > first {
                self.kinds.set_run(first, cut_start - first, flags);
            }
            if run_end > cut_end {
                self.kinds.set_run(cut_end, run_end - cut_end, flags);
            }
            self.free_run(cut_start, cut_end - cut_start, flags);
            self.counters.run_frees.fetch_sub(1, Ordering::Relaxed);
            page = cut_end;
        }
    }

    /// Exchanges the pages of `[a, a + pages)` and `[b, b + pages)` (two
    /// runs the caller owns) keeping every frame: the contents of each
    /// range appear at the other's addresses, on the same frames
    /// ([`ColoredArea::swap_pages`]). Aborts the process, naming the
    /// cause, should the kernel refuse a move half-way (the data of both
    /// ranges would be lost).
    pub fn swap_pages(&self, a: usize, b: usize, pages: usize) {
        let swapped = self.with_area_mut(|area| {
            // SAFETY: the caller owns both runs and nothing else touches
            // them during the call.
            unsafe { area.swap_pages(a, b, pages) }
        });
        if let Err(error) = swapped {
            // (The shim's own allocations come from the bootstrap arena.)
            crate::stderr::write_stderr(&format!(
                "tinct-preload: mremap: cannot move the mapping's pages: {error}\n"
            ));
            std::process::abort();
        }
        for k in 0..pages {
            let step = self.steps[a + k].load(Ordering::Relaxed);
            let other = self.steps[b + k].swap(step, Ordering::Relaxed);
            self.steps[a + k].store(other, Ordering::Relaxed);
        }
    }

    /// Grows the mapped run at `start` (of `pages`) to `wanted` pages in
    /// place if the pages after it are free (the last run handed out, by
    /// growing the area).
    pub fn extend_mapped(&self, start: usize, pages: usize, wanted: usize) -> bool {
        let flags = match self.kinds.get(start) {
            Kind::RunStart { flags, .. } => flags,
            _ => return false,
        };
        if !self.take_following(start + pages, wanted - pages) {
            return false;
        }
        self.kinds.set_run(start, wanted, flags);
        true
    }

    /// Takes exactly the pages `[end, end + pages)` right after a run (to
    /// grow it in place), growing the area when they lie past its filled
    /// pages and `end` is the frontier (the run is the last one handed
    /// out): how many pages the area holds beyond the frontier depends on
    /// the frames the kernel gave its segments, so without growing, a run
    /// at the end would grow in place or move by chance. False if they are
    /// taken, or the area cannot grow that far; then nothing changes.
    fn take_following(&self, end: usize, pages: usize) -> bool {
        let take = |c: &mut Central| c.runs.take_exact(end, pages);
        if self.central(take) {
            return true;
        }
        let at_frontier = |c: &mut Central| c.runs.frontier() == end;
        let Some(needed) = end.checked_add(pages) else {
            return false;
        };
        if self.grow.held_by_caller()
            || needed > self.kinds.len_pages()
            || !self.central(at_frontier)
        {
            return false;
        }
        self.grow.lock();
        // Another thread may have grown the area, or taken the pages, since.
        let mut taken = self.central(take);
        if !taken && self.central(at_frontier) {
            // SAFETY: the growth lock is held: this thread alone mutates the area.
            let area = unsafe { &mut *self.area.get() };
            let missing = needed.saturating_sub(area.pages());
            if let Err(error) = area.grow(missing) {
                // SAFETY: the growth lock is held.
                unsafe { *self.grow_error.get() = Some(error.to_string()) };
            }
            taken = self.publish_growth(take);
        }
        self.grow.unlock();
        taken
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(pool_mib: u64, strict: bool) -> Config {
        Config {
            colors: vec![0, 1],
            color_bits: Some(vec![12, 13, 14]),
            pool_bytes: pool_mib << 20,
            strict,
            stats: true,
            allow_uncolored: true,
            ..Config::colored(Vec::new())
        }
    }

    fn heap(config: Config) -> Heap {
        Heap::new(config, crate::process::thread_ended).unwrap_or_else(|e| panic!("heap: {e:?}"))
    }

    #[test]
    fn serves_the_malloc_family_from_the_requested_colors() {
        let heap = heap(config(16, true));
        let sizes = [1usize, 24, 700, 2048, 2049, 4096, 5000, 70_000];
        let mut live = Vec::new();
        for (i, &size) in sizes.iter().enumerate() {
            let ptr = heap.alloc(size, 16);
            assert!(!ptr.is_null());
            assert!(heap.usable_size(ptr) >= size);
            // SAFETY: `ptr` has at least `size` bytes.
            unsafe { std::ptr::write_bytes(ptr, i as u8 + 1, size) };
            live.push((ptr, size));
        }
        heap.with_area(|area| {
            for &(ptr, size) in &live {
                for offset in (0..size).step_by(heap.page_size()) {
                    let page = heap.area_page(ptr as usize + offset).expect("an area page");
                    assert!(area.class(page).color < 2, "color of page {page}");
                }
            }
        });
        // realloc keeps the contents, grows across the page boundary.
        let (ptr, size) = live[2];
        // SAFETY: live pointer from this heap.
        let grown = unsafe { heap.realloc(ptr, 20_000) };
        assert!(!grown.is_null());
        // SAFETY: the first `size` bytes were copied.
        let bytes = unsafe { std::slice::from_raw_parts(grown, size) };
        assert!(bytes.iter().all(|&b| b == 3));
        live[2] = (grown, 20_000);
        let aligned = heap.alloc(100, 8192);
        assert_eq!(aligned as usize % 8192, 0);
        live.push((aligned, 100));
        assert!(heap.counters.peak_bytes.load(Ordering::Relaxed) >= 70_000);
        for (ptr, _) in live {
            // SAFETY: each pointer is live and freed once.
            unsafe { heap.free(ptr) };
        }
        assert_eq!(heap.counters.live_bytes.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn misused_pointers_are_told_apart_from_live_blocks() {
        let heap = heap(config(16, true));
        let page = heap.page_size();
        let small = heap.alloc(32, 16);
        let other = heap.alloc(32, 16);
        let run = heap.alloc(3 * page, 16);
        let mapped = heap.alloc_pages(page, page, MAPPED);
        // (A class no other test takes from the process-wide arena.)
        let fallback = BOOTSTRAP.alloc(3000, 16);
        assert_eq!(heap.check(small), Ok(Block::Small { class: 1 }));
        assert!(matches!(heap.check(run), Ok(Block::Run { pages: 3, .. })));
        assert_eq!(heap.check(fallback), Ok(Block::Bootstrap));
        let interior = [
            small.wrapping_add(8),
            small.wrapping_add(16),
            run.wrapping_add(16),
        ];
        for ptr in interior.into_iter().chain([run.wrapping_add(page)]) {
            assert_eq!(heap.check(ptr), Err(Misuse::Interior), "{ptr:?}");
        }
        let mut stack = [0u64; 4];
        let wild = [
            stack.as_mut_ptr().cast::<u8>(),
            mapped,
            mapped.wrapping_add(page), // never handed out
            std::ptr::dangling_mut::<u8>(),
        ];
        for ptr in wild {
            assert_eq!(heap.check(ptr), Err(Misuse::NotFromMalloc), "{ptr:?}");
        }
        // The tail of a page of 48-byte objects holds no object.
        let tail = heap.alloc(48, 16) as usize / page * page + page / 48 * 48;
        assert_eq!(heap.check(tail as *mut u8), Err(Misuse::Interior));
        // SAFETY: live blocks, each freed once.
        unsafe {
            heap.free(small);
            heap.free(other);
            heap.free(run);
            heap.free(fallback);
        }
        // Freed: the most recent, one further down the list, a run, a fallback.
        for ptr in [other, small, run, fallback] {
            assert_eq!(heap.check(ptr), Err(Misuse::DoubleFree), "{ptr:?}");
        }
        // Handed out again: live, the free tag cleared.
        let again = heap.alloc(32, 16);
        assert_eq!(again, other, "the most recently freed object first");
        assert_eq!(heap.check(again), Ok(Block::Small { class: 1 }));
        // Objects freed by a thread that ended wait in the central lists.
        let elsewhere = std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    let ptr = heap.alloc(700, 16);
                    // SAFETY: live, freed once; then the thread's cache goes back.
                    unsafe {
                        heap.free(ptr);
                        heap.retire_cache(thread_cache::current());
                    }
                    ptr as usize
                })
                .join()
                .unwrap()
        });
        assert_eq!(
            heap.check(elsewhere as *mut u8),
            Err(Misuse::DoubleFree),
            "found in the central list"
        );
    }

    #[test]
    fn zeroed_blocks_are_zero_fresh_or_recycled_and_large_ones_fall_back_lazily() {
        let heap = heap(config(16, false));
        let page = heap.page_size();
        for size in [24, 3000, 5 * page + 100, 64 * page] {
            for round in 0..3 {
                let ptr = heap.alloc_zeroed(size);
                assert!(!ptr.is_null());
                // SAFETY: `size` bytes.
                let bytes = unsafe { std::slice::from_raw_parts_mut(ptr, size) };
                assert!(bytes.iter().all(|&b| b == 0), "size {size}, round {round}");
                bytes.fill(0xa5);
                // SAFETY: live, freed once.
                unsafe { heap.free(ptr) };
            }
        }
        // Larger than the area can ever hold (16 MiB pool): a fallback, at
        // once (no growth), fresh bootstrap memory left untouched.
        let grown = heap.with_area(|area| area.stats().populated_bytes);
        let size = 64 << 20;
        let big = heap.alloc_zeroed(size);
        assert!(BOOTSTRAP.contains(big));
        assert_eq!(heap.with_area(|area| area.stats().populated_bytes), grown);
        assert_eq!(heap.counters.fallbacks.load(Ordering::Relaxed), 1);
        // SAFETY: live `size` bytes; then freed once.
        unsafe {
            assert_eq!(big.add(size / 2).read(), 0);
            heap.free(big);
        }
    }

    #[test]
    fn free_tag_keys_are_random_and_never_make_a_zero_tag() {
        let (one, two) = (random_key(), random_key());
        assert_ne!(one, two, "two draws of 63 random bits");
        assert_eq!(
            one >> (usize::BITS - 1),
            1,
            "the top bit: no tag of a user address is 0"
        );
    }

    #[test]
    fn reciprocals_divide_every_offset_of_a_page_exactly() {
        for (class, &size) in SIZE_CLASSES.iter().enumerate() {
            for offset in (0..MAX_RECIPROCAL_PAGE).step_by(16) {
                let index = ((offset as u64 * RECIPROCALS[class]) >> 32) as usize;
                assert_eq!(index, offset / size, "offset {offset}, size {size}");
            }
        }
    }

    #[test]
    fn large_alignments_are_of_addresses() {
        let heap = heap(config(64, true));
        for align in [8192, 1 << 16, 1 << 20, 4 << 20] {
            let ptr = heap.alloc(100, align);
            assert!(!ptr.is_null(), "align {align}");
            assert_eq!(ptr as usize % align, 0, "align {align}");
            // SAFETY: live, freed once.
            unsafe { heap.free(ptr) };
        }
        assert!(
            heap.alloc(100, 1 << 40).is_null(),
            "beyond the area: no growth"
        );
    }

    #[test]
    fn runs_grow_and_shrink_in_place_and_freed_runs_come_first() {
        let heap = heap(config(64, true));
        let page = heap.page_size();
        let first = heap.alloc(10 * page, 16);
        // SAFETY: 10 pages.
        unsafe { std::ptr::write_bytes(first, 5, 10 * page) };
        // Nothing after it yet: grows in place.
        // SAFETY: live pointer from this heap.
        let grown = unsafe { heap.realloc(first, 30 * page) };
        assert_eq!(grown, first, "grown in place");
        assert_eq!(heap.usable_size(grown), 30 * page);
        // SAFETY: `grown` is live and at least 30 pages long.
        let kept = unsafe { std::slice::from_raw_parts(grown, 10 * page) };
        assert!(
            kept.iter().all(|&b| b == 5),
            "the first 10 pages kept their contents"
        );
        // SAFETY: live.
        let shrunk = unsafe { heap.realloc(grown, 4 * page + 1) };
        assert_eq!(shrunk, first, "shrunk in place");
        assert_eq!(heap.usable_size(shrunk), 5 * page);
        // The 25 freed pages after it are reused first.
        let next = heap.alloc(20 * page, 16);
        assert_eq!(next as usize, first as usize + 5 * page);
        // SAFETY: live pointers, freed once.
        unsafe {
            heap.free(next);
            heap.free(shrunk);
        }
    }

    #[test]
    fn the_last_run_grows_in_place_past_the_filled_pages_by_growing_the_area() {
        let heap = heap(config(64, true));
        let page = heap.page_size();
        let first = heap.alloc(10 * page, 16);
        // The rest of the filled pages, however many the frames gave: the
        // last run ends where the filled pages do.
        let rest = heap.filled_pages() - heap.central(|c| c.runs.frontier());
        let last = if rest == 0 {
            first
        } else {
            heap.alloc(rest * page, 16)
        };
        let pages = heap.usable_size(last) / page;
        let start = heap.area_page(last as usize).expect("an area page");
        assert_eq!(
            start + pages,
            heap.filled_pages(),
            "nothing filled after it"
        );
        // SAFETY: `pages` pages.
        unsafe { std::ptr::write_bytes(last, 7, pages * page) };
        // SAFETY: live pointer from this heap.
        let grown = unsafe { heap.realloc(last, (pages + 20) * page) };
        assert_eq!(grown, last, "grown in place, into pages the area grew by");
        assert_eq!(heap.usable_size(grown), (pages + 20) * page);
        assert!(heap.filled_pages() >= start + pages + 20);
        // SAFETY: `grown` is live and at least `pages` pages long.
        let kept = unsafe { std::slice::from_raw_parts(grown, pages * page) };
        assert!(kept.iter().all(|&b| b == 7), "the run kept its contents");
        // SAFETY: live pointers, each freed once.
        unsafe {
            heap.free(grown);
            if grown != first {
                heap.free(first);
            }
        }
    }

    #[test]
    fn a_spent_budget_fails_in_strict_mode_and_falls_back_otherwise() {
        for strict in [true, false] {
            // 4 MiB, so that a 2 MiB segment (a huge page, whose frames
            // hold every colour) follows the small first one: the other
            // tests' heaps want the same two colours and give the rest
            // back, so the kernel's free 4 KiB frames can all be of the
            // other six (seen: a 2 MiB pool of 4 KiB pages, 512 frames,
            // none of colour 0 or 1, so no heap at all in strict mode).
            let heap = heap(config(4, strict));
            // 4 MiB of 8 colours, 2 requested: about 1 MiB of area.
            let ptr = heap.alloc(8 << 20, 16);
            if strict {
                assert!(ptr.is_null());
                assert_eq!(heap.counters.failures.load(Ordering::Relaxed), 1);
            } else {
                assert!(BOOTSTRAP.contains(ptr));
                assert_eq!(heap.counters.fallbacks.load(Ordering::Relaxed), 1);
                // SAFETY: live, freed once.
                unsafe { heap.free(ptr) };
            }
        }
    }

    #[test]
    fn threads_allocate_from_their_caches_and_counts_add_up() {
        let heap = std::sync::Arc::new(heap(config(128, true)));
        let workers: Vec<_> = (0..4)
            .map(|t| {
                let heap = std::sync::Arc::clone(&heap);
                std::thread::spawn(move || {
                    let mut blocks = Vec::new();
                    for i in 0..2000 {
                        let size = 16 + (i * 37 + t * 11) % 2000;
                        let ptr = heap.alloc(size, 16);
                        assert!(!ptr.is_null());
                        // SAFETY: `size` bytes.
                        unsafe { std::ptr::write_bytes(ptr, t as u8, size) };
                        blocks.push((ptr as usize, size));
                        if i % 3 == 0 {
                            let (old, len) = blocks.swap_remove(i % blocks.len());
                            // SAFETY: filled with this thread's byte above.
                            let bytes =
                                unsafe { std::slice::from_raw_parts(old as *const u8, len) };
                            assert!(bytes.iter().all(|&b| b == t as u8), "overlap");
                            // SAFETY: live, freed once.
                            unsafe { heap.free(old as *mut u8) };
                        }
                    }
                    for (ptr, _) in blocks {
                        // SAFETY: live, freed once.
                        unsafe { heap.free(ptr as *mut u8) };
                    }
                    let cache = thread_cache::current();
                    // SAFETY: this thread's cache, used no more.
                    unsafe { heap.retire_cache(cache) };
                })
            })
            .collect();
        for worker in workers {
            worker.join().unwrap();
        }
        let counts = heap.small_counts();
        assert_eq!(counts.small, 4 * 2000);
        assert_eq!(counts.small, counts.small_frees);
        assert_eq!(heap.counters.live_bytes.load(Ordering::Relaxed), 0);
    }
}
