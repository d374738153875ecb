//! Rayon pools by thread count for the Python calls that take `threads=`:
//! tinct-core's [`Pool`] (built once per count and kept), its refusal
//! worded as a bad argument.

use crate::errors::bad_argument;
use pyo3::prelude::*;
use tinct_core::experiment::parallel::PoolError;
pub(crate) use tinct_core::experiment::parallel::{MAX_THREADS, Pool};

/// The pool with `threads` threads (`None`: every core): a count from 1 to
/// [`MAX_THREADS`] (`crate::units::count`), anything else `BadInput`.
pub(crate) fn pool(threads: Option<&Bound<'_, PyAny>>) -> PyResult<Pool> {
    let threads = threads
        .map(|t| crate::units::count(t, "threads", (1, MAX_THREADS as u64), ""))
        .transpose()?
        .map(|t| t as usize);
    Pool::with_threads(threads).map_err(|e| match e {
        PoolError::Threads(refused) => bad_argument("threads", refused.to_string()),
        PoolError::Start(_) => crate::errors::failed(e),
    })
}
