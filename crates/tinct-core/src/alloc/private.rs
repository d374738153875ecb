//! The per-core partition split of the BFD and WFD baselines (kim2013
//! IV-E): conventional partitioning, every task with partitions of its own.
//!
//! Without sharing every cache term of Eq. (1)-(2) is zero (ω and γ count
//! partitions shared with other tasks), so Eq. (1) is a plain sum of
//! C_i^{s_i}/T_i and Eq. (3) reduces to s_i ≥ ⌈M_i/(M_total/N_P)⌉. The split
//! of least Eq. (1) utilization is then a multiple-choice knapsack over the
//! counts s_i, solved exactly by dynamic programming over "partitions used
//! so far", kept per core and extended by one row per task: deciding
//! whether a task fits costs O(N_P^j) and accepting it O(N_P^j²), so BFD
//! and WFD are polynomial (the exponential sharing search is CATA's alone).
//! The core takes the task if that split also meets Eq. (2) for every task
//! (it is checked with the analysis itself); a split of higher utilization
//! that would meet Eq. (2) where the least one does not is not searched for.

use super::instance::{INFEASIBLE, Instance};
use super::mincache::{CoreAllocation, evaluate};
use crate::partitions::PartitionSet;

/// One core of BFD/WFD: its tasks and the dynamic-programming rows.
#[derive(Clone, Debug)]
pub(crate) struct PrivateCore {
    /// N_P^j.
    pub partitions: u32,
    /// Tasks in the order they were added.
    pub tasks: Vec<usize>,
    /// Σ least |S(i)| over the tasks.
    pub least: u32,
    /// `rows[k][u]`: least Σ C^{s}/T over tasks[..k] using exactly u partitions.
    rows: Vec<Vec<f64>>,
    /// `choices[k][u]`: s of tasks[k] in the split behind `rows[k+1][u]`.
    choices: Vec<Vec<u32>>,
    /// The current feasible allocation.
    pub allocation: CoreAllocation,
}

impl PrivateCore {
    /// An empty core with `partitions` partitions.
    pub(super) fn new(partitions: u32) -> PrivateCore {
        let mut first = vec![f64::INFINITY; partitions as usize + 1];
        first[0] = 0.0;
        PrivateCore {
            partitions,
            tasks: Vec::new(),
            least: 0,
            rows: vec![first],
            choices: Vec::new(),
            allocation: CoreAllocation::empty(partitions),
        }
    }

    /// C^s/T for every s of `task` (∞ where infeasible or below its least).
    fn costs(inst: &Instance, task: usize, partitions: u32) -> Vec<f64> {
        let t = &inst.tasks[task];
        (0..=partitions)
            .map(|s| match t.wcet_at(s) {
                INFEASIBLE => f64::INFINITY,
                _ if s < t.min_partitions => f64::INFINITY,
                c => c as f64 / t.period as f64,
            })
            .collect()
    }

    /// The best s for `task` on top of `row` with `total` partitions in all,
    /// and the utilization: min over s of row[total − s] + C^s/T (the
    /// largest s on a tie: more cache for the newcomer).
    fn best_split(row: &[f64], costs: &[f64], total: u32) -> Option<(u32, f64)> {
        let mut best: Option<(u32, f64)> = None;
        for s in (1..=total).rev() {
            let value = row[(total - s) as usize] + costs[s as usize];
            if value.is_finite() && best.is_none_or(|(_, b)| value < b) {
                best = Some((s, value));
            }
        }
        best
    }

    /// The core's allocation with `task` added, if the least-utilization
    /// private split meets Eq. (2), Eq. (3) and Eq. (1) ≤ 1; `Err` with the
    /// split that fails (for the diagnosis) when it does not.
    pub(super) fn with_task(
        &self,
        inst: &Instance,
        task: usize,
    ) -> Result<CoreAllocation, Option<CoreAllocation>> {
        let need = inst.tasks[task].min_partitions;
        if self.least + need > self.partitions {
            return Err(None);
        }
        let costs = Self::costs(inst, task, self.partitions);
        let last = self.rows.last().expect("row 0 exists");
        let (s, _) = Self::best_split(last, &costs, self.partitions).ok_or(None)?;
        let mut sizes = self.sizes_for(self.partitions - s);
        sizes.push(s);
        let mut tasks = self.tasks.clone();
        tasks.push(task);
        let order = inst.by_priority(&tasks);
        let sets = private_sets(&tasks, &sizes, &order);
        evaluate(inst, &order, sets.clone(), self.partitions, true).ok_or_else(|| {
            Some(CoreAllocation {
                tasks: order.clone(),
                sets,
                partitions: self.partitions,
                utilization: f64::NAN,
            })
        })
    }

    /// Adds `task` with `allocation` (from [`PrivateCore::with_task`]).
    pub(super) fn add(&mut self, inst: &Instance, task: usize, allocation: CoreAllocation) {
        let costs = Self::costs(inst, task, self.partitions);
        let last = self.rows.last().expect("row 0 exists").clone();
        let mut row = vec![f64::INFINITY; self.partitions as usize + 1];
        let mut choice = vec![0; self.partitions as usize + 1];
        for total in 0..=self.partitions {
            if let Some((s, value)) = Self::best_split(&last, &costs, total) {
                row[total as usize] = value;
                choice[total as usize] = s;
            }
        }
        self.rows.push(row);
        self.choices.push(choice);
        self.tasks.push(task);
        self.least += inst.tasks[task].min_partitions;
        self.allocation = allocation;
    }

    /// |S| of each current task (in insertion order) in the least split of
    /// exactly `total` partitions.
    fn sizes_for(&self, total: u32) -> Vec<u32> {
        let mut sizes = vec![0; self.tasks.len()];
        let mut left = total;
        for k in (0..self.tasks.len()).rev() {
            let s = self.choices[k][left as usize];
            sizes[k] = s;
            left -= s;
        }
        sizes
    }
}

/// Consecutive private partitions, in priority order: the highest-priority
/// task gets 1..=s_0, the next the following ones.
fn private_sets(tasks: &[usize], sizes: &[u32], order: &[usize]) -> Vec<PartitionSet> {
    let mut next = 1;
    order
        .iter()
        .map(|i| {
            let k = tasks.iter().position(|t| t == i).expect("member");
            let set = PartitionSet::range(next, next + sizes[k] - 1);
            next += sizes[k];
            set
        })
        .collect()
}
