//! Hardware performance counters per job, when the machine has them.
//!
//! Each task thread opens its own counters (cycles, instructions, LLC read
//! accesses and misses — the quantities kim2013 Section IV and sebek2002
//! measure) before the common release and reads them at the start and end
//! of every job, through tinct-sys's one perf wrapper
//! ([`tinct_sys::perf::EventCounters`], which reads without allocating).
//! Counters that do not open (a VM without a PMU answers ENOENT) are left
//! out and the run says why; a count is never made up.

use serde::Serialize;
use tinct_sys::perf::{EventCounters, PerfEvent};

/// One reading (or one job's difference) of the counters; `None` for a
/// counter that is not available.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CounterSample {
    /// Core cycles.
    pub cycles: Option<u64>,
    /// Retired instructions.
    pub instructions: Option<u64>,
    /// Last-level cache read accesses.
    pub llc_references: Option<u64>,
    /// Last-level cache read misses.
    pub llc_misses: Option<u64>,
}

impl CounterSample {
    /// `self − earlier`, field by field (`None` where a reading is missing,
    /// or where a counter went backwards, which a count cannot).
    pub fn since(&self, earlier: &CounterSample) -> CounterSample {
        let d = |a: Option<u64>, b: Option<u64>| a?.checked_sub(b?);
        CounterSample {
            cycles: d(self.cycles, earlier.cycles),
            instructions: d(self.instructions, earlier.instructions),
            llc_references: d(self.llc_references, earlier.llc_references),
            llc_misses: d(self.llc_misses, earlier.llc_misses),
        }
    }
}

/// The events of a job's [`CounterSample`], in its field order.
const EVENTS: [PerfEvent; 4] = [
    PerfEvent::Cycles,
    PerfEvent::Instructions,
    PerfEvent::LlcReferences,
    PerfEvent::LlcMisses,
];

/// The counters of the calling thread (tinct-sys's [`EventCounters`]).
pub struct JobCounters {
    counters: EventCounters,
    unavailable: Option<String>,
}

impl JobCounters {
    /// Opens and enables every counter that opens on the calling thread.
    pub fn open() -> JobCounters {
        let counters = EventCounters::open(&EVENTS);
        let unavailable = counters.unavailable_reason();
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

    /// Reads every open counter (no allocation).
    pub fn read(&mut self) -> CounterSample {
        let mut values = [None; EVENTS.len()];
        self.counters.read_into(&mut values);
        let [cycles, instructions, llc_references, llc_misses] = values;
        CounterSample {
            cycles,
            instructions,
            llc_references,
            llc_misses,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn differences_need_both_readings() {
        let a = CounterSample {
            cycles: Some(10),
            instructions: None,
            llc_references: Some(5),
            llc_misses: Some(1),
        };
        let b = CounterSample {
            cycles: Some(25),
            instructions: Some(3),
            llc_references: Some(9),
            llc_misses: Some(1),
        };
        let d = b.since(&a);
        assert_eq!(
            d,
            CounterSample {
                cycles: Some(15),
                instructions: None,
                llc_references: Some(4),
                llc_misses: Some(0)
            }
        );
        assert_eq!(
            a.since(&b).cycles,
            None,
            "a counter that went backwards gives no count, never a wrapped one"
        );
    }

    #[test]
    fn counters_count_work_or_say_why_they_cannot() {
        let mut counters = JobCounters::open();
        if !counters.any() {
            // No PMU here (a VM): every counter must explain its absence.
            let why = counters
                .unavailable()
                .expect("a reason for the missing counters");
            assert!(why.contains("instructions"), "{why}");
            assert_eq!(counters.read(), CounterSample::default());
            return;
        }
        let before = counters.read();
        let mut x = 1u64;
        for i in 0..1_000_000u64 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
        let d = counters.read().since(&before);
        if let Some(instructions) = d.instructions {
            assert!(instructions > 1_000_000, "{d:?}");
        }
    }
}
