//! What a counter counts: the generic events of the perf ABI by name
//! ([`PerfEvent`]), and any event as the four numbers `perf_event_open`
//! takes ([`Encoding`]) with its name ([`CounterEvent`]).
//!
//! The numbers of the generic events are the kernel's ABI
//! (`include/uapi/linux/perf_event.h`): `PERF_TYPE_HARDWARE` with
//! `PERF_COUNT_HW_*`, `PERF_TYPE_HW_CACHE` with
//! `id | op << 8 | result << 16`, `PERF_TYPE_SOFTWARE` with
//! `PERF_COUNT_SW_*`. The kernel maps each generic hardware event to the
//! model-specific event of the CPU it runs on, or answers ENOENT.

/// `PERF_TYPE_HARDWARE`: generic hardware events.
pub const TYPE_HARDWARE: u32 = 0;
/// `PERF_TYPE_SOFTWARE`: events counted by the kernel.
pub const TYPE_SOFTWARE: u32 = 1;
/// `PERF_TYPE_HW_CACHE`: generic cache events.
pub const TYPE_HW_CACHE: u32 = 3;
/// `PERF_TYPE_RAW`: a model-specific encoding for the CPU's PMU.
pub const TYPE_RAW: u32 = 4;

/// The four numbers `perf_event_open` needs to name an event: the PMU type
/// (`perf_event_attr.type`, a `PERF_TYPE_*` constant or the `type` file of
/// a PMU in sysfs) and the three config words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Encoding {
    /// `perf_event_attr.type`.
    #[cfg_attr(feature = "serde", serde(rename = "type"))]
    pub pmu_type: u32,
    /// `perf_event_attr.config`.
    pub config: u64,
    /// `perf_event_attr.config1` (e.g. Intel's offcore response mask).
    pub config1: u64,
    /// `perf_event_attr.config2`.
    pub config2: u64,
}

impl Encoding {
    /// `pmu_type` with `config` (config1 and config2 zero).
    pub const fn new(pmu_type: u32, config: u64) -> Self {
        Self {
            pmu_type,
            config,
            config1: 0,
            config2: 0,
        }
    }

    /// A raw event (`perf_event_attr.type` 4): `config` and `config1`
    /// as a CPU's event table gives them.
    pub const fn raw(config: u64, config1: u64) -> Self {
        Self {
            pmu_type: TYPE_RAW,
            config,
            config1,
            config2: 0,
        }
    }

    /// True for an event the kernel counts in software (it opens without a PMU).
    pub fn is_software(&self) -> bool {
        self.pmu_type == TYPE_SOFTWARE
    }

    /// `type=0x4,config=0x412e` — how errors and reports show an encoding.
    pub fn describe(&self) -> String {
        let mut text = format!("type={},config={:#x}", self.pmu_type, self.config);
        if self.config1 != 0 {
            text.push_str(&format!(",config1={:#x}", self.config1));
        }
        if self.config2 != 0 {
            text.push_str(&format!(",config2={:#x}", self.config2));
        }
        text
    }
}

/// The generic events of the perf ABI tinct uses, named as `perf stat -e`
/// names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
pub enum PerfEvent {
    /// Core cycles (hardware).
    Cycles,
    /// Retired instructions (hardware).
    Instructions,
    /// Last-level cache read misses (hardware cache event LL/read/miss).
    LlcMisses,
    /// Last-level cache read accesses (hardware cache event LL/read/access).
    LlcReferences,
    /// Time the task ran, in ns (software).
    TaskClock,
    /// Context switches (software).
    ContextSwitches,
    /// Migrations to another CPU (software).
    CpuMigrations,
    /// Page faults (software).
    PageFaults,
    /// Cache references as the CPU defines them, usually last-level (hardware).
    CacheReferences,
    /// Cache misses as the CPU defines them, usually last-level (hardware).
    CacheMisses,
    /// Level-1 data cache read misses (hardware cache event L1D/read/miss).
    L1dMisses,
    /// Level-1 data cache reads (hardware cache event L1D/read/access).
    L1dLoads,
    /// Level-1 data cache writes (hardware cache event L1D/write/access).
    L1dStores,
    /// Level-1 data cache write misses (hardware cache event L1D/write/miss;
    /// many CPUs have no such event, and the kernel answers ENOENT).
    L1dStoreMisses,
    /// Last-level cache writes (hardware cache event LL/write/access).
    LlcStores,
    /// Last-level cache write misses (hardware cache event LL/write/miss).
    LlcStoreMisses,
    /// Data TLB read misses (hardware cache event DTLB/read/miss).
    DtlbMisses,
    /// Retired branch instructions (hardware).
    BranchInstructions,
    /// Mispredicted branches (hardware).
    BranchMisses,
}

/// `PERF_COUNT_HW_CACHE_*` ids, operations and results.
const CACHE_L1D: u64 = 0;
const CACHE_LL: u64 = 2;
const CACHE_DTLB: u64 = 3;
const CACHE_OP_READ: u64 = 0;
const CACHE_OP_WRITE: u64 = 1;
const CACHE_RESULT_ACCESS: u64 = 0;
const CACHE_RESULT_MISS: u64 = 1;

const fn cache_event(id: u64, op: u64, result: u64) -> Encoding {
    Encoding::new(TYPE_HW_CACHE, id | op << 8 | result << 16)
}

impl PerfEvent {
    /// The events `tinct doctor` probes: the ones tinct has always used,
    /// hardware first.
    pub const ALL: [PerfEvent; 8] = [
        Self::Cycles,
        Self::Instructions,
        Self::LlcMisses,
        Self::LlcReferences,
        Self::TaskClock,
        Self::ContextSwitches,
        Self::CpuMigrations,
        Self::PageFaults,
    ];

    /// Every generic event, hardware first.
    pub const GENERIC: [PerfEvent; 19] = [
        Self::Cycles,
        Self::Instructions,
        Self::CacheReferences,
        Self::CacheMisses,
        Self::LlcReferences,
        Self::LlcMisses,
        Self::LlcStores,
        Self::LlcStoreMisses,
        Self::L1dLoads,
        Self::L1dMisses,
        Self::L1dStores,
        Self::L1dStoreMisses,
        Self::DtlbMisses,
        Self::BranchInstructions,
        Self::BranchMisses,
        Self::TaskClock,
        Self::ContextSwitches,
        Self::CpuMigrations,
        Self::PageFaults,
    ];

    /// What tinct watches by default (benches' per-condition totals,
    /// `tinct monitor`): cycles and instructions (IPC), LLC reads and read
    /// misses (the miss ratio of sebek2002 Fig. 6), and the software events.
    pub const MONITORING: [PerfEvent; 8] = [
        Self::Cycles,
        Self::Instructions,
        Self::LlcReferences,
        Self::LlcMisses,
        Self::TaskClock,
        Self::ContextSwitches,
        Self::CpuMigrations,
        Self::PageFaults,
    ];

    /// The software events: they count on every machine, PMU or not.
    pub const SOFTWARE: [PerfEvent; 4] = [
        Self::TaskClock,
        Self::ContextSwitches,
        Self::CpuMigrations,
        Self::PageFaults,
    ];

    /// The name `perf stat -e` uses.
    pub fn name(self) -> &'static str {
        match self {
            Self::Cycles => "cycles",
            Self::Instructions => "instructions",
            Self::LlcMisses => "LLC-load-misses",
            Self::LlcReferences => "LLC-loads",
            Self::TaskClock => "task-clock",
            Self::ContextSwitches => "context-switches",
            Self::CpuMigrations => "cpu-migrations",
            Self::PageFaults => "page-faults",
            Self::CacheReferences => "cache-references",
            Self::CacheMisses => "cache-misses",
            Self::L1dMisses => "L1-dcache-load-misses",
            Self::L1dLoads => "L1-dcache-loads",
            Self::L1dStores => "L1-dcache-stores",
            Self::L1dStoreMisses => "L1-dcache-store-misses",
            Self::LlcStores => "LLC-stores",
            Self::LlcStoreMisses => "LLC-store-misses",
            Self::DtlbMisses => "dTLB-load-misses",
            Self::BranchInstructions => "branch-instructions",
            Self::BranchMisses => "branch-misses",
        }
    }

    /// Other names perf accepts for the same event.
    fn aliases(self) -> &'static [&'static str] {
        match self {
            Self::Cycles => &["cpu-cycles"],
            Self::ContextSwitches => &["cs"],
            Self::CpuMigrations => &["migrations"],
            Self::PageFaults => &["faults"],
            Self::BranchInstructions => &["branches"],
            _ => &[],
        }
    }

    /// The event named `name` (perf's spelling or one of its aliases).
    pub fn from_name(name: &str) -> Option<PerfEvent> {
        Self::GENERIC
            .into_iter()
            .find(|e| e.name() == name || e.aliases().contains(&name))
    }

    /// True for events counted by the CPU's PMU (absent in most VMs).
    pub fn is_hardware(self) -> bool {
        !self.encoding().is_software()
    }

    /// The numbers of this event in the perf ABI.
    pub const fn encoding(self) -> Encoding {
        match self {
            Self::Cycles => Encoding::new(TYPE_HARDWARE, 0),
            Self::Instructions => Encoding::new(TYPE_HARDWARE, 1),
            Self::CacheReferences => Encoding::new(TYPE_HARDWARE, 2),
            Self::CacheMisses => Encoding::new(TYPE_HARDWARE, 3),
            Self::BranchInstructions => Encoding::new(TYPE_HARDWARE, 4),
            Self::BranchMisses => Encoding::new(TYPE_HARDWARE, 5),
            Self::LlcReferences => cache_event(CACHE_LL, CACHE_OP_READ, CACHE_RESULT_ACCESS),
            Self::LlcMisses => cache_event(CACHE_LL, CACHE_OP_READ, CACHE_RESULT_MISS),
            Self::L1dMisses => cache_event(CACHE_L1D, CACHE_OP_READ, CACHE_RESULT_MISS),
            Self::L1dLoads => cache_event(CACHE_L1D, CACHE_OP_READ, CACHE_RESULT_ACCESS),
            Self::L1dStores => cache_event(CACHE_L1D, CACHE_OP_WRITE, CACHE_RESULT_ACCESS),
            Self::L1dStoreMisses => cache_event(CACHE_L1D, CACHE_OP_WRITE, CACHE_RESULT_MISS),
            Self::LlcStores => cache_event(CACHE_LL, CACHE_OP_WRITE, CACHE_RESULT_ACCESS),
            Self::LlcStoreMisses => cache_event(CACHE_LL, CACHE_OP_WRITE, CACHE_RESULT_MISS),
            Self::DtlbMisses => cache_event(CACHE_DTLB, CACHE_OP_READ, CACHE_RESULT_MISS),
            Self::TaskClock => Encoding::new(TYPE_SOFTWARE, 1),
            Self::PageFaults => Encoding::new(TYPE_SOFTWARE, 2),
            Self::ContextSwitches => Encoding::new(TYPE_SOFTWARE, 3),
            Self::CpuMigrations => Encoding::new(TYPE_SOFTWARE, 4),
        }
    }
}

/// An event to count: its name (as given, or perf's) and its encoding.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct CounterEvent {
    /// The name shown in reports (`cycles`, `cpu/cache-misses/`, `r412e`).
    pub name: String,
    /// What `perf_event_open` gets.
    pub encoding: Encoding,
}

impl CounterEvent {
    /// An event named `name` with `encoding`.
    pub fn new(name: impl Into<String>, encoding: Encoding) -> Self {
        Self {
            name: name.into(),
            encoding,
        }
    }

    /// True for an event the kernel counts in software.
    pub fn is_software(&self) -> bool {
        self.encoding.is_software()
    }
}

impl From<PerfEvent> for CounterEvent {
    fn from(event: PerfEvent) -> Self {
        Self::new(event.name(), event.encoding())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use perf_event::events::{Cache, CacheId, CacheOp, CacheResult, Hardware, Software};

    /// perf-event2's own numbers for the same event.
    fn theirs(event: PerfEvent) -> (u32, u64) {
        use perf_event::Builder;
        let cache = |which, result| Cache {
            which,
            operation: CacheOp::READ,
            result,
        };
        let write = |which, result| Cache {
            which,
            operation: CacheOp::WRITE,
            result,
        };
        let builder = match event {
            PerfEvent::Cycles => Builder::new(Hardware::CPU_CYCLES),
            PerfEvent::Instructions => Builder::new(Hardware::INSTRUCTIONS),
            PerfEvent::CacheReferences => Builder::new(Hardware::CACHE_REFERENCES),
            PerfEvent::CacheMisses => Builder::new(Hardware::CACHE_MISSES),
            PerfEvent::BranchInstructions => Builder::new(Hardware::BRANCH_INSTRUCTIONS),
            PerfEvent::BranchMisses => Builder::new(Hardware::BRANCH_MISSES),
            PerfEvent::LlcReferences => Builder::new(cache(CacheId::LL, CacheResult::ACCESS)),
            PerfEvent::LlcMisses => Builder::new(cache(CacheId::LL, CacheResult::MISS)),
            PerfEvent::L1dMisses => Builder::new(cache(CacheId::L1D, CacheResult::MISS)),
            PerfEvent::L1dLoads => Builder::new(cache(CacheId::L1D, CacheResult::ACCESS)),
            PerfEvent::L1dStores => Builder::new(write(CacheId::L1D, CacheResult::ACCESS)),
            PerfEvent::L1dStoreMisses => Builder::new(write(CacheId::L1D, CacheResult::MISS)),
            PerfEvent::LlcStores => Builder::new(write(CacheId::LL, CacheResult::ACCESS)),
            PerfEvent::LlcStoreMisses => Builder::new(write(CacheId::LL, CacheResult::MISS)),
            PerfEvent::DtlbMisses => Builder::new(cache(CacheId::DTLB, CacheResult::MISS)),
            PerfEvent::TaskClock => Builder::new(Software::TASK_CLOCK),
            PerfEvent::ContextSwitches => Builder::new(Software::CONTEXT_SWITCHES),
            PerfEvent::CpuMigrations => Builder::new(Software::CPU_MIGRATIONS),
            PerfEvent::PageFaults => Builder::new(Software::PAGE_FAULTS),
        };
        (builder.attrs().type_, builder.attrs().config)
    }

    #[test]
    fn generic_encodings_are_the_kernels_abi() {
        for event in PerfEvent::GENERIC {
            let ours = event.encoding();
            assert_eq!(
                (ours.pmu_type, ours.config),
                theirs(event),
                "{}",
                event.name()
            );
        }
        assert_eq!(PerfEvent::LlcMisses.encoding().config, 0x10002);
        // The store events: op PERF_COUNT_HW_CACHE_OP_WRITE (1) in bits 8-15,
        // result ACCESS (0) or MISS (1) in bits 16-23.
        let hw_cache = |event: PerfEvent| {
            let e = event.encoding();
            assert_eq!(e.pmu_type, TYPE_HW_CACHE, "{}", event.name());
            e.config
        };
        assert_eq!(hw_cache(PerfEvent::LlcStores), 0x00102);
        assert_eq!(hw_cache(PerfEvent::LlcStoreMisses), 0x10102);
        assert_eq!(hw_cache(PerfEvent::L1dLoads), 0x00000);
        assert_eq!(hw_cache(PerfEvent::L1dStores), 0x00100);
        assert_eq!(hw_cache(PerfEvent::L1dStoreMisses), 0x10100);
    }

    #[test]
    fn names_and_aliases_find_their_event() {
        for event in PerfEvent::GENERIC {
            assert_eq!(PerfEvent::from_name(event.name()), Some(event));
        }
        assert_eq!(PerfEvent::from_name("cs"), Some(PerfEvent::ContextSwitches));
        assert_eq!(PerfEvent::from_name("cpu-cycles"), Some(PerfEvent::Cycles));
        assert_eq!(PerfEvent::from_name("cycle"), None);
        let mut names: Vec<&str> = PerfEvent::GENERIC.iter().map(|e| e.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), PerfEvent::GENERIC.len());
    }

    #[test]
    fn only_the_software_events_are_software() {
        for event in PerfEvent::GENERIC {
            assert_eq!(
                !event.is_hardware(),
                PerfEvent::SOFTWARE.contains(&event),
                "{}",
                event.name()
            );
        }
    }
}
