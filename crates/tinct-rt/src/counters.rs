//! Hardware performance counters per job, when the machine has them.
//!
//! Each task thread opens its own counters (cycles, instructions, LLC read
//! accesses and misses — the quantities kim2013 Section IV and sebek2002
//! measure) before the common release and reads them at the start and end
//! of every job. Each counter is read with one `read()` into a fixed
//! buffer, so the hot path allocates nothing (tinct-sys's group read returns
//! a `Vec`, which is why this module talks to `perf-event2` itself).
//! Counters that do not open (a VM without a PMU answers ENOENT) are left
//! out and the run says why.

use perf_event::events::{Cache, CacheId, CacheOp, CacheResult, Hardware};
use perf_event::{Builder, Counter};
use serde::Serialize;

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
    /// `self − earlier`, field by field.
    pub fn since(&self, earlier: &CounterSample) -> CounterSample {
        let d = |a: Option<u64>, b: Option<u64>| Some(a?.wrapping_sub(b?));
        CounterSample {
            cycles: d(self.cycles, earlier.cycles),
            instructions: d(self.instructions, earlier.instructions),
            llc_references: d(self.llc_references, earlier.llc_references),
            llc_misses: d(self.llc_misses, earlier.llc_misses),
        }
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Which {
    Cycles,
    Instructions,
    LlcReferences,
    LlcMisses,
}

impl Which {
    fn name(self) -> &'static str {
        match self {
            Which::Cycles => "cycles",
            Which::Instructions => "instructions",
            Which::LlcReferences => "LLC-loads",
            Which::LlcMisses => "LLC-load-misses",
        }
    }
}

/// The counters of the calling thread.
pub struct JobCounters {
    open: Vec<(Which, Counter)>,
    unavailable: Option<String>,
}

impl JobCounters {
    /// Opens and enables every counter that opens on the calling thread.
    pub fn open() -> JobCounters {
        let llc = |result| Cache {
            which: CacheId::LL,
            operation: CacheOp::READ,
            result,
        };
        let attempts = [
            (Which::Cycles, Builder::new(Hardware::CPU_CYCLES).build()),
            (
                Which::Instructions,
                Builder::new(Hardware::INSTRUCTIONS).build(),
            ),
            (
                Which::LlcReferences,
                Builder::new(llc(CacheResult::ACCESS)).build(),
            ),
            (
                Which::LlcMisses,
                Builder::new(llc(CacheResult::MISS)).build(),
            ),
        ];
        let mut open = Vec::new();
        let mut errors = Vec::new();
        for (which, built) in attempts {
            match built.and_then(|mut c| c.enable().map(|()| c)) {
                Ok(counter) => open.push((which, counter)),
                Err(e) => errors.push(format!("{}: {e}", which.name())),
            }
        }
        let unavailable = (!errors.is_empty()).then(|| errors.join("; "));
        JobCounters { open, unavailable }
    }

    /// True if at least one counter is counting.
    pub fn any(&self) -> bool {
        !self.open.is_empty()
    }

    /// Why some counters are missing (perf_event_open's errors), if any.
    pub fn unavailable(&self) -> Option<&str> {
        self.unavailable.as_deref()
    }

    /// Reads every open counter (no allocation).
    pub fn read(&mut self) -> CounterSample {
        let mut sample = CounterSample::default();
        for (which, counter) in &mut self.open {
            let value = counter.read().ok();
            match which {
                Which::Cycles => sample.cycles = value,
                Which::Instructions => sample.instructions = value,
                Which::LlcReferences => sample.llc_references = value,
                Which::LlcMisses => sample.llc_misses = value,
            }
        }
        sample
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
