//! `tinct bench crpd` (Sebek 2002): context-switch cost, best case (an
//! empty task preempting an idle one) and worst case (both tasks larger
//! than the cache, so the switch path itself is evicted); and the
//! cache-related preemption delay (CRPD) of a victim whose working set
//! sweeps 0-200 % of a cache level while a preempting task wipes that
//! level, against the theoretical curves of Sebek's Figures 5 and 7
//! ([`theory`]).
//!
//! CRPD is measured as in Sebek's Figure 9, with a baseline taken in the
//! same run: the victim (a pointer chase over its working set, the
//! tinct-rt `chase` job kernel) makes one warm pass, is preempted, and its
//! next pass is timed. The preempter either wipes the level (reads a
//! buffer twice the level's size) or does nothing; both conditions pay the
//! same two context switches, so the difference of the medians is the
//! cache-related part alone.

mod partner;
mod report;
pub mod theory;

use crate::harness::machine::MachineCache;
use crate::harness::pin::PinGuard;
use crate::harness::{
    BenchOptions, Durations, Finished, Interleaved, OutputDir, Progress, RunHeader,
};
use crate::{Error, Result};
use partner::Partner;
use serde::{Deserialize, Serialize};
use std::time::Instant;
use tinct_rt::kernels::{Kernel, KernelState};

/// SCHED_FIFO priority of the victim and the preempter (both on one CPU,
/// handing the CPU to each other explicitly).
pub const DEFAULT_FIFO_PRIORITY: u8 = 10;

/// Parameters of `tinct bench crpd`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Params {
    /// Parameters shared by every bench.
    pub common: BenchOptions,
    /// Cache levels to sweep (1, 2, 3, ...). Empty: every data cache level
    /// (quick: L2, or the LLC if there is no L2).
    pub levels: Vec<u8>,
    /// Run under SCHED_OTHER even when SCHED_FIFO is allowed.
    pub no_fifo: bool,
}

/// Context-switch cost (Sebek 2002 Table 1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SwitchCost {
    /// Best case: both tasks empty, the switch path warm.
    pub best: Durations,
    /// Worst case: each task reads a buffer of `wipe_bytes` before giving
    /// up the CPU, so the switch path runs from a cold cache.
    pub worst: Durations,
    /// Size of each task's buffer in the worst case (2 × LLC).
    pub wipe_bytes: u64,
}

/// One working-set size of a CRPD sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CrpdPoint {
    /// The victim's working set in bytes.
    pub size_bytes: u64,
    /// The working set as a percentage of the level's capacity.
    pub percent_of_level: f64,
    /// Timed victim pass after an empty preemption.
    pub baseline: Durations,
    /// Timed victim pass after a preemption that wiped the level.
    pub preempted: Durations,
    /// CRPD = median(preempted) − median(baseline), ns (may be slightly
    /// negative where there is none, by noise).
    pub crpd_ns: i64,
    /// CRPD / the sweep's maximum CRPD.
    pub crpd_fraction: f64,
    /// Sebek Figure 7 at this size.
    pub crpd_fraction_theory: f64,
    /// Median ns per load of the baseline pass.
    pub baseline_ns_per_access: f64,
    /// Miss ratio estimated from the baseline latency, (t − t_hit) /
    /// (t_miss − t_hit), with t_hit the smallest size's and t_miss the
    /// largest size's latency (`None` if t_miss ≤ t_hit).
    pub miss_ratio_estimate: Option<f64>,
    /// Sebek Figure 5 at this size.
    pub miss_ratio_theory: f64,
}

/// A CRPD sweep over one cache level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LevelSweep {
    /// `L1d`, `L2`, `L3`.
    pub level: String,
    /// Capacity in bytes.
    pub cache_bytes: u64,
    /// Associativity used for the theoretical curves (0 = fully associative).
    pub ways: u32,
    /// Bytes the preempter reads to wipe the level (2 × capacity).
    pub wipe_bytes: u64,
    /// The sweep.
    pub points: Vec<CrpdPoint>,
    /// The largest CRPD measured, ns.
    pub max_crpd_ns: i64,
    /// Where it was measured, in bytes.
    pub max_crpd_at_bytes: u64,
    /// Where it was measured, in percent of the level.
    pub max_crpd_at_percent: f64,
    /// Where Figure 7 reaches zero again, 100 · (1 + 1/A) percent.
    pub theory_zero_percent: f64,
    /// The first size beyond the maximum where the measured CRPD is below
    /// 10 % of the maximum, in percent of the level (`None` if none).
    pub measured_below_10_percent_at: Option<f64>,
    /// Mean |measured − theory| of the normalized CRPD curve.
    pub crpd_mean_abs_error: f64,
    /// Mean |estimated − theory| of the miss ratio (points with an estimate).
    pub miss_ratio_mean_abs_error: Option<f64>,
}

/// Everything `tinct bench crpd` measured (`crpd.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CrpdResult {
    /// Bench, options, machine.
    #[serde(flatten)]
    pub header: RunHeader,
    /// Scheduling policy of both tasks (`fifo(10)` or `other`).
    pub policy: String,
    /// Context-switch cost.
    pub switch: SwitchCost,
    /// One sweep per level.
    pub levels: Vec<LevelSweep>,
}

/// Runs `tinct bench crpd`: measures, writes the files and returns the
/// result with its summary.
pub fn run(params: &Params, progress: &dyn Progress) -> Result<Finished<CrpdResult>> {
    let result = measure(params, progress)?;
    let mut out = OutputDir::create(params.common.out_dir("crpd"))?;
    report::write(&result, &mut out)?;
    let summary = report::summary(&result, &out);
    Ok(Finished { result, summary })
}

/// Restores SCHED_OTHER on drop.
struct FifoGuard;

impl Drop for FifoGuard {
    fn drop(&mut self) {
        let _ = tinct_sys::sched::set_other();
    }
}

/// Measures everything (no files written).
pub fn measure(params: &Params, progress: &dyn Progress) -> Result<CrpdResult> {
    let options = &params.common;
    let reps = options.reps_or(5, 21)?;
    let cpus = options.cpus(1)?;
    let cpu = cpus[0];
    let _pin = PinGuard::pin(cpu)?;
    let header = RunHeader::new("crpd", options, reps, vec![cpu]);
    let levels = chosen_levels(&header.machine.caches, &params.levels, options.quick)?;
    let llc = header.machine.llc().map_or(8 << 20, |c| c.size_bytes);

    let fifo = (!params.no_fifo && tinct_sys::sched::set_fifo(DEFAULT_FIFO_PRIORITY).is_ok())
        .then_some(DEFAULT_FIFO_PRIORITY);
    let _fifo_guard = fifo.map(|_| FifoGuard);
    let policy = fifo.map_or("other".to_string(), |p| format!("fifo({p})"));

    let switch_wipe = (llc * 2).max(4 << 20);
    let mut wipe_sizes = vec![switch_wipe];
    wipe_sizes.extend(levels.iter().map(|c| c.size_bytes * 2));
    let partner = Partner::start(cpu, &wipe_sizes, fifo)?;

    let fractions = sweep_fractions(options.quick);
    let calls = u64::from(reps + 1) * 2 * (1 + (fractions.len() * levels.len()) as u64);
    progress.start(calls, "crpd");

    progress.set_message("context switch");
    let own_wipe = vec![1u64; (switch_wipe / 8) as usize];
    let switch = measure_switch(&partner, &own_wipe, reps, options.seed, progress)?;
    drop(own_wipe);

    let mut sweeps = Vec::with_capacity(levels.len());
    for (i, cache) in levels.iter().enumerate() {
        sweeps.push(sweep_level(
            &partner,
            cache,
            i + 1,
            &fractions,
            reps,
            options.seed,
            progress,
        )?);
    }
    progress.finish();
    drop(partner);
    Ok(CrpdResult {
        header,
        policy,
        switch,
        levels: sweeps,
    })
}

/// The data cache levels to sweep.
fn chosen_levels(caches: &[MachineCache], asked: &[u8], quick: bool) -> Result<Vec<MachineCache>> {
    if caches.is_empty() {
        return Err(Error::Measurement(
            "the kernel reports no caches (/sys/devices/system/cpu/cpu*/cache): nothing to sweep"
                .into(),
        ));
    }
    if !asked.is_empty() {
        return asked
            .iter()
            .map(|&level| {
                caches.iter().find(|c| c.level == level).cloned().ok_or_else(|| {
                    let known: Vec<String> = caches.iter().map(|c| c.level.to_string()).collect();
                    Error::InvalidInput(format!(
                        "--level: expected one of the cache levels of this machine ({}), found {level}",
                        known.join(", ")
                    ))
                })
            })
            .collect();
    }
    if quick {
        let pick = caches
            .iter()
            .find(|c| c.level == 2)
            .or_else(|| caches.iter().max_by_key(|c| c.level));
        return Ok(pick.into_iter().cloned().collect());
    }
    Ok(caches.to_vec())
}

/// Working-set sizes as fractions of the level: 12.5 % steps up to 200 %
/// (quick: 25, 50, 100, 150, 200 %).
pub fn sweep_fractions(quick: bool) -> Vec<f64> {
    if quick {
        vec![0.25, 0.5, 1.0, 1.5, 2.0]
    } else {
        (1..=16).map(|i| f64::from(i) * 0.125).collect()
    }
}

fn measure_switch(
    partner: &Partner,
    own_wipe: &[u64],
    reps: u32,
    seed: u64,
    progress: &dyn Progress,
) -> Result<SwitchCost> {
    let samples = Interleaved::new(["best", "worst"], reps)
        .warmup(1)
        .seed(seed)
        .run::<Error>(progress, |c| {
            if c == 0 {
                partner.switch(None)
            } else {
                crate::calibrate::stream::read_pass(own_wipe);
                partner.switch(Some(0))
            }
        })?;
    let none = || Error::Measurement("no context-switch samples".into());
    Ok(SwitchCost {
        best: samples.stats(0).ok_or_else(none)?,
        worst: samples.stats(1).ok_or_else(none)?,
        wipe_bytes: (own_wipe.len() * 8) as u64,
    })
}

/// The context-switch cost alone (Sebek 2002 Table 1), measured as
/// [`measure`] does: for callers that need δ without the CRPD sweeps (the
/// machine calibration's overheads). Pins the calling thread to `cpu` and,
/// with `fifo`, runs both threads under SCHED_FIFO (restored on return);
/// returns the cost and the SCHED_FIFO priority it ran at (`None`: the
/// policy could not be set, SCHED_OTHER).
pub fn context_switch(
    cpu: u32,
    llc_bytes: u64,
    reps: u32,
    seed: u64,
    fifo: Option<u8>,
    progress: &dyn Progress,
) -> Result<(SwitchCost, Option<u8>)> {
    let _pin = PinGuard::pin(cpu)?;
    let fifo = fifo.filter(|&p| tinct_sys::sched::set_fifo(p).is_ok());
    let _fifo_guard = fifo.map(|_| FifoGuard);
    let switch_wipe = (llc_bytes * 2).max(4 << 20);
    let partner = Partner::start(cpu, &[switch_wipe], fifo)?;
    let own_wipe = vec![1u64; (switch_wipe / 8) as usize];
    let cost = measure_switch(&partner, &own_wipe, reps, seed, progress)?;
    Ok((cost, fifo))
}

fn sweep_level(
    partner: &Partner,
    cache: &MachineCache,
    wipe_index: usize,
    fractions: &[f64],
    reps: u32,
    seed: u64,
    progress: &dyn Progress,
) -> Result<LevelSweep> {
    let ways = cache.ways.unwrap_or(0);
    let line = u64::from(cache.line_bytes.unwrap_or(64)).max(64);
    let mut measured = Vec::with_capacity(fractions.len());
    for (i, &fraction) in fractions.iter().enumerate() {
        progress.set_message(&format!("{} {:.1}%", cache.name, fraction * 100.0));
        let size = ((cache.size_bytes as f64 * fraction) as u64 / line).max(1) * line;
        let mut victim = KernelState::new(
            Kernel::Chase,
            vec![0u64; (size / 8) as usize].into(),
            seed.wrapping_add(i as u64),
        );
        let lines = victim.lines() as u64;
        let samples = Interleaved::new(["baseline", "preempted"], reps)
            .warmup(1)
            .seed(seed.wrapping_add(i as u64))
            .run::<Error>(progress, |c| {
                victim.memory_steps(lines);
                partner.preempt((c == 1).then_some(wipe_index))?;
                let start = Instant::now();
                victim.memory_steps(lines);
                Ok(start.elapsed().as_nanos() as u64)
            })?;
        let none = || Error::Measurement("no CRPD samples".into());
        measured.push((
            size,
            fraction,
            lines,
            samples.stats(0).ok_or_else(none)?,
            samples.stats(1).ok_or_else(none)?,
        ));
    }
    Ok(analyse_sweep(cache, ways, &measured))
}

/// Turns the measured (size, fraction, loads, baseline, preempted) points
/// into a [`LevelSweep`] with the theoretical curves beside them.
fn analyse_sweep(
    cache: &MachineCache,
    ways: u32,
    measured: &[(u64, f64, u64, Durations, Durations)],
) -> LevelSweep {
    let crpd: Vec<i64> = measured
        .iter()
        .map(|(_, _, _, base, pre)| pre.median as i64 - base.median as i64)
        .collect();
    let (peak, &max_crpd) = crpd
        .iter()
        .enumerate()
        .max_by_key(|(_, c)| **c)
        .unwrap_or((0, &0));
    let per_access: Vec<f64> = measured
        .iter()
        .map(|(_, _, loads, base, _)| base.median as f64 / (*loads).max(1) as f64)
        .collect();
    let t_hit = per_access.first().copied().unwrap_or(0.0);
    let t_miss = per_access.last().copied().unwrap_or(0.0);
    let points: Vec<CrpdPoint> = measured
        .iter()
        .zip(&crpd)
        .zip(&per_access)
        .map(|(((size, fraction, _, base, pre), &c), &t)| CrpdPoint {
            size_bytes: *size,
            percent_of_level: fraction * 100.0,
            baseline: *base,
            preempted: *pre,
            crpd_ns: c,
            crpd_fraction: if max_crpd > 0 {
                c as f64 / max_crpd as f64
            } else {
                0.0
            },
            crpd_fraction_theory: theory::crpd_fraction(*fraction, ways),
            baseline_ns_per_access: t,
            miss_ratio_estimate: (t_miss > t_hit)
                .then(|| ((t - t_hit) / (t_miss - t_hit)).clamp(0.0, 1.0)),
            miss_ratio_theory: theory::miss_ratio(*fraction, ways),
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
        cache_bytes: cache.size_bytes,
        ways,
        wipe_bytes: cache.size_bytes * 2,
        max_crpd_ns: max_crpd,
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
    use super::*;

    fn stats(median: u64) -> Durations {
        Durations::of(&[median]).unwrap()
    }

    fn cache() -> MachineCache {
        MachineCache {
            name: "L2".into(),
            level: 2,
            size_bytes: 1 << 20,
            ways: Some(8),
            line_bytes: Some(64),
            shared_cpus: vec![0],
        }
    }

    #[test]
    fn a_sweep_that_follows_figure7_is_analysed_as_such() {
        // Baseline 1 ns/load inside the cache, 10 ns/load beyond 112.5 %;
        // CRPD proportional to Figure 7 with a maximum of 90 us.
        let fractions = sweep_fractions(false);
        let measured: Vec<_> = fractions
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
                (
                    (f * 1048576.0) as u64,
                    f,
                    loads,
                    stats(base),
                    stats(base + crpd),
                )
            })
            .collect();
        let sweep = analyse_sweep(&cache(), 8, &measured);
        assert_eq!(sweep.max_crpd_ns, 90_000);
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

    #[test]
    fn levels_are_chosen_and_bad_levels_rejected() {
        let caches = vec![cache()];
        assert_eq!(chosen_levels(&caches, &[], true).unwrap().len(), 1);
        assert_eq!(chosen_levels(&caches, &[2], false).unwrap()[0].name, "L2");
        let err = chosen_levels(&caches, &[7], false).unwrap_err();
        assert!(matches!(err, Error::InvalidInput(_)));
        assert!(err.to_string().contains("found 7"));
    }
}
