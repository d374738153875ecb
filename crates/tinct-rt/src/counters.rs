//! Performance counters per job: hardware counts where the machine has
//! them, and the kernel's software counts everywhere.
//!
//! Each task thread opens its own counters before the common release —
//! cycles, instructions, LLC read accesses and misses (the quantities
//! kim2013 Section IV and sebek2002 measure), and the context switches and
//! CPU migrations of the job from the kernel's software events, which count
//! even in a VM without a PMU — and reads them at the start and end of
//! every job through tinct-sys's counter layer
//! ([`tinct_sys::perf::Counters`]: one atomic read per group, no
//! allocation). A job's count is the difference of the two readings,
//! scaled by the job's own enabled/running times when the kernel
//! multiplexed the hardware counters. Counters that do not open (a VM
//! without a PMU answers ENOENT) are left out and the run says why; a count
//! is never made up.

use serde::{Deserialize, Serialize};
use tinct_sys::perf::{Count, CounterEvent, Counters, PerfEvent, Target};

/// One job's counts; `None` for a counter that is not available (or whose
/// difference could not be taken).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CounterSample {
    /// Core cycles.
    pub cycles: Option<u64>,
    /// Retired instructions.
    pub instructions: Option<u64>,
    /// Last-level cache read accesses.
    pub llc_references: Option<u64>,
    /// Last-level cache read misses.
    pub llc_misses: Option<u64>,
    /// Context switches during the job (the kernel's count: preemptions
    /// and blocking alike).
    pub context_switches: Option<u64>,
    /// Moves of the task to another CPU during the job (the kernel's count,
    /// each move, not only an end CPU different from the start CPU).
    pub cpu_migrations: Option<u64>,
}

/// The events of a job's [`CounterSample`], in its field order.
const EVENTS: [PerfEvent; 6] = [
    PerfEvent::Cycles,
    PerfEvent::Instructions,
    PerfEvent::LlcReferences,
    PerfEvent::LlcMisses,
    PerfEvent::ContextSwitches,
    PerfEvent::CpuMigrations,
];

/// One reading of a task's counters (raw values with their times).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct CounterReading([Option<Count>; EVENTS.len()]);

impl CounterReading {
    /// The counts from `earlier` to this reading, each scaled by the
    /// interval's enabled/running times (`None` where a reading is missing,
    /// a counter went backwards, or the counter did not run in between).
    pub fn since(&self, earlier: &CounterReading) -> CounterSample {
        let d = |i: usize| {
            let (now, then) = (self.0[i]?, earlier.0[i]?);
            now.since(&then)?.scaled().value()
        };
        CounterSample {
            cycles: d(0),
            instructions: d(1),
            llc_references: d(2),
            llc_misses: d(3),
            context_switches: d(4),
            cpu_migrations: d(5),
        }
    }
}

/// The counters of the calling thread (tinct-sys's [`Counters`]).
pub struct JobCounters {
    counters: Counters,
    unavailable: Option<String>,
}

impl JobCounters {
    /// Opens and enables every counter that opens on the calling thread.
    pub fn open() -> JobCounters {
        let events: Vec<CounterEvent> = EVENTS.iter().map(|&e| e.into()).collect();
        let mut counters = Counters::open(&events, Target::CallingThread);
        let mut unavailable = counters.unavailable_reason();
        if let Err(e) = counters.enable() {
            unavailable = Some(format!("counters could not be enabled: {e}"));
        }
        JobCounters {
            counters,
            unavailable,
        }
    }

    /// True if at least one counter is counting.
    pub fn any(&self) -> bool {
        self.counters.any()
    }

    /// Why some counters are missing (the kernel's reasons), if any.
    pub fn unavailable(&self) -> Option<&str> {
        self.unavailable.as_deref()
    }

    /// Reads every open counter (no allocation; a failed read gives no
    /// counts, never zeros).
    pub fn read(&mut self) -> CounterReading {
        let mut reading = CounterReading::default();
        if self.counters.read_into(&mut reading.0).is_err() {
            return CounterReading::default();
        }
        reading
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(value: u64, enabled: u64, running: u64) -> Option<Count> {
        Some(Count {
            value,
            time_enabled_ns: enabled,
            time_running_ns: running,
        })
    }

    #[test]
    fn differences_need_both_readings_and_are_scaled_per_job() {
        let a = CounterReading([
            count(10, 100, 100),
            None,
            count(5, 100, 50),
            count(1, 100, 100),
            count(3, 100, 100),
            count(0, 100, 100),
        ]);
        let b = CounterReading([
            count(25, 200, 200),
            count(3, 200, 200),
            count(9, 300, 100),
            count(1, 200, 200),
            count(4, 200, 200),
            None,
        ]);
        assert_eq!(
            b.since(&a),
            CounterSample {
                cycles: Some(15),
                instructions: None,
                // 4 counted in 50 of 200 ns: 16.
                llc_references: Some(16),
                llc_misses: Some(0),
                context_switches: Some(1),
                cpu_migrations: None,
            }
        );
        assert_eq!(
            a.since(&b).cycles,
            None,
            "a counter that went backwards gives no count, never a wrapped one"
        );
    }

    #[test]
    fn software_counts_are_there_and_hardware_ones_count_or_say_why() {
        let mut counters = JobCounters::open();
        let before = counters.read();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let mut x = 1u64;
        for i in 0..1_000_000u64 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
        let d = counters.read().since(&before);
        let root = tinct_sys::privilege::Privileges::read(&tinct_sys::SysRoot::live())
            .is_ok_and(|p| p.is_root());
        if root {
            // Root may count kernel events: the sleep blocked at least once.
            assert!(d.context_switches.is_some_and(|n| n >= 1), "{d:?}");
            assert!(d.cpu_migrations.is_some(), "{d:?}");
        }
        match d.instructions {
            Some(instructions) => assert!(instructions > 1_000_000, "{d:?}"),
            None => {
                let why = counters
                    .unavailable()
                    .expect("a reason for the missing counters");
                assert!(why.contains("instructions: "), "{why}");
            }
        }
    }
}
