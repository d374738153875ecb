//! The coherence events of gracioli et al. (Fig. 9) on current cores.
//!
//! Gracioli read seven hardware counters on an Intel Q9550 (Core 2) while
//! the sequential, parallel and best-case versions of their benchmark ran:
//! L2 requests that found the line in the I state, in the S state, LLC
//! misses, and the snoop responses hit, invalidate, share, and share and
//! invalidate. Those Core 2 events no longer exist; this table gives, for
//! one current Intel core (Ice Lake-SP) and one current AMD core (Zen 4),
//! the event that counts the same thing from the requesting core's side,
//! with its vendor name and where the match is not exact a note saying so.
//!
//! Sources of the encodings: Intel's event list for Ice Lake-SP (perfmon
//! `ICX` core events, as in Linux `tools/perf/pmu-events/arch/x86/icelakex`)
//! and AMD's Processor Programming Reference for family 19h models 10h-1Fh
//! (as in `tools/perf/pmu-events/arch/x86/amdzen4`).
//!
//! [`resolve`] picks the row of the machine under a [`SysRoot`] (from
//! `/proc/cpuinfo`) and encodes each event with that machine's `cpu` PMU
//! format files; without a `cpu` PMU in sysfs (a VM) it encodes with the
//! architectural x86 event-select layout as a raw event, so that opening it
//! yields the kernel's own reason.

use tinct_sys::Result;
use tinct_sys::SysRoot;
use tinct_sys::perf::Pmu;
use tinct_sys::perf::events::{CounterEvent, TYPE_RAW};

/// One counter of gracioli Fig. 9.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fig9Event {
    /// L2 requests for a line in the Invalid state (an L2 miss).
    L2RequestI,
    /// L2 requests for a line in the Shared state.
    L2RequestS,
    /// Last-level cache misses.
    LlcMisses,
    /// Snoops that hit a line in another core's cache (data supplied clean).
    SnoopHit,
    /// Snoops that invalidate the other cores' copies (a write to a line
    /// others hold).
    SnoopInvalidate,
    /// Snoops that leave the line shared (another core supplied it).
    SnoopShare,
    /// Snoops that take a modified line from another core and invalidate it there.
    SnoopShareInvalidate,
}

impl Fig9Event {
    /// The seven counters, in the order of Fig. 9.
    pub const ALL: [Fig9Event; 7] = [
        Self::L2RequestI,
        Self::L2RequestS,
        Self::LlcMisses,
        Self::SnoopHit,
        Self::SnoopInvalidate,
        Self::SnoopShare,
        Self::SnoopShareInvalidate,
    ];

    /// The label of Fig. 9.
    pub fn label(self) -> &'static str {
        match self {
            Self::L2RequestI => "L2 request, I state",
            Self::L2RequestS => "L2 request, S state",
            Self::LlcMisses => "LLC misses",
            Self::SnoopHit => "snoop hit",
            Self::SnoopInvalidate => "snoop invalidate",
            Self::SnoopShare => "snoop share",
            Self::SnoopShareInvalidate => "snoop share and invalidate",
        }
    }

    /// A short machine-friendly name (`l2-request-i`, ...).
    pub fn key(self) -> &'static str {
        match self {
            Self::L2RequestI => "l2-request-i",
            Self::L2RequestS => "l2-request-s",
            Self::LlcMisses => "llc-misses",
            Self::SnoopHit => "snoop-hit",
            Self::SnoopInvalidate => "snoop-invalidate",
            Self::SnoopShare => "snoop-share",
            Self::SnoopShareInvalidate => "snoop-share-invalidate",
        }
    }
}

/// CPU vendor as `/proc/cpuinfo`'s `vendor_id` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Vendor {
    /// `GenuineIntel`.
    Intel,
    /// `AuthenticAMD`.
    Amd,
}

/// One row of the table: the event on one microarchitecture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Row {
    /// The Fig. 9 counter.
    pub event: Fig9Event,
    /// The vendor's event name.
    pub vendor_name: &'static str,
    /// PMU format terms.
    pub terms: &'static str,
    /// Where the match to the Q9550 event is not exact, why this one.
    pub note: &'static str,
}

/// A microarchitecture the table knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Microarchitecture {
    /// Its name.
    pub name: &'static str,
    /// Vendor.
    pub vendor: Vendor,
    /// `cpu family`.
    pub family: u32,
    /// `model` ranges (inclusive).
    pub models: &'static [(u32, u32)],
    /// The seven rows, in [`Fig9Event::ALL`] order.
    pub rows: [Row; 7],
}

/// Intel Ice Lake-SP (Xeon 3rd generation), family 6 models 0x6a and 0x6c.
pub const ICELAKE_SP: Microarchitecture = Microarchitecture {
    name: "Intel Ice Lake-SP",
    vendor: Vendor::Intel,
    family: 6,
    models: &[(0x6a, 0x6a), (0x6c, 0x6c)],
    rows: [
        Row {
            event: Fig9Event::L2RequestI,
            vendor_name: "L2_RQSTS.ALL_DEMAND_MISS",
            terms: "event=0x24,umask=0x27",
            note: "demand requests that find no valid line in L2",
        },
        Row {
            event: Fig9Event::L2RequestS,
            vendor_name: "L2_RQSTS.DEMAND_DATA_RD_HIT",
            terms: "event=0x24,umask=0xc1",
            note: "this core counts L2 hits without the line's state: S, E and M hits together",
        },
        Row {
            event: Fig9Event::LlcMisses,
            vendor_name: "LONGEST_LAT_CACHE.MISS",
            terms: "event=0x2e,umask=0x41",
            note: "the kernel's generic cache-misses on this core",
        },
        Row {
            event: Fig9Event::SnoopHit,
            vendor_name: "MEM_LOAD_L3_HIT_RETIRED.XSNP_NO_FWD",
            terms: "event=0xd2,umask=0x2",
            note: "retired loads whose cross-core snoop hit a clean copy",
        },
        Row {
            event: Fig9Event::SnoopInvalidate,
            vendor_name: "OFFCORE_REQUESTS.DEMAND_RFO",
            terms: "event=0xb0,umask=0x4",
            note: "reads for ownership sent to the uncore: each invalidates the other cores' copies",
        },
        Row {
            event: Fig9Event::SnoopShare,
            vendor_name: "MEM_LOAD_L3_HIT_RETIRED.XSNP_FWD",
            terms: "event=0xd2,umask=0x4",
            note: "retired loads served by another core's modified line (HITM), which becomes shared",
        },
        Row {
            event: Fig9Event::SnoopShareInvalidate,
            vendor_name: "OCR.DEMAND_RFO.L3_HIT.SNOOP_HITM",
            terms: "event=0xb7,umask=0x1,offcore_rsp=0x10003c0002",
            note: "reads for ownership that took a modified line from another core (offcore response)",
        },
    ],
};

/// AMD Zen 4 (EPYC 9004, Ryzen 7000), family 0x19 models 0x10-0x1f,
/// 0x60-0x7f, 0xa0-0xaf.
pub const ZEN4: Microarchitecture = Microarchitecture {
    name: "AMD Zen 4",
    vendor: Vendor::Amd,
    family: 0x19,
    models: &[(0x10, 0x1f), (0x60, 0x7f), (0xa0, 0xaf)],
    rows: [
        Row {
            event: Fig9Event::L2RequestI,
            vendor_name: "l2_cache_req_stat.ls_rd_blk_c",
            terms: "event=0x64,umask=0x08",
            note: "data cache requests that miss in L2",
        },
        Row {
            event: Fig9Event::L2RequestS,
            vendor_name: "l2_cache_req_stat.ls_rd_blk_l_hit_s",
            terms: "event=0x64,umask=0x20",
            note: "data cache reads that hit a non-modifiable (shared) line in L2",
        },
        Row {
            event: Fig9Event::LlcMisses,
            vendor_name: "ls_dmnd_fills_from_sys.dram_io_near + dram_io_far",
            terms: "event=0x43,umask=0x48",
            note: "demand fills from DRAM (the L3 is per CCX; a core counts its own misses as fills from memory)",
        },
        Row {
            event: Fig9Event::SnoopHit,
            vendor_name: "ls_dmnd_fills_from_sys.near_cache + far_cache",
            terms: "event=0x43,umask=0x14",
            note: "demand fills from another CCX's cache; within one CCX a core's L2 is counted with L3 hits",
        },
        Row {
            event: Fig9Event::SnoopInvalidate,
            vendor_name: "l2_request_g1.change_to_x",
            terms: "event=0x60,umask=0x08",
            note: "state changes to writable: the other copies are invalidated",
        },
        Row {
            event: Fig9Event::SnoopShare,
            vendor_name: "l2_request_g1.ls_rd_blk_c_s",
            terms: "event=0x60,umask=0x20",
            note: "data cache reads for a shared copy",
        },
        Row {
            event: Fig9Event::SnoopShareInvalidate,
            vendor_name: "l2_request_g1.rd_blk_x",
            terms: "event=0x60,umask=0x40",
            note: "stores: reads of the line for exclusive ownership, invalidating the others",
        },
    ],
};

/// Every microarchitecture of the table.
pub const MICROARCHITECTURES: [Microarchitecture; 2] = [ICELAKE_SP, ZEN4];

/// Vendor, family and model of the first CPU in `/proc/cpuinfo`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CpuId {
    /// `vendor_id`.
    pub vendor_id: String,
    /// `cpu family`.
    pub family: u32,
    /// `model`.
    pub model: u32,
    /// `model name`, if present.
    pub model_name: Option<String>,
}

impl CpuId {
    /// Reads `/proc/cpuinfo` under `root` (`None` if it is absent or has
    /// no x86 identification).
    pub fn read(root: &SysRoot) -> Result<Option<CpuId>> {
        let Some(text) = root.read_optional("/proc/cpuinfo")? else {
            return Ok(None);
        };
        let value = |key: &str| {
            text.lines().find_map(|line| {
                let (k, v) = line.split_once(':')?;
                (k.trim() == key).then(|| v.trim().to_string())
            })
        };
        let (Some(vendor_id), Some(family), Some(model)) =
            (value("vendor_id"), value("cpu family"), value("model"))
        else {
            return Ok(None);
        };
        let number = |rel: &str, text: String| {
            text.parse::<u32>()
                .map_err(|_| root.parse_error("/proc/cpuinfo", 1, rel, &text))
        };
        Ok(Some(CpuId {
            vendor_id,
            family: number("a decimal cpu family", family)?,
            model: number("a decimal model", model)?,
            model_name: value("model name"),
        }))
    }

    /// The vendor, if tinct knows it.
    pub fn vendor(&self) -> Option<Vendor> {
        match self.vendor_id.as_str() {
            "GenuineIntel" => Some(Vendor::Intel),
            "AuthenticAMD" => Some(Vendor::Amd),
            _ => None,
        }
    }

    /// The table's microarchitecture of this CPU, if it has one.
    pub fn microarchitecture(&self) -> Option<&'static Microarchitecture> {
        MICROARCHITECTURES.iter().find(|m| {
            Some(m.vendor) == self.vendor()
                && m.family == self.family
                && m.models
                    .iter()
                    .any(|&(lo, hi)| (lo..=hi).contains(&self.model))
        })
    }
}

/// One Fig. 9 counter on this machine.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Resolved {
    /// The counter.
    pub event: Fig9Event,
    /// The vendor's event name (empty if the CPU is not in the table).
    pub vendor_name: String,
    /// Why this event, where the match is not exact.
    pub note: String,
    /// The encoded event, or why there is none.
    pub counter: std::result::Result<CounterEvent, String>,
}

/// The Fig. 9 counters of the machine under `root`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Fig9Events {
    /// The CPU, if `/proc/cpuinfo` identifies one.
    pub cpu: Option<CpuId>,
    /// The table's microarchitecture for it.
    pub microarchitecture: Option<String>,
    /// `cpu` from sysfs, or the architectural x86 layout when sysfs has no
    /// CPU PMU.
    pub encoded_with: String,
    /// The seven counters, in Fig. 9 order.
    pub events: Vec<Resolved>,
}

impl Fig9Events {
    /// The encoded events (those that have an encoding).
    pub fn counters(&self) -> Vec<CounterEvent> {
        self.events
            .iter()
            .filter_map(|r| r.counter.as_ref().ok().cloned())
            .collect()
    }
}

/// Resolves every Fig. 9 counter for the machine under `root`.
pub fn resolve(root: &SysRoot) -> Result<Fig9Events> {
    let cpu = CpuId::read(root)?;
    let arch = cpu.as_ref().and_then(CpuId::microarchitecture);
    let sysfs_cpu = if root.exists(&format!("{}/cpu/type", tinct_sys::perf::pmu::DEVICES)) {
        Some(Pmu::read(root, "cpu")?)
    } else {
        None
    };
    let encoded_with = match &sysfs_cpu {
        Some(_) => "the cpu PMU's format files in sysfs".to_string(),
        None => "the architectural x86 event-select layout (no cpu PMU in sysfs)".to_string(),
    };
    let events = Fig9Event::ALL
        .iter()
        .map(|&event| {
            let Some(arch) = arch else {
                let known: Vec<&str> = MICROARCHITECTURES.iter().map(|m| m.name).collect();
                let what = cpu
                    .as_ref()
                    .map_or("no x86 CPU in /proc/cpuinfo".to_string(), |c| {
                        format!("{} family {} model {}", c.vendor_id, c.family, c.model)
                    });
                return Resolved {
                    event,
                    vendor_name: String::new(),
                    note: String::new(),
                    counter: Err(format!(
                        "no Fig. 9 encodings for {what} (tinct knows {})",
                        known.join(", ")
                    )),
                };
            };
            let row = arch
                .rows
                .iter()
                .find(|r| r.event == event)
                .expect("seven rows");
            let counter = match &sysfs_cpu {
                Some(pmu) => pmu
                    .encode(row.terms)
                    .map(|e| CounterEvent::new(format!("cpu/{}/", row.terms), e)),
                None => architectural(arch.vendor)
                    .encode(row.terms)
                    .map(|e| CounterEvent::new(format!("cpu/{}/", row.terms), e)),
            };
            Resolved {
                event,
                vendor_name: row.vendor_name.to_string(),
                note: row.note.to_string(),
                counter,
            }
        })
        .collect();
    Ok(Fig9Events {
        cpu,
        microarchitecture: arch.map(|a| a.name.to_string()),
        encoded_with,
        events,
    })
}

/// The x86 performance event select layout (Intel SDM vol. 3B, "Architectural
/// Performance Monitoring"; AMD APM vol. 2, PerfEvtSel: event select bits
/// 11:8 at 35:32), as a PMU of type `PERF_TYPE_RAW`.
fn architectural(vendor: Vendor) -> Pmu {
    let event = match vendor {
        Vendor::Intel => "config:0-7",
        Vendor::Amd => "config:0-7,32-35",
    };
    Pmu::from_formats(
        "cpu",
        TYPE_RAW,
        &[
            ("event", event),
            ("umask", "config:8-15"),
            ("edge", "config:18"),
            ("inv", "config:23"),
            ("cmask", "config:24-31"),
            ("offcore_rsp", "config1:0-63"),
        ],
    )
    .expect("the architectural layout is well formed")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_table_has_the_seven_events_in_order() {
        for arch in MICROARCHITECTURES {
            let events: Vec<Fig9Event> = arch.rows.iter().map(|r| r.event).collect();
            assert_eq!(events, Fig9Event::ALL, "{}", arch.name);
            for row in arch.rows {
                assert!(!row.vendor_name.is_empty() && !row.note.is_empty());
            }
        }
    }

    #[test]
    fn the_architectural_layout_encodes_like_the_sysfs_one() {
        let amd = architectural(Vendor::Amd)
            .encode("event=0x1d4,umask=0x2")
            .unwrap();
        assert_eq!(amd.pmu_type, TYPE_RAW);
        assert_eq!(amd.config, 0xd4 | 0x2 << 8 | 1 << 32);
        let intel = architectural(Vendor::Intel)
            .encode("event=0xb7,umask=0x1,offcore_rsp=0x10003c0002")
            .unwrap();
        assert_eq!((intel.config, intel.config1), (0x01b7, 0x10003c0002));
    }
}
