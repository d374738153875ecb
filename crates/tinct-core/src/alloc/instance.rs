//! The numbers the allocation algorithms need, prepared once per task set:
//! dense C^p tables, minimum partition counts and priority ranks, and the
//! per-job terms the analysis adds (declared jitter, explicit blocking,
//! overheads).

use crate::analysis::deadline::{
    EdfCoreContext, ReservationParams, release_jitter, reservations_as_interference,
    reservations_fit,
};
use crate::analysis::edf::Interrupt;
use crate::analysis::rta::{CoreTask, core_schedulable};
use crate::model::TaskSet;
use crate::partitions::PartitionSet;

/// C^p marker for a p the task cannot run with (below its first listed p).
pub const INFEASIBLE: u64 = u64::MAX;

/// One task as the allocation algorithms see it.
#[derive(Clone, Debug, PartialEq)]
pub struct AllocTask {
    /// `wcet[p]` = C^p in ns for p in 0..=N_P ([`INFEASIBLE`] where undefined, always at p = 0).
    pub wcet: Vec<u64>,
    /// T_i, ns.
    pub period: u64,
    /// D_i, ns.
    pub deadline: u64,
    /// M_i, bytes.
    pub memory: u64,
    /// The least |S(i)|: the first listed p of C^p and ⌈M_i / (M_total/N_P)⌉, at least 1.
    pub min_partitions: u32,
    /// Effective priority rank (1 is the highest), unique within the set.
    pub rank: u32,
    /// J_i: declared jitter plus the platform's release latency, ns (the
    /// jitter a data-triggered task inherits is not known before placement:
    /// the analysis of the planned set adds it).
    pub jitter: u64,
    /// The jitter of the task's release timer, as the EDF test of a core
    /// with reservations charges the interrupt
    /// ([`crate::analysis::deadline::release_jitter`]: J and, for a
    /// data-triggered task, its producers' largest deadline), ns.
    pub release_jitter: u64,
    /// B_i when the task gives it explicitly, else 0, ns.
    pub blocking: u64,
    /// 2δ per job, ns.
    pub overhead: u64,
    /// ε, the timer interrupt of each release, ns.
    pub interrupt: u64,
    /// A reservation's `runtime` from the file (`None`: the runtime a job
    /// needs, as the analysis derives it).
    pub runtime: Option<u64>,
    /// A SCHED_DEADLINE reservation (tested with the EDF demand test),
    /// else a SCHED_FIFO task (Eq. 2, below the core's reservations).
    pub reservation: bool,
}

impl AllocTask {
    /// C^p, or [`INFEASIBLE`].
    pub fn wcet_at(&self, p: u32) -> u64 {
        self.wcet.get(p as usize).copied().unwrap_or(INFEASIBLE)
    }

    /// The task's average utilization over p = 1..=N_P, the sort key of
    /// kim2013 Algorithm 3 line 1: (Σ_p C^p / N_P) / T. A p below the first
    /// listed one counts with the worst listed value.
    pub fn average_utilization(&self) -> f64 {
        let n_p = self.wcet.len().saturating_sub(1).max(1);
        let worst = self.wcet_at(self.min_partitions.min(n_p as u32));
        let sum: f64 = (1..=n_p)
            .map(|p| match self.wcet[p] {
                INFEASIBLE => worst as f64,
                c => c as f64,
            })
            .sum();
        sum / n_p as f64 / self.period as f64
    }

    /// The task with C = `wcet` and S = `partitions` as the per-core
    /// analysis takes it.
    pub fn core_task(&self, wcet: u64, partitions: PartitionSet) -> CoreTask {
        CoreTask {
            jitter: self.jitter,
            blocking: self.blocking,
            overhead: self.overhead,
            interrupt: self.interrupt,
            ..CoreTask::new(wcet, self.period, self.deadline, partitions)
        }
    }
}

/// A task set prepared for allocation.
#[derive(Clone, Debug, PartialEq)]
pub struct Instance {
    /// Tasks in file order.
    pub tasks: Vec<AllocTask>,
    /// N_C.
    pub cores: u32,
    /// N_P: the platform's partitions (also fixes the memory-partition size).
    pub partitions: u32,
    /// M_total, bytes.
    pub total_memory: u64,
    /// Δ, ns.
    pub refill: u64,
    /// The scheduler tick as a top-priority task, when it is charged.
    pub tick: Option<CoreTask>,
    /// δ, ns (the EDF test charges a switch back in per resumption).
    pub context_switch: u64,
    /// ε, the cost of one timer interrupt (a release, the tick, an
    /// inactive timer), ns.
    pub interrupt: u64,
}

impl Instance {
    /// Prepares `set`; existing `core` and `partitions` fields are ignored.
    pub fn new(set: &TaskSet) -> Instance {
        let platform = &set.platform;
        let overheads = &platform.overheads;
        let ranks = if set.tasks.iter().any(|t| t.is_deadline()) {
            reservations_first_ranks(set)
        } else {
            set.ranks()
        };
        let tasks = set
            .tasks
            .iter()
            .zip(ranks)
            .enumerate()
            .map(|(index, (task, rank))| {
                let wcet: Vec<u64> = (0..=platform.partitions)
                    .map(|p| {
                        if p == 0 {
                            INFEASIBLE
                        } else {
                            task.wcet.at(p).map_or(INFEASIBLE, |c| c.0)
                        }
                    })
                    .collect();
                let memory_min = platform.min_partitions_for(task.memory);
                AllocTask {
                    wcet,
                    period: task.period.0,
                    deadline: task.deadline.0,
                    memory: task.memory.0,
                    min_partitions: task.wcet.first_p().max(memory_min).max(1),
                    rank,
                    jitter: task.jitter.0.saturating_add(overheads.release_latency.0),
                    release_jitter: release_jitter(set, index),
                    blocking: task.blocking.map_or(0, |b| b.0),
                    overhead: overheads.context_switch.0.saturating_mul(2),
                    interrupt: overheads.tick.0,
                    runtime: task.runtime.map(|q| q.0),
                    reservation: task.is_deadline(),
                }
            })
            .collect();
        Instance {
            tasks,
            cores: platform.cores,
            partitions: platform.partitions,
            total_memory: platform.memory.0,
            refill: platform.refill.0,
            tick: overheads
                .tick_period
                .map(|period| CoreTask::scheduler_tick(overheads.tick.0, period.0)),
            context_switch: overheads.context_switch.0,
            interrupt: overheads.tick.0,
        }
    }

    /// Whether a core with `tasks` (its tick first, when charged, then the
    /// tasks `order` names, in rank order) and refill time `refill` is
    /// schedulable, as `tinct analyze` decides it: its SCHED_DEADLINE
    /// reservations by the EDF test (the tick, each release and each
    /// inactive timer as interrupts; a file's `runtime` where it gives
    /// one), then its SCHED_FIFO tasks by Eq. (2) below them
    /// ([`Instance::fixed_priority_core`]). Adding a task of a lower rank
    /// never makes a `false` here `true` (a reservation ranks above every
    /// SCHED_FIFO task, and one more task only adds demand, interrupts and
    /// evictions): the pruning of the searches.
    pub fn schedulable(&self, tasks: &[CoreTask], order: &[usize], refill: u64) -> bool {
        if !self.has_reservations(order) {
            return core_schedulable(tasks, refill);
        }
        let side = self.edf_side(tasks, order);
        if !self.fits(&side, refill) {
            return false;
        }
        order.iter().all(|&i| self.tasks[i].reservation)
            || core_schedulable(&self.below(&side, tasks, order, true).0, refill)
    }

    /// Whether any task `order` names is a reservation.
    pub fn has_reservations(&self, order: &[usize]) -> bool {
        order.iter().any(|&i| self.tasks[i].reservation)
    }

    /// Whether the reservations among the core's tasks (`tasks` and
    /// `order` as [`Instance::schedulable`] takes them) pass the EDF test
    /// ([`reservations_fit`], beside the core's SCHED_FIFO tasks).
    pub fn reservations_fit(&self, tasks: &[CoreTask], order: &[usize], refill: u64) -> bool {
        self.fits(&self.edf_side(tasks, order), refill)
    }

    /// The core as the fixed-priority analysis of its SCHED_FIFO tasks
    /// takes it: its pseudo-tasks (the tick), its reservations as
    /// higher-priority pseudo-tasks ([`reservations_as_interference`];
    /// `fit`: they pass the EDF test), then its SCHED_FIFO tasks in
    /// `order`; and those tasks' indices, in the same order.
    pub fn fixed_priority_core(
        &self,
        tasks: &[CoreTask],
        order: &[usize],
        fit: bool,
    ) -> (Vec<CoreTask>, Vec<usize>) {
        self.below(&self.edf_side(tasks, order), tasks, order, fit)
    }

    /// The reservations of a core as the EDF test takes them, with the
    /// core's interrupts (the tick, every task's release with its
    /// [`AllocTask::release_jitter`], each reservation's inactive timer:
    /// those of `analysis::deadline`) and the partitions its SCHED_FIFO
    /// tasks evict.
    fn edf_side(&self, tasks: &[CoreTask], order: &[usize]) -> EdfSide {
        debug_assert_eq!(
            order.len(),
            tasks.iter().filter(|t| !t.pseudo).count(),
            "the core's tasks are those `order` names"
        );
        let mut interrupts: Vec<Interrupt> = tasks
            .iter()
            .filter(|t| t.pseudo)
            .map(|t| Interrupt {
                cost_ns: t.wcet,
                period_ns: t.period,
                jitter_ns: t.jitter,
            })
            .collect();
        let mut reservations = Vec::new();
        let mut others = PartitionSet::EMPTY;
        let real = tasks.iter().enumerate().filter(|(_, t)| !t.pseudo);
        for ((index, task), &i) in real.zip(order) {
            interrupts.push(Interrupt {
                cost_ns: task.interrupt,
                period_ns: task.period,
                jitter_ns: self.tasks[i].release_jitter,
            });
            if !self.tasks[i].reservation {
                others = others.union(&task.partitions);
                continue;
            }
            interrupts.push(Interrupt {
                cost_ns: task.interrupt,
                period_ns: task.period,
                jitter_ns: task.deadline,
            });
            reservations.push(ReservationParams {
                index,
                wcet: task.wcet,
                period: task.period,
                deadline: task.deadline,
                jitter: task.jitter,
                partitions: task.partitions,
                runtime: self.tasks[i].runtime,
            });
        }
        interrupts.retain(|i| i.cost_ns > 0);
        EdfSide {
            reservations,
            interrupts,
            others,
        }
    }

    /// The EDF test of `side` with refill time `refill`.
    fn fits(&self, side: &EdfSide, refill: u64) -> bool {
        reservations_fit(
            &side.reservations,
            &EdfCoreContext {
                refill,
                context_switch: self.context_switch,
                others: side.others,
                interrupts: &side.interrupts,
            },
        )
    }

    /// [`Instance::fixed_priority_core`] of a core whose reservations are
    /// `side`.
    fn below(
        &self,
        side: &EdfSide,
        tasks: &[CoreTask],
        order: &[usize],
        fit: bool,
    ) -> (Vec<CoreTask>, Vec<usize>) {
        let real = tasks.iter().filter(|t| !t.pseudo).zip(order);
        let (fifo, indices): (Vec<CoreTask>, Vec<usize>) = real
            .filter(|&(_, &i)| !self.tasks[i].reservation)
            .map(|(t, &i)| (*t, i))
            .unzip();
        let core = tasks
            .iter()
            .filter(|t| t.pseudo)
            .copied()
            .chain(reservations_as_interference(
                &side.reservations,
                fit,
                self.context_switch,
                self.interrupt,
            ))
            .chain(fifo)
            .collect();
        (core, indices)
    }

    /// A core's task list, starting with the tick when it is charged.
    pub fn core_tasks(&self) -> Vec<CoreTask> {
        self.tick.into_iter().collect()
    }

    /// The given tasks sorted by priority, highest first.
    pub fn by_priority(&self, tasks: &[usize]) -> Vec<usize> {
        let mut sorted = tasks.to_vec();
        sorted.sort_by_key(|&i| (self.tasks[i].rank, i));
        sorted
    }
}

/// A core's reservations as the EDF test takes them
/// ([`Instance::schedulable`]).
struct EdfSide {
    reservations: Vec<ReservationParams>,
    interrupts: Vec<Interrupt>,
    others: PartitionSet,
}

/// Each task's rank (1 first): the reservations first, by kernel deadline
/// D − J (the order the EDF test charges γ in: a job preempts only jobs of
/// longer kernel deadlines; SCHED_DEADLINE runs above SCHED_FIFO), ties by
/// position; then the SCHED_FIFO tasks in their priority order.
fn reservations_first_ranks(set: &TaskSet) -> Vec<u32> {
    let latency = set.platform.overheads.release_latency.0;
    let fifo_ranks = set.ranks();
    let mut order: Vec<usize> = (0..set.tasks.len()).collect();
    order.sort_by_key(|&i| {
        let task = &set.tasks[i];
        if task.is_deadline() {
            let jitter = task.jitter.0.saturating_add(latency);
            (0, task.deadline.0.saturating_sub(jitter), i)
        } else {
            (1, u64::from(fifo_ranks[i]), i)
        }
    });
    let mut ranks = vec![0; order.len()];
    for (rank, &i) in order.iter().enumerate() {
        ranks[i] = u32::try_from(rank + 1).unwrap_or(u32::MAX);
    }
    ranks
}
