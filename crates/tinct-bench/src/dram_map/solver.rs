//! Finding DRAM address functions from row-buffer conflict timing.
//!
//! Two addresses in the same bank but different rows cannot both keep
//! their row open: accessing them alternately (caches flushed) is slower
//! than for two addresses in different banks (Pessl et al., "DRAMA",
//! USENIX Security 2016, Section 3). The bank index is a set of XOR
//! functions of the physical address; every function `f` gives the same
//! value to two addresses of one bank, so `f · (a ⊕ b) = 0` over GF(2)
//! for every same-bank pair. The functions are therefore the vectors
//! orthogonal to the differences of same-bank addresses: found by linear
//! algebra in polynomial time (as Knock-Knock, Wang et al. 2025, frames
//! it), not by DRAMA's search over bit combinations.
//!
//! Steps, each checked, so the solver refuses rather than guesses:
//!
//! 1. **Threshold.** Random pairs; the latencies must fall in two clusters
//!    (Otsu's split) with a clear gap (separation ≥ `min_separation`
//!    pooled standard deviations) and a slow share that banks can explain.
//!    Otherwise: refused, no timing signal.
//! 2. **Same-bank sets.** A base address against every sampled address;
//!    slow pairs are measured again and kept only if slow twice.
//! 3. **Functions (RANSAC).** Repeatedly, a sample of members spans a
//!    space whose orthogonal complement, within the address bits that vary
//!    in the sample, is a candidate function space; the candidate of the
//!    largest dimension that at least `min_consistency` of all members
//!    agree with wins (a contaminated sample loses functions, an
//!    incomplete one gains spurious ones that members contradict).
//! 4. **Validation.** Fresh pairs: for each function, pairs that the
//!    found functions put in different banks only through that function
//!    must be fast (its confidence = 1 − their slow rate ÷ the slow rate
//!    of pairs predicted in one bank); pairs predicted in one bank must be
//!    slow (else a function is missing). Below `min_confidence`: refused.

use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use tinct_mem::gf2::{Basis, parity};
use tinct_report::stats::median_f64;

/// Times two addresses accessed alternately, caches flushed: one latency
/// (already the median of its repetitions) per call.
pub trait RowConflictTimer {
    /// The latency of addresses `a` and `b` (indices into the solver's
    /// address list), in any unit (cycles, ns).
    fn latency(&mut self, a: usize, b: usize) -> u32;

    /// True once the caller asks the search to stop (Ctrl-C): it ends at
    /// its next measurement boundary, refused as interrupted (a partial
    /// search never gives functions). Default: never.
    fn stop_requested(&self) -> bool {
        false
    }
}

/// The refusal of a search stopped before its end.
pub const INTERRUPTED: &str =
    "interrupted (Ctrl-C) before the search finished: no functions from a partial search";

/// How hard the solver looks and how sure it must be.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SolverOptions {
    /// Random pairs for the threshold.
    pub threshold_pairs: usize,
    /// Same-bank sets (bases) to collect.
    pub sets: usize,
    /// RANSAC samples.
    pub trials: usize,
    /// Fresh pairs per function (and for the same-bank check).
    pub validation_pairs: usize,
    /// Clusters closer than this many pooled standard deviations are no
    /// timing signal.
    pub min_separation: f64,
    /// Share of same-bank members a function space must agree with.
    pub min_consistency: f64,
    /// Confidence every function (and the same-bank check) must reach.
    pub min_confidence: f64,
    /// Seed of the pair and base choices.
    pub seed: u64,
}

impl Default for SolverOptions {
    fn default() -> Self {
        Self {
            threshold_pairs: 3000,
            sets: 8,
            trials: 40,
            validation_pairs: 64,
            min_separation: 4.0,
            min_consistency: 0.95,
            min_confidence: 0.9,
            seed: 1,
        }
    }
}

/// One latency cluster, in robust statistics (interrupts and other
/// tenants add rare, very long latencies that a mean and a standard
/// deviation would follow).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Cluster {
    /// Samples.
    pub count: usize,
    /// Median latency.
    pub mean: f64,
    /// Median absolute deviation × 1.4826 (the standard deviation of a
    /// normal distribution with the same spread).
    pub stddev: f64,
}

/// One function found, with its evidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FoundFunction {
    /// The XOR mask.
    pub mask: u64,
    /// Its address bits, lowest first.
    pub bits: Vec<u32>,
    /// 1 − (slow rate of pairs split by this function alone) ÷ (slow rate
    /// of pairs in one bank), in 0..=1.
    pub confidence: f64,
    /// Pairs measured for it.
    pub pairs: usize,
    /// Of them, slow.
    pub slow: usize,
}

/// What the solver found, or why it refused.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Solution {
    /// True when every check passed: the functions can be used.
    pub found: bool,
    /// Why not, when not.
    pub refusal: Option<String>,
    /// The functions (lightest basis), with their confidence.
    pub functions: Vec<FoundFunction>,
    /// Latency threshold between the clusters.
    pub threshold: u32,
    /// The fast cluster (different banks, or same row).
    pub fast: Cluster,
    /// The slow cluster (same bank, different rows).
    pub slow: Cluster,
    /// Distance of the clusters in pooled standard deviations.
    pub separation: f64,
    /// Members of each same-bank set (confirmed twice).
    pub set_sizes: Vec<usize>,
    /// Address bits that vary among the sampled addresses (the functions
    /// are known only on these).
    pub varying_bits: u64,
    /// Share of same-bank members the functions agree with.
    pub consistency: f64,
    /// Slow rate of fresh pairs the functions put in one bank.
    pub same_bank_slow_rate: f64,
    /// Latency measurements made.
    pub measurements: u64,
}

impl Solution {
    fn refused(self, reason: String) -> Self {
        Self {
            found: false,
            refusal: Some(reason),
            ..self
        }
    }

    /// The functions' masks.
    pub fn masks(&self) -> Vec<u64> {
        self.functions.iter().map(|f| f.mask).collect()
    }
}

/// Counts measurements on the way.
struct Counted<'a> {
    timer: &'a mut dyn RowConflictTimer,
    count: u64,
}

impl Counted<'_> {
    fn latency(&mut self, a: usize, b: usize) -> u32 {
        self.count += 1;
        self.timer.latency(a, b)
    }

    fn stopped(&self) -> bool {
        self.timer.stop_requested()
    }
}

/// Finds the functions behind `addresses` (physical, distinct), timing
/// pairs with `timer`; see the module documentation.
pub fn solve(
    addresses: &[u64],
    timer: &mut dyn RowConflictTimer,
    options: &SolverOptions,
) -> Solution {
    let mut rng = ChaCha8Rng::seed_from_u64(options.seed);
    let mut timer = Counted { timer, count: 0 };
    let varying = addresses
        .iter()
        .fold(0u64, |mask, &a| mask | (a ^ addresses[0]))
        & !0x3f;
    let mut solution = Solution {
        found: false,
        refusal: None,
        functions: Vec::new(),
        threshold: 0,
        fast: Cluster::default(),
        slow: Cluster::default(),
        separation: 0.0,
        set_sizes: Vec::new(),
        varying_bits: varying,
        consistency: 0.0,
        same_bank_slow_rate: 0.0,
        measurements: 0,
    };
    if addresses.len() < 64 {
        return solution.refused(format!(
            "{} addresses: expected at least 64",
            addresses.len()
        ));
    }
    // 1. Threshold.
    let latencies: Vec<u32> = (0..options.threshold_pairs)
        .map_while(|_| {
            let (a, b) = random_pair(&mut rng, addresses.len());
            (!timer.stopped()).then(|| timer.latency(a, b))
        })
        .collect();
    if timer.stopped() {
        solution.measurements = timer.count;
        return solution.refused(INTERRUPTED.into());
    }
    let (threshold, fast, slow) = split_clusters(&latencies);
    // One unit (a cycle) at least: timings can be so quantized that
    // their spread reads as zero.
    let pooled = ((fast.stddev.powi(2) + slow.stddev.powi(2)) / 2.0)
        .sqrt()
        .max(1.0);
    let separation = (slow.mean - fast.mean) / pooled;
    solution.threshold = threshold;
    solution.fast = fast;
    solution.slow = slow;
    solution.separation = separation;
    solution.measurements = timer.count;
    let slow_share = slow.count as f64 / latencies.len().max(1) as f64;
    if separation < options.min_separation || slow.count < 5 || !(0.002..=0.6).contains(&slow_share)
    {
        return solution.refused(format!(
            "no row-conflict timing signal: the latencies do not fall in two clearly separated \
             clusters (separation {separation:.1} standard deviations, expected at least {:.1}; \
             slow share {:.1} %)",
            options.min_separation,
            100.0 * slow_share
        ));
    }
    // 2. Same-bank sets: bases against everything, slow twice.
    let is_slow = |latency: u32| latency > threshold;
    let mut sets: Vec<(usize, Vec<usize>)> = Vec::new();
    let mut classified = vec![false; addresses.len()];
    let mut attempts = 0;
    while sets.len() < options.sets && attempts < options.sets * 4 && !timer.stopped() {
        attempts += 1;
        let unclassified: Vec<usize> = (0..addresses.len()).filter(|&i| !classified[i]).collect();
        let Some(&base) = unclassified.choose(&mut rng) else {
            break;
        };
        classified[base] = true;
        let candidates: Vec<usize> = (0..addresses.len())
            .filter(|&i| i != base && is_slow(timer.latency(base, i)))
            .collect();
        let members: Vec<usize> = candidates
            .into_iter()
            .filter(|&i| is_slow(timer.latency(i, base)))
            .collect();
        for &m in &members {
            classified[m] = true;
        }
        if members.len() >= 4 {
            sets.push((base, members));
        }
    }
    solution.set_sizes = sets.iter().map(|(_, m)| m.len()).collect();
    solution.measurements = timer.count;
    if timer.stopped() {
        return solution.refused(INTERRUPTED.into());
    }
    let differences: Vec<u64> = sets
        .iter()
        .flat_map(|(base, members)| members.iter().map(|&m| addresses[m] ^ addresses[*base]))
        .collect();
    if sets.len() < 2 || differences.len() < 16 {
        return solution.refused(format!(
            "too few same-bank addresses ({} sets of at least 4, {} members): expected more \
             slow pairs",
            sets.len(),
            differences.len()
        ));
    }
    // 3. The largest function space most members agree with.
    let agree = |space: &Basis| {
        differences
            .iter()
            .filter(|&&d| space.vectors().iter().all(|&f| parity(f, d) == 0))
            .count() as f64
            / differences.len() as f64
    };
    let sample_size = (2 * varying.count_ones() as usize + 8).min(differences.len());
    let mut best: Option<(Basis, f64)> = None;
    for trial in 0..options.trials.max(1) {
        let sample: Vec<u64> = if trial == 0 {
            differences.clone()
        } else {
            differences
                .choose_multiple(&mut rng, sample_size)
                .copied()
                .collect()
        };
        let space = Basis::spanning(sample).orthogonal_within(varying);
        if space.rank() > 16 {
            continue;
        }
        let consistency = agree(&space);
        let better = consistency >= options.min_consistency
            && best.as_ref().is_none_or(|(b, c)| {
                space.rank() > b.rank() || (space.rank() == b.rank() && consistency > *c)
            });
        if better {
            best = Some((space, consistency));
        }
    }
    let Some((space, consistency)) = best else {
        return solution.refused(format!(
            "the same-bank sets contradict every function space: no candidate agreed with {:.0} \
             % of the members",
            100.0 * options.min_consistency
        ));
    };
    solution.consistency = consistency;
    if space.rank() == 0 {
        return solution.refused(
            "no function: the same-bank sets share no address parity (noise, or one bank)".into(),
        );
    }
    let masks = space.lightest();
    // 4. Validation on fresh pairs.
    let bank = |address: u64| masks.iter().fold(0u32, |b, &m| b << 1 | parity(m, address));
    let mut same_bank = (0usize, 0usize);
    let mut per_function = vec![(0usize, 0usize); masks.len()];
    let wanted = options.validation_pairs;
    let mut tries = 0;
    while (same_bank.0 < wanted || per_function.iter().any(|p| p.0 < wanted))
        && tries < wanted * 400 * (masks.len() + 1)
        && !timer.stopped()
    {
        tries += 1;
        let (a, b) = random_pair(&mut rng, addresses.len());
        let differs = bank(addresses[a]) ^ bank(addresses[b]);
        let slot = if differs == 0 {
            Some(&mut same_bank)
        } else if differs.is_power_of_two() {
            // Only one function separates them: bit (len - 1 - i) of `bank`.
            let function = masks.len() - 1 - differs.trailing_zeros() as usize;
            Some(&mut per_function[function])
        } else {
            None
        };
        if let Some(slot) = slot
            && slot.0 < wanted
        {
            slot.0 += 1;
            slot.1 += usize::from(is_slow(timer.latency(a, b)));
        }
    }
    solution.measurements = timer.count;
    if timer.stopped() {
        return solution.refused(INTERRUPTED.into());
    }
    let same_rate = same_bank.1 as f64 / same_bank.0.max(1) as f64;
    solution.same_bank_slow_rate = same_rate;
    solution.functions = masks
        .iter()
        .zip(&per_function)
        .map(|(&mask, &(pairs, slow))| {
            let rate = slow as f64 / pairs.max(1) as f64;
            FoundFunction {
                mask,
                bits: (0..64).filter(|b| mask >> b & 1 == 1).collect(),
                confidence: if same_rate > 0.0 && pairs > 0 {
                    (1.0 - rate / same_rate).clamp(0.0, 1.0)
                } else {
                    0.0
                },
                pairs,
                slow,
            }
        })
        .collect();
    if same_rate < options.min_confidence {
        return solution.refused(format!(
            "only {:.0} % of the pairs the functions put in one bank conflict: a function is \
             missing or wrong (expected at least {:.0} %)",
            100.0 * same_rate,
            100.0 * options.min_confidence
        ));
    }
    if let Some(weak) = solution
        .functions
        .iter()
        .find(|f| f.confidence < options.min_confidence || f.pairs < wanted / 2)
    {
        let reason = format!(
            "function {:#x} has confidence {:.2} on {} pairs: expected at least {:.2}",
            weak.mask, weak.confidence, weak.pairs, options.min_confidence
        );
        return solution.refused(reason);
    }
    solution.found = true;
    solution
}

fn random_pair(rng: &mut ChaCha8Rng, n: usize) -> (usize, usize) {
    let a = rng.random_range(0..n);
    let mut b = rng.random_range(0..n - 1);
    if b >= a {
        b += 1;
    }
    (a, b)
}

/// Otsu's split of `latencies` into two clusters: the threshold (the
/// largest latency of the fast cluster) and both clusters' robust
/// statistics. The slowest 0.1 % are clamped to the 99.9th percentile
/// first, so a few huge outliers cannot become a cluster of their own.
pub fn split_clusters(latencies: &[u32]) -> (u32, Cluster, Cluster) {
    let mut sorted = latencies.to_vec();
    sorted.sort_unstable();
    let n = sorted.len();
    if n < 2 {
        return (
            sorted.first().copied().unwrap_or(0),
            robust(&sorted),
            Cluster::default(),
        );
    }
    let cap = sorted[(n - 1) * 999 / 1000];
    let clamped: Vec<u32> = sorted.iter().map(|&x| x.min(cap)).collect();
    let total: f64 = clamped.iter().map(|&x| f64::from(x)).sum();
    let mut left = 0.0;
    let (mut best, mut best_split) = (-1.0, 1);
    for split in 1..n {
        left += f64::from(clamped[split - 1]);
        if clamped[split] == clamped[split - 1] {
            continue;
        }
        let (w0, w1) = (split as f64, (n - split) as f64);
        let (m0, m1) = (left / w0, (total - left) / w1);
        let between = w0 * w1 * (m0 - m1).powi(2);
        if between > best {
            best = between;
            best_split = split;
        }
    }
    (
        sorted[best_split - 1],
        robust(&sorted[..best_split]),
        robust(&sorted[best_split..]),
    )
}

/// Median and scaled median absolute deviation of sorted `values`.
fn robust(values: &[u32]) -> Cluster {
    if values.is_empty() {
        return Cluster::default();
    }
    let as_float: Vec<f64> = values.iter().map(|&v| f64::from(v)).collect();
    let center = median_f64(&as_float).unwrap_or(0.0);
    let deviations: Vec<f64> = as_float.iter().map(|v| (v - center).abs()).collect();
    Cluster {
        count: values.len(),
        mean: center,
        stddev: 1.4826 * median_f64(&deviations).unwrap_or(0.0),
    }
}
