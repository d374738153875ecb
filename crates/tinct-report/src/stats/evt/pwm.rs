//! Fitting a GEV or a Gumbel distribution to block maxima by probability-
//! weighted moments (PWM).
//!
//! GEV: Hosking, Wallis and Wood, "Estimation of the generalized
//! extreme-value distribution by the method of probability-weighted
//! moments", Technometrics 27(3), 1985 — Eqs. (9)-(14) with the unbiased
//! sample moments b_r of their Eq. (4) and the rational approximation of k
//! (their Eq. 14, accurate to 9 × 10⁻⁴ for −0.5 ≤ k ≤ 0.5), and their
//! Section 5 test of k = 0 (Gumbel): Z = k̂ (n / 0.5633)^½ is asymptotically
//! standard normal. Gumbel: the PWM (L-moment) estimators σ = l₂ / ln 2,
//! μ = l₁ − γσ (Landwehr, Matalas and Wallis 1979; Hosking 1990 Table 1).
//!
//! PWM rather than maximum likelihood: closed form (no optimizer to
//! converge or not), defined for every sample, and for the sample sizes of
//! a measurement campaign (tens to hundreds of blocks) at least as
//! accurate as maximum likelihood (Hosking et al. 1985, Section 4).
//!
//! Hosking's k is −ξ; the fits are returned in Coles' ξ ([`Gev`]).

use super::gev::Gev;
use statrs::function::gamma::gamma;

/// Euler–Mascheroni constant γ (the mean of the standard Gumbel).
const EULER_GAMMA: f64 = 0.577_215_664_901_532_9;

/// n · Var(k̂) of the PWM shape estimator at k = 0 (Hosking et al. 1985, Table 2).
const SHAPE_VARIANCE_AT_ZERO: f64 = 0.5633;

/// Hosking et al. (1985) give their estimators for −0.5 < k < 0.5; beyond
/// k = −0.5 (ξ ≥ 0.5) the variance of the sample moments is infinite.
pub const MAX_SHAPE: f64 = 0.5;

/// The unbiased probability-weighted moments b₀, b₁, b₂ of a sorted sample
/// (Hosking et al. 1985, Eq. 4). Needs at least 3 values.
fn moments(sorted: &[f64]) -> [f64; 3] {
    let n = sorted.len() as f64;
    let (mut b0, mut b1, mut b2) = (0.0, 0.0, 0.0);
    for (j, &x) in sorted.iter().enumerate() {
        let j = j as f64; // j − 1 in the paper's 1-based ranks
        b0 += x;
        b1 += x * j / (n - 1.0);
        b2 += x * j * (j - 1.0) / ((n - 1.0) * (n - 2.0));
    }
    [b0 / n, b1 / n, b2 / n]
}

/// The Gumbel fit of a sorted sample (at least 3 values): σ = (2b₁ − b₀)/ln 2,
/// μ = b₀ − γσ. `None` when the sample has no spread.
pub fn fit_gumbel(sorted: &[f64]) -> Option<Gev> {
    let [b0, b1, _] = moments(sorted);
    let l2 = 2.0 * b1 - b0;
    let scale = l2 / std::f64::consts::LN_2;
    (scale > 0.0 && scale.is_finite()).then(|| Gev::gumbel(b0 - EULER_GAMMA * scale, scale))
}

/// The GEV fit of a sorted sample (at least 3 values); `None` when the
/// sample has no spread. The estimators are meant for |ξ| < [`MAX_SHAPE`]:
/// the caller judges a shape outside that range.
pub fn fit_gev(sorted: &[f64]) -> Option<Gev> {
    let [b0, b1, b2] = moments(sorted);
    let l2 = 2.0 * b1 - b0;
    let denominator = 3.0 * b2 - b0;
    if l2 <= 0.0 || denominator <= 0.0 || !l2.is_finite() {
        return None;
    }
    // Eq. (14): c = (2b₁ − b₀)/(3b₂ − b₀) − ln 2/ln 3, k ≈ 7.8590c + 2.9554c².
    let c = l2 / denominator - std::f64::consts::LN_2 / 3.0f64.ln();
    let k = 7.8590 * c + 2.9554 * c * c;
    if k.abs() < 1e-9 {
        return fit_gumbel(sorted);
    }
    // Eqs. (12)-(13): α = (2b₁ − b₀) k / (Γ(1+k)(1 − 2^−k)),
    // ξ_loc = b₀ + α (Γ(1+k) − 1)/k.
    let g = gamma(1.0 + k);
    let scale = l2 * k / (g * (1.0 - (-k * std::f64::consts::LN_2).exp()));
    let location = b0 + scale * (g - 1.0) / k;
    (scale > 0.0 && scale.is_finite() && location.is_finite()).then_some(Gev {
        location,
        scale,
        shape: -k,
    })
}

/// Hosking et al.'s test of ξ = 0: Z = ξ̂ (n / 0.5633)^½ and its two-sided
/// p-value under the standard normal.
pub fn shape_test(shape: f64, n: usize) -> (f64, f64) {
    let z = shape * (n as f64 / SHAPE_VARIANCE_AT_ZERO).sqrt();
    (z, super::iid::two_sided_normal_p(z))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Quantiles of `d` at the plotting positions (i − 0.35)/n: a sample
    /// shaped exactly like the distribution.
    fn ideal_sample(d: &Gev, n: usize) -> Vec<f64> {
        (1..=n)
            .map(|i| d.quantile((i as f64 - 0.35) / n as f64))
            .collect()
    }

    #[test]
    fn recovers_the_parameters_of_an_ideal_sample() {
        for shape in [-0.3, -0.1, 0.0, 0.1, 0.3] {
            let d = Gev {
                location: 100.0,
                scale: 10.0,
                shape,
            };
            let fit = fit_gev(&ideal_sample(&d, 5000)).unwrap();
            assert!((fit.shape - shape).abs() < 0.01, "ξ {shape}: {fit:?}");
            assert!((fit.scale - 10.0).abs() < 0.2, "ξ {shape}: {fit:?}");
            assert!((fit.location - 100.0).abs() < 0.2, "ξ {shape}: {fit:?}");
        }
        let gumbel = fit_gumbel(&ideal_sample(&Gev::gumbel(50.0, 3.0), 5000)).unwrap();
        assert!((gumbel.scale - 3.0).abs() < 0.02 && (gumbel.location - 50.0).abs() < 0.02);
    }

    #[test]
    fn a_sample_without_spread_has_no_fit() {
        let flat = vec![7.0; 40];
        assert!(fit_gev(&flat).is_none());
        assert!(fit_gumbel(&flat).is_none());
    }

    #[test]
    fn the_shape_test_scales_with_the_sample() {
        let (z, p) = shape_test(0.0, 100);
        assert_eq!((z, p), (0.0, 1.0));
        let (z, p) = shape_test(0.2, 100);
        assert!((z - 0.2 * (100.0f64 / 0.5633).sqrt()).abs() < 1e-12);
        assert!(p < 0.01, "{p}");
        assert!(shape_test(0.2, 10).1 > p, "fewer blocks, weaker evidence");
    }
}
