//! The machine's measured refill time Δ, as the default for task sets whose
//! `[platform]` has no `refill` key: `tinct_core::saved_calibration` with
//! this process's environment.

use crate::error::CliError;
use std::path::{Path, PathBuf};
use tinct_core::saved_calibration::{self, RefillSource};
use tinct_core::units::Nanos;

/// Where a full `tinct bench calibrate` saves its result for this machine.
pub(crate) fn saved_path() -> Option<PathBuf> {
    saved_calibration::saved_path(|name| std::env::var_os(name))
}

/// Loads a task set, taking Δ from the calibration (`explicit`, which must
/// exist, else the saved one if there is one) when the file has none, and
/// from `refill` (`--refill`) over either; says where Δ came from.
pub(crate) fn load_task_set(
    file: &Path,
    explicit: Option<&Path>,
    refill: Option<Nanos>,
) -> Result<(tinct_core::TaskSet, RefillSource), CliError> {
    let calibration = saved_calibration::find(explicit, saved_path())?;
    Ok(saved_calibration::load_task_set(file, calibration, refill)?)
}
