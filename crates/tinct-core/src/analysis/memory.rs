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

impl std::ops::Add for Fraction {
    type Output = Fraction;

    /// self + other, reduced.
    fn add(self, other: Fraction) -> Fraction {
        let g = gcd(self.den, other.den).max(1);
        let den = self.den / g * other.den;
        Fraction::new(
            self.num * (den / self.den) + other.num * (den / other.den),
            den,
        )
    }
}

/// The load of partition `rho`: Σ M_i / |S(i)| over the tasks that use it.
pub fn partition_load(rho: u32, demands: &[MemoryDemand]) -> Fraction {
    demands
        .iter()
        .filter(|d| d.partitions.contains(rho))
        .fold(Fraction::ZERO, |acc, d| {
            acc + Fraction::new(u128::from(d.memory), u128::from(d.partitions.len()))
        })
}

/// Eq. (3) over every partition used by `demands`, against memory
/// partitions of M_total / N_P bytes.
pub fn feasible(demands: &[MemoryDemand], total_memory: u64, partitions: u32) -> bool {
    let used = demands
        .iter()
        .fold(PartitionSet::EMPTY, |acc, d| acc.union(&d.partitions));
    used.iter()
        .all(|rho| fits(partition_load(rho, demands), total_memory, partitions))
}

/// load ≤ M_total / N_P, exactly: load · N_P ≤ M_total.
pub fn fits(load: Fraction, total_memory: u64, partitions: u32) -> bool {
    load.num * u128::from(partitions) <= u128::from(total_memory) * load.den
}
