//! The declared conditions a job body is profiled under.
//!
//! - `alone`: the task alone on its CPU and its colours, its working set
//!   warm from the job before — kim2013 Section IV-B's setting;
//! - `cold`: alone, with its working set flushed from every cache level
//!   before each job (`CLFLUSH` of every line, tinct-sys `cache_flush`):
//!   the job starts as after another task filled its partitions;
//! - `co-run`: warm, with aggressors sweeping memory on every other CPU of
//!   the run (coloured into the partitions the task does not use when the
//!   colour probe finds colouring effective, uncoloured otherwise);
//! - `cold-co-run`: both.

use crate::{Error, Result};
use serde::{Deserialize, Serialize};

/// One declared condition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Condition {
    /// Alone, warm.
    Alone,
    /// Alone, working set flushed before each job.
    Cold,
    /// Warm, with co-runners on the other CPUs.
    CoRun,
    /// Flushed before each job, with co-runners.
    ColdCoRun,
}

impl Condition {
    /// Every condition, in the order they are described.
    pub const ALL: [Condition; 4] = [
        Condition::Alone,
        Condition::Cold,
        Condition::CoRun,
        Condition::ColdCoRun,
    ];

    /// The conditions profiled when none are named.
    pub const DEFAULT: [Condition; 3] = [Condition::Alone, Condition::Cold, Condition::CoRun];

    /// The name used on the command line and in the files: its serde name.
    pub fn name(self) -> &'static str {
        crate::choice::serde_name(&self)
    }

    /// True if the working set is flushed before each job.
    pub fn cold(self) -> bool {
        matches!(self, Condition::Cold | Condition::ColdCoRun)
    }

    /// True if co-runners run on the other CPUs.
    pub fn co_runners(self) -> bool {
        matches!(self, Condition::CoRun | Condition::ColdCoRun)
    }

    /// A comma-separated list such as `alone,cold`: each named once, in
    /// the order given.
    pub fn parse_list(text: &str) -> Result<Vec<Condition>> {
        let mut conditions = Vec::new();
        for item in text.split(',').map(str::trim) {
            let condition = Condition::ALL
                .into_iter()
                .find(|c| c.name() == item)
                .ok_or_else(|| {
                    let names: Vec<&str> = Condition::ALL.iter().map(|c| c.name()).collect();
                    Error::option(
                        "--conditions",
                        format!("a list of {}", names.join(", ")),
                        format!("`{item}`"),
                    )
                })?;
            if conditions.contains(&condition) {
                return Err(Error::option(
                    "--conditions",
                    "each condition once",
                    format!("`{item}` twice"),
                ));
            }
            conditions.push(condition);
        }
        Ok(conditions)
    }
}

impl std::fmt::Display for Condition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_parse_in_order_and_refuse_unknown_or_repeated_names() {
        assert_eq!(
            Condition::parse_list("cold, alone").unwrap(),
            vec![Condition::Cold, Condition::Alone]
        );
        assert_eq!(
            Condition::parse_list("cold-co-run").unwrap(),
            vec![Condition::ColdCoRun]
        );
        let err = Condition::parse_list("alone,hot").unwrap_err().to_string();
        assert!(
            err.contains("found `hot`") && err.contains("co-run"),
            "{err}"
        );
        assert!(Condition::parse_list("alone,alone").is_err());
        assert!(Condition::parse_list("").is_err());
    }

    #[test]
    fn names_round_trip_through_serde() {
        for c in Condition::ALL {
            let json = serde_json::to_string(&c).unwrap();
            assert_eq!(json, format!("\"{}\"", c.name()));
            assert_eq!(serde_json::from_str::<Condition>(&json).unwrap(), c);
        }
        assert!(Condition::ColdCoRun.cold() && Condition::ColdCoRun.co_runners());
        assert!(!Condition::Alone.cold() && !Condition::Alone.co_runners());
    }
}
