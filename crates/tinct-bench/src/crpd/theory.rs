//! The theoretical curves of Sebek 2002 ("Cache memories in real-time
//! systems", preemption cost and CRPD), as pure functions of the task
//! size relative to the cache.
//!
//! Sizes are given as `task / cache` ratios (1.0 = the task is exactly as
//! large as the cache); `ways` is the set associativity A, with 0 meaning
//! fully associative (A → ∞).

/// Figure 5 of Sebek 2002: the steady-state miss ratio of a task with 100 %
/// spatial misses (each block touched once per loop), in 0..=1:
///
/// - 0 when task size ≤ cache size;
/// - (task size − cache size) / cache size · A when
///   cache size < task size < cache size + cache size / A;
/// - 1 when task size ≥ cache size + cache size / A.
///
/// Worked example of the paper: a 38 kB task in a 32 kB 2-way cache has
/// (38 − 32) / 32 · 2 = 37.5 %.
pub fn miss_ratio(task_over_cache: f64, ways: u32) -> f64 {
    if task_over_cache <= 1.0 {
        return 0.0;
    }
    if ways == 0 {
        // Fully associative: one block beyond the cache and every access misses.
        return 1.0;
    }
    ((task_over_cache - 1.0) * f64::from(ways)).min(1.0)
}

/// Figure 7 of Sebek 2002: the theoretical maximum CRPD of a task, as a
/// fraction of the largest possible CRPD (all cache lines useful and all
/// evicted by the preempting task), in 0..=1.
///
/// It grows linearly from the origin to 1 at task size = cache size (every
/// line of the task is useful and lost), then falls as fewer lines stay
/// useful, 1 − miss ratio (Figure 5), reaching 0 at cache size · (1 + 1/A):
/// 112.5 % for the 8-way L1 of the paper's MPC750 (measured: 113.6 %).
pub fn crpd_fraction(task_over_cache: f64, ways: u32) -> f64 {
    if task_over_cache <= 0.0 {
        return 0.0;
    }
    if task_over_cache <= 1.0 {
        return task_over_cache;
    }
    1.0 - miss_ratio(task_over_cache, ways)
}

/// Where the Figure 7 curve reaches zero again, as a task / cache ratio:
/// 1 + 1/A (1.0 for a fully associative cache).
pub fn crpd_zero_crossing(ways: u32) -> f64 {
    if ways == 0 {
        1.0
    } else {
        1.0 + 1.0 / f64::from(ways)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn figure5_worked_example_38k_in_32k_2way_is_37_5_percent() {
        assert!(close(miss_ratio(38.0 / 32.0, 2), 0.375));
    }

    #[test]
    fn figure5_regions() {
        assert_eq!(miss_ratio(0.5, 8), 0.0);
        assert_eq!(miss_ratio(1.0, 8), 0.0);
        assert!(close(miss_ratio(1.0625, 8), 0.5));
        assert_eq!(miss_ratio(1.125, 8), 1.0);
        assert_eq!(miss_ratio(2.0, 8), 1.0);
        assert_eq!(miss_ratio(1.01, 0), 1.0);
        // Direct mapped: 100 % only at twice the cache.
        assert!(close(miss_ratio(1.5, 1), 0.5));
        assert_eq!(miss_ratio(2.0, 1), 1.0);
    }

    #[test]
    fn figure7_peaks_at_the_cache_size_and_meets_zero_at_112_5_percent_for_8_ways() {
        assert_eq!(crpd_fraction(0.0, 8), 0.0);
        assert!(close(crpd_fraction(0.5, 8), 0.5));
        assert_eq!(crpd_fraction(1.0, 8), 1.0);
        assert!(close(crpd_zero_crossing(8), 1.125));
        assert!(close(crpd_fraction(1.125, 8), 0.0));
        assert!(crpd_fraction(1.12, 8) > 0.0);
        assert!(close(crpd_fraction(1.0625, 8), 0.5));
        assert_eq!(crpd_fraction(2.0, 8), 0.0);
        // Fully associative: no CRPD at all beyond the cache.
        assert_eq!(crpd_fraction(1.001, 0), 0.0);
        assert_eq!(crpd_zero_crossing(0), 1.0);
    }

    #[test]
    fn figure7_is_one_minus_figure5_beyond_the_cache() {
        for ways in [1, 2, 4, 8, 16] {
            for i in 0..=40 {
                let x = 1.0 + f64::from(i) / 40.0;
                assert!(close(crpd_fraction(x, ways), 1.0 - miss_ratio(x, ways)));
            }
        }
    }
}
