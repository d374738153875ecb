//! Clocks and sleeping: CLOCK_MONOTONIC in integer nanoseconds, thread CPU
//! time, absolute-time `clock_nanosleep`, and the thread's context-switch
//! counts.

use rustix::time::{ClockId, Timespec};
use std::sync::atomic::{AtomicBool, Ordering};

/// CLOCK_MONOTONIC now, in nanoseconds.
pub fn now_ns() -> u64 {
    to_ns(rustix::time::clock_gettime(ClockId::Monotonic))
}

/// CPU time consumed by the calling thread, in nanoseconds.
pub fn thread_cpu_ns() -> u64 {
    to_ns(rustix::time::clock_gettime(ClockId::ThreadCPUTime))
}

fn to_ns(t: Timespec) -> u64 {
    (t.tv_sec as u64).saturating_mul(1_000_000_000) + t.tv_nsec as u64
}

fn to_timespec(ns: u64) -> Timespec {
    Timespec {
        tv_sec: (ns / 1_000_000_000) as i64,
        tv_nsec: (ns % 1_000_000_000) as _,
    }
}

/// Sleeps until CLOCK_MONOTONIC reaches `deadline_ns` (absolute time, so
/// periodic releases do not drift). Retries on EINTR.
pub fn sleep_until(deadline_ns: u64) {
    let request = to_timespec(deadline_ns);
    while rustix::thread::clock_nanosleep_absolute(rustix::thread::ClockId::Monotonic, &request)
        .is_err()
    {}
}

/// The longest single sleep of [`sleep_until_or_stop`]: how late a sleeping
/// thread notices a stop.
pub const STOP_POLL_NS: u64 = 20_000_000;

/// Sleeps until `deadline_ns`, waking every [`STOP_POLL_NS`] to look at
/// `stop`. Returns the instant it woke past the deadline (the first clock
/// read after the sleep, as cyclictest takes it), or `None` if the sleep
/// was cut short by `stop`.
pub fn sleep_until_or_stop(deadline_ns: u64, stop: &AtomicBool) -> Option<u64> {
    loop {
        if stop.load(Ordering::Relaxed) {
            return None;
        }
        let now = now_ns();
        if now >= deadline_ns {
            return Some(now);
        }
        sleep_until(deadline_ns.min(now.saturating_add(STOP_POLL_NS)));
    }
}

pub use tinct_sys::usage::Switches;

/// The calling thread's context-switch counts (`getrusage(RUSAGE_THREAD)`,
/// through tinct-sys); zero if the call fails, which it does not for the
/// calling thread.
pub fn thread_switches() -> Switches {
    tinct_sys::usage::thread_switches().unwrap_or_default()
}

/// The CPU the calling thread runs on.
pub fn current_cpu() -> u32 {
    tinct_sys::sched::current_cpu()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monotonic_clock_advances_and_sleep_reaches_its_deadline() {
        let a = now_ns();
        let target = a + 2_000_000;
        sleep_until(target);
        assert!(now_ns() >= target);
    }

    #[test]
    fn stop_cuts_a_long_sleep_short() {
        let stop = AtomicBool::new(true);
        assert_eq!(sleep_until_or_stop(now_ns() + 60_000_000_000, &stop), None);
        let go = AtomicBool::new(false);
        let deadline = now_ns() + 1_000_000;
        let woke = sleep_until_or_stop(deadline, &go).expect("not stopped");
        assert!(woke >= deadline && woke <= now_ns());
    }

    #[test]
    fn thread_cpu_time_grows_with_work_and_switches_are_counted() {
        let before = thread_cpu_ns();
        let mut x = 1u64;
        for i in 0..2_000_000u64 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
        }
        assert!(thread_cpu_ns() > before);
        let s0 = thread_switches();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let s1 = thread_switches();
        assert!(s1.voluntary > s0.voluntary, "{s0:?} -> {s1:?}");
    }
}
