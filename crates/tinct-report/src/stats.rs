//! Order statistics of integer samples: the one statistics type of tinct.
//!
//! A [`Distribution`] summarizes samples by count, min, median, p99, max
//! (nearest rank, so each is an actual sample), mean, standard deviation
//! and ρ = μ + 2σ, the real-time metric of demarchi et al. Eq. (1) (the
//! paper calls σ "the corresponding variance" but adds it to a time, so it
//! is the standard deviation, as used here).
//!
//! The unit is part of the type: [`Durations`] (nanoseconds) serialize their
//! fields as `min_ns`, `median_ns`, ...; [`Counts`] (events such as LLC
//! misses or instructions, which have no unit) as `min`, `median`, ...
//! Mean, σ and ρ are floats because they are only reported.
//! [`median_f64`] and [`stddev_f64`] are the median and σ of float values
//! (rates, ratios) that no integer distribution holds.
//!
//! [`evt`] fits extreme-value distributions to block maxima of execution
//! times: the probabilistic WCET of `tinct bench wcet-profile`.

use serde::de::{Deserialize, Deserializer};
use serde::ser::{Serialize, SerializeStruct, Serializer};
use std::marker::PhantomData;

pub mod evt;

pub use tinct_base::stats::{median_f64, nearest_rank, nearest_rank_ppm, stddev_f64};

/// The unit of a [`Distribution`]: it names the serialized fields.
pub trait Unit {
    /// Field names, in order: count, min, median, p99, max, mean, stddev, rho.
    const FIELDS: [&'static str; 8];
}

/// Nanoseconds: fields end in `_ns`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ns;

impl Unit for Ns {
    const FIELDS: [&'static str; 8] = [
        "count",
        "min_ns",
        "median_ns",
        "p99_ns",
        "max_ns",
        "mean_ns",
        "stddev_ns",
        "rho_ns",
    ];
}

/// Counts of events (no unit): fields carry no suffix.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Count;

impl Unit for Count {
    const FIELDS: [&'static str; 8] = [
        "count", "min", "median", "p99", "max", "mean", "stddev", "rho",
    ];
}

/// Distribution of a duration in nanoseconds.
pub type Durations = Distribution<Ns>;

/// Distribution of a count of events (unit-free).
pub type Counts = Distribution<Count>;

/// count / min / median / p99 / max / mean / σ / ρ of samples in unit `U`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Distribution<U> {
    /// Number of samples.
    pub count: u64,
    /// Smallest sample.
    pub min: u64,
    /// Median (nearest rank 50 %).
    pub median: u64,
    /// 99th percentile (nearest rank).
    pub p99: u64,
    /// Largest sample.
    pub max: u64,
    /// μ, the arithmetic mean.
    pub mean: f64,
    /// σ, the population standard deviation.
    pub stddev: f64,
    /// ρ = μ + 2σ, demarchi Eq. (1).
    pub rho: f64,
    unit: PhantomData<U>,
}

impl<U> Default for Distribution<U> {
    /// The distribution of no samples: every field zero.
    fn default() -> Self {
        Self::from_sorted(&[])
    }
}

impl<U> Distribution<U> {
    /// The distribution of `samples`; `None` if there are none.
    pub fn of(samples: &[u64]) -> Option<Self> {
        (!samples.is_empty()).then(|| Self::of_or_zero(samples))
    }

    /// The distribution of `samples`, every field zero when there are none.
    pub fn of_or_zero(samples: &[u64]) -> Self {
        let mut sorted = samples.to_vec();
        sorted.sort_unstable();
        Self::from_sorted(&sorted)
    }

    fn from_sorted(sorted: &[u64]) -> Self {
        let (Some(&min), Some(&max)) = (sorted.first(), sorted.last()) else {
            return Self::from_parts([0; 5], 0.0, 0.0);
        };
        let n = sorted.len() as f64;
        // The exact sum (u128 cannot overflow for any slice of u64), then floats for reporting.
        let sum: u128 = sorted.iter().map(|&s| u128::from(s)).sum();
        let mean = sum as f64 / n;
        let variance = sorted
            .iter()
            .map(|&s| (s as f64 - mean).powi(2))
            .sum::<f64>()
            / n;
        let median = nearest_rank(sorted, 50).unwrap_or(min);
        let p99 = nearest_rank(sorted, 99).unwrap_or(max);
        Self::from_parts(
            [sorted.len() as u64, min, median, p99, max],
            mean,
            variance.sqrt(),
        )
    }

    fn from_parts([count, min, median, p99, max]: [u64; 5], mean: f64, stddev: f64) -> Self {
        Self {
            count,
            min,
            median,
            p99,
            max,
            mean,
            stddev,
            rho: mean + 2.0 * stddev,
            unit: PhantomData,
        }
    }

    /// True if count ≥ 1, min ≤ median ≤ p99 ≤ max and min ≤ mean ≤ max:
    /// what every distribution of real samples satisfies.
    pub fn is_ordered(&self) -> bool {
        self.count >= 1
            && self.min <= self.median
            && self.median <= self.p99
            && self.p99 <= self.max
            && (self.min as f64..=self.max as f64).contains(&self.mean)
    }

    /// Median of `self` over the median of `other` (`None` if `other`'s is 0).
    pub fn median_ratio(&self, other: &Self) -> Option<f64> {
        (other.median > 0).then(|| self.median as f64 / other.median as f64)
    }
}

/// `a / b` as a float for reporting (0 when `b` is 0): slowdowns, inflations.
pub fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}

/// The empirical CDF of `samples`: each distinct value with the fraction of
/// samples at or below it, in increasing order (for a step plot).
pub fn empirical_cdf(samples: &[u64]) -> Vec<(u64, f64)> {
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    let n = sorted.len() as f64;
    let mut points: Vec<(u64, f64)> = Vec::new();
    for (i, &value) in sorted.iter().enumerate() {
        let fraction = (i + 1) as f64 / n;
        match points.last_mut() {
            Some(last) if last.0 == value => last.1 = fraction,
            _ => points.push((value, fraction)),
        }
    }
    points
}

/// Counts of samples in equal integer bins `[low + k·width, low + (k+1)·width)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Histogram {
    /// Lower edge of the first bin (the smallest sample).
    pub low: u64,
    /// Width of every bin (≥ 1).
    pub width: u64,
    /// Samples per bin.
    pub counts: Vec<u64>,
}

impl Histogram {
    /// At most `bins` bins (at least one) covering every sample; `None` for
    /// no samples. Exact: integer edges, every sample in exactly one bin.
    pub fn of(samples: &[u64], bins: u64) -> Option<Histogram> {
        let low = *samples.iter().min()?;
        let high = *samples.iter().max()?;
        // high − low + 1 ≤ 2^64: u128 holds it.
        let span = u128::from(high - low) + 1;
        let width = span.div_ceil(u128::from(bins.max(1)));
        let width = u64::try_from(width).unwrap_or(u64::MAX);
        let count = usize::try_from(span.div_ceil(u128::from(width))).unwrap_or(1);
        let mut counts = vec![0u64; count];
        for &s in samples {
            let bin = usize::try_from((s - low) / width).unwrap_or(count - 1);
            counts[bin.min(count - 1)] += 1;
        }
        Some(Histogram { low, width, counts })
    }

    /// `(lower edge, count)` of every bin, then the upper edge of the last
    /// bin with the last count again, so a step plot closes the last bin.
    pub fn step_points(&self) -> Vec<(u64, u64)> {
        let mut points: Vec<(u64, u64)> = self
            .counts
            .iter()
            .enumerate()
            .map(|(k, &c)| (self.edge(k), c))
            .collect();
        if let Some(&last) = self.counts.last() {
            points.push((self.edge(self.counts.len()), last));
        }
        points
    }

    /// Lower edge of bin `k` (saturating at the top of u64: only an upper
    /// edge past the largest sample can reach it).
    fn edge(&self, k: usize) -> u64 {
        self.low.saturating_add(self.width.saturating_mul(k as u64))
    }
}

impl<U: Unit> Serialize for Distribution<U> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let [count, min, median, p99, max, mean, stddev, rho] = U::FIELDS;
        let mut s = serializer.serialize_struct("Distribution", 8)?;
        s.serialize_field(count, &self.count)?;
        s.serialize_field(min, &self.min)?;
        s.serialize_field(median, &self.median)?;
        s.serialize_field(p99, &self.p99)?;
        s.serialize_field(max, &self.max)?;
        s.serialize_field(mean, &self.mean)?;
        s.serialize_field(stddev, &self.stddev)?;
        s.serialize_field(rho, &self.rho)?;
        s.end()
    }
}

/// The serialized form of either unit (a reader accepts both namings).
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Fields {
    count: u64,
    #[serde(alias = "min_ns")]
    min: u64,
    #[serde(alias = "median_ns")]
    median: u64,
    #[serde(alias = "p99_ns")]
    p99: u64,
    #[serde(alias = "max_ns")]
    max: u64,
    #[serde(alias = "mean_ns")]
    mean: f64,
    #[serde(alias = "stddev_ns")]
    stddev: f64,
    #[serde(alias = "rho_ns")]
    rho: f64,
}

impl<'de, U: Unit> Deserialize<'de> for Distribution<U> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let f = Fields::deserialize(deserializer)?;
        Ok(Self {
            count: f.count,
            min: f.min,
            median: f.median,
            p99: f.p99,
            max: f.max,
            mean: f.mean,
            stddev: f.stddev,
            rho: f.rho,
            unit: PhantomData,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_to_hundred() {
        let samples: Vec<u64> = (1..=100).rev().collect();
        let d = Durations::of(&samples).unwrap();
        assert_eq!(d.count, 100);
        assert_eq!((d.min, d.median, d.p99, d.max), (1, 50, 99, 100));
        assert_eq!(d.mean, 50.5);
        assert!((d.stddev - 28.866).abs() < 1e-3, "{}", d.stddev); // sqrt((100^2-1)/12)
        assert!(d.is_ordered());
    }

    #[test]
    fn rho_is_mean_plus_two_standard_deviations() {
        let d = Durations::of(&[2, 4, 4, 4, 5, 5, 7, 9]).unwrap();
        assert_eq!((d.mean, d.stddev, d.rho), (5.0, 2.0, 9.0));
        assert_eq!((d.min, d.max, d.count), (2, 9, 8));
    }

    #[test]
    fn single_sample_empty_and_outlier() {
        let d = Counts::of(&[7]).unwrap();
        assert_eq!((d.min, d.median, d.p99, d.max, d.stddev), (7, 7, 7, 7, 0.0));
        assert!(Durations::of(&[]).is_none());
        let zero = Durations::of_or_zero(&[]);
        assert_eq!((zero.count, zero.max, zero.mean), (0, 0, 0.0));
        assert!(!zero.is_ordered(), "no samples is not a distribution");
        let mut samples = vec![10u64; 999];
        samples.push(10_000);
        let d = Durations::of(&samples).unwrap();
        assert_eq!((d.median, d.p99, d.max), (10, 10, 10_000));
    }

    #[test]
    fn the_unit_names_the_json_fields_and_both_round_trip() {
        let samples = [3, 1, 4, 1, 5, 9, 2, 6];
        let ns = Durations::of(&samples).unwrap();
        let json = serde_json::to_value(ns).unwrap();
        assert_eq!(json["median_ns"], 3);
        assert!(json.get("median").is_none());
        let back: Durations = serde_json::from_value(json).unwrap();
        assert_eq!(back, ns);

        let counts = Counts::of(&samples).unwrap();
        let json = serde_json::to_value(counts).unwrap();
        assert_eq!(json["max"], 9);
        assert!(
            json.as_object()
                .unwrap()
                .keys()
                .all(|k| !k.ends_with("_ns"))
        );
        let back: Counts = serde_json::from_value(json).unwrap();
        assert_eq!(back, counts);
    }

    #[test]
    fn stddev_of_floats_is_the_population_standard_deviation() {
        assert_eq!(stddev_f64(&[]), 0.0);
        assert_eq!(stddev_f64(&[7.25]), 0.0);
        assert_eq!(stddev_f64(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]), 2.0);
        // The same as a Distribution's σ for integer-valued samples.
        let samples = [3u64, 17, 4, 250, 9, 9];
        let floats: Vec<f64> = samples.iter().map(|&s| s as f64).collect();
        let d = Durations::of(&samples).unwrap();
        assert!((stddev_f64(&floats) - d.stddev).abs() < 1e-9);
    }

    #[test]
    fn median_ratio() {
        let a = Durations::of(&[20, 20, 20]).unwrap();
        let b = Durations::of(&[10, 10, 10]).unwrap();
        assert_eq!(a.median_ratio(&b), Some(2.0));
        assert_eq!(a.median_ratio(&Durations::of_or_zero(&[])), None);
        assert_eq!(ratio(3, 2), 1.5);
        assert_eq!(ratio(3, 0), 0.0);
    }

    #[test]
    fn the_empirical_cdf_steps_to_one_at_the_largest_sample() {
        assert_eq!(
            empirical_cdf(&[3, 1, 2, 2]),
            vec![(1, 0.25), (2, 0.75), (3, 1.0)]
        );
        assert!(empirical_cdf(&[]).is_empty());
    }

    #[test]
    fn histogram_bins_hold_every_sample_once() {
        let h = Histogram::of(&[10, 11, 19, 20, 29], 2).unwrap();
        assert_eq!((h.low, h.width), (10, 10));
        assert_eq!(h.counts, vec![3, 2]);
        assert_eq!(h.step_points(), vec![(10, 3), (20, 2), (30, 2)]);
        let one = Histogram::of(&[5, 5], 8).unwrap();
        assert_eq!((one.width, one.counts.clone()), (1, vec![2]));
        let wide = Histogram::of(&[0, u64::MAX], 4).unwrap();
        assert_eq!(wide.counts.iter().sum::<u64>(), 2);
        assert_eq!(wide.counts.len(), 4);
        assert!(Histogram::of(&[], 4).is_none());
    }
}
