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
    /// The rows of one sampling round summed over the threads (the time
    /// and interval of the first row); a count is `None` where some thread
    /// did not count it or the sum overflows. `None` without rows.
    pub fn total(rows: &[Sample]) -> Option<Sample> {
        let first = rows.first()?;
        Some(Sample {
            t_ns: first.t_ns,
            interval_ns: first.interval_ns,
            tid: 0,
            thread: String::new(),
            counts: (0..first.counts.len())
                .map(|i| {
                    rows.iter().try_fold(0u64, |sum, row| {
                        sum.checked_add(row.counts.get(i).copied().flatten()?)
                    })
                })
                .collect(),
        })
    }

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

    #[test]
    fn the_total_sums_threads_and_keeps_a_missing_or_overflowing_count_missing() {
        let row = |tid, counts: Vec<Option<u64>>| Sample {
            t_ns: 20,
            interval_ns: 10,
            tid,
            thread: format!("t{tid}"),
            counts,
        };
        let rows = [
            row(1, vec![Some(1), Some(2), None, Some(u64::MAX)]),
            row(2, vec![Some(10), Some(20), Some(5), Some(1)]),
        ];
        let total = Sample::total(&rows).unwrap();
        assert_eq!(total.counts, vec![Some(11), Some(22), None, None]);
        assert_eq!((total.t_ns, total.interval_ns, total.tid), (20, 10, 0));
        assert_eq!(Sample::total(&[]), None);
    }
}
