//! A simulated DRAM whose row-buffer timing follows a known mapping: the
//! solver's test bench, and the published mappings it must recover.
//!
//! Two addresses conflict when their bank index (the XOR functions) is
//! equal and their rows differ; the row is the address above `row_shift`.
//! A conflicting pair takes `conflict` cycles, any other `hit`; every
//! single access adds Gaussian noise, an outlier (an interrupt, another
//! tenant) adds `outlier_extra` with probability `outlier_chance`, and a
//! measurement is the median of `repeats` accesses, as the real probe's.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::solver::RowConflictTimer;
use tinct_mem::gf2::parity;
use tinct_report::stats::median_f64;

/// A published mapping, with where it was published.
#[derive(Debug, Clone, Copy)]
pub struct PublishedMapping {
    /// The machine.
    pub machine: &'static str,
    /// The bank (channel, rank, bank group, bank) functions, as address bits.
    pub functions: &'static [&'static [u32]],
    /// The source.
    pub source: &'static str,
}

impl PublishedMapping {
    /// The functions as XOR masks.
    pub fn masks(&self) -> Vec<u64> {
        self.functions
            .iter()
            .map(|bits| bits.iter().fold(0u64, |m, &b| m | 1 << b))
            .collect()
    }
}

/// heechul/drama (Heechul Yun's fork of DRAMA, Pessl et al. 2016),
/// `Found-DRAM-BankMap.md`, functions found on real machines.
const HEECHUL_DRAMA: &str = "heechul/drama, Found-DRAM-BankMap.md (DRAMA, Pessl et al., USENIX \
                             Security 2016, run on the machine named)";

/// Intel and AMD mappings from later reverse-engineering work; the test
/// recovers each exactly.
pub const PUBLISHED: [PublishedMapping; 6] = [
    PublishedMapping {
        machine: "Intel i5-2520M (Sandy Bridge), 2 DIMMs, DDR3",
        functions: &[&[14, 18], &[15, 19], &[16, 20], &[17, 21]],
        source: HEECHUL_DRAMA,
    },
    PublishedMapping {
        machine: "Intel Xeon W3553 (Nehalem), 2 DIMMs",
        functions: &[&[13], &[14], &[16], &[20], &[21]],
        source: HEECHUL_DRAMA,
    },
    PublishedMapping {
        machine: "Intel i5-6200U (Skylake), 8 GB, 4 ranks",
        functions: &[
            &[14, 18],
            &[15, 19],
            &[16, 20],
            &[17, 21],
            &[8, 9, 12, 13, 14, 15],
        ],
        source: HEECHUL_DRAMA,
    },
    PublishedMapping {
        machine: "Intel Xeon E3-1220 v5 (Skylake), 4 DIMMs DDR4",
        functions: &[
            &[7, 14],
            &[15, 19],
            &[16, 20],
            &[17, 21],
            &[18, 22],
            &[8, 9, 12, 13, 15, 18],
        ],
        source: HEECHUL_DRAMA,
    },
    PublishedMapping {
        machine: "Intel Xeon E5-2608L v3 (Haswell-EP), 4 DIMMs DDR4",
        functions: &[
            &[22],
            &[19, 23],
            &[20, 24],
            &[21, 25],
            &[8, 13, 15, 17, 27],
            &[7, 12, 14, 16, 18, 26],
        ],
        source: HEECHUL_DRAMA,
    },
    PublishedMapping {
        machine: "AMD Ryzen 9 9900X (Zen 5), 2 DDR5 DIMMs, 2 ranks each",
        functions: &[
            &[8],
            &[19],
            &[11, 20, 25],
            &[12, 21, 26],
            &[9, 22, 27],
            &[10, 23, 28],
            &[13, 24, 29],
            &[6, 9, 10, 11, 12, 13],
        ],
        source: "heechul/drama, Found-DRAM-BankMap.md (a later revision, AMD Ryzen 9 9900X entry)",
    },
];

/// Timing of a simulated DRAM; see the module documentation.
#[derive(Debug, Clone)]
pub struct SimulatedDram {
    /// The physical addresses the solver samples.
    pub addresses: Vec<u64>,
    functions: Vec<u64>,
    row_shift: u32,
    hit: f64,
    conflict: f64,
    noise: f64,
    outlier_chance: f64,
    outlier_extra: f64,
    repeats: usize,
    /// Pure noise: every pair is one distribution, whatever the addresses.
    unimodal: bool,
    /// Bimodal noise: a pair is slow by chance, whatever the addresses.
    random_slow_share: Option<f64>,
    rng: ChaCha8Rng,
}

impl SimulatedDram {
    /// `samples` random cache-line addresses below `2^address_bits`, timed
    /// by `functions` with rows above `row_shift`, moderately noisy
    /// (3-cycle jitter per access, 1 % outliers of +400 cycles).
    pub fn new(functions: Vec<u64>, address_bits: u32, samples: usize, seed: u64) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut addresses: Vec<u64> = (0..samples)
            .map(|_| rng.random_range(0..1u64 << address_bits) & !0x3f)
            .collect();
        addresses.sort_unstable();
        addresses.dedup();
        Self {
            addresses,
            functions,
            row_shift: 18,
            hit: 220.0,
            conflict: 330.0,
            noise: 12.0,
            outlier_chance: 0.01,
            outlier_extra: 400.0,
            repeats: 5,
            unimodal: false,
            random_slow_share: None,
            rng,
        }
    }

    /// Rows above `shift` (default 18).
    pub fn with_row_shift(mut self, shift: u32) -> Self {
        self.row_shift = shift;
        self
    }

    /// Every pair drawn from one distribution (no signal at all).
    pub fn pure_noise(mut self) -> Self {
        self.unimodal = true;
        self
    }

    /// A share of pairs slow by chance, whatever their addresses (a
    /// bimodal signal that no mapping explains).
    pub fn random_slowness(mut self, share: f64) -> Self {
        self.random_slow_share = Some(share);
        self
    }

    /// Per-access jitter and outliers.
    pub fn with_noise(mut self, jitter: f64, outlier_chance: f64) -> Self {
        self.noise = jitter;
        self.outlier_chance = outlier_chance;
        self
    }

    fn conflicts(&mut self, a: u64, b: u64) -> bool {
        if let Some(share) = self.random_slow_share {
            return self.rng.random_bool(share);
        }
        let same_bank = self.functions.iter().all(|&f| parity(f, a) == parity(f, b));
        same_bank && a >> self.row_shift != b >> self.row_shift
    }

    fn gaussian(&mut self) -> f64 {
        // Box-Muller.
        let u: f64 = self.rng.random_range(f64::EPSILON..1.0);
        let v: f64 = self.rng.random_range(0.0..1.0);
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

impl RowConflictTimer for SimulatedDram {
    fn latency(&mut self, a: usize, b: usize) -> u32 {
        let (a, b) = (self.addresses[a], self.addresses[b]);
        let mean = if self.unimodal {
            (self.hit + self.conflict) / 2.0
        } else if self.conflicts(a, b) {
            self.conflict
        } else {
            self.hit
        };
        let jitter = if self.unimodal { 60.0 } else { self.noise };
        let samples: Vec<f64> = (0..self.repeats)
            .map(|_| {
                let outlier = if self.rng.random_bool(self.outlier_chance) {
                    self.outlier_extra
                } else {
                    0.0
                };
                mean + jitter * self.gaussian() + outlier
            })
            .collect();
        // An odd number of repeats: the median is one of them.
        median_f64(&samples).unwrap_or(0.0).max(0.0) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::super::solver::{INTERRUPTED, SolverOptions, solve};
    use super::*;
    use tinct_mem::gf2::Basis;

    /// Each published Intel and AMD mapping is recovered exactly (the same
    /// space of functions, so the same banks), every function with high
    /// confidence.
    #[test]
    fn every_published_mapping_is_recovered_exactly() {
        for (seed, mapping) in PUBLISHED.iter().enumerate() {
            let truth = mapping.masks();
            let mut dram = SimulatedDram::new(truth.clone(), 34, 2048, seed as u64 + 10);
            let addresses = dram.addresses.clone();
            let solution = solve(&addresses, &mut dram, &SolverOptions::default());
            assert!(
                solution.found,
                "{}: refused: {:?}\n{solution:#?}",
                mapping.machine, solution.refusal
            );
            assert_eq!(
                Basis::spanning(solution.masks()),
                Basis::spanning(truth.clone()),
                "{}: found {:x?}, published {:x?}",
                mapping.machine,
                solution.masks(),
                truth
            );
            assert!(
                solution.functions.iter().all(|f| f.confidence > 0.95),
                "{}: {:?}",
                mapping.machine,
                solution.functions
            );
            // Fast: a few tens of thousands of measurements.
            assert!(solution.measurements < 40_000, "{}", solution.measurements);
        }
    }

    /// A simulated DRAM whose caller asks to stop after `after` timings.
    struct StopsAfter {
        dram: SimulatedDram,
        after: u64,
        timed: u64,
    }

    impl RowConflictTimer for StopsAfter {
        fn latency(&mut self, a: usize, b: usize) -> u32 {
            self.timed += 1;
            self.dram.latency(a, b)
        }

        fn stop_requested(&self) -> bool {
            self.timed >= self.after
        }
    }

    #[test]
    fn a_stopped_search_ends_at_its_next_boundary_and_finds_nothing() {
        let mapping = &PUBLISHED[0];
        let complete = {
            let mut dram = SimulatedDram::new(mapping.masks(), 34, 2048, 10);
            let addresses = dram.addresses.clone();
            solve(&addresses, &mut dram, &SolverOptions::default())
        };
        assert!(complete.found, "{:?}", complete.refusal);
        // In the threshold's pairs, the same-bank sets, and the validation.
        for after in [10, 2_000, complete.measurements - 5] {
            let dram = SimulatedDram::new(mapping.masks(), 34, 2048, 10);
            let addresses = dram.addresses.clone();
            let mut timer = StopsAfter {
                dram,
                after,
                timed: 0,
            };
            let solution = solve(&addresses, &mut timer, &SolverOptions::default());
            assert!(!solution.found, "stopped after {after}: nothing found");
            assert_eq!(solution.refusal.as_deref(), Some(INTERRUPTED));
            assert!(solution.functions.is_empty(), "stopped after {after}");
            // At most one boundary's worth (one base against every address,
            // twice) beyond the stop.
            assert!(
                timer.timed <= after + 2 * addresses.len() as u64,
                "stopped after {after}, timed {}",
                timer.timed
            );
            assert_eq!(solution.measurements, timer.timed);
        }
    }

    #[test]
    fn the_lightest_basis_is_the_published_one_where_it_is_unique() {
        let mapping = &PUBLISHED[0];
        let mut dram = SimulatedDram::new(mapping.masks(), 34, 2048, 3);
        let addresses = dram.addresses.clone();
        let solution = solve(&addresses, &mut dram, &SolverOptions::default());
        let mut found = solution.masks();
        found.sort_unstable();
        let mut truth = mapping.masks();
        truth.sort_unstable();
        assert_eq!(found, truth);
        assert_eq!(solution.functions[0].bits.len(), 2);
    }

    /// Pure noise has no timing signal: refused at the threshold.
    #[test]
    fn pure_noise_is_refused_with_low_confidence() {
        let mut dram = SimulatedDram::new(PUBLISHED[0].masks(), 34, 2048, 5).pure_noise();
        let addresses = dram.addresses.clone();
        let solution = solve(&addresses, &mut dram, &SolverOptions::default());
        assert!(!solution.found);
        assert!(solution.functions.is_empty());
        assert!(
            solution
                .refusal
                .as_deref()
                .unwrap()
                .contains("no row-conflict timing signal"),
            "{:?}",
            solution.refusal
        );
        assert!(solution.separation < 4.0, "{}", solution.separation);
    }

    /// Slowness by chance is bimodal but no mapping explains it: no
    /// function survives, or none with confidence.
    #[test]
    fn random_slowness_is_refused() {
        for share in [0.05, 0.2] {
            let mut dram =
                SimulatedDram::new(PUBLISHED[0].masks(), 34, 2048, 6).random_slowness(share);
            let addresses = dram.addresses.clone();
            let solution = solve(&addresses, &mut dram, &SolverOptions::default());
            assert!(!solution.found, "share {share}: {solution:#?}");
            assert!(
                solution.functions.iter().all(|f| f.confidence < 0.5),
                "share {share}: {:?}",
                solution.functions
            );
        }
    }

    /// More jitter and outliers: still exact, or refused — never wrong.
    #[test]
    fn noisier_timing_is_recovered_or_refused_never_wrong() {
        let mut found = 0;
        for (seed, jitter) in [(20u64, 25.0), (21, 35.0), (22, 60.0), (23, 90.0)] {
            let truth = PUBLISHED[2].masks();
            let mut dram =
                SimulatedDram::new(truth.clone(), 34, 2048, seed).with_noise(jitter, 0.05);
            let addresses = dram.addresses.clone();
            let solution = solve(&addresses, &mut dram, &SolverOptions::default());
            found += usize::from(solution.found);
            if solution.found {
                assert_eq!(
                    Basis::spanning(solution.masks()),
                    Basis::spanning(truth),
                    "jitter {jitter}: a wrong mapping was accepted"
                );
            }
        }
        assert!(
            found >= 1,
            "even moderate jitter with 5 % outliers was refused"
        );
    }
}
