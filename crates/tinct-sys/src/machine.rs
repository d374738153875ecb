//! The machine a bench or a run ran on, written into every bench result and
//! every run directory (`machine.json`) so numbers are never read without
//! their context (a VM cannot show real cache isolation).

use crate::SysRoot;
use crate::topology::Topology;
use tinct_base::units::human_bytes;

/// One cache as the results record it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct MachineCache {
    /// `L1d`, `L2`, `L3`, ...
    pub name: String,
    /// 1, 2, 3, ...
    pub level: u8,
    /// Capacity in bytes.
    pub size_bytes: u64,
    /// Associativity, if reported (0 = fully associative).
    pub ways: Option<u32>,
    /// Line size in bytes, if reported.
    pub line_bytes: Option<u32>,
    /// CPUs sharing this instance.
    pub shared_cpus: Vec<u32>,
}

/// A description of the machine, gathered best-effort: a fact that cannot
/// be read is `None` (or empty) rather than an error.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Machine {
    /// `/proc/sys/kernel/hostname`.
    pub hostname: Option<String>,
    /// `model name` of the first CPU in `/proc/cpuinfo`.
    pub cpu_model: Option<String>,
    /// True if `/proc/cpuinfo` has the `hypervisor` flag (a virtual machine).
    pub virtualized: Option<bool>,
    /// Kernel release.
    pub kernel: Option<String>,
    /// Preemption model (`PREEMPT_RT`, `PREEMPT_DYNAMIC (full)`, ...).
    pub preemption: Option<String>,
    /// Online CPUs.
    pub online_cpus: Vec<u32>,
    /// Number of NUMA nodes (0 if unknown).
    pub numa_nodes: usize,
    /// Data and unified caches, one entry per distinct (level, size) — the
    /// instances of a level are not repeated.
    pub caches: Vec<MachineCache>,
    /// Base page size in bytes.
    pub page_bytes: u64,
    /// Transparent huge page mode (`always`, `madvise`, `never`), if any.
    pub thp: Option<String>,
    /// Version of tinct that produced the result.
    pub tinct_version: String,
    /// Seconds since the Unix epoch when the description was taken.
    pub timestamp_unix_s: u64,
}

impl Machine {
    /// Describes the running machine.
    pub fn describe() -> Self {
        Self::describe_at(&SysRoot::live())
    }

    /// Describes the machine whose `/sys` and `/proc` are under `root`.
    pub fn describe_at(root: &SysRoot) -> Self {
        let topology = Topology::read(root).ok();
        let cpuinfo = root.read("/proc/cpuinfo").ok();
        let cpu_model = cpuinfo
            .as_deref()
            .and_then(|text| cpuinfo_value(text, "model name"));
        let virtualized = cpuinfo.as_deref().and_then(|text| {
            cpuinfo_value(text, "flags")
                .map(|flags| flags.split_whitespace().any(|f| f == "hypervisor"))
        });
        let kernel = crate::system::Kernel::read(root).ok();
        let page_bytes = crate::system::PageSize::read(root)
            .map(|p| p.bytes)
            .unwrap_or(4096);
        let thp = crate::system::ThpMode::read(root)
            .ok()
            .flatten()
            .map(|mode| match mode {
                crate::system::ThpMode::Always => "always".to_string(),
                crate::system::ThpMode::Madvise => "madvise".to_string(),
                crate::system::ThpMode::Never => "never".to_string(),
                crate::system::ThpMode::Other(other) => other,
            });
        let mut caches: Vec<MachineCache> = Vec::new();
        if let Some(topology) = &topology {
            for cache in &topology.caches {
                if cache.kind == crate::topology::CacheType::Instruction {
                    continue;
                }
                let name = cache.name();
                if caches
                    .iter()
                    .any(|c| c.name == name && c.size_bytes == cache.size_bytes)
                {
                    continue;
                }
                caches.push(MachineCache {
                    name,
                    level: cache.level,
                    size_bytes: cache.size_bytes,
                    ways: cache.ways,
                    line_bytes: cache.line_bytes,
                    shared_cpus: cache.shared_cpus.clone(),
                });
            }
        }
        let timestamp_unix_s = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        Self {
            hostname: root
                .read("/proc/sys/kernel/hostname")
                .ok()
                .map(|h| h.trim().to_string()),
            cpu_model,
            virtualized,
            kernel: kernel.as_ref().map(|k| k.release.clone()),
            preemption: kernel.as_ref().map(|k| k.preemption.label().to_string()),
            online_cpus: topology
                .as_ref()
                .map(|t| t.online_cpus.clone())
                .unwrap_or_default(),
            numa_nodes: topology.as_ref().map(|t| t.numa_nodes.len()).unwrap_or(0),
            caches,
            page_bytes,
            thp,
            tinct_version: env!("CARGO_PKG_VERSION").to_string(),
            timestamp_unix_s,
        }
    }

    /// The data (or unified) cache of `level`, if known.
    pub fn cache(&self, level: u8) -> Option<&MachineCache> {
        self.caches.iter().find(|c| c.level == level)
    }

    /// The last-level cache (highest level), if any cache is known.
    pub fn llc(&self) -> Option<&MachineCache> {
        self.caches.iter().max_by_key(|c| c.level)
    }

    /// One line such as `AMD EPYC ..., 2 CPUs, L1d 32 KiB, L2 1 MiB, L3 32 MiB (VM)`.
    pub fn one_line(&self) -> String {
        let caches: Vec<String> = self
            .caches
            .iter()
            .map(|c| format!("{} {}", c.name, human_bytes(c.size_bytes)))
            .collect();
        format!(
            "{}, {} CPUs, {}{}",
            self.cpu_model.as_deref().unwrap_or("unknown CPU"),
            self.online_cpus.len(),
            caches.join(", "),
            if self.virtualized == Some(true) {
                " (virtual machine)"
            } else {
                ""
            }
        )
    }
}

fn cpuinfo_value(cpuinfo: &str, key: &str) -> Option<String> {
    cpuinfo.lines().find_map(|line| {
        let (k, v) = line.split_once(':')?;
        (k.trim() == key).then(|| v.trim().to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_machine_has_cpus_and_caches() {
        let m = Machine::describe();
        assert!(!m.online_cpus.is_empty());
        assert!(m.page_bytes >= 4096);
        if let Some(llc) = m.llc() {
            assert!(llc.size_bytes >= m.caches[0].size_bytes);
        }
    }

    #[test]
    fn cpuinfo_parsing() {
        let text = "processor\t: 0\nmodel name\t: Test CPU\nflags\t\t: fpu hypervisor sse\n";
        assert_eq!(
            cpuinfo_value(text, "model name").as_deref(),
            Some("Test CPU")
        );
        assert_eq!(cpuinfo_value(text, "bogus"), None);
    }
}
