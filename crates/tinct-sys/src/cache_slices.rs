//! How many slices the last-level cache has, from what evidence, and the
//! page colours that follow (the one place that chooses the colour rule).
//!
//! A sliced LLC indexes sets within a slice and picks the slice by a hash
//! of higher address bits, so only the bits below the slice hash are
//! colour bits (kim2013 Section IV-A: the i7-2600 has 32 colours where
//! the way-size rule gives 128; [`tinct_base::geometry::PageColors::of_sliced_cache`]).
//!
//! **The safety rule.** Colours computed from `s` slices are the address
//! bits below `size / s / ways`. Counting *more* slices than the cache has
//! gives fewer colour bits, a subset of the true ones: pages of different
//! computed colours still never share sets, so that is safe. Counting
//! *fewer* slices gives colour bits the cache does not have: unsafe. So
//! each count below is the truth or a lower bound of which the largest is
//! taken, and where no count can be trusted the bits are refused (the user
//! gives them: `--color-bits`, `TINCT_COLOR_BITS`, the machine file)
//! rather than guessed. A per-slice way that is not a power of two leaves
//! the bits unknown too. One answer is kept although it may count too
//! few slices, and says "unverified" in its reason: one slice per core on
//! a Xeon without CHA PMUs whose LLC matches no published slice size
//! (`tests/fixtures.rs` pins it).
//!
//! Linux does not say how many slices there are. The evidence, strongest
//! first:
//!
//! 1. colour bits given explicitly (a task set's `color_bits`,
//!    `--color-bits`): used as given ([`explicit_color_geometry`]);
//! 2. `uncore_cha_N` PMUs (Intel Xeon since Skylake-SP): one caching and
//!    home agent per LLC slice, and Linux registers one PMU per *enabled*
//!    CHA ([`CHA_SOURCE`]): the slice count, exactly;
//! 3. `uncore_cbox_N` PMUs (Intel ring parts): one box per core on Sandy
//!    Bridge to Broadwell, but one box fronts *two* slices from Skylake
//!    (client) on ([`CLIENT_SPLIT_SOURCE`]), and Linux caps the box count at
//!    the core count ([`RING_XEON_SOURCE`]); so the boxes count slices only
//!    through a published boxes-to-slices ratio, and only as a lower bound;
//!    where no ratio is published (hybrid and later clients) the bits are
//!    refused;
//! 4. a virtual machine (`hypervisor` in `/proc/cpuinfo`): its vCPUs say
//!    nothing about the host's cores, so only the counts of step 5 that do
//!    not rest on them (a Zen complex's design size, a published Xeon
//!    slice size) and the way-size rule of an unsliced family are used;
//!    otherwise the bits are refused (guest-physical pages need not be
//!    host colours anyway, which every reason says);
//! 5. the CPU family ([`CpuIdentity::slices_per_core`]):
//!    - Intel clients with published slice geometry: one slice per core
//!      (Sandy Bridge to Broadwell, [`CLIENT_SOURCE`]) or two (Skylake to
//!      Ice Lake, [`CLIENT_SPLIT_SOURCE`]);
//!    - Intel Xeons: at least one slice per core, and some SKUs enable
//!      more slices than cores; where the slice's size and associativity
//!      are published and match the LLC, `size / slice size` slices
//!      ([`SKX_SOURCE`], [`RING_XEON_SOURCE`]), else one per core, said to
//!      be unverified;
//!    - AMD Zen: one L3 slice per core *position* of the core complex,
//!      enabled or not ([`ZEN_SOURCE`]): the larger of the physical cores
//!      sharing the L3 and the complex's design size (4 cores for family
//!      0x17, 8 from family 0x19);
//!    - other Intel family 6 parts since Sandy Bridge (hybrid, Atom,
//!      Tiger Lake and later clients, unknown models): sliced, slice count
//!      not published: refused;
//! 6. otherwise (Intel before Sandy Bridge, other vendors and ARM) the
//!    way-size rule (kim2013 Section II-B).
//!
//! When several pieces of evidence bound the count (boxes, cores, the
//! published slice size), the largest is used: each is the truth or an
//! under-count, so the largest is the safest.

use crate::error::Result;
use crate::root::SysRoot;
use crate::topology::{Cache, Topology};
use tinct_base::geometry::{ColorGeometry, ColorRule, GeometryError, PageColors};

const EVENT_SOURCES: &str = "/sys/bus/event_source/devices";

/// Evidence that one `uncore_cha_N` PMU is one LLC slice: McCalpin,
/// "Mapping Addresses to L3/CHA Slices in Intel Processors", TACC
/// TR-2021-03 (one L3 slice per CHA; 14 to 28 slices on Xeon Scalable 1st
/// and 2nd generation), and Linux `uncore_snbep.c` (`skx_count_chabox`:
/// one PMU per enabled CHA).
pub const CHA_SOURCE: &str = "one CHA per slice: McCalpin, TACC TR-2021-03";

/// Evidence for one slice per core (and per CBo box) on Intel clients
/// from Sandy Bridge to Broadwell: kim2013 Section IV-A (i7-2600: four
/// 2 MiB slices of 2048 sets); Maurice et al., "Reverse Engineering Intel
/// Last-Level Cache Complex Addressing Using Performance Counters", RAID
/// 2015 (one CBo counter per slice); Briongos et al., RELOAD+REFRESH,
/// USENIX Security 2020, artifact README (github.com/greenlsi/reload_refresh):
/// "Intel 4th and 5th" generations: 2048 sets per slice.
pub const CLIENT_SOURCE: &str =
    "kim2013 Section IV-A and Maurice et al. RAID 2015: one slice of 2048 sets per core";

/// Evidence for two slices per core (and per CBo box) on Intel clients
/// from Skylake to Ice Lake: Briongos et al., RELOAD+REFRESH, USENIX
/// Security 2020, artifact README (github.com/greenlsi/reload_refresh):
/// "Intel 6th generation and above" have 1024 sets per slice (a 4-core
/// 6 MiB 12-way part: 8 slices); uops.info/cache.html (nanoBench cache
/// analyzer, Abel and Reineke): Core i5-1035G1 (Ice Lake), "Number of
/// CBoxes: 4, Number of slices: 8, Number of sets (per slice): 1024".
/// Counting boxes or cores alone gives one colour bit too many.
pub const CLIENT_SPLIT_SOURCE: &str = "two slices of 1024 sets per core and per CBo: \
     RELOAD+REFRESH (USENIX Security 2020) README; uops.info, i5-1035G1: 4 CBoxes, 8 slices";

/// Evidence for Xeon Scalable 1st and 2nd generation (family 6 model
/// 0x55: Skylake-SP, Cascade Lake, Cooper Lake) LLC slices of 1.375 MiB,
/// 11-way: AnandTech, "Intel Skylake-X review" (L3 "1.375 MB/core,
/// 11-way"); and for more slices than cores on some SKUs: Farshin et al.,
/// "Make the Most out of Last Level Cache in Intel Processors", EuroSys
/// 2019 (Xeon Gold 6134: 8 cores, 18 slices); Intel's Xeon Gold 6256:
/// 12 cores, 33 MB L3, i.e. 24 slices.
pub const SKX_SOURCE: &str = "AnandTech Skylake-SP review: 1.375 MiB 11-way slices; \
     Farshin et al. EuroSys 2019: more slices than cores, a Gold 6134 has 8 cores and 18 slices";

/// Evidence for ring-bus Xeons (Sandy Bridge-EP to Broadwell-EP/DE,
/// models 0x2d, 0x3e, 0x3f, 0x4f, 0x56): LLC slices of 2.5 MiB, 20-way
/// (AnandTech, "Intel Skylake-X review": the previous generation's L3 was
/// "20-way ... 2.5MB/core"); Linux caps `uncore_cbox` at the core count
/// (`uncore_snbep.c`, `hswep_uncore_cpu_init`), while some parts have more
/// slices than cores (Xeon E5-2637 v3: 4 cores, 15 MB = six slices).
pub const RING_XEON_SOURCE: &str = "AnandTech Skylake-SP review: 2.5 MiB 20-way slices \
     before it; Linux caps uncore_cbox at the core count; an E5-2637 v3 has 4 cores and 15 MB";

/// Evidence for AMD Zen L3 slices: AnandTech, "AMD Zen Microarchitecture
/// Part 2" (AMD's Hot Chips 2016 disclosure: the CCX's 8 MB L3 is, "despite
/// being split into blocks per core", shared by the CCX through a
/// "low-order address interleave"; the exact interleave is not published);
/// an AMD slide on Zen 4 reproduced by EE Times Japan (image.itmedia.co.jp,
/// 2022-12): L3 of 4 MB per core, 32 MB per CCX; parts with cores disabled
/// keep the whole L3 (AnandTech, "AMD EPYC Milan review": the 32-core EPYC
/// 75F3 has "all 256 MB of L3 cache" with "four cores per chiplet active";
/// the EPYC 7313: 16 cores, 128 MB L3, i.e. four 32 MB CCDs of four cores
/// each), so the enabled cores under-count the slices.
pub const ZEN_SOURCE: &str = "AnandTech on AMD's Hot Chips 2016 Zen talk: the L3 is split \
     into one block per core; cut-down parts keep the whole L3, an EPYC 7313 has 4 cores per \
     32 MB CCD";

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

/// What public evidence says about how a CPU slices its LLC (see the
/// module documentation for the sources).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slicing {
    /// Not known to slice its LLC by an address hash: the way-size rule.
    Unsliced,
    /// An Intel client ring with published slice geometry: `per_core`
    /// slices per physical core and per CBo box.
    Client { per_core: u64, source: &'static str },
    /// An Intel Xeon: one slice per CHA (or CBo), at least one per core,
    /// on some SKUs more; `slice`: the published `(bytes, ways)` of one
    /// slice, if any.
    Xeon {
        slice: Option<(u64, u64)>,
        source: &'static str,
    },
    /// AMD Zen: one L3 slice per core position of a core complex designed
    /// for `ccx_cores` cores.
    Zen { ccx_cores: u64 },
    /// Sliced, but no slice count is published: the bits are refused.
    Unpublished,
}

/// Intel family 6 models of ring clients with one slice per core: Sandy
/// Bridge, Ivy Bridge, Haswell (client, ULT, GT3e), Broadwell (client,
/// GT3e).
const CLIENT_MODELS: [u32; 7] = [0x2a, 0x3a, 0x3c, 0x45, 0x46, 0x3d, 0x47];

/// Intel family 6 models of ring clients with two slices per core:
/// Skylake (mobile, desktop), Kaby/Coffee/Whiskey/Amber/Comet Lake
/// (mobile, desktop), Comet Lake (desktop, mobile), Ice Lake (client).
const CLIENT_SPLIT_MODELS: [u32; 8] = [0x4e, 0x5e, 0x8e, 0x9e, 0xa5, 0xa6, 0x7d, 0x7e];

/// Intel family 6 models of ring-bus Xeons: Sandy Bridge-EP, Ivy
/// Bridge-EP, Haswell-EP, Broadwell-EP, Broadwell-DE.
const RING_XEON_MODELS: [u32; 5] = [0x2d, 0x3e, 0x3f, 0x4f, 0x56];

/// Intel family 6 models of mesh Xeons without a published slice size:
/// Ice Lake-SP/D, Sapphire Rapids, Emerald Rapids, Granite Rapids, Sierra
/// Forest (their CHA PMUs count the slices; without them the cores are a
/// lower bound).
const MESH_XEON_MODELS: [u32; 7] = [0x6a, 0x6c, 0x8f, 0xcf, 0xad, 0xae, 0xaf];

/// Xeon Scalable 1st/2nd generation (model 0x55): one LLC slice is
/// 1.375 MiB, 11-way ([`SKX_SOURCE`]).
const SKX_SLICE: (u64, u64) = (1408 << 10, 11);

/// Ring-bus Xeons: one LLC slice is 2.5 MiB, 20-way ([`RING_XEON_SOURCE`]).
const RING_XEON_SLICE: (u64, u64) = (2560 << 10, 20);

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

    /// True for a CPU whose LLC is known to be sliced by an address hash
    /// with at least one slice per core: Intel family 6 from Sandy Bridge
    /// (model 0x2a) on, AMD and Hygon Zen (family 0x17 and later). Whether
    /// the slice count can be known is another matter (see the module
    /// documentation): for hybrid and Atom parts it is not published.
    pub fn slices_per_core(&self) -> bool {
        self.slicing() != Slicing::Unsliced
    }

    /// What is published about this CPU's LLC slices.
    fn slicing(&self) -> Slicing {
        match (self.vendor.as_str(), self.family, self.model) {
            ("GenuineIntel", Some(6), Some(model)) if model < 0x2a => Slicing::Unsliced,
            ("GenuineIntel", Some(6), Some(model)) if CLIENT_MODELS.contains(&model) => {
                Slicing::Client {
                    per_core: 1,
                    source: CLIENT_SOURCE,
                }
            }
            ("GenuineIntel", Some(6), Some(model)) if CLIENT_SPLIT_MODELS.contains(&model) => {
                Slicing::Client {
                    per_core: 2,
                    source: CLIENT_SPLIT_SOURCE,
                }
            }
            ("GenuineIntel", Some(6), Some(model)) if RING_XEON_MODELS.contains(&model) => {
                Slicing::Xeon {
                    slice: Some(RING_XEON_SLICE),
                    source: RING_XEON_SOURCE,
                }
            }
            ("GenuineIntel", Some(6), Some(0x55)) => Slicing::Xeon {
                slice: Some(SKX_SLICE),
                source: SKX_SOURCE,
            },
            ("GenuineIntel", Some(6), Some(model)) if MESH_XEON_MODELS.contains(&model) => {
                Slicing::Xeon {
                    slice: None,
                    source: CHA_SOURCE,
                }
            }
            // Hybrid, Atom, Tiger Lake and later clients, unknown models;
            // Intel families after 6 (0x12 and up).
            ("GenuineIntel", Some(6), Some(_)) => Slicing::Unpublished,
            ("GenuineIntel", Some(family), _) if family >= 0x12 => Slicing::Unpublished,
            ("AuthenticAMD" | "HygonGenuine", Some(0x17 | 0x18), _) => {
                Slicing::Zen { ccx_cores: 4 }
            }
            ("AuthenticAMD" | "HygonGenuine", Some(family), _) if family >= 0x19 => {
                Slicing::Zen { ccx_cores: 8 }
            }
            _ => Slicing::Unsliced,
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
    /// Uncore PMUs with one instance per LLC slice or per group of slices
    /// (`uncore_cha_0`, ..., `uncore_cbox_0`, ...).
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

/// The PMU names that count LLC slices (`uncore_cha_N`, `uncore_cbox_N`),
/// sorted by kind and number.
fn slice_pmus(names: &[String]) -> Vec<String> {
    let mut found: Vec<(&str, u32, &String)> = names
        .iter()
        .filter_map(|name| {
            let (kind, number) = if let Some(n) = name.strip_prefix("uncore_cha_") {
                ("cha", n)
            } else {
                ("cbox", name.strip_prefix("uncore_cbox_")?)
            };
            Some((kind, number.parse().ok()?, name))
        })
        .collect();
    found.sort();
    found.into_iter().map(|(_, _, name)| name.clone()).collect()
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

/// A slice count and the evidence for it.
#[derive(Debug)]
struct Count {
    slices: u64,
    why: String,
}

/// What the evidence decides for one LLC.
#[derive(Debug)]
enum Decision {
    /// The way-size rule, with the reason.
    WaySize(String),
    /// Sliced: the largest trustworthy count.
    Sliced(Count),
    /// No count can be trusted: the bits are refused, with the reason.
    Refuse(String),
}

/// `name_0 .. name_N` for a reason.
fn pmu_range(pmus: &[&String]) -> String {
    match pmus {
        [] => String::new(),
        [one] => (*one).clone(),
        [first, .., last] => format!("{first} .. {last}"),
    }
}

/// Decides the rule for `llc` from the evidence (module documentation).
fn decide(llc: &Cache, ways: u64, topology: &Topology, evidence: &SliceEvidence) -> Decision {
    let name = llc.name();
    let cpu = &evidence.cpu;
    let slicing = cpu.slicing();
    let (chas, cboxes): (Vec<&String>, Vec<&String>) = evidence
        .slice_pmus
        .iter()
        .partition(|pmu| pmu.starts_with("uncore_cha_"));
    if chas.len() > 1 {
        return Decision::Sliced(Count {
            slices: chas.len() as u64,
            why: format!(
                "{} {name} slices counted from the uncore PMUs ({}, {CHA_SOURCE})",
                chas.len(),
                pmu_range(&chas)
            ),
        });
    }
    // Every count below is the truth or an under-count: the largest wins.
    let mut counts = Vec::new();
    if cboxes.len() > 1 {
        let boxes = cboxes.len() as u64;
        let per_box = match slicing {
            Slicing::Client { per_core, source } => Some((per_core, source)),
            Slicing::Xeon { source, .. } => Some((1, source)),
            _ => None,
        };
        let Some((per_box, source)) = per_box else {
            return Decision::Refuse(format!(
                "{boxes} uncore_cbox PMUs ({}), but how many slices one CBo fronts on {} is not \
                 published, and one Ice Lake CBo fronts two (uops.info, i5-1035G1)",
                pmu_range(&cboxes),
                cpu.describe()
            ));
        };
        counts.push(Count {
            slices: boxes * per_box,
            why: format!(
                "{} {name} slices from the uncore PMUs ({}: {boxes} CBo boxes, {per_box} \
                 slice(s) each on {}, {source})",
                boxes * per_box,
                pmu_range(&cboxes),
                cpu.describe()
            ),
        });
    }
    let cores = physical_cores(topology, &llc.shared_cpus);
    if cpu.hypervisor {
        return virtual_machine(llc, ways, cores, slicing, counts);
    }
    match slicing {
        // (CBo PMUs on such a CPU were refused above.)
        Slicing::Unsliced => {
            return Decision::WaySize(format!(
                "no sign of a sliced {name} ({}, no per-slice uncore PMU): the set index of the \
                 whole cache (kim2013 Section II-B)",
                cpu.describe()
            ));
        }
        Slicing::Unpublished => {
            return Decision::Refuse(format!(
                "{} publishes no {name} slice count (hybrid and Atom parts, clients after Ice \
                 Lake); its {cores} physical cores and any CBo boxes are at best lower bounds, \
                 and counting them can give more colours than the cache has",
                cpu.describe()
            ));
        }
        Slicing::Client { per_core, source } => counts.push(Count {
            slices: cores * per_core,
            why: format!(
                "{} slices its {name} with {per_core} slice(s) per core ({source}): {cores} \
                 physical cores share it, so {} slices",
                cpu.describe(),
                cores * per_core
            ),
        }),
        Slicing::Xeon { slice, source } => {
            if let Some((bytes, slice_ways)) = slice
                && slice_ways == ways
                && llc.size_bytes.is_multiple_of(bytes)
            {
                let slices = llc.size_bytes / bytes;
                counts.push(Count {
                    slices,
                    why: format!(
                        "{} has {} {slice_ways}-way {name} slices ({source}): {slices} slices \
                         in {}, at least the {cores} physical cores that share it",
                        cpu.describe(),
                        mib(bytes),
                        mib(llc.size_bytes)
                    ),
                });
            }
            counts.push(Count {
                slices: cores,
                why: format!(
                    "{} has at least one {name} slice per core: {cores} physical cores share \
                     it, so at least {cores} slices (unverified: a Xeon may enable more slices \
                     than cores, which would mean fewer colours; the uncore_cha PMUs would \
                     count them)",
                    cpu.describe()
                ),
            });
        }
        Slicing::Zen { ccx_cores } => {
            let slices = cores.max(ccx_cores);
            counts.push(Count {
                slices,
                why: format!(
                    "{} (AMD Zen) builds each {name} from one slice per core position of its \
                     {ccx_cores}-core complex ({ZEN_SOURCE}): {cores} physical cores share it, \
                     so {slices} slices",
                    cpu.describe()
                ),
            });
        }
    }
    match largest(counts) {
        Some(count) => Decision::Sliced(count),
        None => Decision::WaySize(format!("no slice count for the {name}")),
    }
}

/// The rule in a virtual machine: its vCPUs say nothing about the host's
/// cores, so only counts that do not rest on them are used — PMU boxes,
/// an AMD Zen complex's design size, a published Xeon slice size — and
/// the way-size rule only for a CPU family whose LLC is not sliced.
/// Otherwise the bits are refused. Whatever is derived is a model of the
/// host's cache: guest-physical pages need not be host-physical ones.
fn virtual_machine(
    llc: &Cache,
    ways: u64,
    vcpus: u64,
    slicing: Slicing,
    mut counts: Vec<Count>,
) -> Decision {
    let name = llc.name();
    const GUEST: &str = "virtual machine, unverifiable from the guest (guest-physical pages \
                         need not be host-physical ones)";
    match slicing {
        Slicing::Zen { ccx_cores } => counts.push(Count {
            slices: vcpus.max(ccx_cores),
            why: format!(
                "AMD Zen builds each {name} from one slice per core position of its \
                 {ccx_cores}-core complex ({ZEN_SOURCE}), so at least {} slices; {GUEST}",
                vcpus.max(ccx_cores)
            ),
        }),
        Slicing::Xeon {
            slice: Some((bytes, slice_ways)),
            source,
        } if slice_ways == ways && llc.size_bytes.is_multiple_of(bytes) => counts.push(Count {
            slices: llc.size_bytes / bytes,
            why: format!(
                "{} {slice_ways}-way {name} slices of {} ({source}); {GUEST}",
                llc.size_bytes / bytes,
                mib(bytes)
            ),
        }),
        Slicing::Unsliced if counts.is_empty() => {
            return Decision::WaySize(format!(
                "no sign of a sliced {name}: the set index of the whole cache (kim2013 Section \
                 II-B); {GUEST}"
            ));
        }
        _ => {}
    }
    match largest(counts) {
        Some(count) => Decision::Sliced(count),
        None => Decision::Refuse(format!(
            "virtual machine: the host's {name} slices are not visible and its CPU family gives \
             no count that does not rest on the host's cores"
        )),
    }
}

/// The largest count (the first of equals): every count is the truth or an
/// under-count, and an under-count gives colour bits the cache lacks.
fn largest(counts: Vec<Count>) -> Option<Count> {
    counts.into_iter().reduce(|best, next| {
        if next.slices > best.slices {
            next
        } else {
            best
        }
    })
}

/// The page colours of `llc` for pages of `page_bytes`, with the rule and
/// the evidence (see the module documentation for the order). An error
/// when the colours cannot be derived: no associativity, a slice count
/// that does not divide the cache, or no slice count that can be trusted
/// ([`GeometryError::UnknownColorBits`], naming the reason).
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
    let way_size = way_size_colors(llc.size_bytes, ways, page_bytes);
    match decide(llc, ways, topology, evidence) {
        Decision::WaySize(reason) => Ok(ColorGeometry {
            colors: PageColors::of_cache(llc.size_bytes, ways, page_bytes)?,
            rule: ColorRule::WaySize,
            reason,
        }),
        Decision::Sliced(Count { slices: 1, why }) => Ok(ColorGeometry {
            colors: PageColors::of_cache(llc.size_bytes, ways, page_bytes)?,
            rule: ColorRule::WaySize,
            reason: format!("{why}: one slice is the whole cache"),
        }),
        Decision::Sliced(Count { slices, why }) => Ok(ColorGeometry {
            colors: PageColors::of_sliced_cache(llc.size_bytes, ways, slices, page_bytes)?,
            rule: ColorRule::Sliced { slices },
            reason: format!("{why}; the way-size rule would give {way_size} colours"),
        }),
        Decision::Refuse(why) => Err(GeometryError::UnknownColorBits {
            way_description: format!(
                "per {} slice (unknown: {why}; the way-size rule would give {way_size} colours)",
                llc.name()
            ),
        }),
    }
}

/// `1.375 MiB`, `33 MiB`, for reasons.
fn mib(bytes: u64) -> String {
    format!("{} MiB", bytes as f64 / f64::from(1u32 << 20))
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
/// the slice evidence and the rule, read under `root`. An error when no
/// cache is found or the colours cannot be derived
/// ([`llc_color_geometry`]).
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

    /// `cores` cores with `threads` threads each (CPU `c + k * cores` is
    /// thread `k` of core `c`), all sharing one LLC of `size` bytes and
    /// `ways` ways.
    fn machine(cores: u32, threads: u32, size: u64, ways: u32) -> (Topology, Cache) {
        let ids = 0..cores * threads;
        let cpus = ids
            .clone()
            .map(|id| Cpu {
                id,
                package_id: Some(0),
                die_id: Some(0),
                core_id: Some(id % cores),
                thread_siblings: (0..threads).map(|k| id % cores + k * cores).collect(),
            })
            .collect();
        let llc = Cache {
            level: 3,
            kind: CacheType::Unified,
            id: Some(0),
            size_bytes: size,
            ways: Some(ways),
            sets: Some(u32::try_from(size / u64::from(ways) / 64).unwrap()),
            line_bytes: Some(64),
            shared_cpus: ids.clone().collect(),
        };
        let topology = Topology {
            online_cpus: ids.collect(),
            cpus,
            numa_nodes: Vec::new(),
            caches: vec![llc.clone()],
        };
        (topology, llc)
    }

    /// kim2013's i7-2600: 4 cores, 2 threads each, 8 MiB 16-way.
    fn i7_2600() -> (Topology, Cache) {
        machine(4, 2, 8 << 20, 16)
    }

    fn cpu(vendor: &str, family: u32, model: u32, hypervisor: bool) -> CpuIdentity {
        CpuIdentity {
            vendor: vendor.into(),
            family: Some(family),
            model: Some(model),
            hypervisor,
        }
    }

    fn evidence_of(cpu: CpuIdentity, pmus: &[String]) -> SliceEvidence {
        SliceEvidence {
            cpu,
            slice_pmus: slice_pmus(pmus),
        }
    }

    fn named(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    fn boxes(kind: &str, n: u32) -> Vec<String> {
        (0..n).map(|i| format!("uncore_{kind}_{i}")).collect()
    }

    #[test]
    fn kim2013s_i7_2600_gets_32_colours_from_one_slice_per_core() {
        let (topology, llc) = i7_2600();
        let evidence = evidence_of(cpu("GenuineIntel", 6, 0x2a, false), &[]);
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
    fn uncore_pmus_are_sorted_and_counted_before_the_vm_flag() {
        let (topology, llc) = i7_2600();
        let evidence = evidence_of(
            // Even a VM flag does not beat counted slices.
            cpu("GenuineIntel", 6, 0x2a, true),
            &named(&[
                "cpu",
                "uncore_cbox_1",
                "uncore_cbox_0",
                "uncore_imc",
                "uncore_cbox_x",
            ]),
        );
        assert_eq!(evidence.slice_pmus, vec!["uncore_cbox_0", "uncore_cbox_1"]);
        let geometry = llc_color_geometry(&llc, &topology, &evidence, 4096).unwrap();
        assert_eq!(geometry.rule, ColorRule::Sliced { slices: 2 });
        assert_eq!(geometry.colors.colors, 64);
        assert!(
            geometry.reason.contains("uncore_cbox_0 .. uncore_cbox_1"),
            "{}",
            geometry.reason
        );
        let names = named(&[
            "uncore_cha_10",
            "uncore_cbox_2",
            "uncore_cha_2",
            "uncore_cha_9",
        ]);
        assert_eq!(
            slice_pmus(&names),
            vec![
                "uncore_cbox_2",
                "uncore_cha_2",
                "uncore_cha_9",
                "uncore_cha_10"
            ]
        );
    }

    /// The slice-counting trap: from Skylake on, one CBo fronts two slices of
    /// 1024 sets. Counting the boxes (or the cores) of an i7-6700K gives
    /// bits 12-16; the cache has 12-15.
    #[test]
    fn skylake_and_ice_lake_clients_count_two_slices_per_box_and_per_core() {
        let (topology, llc) = i7_2600();
        for model in [0x5e, 0x7e] {
            for pmus in [boxes("cbox", 4), Vec::new()] {
                let evidence = evidence_of(cpu("GenuineIntel", 6, model, false), &pmus);
                let geometry = llc_color_geometry(&llc, &topology, &evidence, 4096).unwrap();
                assert_eq!(geometry.rule, ColorRule::Sliced { slices: 8 }, "{model:#x}");
                assert_eq!(geometry.colors.color_bits().unwrap(), 12..16);
                assert!(
                    geometry.reason.contains("RELOAD+REFRESH"),
                    "{}",
                    geometry.reason
                );
            }
        }
    }

    /// Linux caps the Skylake CBo count at 8 (`skl_uncore_cbox`): a
    /// 10-core Comet Lake shows 8 boxes; the cores count more slices.
    #[test]
    fn the_largest_lower_bound_wins() {
        let (topology, llc) = machine(10, 2, 20 << 20, 16);
        let pmus = boxes("cbox", 8);
        let evidence = evidence_of(cpu("GenuineIntel", 6, 0xa5, false), &pmus);
        let geometry = llc_color_geometry(&llc, &topology, &evidence, 4096).unwrap();
        assert_eq!(geometry.rule, ColorRule::Sliced { slices: 20 });
        assert_eq!(geometry.colors.color_bits().unwrap(), 12..16);
        assert!(
            geometry.reason.contains("10 physical cores"),
            "{}",
            geometry.reason
        );
    }

    /// Xeon Gold 6256: 12 cores, 33 MiB 11-way: 24 slices of 1.375 MiB.
    /// One slice per core would give 64 colours (bits 12-17); it has 32.
    #[test]
    fn a_xeon_with_more_slices_than_cores_counts_published_slices() {
        let (topology, llc) = machine(12, 1, 33 << 20, 11);
        let evidence = evidence_of(cpu("GenuineIntel", 6, 0x55, false), &[]);
        let geometry = llc_color_geometry(&llc, &topology, &evidence, 4096).unwrap();
        assert_eq!(geometry.rule, ColorRule::Sliced { slices: 24 });
        assert_eq!(geometry.colors.color_bits().unwrap(), 12..17);
        assert!(
            geometry.reason.contains("1.375 MiB 11-way") && geometry.reason.contains("12 physical"),
            "{}",
            geometry.reason
        );
        // CHA PMUs count the slices exactly, whatever the cores.
        let pmus = boxes("cha", 24);
        let evidence = evidence_of(cpu("GenuineIntel", 6, 0x55, false), &pmus);
        let geometry = llc_color_geometry(&llc, &topology, &evidence, 4096).unwrap();
        assert_eq!(geometry.rule, ColorRule::Sliced { slices: 24 });
        assert!(geometry.reason.contains("uncore_cha_0 .. uncore_cha_23"));
        // A geometry unlike any published SKU: one slice per core, unverified.
        let (topology, llc) = machine(4, 2, 20 << 20, 20);
        let evidence = evidence_of(cpu("GenuineIntel", 6, 0x55, false), &[]);
        let geometry = llc_color_geometry(&llc, &topology, &evidence, 4096).unwrap();
        assert_eq!(geometry.rule, ColorRule::Sliced { slices: 4 });
        assert!(
            geometry.reason.contains("unverified"),
            "{}",
            geometry.reason
        );
    }

    /// Xeon E5-2637 v3: 4 cores, 15 MiB 20-way, Linux shows 4 CBo boxes;
    /// six 2.5 MiB slices.
    #[test]
    fn a_ring_xeon_counts_published_slices_past_its_capped_boxes() {
        let (topology, llc) = machine(4, 2, 15 << 20, 20);
        let pmus = boxes("cbox", 4);
        let evidence = evidence_of(cpu("GenuineIntel", 6, 0x3f, false), &pmus);
        let geometry = llc_color_geometry(&llc, &topology, &evidence, 4096).unwrap();
        assert_eq!(geometry.rule, ColorRule::Sliced { slices: 6 });
        assert_eq!(geometry.colors.color_bits().unwrap(), 12..17);
    }

    /// EPYC 7313: four of a CCD's eight cores enabled, the whole 32 MiB L3
    /// kept: eight 4 MiB slices, not four.
    #[test]
    fn a_zen_complex_with_disabled_cores_keeps_its_slices() {
        let (topology, llc) = machine(4, 2, 32 << 20, 16);
        let evidence = evidence_of(cpu("AuthenticAMD", 0x19, 0x01, false), &[]);
        let geometry = llc_color_geometry(&llc, &topology, &evidence, 4096).unwrap();
        assert_eq!(geometry.rule, ColorRule::Sliced { slices: 8 });
        assert_eq!(geometry.colors.color_bits().unwrap(), 12..18);
        // Zen 1 (family 0x17): a 4-core complex.
        let (topology, llc) = machine(4, 2, 8 << 20, 16);
        let evidence = evidence_of(cpu("AuthenticAMD", 0x17, 0x01, false), &[]);
        let geometry = llc_color_geometry(&llc, &topology, &evidence, 4096).unwrap();
        assert_eq!(geometry.rule, ColorRule::Sliced { slices: 4 });
        assert_eq!(geometry.colors.color_bits().unwrap(), 12..17);
    }

    #[test]
    fn hybrid_and_atom_parts_and_unknown_box_ratios_are_refused() {
        let (topology, llc) = machine(4, 1, 6 << 20, 12);
        let pmus = boxes("cbox", 4);
        for (identity, pmus) in [
            (cpu("GenuineIntel", 6, 0x97, false), &pmus[..]),
            (cpu("GenuineIntel", 6, 0xbe, false), &[][..]),
            (cpu("GenuineIntel", 0x13, 0x01, false), &[][..]),
            // CBo PMUs and no identity: the boxes-to-slices ratio is unknown.
            (CpuIdentity::default(), &pmus[..]),
        ] {
            let evidence = evidence_of(identity, pmus);
            let err = llc_color_geometry(&llc, &topology, &evidence, 4096)
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("per L3 slice (unknown: ") && err.contains("give them explicitly"),
                "{err}"
            );
        }
    }

    #[test]
    fn a_vm_counts_only_what_does_not_rest_on_its_vcpus() {
        let (topology, llc) = i7_2600();
        // A Zen 3 guest: the complex's 8 slices, whatever its vCPUs.
        let zen = evidence_of(cpu("AuthenticAMD", 0x19, 0x01, true), &[]);
        let geometry = llc_color_geometry(&llc, &topology, &zen, 4096).unwrap();
        assert_eq!(geometry.rule, ColorRule::Sliced { slices: 8 });
        assert_eq!(geometry.colors.colors, 16);
        assert!(
            geometry.reason.contains("unverifiable from the guest"),
            "{}",
            geometry.reason
        );
        // An Intel client guest: its 4 vCPUs say nothing about the host's
        // cores, so no count: refused, where the way-size rule would give
        // 128 colours to a cache that has 32.
        for model in [0x2a, 0x97] {
            let intel = evidence_of(cpu("GenuineIntel", 6, model, true), &[]);
            let err = llc_color_geometry(&llc, &topology, &intel, 4096).unwrap_err();
            assert!(err.to_string().contains("virtual machine"), "{err}");
        }
        // An unsliced family in a guest keeps the way-size rule, said to be
        // unverifiable.
        let old = evidence_of(cpu("GenuineIntel", 6, 0x1a, true), &[]);
        let geometry = llc_color_geometry(&llc, &topology, &old, 4096).unwrap();
        assert_eq!(
            (geometry.rule, geometry.colors.colors),
            (ColorRule::WaySize, 128)
        );
        assert!(
            geometry.reason.contains("virtual machine"),
            "{}",
            geometry.reason
        );
    }

    #[test]
    fn old_cpus_and_other_vendors_keep_the_way_size_rule() {
        let (topology, llc) = i7_2600();
        for (identity, words) in [
            (cpu("GenuineIntel", 6, 0x1a, false), "no sign of a sliced"),
            (
                cpu("AuthenticAMD", 0x15, 0x01, false),
                "no sign of a sliced",
            ),
            (CpuIdentity::default(), "unknown vendor"),
        ] {
            let evidence = evidence_of(identity, &[]);
            let geometry = llc_color_geometry(&llc, &topology, &evidence, 4096).unwrap();
            assert_eq!(geometry.rule, ColorRule::WaySize);
            assert_eq!(geometry.colors.colors, 128);
            assert!(geometry.reason.contains(words), "{}", geometry.reason);
        }
    }

    #[test]
    fn one_slice_is_the_way_size_rule_and_a_fractional_slice_is_an_error() {
        let (topology, llc) = machine(1, 2, 2 << 20, 16);
        let evidence = evidence_of(cpu("GenuineIntel", 6, 0x3c, false), &[]);
        let geometry = llc_color_geometry(&llc, &topology, &evidence, 4096).unwrap();
        assert_eq!(
            (geometry.rule, geometry.colors.colors),
            (ColorRule::WaySize, 32)
        );
        assert!(geometry.reason.contains("one slice"), "{}", geometry.reason);
        // 6 cores sharing 8 MiB: not a whole number of bytes per slice.
        let (topology, llc) = machine(6, 1, 8 << 20, 16);
        let evidence = evidence_of(cpu("GenuineIntel", 6, 0x3c, false), &[]);
        assert!(matches!(
            llc_color_geometry(&llc, &topology, &evidence, 4096),
            Err(GeometryError::Slices { slices: 6, .. })
        ));
    }

    #[test]
    fn a_per_slice_way_that_is_not_a_power_of_two_leaves_the_bits_unknown() {
        // 4 Haswell cores sharing 6 MiB, 16-way: 1.5 MiB slices, 96 KiB ways.
        let (topology, llc) = machine(4, 1, 6 << 20, 16);
        let evidence = evidence_of(cpu("GenuineIntel", 6, 0x3c, false), &[]);
        let geometry = llc_color_geometry(&llc, &topology, &evidence, 4096).unwrap();
        assert_eq!(geometry.colors.address_bits, None);
        assert!(geometry.colors.color_bits().is_err());
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
        assert!(!cpu("GenuineIntel", 6, 0x1a, false).slices_per_core());
        assert!(cpu("GenuineIntel", 6, 0x97, false).slices_per_core());
        // ARM's cpuinfo: no vendor, `Model` is not `model`.
        let arm =
            CpuIdentity::parse("processor\t: 0\nCPU part\t: 0xd08\nModel\t\t: Raspberry Pi 4\n");
        assert_eq!(arm, CpuIdentity::default());
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
