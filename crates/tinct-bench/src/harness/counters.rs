//! Performance counter totals per bench condition.
//!
//! [`Interleaved`](super::Interleaved) opens tinct-sys's counters on the
//! measuring thread, inherited by every thread and process it starts
//! afterwards (`inherit`: the worker threads a measurement spawns are
//! counted with it), reads them before and after each recorded
//! measurement, and adds each measurement's counts (scaled by its own
//! enabled/running times if the kernel multiplexed them) to its
//! condition's total. Threads started before the run (a bench's long-lived
//! partner) are not counted. An event that does not open has no total and
//! carries the kernel's reason instead: never a zero.
//!
//! A bench puts the totals into its header with
//! [`RunHeader::add_counters`](super::RunHeader::add_counters), naming each
//! condition; or, without naming them, takes every interleaved run of the
//! measuring thread since its header was made with
//! [`RunHeader::add_logged_counters`](super::RunHeader::add_logged_counters)
//! (conditions then named `run K/condition`, K counting the interleaved runs).

use serde::{Deserialize, Serialize};
use tinct_sys::perf::{Count, CounterEvent, Counters, PerfEvent, Target};

/// The events every bench counts unless told otherwise: tinct-sys's
/// monitoring set — cycles and instructions (IPC), LLC reads and read
/// misses (miss ratio), and the kernel's software events.
pub const DEFAULT_EVENTS: [PerfEvent; 8] = PerfEvent::MONITORING;

/// The default events as counter events.
pub fn default_events() -> Vec<CounterEvent> {
    DEFAULT_EVENTS.iter().map(|&e| e.into()).collect()
}

/// One event's total over the recorded runs of one condition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventTotal {
    /// The event (`cycles`, `cpu/event=0xd2,umask=0x4/`, ...).
    pub event: String,
    /// The sum of each run's count; `None` when the event does not count
    /// here or a run gave no count.
    pub total: Option<u64>,
    /// True if the kernel multiplexed the event in some run: the total is
    /// then the sum of estimates (`value · enabled / running`).
    pub estimated: bool,
    /// Why there is no total (the kernel's reason), if there is none.
    pub unavailable: Option<String>,
}

/// The counter totals of one condition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConditionCounters {
    /// The condition's name (prefixed by the bench where names repeat).
    pub condition: String,
    /// Recorded runs the totals cover (warm-up runs are not counted).
    pub runs: u64,
    /// One total per event.
    pub events: Vec<EventTotal>,
}

impl ConditionCounters {
    /// The total of `event`, if it counted.
    pub fn total(&self, event: &str) -> Option<u64> {
        self.events.iter().find(|e| e.event == event)?.total
    }

    /// Instructions per cycle, where both count.
    pub fn ipc(&self) -> Option<f64> {
        let cycles = self.total(PerfEvent::Cycles.name())?;
        let instructions = self.total(PerfEvent::Instructions.name())?;
        (cycles > 0).then(|| instructions as f64 / cycles as f64)
    }

    /// LLC read misses / LLC reads, where both count.
    pub fn llc_miss_ratio(&self) -> Option<f64> {
        let reads = self.total(PerfEvent::LlcReferences.name())?;
        let misses = self.total(PerfEvent::LlcMisses.name())?;
        (reads > 0).then(|| misses as f64 / reads as f64)
    }
}

/// A miss rate (misses / accesses) over one condition's runs, or why
/// there is none: never a zero standing in for a missing count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MissRate {
    /// The accesses event (`LLC-loads`, `LLC-stores`, ...).
    pub accesses_event: String,
    /// The misses event (`LLC-load-misses`, ...).
    pub misses_event: String,
    /// Accesses counted, where the event counted.
    pub accesses: Option<u64>,
    /// Misses counted, where the event counted.
    pub misses: Option<u64>,
    /// misses / accesses, where both counted and accesses > 0.
    pub rate: Option<f64>,
    /// `unavailable: <the kernel's reason>` when there is no rate.
    pub unavailable: Option<String>,
}

impl MissRate {
    /// The rate as a report shows it: `12.5 %` or `unavailable: <reason>`.
    pub fn describe(&self) -> String {
        match (self.rate, &self.unavailable) {
            (Some(rate), _) => format!("{:.1} %", rate * 100.0),
            (None, Some(why)) => why.clone(),
            (None, None) => "unavailable".into(),
        }
    }
}

impl ConditionCounters {
    /// `misses / accesses` of two of this condition's events; where an
    /// event did not count, `unavailable: <its reason>` (the accesses'
    /// reason first), and `unavailable: 0 accesses counted` when there is
    /// nothing to divide by.
    pub fn miss_rate(&self, accesses_event: &str, misses_event: &str) -> MissRate {
        let find = |name: &str| self.events.iter().find(|e| e.event == name);
        let reason = |name: &str| match find(name) {
            None => Some(format!("{name} was not counted")),
            Some(e) if e.total.is_none() => Some(format!(
                "{name}: {}",
                e.unavailable.as_deref().unwrap_or("no count")
            )),
            Some(_) => None,
        };
        let accesses = self.total(accesses_event);
        let misses = self.total(misses_event);
        let unavailable = reason(accesses_event)
            .or_else(|| reason(misses_event))
            .or_else(|| (accesses == Some(0)).then(|| "0 accesses counted".to_string()));
        let rate = match (accesses, misses, &unavailable) {
            (Some(a), Some(m), None) => Some(m as f64 / a as f64),
            _ => None,
        };
        MissRate {
            accesses_event: accesses_event.into(),
            misses_event: misses_event.into(),
            accesses,
            misses,
            rate,
            unavailable: unavailable.map(|why| format!("unavailable: {why}")),
        }
    }
}

/// `totals` with each condition named `prefix` + its name (a prefix tells
/// apart conditions of the same name measured at different sizes or levels).
pub fn prefixed(prefix: &str, totals: &[ConditionCounters]) -> Vec<ConditionCounters> {
    totals
        .iter()
        .map(|c| ConditionCounters {
            condition: format!("{prefix}{}", c.condition),
            ..c.clone()
        })
        .collect()
}

thread_local! {
    /// The totals of every interleaved run of this thread since the last
    /// [`start_log`], each with its run number.
    static LOG: std::cell::RefCell<Vec<Vec<ConditionCounters>>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// Forgets the totals logged so far on this thread (a bench starts).
pub fn start_log() {
    LOG.with(|log| log.borrow_mut().clear());
}

/// Logs the totals of one interleaved run of this thread.
pub(super) fn log_run(totals: &[ConditionCounters]) {
    LOG.with(|log| log.borrow_mut().push(totals.to_vec()));
}

/// The totals logged on this thread since [`start_log`], conditions named
/// `run K/condition` (K from 1), and the log emptied.
pub fn take_log() -> Vec<ConditionCounters> {
    LOG.with(|log| {
        log.borrow_mut()
            .drain(..)
            .enumerate()
            .flat_map(|(k, run)| prefixed(&format!("run {}/", k + 1), &run))
            .collect()
    })
}

/// Accumulates per-condition totals while an interleaved run goes on.
pub(super) struct Accumulator {
    counters: Counters,
    before: Vec<Option<Count>>,
    after: Vec<Option<Count>>,
    totals: Vec<Vec<Total>>,
    runs: Vec<u64>,
}

/// A running total of one event (`None` once a run gave no count).
#[derive(Debug, Clone, Copy)]
pub(super) struct Total {
    sum: Option<u64>,
    estimated: bool,
}

impl Accumulator {
    /// Opens `events` on the calling thread and its future children, for
    /// `conditions` conditions.
    pub(super) fn open(events: &[CounterEvent], conditions: usize) -> Accumulator {
        let mut counters = Counters::open(events, Target::CallingThreadAndChildren);
        // Enabling can only fail for a counter that is gone; its slots then
        // read as no count.
        let _ = counters.enable();
        let n = events.len();
        Accumulator {
            counters,
            before: vec![None; n],
            after: vec![None; n],
            totals: vec![
                vec![
                    Total {
                        sum: Some(0),
                        estimated: false
                    };
                    n
                ];
                conditions
            ],
            runs: vec![0; conditions],
        }
    }

    /// Reads the counters just before a recorded measurement.
    pub(super) fn start(&mut self) {
        if self.counters.read_into(&mut self.before).is_err() {
            self.before.iter_mut().for_each(|c| *c = None);
        }
    }

    /// Reads them just after it and adds the difference to `condition`.
    pub(super) fn stop(&mut self, condition: usize) {
        if self.counters.read_into(&mut self.after).is_err() {
            self.after.iter_mut().for_each(|c| *c = None);
        }
        self.runs[condition] += 1;
        for (i, total) in self.totals[condition].iter_mut().enumerate() {
            let run = match (self.after[i], self.before[i]) {
                (Some(after), Some(before)) => after.since(&before),
                _ => None,
            };
            let scaled = run.map(|r| (r.scaled().value(), r.multiplexed()));
            total.sum = match (total.sum, scaled) {
                (Some(sum), Some((Some(value), _))) => sum.checked_add(value),
                _ => None,
            };
            total.estimated |= scaled.is_some_and(|(_, multiplexed)| multiplexed);
        }
    }

    /// The totals so far (taken at a round's start, to
    /// [`restore`](Self::restore) when the round is abandoned).
    pub(super) fn checkpoint(&self) -> (Vec<Vec<Total>>, Vec<u64>) {
        (self.totals.clone(), self.runs.clone())
    }

    /// Back to the totals of `checkpoint`: an abandoned round's
    /// measurements are not counted, as their samples are not kept.
    pub(super) fn restore(&mut self, checkpoint: (Vec<Vec<Total>>, Vec<u64>)) {
        (self.totals, self.runs) = checkpoint;
    }

    /// The totals, one per condition, named by `names`.
    pub(super) fn finish(&self, names: &[String]) -> Vec<ConditionCounters> {
        names
            .iter()
            .enumerate()
            .map(|(c, name)| ConditionCounters {
                condition: name.clone(),
                runs: self.runs[c],
                events: self
                    .counters
                    .events()
                    .iter()
                    .zip(self.counters.availability())
                    .zip(&self.totals[c])
                    .map(|((event, availability), total)| EventTotal {
                        event: event.name.clone(),
                        total: if availability.is_counting() {
                            total.sum
                        } else {
                            None
                        },
                        estimated: total.estimated,
                        unavailable: availability.reason().map(str::to_string).or_else(|| {
                            total
                                .sum
                                .is_none()
                                .then(|| "a run gave no count (the counter did not run)".into())
                        }),
                    })
                    .collect(),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn condition(events: Vec<(&str, Option<u64>)>) -> ConditionCounters {
        ConditionCounters {
            condition: "c".into(),
            runs: 1,
            events: events
                .into_iter()
                .map(|(event, total)| EventTotal {
                    event: event.into(),
                    total,
                    estimated: false,
                    unavailable: total.is_none().then(|| "ENOENT".into()),
                })
                .collect(),
        }
    }

    #[test]
    fn ratios_need_both_counts() {
        let c = condition(vec![
            ("cycles", Some(200)),
            ("instructions", Some(300)),
            ("LLC-loads", Some(0)),
            ("LLC-load-misses", Some(0)),
        ]);
        assert_eq!(c.ipc(), Some(1.5));
        assert_eq!(c.llc_miss_ratio(), None, "no LLC reads: no ratio");
        let vm = condition(vec![("cycles", None), ("instructions", None)]);
        assert_eq!(vm.ipc(), None);
    }

    #[test]
    fn a_miss_rate_is_misses_over_accesses_or_the_reason_there_is_none() {
        let c = condition(vec![
            ("LLC-stores", Some(400)),
            ("LLC-store-misses", Some(50)),
        ]);
        let rate = c.miss_rate("LLC-stores", "LLC-store-misses");
        assert_eq!(rate.rate, Some(0.125));
        assert_eq!((rate.accesses, rate.misses), (Some(400), Some(50)));
        assert_eq!(rate.unavailable, None);
        assert_eq!(rate.describe(), "12.5 %");
        let vm = condition(vec![("LLC-stores", None), ("LLC-store-misses", None)]);
        let rate = vm.miss_rate("LLC-stores", "LLC-store-misses");
        assert_eq!(rate.rate, None);
        assert_eq!(
            rate.unavailable.as_deref(),
            Some("unavailable: LLC-stores: ENOENT")
        );
        let idle = condition(vec![("LLC-loads", Some(0)), ("LLC-load-misses", Some(0))]);
        let rate = idle.miss_rate("LLC-loads", "LLC-load-misses");
        assert_eq!(rate.rate, None, "nothing to divide by is no 0 %");
        assert_eq!(
            rate.unavailable.as_deref(),
            Some("unavailable: 0 accesses counted")
        );
        let rate = idle.miss_rate("LLC-stores", "LLC-store-misses");
        assert_eq!(
            rate.unavailable.as_deref(),
            Some("unavailable: LLC-stores was not counted")
        );
    }

    #[test]
    fn totals_add_each_runs_count_and_keep_reasons() {
        let events = vec![
            CounterEvent::from(PerfEvent::TaskClock),
            CounterEvent::from(PerfEvent::Instructions),
        ];
        let mut acc = Accumulator::open(&events, 2);
        for c in [0, 1, 0] {
            acc.start();
            let mut x = 1u64;
            for i in 0..100_000u64 {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
            }
            acc.stop(c);
        }
        let totals = acc.finish(&["a".into(), "b".into()]);
        assert_eq!((totals[0].runs, totals[1].runs), (2, 1));
        let clock = &totals[0].events[0];
        assert!(clock.total.is_some_and(|t| t > 0), "{clock:?}");
        assert_eq!(clock.unavailable, None);
        let instructions = &totals[0].events[1];
        match &instructions.total {
            Some(n) => assert!(*n > 100_000),
            None => assert!(
                instructions
                    .unavailable
                    .as_deref()
                    .is_some_and(|why| why.starts_with('E')),
                "{instructions:?}"
            ),
        }
    }
}
