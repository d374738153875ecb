//! The composite benchmark of chandru-mueller Section 5 (Figures 6-9,
//! Table 2): every thread bubble-sorts its own few pages (Mälardalen's
//! `bsort`, "the most memory bound of all integrated benchmarks") at the
//! same time, with the paper's thread counts and pages per thread (32/2,
//! 8/10, 32/10, 48/10), under each condition; a run's time is that of its
//! longest thread ("the overall maximum execution time per experiment").
//! Threads beyond the CPUs share them (pinned round robin): the run says so.

use super::kernels::bubblesort;
use super::plan::{self, Plan};
use super::{Allocation, numa};
use crate::harness::{Durations, Interleaved, Progress};
use crate::page_placement::PagedMemory;
use crate::pinned_threads::{Job, run_together};
use crate::{Error, Result};
use serde::{Deserialize, Serialize};

/// Composite configurations as `THREADS/PAGES,...` (`--composite`): each
/// (threads, pages per thread) at least 1; `none` for none.
pub fn parse_configurations(text: &str) -> Result<Vec<(usize, usize)>> {
    if text.trim() == "none" {
        return Ok(Vec::new());
    }
    text.split(',')
        .map(|item| {
            let parsed = item.trim().split_once('/').and_then(|(t, p)| {
                Some((
                    t.trim().parse::<usize>().ok()?,
                    p.trim().parse::<usize>().ok()?,
                ))
            });
            match parsed {
                Some((t, p)) if t > 0 && p > 0 => Ok((t, p)),
                _ => Err(Error::option(
                    "--composite",
                    "THREADS/PAGES with both at least 1 (e.g. 32/2)",
                    format!("{item:?}"),
                )),
            }
        })
        .collect()
}

/// One condition of one configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompositeCondition {
    /// The condition.
    pub allocation: Allocation,
    /// The longest thread's time per run.
    pub time: Durations,
    /// Per thread, pages from a fallback step (empty when not bank-aware).
    pub fallback_pages: Vec<usize>,
}

/// One (threads, pages per thread) configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompositeResult {
    /// Threads.
    pub threads: usize,
    /// Pages per thread.
    pub pages: usize,
    /// Sorts per run.
    pub iterations: u32,
    /// Default first, then every Table 2 condition that ran.
    pub conditions: Vec<CompositeCondition>,
}

/// Sorts per run: enough work for a few milliseconds per thread.
fn iterations(pages: usize) -> u32 {
    if pages <= 2 { 5 } else { 1 }
}

/// The conditions of every configuration: default, then every Table 2
/// condition the plan runs.
pub(super) fn conditions(plan: &Plan) -> Vec<Allocation> {
    std::iter::once(Allocation::Default)
        .chain(
            Allocation::TABLE2
                .into_iter()
                .filter(|a| plan.allocations.contains(a)),
        )
        .collect()
}

/// Runs every configuration of the plan; pages of bank-aware conditions
/// come from `arena`.
pub(super) fn measure(
    plan: &Plan,
    mut arena: Option<&mut PagedMemory>,
    progress: &dyn Progress,
) -> Result<Vec<CompositeResult>> {
    let page_words = plan.page_bytes as usize / 8;
    let mut results = Vec::with_capacity(plan.composite.len());
    for &(threads, pages) in &plan.composite {
        if progress.stop_requested() {
            break; // Ctrl-C: the configurations measured so far
        }
        progress.set_message(&format!("composite {threads} threads x {pages} pages"));
        let conditions = conditions(plan);
        let cpu_of = |thread: usize| plan.run.cpus[thread % plan.run.cpus.len()];
        // Heap memory for default; first-touch memory for the node ones.
        let mut heaps: Vec<Vec<Vec<u64>>> = Vec::new();
        let mut arena_pages = Vec::new();
        let mut fallbacks = Vec::new();
        for &condition in &conditions {
            match condition {
                Allocation::Default => {
                    heaps.push(
                        (0..threads)
                            .map(|_| vec![1u64; pages * page_words])
                            .collect(),
                    );
                    fallbacks.push(Vec::new());
                }
                Allocation::OneNode | Allocation::TwoNodes => {
                    let nodes = plan.nodes();
                    let mut memory = Vec::with_capacity(threads);
                    for thread in 0..threads {
                        let node = if condition == Allocation::OneNode {
                            nodes[0]
                        } else {
                            nodes[thread % 2]
                        };
                        memory.push(numa::first_touch(node.cpus[0], pages * page_words)?);
                    }
                    heaps.push(memory);
                    fallbacks.push(Vec::new());
                }
                other => {
                    let arena = arena.as_deref_mut().ok_or_else(|| {
                        Error::Measurement(format!("{} needs the bank arena", other.name()))
                    })?;
                    let chosen = plan::choose_pages(arena, other, threads, pages, plan.bank_mode)?;
                    fallbacks.push(chosen.fallback.clone());
                    arena_pages.push((heaps.len(), chosen.groups));
                    heaps.push(Vec::new());
                }
            }
        }
        // Every condition's per-thread page lists.
        let mut arena_slices = match arena.as_deref_mut() {
            Some(arena) if !arena_pages.is_empty() => {
                let groups: Vec<Vec<tinct_mem::PageId>> = arena_pages
                    .iter()
                    .flat_map(|(_, groups)| groups.iter().cloned())
                    .collect();
                arena.split(&groups)?.into_iter()
            }
            _ => Vec::new().into_iter(),
        };
        let mut memory: Vec<Vec<Vec<&mut [u64]>>> = Vec::with_capacity(conditions.len());
        for (index, heap) in heaps.iter_mut().enumerate() {
            if arena_pages.iter().any(|(at, _)| *at == index) {
                memory.push(
                    (0..threads)
                        .map(|_| arena_slices.next().unwrap_or_default())
                        .collect(),
                );
            } else {
                memory.push(
                    heap.iter_mut()
                        .map(|words| words.chunks_exact_mut(page_words).collect())
                        .collect(),
                );
            }
        }
        let rounds = iterations(pages);
        let names: Vec<&str> = conditions.iter().map(|a| a.name()).collect();
        let samples = Interleaved::new(names, plan.run.reps)
            .warmup(super::WARMUP_ROUNDS)
            .seed(plan.run.seed ^ (threads as u64) << 8 ^ pages as u64)
            .run(progress, |c| {
                let jobs = memory[c]
                    .iter_mut()
                    .enumerate()
                    .map(|(thread, pages)| Job {
                        cpus: vec![cpu_of(thread)],
                        input: pages,
                    })
                    .collect();
                run_together(jobs, plan.fifo, |_, pages| bubblesort(pages, rounds))
                    .map(|t| t.per_thread_ns.iter().copied().max().unwrap_or(0))
            })?;
        if samples.rounds_completed == 0 {
            break; // stopped before its first round ended
        }
        let conditions = conditions
            .iter()
            .enumerate()
            .map(|(c, &allocation)| {
                Ok(CompositeCondition {
                    allocation,
                    time: samples.stats(c).ok_or_else(|| {
                        Error::Measurement(format!(
                            "no composite samples for {}",
                            allocation.name()
                        ))
                    })?,
                    fallback_pages: fallbacks[c].clone(),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        results.push(CompositeResult {
            threads,
            pages,
            iterations: rounds,
            conditions,
        });
    }
    Ok(results)
}

#[cfg(test)]
mod tests {
    use super::parse_configurations;

    #[test]
    fn configurations_parse_and_refuse_zero_or_garbage() {
        assert_eq!(
            parse_configurations("32/2, 8/10").unwrap(),
            [(32, 2), (8, 10)]
        );
        assert_eq!(parse_configurations(" none ").unwrap(), []);
        for bad in ["0/2", "4/0", "4", "a/b", "4/2,"] {
            let message = parse_configurations(bad).unwrap_err().to_string();
            assert!(message.contains("THREADS/PAGES"), "{bad}: {message}");
        }
    }
}
