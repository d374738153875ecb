//! Pipelines at run time: a task set's affinity graph (`[[edge]]`,
//! data-triggered tasks) as one-packet buffers between threads, and where
//! the data-triggered tasks run (demarchi Section III).
//!
//! [`PlacementPolicy`] is chosen per run:
//! - `os`: no task is pinned; the kernel chooses (the paper's vanilla);
//! - `affinity`: the paper's task-affinity heuristic done from user space:
//!   at each hand-over the consumer is moved (`sched_setaffinity`) to a CPU
//!   that shares the lowest shared cache level with the CPU its producer
//!   last ran on ([`CacheNeighbours`]), the one with the fewest of the
//!   run's real-time tasks there ([`CacheNeighbours::choose`]); the move's
//!   cost is recorded per job ([`crate::record::Flow::move_ns`]);
//! - `static`: every task pinned to the core its plan gives it (`tinct
//!   plan --placement static` partitions the graph onto cache domains).
//!
//! The runtime side is [`Placement`]: `os` and `static` are settled when
//! the spec is built (no CPUs, or the plan's), `affinity` carries the
//! neighbour table the job loop consults.

use serde::Serialize;
use std::fmt;
use std::str::FromStr;
use tinct_sys::topology::{CacheType, Topology};

/// Where the data-triggered tasks of a pipeline run, chosen per run.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PlacementPolicy {
    /// Nothing pinned: the kernel's choice.
    Os,
    /// Consumers follow their producers' cache (see the module docs).
    Affinity,
    /// Every task pinned to its planned core.
    #[default]
    Static,
}

impl PlacementPolicy {
    /// All policies with their names, in the benchmark's order.
    pub const ALL: [PlacementPolicy; 3] = [
        PlacementPolicy::Os,
        PlacementPolicy::Affinity,
        PlacementPolicy::Static,
    ];

    /// The name used on the command line and in outputs.
    pub fn name(self) -> &'static str {
        match self {
            PlacementPolicy::Os => "os",
            PlacementPolicy::Affinity => "affinity",
            PlacementPolicy::Static => "static",
        }
    }
}

impl fmt::Display for PlacementPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for PlacementPolicy {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        PlacementPolicy::ALL
            .into_iter()
            .find(|p| p.name() == text)
            .ok_or_else(|| format!("expected os, affinity or static, found '{text}'"))
    }
}

/// What the job loop does about placement.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub enum Placement {
    /// Each thread stays where its spec puts it (pinned or not).
    #[default]
    Pinned,
    /// Data-triggered jobs move next to their producer's last CPU.
    Affinity(CacheNeighbours),
}

/// For every CPU, the CPUs that share its lowest shared cache level: the
/// smallest data or unified cache containing the CPU that at least one
/// other usable CPU shares (on a machine whose caches are all private, the
/// CPU alone).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CacheNeighbours {
    /// Indexed by CPU number; empty for a CPU this run may not use.
    pub by_cpu: Vec<Vec<u32>>,
    /// The cache level of each CPU's neighbourhood (0: none shared).
    pub level: Vec<u8>,
}

impl CacheNeighbours {
    /// The neighbourhoods of `topology` restricted to the `allowed` CPUs.
    pub fn from_topology(topology: &Topology, allowed: &[u32]) -> CacheNeighbours {
        let size = allowed.iter().max().map_or(0, |&m| m as usize + 1);
        let mut by_cpu = vec![Vec::new(); size];
        let mut level = vec![0u8; size];
        for &cpu in allowed {
            let mut caches: Vec<_> = topology
                .caches
                .iter()
                .filter(|c| c.kind != CacheType::Instruction && c.shared_cpus.contains(&cpu))
                .collect();
            caches.sort_by_key(|c| c.level);
            let shared = caches.iter().find_map(|c| {
                let usable: Vec<u32> = c
                    .shared_cpus
                    .iter()
                    .copied()
                    .filter(|x| allowed.contains(x))
                    .collect();
                (usable.len() > 1).then_some((c.level, usable))
            });
            let (lvl, cpus) = shared.unwrap_or((0, vec![cpu]));
            by_cpu[cpu as usize] = cpus;
            level[cpu as usize] = lvl;
        }
        CacheNeighbours { by_cpu, level }
    }

    /// The neighbourhood of the live machine for the CPUs this process may use.
    pub fn of_this_machine() -> crate::Result<CacheNeighbours> {
        let topology = Topology::read(&tinct_sys::SysRoot::live())?;
        let allowed = tinct_sys::sched::affinity()?;
        Ok(CacheNeighbours::from_topology(&topology, &allowed))
    }

    /// The CPUs sharing `cpu`'s lowest shared cache level (`cpu` included);
    /// empty for a CPU outside the table.
    pub fn of(&self, cpu: u32) -> &[u32] {
        self.by_cpu.get(cpu as usize).map_or(&[], Vec::as_slice)
    }

    /// The CPU a consumer moves to after a hand-over from a producer that
    /// last ran on `producer_cpu`: among [`CacheNeighbours::of`] it, the one
    /// with the fewest real-time tasks (`tasks_on(cpu)`), ties going to the
    /// producer's CPU itself, then to the lowest number. `None` when the
    /// producer's CPU is outside the table.
    pub fn choose(&self, producer_cpu: u32, tasks_on: impl Fn(u32) -> u32) -> Option<u32> {
        self.of(producer_cpu)
            .iter()
            .copied()
            .min_by_key(|&cpu| (tasks_on(cpu), cpu != producer_cpu, cpu))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::four_cpus_two_l2;

    #[test]
    fn neighbours_are_the_lowest_shared_cache_and_private_caches_are_skipped() {
        let topology = four_cpus_two_l2();
        let n = CacheNeighbours::from_topology(&topology, &[0, 1, 2, 3]);
        assert_eq!(n.of(0), &[0, 1], "L1 is private: the shared L2 decides");
        assert_eq!(n.of(3), &[2, 3]);
        assert_eq!(n.level[2], 2);
        let n = CacheNeighbours::from_topology(&topology, &[0, 2, 3]);
        assert_eq!(
            n.of(0),
            &[0, 2, 3],
            "CPU 1 not usable: the L2 is shared with nobody usable, the L3 is"
        );
        assert_eq!(n.level[0], 3);
        assert!(n.of(1).is_empty(), "not allowed");
    }

    #[test]
    fn the_choice_has_the_fewest_tasks_then_the_producers_cpu() {
        let n = CacheNeighbours::from_topology(&four_cpus_two_l2(), &[0, 1, 2, 3]);
        assert_eq!(n.choose(1, |_| 0), Some(1), "tie: the producer's own CPU");
        assert_eq!(n.choose(1, |c| u32::from(c == 1)), Some(0));
        assert_eq!(n.choose(2, |c| 5 - c), Some(3));
        assert_eq!(n.choose(9, |_| 0), None);
    }

    #[test]
    fn policies_parse_by_name() {
        assert_eq!("affinity".parse(), Ok(PlacementPolicy::Affinity));
        assert!(
            "vanilla"
                .parse::<PlacementPolicy>()
                .unwrap_err()
                .contains("os")
        );
        assert_eq!(PlacementPolicy::Os.to_string(), "os");
    }
}
