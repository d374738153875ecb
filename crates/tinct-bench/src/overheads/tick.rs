//! The timer tick's overhead: what a busy thread loses to it.
//!
//! A thread pinned to one CPU (SCHED_FIFO where allowed) reads the
//! monotonic clock in a tight loop; whenever two consecutive reads are
//! further apart than the loop ever needs, the thread was interrupted, and
//! the excess is the time it lost ([`record`]; the technique of hwlatdetect
//! and sysjitter). Interruptions have many causes — the timer tick, other
//! interrupts, and in a virtual machine the host taking the vCPU away — so
//! the tick's are picked out by their period ([`find_tick`]): the tick
//! arrives every 1/HZ seconds at a fixed phase, so folding the
//! interruptions' start times modulo the tick period piles them into one
//! phase bin. The candidate periods are those of the kernel's HZ choices
//! (1000, 300, 250, 100); the shortest whose best phase holds at least 80 %
//! of the ticks the window must contain is the tick. Interruptions at that
//! phase are the tick's; their lengths are its cost.
//!
//! A SCHED_FIFO busy loop longer than the RT throttling budget would be
//! throttled (a 50 ms "interruption" per second): the loop runs in slices
//! of at most [`SLICE_NS`] separated by short sleeps, with one clock origin
//! so the phases stay comparable.

use crate::harness::pin::PinGuard;
use crate::pinned_threads::nanos;
use crate::{Error, Result};
use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};

/// Longest uninterrupted busy slice (half the default RT budget of 950 ms/s).
pub const SLICE_NS: u64 = 400_000_000;
/// Sleep between two slices (returns the RT budget).
const PAUSE: Duration = Duration::from_millis(50);
/// Tick periods of the kernel's HZ choices (1000, 300, 250, 100), ascending.
pub const TICK_PERIODS_NS: [u64; 4] = [1_000_000, 3_333_333, 4_000_000, 10_000_000];
/// Phase bins per period.
const BINS: u64 = 100;
/// Share of the expected ticks the best phase must hold.
const FOUND_SHARE: f64 = 0.8;
/// Interruptions recorded at most (beyond, the recording stops early).
const CAPACITY: usize = 1 << 20;

/// One interruption of the busy loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Gap {
    /// When it started, ns since the first slice began.
    pub start_ns: u64,
    /// The time the loop lost, ns.
    pub lost_ns: u64,
}

/// What the busy loop saw.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Interruptions {
    /// The CPU.
    pub cpu: u32,
    /// Busy time measured (the slices, not the pauses between them), ns.
    pub busy_ns: u64,
    /// The loop's fastest iteration (two clock reads), ns.
    pub loop_ns: u64,
    /// A larger distance between reads counts as an interruption, ns.
    pub threshold_ns: u64,
    /// Every interruption, in order.
    pub gaps: Vec<Gap>,
    /// True if the recording stopped early because the buffer was full.
    pub truncated: bool,
}

/// The tick found among the interruptions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TickFound {
    /// Its period, ns.
    pub period_ns: u64,
    /// The ticks the busy time must have seen (busy / period).
    pub expected: u64,
    /// The cost of each interruption at the tick's phase, ns.
    pub costs: Vec<u64>,
}

/// Busy-loops on `cpu` for `duration_ns` (in slices) and records every
/// interruption. Pins the calling thread (restored on return) and runs it
/// under SCHED_FIFO `fifo` when given (restored to SCHED_OTHER). Once
/// `stop` says so, checked between slices, it ends early with the slices
/// it finished ([`Interruptions::busy_ns`] is then shorter).
pub fn record(
    cpu: u32,
    duration_ns: u64,
    fifo: Option<u8>,
    stop: &dyn Fn() -> bool,
) -> Result<Interruptions> {
    let _pin = PinGuard::pin(cpu)?;
    if let Some(priority) = fifo {
        tinct_sys::sched::set_fifo(priority)?;
    }
    let recorded = record_here(cpu, duration_ns, stop);
    if fifo.is_some() {
        tinct_sys::sched::set_other()?;
    }
    recorded
}

fn record_here(cpu: u32, duration_ns: u64, stop: &dyn Fn() -> bool) -> Result<Interruptions> {
    let loop_ns = fastest_iteration();
    let threshold_ns = (loop_ns * 10).max(1000);
    let mut gaps = Vec::with_capacity(CAPACITY);
    let origin = Instant::now();
    let mut busy_ns = 0u64;
    let mut truncated = false;
    while busy_ns < duration_ns && !truncated && !stop() {
        let slice = (duration_ns - busy_ns).min(SLICE_NS);
        let start = Instant::now();
        let mut previous = start;
        loop {
            let now = Instant::now();
            let step = nanos(now - previous);
            if step > threshold_ns {
                if gaps.len() == CAPACITY {
                    truncated = true;
                    break;
                }
                gaps.push(Gap {
                    start_ns: nanos(previous - origin),
                    lost_ns: step - loop_ns,
                });
            }
            previous = now;
            if nanos(now - start) >= slice {
                break;
            }
        }
        busy_ns += nanos(previous - start);
        std::thread::sleep(PAUSE);
    }
    if gaps.is_empty() && busy_ns == 0 {
        return Err(Error::Measurement("the busy loop did not run".into()));
    }
    Ok(Interruptions {
        cpu,
        busy_ns,
        loop_ns,
        threshold_ns,
        gaps,
        truncated,
    })
}

/// The fastest of 100 000 loop iterations (two clock reads), ns, at least 1.
fn fastest_iteration() -> u64 {
    let mut fastest = u64::MAX;
    let mut previous = Instant::now();
    for _ in 0..100_000 {
        let now = Instant::now();
        fastest = fastest.min(nanos(now - previous));
        previous = now;
    }
    fastest.max(1)
}

/// The tick among `seen`'s interruptions, or `None` if no candidate period
/// has a phase holding 80 % of its expected ticks (no periodic tick on this
/// CPU: `nohz_full`, or a window too short).
pub fn find_tick(seen: &Interruptions) -> Option<TickFound> {
    TICK_PERIODS_NS.iter().find_map(|&period| {
        let expected = seen.busy_ns / period;
        if expected < 10 {
            return None;
        }
        let bin_of = |g: &Gap| (g.start_ns % period) * BINS / period;
        let mut counts = vec![0u64; BINS as usize];
        for gap in &seen.gaps {
            counts[bin_of(gap) as usize] += 1;
        }
        // The best phase with its two neighbours (the tick's interruption
        // may start in either edge bin).
        let window = |b: u64| -> u64 {
            (0..3)
                .map(|d| counts[((b + BINS - 1 + d) % BINS) as usize])
                .sum()
        };
        let best = (0..BINS).max_by_key(|&b| window(b))?;
        if (window(best) as f64) < FOUND_SHARE * expected as f64 {
            return None;
        }
        let near = |b: u64| (b + BINS - best) % BINS <= 1 || (best + BINS - b) % BINS <= 1;
        let costs = seen
            .gaps
            .iter()
            .filter(|g| near(bin_of(g)))
            .map(|g| g.lost_ns)
            .collect();
        Some(TickFound {
            period_ns: period,
            expected,
            costs,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `seconds` of a 250 Hz tick (phase 1.3 ms, 5 µs each) plus noise at
    /// other times, every 1.7 ms (40 µs each), and one 30 ms stall.
    fn synthetic(seconds: u64) -> Interruptions {
        let busy = seconds * 1_000_000_000;
        let mut gaps: Vec<Gap> = (0..busy / 4_000_000)
            .map(|k| Gap {
                start_ns: k * 4_000_000 + 1_300_000,
                lost_ns: 5_000 + k % 3,
            })
            .chain((0..busy / 1_700_000).map(|k| Gap {
                start_ns: k * 1_700_000 + 123_000,
                lost_ns: 40_000,
            }))
            .chain([Gap {
                start_ns: 777_777_777,
                lost_ns: 30_000_000,
            }])
            .collect();
        gaps.sort_by_key(|g| g.start_ns);
        Interruptions {
            cpu: 0,
            busy_ns: busy,
            loop_ns: 50,
            threshold_ns: 1000,
            gaps,
            truncated: false,
        }
    }

    #[test]
    fn the_tick_is_found_by_its_phase() {
        let seen = synthetic(2);
        let tick = find_tick(&seen).unwrap();
        assert_eq!(tick.period_ns, 4_000_000, "HZ = 250");
        assert_eq!(tick.expected, 500);
        // All 500 ticks, and of the 1176 noise interruptions only those
        // that happen to fall in the tick's three phase bins (120 µs of 4 ms).
        assert!(tick.costs.iter().filter(|&&c| c < 6_000).count() == 500);
        let noise = tick.costs.iter().filter(|&&c| c == 40_000).count();
        assert!(noise < 60, "{noise} noise interruptions taken for ticks");
        assert!(
            !tick.costs.contains(&30_000_000),
            "the stall is at another phase"
        );
    }

    #[test]
    fn no_periodic_interruption_is_no_tick() {
        let mut seen = synthetic(2);
        seen.gaps
            .retain(|g| g.lost_ns != 5_000 && g.lost_ns != 5_001 && g.lost_ns != 5_002);
        // The 1.7 ms noise is periodic but matches no HZ: nothing is found.
        assert_eq!(find_tick(&seen), None);
        seen.gaps.clear();
        assert_eq!(find_tick(&seen), None);
        // A window too short for ten ticks of any period.
        let short = Interruptions {
            busy_ns: 5_000_000,
            ..synthetic(1)
        };
        assert_eq!(find_tick(&short), None);
    }

    #[test]
    fn a_busy_loop_is_interrupted_and_loses_time() {
        let cpu = tinct_sys::sched::current_cpu();
        let seen = record(cpu, 200_000_000, None, &|| false).unwrap();
        assert!(seen.busy_ns >= 200_000_000);
        assert!(seen.threshold_ns >= 1000 && seen.loop_ns >= 1);
        assert!(
            !seen.gaps.is_empty(),
            "200 ms without a single interruption"
        );
        // Every recorded gap exceeds the threshold and lies in the window.
        assert!(
            seen.gaps
                .iter()
                .all(|g| g.lost_ns + seen.loop_ns > seen.threshold_ns)
        );
        assert!(seen.gaps.windows(2).all(|w| w[0].start_ns < w[1].start_ns));
    }

    #[test]
    fn a_stop_ends_the_loop_between_slices() {
        let cpu = tinct_sys::sched::current_cpu();
        let slices = std::sync::atomic::AtomicU32::new(0);
        // Stopped when asked the second time: after one slice of an hour's.
        let stop = || slices.fetch_add(1, std::sync::atomic::Ordering::SeqCst) >= 1;
        let seen = record(cpu, 3_600_000_000_000, None, &stop).unwrap();
        assert_eq!(
            slices.load(std::sync::atomic::Ordering::SeqCst),
            2,
            "asked before each slice, ended when told"
        );
        assert!(
            seen.busy_ns >= SLICE_NS,
            "the slice ran: {} ns",
            seen.busy_ns
        );
    }
}
