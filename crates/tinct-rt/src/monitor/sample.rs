//! One row of a monitoring series: a thread's counts over one sampling
//! interval, and what sebek2002 Fig. 6 plots from them.

use serde::{Deserialize, Serialize};
use tinct_sys::perf::PerfEvent;

/// The counts of one thread (or of all threads) over one interval; each
/// `None` where the event does not count here (never a zero for that).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// End of the interval, ns since monitoring started.
    pub t_ns: u64,
    /// Length of the interval, ns.
    pub interval_ns: u64,
    /// Thread id (the process id for the all-threads row).
    pub tid: i32,
    /// Thread name (`comm`), or `all threads`.
    pub thread: String,
    /// One count per event of the recording, in its order (scaled when the
    /// kernel multiplexed the counter).
    pub counts: Vec<Option<u64>>,
}

impl Sample {
    /// The count of `event` (by position in `events`), if counted.
    pub fn count(&self, events: &[String], event: PerfEvent) -> Option<u64> {
        let i = events.iter().position(|e| e == event.name())?;
        self.counts.get(i).copied().flatten()
    }

    /// Instructions per cycle.
    pub fn ipc(&self, events: &[String]) -> Option<f64> {
        let cycles = self.count(events, PerfEvent::Cycles)?;
        let instructions = self.count(events, PerfEvent::Instructions)?;
        (cycles > 0).then(|| instructions as f64 / cycles as f64)
    }

    /// LLC read misses / LLC reads (sebek2002 Fig. 6 plots the miss ratio).
    pub fn miss_ratio(&self, events: &[String]) -> Option<f64> {
        let reads = self.count(events, PerfEvent::LlcReferences)?;
        let misses = self.count(events, PerfEvent::LlcMisses)?;
        (reads > 0).then(|| misses as f64 / reads as f64)
    }

    /// Events of `event` per second of the interval.
    pub fn rate(&self, events: &[String], event: PerfEvent) -> Option<f64> {
        let count = self.count(events, event)?;
        (self.interval_ns > 0).then(|| count as f64 * 1e9 / self.interval_ns as f64)
    }

    /// The share of the interval the thread ran (task-clock / interval).
    pub fn cpu_share(&self, events: &[String]) -> Option<f64> {
        let ran = self.count(events, PerfEvent::TaskClock)?;
        (self.interval_ns > 0).then(|| ran as f64 / self.interval_ns as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_values_need_their_counts() {
        let events: Vec<String> = PerfEvent::MONITORING
            .iter()
            .map(|e| e.name().to_string())
            .collect();
        let mut s = Sample {
            t_ns: 10_000_000,
            interval_ns: 10_000_000,
            tid: 1,
            thread: "t".into(),
            counts: vec![
                Some(1000),
                Some(1500),
                Some(40),
                Some(10),
                Some(5_000_000),
                Some(3),
                Some(0),
                Some(2),
            ],
        };
        assert_eq!(s.ipc(&events), Some(1.5));
        assert_eq!(s.miss_ratio(&events), Some(0.25));
        assert_eq!(s.rate(&events, PerfEvent::ContextSwitches), Some(300.0));
        assert_eq!(s.cpu_share(&events), Some(0.5));
        s.counts[0] = None;
        assert_eq!(s.ipc(&events), None, "no cycles: no IPC, not a zero");
    }
}
