//! Are the block maxima independent and identically distributed? The
//! hypothesis every EVT fit rests on (Coles 2001, Section 3.1), tested as
//! measurement-based probabilistic timing analysis does (Cucu-Grosjean et
//! al., "Measurement-based probabilistic timing analysis for multi-path
//! programs", ECRTS 2012, Section 5: a runs test for independence and a
//! Kolmogorov–Smirnov test for identical distribution), with a Ljung–Box
//! test beside the runs test because it also sees correlation that keeps
//! the signs of deviations balanced:
//!
//! - [`runs_test`]: Wald and Wolfowitz (1940), runs above and below the
//!   median, normal approximation;
//! - [`ljung_box`]: Ljung and Box (1978), Q = n(n+2) Σ ρ̂ₖ²/(n−k) over the
//!   first h lags, χ² with h degrees of freedom;
//! - [`two_halves_ks`]: the two-sample Kolmogorov–Smirnov statistic of the
//!   first against the second half in time order (a drift shows), with the
//!   asymptotic Kolmogorov distribution and Stephens' (1970) small-sample
//!   correction.
//!
//! Every test returns its statistic and p-value, or `None` when the sample
//! cannot support it (too short, no spread).

use serde::{Deserialize, Serialize};
use statrs::distribution::{ChiSquared, ContinuousCDF, Normal};

/// A test's statistic and p-value.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct TestResult {
    /// The statistic (z, Q or D, see the test).
    pub statistic: f64,
    /// The p-value: the probability of a statistic at least this extreme
    /// if the hypothesis holds.
    pub p_value: f64,
}

/// 2 (1 − Φ(|z|)).
pub fn two_sided_normal_p(z: f64) -> f64 {
    let normal = Normal::standard();
    (2.0 * normal.sf(z.abs())).min(1.0)
}

/// Wald–Wolfowitz runs test of `values` (in time order) above and below
/// their median; values equal to the median are left out. The statistic is
/// z = (R − E\[R\]) / √Var\[R\]; too few runs means clustering (dependence).
pub fn runs_test(values: &[f64]) -> Option<TestResult> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let median = if sorted.is_empty() {
        return None;
    } else if sorted.len() % 2 == 1 {
        sorted[sorted.len() / 2]
    } else {
        (sorted[sorted.len() / 2 - 1] + sorted[sorted.len() / 2]) / 2.0
    };
    let signs: Vec<bool> = values
        .iter()
        .filter(|&&v| v != median)
        .map(|&v| v > median)
        .collect();
    let above = signs.iter().filter(|&&s| s).count() as f64;
    let below = signs.len() as f64 - above;
    if above < 2.0 || below < 2.0 {
        return None;
    }
    let runs = 1.0 + signs.windows(2).filter(|w| w[0] != w[1]).count() as f64;
    let n = above + below;
    let expected = 2.0 * above * below / n + 1.0;
    let variance = 2.0 * above * below * (2.0 * above * below - n) / (n * n * (n - 1.0));
    if variance <= 0.0 {
        return None;
    }
    let z = (runs - expected) / variance.sqrt();
    Some(TestResult {
        statistic: z,
        p_value: two_sided_normal_p(z),
    })
}

/// The number of lags the Ljung–Box test looks at for `n` values:
/// min(10, n/5), at least 1.
pub fn ljung_box_lags(n: usize) -> usize {
    (n / 5).clamp(1, 10)
}

/// Ljung–Box test of `values` (in time order) over [`ljung_box_lags`] lags.
pub fn ljung_box(values: &[f64]) -> Option<TestResult> {
    let n = values.len();
    let lags = ljung_box_lags(n);
    if n < 2 * lags + 2 {
        return None;
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    let centred: Vec<f64> = values.iter().map(|v| v - mean).collect();
    let variance: f64 = centred.iter().map(|c| c * c).sum();
    if variance <= 0.0 {
        return None;
    }
    let nf = n as f64;
    let q = (1..=lags)
        .map(|k| {
            let rho = centred
                .iter()
                .zip(&centred[k..])
                .map(|(a, b)| a * b)
                .sum::<f64>()
                / variance;
            rho * rho / (nf - k as f64)
        })
        .sum::<f64>()
        * nf
        * (nf + 2.0);
    let chi = ChiSquared::new(lags as f64).ok()?;
    Some(TestResult {
        statistic: q,
        p_value: chi.sf(q),
    })
}

/// Q_KS(λ) = 2 Σ_{j≥1} (−1)^(j−1) exp(−2 j² λ²), the Kolmogorov
/// distribution's survival function.
pub fn kolmogorov_survival(lambda: f64) -> f64 {
    if lambda < 0.2 {
        return 1.0; // the series converges slowly there; its value is 1 to 1e-9
    }
    let mut sum = 0.0;
    for j in 1..=100 {
        let j = f64::from(j);
        let term = (-2.0 * j * j * lambda * lambda).exp();
        sum += if j as u32 % 2 == 1 { term } else { -term };
        if term < 1e-16 {
            break;
        }
    }
    (2.0 * sum).clamp(0.0, 1.0)
}

/// Two-sample Kolmogorov–Smirnov test of the first half of `values`
/// against the second half.
pub fn two_halves_ks(values: &[f64]) -> Option<TestResult> {
    let half = values.len() / 2;
    if half < 4 {
        return None;
    }
    let mut first = values[..half].to_vec();
    let mut second = values[half..].to_vec();
    first.sort_by(f64::total_cmp);
    second.sort_by(f64::total_cmp);
    let d = ks_distance(&first, &second);
    let (n1, n2) = (first.len() as f64, second.len() as f64);
    let effective = (n1 * n2 / (n1 + n2)).sqrt();
    let lambda = (effective + 0.12 + 0.11 / effective) * d;
    Some(TestResult {
        statistic: d,
        p_value: kolmogorov_survival(lambda),
    })
}

/// sup |F₁ − F₂| of two sorted samples.
fn ks_distance(a: &[f64], b: &[f64]) -> f64 {
    let (mut i, mut j, mut d) = (0usize, 0usize, 0.0f64);
    while i < a.len() && j < b.len() {
        let x = a[i].min(b[j]);
        while i < a.len() && a[i] <= x {
            i += 1;
        }
        while j < b.len() && b[j] <= x {
            j += 1;
        }
        d = d.max((i as f64 / a.len() as f64 - j as f64 / b.len() as f64).abs());
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_by_hand() {
        // + + − − + + − − + + − −: 6 runs of 6 above and 6 below.
        let values = [5.0, 6.0, 1.0, 2.0, 7.0, 8.0, 0.0, 1.5, 9.0, 6.5, 2.5, 0.5];
        let r = runs_test(&values).unwrap();
        // E = 2·6·6/12 + 1 = 7, Var = 2·36·(72−12)/(144·11) = 30/11.
        let z = (6.0 - 7.0) / (30.0f64 / 11.0).sqrt();
        assert!((r.statistic - z).abs() < 1e-12, "{r:?}");
        // Sorted halves are two runs: a strong rejection.
        let mut sorted = values;
        sorted.sort_by(f64::total_cmp);
        assert!(runs_test(&sorted).unwrap().p_value < 0.01);
        assert!(runs_test(&[1.0, 1.0, 1.0]).is_none());
    }

    #[test]
    fn ljung_box_sees_a_trend_and_not_an_alternation_of_noise() {
        let trend: Vec<f64> = (0..50).map(f64::from).collect();
        assert!(ljung_box(&trend).unwrap().p_value < 1e-6);
        // A fixed pseudo-random sequence (a multiplicative generator).
        let mut state = 12345u64;
        let noise: Vec<f64> = (0..200)
            .map(|_| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (state >> 11) as f64 / (1u64 << 53) as f64
            })
            .collect();
        assert!(ljung_box(&noise).unwrap().p_value > 0.01);
        assert!(ljung_box(&[1.0; 30]).is_none());
        assert_eq!(ljung_box_lags(30), 6);
        assert_eq!(ljung_box_lags(1000), 10);
    }

    #[test]
    fn kolmogorov_distribution_values() {
        // Tabulated: Q(1.36) ≈ 0.049, Q(1.63) ≈ 0.0098.
        assert!((kolmogorov_survival(1.36) - 0.0494).abs() < 1e-3);
        assert!((kolmogorov_survival(1.63) - 0.0098).abs() < 5e-4);
        assert_eq!(kolmogorov_survival(0.0), 1.0);
    }

    #[test]
    fn two_halves_differ_when_the_level_shifts() {
        let steady: Vec<f64> = (0..60).map(|i| f64::from(i % 7)).collect();
        assert!(two_halves_ks(&steady).unwrap().p_value > 0.5);
        let shifted: Vec<f64> = (0..60)
            .map(|i| f64::from(i % 7 + if i >= 30 { 10 } else { 0 }))
            .collect();
        let r = two_halves_ks(&shifted).unwrap();
        assert_eq!(r.statistic, 1.0);
        assert!(r.p_value < 1e-6);
        assert!(two_halves_ks(&[1.0; 6]).is_none());
    }
}
