//! Per-core utilization with cache interference, kim2013 Eq. (1):
//! U = Σ_i (C_i + ω_{i,n} + γ_{i,n}) / T_i ≤ n(2^{1/n} − 1).
//!
//! Each job of τ_i pays its own warm-up ω_{i,n} once and can cause the
//! preemption delay γ_{i,n} to lower-priority tasks once (the technique of
//! Basumallick and Nilsen, with the warm-up delay made explicit).

use super::rta::{CoreTask, utilization_numerators};

/// Eq. (1)'s left-hand side for one core (tasks in priority order). A float,
/// for reporting and for comparing allocations; schedulability verdicts come
/// from the integer response-time test.
///
/// Each numerator C_i + ω_{i,n} + γ_{i,n} is summed exactly (u128) before
/// the division, so no term can wrap.
pub fn core_utilization(tasks: &[CoreTask], refill: u64) -> f64 {
    utilization_numerators(tasks, refill)
        .iter()
        .zip(tasks)
        .map(|(&numerator, t)| numerator as f64 / t.period as f64)
        // From +0.0: an empty core is 0, not the -0.0 an empty f64 sum gives.
        .fold(0.0, |sum, u| sum + u)
}

/// Liu and Layland's bound n(2^{1/n} − 1); 1 for an empty core.
pub fn liu_layland_bound(n: usize) -> f64 {
    if n == 0 {
        return 1.0;
    }
    let n = n as f64;
    n * (2f64.powf(1.0 / n) - 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_core_has_utilization_plus_zero() {
        let u = core_utilization(&[], 1_000);
        assert!(u == 0.0 && u.is_sign_positive(), "{u}");
        assert_eq!(serde_json::to_string(&u).unwrap(), "0.0");
    }
}
