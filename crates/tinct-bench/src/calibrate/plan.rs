//! Planning `tinct bench calibrate`: the parameters checked and resolved
//! against this machine's caches (the sweep's sizes, the buffers, the
//! repetitions of each part, the overheads' setup) before anything runs.

use super::Params;
use crate::harness::RunHeader;
use crate::overheads;
use crate::{Error, Result};
use tinct_core::units::Bytes;

const FALLBACK_LLC_BYTES: u64 = 8 << 20;
const FALLBACK_L1_BYTES: u64 = 32 << 10;
const FALLBACK_L2_BYTES: u64 = 256 << 10;
const MAX_BUFFER_BYTES: u64 = 512 << 20;

/// What a run measures, resolved from the parameters and the machine.
pub struct Plan {
    /// Bench, options, machine, the measuring CPU (its log of counter
    /// totals started).
    pub header: RunHeader,
    /// N_P.
    pub partitions: u32,
    /// Seed of every random choice.
    pub seed: u64,
    /// The CPU the latency, bandwidth and Δ are measured on.
    pub cpu: u32,
    /// Samples per condition of each size of the latency sweep.
    pub reps: u32,
    /// The caches' sizes.
    pub geometry: Geometry,
    /// Working-set sizes of the latency sweep.
    pub sizes: Vec<u64>,
    /// Loads per latency sample.
    pub steps: u64,
    /// Why no huge-page chase can run, known before trying (`None`: try).
    pub huge_missing: Option<String>,
    /// Bytes of the bandwidth buffer, which also wipes the LLC for Δ.
    pub wipe_bytes: u64,
    /// Samples per condition of the bandwidth.
    pub bandwidth_reps: u32,
    /// Samples per condition of Δ.
    pub refill_reps: u32,
    /// How the overheads are measured (on every CPU of `--cpus`).
    pub overheads: overheads::Setup,
    /// Progress steps of the whole run.
    pub progress_steps: u64,
}

impl crate::harness::Plan for Plan {
    type Params = Params;
    type Measured = super::measure::Measured;

    /// Checks the parameters and resolves what to measure on this machine.
    fn plan(params: &Params) -> Result<Plan> {
        if params.partitions == 0 {
            return Err(Error::option("--partitions", "at least 1 partition", "0"));
        }
        let options = &params.common;
        let quick = options.quick;
        let reps = options.reps_or(5, 21)?;
        let cpus = options.cpus(1)?;
        let header = RunHeader::new(super::NAME, options, reps, vec![cpus[0]]);
        let geometry = Geometry::of(&header);
        let max_size = match params.max_size {
            Some(Bytes(bytes)) => bytes,
            None if quick => (geometry.llc * 2).clamp(32 << 20, MAX_BUFFER_BYTES),
            None => (geometry.llc * 4).clamp(64 << 20, MAX_BUFFER_BYTES),
        };
        let sizes = sweep_sizes(&geometry, max_size, quick);
        // Short samples: on a shared machine a long one is rarely undisturbed.
        let steps: u64 = if quick { 1 << 15 } else { 1 << 16 };
        let refill_reps = options.reps_or(5, 51)?;
        let bandwidth_reps = options.reps_or(3, 11)?;
        // The overheads pin and time threads themselves: the context switch and
        // the tick on the run's CPU, the release latency on every CPU of --cpus.
        let mut overheads = overheads::Setup::of(options, &header, 5)?;
        overheads.cpus = cpus.clone();
        let progress_steps = sizes.len() as u64 * u64::from(reps + 1) * 3
            + u64::from(bandwidth_reps + 1) * 2
            + u64::from(refill_reps + 1) * 4
            + overheads::progress_steps(overheads.switch_reps);
        let wipe_bytes = (geometry.llc * 2)
            .clamp(16 << 20, MAX_BUFFER_BYTES)
            .max(max_size.min(MAX_BUFFER_BYTES));
        Ok(Plan {
            huge_missing: thp_unavailable(&header),
            header,
            partitions: params.partitions,
            seed: options.seed,
            cpu: cpus[0],
            reps,
            geometry,
            sizes,
            steps,
            wipe_bytes,
            bandwidth_reps,
            refill_reps,
            overheads,
            progress_steps,
        })
    }

    fn measure(&self, progress: &dyn crate::harness::Progress) -> Result<super::measure::Measured> {
        super::measure::measure(self, progress)
    }
}

/// Cache sizes the bench works with (from the machine, or fallbacks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    /// L1 data cache bytes.
    pub l1: u64,
    /// L2 bytes (or 8 × L1 if there is no L2).
    pub l2: u64,
    /// Last-level cache bytes.
    pub llc: u64,
    /// Base page bytes.
    pub page: u64,
}

impl Geometry {
    /// The geometry of the machine described in `header`.
    pub fn of(header: &RunHeader) -> Self {
        let m = &header.machine;
        let l1 = m.cache(1).map_or(FALLBACK_L1_BYTES, |c| c.size_bytes);
        let llc = m.llc().map_or(FALLBACK_LLC_BYTES, |c| c.size_bytes).max(l1);
        let l2 = m
            .cache(2)
            .map_or(FALLBACK_L2_BYTES.max(l1 * 8).min(llc), |c| c.size_bytes);
        Self {
            l1,
            l2,
            llc,
            page: m.page_bytes,
        }
    }
}

/// Working-set sizes of the sweep: powers of two and 1.5 × powers of two
/// from 4 KiB to `max` (full), or one size per level (quick).
pub fn sweep_sizes(geometry: &Geometry, max: u64, quick: bool) -> Vec<u64> {
    if quick {
        let mut sizes = vec![geometry.l1 / 2, geometry.l2 / 2, geometry.llc / 2, max];
        sizes.retain(|&s| s >= 4096);
        sizes.sort_unstable();
        sizes.dedup();
        return sizes;
    }
    let mut sizes = Vec::new();
    let mut size = 4096u64;
    while size <= max {
        sizes.push(size);
        if size + size / 2 <= max {
            sizes.push(size + size / 2);
        }
        size *= 2;
    }
    if sizes.last() != Some(&max) {
        sizes.push(max);
    }
    sizes
}

/// Why no huge-page chase can run here, before trying (`None`: try).
fn thp_unavailable(header: &RunHeader) -> Option<String> {
    match header.machine.thp.as_deref() {
        None => Some("THP unavailable: the kernel has no transparent huge pages".into()),
        Some("never") => Some(
            "THP unavailable: transparent huge pages are disabled \
             (/sys/kernel/mm/transparent_hugepage/enabled is `never`)"
                .into(),
        ),
        Some(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn geometry() -> Geometry {
        Geometry {
            l1: 32 << 10,
            l2: 1 << 20,
            llc: 32 << 20,
            page: 4096,
        }
    }

    #[test]
    fn full_sweep_is_increasing_and_ends_at_max() {
        let sizes = sweep_sizes(&geometry(), 128 << 20, false);
        assert_eq!(sizes[0], 4096);
        assert_eq!(sizes[1], 6144);
        assert_eq!(*sizes.last().unwrap(), 128 << 20);
        assert!(sizes.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn quick_sweep_has_one_size_per_level() {
        let sizes = sweep_sizes(&geometry(), 128 << 20, true);
        assert_eq!(sizes, vec![16 << 10, 512 << 10, 16 << 20, 128 << 20]);
    }
}
