//! resctrl detection (Intel RDT / AMD PQoS): is it mounted, mountable,
//! advertised by the CPU, and what does `info/` offer. Detection only,
//! read under a [`SysRoot`] (so doctor can read another machine's tree);
//! the groups that write schemata are in [`super::groups`].

use crate::error::Result;
use crate::root::SysRoot;
use std::path::PathBuf;

/// The CPU flags (from `/proc/cpuinfo`) that announce resctrl features.
pub const RESCTRL_CPU_FLAGS: [&str; 9] = [
    "rdt_a",
    "cat_l3",
    "cat_l2",
    "cdp_l3",
    "cdp_l2",
    "mba",
    "cqm",
    "cqm_llc",
    "cqm_mbm_total",
];

/// What the machine offers for hardware cache allocation.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct ResctrlStatus {
    /// Mount point from `/proc/mounts` (as written there), if mounted.
    pub mount_point: Option<PathBuf>,
    /// True if `resctrl` is listed in `/proc/filesystems` (the kernel can mount it).
    pub filesystem_available: bool,
    /// Which of [`RESCTRL_CPU_FLAGS`] the first CPU in `/proc/cpuinfo` has.
    pub cpu_flags: Vec<String>,
    /// `info/` of the mounted filesystem.
    pub info: Option<ResctrlInfo>,
}

/// The `info/` directory of a mounted resctrl.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct ResctrlInfo {
    /// `info/L3` (cache allocation for L3).
    pub l3: Option<CacheAllocation>,
    /// `info/L3CODE` (with CDP enabled).
    pub l3_code: Option<CacheAllocation>,
    /// `info/L3DATA` (with CDP enabled).
    pub l3_data: Option<CacheAllocation>,
    /// `info/L2`.
    pub l2: Option<CacheAllocation>,
    /// `info/MB` (memory bandwidth allocation).
    pub memory_bandwidth: Option<BandwidthAllocation>,
    /// `info/L3_MON` (monitoring).
    pub l3_monitoring: Option<Monitoring>,
}

/// A cache-allocation resource (`info/L3`, `info/L2`, ...).
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct CacheAllocation {
    /// `cbm_mask`: the full capacity bit mask, hexadecimal as written.
    pub cbm_mask: String,
    /// Number of bits in `cbm_mask` (the number of allocatable portions).
    pub cbm_bits: u32,
    /// `min_cbm_bits`.
    pub min_cbm_bits: Option<u32>,
    /// `num_closids`: how many allocation groups can exist.
    pub num_closids: Option<u32>,
    /// `shareable_bits`, hexadecimal as written.
    pub shareable_bits: Option<String>,
}

/// Memory bandwidth allocation (`info/MB`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct BandwidthAllocation {
    /// `min_bandwidth` (percent).
    pub min_bandwidth: Option<u32>,
    /// `bandwidth_gran` (percent steps).
    pub bandwidth_gran: Option<u32>,
    /// `num_closids`.
    pub num_closids: Option<u32>,
}

/// Cache and bandwidth monitoring (`info/L3_MON`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Monitoring {
    /// `mon_features`, one per line (e.g. `llc_occupancy`, `mbm_total_bytes`).
    pub features: Vec<String>,
    /// `num_rmids`.
    pub num_rmids: Option<u32>,
}

impl ResctrlStatus {
    /// Reads `/proc/mounts`, `/proc/filesystems`, `/proc/cpuinfo` and, if
    /// mounted, `<mount>/info/` under `root`.
    pub fn read(root: &SysRoot) -> Result<Self> {
        let mount_point = root
            .read_optional("/proc/mounts")?
            .as_deref()
            .and_then(resctrl_mount_point);
        let filesystem_available = root
            .read_optional("/proc/filesystems")?
            .is_some_and(|text| {
                text.lines()
                    .any(|l| l.split_whitespace().last() == Some("resctrl"))
            });
        let cpu_flags = root
            .read_optional("/proc/cpuinfo")?
            .map(|text| resctrl_flags(&text))
            .unwrap_or_default();
        let info = match &mount_point {
            Some(mount) => Some(read_info(root, &format!("{}/info", mount.display()))?),
            None => None,
        };
        Ok(Self {
            mount_point,
            filesystem_available,
            cpu_flags,
            info,
        })
    }

    /// True if the CPU advertises L3 or L2 cache allocation.
    pub fn cpu_has_cache_allocation(&self) -> bool {
        self.cpu_flags
            .iter()
            .any(|f| f == "cat_l3" || f == "cat_l2")
    }

    /// True if a mounted resctrl offers cache allocation (`info/L3` or `info/L2`).
    pub fn offers_cache_allocation(&self) -> bool {
        self.info
            .as_ref()
            .is_some_and(|i| i.l3.is_some() || i.l3_code.is_some() || i.l2.is_some())
    }
}

fn resctrl_mount_point(mounts: &str) -> Option<PathBuf> {
    mounts.lines().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        (fields.get(2) == Some(&"resctrl")).then(|| PathBuf::from(fields[1]))
    })
}

fn resctrl_flags(cpuinfo: &str) -> Vec<String> {
    let Some(flags) = cpuinfo.lines().find_map(|l| {
        l.strip_prefix("flags")
            .and_then(|rest| rest.split_once(':'))
            .map(|(_, f)| f)
    }) else {
        return Vec::new();
    };
    let present: Vec<&str> = flags.split_whitespace().collect();
    RESCTRL_CPU_FLAGS
        .iter()
        .filter(|flag| present.contains(flag))
        .map(|flag| flag.to_string())
        .collect()
}

fn read_info(root: &SysRoot, info: &str) -> Result<ResctrlInfo> {
    let cache = |name: &str| read_cache_allocation(root, &format!("{info}/{name}"));
    let mb = format!("{info}/MB");
    let mon = format!("{info}/L3_MON");
    Ok(ResctrlInfo {
        l3: cache("L3")?,
        l3_code: cache("L3CODE")?,
        l3_data: cache("L3DATA")?,
        l2: cache("L2")?,
        memory_bandwidth: if root.exists(&mb) {
            Some(BandwidthAllocation {
                min_bandwidth: root.parse_optional(&format!("{mb}/min_bandwidth"), "percent")?,
                bandwidth_gran: root.parse_optional(&format!("{mb}/bandwidth_gran"), "percent")?,
                num_closids: root.parse_optional(&format!("{mb}/num_closids"), "an integer")?,
            })
        } else {
            None
        },
        l3_monitoring: if root.exists(&mon) {
            Some(Monitoring {
                features: root
                    .read_optional(&format!("{mon}/mon_features"))?
                    .unwrap_or_default()
                    .lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty())
                    .map(str::to_string)
                    .collect(),
                num_rmids: root.parse_optional(&format!("{mon}/num_rmids"), "an integer")?,
            })
        } else {
            None
        },
    })
}

fn read_cache_allocation(root: &SysRoot, dir: &str) -> Result<Option<CacheAllocation>> {
    let mask_rel = format!("{dir}/cbm_mask");
    let Some(cbm_mask) = root.read_line_optional(&mask_rel)? else {
        return Ok(None);
    };
    let cbm_bits = u64::from_str_radix(&cbm_mask, 16)
        .map_err(|_| root.parse_error(&mask_rel, 1, "a hexadecimal bit mask", &cbm_mask))?
        .count_ones();
    Ok(Some(CacheAllocation {
        cbm_mask,
        cbm_bits,
        min_cbm_bits: root.parse_optional(&format!("{dir}/min_cbm_bits"), "an integer")?,
        num_closids: root.parse_optional(&format!("{dir}/num_closids"), "an integer")?,
        shareable_bits: root.read_line_optional(&format!("{dir}/shareable_bits"))?,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_mount_point_and_flags() {
        let mounts = "proc /proc proc rw 0 0\nresctrl /sys/fs/resctrl resctrl rw 0 0\n";
        assert_eq!(
            resctrl_mount_point(mounts),
            Some(PathBuf::from("/sys/fs/resctrl"))
        );
        assert_eq!(resctrl_mount_point("proc /proc proc rw 0 0\n"), None);
        let cpuinfo = "processor: 0\nflags\t\t: fpu cat_l3 cdp_l3 mba sse\n";
        assert_eq!(resctrl_flags(cpuinfo), vec!["cat_l3", "cdp_l3", "mba"]);
    }
}
