//! The generalized extreme-value distribution (GEV) in Coles' notation
//! (Coles, "An Introduction to Statistical Modeling of Extreme Values",
//! Springer 2001, Section 3.1.3, Eq. 3.2):
//!
//! F(x) = exp(−[1 + ξ (x − μ)/σ]^(−1/ξ)) on 1 + ξ (x − μ)/σ > 0,
//!
//! with location μ, scale σ > 0 and shape ξ; ξ = 0 is the Gumbel
//! distribution F(x) = exp(−exp(−(x − μ)/σ)). ξ > 0 (Fréchet type) has a
//! heavy upper tail, ξ < 0 (Weibull type) a finite upper end point
//! μ − σ/ξ. Hosking's shape k (used by the PWM estimators) is −ξ.

use serde::{Deserialize, Serialize};

/// |ξ| below this is treated as the Gumbel limit (the ξ → 0 formulas),
/// where the general ones lose all precision to cancellation.
const GUMBEL_SHAPE: f64 = 1e-9;

/// A GEV distribution.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Gev {
    /// μ, the location.
    pub location: f64,
    /// σ > 0, the scale.
    pub scale: f64,
    /// ξ, the shape (0: Gumbel).
    pub shape: f64,
}

impl Gev {
    /// The Gumbel distribution (ξ = 0) with location μ and scale σ.
    pub fn gumbel(location: f64, scale: f64) -> Self {
        Self {
            location,
            scale,
            shape: 0.0,
        }
    }

    /// t(x) = −ln F(x): ∞ below the support, 0 above it.
    fn minus_log_cdf(&self, x: f64) -> f64 {
        let z = (x - self.location) / self.scale;
        if self.shape.abs() < GUMBEL_SHAPE {
            return (-z).exp();
        }
        let base = 1.0 + self.shape * z;
        if base <= 0.0 {
            // Below the lower end (ξ > 0) or above the upper end (ξ < 0).
            return if self.shape > 0.0 { f64::INFINITY } else { 0.0 };
        }
        // base^(−1/ξ) = exp(−ln(base)/ξ), with ln(1 + ξz) computed exactly.
        (-(self.shape * z).ln_1p() / self.shape).exp()
    }

    /// F(x).
    pub fn cdf(&self, x: f64) -> f64 {
        (-self.minus_log_cdf(x)).exp()
    }

    /// ln F(x) (−∞ below the support).
    pub fn ln_cdf(&self, x: f64) -> f64 {
        -self.minus_log_cdf(x)
    }

    /// ln(1 − F(x)), accurate in the upper tail (−∞ above the support).
    pub fn ln_survival(&self, x: f64) -> f64 {
        let t = self.minus_log_cdf(x);
        (-(-t).exp_m1()).ln()
    }

    /// The x with −ln F(x) = `y` (y > 0): μ + σ (y^(−ξ) − 1)/ξ, or
    /// μ − σ ln y for ξ = 0. Small y is the far upper tail.
    pub fn quantile_of_minus_log(&self, y: f64) -> f64 {
        let ln_y = y.ln();
        if self.shape.abs() < GUMBEL_SHAPE {
            return self.location - self.scale * ln_y;
        }
        // (y^(−ξ) − 1)/ξ = expm1(−ξ ln y)/ξ: no cancellation for small ξ.
        self.location + self.scale * (-self.shape * ln_y).exp_m1() / self.shape
    }

    /// The p-quantile, 0 < p < 1.
    pub fn quantile(&self, p: f64) -> f64 {
        self.quantile_of_minus_log(-p.ln())
    }

    /// The upper end point of the support (∞ unless ξ < 0).
    pub fn upper_end(&self) -> f64 {
        if self.shape < -GUMBEL_SHAPE {
            self.location - self.scale / self.shape
        } else {
            f64::INFINITY
        }
    }

    /// The distribution of the maximum of `n` independent draws of this one:
    /// a GEV again, with the same shape (max-stability, Coles Section 3.1.2):
    /// μ_n = μ + σ (n^ξ − 1)/ξ (μ + σ ln n for ξ = 0) and σ_n = σ n^ξ.
    pub fn maximum_of(&self, n: f64) -> Self {
        let ln_n = n.ln();
        let (location, scale) = if self.shape.abs() < GUMBEL_SHAPE {
            (self.location + self.scale * ln_n, self.scale)
        } else {
            (
                self.location + self.scale * (self.shape * ln_n).exp_m1() / self.shape,
                self.scale * (self.shape * ln_n).exp(),
            )
        };
        Self {
            location,
            scale,
            shape: self.shape,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tolerance: f64) -> bool {
        (a - b).abs() <= tolerance * b.abs().max(1.0)
    }

    #[test]
    fn quantile_inverts_the_cdf_for_every_type() {
        for shape in [-0.3, -1e-12, 0.0, 1e-12, 0.2] {
            let d = Gev {
                location: 10.0,
                scale: 2.0,
                shape,
            };
            for p in [1e-6, 0.01, 0.5, 0.99, 1.0 - 1e-9] {
                let x = d.quantile(p);
                assert!(
                    close(d.cdf(x), p, 1e-9),
                    "ξ {shape} p {p}: F({x}) = {}",
                    d.cdf(x)
                );
            }
        }
    }

    #[test]
    fn gumbel_values_by_hand() {
        let d = Gev::gumbel(0.0, 1.0);
        // F(0) = exp(−1); the median is −ln ln 2.
        assert!(close(d.cdf(0.0), (-1.0f64).exp(), 1e-15));
        assert!(close(d.quantile(0.5), -(2.0f64.ln()).ln(), 1e-12));
        // ln(1 − F(x)) ≈ −x far in the tail (1 − F ≈ e^−x).
        assert!(close(d.ln_survival(40.0), -40.0, 1e-12));
    }

    #[test]
    fn supports_end_where_they_should() {
        let weibull = Gev {
            location: 0.0,
            scale: 1.0,
            shape: -0.5,
        };
        assert_eq!(weibull.upper_end(), 2.0);
        assert_eq!(weibull.cdf(2.5), 1.0);
        assert_eq!(weibull.ln_survival(2.5), f64::NEG_INFINITY);
        let frechet = Gev {
            location: 0.0,
            scale: 1.0,
            shape: 0.5,
        };
        assert_eq!(frechet.cdf(-2.5), 0.0);
        assert_eq!(frechet.ln_cdf(-2.5), f64::NEG_INFINITY);
        assert_eq!(frechet.upper_end(), f64::INFINITY);
    }

    #[test]
    fn the_maximum_of_n_draws_has_cdf_f_to_the_n() {
        for shape in [-0.2, 0.0, 0.15] {
            let d = Gev {
                location: 5.0,
                scale: 0.5,
                shape,
            };
            let m = d.maximum_of(20.0);
            assert_eq!(m.shape, shape);
            for x in [4.0, 5.0, 6.0, 7.0] {
                let expected = d.cdf(x).powi(20);
                assert!(close(m.cdf(x), expected, 1e-12), "ξ {shape} x {x}");
            }
        }
    }
}
