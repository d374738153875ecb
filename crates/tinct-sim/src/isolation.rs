//! The proof that a coloring isolates: given the physical frames each task
//! (or program) was given and the geometry of this machine's cache, which
//! cache sets can each task occupy, and can any other task's lines evict
//! its lines?
//!
//! In a set-associative cache a line can only evict a line of its own set
//! (Kim et al. 2013, Section III-C: pages of different colors never share
//! a set). So task B can evict task A exactly when some line of B's frames
//! maps to a set that some line of A's frames maps to. This module maps
//! every line of every frame through the model's set function
//! ([`CacheGeometry::set_of`], slice hash included) and intersects the
//! sets: disjoint sets prove isolation for any access pattern and any
//! replacement policy; shared sets name the pairs that can interfere (and
//! [`crate::replay_pages`] shows it happening).
//!
//! ```
//! use tinct_sim::isolation::{TaskFrames, check};
//! use tinct_sim::CacheGeometry;
//!
//! let l3 = CacheGeometry::new(32 << 20, 16, 64)?; // 512 colors of 4 KiB pages
//! let tasks = [
//!     TaskFrames::new("a", vec![0, 1, 512]),   // colors 0, 1, 0
//!     TaskFrames::new("b", vec![2, 3]),        // colors 2, 3
//! ];
//! let report = check(&l3, 4096, &tasks)?;
//! assert!(report.isolated());
//! assert_eq!(report.tasks[0].sets, 2 * 64);   // 64 sets per color
//! # Ok::<(), tinct_sim::SimError>(())
//! ```

use serde::Serialize;

use crate::color::PageColoring;
use crate::error::SimError;
use tinct_base::geometry::CacheGeometry;

/// The physical frames one task (or process) was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskFrames {
    /// The task's name, as reports should show it.
    pub name: String,
    /// Its physical frame numbers (any order, repeats allowed).
    pub frames: Vec<u64>,
}

impl TaskFrames {
    /// Frames `frames` of the task `name`.
    pub fn new(name: impl Into<String>, frames: Vec<u64>) -> Self {
        Self {
            name: name.into(),
            frames,
        }
    }
}

/// Which cache sets each task can occupy and who can evict whom.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IsolationReport {
    /// The cache the frames were mapped through.
    pub geometry: CacheGeometry,
    /// Page size in bytes.
    pub page_size: u64,
    /// Page colors of the geometry for that page size.
    pub colors: u64,
    /// Sets of the whole cache.
    pub total_sets: u64,
    /// One entry per task, in the order given.
    pub tasks: Vec<TaskIsolation>,
}

/// One task's part of an [`IsolationReport`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TaskIsolation {
    /// The task's name.
    pub name: String,
    /// Distinct frames it was given.
    pub pages: u64,
    /// The page colors of those frames, sorted.
    pub colors: Vec<u64>,
    /// Cache sets its lines can occupy.
    pub sets: u64,
    /// The other tasks whose lines map to some of its sets (and so can
    /// evict its lines), in the order given; empty when it is isolated.
    pub evicted_by: Vec<SharedSets>,
}

/// Another task that shares cache sets with a task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SharedSets {
    /// The other task.
    pub task: String,
    /// Its index among the tasks given to [`check`] (names need not be
    /// unique: callers join by this, never by name).
    pub index: usize,
    /// How many sets both can occupy.
    pub sets: u64,
}

impl IsolationReport {
    /// True if no task can evict another's lines.
    pub fn isolated(&self) -> bool {
        self.tasks.iter().all(|t| t.evicted_by.is_empty())
    }

    /// The pairs of tasks that can evict each other, each once, with the
    /// number of sets they share.
    pub fn interfering_pairs(&self) -> Vec<(&str, &str, u64)> {
        let mut pairs = Vec::new();
        for (index, task) in self.tasks.iter().enumerate() {
            for shared in &task.evicted_by {
                let other = self.tasks.iter().position(|t| t.name == shared.task);
                if other.is_some_and(|o| o > index) {
                    pairs.push((task.name.as_str(), shared.task.as_str(), shared.sets));
                }
            }
        }
        pairs
    }
}

/// Maps every line of every task's frames through `geometry` (pages of
/// `page_size` bytes) and reports the sets each task can occupy and which
/// other tasks share them.
pub fn check(
    geometry: &CacheGeometry,
    page_size: u64,
    tasks: &[TaskFrames],
) -> Result<IsolationReport, SimError> {
    let coloring = PageColoring::new(geometry, page_size)?;
    let total_sets = geometry.total_sets();
    let words = usize::try_from(total_sets.div_ceil(64)).map_err(|_| {
        SimError::invalid("geometry", "a cache with fewer than 2^64 sets", total_sets)
    })?;
    let mut occupied: Vec<Vec<u64>> = Vec::with_capacity(tasks.len());
    let mut summaries = Vec::with_capacity(tasks.len());
    for task in tasks {
        let mut frames = task.frames.clone();
        frames.sort_unstable();
        frames.dedup();
        let mut sets = vec![0u64; words];
        for &frame in &frames {
            let base = frame.checked_mul(page_size).ok_or_else(|| {
                SimError::invalid(
                    "frames",
                    "frame numbers whose address fits in 64 bits",
                    format!("frame {frame:#x} of task {}", task.name),
                )
            })?;
            for offset in (0..page_size).step_by(geometry.line_size() as usize) {
                let set = geometry.set_of(base + offset);
                sets[(set / 64) as usize] |= 1 << (set % 64);
            }
        }
        let mut colors: Vec<u64> = frames.iter().map(|&f| coloring.color_of_pfn(f)).collect();
        colors.dedup();
        colors.sort_unstable();
        colors.dedup();
        summaries.push((frames.len() as u64, colors, count(&sets)));
        occupied.push(sets);
    }
    let tasks = tasks
        .iter()
        .zip(summaries)
        .enumerate()
        .map(|(index, (task, (pages, colors, sets)))| TaskIsolation {
            name: task.name.clone(),
            pages,
            colors,
            sets,
            evicted_by: tasks
                .iter()
                .enumerate()
                .filter(|&(other, _)| other != index)
                .filter_map(|(other, other_task)| {
                    let shared = shared(&occupied[index], &occupied[other]);
                    (shared > 0).then(|| SharedSets {
                        task: other_task.name.clone(),
                        index: other,
                        sets: shared,
                    })
                })
                .collect(),
        })
        .collect();
    Ok(IsolationReport {
        geometry: geometry.clone(),
        page_size,
        colors: coloring.colors(),
        total_sets,
        tasks,
    })
}

fn count(bits: &[u64]) -> u64 {
    bits.iter().map(|w| u64::from(w.count_ones())).sum()
}

fn shared(a: &[u64], b: &[u64]) -> u64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| u64::from((x & y).count_ones()))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ReplayConfig, replay_pages};

    const PAGE: u64 = 4096;

    /// 1 MiB, 8 ways, 64 B lines: 2048 sets, 32 colors of 64 sets.
    fn l2() -> CacheGeometry {
        CacheGeometry::new(1 << 20, 8, 64).unwrap()
    }

    /// `count` frames of each of `colors` (frame = group × 32 + color),
    /// from frame group `first` on (tasks get distinct frames).
    fn frames(colors: &[u64], first: u64, count: u64) -> Vec<u64> {
        (first..first + count)
            .flat_map(|group| colors.iter().map(move |&c| group * 32 + c))
            .collect()
    }

    #[test]
    fn disjoint_colors_are_isolated() {
        let tasks = [
            TaskFrames::new("a", frames(&[0, 1, 2, 3], 0, 16)),
            TaskFrames::new("b", frames(&[4, 5], 16, 16)),
            TaskFrames::new("c", frames(&[31], 32, 3)),
        ];
        let report = check(&l2(), PAGE, &tasks).unwrap();
        assert!(report.isolated(), "{report:?}");
        assert!(report.interfering_pairs().is_empty());
        let a = &report.tasks[0];
        assert_eq!(
            (a.pages, a.colors.clone(), a.sets),
            (64, vec![0, 1, 2, 3], 4 * 64)
        );
        assert_eq!(report.tasks[2].sets, 64);
        assert_eq!((report.colors, report.total_sets), (32, 2048));
        // The replay through the cache model agrees: no cross-core eviction.
        let pfns: Vec<Vec<u64>> = tasks.iter().map(|t| t.frames.clone()).collect();
        let replay = replay_pages(&l2(), &pfns, &ReplayConfig::new(20_000, 3)).unwrap();
        assert!(replay.isolated());
    }

    #[test]
    fn overlapping_colors_name_the_evicting_pairs() {
        let tasks = [
            TaskFrames::new("a", frames(&[0, 1, 2], 0, 8)),
            TaskFrames::new("b", frames(&[2, 3], 8, 8)),
            TaskFrames::new("c", frames(&[7], 16, 8)),
            TaskFrames::new("d", frames(&[1, 2], 24, 1)),
        ];
        let report = check(&l2(), PAGE, &tasks).unwrap();
        assert!(!report.isolated());
        assert_eq!(
            report.interfering_pairs(),
            vec![("a", "b", 64), ("a", "d", 128), ("b", "d", 64)]
        );
        let a = &report.tasks[0];
        let names: Vec<&str> = a.evicted_by.iter().map(|s| s.task.as_str()).collect();
        assert_eq!(names, vec!["b", "d"]);
        assert!(
            report.tasks[2].evicted_by.is_empty(),
            "c is alone on color 7"
        );
        let pfns: Vec<Vec<u64>> = tasks[..2].iter().map(|t| t.frames.clone()).collect();
        let replay = replay_pages(&l2(), &pfns, &ReplayConfig::new(200_000, 3)).unwrap();
        assert!(
            !replay.isolated(),
            "sharing color 2 does evict in the model"
        );
    }

    #[test]
    fn evictors_are_named_by_index_so_equal_names_stay_apart() {
        // Two tasks named alike (rt-app instances): the evictor of `c` is
        // the second `w`, which a join by name would take for the first.
        let tasks = [
            TaskFrames::new("w", frames(&[0], 0, 8)),
            TaskFrames::new("w", frames(&[5], 8, 8)),
            TaskFrames::new("c", frames(&[5], 16, 8)),
        ];
        let report = check(&l2(), PAGE, &tasks).unwrap();
        let evictors = &report.tasks[2].evicted_by;
        assert_eq!(evictors.len(), 1, "{evictors:?}");
        assert_eq!((evictors[0].task.as_str(), evictors[0].index), ("w", 1));
        assert!(report.tasks[0].evicted_by.is_empty());
    }

    #[test]
    fn sliced_caches_map_through_the_slice_hash() {
        let hash = crate::SliceHash::new(vec![1 << 17]).unwrap();
        let sliced = CacheGeometry::sliced(2 << 20, 8, 64, hash).unwrap();
        // Frames 0 and 32 have the same color but, by bit 17, other slices.
        let tasks = [
            TaskFrames::new("a", vec![0]),
            TaskFrames::new("b", vec![32]),
        ];
        let report = check(&sliced, PAGE, &tasks).unwrap();
        assert!(report.isolated(), "{report:?}");
        let same_slice = [
            TaskFrames::new("a", vec![0]),
            TaskFrames::new("b", vec![64]),
        ];
        assert!(!check(&sliced, PAGE, &same_slice).unwrap().isolated());
    }

    #[test]
    fn a_frame_beyond_the_address_space_is_an_error() {
        let err = check(&l2(), PAGE, &[TaskFrames::new("x", vec![u64::MAX])]).unwrap_err();
        assert!(err.to_string().contains("task x"), "{err}");
    }
}
