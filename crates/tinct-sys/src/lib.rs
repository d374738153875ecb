//! Linux facts and small safe syscall wrappers for tinct.
//!
//! Every reader takes a [`SysRoot`] (the live system `/` by default) so that
//! it can be tested against a fixture tree copied from `/sys` and `/proc` of
//! another machine. Live probes (syscalls that try something for real) only
//! run on the live system.
//!
//! - [`topology`]: CPUs, SMT siblings, NUMA nodes, caches and page colors;
//! - [`cache_slices`]: how many slices the LLC has, from what evidence, and
//!   the page-colour rule that follows (way size, sliced, explicit);
//! - `color_source` (feature `serde`): where a command's colour bits come
//!   from: flag, `TINCT_COLOR_BITS`, task set, machine file, derived rule;
//! - `machine_file` (feature `serde`): `/etc/tinct/machine.toml`, what
//!   sysfs cannot tell (colour bits, DRAM functions), saved by `tinct doctor --save`;
//! - [`system`]: kernel and preemption model, page size, THP, RT throttling,
//!   governors, CPU isolation, `RLIMIT_MEMLOCK`;
//! - [`privilege`]: root, capabilities, SCHED_FIFO and pagemap probes;
//! - [`perf`]: the counter layer: events by name, sysfs or raw encoding, per-thread groups, scaling, gracioli Fig. 9;
//! - [`resctrl`]: resctrl detection, control groups (CAT masks, monitoring)
//!   and one process's L3 reservation;
//! - [`sched`]: affinity, every scheduling policy (`sched_setattr`, read back), `mlockall`, `gettid`;
//! - [`sync`]: mutexes with priority inheritance or ceiling, condition variables;
//! - [`cgroup`]: cgroup v2 task groups created and removed by a run;
//! - [`signals`]: SIGPIPE for command-line output, the stop flag Ctrl-C raises;
//! - [`shared_memory`], [`supervise`]: memory shared with a forked child, fork, wait, fatal-signal notes;
//! - [`huge_buffer`]: an owned buffer in transparent huge pages, with the backing it got;
//! - [`machine`]: a one-record description of the machine (CPU, kernel, caches) for results;
//! - [`jump_chain`]: generated x86-64 code with a fixed instruction-cache miss ratio (sebek2002);
//! - [`usage`]: `getrusage(RUSAGE_THREAD)` context switches;
//! - [`user_cache`]: files a binary embeds, written once to a per-user cache;
//! - [`cache_flush`]: a buffer's lines flushed from every cache level (CLFLUSH);
//! - [`color_probe`]: does page coloring partition this machine's caches? (timing);
//! - `stack` (feature `stack`): a closure run on a stack of the caller's memory;
//! - [`footprint`]: the resident pages of this process outside given ranges;
//! - [`testing`]: privileged tests that must not silently skip in CI.

pub mod anonymous_words;
pub mod cache_flush;
pub mod cache_slices;
pub mod cgroup;
pub mod color_probe;
#[cfg(feature = "serde")]
pub mod color_source;
pub mod cpulist;
pub mod dl_partitions;
mod error;
pub mod footprint;
pub mod huge_buffer;
pub mod jump_chain;
pub mod machine;
#[cfg(feature = "serde")]
pub mod machine_file;
pub mod pagemap;
pub mod perf;
pub mod privilege;
pub mod program;
pub mod resctrl;
mod root;
pub mod sched;
pub mod shared_memory;
pub mod signals;
#[cfg(feature = "stack")]
pub mod stack;
pub mod stdio;
pub mod supervise;
pub mod sync;
pub mod system;
pub mod testing;
pub mod topology;
pub mod usage;
pub mod user_cache;

pub use cpulist::{MAX_LIST_LEN, format_cpu_list, parse_cpu_list};
pub use error::{Error, Result};
pub use root::{MAX_FILE_BYTES, SysRoot, TOPOLOGY_ROOT_VAR};
