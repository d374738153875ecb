//! Calibration: how many kernel iterations make a job of a target
//! execution time on this machine.
//!
//! The cost of one iteration is measured on the task's own thread, pinned
//! to its CPU, over its own working set, as thread CPU time: the amount is
//! doubled until one trial takes at least [`TRIAL_NS`], then
//! [`TRIALS`] trials are timed and the median cost per iteration is kept.
//! The compute rate touches no memory: a run measures it once per CPU set
//! ([`SharedComputeRates`]). A job calibrated this way takes the target
//! time when it runs alone;
//! interference makes it longer, which is what a run measures.

use crate::clock::thread_cpu_ns;
use crate::kernels::{JobWork, Kernel, KernelState};
// Where the bench and older callers look for it; it belongs to the kernels.
pub use crate::kernels::{DEFAULT_MEMORY_PERCENT, memory_percent};
use serde::Serialize;
use tinct_core::model::Work;

/// Minimum CPU time of one timed trial.
pub const TRIAL_NS: u64 = 2_000_000;
/// Timed trials per measurement.
pub const TRIALS: usize = 5;

/// Measured cost of one iteration, in nanoseconds.
#[derive(Copy, Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct Rates {
    /// One memory-kernel iteration (one cache line).
    pub memory_ns: f64,
    /// One compute iteration.
    pub compute_ns: f64,
}

/// Measures [`Rates`] on the calling thread with the task's working set.
pub fn measure(state: &mut KernelState) -> Rates {
    Rates {
        memory_ns: memory_rate(state),
        compute_ns: compute_rate(state),
    }
}

/// The memory part of [`measure`]: ns per memory iteration over the
/// task's working set (0 without one, or for the compute kernel).
pub fn memory_rate(state: &mut KernelState) -> f64 {
    if state.lines() > 0 && state.kernel() != Kernel::Compute {
        per_iteration(|n| state.memory_steps(n))
    } else {
        0.0
    }
}

/// The compute part of [`measure`]: ns per compute iteration (no memory:
/// the same for every thread on the same CPUs).
pub fn compute_rate(state: &mut KernelState) -> f64 {
    per_iteration(|n| state.compute_steps(n))
}

/// The compute rate of a run, measured once per CPU set (a thread's
/// pinning, `None` unpinned) and shared by every thread set alike: it
/// touches no memory, so each thread measuring its own (about 15 ms of CPU
/// each) only made the start of a run of many threads long (500 rt-app
/// instances: seconds) without telling anything new.
#[derive(Debug, Default)]
pub struct SharedComputeRates {
    measured: std::sync::Mutex<Vec<(Option<Vec<u32>>, f64)>>,
}

impl SharedComputeRates {
    /// The rate of threads pinned to `cpus`: the one measured already, or
    /// `measure`'s (run on the calling thread; the threads asking at the
    /// same time wait for it, rather than disturb it).
    pub fn get_or_measure(&self, cpus: Option<&[u32]>, measure: impl FnOnce() -> f64) -> f64 {
        let mut measured = self
            .measured
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((_, ns)) = measured.iter().find(|(c, _)| c.as_deref() == cpus) {
            return *ns;
        }
        let ns = measure();
        measured.push((cpus.map(<[u32]>::to_vec), ns));
        ns
    }
}

fn per_iteration(mut step: impl FnMut(u64)) -> f64 {
    let mut n = 1024u64;
    loop {
        let t0 = thread_cpu_ns();
        step(n);
        if thread_cpu_ns() - t0 >= TRIAL_NS || n >= 1 << 40 {
            break;
        }
        n *= 2;
    }
    let mut costs: Vec<f64> = (0..TRIALS)
        .map(|_| {
            let t0 = thread_cpu_ns();
            step(n);
            (thread_cpu_ns() - t0) as f64 / n as f64
        })
        .collect();
    costs.sort_by(f64::total_cmp);
    costs[TRIALS / 2].max(1e-3)
}

/// The iterations of one job: a fixed count is split by `percent` as it is;
/// a target time is split by `percent` and divided by the measured rates.
pub fn job_work(work: Work, percent: u8, rates: Option<&Rates>) -> JobWork {
    let percent = u64::from(percent.min(100));
    match (work, rates) {
        (Work::Iterations(n), _) => {
            // Exact in u128: n · percent overflows u64 for large n.
            let memory = u64::try_from(u128::from(n) * u128::from(percent) / 100).unwrap_or(n);
            JobWork {
                memory,
                compute: n - memory, // memory ≤ n since percent ≤ 100
            }
        }
        (Work::Target(target), Some(rates)) => {
            let memory_time = target.0 as f64 * percent as f64 / 100.0;
            let compute_time = target.0 as f64 - memory_time;
            JobWork {
                memory: if rates.memory_ns > 0.0 {
                    (memory_time / rates.memory_ns).round() as u64
                } else {
                    0
                },
                compute: (compute_time / rates.compute_ns).round() as u64,
            }
        }
        (Work::Target(_), None) => JobWork::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tinct_core::units::Nanos;

    #[test]
    fn fixed_work_is_split_by_the_memory_share() {
        assert_eq!(
            job_work(Work::Iterations(1000), 30, None),
            JobWork {
                memory: 300,
                compute: 700
            }
        );
        assert_eq!(
            job_work(Work::Iterations(u64::MAX), 50, None),
            JobWork {
                memory: u64::MAX / 2,
                compute: u64::MAX - u64::MAX / 2
            },
            "exact for any count, no overflow"
        );
        assert_eq!(
            job_work(Work::Iterations(7), 100, None),
            JobWork {
                memory: 7,
                compute: 0
            }
        );
    }

    #[test]
    fn a_target_time_is_divided_by_the_rates() {
        let rates = Rates {
            memory_ns: 2.0,
            compute_ns: 0.5,
        };
        let w = job_work(Work::Target(Nanos(1_000_000)), 50, Some(&rates));
        assert_eq!(
            w,
            JobWork {
                memory: 250_000,
                compute: 1_000_000
            }
        );
    }

    #[test]
    fn a_calibrated_compute_job_takes_about_its_target() {
        let mut state =
            KernelState::new(Kernel::Compute, crate::working_set::WorkingSet::empty(), 1);
        let rates = measure(&mut state);
        assert!(rates.compute_ns > 0.0);
        let work = job_work(Work::Target(Nanos(5_000_000)), 0, Some(&rates));
        assert!(work.compute > 0 && work.memory == 0);
        // Not a timing assertion: the count must be consistent with the rate.
        let implied = work.compute as f64 * rates.compute_ns;
        assert!((implied - 5e6).abs() / 5e6 < 0.01, "{implied}");
    }
}
