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
    let own_wipe = vec![1u64; (setup.wipe_bytes / 8).max(1) as usize];
    let mut parts: [Vec<SwitchTimes>; 2] = [Vec::new(), Vec::new()];
    let mut recording = 0u32;
    let warmup = 1;
    let samples = Interleaved::new(["best", "worst"], setup.reps)
        .warmup(warmup)
        .seed(setup.seed)
        .run::<Error>(progress, |c| {
            let times = if c == 0 {
                partner.switch(Wipe::Nothing)?
            } else {
                read_pass(&own_wipe);
                partner.switch(Wipe::Data(0))?
            };
            recording += 1;
            if recording > 2 * warmup {
                parts[c].push(times);
            }
            total(times)
        })?;
    // Stopped early: the samples of a round left half-way are not kept.
    for part in &mut parts {
        part.truncate(samples.rounds_completed as usize);
    }
    let mut counters = prefixed("switch/", &samples.counters);
    if samples.interrupted && samples.rounds_completed == 0 {
        return Ok((None, counters));
    }
    let best = row(&parts[0])?;
    let worst = row(&parts[1])?;
    let no_cache = match setup.other_cpu {
        Some(_) if progress.stop_requested() => NoCacheRow {
            name: NO_CACHE_NAME.into(),
            measured: None,
            note: "not measured: the bench was interrupted (Ctrl-C) before it".into(),
        },
        Some(other) => match measure_thrashed(setup, other, &partner, &own_wipe, progress)? {
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
        }),
        counters,
    ))
}

/// The worst case with a thrasher streaming through the wipe size on `other`
/// (`None`: a stop came before its first round ended).
fn measure_thrashed(
    setup: &Setup,
    other: u32,
    partner: &Partner,
    own_wipe: &[u64],
    progress: &dyn Progress,
) -> Result<Option<(SwitchRow, Vec<ConditionCounters>)>> {
    let stop = AtomicBool::new(false);
    let thrash = vec![1u64; (setup.wipe_bytes / 8).max(1) as usize];
    std::thread::scope(|scope| {
        let thrasher = scope.spawn(|| -> Result<()> {
            tinct_sys::sched::set_affinity(&[other])?;
            while !stop.load(Ordering::Relaxed) {
                read_pass(&thrash);
            }
            Ok(())
        });
        let mut parts = Vec::new();
        let mut calls = 0u32;
        let measured = Interleaved::new(["no-cache"], setup.reps)
            .warmup(1)
            .seed(setup.seed)
            .run::<Error>(progress, |_| {
                read_pass(own_wipe);
                let times = partner.switch(Wipe::Data(0))?;
                calls += 1;
                if calls > 1 {
                    parts.push(times);
                }
                total(times)
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
        Ok(Some((row(&parts)?, samples.counters)))
    })
}

fn total(times: SwitchTimes) -> Result<u64> {
    times
        .interrupt_ns
        .checked_add(times.resume_ns)
        .ok_or_else(|| Error::Measurement("a context switch longer than 584 years".into()))
}

fn row(parts: &[SwitchTimes]) -> Result<SwitchRow> {
    let none = || Error::Measurement("no context-switch samples".into());
    let of = |values: Vec<u64>| Durations::of(&values).ok_or_else(none);
    Ok(SwitchRow {
        interrupt: of(parts.iter().map(|t| t.interrupt_ns).collect())?,
        resume: of(parts.iter().map(|t| t.resume_ns).collect())?,
        total: of(parts.iter().map(|&t| total(t)).collect::<Result<_>>()?)?,
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
        let names: Vec<&str> = counters.iter().map(|c| c.condition.as_str()).collect();
        assert!(
            names.starts_with(&["switch/best", "switch/worst"]),
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
