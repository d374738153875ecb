//! Planning `tinct bench dram-map`: the buffer, samples and rounds checked
//! and the solver's settings chosen, before anything runs.

use super::Params;
use super::solver::SolverOptions;
use crate::harness::RunSettings;
use crate::{Error, Result};

/// What a run measures.
pub struct Plan {
    /// Quick, reps, seed and this process's CPUs, as the header records them.
    pub run: RunSettings,
    /// Bytes to sample addresses from.
    pub buffer_bytes: u64,
    /// The same, as a length in memory.
    pub buffer_len: usize,
    /// Addresses sampled.
    pub samples: usize,
    /// Timed repetitions per measurement.
    pub rounds: usize,
    /// The solver's settings.
    pub options: SolverOptions,
}

impl crate::harness::Plan for Plan {
    type Params = Params;
    type Measured = super::measure::Measured;

    /// Checks the parameters and chooses the sizes.
    fn plan(params: &Params) -> Result<Plan> {
        let quick = params.common.quick;
        let buffer = params
            .buffer
            .map_or(if quick { 64 << 20 } else { 1 << 30 }, |b| b.0);
        let samples = params.samples.unwrap_or(if quick { 512 } else { 2048 });
        let rounds = params.rounds.unwrap_or(if quick { 8 } else { 32 });
        if samples < 64 {
            return Err(Error::option(
                "--samples",
                "at least 64 addresses",
                samples.to_string(),
            ));
        }
        let buffer_len = usize::try_from(buffer).map_err(|_| {
            Error::option(
                "--buffer",
                "a size this machine can address",
                format!("{buffer} bytes"),
            )
        })?;
        Ok(Plan {
            run: params.common.settings(1, tinct_sys::sched::affinity()?),
            buffer_bytes: buffer,
            buffer_len,
            samples,
            rounds,
            options: SolverOptions {
                seed: params.common.seed,
                ..SolverOptions::default()
            },
        })
    }

    fn measure(&self, progress: &dyn crate::harness::Progress) -> Result<super::measure::Measured> {
        super::measure::measure(self, progress)
    }
}
