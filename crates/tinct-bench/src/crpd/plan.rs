//! Planning `tinct bench crpd`: the parameters checked, and the CPUs, the
//! cache levels to sweep, the sweep's sizes and the preempter's wipers
//! resolved against this machine, before anything runs.

use super::partner::Wipers;
use super::{CacheKind, CodeOrder, Params, sweep};
use crate::harness::RunHeader;
use crate::harness::machine::MachineCache;
use crate::{Error, Result};
use tinct_sys::jump_chain::Layout;
use tinct_sys::topology::{CacheType, Topology};

/// What a run measures, checked against this machine.
pub struct Plan {
    /// Bench, options, machine, the measuring CPU (its log of counter
    /// totals started).
    pub header: RunHeader,
    /// The CPU of the victim and the preempter.
    pub cpu: u32,
    /// A second CPU, for the no-cache row's thrasher.
    pub other_cpu: Option<u32>,
    /// Samples per condition.
    pub reps: u32,
    /// Seed of every random choice.
    pub seed: u64,
    /// Run under SCHED_OTHER even when SCHED_FIFO is allowed.
    pub no_fifo: bool,
    /// Data or instruction victim.
    pub kind: CacheKind,
    /// Instruction mode: instructions per line of the victim's code.
    pub words_per_line: Vec<u32>,
    /// Instruction mode: the order of its lines.
    pub code_order: CodeOrder,
    /// The levels to sweep.
    pub levels: Vec<MachineCache>,
    /// Bytes each task of the worst-case context switch reads.
    pub switch_wipe_bytes: u64,
    /// The victim's sizes as fractions of each level.
    pub fractions: Vec<f64>,
    /// What the preempter wipes each level with: a data buffer or a chain
    /// of code twice its size.
    pub wipers: Wipers,
    /// Progress steps of the whole run.
    pub progress_steps: u64,
}

impl crate::harness::Plan for Plan {
    type Params = Params;
    type Measured = super::CrpdResult;

    /// Checks the parameters and chooses the levels, sizes and wipers.
    fn plan(params: &Params) -> Result<Plan> {
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
            return Err(Error::option(
                "--words-per-line",
                "only with --cache instruction",
                "--cache data",
            ));
        }
        let max_words = Layout::max_words(64);
        if let Some(bad) = words_per_line.iter().find(|&&k| k == 0 || k > max_words) {
            return Err(Error::option(
                "--words-per-line",
                format!("1 to {max_words} instructions per 64-byte line"),
                bad.to_string(),
            ));
        }
        if params.cache == CacheKind::Instruction && !cfg!(target_arch = "x86_64") {
            return Err(Error::option(
                "--cache instruction",
                "an x86-64 machine (it generates x86-64 machine code)",
                std::env::consts::ARCH,
            ));
        }
        let header = RunHeader::new("crpd", options, reps, vec![cpu]);
        let levels = match params.cache {
            CacheKind::Data => {
                chosen_levels(&header.machine.caches, &params.levels, options.quick)?
            }
            CacheKind::Instruction => instruction_levels(&header.machine.caches, &params.levels)?,
        };
        let llc = header.machine.llc().map_or(8 << 20, |c| c.size_bytes);
        let fractions = sweep_fractions(options.quick);
        let other_cpu = cpus.get(1).copied();
        // Without the wake-ups alone, which measure adds under SCHED_FIFO.
        let progress_steps = u64::from(reps + 1)
            * (2 + u64::from(other_cpu.is_some()) + 2 * (fractions.len() * levels.len()) as u64);
        let wipers = wipers(params.cache, &levels, options.seed);
        Ok(Plan {
            header,
            cpu,
            other_cpu,
            reps,
            seed: options.seed,
            no_fifo: params.no_fifo,
            kind: params.cache,
            words_per_line,
            code_order: params.code_order,
            levels,
            switch_wipe_bytes: (llc * 2).max(4 << 20),
            fractions,
            wipers,
            progress_steps,
        })
    }

    fn measure(&self, progress: &dyn crate::harness::Progress) -> Result<super::CrpdResult> {
        super::measure::measure(self, progress)
    }
}

/// The sweeps' preempter wipes each level: a data buffer or a chain of
/// code twice its size.
fn wipers(kind: CacheKind, levels: &[MachineCache], seed: u64) -> Wipers {
    let line = |c: &MachineCache| u64::from(c.line_bytes.unwrap_or(64)).max(64);
    match kind {
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
                        order: sweep::visiting_order(lines, CodeOrder::Shuffled, seed ^ 0x5eb),
                    }
                })
                .collect(),
        },
    }
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
                caches
                    .iter()
                    .find(|c| c.level == level)
                    .cloned()
                    .ok_or_else(|| {
                        let known: Vec<String> =
                            caches.iter().map(|c| c.level.to_string()).collect();
                        Error::option(
                            "--level",
                            format!(
                                "one of the cache levels of this machine ({})",
                                known.join(", ")
                            ),
                            level.to_string(),
                        )
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
                    Error::option(
                        "--level",
                        "1 (the L1i) or a unified level of this machine",
                        level.to_string(),
                    )
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

#[cfg(test)]
mod tests {
    use super::super::test_l2 as cache;
    use super::*;

    #[test]
    fn levels_are_chosen_and_bad_levels_rejected() {
        let caches = vec![cache()];
        assert_eq!(chosen_levels(&caches, &[], true).unwrap().len(), 1);
        assert_eq!(chosen_levels(&caches, &[2], false).unwrap()[0].name, "L2");
        let err = chosen_levels(&caches, &[7], false).unwrap_err();
        assert!(matches!(err, Error::Input(_)));
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
        let Err(err) = <Plan as crate::harness::Plan>::plan(&params) else {
            panic!("planned words per line for a data victim");
        };
        assert!(err.to_string().contains("--words-per-line"), "{err}");
    }
}
