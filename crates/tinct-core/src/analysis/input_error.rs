//! A task set the analysis refuses is bad input: [`AnalysisError::input_error`]
//! names the file, the task's line and the field, as every other input
//! error does (one wording for the CLI and the Python binding).

use super::{AnalysisError, TermCause};
use crate::format::InputError;
use crate::model::TaskSet;

impl AnalysisError {
    /// This refusal as an [`InputError`] on `file`, from which `set` was read
    /// (its `task_lines` give the line).
    pub fn input_error(&self, file: &str, set: &TaskSet) -> InputError {
        let (index, field, expected, found) = match self {
            AnalysisError::Unassigned { index, task, .. } => (
                *index,
                format!("task '{task}' field `core`"),
                format!(
                    "a core from 0 to {}: the analysis needs every task on a core (`tinct plan` assigns cores and partitions)",
                    set.platform.cores.saturating_sub(1)
                ),
                "no core".to_string(),
            ),
            AnalysisError::TermTooLarge {
                index,
                task,
                quantity,
                value,
                cause,
            } => {
                let sum =
                    format!("{quantity} of task '{task}' = {value} ns, which exceeds 2^64 ns");
                let overheads = &set.platform.overheads;
                match cause {
                    TermCause::ContextSwitch | TermCause::Tick => {
                        // A platform value: blamed as such, not on the
                        // task (whose line is not where it is written).
                        let (name, symbol, value) = if *cause == TermCause::ContextSwitch {
                            ("context_switch", "δ", overheads.context_switch)
                        } else {
                            ("tick", "ε", overheads.tick)
                        };
                        return InputError {
                            file: file.to_string(),
                            line: None,
                            field: format!("platform field `overheads.{name}`"),
                            expected: format!(
                                "a value for which {quantity} of every task stays below 2^64 ns ({})",
                                cause.hint()
                            ),
                            found: format!("{symbol} = {value} ({sum})"),
                        };
                    }
                    TermCause::Wcet => (
                        *index,
                        format!("task '{task}' field `wcet`"),
                        format!(
                            "a WCET for which {quantity} stays below 2^64 ns ({})",
                            cause.hint()
                        ),
                        sum,
                    ),
                    TermCause::CacheDelay => (
                        *index,
                        format!("task '{task}': {quantity}"),
                        format!("a value below 2^64 ns ({})", cause.hint()),
                        sum,
                    ),
                }
            }
            AnalysisError::MemoryLoadTooLarge { first_task, .. } => (
                *first_task,
                format!(
                    "task '{}' field `partitions`",
                    set.tasks.get(*first_task).map_or("?", |t| t.name.as_str())
                ),
                "an Eq. (3) load tinct can decide exactly".to_string(),
                self.to_string(),
            ),
            AnalysisError::GlobalResource {
                index,
                resource,
                tasks,
                ..
            } => (
                *index,
                format!(
                    "task '{}' field `critical_sections`",
                    tasks.get(1).map_or("?", String::as_str)
                ),
                format!("the users of resource '{resource}' on one core"),
                self.to_string(),
            ),
            AnalysisError::EdfUndecidable { index, .. } => (
                *index,
                format!(
                    "task '{}' field `period`",
                    set.tasks.get(*index).map_or("?", |t| t.name.as_str())
                ),
                "SCHED_DEADLINE tasks whose EDF test tinct decides exactly".to_string(),
                self.to_string(),
            ),
            AnalysisError::TooManyChains { .. } | AnalysisError::CyclicGraph { .. } => {
                return InputError {
                    file: file.to_string(),
                    line: None,
                    field: "edges".into(),
                    expected: "an affinity graph tinct enumerates".into(),
                    found: self.to_string(),
                };
            }
        };
        InputError {
            file: file.to_string(),
            line: set.task_lines.get(index).copied(),
            field,
            expected,
            found,
        }
    }
}
