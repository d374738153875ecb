//! `tinct bench crpd` (Sebek 2002): the cost of a preemption, split into
//! its interrupt and resume context switches, best case (an empty task
//! preempting an idle one), worst case (both tasks larger than the cache,
//! so the switch path itself is evicted) and the platform's stand-in for
//! the paper's "no cache" row ([`switch`], Table 1); and the cache-related
//! preemption delay (CRPD) of a victim whose size sweeps 0-200 % of a cache
//! level while a preempting task wipes that level, against the theoretical
//! curves of Sebek's Figures 5 and 7 ([`theory`]).
//!
//! Two victims ([`CacheKind`]):
//! - `data` (default): a pointer chase over the working set (the tinct-rt
//!   `chase` job kernel), the preempter reading a buffer twice the level;
//! - `instruction`, as the paper measured it: generated code of a fixed
//!   miss ratio, every cache line starting with a jump to the next
//!   ([`tinct_sys::jump_chain`], Section 3.3), the preempter executing its
//!   own chain twice the level (x86-64 only). The lines are visited in a
//!   shuffled order by default ([`CodeOrder`]): a current core fetches
//!   address-ordered code ahead and hides the misses the MPC750 showed.
//!
//! CRPD is measured as in Sebek's Figure 9, with a baseline taken in the
//! same run: the victim makes one warm pass, is preempted, and its next
//! pass is timed. The preempter either wipes the level or does nothing;
//! both conditions pay the same two context switches, so the difference is
//! the cache-related part alone: the difference of the medians (typical)
//! and, as a safe bound, the slowest preempted pass minus the fastest
//! baseline pass.

mod partner;
mod report;
mod sweep;
pub mod switch;
pub mod theory;

use crate::choice::{Choice, choice_text};
use crate::harness::machine::MachineCache;
use crate::harness::pin::PinGuard;
use crate::harness::{BenchOptions, Durations, Finished, OutputDir, Progress, RunHeader};
use crate::{Error, Result};
use partner::{Partner, Wipers};
use serde::{Deserialize, Serialize};
pub use switch::{NoCacheRow, SwitchCost, SwitchRow};
use tinct_sys::jump_chain::Layout;
use tinct_sys::topology::{CacheType, Topology};

/// SCHED_FIFO priority of the victim and the preempter (both on one CPU,
/// handing the CPU to each other explicitly).
pub const DEFAULT_FIFO_PRIORITY: u8 = 10;

/// Which cache the victim's CRPD is measured in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CacheKind {
    /// A pointer chase over data (data and unified caches).
    #[default]
    Data,
    /// Generated code of a fixed miss ratio (instruction and unified
    /// caches), as sebek2002 measured.
    Instruction,
}

/// The order the victim's code lines are visited in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CodeOrder {
    /// A seeded random order: only the branch target buffer predicts the
    /// next line, and a wiping preemption evicts it with the lines.
    #[default]
    Shuffled,
    /// Address order, as on Sebek's MPC750 (the fetch unit of a current
    /// core streams it ahead and hides most misses).
    Sequential,
}

impl Choice for CacheKind {
    const ALL: &'static [Self] = &[CacheKind::Data, CacheKind::Instruction];

    fn name(self) -> &'static str {
        match self {
            CacheKind::Data => "data",
            CacheKind::Instruction => "instruction",
        }
    }

    fn doc(self) -> &'static str {
        match self {
            CacheKind::Data => "A pointer chase over data",
            CacheKind::Instruction => "Generated code with a jump per cache line",
        }
    }
}
choice_text!(CacheKind);

impl Choice for CodeOrder {
    const ALL: &'static [Self] = &[CodeOrder::Shuffled, CodeOrder::Sequential];

    fn name(self) -> &'static str {
        match self {
            CodeOrder::Shuffled => "shuffled",
            CodeOrder::Sequential => "sequential",
        }
    }

    fn doc(self) -> &'static str {
        match self {
            CodeOrder::Shuffled => "A seeded random order",
            CodeOrder::Sequential => "Address order",
        }
    }
}
choice_text!(CodeOrder);

/// Parameters of `tinct bench crpd`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Params {
    /// Parameters shared by every bench.
    pub common: BenchOptions,
    /// Cache levels to sweep (1, 2, 3, ...). Empty: every data cache level
    /// (quick: L2, or the LLC if there is no L2); in instruction mode the
    /// L1 instruction cache.
    pub levels: Vec<u8>,
    /// Run under SCHED_OTHER even when SCHED_FIFO is allowed.
    pub no_fifo: bool,
    /// The victim: data (a pointer chase) or instruction (generated code).
    pub cache: CacheKind,
    /// Instruction mode: instructions executed per cache line, cycling over
    /// the lines (`[1]`, Sebek's 100 % miss code, when empty).
    pub words_per_line: Vec<u32>,
    /// Instruction mode: the order the code's lines are visited in.
    pub code_order: CodeOrder,
}

/// One working-set size of a CRPD sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CrpdPoint {
    /// The victim's working set (data) or code (instruction) in bytes.
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
    /// Safe bound: max(preempted) − min(baseline), ns.
    pub crpd_bound_ns: i64,
    /// CRPD / the sweep's maximum CRPD.
    pub crpd_fraction: f64,
    /// Sebek Figure 7 at this size.
    pub crpd_fraction_theory: f64,
    /// Median ns per load (data) or per cache line executed (instruction)
    /// of the baseline pass.
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
    /// `L1d`, `L1i`, `L2`, `L3`.
    pub level: String,
    /// Data (chase) or instruction (generated code) victim.
    pub cache: CacheKind,
    /// Capacity in bytes.
    pub cache_bytes: u64,
    /// Associativity used for the theoretical curves (0 = fully associative).
    pub ways: u32,
    /// Bytes the preempter reads or executes to wipe the level (2 × capacity).
    pub wipe_bytes: u64,
    /// Instruction mode: instructions per cache line of the generated code.
    pub words_per_line: Option<Vec<u32>>,
    /// Instruction mode: the code's miss ratio once it outgrows the cache.
    pub code_miss_ratio: Option<f64>,
    /// Instruction mode: the order its lines are visited in.
    pub code_order: Option<CodeOrder>,
    /// The sweep.
    pub points: Vec<CrpdPoint>,
    /// The largest CRPD measured (medians), ns.
    pub max_crpd_ns: i64,
    /// The largest safe bound, ns.
    pub max_crpd_bound_ns: i64,
    /// Where the largest CRPD was measured, in bytes.
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
    /// Bench, options, machine, counter totals per condition.
    #[serde(flatten)]
    pub header: RunHeader,
    /// Scheduling policy of both tasks (`fifo(10)` or `other`).
    pub policy: String,
    /// Context-switch cost (absent when the run was stopped before its
    /// first round ended).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub switch: Option<SwitchCost>,
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
    let words_per_line = if params.words_per_line.is_empty() {
        vec![1]
    } else {
        params.words_per_line.clone()
    };
    if params.cache == CacheKind::Data && !params.words_per_line.is_empty() {
        return Err(Error::InvalidInput(
            "--words-per-line: expected only with --cache instruction".into(),
        ));
    }
    let max_words = Layout::max_words(64);
    if let Some(bad) = words_per_line.iter().find(|&&k| k == 0 || k > max_words) {
        return Err(Error::InvalidInput(format!(
            "--words-per-line: expected 1 to {max_words} instructions per 64-byte line, found {bad}"
        )));
    }
    if params.cache == CacheKind::Instruction && !cfg!(target_arch = "x86_64") {
        return Err(Error::InvalidInput(format!(
            "--cache instruction: generates x86-64 machine code; this machine is {}",
            std::env::consts::ARCH
        )));
    }
    let _pin = PinGuard::pin(cpu)?;
    let mut header = RunHeader::new("crpd", options, reps, vec![cpu]);
    let levels = match params.cache {
        CacheKind::Data => chosen_levels(&header.machine.caches, &params.levels, options.quick)?,
        CacheKind::Instruction => instruction_levels(&header.machine.caches, &params.levels)?,
    };
    let llc = header.machine.llc().map_or(8 << 20, |c| c.size_bytes);

    let fifo = (!params.no_fifo && tinct_sys::sched::set_fifo(DEFAULT_FIFO_PRIORITY).is_ok())
        .then_some(DEFAULT_FIFO_PRIORITY);
    let _fifo_guard = fifo.map(|_| FifoGuard);
    let policy = fifo.map_or("other".to_string(), |p| format!("fifo({p})"));

    let fractions = sweep_fractions(options.quick);
    let other_cpu = cpus.get(1).copied();
    let calls = u64::from(reps + 1)
        * (2 + u64::from(other_cpu.is_some()) + 2 * (fractions.len() * levels.len()) as u64);
    progress.start(calls, "crpd");

    progress.set_message("context switch");
    let (switch, switch_counters) = switch::measure(
        &switch::Setup {
            cpu,
            other_cpu,
            fifo,
            reps,
            seed: options.seed,
            wipe_bytes: (llc * 2).max(4 << 20),
        },
        progress,
    )?;
    header.counters.extend(switch_counters);
    if switch.is_none() {
        // Stopped before the first round ended: the header alone.
        progress.finish();
        header.record_rounds(true);
        return Ok(CrpdResult {
            header,
            policy,
            switch,
            levels: Vec::new(),
        });
    }

    // The sweeps' preempter wipes each level: a data buffer or a chain of
    // code twice its size.
    let line = |c: &MachineCache| u64::from(c.line_bytes.unwrap_or(64)).max(64);
    let wipers = match params.cache {
        CacheKind::Data => Wipers {
            data_bytes: levels.iter().map(|c| c.size_bytes * 2).collect(),
            chains: Vec::new(),
        },
        CacheKind::Instruction => Wipers {
            data_bytes: Vec::new(),
            chains: levels
                .iter()
                .map(|c| {
                    let lines = (c.size_bytes * 2 / line(c)) as usize;
                    Layout {
                        lines,
                        line_bytes: line(c) as usize,
                        words_per_line: vec![1],
                        order: sweep::visiting_order(
                            lines,
                            CodeOrder::Shuffled,
                            options.seed ^ 0x5eb,
                        ),
                    }
                })
                .collect(),
        },
    };
    let partner = Partner::start(cpu, &wipers, fifo)?;
    let mut sweeps = Vec::with_capacity(levels.len());
    for (i, cache) in levels.iter().enumerate() {
        if progress.stop_requested() {
            break; // Ctrl-C: the levels swept so far are the result
        }
        let setup = sweep::Setup {
            cache,
            kind: params.cache,
            wipe_index: i,
            fractions: &fractions,
            words_per_line: &words_per_line,
            code_order: params.code_order,
            reps,
            seed: options.seed,
        };
        let (sweep, counters) = sweep::sweep_level(&partner, &setup, progress)?;
        if sweep.points.is_empty() {
            break; // stopped before its first fraction's first round ended
        }
        sweeps.push(sweep);
        header.counters.extend(counters);
    }
    progress.finish();
    drop(partner);
    header.record_rounds(progress.stop_requested());
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

/// The levels an instruction victim is swept over: the L1 instruction
/// cache by default; `--level 1` is the L1i, higher levels the unified ones.
fn instruction_levels(caches: &[MachineCache], asked: &[u8]) -> Result<Vec<MachineCache>> {
    let topology = Topology::read(&tinct_sys::SysRoot::live())?;
    let l1i = topology
        .caches
        .iter()
        .find(|c| c.kind == CacheType::Instruction && c.level == 1)
        .map(|c| MachineCache {
            name: "L1i".into(),
            level: 1,
            size_bytes: c.size_bytes,
            ways: c.ways,
            line_bytes: c.line_bytes,
            shared_cpus: c.shared_cpus.clone(),
        });
    let asked = if asked.is_empty() { &[1][..] } else { asked };
    asked
        .iter()
        .map(|&level| match level {
            1 => l1i.clone().ok_or_else(|| {
                Error::Measurement(
                    "the kernel reports no L1 instruction cache: nothing to sweep".into(),
                )
            }),
            _ => caches
                .iter()
                .find(|c| c.level == level && c.level > 1)
                .cloned()
                .ok_or_else(|| {
                    Error::InvalidInput(format!(
                        "--level: expected 1 (the L1i) or a unified level of this machine, found {level}"
                    ))
                }),
        })
        .collect()
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

/// The context-switch cost alone (Sebek 2002 Table 1), measured as
/// [`measure`] does: for callers that need δ without the CRPD sweeps (the
/// machine calibration's overheads). Pins the calling thread to `cpu` and,
/// with `fifo`, runs it under SCHED_FIFO (restored on return) with the
/// preempting task one level above; returns the cost and the SCHED_FIFO
/// priority it ran at (`None`: the policy could not be set, SCHED_OTHER).
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
    let setup = switch::Setup {
        cpu,
        other_cpu: None,
        fifo,
        reps,
        seed,
        wipe_bytes: llc_bytes.saturating_mul(2).max(4 << 20),
    };
    let (cost, _counters) = switch::measure(&setup, progress)?;
    let cost = cost.ok_or_else(|| {
        Error::Measurement("no context-switch samples: stopped before the first round".into())
    })?;
    Ok((cost, fifo))
}

/// A 1 MiB 8-way L2 with 64-byte lines, for the tests of this bench.
#[cfg(test)]
fn test_l2() -> MachineCache {
    MachineCache {
        name: "L2".into(),
        level: 2,
        size_bytes: 1 << 20,
        ways: Some(8),
        line_bytes: Some(64),
        shared_cpus: vec![0],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache() -> MachineCache {
        test_l2()
    }

    #[test]
    fn choice_names_are_the_json_names() {
        for &kind in CacheKind::ALL {
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.name());
            assert_eq!(kind.name().parse::<CacheKind>(), Ok(kind));
        }
        for &order in CodeOrder::ALL {
            assert_eq!(serde_json::to_value(order).unwrap(), order.name());
            assert_eq!(order.name().parse::<CodeOrder>(), Ok(order));
        }
    }

    #[test]
    fn levels_are_chosen_and_bad_levels_rejected() {
        let caches = vec![cache()];
        assert_eq!(chosen_levels(&caches, &[], true).unwrap().len(), 1);
        assert_eq!(chosen_levels(&caches, &[2], false).unwrap()[0].name, "L2");
        let err = chosen_levels(&caches, &[7], false).unwrap_err();
        assert!(matches!(err, Error::InvalidInput(_)));
        assert!(err.to_string().contains("found 7"));
        let err = instruction_levels(&caches, &[3]).unwrap_err();
        assert!(err.to_string().contains("found 3"), "{err}");
        assert_eq!(instruction_levels(&caches, &[2]).unwrap()[0].name, "L2");
    }

    #[test]
    fn words_per_line_need_the_instruction_cache() {
        let params = Params {
            words_per_line: vec![2],
            ..Params::default()
        };
        let err = measure(&params, &crate::harness::NoProgress).unwrap_err();
        assert!(err.to_string().contains("--words-per-line"), "{err}");
    }
}
