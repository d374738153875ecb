//! What a plan or a placement means for its user: the report `tinct plan`
//! prints ([`PlanReport`], [`PlacementReport`]: the result with where it
//! came from and where it went), the comment lines at the top of the
//! task-set file it is written to, and why it failed, if it did (the
//! messages `tinct plan` prints and exits 1 with; the Python package gets
//! the same).

use super::placement::StaticPlacement;
use super::plan::Plan;
use crate::format::write_file;
use crate::model::{TaskSet, Trigger};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::fmt;
use std::path::Path;

/// What `tinct plan` reports: the library's plan and where it came from
/// (written from a borrowed plan, read back owned).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlanReport<'a> {
    /// Input file.
    pub file: String,
    /// The plan.
    #[serde(flatten)]
    pub plan: Cow<'a, Plan>,
    /// Where the plan was written.
    pub output: Option<String>,
    /// Where Δ came from (the file, a calibration, or --refill).
    pub refill_source: String,
}

/// What `tinct plan --placement static` reports (written from a borrowed
/// placement, read back owned).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlacementReport<'a> {
    /// Input file.
    pub file: String,
    /// The placement policy (`static`).
    pub placement: String,
    /// The placement.
    #[serde(flatten)]
    pub result: Cow<'a, StaticPlacement>,
    /// Where the placed task set was written.
    pub output: Option<String>,
    /// Where Δ came from (the file, a calibration, or --refill).
    pub refill_source: String,
}

impl<'a> PlanReport<'a> {
    /// The report of `plan`, made from the task-set file `source` with Δ
    /// from `refill_source`, after writing the planned task set to `out`
    /// (with its [`Plan::file_header`] comments) when one is given and the
    /// plan is schedulable. The error names `out`.
    pub fn written(
        plan: &'a Plan,
        source: &Path,
        refill_source: String,
        out: Option<&Path>,
    ) -> Result<Self, String> {
        let file = source.display().to_string();
        let header = plan.file_header(&file, &refill_source);
        let planned = plan.planned.as_ref().filter(|_| plan.schedulable);
        Ok(PlanReport {
            output: write_planned(out, planned, source, &header)?,
            file,
            plan: Cow::Borrowed(plan),
            refill_source,
        })
    }
}

impl<'a> PlacementReport<'a> {
    /// The report of a static `placement` of the task-set file `source`,
    /// after writing the placed task set to `out` (with its
    /// [`StaticPlacement::file_header`] comments) when one is given and a
    /// placement was found. The error names `out`.
    pub fn written(
        placement: &'a StaticPlacement,
        source: &Path,
        refill_source: String,
        out: Option<&Path>,
    ) -> Result<Self, String> {
        let file = source.display().to_string();
        let header = placement.file_header(&file, &refill_source);
        Ok(PlacementReport {
            output: write_planned(out, placement.planned.as_ref(), source, &header)?,
            file,
            placement: "static".into(),
            result: Cow::Borrowed(placement),
            refill_source,
        })
    }
}

/// Writes `planned` (read from `source`) to `out` with `header` when both
/// exist; says where it went.
fn write_planned(
    out: Option<&Path>,
    planned: Option<&TaskSet>,
    source: &Path,
    header: &[String],
) -> Result<Option<String>, String> {
    match (out, planned) {
        (Some(out), Some(planned)) => {
            write_file(out, planned, source, header)?;
            Ok(Some(out.display().to_string()))
        }
        _ => Ok(None),
    }
}

/// Why a plan is not a schedulable allocation of every task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PlanFailure {
    /// A timeout stopped the search with `placed` of `total` tasks placed.
    Stopped {
        /// Tasks placed.
        placed: usize,
        /// Tasks in the set.
        total: usize,
    },
    /// A timeout stopped the analysis of a plan that placed every task: it
    /// is not verified.
    AnalysisStopped,
    /// Some tasks found no core: each one's reason, joined.
    Unplaced(String),
    /// Every task was placed but the planned set does not pass the
    /// analysis: the analysis' reasons, joined.
    NotVerified {
        /// Some task is data-triggered: the allocators searched with the
        /// declared jitter, and the jitter it inherits is known only once
        /// the cores are (not a bug; static placement handles it).
        inherited_jitter: bool,
        /// The analysis' reasons.
        reasons: String,
    },
}

impl fmt::Display for PlanFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlanFailure::Stopped { placed, total } => write!(
                f,
                "stopped by --timeout with a partial plan: {placed} of {total} tasks placed (the report lists the others)"
            ),
            PlanFailure::AnalysisStopped => f.write_str(super::plan::ANALYSIS_STOPPED),
            PlanFailure::Unplaced(reasons) => write!(f, "no allocation found: {reasons}"),
            PlanFailure::NotVerified {
                inherited_jitter: true,
                reasons,
            } => write!(
                f,
                "the allocation, searched without the jitter data-triggered tasks inherit, does not pass the holistic analysis ({reasons}); try --placement static"
            ),
            PlanFailure::NotVerified {
                inherited_jitter: false,
                reasons,
            } => write!(
                f,
                "the allocation does not re-verify with `tinct analyze` (this is a bug in tinct): {reasons}"
            ),
        }
    }
}

impl Plan {
    /// Tasks placed on a core.
    pub fn placed(&self) -> usize {
        self.cores.iter().map(|c| c.tasks.len()).sum()
    }

    /// Why this plan of `set` fails, or `None` when it is schedulable.
    pub fn failure(&self, set: &TaskSet) -> Option<PlanFailure> {
        if self.stopped && !self.unplaced.is_empty() {
            return Some(PlanFailure::Stopped {
                placed: self.placed(),
                total: set.tasks.len(),
            });
        }
        if self.analysis_error.as_deref() == Some(super::plan::ANALYSIS_STOPPED) {
            return Some(PlanFailure::AnalysisStopped);
        }
        if !self.unplaced.is_empty() {
            let reasons: Vec<&str> = self.unplaced.iter().map(|u| u.message.as_str()).collect();
            return Some(PlanFailure::Unplaced(reasons.join("; ")));
        }
        if self.schedulable {
            return None;
        }
        let reasons = self
            .analysis
            .as_ref()
            .map(|a| {
                let per_task = a.cores.iter().flat_map(|c| c.reasons.iter());
                per_task
                    .chain(&a.reasons)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join("; ")
            })
            .or_else(|| self.analysis_error.clone())
            .unwrap_or_default();
        Some(PlanFailure::NotVerified {
            inherited_jitter: set.tasks.iter().any(|t| t.trigger == Trigger::Data),
            reasons,
        })
    }

    /// The comment lines at the top of the planned task-set file: how it
    /// was made from `source`, what it uses, and where Δ came from.
    pub fn file_header(&self, source: &str, refill_source: &str) -> Vec<String> {
        vec![
            format!(
                "Plan written by `tinct plan --algorithm {}` from {source}.",
                self.algorithm.name()
            ),
            format!(
                "Partitions used {} of {} (needed {}), memory efficiency {:.1} %, total utilization {:.4}{}.",
                self.partitions_used,
                self.budget,
                self.partitions_needed,
                100.0 * self.memory_efficiency,
                self.total_utilization,
                if self.exact {
                    ""
                } else {
                    " (search budget or timeout hit: not proven optimal)"
                }
            ),
            format!("{refill_source}; re-check with `tinct analyze` on this file."),
        ]
    }
}

impl StaticPlacement {
    /// The comment lines at the top of the placed task-set file.
    pub fn file_header(&self, source: &str, refill_source: &str) -> Vec<String> {
        vec![
            format!(
                "Placement written by `tinct plan --placement static --utilization-bound {}` from {source}.",
                self.utilization_bound
            ),
            format!(
                "{} B per job cross cache domains{}; {}.",
                self.crossing_bytes,
                if self.exact {
                    " (optimal)"
                } else {
                    " (search budget or timeout hit: not proven optimal)"
                },
                if self.cores.iter().any(|c| c.reserved) {
                    "cores, partitions as given, and each core's tasks without any a block of \
                     the partitions no task was given (kim2013's reservation per core)"
                } else {
                    "cores only (partitions as given)"
                }
            ),
            format!("{refill_source}; re-check with `tinct analyze` on this file."),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alloc::{Algorithm, PlanOptions, plan};
    use crate::experiment::kim2013::TABLE_I;
    use crate::format::{Syntax, parse};

    fn table_i() -> TaskSet {
        parse(TABLE_I, "kim2013.toml", Syntax::Toml).unwrap()
    }

    #[test]
    fn a_schedulable_plan_has_no_failure_and_its_header_says_how_it_was_made() {
        let set = table_i();
        let plan = plan(&set, Algorithm::Cata, &PlanOptions::default());
        assert_eq!(plan.failure(&set), None);
        assert_eq!(plan.placed(), set.tasks.len());
        let header = plan.file_header("in.toml", "Δ 45.3us from the file");
        assert_eq!(header.len(), 3);
        assert!(header[0].contains("--algorithm cata") && header[0].contains("in.toml"));
        assert!(header[2].starts_with("Δ 45.3us from the file; re-check"));
    }

    /// A plan that placed every task but whose analysis a timeout stopped
    /// is not verified, and says it was stopped (not that the allocation
    /// failed the analysis).
    #[test]
    fn a_plan_whose_analysis_was_stopped_fails_as_stopped() {
        let set = table_i();
        let mut plan = plan(&set, Algorithm::Cata, &PlanOptions::default());
        plan.stopped = true;
        plan.schedulable = false;
        plan.analysis = None;
        plan.analysis_error = Some(crate::alloc::plan::ANALYSIS_STOPPED.to_string());
        let failure = plan.failure(&set).expect("not verified");
        assert_eq!(failure, PlanFailure::AnalysisStopped);
        assert!(
            failure
                .to_string()
                .starts_with("stopped by --timeout before the analysis")
        );
    }

    #[test]
    fn a_plan_with_too_few_partitions_fails_naming_the_unplaced_tasks() {
        let set = table_i();
        let options = PlanOptions {
            partitions: Some(1),
            ..PlanOptions::default()
        };
        let plan = plan(&set, Algorithm::Bfd, &options);
        let failure = plan
            .failure(&set)
            .expect("one partition cannot hold Table I");
        assert!(
            matches!(&failure, PlanFailure::Unplaced(reasons) if !reasons.is_empty()),
            "{failure:?}"
        );
        assert!(failure.to_string().starts_with("no allocation found: "));
    }
}
