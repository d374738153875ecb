//! Parameters every bench takes: quick, out, reps, seed, cpus; and the
//! settings a run resolves from them.

use crate::{Error, Result};
use std::path::PathBuf;

/// Parameters every bench takes (the CLI's `--quick`, `--out`, `--reps`,
/// `--seed`, `--cpus`, `--color-bits`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct BenchOptions {
    /// Smoke run: few sizes and repetitions, a few seconds (for CI).
    #[cfg_attr(feature = "cli", arg(long))]
    pub quick: bool,
    /// Output directory for JSON, CSV and SVG (default `tinct-bench/<bench>`).
    #[cfg_attr(feature = "cli", arg(long, value_name = "DIR"))]
    pub out: Option<PathBuf>,
    /// Repetitions per condition (default depends on the bench and `--quick`).
    #[cfg_attr(feature = "cli", arg(long, value_name = "N"))]
    pub reps: Option<u32>,
    /// Seed of every random choice (permutations, condition order).
    #[cfg_attr(feature = "cli", arg(long, default_value_t = BenchOptions::default().seed))]
    pub seed: u64,
    /// CPUs the bench may use, as a list like `0-1,3` (default: the first
    /// CPUs of the current affinity).
    #[cfg_attr(feature = "cli", arg(long, value_name = "LIST"))]
    pub cpus: Option<String>,
    /// The page colour's physical address bits, e.g. `12-16` (benches that
    /// colour): before TINCT_COLOR_BITS, the machine file (`tinct doctor
    /// --save`) and the bits derived from the cache topology.
    #[cfg_attr(
        feature = "cli",
        arg(long, value_name = "BITS", value_parser = crate::cli::color_bits)
    )]
    pub color_bits: Option<String>,
}

impl Default for BenchOptions {
    /// A full run, default output directory and repetitions, seed 1, every allowed CPU.
    fn default() -> Self {
        Self {
            quick: false,
            out: None,
            reps: None,
            seed: 1,
            cpus: None,
            color_bits: None,
        }
    }
}

/// The settings of one run, resolved from its [`BenchOptions`]: what a
/// bench's plan carries to its measurement and what its
/// [`RunHeader`](super::RunHeader) records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunSettings {
    /// True for a `--quick` smoke run.
    pub quick: bool,
    /// Repetitions per condition.
    pub reps: u32,
    /// Seed of every random choice.
    pub seed: u64,
    /// The CPUs the run uses, in the order the bench gives them meaning.
    pub cpus: Vec<u32>,
}

impl BenchOptions {
    /// The run's settings: `quick` and `seed` as given, with the `reps`
    /// and `cpus` the bench resolved (with [`Self::reps_or`] and
    /// [`Self::cpus`], or its own choice).
    pub fn settings(&self, reps: u32, cpus: Vec<u32>) -> RunSettings {
        RunSettings {
            quick: self.quick,
            reps,
            seed: self.seed,
            cpus,
        }
    }

    /// The output directory for `bench`.
    pub fn out_dir(&self, bench: &str) -> PathBuf {
        self.out
            .clone()
            .unwrap_or_else(|| PathBuf::from("tinct-bench").join(bench))
    }

    /// Repetitions: `--reps` if given, else `quick_default` or `full_default`.
    pub fn reps_or(&self, quick_default: u32, full_default: u32) -> Result<u32> {
        match self.reps {
            Some(0) => Err(Error::option("--reps", "at least 1 repetition", "0")),
            Some(n) => Ok(n),
            None if self.quick => Ok(quick_default),
            None => Ok(full_default),
        }
    }

    /// This machine's page colours for this bench, from the first source
    /// that gives them (`--color-bits`, `TINCT_COLOR_BITS`, the machine
    /// file, the derived rule: `tinct_sys::color_source`). Unknown or bad
    /// bits are [`Error::Input`] (exit status 2) in one line that
    /// names the ways to give them.
    pub fn colors(&self) -> Result<tinct_sys::color_source::ResolvedColors> {
        self.colors_with(None)
    }

    /// [`Self::colors`], with a task set's `[platform] color_bits` (its
    /// file and bits) after `--color-bits` and `TINCT_COLOR_BITS`.
    pub fn colors_with(
        &self,
        task_set: Option<(&std::path::Path, &[u32])>,
    ) -> Result<tinct_sys::color_source::ResolvedColors> {
        Ok(self.resolve_colors(task_set)?)
    }

    /// The resolution itself, its error kept typed (unknown bits are
    /// [`ColorSourceError::Unknown`](tinct_sys::color_source::ColorSourceError::Unknown)).
    pub fn resolve_colors(
        &self,
        task_set: Option<(&std::path::Path, &[u32])>,
    ) -> std::result::Result<
        tinct_sys::color_source::ResolvedColors,
        tinct_sys::color_source::ColorSourceError,
    > {
        let request = tinct_sys::color_source::ColorRequest {
            flag: self
                .color_bits
                .as_deref()
                .map(|text| ("--color-bits", text)),
            task_set,
        };
        tinct_sys::color_source::resolve(request, rustix::param::page_size() as u64)
    }

    /// The CPUs to use: `--cpus` if given (each must be in the current
    /// affinity), else the current affinity. Fails if fewer than `at_least`.
    pub fn cpus(&self, at_least: usize) -> Result<Vec<u32>> {
        let allowed = tinct_sys::sched::affinity()?;
        let chosen = match &self.cpus {
            Some(text) => {
                let list = tinct_sys::parse_cpu_list(text)
                    .map_err(|e| Error::option("--cpus", "a CPU list like 0-1,3", e.to_string()))?;
                if let Some(bad) = list.iter().find(|c| !allowed.contains(c)) {
                    return Err(Error::option(
                        "--cpus",
                        format!(
                            "CPUs of this process's affinity ({})",
                            tinct_sys::format_cpu_list(&allowed)
                        ),
                        format!("CPU {bad}"),
                    ));
                }
                list
            }
            None => allowed,
        };
        if chosen.len() < at_least {
            return Err(Error::option(
                "--cpus",
                format!("at least {at_least} CPUs (this bench's need)"),
                format!("{} ({})", chosen.len(), tinct_sys::format_cpu_list(&chosen)),
            ));
        }
        Ok(chosen)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reps_default_follows_quick_and_rejects_zero() {
        let mut o = BenchOptions::default();
        assert_eq!(o.reps_or(3, 30).unwrap(), 30);
        o.quick = true;
        assert_eq!(o.reps_or(3, 30).unwrap(), 3);
        o.reps = Some(7);
        assert_eq!(o.reps_or(3, 30).unwrap(), 7);
        o.reps = Some(0);
        assert!(o.reps_or(3, 30).is_err());
    }

    #[test]
    fn out_dir_defaults_per_bench() {
        let o = BenchOptions::default();
        assert_eq!(o.out_dir("crpd"), PathBuf::from("tinct-bench/crpd"));
    }

    #[test]
    fn cpus_outside_affinity_are_rejected() {
        let o = BenchOptions {
            cpus: Some("4000".into()),
            ..Default::default()
        };
        let err = o.cpus(1).unwrap_err().to_string();
        assert!(err.contains("4000"), "{err}");
        let o = BenchOptions {
            cpus: Some("x".into()),
            ..Default::default()
        };
        assert!(o.cpus(1).is_err());
    }
}
