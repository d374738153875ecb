//! A random study as a person describes it (the options of
//! `tinct experiment random`, the arguments of the Python binding): the
//! generator, a utilization range and counts. [`RandomStudy::params`]
//! checks it and turns it into the [`Params`] that determine the results,
//! so every front end accepts the same studies and computes the same
//! utilization points.

use super::random::Params;
use crate::alloc::Algorithm;
use crate::generate::RandomParams;
use crate::partitions::MAX_PARTITIONS;
use crate::units::Bytes;
use tinct_base::InputError;

/// The most utilization points one study may have (each point is
/// `sets_per_point` task sets; far more than any figure plots).
pub const MAX_POINTS: u64 = 100_000;

/// A random study before it is checked (the last utilization point is
/// included when the steps reach it). With the feature `cli`, it is the
/// study's options of `tinct experiment random`, each field's doc comment
/// its help text.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct RandomStudy {
    /// The generator's parameters.
    #[cfg_attr(feature = "cli", command(flatten))]
    pub generator: RandomParams,
    /// First utilization point (total utilization Σ C^{p_min}/T).
    #[cfg_attr(feature = "cli", arg(long, default_value_t = 2.0))]
    pub util_min: f64,
    /// Last utilization point.
    #[cfg_attr(feature = "cli", arg(long, default_value_t = 5.0))]
    pub util_max: f64,
    /// Step between points.
    #[cfg_attr(feature = "cli", arg(long, default_value_t = 0.25))]
    pub util_step: f64,
    /// Task sets per point.
    #[cfg_attr(
        feature = "cli",
        arg(long = "sets", value_name = "SETS", default_value_t = 100)
    )]
    pub sets_per_point: u64,
    /// Random seed.
    #[cfg_attr(feature = "cli", arg(long, default_value_t = 1))]
    pub seed: u64,
    /// Search nodes per MinCacheAlloc call (0: no budget, an exhaustive
    /// search, as in `tinct plan` and `tinct experiment kim2013`).
    #[cfg_attr(feature = "cli", arg(long, default_value = "20000"))]
    pub node_budget: Option<u64>,
}

/// Why a study cannot run; each variant names the values it found. Front
/// ends word the names of the fields their own way (command-line flags,
/// keyword arguments).
#[derive(Clone, Debug, PartialEq)]
pub enum StudyError {
    /// tasks, cores or partitions zero, or partitions above [`MAX_PARTITIONS`].
    Counts {
        /// n.
        tasks: usize,
        /// N_C.
        cores: u32,
        /// N_P.
        partitions: u32,
    },
    /// Not 0 < min ≤ max with step > 0 (or not finite).
    Utilization {
        /// First point.
        min: f64,
        /// Last point.
        max: f64,
        /// Step.
        step: f64,
    },
    /// More than [`MAX_POINTS`] utilization points.
    TooManyPoints {
        /// Points the range and step give.
        points: f64,
    },
    /// A period or task-memory range that is empty or starts at zero.
    Ranges {
        /// Least period, ns.
        period_min: u64,
        /// Greatest period, ns.
        period_max: u64,
        /// Least task memory, bytes.
        memory_min: u64,
        /// Greatest task memory, bytes.
        memory_max: u64,
    },
    /// σ_max outside 0..=1.
    Sensitivity(f64),
    /// M_total below one byte per partition (0 included: every set would
    /// fail Eq. (3), 0 % everywhere), as a task set's `[platform] memory`
    /// is refused.
    Memory {
        /// M_total, bytes.
        memory: u64,
        /// N_P.
        partitions: u32,
    },
}

impl StudyError {
    /// The error as tinct's input error, each field named by `name`, a
    /// front end's spelling of tinct-core's names (`util_min`,
    /// `task_memory_max`, …): no file, the fields as the field, what was
    /// expected and found. The [`Display`](std::fmt::Display) text keeps
    /// tinct-core's names (Python's keyword arguments),
    /// [`StudyError::flag_error`] gives the command line's.
    pub fn input_error(&self, name: &dyn Fn(&str) -> String) -> InputError {
        let (field, expected, found) = match self {
            StudyError::Counts {
                tasks,
                cores,
                partitions,
            } => (
                format!(
                    "{}, {} and {}",
                    name("tasks"),
                    name("cores"),
                    name("partitions")
                ),
                format!("positive values (partitions at most {MAX_PARTITIONS})"),
                format!("{tasks}, {cores}, {partitions}"),
            ),
            StudyError::Utilization { min, max, step } => (
                utilization_fields(name),
                "finite values with 0 < min ≤ max and step > 0".to_string(),
                format!("{min}, {max}, {step}"),
            ),
            StudyError::TooManyPoints { points } => (
                utilization_fields(name),
                format!("at most {MAX_POINTS} utilization points"),
                points.to_string(),
            ),
            StudyError::Ranges {
                period_min,
                period_max,
                memory_min,
                memory_max,
            } => (
                format!(
                    "{}/{} and {}/{}",
                    name("period_min"),
                    name("period_max"),
                    name("task_memory_min"),
                    name("task_memory_max")
                ),
                "0 < min ≤ max".to_string(),
                format!(
                    "periods {period_min}..{period_max} ns and memory {memory_min}..{memory_max} B"
                ),
            ),
            StudyError::Sensitivity(value) => (
                name("sensitivity_max"),
                "a fraction in 0..1".to_string(),
                value.to_string(),
            ),
            StudyError::Memory { memory, partitions } => (
                name("memory"),
                format!(
                    "at least one byte per partition ({partitions} partitions, so at least {})",
                    Bytes(u64::from(*partitions))
                ),
                Bytes(*memory).to_string(),
            ),
        };
        InputError::new("", field, expected, found)
    }

    /// The error with the fields named by `tinct experiment random`'s
    /// flags (`--util-min`, `--task-memory-max`, …).
    pub fn flag_error(&self) -> InputError {
        self.input_error(&|field| format!("--{}", field.replace('_', "-")))
    }
}

/// The three fields of the utilization range, named by `name`.
fn utilization_fields(name: &dyn Fn(&str) -> String) -> String {
    format!(
        "{}/{}/{}",
        name("util_min"),
        name("util_max"),
        name("util_step")
    )
}

impl std::fmt::Display for StudyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.input_error(&|field| field.to_string()).fmt(f)
    }
}

impl std::error::Error for StudyError {}

impl RandomStudy {
    /// Checks the study and computes its utilization points: util_min,
    /// util_min + step, … up to util_max, each rounded to 6 decimals (so
    /// that 0.1 steps print as 0.1, not 0.30000000000000004). Every
    /// algorithm is run, in [`Algorithm::ALL`] order.
    pub fn params(&self) -> Result<Params, StudyError> {
        let g = &self.generator;
        if g.tasks == 0 || g.cores == 0 || g.partitions == 0 || g.partitions > MAX_PARTITIONS {
            return Err(StudyError::Counts {
                tasks: g.tasks,
                cores: g.cores,
                partitions: g.partitions,
            });
        }
        if g.total_memory < u64::from(g.partitions) {
            return Err(StudyError::Memory {
                memory: g.total_memory,
                partitions: g.partitions,
            });
        }
        let (min, max, step) = (self.util_min, self.util_max, self.util_step);
        let finite = min.is_finite() && max.is_finite() && step.is_finite();
        if !finite || step <= 0.0 || min <= 0.0 || max < min {
            return Err(StudyError::Utilization { min, max, step });
        }
        let steps = ((max - min) / step + 1e-9).floor();
        if steps + 1.0 > MAX_POINTS as f64 {
            return Err(StudyError::TooManyPoints {
                points: steps + 1.0,
            });
        }
        if g.period_min_ns == 0 || g.period_max_ns < g.period_min_ns || g.memory_max < g.memory_min
        {
            return Err(StudyError::Ranges {
                period_min: g.period_min_ns,
                period_max: g.period_max_ns,
                memory_min: g.memory_min,
                memory_max: g.memory_max,
            });
        }
        if !(0.0..=1.0).contains(&g.sensitivity_max) {
            return Err(StudyError::Sensitivity(g.sensitivity_max));
        }
        // Below MAX_POINTS, checked above.
        let utilizations = (0..=steps as u64)
            .map(|k| ((min + k as f64 * step) * 1e6).round() / 1e6)
            .collect();
        Ok(Params {
            generator: g.clone(),
            utilizations,
            sets_per_point: self.sets_per_point,
            seed: self.seed,
            // 0 is no budget, as `None` (`SearchOptions::node_budget_option`).
            node_budget: self.node_budget.filter(|&nodes| nodes > 0),
            algorithms: Algorithm::ALL
                .iter()
                .map(|a| a.name().to_string())
                .collect(),
            tinct_version: env!("CARGO_PKG_VERSION").to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn study() -> RandomStudy {
        RandomStudy {
            generator: RandomParams::default(),
            util_min: 0.1,
            util_max: 0.5,
            util_step: 0.1,
            sets_per_point: 3,
            seed: 7,
            node_budget: Some(100),
        }
    }

    #[test]
    fn points_are_rounded_and_reach_the_maximum() {
        let params = study().params().unwrap();
        assert_eq!(params.utilizations, vec![0.1, 0.2, 0.3, 0.4, 0.5]);
        assert_eq!(params.algorithms, vec!["bfd", "wfd", "cata"]);
        assert_eq!(params.sets_per_point, 3);
    }

    #[test]
    fn bad_studies_are_refused_with_what_was_found() {
        let mut s = study();
        s.util_step = f64::NAN;
        assert!(matches!(s.params(), Err(StudyError::Utilization { .. })));
        let mut s = study();
        s.util_step = 1e-9;
        s.util_max = 1.0;
        assert!(matches!(s.params(), Err(StudyError::TooManyPoints { .. })));
        let mut s = study();
        s.generator.partitions = MAX_PARTITIONS + 1;
        assert!(matches!(s.params(), Err(StudyError::Counts { .. })));
        let mut s = study();
        s.generator.period_min_ns = 0;
        assert!(matches!(s.params(), Err(StudyError::Ranges { .. })));
        let mut s = study();
        s.generator.sensitivity_max = 1.5;
        assert_eq!(s.params(), Err(StudyError::Sensitivity(1.5)));
    }

    /// Regression: `--memory 0B` was accepted and gave 0 % everywhere.
    #[test]
    fn memory_below_a_byte_per_partition_is_refused_naming_the_field() {
        let mut s = study();
        s.generator.total_memory = 0;
        let e = s.params().unwrap_err();
        assert_eq!(
            e,
            StudyError::Memory {
                memory: 0,
                partitions: s.generator.partitions
            }
        );
        assert_eq!(
            e.flag_error().to_string(),
            format!(
                "--memory: expected at least one byte per partition ({0} partitions, so at least {0}B), found 0B",
                s.generator.partitions
            )
        );
        s.generator.total_memory = u64::from(s.generator.partitions);
        assert!(s.params().is_ok());
    }

    #[test]
    fn front_ends_name_the_fields_their_way() {
        let mut s = study();
        s.generator.period_min_ns = 0;
        let e = s.params().unwrap_err();
        assert!(
            e.to_string()
                .starts_with("period_min/period_max and task_memory_min/task_memory_max: "),
            "{e}"
        );
        assert!(
            e.flag_error().to_string().starts_with(
                "--period-min/--period-max and --task-memory-min/--task-memory-max: expected 0 < min ≤ max, found periods 0.."
            ),
            "{}",
            e.flag_error().to_string()
        );
        let e = StudyError::Sensitivity(1.5);
        assert_eq!(
            e.flag_error().to_string(),
            "--sensitivity-max: expected a fraction in 0..1, found 1.5"
        );
        assert_eq!(
            e.flag_error(),
            InputError::new("", "--sensitivity-max", "a fraction in 0..1", "1.5")
        );
    }
}
