//! Per-task response-time bounds under EDF (Spuri, "Analysis of deadline
//! scheduled real-time systems", INRIA RR-2772, 1996), for tasks whose
//! deadline runs from their wake-up ([`EdfTask::deadline_from_wake`], the
//! kernel's CBS) with interrupts ahead of every job: a bound per task
//! that a run can check job by job, tighter than the deadline.
//!
//! Take a job x of task i woken at w with kernel deadline d = w + D_i, and
//! the last instant s ≤ w at which no job due by d and no interrupt fired
//! before it is pending. From s the CPU runs only interrupts fired since s
//! and jobs woken since s and due by d, until x completes (EDF). With a =
//! w − s, within a window of length t from s that work is at most
//!
//! ```text
//! I(t) + Σ_{j≠i} min(⌈(t + J_j)/T_j⌉, [a + D_i ≥ D_j]·(⌊(a + D_i − D_j + J_j)/T_j⌋ + 1))·C_j
//!      + (⌊(a + J_i)/T_i⌋ + 1)·C_i
//! ```
//!
//! (jobs of j woken in the window, and due by d; the jobs of i woken from s
//! up to w, x included), so x completes by s + L(a), L(a) the least fixed
//! point of that sum, and its response from the wake-up is at most
//! max(C_i, L(a) − a). L(a) − a only falls between the offsets where a
//! count steps — a = D_j − D_i, where j's first job comes due by d, a =
//! D_j − D_i − J_j + k·T_j above it, and a = k·T_i − J_i (and 0) — so
//! those offsets below the longest busy period are the ones to try. When
//! that busy period is unbounded (utilization 1) or the offsets are too
//! many to try, no bound is given (the caller keeps the deadline).

use super::edf::{EdfTask, Interrupt, interrupts_within};

/// The most count evaluations one core may take; the tasks not bounded by
/// then keep their deadlines as their bounds: about a second.
pub const WORK_LIMIT: u64 = 50_000_000;

/// The most release offsets tried for one task (16 MiB of them); a task
/// with more keeps its deadline as its bound.
pub const OFFSET_LIMIT: u128 = 1 << 20;

/// The longest interval examined.
const LIMIT_NS: u128 = 1 << 61;

/// How many rounds the busy-period recurrence may take (it creeps near
/// utilization 1).
const BUSY_PERIOD_ROUNDS: u32 = 100_000;

/// The jobs of `task` woken within a window of length t: ⌈(t + J)/T⌉.
fn woken_within(task: &EdfTask, t: u128) -> u128 {
    t.saturating_add(u128::from(task.jitter_ns))
        .div_ceil(u128::from(task.period_ns))
}

/// The longest busy period: the least fixed point of B = I(B) + Σ ⌈(B +
/// J_j)/T_j⌉·C_j; `None` past [`LIMIT_NS`] or [`BUSY_PERIOD_ROUNDS`].
fn longest_busy_period(tasks: &[EdfTask], interrupts: &[Interrupt]) -> Option<u128> {
    let mut length = tasks
        .iter()
        .map(|t| u128::from(t.wcet_ns))
        .fold(interrupts_within(interrupts, 0), u128::saturating_add);
    for _ in 0..BUSY_PERIOD_ROUNDS {
        let next = tasks
            .iter()
            .map(|t| woken_within(t, length).saturating_mul(u128::from(t.wcet_ns)))
            .fold(interrupts_within(interrupts, length), u128::saturating_add);
        if next == length {
            return Some(length);
        }
        if next > LIMIT_NS {
            return None;
        }
        length = next;
    }
    None
}

/// The response bound of every task from its wake-up, for tasks that
/// passed the demand test (every kernel deadline met); `None` for a task
/// whose bound was not found within the limits (its deadline stays its
/// bound).
pub fn response_bounds(tasks: &[EdfTask], interrupts: &[Interrupt]) -> Vec<Option<u64>> {
    let none = vec![None; tasks.len()];
    if tasks.iter().any(|t| t.period_ns == 0) || interrupts.iter().any(|i| i.period_ns == 0) {
        return none;
    }
    let Some(busy) = longest_busy_period(tasks, interrupts) else {
        return none;
    };
    let mut work = 0u64;
    (0..tasks.len())
        .map(|i| bound_of(tasks, interrupts, i, busy, &mut work))
        .collect()
}

/// Where task `j`'s count steps for a job of task `i`, the offsets a ≥ 0
/// below `busy` (module documentation), appended to `offsets`; `false`,
/// with nothing appended, when `offsets` would pass [`OFFSET_LIMIT`].
fn offsets_of(tasks: &[EdfTask], i: usize, j: usize, busy: u128, offsets: &mut Vec<u128>) -> bool {
    let (me, task) = (&tasks[i], &tasks[j]);
    let (period, jitter) = (u128::from(task.period_ns), u128::from(task.jitter_ns));
    // Task i's own count: a = k·T_i − J_i. Another task's jobs due by d:
    // from 0 to 1 at a = D_j − D_i (its deadline runs from its wake-up, so
    // none is due before), then at a = D_j − D_i − J_j + k·T_j above it.
    let mut first_due = None;
    let (base, floor) = if j == i {
        (-(jitter as i128), 0i128)
    } else {
        let first = i128::from(task.deadline_ns) - i128::from(me.deadline_ns);
        if first >= 0 && (first as u128) < busy {
            first_due = Some(first as u128);
        }
        (first - jitter as i128, first.max(0) + 1)
    };
    let first_k = if base >= floor {
        0
    } else {
        ((floor - base) as u128).div_ceil(period)
    };
    let start = (base + (first_k * period) as i128) as u128;
    let count = if start < busy {
        (busy - 1 - start) / period + 1
    } else {
        0
    };
    let room = OFFSET_LIMIT.saturating_sub(offsets.len() as u128);
    if count + u128::from(first_due.is_some()) > room {
        return false;
    }
    offsets.extend(first_due);
    offsets.extend((0..count).map(|k| start + k * period));
    true
}

/// Task i's bound from its wake-up: the worst over the offsets of
/// max(C_i, L(a) − a); `None` when the limits were reached (or, which a
/// schedulable set never sees, past its deadline).
fn bound_of(
    tasks: &[EdfTask],
    interrupts: &[Interrupt],
    i: usize,
    busy: u128,
    work: &mut u64,
) -> Option<u64> {
    let me = &tasks[i];
    let deadline = u128::from(me.deadline_ns);
    let mut offsets: Vec<u128> = vec![0];
    for j in 0..tasks.len() {
        if !offsets_of(tasks, i, j, busy, &mut offsets) {
            return None;
        }
    }
    offsets.sort_unstable();
    offsets.dedup();
    let mut worst = u128::from(me.wcet_ns);
    for a in offsets {
        let own = ((a + u128::from(me.jitter_ns)) / u128::from(me.period_ns) + 1)
            .saturating_mul(u128::from(me.wcet_ns));
        let due_by = a + deadline;
        // Per task, how many of its jobs can be due by d.
        let caps: Vec<u128> = tasks
            .iter()
            .map(|t| {
                let d = u128::from(t.deadline_ns);
                if due_by < d {
                    0
                } else {
                    (due_by - d + u128::from(t.jitter_ns)) / u128::from(t.period_ns) + 1
                }
            })
            .collect();
        let mut length = own;
        loop {
            *work = work.saturating_add(tasks.len() as u64);
            if *work > WORK_LIMIT {
                return None;
            }
            let next = tasks
                .iter()
                .enumerate()
                .filter(|&(j, _)| j != i)
                .map(|(j, t)| {
                    woken_within(t, length)
                        .min(caps[j])
                        .saturating_mul(u128::from(t.wcet_ns))
                })
                .fold(
                    interrupts_within(interrupts, length).saturating_add(own),
                    u128::saturating_add,
                );
            if next == length {
                break;
            }
            length = next;
            if length > due_by {
                // Past the deadline: no bound below it.
                return None;
            }
        }
        worst = worst.max(length.saturating_sub(a));
    }
    u64::try_from(worst)
        .ok()
        .filter(|&r| u128::from(r) <= deadline)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// As the kernel's reservations run: the deadline from the wake-up.
    fn task(c: u64, d: u64, t: u64) -> EdfTask {
        EdfTask {
            deadline_from_wake: true,
            ..EdfTask::new(c, d, t)
        }
    }

    /// Two tasks released together: the shorter deadline runs first, the
    /// other waits for it (Spuri's example shape).
    #[test]
    fn the_longer_deadline_waits_for_the_shorter() {
        let set = [task(2, 5, 10), task(3, 9, 10)];
        assert_eq!(response_bounds(&set, &[]), [Some(2), Some(5)]);
    }

    /// A job of the longer-deadline task woken just before the other's
    /// can be preempted by it: both bounds count the other's job.
    #[test]
    fn a_later_wake_with_an_earlier_deadline_preempts() {
        // b (D = 8) woken at 0, a (D = 3) woken at 1: a runs 1..3, b ends
        // at 5; a's worst is alone (2), b's 2 + 3 = 5.
        let set = [task(2, 3, 10), task(3, 8, 10)];
        assert_eq!(response_bounds(&set, &[]), [Some(2), Some(5)]);
    }

    /// A tie of kernel deadlines: b (D = 8, J = 1) woken 2 after a (D =
    /// 10) is due with it and waits for its whole job: 8 from its wake-up.
    /// The offset a = D_a − D_b = 2 is where a's job first counts (the
    /// classic model's a = D_a − D_b − J_a = 1 misses it; the simulation
    /// found this).
    #[test]
    fn a_job_due_at_the_same_instant_is_counted_from_its_deadline_offset() {
        let jittered = |c, d, p| EdfTask {
            jitter_ns: 1,
            ..task(c, d, p)
        };
        let set = [jittered(5, 8, 12), jittered(5, 10, 20)];
        assert_eq!(response_bounds(&set, &[]), [Some(8), Some(10)]);
    }

    /// Too many offsets for one task (a 4 µs task beside a 2^40 ns one:
    /// 2^27 of them) leave that task without a bound, quickly and without
    /// gigabytes of offsets; the other keeps its own.
    #[test]
    fn a_task_with_too_many_offsets_keeps_its_deadline() {
        let set = [
            task(2_048, 4_096, 4_096),
            task((1 << 39) - 4_096, 1 << 40, 1 << 40),
        ];
        let bounds = response_bounds(&set, &[]);
        assert_eq!(bounds[0], None);
        assert_eq!(bounds[1], None);
        // Alone, the long task is its own C.
        assert_eq!(response_bounds(&set[1..], &[]), [Some((1 << 39) - 4_096)]);
    }

    #[test]
    fn interrupts_lengthen_every_bound() {
        let tick = Interrupt {
            cost_ns: 1,
            period_ns: 4,
            jitter_ns: 0,
        };
        let set = [task(2, 5, 10), task(3, 9, 10)];
        // Within 2: one tick (a closed window counts one firing): 3; b:
        // 5 of work and the ticks at 0 and 4 within the 7 it takes: 7.
        assert_eq!(response_bounds(&set, &[tick]), [Some(3), Some(7)]);
    }

    /// Utilization 1 with jitter: the busy period has no fixed point and no
    /// bound is given (the deadline stays the bound).
    #[test]
    fn no_bound_without_a_busy_period() {
        let mut a = task(5, 10, 10);
        a.jitter_ns = 3;
        let set = [a, task(5, 10, 10)];
        assert_eq!(response_bounds(&set, &[]), [None, None]);
    }
}
