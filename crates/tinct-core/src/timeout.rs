//! Timeouts of long computations (allocation, experiments): a flag that a
//! timer thread sets after the timeout; the allocators and studies poll it
//! and stop cleanly with what they have. The CLI's `--timeout` and the
//! Python package's `timeout=` both arm it here. Behind the `parallel`
//! feature, with the crate's other threads.

use crate::units::{Nanos, parse_duration};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Parses a timeout such as "30s" or "500ms": a duration above zero.
pub fn parse_timeout(text: &str) -> Result<Duration, String> {
    match parse_duration(text) {
        Ok(Nanos(0)) => Err("expected a duration above zero".to_string()),
        Ok(d) => Ok(Duration::from_nanos(d.0)),
        Err(e) => Err(e.to_string()),
    }
}

/// A stop flag that a timer thread sets after `timeout` (never without one).
pub fn stop_after(timeout: Option<Duration>) -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    if let Some(timeout) = timeout {
        let setter = Arc::clone(&flag);
        std::thread::spawn(move || {
            std::thread::sleep(timeout);
            setter.store(true, Ordering::Relaxed);
        });
    }
    flag
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

    #[test]
    fn the_flag_is_set_after_the_timeout_and_never_without_one() {
        let never = stop_after(None);
        let soon = stop_after(Some(Duration::from_millis(1)));
        // Poll (no wall-clock assertion): the timer thread sets it eventually.
        while !soon.load(Ordering::Relaxed) {
            std::thread::yield_now();
        }
        assert!(!never.load(Ordering::Relaxed));
    }
}
