//! A full calibration becomes this machine's calibration: the default Δ of
//! task sets without `refill` (where it is kept and how it is read:
//! `tinct_core::saved_calibration`). A `--quick` smoke run never does.

use super::{NAME, Params, RESULT_FILE};
use std::path::{Path, PathBuf};
use tinct_core::saved_calibration;

/// What became of a run's `calibrate.json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Saving {
    /// A quick run: not saved.
    Quick,
    /// Copied to this path.
    Saved(PathBuf),
    /// Could not be saved, and why.
    Failed(String),
}

impl Saving {
    /// Whether [`Saving::message`] is a warning (the run itself succeeded).
    pub fn is_warning(&self) -> bool {
        matches!(self, Saving::Failed(_))
    }

    /// What to tell the user.
    pub fn message(&self) -> String {
        match self {
            Saving::Quick => "(--quick: not saved as this machine's calibration)".into(),
            Saving::Saved(path) => format!(
                "saved as this machine's calibration: {} (tinct analyze/plan/run use its Δ for task sets without `refill`)",
                path.display()
            ),
            Saving::Failed(why) => format!("could not save the calibration: {why}"),
        }
    }
}

/// Saves the `calibrate.json` a finished run with `params` wrote as this
/// machine's calibration at `target` (`saved_calibration::saved_path`;
/// `None` when the environment names no place).
pub fn save(params: &Params, target: Option<&Path>) -> Saving {
    if params.common.quick {
        return Saving::Quick;
    }
    let written = params.common.out_dir(NAME).join(RESULT_FILE);
    match saved_calibration::save(&written, target.map(Path::to_path_buf)) {
        Ok(saved) => Saving::Saved(saved),
        Err(e) => Saving::Failed(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::BenchOptions;

    fn params(out: &Path, quick: bool) -> Params {
        Params {
            common: BenchOptions {
                quick,
                out: Some(out.to_path_buf()),
                ..BenchOptions::default()
            },
            ..Params::default()
        }
    }

    #[test]
    fn a_full_runs_file_is_copied_to_the_target_directory_made_if_needed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(RESULT_FILE), "{\"refill\": 1}").unwrap();
        let target = dir.path().join("state/tinct/calibrate.json");
        let saving = save(&params(dir.path(), false), Some(&target));
        assert_eq!(saving, Saving::Saved(target.clone()));
        assert!(!saving.is_warning());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "{\"refill\": 1}");
        assert!(saving.message().contains(&target.display().to_string()));
    }

    #[test]
    fn quick_runs_are_not_saved_and_failures_are_warnings() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("saved.json");
        assert_eq!(
            save(&params(dir.path(), true), Some(&target)),
            Saving::Quick
        );
        assert!(!target.exists());
        // No calibrate.json was written in the run's directory.
        let missing = save(&params(dir.path(), false), Some(&target));
        assert!(missing.is_warning(), "{missing:?}");
        let nowhere = save(&params(dir.path(), false), None);
        assert!(nowhere.message().contains("$HOME"), "{nowhere:?}");
    }
}
