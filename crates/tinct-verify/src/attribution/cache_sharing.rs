//! The evidence for [`Cause::ColouringNotEffective`](super::Cause::ColouringNotEffective): the
//! tasks that share a job's last-level cache, and why the isolation page
//! colouring should give is absent.

use tinct_rt::colouring::Colouring;
use tinct_rt::memory::Placement;
use tinct_rt::runtime::{RunResult, TaskRun};

/// The names of the other tasks that run on a CPU sharing a last-level
/// cache with one of task `index`'s CPUs.
pub(super) fn shares_cache(
    result: &RunResult,
    index: usize,
    llc_domains: &[Vec<u32>],
) -> Vec<String> {
    let all_cpus = |t: &TaskRun| -> Vec<u32> {
        let mut cpus: Vec<u32> = t
            .records
            .iter()
            .filter(|r| r.started())
            .flat_map(|r| [r.cpu, r.cpu_end])
            .collect();
        cpus.extend(t.spec.cpus.iter().flatten());
        cpus.sort_unstable();
        cpus.dedup();
        cpus
    };
    let domain_of = |cpu: u32| -> Option<usize> {
        if llc_domains.is_empty() {
            return Some(0);
        }
        llc_domains.iter().position(|d| d.contains(&cpu))
    };
    let mine: Vec<Option<usize>> = all_cpus(&result.tasks[index])
        .into_iter()
        .map(domain_of)
        .collect();
    result
        .tasks
        .iter()
        .enumerate()
        .filter(|&(i, t)| {
            // A program without partitions has no placement of tinct's,
            // yet its memory occupies the cache all the same.
            i != index
                && (!matches!(t.placement, Placement::None) || t.spec.program.is_some())
                && all_cpus(t)
                    .into_iter()
                    .any(|c| mine.contains(&domain_of(c)))
        })
        .map(|(_, t)| t.spec.name.clone())
        .collect()
}

/// Why the isolation colouring should give is absent for this task, if it is.
pub(super) fn isolation_absent(
    placement: &Placement,
    colouring: Colouring,
) -> Option<&'static str> {
    match placement {
        Placement::Uncolored { .. } => {
            Some("its working set was not coloured (--uncolored: S(i) NOT enforced)")
        }
        Placement::Colored { .. } => match colouring {
            Colouring::NotEffective => Some(
                "the colour probe finds colouring not effective here, so colours do not keep \
                 other tasks out of its cache",
            ),
            Colouring::Inconclusive => {
                Some("the colour probe cannot show colouring effective here (inconclusive)")
            }
            Colouring::Effective | Colouring::Unknown => None,
        },
        Placement::None | Placement::Heap { .. } => None,
    }
}
