//! The SCHED_DEADLINE tasks of one core: the exact processor-demand test
//! of [`super::edf`] with kim2013's cache terms, the platform's overheads
//! and the kernel's own rules, and what they leave to the core's
//! SCHED_FIFO tasks.
//!
//! # What the kernel does
//!
//! A task's thread sleeps until its nominal release r and wakes at
//! r' ∈ [r, r + J] (J: declared jitter + the platform's release latency).
//! At that wake-up the CBS gives it the deadline r' + D_k, D_k the
//! reservation's `sched_deadline`, and EDF runs the earliest deadline
//! first, above every SCHED_FIFO thread. tinct asks for D_k = D − J, so
//! that a job meeting its kernel deadline meets its own: r' + D − J ≤
//! r + D. The jobs of an interval of length t that are woken in it and
//! due in it number 0 for t < D_k and at most ⌊(t − D_k + J)/T⌋ + 1 from
//! there: the dbf of [`super::edf`] with deadline D_k, jitter J and
//! [`edf::EdfTask::deadline_from_wake`]. (With D ≤ T the previous
//! kernel deadline has passed at each wake-up, r'_prev + D − J ≤ r_prev +
//! T ≤ r', so the CBS always starts a new one there.)
//!
//! # Cache terms under EDF (kim2013 Eq. 2 carried over)
//!
//! Per job of task j the demand is C'_j = C_j + 2δ + ω_j + γ_j:
//! - ω_j = Δ·|S(j) ∩ ⋃_{k ≠ j} S(k)|, k over every task of the core:
//!   between two jobs of j any of them may run and evict what j shares
//!   with it (kim2013's ω_{j,n});
//! - γ_j = Δ·|S(j) ∩ ⋃_{k : D_k,k > D_k,j} S(k)|, k over the core's
//!   SCHED_DEADLINE tasks: a job preempts only jobs of tasks with a longer
//!   kernel deadline (a later release with an earlier absolute deadline
//!   needs D_k,j < D_k,k), and each preemption is caused by one release.
//!   The union covers a stack of nested preemptions, as kim2013's γ_{j,i}
//!   over int(j, i) does.
//!
//! Why charging γ to the preempting job is enough (after Lunniss, Altmeyer,
//! Maiza and Davis, "Integrating cache related pre-emption delay analysis
//! into EDF scheduling", RTAS 2013): in the busy interval [a, d] of the
//! demand argument only jobs released at or after a and due by d run; a
//! preemption one of them suffers is caused by the release of a job with an
//! earlier deadline, so also due by d and released after a, and counted
//! in dbf(d − a) with its γ. The reload a resumed job pays is for
//! partitions the preempting jobs evicted, which γ of each of them covers.
//! docs/EDF.md has the derivation in full.
//!
//! # Overheads
//!
//! Interrupts run ahead of every job: the scheduler tick (ε every tick
//! period), each task's release timer (ε per release, jitter J), on every
//! task of the core, SCHED_FIFO ones included, and each reservation's
//! inactive timer (the kernel arms it when a job sleeps before its 0-lag
//! time, and it fires by the deadline: ε per period, jitter D); the test
//! charges them as [`edf::Interrupt`]s.
//!
//! # Admission
//!
//! The kernel admits reservations while Σ Q/T, in its fixed point of
//! 2^-20 rounded down per task (`to_ratio`), stays within
//! sched_rt_runtime_us / sched_rt_period_us of the root domain, 950000 /
//! 1000000 by default, less what is reserved already: from Linux 6.12 the
//! fair server of each CPU (`dl_server`, 50 ms per second) is counted in
//! that sum. The test takes both, so a core it admits is admitted by old
//! and new kernels alike (checked on 6.18: 0.90 of a partitioned CPU is
//! admitted, 0.93 refused with EBUSY). Partitioned EDF gives each core a
//! root domain of its own, so the check is per core; a core past it is
//! reported.
//!
//! # The runtime a job needs
//!
//! The kernel bills a thread for everything that runs in its context: its
//! own C' but also the interrupts that land in it and the reloads it pays
//! when it resumes after a preemption (γ pays for those in the demand test,
//! but they are spent in the preempted job's time). So a job of j may
//! consume
//!
//! Q_j = C'_j + N_j·(ρ_j + δ) + I(D_k,j)
//!
//! with N_j = Σ_{k : D_k,k < D_k,j} (⌊(D_k,j + J_k)/T_k⌋ + 1) the wake-ups of
//! shorter-deadline tasks within its window (each can preempt it once),
//! ρ_j = Δ·|S(j) ∩ ⋃ S(k)| over those tasks (what one resumption reloads)
//! and δ the switch back in. A `runtime` below Q_j is reported (the CBS
//! would throttle the job), and so is a Q_j the kernel refuses (above
//! D_k).
//!
//! # What the SCHED_FIFO tasks see
//!
//! A job of a schedulable reservation runs within [r, r + D], so for the
//! fixed-priority analysis of the core's SCHED_FIFO tasks each reservation
//! is a higher-priority sporadic task of cost C (plus its overheads and
//! cache terms, which the recurrence adds), period T and release jitter
//! D − C, in kernel-deadline order above them, and its inactive timer a
//! pseudo-task of cost ε, period T and jitter D. When the reservations are
//! not schedulable nothing bounds where they run: the jitter is then
//! unbounded and every SCHED_FIFO task of the core is too.

use super::edf::{self, Demand, EdfTask, Interrupt};
use super::edf_response;
use super::rta::{CoreTask, ResponseTime, cache_delay};
use super::{AnalysisError, TermCause};
use crate::limits::MIN_DEADLINE_RUNTIME;
use crate::model::{TaskSet, Trigger};
use crate::partitions::PartitionSet;
use serde::{Deserialize, Serialize};

/// The first interval whose demand exceeds its length.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Overload {
    /// t, the interval's length.
    pub interval_ns: u64,
    /// dbf(t) + I(t) > t: the jobs due within it and the interrupts.
    pub demand_ns: u128,
}

/// The EDF analysis of one core's SCHED_DEADLINE tasks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EdfReport {
    /// The tasks, in kernel-deadline order.
    pub tasks: Vec<String>,
    /// The same tasks as indices in file order.
    pub task_indices: Vec<usize>,
    /// Σ C'_i/T_i plus the interrupts' Σ ε/T.
    pub utilization: f64,
    /// The demand test holds and every reservation's runtime is one the
    /// kernel accepts and no job outgrows.
    pub schedulable: bool,
    /// The longest interval the test had to check (when it fits).
    pub horizon_ns: Option<u64>,
    /// The shortest overloaded interval (when the demand test fails).
    pub overload: Option<Overload>,
    /// The utilization above is above 1, exactly.
    pub utilization_above_one: bool,
    /// Why not schedulable, in words.
    pub reasons: Vec<String>,
}

/// One SCHED_DEADLINE task as the analysis charged it.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Reservation {
    /// Its index in file order.
    pub index: usize,
    /// D_k = D − J, the kernel deadline tinct asks for; `None` when J ≥ D.
    pub kernel_deadline: Option<u64>,
    /// J, ns.
    pub jitter: u64,
    /// T, ns.
    pub period: u64,
    /// C, ns.
    pub wcet: u64,
    /// 2δ, ns.
    pub overhead: u64,
    /// ω_j, ns.
    pub warmup: u64,
    /// γ_j, ns.
    pub crpd: u64,
    /// C' = C + 2δ + ω + γ, ns.
    pub demand: u64,
    /// Q: C' plus the resumptions and interrupts a job may pay in its own
    /// time (saturated; module documentation).
    pub runtime_needed: u64,
    /// The runtime asked for: the file's, or `runtime_needed`.
    pub runtime: u64,
    /// Spuri's bound on a job's response from its wake-up, when the core
    /// is schedulable and it was found ([`edf_response`]).
    pub response_from_wake: Option<u64>,
}

/// One core's SCHED_DEADLINE tasks analysed.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct EdfCore {
    /// The verdict and its reasons.
    pub report: EdfReport,
    /// The tasks in kernel-deadline order.
    pub reservations: Vec<Reservation>,
}

impl EdfCore {
    /// The reservations as higher-priority sporadic tasks of the core's
    /// SCHED_FIFO tasks ([`reservations_as_interference`]).
    pub(super) fn as_interference(&self, set: &TaskSet) -> Vec<CoreTask> {
        let params: Vec<ReservationParams> = self
            .reservations
            .iter()
            .map(|r| {
                let task = &set.tasks[r.index];
                ReservationParams {
                    index: r.index,
                    wcet: r.wcet,
                    period: task.period.0,
                    deadline: task.deadline.0,
                    jitter: r.jitter,
                    partitions: task.charged_partitions(&set.platform),
                    runtime: None,
                }
            })
            .collect();
        let overheads = &set.platform.overheads;
        reservations_as_interference(
            &params,
            self.report.schedulable,
            overheads.context_switch.0,
            overheads.tick.0,
        )
    }

    /// Each task's result in the shape of the fixed-priority one, when the
    /// core is schedulable: J plus Spuri's bound from the wake-up, or the
    /// deadline D when that bound was not found (a job meets its kernel
    /// deadline r' + D − J ≤ r + D); none otherwise.
    pub(super) fn results(&self, set: &TaskSet) -> Vec<(usize, ResponseTime)> {
        self.reservations
            .iter()
            .map(|r| {
                let deadline = set.tasks[r.index].deadline.0;
                let bound = self.report.schedulable.then(|| {
                    r.response_from_wake
                        .and_then(|w| w.checked_add(r.jitter))
                        .map_or(deadline, |b| b.min(deadline))
                });
                // The terms add up to the bound, as the fixed-priority
                // breakdown's do: the task's own C, 2δ, ω and J, and the
                // rest (its own γ, the jobs and interrupts ahead of it) as
                // interference. The bound is at least J + C', C' ≥ C + 2δ + ω.
                let own = r
                    .wcet
                    .saturating_add(r.overhead)
                    .saturating_add(r.warmup)
                    .saturating_add(r.jitter);
                let result = ResponseTime {
                    wcrt_ns: bound,
                    iterations: 1,
                    wcet_ns: r.wcet,
                    overhead_ns: r.overhead,
                    warmup_ns: r.warmup,
                    jitter_ns: r.jitter,
                    interference_ns: bound.map_or(0, |b| b.saturating_sub(own)),
                    ..ResponseTime::default()
                };
                (r.index, result)
            })
            .collect()
    }
}

/// One SCHED_DEADLINE task as the EDF test of a core takes it, whatever
/// it came from: a task-set file (`tinct analyze`) or a placement search
/// ([`reservations_fit`]).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct ReservationParams {
    /// An index of the caller's (the task's in file order), carried to the
    /// result and used to break ties of kernel deadlines.
    pub index: usize,
    /// C, ns (`u64::MAX`: not known).
    pub wcet: u64,
    /// T, ns.
    pub period: u64,
    /// D, ns.
    pub deadline: u64,
    /// J: declared jitter plus the platform's release latency, ns.
    pub jitter: u64,
    /// S: the partitions whose contents the task reloads.
    pub partitions: PartitionSet,
    /// The runtime the file asks for (`None`: the one a job needs).
    pub runtime: Option<u64>,
}

impl ReservationParams {
    /// D_k = D − J, or `None` when J reaches D.
    fn kernel_deadline(&self) -> Option<u64> {
        self.deadline.checked_sub(self.jitter).filter(|&d| d > 0)
    }
}

/// What the EDF test of one core needs besides its reservations.
#[derive(Copy, Clone, Debug)]
pub struct EdfCoreContext<'a> {
    /// Δ, ns.
    pub refill: u64,
    /// δ, ns.
    pub context_switch: u64,
    /// ⋃ S of the core's other (SCHED_FIFO) tasks: they evict too (ω).
    pub others: PartitionSet,
    /// The core's interrupts (tick, releases, inactive timers).
    pub interrupts: &'a [Interrupt],
}

/// The reservations charged (module documentation: C', Q), in
/// kernel-deadline order; `Err` with the task's index and the exact C'
/// when C' does not fit 64 bits.
fn charge(
    params: &[ReservationParams],
    cx: &EdfCoreContext<'_>,
) -> Result<Vec<Reservation>, (usize, u128)> {
    let order = kernel_deadline_order(params);
    let mut reservations = Vec::with_capacity(order.len());
    for p in &order {
        let others = order
            .iter()
            .filter(|k| k.index != p.index)
            .fold(cx.others, |acc, k| acc.union(&k.partitions));
        let preemptable = order
            .iter()
            .filter(|k| k.kernel_deadline().unwrap_or(0) > p.kernel_deadline().unwrap_or(0))
            .fold(PartitionSet::EMPTY, |acc, k| acc.union(&k.partitions));
        let own = p.partitions;
        let overhead = cx.context_switch.saturating_mul(2);
        let delay = |shared: PartitionSet| cache_delay(own.intersection(&shared).len(), cx.refill);
        let (warmup, crpd) = match (delay(others), delay(preemptable)) {
            (Some(w), Some(g)) => (w, g),
            _ => (u64::MAX, u64::MAX),
        };
        let exact =
            u128::from(p.wcet) + u128::from(overhead) + u128::from(warmup) + u128::from(crpd);
        let demand = u64::try_from(exact).map_err(|_| (p.index, exact))?;
        let deadline = p.kernel_deadline();
        let runtime_needed = deadline.map_or(u64::MAX, |d| {
            let shorter: Vec<&&ReservationParams> = order
                .iter()
                .filter(|k| k.kernel_deadline().is_some_and(|dk| dk < d))
                .collect();
            let preemptions: u128 = shorter
                .iter()
                .map(|k| (u128::from(d) + u128::from(k.jitter)) / u128::from(k.period) + 1)
                .sum();
            let evicted = shorter
                .iter()
                .fold(PartitionSet::EMPTY, |acc, k| acc.union(&k.partitions));
            let resume = u128::from(own.intersection_len(&evicted)) * u128::from(cx.refill)
                + u128::from(cx.context_switch);
            let needed = u128::from(demand)
                + preemptions.saturating_mul(resume)
                + edf::interrupts_within(cx.interrupts, u128::from(d));
            u64::try_from(needed).unwrap_or(u64::MAX)
        });
        reservations.push(Reservation {
            index: p.index,
            kernel_deadline: deadline,
            jitter: p.jitter,
            period: p.period,
            wcet: p.wcet,
            overhead,
            warmup,
            crpd,
            demand,
            runtime_needed,
            // The kernel's smallest runtime when less is needed.
            runtime: p
                .runtime
                .unwrap_or_else(|| runtime_needed.max(MIN_DEADLINE_RUNTIME.0)),
            response_from_wake: None,
        });
    }
    Ok(reservations)
}

/// Whether reservations `params` pass the EDF test of a core in `cx`:
/// every kernel deadline exists, every runtime is one the kernel accepts
/// and no job outgrows, the kernel admits them, and the processor demand
/// fits. The same decision as `tinct analyze`'s verdict (both are
/// `charge` and `findings`), without its words: the test of a
/// placement search. A horizon past the test's limit counts as not
/// fitting.
pub fn reservations_fit(params: &[ReservationParams], cx: &EdfCoreContext<'_>) -> bool {
    let Ok(reservations) = charge(params, cx) else {
        return false;
    };
    findings(&reservations, cx.interrupts).is_ok_and(|f| f.fits())
}

/// The reservations `params` of a core as the fixed-priority analysis of
/// its SCHED_FIFO tasks sees them (module documentation), in
/// kernel-deadline order: first each inactive timer (ε = `tick` per
/// period, jitter D; none when ε = 0), then each job, a pseudo-task of cost
/// C, period T, deadline D, its partitions, 2δ and its release's ε, with
/// jitter D − C when the reservations `fit` (they pass the EDF test) and
/// unbounded otherwise. `tinct analyze` (`EdfCore::as_interference`) and
/// the planner of mixed cores take this one list.
pub fn reservations_as_interference(
    params: &[ReservationParams],
    fit: bool,
    context_switch: u64,
    tick: u64,
) -> Vec<CoreTask> {
    let order = kernel_deadline_order(params);
    let timers = order.iter().filter(|_| tick > 0).map(|p| CoreTask {
        jitter: p.deadline,
        ..CoreTask::scheduler_tick(tick, p.period)
    });
    let jobs = order.iter().map(|p| CoreTask {
        wcet: p.wcet,
        period: p.period,
        deadline: p.deadline,
        partitions: p.partitions,
        jitter: if fit {
            p.deadline.saturating_sub(p.wcet)
        } else {
            u64::MAX
        },
        overhead: context_switch.saturating_mul(2),
        interrupt: tick,
        pseudo: true,
        ..CoreTask::default()
    });
    timers.chain(jobs).collect()
}

/// `params` in kernel-deadline order, ties by index; a task whose jitter
/// reaches D first (its kernel deadline taken as 0).
fn kernel_deadline_order(params: &[ReservationParams]) -> Vec<&ReservationParams> {
    let mut order: Vec<&ReservationParams> = params.iter().collect();
    order.sort_by_key(|p| (p.kernel_deadline().unwrap_or(0), p.index));
    order
}

/// Analyses `deadline_tasks` (file indices, the core's SCHED_DEADLINE
/// tasks) beside `fifo_tasks` (the core's others) with refill time Δ =
/// `refill`. `None` when the core has no SCHED_DEADLINE task.
pub(super) fn analyze_core(
    set: &TaskSet,
    core: u32,
    deadline_tasks: &[usize],
    fifo_tasks: &[usize],
    refill: u64,
) -> Result<Option<EdfCore>, AnalysisError> {
    if deadline_tasks.is_empty() {
        return Ok(None);
    }
    let overheads = &set.platform.overheads;
    let latency = overheads.release_latency.0;
    let partitions = |i: usize| set.tasks[i].charged_partitions(&set.platform);
    let params: Vec<ReservationParams> = deadline_tasks
        .iter()
        .map(|&i| {
            let task = &set.tasks[i];
            ReservationParams {
                index: i,
                wcet: task.effective_wcet().map_or(u64::MAX, |c| c.0),
                period: task.period.0,
                deadline: task.deadline.0,
                jitter: task.jitter.0.saturating_add(latency),
                partitions: partitions(i),
                runtime: task.runtime.map(|q| q.0),
            }
        })
        .collect();
    let everyone: Vec<usize> = deadline_tasks.iter().chain(fifo_tasks).copied().collect();
    let interrupts = interrupts(set, &everyone);
    let cx = EdfCoreContext {
        refill,
        context_switch: overheads.context_switch.0,
        others: fifo_tasks
            .iter()
            .fold(PartitionSet::EMPTY, |acc, &k| acc.union(&partitions(k))),
        interrupts: &interrupts,
    };
    let mut reservations = charge(&params, &cx).map_err(|(index, exact)| {
        let task = &set.tasks[index];
        let wcet = task.effective_wcet().map_or(u64::MAX, |c| c.0);
        AnalysisError::TermTooLarge {
            index,
            task: task.name.clone(),
            quantity: "C + 2δ + ω + γ",
            value: exact,
            cause: TermCause::of(
                &CoreTask {
                    wcet,
                    overhead: overheads.context_switch.0.saturating_mul(2),
                    ..CoreTask::default()
                },
                exact,
            ),
        }
    })?;
    let report = verdict(set, core, &reservations, &interrupts)?;
    if report.schedulable {
        // Every task has a kernel deadline here, in the same order.
        let bounds = edf_response::response_bounds(&demand_tasks(&reservations), &interrupts);
        for (r, bound) in reservations.iter_mut().zip(bounds) {
            r.response_from_wake = bound;
        }
    }
    Ok(Some(EdfCore {
        report,
        reservations,
    }))
}

/// The interrupts of a core whose tasks are `tasks`: the scheduler tick,
/// each task's release and each reservation's inactive timer, of cost ε
/// each (none when ε = 0). A
/// data-triggered task's release comes with the jitter its producers'
/// deadlines bound (it is released within their responses, which a
/// schedulable set keeps below their deadlines; a set where one passes it
/// is not schedulable anyway).
fn interrupts(set: &TaskSet, tasks: &[usize]) -> Vec<Interrupt> {
    let overheads = &set.platform.overheads;
    let cost = overheads.tick.0;
    if cost == 0 {
        return Vec::new();
    }
    let tick = overheads.tick_period.map(|period| Interrupt {
        cost_ns: cost,
        period_ns: period.0,
        jitter_ns: 0,
    });
    let releases = tasks.iter().map(|&k| Interrupt {
        cost_ns: cost,
        period_ns: set.tasks[k].period.0,
        jitter_ns: release_jitter(set, k),
    });
    // A reservation's job that sleeps before its 0-lag time arms the
    // kernel's inactive timer (`task_non_contending`), which fires by its
    // deadline: one more interrupt per job, within [r, r + D].
    let inactive = tasks
        .iter()
        .filter(|&&k| set.tasks[k].is_deadline())
        .map(|&k| Interrupt {
            cost_ns: cost,
            period_ns: set.tasks[k].period.0,
            jitter_ns: set.tasks[k].deadline.0,
        });
    tick.into_iter().chain(releases).chain(inactive).collect()
}

/// The jitter of task `k`'s release timer, as the EDF test of its core
/// charges the interrupt: its declared jitter, the platform's release
/// latency and, for a data-triggered task, the largest deadline of its
/// producers (it is released within their responses, which a schedulable
/// set keeps below their deadlines). Known before placement: the planner
/// charges the same.
pub fn release_jitter(set: &TaskSet, k: usize) -> u64 {
    let task = &set.tasks[k];
    let inherited = match task.trigger {
        Trigger::Timer => 0,
        Trigger::Data => set
            .edges
            .iter()
            .filter(|e| e.to == k)
            .map(|e| set.tasks[e.from].deadline.0)
            .max()
            .unwrap_or(0),
    };
    task.jitter
        .0
        .saturating_add(set.platform.overheads.release_latency.0)
        .saturating_add(inherited)
}

/// The reservations as the demand test takes them: C', the kernel
/// deadline from the wake-up, T and J. A task without a kernel deadline
/// is a reason already and left out.
fn demand_tasks(reservations: &[Reservation]) -> Vec<EdfTask> {
    reservations
        .iter()
        .filter_map(|r| {
            Some(EdfTask {
                wcet_ns: r.demand,
                deadline_ns: r.kernel_deadline?,
                period_ns: r.period,
                jitter_ns: r.jitter,
                deadline_from_wake: true,
            })
        })
        .collect()
}

/// The kernel's default bandwidth for deadline tasks per CPU: 950000 µs
/// of every 1000000 µs, as `to_ratio` computes it (2^-20 fixed point).
const RT_BANDWIDTH: u128 = (950_000 << 20) / 1_000_000;

/// The fair server's reservation per CPU (Linux 6.12 and later: 50 ms of
/// every second), in the same fixed point.
const FAIR_SERVER_BANDWIDTH: u128 = (50_000_000 << 20) / 1_000_000_000;

/// What the reservations of one root domain of one CPU may take: the
/// bandwidth less the fair server's (module documentation).
const ADMISSION_LIMIT: u128 = RT_BANDWIDTH - FAIR_SERVER_BANDWIDTH;

/// What is wrong with a reservation's runtime, the first that holds.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum RuntimeProblem {
    /// J reaches D: no kernel deadline is left.
    NoKernelDeadline,
    /// Q, the runtime a job needs, is above D_k.
    NeededAboveDeadline(u64),
    /// The file's runtime is above D_k.
    RuntimeAboveDeadline(u64),
    /// The file's runtime is below Q.
    RuntimeBelowNeed,
}

impl RuntimeProblem {
    fn of(r: &Reservation) -> Option<RuntimeProblem> {
        match r.kernel_deadline {
            None => Some(RuntimeProblem::NoKernelDeadline),
            Some(d) if r.runtime_needed > d => Some(RuntimeProblem::NeededAboveDeadline(d)),
            Some(d) if r.runtime > d => Some(RuntimeProblem::RuntimeAboveDeadline(d)),
            Some(_) if r.runtime < r.runtime_needed => Some(RuntimeProblem::RuntimeBelowNeed),
            Some(_) => None,
        }
    }
}

/// The checks of one core's reservations, before they are put in words.
struct Findings {
    /// Each reservation's runtime problem (same order).
    problems: Vec<Option<RuntimeProblem>>,
    /// Σ Q/T in the kernel's fixed point, over the runtimes it would take.
    admitted: u128,
    /// Σ C'/T plus the interrupts' Σ ε/T.
    utilization: f64,
    /// The processor-demand test.
    decided: Demand,
}

impl Findings {
    /// Every check passes.
    fn fits(&self) -> bool {
        self.problems.iter().all(Option::is_none)
            && self.admitted <= ADMISSION_LIMIT
            && matches!(self.decided, Demand::Fits { .. })
    }
}

/// The runtime checks, the admission and the demand test of one core's
/// reservations: the decision [`verdict`] words and [`reservations_fit`]
/// takes.
fn findings(
    reservations: &[Reservation],
    interrupts: &[Interrupt],
) -> Result<Findings, edf::EdfError> {
    let problems = reservations.iter().map(RuntimeProblem::of).collect();
    let tasks = demand_tasks(reservations);
    // Over the runtimes the kernel would take at all (a refused one is a
    // reason already).
    let admitted: u128 = reservations
        .iter()
        .filter(|r| r.kernel_deadline.is_some_and(|d| r.runtime <= d))
        .map(|r| (u128::from(r.runtime) << 20) / u128::from(r.period))
        .sum();
    let utilization = tasks
        .iter()
        .map(|t| t.wcet_ns as f64 / t.period_ns as f64)
        .chain(
            interrupts
                .iter()
                .map(|i| i.cost_ns as f64 / i.period_ns as f64),
        )
        .sum();
    let decided = edf::decide_with_interrupts(&tasks, interrupts)?;
    Ok(Findings {
        problems,
        admitted,
        utilization,
        decided,
    })
}

/// The demand test and the runtime checks of one core's reservations, in
/// words.
fn verdict(
    set: &TaskSet,
    core: u32,
    reservations: &[Reservation],
    interrupts: &[Interrupt],
) -> Result<EdfReport, AnalysisError> {
    let name = |r: &Reservation| set.tasks[r.index].name.clone();
    let found =
        findings(reservations, interrupts).map_err(|error| AnalysisError::EdfUndecidable {
            core,
            index: reservations.first().map_or(0, |r| r.index),
            reason: match error {
                edf::EdfError::HorizonTooLong { limit_ns } => format!(
                    "the intervals to check run past {} (utilization exactly 1 with interrupts, \
                     or periods whose least common multiple is that long)",
                    crate::units::Nanos(limit_ns)
                ),
                other => format!("{other:?}"),
            },
        })?;
    let mut reasons = Vec::new();
    for (r, problem) in reservations.iter().zip(&found.problems) {
        let task = &set.tasks[r.index];
        match problem {
            None => {}
            Some(RuntimeProblem::NoKernelDeadline) => reasons.push(format!(
                "task '{}': its release jitter {} reaches its deadline {}, so no kernel deadline \
                 D − J is left for the reservation",
                task.name,
                crate::units::Nanos(r.jitter),
                task.deadline
            )),
            Some(RuntimeProblem::NeededAboveDeadline(deadline)) => reasons.push(format!(
                "task '{}': a job may consume {} of runtime (C', its resumptions and the \
                 interrupts in its window), above its kernel deadline D − J = {} (the kernel \
                 refuses a runtime above the deadline)",
                task.name,
                crate::units::Nanos(r.runtime_needed),
                crate::units::Nanos(*deadline)
            )),
            Some(RuntimeProblem::RuntimeAboveDeadline(deadline)) => reasons.push(format!(
                "task '{}': its `runtime` {} is above its kernel deadline D − J = {} (jitter {} \
                 taken from D): the kernel refuses a runtime above the deadline",
                task.name,
                crate::units::Nanos(r.runtime),
                crate::units::Nanos(*deadline),
                crate::units::Nanos(r.jitter)
            )),
            Some(RuntimeProblem::RuntimeBelowNeed) => reasons.push(format!(
                "task '{}': its `runtime` {} is below the {} a job may consume (C', its \
                 resumptions and the interrupts in its window): the kernel would throttle it",
                task.name,
                crate::units::Nanos(r.runtime),
                crate::units::Nanos(r.runtime_needed)
            )),
        }
    }
    if found.admitted > ADMISSION_LIMIT {
        reasons.push(format!(
            "the runtimes take Σ Q/T = {:.4} of the core: above the {:.4} the kernel admits by \
             default (kernel.sched_rt_runtime_us = 950000 of sched_rt_period_us = 1000000, \
             less the 0.05 the fair server of kernels 6.12 and later reserves)",
            found.admitted as f64 / f64::from(1u32 << 20),
            ADMISSION_LIMIT as f64 / f64::from(1u32 << 20)
        ));
    }
    let utilization = found.utilization;
    let (mut horizon_ns, mut overload, mut above_one) = (None, None, false);
    match found.decided {
        Demand::Fits { horizon_ns: h } => horizon_ns = Some(h),
        Demand::Overloaded {
            interval_ns,
            demand_ns,
        } => {
            overload = Some(Overload {
                interval_ns,
                demand_ns,
            });
            reasons.push(format!(
                "the jobs due within an interval of {} and the interrupts in it need {}: more \
                 than the interval (EDF processor demand)",
                crate::units::Nanos(interval_ns),
                u64::try_from(demand_ns).map_or_else(
                    |_| format!("{demand_ns} ns"),
                    |d| crate::units::Nanos(d).to_string()
                )
            ));
        }
        Demand::UtilizationAboveOne => {
            above_one = true;
            reasons.push(format!(
                "the reservations and interrupts need {utilization:.4} of the core: above 1"
            ));
        }
    }
    debug_assert_eq!(reasons.is_empty(), found.fits());
    Ok(EdfReport {
        tasks: reservations.iter().map(name).collect(),
        task_indices: reservations.iter().map(|r| r.index).collect(),
        utilization,
        schedulable: reasons.is_empty(),
        horizon_ns,
        overload,
        utilization_above_one: above_one,
        reasons,
    })
}
