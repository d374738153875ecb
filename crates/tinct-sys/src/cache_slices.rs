//! How many slices the last-level cache has, from what evidence, and the
//! page colours that follow (the one place that chooses the colour rule).
//!
//! A sliced LLC indexes sets within a slice and picks the slice by a hash
//! of higher address bits, so only the bits below the slice hash are
//! colour bits (kim2013 Section IV-A: the i7-2600 has 32 colours where
//! the way-size rule gives 128; [`tinct_geometry::PageColors::of_sliced_cache`]).
//! Linux does not say how many slices there are. The evidence, strongest
//! first:
//!
//! 1. colour bits given explicitly (a task set's `color_bits`,
//!    `--color-bits`): used as given;
//! 2. the uncore PMUs: one `uncore_cbox_N` (Intel client parts) or
//!    `uncore_cha_N` (Intel Xeon since Skylake-SP) per LLC slice, in
//!    `/sys/bus/event_source/devices`;
//! 3. a virtual machine (`hypervisor` in `/proc/cpuinfo`): the virtual
//!    topology says nothing about the host's slices, so the way-size rule
//!    is used and said to be unverifiable (guest-physical pages are not
//!    host colours anyway);
//! 4. a CPU known to slice its LLC with one slice per core: Intel family
//!    6 from Sandy Bridge (model 0x2a) on, AMD Zen (family 0x17 and later,
//!    one L3 slice per core of a core complex): slices = the physical
//!    cores sharing the cache;
//! 5. otherwise the way-size rule (kim2013 Section II-B).
//!
//! Fewer colours than the truth is safe (pages of different computed
//! colours never share sets); more is not. So a per-slice way that is not
//! a power of two leaves the bits unknown and asks for them instead of
//! rounding.

use crate::error::Result;
use crate::root::SysRoot;
use crate::topology::{Cache, Topology};
use tinct_geometry::{ColorGeometry, ColorRule, GeometryError, PageColors};

const EVENT_SOURCES: &str = "/sys/bus/event_source/devices";

/// Vendor, family and model from `/proc/cpuinfo`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct CpuIdentity {
    /// `vendor_id`, e.g. `GenuineIntel`, `AuthenticAMD`.
    pub vendor: String,
    /// `cpu family`.
    pub family: Option<u32>,
    /// `model`.
    pub model: Option<u32>,
    /// The `hypervisor` flag: a virtual machine.
    pub hypervisor: bool,
}

impl CpuIdentity {
    /// Reads the first processor of `/proc/cpuinfo` (an empty identity if
    /// the file is missing, as in a partial fixture tree).
    pub fn read(root: &SysRoot) -> Result<Self> {
        Ok(root
            .read_optional("/proc/cpuinfo")?
            .map_or_else(Self::default, |text| Self::parse(&text)))
    }

    /// Parses the text of `/proc/cpuinfo` (the first processor's fields).
    pub fn parse(cpuinfo: &str) -> Self {
        let mut identity = Self::default();
        for line in cpuinfo.lines() {
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            let (key, value) = (key.trim(), value.trim());
            match key {
                "vendor_id" if identity.vendor.is_empty() => identity.vendor = value.to_string(),
                "cpu family" if identity.family.is_none() => identity.family = value.parse().ok(),
                "model" if identity.model.is_none() => identity.model = value.parse().ok(),
                "flags" => {
                    identity.hypervisor |= value.split_whitespace().any(|f| f == "hypervisor");
                }
                _ => {}
            }
        }
        identity
    }

    /// True for a CPU whose LLC is sliced by an address hash with one
    /// slice per core: Intel family 6 from Sandy Bridge (model 0x2a) on,
    /// AMD and Hygon Zen (family 0x17 and later).
    pub fn slices_per_core(&self) -> bool {
        match (self.vendor.as_str(), self.family, self.model) {
            ("GenuineIntel", Some(6), Some(model)) => model >= 0x2a,
            ("AuthenticAMD" | "HygonGenuine", Some(family), _) => family >= 0x17,
            _ => false,
        }
    }

    /// `Intel family 6 model 0x2a`, for reasons.
    pub fn describe(&self) -> String {
        format!(
            "{} family {} model {}",
            if self.vendor.is_empty() {
                "unknown vendor"
            } else {
                &self.vendor
            },
            self.family.map_or("?".into(), |f| format!("{f:#x}")),
            self.model.map_or("?".into(), |m| format!("{m:#x}"))
        )
    }
}

/// What tells how many slices the LLC has.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct SliceEvidence {
    /// The CPU.
    pub cpu: CpuIdentity,
    /// Uncore PMUs with one instance per LLC slice (`uncore_cbox_0`, ...).
    pub slice_pmus: Vec<String>,
}

impl SliceEvidence {
    /// Reads `/proc/cpuinfo` and the PMU list under `root`.
    pub fn read(root: &SysRoot) -> Result<Self> {
        let pmus = if root.exists(EVENT_SOURCES) {
            root.list_dir(EVENT_SOURCES)?
        } else {
            Vec::new()
        };
        Ok(Self {
            cpu: CpuIdentity::read(root)?,
            slice_pmus: slice_pmus(&pmus),
        })
    }
}

/// The PMU names that count one LLC slice each, sorted by number.
fn slice_pmus(names: &[String]) -> Vec<String> {
    let mut found: Vec<(u32, &String)> = names
        .iter()
        .filter_map(|name| {
            let number = name
                .strip_prefix("uncore_cbox_")
                .or_else(|| name.strip_prefix("uncore_cha_"))?;
            Some((number.parse().ok()?, name))
        })
        .collect();
    found.sort();
    found.into_iter().map(|(_, name)| name.clone()).collect()
}

/// Physical cores among `cpus` (distinct thread-sibling groups).
fn physical_cores(topology: &Topology, cpus: &[u32]) -> u64 {
    let mut groups: Vec<&Vec<u32>> = topology
        .cpus
        .iter()
        .filter(|c| cpus.contains(&c.id))
        .map(|c| &c.thread_siblings)
        .collect();
    groups.sort();
    groups.dedup();
    groups.len().max(1) as u64
}

/// The page colours of `llc` for pages of `page_bytes`, with the rule and
/// the evidence (see the module documentation for the order).
pub fn llc_color_geometry(
    llc: &Cache,
    topology: &Topology,
    evidence: &SliceEvidence,
    page_bytes: u64,
) -> std::result::Result<ColorGeometry, GeometryError> {
    let ways = u64::from(
        llc.ways
            .filter(|&w| w > 0)
            .ok_or(GeometryError::EmptyCache {
                size: llc.size_bytes,
                ways: 0,
            })?,
    );
    let name = llc.name();
    let way_rule = |reason: String| {
        Ok(ColorGeometry {
            colors: PageColors::of_cache(llc.size_bytes, ways, page_bytes)?,
            rule: ColorRule::WaySize,
            reason,
        })
    };
    let sliced = |slices: u64, reason: String| {
        Ok(ColorGeometry {
            colors: PageColors::of_sliced_cache(llc.size_bytes, ways, slices, page_bytes)?,
            rule: ColorRule::Sliced { slices },
            reason,
        })
    };
    let pmus = evidence.slice_pmus.len() as u64;
    if pmus > 1 {
        return sliced(
            pmus,
            format!(
                "{pmus} {name} slices counted from the uncore PMUs ({} .. {}, one per slice); \
                 the way-size rule would give {} colours",
                evidence.slice_pmus[0],
                evidence.slice_pmus[evidence.slice_pmus.len() - 1],
                way_size_colors(llc.size_bytes, ways, page_bytes)
            ),
        );
    }
    if evidence.cpu.hypervisor {
        return way_rule(format!(
            "virtual machine: the host's {name} slices are not visible (the virtual topology says \
             nothing about them), so the way-size rule is used unverified; guest-physical pages \
             are not host colours anyway"
        ));
    }
    if evidence.cpu.slices_per_core() {
        let cores = physical_cores(topology, &llc.shared_cpus);
        if cores > 1 {
            return sliced(
                cores,
                format!(
                    "{} slices its {name} with one slice per core: {cores} physical cores share \
                     it, so {cores} slices (kim2013 Section IV-A); the way-size rule would give \
                     {} colours",
                    evidence.cpu.describe(),
                    way_size_colors(llc.size_bytes, ways, page_bytes)
                ),
            );
        }
    }
    way_rule(format!(
        "no sign of a sliced {name} ({}, no per-slice uncore PMU): the set index of the whole \
         cache (kim2013 Section II-B)",
        evidence.cpu.describe()
    ))
}

fn way_size_colors(size: u64, ways: u64, page_bytes: u64) -> String {
    PageColors::of_cache(size, ways, page_bytes).map_or("?".into(), |c| c.colors.to_string())
}

/// The colour geometry given explicitly as address `bits`.
pub fn explicit_color_geometry(
    bits: &[u32],
    page_bytes: u64,
    source: &str,
) -> std::result::Result<ColorGeometry, GeometryError> {
    Ok(ColorGeometry {
        colors: PageColors::of_bits(bits, page_bytes)?,
        rule: ColorRule::Explicit,
        reason: format!("given by {source}"),
    })
}

/// This machine's (or a copied tree's) LLC colour geometry: the topology,
/// the slice evidence and the rule, read under `root`.
pub fn machine_color_geometry(
    root: &SysRoot,
    page_bytes: u64,
) -> std::result::Result<ColorGeometry, String> {
    let topology = Topology::read(root).map_err(|e| e.to_string())?;
    let evidence = SliceEvidence::read(root).map_err(|e| e.to_string())?;
    let llc = topology
        .last_level_caches()
        .first()
        .copied()
        .ok_or_else(|| {
            format!(
                "no cache found under {}",
                root.path("/sys/devices/system/cpu").display()
            )
        })?;
    llc_color_geometry(llc, &topology, &evidence, page_bytes)
        .map_err(|e| format!("{} colours: {e}", llc.name()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::{CacheType, Cpu};

    fn i7_2600() -> (Topology, Cache) {
        // 4 cores, 2 threads each (CPUs i and i + 4 are siblings).
        let cpus = (0..8)
            .map(|id| Cpu {
                id,
                package_id: Some(0),
                die_id: Some(0),
                core_id: Some(id % 4),
                thread_siblings: vec![id % 4, id % 4 + 4],
            })
            .collect();
        let llc = Cache {
            level: 3,
            kind: CacheType::Unified,
            id: Some(0),
            size_bytes: 8 << 20,
            ways: Some(16),
            sets: Some(8192),
            line_bytes: Some(64),
            shared_cpus: (0..8).collect(),
        };
        let topology = Topology {
            online_cpus: (0..8).collect(),
            cpus,
            numa_nodes: Vec::new(),
            caches: vec![llc.clone()],
        };
        (topology, llc)
    }

    fn cpu(vendor: &str, family: u32, model: u32, hypervisor: bool) -> CpuIdentity {
        CpuIdentity {
            vendor: vendor.into(),
            family: Some(family),
            model: Some(model),
            hypervisor,
        }
    }

    #[test]
    fn kim2013s_i7_2600_gets_32_colours_from_one_slice_per_core() {
        let (topology, llc) = i7_2600();
        let evidence = SliceEvidence {
            cpu: cpu("GenuineIntel", 6, 0x2a, false),
            slice_pmus: Vec::new(),
        };
        let geometry = llc_color_geometry(&llc, &topology, &evidence, 4096).unwrap();
        assert_eq!(geometry.rule, ColorRule::Sliced { slices: 4 });
        assert_eq!(geometry.colors.colors, 32);
        assert_eq!(geometry.colors.color_bits().unwrap(), 12..17);
        assert!(
            geometry.reason.contains("4 physical cores") && geometry.reason.contains("128"),
            "{}",
            geometry.reason
        );
    }

    #[test]
    fn uncore_pmus_count_slices_before_anything_else() {
        let (topology, llc) = i7_2600();
        let names: Vec<String> = ["cpu", "uncore_cbox_1", "uncore_cbox_0", "uncore_imc"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let evidence = SliceEvidence {
            // Even a VM flag does not beat counted slices.
            cpu: cpu("GenuineIntel", 6, 0x9e, true),
            slice_pmus: slice_pmus(&names),
        };
        assert_eq!(evidence.slice_pmus, vec!["uncore_cbox_0", "uncore_cbox_1"]);
        let geometry = llc_color_geometry(&llc, &topology, &evidence, 4096).unwrap();
        assert_eq!(geometry.rule, ColorRule::Sliced { slices: 2 });
        assert_eq!(geometry.colors.colors, 64);
        assert!(
            geometry.reason.contains("uncore_cbox_0"),
            "{}",
            geometry.reason
        );
    }

    #[test]
    fn vms_old_cpus_and_single_cores_keep_the_way_size_rule() {
        let (topology, llc) = i7_2600();
        for (identity, words) in [
            (cpu("AuthenticAMD", 0x19, 0x11, true), "virtual machine"),
            (cpu("GenuineIntel", 6, 0x1a, false), "no sign of a sliced"),
            (CpuIdentity::default(), "unknown vendor"),
        ] {
            let evidence = SliceEvidence {
                cpu: identity,
                slice_pmus: Vec::new(),
            };
            let geometry = llc_color_geometry(&llc, &topology, &evidence, 4096).unwrap();
            assert_eq!(geometry.rule, ColorRule::WaySize);
            assert_eq!(geometry.colors.colors, 128);
            assert!(geometry.reason.contains(words), "{}", geometry.reason);
        }
    }

    #[test]
    fn a_per_slice_way_that_is_not_a_power_of_two_leaves_the_bits_unknown() {
        let (mut topology, mut llc) = i7_2600();
        // 6 cores sharing 8 MiB: 1.33 MiB slices.
        llc.shared_cpus = (0..6).collect();
        for c in &mut topology.cpus {
            c.thread_siblings = vec![c.id];
        }
        let evidence = SliceEvidence {
            cpu: cpu("AuthenticAMD", 0x17, 1, false),
            slice_pmus: Vec::new(),
        };
        assert!(llc_color_geometry(&llc, &topology, &evidence, 4096).is_err());
    }

    #[test]
    fn cpuinfo_gives_vendor_family_model_and_the_vm_flag() {
        let identity = CpuIdentity::parse(
            "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\n\
             model name\t: AMD EPYC\nflags\t\t: fpu vme hypervisor lahf_lm\n\nprocessor\t: 1\n\
             vendor_id\t: Other\n",
        );
        assert_eq!(identity, cpu("AuthenticAMD", 25, 17, true));
        assert!(identity.slices_per_core());
        assert_eq!(identity.describe(), "AuthenticAMD family 0x19 model 0x11");
    }

    #[test]
    fn explicit_bits_are_taken_as_given() {
        let geometry = explicit_color_geometry(&[12, 13, 14], 4096, "--color-bits").unwrap();
        assert_eq!(
            (geometry.rule, geometry.colors.colors),
            (ColorRule::Explicit, 8)
        );
        assert!(explicit_color_geometry(&[13], 4096, "x").is_err());
    }
}
