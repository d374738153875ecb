//! Order statistics of samples in integer nanoseconds.

use serde::{Deserialize, Serialize};

/// min / median / p99 / max / mean / stddev of a set of samples (ns).
///
/// Percentiles use the nearest-rank method on the sorted samples, so every
/// reported value except mean and stddev is an actual sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stats {
    /// Number of samples.
    pub count: u64,
    /// Smallest sample.
    pub min_ns: u64,
    /// Median (nearest rank 50 %).
    pub median_ns: u64,
    /// 99th percentile (nearest rank).
    pub p99_ns: u64,
    /// Largest sample.
    pub max_ns: u64,
    /// Arithmetic mean, rounded to the nearest ns.
    pub mean_ns: u64,
    /// Population standard deviation, rounded to the nearest ns.
    pub stddev_ns: u64,
}

impl Stats {
    /// Statistics of `samples`; `None` if there are none.
    pub fn from_samples(samples: &[u64]) -> Option<Self> {
        if samples.is_empty() {
            return None;
        }
        let mut sorted = samples.to_vec();
        sorted.sort_unstable();
        let count = sorted.len() as u64;
        let sum: u128 = sorted.iter().map(|&s| u128::from(s)).sum();
        let mean = sum as f64 / count as f64;
        let variance = sorted
            .iter()
            .map(|&s| {
                let d = s as f64 - mean;
                d * d
            })
            .sum::<f64>()
            / count as f64;
        Some(Self {
            count,
            min_ns: sorted[0],
            median_ns: nearest_rank(&sorted, 50),
            p99_ns: nearest_rank(&sorted, 99),
            max_ns: sorted[sorted.len() - 1],
            mean_ns: mean.round() as u64,
            stddev_ns: variance.sqrt().round() as u64,
        })
    }
}

/// The nearest-rank `percent`-th percentile of sorted, non-empty samples.
pub fn nearest_rank(sorted: &[u64], percent: u32) -> u64 {
    let n = sorted.len();
    let rank = (u64::from(percent) * n as u64).div_ceil(100).max(1) as usize;
    sorted[rank.min(n) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_of_one_to_hundred() {
        let samples: Vec<u64> = (1..=100).rev().collect();
        let s = Stats::from_samples(&samples).unwrap();
        assert_eq!(s.count, 100);
        assert_eq!(
            (s.min_ns, s.median_ns, s.p99_ns, s.max_ns),
            (1, 50, 99, 100)
        );
        assert_eq!(s.mean_ns, 51); // 50.5 rounds up
        assert_eq!(s.stddev_ns, 29); // sqrt((100^2-1)/12) = 28.87
    }

    #[test]
    fn single_sample_and_empty() {
        let s = Stats::from_samples(&[7]).unwrap();
        assert_eq!(
            (s.min_ns, s.median_ns, s.p99_ns, s.max_ns, s.stddev_ns),
            (7, 7, 7, 7, 0)
        );
        assert!(Stats::from_samples(&[]).is_none());
    }

    #[test]
    fn outlier_shows_in_max_not_median() {
        let mut samples = vec![10u64; 999];
        samples.push(10_000);
        let s = Stats::from_samples(&samples).unwrap();
        assert_eq!(s.median_ns, 10);
        assert_eq!(s.p99_ns, 10);
        assert_eq!(s.max_ns, 10_000);
    }
}
