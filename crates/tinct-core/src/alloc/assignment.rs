//! The result of a task and partition allocation over all cores, and its
//! conversion back into a task-set file (a plan `tinct analyze` re-checks).

use super::instance::Instance;
use super::mincache::CoreAllocation;
use crate::model::TaskSet;
use crate::partitions::PartitionSet;
use serde::Serialize;

/// Which allocation algorithm.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Algorithm {
    /// kim2013 Algorithm 3, cache-aware task allocation with cache sharing.
    Cata,
    /// Best-fit decreasing, partitions split evenly over cores, no sharing (kim2013 IV-E).
    Bfd,
    /// Worst-fit decreasing, partitions split evenly over cores, no sharing (kim2013 IV-E).
    Wfd,
}

impl Algorithm {
    /// All algorithms, in the order the paper's figures list them.
    pub const ALL: [Algorithm; 3] = [Algorithm::Bfd, Algorithm::Wfd, Algorithm::Cata];

    /// The lower-case name used on the command line and in files.
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Cata => "cata",
            Algorithm::Bfd => "bfd",
            Algorithm::Wfd => "wfd",
        }
    }
}

/// Why a task could not be placed.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Reason {
    /// Some core has the memory for it (Eq. 3), but on none does Eq. (2) hold
    /// with Eq. (1) ≤ 1.
    Time,
    /// No core can satisfy Eq. (3) with the task, even with every remaining partition.
    Memory,
}

/// A task that found no core.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Unplaced {
    /// Index in the task set.
    pub task: usize,
    /// Why.
    pub reason: Reason,
}

/// Tasks and partitions assigned to every core.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Assignment {
    /// The algorithm that produced it.
    pub algorithm: Algorithm,
    /// Partitions the algorithm was given (at most N_P).
    pub budget: u32,
    /// One entry per core, 0..N_C: tasks, reserved partitions N_P^j, S(i).
    pub cores: Vec<CoreAllocation>,
    /// Tasks that could not be placed, in the order the algorithm tried them.
    pub unplaced: Vec<Unplaced>,
    /// Every MinCacheAlloc call was proven optimal (no node budget was hit).
    pub exact: bool,
    /// MinCacheAlloc search nodes, summed over all calls.
    pub nodes: u64,
}

impl Assignment {
    /// Every task placed.
    pub fn schedulable(&self) -> bool {
        self.unplaced.is_empty()
    }

    /// Partitions reserved for cores, Σ N_P^j.
    pub fn partitions_used(&self) -> u32 {
        self.cores.iter().map(|c| c.partitions).sum()
    }

    /// Σ of every core's Eq. (1) utilization.
    pub fn total_utilization(&self) -> f64 {
        self.cores.iter().map(|c| c.utilization).sum()
    }

    /// kim2013 IV-E's memory space efficiency: (Σ M_i) / ((M_total/N_P) ·
    /// reserved memory partitions), over the placed tasks.
    pub fn memory_efficiency(&self, inst: &Instance) -> f64 {
        let used: u64 = self
            .cores
            .iter()
            .flat_map(|c| &c.tasks)
            .map(|&i| inst.tasks[i].memory)
            .sum();
        let reserved = inst.total_memory as f64 / f64::from(inst.partitions)
            * f64::from(self.partitions_used());
        if reserved == 0.0 {
            0.0
        } else {
            used as f64 / reserved
        }
    }

    /// Renumbers the cores so that cores with tasks come first, in the order
    /// their first task was placed. Cores are identical, so this only relabels them; it undoes
    /// Algorithm 2's tie-break towards the last core, which would otherwise
    /// put a single-core plan on core N_C − 1.
    pub fn relabel_cores(&mut self, placement_order: &[usize]) {
        let first_use = |core: &CoreAllocation| {
            core.tasks
                .iter()
                .filter_map(|t| placement_order.iter().position(|p| p == t))
                .min()
                .unwrap_or(usize::MAX)
        };
        self.cores.sort_by_key(first_use);
    }

    /// The core of each task (file order), `None` if unplaced.
    pub fn core_of(&self) -> Vec<Option<u32>> {
        let n = self.cores.iter().map(|c| c.tasks.len()).sum::<usize>() + self.unplaced.len();
        let mut cores = vec![None; n];
        for (j, core) in self.cores.iter().enumerate() {
            for &i in &core.tasks {
                cores[i] = Some(j as u32);
            }
        }
        cores
    }

    /// The task set with `core`, `priority` and `partitions` filled in.
    /// Core j's partitions are numbered after those of cores 0..j, so no
    /// partition is shared across cores (cache reservation, kim2013 III-A).
    /// Priorities are the effective ranks (1 the highest). Unplaced tasks
    /// keep no core and no partitions.
    pub fn apply(&self, set: &TaskSet, inst: &Instance) -> TaskSet {
        let mut planned = set.clone();
        for (task, alloc) in planned.tasks.iter_mut().zip(&inst.tasks) {
            task.priority = Some(alloc.rank);
            task.core = None;
            task.partitions = None;
        }
        let mut offset = 0;
        for (j, core) in self.cores.iter().enumerate() {
            for (&i, local) in core.tasks.iter().zip(&core.sets) {
                let global: PartitionSet = local.iter().map(|p| p + offset).collect();
                planned.tasks[i].core = Some(j as u32);
                planned.tasks[i].partitions = Some(global);
            }
            offset += core.partitions;
        }
        planned
    }
}
