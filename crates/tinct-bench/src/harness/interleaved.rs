//! Interleaved repetition of conditions A/B(/C...).
//!
//! Every round measures each condition once, in a fresh seeded random order,
//! so slow drift of a shared machine (frequency, a neighbour VM, page cache)
//! hits all conditions alike and order effects cancel out. Comparisons are
//! then made between statistics of the same run, never against absolute
//! numbers.
//!
//! The run stops early when its [`Progress`] asks
//! ([`Progress::stop_requested`], Ctrl-C): checked before every
//! measurement, it keeps the rounds that ran to their end (a round left
//! half-way is dropped, samples and counter totals alike, so every
//! condition has the same number of samples) and says so
//! ([`Samples::interrupted`]). Each run's rounds are tallied on the
//! measuring thread for its bench's header ([`take_rounds`]).

use super::counters::{Accumulator, ConditionCounters, default_events, log_run};
#[cfg(test)]
use super::progress::NoProgress;
use super::progress::Progress;
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use tinct_report::stats::Durations;
use tinct_sys::perf::CounterEvent;

/// A set of named conditions to repeat `reps` times, interleaved.
#[derive(Debug, Clone)]
pub struct Interleaved {
    conditions: Vec<String>,
    reps: u32,
    warmup: u32,
    seed: u64,
    events: Vec<CounterEvent>,
}

/// The samples of each condition, in the order the conditions were given.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Samples {
    /// Condition names.
    pub conditions: Vec<String>,
    /// `samples[c]` are the measurements (ns) of condition `c`, in round order.
    pub samples: Vec<Vec<u64>>,
    /// The order conditions ran in, round by round (indices into `conditions`).
    pub order: Vec<Vec<usize>>,
    /// Counter totals of each condition's recorded measurements, in the
    /// order of `conditions`.
    pub counters: Vec<ConditionCounters>,
    /// Rounds asked for.
    pub rounds_requested: u32,
    /// Rounds that ran to their end (`samples[c].len()` for every `c`).
    pub rounds_completed: u32,
    /// True if the caller asked the run to stop before its last round.
    pub interrupted: bool,
}

/// The rounds of the interleaved runs of one bench: asked for, completed,
/// and whether a stop cut one short.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RoundTally {
    /// Rounds asked for by the runs that started.
    pub requested: u64,
    /// Rounds that ran to their end.
    pub completed: u64,
    /// True if a run stopped early.
    pub interrupted: bool,
}

thread_local! {
    /// The rounds of this thread's interleaved runs since [`start_rounds`].
    static ROUNDS: std::cell::Cell<RoundTally> = const {
        std::cell::Cell::new(RoundTally { requested: 0, completed: 0, interrupted: false })
    };
}

/// Forgets the rounds tallied so far on this thread (a bench starts).
pub fn start_rounds() {
    ROUNDS.with(|r| r.set(RoundTally::default()));
}

/// The rounds tallied on this thread since [`start_rounds`].
pub fn take_rounds() -> RoundTally {
    ROUNDS.with(std::cell::Cell::get)
}

fn tally(samples: &Samples) {
    ROUNDS.with(|r| {
        let t = r.get();
        r.set(RoundTally {
            requested: t
                .requested
                .saturating_add(u64::from(samples.rounds_requested)),
            completed: t
                .completed
                .saturating_add(u64::from(samples.rounds_completed)),
            interrupted: t.interrupted || samples.interrupted,
        });
    });
}

impl Interleaved {
    /// `reps` rounds over `conditions` (no warm-up, seed 1).
    pub fn new<S: Into<String>>(conditions: impl IntoIterator<Item = S>, reps: u32) -> Self {
        Self {
            conditions: conditions.into_iter().map(Into::into).collect(),
            reps,
            warmup: 0,
            seed: 1,
            events: default_events(),
        }
    }

    /// Unrecorded warm-up rounds run before the measured ones.
    pub fn warmup(mut self, rounds: u32) -> Self {
        self.warmup = rounds;
        self
    }

    /// The events counted per condition (default:
    /// [`super::counters::DEFAULT_EVENTS`]).
    pub fn counting(mut self, events: Vec<CounterEvent>) -> Self {
        self.events = events;
        self
    }

    /// Seed of the per-round condition order.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Number of `measure` calls a [`run`](Self::run) makes, warm-up included
    /// (for sizing a progress bar).
    pub fn calls(&self) -> u64 {
        u64::from(self.reps + self.warmup) * self.conditions.len() as u64
    }

    /// Runs every round; `measure(c)` measures condition `c` once and
    /// returns its sample in ns. Each recorded call advances `progress` by
    /// one. When `progress` asks to stop, the run ends before its next
    /// measurement and keeps the rounds it completed.
    pub fn run<E>(
        &self,
        progress: &dyn Progress,
        mut measure: impl FnMut(usize) -> Result<u64, E>,
    ) -> Result<Samples, E> {
        self.run_cut_by_stop(progress, |c| measure(c).map(Some))
    }

    /// As [`Interleaved::run`], for measurements the stop can cut short
    /// (a child process that the Ctrl-C also reached): `measure(c)`
    /// returns `None` when the stop cut it, which ends the run there as a
    /// stop before it would, the round under way dropped.
    pub fn run_cut_by_stop<E>(
        &self,
        progress: &dyn Progress,
        mut measure: impl FnMut(usize) -> Result<Option<u64>, E>,
    ) -> Result<Samples, E> {
        let n = self.conditions.len();
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        let mut order: Vec<usize> = (0..n).collect();
        let mut interrupted = false;
        'warmup: for _ in 0..self.warmup {
            order.shuffle(&mut rng);
            for &c in &order {
                if progress.stop_requested() || measure(c)?.is_none() {
                    interrupted = true;
                    break 'warmup;
                }
                progress.inc(1);
            }
        }
        let mut samples = vec![Vec::with_capacity(self.reps as usize); n];
        let mut orders = Vec::with_capacity(self.reps as usize);
        let mut counters = Accumulator::open(&self.events, n);
        'rounds: for _ in 0..self.reps {
            if interrupted {
                break;
            }
            order.shuffle(&mut rng);
            let checkpoint = counters.checkpoint();
            for (done, &c) in order.iter().enumerate() {
                let sample = if progress.stop_requested() {
                    None
                } else {
                    counters.start();
                    let sample = measure(c)?;
                    counters.stop(c);
                    sample
                };
                let Some(sample) = sample else {
                    interrupted = true;
                    // A round left half-way: its samples and counts go.
                    for &dropped in &order[..done] {
                        samples[dropped].pop();
                    }
                    counters.restore(checkpoint);
                    break 'rounds;
                };
                samples[c].push(sample);
                progress.inc(1);
            }
            orders.push(order.clone());
        }
        let counters = counters.finish(&self.conditions);
        log_run(&counters);
        let samples = Samples {
            conditions: self.conditions.clone(),
            samples,
            rounds_completed: orders.len() as u32,
            order: orders,
            counters,
            rounds_requested: self.reps,
            interrupted,
        };
        tally(&samples);
        Ok(samples)
    }
}

impl Samples {
    /// Statistics of condition `c` (`None` if it has no samples).
    pub fn stats(&self, c: usize) -> Option<Durations> {
        Durations::of(&self.samples[c])
    }

    /// Statistics of every condition, with its name.
    pub fn all_stats(&self) -> Vec<(String, Durations)> {
        (0..self.conditions.len())
            .filter_map(|c| Some((self.conditions[c].clone(), self.stats(c)?)))
            .collect()
    }

    /// Median of condition `a` over the median of condition `b`
    /// (`None` if either has no samples or `b`'s median is 0).
    pub fn median_ratio(&self, a: usize, b: usize) -> Option<f64> {
        self.stats(a)?.median_ratio(&self.stats(b)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_round_runs_every_condition_once_in_varying_order() {
        let runner = Interleaved::new(["a", "b", "c"], 20).warmup(2).seed(7);
        assert_eq!(runner.calls(), 66);
        let mut calls = Vec::new();
        let samples = runner
            .run::<()>(&NoProgress, |c| {
                calls.push(c);
                Ok(c as u64 * 10 + 1)
            })
            .unwrap();
        assert_eq!(calls.len(), 66);
        for round in calls.chunks(3) {
            let mut sorted = round.to_vec();
            sorted.sort();
            assert_eq!(sorted, vec![0, 1, 2]);
        }
        assert_eq!(samples.samples[2], vec![21; 20]);
        assert_eq!(samples.order.len(), 20);
        let distinct: std::collections::HashSet<_> = samples.order.iter().collect();
        assert!(distinct.len() > 1, "the order must vary between rounds");
        assert_eq!(samples.median_ratio(2, 0), Some(21.0));
        // Every condition has its counter totals, over its recorded runs.
        assert_eq!(samples.counters.len(), 3);
        for (totals, name) in samples.counters.iter().zip(["a", "b", "c"]) {
            assert_eq!((totals.condition.as_str(), totals.runs), (name, 20));
            assert_eq!(
                totals.events.len(),
                super::super::counters::DEFAULT_EVENTS.len()
            );
            for event in &totals.events {
                assert!(
                    event.total.is_some() != event.unavailable.is_some(),
                    "{event:?}"
                );
            }
        }
    }

    #[test]
    fn an_error_stops_the_run() {
        let runner = Interleaved::new(["a", "b"], 5);
        let mut n = 0;
        let result = runner.run(&NoProgress, |_| {
            n += 1;
            if n == 3 { Err("boom") } else { Ok(1) }
        });
        assert_eq!(result, Err("boom"));
        assert_eq!(n, 3);
    }

    #[test]
    fn a_stop_after_round_k_keeps_exactly_k_rounds() {
        use super::super::progress::StopAfter;
        for k in 0..4u32 {
            // Asked to stop once round k ended (3 conditions per round).
            let stop = StopAfter::new(u64::from(k) * 3);
            start_rounds();
            let mut calls = 0;
            let samples = Interleaved::new(["a", "b", "c"], 5)
                .run::<()>(&stop, |c| {
                    calls += 1;
                    Ok(c as u64)
                })
                .unwrap();
            assert_eq!(calls, k * 3, "no measurement after the stop");
            assert_eq!(samples.rounds_completed, k);
            assert_eq!(samples.rounds_requested, 5);
            assert!(samples.interrupted);
            assert_eq!(samples.order.len(), k as usize);
            assert!(samples.samples.iter().all(|s| s.len() == k as usize));
            assert!(samples.counters.iter().all(|c| c.runs == u64::from(k)));
            let tally = take_rounds();
            assert_eq!((tally.requested, tally.completed), (5, u64::from(k)));
            assert!(tally.interrupted);
        }
    }

    #[test]
    fn a_round_left_half_way_is_dropped() {
        use super::super::progress::StopAfter;
        // Stop asked after 2 rounds and 2 of the third round's 3 conditions.
        let stop = StopAfter::new(2 * 3 + 2);
        let samples = Interleaved::new(["a", "b", "c"], 5)
            .run::<()>(&stop, |c| Ok(c as u64))
            .unwrap();
        assert_eq!(samples.rounds_completed, 2);
        assert!(samples.samples.iter().all(|s| s.len() == 2), "{samples:?}");
        assert!(samples.counters.iter().all(|c| c.runs == 2));
        assert!(samples.interrupted);
    }

    #[test]
    fn a_measurement_cut_by_the_stop_drops_its_round_even_the_last() {
        // 2 rounds of 3 conditions; the very last call is cut.
        let mut calls = 0;
        let samples = Interleaved::new(["a", "b", "c"], 2)
            .run_cut_by_stop::<()>(&NoProgress, |c| {
                calls += 1;
                Ok((calls < 6).then_some(c as u64))
            })
            .unwrap();
        assert_eq!(calls, 6);
        assert_eq!(samples.rounds_completed, 1);
        assert!(samples.interrupted);
        assert!(samples.samples.iter().all(|s| s.len() == 1), "{samples:?}");
        assert!(samples.counters.iter().all(|c| c.runs == 1));
        // Cut in the warm-up: no round at all, nothing measured after.
        let mut calls = 0;
        let samples = Interleaved::new(["a", "b"], 3)
            .warmup(1)
            .run_cut_by_stop::<()>(&NoProgress, |_| {
                calls += 1;
                Ok(None)
            })
            .unwrap();
        assert_eq!((calls, samples.rounds_completed), (1, 0));
        assert!(samples.interrupted);
    }

    #[test]
    fn a_stop_asked_after_the_last_round_is_no_interruption() {
        use super::super::progress::StopAfter;
        let samples = Interleaved::new(["a", "b"], 3)
            .warmup(1)
            .run::<()>(&StopAfter::new(8), |c| Ok(c as u64))
            .unwrap();
        assert_eq!(samples.rounds_completed, 3);
        assert!(!samples.interrupted);
        let stopped_in_warmup = Interleaved::new(["a", "b"], 3)
            .warmup(1)
            .run::<()>(&StopAfter::new(1), |c| Ok(c as u64))
            .unwrap();
        assert_eq!(stopped_in_warmup.rounds_completed, 0);
        assert!(stopped_in_warmup.interrupted);
    }

    #[test]
    fn same_seed_same_order() {
        let a = Interleaved::new(["a", "b", "c"], 10).seed(3);
        let run = |r: &Interleaved| r.run::<()>(&NoProgress, |_| Ok(0)).unwrap().order;
        assert_eq!(run(&a), run(&a.clone()));
        assert_ne!(run(&a), run(&a.clone().seed(4)));
    }
}
