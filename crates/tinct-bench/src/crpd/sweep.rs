//! One CRPD sweep (Sebek 2002 Figures 9 and 10): for each victim size, a
//! warm pass, a preemption that wipes the level or does nothing, and the
//! timed pass after it, interleaved; then the measured curve beside the
//! theoretical ones.

use super::partner::{Partner, Wipe};
use super::{CacheKind, CodeOrder, CrpdPoint, LevelSweep, theory};
use crate::harness::counters::prefixed;
use crate::harness::machine::MachineCache;
use crate::harness::{ConditionCounters, Durations, Interleaved, Progress};
use crate::pinned_threads::nanos;
use crate::{Error, Result};
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use std::time::Instant;
use tinct_rt::kernels::{Kernel, KernelState};
use tinct_sys::jump_chain::{JumpChain, Layout};

/// What one sweep needs.
pub(super) struct Setup<'a> {
    pub cache: &'a MachineCache,
    pub kind: CacheKind,
    /// The partner's wiper of this level.
    pub wipe_index: usize,
    pub fractions: &'a [f64],
    /// Instruction mode: instructions per line of the victim's code.
    pub words_per_line: &'a [u32],
    /// Instruction mode: the order of its lines.
    pub code_order: CodeOrder,
    pub reps: u32,
    pub seed: u64,
}

/// The victim: something that makes one pass over its working set.
enum Victim {
    Data(KernelState<'static>),
    Code(JumpChain),
}

impl Victim {
    /// One pass; returns the loads (data) or cache lines (code) it made.
    fn pass(&mut self) -> u64 {
        match self {
            Victim::Data(state) => {
                let lines = state.lines() as u64;
                state.memory_steps(lines);
                lines
            }
            Victim::Code(chain) => {
                chain.run(1);
                chain.layout().lines as u64
            }
        }
    }
}

/// Sweeps one level; returns it with the counter totals of its conditions.
pub(super) fn sweep_level(
    partner: &Partner,
    setup: &Setup<'_>,
    progress: &dyn Progress,
) -> Result<(LevelSweep, Vec<ConditionCounters>)> {
    let cache = setup.cache;
    let ways = cache.ways.unwrap_or(0);
    let line = u64::from(cache.line_bytes.unwrap_or(64)).max(64);
    let wipe = match setup.kind {
        CacheKind::Data => Wipe::Data(setup.wipe_index),
        CacheKind::Instruction => Wipe::Code(setup.wipe_index),
    };
    let mut measured = Vec::with_capacity(setup.fractions.len());
    let mut counters = Vec::new();
    for (i, &fraction) in setup.fractions.iter().enumerate() {
        if progress.stop_requested() {
            // Ctrl-C: the fractions measured so far make the sweep.
            break;
        }
        let label = format!("{} {:.1}%", cache.name, fraction * 100.0);
        progress.set_message(&label);
        let size = ((cache.size_bytes as f64 * fraction) as u64 / line).max(1) * line;
        let seed = setup.seed.wrapping_add(i as u64);
        let mut victim = match setup.kind {
            CacheKind::Data => Victim::Data(KernelState::new(
                Kernel::Chase,
                vec![0u64; (size / 8) as usize].into(),
                seed,
            )),
            CacheKind::Instruction => {
                let lines = (size / line) as usize;
                Victim::Code(JumpChain::new(Layout {
                    lines,
                    line_bytes: line as usize,
                    words_per_line: setup.words_per_line.to_vec(),
                    order: visiting_order(lines, setup.code_order, seed),
                })?)
            }
        };
        let mut accesses = 0;
        let samples = Interleaved::new(["baseline", "preempted"], setup.reps)
            .warmup(1)
            .seed(seed)
            .run::<Error>(progress, |c| {
                victim.pass();
                partner.preempt(if c == 1 { wipe } else { Wipe::Nothing })?;
                let start = Instant::now();
                accesses = victim.pass();
                Ok(nanos(start.elapsed()))
            })?;
        if samples.rounds_completed == 0 {
            break; // stopped before this fraction's first round ended
        }
        counters.extend(prefixed(&format!("{label}/"), &samples.counters));
        let none = || Error::Measurement("no CRPD samples".into());
        measured.push(Measured {
            size,
            fraction,
            accesses,
            baseline: samples.stats(0).ok_or_else(none)?,
            preempted: samples.stats(1).ok_or_else(none)?,
        });
    }
    let mut sweep = analyse_sweep(cache, ways, &measured);
    sweep.cache = setup.kind;
    if setup.kind == CacheKind::Instruction {
        let layout = Layout {
            lines: 1,
            line_bytes: line as usize,
            words_per_line: setup.words_per_line.to_vec(),
            order: Vec::new(),
        };
        sweep.words_per_line = Some(setup.words_per_line.to_vec());
        sweep.code_miss_ratio = Some(layout.miss_ratio());
        sweep.code_order = Some(setup.code_order);
    }
    Ok((sweep, counters))
}

/// The order `lines` code lines are visited in: empty (address order) or
/// line 0 followed by the others in a seeded random order.
pub(super) fn visiting_order(lines: usize, order: CodeOrder, seed: u64) -> Vec<u32> {
    match order {
        CodeOrder::Sequential => Vec::new(),
        CodeOrder::Shuffled => {
            let mut rest: Vec<u32> = (1..lines as u32).collect();
            rest.shuffle(&mut ChaCha8Rng::seed_from_u64(seed));
            std::iter::once(0).chain(rest).collect()
        }
    }
}

/// One measured size of a sweep.
#[derive(Debug, Clone)]
pub(super) struct Measured {
    pub size: u64,
    pub fraction: f64,
    /// Loads (data) or lines executed (code) of one pass.
    pub accesses: u64,
    pub baseline: Durations,
    pub preempted: Durations,
}

/// `a − b` of two durations in ns, as a signed difference.
fn difference(a: u64, b: u64) -> i64 {
    let signed = |x: u64| i64::try_from(x).unwrap_or(i64::MAX);
    signed(a).saturating_sub(signed(b))
}

/// Turns the measured points into a [`LevelSweep`] with the theoretical
/// curves beside them.
pub(super) fn analyse_sweep(cache: &MachineCache, ways: u32, measured: &[Measured]) -> LevelSweep {
    let crpd: Vec<i64> = measured
        .iter()
        .map(|m| difference(m.preempted.median, m.baseline.median))
        .collect();
    let bounds: Vec<i64> = measured
        .iter()
        .map(|m| difference(m.preempted.max, m.baseline.min))
        .collect();
    let (peak, &max_crpd) = crpd
        .iter()
        .enumerate()
        .max_by_key(|(_, c)| **c)
        .unwrap_or((0, &0));
    let per_access: Vec<f64> = measured
        .iter()
        .map(|m| m.baseline.median as f64 / m.accesses.max(1) as f64)
        .collect();
    let t_hit = per_access.first().copied().unwrap_or(0.0);
    let t_miss = per_access.last().copied().unwrap_or(0.0);
    let points: Vec<CrpdPoint> = measured
        .iter()
        .zip(crpd.iter().zip(&bounds))
        .zip(&per_access)
        .map(|((m, (&c, &bound)), &t)| CrpdPoint {
            size_bytes: m.size,
            percent_of_level: m.fraction * 100.0,
            baseline: m.baseline,
            preempted: m.preempted,
            crpd_ns: c,
            crpd_bound_ns: bound,
            crpd_fraction: if max_crpd > 0 {
                c as f64 / max_crpd as f64
            } else {
                0.0
            },
            crpd_fraction_theory: theory::crpd_fraction(m.fraction, ways),
            baseline_ns_per_access: t,
            miss_ratio_estimate: (t_miss > t_hit)
                .then(|| ((t - t_hit) / (t_miss - t_hit)).clamp(0.0, 1.0)),
            miss_ratio_theory: theory::miss_ratio(m.fraction, ways),
        })
        .collect();
    let measured_below_10_percent_at = points
        .iter()
        .skip(peak + 1)
        .find(|p| p.crpd_fraction < 0.1)
        .map(|p| p.percent_of_level);
    let n = points.len().max(1) as f64;
    let crpd_mean_abs_error = points
        .iter()
        .map(|p| (p.crpd_fraction - p.crpd_fraction_theory).abs())
        .sum::<f64>()
        / n;
    let estimates: Vec<f64> = points
        .iter()
        .filter_map(|p| {
            p.miss_ratio_estimate
                .map(|e| (e - p.miss_ratio_theory).abs())
        })
        .collect();
    LevelSweep {
        level: cache.name.clone(),
        cache: CacheKind::Data,
        cache_bytes: cache.size_bytes,
        ways,
        wipe_bytes: cache.size_bytes * 2,
        words_per_line: None,
        code_miss_ratio: None,
        code_order: None,
        max_crpd_ns: max_crpd,
        max_crpd_bound_ns: bounds.iter().copied().max().unwrap_or(0),
        max_crpd_at_bytes: points.get(peak).map_or(0, |p| p.size_bytes),
        max_crpd_at_percent: points.get(peak).map_or(0.0, |p| p.percent_of_level),
        theory_zero_percent: theory::crpd_zero_crossing(ways) * 100.0,
        measured_below_10_percent_at,
        crpd_mean_abs_error,
        miss_ratio_mean_abs_error: (!estimates.is_empty())
            .then(|| estimates.iter().sum::<f64>() / estimates.len() as f64),
        points,
    }
}

#[cfg(test)]
mod tests {
    use super::super::{sweep_fractions, test_l2 as cache};
    use super::*;

    #[test]
    fn a_sweep_that_follows_figure7_is_analysed_as_such() {
        // Baseline 1 ns/load inside the cache, 10 ns/load beyond 112.5 %;
        // CRPD proportional to Figure 7 with a maximum of 90 us; every
        // preempted pass within ±1 us of its median.
        let fractions = sweep_fractions(false);
        let measured: Vec<Measured> = fractions
            .iter()
            .map(|&f| {
                let loads = (f * 16384.0) as u64;
                let per = if f <= 1.0 {
                    1.0
                } else {
                    1.0 + 9.0 * theory::miss_ratio(f, 8)
                };
                let base = (per * loads as f64) as u64;
                let crpd = (theory::crpd_fraction(f, 8) * 90_000.0) as u64;
                let spread = |median: u64| {
                    Durations::of(&[median.saturating_sub(1000), median, median + 1000]).unwrap()
                };
                Measured {
                    size: (f * 1048576.0) as u64,
                    fraction: f,
                    accesses: loads,
                    baseline: spread(base),
                    preempted: spread(base + crpd),
                }
            })
            .collect();
        let sweep = analyse_sweep(&cache(), 8, &measured);
        assert_eq!(sweep.max_crpd_ns, 90_000);
        assert_eq!(
            sweep.max_crpd_bound_ns, 92_000,
            "max − min: 1 us either side"
        );
        for p in &sweep.points {
            assert!(
                p.crpd_bound_ns >= p.crpd_ns,
                "a bound is never below the median"
            );
        }
        assert_eq!(sweep.max_crpd_at_percent, 100.0);
        assert_eq!(sweep.theory_zero_percent, 112.5);
        assert_eq!(sweep.measured_below_10_percent_at, Some(112.5));
        assert!(
            sweep.crpd_mean_abs_error < 1e-3,
            "{}",
            sweep.crpd_mean_abs_error
        );
        assert!(sweep.miss_ratio_mean_abs_error.unwrap() < 0.01);
    }
}
