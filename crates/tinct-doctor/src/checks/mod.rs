//! Judging the [`Facts`]: one function per subject, each returning a
//! [`Finding`] with a level and, where something should change, the fix.

mod hardware;
mod memory;
mod page_migration;
mod partitioning;
mod perf;
mod scheduling;

use super::{Backend, Facts, Finding, Level};
use hardware::{caches, colors, cpus, numa};
use memory::{memlock, page_size, pagemap, thp};
use page_migration::page_migration;
use partitioning::{backend, resctrl};
use perf::{perf_hardware, perf_software};
use scheduling::{governor, isolation, kernel, rt_throttling, sched_fifo};

/// Subject names, shared with tests and the CLI.
pub mod subject {
    /// CPUs and SMT.
    pub const CPUS: &str = "CPUs and SMT";
    /// Cache hierarchy.
    pub const CACHES: &str = "cache hierarchy";
    /// Page colors of the last-level cache.
    pub const COLORS: &str = "page colors";
    /// The colour bits the commands use, and their source.
    pub const COLOURS_IN_FORCE: &str = "colour bits in force";
    /// Page size.
    pub const PAGE_SIZE: &str = "page size";
    /// Transparent huge pages.
    pub const THP: &str = "transparent huge pages";
    /// NUMA nodes.
    pub const NUMA: &str = "NUMA nodes";
    /// Pagemap PFNs.
    pub const PAGEMAP: &str = "pagemap PFNs";
    /// SCHED_FIFO.
    pub const SCHED_FIFO: &str = "SCHED_FIFO";
    /// RLIMIT_MEMLOCK.
    pub const MEMLOCK: &str = "RLIMIT_MEMLOCK";
    /// RT throttling.
    pub const RT_THROTTLING: &str = "RT throttling";
    /// Hardware perf events.
    pub const PERF_HARDWARE: &str = "perf events (hardware)";
    /// Software perf events.
    pub const PERF_SOFTWARE: &str = "perf events (software)";
    /// resctrl.
    pub const RESCTRL: &str = "resctrl";
    /// Kernel version and preemption model.
    pub const KERNEL: &str = "kernel and preemption";
    /// Frequency governor.
    pub const GOVERNOR: &str = "frequency governor";
    /// CPU isolation.
    pub const ISOLATION: &str = "isolcpus / nohz_full";
    /// `vm.compact_unevictable_allowed`.
    pub const COMPACT_UNEVICTABLE: &str = "compaction of locked pages";
    /// `vm.compaction_proactiveness`.
    pub const PROACTIVE_COMPACTION: &str = "proactive compaction";
    /// `transparent_hugepage/defrag`.
    pub const THP_DEFRAG: &str = "THP defrag";
    /// `kernel.numa_balancing`.
    pub const NUMA_BALANCING: &str = "NUMA balancing";
    /// Summary: will coloured pages stay in their colours?
    pub const COLOURS_HOLD: &str = "colours hold";
    /// Cache partitioning backend summary.
    pub const BACKEND: &str = "cache partitioning backend";
}

pub(super) fn finding(
    subject: &str,
    level: Level,
    found: impl Into<String>,
    fix: Option<String>,
) -> Finding {
    Finding {
        subject: subject.to_string(),
        level,
        found: found.into(),
        fix,
    }
}

/// All findings, in a fixed order, and the backend summary.
pub(super) fn findings(facts: &Facts) -> (Vec<Finding>, Backend) {
    let mut out = Vec::new();
    match &facts.topology {
        Some(topology) => {
            out.push(cpus(topology));
            out.push(caches(topology));
            out.push(colors(
                topology,
                llc_colors(facts),
                page_bytes(facts),
                facts
                    .slice_evidence
                    .as_ref()
                    .is_some_and(|e| e.cpu.hypervisor),
            ));
            out.push(numa(topology));
        }
        None => out.push(unreadable(subject::CPUS, facts, "topology")),
    }
    out.push(page_size(facts));
    out.push(thp(facts));
    out.push(pagemap(facts));
    out.push(sched_fifo(facts));
    out.push(memlock(facts));
    out.extend(page_migration(facts));
    out.push(rt_throttling(facts));
    out.push(perf_hardware(facts));
    out.push(perf_software(facts));
    out.push(resctrl(facts));
    out.push(kernel(facts));
    out.push(governor(facts));
    out.push(isolation(facts));
    let (backend, summary) = backend(facts);
    out.push(summary);
    for (what, error) in &facts.read_errors {
        if what != "topology" {
            out.push(finding(
                &format!("reading {what}"),
                Level::Warning,
                error.clone(),
                None,
            ));
        }
    }
    (out, backend)
}

/// The LLC's page colours under the rule the evidence supports
/// ([`tinct_sys::cache_slices`]); `None` without a topology or an LLC.
pub(crate) fn llc_colors(
    facts: &Facts,
) -> Option<Result<tinct_base::geometry::ColorGeometry, tinct_base::geometry::GeometryError>> {
    let topology = facts.topology.as_ref()?;
    let llc = topology.last_level_caches().first().copied()?;
    let evidence = facts.slice_evidence.clone().unwrap_or_default();
    Some(tinct_sys::cache_slices::llc_color_geometry(
        llc,
        topology,
        &evidence,
        page_bytes(facts),
    ))
}

pub(super) fn page_bytes(facts: &Facts) -> u64 {
    facts.page_size.as_ref().map_or(4096, |p| p.bytes)
}

pub(super) fn unreadable(subject: &str, facts: &Facts, what: &str) -> Finding {
    let error = facts
        .read_errors
        .iter()
        .find(|(w, _)| w == what)
        .map_or("not readable".to_string(), |(_, e)| e.clone());
    finding(
        subject,
        Level::Warning,
        format!("could not read: {error}"),
        None,
    )
}
