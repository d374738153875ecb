//! [`Heap`]: the malloc family on a colored [`SharedPool`].
//!
//! Every request takes the heap's [`RawLock`] first (so `fork` can hold it
//! across the call, see [`crate::process`]) and then goes to the pool, which
//! serves it from pages of the requested colors only (kim2013 Section
//! III-C: round robin over the colors, freed pages first). With
//! `TINCT_BANKS` the pool keeps only the pages whose DRAM (controller,
//! bank) class, from the XOR functions, was requested (`retain_banks`).
//! When the pool is full, strict mode fails the request with ENOMEM; otherwise it is served
//! from the uncolored [`crate::bootstrap`] arena and counted as a fallback.

use std::collections::HashSet;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use tinct_mem::mapping::{FunctionSpec, LayoutSpec};
use tinct_mem::{MemError, PageClass, PageId, Pool, PoolOptions, SharedPool};

use crate::bootstrap::BOOTSTRAP;
use crate::lock::RawLock;
use tinct_mem::ShimConfig as Config;

/// Event counters, reported by `TINCT_STATS=1`.
#[derive(Debug, Default)]
pub struct Counters {
    /// Successful allocations from colored memory.
    pub colored: AtomicU64,
    /// Allocations served uncolored because the pool was full.
    pub fallbacks: AtomicU64,
    /// Bytes requested by those fallbacks.
    pub fallback_bytes: AtomicU64,
    /// Allocations refused (strict mode, or impossible sizes).
    pub failures: AtomicU64,
    /// Calls made from inside the allocator or while the pool was built,
    /// served by the bootstrap arena.
    pub internal: AtomicU64,
    /// Frees of pointers this shim never handed out (ignored).
    pub foreign_frees: AtomicU64,
    /// Successful frees.
    pub frees: AtomicU64,
    /// `fork` calls seen (children share pages copy-on-write).
    pub forks: AtomicU64,
    /// Usable bytes currently handed out from the pool (with stats only).
    pub live_bytes: AtomicUsize,
    /// Largest `live_bytes` seen (with stats only).
    pub peak_bytes: AtomicUsize,
}

/// The colored heap of the process.
#[derive(Debug)]
pub struct Heap {
    pool: SharedPool,
    colors: Vec<u32>,
    config: Config,
    lock: RawLock,
    /// Every page (virtual address) handed out, when a page report was asked for.
    handed_pages: Option<std::cell::UnsafeCell<HashSet<usize>>>,
    page_size: usize,
    /// Pages of the requested colors in the pool.
    colored_pages: usize,
    /// Freed spans kept for reuse (guarded by `lock`).
    span_cache: std::cell::UnsafeCell<SpanCache>,
    /// The counters.
    pub counters: Counters,
}

// SAFETY: `handed_pages` and `span_cache` are only touched with `lock` held; everything else
// is `Sync` on its own.
unsafe impl Sync for Heap {}

/// Why the heap could not be built.
#[derive(Debug)]
pub enum BuildError {
    /// Frame numbers are unreadable and uncolored running was not allowed.
    FramesUnreadable(String),
    /// Anything else (bad colors, no memory, ...).
    Other(String),
}

impl Heap {
    /// Builds the pool for `config`: maps `pool_bytes`, translates it, keeps
    /// the pages of the requested colors and gives the others back to the
    /// kernel.
    pub fn new(config: Config) -> Result<Self, BuildError> {
        let functions = |masks: &[u64]| {
            (!masks.is_empty()).then(|| masks.iter().copied().map(FunctionSpec).collect())
        };
        let spec = LayoutSpec {
            color_bits: config.color_bits.clone(),
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
        let options = PoolOptions {
            size: config.pool_bytes as usize,
            lock: false,
            uncolored: config.allow_uncolored,
        };
        let mut pool = Pool::new(mapping, options).map_err(|e| match e {
            MemError::FramesUnreadable { .. } => BuildError::FramesUnreadable(e.to_string()),
            other => BuildError::Other(other.to_string()),
        })?;
        let mut colors = colors;
        let colored_pages = if config.banks.is_some() || config.controllers.is_some() {
            let wanted = |class: PageClass| {
                config
                    .banks
                    .as_ref()
                    .is_none_or(|b| b.contains(&class.bank))
                    && config
                        .controllers
                        .as_ref()
                        .is_none_or(|c| c.contains(&class.controller))
            };
            let kept = retain_banks(&mut pool, &colors, wanted).map_err(|e| {
                BuildError::Other(format!("cannot restrict the pool to banks: {e}"))
            })?;
            if kept == 0 && !config.strict {
                crate::stderr::write_stderr(
                    "tinct-preload: WARNING: no page of the pool lies in both the requested \
                     colors and banks: every allocation falls back to uncolored memory \
                     (counted; TINCT_STRICT=1 makes this an error)\n",
                );
            }
            if kept == 0 && config.strict {
                return Err(BuildError::Other(format!(
                    "TINCT_STRICT=1: no page of the {} MiB pool lies in both the requested colors \
                     ({}) and banks (TINCT_BANKS={}, TINCT_CONTROLLERS={}): expected a request \
                     the pool can serve (check that the bank functions do not read the same \
                     address bits as the colors, or raise TINCT_POOL)",
                    config.pool_bytes >> 20,
                    tinct_sys::format_cpu_list(&colors),
                    config
                        .banks
                        .as_ref()
                        .map_or("any".into(), |b| tinct_sys::format_cpu_list(b)),
                    config
                        .controllers
                        .as_ref()
                        .map_or("any".into(), |c| tinct_sys::format_cpu_list(c)),
                )));
            }
            // Bank functions may read color bits: a color without a page
            // in the requested banks would stop kim2013's round robin
            // (equal shares of every color), so it is dropped.
            let served: Vec<u32> = colors
                .iter()
                .copied()
                .filter(|&color| pool.book().free_in_color(color) > 0)
                .collect();
            if !served.is_empty() {
                colors = served;
            }
            kept
        } else {
            release_other_colors(&pool, &colors)
        };
        let page_size = pool.page_size();
        let pool = SharedPool::from_pool(pool).map_err(|e| BuildError::Other(e.to_string()))?;
        let span_cache = if config.page_report.is_some() {
            // With a page report, freed spans stay where they were handed
            // out (until the pool runs full), so the report's window
            // addresses still hold those pages at exit.
            SpanCache::new(usize::MAX, usize::MAX)
        } else {
            SpanCache::new(colored_pages / 4, MAX_CACHED_SPAN_PAGES)
        };
        Ok(Self {
            pool,
            colors,
            handed_pages: config
                .page_report
                .as_ref()
                .map(|_| std::cell::UnsafeCell::new(HashSet::new())),
            config,
            lock: RawLock::new(),
            page_size,
            colored_pages,
            span_cache: std::cell::UnsafeCell::new(span_cache),
            counters: Counters::default(),
        })
    }

    /// The settings.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The pool (for statistics).
    pub fn pool(&self) -> &SharedPool {
        &self.pool
    }

    /// The colors the heap is served from (every color when
    /// `TINCT_COLORS` was not given), sorted.
    pub fn colors(&self) -> &[u32] {
        &self.colors
    }

    /// Pages of the requested colors (and banks, if any) in the pool.
    pub fn colored_pages(&self) -> usize {
        self.colored_pages
    }

    /// Page size in bytes.
    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// The heap lock (for `fork`).
    pub fn lock(&self) -> &RawLock {
        &self.lock
    }

    /// Runs `f` with the heap locked.
    pub fn locked<R>(&self, f: impl FnOnce() -> R) -> R {
        self.lock.with(f)
    }

    /// Pages held in the cache of freed multi-page blocks.
    pub fn cached_span_pages(&self) -> usize {
        self.locked(|| self.spans().cached_pages)
    }

    /// Every page handed out so far, sorted (empty without a page report).
    pub fn handed_pages(&self) -> Vec<usize> {
        self.locked(|| {
            let mut pages: Vec<usize> = match &self.handed_pages {
                // SAFETY: the heap lock is held.
                Some(set) => unsafe { &*set.get() }.iter().copied().collect(),
                None => Vec::new(),
            };
            pages.sort_unstable();
            pages
        })
    }

    /// `size` bytes aligned to `align` (a power of two), or null.
    pub fn alloc(&self, size: usize, align: usize) -> *mut u8 {
        if self.lock.held_by_caller() {
            return self.internal(size, align);
        }
        self.lock.lock();
        let result = self.alloc_locked(size, align);
        self.lock.unlock();
        match result {
            Ok(ptr) => ptr.as_ptr(),
            Err(error) => self.fall_back(size, align, &error),
        }
    }

    /// The cache of freed spans (lock held by the caller).
    #[allow(clippy::mut_from_ref)]
    fn spans(&self) -> &mut SpanCache {
        // SAFETY: only called with the heap lock held, and no other
        // reference to the cache lives across calls.
        unsafe { &mut *self.span_cache.get() }
    }

    /// Allocation with the lock held: a cached span of the right page
    /// count, else the pool; when the pool is full, the span cache is
    /// given back to it and the request retried once.
    fn alloc_locked(&self, size: usize, align: usize) -> Result<NonNull<u8>, MemError> {
        let page = self.page_size;
        // Spans are rounded up to a span class so that freed ones fit
        // later requests of similar size.
        let (request, cached) = if size > page && align <= page {
            let pages = self.spans().class_of(size.div_ceil(page));
            (pages * page, self.spans().take(pages))
        } else {
            (size, None)
        };
        let ptr = match cached {
            Some(ptr) => ptr,
            None => match self.pool.alloc(&self.colors, request, align) {
                Ok(ptr) => ptr,
                Err(MemError::Exhausted(_) | MemError::Os { .. })
                    if self.spans().cached_pages > 0 =>
                {
                    self.flush_spans();
                    self.pool.alloc(&self.colors, request, align)?
                }
                Err(error) => return Err(error),
            },
        };
        self.counters.colored.fetch_add(1, Ordering::Relaxed);
        self.note_handed_out(ptr, size);
        Ok(ptr)
    }

    /// Returns every cached span to the pool (lock held).
    fn flush_spans(&self) {
        let mut pointers = Vec::new();
        self.spans().drain(&mut pointers);
        for ptr in pointers {
            let _ = self.pool.free(ptr);
        }
    }

    /// Free with the lock held: spans go to the cache (bounded), the rest
    /// to the pool.
    fn free_locked(&self, ptr: NonNull<u8>) -> Result<(), MemError> {
        let usable = self.pool.usable_size(ptr)?;
        if self.config.stats {
            self.counters
                .live_bytes
                .fetch_sub(usable, Ordering::Relaxed);
        }
        self.counters.frees.fetch_add(1, Ordering::Relaxed);
        if usable > self.page_size && self.spans().keep(ptr, usable / self.page_size) {
            return Ok(());
        }
        self.pool.free(ptr)
    }

    fn internal(&self, size: usize, align: usize) -> *mut u8 {
        self.counters.internal.fetch_add(1, Ordering::Relaxed);
        BOOTSTRAP.alloc(size, align)
    }

    fn fall_back(&self, size: usize, align: usize, error: &MemError) -> *mut u8 {
        let full = matches!(error, MemError::Exhausted(_) | MemError::Os { .. });
        if !full || self.config.strict {
            self.counters.failures.fetch_add(1, Ordering::Relaxed);
            return std::ptr::null_mut();
        }
        let ptr = BOOTSTRAP.alloc(size, align);
        if !ptr.is_null() {
            self.counters.fallbacks.fetch_add(1, Ordering::Relaxed);
            self.counters
                .fallback_bytes
                .fetch_add(size as u64, Ordering::Relaxed);
        }
        ptr
    }

    /// Records the pages of a fresh allocation (page report) and the live
    /// bytes (stats). Called with the lock held.
    fn note_handed_out(&self, ptr: NonNull<u8>, size: usize) {
        if let Some(set) = &self.handed_pages {
            // SAFETY: the heap lock is held by the caller.
            let set = unsafe { &mut *set.get() };
            let first = ptr.as_ptr() as usize / self.page_size;
            let last = (ptr.as_ptr() as usize + size.max(1) - 1) / self.page_size;
            set.extend((first..=last).map(|p| p * self.page_size));
        }
        if self.config.stats {
            let usable = self.pool.usable_size(ptr).unwrap_or(size);
            let live = self
                .counters
                .live_bytes
                .fetch_add(usable, Ordering::Relaxed)
                + usable;
            self.counters.peak_bytes.fetch_max(live, Ordering::Relaxed);
        }
    }

    /// Frees `ptr` (null is ignored; a pointer never handed out is counted
    /// and ignored).
    ///
    /// # Safety
    /// `ptr` must be null or a live pointer from this heap.
    pub unsafe fn free(&self, ptr: *mut u8) {
        let Some(ptr) = NonNull::new(ptr) else {
            return;
        };
        if BOOTSTRAP.contains(ptr.as_ptr()) {
            // SAFETY: the arena handed it out (range test) and the caller
            // says it is live.
            unsafe { BOOTSTRAP.free(ptr.as_ptr()) };
            return;
        }
        if self.lock.held_by_caller() {
            // From inside the allocator: only bootstrap blocks can be
            // freed there; taking the lock again would dead-lock.
            self.counters.foreign_frees.fetch_add(1, Ordering::Relaxed);
            return;
        }
        self.lock.lock();
        let result = self.free_locked(ptr);
        self.lock.unlock();
        if result.is_err() {
            self.counters.foreign_frees.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Bytes usable at `ptr` (0 for null or foreign pointers).
    pub fn usable_size(&self, ptr: *mut u8) -> usize {
        let Some(ptr) = NonNull::new(ptr) else {
            return 0;
        };
        if BOOTSTRAP.contains(ptr.as_ptr()) {
            return BOOTSTRAP.usable_size(ptr.as_ptr());
        }
        if self.lock.held_by_caller() {
            return 0;
        }
        self.locked(|| self.pool.usable_size(ptr).unwrap_or(0))
    }

    /// C `realloc`: null `ptr` allocates, size 0 frees and returns null,
    /// otherwise the contents move to a block of `size` bytes in the same
    /// colors (the old block stays valid if that fails). A block that
    /// already fits (and is not more than twice too large) stays put.
    ///
    /// # Safety
    /// `ptr` must be null or a live pointer from this heap.
    pub unsafe fn realloc(&self, ptr: *mut u8, size: usize) -> *mut u8 {
        let Some(old) = NonNull::new(ptr) else {
            return self.alloc(size, 1);
        };
        if size == 0 {
            // SAFETY: forwarded caller contract.
            unsafe { self.free(ptr) };
            return std::ptr::null_mut();
        }
        if BOOTSTRAP.contains(ptr) {
            // SAFETY: forwarded caller contract.
            return unsafe { self.move_to_new(ptr, BOOTSTRAP.usable_size(ptr), size) };
        }
        if self.lock.held_by_caller() {
            self.counters.foreign_frees.fetch_add(1, Ordering::Relaxed);
            return std::ptr::null_mut();
        }
        self.lock.lock();
        let Ok(usable) = self.pool.usable_size(old) else {
            self.lock.unlock();
            self.counters.foreign_frees.fetch_add(1, Ordering::Relaxed);
            return std::ptr::null_mut();
        };
        if size <= usable && size > usable / 2 {
            self.lock.unlock();
            return ptr;
        }
        if let Some(resized) = self.resize_span_locked(old, usable, size) {
            self.lock.unlock();
            return resized.as_ptr();
        }
        match self.alloc_locked(size, 1) {
            Ok(fresh) => {
                // SAFETY: `old` is live with `usable` bytes, `fresh` is a
                // distinct new block of at least `size` bytes.
                unsafe {
                    std::ptr::copy_nonoverlapping(ptr, fresh.as_ptr(), usable.min(size));
                }
                let _ = self.free_locked(old);
                self.lock.unlock();
                fresh.as_ptr()
            }
            Err(_) => {
                self.lock.unlock();
                // The pool is full: move to whatever `alloc` can give
                // (the fallback, or null in strict mode).
                // SAFETY: forwarded caller contract; `usable` is the old size.
                unsafe { self.move_to_new(ptr, usable, size) }
            }
        }
    }

    /// realloc of a large multi-page block (longer than the span cache
    /// keeps, before or after) through the pool, without copying:
    /// tinct-mem shrinks the span in place, grows it in place, or moves its
    /// pages (one mremap per run) to a place with room. `None` (block
    /// untouched) when either size is a page or less, when both fit the
    /// span cache, when a page report needs blocks to stay where they were
    /// handed out, or when the pool cannot serve it (the caller then
    /// copies, after giving the span cache back if needed). Lock held.
    fn resize_span_locked(
        &self,
        old: NonNull<u8>,
        usable: usize,
        size: usize,
    ) -> Option<NonNull<u8>> {
        let page = self.page_size;
        if usable <= page || size <= page || self.handed_pages.is_some() {
            return None;
        }
        let (old_pages, pages) = (usable / page, self.spans().class_of(size.div_ceil(page)));
        if old_pages.max(pages) <= self.spans().longest_span {
            // Both fit the span cache: a cached block plus a copy of at
            // most `longest_span` pages costs no system call, which beats
            // moving pages.
            return None;
        }
        let request = pages * page;
        let fresh = self.pool.realloc(old, request).ok()?;
        if self.config.stats {
            self.counters
                .live_bytes
                .fetch_sub(usable, Ordering::Relaxed);
        }
        self.counters.colored.fetch_add(1, Ordering::Relaxed);
        self.counters.frees.fetch_add(1, Ordering::Relaxed);
        self.note_handed_out(fresh, size);
        Some(fresh)
    }

    /// Allocates `size` bytes, copies `min(old_usable, size)` from `ptr`
    /// and frees `ptr`; null (and `ptr` untouched) if allocation fails.
    unsafe fn move_to_new(&self, ptr: *mut u8, old_usable: usize, size: usize) -> *mut u8 {
        let fresh = self.alloc(size, 1);
        if fresh.is_null() {
            return fresh;
        }
        // SAFETY: both blocks are live and distinct; the copy stays within
        // both of them.
        unsafe {
            std::ptr::copy_nonoverlapping(ptr, fresh, old_usable.min(size));
            self.free(ptr);
        }
        fresh
    }
}

/// Freed multi-page blocks kept whole for reuse by a request of the same
/// page count: building a span moves each of its pages into the span
/// window and back with two system calls per page each way (tinct-mem's
/// `window`), which dominates programs that allocate and free large blocks
/// repeatedly. The cache is bounded and given back to the pool when the
/// pool runs out.
#[derive(Debug, Default)]
struct SpanCache {
    /// `buckets[n]`: freed spans of `n` pages.
    buckets: Vec<Vec<NonNull<u8>>>,
    cached_pages: usize,
    limit_pages: usize,
    longest_span: usize,
}

/// The page count a span of `pages` pages is rounded up to: exact up to 8
/// pages, then four classes per doubling (at most 25 % more pages).
fn span_class(pages: usize) -> usize {
    if pages <= 8 {
        return pages;
    }
    let step = 1usize << (usize::BITS - 1 - pages.leading_zeros() - 2);
    pages.next_multiple_of(step)
}

/// Spans longer than this many pages are not cached.
const MAX_CACHED_SPAN_PAGES: usize = 512;

impl SpanCache {
    fn new(limit_pages: usize, longest_span: usize) -> Self {
        Self {
            buckets: Vec::new(),
            cached_pages: 0,
            limit_pages,
            longest_span,
        }
    }

    /// The page count a request of `pages` pages asks the pool for:
    /// rounded up to its span class when such a span could be cached,
    /// exact otherwise (no point wasting up to 25 % of a block that is
    /// never cached).
    fn class_of(&self, pages: usize) -> usize {
        let class = span_class(pages);
        if class <= self.longest_span {
            class
        } else {
            pages
        }
    }

    fn take(&mut self, pages: usize) -> Option<NonNull<u8>> {
        let ptr = self.buckets.get_mut(pages)?.pop()?;
        self.cached_pages -= pages;
        Some(ptr)
    }

    /// Keeps a freed span; false if it is too long or the cache is full.
    fn keep(&mut self, ptr: NonNull<u8>, pages: usize) -> bool {
        if pages > self.longest_span || self.cached_pages.saturating_add(pages) > self.limit_pages {
            return false;
        }
        if self.buckets.len() <= pages {
            self.buckets.resize_with(pages + 1, Vec::new);
        }
        self.buckets[pages].push(ptr);
        self.cached_pages += pages;
        true
    }

    fn drain(&mut self, out: &mut Vec<NonNull<u8>>) {
        for bucket in &mut self.buckets {
            out.append(bucket);
        }
        self.cached_pages = 0;
    }
}

/// Gives the pages of every color not in `colors` back to the kernel
/// (`MADV_DONTNEED`): the shim never hands them out, and keeping them would
/// cost the whole pool in resident memory. Returns the number of pages
/// kept.
fn release_other_colors(pool: &Pool, colors: &[u32]) -> usize {
    let page = pool.page_size();
    let mut release = vec![false; pool.pages()];
    let mut kept = 0;
    for color in 0..pool.mapping().colors() {
        let list = pool.book().free_list_of_color(color);
        if colors.binary_search(&color).is_ok() {
            kept += list.len();
        } else {
            for id in list {
                release[id.index()] = true;
            }
        }
    }
    let start = pool.start() as usize;
    let mut index = 0;
    while index < release.len() {
        if !release[index] {
            index += 1;
            continue;
        }
        let run = release[index..].iter().take_while(|&&r| r).count();
        // SAFETY: the run lies inside the pool's own mapping; its pages are
        // in colors this process never asks for, so nothing references them.
        unsafe {
            libc::madvise(
                (start + index * page) as *mut libc::c_void,
                run * page,
                libc::MADV_DONTNEED,
            )
        };
        index += run;
    }
    kept
}

/// Keeps only the pages of `colors` whose class is `wanted` (DRAM bank and
/// controller, chandru-mueller's (controller, bank) classes from the XOR
/// functions), retiring every other page and giving its memory back to
/// the kernel. Returns the number of pages kept.
///
/// The pool can retire free pages only by color, so the wanted pages are
/// held (allocated) while every other free page is retired, then freed
/// again in reverse order, which restores their order in the free lists.
fn retain_banks(
    pool: &mut Pool,
    colors: &[u32],
    wanted: impl Fn(PageClass) -> bool,
) -> Result<usize, MemError> {
    let mut keep: Vec<PageId> = Vec::new();
    let mut drop: Vec<PageId> = Vec::new();
    for &color in colors {
        while let Ok(page) = pool.alloc_page(color) {
            if wanted(pool.class(page)) {
                keep.push(page);
            } else {
                drop.push(page);
            }
        }
    }
    for page in drop {
        pool.free(page)?;
    }
    pool.retain_colors(&[])?;
    for &page in keep.iter().rev() {
        pool.free(page)?;
    }
    Ok(keep.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(pool_mib: u64, strict: bool) -> Config {
        Config {
            colors: vec![0, 1],
            banks: None,
            controllers: None,
            bank_functions: Vec::new(),
            controller_functions: Vec::new(),
            color_bits: Some(vec![12, 13, 14]),
            pool_bytes: pool_mib << 20,
            strict,
            stats: true,
            allow_uncolored: true,
            page_report: Some("/unused".into()),
            frame_report: None,
        }
    }

    #[test]
    fn serves_the_malloc_family_from_the_requested_colors() {
        let heap = Heap::new(config(16, true)).unwrap_or_else(|_| panic!("heap"));
        // 8 colors by bits 12-14; 2 requested: about a quarter of 4096
        // pages (physical frames are not spread evenly over colors).
        let stats = heap.pool().stats();
        assert_eq!(stats.colors.len(), 8);
        let in_colors = (stats.colors[0].free + stats.colors[1].free) as usize;
        assert_eq!(heap.colored_pages(), in_colors);
        assert!(in_colors > 0 && in_colors < 4096, "{in_colors}");
        let sizes = [1usize, 24, 700, 4000, 4096, 5000, 70_000];
        let mut live = Vec::new();
        for (i, &size) in sizes.iter().enumerate() {
            let ptr = heap.alloc(size, 16);
            assert!(!ptr.is_null());
            assert!(heap.usable_size(ptr) >= size);
            // SAFETY: `ptr` has at least `size` bytes.
            unsafe { std::ptr::write_bytes(ptr, i as u8 + 1, size) };
            live.push((ptr, size));
        }
        for &(ptr, _) in &live {
            let class = heap.pool().class_of_address(ptr as usize).unwrap();
            assert!(class.color < 2, "color {}", class.color);
        }
        // realloc keeps the contents, grows across the page boundary.
        let (ptr, size) = live[2];
        // SAFETY: live pointer from this heap.
        let grown = unsafe { heap.realloc(ptr, 20_000) };
        assert!(!grown.is_null());
        // SAFETY: the first `size` bytes were copied.
        let bytes = unsafe { std::slice::from_raw_parts(grown, size) };
        assert!(bytes.iter().all(|&b| b == 3));
        live[2] = (grown, 20_000);
        let aligned = heap.alloc(100, 4096);
        assert_eq!(aligned as usize % 4096, 0);
        live.push((aligned, 100));
        assert!(heap.handed_pages().len() >= 10);
        assert!(heap.counters.peak_bytes.load(Ordering::Relaxed) >= 70_000);
        for (ptr, _) in live {
            // SAFETY: each pointer is live and freed once.
            unsafe { heap.free(ptr) };
        }
        assert_eq!(heap.counters.live_bytes.load(Ordering::Relaxed), 0);
        assert_eq!(heap.counters.foreign_frees.load(Ordering::Relaxed), 0);
        let mut foreign = 0u64;
        // SAFETY: a stack address is not a heap pointer; the heap ignores it.
        unsafe { heap.free(&mut foreign as *mut u64 as *mut u8) };
        assert_eq!(heap.counters.foreign_frees.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn realloc_of_large_blocks_keeps_contents_and_colors_without_a_page_report() {
        let mut settings = config(64, true);
        settings.page_report = None;
        let heap = Heap::new(settings).unwrap_or_else(|_| panic!("heap"));
        let check = |ptr: *mut u8, len: usize, seed: u8| {
            // SAFETY: `ptr` has at least `len` bytes.
            let bytes = unsafe { std::slice::from_raw_parts(ptr, len) };
            assert!(bytes.iter().all(|&b| b == seed));
            for offset in (0..len).step_by(heap.page_size()) {
                let class = heap.pool().class_of_address(ptr as usize + offset).unwrap();
                assert!(class.color < 2, "color {} at {offset}", class.color);
            }
        };
        // 600 pages: above the cached span lengths, so exact page counts.
        let first = heap.alloc(600 << 12, 16);
        assert!(!first.is_null());
        assert_eq!(heap.usable_size(first), 600 << 12);
        // SAFETY: `first` has 600 pages.
        unsafe { std::ptr::write_bytes(first, 5, 600 << 12) };
        // SAFETY: live pointer from this heap.
        let grown = unsafe { heap.realloc(first, 1500 << 12) };
        assert!(!grown.is_null());
        assert_eq!(heap.usable_size(grown), 1500 << 12);
        check(grown, 600 << 12, 5);
        // SAFETY: `grown` has 1500 pages.
        unsafe { std::ptr::write_bytes(grown, 6, 1500 << 12) };
        // SAFETY: live pointer from this heap.
        let shrunk = unsafe { heap.realloc(grown, 100 << 12) };
        assert_eq!(shrunk, grown, "shrinking keeps the block");
        check(shrunk, 100 << 12, 6);
        // SAFETY: live, freed once.
        unsafe { heap.free(shrunk) };
        assert_eq!(heap.counters.live_bytes.load(Ordering::Relaxed), 0);
        assert_eq!(heap.counters.foreign_frees.load(Ordering::Relaxed), 0);
        // The shrunk block (100 pages, span class 112) is cached for reuse.
        assert_eq!(heap.cached_span_pages(), 112);
        assert_eq!(heap.pool().stats().total.used, 112);
    }

    #[test]
    fn a_full_pool_fails_in_strict_mode_and_falls_back_otherwise() {
        for strict in [true, false] {
            let heap = Heap::new(config(1, strict)).unwrap_or_else(|_| panic!("heap"));
            // 64 pages of the two colors: a 1 MiB request cannot fit.
            let ptr = heap.alloc(1 << 20, 16);
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
    fn banks_restrict_the_pool_and_drop_colors_without_such_pages() {
        let mut settings = config(16, true);
        // Colors by bits 12-14, banks by bits 13-14: bank 3 lies in colors
        // 6 and 7 only, so colors 0-5 leave the round robin.
        settings.colors = (0..8).collect();
        settings.bank_functions = vec![0x2000, 0x4000];
        settings.banks = Some(vec![3]);
        let heap = Heap::new(settings).unwrap_or_else(|_| panic!("heap"));
        assert_eq!(heap.colors(), &[6, 7]);
        let stats = heap.pool().stats();
        let free: u64 = stats.banks.iter().map(|b| b.free).sum();
        let in_bank_3: u64 = stats
            .banks
            .iter()
            .filter(|b| b.bank == 3)
            .map(|b| b.free)
            .sum();
        assert_eq!(free, in_bank_3, "every other bank's page is retired");
        assert_eq!(heap.colored_pages() as u64, free);
        assert!(free > 0 && free < 4096, "{free}");
        let ptr = heap.alloc(40_000, 16);
        assert!(!ptr.is_null());
        for offset in (0..40_000).step_by(heap.page_size()) {
            let class = heap.pool().class_of_address(ptr as usize + offset).unwrap();
            assert_eq!(class.bank, 3, "at {offset}");
        }
        // SAFETY: live, freed once.
        unsafe { heap.free(ptr) };
    }

    #[test]
    fn span_classes_round_up_by_at_most_a_quarter() {
        assert_eq!(span_class(1), 1);
        assert_eq!(span_class(8), 8);
        assert_eq!(span_class(9), 10);
        assert_eq!(span_class(17), 20);
        assert_eq!(span_class(100), 112);
        for pages in 1..5000 {
            let class = span_class(pages);
            assert!(
                class >= pages && class * 4 <= pages * 5 + 4,
                "{pages} -> {class}"
            );
        }
    }

    #[test]
    fn unknown_colors_are_refused_with_the_range() {
        let mut bad = config(1, true);
        bad.colors = vec![9];
        match Heap::new(bad) {
            Err(BuildError::Other(message)) => {
                assert!(message.contains("color 9 does not exist"), "{message}");
                assert!(message.contains("0-7"), "{message}");
            }
            other => panic!("expected an error, got {other:?}"),
        }
    }
}
