//! The raw facts `tinct doctor` judges, gathered from a [`SysRoot`] and,
//! on the live system, from probes that try things for real.

use tinct_sys::Result;
use tinct_sys::SysRoot;
use tinct_sys::cache_slices::SliceEvidence;
use tinct_sys::perf::{EventProbe, EventSources};
use tinct_sys::privilege::{PagemapProbe, Privileges, Probe};
use tinct_sys::resctrl::ResctrlStatus;
use tinct_sys::system::{
    Governor, Isolation, Kernel, MemlockLimit, PageSize, RtThrottling, ThpMode,
};
use tinct_sys::topology::Topology;

/// The `read_errors` name of a malformed file inside the topology (a cache,
/// a CPU or a NUMA node) whose item was left out.
pub const TOPOLOGY_FILE: &str = "topology file";

/// Everything doctor read. A fact that could not be read is `None` and its
/// error is in `read_errors`; live probes are `None` on a fixture tree.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Facts {
    /// CPUs, NUMA nodes, caches.
    pub topology: Option<Topology>,
    /// Base page size.
    pub page_size: Option<PageSize>,
    /// THP mode; `Some(None)` if the kernel has no THP.
    pub thp: Option<Option<ThpMode>>,
    /// Kernel release and preemption model.
    pub kernel: Option<Kernel>,
    /// RT throttling sysctls.
    pub rt_throttling: Option<RtThrottling>,
    /// cpufreq governor per online CPU.
    pub governors: Option<Vec<Governor>>,
    /// isolcpus / nohz_full.
    pub isolation: Option<Isolation>,
    /// RLIMIT_MEMLOCK.
    pub memlock: Option<MemlockLimit>,
    /// The settings under which the kernel migrates (coloured) pages.
    pub migration: Option<MigrationSettings>,
    /// uid and effective capabilities.
    pub privileges: Option<Privileges>,
    /// True if `/proc/cpuinfo` has the `hypervisor` flag (a virtual machine).
    pub hypervisor: Option<bool>,
    /// `/proc/sys/kernel/perf_event_paranoid`.
    pub perf_event_paranoid: Option<i32>,
    /// PMUs in `/sys/bus/event_source/devices`.
    pub event_sources: Option<EventSources>,
    /// CPU identity and per-slice uncore PMUs: how many slices the LLC has.
    pub slice_evidence: Option<SliceEvidence>,
    /// resctrl mounted / mountable / offers.
    pub resctrl: Option<ResctrlStatus>,
    /// Live: SCHED_FIFO on a short-lived thread.
    pub sched_fifo_probe: Option<Probe>,
    /// Live: the pagemap entry of a touched page.
    pub pagemap_probe: Option<PagemapProbe>,
    /// Live: which perf events open.
    pub perf_event_probes: Option<Vec<EventProbe>>,
    /// Facts that could not be read: (what, error).
    pub read_errors: Vec<(String, String)>,
}

impl Facts {
    /// Reads every fact under `root`; runs the live probes only if `root` is `/`.
    pub fn gather(root: &SysRoot) -> Self {
        let mut facts = Facts::default();
        let mut errors = Errors::default();
        // One malformed cache or CPU file costs that item, not the topology:
        // each is reported on its own, naming the file.
        if let Some((topology, problems)) = errors.keep("topology", Topology::read_partial(root)) {
            for problem in problems {
                errors.keep::<()>(TOPOLOGY_FILE, Err(problem));
            }
            facts.topology = Some(topology);
        }
        facts.page_size = errors.keep("page size", PageSize::read(root));
        facts.thp = errors.keep("transparent huge pages", ThpMode::read(root));
        facts.kernel = errors.keep("kernel", Kernel::read(root));
        facts.rt_throttling = errors.keep("RT throttling", RtThrottling::read(root));
        let online = facts
            .topology
            .as_ref()
            .map(|t| t.online_cpus.clone())
            .unwrap_or_default();
        facts.governors = errors.keep(
            "frequency governor",
            tinct_sys::system::governors(root, &online),
        );
        facts.isolation = errors.keep("CPU isolation", Isolation::read(root));
        facts.memlock = errors.keep("RLIMIT_MEMLOCK", MemlockLimit::read(root));
        facts.migration = errors.keep("page migration settings", MigrationSettings::read(root));
        facts.privileges = errors.keep("privileges", Privileges::read(root));
        facts.hypervisor = errors.keep("cpuinfo", read_hypervisor_flag(root)).flatten();
        facts.perf_event_paranoid = errors
            .keep(
                "perf_event_paranoid",
                root.parse_optional("/proc/sys/kernel/perf_event_paranoid", "an integer"),
            )
            .flatten();
        facts.event_sources = errors.keep("perf event sources", EventSources::read(root));
        facts.slice_evidence = errors.keep("LLC slices", SliceEvidence::read(root));
        facts.resctrl = errors.keep("resctrl", ResctrlStatus::read(root));
        if root.is_live() {
            facts.sched_fifo_probe = Some(tinct_sys::privilege::probe_sched_fifo());
            facts.pagemap_probe = Some(tinct_sys::privilege::probe_pagemap());
            facts.perf_event_probes = Some(tinct_sys::perf::probe_events());
        }
        facts.read_errors = errors.0;
        facts
    }
}

/// The kernel settings that decide whether a page stays on its frame, and
/// so in its colour (see tinct-mem's `locking` module for what each does).
/// `None`: the file does not exist (a kernel without the feature).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct MigrationSettings {
    /// `/proc/sys/vm/compact_unevictable_allowed`: 1 lets compaction
    /// migrate mlocked pages.
    pub compact_unevictable_allowed: Option<u32>,
    /// `/proc/sys/vm/compaction_proactiveness` (0-100, 0: off).
    pub compaction_proactiveness: Option<u32>,
    /// The selected mode of `/sys/kernel/mm/transparent_hugepage/defrag`
    /// (`always`, `defer`, `defer+madvise`, `madvise`, `never`).
    pub thp_defrag: Option<String>,
    /// `/proc/sys/kernel/numa_balancing` (0: off).
    pub numa_balancing: Option<u32>,
}

impl MigrationSettings {
    /// Reads the settings under `root`.
    pub fn read(root: &SysRoot) -> Result<Self> {
        let number = "an unsigned integer";
        Ok(Self {
            compact_unevictable_allowed: root
                .parse_optional("/proc/sys/vm/compact_unevictable_allowed", number)?,
            compaction_proactiveness: root
                .parse_optional("/proc/sys/vm/compaction_proactiveness", number)?,
            thp_defrag: root
                .read_line_optional("/sys/kernel/mm/transparent_hugepage/defrag")?
                .map(|line| selected_mode(&line)),
            numa_balancing: root.parse_optional("/proc/sys/kernel/numa_balancing", number)?,
        })
    }
}

/// The bracketed choice of a sysfs mode line (`always defer [madvise]
/// never` → `madvise`), or the whole line when nothing is bracketed.
fn selected_mode(line: &str) -> String {
    line.split_whitespace()
        .find_map(|word| word.strip_prefix('[')?.strip_suffix(']'))
        .unwrap_or(line)
        .to_string()
}

/// Collects read errors while keeping the values that could be read.
#[derive(Default)]
struct Errors(Vec<(String, String)>);

impl Errors {
    fn keep<T>(&mut self, what: &str, result: Result<T>) -> Option<T> {
        match result {
            Ok(value) => Some(value),
            Err(e) => {
                self.0.push((what.to_string(), e.to_string()));
                None
            }
        }
    }
}

fn read_hypervisor_flag(root: &SysRoot) -> Result<Option<bool>> {
    Ok(root.read_optional("/proc/cpuinfo")?.map(|cpuinfo| {
        cpuinfo
            .lines()
            .find(|l| l.starts_with("flags"))
            .is_some_and(|l| l.split_whitespace().any(|w| w == "hypervisor"))
    }))
}
