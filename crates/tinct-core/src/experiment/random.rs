//! The classic schedulability study: for every utilization point,
//! `sets_per_point` random task sets (see [`crate::generate`]) are
//! allocated by BFD, WFD and CATA with all N_P partitions; the result is
//! the count each algorithm schedules (no leftover step: it cannot change
//! schedulability).
//!
//! Reproducible and shardable: set k of point p is work item
//! p·sets_per_point + k, drawn from ChaCha8 seeded with the seed on that
//! stream, whoever computes it. Shard I of N takes the items whose number
//! is I−1 modulo N; [`merge`] sums the shards into exactly what one
//! unsharded run computes.

use super::Hooks;
use crate::alloc::{Algorithm, Instance, SearchOptions, allocate};
use crate::generate::{RandomParams, random_task_set, rng_for};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use tinct_base::InputError;

/// Everything that determines the results; echoed in `params.json` and in
/// every shard file (merge refuses shards of different experiments).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Params {
    /// The generator's parameters.
    pub generator: RandomParams,
    /// Utilization points.
    pub utilizations: Vec<f64>,
    /// Task sets per point.
    pub sets_per_point: u64,
    /// Seed.
    pub seed: u64,
    /// MinCacheAlloc node budget (`None`: exhaustive).
    pub node_budget: Option<u64>,
    /// Algorithms, in column order.
    pub algorithms: Vec<String>,
    /// tinct version that produced the numbers.
    pub tinct_version: String,
}

/// Counts at one utilization point.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// Total utilization.
    pub utilization: f64,
    /// Task sets tried.
    pub sets: u64,
    /// Sets UUniFast-Discard could not draw (counted as unschedulable).
    pub not_generated: u64,
    /// Schedulable sets per algorithm.
    pub schedulable: BTreeMap<String, u64>,
    /// Sets where some MinCacheAlloc search hit its node budget.
    pub budget_hit: u64,
}

/// What a shard writes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShardFile {
    /// The experiment.
    pub params: Params,
    /// I (1-based).
    pub shard: u64,
    /// N.
    pub shards: u64,
    /// Counts of this shard's work items.
    pub points: Vec<Point>,
}

/// Shard I of N (1-based); `Shard { index: 1, count: 1 }` is the whole study.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Shard {
    /// I.
    pub index: u64,
    /// N.
    pub count: u64,
}

impl Shard {
    /// The whole study.
    pub const ALL: Shard = Shard { index: 1, count: 1 };
}

/// The outcome of one task set.
#[derive(Clone, Debug, PartialEq)]
pub struct SetOutcome {
    /// Its utilization point (index into [`Params::utilizations`]).
    pub point: usize,
    /// UUniFast-Discard drew the set.
    pub generated: bool,
    /// Schedulable by each algorithm, in [`Params::algorithms`] order.
    pub schedulable: Vec<bool>,
    /// Some MinCacheAlloc search hit its node budget.
    pub budget_hit: bool,
}

/// The work items of `shard`, in increasing order.
pub fn work_items(params: &Params, shard: Shard) -> Vec<u64> {
    let total = params.utilizations.len() as u64 * params.sets_per_point;
    let step = usize::try_from(shard.count.max(1)).unwrap_or(usize::MAX);
    (shard.index.saturating_sub(1)..total)
        .step_by(step)
        .collect()
}

/// Draws and allocates task set `item` with every algorithm.
pub fn run_set(params: &Params, item: u64) -> SetOutcome {
    let options = SearchOptions {
        node_budget: params.node_budget,
        ..SearchOptions::EXACT
    };
    let point = usize::try_from(item / params.sets_per_point.max(1)).unwrap_or(usize::MAX);
    let mut rng = rng_for(params.seed, item);
    let Some(set) = random_task_set(&params.generator, params.utilizations[point], &mut rng) else {
        return SetOutcome {
            point,
            generated: false,
            schedulable: vec![false; params.algorithms.len()],
            budget_hit: false,
        };
    };
    let inst = Instance::new(&set);
    let mut budget_hit = false;
    let schedulable = Algorithm::ALL
        .iter()
        .map(|&algorithm| {
            let assignment = allocate(&inst, algorithm, inst.partitions, &options);
            budget_hit |= !assignment.exact;
            assignment.schedulable()
        })
        .collect();
    SetOutcome {
        point,
        generated: true,
        schedulable,
        budget_hit,
    }
}

/// Empty counts, one point per utilization.
fn empty_points(params: &Params) -> Vec<Point> {
    params
        .utilizations
        .iter()
        .map(|&u| Point {
            utilization: u,
            sets: 0,
            not_generated: 0,
            schedulable: params.algorithms.iter().map(|a| (a.clone(), 0)).collect(),
            budget_hit: 0,
        })
        .collect()
}

/// Counts per point from set outcomes (in any order).
pub fn tally(params: &Params, outcomes: impl IntoIterator<Item = SetOutcome>) -> Vec<Point> {
    let mut points = empty_points(params);
    for o in outcomes {
        let point = &mut points[o.point];
        point.sets += 1;
        point.not_generated += u64::from(!o.generated);
        point.budget_hit += u64::from(o.budget_hit);
        for (name, &ok) in params.algorithms.iter().zip(&o.schedulable) {
            *point.schedulable.entry(name.clone()).or_default() += u64::from(ok);
        }
    }
    points
}

/// What a (possibly stopped) study computed.
#[derive(Clone, Debug, PartialEq)]
pub struct Computed {
    /// Counts per point of the sets done.
    pub points: Vec<Point>,
    /// Sets done.
    pub done: u64,
    /// Sets of the shard.
    pub total: u64,
}

impl Computed {
    /// Whether every set of the shard was done.
    pub fn complete(&self) -> bool {
        self.done == self.total
    }
}

/// The study (or one shard), one set after another, in this thread.
pub fn compute(params: &Params, shard: Shard, hooks: Hooks) -> Computed {
    let items = work_items(params, shard);
    let mut outcomes = Vec::with_capacity(items.len());
    for &item in &items {
        if hooks.stopped() {
            break;
        }
        outcomes.push(run_set(params, item));
        hooks.tick();
    }
    Computed {
        done: outcomes.len() as u64,
        total: items.len() as u64,
        points: tally(params, outcomes),
    }
}

/// Why shard files cannot be merged.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MergeError {
    /// No shard given.
    #[error("expected at least one shard file, found none")]
    Empty,
    /// Shard `index` (position in the list) belongs to another experiment.
    #[error(
        "expected a shard of the same experiment (same parameters and shard count), found different ones"
    )]
    Different {
        /// Position of the offending shard in the list.
        index: usize,
    },
    /// A shard number outside 1..=N.
    #[error("expected a shard number from 1 to {shards}, found {shard}")]
    OutOfRange {
        /// Position in the list.
        index: usize,
        /// Its I.
        shard: u64,
        /// N.
        shards: u64,
    },
    /// The same shard twice.
    #[error("shard {shard}/{shards} is given twice")]
    Twice {
        /// Position of the second one in the list.
        index: usize,
        /// Position of the first.
        first: usize,
        /// I.
        shard: u64,
        /// N.
        shards: u64,
    },
    /// Shards missing.
    #[error(
        "expected all {shards} shards, missing {}{}",
        missing.iter().map(u64::to_string).collect::<Vec<_>>().join(", "),
        if *more > 0 { format!(" and {more} more") } else { String::new() }
    )]
    Missing {
        /// N.
        shards: u64,
        /// The first missing I (at most [`MISSING_LISTED`]).
        missing: Vec<u64>,
        /// How many more are missing.
        more: u64,
    },
    /// A shard's counts cannot come from the experiment: a point it does
    /// not have, a count above the sets tried, sums past the sets per point.
    #[error("expected {expected}, found {found}")]
    Counts {
        /// Position of the offending shard in the list.
        index: usize,
        /// What the experiment allows.
        expected: String,
        /// What the shard says.
        found: String,
    },
}

impl MergeError {
    /// The error as tinct's input error: the shard at fault is the file
    /// (`name` gives a position's name: its path, or the front end's own
    /// word), and an error of the whole list has `shards` as its field.
    pub fn input_error(&self, name: &dyn Fn(usize) -> String) -> InputError {
        match self {
            MergeError::Empty => InputError::new("", "shards", "at least one shard file", "none"),
            MergeError::Different { index } => InputError::new(
                name(*index),
                "",
                format!(
                    "a shard of the same experiment as {} (same parameters and shard count)",
                    name(0)
                ),
                "different ones",
            ),
            MergeError::OutOfRange {
                index,
                shard,
                shards,
            } => InputError::new(
                name(*index),
                "shard",
                format!("a shard number from 1 to {shards}"),
                shard.to_string(),
            ),
            MergeError::Twice {
                index,
                first,
                shard,
                shards,
            } => InputError::new(
                name(*index),
                "shard",
                format!(
                    "a shard not given before, {shard}/{shards} being {}",
                    name(*first)
                ),
                format!("{shard}/{shards} again"),
            ),
            MergeError::Missing {
                shards,
                missing,
                more,
            } => {
                let absent = missing.len() as u64 + more;
                InputError::new(
                    "",
                    "shards",
                    format!("all {shards} shards"),
                    format!(
                        "{} of them, missing {}{}",
                        shards.saturating_sub(absent),
                        missing
                            .iter()
                            .map(u64::to_string)
                            .collect::<Vec<_>>()
                            .join(", "),
                        if *more > 0 {
                            format!(" and {more} more")
                        } else {
                            String::new()
                        }
                    ),
                )
            }
            MergeError::Counts {
                index,
                expected,
                found,
            } => InputError::new(name(*index), "", expected.clone(), found.clone()),
        }
    }
}

/// How many missing shard numbers [`MergeError::Missing`] lists.
pub const MISSING_LISTED: usize = 10;

/// Refuses a shard whose points are not the experiment's, or whose counts
/// pass the sets it tried at a point.
fn check_counts(params: &Params, file: &ShardFile, index: usize) -> Result<(), MergeError> {
    let error = |expected: String, found: String| MergeError::Counts {
        index,
        expected,
        found,
    };
    if file.points.len() != params.utilizations.len() {
        return Err(error(
            format!("{} utilization points", params.utilizations.len()),
            format!("{}", file.points.len()),
        ));
    }
    for (point, &u) in file.points.iter().zip(&params.utilizations) {
        let at = format!("at utilization {u}");
        if point.utilization.to_bits() != u.to_bits() {
            return Err(error(
                format!("the point {at}"),
                format!("{}", point.utilization),
            ));
        }
        let algorithms: Vec<&String> = point.schedulable.keys().collect();
        let mut expected: Vec<&String> = params.algorithms.iter().collect();
        expected.sort();
        if algorithms != expected {
            return Err(error(
                format!("counts of {:?} {at}", params.algorithms),
                format!("{algorithms:?}"),
            ));
        }
        let counts = [
            ("not_generated", point.not_generated),
            ("budget_hit", point.budget_hit),
        ]
        .into_iter()
        .chain(
            point
                .schedulable
                .iter()
                .map(|(name, &n)| (name.as_str(), n)),
        );
        for (name, count) in counts {
            if count > point.sets {
                return Err(error(
                    format!("`{name}` {at} at most its `sets` {}", point.sets),
                    format!("{count}"),
                ));
            }
        }
        if point.sets > params.sets_per_point {
            return Err(error(
                format!(
                    "`sets` {at} at most the experiment's {} per point",
                    params.sets_per_point
                ),
                format!("{}", point.sets),
            ));
        }
    }
    Ok(())
}

/// Checks that the shards belong to one experiment and cover it exactly
/// once, then sums them: the counts one unsharded run computes.
pub fn merge(files: &[ShardFile]) -> Result<(Params, Vec<Point>), MergeError> {
    let first = files.first().ok_or(MergeError::Empty)?;
    let shards = first.shards;
    // Keyed by shard number: N comes from a file, and a hostile N of 10^9
    // must not allocate a slot per shard.
    let mut seen: std::collections::BTreeMap<u64, usize> = std::collections::BTreeMap::new();
    for (index, file) in files.iter().enumerate() {
        if file.params != first.params || file.shards != shards {
            return Err(MergeError::Different { index });
        }
        if file.shard == 0 || file.shard > shards {
            return Err(MergeError::OutOfRange {
                index,
                shard: file.shard,
                shards,
            });
        }
        if let Some(first) = seen.insert(file.shard, index) {
            return Err(MergeError::Twice {
                index,
                first,
                shard: file.shard,
                shards,
            });
        }
        check_counts(&first.params, file, index)?;
    }
    let absent = shards - seen.len() as u64;
    if absent > 0 {
        let missing: Vec<u64> = (1..=shards)
            .filter(|i| !seen.contains_key(i))
            .take(MISSING_LISTED)
            .collect();
        let more = absent - missing.len() as u64;
        return Err(MergeError::Missing {
            shards,
            missing,
            more,
        });
    }
    let mut points = empty_points(&first.params);
    for (index, file) in files.iter().enumerate() {
        for (total, part) in points.iter_mut().zip(&file.points) {
            // Saturating: a hostile file's counts may sum past u64; the
            // check below refuses any sum above sets per point anyway.
            total.sets = total.sets.saturating_add(part.sets);
            total.not_generated = total.not_generated.saturating_add(part.not_generated);
            total.budget_hit = total.budget_hit.saturating_add(part.budget_hit);
            for (name, count) in &part.schedulable {
                let sum = total.schedulable.entry(name.clone()).or_default();
                *sum = sum.saturating_add(*count);
            }
            // Each count ≤ its shard's sets, so the sums stay below this.
            if total.sets > first.params.sets_per_point {
                return Err(MergeError::Counts {
                    index,
                    expected: format!(
                        "`sets` summed over the shards at utilization {} at most the \
                         experiment's {} per point",
                        total.utilization, first.params.sets_per_point
                    ),
                    found: format!("{}", total.sets),
                });
            }
        }
    }
    Ok((first.params.clone(), points))
}

/// The fraction `count / sets` (0 for no set), for reports.
pub fn ratio(count: u64, sets: u64) -> f64 {
    if sets == 0 {
        0.0
    } else {
        count as f64 / sets as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> Params {
        Params {
            generator: RandomParams {
                tasks: 4,
                cores: 2,
                partitions: 8,
                ..RandomParams::default()
            },
            utilizations: vec![0.5, 1.0, 1.5],
            sets_per_point: 4,
            seed: 42,
            node_budget: Some(20_000),
            algorithms: Algorithm::ALL
                .iter()
                .map(|a| a.name().to_string())
                .collect(),
            tinct_version: "test".into(),
        }
    }

    #[test]
    fn shards_merge_into_the_whole_study() {
        let p = params();
        let whole = compute(&p, Shard::ALL, Hooks::default());
        assert!(whole.complete());
        let files: Vec<ShardFile> = (1..=3)
            .rev()
            .map(|i| ShardFile {
                params: p.clone(),
                shard: i,
                shards: 3,
                points: compute(&p, Shard { index: i, count: 3 }, Hooks::default()).points,
            })
            .collect();
        let (merged_params, merged) = merge(&files).unwrap();
        assert_eq!(merged_params, p);
        assert_eq!(merged, whole.points);
        assert_eq!(
            merge(&files[..2]),
            Err(MergeError::Missing {
                shards: 3,
                missing: vec![1],
                more: 0,
            })
        );
    }

    /// Counts that cannot come from the experiment are refused,
    /// naming the shard (a count above `sets` once merged to a ratio of
    /// 500 000.5); a shard count of 10^9 allocates nothing per shard.
    #[test]
    fn hostile_shards_are_refused_without_allocating_per_shard() {
        let p = params();
        let honest = ShardFile {
            params: p.clone(),
            shard: 1,
            shards: 1,
            points: compute(&p, Shard::ALL, Hooks::default()).points,
        };
        let mut inflated = honest.clone();
        let first = inflated.points[0]
            .schedulable
            .keys()
            .next()
            .unwrap()
            .clone();
        inflated.points[0].schedulable.insert(first, 2_000_002);
        let error = merge(&[inflated]).unwrap_err();
        assert!(
            matches!(error, MergeError::Counts { index: 0, .. }),
            "{error}"
        );
        assert!(
            error.to_string().contains("at most its `sets` 4"),
            "{error}"
        );
        let mut more_sets = honest.clone();
        more_sets.points[1].sets = 5;
        more_sets.points[1].not_generated = 5;
        assert!(matches!(
            merge(&[more_sets]),
            Err(MergeError::Counts { .. })
        ));
        let mut fewer_points = honest.clone();
        fewer_points.points.pop();
        assert!(matches!(
            merge(&[fewer_points]),
            Err(MergeError::Counts { .. })
        ));
        // Twice the sets over two shards of one.
        let twice = [
            ShardFile {
                shards: 2,
                ..honest.clone()
            },
            ShardFile {
                shard: 2,
                shards: 2,
                ..honest.clone()
            },
        ];
        assert!(matches!(
            merge(&twice),
            Err(MergeError::Counts { index: 1, .. })
        ));
        let huge = ShardFile {
            shards: 1_000_000_000,
            ..honest
        };
        let error = merge(&[huge]).unwrap_err();
        assert_eq!(
            error,
            MergeError::Missing {
                shards: 1_000_000_000,
                missing: (2..=11).collect(),
                more: 1_000_000_000 - 11,
            }
        );
        assert!(
            error
                .to_string()
                .ends_with(&format!("and {} more", 1_000_000_000u64 - 11))
        );
    }

    #[test]
    fn a_stopped_study_keeps_what_it_did_and_progress_counts_sets() {
        let p = params();
        let stop = AtomicBool::new(false);
        let count = std::sync::atomic::AtomicU64::new(0);
        let progress = || {
            if count.fetch_add(1, Ordering::Relaxed) + 1 == 5 {
                stop.store(true, Ordering::Relaxed);
            }
        };
        let partial = compute(
            &p,
            Shard::ALL,
            Hooks {
                progress: Some(&progress),
                stop: Some(&stop),
            },
        );
        assert_eq!(partial.done, 5);
        assert_eq!(partial.total, 12);
        assert!(!partial.complete());
        assert_eq!(partial.points.iter().map(|p| p.sets).sum::<u64>(), 5);
    }

    use std::sync::atomic::{AtomicBool, Ordering};
}
