//! Performance counters (`perf_event_open`) through the `perf-event2` crate,
//! the one wrapper of the workspace: which events open on this machine
//! ([`probe_events`]), a per-thread counter group read at one instant
//! ([`ThreadCounters`]; the continuous miss counting of sebek2002 and the
//! counter use of gracioli), and per-thread counters opened event by event
//! and read without allocating ([`EventCounters`]; tinct-rt's per-job
//! counts). An event that does not open is reported with the kernel's
//! reason, never as a count of zero.

use crate::error::{Error, Result};
use crate::privilege::Probe;
use crate::root::SysRoot;
use perf_event::events::{Cache, CacheId, CacheOp, CacheResult, Hardware, Software};
use perf_event::{Builder, Counter, Group};
use serde::Serialize;

/// The events tinct uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
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
}

impl PerfEvent {
    /// Every event, hardware first.
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
        }
    }

    /// True for events counted by the CPU's PMU (absent in most VMs).
    pub fn is_hardware(self) -> bool {
        matches!(
            self,
            Self::Cycles | Self::Instructions | Self::LlcMisses | Self::LlcReferences
        )
    }

    fn builder(self) -> Builder<'static> {
        let llc = |result| Cache {
            which: CacheId::LL,
            operation: CacheOp::READ,
            result,
        };
        match self {
            Self::Cycles => Builder::new(Hardware::CPU_CYCLES),
            Self::Instructions => Builder::new(Hardware::INSTRUCTIONS),
            Self::LlcMisses => Builder::new(llc(CacheResult::MISS)),
            Self::LlcReferences => Builder::new(llc(CacheResult::ACCESS)),
            Self::TaskClock => Builder::new(Software::TASK_CLOCK),
            Self::ContextSwitches => Builder::new(Software::CONTEXT_SWITCHES),
            Self::CpuMigrations => Builder::new(Software::CPU_MIGRATIONS),
            Self::PageFaults => Builder::new(Software::PAGE_FAULTS),
        }
    }
}

/// Whether one event opened for the calling thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EventProbe {
    /// The event.
    pub event: PerfEvent,
    /// True if it is a hardware event.
    pub hardware: bool,
    /// Ok, or the errno of `perf_event_open`.
    pub probe: Probe,
}

/// Tries to open every event of [`PerfEvent::ALL`] on the calling thread
/// (user space only, as an unprivileged tool would) and closes it again.
pub fn probe_events() -> Vec<EventProbe> {
    PerfEvent::ALL
        .iter()
        .map(|&event| EventProbe {
            event,
            hardware: event.is_hardware(),
            probe: match event.builder().build() {
                Ok(_counter) => Probe::Ok,
                Err(e) => Probe::from_io(&e),
            },
        })
        .collect()
}

/// The PMU devices in `/sys/bus/event_source/devices` and whether one of them
/// is a CPU's hardware PMU (`cpu`, `cpu_core`, `cpu_atom`, `armv8_*`, ...).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EventSources {
    /// All event source names, sorted.
    pub devices: Vec<String>,
    /// The ones that are a CPU's hardware PMU.
    pub cpu_pmus: Vec<String>,
}

impl EventSources {
    /// Lists `/sys/bus/event_source/devices` under `root`.
    pub fn read(root: &SysRoot) -> Result<Self> {
        let devices = root.list_dir("/sys/bus/event_source/devices")?;
        let cpu_pmus = devices
            .iter()
            .filter(|name| is_cpu_pmu(name))
            .cloned()
            .collect();
        Ok(Self { devices, cpu_pmus })
    }
}

fn is_cpu_pmu(name: &str) -> bool {
    name == "cpu"
        || name.starts_with("cpu_")
        || name.starts_with("armv8_")
        || name.starts_with("armv7_")
        || name == "armv8_pmuv3"
        || name.starts_with("riscv-pmu")
}

/// A group of counters on the calling thread, enabled, disabled and read
/// together (one `read()` returns all values from the same instant).
pub struct ThreadCounters {
    group: Group,
    counters: Vec<(PerfEvent, Counter)>,
}

/// One reading of a [`ThreadCounters`] group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CounterValues {
    /// Event and count, in the order the group was opened with (an event
    /// the kernel did not report is absent).
    pub values: Vec<(PerfEvent, u64)>,
    /// Nanoseconds the group was enabled.
    pub time_enabled_ns: u64,
    /// Nanoseconds the group was actually counting (less than enabled if multiplexed).
    pub time_running_ns: u64,
}

impl CounterValues {
    /// The count of `event`, if the group has it.
    pub fn get(&self, event: PerfEvent) -> Option<u64> {
        self.values
            .iter()
            .find(|(e, _)| *e == event)
            .map(|(_, v)| *v)
    }
}

impl ThreadCounters {
    /// Opens `events` as one group on the calling thread, disabled.
    /// Fails with the errno of the first event that does not open
    /// (hardware events return ENOENT without a PMU).
    pub fn open(events: &[PerfEvent]) -> Result<Self> {
        let mut group = Group::new().map_err(|e| Error::syscall("perf_event_open(group)", e))?;
        let mut counters = Vec::with_capacity(events.len());
        for &event in events {
            let counter = group
                .add(&event.builder())
                .map_err(|e| Error::syscall(format!("perf_event_open({})", event.name()), e))?;
            counters.push((event, counter));
        }
        Ok(Self { group, counters })
    }

    /// Starts counting (all members at once).
    pub fn enable(&mut self) -> Result<()> {
        self.group
            .enable()
            .map_err(|e| Error::syscall("PERF_EVENT_IOC_ENABLE", e))
    }

    /// Stops counting.
    pub fn disable(&mut self) -> Result<()> {
        self.group
            .disable()
            .map_err(|e| Error::syscall("PERF_EVENT_IOC_DISABLE", e))
    }

    /// Sets all counts to zero.
    pub fn reset(&mut self) -> Result<()> {
        self.group
            .reset()
            .map_err(|e| Error::syscall("PERF_EVENT_IOC_RESET", e))
    }

    /// Reads all counts.
    pub fn read(&mut self) -> Result<CounterValues> {
        let data = self
            .group
            .read()
            .map_err(|e| Error::syscall("read(perf group)", e))?;
        // A member missing from the reading is left out (`get` answers
        // `None`), never reported as a count of 0.
        let values = self
            .counters
            .iter()
            .filter_map(|(event, counter)| Some((*event, data.get(counter)?.value())))
            .collect();
        let nanos = |d: Option<std::time::Duration>| d.map_or(0, |d| d.as_nanos() as u64);
        Ok(CounterValues {
            values,
            time_enabled_ns: nanos(data.time_enabled()),
            time_running_ns: nanos(data.time_running()),
        })
    }
}

/// Counters of the calling thread, each event opened on its own, so that
/// an event the machine lacks leaves the others counting. Reading them
/// allocates nothing (one `read()` per counter into a fixed buffer), so it
/// may run between the jobs of a real-time task.
pub struct EventCounters {
    events: Vec<PerfEvent>,
    slots: Vec<Slot>,
}

/// One event of [`EventCounters`].
enum Slot {
    Counting(Counter),
    /// The kernel's reason (`perf_event_open` or enable failed).
    Unavailable(String),
}

impl EventCounters {
    /// Opens and enables `events` on the calling thread, each on its own.
    pub fn open(events: &[PerfEvent]) -> EventCounters {
        let slots = events
            .iter()
            .map(|event| {
                match event
                    .builder()
                    .build()
                    .and_then(|mut c| c.enable().map(|()| c))
                {
                    Ok(counter) => Slot::Counting(counter),
                    Err(e) => Slot::Unavailable(e.to_string()),
                }
            })
            .collect();
        EventCounters {
            events: events.to_vec(),
            slots,
        }
    }

    /// The events, in the order they were asked for.
    pub fn events(&self) -> &[PerfEvent] {
        &self.events
    }

    /// True if at least one event is counting.
    pub fn any(&self) -> bool {
        self.slots.iter().any(|s| matches!(s, Slot::Counting(_)))
    }

    /// The events that do not count, each with the kernel's reason.
    pub fn unavailable(&self) -> Vec<(PerfEvent, &str)> {
        self.events
            .iter()
            .zip(&self.slots)
            .filter_map(|(&event, slot)| match slot {
                Slot::Unavailable(why) => Some((event, why.as_str())),
                Slot::Counting(_) => None,
            })
            .collect()
    }

    /// The events that do not count, in one line (`cycles: <reason>; ...`),
    /// or `None` when all count.
    pub fn unavailable_reason(&self) -> Option<String> {
        let missing = self.unavailable();
        (!missing.is_empty()).then(|| {
            missing
                .iter()
                .map(|(event, why)| format!("{}: {why}", event.name()))
                .collect::<Vec<_>>()
                .join("; ")
        })
    }

    /// Reads every event into `values` (the same order as [`Self::events`];
    /// extra slots are left as they are): the count, or `None` for an event
    /// that is unavailable or whose read failed. Allocates nothing.
    pub fn read_into(&mut self, values: &mut [Option<u64>]) {
        for (slot, value) in self.slots.iter_mut().zip(values) {
            *value = match slot {
                Slot::Counting(counter) => counter.read().ok(),
                Slot::Unavailable(_) => None,
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_cpu_pmus() {
        for name in ["cpu", "cpu_core", "cpu_atom", "armv8_pmuv3_0"] {
            assert!(is_cpu_pmu(name), "{name}");
        }
        for name in [
            "software",
            "tracepoint",
            "breakpoint",
            "msr",
            "uprobe",
            "cpufreq",
        ] {
            assert!(!is_cpu_pmu(name), "{name}");
        }
    }

    #[test]
    fn every_event_has_a_distinct_name() {
        let mut names: Vec<&str> = PerfEvent::ALL.iter().map(|e| e.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), PerfEvent::ALL.len());
    }

    #[test]
    fn event_counters_count_or_give_the_kernels_reason_never_a_zero() {
        let events = [PerfEvent::TaskClock, PerfEvent::Instructions];
        let mut counters = EventCounters::open(&events);
        assert_eq!(counters.events(), events);
        let mut before = [None; 2];
        counters.read_into(&mut before);
        let mut x = 1u64;
        for i in 0..1_000_000u64 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
        let mut after = [None; 2];
        counters.read_into(&mut after);
        // Software events open everywhere tinct runs.
        let (Some(t0), Some(t1)) = (before[0], after[0]) else {
            panic!("task-clock must count: {:?}", counters.unavailable_reason());
        };
        assert!(t1 > t0, "{t0} -> {t1}");
        let unavailable = counters.unavailable();
        match (after[1], unavailable.as_slice()) {
            (Some(instructions), []) => assert!(instructions > 0),
            (None, [(PerfEvent::Instructions, why)]) => {
                assert!(!why.is_empty());
                assert!(
                    counters
                        .unavailable_reason()
                        .unwrap()
                        .starts_with("instructions: ")
                );
            }
            other => panic!("a count or a reason, not both nor neither: {other:?}"),
        }
    }
}
