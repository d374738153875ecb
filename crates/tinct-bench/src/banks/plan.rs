//! Planning `tinct bench banks`: the threads and their CPUs, which
//! allocations can run here (and why the others cannot), the arena for
//! bank- and controller-aware pages, and each thread's pages in it.

use super::kernels::Kernel;
use super::{Allocation, Params, Skipped};
use crate::harness::machine::human_bytes;
use crate::page_placement::PagedMemory;
use crate::{Error, Result};
use tinct_mem::{AddressMapping, PageId, XorFunctions};
use tinct_sys::topology::Topology;

/// Arena slack over the expected pages per bank (physical pages are not
/// spread perfectly evenly over banks).
const ARENA_SLACK: f64 = 1.5;
/// Largest arena the bench will allocate for bank-aware placement.
const MAX_ARENA_BYTES: u64 = 4 << 30;

/// What a run measures, checked against this machine.
pub(super) struct Plan {
    pub quick: bool,
    pub reps: u32,
    pub seed: u64,
    pub fifo: Option<u8>,
    /// Every CPU the bench may use.
    pub cpus: Vec<u32>,
    /// One CPU per thread.
    pub thread_cpus: Vec<u32>,
    pub page_bytes: u64,
    /// Memory per thread as asked for.
    pub bytes_per_thread: u64,
    /// The same in whole pages.
    pub pages_per_thread: usize,
    pub mapping: AddressMapping,
    pub kernels: Vec<Kernel>,
    /// Default first, then the arena's allocations, then the NUMA ones.
    pub allocations: Vec<Allocation>,
    /// The allocations whose pages come from the bank-aware arena.
    pub arena_allocations: Vec<Allocation>,
    pub skipped: Vec<Skipped>,
    /// Per thread, a CPU on another NUMA node and that node (when there is one).
    pub remote: Option<Vec<(u32, u32)>>,
    pub topology: Topology,
}

impl Plan {
    /// Number of measuring threads.
    pub fn threads(&self) -> usize {
        self.thread_cpus.len()
    }

    /// True when bank functions were given.
    pub fn bank_known(&self) -> bool {
        self.mapping.banks() > 1
    }

    /// True when controller functions were given.
    pub fn controller_known(&self) -> bool {
        self.mapping.controllers() > 1
    }
}

/// Checks the parameters and decides which allocations run.
pub(super) fn plan(params: &Params) -> Result<Plan> {
    let common = &params.common;
    let quick = common.quick;
    let reps = common.reps_or(3, 15)?;
    let cpus = common.cpus(1)?;
    let threads = params.threads.unwrap_or(cpus.len());
    if threads == 0 || threads > cpus.len() {
        return Err(Error::InvalidInput(format!(
            "--threads: expected 1..={} (one per CPU of --cpus), found {threads}",
            cpus.len()
        )));
    }
    let thread_cpus: Vec<u32> = cpus[..threads].to_vec();
    let bytes_per_thread = match params.size {
        Some(size) => size.0,
        None if quick => 3 << 20,
        None => 48 << 20,
    };
    let page_bytes = rustix::param::page_size() as u64;
    if bytes_per_thread < 3 * page_bytes {
        return Err(Error::InvalidInput(format!(
            "--size: expected at least three pages ({} bytes) per thread, found {bytes_per_thread}",
            3 * page_bytes
        )));
    }
    let mapping = address_mapping(params, page_bytes)?;
    let topology = Topology::read(&tinct_sys::SysRoot::live())?;
    let mut plan = Plan {
        quick,
        reps,
        seed: common.seed,
        fifo: params.fifo,
        kernels: params
            .kernels
            .clone()
            .unwrap_or_else(|| Kernel::ALL.to_vec()),
        pages_per_thread: bytes_per_thread.div_ceil(page_bytes) as usize,
        bytes_per_thread,
        page_bytes,
        mapping,
        allocations: vec![Allocation::Default],
        arena_allocations: Vec::new(),
        skipped: Vec::new(),
        remote: None,
        topology,
        thread_cpus,
        cpus,
    };
    add_arena_allocations(&mut plan);
    match remote_cpus(&plan.topology, &plan.thread_cpus, &plan.cpus) {
        Ok(remote) => {
            plan.allocations
                .extend([Allocation::NodeLocal, Allocation::NodeRemote]);
            plan.remote = Some(remote);
        }
        Err(reason) => plan.skipped.push(Skipped {
            condition: "controller-local / controller-remote".into(),
            reason,
        }),
    }
    Ok(plan)
}

/// The DRAM address mapping of the given bank and controller functions.
fn address_mapping(params: &Params, page_bytes: u64) -> Result<AddressMapping> {
    let bank = parse_functions("--bank-functions", params.bank_functions.as_deref())?;
    let controller = parse_functions(
        "--controller-functions",
        params.controller_functions.as_deref(),
    )?;
    AddressMapping::new(page_bytes, XorFunctions::none(), bank, controller)
        .map_err(|e| Error::InvalidInput(format!("--bank-functions/--controller-functions: {e}")))
}

fn parse_functions(option: &str, text: Option<&str>) -> Result<XorFunctions> {
    match text {
        None => Ok(XorFunctions::none()),
        Some(text) => {
            XorFunctions::parse(text).map_err(|e| Error::InvalidInput(format!("{option}: {e}")))
        }
    }
}

/// Own/shared-bank when bank functions are known, own/shared-controller
/// when controller functions are; the others are skipped with the reason.
fn add_arena_allocations(plan: &mut Plan) {
    let bank_reason = "bank placement unknown here: Linux does not expose the DRAM address \
                       mapping; give --bank-functions (XOR masks as DRAMA prints them)";
    let controller_reason =
        "one memory controller known: give --controller-functions for a machine with several";
    for (known, pair, reason) in [
        (
            plan.bank_known(),
            [Allocation::OwnBank, Allocation::SharedBank],
            bank_reason,
        ),
        (
            plan.controller_known(),
            [Allocation::OwnController, Allocation::SharedController],
            controller_reason,
        ),
    ] {
        if known {
            plan.arena_allocations.extend(pair);
        } else {
            plan.skipped.extend(pair.map(|a| Skipped {
                condition: a.name().into(),
                reason: reason.into(),
            }));
        }
    }
    plan.allocations
        .extend(plan.arena_allocations.iter().copied());
}

/// The arena for bank- and controller-aware pages (`None` when no such
/// allocation runs), large enough for every arena allocation.
pub(super) fn arena(plan: &Plan) -> Result<Option<PagedMemory>> {
    if plan.arena_allocations.is_empty() {
        return Ok(None);
    }
    let (threads, pages_per_thread) = (plan.threads(), plan.pages_per_thread);
    let bytes_per_thread = plan.bytes_per_thread;
    let mapping = &plan.mapping;
    let classes = u64::from(mapping.banks() * mapping.controllers());
    // Reporting-grade sizing with slack; the fit check below is exact.
    let bytes =
        (classes as f64 * (threads as f64 + 1.0) * bytes_per_thread as f64 * ARENA_SLACK) as u64;
    if bytes > MAX_ARENA_BYTES {
        return Err(Error::InvalidInput(format!(
            "bank-aware placement of {} per thread over {classes} bank classes needs a {} \
             arena: expected at most {}; use a smaller --size or fewer --threads",
            human_bytes(bytes_per_thread),
            human_bytes(bytes),
            human_bytes(MAX_ARENA_BYTES)
        )));
    }
    // Own-bank needs one thread's pages in each bank, shared-bank all
    // threads' pages in one; own/shared-controller the same per controller.
    let (bank_known, controller_known) = (plan.bank_known(), plan.controller_known());
    let banks = mapping.banks();
    let fits = |memory: &PagedMemory| {
        let per_bank = |c, b| memory.free_in_bank(c, b);
        let per_controller = |c| (0..banks).map(|b| memory.free_in_bank(c, b)).sum::<usize>();
        let controllers = 0..mapping.controllers();
        let bank_ok = !bank_known
            || controllers
                .clone()
                .all(|c| (0..banks).all(|b| per_bank(c, b) >= pages_per_thread))
                && controllers.clone().any(|c| {
                    (0..banks).any(|b| per_bank(c, b) >= (threads + 1) * pages_per_thread)
                });
        let controller_ok = !controller_known
            || controllers
                .clone()
                .all(|c| per_controller(c) >= 2 * pages_per_thread)
                && per_controller(0) >= (threads + 1) * pages_per_thread;
        bank_ok && controller_ok
    };
    PagedMemory::new_fitting(mapping, bytes, fits).map(Some)
}

/// Each thread's pages for one allocation: page ids into the arena, and the
/// (controller, bank) they came from.
pub(super) struct Pages {
    pub groups: Vec<Vec<PageId>>,
    pub banks: Vec<Vec<[u32; 2]>>,
}

/// The NUMA node of `cpu`.
pub(super) fn node_of_cpu(topology: &tinct_sys::topology::Topology, cpu: u32) -> Option<u32> {
    topology
        .numa_nodes
        .iter()
        .find(|n| n.cpus.contains(&cpu))
        .map(|n| n.id)
}

/// For each thread CPU, an allowed CPU on another NUMA node and that node;
/// or why controller-local/remote cannot run here.
fn remote_cpus(
    topology: &tinct_sys::topology::Topology,
    thread_cpus: &[u32],
    allowed: &[u32],
) -> std::result::Result<Vec<(u32, u32)>, String> {
    if topology.numa_nodes.len() < 2 {
        return Err("one NUMA node: every controller is equally near every CPU".into());
    }
    thread_cpus
        .iter()
        .map(|&cpu| {
            let home = node_of_cpu(topology, cpu);
            allowed
                .iter()
                .find_map(|&other| {
                    let node = node_of_cpu(topology, other)?;
                    (Some(node) != home).then_some((other, node))
                })
                .ok_or_else(|| {
                    format!("no allowed CPU outside the NUMA node of CPU {cpu}: widen --cpus")
                })
        })
        .collect()
}

/// Chooses each thread's pages for `allocation` from the arena
/// (chandru-mueller's colored allocation, one bank or controller per thread,
/// or the pathological all-in-one).
pub(super) fn choose_pages(
    arena: &mut PagedMemory,
    allocation: Allocation,
    threads: usize,
    pages: usize,
) -> Result<Pages> {
    let (banks, controllers) = (arena.mapping().banks(), arena.mapping().controllers());
    let mut groups = Vec::with_capacity(threads);
    let mut used = Vec::with_capacity(threads);
    match allocation {
        Allocation::OwnBank | Allocation::SharedBank => {
            // Shared: the bank with the most free pages; own: thread i's bank i.
            let busiest = (0..controllers)
                .flat_map(|c| (0..banks).map(move |b| (c, b)))
                .max_by_key(|&(c, b)| (arena.free_in_bank(c, b), std::cmp::Reverse((c, b))))
                .unwrap_or((0, 0));
            for thread in 0..threads {
                let (controller, bank) = if allocation == Allocation::SharedBank {
                    busiest
                } else {
                    let class = thread as u32 % (banks * controllers);
                    (class / banks, class % banks)
                };
                groups.push(arena.take_bank(controller, bank, pages)?);
                used.push(vec![[controller, bank]]);
            }
        }
        Allocation::OwnController | Allocation::SharedController => {
            for thread in 0..threads {
                let controller = if allocation == Allocation::SharedController {
                    0
                } else {
                    thread as u32 % controllers
                };
                let mut mine = Vec::with_capacity(pages);
                let mut bank = 0;
                while mine.len() < pages {
                    let free: usize = (0..banks).map(|b| arena.free_in_bank(controller, b)).sum();
                    if free == 0 {
                        return Err(Error::Measurement(format!(
                            "controller {controller} ran out of pages: use a smaller --size"
                        )));
                    }
                    if arena.free_in_bank(controller, bank) > 0 {
                        mine.extend(arena.take_bank(controller, bank, 1)?);
                    }
                    bank = (bank + 1) % banks;
                }
                groups.push(mine);
                used.push(Vec::new());
            }
        }
        Allocation::Default | Allocation::NodeLocal | Allocation::NodeRemote => {}
    }
    Ok(Pages {
        groups,
        banks: used,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tinct_sys::topology::NumaNode;

    fn topology(nodes: &[&[u32]]) -> Topology {
        Topology {
            online_cpus: nodes.iter().flat_map(|n| n.iter().copied()).collect(),
            cpus: Vec::new(),
            numa_nodes: nodes
                .iter()
                .enumerate()
                .map(|(id, cpus)| NumaNode {
                    id: id as u32,
                    cpus: cpus.to_vec(),
                    memory_bytes: None,
                })
                .collect(),
            caches: Vec::new(),
        }
    }

    #[test]
    fn remote_cpus_lie_on_another_node() {
        let t = topology(&[&[0, 1], &[2, 3]]);
        assert_eq!(
            remote_cpus(&t, &[0, 2], &[0, 1, 2, 3]),
            Ok(vec![(2, 1), (0, 0)])
        );
        assert_eq!(node_of_cpu(&t, 3), Some(1));
    }

    #[test]
    fn one_node_or_no_allowed_remote_cpu_is_explained() {
        let one = topology(&[&[0, 1]]);
        assert!(
            remote_cpus(&one, &[0], &[0, 1])
                .unwrap_err()
                .contains("one NUMA node")
        );
        let two = topology(&[&[0, 1], &[2, 3]]);
        assert!(
            remote_cpus(&two, &[0], &[0, 1])
                .unwrap_err()
                .contains("--cpus")
        );
    }

    #[test]
    fn bank_plans_give_each_thread_its_bank_or_all_one_bank() {
        let mapping = AddressMapping::new(
            rustix::param::page_size() as u64,
            XorFunctions::none(),
            XorFunctions::from_bits(&[13, 14]).unwrap(),
            XorFunctions::none(),
        )
        .unwrap();
        let mut arena = PagedMemory::new(mapping, 8 << 20).unwrap();
        let own = choose_pages(&mut arena, Allocation::OwnBank, 3, 16).unwrap();
        assert_eq!(own.banks, vec![vec![[0, 0]], vec![[0, 1]], vec![[0, 2]]]);
        assert!(own.groups.iter().all(|g| g.len() == 16));
        let shared = choose_pages(&mut arena, Allocation::SharedBank, 3, 16).unwrap();
        assert!(shared.banks.iter().all(|b| *b == shared.banks[0]));
        let pages: Vec<PageId> = own
            .groups
            .iter()
            .chain(&shared.groups)
            .flatten()
            .copied()
            .collect();
        let mut distinct = pages.clone();
        distinct.sort();
        distinct.dedup();
        assert_eq!(distinct.len(), pages.len(), "a page was handed out twice");
    }
}
