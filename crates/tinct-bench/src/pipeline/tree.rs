//! The wave/mixer tree of demarchi Figure 2 as a tinct-rt run: waves
//! produce packets, each level of mixers mixes pairs of packets into one,
//! the last mixer's packets are the samples. Every hand-over goes through
//! a one-packet buffer that a producer waits on while it is full (the
//! paper's mutex/semaphore hand-over: nothing is lost), and every thread
//! runs under SCHED_FIFO at one priority ("all the tasks are assumed to
//! run with real-time priority").

use crate::{Error, Result};
use tinct_core::model::{Kernel, Work};
use tinct_core::units::Nanos;
use tinct_rt::limits::MAX_TIME_NS;
use tinct_rt::pipeline::{CacheNeighbours, Placement, PlacementPolicy};
use tinct_rt::spec::{ChannelSpec, Phase, Policy, RunSpec, Scheduling, Step, TaskSpec};

/// SCHED_FIFO priority of every task of the tree.
pub const FIFO_PRIORITY: u8 = 10;

/// The shape of the tree and the work of each packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tree {
    /// Waves (leaves).
    pub waves: u32,
    /// Levels of mixers: each level mixes pairs of the level below (an odd
    /// one out is passed through its own mixer); the last level must leave
    /// exactly one mixer.
    pub levels: u32,
    /// Bytes of one packet.
    pub packet_bytes: u64,
    /// Computation per packet of a wave and of a mixer (calibrated).
    pub work_ns: u64,
}

/// One task of the tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// `wave0`, ..., `mixer0`, ...
    pub name: String,
    /// The nodes it mixes (empty for a wave).
    pub inputs: Vec<usize>,
}

impl Tree {
    /// The nodes, waves first, then the mixers level by level (the last one
    /// produces the samples). Bad input: no wave, no level, or levels that
    /// do not end in one mixer.
    pub fn nodes(&self) -> Result<Vec<Node>> {
        if self.waves == 0 || self.levels == 0 {
            return Err(Error::option(
                "--waves and --levels",
                "at least 1 each",
                format!("{} waves and {} levels", self.waves, self.levels),
            ));
        }
        // Count before building: a tree beyond the run's thread limit, or
        // a level above the single final mixer, is refused at once.
        let mut width = self.waves as usize;
        let mut tasks = width;
        for level in 0..self.levels {
            if width == 1 && level > 0 {
                return Err(Error::option(
                    "--levels",
                    format!(
                        "at most {level} levels for {} waves (a level above the final mixer \
                         would mix one input)",
                        self.waves
                    ),
                    self.levels.to_string(),
                ));
            }
            width = width.div_ceil(2);
            tasks += width;
            if tasks > tinct_rt::limits::MAX_TASKS {
                return Err(Error::option(
                    "--waves and --levels",
                    format!(
                        "a tree of at most {} tasks (the limit of threads in one run)",
                        tinct_rt::limits::MAX_TASKS
                    ),
                    format!("more with {} waves", self.waves),
                ));
            }
        }
        let mut nodes: Vec<Node> = (0..self.waves)
            .map(|w| Node {
                name: format!("wave{w}"),
                inputs: Vec::new(),
            })
            .collect();
        let mut below: Vec<usize> = (0..nodes.len()).collect();
        let mut mixers = 0;
        for _ in 0..self.levels {
            let mut level = Vec::new();
            for pair in below.chunks(2) {
                nodes.push(Node {
                    name: format!("mixer{mixers}"),
                    inputs: pair.to_vec(),
                });
                mixers += 1;
                level.push(nodes.len() - 1);
            }
            below = level;
        }
        if below.len() != 1 {
            return Err(Error::option(
                "--levels",
                format!(
                    "levels that mix {} waves down to one mixer (at least {})",
                    self.waves,
                    self.waves.next_power_of_two().trailing_zeros().max(1)
                ),
                format!("{} levels ending in {} mixers", self.levels, below.len()),
            ));
        }
        Ok(nodes)
    }

    /// The run of `samples` samples under `policy` on `cpus`: every task
    /// runs exactly `samples` jobs. `static` pins each wave to a CPU by
    /// contiguous blocks of leaves over `cpus` (ordered by cache domain:
    /// neighbouring leaves share a cache) and each mixer to its first
    /// input's CPU, so a subtree stays in one domain; `os` pins nothing;
    /// `affinity` moves mixers next to their producers with `neighbours`.
    pub fn spec(
        &self,
        samples: u64,
        policy: PlacementPolicy,
        cpus: &[u32],
        neighbours: &CacheNeighbours,
    ) -> Result<RunSpec> {
        let nodes = self.nodes()?;
        let by_domain = by_cache_domain(cpus, neighbours);
        let mut cpu_of = vec![0u32; nodes.len()];
        let waves = self.waves as usize;
        for (i, node) in nodes.iter().enumerate() {
            cpu_of[i] = match node.inputs.first() {
                None => by_domain[i * by_domain.len() / waves],
                Some(&first) => cpu_of[first],
            };
        }
        let mut channels = Vec::new();
        let mut tasks = Vec::with_capacity(nodes.len());
        for (i, node) in nodes.iter().enumerate() {
            let mut steps: Vec<Step> = Vec::new();
            for &input in &node.inputs {
                steps.push(Step::Receive {
                    channel: channels.len(),
                });
                channels.push(ChannelSpec {
                    name: format!("{}->{}", nodes[input].name, node.name),
                    bytes: self.packet_bytes,
                    blocking: true,
                });
            }
            steps.push(Step::Kernel {
                kernel: Kernel::Compute,
                memory_percent: 0,
                work: Work::Target(Nanos(self.work_ns)),
            });
            tasks.push((i, steps));
        }
        // Each node sends on the channel its consumer receives from.
        let specs = tasks
            .into_iter()
            .map(|(i, mut steps)| {
                if let Some(channel) = channels
                    .iter()
                    .position(|c| c.name.starts_with(&format!("{}->", nodes[i].name)))
                {
                    steps.push(Step::Send { channel });
                }
                let mut phase = Phase::new("main", Some(samples), steps);
                phase.scheduling = None;
                TaskSpec {
                    cpus: (policy == PlacementPolicy::Static).then(|| vec![cpu_of[i]]),
                    loops: Some(1),
                    ..TaskSpec::new(
                        &nodes[i].name,
                        Scheduling::of(Policy::Fifo(FIFO_PRIORITY)),
                        vec![phase],
                    )
                }
            })
            .collect();
        let mut spec = RunSpec::new(&format!("pipeline ({policy})"), specs, MAX_TIME_NS);
        spec.resources.channels = channels;
        spec.placement = match policy {
            PlacementPolicy::Affinity => Placement::Affinity(neighbours.clone()),
            PlacementPolicy::Os | PlacementPolicy::Static => Placement::Pinned,
        };
        spec.check_limits().map_err(|e| match e {
            tinct_rt::RtError::Input(e) => Error::Input(e),
            other => Error::option(
                "--waves and --levels",
                "a tree tinct-rt can run",
                other.to_string(),
            ),
        })?;
        Ok(spec)
    }
}

/// `cpus` ordered so that CPUs sharing a cache are adjacent.
fn by_cache_domain(cpus: &[u32], neighbours: &CacheNeighbours) -> Vec<u32> {
    let mut ordered: Vec<u32> = Vec::with_capacity(cpus.len());
    for &cpu in cpus {
        if ordered.contains(&cpu) {
            continue;
        }
        ordered.push(cpu);
        for &n in neighbours.of(cpu) {
            if cpus.contains(&n) && !ordered.contains(&n) {
                ordered.push(n);
            }
        }
    }
    ordered
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(waves: u32, levels: u32) -> Tree {
        Tree {
            waves,
            levels,
            packet_bytes: 4096,
            work_ns: 10_000,
        }
    }

    #[test]
    fn four_waves_over_two_levels_is_figure_2() {
        let nodes = tree(4, 2).nodes().unwrap();
        let names: Vec<&str> = nodes.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "wave0", "wave1", "wave2", "wave3", "mixer0", "mixer1", "mixer2"
            ]
        );
        assert_eq!(nodes[4].inputs, [0, 1]);
        assert_eq!(nodes[6].inputs, [4, 5]);
        assert_eq!(tree(3, 2).nodes().unwrap()[4].inputs, [2], "odd one out");
    }

    #[test]
    fn levels_that_do_not_end_in_one_mixer_are_refused() {
        let e = tree(8, 2).nodes().unwrap_err().to_string();
        assert!(
            e.contains("at least 3") && e.contains("ending in 2 mixers"),
            "{e}"
        );
        assert!(tree(0, 1).nodes().is_err());
    }

    #[test]
    fn a_level_above_the_final_mixer_or_a_tree_beyond_the_thread_limit_is_refused_at_once() {
        let e = tree(4, 3).nodes().unwrap_err().to_string();
        assert!(e.contains("at most 2 levels for 4 waves"), "{e}");
        assert!(tree(1, 1).nodes().is_ok(), "one wave, one mixer");
        // Refused by counting, before 100 million nodes are built.
        let e = tree(100_000_000, 27).nodes().unwrap_err().to_string();
        assert!(e.contains("at most 1024 tasks"), "{e}");
        assert!(tree(u32::MAX, 64).nodes().is_err());
    }

    #[test]
    fn static_keeps_subtrees_in_a_cache_domain_and_os_pins_nothing() {
        let topology = tinct_rt::testing::four_cpus_two_l2();
        let cpus = [0, 2, 1, 3];
        let n = CacheNeighbours::from_topology(&topology, &cpus);
        let spec = tree(4, 2)
            .spec(10, PlacementPolicy::Static, &cpus, &n)
            .unwrap();
        let cpu = |name: &str| {
            spec.tasks
                .iter()
                .find(|t| t.name == name)
                .unwrap()
                .cpus
                .clone()
                .unwrap()[0]
        };
        assert_eq!((cpu("wave0"), cpu("wave1"), cpu("mixer0")), (0, 1, 0));
        assert_eq!((cpu("wave2"), cpu("wave3"), cpu("mixer1")), (2, 3, 2));
        assert_eq!(spec.resources.channels.len(), 6);
        assert!(spec.resources.channels.iter().all(|c| c.blocking));
        let mixer2 = &spec.tasks[6].phases[0];
        assert_eq!(mixer2.inputs().count(), 2);
        assert_eq!(mixer2.loops, Some(10));
        assert!(!mixer2.steps.iter().any(|s| matches!(s, Step::Send { .. })));
        let os = tree(4, 2).spec(10, PlacementPolicy::Os, &cpus, &n).unwrap();
        assert!(os.tasks.iter().all(|t| t.cpus.is_none()));
        assert_eq!(os.placement, Placement::Pinned);
    }
}
