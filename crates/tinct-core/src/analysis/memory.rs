//! Memory feasibility of shared partitions, kim2013 Eq. (3):
//! for every cache partition ρ, Σ_{τ_i : ρ ∈ S(i)} M_i / |S(i)| ≤ M_total / N_P.
//!
//! Under round-robin page placement (kim2013 III-C, Figure 4) a task with
//! |S(i)| partitions takes M_i/|S(i)| of each of them. The sum is compared
//! exactly, as a fraction, never in floating point.

use crate::partitions::PartitionSet;

/// A task's memory demand on the partitions it uses.
#[derive(Copy, Clone, Debug)]
pub struct MemoryDemand {
    /// M_i, bytes.
    pub memory: u64,
    /// S(i).
    pub partitions: PartitionSet,
}

/// An exact non-negative fraction of bytes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Fraction {
    /// Numerator.
    pub num: u128,
    /// Denominator, never zero.
    pub den: u128,
}

fn gcd(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

impl Fraction {
    /// Zero.
    pub const ZERO: Fraction = Fraction { num: 0, den: 1 };

    /// a / b.
    pub fn new(num: u128, den: u128) -> Fraction {
        let g = gcd(num, den).max(1);
        Fraction {
            num: num / g,
            den: den / g,
        }
    }

    /// For reporting only.
    pub fn as_f64(self) -> f64 {
        self.num as f64 / self.den as f64
    }
}

impl Fraction {
    /// self + other, reduced; `None` if the exact sum needs more than 128
    /// bits (a common denominator of many different |S(i)|).
    pub fn checked_add(self, other: Fraction) -> Option<Fraction> {
        let g = gcd(self.den, other.den).max(1);
        let den = (self.den / g).checked_mul(other.den)?;
        let left = self.num.checked_mul(den / self.den)?;
        let right = other.num.checked_mul(den / other.den)?;
        Some(Fraction::new(left.checked_add(right)?, den))
    }
}

/// The load of partition `rho`: Σ M_i / |S(i)| over the tasks that use it,
/// exactly; `None` if the exact sum needs more than 128 bits.
pub fn partition_load(rho: u32, demands: &[MemoryDemand]) -> Option<Fraction> {
    demands
        .iter()
        .filter(|d| d.partitions.contains(rho))
        .try_fold(Fraction::ZERO, |acc, d| {
            acc.checked_add(Fraction::new(
                u128::from(d.memory),
                u128::from(d.partitions.len()),
            ))
        })
}

/// Eq. (3) over every partition used by `demands`, against memory
/// partitions of M_total / N_P bytes. A load that cannot be decided exactly
/// in 128 bits counts as not feasible: that can only reject a feasible
/// allocation, never accept an infeasible one (`tinct analyze` refuses such
/// a file instead, see [`partition_load`]).
pub fn feasible(demands: &[MemoryDemand], total_memory: u64, partitions: u32) -> bool {
    let used = demands
        .iter()
        .fold(PartitionSet::EMPTY, |acc, d| acc.union(&d.partitions));
    used.iter().all(|rho| {
        partition_load(rho, demands)
            .and_then(|load| fits(load, total_memory, partitions))
            .unwrap_or(false)
    })
}

/// load ≤ M_total / N_P, exactly, comparing whole parts first and then the
/// remainders (r_load · N_P ≤ r_M · den); `None` if that product needs more
/// than 128 bits.
pub fn fits(load: Fraction, total_memory: u64, partitions: u32) -> Option<bool> {
    let (n_p, total) = (u128::from(partitions.max(1)), u128::from(total_memory));
    let (whole_load, rest_load) = (load.num / load.den, load.num % load.den);
    let (whole_cap, rest_cap) = (total / n_p, total % n_p);
    if whole_load != whole_cap {
        return Some(whole_load < whole_cap);
    }
    Some(rest_load.checked_mul(n_p)? <= rest_cap.checked_mul(load.den)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fits_is_exact_at_the_boundary() {
        // 3 tasks of 1 MiB on 3 partitions each: load 1 MiB against 1 MiB.
        let load = Fraction::new(3 << 20, 3);
        assert_eq!(fits(load, 32 << 20, 32), Some(true));
        assert_eq!(
            fits(Fraction::new((3 << 20) + 1, 3), 32 << 20, 32),
            Some(false)
        );
        // Capacity with a remainder: 10 B over 3 partitions = 3⅓ B.
        assert_eq!(fits(Fraction::new(10, 3), 10, 3), Some(true));
        assert_eq!(fits(Fraction::new(11, 3), 10, 3), Some(false));
        assert_eq!(fits(Fraction::new(7, 2), 10, 3), Some(false));
    }

    #[test]
    fn sums_that_need_more_than_128_bits_are_refused_not_wrapped() {
        // Denominators 1..=60 have an lcm far above 2^128.
        let mut acc = Some(Fraction::ZERO);
        for s in 1..=60u128 {
            acc = acc.and_then(|a| a.checked_add(Fraction::new(u128::from(u64::MAX), s)));
        }
        assert_eq!(acc, None);
        assert_eq!(
            Fraction::new(1, 2).checked_add(Fraction::new(1, 3)),
            Some(Fraction::new(5, 6))
        );
    }
}
