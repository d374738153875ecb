//! Order statistics of samples: the rank arithmetic of tinct, in one place.
//!
//! Every percentile tinct reports is a *nearest rank* ([`nearest_rank`],
//! [`nearest_rank_ppm`]): the smallest sample with at least the asked share
//! of the samples at or below it, so each reported value is one that was
//! measured. [`median_f64`] and [`stddev_f64`] are the median and σ of
//! float values (rates, ratios) that no integer distribution holds.
//!
//! tinct-report's `Distribution` (count, min, median, p99, max, mean, σ, ρ)
//! is built on these and re-exports them; being in the base crate, they sit
//! below every crate that measures (tinct-sys's colour probe, tinct-mem's
//! row-conflict probe).
//!
//! ```
//! let sorted = [1, 2, 3, 4];
//! assert_eq!(tinct_base::stats::nearest_rank(&sorted, 50), Some(2));
//! assert_eq!(tinct_base::stats::median_f64(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
//! ```

/// The nearest-rank `percent`-th percentile (1 ≤ percent ≤ 100) of sorted
/// samples: the smallest sample with at least `percent` % of the samples at
/// or below it. `None` for no samples.
pub fn nearest_rank(sorted: &[u64], percent: u32) -> Option<u64> {
    nearest_rank_ppm(sorted, percent.min(100) * 10_000)
}

/// The nearest-rank percentile at `ppm` parts per million (999 000 is the
/// 99.9th percentile; values above 10⁶ count as 10⁶): the smallest sample
/// with at least ppm / 10⁶ of the samples at or below it. `None` for no
/// samples.
pub fn nearest_rank_ppm(sorted: &[u64], ppm: u32) -> Option<u64> {
    let n = sorted.len();
    // ppm ≤ 10⁶ and n fits u64: the product fits u128.
    let rank = (u128::from(ppm.min(1_000_000)) * n as u128)
        .div_ceil(1_000_000)
        .max(1);
    let rank = usize::try_from(rank).unwrap_or(n).min(n);
    sorted.get(rank.checked_sub(1)?).copied()
}

/// The median of float values (rates, ratios, simulated latencies, which
/// no distribution of integer samples holds): the middle value, or the
/// mean of the two middle values for an even count, in the total order of
/// `f64`. `None` for no values.
pub fn median_f64(values: &[f64]) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    match sorted.len() {
        0 => None,
        n if n % 2 == 1 => Some(sorted[mid]),
        _ => Some((sorted[mid - 1] + sorted[mid]) / 2.0),
    }
}

/// σ, the population standard deviation of float values (rates, ratios:
/// what no distribution of integer samples holds); 0 for no values.
pub fn stddev_f64(values: &[f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    (values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / values.len() as f64).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_is_an_actual_sample() {
        assert_eq!(nearest_rank(&[7], 99), Some(7));
        assert_eq!(nearest_rank(&[1, 2, 3, 4], 50), Some(2));
        assert_eq!(nearest_rank(&[1, 2, 3, 4], 51), Some(3));
        assert_eq!(nearest_rank(&[1, 2, 3, 4], 100), Some(4));
        assert_eq!(nearest_rank(&[], 50), None);
        assert_eq!(nearest_rank(&[u64::MAX; 3], 99), Some(u64::MAX));
        let thousand: Vec<u64> = (1..=1000).collect();
        assert_eq!(nearest_rank_ppm(&thousand, 999_000), Some(999));
        assert_eq!(nearest_rank_ppm(&thousand, 999_500), Some(1000));
        assert_eq!(
            nearest_rank_ppm(&thousand, 990_000),
            nearest_rank(&thousand, 99)
        );
        assert_eq!(nearest_rank_ppm(&thousand, 2_000_000), Some(1000));
        assert_eq!(nearest_rank_ppm(&[], 999_000), None);
    }

    #[test]
    fn median_of_floats_is_the_middle_or_the_mean_of_the_two_middles() {
        assert_eq!(median_f64(&[]), None);
        assert_eq!(median_f64(&[3.5]), Some(3.5));
        assert_eq!(median_f64(&[9.0, -1.0, 2.0, 8.0, 0.5]), Some(2.0));
        assert_eq!(median_f64(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
    }
}
