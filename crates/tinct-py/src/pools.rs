//! Rayon pools by thread count for the Python calls that take `threads=`:
//! tinct-core's [`Pool`] (built once per count and kept), its refusal
//! worded as a bad argument.

use crate::errors::bad_argument;
use pyo3::PyResult;
pub use tinct_core::experiment::parallel::Pool;

/// The pool with `threads` threads (`None`: every core). Zero threads is
/// refused.
pub fn pool(threads: Option<usize>) -> PyResult<Pool> {
    if threads == Some(0) {
        return Err(bad_argument(
            "threads",
            "threads: expected at least 1 (or None for every core), found 0",
        ));
    }
    Pool::with_threads(threads).map_err(|e| bad_argument("threads", format!("threads: {e}")))
}
