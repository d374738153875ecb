//! For [`super::JitterRounds`]: whether any task whose release jitter moved
//! changes a release count that another task's last iteration read, decided
//! for all the moved tasks at once instead of one by one.
//!
//! A task of period T whose jitter moved between J_lo and J_hi (J_lo <
//! J_hi, in either direction) is released max(1, ⌈(w + J)/T⌉) times in a
//! window w: the count of the jitter-aware Eq. (2) (Audsley, Burns,
//! Richardson, Tindell and Wellings 1993; see [`super`]). Under the two jitters the count differs at exactly the
//! iterates w with w + J_lo ≤ m·T < w + J_hi for some m ≥ 1, that is in the
//! zones (m·T − J_hi, m·T − J_lo], m ≥ 1: one zone of J_hi − J_lo iterates
//! per period, every iterate when J_hi − J_lo ≥ T. An iteration that read
//! counts only at iterates of [low, high] (its span) read the same counts
//! under both jitters iff the span meets no zone.
//!
//! Modulo T the zones are one arc of the circle [0, T), so the zones of the
//! moved tasks of one period merge into a union of disjoint arcs, kept as
//! sorted intervals: a span is then tested with one lookup per period
//! instead of one test per moved task. The test is exact, except that an
//! iterate 0 against a task whose jitter moved from J_lo = 0 is taken as a
//! change (the arc holds 0 for m = 0): cautious, never wrong.

use std::collections::{BTreeMap, HashMap};

/// The union of the zones of the moved tasks added so far, per period.
#[derive(Clone, Debug, Default)]
pub(super) struct ReleaseZones {
    by_period: HashMap<u64, Arcs>,
}

/// Disjoint arcs of the circle [0, T) of one period T.
#[derive(Clone, Debug, Default)]
struct Arcs {
    /// Some zone is the whole circle.
    full: bool,
    /// start → end of half-open intervals [start, end) within [0, T),
    /// disjoint and not touching (merged on insertion).
    intervals: BTreeMap<u64, u64>,
}

impl ReleaseZones {
    /// No zones.
    pub(super) fn clear(&mut self) {
        self.by_period.clear();
    }

    /// Adds the zones of a task of period `period` (above 0) whose jitter
    /// moved from `before` to `now`; nothing when it did not move.
    pub(super) fn add(&mut self, period: u64, before: u64, now: u64) {
        let (lo, hi) = (before.min(now), before.max(now));
        if lo == hi {
            return;
        }
        let arcs = self.by_period.entry(period).or_default();
        if arcs.full {
            return;
        }
        let width = hi - lo;
        if width >= period {
            arcs.full = true;
            arcs.intervals.clear();
            return;
        }
        // The zone's first iterate is m·T − J_hi + 1 ≡ 1 − J_hi (mod T).
        let t = u128::from(period);
        let start = (t - u128::from(hi) % t + 1) % t;
        // Below the period: fits.
        arcs.insert_circular(period, start as u64, width);
    }

    /// Whether an iteration whose iterates all lie in `low..=high` may have
    /// read a count that a moved task changed.
    pub(super) fn meets(&self, low: u64, high: u64) -> bool {
        self.by_period
            .iter()
            .any(|(&period, arcs)| arcs.meets(period, low, high))
    }
}

impl Arcs {
    /// Adds the arc of `width` (0 < width < period) points from `start`,
    /// wrapping past `period` to 0.
    fn insert_circular(&mut self, period: u64, start: u64, width: u64) {
        let end = u128::from(start) + u128::from(width);
        if end <= u128::from(period) {
            self.insert(start, start + width);
        } else {
            self.insert(start, period);
            // end − period < start: fits.
            self.insert(0, (end - u128::from(period)) as u64);
        }
    }

    /// Adds [start, end), merging it with the intervals it meets or touches.
    fn insert(&mut self, mut start: u64, mut end: u64) {
        if let Some((&s, &e)) = self.intervals.range(..=start).next_back()
            && e >= start
        {
            start = s;
            end = end.max(e);
        }
        while let Some((&s, &e)) = self.intervals.range(start..=end).next() {
            self.intervals.remove(&s);
            end = end.max(e);
        }
        self.intervals.insert(start, end);
    }

    /// Whether some iterate of `low..=high` lies in an arc (modulo `period`).
    fn meets(&self, period: u64, low: u64, high: u64) -> bool {
        if self.full {
            return true;
        }
        if self.intervals.is_empty() {
            return false;
        }
        // The span's iterates, as points of the circle.
        let points = u128::from(high - low) + 1;
        if points >= u128::from(period) {
            return true;
        }
        let first = low % period;
        let end = u128::from(first) + points;
        if end <= u128::from(period) {
            self.meets_linear(first, end as u64)
        } else {
            self.meets_linear(first, period)
                || self.meets_linear(0, (end - u128::from(period)) as u64)
        }
    }

    /// Whether some interval meets [start, end) (start < end): the one
    /// starting last before `end` reaches furthest, the intervals being
    /// disjoint.
    fn meets_linear(&self, start: u64, end: u64) -> bool {
        self.intervals
            .range(..end)
            .next_back()
            .is_some_and(|(_, &e)| e > start)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// max(1, ⌈(w + J)/T⌉), exactly.
    fn count(w: u64, jitter: u64, period: u64) -> u128 {
        (u128::from(w) + u128::from(jitter))
            .div_ceil(u128::from(period))
            .max(1)
    }

    /// The straightforward test: some moved task's count differs under its
    /// two jitters at some iterate of the span.
    fn some_count_differs(moved: &[(u64, u64, u64)], low: u64, high: u64) -> bool {
        moved.iter().any(|&(period, before, now)| {
            (low..=high).any(|w| count(w, before, period) != count(w, now, period))
        })
    }

    fn zones(moved: &[(u64, u64, u64)]) -> ReleaseZones {
        let mut zones = ReleaseZones::default();
        for &(period, before, now) in moved {
            zones.add(period, before, now);
        }
        zones
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        /// Exact against every iterate of the span, but for iterate 0.
        #[test]
        fn a_span_meets_the_zones_iff_some_count_differs_in_it(
            moved in prop::collection::vec((1u64..12, 0u64..40, 0u64..40), 0..6),
            low in 1u64..60,
            length in 0u64..30,
        ) {
            let high = low + length;
            prop_assert_eq!(zones(&moved).meets(low, high), some_count_differs(&moved, low, high));
        }

        /// At iterate 0 the zones may only be cautious.
        #[test]
        fn at_iterate_zero_a_change_is_never_missed(
            moved in prop::collection::vec((1u64..12, 0u64..40, 0u64..40), 0..6),
            length in 0u64..30,
        ) {
            if some_count_differs(&moved, 0, length) {
                prop_assert!(zones(&moved).meets(0, length));
            }
        }
    }

    #[test]
    fn jitters_near_two_to_the_64_ns_neither_overflow_nor_miss_a_change() {
        let max = u64::MAX;
        let period = 100_000_000;
        // From a finite jitter to unbounded: every count changes.
        assert!(zones(&[(period, 5, max)]).meets(1, 1));
        // Two huge jitters one period apart in a huge period.
        let moved = [(max - 1, max - 3, max)];
        assert_eq!(zones(&moved).meets(1, 1), some_count_differs(&moved, 1, 1));
        assert_eq!(
            zones(&moved).meets(max - 2, max - 1),
            some_count_differs(&moved, max - 2, max - 1)
        );
        // Up to T − 20 both jitters release once; at T − 19 only 20 ns
        // releases a second job.
        assert!(!zones(&[(period, 10, 20)]).meets(1, period - 20));
        assert!(zones(&[(period, 10, 20)]).meets(1, period - 19));
        // Between the zones of two periods.
        assert!(!zones(&[(period, 20, 10)]).meets(period - 9, 2 * period - 20));
    }

    #[test]
    fn touching_arcs_merge_and_wrapping_arcs_split() {
        let mut arcs = Arcs::default();
        arcs.insert_circular(10, 2, 3);
        arcs.insert_circular(10, 5, 2);
        arcs.insert_circular(10, 8, 4);
        let intervals: Vec<(u64, u64)> = arcs.intervals.iter().map(|(&s, &e)| (s, e)).collect();
        // [2, 5) and [5, 7) touch; [8, 12) wraps into [8, 10) and [0, 2),
        // which touches [2, 7).
        assert_eq!(intervals, vec![(0, 7), (8, 10)]);
        // 17 ≡ 7 lies between the arcs, 18 ≡ 8 in one; 29, 30 ≡ 9, 0 wrap.
        assert!(!arcs.meets(10, 17, 17));
        assert!(arcs.meets(10, 17, 18));
        assert!(arcs.meets(10, 29, 30));
    }
}
