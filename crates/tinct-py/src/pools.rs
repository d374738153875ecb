//! Rayon pools by thread count, built once and kept: a call with
//! `threads=n` must not pay for starting n threads each time (a study that
//! calls the batch API in a loop would spend more on thread start-up than
//! on analysis). `None` is rayon's global pool (every core).

use crate::errors::bad_argument;
use pyo3::PyResult;
use rayon::ThreadPool;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// The pool with `threads` threads (`None`: the global pool, returned as
/// `None`). Zero threads is refused.
pub fn pool(threads: Option<usize>) -> PyResult<Option<Arc<ThreadPool>>> {
    let Some(threads) = threads else {
        return Ok(None);
    };
    if threads == 0 {
        return Err(bad_argument(
            "threads",
            "threads: expected at least 1 (or None for every core), found 0",
        ));
    }
    static POOLS: OnceLock<Mutex<HashMap<usize, Arc<ThreadPool>>>> = OnceLock::new();
    let mut pools = POOLS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(pool) = pools.get(&threads) {
        return Ok(Some(Arc::clone(pool)));
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map(Arc::new)
        .map_err(|e| bad_argument("threads", format!("threads: {e}")))?;
    pools.insert(threads, Arc::clone(&pool));
    Ok(Some(pool))
}

/// Runs `f` on the pool of [`pool`] (or the global pool).
pub fn install<R: Send>(pool: &Option<Arc<ThreadPool>>, f: impl FnOnce() -> R + Send) -> R {
    match pool {
        Some(pool) => pool.install(f),
        None => f(),
    }
}
