//! Measuring `tinct bench isolation`: blocks of victim jobs under the four
//! conditions, interleaved round by round, with the aggressors running
//! during the contended ones.

use super::kernels::Chase;
use super::plan::{self, Plan};
use super::reservation::{Mechanism, ResctrlRecord, ResctrlReservation};
use super::{Condition, WARMUP_ROUNDS};
use crate::harness::memory_pass;
use crate::harness::pin::PinGuard;
use crate::harness::{ConditionCounters, Interleaved, Progress};
use crate::page_placement::PagedMemory;
use crate::pinned_threads::nanos;
use crate::scheduling_and_load::{RunConditions, thread_cpu_time_ns};
use crate::{Error, Result};
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;
use tinct_mem::PageId;

/// What [`measure`] found.
pub struct Measured {
    /// Per condition (in [`Condition::ALL`] order), every recorded job.
    pub job_times: Vec<Vec<JobTime>>,
    /// Counter totals per condition.
    pub counters: Vec<ConditionCounters>,
    pub run_conditions: RunConditions,
    /// Why this reservation mechanism was chosen.
    pub reservation_reason: String,
    /// The resctrl groups, masks and readings, if resctrl reserved the cache.
    pub resctrl_groups: Option<ResctrlRecord>,
    /// Why frames are unreadable (colouring not controlled), if so.
    pub frames_unreadable: Option<String>,
    /// Coloured pages whose frame changed during the run.
    pub moved_pages: Option<usize>,
}

/// One thread's memory in each reservation setting.
struct Memories<'a> {
    victim_reserved: Chase<'a>,
    victim_heap: Chase<'a>,
    aggressors_reserved: Vec<Vec<&'a mut [u64]>>,
    aggressors_heap: Vec<Vec<&'a mut [u64]>>,
}

/// The ordinary-heap memory of every thread: the unreserved conditions'
/// and, with resctrl (whose masks reserve the cache), the reserved ones'.
struct Heaps {
    victim: Vec<u64>,
    aggressors: Vec<Vec<u64>>,
    victim_reserved: Vec<u64>,
    aggressors_reserved: Vec<Vec<u64>>,
}

impl Heaps {
    fn new(plan: &Plan) -> Self {
        let page_words = plan.page_bytes as usize / 8;
        let heap = |pages: usize, fill: u64| vec![fill; pages * page_words];
        let aggressors = plan.aggressor_cpus().len();
        let (reserved_victim, reserved_aggressor) = if plan.by_resctrl() {
            (plan.victim_pages, plan.aggressor_pages)
        } else {
            (0, 0)
        };
        Self {
            victim: heap(plan.victim_pages, 0),
            aggressors: (0..aggressors)
                .map(|_| heap(plan.aggressor_pages, 1))
                .collect(),
            victim_reserved: heap(reserved_victim, 0),
            aggressors_reserved: (0..aggressors)
                .map(|_| heap(reserved_aggressor, 1))
                .collect(),
        }
    }
}

/// Sets up the memory and the reservation and measures every condition.
pub(super) fn measure(plan: &Plan, progress: &dyn Progress) -> Result<Measured> {
    let mut colored = if plan.by_resctrl() {
        None
    } else {
        Some(plan::colored_arena(plan)?)
    };
    let frames_unreadable = colored
        .as_ref()
        .and_then(|(arena, _)| arena.placement_unknown().map(str::to_string));
    let mut heaps = Heaps::new(plan);
    let (reservation_reason, resctrl_reservation) = match plan.mechanism.clone() {
        Mechanism::Coloring(why) => (why, None),
        Mechanism::Resctrl(resctrl, l3) => {
            let why = format!(
                "L3 cache allocation offered by resctrl at {} ({} mask bits, min {}, domains {:?})",
                resctrl.mount().display(),
                l3.cbm_bits,
                l3.min_cbm_bits,
                l3.domains
            );
            let groups = ResctrlReservation::create(resctrl, l3, plan.victim_percent)?;
            (why, Some(groups))
        }
    };

    let mut job_times: Vec<Vec<JobTime>> = vec![Vec::new(); Condition::ALL.len()];
    let total = u64::from(plan.run.reps + WARMUP_ROUNDS) * Condition::ALL.len() as u64;
    progress.start(total, "isolation");
    let mut run_conditions = RunConditions::start(plan.fifo)?;
    let measured = (|| -> Result<Vec<ConditionCounters>> {
        let mut memories = memories(plan, colored.as_mut(), &mut heaps)?;
        let _pin = PinGuard::pin(plan.run.cpus[0])?;
        run_conditions.apply_to_current_thread()?;
        run_rounds(
            plan,
            &mut memories,
            resctrl_reservation.as_ref(),
            &mut job_times,
            progress,
        )
    })();
    if plan.fifo.is_some() {
        // Back to SCHED_OTHER before anything else runs on this thread.
        tinct_sys::sched::set_other()?;
    }
    let counters = measured?;
    // Reads the groups' counters and removes them (dropping removes them
    // on every earlier error return).
    let resctrl_groups = resctrl_reservation
        .map(ResctrlReservation::finish)
        .transpose()?;
    progress.finish();
    run_conditions.finish();
    Ok(Measured {
        job_times,
        counters,
        run_conditions,
        reservation_reason,
        resctrl_groups,
        frames_unreadable,
        moved_pages: colored.as_ref().and_then(|(arena, _)| arena.moved_pages()),
    })
}

/// Each thread's memory: the reserved conditions' from the coloured arena
/// (or the reserved heaps under resctrl), the unreserved ones' from the heap.
fn memories<'a>(
    plan: &Plan,
    colored: Option<&'a mut (PagedMemory, Vec<Vec<PageId>>)>,
    heaps: &'a mut Heaps,
) -> Result<Memories<'a>> {
    let page_words = plan.page_bytes as usize / 8;
    let (victim_reserved, aggressors_reserved) = match colored {
        Some((arena, groups)) => {
            let mut split = arena.split(groups)?.into_iter();
            let victim = Chase::new(split.next().unwrap_or_default(), plan.run.seed);
            (victim, split.collect())
        }
        None => (
            Chase::new(
                heaps.victim_reserved.chunks_exact_mut(page_words).collect(),
                plan.run.seed,
            ),
            heaps
                .aggressors_reserved
                .iter_mut()
                .map(|h| h.chunks_exact_mut(page_words).collect())
                .collect(),
        ),
    };
    Ok(Memories {
        victim_reserved,
        victim_heap: Chase::new(
            heaps.victim.chunks_exact_mut(page_words).collect(),
            plan.run.seed,
        ),
        aggressors_reserved,
        aggressors_heap: heaps
            .aggressors
            .iter_mut()
            .map(|h| h.chunks_exact_mut(page_words).collect())
            .collect(),
    })
}

/// The interleaved rounds; every recorded job lands in `job_times`.
fn run_rounds(
    plan: &Plan,
    memories: &mut Memories<'_>,
    resctrl: Option<&ResctrlReservation>,
    job_times: &mut [Vec<JobTime>],
    progress: &dyn Progress,
) -> Result<Vec<ConditionCounters>> {
    let names = Condition::ALL.map(Condition::name);
    let mut round = 0u32;
    // Jobs recorded per call, per condition: a round left half-way by
    // Ctrl-C is dropped from the job times as from the samples.
    let mut recorded: Vec<Vec<usize>> = vec![Vec::new(); Condition::ALL.len()];
    let samples = Interleaved::new(names, plan.run.reps)
        .warmup(WARMUP_ROUNDS)
        .seed(plan.run.seed)
        .run(progress, |c| {
            let condition = Condition::ALL[c];
            progress.set_message(condition.name());
            let times = run_block(
                memories,
                condition,
                plan.jobs_per_round,
                plan.aggressor_cpus(),
                plan.fifo,
                resctrl,
            )?;
            // The first `WARMUP_ROUNDS` calls per condition are warm-up.
            round += 1;
            if round > WARMUP_ROUNDS * Condition::ALL.len() as u32 {
                job_times[c].extend_from_slice(&times);
                recorded[c].push(times.len());
            }
            Ok::<u64, Error>(times.iter().map(|t| t.cpu_ns).max().unwrap_or(0))
        })?;
    for (times, calls) in job_times.iter_mut().zip(&recorded) {
        let kept = calls
            .iter()
            .take(samples.rounds_completed as usize)
            .sum::<usize>();
        times.truncate(kept);
    }
    Ok(samples.counters)
}

/// One block: aggressors (if contended) start on their CPUs, the victim (on
/// the calling, pinned thread) runs one warm-up job and `jobs` recorded
/// jobs, then the aggressors stop.
fn run_block(
    memories: &mut Memories<'_>,
    condition: Condition,
    jobs: u32,
    aggressor_cpus: &[u32],
    fifo: Option<u8>,
    resctrl: Option<&ResctrlReservation>,
) -> Result<Vec<JobTime>> {
    // The victim's group before the aggressors are spawned (threads start
    // in their creator's group); each aggressor then moves itself.
    if let Some(groups) = resctrl {
        if condition.reserved() {
            groups.enter_victim()?;
        } else {
            groups.enter_default()?;
        }
    }
    let aggressors_reserved = resctrl.filter(|_| condition.reserved());
    let victim = if condition.reserved() {
        &memories.victim_reserved
    } else {
        &memories.victim_heap
    };
    let victim_jobs = |victim: &Chase<'_>| {
        victim.job();
        (0..jobs)
            .map(|_| {
                let (start, cpu_start) = (Instant::now(), thread_cpu_time_ns());
                victim.job();
                JobTime {
                    cpu_ns: thread_cpu_time_ns().saturating_sub(cpu_start),
                    wall_ns: nanos(start.elapsed()),
                }
            })
            .collect::<Vec<JobTime>>()
    };
    if !condition.contended() {
        return Ok(victim_jobs(victim));
    }
    let aggressors = if condition.reserved() {
        &mut memories.aggressors_reserved
    } else {
        &mut memories.aggressors_heap
    };
    let stop = AtomicBool::new(false);
    let ready = Barrier::new(aggressors.len() + 1);
    std::thread::scope(|scope| {
        let handles: Vec<_> = aggressors
            .iter_mut()
            .zip(aggressor_cpus)
            .map(|(pages, &cpu)| {
                let (stop, ready) = (&stop, &ready);
                scope.spawn(move || {
                    let pinned = tinct_sys::sched::set_affinity(&[cpu])
                        .and_then(|()| fifo.map_or(Ok(()), tinct_sys::sched::set_fifo))
                        .map_err(Error::from)
                        .and_then(|()| {
                            aggressors_reserved.map_or(Ok(()), ResctrlReservation::enter_aggressors)
                        });
                    ready.wait();
                    pinned?;
                    Ok::<u64, Error>(memory_pass::aggress(pages, stop))
                })
            })
            .collect();
        ready.wait();
        let times = victim_jobs(victim);
        stop.store(true, Ordering::Relaxed);
        for handle in handles {
            handle
                .join()
                .map_err(|_| Error::Measurement("an aggressor thread panicked".into()))??;
        }
        Ok(times)
    })
}

/// One victim job's CPU time and wall-clock time (a row of `isolation.csv`).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct JobTime {
    pub cpu_ns: u64,
    pub wall_ns: u64,
}
