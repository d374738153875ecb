//! Measuring `tinct bench banks`: every allocation's memory is set up once,
//! then each kernel runs on all threads at once under every allocation,
//! interleaved round by round.

use super::composite;
use super::kernels::{self, Arrays, Kernel};
use super::plan::{self, Pages, Plan};
use super::{Allocation, AllocationResult, KernelResult, WARMUP_ROUNDS, numa};
use crate::choice::Choice;
use crate::harness::counters::prefixed;
use crate::harness::{ConditionCounters, Interleaved, Progress};
use crate::page_placement::PagedMemory;
use crate::pinned_threads::{Job, run_together};
use crate::scheduling_and_load::RunConditions;
use crate::{Error, Result};
use tinct_mem::PageId;
use tinct_report::stats::stddev_f64;

/// What [`measure`] found.
pub struct Measured {
    pub kernels: Vec<KernelResult>,
    /// Counter totals per kernel and allocation (`kernel/allocation`).
    pub counters: Vec<ConditionCounters>,
    /// The composite bubblesort runs.
    pub composite: Vec<composite::CompositeResult>,
    pub run_conditions: RunConditions,
    /// Why frames are unreadable (bank placement not controlled), if so.
    pub frames_unreadable: Option<String>,
    /// Arena pages whose frame changed during the run.
    pub moved_pages: Option<usize>,
}

/// NUMA memory placed by first touch, and the share of each thread's
/// pages found on the intended node.
#[derive(Default)]
struct NodeMemory {
    /// Per NUMA allocation of the plan, in its order (controller-local,
    /// controller-remote, 1node, 2nodes): per thread, its memory.
    heaps: Vec<Vec<Vec<u64>>>,
    shares: NodeShares,
}

/// Per NUMA allocation, per thread, the share of its pages on the intended
/// node (empty when frames or the node map are unreadable).
#[derive(Default)]
struct NodeShares {
    of: Vec<(Allocation, Vec<f64>)>,
}

impl NodeShares {
    fn get(&self, allocation: Allocation) -> Vec<f64> {
        self.of
            .iter()
            .find(|(a, _)| *a == allocation)
            .map(|(_, shares)| shares.clone())
            .unwrap_or_default()
    }
}

/// The NUMA allocations, in the order their memory follows the arena's.
const NODE_ALLOCATIONS: [Allocation; 4] = [
    Allocation::NodeLocal,
    Allocation::NodeRemote,
    Allocation::OneNode,
    Allocation::TwoNodes,
];

/// Sets up the memory of every allocation and measures every kernel.
pub(super) fn measure(plan: &Plan, progress: &dyn Progress) -> Result<Measured> {
    let mut arena = plan::arena(plan)?;
    let mut pages = Vec::new();
    if let Some(arena) = arena.as_mut() {
        for &allocation in &plan.arena_allocations {
            pages.push(plan::choose_pages(
                arena,
                allocation,
                plan.threads(),
                plan.pages_per_thread,
                plan.bank_mode,
            )?);
        }
    }
    let words_per_thread = plan.pages_per_thread * (plan.page_bytes as usize / 8);
    let mut heap: Vec<Vec<u64>> = (0..plan.threads())
        .map(|_| vec![1u64; words_per_thread])
        .collect();
    let mut nodes = node_memory(plan, words_per_thread)?;
    let frames_unreadable = arena
        .as_ref()
        .and_then(|a| a.placement_unknown().map(str::to_string));

    let total = u64::from(plan.run.reps + WARMUP_ROUNDS)
        * (plan.kernels.len() as u64 * plan.allocations.len() as u64
            + composite::conditions(plan).len() as u64 * plan.composite.len() as u64);
    progress.start(total, "banks");
    let mut run_conditions = RunConditions::start(plan.fifo)?;
    let mut results = Vec::with_capacity(plan.kernels.len());
    let mut counters = Vec::new();
    {
        let mut arrays = thread_arrays(plan, &mut heap, arena.as_mut(), &pages, &mut nodes.heaps)?;
        // Ctrl-C: the kernels and configurations measured so far are the result.
        for (k, &kernel) in plan.kernels.iter().enumerate() {
            if progress.stop_requested() {
                break;
            }
            progress.set_message(kernel.name());
            let seed = plan.run.seed.wrapping_add(k as u64);
            let Some((result, totals)) = measure_kernel(
                plan,
                kernel,
                seed,
                &mut arrays,
                &pages,
                &nodes.shares,
                progress,
            )?
            else {
                break;
            };
            results.push(result);
            counters.extend(totals);
        }
    }
    let composite = composite::measure(plan, arena.as_mut(), progress)?;
    progress.finish();
    run_conditions.finish();
    Ok(Measured {
        kernels: results,
        counters,
        composite,
        run_conditions,
        frames_unreadable,
        moved_pages: arena.as_ref().and_then(PagedMemory::moved_pages),
    })
}

/// The memory of every NUMA allocation of the plan, by first touch:
/// controller-local on each thread's node, controller-remote on another,
/// 1node all on the first node, 2nodes alternating over the first two;
/// and where it landed.
fn node_memory(plan: &Plan, words_per_thread: usize) -> Result<NodeMemory> {
    let mut nodes = NodeMemory::default();
    let wanted: Vec<Allocation> = NODE_ALLOCATIONS
        .into_iter()
        .filter(|a| plan.allocations.contains(a))
        .collect();
    if wanted.is_empty() {
        return Ok(nodes);
    }
    let map = numa::NodeMap::read(&tinct_sys::SysRoot::live())?;
    let node_cpus: Vec<(u32, u32)> = plan.nodes().iter().map(|n| (n.cpus[0], n.id)).collect();
    for allocation in wanted {
        let mut heap = Vec::with_capacity(plan.threads());
        let mut shares = Vec::new();
        for (thread, &cpu) in plan.thread_cpus.iter().enumerate() {
            let (touch_cpu, node) = match allocation {
                Allocation::NodeRemote => plan
                    .remote
                    .as_ref()
                    .and_then(|r| r.get(thread).copied())
                    .ok_or_else(|| Error::Measurement("no remote CPU planned".into()))?,
                Allocation::OneNode => node_cpus[0],
                Allocation::TwoNodes => node_cpus[thread % 2],
                _ => (cpu, plan::node_of_cpu(&plan.topology, cpu).unwrap_or(0)),
            };
            let memory = numa::first_touch(touch_cpu, words_per_thread)?;
            if let Some(map) = &map {
                shares.extend(numa::share_on_node(&memory, node, map));
            }
            heap.push(memory);
        }
        nodes.shares.of.push((allocation, shares));
        nodes.heaps.push(heap);
    }
    Ok(nodes)
}

/// Every allocation's per-thread arrays, in the order of `plan.allocations`.
fn thread_arrays<'a>(
    plan: &Plan,
    heap: &'a mut [Vec<u64>],
    arena: Option<&'a mut PagedMemory>,
    pages: &[Pages],
    node_heaps: &'a mut [Vec<Vec<u64>>],
) -> Result<Vec<Vec<Arrays<'a>>>> {
    let page_words = plan.page_bytes as usize / 8;
    let from_heap = |heap: &'a mut [Vec<u64>]| -> Vec<Arrays<'a>> {
        heap.iter_mut()
            .map(|words| Arrays::from_pages(words.chunks_exact_mut(page_words).collect()))
            .collect()
    };
    let mut per_allocation = vec![from_heap(heap)];
    if let Some(arena) = arena {
        let groups: Vec<Vec<PageId>> = pages
            .iter()
            .flat_map(|p| p.groups.iter().cloned())
            .collect();
        let mut split = arena.split(&groups)?.into_iter();
        for _ in pages {
            per_allocation.push(
                (0..plan.threads())
                    .map(|_| Arrays::from_pages(split.next().unwrap_or_default()))
                    .collect(),
            );
        }
    }
    for heap in node_heaps {
        if !heap.is_empty() {
            per_allocation.push(from_heap(heap));
        }
    }
    Ok(per_allocation)
}

/// One kernel under every allocation, interleaved.
fn measure_kernel(
    plan: &Plan,
    kernel: Kernel,
    seed: u64,
    arrays: &mut [Vec<Arrays<'_>>],
    pages: &[Pages],
    nodes: &NodeShares,
    progress: &dyn Progress,
) -> Result<Option<(KernelResult, Vec<ConditionCounters>)>> {
    let elements = arrays[0][0].elements_of(kernel);
    let target = if plan.run.quick {
        24u64 << 20
    } else {
        192u64 << 20
    };
    let passes = (target / (elements * kernel.bytes_per_element())).max(1);
    let bytes_per_run = elements * kernel.bytes_per_element() * passes * plan.threads() as u64;
    let names: Vec<&str> = plan.allocations.iter().map(|a| a.name()).collect();
    let samples = Interleaved::new(names, plan.run.reps)
        .warmup(WARMUP_ROUNDS)
        .seed(seed)
        .run(progress, |c| {
            let jobs = arrays[c]
                .iter_mut()
                .zip(&plan.thread_cpus)
                .map(|(arrays, &cpu)| Job {
                    cpus: vec![cpu],
                    input: arrays,
                })
                .collect();
            run_together(jobs, plan.fifo, |i, arrays| {
                kernels::run(kernel, arrays, passes, plan.run.seed.wrapping_add(i as u64))
            })
            .map(|t| t.elapsed_ns)
        })?;
    if samples.rounds_completed == 0 {
        return Ok(None); // stopped before its first round ended
    }
    let default_median = samples.stats(0).map_or(0, |s| s.median);
    let mut rows = Vec::with_capacity(plan.allocations.len());
    for (c, &allocation) in plan.allocations.iter().enumerate() {
        let time = samples
            .stats(c)
            .ok_or_else(|| Error::Measurement(format!("no samples for {}", allocation.name())))?;
        let bandwidths: Vec<f64> = samples.samples[c]
            .iter()
            .map(|&ns| mib_per_s(bytes_per_run, ns))
            .collect();
        let banks = match c.checked_sub(1).and_then(|i| pages.get(i)) {
            Some(pages) => pages.banks.clone(),
            None => Vec::new(),
        };
        let on_intended_node = nodes.get(allocation);
        let fallback_pages = match c.checked_sub(1).and_then(|i| pages.get(i)) {
            Some(pages) => pages.fallback.clone(),
            None => Vec::new(),
        };
        rows.push(AllocationResult {
            allocation,
            banks,
            fallback_pages,
            on_intended_node,
            bandwidth_mib_s: mib_per_s(bytes_per_run, time.median),
            bandwidth_stddev_mib_s: stddev_f64(&bandwidths),
            time_cv: if time.mean > 0.0 {
                time.stddev / time.mean
            } else {
                0.0
            },
            median_over_default: tinct_report::stats::ratio(time.median, default_median),
            time,
        });
    }
    let counters = prefixed(&format!("{}/", kernel.name()), &samples.counters);
    let result = KernelResult {
        kernel,
        passes,
        bytes_per_run,
        allocations: rows,
    };
    Ok(Some((result, counters)))
}

fn mib_per_s(bytes: u64, ns: u64) -> f64 {
    if ns == 0 {
        0.0
    } else {
        bytes as f64 / (1u64 << 20) as f64 / (ns as f64 / 1e9)
    }
}
