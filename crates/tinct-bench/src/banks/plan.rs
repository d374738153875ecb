//! Planning `tinct bench banks`: the threads and their CPUs, which
//! allocations can run here (and why the others cannot), the arena for
//! bank- and controller-aware pages, and each thread's pages in it.

use super::kernels::Kernel;
use super::{Allocation, Params, Skipped};
use crate::choice::Choice;
use crate::harness::RunSettings;
use crate::page_placement::PagedMemory;
use crate::{Error, Result};
use tinct_base::units::human_bytes;
use tinct_mem::{AddressMapping, PageId, XorFunctions};
use tinct_sys::topology::Topology;

/// Arena slack over the expected pages per bank (physical pages are not
/// spread perfectly evenly over banks).
const ARENA_SLACK: f64 = 1.5;
/// Largest arena the bench will allocate for bank-aware placement.
const MAX_ARENA_BYTES: u64 = 4 << 30;

/// What a run measures, checked against this machine.
pub struct Plan {
    /// Quick, reps, seed, and every CPU the bench may use.
    pub run: RunSettings,
    pub fifo: Option<u8>,
    /// One CPU per thread.
    pub thread_cpus: Vec<u32>,
    pub page_bytes: u64,
    /// Memory per thread as asked for.
    pub bytes_per_thread: u64,
    /// The same in whole pages.
    pub pages_per_thread: usize,
    pub mapping: AddressMapping,
    /// Where the functions came from.
    pub functions_from: String,
    /// Algorithm 1's fallback modes.
    pub bank_mode: tinct_mem::Modes,
    pub kernels: Vec<Kernel>,
    /// Composite bubblesort configurations (threads, pages per thread).
    pub composite: Vec<(usize, usize)>,
    /// Default first, then the arena's allocations, then the NUMA ones.
    pub allocations: Vec<Allocation>,
    /// The allocations whose pages come from the bank-aware arena.
    pub arena_allocations: Vec<Allocation>,
    pub skipped: Vec<Skipped>,
    /// Per thread, a CPU on another NUMA node and that node (when there is one).
    pub remote: Option<Vec<(u32, u32)>>,
    pub topology: Topology,
    /// The machine, described before anything is measured.
    pub machine: crate::harness::Machine,
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

    /// NUMA nodes with CPUs.
    pub fn nodes(&self) -> Vec<&tinct_sys::topology::NumaNode> {
        self.topology
            .numa_nodes
            .iter()
            .filter(|n| !n.cpus.is_empty())
            .collect()
    }
}

impl crate::harness::Plan for Plan {
    type Params = Params;
    type Measured = super::measure::Measured;

    /// Checks the parameters and decides which allocations run.
    fn plan(params: &Params) -> Result<Plan> {
        let common = &params.common;
        let quick = common.quick;
        let reps = common.reps_or(3, 15)?;
        let cpus = common.cpus(1)?;
        let threads = params.threads.unwrap_or(cpus.len());
        if threads == 0 || threads > cpus.len() {
            return Err(Error::option(
                "--threads",
                format!("1..={} (one per CPU of --cpus)", cpus.len()),
                threads.to_string(),
            ));
        }
        let thread_cpus: Vec<u32> = cpus[..threads].to_vec();
        let bytes_per_thread = match params.size {
            Some(size) => size.0,
            None if quick => 3 << 20,
            None => 48 << 20,
        };
        let page_bytes = rustix::param::page_size() as u64;
        if bytes_per_thread < 3 * page_bytes {
            return Err(Error::option(
                "--size",
                format!("at least three pages ({} bytes) per thread", 3 * page_bytes),
                bytes_per_thread.to_string(),
            ));
        }
        let (mapping, functions_from, mapping_notes) = address_mapping(params, page_bytes)?;
        let topology = Topology::read(&tinct_sys::SysRoot::live())?;
        let composite = params.composite.clone().unwrap_or_else(|| {
            if quick {
                let threads = cpus.len().min(4);
                vec![(threads, 2), (threads, 10)]
            } else {
                vec![(32, 2), (8, 10), (32, 10), (48, 10)]
            }
        });
        let mut plan = Plan {
            fifo: params.fifo,
            kernels: params
                .kernels
                .clone()
                .unwrap_or_else(|| Kernel::ALL.to_vec()),
            pages_per_thread: bytes_per_thread.div_ceil(page_bytes) as usize,
            bytes_per_thread,
            page_bytes,
            mapping,
            functions_from,
            bank_mode: params.bank_mode,
            composite,
            allocations: vec![Allocation::Default],
            arena_allocations: Vec::new(),
            skipped: Vec::new(),
            remote: None,
            topology,
            machine: crate::harness::Machine::describe(),
            thread_cpus,
            run: common.settings(reps, cpus),
        };
        plan.skipped.extend(mapping_notes);
        add_arena_allocations(&mut plan);
        match remote_cpus(&plan.topology, &plan.thread_cpus, &plan.run.cpus) {
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
        if plan.nodes().len() >= 2 {
            plan.allocations
                .extend([Allocation::OneNode, Allocation::TwoNodes]);
        } else {
            plan.skipped.push(Skipped {
                condition: "1node / 2nodes".into(),
                reason: "one NUMA node: the machine has no second node".into(),
            });
        }
        Ok(plan)
    }

    fn measure(&self, progress: &dyn crate::harness::Progress) -> Result<super::measure::Measured> {
        super::measure::measure(self, progress)
    }
}

/// The DRAM address mapping of the given bank and controller functions
/// (or of a `tinct bench dram-map` file, reduced to its page-granular
/// part), where it came from, and notes on what was left out.
fn address_mapping(
    params: &Params,
    page_bytes: u64,
) -> Result<(AddressMapping, String, Vec<Skipped>)> {
    let mut notes = Vec::new();
    let (bank, controller, from) = match &params.dram_map {
        None => (
            parse_functions("--bank-functions", params.bank_functions.as_deref())?,
            parse_functions(
                "--controller-functions",
                params.controller_functions.as_deref(),
            )?,
            "--bank-functions / --controller-functions".to_string(),
        ),
        Some(path) => {
            if params.bank_functions.is_some() || params.controller_functions.is_some() {
                return Err(Error::option(
                    "--dram-map",
                    "one source of the DRAM functions",
                    "--dram-map with --bank-functions or --controller-functions",
                ));
            }
            let map = tinct_core::dram_map::DramMap::load(path)?;
            let mut reduce = |what: &str, masks: &[u64]| -> Result<XorFunctions> {
                let functions = XorFunctions::from_masks(masks.to_vec()).map_err(|e| {
                    Error::option(
                        "--dram-map",
                        format!("usable {what} functions"),
                        e.to_string(),
                    )
                })?;
                let (kept, lost) = functions.page_granular(page_bytes);
                if lost > 0 {
                    notes.push(Skipped {
                        condition: format!("{lost} {what} bits of --dram-map"),
                        reason: "their functions read address bits inside a page: no page \
                                 allocation can choose them"
                            .into(),
                    });
                }
                Ok(kept)
            };
            let bank = reduce("bank", &map.bank_functions)?;
            let controller = reduce("controller", &map.controller_functions)?;
            let guest = if map.physical == tinct_core::dram_map::AddressKind::Guest {
                " (guest-physical: measured on a virtual machine)"
            } else {
                ""
            };
            (bank, controller, format!("{}{guest}", path.display()))
        }
    };
    let mapping =
        AddressMapping::new(page_bytes, XorFunctions::none(), bank, controller).map_err(|e| {
            Error::option(
                "--bank-functions/--controller-functions",
                "an address mapping tinct-mem accepts",
                e.to_string(),
            )
        })?;
    Ok((mapping, from, notes))
}

fn parse_functions(option: &str, text: Option<&str>) -> Result<XorFunctions> {
    match text {
        None => Ok(XorFunctions::none()),
        Some(text) => XorFunctions::parse(text)
            .map_err(|e| Error::option(option, "XOR masks like 0x2000,0x4000", e.to_string())),
    }
}

/// The allocations that take pages from the arena, each with the reason
/// when it cannot run here: own/shared-bank and 2/4/8banks need bank
/// functions (and enough banks), own/shared-controller, opposite-ctrl and
/// circular-alloc need two controllers, ctrl-local needs either.
fn add_arena_allocations(plan: &mut Plan) {
    let bank_reason = "bank placement unknown here: Linux does not expose the DRAM address \
                       mapping; give --bank-functions (XOR masks as DRAMA prints them) or \
                       --dram-map (from `tinct bench dram-map`)";
    let controller_reason =
        "one memory controller known: give --controller-functions for a machine with several";
    let banks = plan.mapping.banks();
    let (bank_known, controller_known) = (plan.bank_known(), plan.controller_known());
    let candidates: Vec<(Allocation, bool, String)> = [
        (Allocation::OwnBank, bank_known, bank_reason.to_string()),
        (Allocation::SharedBank, bank_known, bank_reason.into()),
        (
            Allocation::OwnController,
            controller_known,
            controller_reason.into(),
        ),
        (
            Allocation::SharedController,
            controller_known,
            controller_reason.into(),
        ),
    ]
    .into_iter()
    .chain(
        [Allocation::Banks2, Allocation::Banks4, Allocation::Banks8]
            .into_iter()
            .map(|a| {
                let wanted = a.banks_per_controller().unwrap_or(1);
                let reason = if bank_known {
                    format!("{wanted} banks per controller asked, the functions give {banks}")
                } else {
                    bank_reason.to_string()
                };
                (a, bank_known && wanted <= banks, reason)
            }),
    )
    .chain([
        (
            Allocation::LocalController,
            bank_known || controller_known,
            bank_reason.to_string(),
        ),
        (
            Allocation::OppositeController,
            controller_known,
            controller_reason.into(),
        ),
        (
            Allocation::Circular,
            controller_known,
            controller_reason.into(),
        ),
    ])
    .collect();
    for (allocation, runs, reason) in candidates {
        if runs {
            plan.arena_allocations.push(allocation);
        } else {
            plan.skipped.push(Skipped {
                condition: allocation.name().into(),
                reason,
            });
        }
    }
    plan.allocations
        .extend(plan.arena_allocations.iter().copied());
}

/// Where one thread's pages come from under an allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Target {
    /// One (controller, bank).
    Bank(u32, u32),
    /// One controller, its banks round robin.
    Controller(u32),
    /// Every controller in turn from this one, banks round robin.
    Circular(u32),
    /// The fullest bank, for every thread (shared-bank).
    Fullest,
}

/// The target of thread `thread` of `threads` under `allocation` (`None`
/// for allocations that do not take arena pages).
pub(super) fn target(
    mapping: &AddressMapping,
    allocation: Allocation,
    thread: usize,
    threads: usize,
) -> Option<Target> {
    let (banks, controllers) = (mapping.banks(), mapping.controllers());
    let group = (thread as u64 * u64::from(controllers) / threads.max(1) as u64) as u32;
    // The thread's place within its controller's group.
    let first_of_group = (0..threads)
        .find(|&t| (t as u64 * u64::from(controllers) / threads.max(1) as u64) as u32 == group)
        .unwrap_or(0);
    let within = (thread - first_of_group) as u32;
    match allocation {
        Allocation::OwnBank => {
            let class = thread as u32 % (banks * controllers);
            Some(Target::Bank(class / banks, class % banks))
        }
        Allocation::SharedBank => Some(Target::Fullest),
        Allocation::OwnController => Some(Target::Controller(thread as u32 % controllers)),
        Allocation::SharedController => Some(Target::Controller(0)),
        Allocation::Banks2 | Allocation::Banks4 | Allocation::Banks8 => {
            let per = allocation.banks_per_controller().unwrap_or(1).min(banks);
            Some(Target::Bank(group, within % per))
        }
        Allocation::LocalController => Some(Target::Controller(group)),
        Allocation::OppositeController => {
            Some(Target::Controller((group + controllers / 2) % controllers))
        }
        Allocation::Circular => Some(Target::Circular(group)),
        Allocation::Default
        | Allocation::NodeLocal
        | Allocation::NodeRemote
        | Allocation::OneNode
        | Allocation::TwoNodes => None,
    }
}

/// Pages every (controller, bank) must have free for `runs`: each
/// (allocation, threads, pages per thread) takes its threads' pages at
/// their targets (round robin over banks or controllers spread evenly),
/// plus the pages every shared-bank run puts in one bank.
fn demand(mapping: &AddressMapping, runs: &[(Allocation, usize, usize)]) -> (Vec<usize>, usize) {
    let (banks, controllers) = (mapping.banks() as usize, mapping.controllers() as usize);
    let mut per_class = vec![0usize; banks * controllers];
    let mut fullest = 0;
    for &(allocation, threads, pages) in runs {
        for thread in 0..threads {
            match target(mapping, allocation, thread, threads) {
                Some(Target::Bank(c, b)) => per_class[c as usize * banks + b as usize] += pages,
                Some(Target::Controller(c)) => {
                    for b in 0..banks {
                        per_class[c as usize * banks + b] += pages.div_ceil(banks);
                    }
                }
                Some(Target::Circular(_)) => {
                    for slot in &mut per_class {
                        *slot += pages.div_ceil(banks * controllers);
                    }
                }
                Some(Target::Fullest) => fullest += pages,
                None => {}
            }
        }
    }
    (per_class, fullest)
}

/// Every arena run of the bench: the kernels' allocations with the bench's
/// threads and size, and the composite's conditions per configuration.
pub(super) fn arena_runs(plan: &Plan) -> Vec<(Allocation, usize, usize)> {
    let mut runs: Vec<(Allocation, usize, usize)> = plan
        .arena_allocations
        .iter()
        .map(|&a| (a, plan.threads(), plan.pages_per_thread))
        .collect();
    for &(threads, pages) in &plan.composite {
        for allocation in Allocation::TABLE2 {
            if plan.arena_allocations.contains(&allocation) {
                runs.push((allocation, threads, pages));
            }
        }
    }
    runs
}

/// The arena for bank- and controller-aware pages (`None` when no such
/// allocation runs), large enough for every arena run (exactly checked,
/// doubling the size until it fits or the limit).
pub(super) fn arena(plan: &Plan) -> Result<Option<PagedMemory>> {
    if plan.arena_allocations.is_empty() {
        return Ok(None);
    }
    let mapping = &plan.mapping;
    let runs = arena_runs(plan);
    let (per_class, fullest) = demand(mapping, &runs);
    let total: usize = per_class.iter().sum::<usize>() + fullest;
    let classes = per_class.len() as u64;
    // Pages land in classes unevenly: start with the busiest class's need
    // in every class, plus slack.
    let busiest = per_class.iter().copied().max().unwrap_or(0) + fullest;
    let pages = (busiest as u64 * classes).max(total as u64);
    let bytes = (pages as f64 * plan.page_bytes as f64 * ARENA_SLACK) as u64;
    if bytes > MAX_ARENA_BYTES {
        return Err(Error::option(
            "--size and --threads",
            format!(
                "a bank-aware arena of at most {} (use a smaller --size or fewer --threads)",
                human_bytes(MAX_ARENA_BYTES)
            ),
            format!(
                "{} per thread over {classes} bank classes, which needs {}",
                human_bytes(plan.bytes_per_thread),
                human_bytes(bytes)
            ),
        ));
    }
    let banks = mapping.banks() as usize;
    let exact = plan.bank_mode == tinct_mem::Modes::EXACT;
    let fits = |memory: &PagedMemory| {
        let free = |slot: usize| memory.free_in_bank((slot / banks) as u32, (slot % banks) as u32);
        let every_class = (0..per_class.len()).all(|slot| free(slot) >= per_class[slot]);
        let shared = fullest == 0
            || (0..per_class.len()).any(|slot| free(slot) >= per_class[slot] + fullest);
        // With fallback modes a short class borrows from others: the
        // total is enough.
        let total_free: usize = (0..per_class.len()).map(free).sum();
        if exact {
            every_class && shared
        } else {
            total_free >= total
        }
    };
    PagedMemory::new_fitting(mapping, bytes, fits).map(Some)
}

/// Each thread's pages for one allocation: page ids into the arena, the
/// (controller, bank) they came from, and how many came from a fallback.
pub(super) struct Pages {
    pub groups: Vec<Vec<PageId>>,
    pub banks: Vec<Vec<[u32; 2]>>,
    pub fallback: Vec<usize>,
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

/// Chooses each thread's pages for `allocation` from the arena, at its
/// [`target`], by chandru-mueller Algorithm 1 under `modes`.
pub(super) fn choose_pages(
    arena: &mut PagedMemory,
    allocation: Allocation,
    threads: usize,
    pages: usize,
    modes: tinct_mem::Modes,
) -> Result<Pages> {
    let mapping = arena.mapping().clone();
    let (banks, controllers) = (mapping.banks(), mapping.controllers());
    // Shared-bank: the bank with the most free pages, for every thread.
    let fullest = (0..controllers)
        .flat_map(|c| (0..banks).map(move |b| (c, b)))
        .max_by_key(|&(c, b)| (arena.free_in_bank(c, b), std::cmp::Reverse((c, b))))
        .unwrap_or((0, 0));
    let mut chosen = Pages {
        groups: Vec::with_capacity(threads),
        banks: Vec::with_capacity(threads),
        fallback: Vec::with_capacity(threads),
    };
    for thread in 0..threads {
        let Some(target) = target(&mapping, allocation, thread, threads) else {
            continue;
        };
        // The (controller, bank) of each page, in order.
        let class_of_page = |page: usize| -> (u32, u32) {
            match target {
                Target::Bank(c, b) => (c, b),
                Target::Fullest => fullest,
                Target::Controller(c) => (c, page as u32 % banks),
                Target::Circular(start) => {
                    let c = (start + page as u32) % controllers;
                    (c, (page as u32 / controllers) % banks)
                }
            }
        };
        let mut mine = Vec::with_capacity(pages);
        let mut fallback = 0;
        let mut classes: Vec<[u32; 2]> = Vec::new();
        // Any bank of the controller will do for controller-level targets:
        // another bank there is no fallback.
        let any_bank = matches!(target, Target::Controller(_) | Target::Circular(_));
        let modes = if any_bank {
            modes | tinct_mem::Modes::CONTROLLER_RESTRICTED
        } else {
            modes
        };
        for page in 0..pages {
            let (controller, bank) = class_of_page(page);
            let (got, steps) = arena.take_bank_aware(controller, bank, 1, modes)?;
            mine.extend(got);
            fallback += if any_bank {
                steps.controller_unrestricted + steps.split
            } else {
                steps.total() - steps.exact
            };
            if !classes.contains(&[controller, bank]) {
                classes.push([controller, bank]);
            }
        }
        chosen.groups.push(mine);
        chosen.fallback.push(fallback);
        chosen.banks.push(match target {
            Target::Bank(..) | Target::Fullest => classes,
            _ => Vec::new(),
        });
    }
    Ok(chosen)
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
        let exact = tinct_mem::Modes::EXACT;
        let own = choose_pages(&mut arena, Allocation::OwnBank, 3, 16, exact).unwrap();
        assert_eq!(own.banks, vec![vec![[0, 0]], vec![[0, 1]], vec![[0, 2]]]);
        assert!(own.groups.iter().all(|g| g.len() == 16));
        let shared = choose_pages(&mut arena, Allocation::SharedBank, 3, 16, exact).unwrap();
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

    fn mapping_4x2() -> AddressMapping {
        AddressMapping::new(
            rustix::param::page_size() as u64,
            XorFunctions::none(),
            XorFunctions::from_bits(&[13, 14]).unwrap(),
            XorFunctions::from_bits(&[15]).unwrap(),
        )
        .unwrap()
    }

    #[test]
    fn the_papers_conditions_target_the_groups_controllers() {
        let mapping = mapping_4x2();
        let targets = |a: Allocation, threads: usize| -> Vec<Option<Target>> {
            (0..threads)
                .map(|t| target(&mapping, a, t, threads))
                .collect()
        };
        // Four threads over two controllers: groups 0, 0, 1, 1.
        assert_eq!(
            targets(Allocation::Banks2, 4),
            [0, 1, 0, 1]
                .iter()
                .zip([0, 0, 1, 1])
                .map(|(&b, c)| Some(Target::Bank(c, b)))
                .collect::<Vec<_>>()
        );
        // Eight threads, four per group: 2banks wraps bank indices.
        let banks2: Vec<u32> = targets(Allocation::Banks2, 8)
            .into_iter()
            .map(|t| match t {
                Some(Target::Bank(_, b)) => b,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(banks2, [0, 1, 0, 1, 0, 1, 0, 1]);
        assert_eq!(
            targets(Allocation::OppositeController, 4),
            [1, 1, 0, 0].map(|c| Some(Target::Controller(c)))
        );
        assert_eq!(
            targets(Allocation::LocalController, 4),
            [0, 0, 1, 1].map(|c| Some(Target::Controller(c)))
        );
        assert_eq!(
            targets(Allocation::Circular, 4),
            [0, 0, 1, 1].map(|c| Some(Target::Circular(c)))
        );
        assert_eq!(targets(Allocation::OneNode, 2), [None, None]);
    }

    #[test]
    fn circular_pages_visit_every_controller_and_fallbacks_are_counted() {
        let mapping = mapping_4x2();
        let mut arena = PagedMemory::new(mapping, 4 << 20).unwrap();
        let exact = tinct_mem::Modes::EXACT;
        let classes: Vec<(u32, u32)> = (0..2).flat_map(|c| (0..4).map(move |b| (c, b))).collect();
        let before: Vec<usize> = classes
            .iter()
            .map(|&(c, b)| arena.free_in_bank(c, b))
            .collect();
        let circular = choose_pages(&mut arena, Allocation::Circular, 2, 8, exact).unwrap();
        assert_eq!(circular.fallback, [0, 0]);
        // Two threads x 8 pages over 2 controllers x 4 banks: one page of
        // every (controller, bank) each.
        for (i, &(c, b)) in classes.iter().enumerate() {
            assert_eq!(
                before[i] - arena.free_in_bank(c, b),
                2,
                "controller {c} bank {b}"
            );
        }
        // More pages of one bank than it has: exact fails, restricted
        // serves the rest from the controller's other banks.
        let free = arena.free_in_bank(0, 0);
        assert!(choose_pages(&mut arena, Allocation::Banks2, 1, free + 4, exact).is_err());
        let restricted = tinct_mem::Modes::parse("restricted").unwrap();
        let mut arena = PagedMemory::new(mapping_4x2(), 4 << 20).unwrap();
        let free = arena.free_in_bank(0, 0);
        let chosen = choose_pages(&mut arena, Allocation::Banks2, 1, free + 4, restricted).unwrap();
        assert_eq!(chosen.groups[0].len(), free + 4);
        assert_eq!(chosen.fallback, [4]);
        assert_eq!(arena.free_in_bank(0, 0), 0);
    }
}
