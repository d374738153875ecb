//! The result of a task and partition allocation over all cores, and its
//! conversion back into a task-set file (a plan `tinct analyze` re-checks).

use super::instance::Instance;
use super::mincache::CoreAllocation;
use crate::model::TaskSet;
use crate::partitions::PartitionSet;
use serde::{Deserialize, Serialize};

/// Which allocation algorithm (the baselines BFD and WFD as kim2013
/// Section IV-E compares them). With the feature `cli`, the values of
/// `tinct plan --algorithm`, each variant's doc comment its help.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Algorithm {
    /// Cache-aware task allocation with cache sharing (kim2013 Algorithm 3).
    Cata,
    /// Best-fit decreasing, even partition split, no sharing.
    Bfd,
    /// Worst-fit decreasing, even partition split, no sharing.
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

/// Why a task could not be placed, in one word (the details are in
/// [`Unplaced::refusals`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Reason {
    /// Some core has the memory and the partitions for it, but on none does
    /// Eq. (2) hold for every task with Eq. (1) ≤ 1.
    Time,
    /// On no core can Eq. (3) hold with the task, even with every partition
    /// left: its memory (with that of the core's tasks) does not fit.
    Memory,
    /// On no core are there as many partitions as its C^p table needs
    /// (the first listed p), memory aside.
    Partitions,
    /// Some core's MinCacheAlloc search was cut by its node budget before it
    /// found a feasible allocation: with a larger budget the task might fit.
    Budget,
    /// The plan was stopped (`--timeout`) before the task was placed.
    Timeout,
}

/// Why one core cannot take a task (kim2013 Algorithm 2 found no feasible
/// allocation there), as precisely as it is known.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CoreRefusal {
    /// The core (as numbered in the final assignment).
    pub core: u32,
    /// What failed there.
    #[serde(flatten)]
    pub refusal: Refusal,
}

/// What failed on a core.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Refusal {
    /// Eq. (3) cannot hold on the core with the task, with `partitions`
    /// partitions and any S(i).
    Memory {
        /// The most partitions the core could have had.
        partitions: u32,
    },
    /// Every partition of the budget is reserved for other cores: this one
    /// can have none.
    NoPartitionLeft,
    /// The core can have fewer partitions than the task's C^p table needs.
    Partitions {
        /// The least p of the task's C^p table.
        needed: u32,
        /// The most partitions the core could have had.
        available: u32,
    },
    /// BFD/WFD: the private partitions are taken: the core's tasks and this
    /// one need at least `needed` partitions of their own, the core has
    /// `available`.
    Full {
        /// Σ of the least |S(i)| of the core's tasks and this one.
        needed: u32,
        /// N_P^j.
        available: u32,
        /// Memory alone (the ⌈M_i/(M_total/N_P)⌉ of each) already needs more.
        memory: bool,
    },
    /// Eq. (2): `task` misses its deadline on the core even with every task
    /// at its least C and no cache interference (or, for BFD/WFD, with the
    /// private split of least Eq. (1) utilization).
    Deadline {
        /// The task (index in the task set) whose response time passes D.
        task: usize,
        /// The most partitions the core could have had.
        partitions: u32,
    },
    /// Reservations (`policy = "deadline"`): the EDF test of the core
    /// (processor demand, runtimes, admission) fails: with every task at
    /// its least C and no cache terms, or (BFD/WFD) with the private split
    /// of least Eq. (1) utilization.
    EdfDemand {
        /// The most partitions the core could have had.
        partitions: u32,
    },
    /// Eq. (1) > 1 even with every task at its least C and no cache terms.
    Utilization {
        /// The most partitions the core could have had.
        partitions: u32,
    },
    /// Every task could meet its deadline without cache interference, but
    /// the exhaustive search proved that no sharing of the partitions meets
    /// Eq. (2) with Eq. (1) ≤ 1: the warm-up and preemption delays ω and γ.
    Interference {
        /// The most partitions the core could have had.
        partitions: u32,
    },
    /// The search was cut by its node budget before finding an allocation.
    Budget {
        /// The node budget of one MinCacheAlloc call.
        nodes: u64,
    },
}

impl CoreRefusal {
    /// `refusal` on core `core`.
    pub fn on(core: u32, refusal: Refusal) -> CoreRefusal {
        CoreRefusal { core, refusal }
    }

    /// What failed, in words, without the core number.
    pub fn describe(&self, set: &TaskSet) -> String {
        let name = |i: usize| set.tasks.get(i).map_or("?", |t| t.name.as_str());
        match self.refusal {
            Refusal::Memory { partitions, .. } => {
                format!("memory: Eq. (3) fails with {partitions} partition(s) whatever S(i)")
            }
            Refusal::NoPartitionLeft => {
                "partitions: none left (every partition of the budget is reserved for other cores)"
                    .to_string()
            }
            Refusal::Partitions {
                needed, available, ..
            } => format!(
                "partitions: its C^p table starts at p = {needed}, the core can have {available}"
            ),
            Refusal::Full {
                needed,
                available,
                memory,
                ..
            } => format!(
                "{}: its tasks and this one need {needed} private partitions{}, the core has {available}",
                if memory { "memory" } else { "partitions" },
                if memory {
                    " to hold their memory (Eq. 3)"
                } else {
                    ""
                }
            ),
            Refusal::Deadline {
                task, partitions, ..
            } => format!(
                "Eq. (2): task '{}' misses its deadline with {partitions} partition(s) even without cache interference",
                name(task)
            ),
            Refusal::EdfDemand { partitions } => format!(
                "EDF: the reservations do not fit the core with {partitions} partition(s) \
                 (processor demand, runtimes or admission; `tinct analyze` of a plan names \
                 which)"
            ),
            Refusal::Utilization { partitions, .. } => format!(
                "Eq. (1) > 1 with {partitions} partition(s) even without cache interference"
            ),
            Refusal::Interference { partitions, .. } => format!(
                "Eq. (2)/(1): no sharing of {partitions} partition(s) meets every deadline with utilization ≤ 1 (cache warm-up and preemption delays)"
            ),
            Refusal::Budget { nodes, .. } => {
                format!("search budget exhausted ({nodes} nodes) before an allocation was found")
            }
        }
    }
}

/// A task that found no core.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unplaced {
    /// Index in the task set.
    pub task: usize,
    /// Why, in one word.
    pub reason: Reason,
    /// Why each core refused it (empty for [`Reason::Timeout`]).
    pub refusals: Vec<CoreRefusal>,
}

impl Unplaced {
    /// A task refused by every core for the given reasons; the word is the
    /// one that really decided: the budget if any search was cut, memory
    /// only if every core lacks memory, partitions if every core lacks
    /// memory or partitions, time otherwise.
    pub fn refused(task: usize, refusals: Vec<CoreRefusal>) -> Unplaced {
        let all = |f: fn(&CoreRefusal) -> bool| !refusals.is_empty() && refusals.iter().all(f);
        let reason = if refusals
            .iter()
            .any(|r| matches!(r.refusal, Refusal::Budget { .. }))
        {
            Reason::Budget
        } else if all(|r| {
            matches!(
                r.refusal,
                Refusal::Memory { .. } | Refusal::Full { memory: true, .. }
            )
        }) {
            Reason::Memory
        } else if all(|r| {
            matches!(
                r.refusal,
                Refusal::Memory { .. }
                    | Refusal::NoPartitionLeft
                    | Refusal::Partitions { .. }
                    | Refusal::Full { .. }
            )
        }) {
            Reason::Partitions
        } else {
            Reason::Time
        };
        Unplaced {
            task,
            reason,
            refusals,
        }
    }

    /// A task the plan did not reach before it was stopped.
    pub fn stopped(task: usize) -> Unplaced {
        Unplaced {
            task,
            reason: Reason::Timeout,
            refusals: Vec::new(),
        }
    }

    /// One line: the reason word and each core's refusal (cores with the
    /// same refusal grouped).
    pub fn describe(&self, set: &TaskSet) -> String {
        let name = set.tasks.get(self.task).map_or("?", |t| t.name.as_str());
        let word = match self.reason {
            Reason::Time => "time",
            Reason::Memory => "memory",
            Reason::Partitions => "partitions",
            Reason::Budget => "search budget",
            Reason::Timeout => "timeout",
        };
        if self.reason == Reason::Timeout {
            return format!(
                "task '{name}' could not be placed: timeout — the plan was stopped before this task was tried"
            );
        }
        let mut groups: Vec<(String, Vec<u32>)> = Vec::new();
        for refusal in &self.refusals {
            let text = refusal.describe(set);
            match groups.iter_mut().find(|(t, _)| *t == text) {
                Some((_, cores)) => cores.push(refusal.core),
                None => groups.push((text, vec![refusal.core])),
            }
        }
        let parts: Vec<String> = groups
            .iter()
            .map(|(text, cores)| {
                let list: Vec<String> = cores.iter().map(u32::to_string).collect();
                let label = if cores.len() == 1 { "core" } else { "cores" };
                format!("{label} {}: {text}", list.join(", "))
            })
            .collect();
        format!(
            "task '{name}' could not be placed: {word} — {}",
            parts.join("; ")
        )
    }
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
        // Summed exactly: up to 10 000 memories of up to 2^64 − 1 bytes.
        let used: u128 = self
            .cores
            .iter()
            .flat_map(|c| &c.tasks)
            .map(|&i| u128::from(inst.tasks[i].memory))
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
        let mut order: Vec<usize> = (0..self.cores.len()).collect();
        order.sort_by_key(|&j| first_use(&self.cores[j]));
        let mut new_number = vec![0u32; order.len()];
        for (new, &old) in order.iter().enumerate() {
            new_number[old] = new as u32;
        }
        self.cores = order.iter().map(|&j| self.cores[j].clone()).collect();
        for refusal in self.unplaced.iter_mut().flat_map(|u| &mut u.refusals) {
            if let Some(&to) = new_number.get(refusal.core as usize) {
                refusal.core = to;
            }
        }
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
    /// Priorities are the effective ranks (1 the highest); reservations get
    /// none. Unplaced tasks
    /// keep no core and no partitions.
    pub fn apply(&self, set: &TaskSet, inst: &Instance) -> TaskSet {
        let mut planned = set.clone();
        for (task, alloc) in planned.tasks.iter_mut().zip(&inst.tasks) {
            // A reservation has no priority: EDF orders its jobs.
            task.priority = (!task.is_deadline()).then_some(alloc.rank);
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
