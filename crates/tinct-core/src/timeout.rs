//! Timeouts of long computations (allocation, experiments): a flag that is
//! set once the timeout has passed; the allocators and studies poll it and
//! stop cleanly with what they have. The CLI's `--timeout` and the Python
//! package's `timeout=` both arm it here. Behind the `parallel` feature,
//! with the crate's other threads.
//!
//! One timer thread serves every flag of the process (started by the first
//! timeout, sleeping until the earliest deadline), so arming a timeout
//! costs no thread of its own; a flag its caller dropped is forgotten at the
//! timer's next wake. A child forked after the timer started (a worker of
//! a fork-started pool) has no timer thread (only the forking thread
//! survives a fork): each of its timeouts gets a thread of its own.

use crate::units::{Nanos, parse_duration};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Once, Weak};
use std::time::{Duration, Instant};

/// Parses a timeout such as "30s" or "500ms": a duration above zero.
pub fn parse_timeout(text: &str) -> Result<Duration, String> {
    match parse_duration(text) {
        Ok(Nanos(0)) => Err("expected a duration above zero".to_string()),
        Ok(d) => Ok(Duration::from_nanos(d.0)),
        Err(e) => Err(e.to_string()),
    }
}

/// The longest timeout: 2^64 − 1 ns (about 584 years), the longest
/// duration tinct reads, so that `--timeout` and Python's `timeout=` take
/// the same ones.
pub const MAX_TIMEOUT: Duration = Duration::from_nanos(u64::MAX);

/// A timeout given as a number of seconds (Python's `timeout=`): above
/// zero and at most [`MAX_TIMEOUT`]. The refusal is what was expected,
/// stating the limit that was broken; the caller adds what it found, as
/// the user wrote it.
pub fn timeout_from_secs(seconds: f64) -> Result<Duration, String> {
    if seconds.is_nan() || seconds <= 0.0 {
        return Err("a number of seconds above zero".into());
    }
    Duration::try_from_secs_f64(seconds)
        .ok()
        .filter(|d| *d <= MAX_TIMEOUT)
        // Below a nanosecond: the shortest timeout there is.
        .map(|d| d.max(Duration::from_nanos(1)))
        .ok_or_else(|| {
            format!(
                "a number of seconds of at most {} (2^64 − 1 ns, about 584 years: the longest \
                 timeout)",
                Nanos(u64::MAX)
            )
        })
}

/// A stop flag that the process's timer thread sets after `timeout`
/// (never without one).
pub fn stop_after(timeout: Option<Duration>) -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    // A deadline beyond what an Instant can hold never comes.
    if let Some(deadline) = timeout.and_then(|t| Instant::now().checked_add(t)) {
        arm(deadline, Arc::downgrade(&flag));
    }
    flag
}

/// The flags waiting for their deadline, and the timer thread's wake-up.
struct Timer {
    due: Mutex<Vec<(Instant, Weak<AtomicBool>)>>,
    changed: Condvar,
}

static TIMER: Timer = Timer {
    due: Mutex::new(Vec::new()),
    changed: Condvar::new(),
};

static TIMER_THREAD: Once = Once::new();

/// The process whose timer thread [`TIMER_THREAD`] started (a forked child
/// inherits the value, not the thread).
static TIMER_PROCESS: AtomicU32 = AtomicU32::new(0);

/// The pending flags (a panic elsewhere while holding the lock leaves the
/// list itself intact: it is used as it is).
fn pending() -> MutexGuard<'static, Vec<(Instant, Weak<AtomicBool>)>> {
    TIMER.due.lock().unwrap_or_else(|e| e.into_inner())
}

/// Sets `flag` at `deadline`, starting the timer thread the first time.
fn arm(deadline: Instant, flag: Weak<AtomicBool>) {
    TIMER_THREAD.call_once(|| {
        TIMER_PROCESS.store(std::process::id(), Ordering::SeqCst);
        std::thread::Builder::new()
            .name("tinct-timeout".into())
            .spawn(run_timer)
            .expect("the timeout thread starts");
    });
    if TIMER_PROCESS.load(Ordering::SeqCst) != std::process::id() {
        // A forked child: the timer thread is its parent's (and the list's
        // lock may have been held at the fork); this flag gets its own.
        std::thread::Builder::new()
            .name("tinct-timeout".into())
            .spawn(move || {
                std::thread::sleep(deadline.saturating_duration_since(Instant::now()));
                if let Some(flag) = flag.upgrade() {
                    flag.store(true, Ordering::Relaxed);
                }
            })
            .expect("the timeout thread starts");
        return;
    }
    pending().push((deadline, flag));
    // It may be earlier than what the timer sleeps for.
    TIMER.changed.notify_one();
}

/// The timer thread: sets every flag whose deadline passed, drops those
/// nobody holds any more, and sleeps until the next deadline or a new one.
fn run_timer() {
    let mut due = pending();
    loop {
        let now = Instant::now();
        due.retain(|(deadline, flag)| match flag.upgrade() {
            None => false,
            Some(flag) if *deadline <= now => {
                flag.store(true, Ordering::Relaxed);
                false
            }
            Some(_) => true,
        });
        due = match due.iter().map(|(deadline, _)| *deadline).min() {
            None => TIMER.changed.wait(due).unwrap_or_else(|e| e.into_inner()),
            Some(next) => {
                TIMER
                    .changed
                    .wait_timeout(due, next.saturating_duration_since(now))
                    .unwrap_or_else(|e| e.into_inner())
                    .0
            }
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timeout_is_a_duration_above_zero() {
        assert_eq!(parse_timeout("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_timeout("1500us"), Ok(Duration::from_micros(1500)));
        assert!(parse_timeout("0s").is_err());
        assert!(parse_timeout("soon").is_err());
    }

    /// Regression: `timeout=1e300` said "expected above zero, found 1e300".
    #[test]
    fn a_timeout_in_seconds_states_the_limit_it_breaks() {
        assert_eq!(timeout_from_secs(1.5), Ok(Duration::from_millis(1500)));
        let too_long = "a number of seconds of at most 18446744073.709551615s (2^64 − 1 ns, about \
                        584 years: the longest timeout)";
        assert_eq!(timeout_from_secs(1e300).unwrap_err(), too_long);
        assert_eq!(timeout_from_secs(f64::INFINITY).unwrap_err(), too_long);
        assert_eq!(timeout_from_secs(18_446_744_074.0).unwrap_err(), too_long);
        for refused in [0.0, -1.0, -1e300, f64::NAN] {
            assert_eq!(
                timeout_from_secs(refused).unwrap_err(),
                "a number of seconds above zero"
            );
        }
        assert_eq!(timeout_from_secs(1e-12), Ok(Duration::from_nanos(1)));
        // The same limit as `--timeout`.
        assert!(timeout_from_secs(18_446_744_073.0).is_ok());
        assert!(parse_timeout("18446744073.709551615s").is_ok());
    }

    fn wait_for(flag: &AtomicBool) {
        // Poll (no wall-clock assertion): the timer sets it eventually.
        while !flag.load(Ordering::Relaxed) {
            std::thread::yield_now();
        }
    }

    #[test]
    fn the_flag_is_set_after_the_timeout_and_never_without_one() {
        let never = stop_after(None);
        let soon = stop_after(Some(Duration::from_millis(1)));
        wait_for(&soon);
        assert!(!never.load(Ordering::Relaxed));
    }

    #[test]
    fn a_short_timeout_armed_after_a_long_one_is_not_kept_waiting() {
        let long = stop_after(Some(Duration::from_secs(3600)));
        let short = stop_after(Some(Duration::from_millis(1)));
        wait_for(&short);
        assert!(!long.load(Ordering::Relaxed), "an hour has not passed");
        let beyond_any_instant = stop_after(Some(Duration::MAX));
        assert!(!beyond_any_instant.load(Ordering::Relaxed));
    }

    /// The timer threads of this process, by name, from /proc (Linux):
    /// other tests' threads (harness, rayon) are not counted.
    fn timer_threads() -> usize {
        std::fs::read_dir("/proc/self/task")
            .expect("/proc/self/task")
            .flatten()
            .filter(|task| {
                std::fs::read_to_string(task.path().join("comm"))
                    .is_ok_and(|name| name.trim() == "tinct-timeout")
            })
            .count()
    }

    #[test]
    fn many_timeouts_share_one_thread() {
        let flags: Vec<_> = (0..64)
            .map(|_| stop_after(Some(Duration::from_secs(3600))))
            .collect();
        // One timer for the whole process (the old code started one per
        // timeout: 64 here, and those of the other tests').
        assert_eq!(timer_threads(), 1, "{} timeouts", flags.len());
        assert!(flags.iter().all(|f| !f.load(Ordering::Relaxed)));
    }
}
