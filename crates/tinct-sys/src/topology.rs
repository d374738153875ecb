//! CPU topology, NUMA nodes, the cache hierarchy and page colors, read from
//! `/sys/devices/system/{cpu,node}`.
//!
//! Page colors (kim2013 Section III-C) are computed by the one geometry
//! of [`tinct_base::geometry`], re-exported here as [`PageColors`];
//! [`Cache::page_colors`] is the way-size rule of one cache, and
//! [`crate::cache_slices`] chooses the rule for the last-level cache
//! (sliced caches have fewer colours).

use crate::cpulist::parse_cpu_list;
use crate::error::{Error, Result};
use crate::root::{SysRoot, numbered_entries};
pub use tinct_base::geometry::{ColorGeometry, ColorRule, PageColors};

const CPU_DIR: &str = "/sys/devices/system/cpu";
const NODE_DIR: &str = "/sys/devices/system/node";

/// What the kernel reports about CPUs, NUMA nodes and caches.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Topology {
    /// Online CPUs (`/sys/devices/system/cpu/online`).
    pub online_cpus: Vec<u32>,
    /// One entry per online CPU.
    pub cpus: Vec<Cpu>,
    /// NUMA nodes; empty if the kernel has no `/sys/devices/system/node`.
    pub numa_nodes: Vec<NumaNode>,
    /// Cache instances, deduplicated across the CPUs that share them, sorted
    /// by level, then type, then first CPU.
    pub caches: Vec<Cache>,
}

/// One logical CPU.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Cpu {
    /// The CPU number.
    pub id: u32,
    /// `topology/physical_package_id` (the socket).
    pub package_id: Option<u32>,
    /// `topology/die_id`.
    pub die_id: Option<u32>,
    /// `topology/core_id` (unique only within a package).
    pub core_id: Option<u32>,
    /// `topology/thread_siblings_list`: the hardware threads of this core, this CPU included.
    pub thread_siblings: Vec<u32>,
}

impl Cpu {
    /// CPU `id` with nothing known about its place in the topology.
    fn unknown(id: u32) -> Self {
        Self {
            id,
            package_id: None,
            die_id: None,
            core_id: None,
            thread_siblings: vec![id],
        }
    }
}

/// One NUMA node.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct NumaNode {
    /// Node number.
    pub id: u32,
    /// CPUs of the node (`nodeN/cpulist`).
    pub cpus: Vec<u32>,
    /// `MemTotal` of the node in bytes, if `nodeN/meminfo` says.
    pub memory_bytes: Option<u64>,
}

/// What a cache holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
pub enum CacheType {
    /// Data only (L1d).
    Data,
    /// Instructions only (L1i).
    Instruction,
    /// Data and instructions.
    Unified,
}

impl CacheType {
    fn from_sysfs(text: &str) -> Option<Self> {
        match text {
            "Data" => Some(Self::Data),
            "Instruction" => Some(Self::Instruction),
            "Unified" => Some(Self::Unified),
            _ => None,
        }
    }

    /// Short label: `d`, `i` or empty for unified (as in "L1d", "L2").
    pub fn suffix(self) -> &'static str {
        match self {
            Self::Data => "d",
            Self::Instruction => "i",
            Self::Unified => "",
        }
    }
}

/// One cache instance, with every CPU that shares it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Cache {
    /// 1 for L1, 2 for L2, ...
    pub level: u8,
    /// Data, instruction or unified.
    #[cfg_attr(feature = "serde", serde(rename = "type"))]
    pub kind: CacheType,
    /// `id` of the instance, if the kernel exposes it.
    pub id: Option<u32>,
    /// Capacity in bytes.
    pub size_bytes: u64,
    /// Associativity; `None` if not reported, 0 means fully associative.
    pub ways: Option<u32>,
    /// Number of sets, if reported.
    pub sets: Option<u32>,
    /// Line size in bytes (`coherency_line_size`), if reported.
    pub line_bytes: Option<u32>,
    /// CPUs sharing this instance (`shared_cpu_list`).
    pub shared_cpus: Vec<u32>,
}

impl Cache {
    /// A short name such as `L1d`, `L2`, `L3`.
    pub fn name(&self) -> String {
        format!("L{}{}", self.level, self.kind.suffix())
    }

    /// Way size `size / ways` in bytes; `None` if the associativity is unknown
    /// or the cache is fully associative.
    pub fn way_bytes(&self) -> Option<u64> {
        match self.ways {
            Some(ways) if ways > 0 => Some(self.size_bytes / u64::from(ways)),
            _ => None,
        }
    }

    /// Page colors of this cache for pages of `page_bytes` (kim2013 Section
    /// III-C, computed by [`tinct_base::geometry`]); `None` if the associativity
    /// is unknown or the page size is not a power of two.
    pub fn page_colors(&self, page_bytes: u64) -> Option<PageColors> {
        let ways = self.ways.filter(|&w| w > 0)?;
        PageColors::of_cache(self.size_bytes, u64::from(ways), page_bytes).ok()
    }
}

impl Topology {
    /// Reads the topology under `root`; the first malformed file is an error.
    pub fn read(root: &SysRoot) -> Result<Self> {
        let (topology, mut problems) = Self::read_partial(root)?;
        match problems.is_empty() {
            true => Ok(topology),
            false => Err(problems.swap_remove(0)),
        }
    }

    /// Reads the topology under `root`, keeping everything that parses.
    ///
    /// Only the online CPU list is essential (an error if malformed). A
    /// malformed file of one CPU, cache or NUMA node costs only that item:
    /// a CPU's topology fields fall back to unknown, a cache or node is
    /// left out, and the error (naming the file) is returned beside the
    /// topology, so that one broken cache file does not lose the CPUs.
    pub fn read_partial(root: &SysRoot) -> Result<(Self, Vec<Error>)> {
        let online_rel = format!("{CPU_DIR}/online");
        let online_cpus = parse_list_file(root, &online_rel)?;
        let mut problems = Vec::new();
        let mut cpus = Vec::with_capacity(online_cpus.len());
        let mut caches: Vec<Cache> = Vec::new();
        for &cpu in &online_cpus {
            cpus.push(read_cpu(root, cpu).unwrap_or_else(|e| {
                problems.push(e);
                Cpu::unknown(cpu)
            }));
            for cache in read_cpu_caches(root, cpu, &mut problems)? {
                if !caches.iter().any(|known| same_instance(known, &cache)) {
                    caches.push(cache);
                }
            }
        }
        caches.sort_by(|a, b| {
            (a.level, a.kind, a.shared_cpus.first()).cmp(&(b.level, b.kind, b.shared_cpus.first()))
        });
        let numa_nodes = read_numa_nodes(root, &mut problems)?;
        let topology = Self {
            online_cpus,
            cpus,
            numa_nodes,
            caches,
        };
        Ok((topology, problems))
    }

    /// Distinct packages (sockets).
    pub fn packages(&self) -> Vec<u32> {
        let mut ids: Vec<u32> = self.cpus.iter().filter_map(|c| c.package_id).collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    /// Number of physical cores (distinct thread-sibling groups).
    pub fn physical_cores(&self) -> usize {
        let mut groups: Vec<&Vec<u32>> = self.cpus.iter().map(|c| &c.thread_siblings).collect();
        groups.sort();
        groups.dedup();
        groups.len()
    }

    /// Groups of CPUs that are SMT siblings of each other (only groups of two or more).
    pub fn smt_sibling_groups(&self) -> Vec<Vec<u32>> {
        let mut groups: Vec<Vec<u32>> = self
            .cpus
            .iter()
            .filter(|c| c.thread_siblings.len() > 1)
            .map(|c| c.thread_siblings.clone())
            .collect();
        groups.sort();
        groups.dedup();
        groups
    }

    /// True if any core runs more than one hardware thread.
    pub fn smt_active(&self) -> bool {
        !self.smt_sibling_groups().is_empty()
    }

    /// The caches of the highest level (the last-level caches), one per instance.
    pub fn last_level_caches(&self) -> Vec<&Cache> {
        let Some(max_level) = self.caches.iter().map(|c| c.level).max() else {
            return Vec::new();
        };
        self.caches
            .iter()
            .filter(|c| c.level == max_level && c.kind != CacheType::Instruction)
            .collect()
    }
}

fn same_instance(a: &Cache, b: &Cache) -> bool {
    a.level == b.level && a.kind == b.kind && a.shared_cpus == b.shared_cpus
}

fn parse_list_file(root: &SysRoot, rel: &str) -> Result<Vec<u32>> {
    let text = root.read_line(rel)?;
    parse_cpu_list(&text)
        .map_err(|e| root.parse_error(rel, 1, "a CPU list like 0-3,8", &e.to_string()))
}

fn read_cpu(root: &SysRoot, cpu: u32) -> Result<Cpu> {
    let dir = format!("{CPU_DIR}/cpu{cpu}/topology");
    let siblings_rel = format!("{dir}/thread_siblings_list");
    let thread_siblings = if root.exists(&siblings_rel) {
        parse_list_file(root, &siblings_rel)?
    } else {
        vec![cpu]
    };
    Ok(Cpu {
        id: cpu,
        package_id: root.parse_optional(&format!("{dir}/physical_package_id"), "an integer")?,
        die_id: root.parse_optional(&format!("{dir}/die_id"), "an integer")?,
        core_id: root.parse_optional(&format!("{dir}/core_id"), "an integer")?,
        thread_siblings,
    })
}

/// The caches of `cpu`; a cache whose files are malformed is left out and
/// its error pushed to `problems`. Only an unreadable cache directory is an
/// error.
fn read_cpu_caches(root: &SysRoot, cpu: u32, problems: &mut Vec<Error>) -> Result<Vec<Cache>> {
    let cache_dir = format!("{CPU_DIR}/cpu{cpu}/cache");
    let mut caches = Vec::new();
    for index in numbered_entries(&root.list_dir(&cache_dir)?, "index") {
        match read_cache(root, cpu, &format!("{cache_dir}/index{index}")) {
            Ok(cache) => caches.push(cache),
            Err(e) => problems.push(e),
        }
    }
    Ok(caches)
}

/// One cache index directory of `cpu`.
fn read_cache(root: &SysRoot, cpu: u32, dir: &str) -> Result<Cache> {
    let type_rel = format!("{dir}/type");
    let type_text = root.read_line(&type_rel)?;
    let kind = CacheType::from_sysfs(&type_text).ok_or_else(|| {
        root.parse_error(&type_rel, 1, "Data, Instruction or Unified", &type_text)
    })?;
    let size_rel = format!("{dir}/size");
    let size_text = root.read_line(&size_rel)?;
    let size_bytes = parse_cache_size(&size_text)
        .ok_or_else(|| root.parse_error(&size_rel, 1, "a size like 32K", &size_text))?;
    let shared_rel = format!("{dir}/shared_cpu_list");
    let shared_cpus = if root.exists(&shared_rel) {
        parse_list_file(root, &shared_rel)?
    } else {
        vec![cpu]
    };
    Ok(Cache {
        level: root.parse(&format!("{dir}/level"), "a cache level (1-4)")?,
        kind,
        id: root.parse_optional(&format!("{dir}/id"), "an integer")?,
        size_bytes,
        ways: root.parse_optional(&format!("{dir}/ways_of_associativity"), "an integer")?,
        sets: root.parse_optional(&format!("{dir}/number_of_sets"), "an integer")?,
        line_bytes: root.parse_optional(&format!("{dir}/coherency_line_size"), "an integer")?,
        shared_cpus,
    })
}

/// Parses a sysfs cache size: `32K`, `1024K`, `2M`, or plain bytes.
fn parse_cache_size(text: &str) -> Option<u64> {
    let (digits, multiplier) = match text.as_bytes().last()? {
        b'K' => (&text[..text.len() - 1], 1u64 << 10),
        b'M' => (&text[..text.len() - 1], 1 << 20),
        b'G' => (&text[..text.len() - 1], 1 << 30),
        _ => (text, 1),
    };
    digits.parse::<u64>().ok()?.checked_mul(multiplier)
}

/// NUMA nodes; a node whose CPU list or meminfo is malformed keeps what
/// parses, its error pushed to `problems`.
fn read_numa_nodes(root: &SysRoot, problems: &mut Vec<Error>) -> Result<Vec<NumaNode>> {
    let online_rel = format!("{NODE_DIR}/online");
    let ids = if root.exists(&online_rel) {
        match parse_list_file(root, &online_rel) {
            Ok(ids) => ids,
            Err(e) => {
                problems.push(e);
                numbered_entries(&root.list_dir(NODE_DIR)?, "node")
            }
        }
    } else {
        numbered_entries(&root.list_dir(NODE_DIR)?, "node")
    };
    let mut nodes = Vec::with_capacity(ids.len());
    for id in ids {
        let cpus_rel = format!("{NODE_DIR}/node{id}/cpulist");
        let cpus = if root.exists(&cpus_rel) {
            parse_list_file(root, &cpus_rel).unwrap_or_else(|e| {
                problems.push(e);
                Vec::new()
            })
        } else {
            Vec::new()
        };
        let meminfo = root
            .read_optional(&format!("{NODE_DIR}/node{id}/meminfo"))
            .unwrap_or_else(|e| {
                problems.push(e);
                None
            });
        nodes.push(NumaNode {
            id,
            cpus,
            memory_bytes: meminfo.as_deref().and_then(node_mem_total),
        });
    }
    Ok(nodes)
}

/// `Node 0 MemTotal:       16318340 kB` → bytes.
fn node_mem_total(meminfo: &str) -> Option<u64> {
    meminfo.lines().find_map(|line| {
        let rest = line.split_once("MemTotal:")?.1.trim();
        let kib: u64 = rest.strip_suffix("kB")?.trim().parse().ok()?;
        kib.checked_mul(1024)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache(size_bytes: u64, ways: u32) -> Cache {
        Cache {
            level: 3,
            kind: CacheType::Unified,
            id: Some(0),
            size_bytes,
            ways: Some(ways),
            sets: None,
            line_bytes: Some(64),
            shared_cpus: vec![0, 1],
        }
    }

    #[test]
    fn colors_of_a_32mib_16way_llc_with_4k_pages() {
        let colors = cache(32 << 20, 16).page_colors(4096).unwrap();
        assert_eq!(colors.way_bytes, 2 << 20);
        assert_eq!(colors.colors, 512);
        assert_eq!(colors.address_bits, Some((12, 21)));
        assert_eq!(colors.color_of(0x1234_5000), Some(0x145));
    }

    #[test]
    fn small_caches_have_one_color_and_odd_geometries_no_bits() {
        let l1 = cache(32 << 10, 8).page_colors(4096).unwrap();
        assert_eq!((l1.colors, l1.address_bits), (1, Some((12, 12))));
        let sliced = cache(30 << 20, 20).page_colors(4096).unwrap();
        assert_eq!(sliced.colors, 384);
        assert_eq!(sliced.address_bits, None);
        assert!(cache(1 << 20, 0).page_colors(4096).is_none());
    }

    #[test]
    fn parses_sizes_and_node_meminfo() {
        assert_eq!(parse_cache_size("32K"), Some(32 << 10));
        assert_eq!(parse_cache_size("2M"), Some(2 << 20));
        assert_eq!(parse_cache_size("512"), Some(512));
        assert_eq!(parse_cache_size("K"), None);
        assert_eq!(
            node_mem_total("Node 0 MemTotal:       1024 kB\nNode 0 MemFree: 1 kB\n"),
            Some(1 << 20)
        );
    }
}
