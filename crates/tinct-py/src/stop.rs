//! `timeout=` for long computations: a flag that a timer thread sets after
//! the given number of seconds; tinct-core polls it and stops cleanly with
//! what it has (tinct_core::timeout, the same as the CLI's `--timeout`).

use crate::errors::bad_argument;
use pyo3::PyResult;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// A stop flag, set after `timeout` seconds (never without one).
pub fn stop_after(timeout: Option<f64>) -> PyResult<Arc<AtomicBool>> {
    let after = timeout
        .map(|seconds| {
            Duration::try_from_secs_f64(seconds)
                .ok()
                .filter(|d| !d.is_zero())
                .ok_or_else(|| {
                    bad_argument(
                        "timeout",
                        format!(
                            "timeout: expected a number of seconds above zero, found {seconds}"
                        ),
                    )
                })
        })
        .transpose()?;
    Ok(tinct_core::timeout::stop_after(after))
}
