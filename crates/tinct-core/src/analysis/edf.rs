//! EDF schedulability of one core's sporadic tasks with constrained
//! deadlines (D_i ≤ T_i) and release jitter J_i: the exact
//! processor-demand test, decided with Zhang and Burns' Quick Processor-
//! demand Analysis (QPA, IEEE Trans. Computers 58(9), 2009), in integers.
//!
//! The demand bound function counts the jobs whose release (after jitter)
//! and deadline both lie in an interval of length t:
//!
//! ```text
//! dbf(t) = Σ_i max(0, ⌊(t + J_i − D_i) / T_i⌋ + 1) · C_i
//! ```
//!
//! and the core is schedulable under EDF if and only if dbf(t) ≤ t for
//! every t up to min(L_a, L_b): L_b the synchronous busy period of the
//! set with deadlines D_i − J_i (dbf depends on nothing else), L_a the
//! bound past which U·t plus the jitter-and-deadline slack stays below t
//! (Baruah, Rosier and Howell 1990; Spuri 1996; Zhang and Burns 2009).
//! dbf only steps at the deadline points D_i − J_i + k·T_i; QPA walks down
//! from the last one below the horizon, jumping to dbf(t) whenever it lies
//! below t, and ends at the smallest deadline (schedulable) or at a t with
//! dbf(t) > t (overloaded). When it finds an overload, `first_overload`
//! skips forward from 0 to the first overloaded interval, the one a user
//! can act on.
//!
//! # Deadlines from the wake-up
//!
//! The kernel's CBS gives a SCHED_DEADLINE job its absolute deadline at the
//! wake-up r' ∈ [r, r + J], not at the nominal release r. The jobs woken in
//! a window of length t and due in it then number 0 for t < D and
//! ⌊(t − D + J)/T⌋ + 1 from t = D on ([`EdfTask::deadline_from_wake`]):
//! below the dbf above between D − J and D, where no job fits. Past D it
//! steps at D − J + k·T. The busy-period argument is for the dbf above, so
//! such a set's horizon is one hyperperiod past the last first point, as
//! with interrupts below.
//!
//! # Interrupts
//!
//! Interrupts (the scheduler tick, the timers that release jobs) run
//! ahead of every job whatever its deadline. [`decide_with_interrupts`]
//! charges a source of cost ε, minimum separation T and jitter J with
//! I(t) = (⌊(t + J)/T⌋ + 1)·ε, the most its firings inside a closed
//! window of length t can take, and checks dbf(t) + I(t) ≤ t (Jeffay and
//! Stone, "Accounting for interrupt handling costs in dynamic priority
//! task systems", RTSS 1993). It is sufficient: take a job that misses
//! its deadline d and the last instant a before it at which no job due by
//! d and no interrupt is pending; in [a, d] the processor only runs jobs
//! released at or after a and due by d, and interrupts that fired in
//! [a, d], more than d − a in all, so dbf(d − a) + I(d − a) > d − a. The
//! missing job was released at or after a, so d − a is at least the
//! smallest deadline point of the tasks: only t from there on are checked
//! (below it I(t) ≥ ε > t would fail for no job). I(t) is the dbf of a
//! task of deadline 0, so the interrupts join the walk as tasks whose
//! points count where dbf + I steps; the horizon is then L_a alone (the
//! busy-period argument does not cover a deadline of 0).
//!
//! Every quantity is an integer: demands are u128 sums of u64 products,
//! saturating far above any interval a u64 of nanoseconds can express,
//! which leaves every comparison with t exact.

use num_bigint::BigUint;

/// One task as the demand test sees it (times in ns).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EdfTask {
    /// C_i: the execution budget of a job, overheads and cache delays
    /// included by the caller.
    pub wcet_ns: u64,
    /// D_i, relative to the release.
    pub deadline_ns: u64,
    /// T_i, the minimum inter-release time (> 0).
    pub period_ns: u64,
    /// J_i, the release jitter.
    pub jitter_ns: u64,
    /// The deadline runs from the job's actual (jittered) release, as the
    /// kernel's CBS gives it at the wake-up, not from the nominal one: no
    /// interval shorter than D_i holds a whole job, and the count is
    /// ⌊(t − D_i + J_i)/T_i⌋ + 1 from t = D_i on (module documentation).
    pub deadline_from_wake: bool,
}

impl EdfTask {
    /// A task of C = `wcet_ns`, D = `deadline_ns` and T = `period_ns`,
    /// with no release jitter and its deadline from the nominal release.
    pub fn new(wcet_ns: u64, deadline_ns: u64, period_ns: u64) -> Self {
        EdfTask {
            wcet_ns,
            deadline_ns,
            period_ns,
            jitter_ns: 0,
            deadline_from_wake: false,
        }
    }

    /// The first interval length at which the task's demand can count:
    /// max(0, D − J), or D when the deadline runs from the wake-up.
    fn first_point(&self) -> u64 {
        if self.deadline_from_wake {
            self.deadline_ns
        } else {
            self.deadline_ns.saturating_sub(self.jitter_ns)
        }
    }
}

/// A source of interrupts that run ahead of every job (times in ns).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interrupt {
    /// ε, what one firing takes.
    pub cost_ns: u64,
    /// The minimum time between two firings (> 0).
    pub period_ns: u64,
    /// How much a firing may come late.
    pub jitter_ns: u64,
}

/// I(t): the most `interrupts` can take within a closed window of length
/// t, Σ (⌊(t + J)/T⌋ + 1)·ε (saturating; every period > 0). The one home
/// of the count the demand test, the runtime a job needs and the response
/// bounds share.
pub fn interrupts_within(interrupts: &[Interrupt], t: u128) -> u128 {
    interrupts
        .iter()
        .map(|i| {
            (t.saturating_add(u128::from(i.jitter_ns)) / u128::from(i.period_ns) + 1)
                .saturating_mul(u128::from(i.cost_ns))
        })
        .fold(0, u128::saturating_add)
}

impl Interrupt {
    /// The interrupt as a task whose dbf is I(t): deadline 0.
    fn as_task(self) -> EdfTask {
        EdfTask {
            wcet_ns: self.cost_ns,
            deadline_ns: 0,
            period_ns: self.period_ns,
            jitter_ns: self.jitter_ns,
            deadline_from_wake: false,
        }
    }
}

/// The verdict of the demand test for one core.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Demand {
    /// dbf(t) ≤ t for every t: schedulable under EDF. `horizon_ns` is the
    /// longest interval that had to hold.
    Fits {
        /// min(L_a, L_b): past it no interval can be overloaded.
        horizon_ns: u64,
    },
    /// The jobs released and due within an interval of `interval_ns` need
    /// `demand_ns` of execution: not schedulable. The shortest such
    /// interval.
    Overloaded {
        /// t, the interval's length.
        interval_ns: u64,
        /// dbf(t) > t.
        demand_ns: u128,
    },
    /// Σ C_i / T_i > 1 (exactly): every long enough interval is
    /// overloaded.
    UtilizationAboveOne,
}

/// Why a core cannot be decided.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EdfError {
    /// Task `index` has T = 0.
    ZeroPeriod {
        /// Its position in the input.
        index: usize,
    },
    /// Task `index` has D > T (this test is for constrained deadlines).
    DeadlineAbovePeriod {
        /// Its position in the input.
        index: usize,
    },
    /// Interrupt source `index` has a period of 0.
    ZeroInterruptPeriod {
        /// Its position in the input.
        index: usize,
    },
    /// Utilization is at most 1, but neither bound on the intervals to
    /// check is below `limit_ns` (a utilization of exactly 1, or so near 1
    /// that L_a is that long, with periods whose least common multiple is
    /// that long): refused, not guessed.
    HorizonTooLong {
        /// The limit the busy period passed.
        limit_ns: u64,
    },
}

/// The longest busy period examined: about 73 years of ns, far beyond a
/// schedule anyone runs, and far below u64 overflow in the recurrence.
pub const HORIZON_LIMIT_NS: u64 = 1 << 61;

/// dbf(t): the execution demanded by the jobs released (after jitter) and
/// due within an interval of length `t`, saturating at u128::MAX.
fn demand(tasks: &[EdfTask], t: u64) -> u128 {
    tasks
        .iter()
        .map(|task| jobs_due(task, t).saturating_mul(u128::from(task.wcet_ns)))
        .fold(0u128, u128::saturating_add)
}

/// How many jobs of `task` are released and due within an interval `t`.
fn jobs_due(task: &EdfTask, t: u64) -> u128 {
    if task.deadline_from_wake && t < task.deadline_ns {
        return 0;
    }
    let reach = u128::from(t) + u128::from(task.jitter_ns);
    let deadline = u128::from(task.deadline_ns);
    if reach < deadline {
        0
    } else {
        (reach - deadline) / u128::from(task.period_ns.max(1)) + 1
    }
}

/// Decides the core: [`Demand`], or why it cannot be decided.
pub fn decide(tasks: &[EdfTask]) -> Result<Demand, EdfError> {
    decide_with_interrupts(tasks, &[])
}

/// Decides the core with `interrupts` running ahead of the jobs
/// (module documentation, "Interrupts"): dbf(t) + I(t) ≤ t for every t
/// from the smallest deadline point on.
pub fn decide_with_interrupts(
    tasks: &[EdfTask],
    interrupts: &[Interrupt],
) -> Result<Demand, EdfError> {
    check(tasks)?;
    if let Some(index) = interrupts.iter().position(|i| i.period_ns == 0) {
        return Err(EdfError::ZeroInterruptPeriod { index });
    }
    let Some(smallest) = smallest_point(tasks) else {
        return Ok(Demand::Fits { horizon_ns: 0 });
    };
    let all: Vec<EdfTask> = tasks
        .iter()
        .copied()
        .chain(interrupts.iter().map(|i| i.as_task()))
        .collect();
    let utilization = Utilization::of(&all);
    if utilization.above_one() {
        return Ok(Demand::UtilizationAboveOne);
    }
    let busy_period_applies = interrupts.is_empty() && !tasks.iter().any(|t| t.deadline_from_wake);
    let horizon = horizon(&all, &utilization, busy_period_applies)?.max(smallest);
    match quick_processor_demand(&all, smallest, horizon) {
        None => Ok(Demand::Fits {
            horizon_ns: horizon,
        }),
        Some(overloaded_at) => {
            let (interval_ns, demand_ns) = first_overload(&all, smallest, overloaded_at)
                .unwrap_or((overloaded_at, demand(&all, overloaded_at)));
            Ok(Demand::Overloaded {
                interval_ns,
                demand_ns,
            })
        }
    }
}

/// The smallest deadline point of the tasks, max(0, min D_i − J_i): no
/// shorter interval can hold a whole job.
fn smallest_point(tasks: &[EdfTask]) -> Option<u64> {
    tasks.iter().map(EdfTask::first_point).min()
}

fn check(tasks: &[EdfTask]) -> Result<(), EdfError> {
    for (index, task) in tasks.iter().enumerate() {
        if task.period_ns == 0 {
            return Err(EdfError::ZeroPeriod { index });
        }
        if task.deadline_ns > task.period_ns {
            return Err(EdfError::DeadlineAbovePeriod { index });
        }
    }
    Ok(())
}

/// Σ C_i / T_i as the exact fraction `work / hyperperiod`, H the least
/// common multiple of the periods (arbitrary precision).
struct Utilization {
    hyperperiod: BigUint,
    work: BigUint,
}

impl Utilization {
    fn of(tasks: &[EdfTask]) -> Utilization {
        let hyperperiod = tasks.iter().fold(BigUint::from(1u32), |h, task| {
            let period = BigUint::from(task.period_ns.max(1));
            let common = gcd(h.clone(), period.clone());
            h / common * period
        });
        let work = tasks
            .iter()
            .map(|task| BigUint::from(task.wcet_ns) * (&hyperperiod / task.period_ns.max(1)))
            .sum();
        Utilization { hyperperiod, work }
    }

    fn above_one(&self) -> bool {
        self.work > self.hyperperiod
    }
}

fn gcd(mut a: BigUint, mut b: BigUint) -> BigUint {
    while b != BigUint::ZERO {
        let r = &a % &b;
        a = b;
        b = r;
    }
    a
}

/// How long the busy-period recurrence may iterate before the closed-form
/// bound alone is used (it grows slowly near utilization 1).
const BUSY_PERIOD_ROUNDS: u32 = 100_000;

/// The longest interval that must be checked (utilization at most 1):
/// the smaller of the synchronous busy period L_b and, below utilization
/// 1, the bound L_a = Σ (T_i − D_i + J_i) C_i/T_i / (1 − U) past which
/// dbf(t) ≤ U·t + Σ (T_i − D_i + J_i) C_i/T_i ≤ t (George, Rivierre and
/// Spuri 1996; Zhang and Burns 2009, Theorem 1). Refused when neither is
/// found within [`HORIZON_LIMIT_NS`].
///
/// With interrupts (`busy_period_applies` false) the busy period is
/// replaced by one hyperperiod past the last first deadline point,
/// max(D_i − J_i) + H: from there on every task's count grows by H/T_i
/// over H, so dbf(t + H) + I(t + H) = dbf(t) + I(t) + U·H ≤ dbf(t) + I(t)
/// + H, and an interval beyond it is overloaded only if one H shorter is.
fn horizon(
    tasks: &[EdfTask],
    utilization: &Utilization,
    busy_period_applies: bool,
) -> Result<u64, EdfError> {
    let refused = EdfError::HorizonTooLong {
        limit_ns: HORIZON_LIMIT_NS,
    };
    let closed_form = (utilization.work < utilization.hyperperiod).then(|| {
        let h = &utilization.hyperperiod;
        let slack: BigUint = tasks
            .iter()
            .map(|t| {
                let lag = u128::from(t.period_ns - t.deadline_ns) + u128::from(t.jitter_ns);
                BigUint::from(lag) * BigUint::from(t.wcet_ns) * (h / t.period_ns)
            })
            .sum();
        let spare = h - &utilization.work;
        let bound = (slack + &spare - 1u32) / &spare;
        u64::try_from(bound).unwrap_or(u64::MAX)
    });
    let cap = closed_form.unwrap_or(u64::MAX).min(HORIZON_LIMIT_NS);
    let busy = if busy_period_applies {
        busy_period(tasks, cap)
    } else {
        let last_first_point = tasks.iter().map(EdfTask::first_point).max().unwrap_or(0);
        u64::try_from(&utilization.hyperperiod)
            .ok()
            .and_then(|h| h.checked_add(last_first_point))
            .filter(|&bound| bound <= cap)
    };
    match (busy, closed_form) {
        (Some(busy), Some(bound)) => Ok(busy.min(bound)),
        (Some(busy), None) => Ok(busy),
        (None, Some(bound)) if bound <= HORIZON_LIMIT_NS => Ok(bound),
        _ => Err(refused),
    }
}

/// The synchronous busy period L = Σ ⌈L/T_i⌉ C_i, from L = Σ C_i; `None`
/// once it passes `cap` or after [`BUSY_PERIOD_ROUNDS`] rounds. Without
/// jitter: dbf depends on C_i, T_i and D_i − J_i alone, so it is the dbf of
/// the jitter-free set with deadlines D_i − J_i, whose busy period bounds
/// the test (a task with J_i ≥ D_i overloads the interval 0, which every
/// horizon covers); with jitter the recurrence has no fixed point at
/// utilization 1.
fn busy_period(tasks: &[EdfTask], cap: u64) -> Option<u64> {
    let mut length: u128 = tasks.iter().map(|t| u128::from(t.wcet_ns)).sum();
    for _ in 0..BUSY_PERIOD_ROUNDS {
        if length > u128::from(cap) {
            return None;
        }
        let next: u128 = tasks
            .iter()
            .map(|t| length.div_ceil(u128::from(t.period_ns)) * u128::from(t.wcet_ns))
            .sum();
        if next == length {
            return u64::try_from(length).ok();
        }
        length = next;
    }
    None
}

/// Where `task`'s demand steps: its deadline points D_i − J_i + k·T_i
/// (k ≥ 0). Those at or below 0 (a jitter of D_i or more) all count in
/// dbf(0): returns how many, and the first point above them (≥ 0).
fn points_of(task: &EdfTask) -> (u128, u128) {
    let (deadline, jitter, period) = (
        u128::from(task.deadline_ns),
        u128::from(task.jitter_ns),
        u128::from(task.period_ns),
    );
    if jitter <= deadline {
        (0, deadline - jitter)
    } else {
        // Points k = 0 ..= ⌊(J − D)/T⌋ lie at or below 0.
        let at_zero = (jitter - deadline) / period + 1;
        (at_zero, deadline + at_zero * period - jitter)
    }
}

/// The largest deadline point (≥ 0) strictly below `t`, over every task.
fn last_deadline_point_below(tasks: &[EdfTask], t: u64) -> Option<u64> {
    let t = u128::from(t);
    tasks
        .iter()
        .filter_map(|task| {
            if task.deadline_from_wake {
                return last_point_from_wake(task, t);
            }
            let (at_zero, first) = points_of(task);
            let step = u128::from(task.period_ns);
            if t == 0 {
                return None;
            }
            if first >= t {
                // Only the points at or below 0, if any.
                return (at_zero > 0).then_some(0);
            }
            u64::try_from(first + (t - 1 - first) / step * step).ok()
        })
        .max()
}

/// The largest point strictly below `t` where the demand of a task whose
/// deadline runs from its wake-up steps: D itself, or D − J + k·T above
/// it.
fn last_point_from_wake(task: &EdfTask, t: u128) -> Option<u64> {
    let (deadline, jitter, period) = (
        u128::from(task.deadline_ns),
        u128::from(task.jitter_ns),
        u128::from(task.period_ns),
    );
    if t <= deadline {
        return None;
    }
    // The largest k with D − J + k·T < t, i.e. k·T < t − D + J.
    let k = (t - 1 + jitter - deadline) / period;
    let stepped = (deadline + k * period).checked_sub(jitter);
    let last = stepped.filter(|&p| p > deadline).unwrap_or(deadline);
    u64::try_from(last).ok()
}

/// QPA (Zhang and Burns 2009, Theorem 5) over t from `smallest` (the
/// smallest deadline point) to `horizon`: `None` if dbf(t) ≤ t for every
/// such t, else a t with dbf(t) > t.
fn quick_processor_demand(tasks: &[EdfTask], smallest: u64, horizon: u64) -> Option<u64> {
    let at_smallest = demand(tasks, smallest);
    if at_smallest > u128::from(smallest) {
        return Some(smallest);
    }
    // The last deadline point at or below the horizon.
    let mut t = last_deadline_point_below(tasks, horizon.saturating_add(1))?;
    loop {
        if t < smallest {
            return None;
        }
        let h = demand(tasks, t);
        if h > u128::from(t) {
            return Some(t);
        }
        if h <= u128::from(smallest) {
            return None;
        }
        // h ≤ t here, and h fits a u64.
        let h = h as u64;
        t = if h < t {
            h
        } else {
            last_deadline_point_below(tasks, t)?
        };
    }
}

/// The shortest interval t in [`from`, `up_to`] with dbf(t) > t, with its
/// demand. From t = `from` it skips forward: while dbf(t) ≤ t, every t' below the
/// smallest x with dbf(x) > t has dbf(t') ≤ t ≤ t' (dbf never decreases),
/// so x, found by bisection, is the next candidate. Each step costs one
/// bisection over u64, whatever the periods (walking every deadline point
/// could take hours for a 1 µs task beside a 1 h horizon).
fn first_overload(tasks: &[EdfTask], from: u64, up_to: u64) -> Option<(u64, u128)> {
    let mut t = from;
    loop {
        let at = demand(tasks, t);
        if at > u128::from(t) {
            return Some((t, at));
        }
        // at ≤ t: the smallest x in (t, up_to] with dbf(x) > t.
        if t >= up_to || demand(tasks, up_to) <= u128::from(t) {
            return None;
        }
        let (mut low, mut high) = (t, up_to); // dbf(low) ≤ t < dbf(high)
        while high - low > 1 {
            let middle = low + (high - low) / 2;
            if demand(tasks, middle) > u128::from(t) {
                high = middle;
            } else {
                low = middle;
            }
        }
        t = high;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn task(c: u64, d: u64, t: u64) -> EdfTask {
        EdfTask::new(c, d, t)
    }

    /// The reference: dbf from its definition, in arbitrary precision, at
    /// every integer t from 0 to max D + H (H the product of the periods,
    /// a multiple of their least common multiple: past max D the demand
    /// of t + H is that of t plus U·H ≤ H, so a first overload, if any,
    /// lies below). Its verdict and the demand there, or "utilization
    /// above one" from fractions.
    fn reference(tasks: &[EdfTask]) -> Option<(u64, u128)> {
        reference_with(tasks, &[])
    }

    /// [`reference`] with interrupts: I(t) = Σ (⌊(t + J)/T⌋ + 1)·ε counted
    /// from its definition (firings in a closed window), checked at every
    /// t from the smallest max(0, D − J) on; the span grows by the
    /// interrupts' jitter, past which I(t + H) = I(t) + H·ε/T too.
    fn reference_with(tasks: &[EdfTask], interrupts: &[Interrupt]) -> Option<(u64, u128)> {
        let big = |v: u64| BigUint::from(v);
        let periods = tasks
            .iter()
            .map(|t| t.period_ns)
            .chain(interrupts.iter().map(|i| i.period_ns));
        let product: BigUint = periods.map(big).product();
        let work: BigUint = tasks
            .iter()
            .map(|t| big(t.wcet_ns) * (&product / big(t.period_ns)))
            .chain(
                interrupts
                    .iter()
                    .map(|i| big(i.cost_ns) * (&product / big(i.period_ns))),
            )
            .sum();
        if work > product {
            return Some((u64::MAX, 0));
        }
        let smallest = tasks
            .iter()
            .map(|t| {
                if t.deadline_from_wake {
                    t.deadline_ns
                } else {
                    t.deadline_ns.saturating_sub(t.jitter_ns)
                }
            })
            .min()?;
        let span = tasks.iter().map(|t| t.deadline_ns).max().unwrap_or(0)
            + interrupts.iter().map(|i| i.jitter_ns).max().unwrap_or(0)
            + u64::try_from(product).unwrap();
        (smallest..=span).find_map(|at| {
            let dbf: BigUint = tasks
                .iter()
                .map(|t| {
                    let reach = big(at) + big(t.jitter_ns);
                    if reach < big(t.deadline_ns) || (t.deadline_from_wake && at < t.deadline_ns) {
                        BigUint::ZERO
                    } else {
                        ((reach - big(t.deadline_ns)) / big(t.period_ns) + 1u32) * big(t.wcet_ns)
                    }
                })
                .sum();
            let firings: BigUint = interrupts
                .iter()
                .map(|i| ((big(at) + big(i.jitter_ns)) / big(i.period_ns) + 1u32) * big(i.cost_ns))
                .sum();
            let total = dbf + firings;
            (total > big(at)).then(|| (at, u128::try_from(total).unwrap()))
        })
    }

    fn verdict_as_reference(demand: Demand) -> Option<(u64, u128)> {
        match demand {
            Demand::Fits { .. } => None,
            Demand::Overloaded {
                interval_ns,
                demand_ns,
            } => Some((interval_ns, demand_ns)),
            Demand::UtilizationAboveOne => Some((u64::MAX, 0)),
        }
    }

    #[test]
    fn implicit_deadlines_fit_exactly_up_to_utilization_one() {
        // U = 1/2 + 1/3 + 1/6 = 1: schedulable under EDF, busy period 6.
        let set = [task(1, 2, 2), task(1, 3, 3), task(1, 6, 6)];
        assert_eq!(decide(&set), Ok(Demand::Fits { horizon_ns: 6 }));
        let over = [task(1, 2, 2), task(1, 3, 3), task(2, 6, 6)];
        assert_eq!(decide(&over), Ok(Demand::UtilizationAboveOne));
    }

    /// U < 1 and still not schedulable: constrained deadlines crowd the
    /// demand into a short interval.
    #[test]
    fn constrained_deadlines_can_fail_below_utilization_one() {
        // U = 2/10 + 2/10 = 0.4, but both need 2 within 3.
        let set = [task(2, 3, 10), task(2, 3, 10)];
        assert_eq!(
            decide(&set),
            Ok(Demand::Overloaded {
                interval_ns: 3,
                demand_ns: 4
            })
        );
    }

    #[test]
    fn jitter_pulls_the_deadline_points_earlier() {
        // Without jitter 1 within 4 fits; 3 ns of jitter leaves 1 ns.
        let mut t = task(2, 4, 10);
        assert!(matches!(decide(&[t]), Ok(Demand::Fits { .. })));
        t.jitter_ns = 3;
        assert_eq!(
            decide(&[t]),
            Ok(Demand::Overloaded {
                interval_ns: 1,
                demand_ns: 2
            })
        );
    }

    #[test]
    fn a_jitter_of_the_deadline_or_more_overloads_the_empty_interval() {
        let late = EdfTask {
            jitter_ns: 6,
            ..task(1, 4, 10)
        };
        assert_eq!(
            decide(&[late, task(1, 5, 5)]),
            Ok(Demand::Overloaded {
                interval_ns: 0,
                demand_ns: 1
            })
        );
        // With no work of its own it moves nothing, wherever its points
        // lie (the first after 0 at 4 − 6 + 10 = 8).
        let idle = EdfTask { wcet_ns: 0, ..late };
        assert_eq!(points_of(&idle), (1, 8));
        assert_eq!(
            decide(&[idle, task(3, 4, 5)]).map(|d| matches!(d, Demand::Fits { .. })),
            Ok(true)
        );
        assert_eq!(last_deadline_point_below(&[idle], 8), Some(0));
        assert_eq!(last_deadline_point_below(&[idle], 9), Some(8));
    }

    /// The first overload lies past Σ C (5 here, at 6: dbf(6) = 7): the
    /// horizon must be the busy period, not its first step.
    #[test]
    fn an_overload_past_the_first_busy_period_step_is_found() {
        let jittered = |c, d, t, j| EdfTask {
            jitter_ns: j,
            ..task(c, d, t)
        };
        let set = [
            jittered(2, 6, 8, 0),
            jittered(2, 8, 8, 3),
            jittered(0, 3, 5, 4),
            jittered(1, 1, 2, 0),
        ];
        assert_eq!(
            decide(&set),
            Ok(Demand::Overloaded {
                interval_ns: 6,
                demand_ns: 7
            })
        );
        assert_eq!(reference(&set), Some((6, 7)));
    }

    #[test]
    fn bad_inputs_are_refused_not_guessed() {
        assert_eq!(
            decide(&[task(1, 5, 0)]),
            Err(EdfError::ZeroPeriod { index: 0 })
        );
        assert_eq!(
            decide(&[task(1, 4, 4), task(1, 6, 5)]),
            Err(EdfError::DeadlineAbovePeriod { index: 1 })
        );
        // Utilization exactly 1 (p, q co-prime: (p−1)/p + 1/q + (q−p)/(pq)):
        // no closed-form bound, and the busy period (the hyperperiod pq,
        // about 2^62) is past the limit: refused.
        let (p, q) = (2_147_483_647u64, 2_147_483_659u64);
        let long = [task(p - 1, p, p), task(1, q, q), task(q - p, p * q, p * q)];
        assert!(!Utilization::of(&long).above_one());
        assert_eq!(
            decide(&long),
            Err(EdfError::HorizonTooLong {
                limit_ns: HORIZON_LIMIT_NS
            })
        );
    }

    /// Utilization drawn towards 1 (shares of one budget), small periods
    /// so that the reference can walk every t, tasks without work, zero
    /// deadlines and jitter up to two periods.
    fn random_set() -> impl Strategy<Value = Vec<EdfTask>> {
        let task = (1u64..=12, 0u64..=100, 0u64..=12, 0u64..=24, any::<bool>());
        (prop::collection::vec(task, 1..5), 0u64..=60).prop_map(|(raw, spare)| {
            // U = Σ shares / (Σ shares + spare), rounded down per task.
            let total: u64 = raw.iter().map(|r| r.1).sum::<u64>() + spare;
            raw.into_iter()
                .map(|(period, share, d_pick, j, from_wake)| EdfTask {
                    deadline_from_wake: from_wake,
                    wcet_ns: (period * share / total.max(1)).min(period),
                    // Mostly near the period, down to 0.
                    deadline_ns: period - d_pick % (period + 1) / 2 * (d_pick % 3),
                    period_ns: period,
                    // Mostly none, some below half a period, a few up to
                    // two periods (past the deadline: overloaded at 0).
                    jitter_ns: match j {
                        0..=15 => 0,
                        16..=21 => j % (period / 2 + 1),
                        _ => j % (2 * period + 1),
                    },
                })
                .collect()
        })
    }

    /// Up to two interrupt sources of a few ns every few ns.
    fn random_interrupts() -> impl Strategy<Value = Vec<Interrupt>> {
        prop::collection::vec(
            (0u64..=2, 3u64..=12, 0u64..=6).prop_map(|(cost, period, jitter)| Interrupt {
                cost_ns: cost,
                period_ns: period,
                jitter_ns: jitter,
            }),
            0..3,
        )
    }

    /// A deadline from the wake-up: a jitter of 6 before a deadline of 4
    /// overloads the empty interval when the deadline is the nominal
    /// release's, and nothing when it is the wake-up's (the job has its
    /// whole 4 ns); the demand then steps at D and at D − J + k·T above it.
    #[test]
    fn a_deadline_from_the_wake_up_needs_a_whole_window() {
        let nominal = EdfTask {
            jitter_ns: 6,
            ..task(1, 4, 10)
        };
        assert!(matches!(
            decide(&[nominal]),
            Ok(Demand::Overloaded { interval_ns: 0, .. })
        ));
        let woken = EdfTask {
            deadline_from_wake: true,
            ..nominal
        };
        // L_a = (T − D + J)·C/T / (1 − U) = 1.2/0.9 < D: the first point.
        assert_eq!(decide(&[woken]), Ok(Demand::Fits { horizon_ns: 4 }));
        assert_eq!(reference(&[woken]), None);
        assert_eq!(jobs_due(&woken, 3), 0);
        assert_eq!(jobs_due(&woken, 4), 1);
        assert_eq!(jobs_due(&woken, 7), 1);
        assert_eq!(jobs_due(&woken, 8), 2);
        assert_eq!(last_point_from_wake(&woken, 4), None);
        assert_eq!(last_point_from_wake(&woken, 5), Some(4));
        assert_eq!(last_point_from_wake(&woken, 9), Some(8));
    }

    #[test]
    fn an_interrupt_takes_its_cost_from_every_window_it_can_fire_in() {
        // Alone the task fits exactly (3 within 3); a tick of 1 every 10
        // can fire inside that window: overloaded at 3 with 4.
        let tick = Interrupt {
            cost_ns: 1,
            period_ns: 10,
            jitter_ns: 0,
        };
        assert!(matches!(decide(&[task(3, 3, 10)]), Ok(Demand::Fits { .. })));
        assert_eq!(
            decide_with_interrupts(&[task(3, 3, 10)], &[tick]),
            Ok(Demand::Overloaded {
                interval_ns: 3,
                demand_ns: 4
            })
        );
        // Windows shorter than the smallest deadline hold no job: a
        // deadline of 4 leaves room for the firing.
        assert!(matches!(
            decide_with_interrupts(&[task(3, 4, 10)], &[tick]),
            Ok(Demand::Fits { .. })
        ));
        assert_eq!(
            decide_with_interrupts(
                &[task(3, 4, 10)],
                &[Interrupt {
                    period_ns: 0,
                    ..tick
                }]
            ),
            Err(EdfError::ZeroInterruptPeriod { index: 0 })
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1500))]

        /// With interrupts, the verdict, interval and demand equal the
        /// reference's, utilization exactly 1 included.
        #[test]
        fn with_interrupts_the_verdict_equals_the_exact_reference(
            tasks in random_set(),
            interrupts in random_interrupts(),
        ) {
            let decided = decide_with_interrupts(&tasks, &interrupts);
            prop_assert!(decided.is_ok(), "{decided:?} for {tasks:?} {interrupts:?}");
            prop_assert_eq!(
                verdict_as_reference(decided.unwrap()),
                reference_with(&tasks, &interrupts),
                "{:?} {:?}", tasks, interrupts
            );
        }

        /// The verdict, the first overloaded interval and its demand equal
        /// the reference's on random constrained-deadline sets with
        /// jitter; nothing is refused at these sizes.
        #[test]
        fn the_verdict_equals_the_exact_reference(tasks in random_set()) {
            let decided = decide(&tasks);
            prop_assert!(decided.is_ok(), "{decided:?} for {tasks:?}");
            prop_assert_eq!(verdict_as_reference(decided.unwrap()), reference(&tasks), "{:?}", tasks);
        }
    }

    /// The forward skip finds an overload far out at once: a microsecond
    /// task beside a long one and a zero-work task (walking the deadline
    /// points took minutes).
    #[test]
    fn a_far_first_overload_is_found_without_walking_every_point() {
        let set = [
            task(999, 1_000, 1_000),
            task(5_000_000_000, 1_000_000_000_000, 10_000_000_000_000),
            task(0, 1_000, 1_000),
        ];
        // A hang guard, not a measurement: a minute for what takes
        // milliseconds.
        let (sender, receiver) = std::sync::mpsc::channel();
        std::thread::spawn(move || sender.send(decide(&set)));
        let decided = receiver
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("decided within a minute");
        assert!(
            matches!(decided, Ok(Demand::Overloaded { .. })),
            "{decided:?}"
        );
    }
}
