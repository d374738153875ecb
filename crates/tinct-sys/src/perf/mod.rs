//! The counter layer of tinct: performance counters through
//! `perf_event_open` (via the `perf-event2` crate), the one wrapper of the
//! workspace.
//!
//! - [`events`]: what to count — the generic events of the perf ABI by
//!   name ([`PerfEvent`]: cycles, instructions, cache references and
//!   misses, LLC loads and misses, L1D and dTLB misses, branch misses,
//!   task-clock, context switches, CPU migrations, page faults) and any
//!   event as its [`Encoding`];
//! - [`pmu`] and [`syntax`]: the kernel's named events and format files in
//!   sysfs, so `cpu/cache-misses/`, `cpu/event=0xd2,umask=0x4/` or `r412e`
//!   are encoded exactly ([`parse_event`]);
//! - [`counters`]: a thread's events opened as groups, one per hardware
//!   PMU, read atomically and without allocating ([`Counters`]);
//! - [`count`]: a value with its enabled and running times, scaled when the
//!   kernel multiplexed it ([`Count::scaled`]);
//! - [`reason`]: why an event does not count, in the kernel's words
//!   ([`Availability`]): a report says `unavailable: <reason>`, never 0;
//! - [`memory_sampling`]: precise memory sampling (Intel PEBS load latency
//!   with its HITM snoop result, AMD IBS op) to find threads that hit each
//!   other's modified lines (gracioli Section IV), where the CPU has it;
//!
//! [`probe_events`] says which generic events open here (`tinct doctor`);
//! [`ThreadCounters`] is the calling thread's counters, all-or-nothing.

pub mod count;
pub mod counters;
pub mod events;
pub mod memory_sampling;
pub mod pmu;
pub mod reason;
pub mod syntax;

pub use count::{Count, Scaled};
pub use counters::{Counters, Target};
pub use events::{CounterEvent, Encoding, PerfEvent};
pub use pmu::Pmu;
pub use reason::{Availability, describe_error, errno_name};
pub use syntax::parse_event;

use crate::error::{Error, Result};
use crate::privilege::Probe;
use crate::root::SysRoot;

/// Whether one event opened for the calling thread.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct EventProbe {
    /// The event.
    pub event: PerfEvent,
    /// True if it is a hardware event.
    pub hardware: bool,
    /// Ok, or the errno of `perf_event_open`.
    pub probe: Probe,
}

/// Tries to open every event of [`PerfEvent::ALL`] on the calling thread
/// (hardware events in user space only, software events in user and
/// kernel space, as [`Counters`] opens them) and closes it again.
pub fn probe_events() -> Vec<EventProbe> {
    PerfEvent::ALL
        .iter()
        .map(|&event| EventProbe {
            event,
            hardware: event.is_hardware(),
            probe: match counters::try_open(&event.into()) {
                Ok(()) => Probe::Ok,
                Err(e) => Probe::from_io(&e),
            },
        })
        .collect()
}

/// The PMU devices in `/sys/bus/event_source/devices` and whether one of them
/// is a CPU's hardware PMU (`cpu`, `cpu_core`, `cpu_atom`, `armv8_*`, ...).
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
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

/// The calling thread's counters, all or nothing: [`ThreadCounters::open`]
/// fails unless every event opens (for callers that cannot use a partial
/// set; [`Counters`] keeps the events that open).
pub struct ThreadCounters {
    counters: Counters,
    events: Vec<PerfEvent>,
}

/// One reading of a [`ThreadCounters`] group.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
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
    /// Opens `events` on the calling thread, disabled. Fails with the
    /// kernel's reason for the first event that does not open (hardware
    /// events return ENOENT without a PMU).
    pub fn open(events: &[PerfEvent]) -> Result<Self> {
        let wanted: Vec<CounterEvent> = events.iter().map(|&e| e.into()).collect();
        let counters = Counters::open(&wanted, Target::CallingThread);
        if let Some((event, why)) = counters.unavailable().first() {
            return Err(Error::syscall(
                format!("perf_event_open({})", event.name),
                std::io::Error::other(why.to_string()),
            ));
        }
        Ok(Self {
            counters,
            events: events.to_vec(),
        })
    }

    /// Starts counting (all members at once).
    pub fn enable(&mut self) -> Result<()> {
        self.counters.enable()
    }

    /// Stops counting.
    pub fn disable(&mut self) -> Result<()> {
        self.counters.disable()
    }

    /// Sets all counts to zero.
    pub fn reset(&mut self) -> Result<()> {
        self.counters.reset()
    }

    /// Reads all counts (the raw values; `time_*` are those of the first
    /// event's group).
    pub fn read(&mut self) -> Result<CounterValues> {
        let counts = self.counters.read()?;
        let first = counts.iter().flatten().next();
        Ok(CounterValues {
            values: self
                .events
                .iter()
                .zip(&counts)
                .filter_map(|(&event, count)| Some((event, count.as_ref()?.value)))
                .collect(),
            time_enabled_ns: first.map_or(0, |c| c.time_enabled_ns),
            time_running_ns: first.map_or(0, |c| c.time_running_ns),
        })
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
    fn counters_count_or_give_the_kernels_reason_never_a_zero() {
        let events: Vec<CounterEvent> =
            vec![PerfEvent::TaskClock.into(), PerfEvent::Instructions.into()];
        let mut counters = Counters::open(&events, Target::CallingThread);
        assert_eq!(counters.events(), events);
        counters.enable().unwrap();
        let before = counters.read().unwrap();
        let mut x = 1u64;
        for i in 0..1_000_000u64 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
        let after = counters.read().unwrap();
        // Software events open everywhere tinct runs.
        let (Some(t0), Some(t1)) = (before[0], after[0]) else {
            panic!("task-clock must count: {:?}", counters.unavailable_reason());
        };
        assert!(t1.value > t0.value, "{t0:?} -> {t1:?}");
        match (after[1], counters.unavailable().as_slice()) {
            (Some(instructions), []) => assert!(instructions.value > 0),
            (None, [(event, why)]) => {
                assert_eq!(event.name, "instructions");
                assert!(!why.is_empty());
                assert!(
                    counters
                        .unavailable_reason()
                        .unwrap()
                        .starts_with("instructions: ")
                );
                assert_eq!(
                    counters.availability()[1].to_string(),
                    format!("unavailable: {why}")
                );
            }
            other => panic!("a count or a reason, not both nor neither: {other:?}"),
        }
    }
}
