//! The measuring loops of `tinct bench overheads`: δ (crpd's context
//! switch), the release latency (tinct-rt's) and the tick (a busy loop's
//! interruptions, [`super::tick`]), each turned into the record the
//! calibration stores.

use super::plan::Setup;
use super::tick;
use super::{BusyLoop, Measured, ReleaseLatency};
use crate::crpd;
use crate::harness::{Durations, Progress};
use crate::{Error, Result};
use tinct_core::calibration::{OverheadRecord, Overheads, TickRecord};
use tinct_core::units::Nanos;
use tinct_rt::release_latency::{self, LatencyRun};
use tinct_sys::signals::StopFlag;

/// SCHED_FIFO priority of the context-switch pair and the busy loop.
const FIFO_PRIORITY: u8 = crpd::DEFAULT_FIFO_PRIORITY;
/// SCHED_FIFO priority of the release-latency threads (cyclictest's usual).
const LATENCY_PRIORITY: u8 = 95;
/// Period of the release-latency threads.
const LATENCY_PERIOD_NS: u64 = 1_000_000;

/// Why an overhead is absent when Ctrl-C came before its measurement.
const STOPPED_BEFORE: &str = "not measured: the run was interrupted (Ctrl-C) before it";
/// How a record's `measured_by` says a stop cut the measurement short.
pub(super) const STOPPED_DURING: &str = "stopped (Ctrl-C) after";

/// The progress steps [`measure`] reports for `switch_reps` context-switch
/// samples: each sample of the two switch cases (and their warm-up), then
/// one step for the release latency and one for the busy loop.
pub fn progress_steps(switch_reps: u32) -> u64 {
    (u64::from(switch_reps) + 1) * 2 + 2
}

fn privileged() -> bool {
    tinct_sys::privilege::Privileges::read(&tinct_sys::SysRoot::live()).is_ok_and(|p| p.is_root())
}

/// Measures the three overheads; one that fails is `unmeasured`, with why.
/// A stop ([`Progress::stop_requested`]) ends the run at the next of the
/// three: the overheads not reached are `unmeasured` as such (the context
/// switch keeps the whole rounds it finished). It also ends the one under
/// way: the release latency at once when the caller has a
/// [`Progress::stop_flag`], with the jobs released until then; the busy
/// loop after its current slice, with the slices it finished.
pub fn measure(setup: &Setup, progress: &dyn Progress) -> Result<Measured> {
    let cpu = *setup
        .cpus
        .first()
        .ok_or_else(|| Error::option("--cpus", "at least one CPU", "none"))?;
    let root = privileged();
    let mut overheads = Overheads::default();
    progress.set_message("context switch");
    let fifo = root.then_some(FIFO_PRIORITY);
    let context_switch = match crpd::context_switch(
        cpu,
        setup.llc_bytes,
        setup.switch_reps,
        setup.seed,
        fifo,
        progress,
    ) {
        Ok((cost, policy)) => {
            // δ is one switch: the slower of a preemption's two (Sebek's
            // interrupt and resume), in the worst case.
            let one_switch = if cost.worst.interrupt.max >= cost.worst.resume.max {
                &cost.worst.interrupt
            } else {
                &cost.worst.resume
            };
            overheads.set_context_switch(record(
                one_switch,
                format!(
                    "tinct bench crpd's context switch, worst case (each thread read {} before handing over, so the switch path ran cold), \
                     the slower of a preemption's interrupt and resume switches between two threads on CPU {cpu} under {}",
                    tinct_core::units::Bytes(cost.wipe_bytes),
                    policy_name(policy)
                ),
            ));
            Some(cost)
        }
        Err(e) => {
            overheads.set_unmeasured("context_switch", e.to_string());
            None
        }
    };
    progress.set_message("release latency");
    let release_latency = if progress.stop_requested() {
        overheads.set_unmeasured("release_latency", STOPPED_BEFORE);
        None
    } else if root {
        let stop = progress.stop_flag().unwrap_or_default();
        match measure_release_latency(setup, &stop) {
            Ok(measured) => {
                let length = if measured.stopped {
                    format!("{STOPPED_DURING} {} jobs", measured.all.count)
                } else {
                    format!("{} s", setup.seconds)
                };
                overheads.set_release_latency(record(
                    &measured.woke,
                    format!(
                        "tinct-rt's release latency: one SCHED_FIFO {LATENCY_PRIORITY} thread on each of CPU {}, jobs of no work every {}, {length}; \
                         jobs whose thread slept until the release, as cyclictest counts",
                        tinct_sys::format_cpu_list(&measured.cpus),
                        Nanos(measured.period_ns),
                    ),
                ));
                Some(measured)
            }
            Err(e) => {
                overheads.set_unmeasured("release_latency", e.to_string());
                None
            }
        }
    } else {
        overheads.set_unmeasured(
            "release_latency",
            "needs SCHED_FIFO and mlockall: run as root",
        );
        None
    };
    progress.inc(1);
    progress.set_message("timer tick");
    let busy_loop = if progress.stop_requested() {
        overheads.set_unmeasured("tick", STOPPED_BEFORE);
        None
    } else {
        measure_tick(&mut overheads, setup, cpu, fifo, progress)
    };
    progress.inc(1);
    Ok(Measured {
        overheads,
        context_switch,
        release_latency,
        busy_loop,
    })
}

/// The busy loop behind the tick, the tick stored in `overheads` (or why
/// it is absent).
fn measure_tick(
    overheads: &mut Overheads,
    setup: &Setup,
    cpu: u32,
    fifo: Option<u8>,
    progress: &dyn Progress,
) -> Option<BusyLoop> {
    let stop = || progress.stop_requested();
    match tick::record(
        cpu,
        setup.seconds.saturating_mul(1_000_000_000),
        fifo,
        &stop,
    ) {
        Ok(seen) => {
            let busy = busy_loop(&seen, fifo);
            match (&busy.tick, busy.tick_period_ns) {
                // A loss at a tick's phase as long as the tick period is no
                // tick cost (it would use the whole CPU, and every reader
                // of the file refuses it): a host stall or a preemption
                // coincided with a tick. Said, not stored.
                (Some(costs), Some(period_ns)) if costs.max >= period_ns => {
                    overheads.set_unmeasured(
                        "tick",
                        format!(
                            "the busy loop on CPU {cpu} lost {} at the phase of a {} tick, at \
                             least the tick period: a host stall or a preemption coincided with \
                             a tick; measure again on a quieter machine",
                            Nanos(costs.max),
                            Nanos(period_ns)
                        ),
                    );
                }
                (Some(costs), Some(period_ns)) => overheads.set_tick(TickRecord {
                    cost: record(
                        costs,
                        format!(
                            "a busy loop on CPU {cpu} under {} for {}: {} of its {} interruptions at the phase of a {} tick \
                             (HZ {}); their lost time",
                            policy_name(fifo),
                            Nanos(seen.busy_ns),
                            costs.count,
                            seen.gaps.len(),
                            Nanos(period_ns),
                            1_000_000_000 / period_ns
                        ),
                    ),
                    period_ns,
                }),
                _ => overheads.set_unmeasured(
                    "tick",
                    format!(
                        "no periodic interruption at a tick period of HZ 1000, 300, 250 or 100 among the busy loop's {} \
                         interruptions on CPU {cpu} (nohz_full CPU, or a window too short)",
                        seen.gaps.len()
                    ),
                ),
            }
            Some(busy)
        }
        Err(e) => {
            overheads.set_unmeasured("tick", e.to_string());
            None
        }
    }
}

fn policy_name(fifo: Option<u8>) -> String {
    fifo.map_or("SCHED_OTHER".into(), |p| format!("SCHED_FIFO {p}"))
}

/// An overhead record from a distribution.
fn record(d: &Durations, measured_by: String) -> OverheadRecord {
    OverheadRecord {
        max_ns: d.max,
        p99_ns: d.p99,
        median_ns: d.median,
        min_ns: d.min,
        samples: d.count,
        measured_by,
    }
}

fn measure_release_latency(setup: &Setup, stop: &StopFlag) -> Result<ReleaseLatency> {
    let run = LatencyRun {
        cpus: setup.cpus.clone(),
        priority: LATENCY_PRIORITY,
        period_ns: LATENCY_PERIOD_NS,
        jobs: setup.seconds.saturating_mul(1_000_000_000) / LATENCY_PERIOD_NS,
        staggered: false,
        beside: None,
    };
    let latencies = release_latency::measure(&run, stop)
        .map_err(|e| Error::Measurement(format!("release latency: {e}")))?;
    let none = || {
        Error::Measurement(if latencies.stopped {
            "not measured: the run was interrupted (Ctrl-C) before its first release".into()
        } else {
            "release latency: no job was released".into()
        })
    };
    Ok(ReleaseLatency {
        cpus: run.cpus,
        period_ns: run.period_ns,
        woke: Durations::of(&latencies.woke).ok_or_else(none)?,
        all: Durations::of(&latencies.all).ok_or_else(none)?,
        stopped: latencies.stopped,
    })
}

fn busy_loop(seen: &tick::Interruptions, fifo: Option<u8>) -> BusyLoop {
    let lost: Vec<u64> = seen.gaps.iter().map(|g| g.lost_ns).collect();
    let total: u128 = lost.iter().map(|&l| u128::from(l)).sum();
    let found = tick::find_tick(seen);
    BusyLoop {
        cpu: seen.cpu,
        fifo,
        busy_ns: seen.busy_ns,
        loop_ns: seen.loop_ns,
        threshold_ns: seen.threshold_ns,
        interruptions: Durations::of(&lost),
        lost_fraction: total as f64 / seen.busy_ns.max(1) as f64,
        tick_period_ns: found.as_ref().map(|t| t.period_ns),
        tick: found.as_ref().and_then(|t| Durations::of(&t.costs)),
        truncated: seen.truncated,
    }
}

#[cfg(test)]
mod tests {
    use super::super::report::summary_notes;
    use super::{Progress, Setup, StopFlag, measure};

    /// Raises its stop flag 300 ms after the release latency starts (and
    /// answers `stop_requested` from it): a Ctrl-C during that measurement.
    struct StopDuringReleaseLatency {
        stop: StopFlag,
    }

    impl Progress for StopDuringReleaseLatency {
        fn set_message(&self, message: &str) {
            if message == "release latency" {
                let stop = self.stop.clone();
                std::thread::spawn(move || {
                    std::thread::sleep(std::time::Duration::from_millis(300));
                    stop.raise();
                });
            }
        }

        fn stop_requested(&self) -> bool {
            self.stop.is_raised()
        }

        fn stop_flag(&self) -> Option<StopFlag> {
            Some(self.stop.clone())
        }
    }

    #[test]
    fn a_stop_ends_the_release_latency_under_way_and_skips_the_tick() {
        if !tinct_sys::testing::privileged_or_skip("release latency (SCHED_FIFO, mlockall)") {
            return;
        }
        // A minute of release latency, stopped 300 ms in (or during its
        // setup: then its first jobs only, or unmeasured; never a minute).
        let setup = Setup {
            cpus: tinct_sys::sched::affinity().unwrap(),
            switch_reps: 5,
            seconds: 60,
            seed: 1,
            llc_bytes: 1 << 20,
        };
        let progress = StopDuringReleaseLatency {
            stop: StopFlag::new(),
        };
        let measured = measure(&setup, &progress).unwrap();
        match &measured.release_latency {
            Some(latency) => {
                assert!(latency.stopped);
                assert!(
                    latency.all.count < 60_000 * setup.cpus.len() as u64,
                    "{} jobs: the measurement ran to its end",
                    latency.all.count
                );
                let record = measured.overheads.release_latency.as_ref().unwrap();
                assert!(
                    record.measured_by.contains(super::STOPPED_DURING),
                    "{}",
                    record.measured_by
                );
                let mut summary = crate::harness::Summary::default();
                summary_notes(&mut summary, &measured.overheads);
                assert!(
                    format!("{summary:?}").contains("release_latency cut short by the Ctrl-C"),
                    "{summary:?}"
                );
            }
            None => assert!(
                measured.overheads.unmeasured["release_latency"].contains("interrupted"),
                "{:?}",
                measured.overheads.unmeasured
            ),
        }
        assert!(measured.busy_loop.is_none(), "the tick was not reached");
        assert!(measured.overheads.unmeasured["tick"].contains("interrupted"));
    }
}
