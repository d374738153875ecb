//! Thread placements of Gracioli et al. 2011, Section III: both threads on
//! one CPU, on SMT siblings of one core, on different cores of one die, on
//! cores of different dies, or wherever the OS scheduler puts them.
//!
//! A placement the machine does not have is kept in the list with the reason,
//! so the output says what was skipped and why instead of silently omitting it.

use serde::{Deserialize, Serialize};
use tinct_sys::topology::Topology;

/// Where the two threads of a parallel run execute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PlacementKind {
    /// Both threads pinned to the same logical CPU (time-shared, no coherence traffic).
    SameCpu,
    /// Two hardware threads of one core (the paper's i5-650 scenario 2).
    SmtSiblings,
    /// Two cores of one package/die sharing the last-level cache.
    DifferentCores,
    /// Cores in different packages, dies or last-level-cache domains
    /// (the paper's Opteron scenario 1).
    DifferentDies,
    /// No pinning: the Linux scheduler chooses (the paper's CFS scenario 3).
    OsChosen,
}

impl PlacementKind {
    /// Every placement, in the order the output lists them.
    pub const ALL: [PlacementKind; 5] = [
        PlacementKind::SameCpu,
        PlacementKind::SmtSiblings,
        PlacementKind::DifferentCores,
        PlacementKind::DifferentDies,
        PlacementKind::OsChosen,
    ];

    /// The name used in tables, JSON and CSV: its serde name.
    pub fn name(self) -> &'static str {
        crate::choice::serde_name(&self)
    }
}

/// A placement with the CPUs it uses, or the reason this machine lacks it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    /// Which placement.
    pub kind: PlacementKind,
    /// The CPU of each of the two threads; `None` for OS-chosen (each
    /// thread may run on any of `allowed`).
    pub cpus: Option<[u32; 2]>,
    /// CPUs the threads may use.
    pub allowed: Vec<u32>,
    /// Why the placement is not available here (`None` if it is).
    pub skipped: Option<String>,
}

impl Placement {
    /// True if the placement can be measured on this machine.
    pub fn available(&self) -> bool {
        self.skipped.is_none()
    }

    /// The CPUs thread `index` (0 or 1) may run on.
    pub fn cpus_of(&self, index: usize) -> Vec<u32> {
        match self.cpus {
            Some(pair) => vec![pair[index]],
            None => self.allowed.clone(),
        }
    }
}

/// Where one CPU sits: its core (sibling group) and its die domain.
#[derive(Debug, Clone, PartialEq, Eq)]
struct CpuSite {
    id: u32,
    core: Vec<u32>,
    die: (Option<u32>, Option<u32>, Vec<u32>),
}

fn sites(topology: &Topology, allowed: &[u32]) -> Vec<CpuSite> {
    let llc_level = topology.caches.iter().map(|c| c.level).max();
    allowed
        .iter()
        .map(|&id| {
            let cpu = topology.cpus.iter().find(|c| c.id == id);
            let llc_domain = topology
                .caches
                .iter()
                .find(|c| Some(c.level) == llc_level && c.shared_cpus.contains(&id))
                .map(|c| c.shared_cpus.clone())
                .unwrap_or_default();
            CpuSite {
                id,
                core: cpu
                    .map(|c| c.thread_siblings.clone())
                    .filter(|s| !s.is_empty())
                    .unwrap_or_else(|| vec![id]),
                die: (
                    cpu.and_then(|c| c.package_id),
                    cpu.and_then(|c| c.die_id),
                    llc_domain,
                ),
            }
        })
        .collect()
}

/// The placements of the paper on the CPUs `allowed` of `topology`.
pub fn placements(topology: &Topology, allowed: &[u32]) -> Vec<Placement> {
    let sites = sites(topology, allowed);
    let pair = |accept: &dyn Fn(&CpuSite, &CpuSite) -> bool| -> Option<[u32; 2]> {
        sites.iter().enumerate().find_map(|(i, a)| {
            sites[i + 1..]
                .iter()
                .find(|b| accept(a, b))
                .map(|b| [a.id, b.id])
        })
    };
    let make = |kind, cpus: Option<[u32; 2]>, reason: &str| Placement {
        kind,
        cpus,
        allowed: allowed.to_vec(),
        skipped: cpus.is_none().then(|| reason.to_string()),
    };
    let one_cpu = allowed.len() < 2;
    PlacementKind::ALL
        .iter()
        .map(|&kind| match kind {
            PlacementKind::SameCpu => make(kind, allowed.first().map(|&c| [c, c]), "no CPU"),
            PlacementKind::SmtSiblings => make(
                kind,
                pair(&|a, b| a.core.len() > 1 && a.core == b.core),
                if one_cpu {
                    "only one CPU is allowed"
                } else {
                    "no SMT: no two allowed CPUs are hardware threads of one core"
                },
            ),
            PlacementKind::DifferentCores => make(
                kind,
                pair(&|a, b| a.core != b.core && a.die == b.die),
                if one_cpu {
                    "only one CPU is allowed"
                } else {
                    "no two allowed CPUs are distinct cores of one die"
                },
            ),
            PlacementKind::DifferentDies => make(
                kind,
                pair(&|a, b| a.die != b.die),
                if one_cpu {
                    "only one CPU is allowed"
                } else {
                    "one die: all allowed CPUs share one package, die and last-level cache"
                },
            ),
            PlacementKind::OsChosen => Placement {
                kind,
                cpus: None,
                allowed: allowed.to_vec(),
                skipped: one_cpu
                    .then(|| "only one CPU is allowed, the OS has nothing to choose".to_string()),
            },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tinct_sys::topology::{Cache, CacheType, Cpu};

    fn cpu(id: u32, package: u32, siblings: &[u32]) -> Cpu {
        Cpu {
            id,
            package_id: Some(package),
            die_id: Some(0),
            core_id: Some(id),
            thread_siblings: siblings.to_vec(),
        }
    }

    fn llc(cpus: &[u32]) -> Cache {
        Cache {
            level: 3,
            kind: CacheType::Unified,
            id: None,
            size_bytes: 32 << 20,
            ways: Some(16),
            sets: None,
            line_bytes: Some(64),
            shared_cpus: cpus.to_vec(),
        }
    }

    fn topology(cpus: Vec<Cpu>, caches: Vec<Cache>) -> Topology {
        Topology {
            online_cpus: cpus.iter().map(|c| c.id).collect(),
            cpus,
            numa_nodes: Vec::new(),
            caches,
        }
    }

    fn find(list: &[Placement], kind: PlacementKind) -> &Placement {
        list.iter().find(|p| p.kind == kind).unwrap()
    }

    #[test]
    fn two_plain_cores_on_one_die_have_no_smt_and_no_second_die() {
        let t = topology(vec![cpu(0, 0, &[0]), cpu(1, 0, &[1])], vec![llc(&[0, 1])]);
        let list = placements(&t, &[0, 1]);
        assert_eq!(list.len(), 5);
        assert_eq!(find(&list, PlacementKind::SameCpu).cpus, Some([0, 0]));
        assert_eq!(
            find(&list, PlacementKind::DifferentCores).cpus,
            Some([0, 1])
        );
        assert!(
            find(&list, PlacementKind::SmtSiblings)
                .skipped
                .as_deref()
                .unwrap()
                .contains("SMT")
        );
        assert!(
            find(&list, PlacementKind::DifferentDies)
                .skipped
                .as_deref()
                .unwrap()
                .contains("one die")
        );
        let os = find(&list, PlacementKind::OsChosen);
        assert!(os.available());
        assert_eq!(os.cpus_of(1), vec![0, 1]);
    }

    #[test]
    fn smt_and_two_packages_give_every_placement() {
        // Package 0: core {0,2}, core {1,3}; package 1: core {4,5}.
        let cpus = vec![
            cpu(0, 0, &[0, 2]),
            cpu(1, 0, &[1, 3]),
            cpu(2, 0, &[0, 2]),
            cpu(3, 0, &[1, 3]),
            cpu(4, 1, &[4, 5]),
            cpu(5, 1, &[4, 5]),
        ];
        let t = topology(cpus, vec![llc(&[0, 1, 2, 3]), llc(&[4, 5])]);
        let list = placements(&t, &[0, 1, 2, 3, 4, 5]);
        assert!(list.iter().all(Placement::available), "{list:?}");
        assert_eq!(find(&list, PlacementKind::SmtSiblings).cpus, Some([0, 2]));
        assert_eq!(
            find(&list, PlacementKind::DifferentCores).cpus,
            Some([0, 1])
        );
        assert_eq!(find(&list, PlacementKind::DifferentDies).cpus, Some([0, 4]));
    }

    #[test]
    fn one_allowed_cpu_leaves_only_same_cpu() {
        let t = topology(vec![cpu(0, 0, &[0]), cpu(1, 0, &[1])], vec![llc(&[0, 1])]);
        let list = placements(&t, &[1]);
        let available: Vec<_> = list
            .iter()
            .filter(|p| p.available())
            .map(|p| p.kind)
            .collect();
        assert_eq!(available, vec![PlacementKind::SameCpu]);
        assert_eq!(find(&list, PlacementKind::SameCpu).cpus, Some([1, 1]));
    }
}
