//! `libtinct_preload.so`: unmodified programs get their heap from their
//! cache partition (kim2013 Section III-A: no change to application
//! software; Section III-C: pages of the partition's colors, handed out
//! round robin, freed pages first).
//!
//! ```text
//! TINCT_COLORS=0-15 LD_PRELOAD=libtinct_preload.so program args...
//! tinct exec --colors 0-15 -- program args...      # the same, set up for you
//! ```
//!
//! The malloc family ([`exports`]) is served by [`heap`]: a
//! `tinct_mem::ColoredArea` (every page of the requested colours, and
//! optionally DRAM banks, in colour rotation; grown on demand) with
//! per-thread caches of small objects ([`thread_cache`], [`page_kinds`])
//! and runs of whole pages ([`page_runs`]). The settings come from the
//! environment (`tinct_mem::ShimConfig`, the contract `tinct exec`
//! writes). [`anonymous_memory`] colours the program's own anonymous
//! `mmap` (`TINCT_MMAP=1`) and keeps `madvise`/`mprotect`/`munmap` from
//! breaking area pages; [`thread_stacks`] interposes `pthread_create` so
//! the program's threads run on stacks of the full size they ask for
//! whose tops (`TINCT_STACK_COLORED`, 256 KiB) are area pages (given back
//! after `pthread_join`, or once a detached thread has ended;
//! `TINCT_STACK_COLORED=0` leaves glibc's stacks); [`fork_keep`] lets a
//! child take the copy-on-write copies. The shim's own data lives in the uncolored [`bootstrap`] arena,
//! so building the heap never recurses into `malloc`. [`process`] holds
//! the process-wide heap, the `fork` handlers and the exit report
//! ([`report`], its numbers worded by [`formatting`]), which
//! [`report_on_request`] writes earlier when `tinct exec` asks before a
//! signal ends the program; [`stderr`] writes
//! from inside the allocator. A double free, or a pointer `free` or
//! `realloc` must not take, aborts the process as glibc does ([`misuse`]).

pub mod anonymous_memory;
pub mod bootstrap;
#[cfg(not(test))]
pub mod exports;
pub mod fork_keep;
pub mod formatting;
pub mod heap;
pub mod heap_handle;
pub mod lock;
pub mod misuse;
pub mod page_kinds;
pub mod page_runs;
pub mod process;
pub mod report;
pub mod report_on_request;
pub mod report_socket;
pub mod stderr;
pub mod thread_cache;
pub mod thread_stacks;

/// The shim's own Rust allocations never go through the `malloc` it replaces.
#[cfg(not(test))]
#[global_allocator]
static GLOBAL: bootstrap::BootstrapAlloc = bootstrap::BootstrapAlloc;
