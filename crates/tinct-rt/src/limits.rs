//! The named limits of a run, checked before anything starts.
//!
//! A run spec whose numbers the runtime cannot represent exactly, or whose
//! size would exhaust the machine before the first release, is bad input:
//! [`RunSpec::check_limits`] refuses it with the file, the task and the
//! field, what was allowed and what was found. Inside the limits every
//! instant of a run (`t0 + offset + k·T + D`, with `t0` a CLOCK_MONOTONIC
//! reading, far below 2^63 ns) fits in a `u64` with room to spare, so the
//! runtime's additions cannot wrap.
//!
//! Every limit's value and wording has one home, tinct-core's `limits`
//! ([`Limit::expected`]): those a task-set file can break (threads, a
//! body's target and working set, an edge's buffer) are checked where the
//! file is validated, with its line, so `analyze`, `plan` and `run` refuse
//! the same files alike; the checks here guard the specs built without a
//! file (rt-app, benches, tests) and the run's own parameters (duration,
//! periods, job logs), in the same words.

use crate::kernels::LINE_BYTES;
use crate::shared_log::RECORD_WORDS;
use crate::spec::{Phase, RunSpec, Step, TaskSpec};
use crate::{Result, RtError};
use tinct_base::InputError;
use tinct_core::limits::Limit;
use tinct_core::model::Work;
use tinct_core::units::{Bytes, Nanos};

/// The longest time a run spec may name: a run's duration, a period, a
/// deadline, an offset, a busy or sleep step, a calibrated target (366 days).
pub use tinct_core::limits::MAX_RUN_TIME_NS as MAX_TIME_NS;

/// Parses a run's duration ("10s", "500ms"): above zero and at most
/// [`MAX_TIME_NS`]; the message says which (a clap value parser).
pub fn parse_run_duration(text: &str) -> std::result::Result<Nanos, String> {
    match tinct_core::units::parse_duration(text) {
        Ok(d) if d.0 == 0 || d.0 > MAX_TIME_NS => Err(format!(
            "expected {}, found {d}",
            Limit::RunDuration.expected()
        )),
        Ok(d) => Ok(d),
        Err(e) => Err(e.to_string()),
    }
}

/// Parses the watchdog's factor: a finite number ≥ 1 (a job may run until
/// factor × its deadline).
pub fn parse_watchdog_factor(text: &str) -> std::result::Result<f64, String> {
    match text.parse::<f64>() {
        Ok(f) if f.is_finite() && f >= 1.0 => Ok(f),
        _ => Err(format!(
            "expected a number ≥ 1 (a job may run until factor × its deadline), found {text:?}"
        )),
    }
}

/// The most threads one run may start (tasks, rt-app instances included).
/// A task-set file may have more (tinct-core's `format::MAX_TASKS`, for
/// analysis): `tinct run` refuses it, naming the file and `tasks`.
pub use tinct_core::limits::MAX_RUN_THREADS as MAX_TASKS;

/// The smallest working set of a memory kernel (chase, read, write, rmw,
/// mixed): one cache line, since one memory iteration touches one line.
pub use tinct_core::limits::MIN_WORKING_SET_BYTES;
const _: () = assert!(MIN_WORKING_SET_BYTES == LINE_BYTES as u64);

/// The most memory the run's job logs may take together (they are mapped
/// and locked before the release): 1 GiB.
pub const MAX_LOG_BYTES: u64 = 1 << 30;

/// The most jobs one task's log holds; a task that would release more
/// stops the run cleanly ([`crate::watchdog::StopReason::LogFull`]).
pub const MAX_JOBS_PER_TASK: u64 = 2_000_000;

/// The most bytes one `mem` or `iorun` event may write (1 TiB).
pub const MAX_EVENT_BYTES: u64 = 1 << 40;

/// The largest packet of a one-packet buffer (a task set's `[[edge]]`
/// `buffer`): 64 MiB, allocated before the release.
pub use tinct_core::limits::MAX_BUFFER_BYTES as MAX_PACKET_BYTES;

/// A job without a timer or known step time is assumed to take at least
/// this long when its log is sized.
pub const MIN_JOB_NS: u64 = 50_000;

impl RunSpec {
    /// Jobs each task's log must hold: every release the run can make
    /// ([`TaskSpec::max_jobs`]), at most [`MAX_JOBS_PER_TASK`]. A task
    /// released only by its inputs (every phase data-triggered) takes one
    /// packet per job from each input, so it releases at most as many jobs
    /// as the producer of any of its inputs (plus one per phase).
    pub fn log_capacities(&self) -> Vec<usize> {
        let mut jobs: Vec<u64> = self
            .tasks
            .iter()
            .map(|task| {
                task.max_jobs(self.duration_ns, MIN_JOB_NS)
                    .min(MAX_JOBS_PER_TASK)
            })
            .collect();
        let producer_of = |channel: usize| {
            self.tasks.iter().position(|t| {
                t.phases
                    .iter()
                    .flat_map(|p| &p.steps)
                    .any(|s| *s == Step::Send { channel })
            })
        };
        // Producers may be data-triggered too: one pass per task reaches
        // the end of any chain.
        for _ in 0..self.tasks.len() {
            for (i, task) in self.tasks.iter().enumerate() {
                if task.phases.is_empty() || task.phases.iter().any(|p| p.inputs().next().is_none())
                {
                    continue;
                }
                let by_inputs = task
                    .phases
                    .iter()
                    .flat_map(|p| p.inputs())
                    .filter_map(producer_of)
                    .map(|producer| jobs[producer])
                    .min();
                if let Some(bound) = by_inputs {
                    let margin = task.phases.len() as u64;
                    jobs[i] = jobs[i].min(bound.saturating_add(margin));
                }
            }
        }
        // At most MAX_JOBS_PER_TASK, which fits any usize.
        jobs.into_iter()
            .map(|j| usize::try_from(j).unwrap_or(usize::MAX))
            .collect()
    }

    /// Checks every limit of this module; the first one broken is bad
    /// input naming the file, the task (and its line when known) and the field.
    pub fn check_limits(&self) -> Result<()> {
        let error = |line: Option<usize>, field: String, expected: String, found: String| {
            RtError::Input(InputError {
                file: self.source.clone(),
                line,
                field,
                expected,
                found,
            })
        };
        if self.tasks.is_empty() || self.tasks.len() > MAX_TASKS {
            return Err(error(
                None,
                "tasks".into(),
                Limit::RunThreads.expected(),
                format!("{} tasks", self.tasks.len()),
            ));
        }
        if self.duration_ns == 0 || self.duration_ns > MAX_TIME_NS {
            return Err(error(
                None,
                "duration".into(),
                Limit::RunDuration.expected(),
                Nanos(self.duration_ns).to_string(),
            ));
        }
        for task in &self.tasks {
            if let Some((field, expected, found)) = task_limit_broken(task) {
                return Err(error(
                    task.line,
                    format!("task '{}' {field}", task.name),
                    expected,
                    found,
                ));
            }
        }
        if let Some(channel) = self
            .resources
            .channels
            .iter()
            .find(|c| c.bytes > MAX_PACKET_BYTES)
        {
            return Err(error(
                None,
                format!("edge {} buffer", channel.name),
                Limit::Buffer.expected(),
                Bytes(channel.bytes).to_string(),
            ));
        }
        let records: u64 = self.log_capacities().iter().map(|&c| c as u64).sum();
        let log_bytes = records.saturating_mul((RECORD_WORDS * 8) as u64);
        if log_bytes > MAX_LOG_BYTES {
            return Err(error(
                None,
                "duration".into(),
                format!(
                    "job logs of at most {} (the limit of memory locked for the logs): \
                     a shorter duration, fewer tasks, or timers that release less often",
                    Bytes(MAX_LOG_BYTES)
                ),
                format!("logs of {} for {records} jobs", Bytes(log_bytes)),
            ));
        }
        Ok(())
    }
}

/// The first limit `task` breaks: (field, expected, found).
fn task_limit_broken(task: &TaskSpec) -> Option<(String, String, String)> {
    let too_long = |field: &str, ns: u64| {
        (ns > MAX_TIME_NS).then(|| {
            (
                field.to_string(),
                Limit::RunTime.expected(),
                Nanos(ns).to_string(),
            )
        })
    };
    if let Some(broken) = too_long("offset", task.offset_ns) {
        return Some(broken);
    }
    if let Some(broken) = too_long("jitter", task.jitter_ns) {
        return Some(broken);
    }
    if let Some(broken) = task.deadline_ns.and_then(|d| too_long("deadline", d)) {
        return Some(broken);
    }
    if task.deadline_ns == Some(0) {
        return Some((
            "deadline".into(),
            "a deadline longer than 0".into(),
            "0".into(),
        ));
    }
    for phase in &task.phases {
        if let Some(broken) = phase_limit_broken(task, phase, &too_long) {
            return Some(broken);
        }
    }
    None
}

type TooLong<'a> = dyn Fn(&str, u64) -> Option<(String, String, String)> + 'a;

fn phase_limit_broken(
    task: &TaskSpec,
    phase: &Phase,
    too_long: &TooLong<'_>,
) -> Option<(String, String, String)> {
    for period_ns in phase.steps.iter().filter_map(Step::timer_period) {
        if period_ns == 0 {
            return Some((
                format!("phase '{}' timer period", phase.name),
                Limit::PeriodAboveZero.expected(),
                "0".into(),
            ));
        }
        if let Some(broken) = too_long(&format!("phase '{}' period", phase.name), period_ns) {
            return Some(broken);
        }
    }
    for step in &phase.steps {
        let broken = match step {
            Step::Busy { duration_ns } => {
                too_long(&format!("phase '{}' runtime", phase.name), *duration_ns)
            }
            Step::Sleep { duration_ns } => {
                too_long(&format!("phase '{}' sleep", phase.name), *duration_ns)
            }
            Step::Mem { bytes } | Step::IoRun { bytes } if *bytes > MAX_EVENT_BYTES => Some((
                format!("phase '{}' mem/iorun", phase.name),
                format!("at most {} per event", Bytes(MAX_EVENT_BYTES)),
                Bytes(*bytes).to_string(),
            )),
            Step::Kernel { kernel, work, .. } => {
                let target = match work {
                    Work::Target(t) => too_long(&format!("phase '{}' target", phase.name), t.0),
                    Work::Iterations(_) => None,
                };
                target.or_else(|| {
                    (*kernel != tinct_core::model::Kernel::Compute
                        && task.working_set < MIN_WORKING_SET_BYTES)
                        .then(|| {
                            (
                                "working set".into(),
                                Limit::WorkingSet(*kernel).expected(),
                                Bytes(task.working_set).to_string(),
                            )
                        })
                })
            }
            _ => None,
        };
        if broken.is_some() {
            return broken;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{TaskBuilder, run_spec};
    use tinct_core::model::Kernel;

    #[test]
    fn a_run_duration_is_above_zero_and_within_the_limit() {
        assert_eq!(parse_run_duration("500ms"), Ok(Nanos(500_000_000)));
        assert!(
            parse_run_duration("0s")
                .unwrap_err()
                .contains("longer than 0")
        );
        assert!(
            parse_run_duration("40000000s")
                .unwrap_err()
                .contains("at most")
        );
        assert!(parse_run_duration("soon").is_err());
    }

    #[test]
    fn a_watchdog_factor_is_a_finite_number_of_at_least_one() {
        assert_eq!(parse_watchdog_factor("2.5"), Ok(2.5));
        for bad in ["0.5", "inf", "NaN", "x"] {
            assert!(parse_watchdog_factor(bad).is_err(), "{bad}");
        }
        assert_eq!("rt".parse(), Ok(crate::spec::WatchdogMode::Realtime));
        assert!("sometimes".parse::<crate::spec::WatchdogMode>().is_err());
    }

    /// A chase kernel with no working set at all.
    fn chase_in_no_memory() -> TaskSpec {
        TaskBuilder::periodic("c", 1_000_000)
            .kernel(Kernel::Chase, Work::Target(Nanos(100_000)))
            .working_set(0)
            .build()
    }

    /// One more task than a run may start.
    fn one_task_too_many() -> Vec<TaskSpec> {
        (0..=MAX_TASKS)
            .map(|i| TaskBuilder::periodic(&format!("t{i}"), 1_000_000).build())
            .collect()
    }

    fn refused(spec: &RunSpec) -> String {
        match spec.check_limits() {
            Err(e) => e.to_string(),
            Ok(()) => panic!("accepted: {spec:?}"),
        }
    }

    #[test]
    fn a_spec_inside_the_limits_passes() {
        let spec = run_spec(
            vec![TaskBuilder::periodic("a", 10_000_000).build()],
            1_000_000_000,
        );
        spec.check_limits().unwrap();
    }

    #[test]
    fn times_beyond_the_limit_are_refused_by_field() {
        let mut long_period = TaskBuilder::periodic("p", MAX_TIME_NS + 1).build();
        long_period.line = Some(12);
        let e = refused(&run_spec(vec![long_period], 1_000_000_000));
        assert!(
            e.contains("test:12") && e.contains("task 'p' phase 'main' period"),
            "{e}"
        );
        let deadline = TaskBuilder::periodic("d", 1_000_000)
            .deadline(u64::MAX)
            .build();
        assert!(refused(&run_spec(vec![deadline], 1_000_000)).contains("deadline"));
        let jitter = TaskBuilder::periodic("j", 1_000_000)
            .jitter(u64::MAX)
            .build();
        assert!(refused(&run_spec(vec![jitter], 1_000_000)).contains("task 'j' jitter"));
        let e = refused(&run_spec(
            vec![TaskBuilder::periodic("a", 1_000_000).build()],
            MAX_TIME_NS + 1,
        ));
        assert!(e.contains("duration"), "{e}");
    }

    #[test]
    fn too_many_tasks_or_too_large_logs_are_refused_with_the_limit() {
        let many = one_task_too_many();
        let e = refused(&run_spec(many, 1_000_000_000));
        assert!(e.contains("1024") && e.contains("1025 tasks"), "{e}");
        // 1000 tasks releasing a job every 10 µs for a day.
        let busy = (0..1000)
            .map(|i| TaskBuilder::periodic(&format!("t{i}"), 10_000).build())
            .collect();
        let e = refused(&run_spec(busy, 86_400_000_000_000));
        assert!(e.contains("job logs of at most 1GiB"), "{e}");
    }

    /// The words of each refusal are tinct-core's, as where a file is
    /// validated: a user reads the same sentence whichever path refused.
    #[test]
    fn refusals_state_the_limits_in_tinct_cores_words() {
        let tiny = chase_in_no_memory();
        let long_target = TaskBuilder::periodic("t", 1_000_000)
            .kernel(Kernel::Compute, Work::Target(Nanos(MAX_TIME_NS + 1)))
            .build();
        let many = one_task_too_many();
        let mut big_packet = run_spec(
            vec![TaskBuilder::periodic("p", 1_000_000).build()],
            1_000_000_000,
        );
        big_packet
            .resources
            .channels
            .push(crate::spec::ChannelSpec {
                name: "p→c".into(),
                bytes: MAX_PACKET_BYTES + 1,
                blocking: false,
            });
        for (spec, limit) in [
            (
                run_spec(vec![tiny], 1_000_000_000),
                Limit::WorkingSet(Kernel::Chase),
            ),
            (run_spec(vec![long_target], 1_000_000_000), Limit::RunTime),
            (run_spec(many, 1_000_000_000), Limit::RunThreads),
            (big_packet, Limit::Buffer),
        ] {
            let e = refused(&spec);
            assert!(e.contains(&limit.expected()), "{limit:?}: {e}");
        }
        for text in ["0s", "40000000s"] {
            let e = parse_run_duration(text).unwrap_err();
            assert!(e.contains(&Limit::RunDuration.expected()), "{e}");
        }
    }

    #[test]
    fn a_memory_kernel_needs_a_whole_cache_line() {
        let tiny = chase_in_no_memory();
        let e = refused(&run_spec(vec![tiny], 1_000_000_000));
        assert!(
            e.contains("at least 64B for the chase kernel") && e.contains("found 0B"),
            "{e}"
        );
        let line = TaskBuilder::periodic("c", 1_000_000)
            .kernel(Kernel::Chase, Work::Target(Nanos(100_000)))
            .working_set(64)
            .build();
        run_spec(vec![line], 1_000_000_000).check_limits().unwrap();
    }
}
