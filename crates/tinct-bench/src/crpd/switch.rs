//! The cost of a preemption: Sebek 2002 Table 1, split like the paper into
//! its two context switches — *interrupt* (the running task is switched
//! out for the preempting one) and *resume* (the preempting task yields and
//! the preempted one is switched back in) — in the best case (both tasks
//! empty, the switch path warm), the worst case (both tasks larger than the
//! cache, so the switch path runs cold), and the closest this platform has
//! to the paper's "no cache" row.
//!
//! Sebek's no-cache row ran the switch with the MPC750's caches disabled.
//! x86-64 can disable caching only in ring 0 (CR0.CD), so a user-space
//! tool cannot measure that row. The closest honest thing is measured
//! instead and named so: the worst case while another CPU streams through
//! twice the last-level cache, so that what the switch brings into the
//! shared cache is evicted again as it runs — the shared cache is of no
//! use to the switch, the private ones still are. Without a second CPU the
//! row is left unmeasured with that reason.
//!
//! Sebek's δ is the OS's switch (probes at the first and last lines of
//! the switch routines). A user-space interrupt also holds the hand-off's
//! wake-up: the victim's `FUTEX_WAKE` system call, in which the kernel
//! finds and queues the preempting task and decides to switch (Sebek's
//! step 1(a)). Under SCHED_FIFO each row also measures that wake-up alone,
//! in the same interleaved rounds: the victim wakes a second partner of
//! its own priority on its CPU, over the same bare futex, which is queued
//! but does not preempt it. The interrupt's median less the wake-up's
//! median is the switch: saving the victim, loading the partner and its
//! return from `FUTEX_WAIT` to its first time stamp. The analysis keeps
//! the whole interrupt + resume (every preemption pays both), so the split
//! only explains the number.

use super::partner::{Partner, SwitchTimes, Wipe, Wipers};
use crate::harness::counters::prefixed;
use crate::harness::memory_pass::read_pass;
use crate::harness::{ConditionCounters, Durations, Interleaved, Progress};
use crate::{Error, Result};
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, Ordering};

/// The name of the platform's stand-in for Sebek's "no cache" row.
pub const NO_CACHE_NAME: &str = "no cache (approximation: shared cache thrashed by another CPU)";

/// One row of Table 1: a preemption's two context switches and their sum.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SwitchRow {
    /// Switching from the running task to the preempting one.
    pub interrupt: Durations,
    /// Switching back from the preempting task to the preempted one.
    pub resume: Durations,
    /// Interrupt + resume of each preemption: the preemption cost without CRPD.
    pub total: Durations,
    /// The hand-off's wake-up alone, which `interrupt` contains: the
    /// victim's `FUTEX_WAKE` of a partner of its own priority that is
    /// queued but does not run (under SCHED_FIFO only; see
    /// [`SwitchCost::wakeup`]).
    pub wakeup: Option<Durations>,
}

impl SwitchRow {
    /// The interrupt's median less the wake-up's: the switch without the
    /// hand-off (`None` without a measured wake-up, or when the wake-up's
    /// median exceeds the interrupt's, which leaves nothing to split).
    pub fn switch_median_ns(&self) -> Option<u64> {
        self.wakeup
            .as_ref()
            .and_then(|wakeup| self.interrupt.median.checked_sub(wakeup.median))
    }
}

/// The platform's "no cache" row, or why it was not measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NoCacheRow {
    /// What was measured in place of Sebek's row.
    pub name: String,
    /// The measured row, if a second CPU could thrash the shared cache.
    pub measured: Option<SwitchRow>,
    /// How it relates to the paper's row.
    pub note: String,
}

/// Context-switch cost (Sebek 2002 Table 1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SwitchCost {
    /// Best case: both tasks empty, the switch path warm.
    pub best: SwitchRow,
    /// Worst case: each task reads a buffer of `wipe_bytes` before the
    /// switch, so the switch path runs from a cold cache.
    pub worst: SwitchRow,
    /// The paper's "no cache" row, as close as this platform allows.
    pub no_cache: NoCacheRow,
    /// Size of each task's buffer in the worst case (2 × LLC).
    pub wipe_bytes: u64,
    /// How the preempting task was scheduled against the preempted one.
    pub preemption: String,
    /// What each row's `wakeup` is, or why it was not measured.
    pub wakeup: String,
}

/// What the switch measurement needs.
#[derive(Debug, Clone)]
pub struct Setup {
    /// The CPU both tasks run on.
    pub cpu: u32,
    /// Another CPU for the cache thrasher of the "no cache" row, if any.
    pub other_cpu: Option<u32>,
    /// SCHED_FIFO priority of the measuring (preempted) thread, if it runs
    /// under SCHED_FIFO; the preempting task then runs one above it.
    pub fifo: Option<u8>,
    /// Recorded repetitions per case.
    pub reps: u32,
    /// Seed of the interleaving.
    pub seed: u64,
    /// Bytes each task reads in the worst case.
    pub wipe_bytes: u64,
    /// Also measure the hand-off's wake-up alone (under SCHED_FIFO), for
    /// the split of the interrupt; callers that need only δ leave it off.
    pub measure_wakeup: bool,
}

/// Measures Table 1 on the calling thread (which must be pinned to
/// `setup.cpu` and, for a true preemption, under SCHED_FIFO
/// `setup.fifo`). Returns the cost (`None` when a stop came before the
/// first round of both cases ended) and the counter totals of each case.
pub fn measure(
    setup: &Setup,
    progress: &dyn Progress,
) -> Result<(Option<SwitchCost>, Vec<ConditionCounters>)> {
    let preempter_priority = setup.fifo.map(|p| p.saturating_add(1).min(99));
    let partner = Partner::start(
        setup.cpu,
        &Wipers {
            data_bytes: vec![setup.wipe_bytes],
            chains: Vec::new(),
        },
        preempter_priority,
    )?;
    let (wakee, wakeup) = match setup.fifo.filter(|_| setup.measure_wakeup) {
        Some(priority) => (
            Some(Partner::start(
                setup.cpu,
                &Wipers::default(),
                Some(priority),
            )?),
            format!(
                "the victim's FUTEX_WAKE of a partner at its own SCHED_FIFO {priority} on CPU {}, \
                 queued but not run, over the same futex hand-off, in the same rounds: the \
                 hand-off part of each interrupt; interrupt - wakeup is the switch without it",
                setup.cpu
            ),
        ),
        None if !setup.measure_wakeup => (None, "not measured: not asked for".into()),
        None => (
            None,
            "not measured: a wake that does not preempt needs a partner of the victim's own \
             SCHED_FIFO priority, and the victim runs under SCHED_OTHER"
                .into(),
        ),
    };
    let own_wipe = vec![1u64; (setup.wipe_bytes / 8).max(1) as usize];
    let conditions: &[&str] = if wakee.is_some() {
        &["best", "worst", "best-wakeup", "worst-wakeup"]
    } else {
        &["best", "worst"]
    };
    let mut parts: [Vec<SwitchTimes>; 2] = [Vec::new(), Vec::new()];
    let mut wakes: [Vec<u64>; 2] = [Vec::new(), Vec::new()];
    let mut recorded = vec![0u32; conditions.len()];
    let warmup = 1;
    let samples = Interleaved::new(conditions.iter().copied(), setup.reps)
        .warmup(warmup)
        .seed(setup.seed)
        .run::<Error>(progress, |c| {
            let cold = c % 2 == 1;
            if cold {
                read_pass(&own_wipe);
            }
            recorded[c] += 1;
            let keep = recorded[c] > warmup;
            match (c, &wakee) {
                (0 | 1, _) => {
                    let wipe = if cold { Wipe::Data(0) } else { Wipe::Nothing };
                    let times = partner.switch(wipe)?;
                    if keep {
                        parts[c].push(times);
                    }
                    total(times)
                }
                (_, Some(wakee)) => {
                    let wake_ns = wakee.wake()?;
                    if keep {
                        wakes[c - 2].push(wake_ns);
                    }
                    Ok(wake_ns)
                }
                (_, None) => unreachable!("wake-up conditions exist only with a wakee"),
            }
        })?;
    // Stopped early: the samples of a round left half-way are not kept.
    for part in &mut parts {
        part.truncate(samples.rounds_completed as usize);
    }
    for wake in &mut wakes {
        wake.truncate(samples.rounds_completed as usize);
    }
    let mut counters = prefixed("switch/", &samples.counters);
    if samples.interrupted && samples.rounds_completed == 0 {
        return Ok((None, counters));
    }
    let best = row(&parts[0], &wakes[0])?;
    let worst = row(&parts[1], &wakes[1])?;
    let no_cache = match setup.other_cpu {
        Some(_) if progress.stop_requested() => NoCacheRow {
            name: NO_CACHE_NAME.into(),
            measured: None,
            note: "not measured: the bench was interrupted (Ctrl-C) before it".into(),
        },
        Some(other) => match measure_thrashed(
            setup,
            other,
            (&partner, wakee.as_ref()),
            &own_wipe,
            progress,
        )? {
            Some((measured, totals)) => {
                counters.extend(prefixed("switch/", &totals));
                NoCacheRow {
                    name: NO_CACHE_NAME.into(),
                    measured: Some(measured),
                    note: format!(
                        "Sebek disabled the MPC750's caches; x86-64 disables them only in ring 0 \
                         (CR0.CD). Measured instead: the worst case while CPU {other} streams \
                         through {} MiB, evicting what the switch brings into the shared cache",
                        setup.wipe_bytes >> 20
                    ),
                }
            }
            // Stopped before its first round ended: the best and worst
            // cases measured above are kept, this row is absent.
            None => NoCacheRow {
                name: NO_CACHE_NAME.into(),
                measured: None,
                note: "not measured: the bench was interrupted (Ctrl-C) before its first round"
                    .into(),
            },
        },
        None => NoCacheRow {
            name: NO_CACHE_NAME.into(),
            measured: None,
            note: "not measured: caches cannot be disabled from user space, and the \
                   approximation needs a second CPU to thrash the shared cache"
                .into(),
        },
    };
    let preemption = match (setup.fifo, preempter_priority) {
        (Some(victim), Some(preempter)) => format!(
            "the preempting task at SCHED_FIFO {preempter} preempts the victim at {victim} \
             when woken (interrupt), and hands back by blocking (resume)"
        ),
        _ => "both tasks under SCHED_OTHER: the victim hands over by blocking, so the \
              'interrupt' is a voluntary switch, not a preemption"
            .into(),
    };
    Ok((
        Some(SwitchCost {
            best,
            worst,
            no_cache,
            wipe_bytes: setup.wipe_bytes,
            preemption,
            wakeup,
        }),
        counters,
    ))
}

/// The worst case with a thrasher streaming through the wipe size on `other`
/// (`None`: a stop came before its first round ended), and its wake-up
/// alone when there is a wakee.
fn measure_thrashed(
    setup: &Setup,
    other: u32,
    (partner, wakee): (&Partner, Option<&Partner>),
    own_wipe: &[u64],
    progress: &dyn Progress,
) -> Result<Option<(SwitchRow, Vec<ConditionCounters>)>> {
    let stop = AtomicBool::new(false);
    let thrash = vec![1u64; (setup.wipe_bytes / 8).max(1) as usize];
    let conditions: &[&str] = if wakee.is_some() {
        &["no-cache", "no-cache-wakeup"]
    } else {
        &["no-cache"]
    };
    std::thread::scope(|scope| {
        let thrasher = scope.spawn(|| -> Result<()> {
            tinct_sys::sched::set_affinity(&[other])?;
            while !stop.load(Ordering::Relaxed) {
                read_pass(&thrash);
            }
            Ok(())
        });
        let mut parts = Vec::new();
        let mut wakes = Vec::new();
        let mut recorded = [0u32; 2];
        let measured = Interleaved::new(conditions.iter().copied(), setup.reps)
            .warmup(1)
            .seed(setup.seed)
            .run::<Error>(progress, |c| {
                read_pass(own_wipe);
                recorded[c] += 1;
                let keep = recorded[c] > 1;
                match wakee.filter(|_| c == 1) {
                    None => {
                        let times = partner.switch(Wipe::Data(0))?;
                        if keep {
                            parts.push(times);
                        }
                        total(times)
                    }
                    Some(wakee) => {
                        let wake_ns = wakee.wake()?;
                        if keep {
                            wakes.push(wake_ns);
                        }
                        Ok(wake_ns)
                    }
                }
            });
        stop.store(true, Ordering::Relaxed);
        let joined = thrasher
            .join()
            .map_err(|_| Error::Measurement("the cache thrasher panicked".into()))?;
        joined?;
        let samples = measured?;
        if samples.interrupted && samples.rounds_completed == 0 {
            return Ok(None);
        }
        parts.truncate(samples.rounds_completed as usize);
        wakes.truncate(samples.rounds_completed as usize);
        Ok(Some((row(&parts, &wakes)?, samples.counters)))
    })
}

fn total(times: SwitchTimes) -> Result<u64> {
    times
        .interrupt_ns
        .checked_add(times.resume_ns)
        .ok_or_else(|| Error::Measurement("a context switch longer than 584 years".into()))
}

/// A row of Table 1 from its preemptions and its wake-ups alone (none
/// without a wakee).
fn row(parts: &[SwitchTimes], wakes: &[u64]) -> Result<SwitchRow> {
    let none = || Error::Measurement("no context-switch samples".into());
    let of = |values: Vec<u64>| Durations::of(&values).ok_or_else(none);
    Ok(SwitchRow {
        interrupt: of(parts.iter().map(|t| t.interrupt_ns).collect())?,
        resume: of(parts.iter().map(|t| t.resume_ns).collect())?,
        total: of(parts.iter().map(|&t| total(t)).collect::<Result<_>>()?)?,
        wakeup: Durations::of(wakes),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::NoProgress;

    /// 4 rounds on the first of `cpus` under SCHED_OTHER, the no-cache
    /// approximation's thrasher on the second if there is one.
    fn four_rounds_under_other(cpus: &[u32]) -> Setup {
        Setup {
            cpu: cpus[0],
            other_cpu: cpus.get(1).copied(),
            fifo: None,
            reps: 4,
            seed: 1,
            wipe_bytes: 1 << 20,
            measure_wakeup: true,
        }
    }

    #[test]
    fn every_row_is_the_sum_of_its_two_switches() {
        let cpus = tinct_sys::sched::affinity().unwrap();
        let _pin = crate::harness::pin::PinGuard::pin(cpus[0]).unwrap();
        let setup = four_rounds_under_other(&cpus);
        let (cost, counters) = measure(&setup, &NoProgress).unwrap();
        let cost = cost.expect("not stopped: measured");
        for row in [&cost.best, &cost.worst]
            .into_iter()
            .chain(cost.no_cache.measured.as_ref())
        {
            assert_eq!(row.total.count, 4);
            assert!(row.total.min >= row.interrupt.min + row.resume.min);
            assert!(row.total.max <= row.interrupt.max + row.resume.max);
        }
        assert_eq!(cost.no_cache.measured.is_some(), cpus.len() > 1);
        assert!(cost.preemption.contains("SCHED_OTHER"));
        // Under SCHED_OTHER no thread is sure not to preempt: no wake-up alone.
        assert!(cost.wakeup.starts_with("not measured"), "{}", cost.wakeup);
        assert!(cost.best.wakeup.is_none() && cost.best.switch_median_ns().is_none());
        let names: Vec<&str> = counters.iter().map(|c| c.condition.as_str()).collect();
        assert!(
            names.starts_with(&["switch/best", "switch/worst"]),
            "{names:?}"
        );
    }

    /// Under SCHED_FIFO every row also has the hand-off's wake-up alone,
    /// sampled in the same rounds as its switches, and the switch alone is
    /// the interrupt's median less it.
    #[test]
    fn under_fifo_each_row_splits_its_interrupt_into_wake_up_and_switch() {
        if !tinct_sys::testing::capable_or_skip(
            "a SCHED_FIFO victim and its partners",
            tinct_sys::privilege::Capability::SysNice,
        ) {
            return;
        }
        let _serial = tinct_sys::testing::serial();
        let cpus = tinct_sys::sched::affinity().unwrap();
        let _pin = crate::harness::pin::PinGuard::pin(cpus[0]).unwrap();
        let priority = 10;
        tinct_sys::sched::set_fifo(priority).unwrap();
        let setup = Setup {
            fifo: Some(priority),
            ..four_rounds_under_other(&cpus)
        };
        let measured = measure(&setup, &NoProgress);
        tinct_sys::sched::set_other().unwrap();
        let (cost, counters) = measured.unwrap();
        let cost = cost.expect("not stopped: measured");
        assert!(cost.wakeup.contains("SCHED_FIFO 10"), "{}", cost.wakeup);
        assert!(!cost.wakeup.contains("  "), "one line: {}", cost.wakeup);
        for row in [&cost.best, &cost.worst]
            .into_iter()
            .chain(cost.no_cache.measured.as_ref())
        {
            let wakeup = row.wakeup.as_ref().expect("measured under SCHED_FIFO");
            assert_eq!(wakeup.count, row.interrupt.count);
            assert_eq!(
                row.switch_median_ns(),
                row.interrupt.median.checked_sub(wakeup.median)
            );
        }
        let names: Vec<&str> = counters.iter().map(|c| c.condition.as_str()).collect();
        assert!(
            names.starts_with(&[
                "switch/best",
                "switch/worst",
                "switch/best-wakeup",
                "switch/worst-wakeup"
            ]),
            "{names:?}"
        );
    }

    /// A Ctrl-C during the no-cache approximation, before its first round
    /// ended, keeps the best and worst cases measured before it (it was an
    /// error that lost them, and with them the bench's files).
    #[test]
    fn a_stop_in_the_no_cache_approximation_keeps_the_cases_measured_before() {
        let cpus = tinct_sys::sched::affinity().unwrap();
        let _pin = crate::harness::pin::PinGuard::pin(cpus[0]).unwrap();
        let setup = four_rounds_under_other(&cpus);
        // Best and worst: 1 warm-up round and 4 rounds of 2 conditions (10
        // steps); the no-cache approximation's warm-up call is step 11.
        let stop = crate::harness::StopAfter::new(11);
        let (cost, _) = measure(&setup, &stop).unwrap();
        let cost = cost.expect("the best and worst cases finished their rounds");
        assert_eq!((cost.best.total.count, cost.worst.total.count), (4, 4));
        assert!(cost.no_cache.measured.is_none());
        if cpus.len() > 1 {
            assert!(
                cost.no_cache.note.contains("interrupted"),
                "{}",
                cost.no_cache.note
            );
        }
    }
}
