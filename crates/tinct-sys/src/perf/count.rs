//! One counter value with the times the kernel reports beside it, and the
//! estimate when the kernel multiplexed the counter.
//!
//! When more events are open than the PMU has counters, the kernel rotates
//! them: an event counts only `time_running` of the `time_enabled` it was
//! enabled. Its full count is then estimated as
//! `value · time_enabled / time_running` (perf_event_open(2), "read_format";
//! `perf stat` prints the same estimate with the percentage it ran). tinct
//! computes it in `u128` and refuses a result that does not fit `u64`; an
//! event that never ran has no count at all, never a zero.

/// A counter's raw value and the kernel's enabled/running times (ns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Count {
    /// What the counter read.
    pub value: u64,
    /// Nanoseconds the event was enabled.
    pub time_enabled_ns: u64,
    /// Nanoseconds the event was actually on a counter.
    pub time_running_ns: u64,
}

/// A count as a report should use it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(tag = "kind", content = "value"))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum Scaled {
    /// The event ran the whole time it was enabled: the value is the count.
    Exact(u64),
    /// The kernel multiplexed the event: `value · enabled / running`
    /// (rounded down).
    Estimated(u64),
    /// The event was enabled but never ran: there is no count.
    NotCounted,
    /// The estimate does not fit 64 bits.
    Overflow,
}

impl Scaled {
    /// The count or estimate, `None` when there is none.
    pub fn value(self) -> Option<u64> {
        match self {
            Self::Exact(v) | Self::Estimated(v) => Some(v),
            Self::NotCounted | Self::Overflow => None,
        }
    }
}

impl Count {
    /// True if the kernel rotated this event off its counter part of the time.
    pub fn multiplexed(&self) -> bool {
        self.time_running_ns < self.time_enabled_ns
    }

    /// The fraction of its enabled time the event ran (1 when not multiplexed).
    pub fn running_fraction(&self) -> Option<f64> {
        (self.time_enabled_ns > 0)
            .then(|| self.time_running_ns as f64 / self.time_enabled_ns as f64)
    }

    /// The count, estimated from the running fraction when multiplexed.
    pub fn scaled(&self) -> Scaled {
        if self.time_running_ns == 0 {
            // Enabled for 0 ns and never ran: an event read right after it
            // was enabled. A value of 0 then is a count (nothing happened).
            return if self.time_enabled_ns == 0 {
                Scaled::Exact(self.value)
            } else {
                Scaled::NotCounted
            };
        }
        if self.time_running_ns >= self.time_enabled_ns {
            return Scaled::Exact(self.value);
        }
        let estimate = u128::from(self.value) * u128::from(self.time_enabled_ns)
            / u128::from(self.time_running_ns);
        u64::try_from(estimate).map_or(Scaled::Overflow, Scaled::Estimated)
    }

    /// `self − earlier` for each of value, enabled and running (`None` if
    /// any went backwards, which a counter cannot): the count over an
    /// interval, to be scaled with the interval's own times.
    pub fn since(&self, earlier: &Count) -> Option<Count> {
        Some(Count {
            value: self.value.checked_sub(earlier.value)?,
            time_enabled_ns: self.time_enabled_ns.checked_sub(earlier.time_enabled_ns)?,
            time_running_ns: self.time_running_ns.checked_sub(earlier.time_running_ns)?,
        })
    }

    /// The sum of two counts of the same event (`None` on overflow).
    pub fn plus(&self, other: &Count) -> Option<Count> {
        Some(Count {
            value: self.value.checked_add(other.value)?,
            time_enabled_ns: self.time_enabled_ns.checked_add(other.time_enabled_ns)?,
            time_running_ns: self.time_running_ns.checked_add(other.time_running_ns)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(value: u64, enabled: u64, running: u64) -> Count {
        Count {
            value,
            time_enabled_ns: enabled,
            time_running_ns: running,
        }
    }

    #[test]
    fn a_counter_that_ran_all_the_time_is_exact() {
        assert_eq!(count(1234, 1000, 1000).scaled(), Scaled::Exact(1234));
        assert!(!count(1234, 1000, 1000).multiplexed());
        assert_eq!(count(0, 0, 0).scaled(), Scaled::Exact(0));
    }

    #[test]
    fn a_multiplexed_counter_is_scaled_by_enabled_over_running() {
        // Ran a quarter of the time: 4x the value.
        assert_eq!(count(250, 4000, 1000).scaled(), Scaled::Estimated(1000));
        // Ran a third: 100 · 3 = 300 exactly, and rounding goes down.
        assert_eq!(count(100, 3000, 1000).scaled(), Scaled::Estimated(300));
        assert_eq!(count(10, 3000, 2000).scaled(), Scaled::Estimated(15));
        assert_eq!(count(1, 3, 2).scaled(), Scaled::Estimated(1));
        assert!(count(250, 4000, 1000).multiplexed());
        assert_eq!(count(250, 4000, 1000).running_fraction(), Some(0.25));
    }

    #[test]
    fn the_product_is_exact_beyond_64_bits() {
        // value · enabled overflows u64 but the quotient fits.
        let big = count(u64::MAX / 2, 1 << 40, 1 << 39);
        assert_eq!(big.scaled(), Scaled::Estimated(u64::MAX - 1));
        // A quotient beyond u64 is refused, not wrapped or saturated.
        assert_eq!(count(u64::MAX, 2, 1).scaled(), Scaled::Overflow);
        assert_eq!(Scaled::Overflow.value(), None);
    }

    #[test]
    fn a_counter_that_never_ran_has_no_count_not_a_zero() {
        assert_eq!(count(0, 5000, 0).scaled(), Scaled::NotCounted);
        assert_eq!(count(0, 5000, 0).scaled().value(), None);
    }

    #[test]
    fn differences_and_sums_are_checked() {
        let a = count(100, 1000, 500);
        let b = count(160, 3000, 1500);
        assert_eq!(b.since(&a), Some(count(60, 2000, 1000)));
        assert_eq!(a.since(&b), None);
        assert_eq!(a.plus(&b), Some(count(260, 4000, 2000)));
        assert_eq!(count(u64::MAX, 0, 0).plus(&count(1, 0, 0)), None);
    }
}
