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

mod measure;
mod partner;
mod plan;
mod report;
mod sweep;
pub mod switch;
pub mod theory;

use crate::Result;
use crate::choice::{Choice, choice_text};
#[cfg(test)]
use crate::harness::machine::MachineCache;
use crate::harness::{BenchOptions, Finished, Progress};
pub use measure::context_switch;
pub use plan::sweep_fractions;
pub use report::{CrpdPoint, CrpdResult, LevelSweep};
use serde::{Deserialize, Serialize};
pub use switch::{NoCacheRow, SwitchCost, SwitchRow};

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
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct Params {
    /// Parameters shared by every bench.
    #[cfg_attr(feature = "cli", command(flatten))]
    pub common: BenchOptions,
    /// Cache level to sweep (1, 2, 3, ...); repeat for several. Default:
    /// every data cache level (with `--quick`: L2, or the LLC if there is no L2).
    #[cfg_attr(feature = "cli", arg(long = "level", value_name = "N"))]
    pub levels: Vec<u8>,
    /// Run under SCHED_OTHER even when SCHED_FIFO is allowed.
    #[cfg_attr(feature = "cli", arg(long))]
    pub no_fifo: bool,
    /// The victim's cache: `data` (a pointer chase) or `instruction`
    /// (generated code with a jump per cache line, as Sebek measured;
    /// x86-64 only). Instruction mode sweeps the L1i unless `--level` says.
    #[cfg_attr(
        feature = "cli",
        arg(long, value_parser = crate::cli::choice::<CacheKind>(), default_value_t)
    )]
    pub cache: CacheKind,
    /// With `--cache instruction`: instructions executed per cache line,
    /// cycling over the lines (1 = every instruction a new line: 100 %
    /// misses; 2 = 50 %; `1,2` = 2 misses in 3). Default 1.
    #[cfg_attr(
        feature = "cli",
        arg(long, value_delimiter = ',', value_name = "K,...")
    )]
    pub words_per_line: Vec<u32>,
    /// With `--cache instruction`: visit the code's lines in a shuffled
    /// order (default; a current core fetches address-ordered code ahead)
    /// or in address order, as on Sebek's MPC750.
    #[cfg_attr(
        feature = "cli",
        arg(long, value_parser = crate::cli::choice::<CodeOrder>(), default_value_t)
    )]
    pub code_order: CodeOrder,
}

/// Runs `tinct bench crpd`: measures, writes the files and returns the
/// result with its summary.
pub fn run(params: &Params, progress: &dyn Progress) -> Result<Finished<CrpdResult>> {
    crate::harness::run::<CrpdResult>(&params.common, params, progress)
}

/// Measures everything (no files written).
pub fn measure(params: &Params, progress: &dyn Progress) -> Result<CrpdResult> {
    crate::harness::bench::measure::<CrpdResult>(params, progress)
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
}
