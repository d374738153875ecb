//! Planning `tinct bench pipeline`: the tree, the policies, the samples
//! and rounds, the background threads checked, and the CPUs' cache
//! domains read, before anything runs.

use super::tree::Tree;
use super::{FULL_SAMPLES, MAX_BACKGROUND_PER_CPU, Params, QUICK_SAMPLES};
use crate::harness::RunHeader;
use crate::{Error, Result};
use tinct_rt::pipeline::{CacheNeighbours, PlacementPolicy};

/// What a run measures, checked against this machine.
pub struct Plan {
    /// What ran, where (`reps` is the number of rounds).
    pub header: RunHeader,
    /// The tree.
    pub tree: Tree,
    /// Its tasks' names, in node order (waves, then mixers).
    pub task_names: Vec<String>,
    /// The policies, in the order asked.
    pub policies: Vec<PlacementPolicy>,
    /// Rounds: each runs every policy once.
    pub rounds: u32,
    /// Samples of each round (the same per policy; the first rounds take
    /// the remainder).
    pub per_round: Vec<u64>,
    /// The CPUs the tree runs on.
    pub cpus: Vec<u32>,
    /// Their cache domains.
    pub neighbours: CacheNeighbours,
    /// Busy SCHED_OTHER threads beside the tree.
    pub background: u32,
    /// Seed of the rounds' order.
    pub seed: u64,
}

impl crate::harness::Plan for Plan {
    type Params = Params;
    type Measured = super::measure::Measured;

    /// Checks the parameters and resolves the rounds on this machine's CPUs.
    fn plan(params: &Params) -> Result<Plan> {
        let tree = Tree {
            waves: params.waves,
            levels: params.levels,
            packet_bytes: params.packet.0,
            work_ns: params.work.0,
        };
        let task_names: Vec<String> = tree.nodes()?.into_iter().map(|n| n.name).collect();
        if params.policies.is_empty() {
            return Err(Error::option(
                "--policies",
                "at least one of os, affinity, static",
                "none",
            ));
        }
        let samples = params.samples.unwrap_or(if params.common.quick {
            QUICK_SAMPLES
        } else {
            FULL_SAMPLES
        });
        let rounds = params.common.reps_or(2, 5)?;
        if samples < 2 * u64::from(rounds) {
            return Err(Error::option(
                "--samples",
                format!("at least 2 per round ({rounds} rounds)"),
                samples.to_string(),
            ));
        }
        let cpus = params.common.cpus(1)?;
        let most_background = cpus.len().saturating_mul(MAX_BACKGROUND_PER_CPU);
        if params.background as usize > most_background {
            return Err(Error::option(
                "--background",
                format!(
                    "at most {MAX_BACKGROUND_PER_CPU} busy threads per CPU used \
                     ({most_background} on {} CPUs)",
                    cpus.len()
                ),
                params.background.to_string(),
            ));
        }
        let topology = tinct_sys::topology::Topology::read(&tinct_sys::SysRoot::live())?;
        let neighbours = CacheNeighbours::from_topology(&topology, &cpus);
        let header = RunHeader::new("pipeline", &params.common, rounds, cpus.clone());
        // The same samples per policy: the rounds split them, the first rounds
        // taking the remainder.
        let per_round: Vec<u64> = (0..u64::from(rounds))
            .map(|r| samples / u64::from(rounds) + u64::from(r < samples % u64::from(rounds)))
            .collect();
        Ok(Plan {
            header,
            tree,
            task_names,
            policies: params.policies.clone(),
            rounds,
            per_round,
            cpus,
            neighbours,
            background: params.background,
            seed: params.common.seed,
        })
    }

    fn measure(&self, progress: &dyn crate::harness::Progress) -> Result<super::measure::Measured> {
        super::measure::measure(self, progress)
    }
}
