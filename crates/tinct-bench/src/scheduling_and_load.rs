//! The conditions a measurement ran under: the measuring threads' scheduling
//! policy and how busy the machine was.
//!
//! On a shared machine, other processes take the CPUs away from the
//! measuring threads; parallel versions then do not run in parallel and a
//! job's wall time includes time it spent waiting. Two remedies, both
//! recorded in the output: `--fifo PRIORITY` runs the measuring threads
//! under SCHED_FIFO (as kim2013 ran its tasks), and the 1-minute load
//! average is read before and after the run so a reader sees when the
//! machine was oversubscribed.

use crate::{Error, Result};
use serde::{Deserialize, Serialize};
use tinct_sys::SysRoot;

/// Scheduling and load during a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunConditions {
    /// SCHED_FIFO priority of the measuring threads (`null`: SCHED_OTHER).
    pub fifo_priority: Option<u8>,
    /// 1-minute load average when the run started.
    pub load_average_start: Option<f64>,
    /// 1-minute load average when the run ended.
    pub load_average_end: Option<f64>,
}

impl RunConditions {
    /// Records the start of a run measured with `fifo_priority`
    /// (checked to be 1..=99).
    pub fn start(fifo_priority: Option<u8>) -> Result<Self> {
        if let Some(priority) = fifo_priority.filter(|p| !(1..=99).contains(p)) {
            return Err(Error::option(
                "--fifo",
                "a SCHED_FIFO priority in 1..=99",
                priority.to_string(),
            ));
        }
        Ok(Self {
            fifo_priority,
            load_average_start: load_average(&SysRoot::live()),
            load_average_end: None,
        })
    }

    /// Records the end of the run.
    pub fn finish(&mut self) {
        self.load_average_end = load_average(&SysRoot::live());
    }

    /// Puts the calling thread under the run's policy (no-op for SCHED_OTHER).
    pub fn apply_to_current_thread(&self) -> Result<()> {
        match self.fifo_priority {
            Some(priority) => tinct_sys::sched::set_fifo(priority).map_err(Error::from),
            None => Ok(()),
        }
    }

    /// Caveats for a machine with `cpus` online CPUs.
    pub fn notes(&self, cpus: usize) -> Vec<String> {
        let mut notes = self.load_notes(cpus);
        if self.fifo_priority.is_some() {
            let throttling = tinct_sys::system::RtThrottling::read(&SysRoot::live()).ok();
            notes.extend(throttling.and_then(throttling_note));
        }
        notes
    }

    fn load_notes(&self, cpus: usize) -> Vec<String> {
        let busiest = [self.load_average_start, self.load_average_end]
            .into_iter()
            .flatten()
            .fold(0.0, f64::max);
        if busiest >= cpus as f64 {
            let advice = if self.fifo_priority.is_some() {
                "the SCHED_FIFO measuring threads still compete with interrupts and other \
                 real-time threads"
            } else {
                "other processes took CPU time from the measuring threads; rerun on a quiet \
                 machine or with --fifo PRIORITY"
            };
            vec![format!(
                "busy machine: 1-minute load average up to {busiest:.1} on {cpus} CPUs; {advice}"
            )]
        } else {
            Vec::new()
        }
    }
}

/// The caveat for SCHED_FIFO measurements under RT throttling, if it is on.
fn throttling_note(throttling: tinct_sys::system::RtThrottling) -> Option<String> {
    (throttling.throttled_us() > 0).then(|| {
        format!(
            "RT throttling is on ({} of every {} us): SCHED_FIFO threads that run longer are \
             paused for {} us, so wall-clock maxima can include such a pause (CPU times do not)",
            throttling.runtime_us,
            throttling.period_us,
            throttling.throttled_us()
        )
    })
}

/// The 1-minute load average from `/proc/loadavg`, if readable.
pub fn load_average(root: &SysRoot) -> Option<f64> {
    root.read("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// CPU time consumed by the calling thread so far, in ns.
pub fn thread_cpu_time_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    (t.tv_sec as u64).saturating_mul(1_000_000_000) + t.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_machine_gets_a_note_and_a_quiet_one_none() {
        let mut c = RunConditions::start(None).unwrap();
        c.load_average_start = Some(3.5);
        c.load_average_end = Some(1.0);
        let notes = c.notes(2);
        assert_eq!(notes.len(), 1);
        assert!(
            notes[0].contains("3.5") && notes[0].contains("--fifo"),
            "{notes:?}"
        );
        c.load_average_start = Some(0.2);
        assert!(c.notes(2).is_empty());
    }

    #[test]
    fn throttling_is_noted_only_when_on() {
        let on = tinct_sys::system::RtThrottling {
            runtime_us: 950_000,
            period_us: 1_000_000,
        };
        assert!(throttling_note(on).unwrap().contains("50000 us"));
        let off = tinct_sys::system::RtThrottling {
            runtime_us: -1,
            period_us: 1_000_000,
        };
        assert_eq!(throttling_note(off), None);
    }

    #[test]
    fn priorities_outside_fifo_range_are_input_errors() {
        assert!(matches!(
            RunConditions::start(Some(0)),
            Err(Error::Input(_))
        ));
        assert!(matches!(
            RunConditions::start(Some(100)),
            Err(Error::Input(_))
        ));
        assert!(RunConditions::start(Some(99)).is_ok());
    }

    #[test]
    fn load_average_is_read_live_and_cpu_time_advances() {
        assert!(load_average(&SysRoot::live()).is_some_and(|l| l >= 0.0));
        let before = thread_cpu_time_ns();
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = std::hint::black_box(x.wrapping_add(i));
        }
        assert!(thread_cpu_time_ns() > before, "{x}");
    }
}
