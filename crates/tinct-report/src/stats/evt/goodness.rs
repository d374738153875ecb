//! Goodness of fit of the chosen distribution to the block maxima: the
//! Anderson–Darling statistic (Anderson and Darling 1954), which weighs the
//! tails more than Kolmogorov–Smirnov does — where a pWCET lives.
//!
//! Its textbook p-values hold for a distribution fixed in advance; here the
//! parameters were estimated from the same sample, which makes the
//! statistic smaller than the tables assume. The p-value is therefore
//! computed by parametric bootstrap (Stute, González Manteiga and Presedo
//! Quindimil, "Bootstrap based goodness-of-fit tests", Metrika 40, 1993):
//! draw samples of the same size from the fitted distribution, refit each
//! with the same estimator, and count how often the statistic is at least
//! the observed one.

use super::gev::Gev;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// F is kept within [10⁻¹², 1 − 10⁻¹²] in the statistic: a value outside a
/// fitted bounded support (which probability-weighted moments, unlike
/// maximum likelihood, allow) then weighs as a value 10⁻¹² into the tail —
/// a very bad fit, but a number the bootstrap can compare, where ∞ would
/// make every such replicate "as extreme" and hide a misfit.
const LN_FLOOR: f64 = -27.631_021_115_928_547; // ln 10⁻¹²

/// A² = −n − (1/n) Σᵢ (2i − 1) [ln F(x₍ᵢ₎) + ln(1 − F(x₍ₙ₊₁₋ᵢ₎))] of a
/// sorted sample (F clamped as above).
pub fn anderson_darling(sorted: &[f64], d: &Gev) -> f64 {
    let n = sorted.len();
    let sum: f64 = (0..n)
        .map(|i| {
            let weight = (2 * i + 1) as f64;
            let ln_f = d.ln_cdf(sorted[i]).max(LN_FLOOR);
            let ln_s = d.ln_survival(sorted[n - 1 - i]).max(LN_FLOOR);
            weight * (ln_f + ln_s)
        })
        .sum();
    -(n as f64) - sum / n as f64
}

/// `count` values drawn from `d` by inversion with `rng`.
pub fn draw(d: &Gev, count: usize, rng: &mut impl Rng) -> Vec<f64> {
    (0..count)
        .map(|_| {
            // (0, 1): never exactly 0, whose quantile is −∞ or the lower end.
            let u: f64 = rng.random_range(f64::MIN_POSITIVE..1.0);
            d.quantile(u)
        })
        .collect()
}

/// The parametric-bootstrap p-value of `observed` (the A² of a sample of
/// `n` values fitted as `fitted`): `replicates` samples drawn from `fitted`
/// (seeded by `seed`), each refitted with `refit` and scored. Replicates
/// the estimator cannot fit count as at least as extreme (a conservative
/// choice). Returns (1 + #{A²* ≥ A²}) / (1 + replicates).
pub fn bootstrap_p_value(
    observed: f64,
    fitted: &Gev,
    n: usize,
    replicates: u32,
    seed: u64,
    refit: impl Fn(&[f64]) -> Option<Gev>,
) -> f64 {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut as_extreme = 0u32;
    for _ in 0..replicates {
        let mut sample = draw(fitted, n, &mut rng);
        sample.sort_by(f64::total_cmp);
        let extreme = match refit(&sample) {
            Some(refitted) => anderson_darling(&sample, &refitted) >= observed,
            None => true,
        };
        as_extreme += u32::from(extreme);
    }
    f64::from(1 + as_extreme) / f64::from(1 + replicates)
}

#[cfg(test)]
mod tests {
    use super::super::pwm::fit_gumbel;
    use super::*;

    #[test]
    fn a2_is_small_for_the_true_distribution_and_large_for_a_wrong_one() {
        let d = Gev::gumbel(0.0, 1.0);
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let mut sample = draw(&d, 500, &mut rng);
        sample.sort_by(f64::total_cmp);
        let right = anderson_darling(&sample, &d);
        let wrong = anderson_darling(&sample, &Gev::gumbel(1.0, 1.0));
        // Under the true distribution A² is about 1 on average; 2.5 is its 95 % point.
        assert!(right < 2.5, "{right}");
        assert!(wrong > 10.0 * right, "{wrong} vs {right}");
    }

    #[test]
    fn a_value_outside_the_support_weighs_as_far_in_the_tail() {
        let bounded = Gev {
            location: 0.0,
            scale: 1.0,
            shape: -0.5,
        };
        let inside = anderson_darling(&[0.0, 1.0, 1.9], &bounded);
        let outside = anderson_darling(&[0.0, 1.0, 3.0], &bounded);
        assert!(
            outside.is_finite() && outside > 4.0 * inside,
            "{outside} vs {inside}"
        );
    }

    #[test]
    fn the_bootstrap_accepts_its_own_model_and_rejects_a_mixture() {
        let d = Gev::gumbel(100.0, 5.0);
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let mut sample = draw(&d, 100, &mut rng);
        sample.sort_by(f64::total_cmp);
        let fit = fit_gumbel(&sample).unwrap();
        let p = bootstrap_p_value(
            anderson_darling(&sample, &fit),
            &fit,
            100,
            199,
            1,
            fit_gumbel,
        );
        assert!(p > 0.05, "{p}");
        // Two well separated modes: no Gumbel fits that.
        let mut mixture: Vec<f64> = (0..100)
            .map(|i| if i % 2 == 0 { 100.0 } else { 200.0 } + f64::from(i % 7))
            .collect();
        mixture.sort_by(f64::total_cmp);
        let fit = fit_gumbel(&mixture).unwrap();
        let p = bootstrap_p_value(
            anderson_darling(&mixture, &fit),
            &fit,
            100,
            199,
            1,
            fit_gumbel,
        );
        assert!(p < 0.01, "{p}");
        assert_eq!(p, 1.0 / 200.0, "not one replicate is as bad");
    }
}
