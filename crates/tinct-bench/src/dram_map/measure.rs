//! The measuring loop of `tinct bench dram-map`: addresses sampled from
//! the buffer with `tinct_mem::row_conflict`, timed pair by pair as the
//! solver ([`super::solver`]) asks.

use super::plan::Plan;
use super::solver::{self, RowConflictTimer, Solution};
use crate::harness::Progress;
use crate::{Error, Result};
use tinct_mem::row_conflict::RowConflictProbe;

/// What a run measured and found.
pub struct Measured {
    /// Addresses sampled.
    pub samples: usize,
    /// The solver's functions, or why it refused.
    pub solution: Solution,
    /// The latencies of the threshold pairs, for the histogram.
    pub threshold_latencies: Vec<u32>,
    /// Measuring time in ms.
    pub elapsed_ms: f64,
}

/// The probe as the solver's timer, keeping the first latencies for the
/// histogram.
struct ProbeTimer<'a> {
    probe: &'a RowConflictProbe,
    kept: Vec<u32>,
    keep: usize,
    progress: &'a dyn Progress,
}

impl RowConflictTimer for ProbeTimer<'_> {
    fn latency(&mut self, a: usize, b: usize) -> u32 {
        let latency = self.probe.latency(a, b);
        if self.kept.len() < self.keep {
            self.kept.push(latency);
        }
        self.progress.inc(1);
        latency
    }

    fn stop_requested(&self) -> bool {
        self.progress.stop_requested()
    }
}

/// Samples the addresses and solves, timing pairs as the solver asks; a
/// stop makes the solver refuse itself as interrupted.
pub(super) fn measure(plan: &Plan, progress: &dyn Progress) -> Result<Measured> {
    let started = std::time::Instant::now();
    let probe = RowConflictProbe::new(
        plan.buffer_len,
        plan.samples,
        plan.rounds,
        plan.options.seed,
    )
    .map_err(|e| Error::Measurement(format!("cannot sample addresses: {e}")))?;
    let expected = plan.options.threshold_pairs + plan.options.sets * plan.samples * 2;
    progress.start(expected as u64, "dram-map");
    let mut timer = ProbeTimer {
        probe: &probe,
        kept: Vec::new(),
        keep: plan.options.threshold_pairs,
        progress,
    };
    let solution = solver::solve(probe.physical(), &mut timer, &plan.options);
    progress.finish();
    Ok(Measured {
        samples: probe.physical().len(),
        solution,
        threshold_latencies: timer.kept,
        elapsed_ms: started.elapsed().as_secs_f64() * 1e3,
    })
}
