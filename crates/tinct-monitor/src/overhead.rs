//! The cost of monitoring, measured: the same reference workload timed
//! without and with a sampler reading its counters at the monitoring rate,
//! interleaved round by round, reported as the ratio of the medians
//! (sebek2002 Section 3.2 measures its probe's cost the same way: the
//! task's execution time with and without the probe).
//!
//! The reference workload is a thread of tinct's own job kernels (a
//! pointer chase over 1 MiB and a compute loop) rather than the monitored
//! command, so measuring the overhead never runs the user's command twice.
//! Its length is scaled so that a run spans at least 20 sampling periods
//! (and 20 ms): every monitored run is sampled many times.

use super::sampler::Sampler;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::channel;
use std::time::{Duration, Instant};
use tinct_report::stats::{Counts, Durations};
use tinct_rt::kernels::{Kernel, KernelState};
use tinct_sys::perf::CounterEvent;

/// Runs of each condition.
pub const RUNS: usize = 7;

/// The overhead of sampling at one rate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Overhead {
    /// Sampling rate of the monitored runs, Hz.
    pub rate_hz: u32,
    /// What the reference workload is.
    pub workload: String,
    /// The workload's run time without monitoring.
    pub plain: Durations,
    /// The workload's run time while sampled.
    pub monitored: Durations,
    /// median(monitored) / median(plain): 1.0 is no overhead.
    pub ratio: f64,
    /// Samples taken per monitored run (median).
    pub samples_per_run: u64,
}

/// Measures the overhead of sampling `events` at `rate_hz`.
pub fn measure(rate_hz: u32, events: &[CounterEvent]) -> tinct_rt::Result<Overhead> {
    let mut plain = Vec::with_capacity(RUNS);
    let mut monitored = Vec::with_capacity(RUNS);
    let mut samples = Vec::with_capacity(RUNS);
    // One unrecorded run warms the workload's memory and code and sizes it.
    let (once, _) = run_workload(None, rate_hz, events, 1)?;
    let period_ns = 1_000_000_000 / u64::from(rate_hz.max(1));
    let wanted = (20 * period_ns).max(20_000_000);
    let repeats = wanted.div_ceil(once.max(1)).clamp(1, 10_000);
    for round in 0..RUNS {
        // Alternate which condition goes first, so drift hits both alike.
        let order = if round % 2 == 0 {
            [false, true]
        } else {
            [true, false]
        };
        for sampled in order {
            let (ns, taken) = run_workload(sampled.then_some(()), rate_hz, events, repeats)?;
            if sampled {
                monitored.push(ns);
                samples.push(taken);
            } else {
                plain.push(ns);
            }
        }
    }
    let plain = Durations::of(&plain).expect("RUNS > 0");
    let monitored = Durations::of(&monitored).expect("RUNS > 0");
    Ok(Overhead {
        rate_hz,
        workload: format!(
            "{repeats} x ({REFERENCE_PASSES} passes of a pointer chase over {} KiB and \
             {REFERENCE_COMPUTE} compute steps), one thread",
            REFERENCE_BYTES >> 10
        ),
        ratio: monitored.median as f64 / plain.median.max(1) as f64,
        plain,
        monitored,
        samples_per_run: Counts::of(&samples).expect("RUNS > 0").median,
    })
}

const REFERENCE_BYTES: usize = 1 << 20;
const REFERENCE_PASSES: u64 = 40;
const REFERENCE_COMPUTE: u64 = 2_000_000;

/// One run of `repeats` reference workloads on its own thread, sampled at
/// `rate_hz` when `sampled`; its run time (ns) and the samples taken.
fn run_workload(
    sampled: Option<()>,
    rate_hz: u32,
    events: &[CounterEvent],
    repeats: u64,
) -> tinct_rt::Result<(u64, u64)> {
    let (tid_tx, tid_rx) = channel();
    let (go_tx, go_rx) = channel::<()>();
    let done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let done = &done;
        let worker = scope.spawn(move || {
            let _ = tid_tx.send(tinct_sys::sched::gettid());
            let _ = go_rx.recv();
            let words = vec![0u64; REFERENCE_BYTES / 8];
            let mut state = KernelState::new(Kernel::Chase, words.into(), 1);
            let lines = state.lines() as u64;
            let start = Instant::now();
            for _ in 0..repeats {
                for _ in 0..REFERENCE_PASSES {
                    state.memory_steps(lines);
                }
                state.compute_steps(REFERENCE_COMPUTE);
            }
            let ns = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
            done.store(true, Ordering::Release);
            ns
        });
        let tid = tid_rx.recv().map_err(|_| worker_died())?;
        let mut taken = 0u64;
        match sampled {
            None => {
                let _ = go_tx.send(());
            }
            Some(()) => {
                let mut sampler = Sampler::new(std::process::id() as i32, true, events.to_vec());
                sampler.watch(tid);

                let period = Duration::from_nanos(1_000_000_000 / u64::from(rate_hz.max(1)));
                let _ = go_tx.send(());
                let start = Instant::now();
                let mut next = period;
                while !done.load(Ordering::Acquire) {
                    let now = start.elapsed();
                    if now < next {
                        std::thread::sleep((next - now).min(Duration::from_millis(1)));
                        continue;
                    }
                    let t = u64::try_from(now.as_nanos()).unwrap_or(u64::MAX);
                    sampler.sample(t, u64::try_from(period.as_nanos()).unwrap_or(u64::MAX));
                    taken += 1;
                    next += period;
                }
            }
        }
        let ns = worker.join().map_err(|_| worker_died())?;
        Ok((ns, taken))
    })
}

fn worker_died() -> tinct_rt::RtError {
    tinct_rt::RtError::Task {
        task: "monitor overhead".into(),
        message: "the reference workload thread died".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tinct_sys::perf::PerfEvent;

    #[test]
    fn the_overhead_is_measured_side_by_side() {
        let events: Vec<CounterEvent> = PerfEvent::SOFTWARE.iter().map(|&e| e.into()).collect();
        let o = measure(1000, &events).unwrap();
        assert_eq!(
            (o.plain.count, o.monitored.count),
            (RUNS as u64, RUNS as u64)
        );
        assert!(o.ratio > 0.0 && o.ratio.is_finite());
        assert_eq!(o.ratio, o.monitored.median as f64 / o.plain.median as f64);
        // Each monitored run spans 20 sampling periods when timed alone; a
        // loaded machine can starve the sampler for most of them, so only
        // "sampled at all" is certain (this once asked for 10 and failed
        // under a parallel build).
        assert!(o.samples_per_run >= 1, "the sampler never ran: {o:?}");
    }
}
