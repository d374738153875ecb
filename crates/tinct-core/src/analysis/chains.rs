//! End-to-end latency bounds of the affinity graph's chains:
//! every maximal path from a task with no producer to a task with no
//! consumer, from the nominal release of its first task to the completion
//! of its last.
//!
//! Along a chain, a run of data-triggered tasks after a timer-triggered one
//! is one *segment*: the response time of its last task, measured from the
//! segment's nominal release with the jitter it inherits (see
//! `analysis::holistic`), bounds the segment (holistic analysis, Tindell and
//! Clark 1994). An edge into a timer-triggered task samples: that task's
//! next job reads the data at most one period after it was written, so the
//! hop adds T of the consumer before the next segment's own bound
//! (Davare et al., "Period optimization for hard real-time distributed
//! automotive systems", DAC 2007). The bound is
//! Σ_segments R_last + Σ_sampling hops T_consumer, exact in integer ns.

use super::AnalysisError;
use super::rta::ResponseTime;
use crate::model::{TaskSet, Trigger};
use serde::{Deserialize, Serialize};

/// The most chains (paths) the analysis enumerates.
pub const MAX_CHAINS: usize = 4096;

/// One chain and its end-to-end bound.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChainReport {
    /// The tasks along the chain, by name.
    pub tasks: Vec<String>,
    /// The same tasks as indices into the set (file order).
    pub task_indices: Vec<usize>,
    /// First release to last output, with cache interference (Eq. 2);
    /// `None` when a task of the chain misses its deadline, or when the
    /// bound passes 2^64 − 1 ns (the set is then not schedulable either).
    pub bound_ns: Option<u64>,
    /// The same without cache interference.
    pub bound_nocint_ns: Option<u64>,
    /// Edges into timer-triggered tasks along the chain (each adds the
    /// consumer's period).
    pub sampling_hops: u32,
}

/// Every maximal path of the graph with at least one edge, in the order of
/// their first task and then depth-first along the file order of edges.
pub fn enumerate(set: &TaskSet) -> Result<Vec<Vec<usize>>, AnalysisError> {
    let n = set.tasks.len();
    let mut consumers: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut has_producer = vec![false; n];
    for edge in &set.edges {
        consumers[edge.from].push(edge.to);
        has_producer[edge.to] = true;
    }
    let mut chains = Vec::new();
    for source in (0..n).filter(|&i| !has_producer[i] && !consumers[i].is_empty()) {
        let mut path = vec![source];
        walk(&consumers, &mut path, &mut chains)?;
    }
    Ok(chains)
}

fn walk(
    consumers: &[Vec<usize>],
    path: &mut Vec<usize>,
    chains: &mut Vec<Vec<usize>>,
) -> Result<(), AnalysisError> {
    let last = *path.last().expect("a path has a task");
    if consumers[last].is_empty() {
        if chains.len() == MAX_CHAINS {
            return Err(AnalysisError::TooManyChains { limit: MAX_CHAINS });
        }
        chains.push(path.clone());
        return Ok(());
    }
    for &next in &consumers[last] {
        if path.contains(&next) {
            // Only a set built in code can have one: files are checked.
            return Err(AnalysisError::CyclicGraph {
                tasks: path.clone(),
            });
        }
        path.push(next);
        walk(consumers, path, chains)?;
        path.pop();
    }
    Ok(())
}

/// The end-to-end bound of `chain` from the tasks' response times (file
/// order); `None` when one of them has none.
pub fn bound(set: &TaskSet, chain: &[usize], results: &[ResponseTime]) -> Option<u64> {
    let mut total: u64 = 0;
    let mut segment_end = *chain.first()?;
    for &task in &chain[1..] {
        if set.tasks[task].trigger == Trigger::Timer {
            // A sampling hop: close the segment, wait at most a period.
            total = total
                .checked_add(results[segment_end].wcrt_ns?)?
                .checked_add(set.tasks[task].period.0)?;
        }
        segment_end = task;
    }
    total.checked_add(results[segment_end].wcrt_ns?)
}

/// The report of every chain, with and without cache interference.
pub fn reports(
    set: &TaskSet,
    chains: &[Vec<usize>],
    cint: &[ResponseTime],
    nocint: &[ResponseTime],
) -> Vec<ChainReport> {
    chains
        .iter()
        .map(|chain| ChainReport {
            tasks: chain.iter().map(|&i| set.tasks[i].name.clone()).collect(),
            task_indices: chain.clone(),
            bound_ns: bound(set, chain, cint),
            bound_nocint_ns: bound(set, chain, nocint),
            sampling_hops: chain[1..]
                .iter()
                .filter(|&&i| set.tasks[i].trigger == Trigger::Timer)
                .count() as u32,
        })
        .collect()
}
