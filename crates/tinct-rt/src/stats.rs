//! Statistics of observed times: max, percentiles, mean, standard
//! deviation and the real-time metric ρ = μ + 2σ (demarchi et al., Eq. (1);
//! the paper calls σ "the corresponding variance" but adds it to a time, so
//! it is the standard deviation, as used here).

use serde::Serialize;

/// Distribution of one observed quantity, in nanoseconds.
#[derive(Copy, Clone, Debug, Default, PartialEq, Serialize)]
pub struct Distribution {
    /// Number of samples.
    pub count: u64,
    /// Smallest.
    pub min_ns: u64,
    /// Median (nearest rank).
    pub p50_ns: u64,
    /// 99th percentile (nearest rank).
    pub p99_ns: u64,
    /// Largest.
    pub max_ns: u64,
    /// μ.
    pub mean_ns: f64,
    /// σ (population standard deviation).
    pub stddev_ns: f64,
    /// ρ = μ + 2σ, demarchi Eq. (1).
    pub rho_ns: f64,
}

impl Distribution {
    /// The distribution of `samples` (all zero when empty).
    pub fn of(samples: &[u64]) -> Distribution {
        if samples.is_empty() {
            return Distribution::default();
        }
        let mut sorted = samples.to_vec();
        sorted.sort_unstable();
        let n = sorted.len() as f64;
        let mean = sorted.iter().map(|&x| x as f64).sum::<f64>() / n;
        let variance = sorted
            .iter()
            .map(|&x| (x as f64 - mean).powi(2))
            .sum::<f64>()
            / n;
        let stddev = variance.sqrt();
        Distribution {
            count: sorted.len() as u64,
            min_ns: sorted[0],
            p50_ns: nearest_rank(&sorted, 50.0),
            p99_ns: nearest_rank(&sorted, 99.0),
            max_ns: sorted[sorted.len() - 1],
            mean_ns: mean,
            stddev_ns: stddev,
            rho_ns: mean + 2.0 * stddev,
        }
    }
}

/// The nearest-rank percentile `p` (0 < p ≤ 100) of sorted samples.
pub fn nearest_rank(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rho_is_mean_plus_two_standard_deviations() {
        let d = Distribution::of(&[2, 4, 4, 4, 5, 5, 7, 9]);
        assert_eq!(d.mean_ns, 5.0);
        assert_eq!(d.stddev_ns, 2.0);
        assert_eq!(d.rho_ns, 9.0);
        assert_eq!((d.min_ns, d.max_ns, d.count), (2, 9, 8));
    }

    #[test]
    fn percentiles_use_the_nearest_rank() {
        let samples: Vec<u64> = (1..=100).collect();
        let d = Distribution::of(&samples);
        assert_eq!(d.p50_ns, 50);
        assert_eq!(d.p99_ns, 99);
        assert_eq!(nearest_rank(&[7], 99.0), 7);
        assert_eq!(Distribution::of(&[]).count, 0);
    }
}
