//! The random study over every core of a rayon pool (feature `parallel`).
//!
//! Why here and not in each front end: the work loop (which items, how
//! outcomes are counted, what a stop keeps) has one implementation, used by
//! `tinct experiment random` and by any other caller (a Python binding);
//! the rest of tinct-core stays free of threads, and a caller without the
//! feature uses the sequential [`super::random::compute`], which gives the
//! same counts.

use super::Hooks;
use super::random::{Computed, Params, Shard, run_set, tally, work_items};
use rayon::ThreadPool;
use rayon::prelude::*;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use tinct_base::InputError;

/// Why [`Pool::with_threads`] gave no pool.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PoolError {
    /// The count is refused (0, or above [`MAX_THREADS`]): bad input, its
    /// field `threads` (a front end renames it to its option).
    #[error("{0}")]
    Threads(InputError),
    /// The threads could not be started (the system refused them).
    #[error("cannot start the worker threads: {0}")]
    Start(String),
}

/// A pool the caller asked for by its thread count, or rayon's global pool
/// (every core).
#[derive(Clone, Debug)]
pub enum Pool {
    /// rayon's global pool.
    Global,
    /// A pool of its own, kept for later calls with the same count.
    Sized(Arc<ThreadPool>),
}

/// The most threads a pool may have: far above any machine tinct runs on,
/// far below what the kernel would refuse only after starting thousands.
pub const MAX_THREADS: usize = 1024;

/// How many pools of distinct sizes are kept between calls.
const KEPT_POOLS: usize = 8;

impl Pool {
    /// The pool with `threads` threads (`None`: the global pool), built
    /// once per count and kept, so a caller in a loop (the Python batch
    /// API) does not pay for starting threads each time. Zero threads is
    /// refused, with what was expected and found.
    pub fn with_threads(threads: Option<usize>) -> Result<Pool, PoolError> {
        let Some(threads) = threads else {
            return Ok(Pool::Global);
        };
        let refused = |expected: &str| {
            PoolError::Threads(InputError::new(
                "",
                "threads",
                expected,
                threads.to_string(),
            ))
        };
        if threads == 0 {
            return Err(refused("at least 1"));
        }
        if threads > MAX_THREADS {
            // rayon would start them all (2^40 never returned).
            return Err(refused(&format!("at most {MAX_THREADS}")));
        }
        static POOLS: OnceLock<Mutex<HashMap<usize, Arc<ThreadPool>>>> = OnceLock::new();
        let mut pools = POOLS
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(pool) = pools.get(&threads) {
            return Ok(Pool::Sized(Arc::clone(pool)));
        }
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .map(Arc::new)
            .map_err(|e| PoolError::Start(e.to_string()))?;
        if pools.len() >= KEPT_POOLS {
            // Kept for a caller in a loop, not for every count ever asked:
            // the pools in use live on in their callers' handles.
            pools.clear();
        }
        pools.insert(threads, Arc::clone(&pool));
        Ok(Pool::Sized(pool))
    }

    /// Runs `f` on this pool.
    pub fn install<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        match self {
            Pool::Global => f(),
            Pool::Sized(pool) => pool.install(f),
        }
    }

    /// Its number of threads.
    pub fn threads(&self) -> usize {
        match self {
            Pool::Global => rayon::current_num_threads(),
            Pool::Sized(pool) => pool.current_num_threads(),
        }
    }
}

/// [`super::random::compute`] with the sets spread over the current rayon
/// pool (install one to choose the thread count). Counts are identical:
/// they do not depend on the order in which sets finish.
pub fn compute(params: &Params, shard: Shard, hooks: Hooks) -> Computed {
    let items = work_items(params, shard);
    let outcomes: Vec<_> = items
        .par_iter()
        .filter_map(|&item| {
            if hooks.stopped() {
                return None;
            }
            let outcome = run_set(params, item);
            hooks.tick();
            Some(outcome)
        })
        .collect();
    Computed {
        done: outcomes.len() as u64,
        total: items.len() as u64,
        points: tally(params, outcomes),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pool_is_built_once_per_count_and_zero_threads_is_refused() {
        assert_eq!(
            Pool::with_threads(Some(0)).unwrap_err(),
            PoolError::Threads(InputError::new("", "threads", "at least 1", "0"))
        );
        assert_eq!(
            Pool::with_threads(Some(1 << 40)).unwrap_err().to_string(),
            format!(
                "threads: expected at most {MAX_THREADS}, found {}",
                1u64 << 40
            )
        );
        let (Pool::Sized(first), Pool::Sized(again)) = (
            Pool::with_threads(Some(3)).unwrap(),
            Pool::with_threads(Some(3)).unwrap(),
        ) else {
            panic!("a count gives a pool of its own")
        };
        assert!(Arc::ptr_eq(&first, &again), "kept, not built again");
        let pool = Pool::Sized(first);
        assert_eq!(pool.threads(), 3);
        assert_eq!(pool.install(rayon::current_num_threads), 3);
        let global = Pool::with_threads(None).unwrap();
        assert!(matches!(global, Pool::Global));
        assert_eq!(global.threads(), rayon::current_num_threads());
    }
}
