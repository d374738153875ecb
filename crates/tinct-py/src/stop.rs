//! `timeout=` for long computations: a flag that a timer thread sets after
//! the given number of seconds; tinct-core polls it and stops cleanly with
//! what it has (tinct_core::timeout, the same as the CLI's `--timeout`).

use crate::errors::bad_argument;
use pyo3::exceptions::PyOverflowError;
use pyo3::prelude::*;
use pyo3::types::PyBool;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;
use tinct_core::timeout::timeout_from_secs;

/// `timeout=` as a duration: a number of seconds (an int or a float,
/// numpy's included) above zero and at most tinct-core's
/// [`MAX_TIMEOUT`](tinct_core::timeout::MAX_TIMEOUT); anything else is
/// `BadInput` stating the limit it breaks, never TypeError or
/// OverflowError.
fn seconds(value: &Bound<'_, PyAny>) -> PyResult<Duration> {
    let shown = || value.repr().map_or_else(|_| "?".into(), |r| r.to_string());
    let refuse = |expected: &str| {
        bad_argument(
            "timeout",
            format!("timeout: expected {expected}, found {}", shown()),
        )
    };
    if value.is_instance_of::<PyBool>() {
        return Err(refuse("a number of seconds"));
    }
    let seconds = match value.extract::<f64>() {
        Ok(x) => x,
        // An int beyond any float: as far out of range as its sign says.
        Err(e) if e.is_instance_of::<PyOverflowError>(value.py()) => {
            if value.lt(0)? {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            }
        }
        Err(_) => return Err(refuse("a number of seconds")),
    };
    timeout_from_secs(seconds).map_err(|expected| refuse(&expected))
}

/// A stop flag, set after `timeout` seconds (never without one).
pub(crate) fn stop_after(timeout: Option<&Bound<'_, PyAny>>) -> PyResult<Arc<AtomicBool>> {
    let after = timeout.map(seconds).transpose()?;
    Ok(tinct_core::timeout::stop_after(after))
}
