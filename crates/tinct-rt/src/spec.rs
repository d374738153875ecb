//! What a run executes, independent of where it was described (a planned
//! task-set file or an rt-app workload file).
//!
//! A task runs its [`Phase`]s in order (the whole sequence `loops` times, or
//! until the run ends). A phase runs its job `loops` times; a *job* is one
//! pass over the phase's [`Step`]s. With a [`Timer`], jobs are released
//! periodically: `absolute` timers release job k at `phase start + k·T`
//! (no drift; a late job does not shift later releases), `relative` timers
//! at `previous release + T`, restarting from the end of a job that missed
//! its tick (rt-app's two timer modes). Without a timer a job is released when
//! the previous one ends.

use serde::Serialize;
use tinct_core::model::{Kernel, TaskSet, Work};

/// The SCHED_FIFO priority of the watchdog: above every task.
pub const WATCHDOG_PRIORITY: u8 = 99;
/// The SCHED_FIFO priority of rank 1 (the highest task priority of a plan).
pub const TOP_TASK_PRIORITY: u8 = 90;

/// Scheduling policy of one task.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(tag = "policy", content = "priority", rename_all = "snake_case")]
pub enum Policy {
    /// SCHED_FIFO with a priority 1..=98 (99 is the watchdog's).
    Fifo(u8),
    /// SCHED_OTHER (no real-time guarantee).
    Other,
}

/// Periodic releases.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Timer {
    /// Period in nanoseconds.
    pub period_ns: u64,
    /// Absolute (`start + k·T`) or relative (`previous release + T`, restarted after a miss).
    pub absolute: bool,
}

/// One step of a job.
#[derive(Copy, Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum Step {
    /// Run a kernel over the task's working set.
    Kernel {
        /// The kernel.
        kernel: Kernel,
        /// Memory share of the job's time for `mixed` (percent).
        memory_percent: u8,
        /// Fixed iterations or a calibrated target time.
        work: Work,
    },
    /// Spin until this much wall-clock time has passed (rt-app `runtime`).
    Busy {
        /// Nanoseconds of wall-clock time.
        duration_ns: u64,
    },
    /// Sleep this long (rt-app `sleep`).
    Sleep {
        /// Nanoseconds.
        duration_ns: u64,
    },
}

/// A sequence of jobs with the same steps.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Phase {
    /// Name (rt-app phase name, or "main").
    pub name: String,
    /// Jobs in the phase; `None` repeats until the run ends.
    pub loops: Option<u64>,
    /// The steps of one job.
    pub steps: Vec<Step>,
    /// Periodic releases, if any.
    pub timer: Option<Timer>,
}

/// The analysis' prediction for a task, shown next to what was observed.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Bound {
    /// C at the task's partitions.
    pub wcet_ns: u64,
    /// WCRT with cache interference (kim2013 Eq. 2), if it converged within D.
    pub wcrt_ns: Option<u64>,
    /// WCRT without cache interference (classic RTA), if within D.
    pub wcrt_nocint_ns: Option<u64>,
}

/// One periodic thread.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TaskSpec {
    /// Unique name.
    pub name: String,
    /// CPUs the thread is pinned to (`None`: not pinned).
    pub cpus: Option<Vec<u32>>,
    /// Policy and priority.
    pub policy: Policy,
    /// Relative deadline of each job (`None`: the timer period, or no deadline).
    pub deadline_ns: Option<u64>,
    /// First release after the common release instant (0 for plans, which
    /// release every task together as kim2013 Section IV does).
    pub offset_ns: u64,
    /// The phases, run in order.
    pub phases: Vec<Phase>,
    /// Passes over the phase sequence; `None` repeats until the run ends.
    pub loops: Option<u64>,
    /// Bytes of memory the kernels touch.
    pub working_set: u64,
    /// Cache partitions S(i) the working set should come from (1-based).
    pub partitions: Vec<u32>,
    /// The analysis' bound, when the spec came from an analysed task set.
    pub bound: Option<Bound>,
}

impl TaskSpec {
    /// Relative deadline of jobs of `phase`: the task's, else the timer period.
    pub fn deadline_of(&self, phase: &Phase) -> Option<u64> {
        self.deadline_ns.or(phase.timer.map(|t| t.period_ns))
    }

    /// The kernel of the first kernel step (what the working set is prepared for).
    pub fn kernel(&self) -> Option<Kernel> {
        self.phases
            .iter()
            .flat_map(|p| &p.steps)
            .find_map(|s| match s {
                Step::Kernel { kernel, .. } => Some(*kernel),
                _ => None,
            })
    }

    /// An upper estimate of the jobs the task can release in `duration_ns`,
    /// used to size its log (each job takes at least `min_job_ns`).
    pub fn max_jobs(&self, duration_ns: u64, min_job_ns: u64) -> u64 {
        let mut total = 0u64;
        for phase in &self.phases {
            let step_time: u64 = phase
                .steps
                .iter()
                .map(|s| match s {
                    Step::Busy { duration_ns } | Step::Sleep { duration_ns } => *duration_ns,
                    Step::Kernel { .. } => 0,
                })
                .sum();
            let per_job = phase
                .timer
                .map_or(0, |t| t.period_ns)
                .max(step_time)
                .max(min_job_ns)
                .max(1);
            // A relative timer restarts a late job at once, so count one
            // extra release per period as a margin.
            let by_time = 2 * (duration_ns / per_job) + 2;
            let by_loops = match (phase.loops, self.loops) {
                (Some(jobs), Some(passes)) => Some(jobs.saturating_mul(passes)),
                _ => None,
            };
            total = total.saturating_add(by_loops.map_or(by_time, |l| l.min(by_time)));
        }
        total.saturating_add(self.phases.len() as u64)
    }
}

/// Global settings of a run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunSpec {
    /// Where it came from (file name).
    pub source: String,
    /// The threads.
    pub tasks: Vec<TaskSpec>,
    /// Run length: no job is released at or after `start + duration`.
    pub duration_ns: u64,
    /// `mlockall` the process.
    pub lock_memory: bool,
    /// N_P of the platform, when known (partitions → page colors).
    pub platform_partitions: Option<u32>,
    /// CPU to calibrate on for rt-app `calibration = "CPUn"`; `None`: each
    /// task calibrates on its own CPU.
    pub calibration_cpu: Option<u32>,
    /// Fixed nanoseconds per compute iteration (rt-app integer `calibration`).
    pub compute_ns_per_iteration: Option<f64>,
}

impl RunSpec {
    /// Builds the spec of a planned task set: one periodic thread per task,
    /// pinned to its core, SCHED_FIFO by rank (rank 1 →
    /// [`TOP_TASK_PRIORITY`], then one less per rank, at least 1), released
    /// with an absolute timer of period T_i and deadline D_i. A task without
    /// a `body` runs `compute` calibrated to its C at |S(i)|. `bounds` come
    /// from the analysis, in file order.
    pub fn from_task_set(
        set: &TaskSet,
        source: &str,
        duration_ns: u64,
        bounds: Option<Vec<Bound>>,
    ) -> RunSpec {
        let ranks = set.ranks();
        let tasks = set
            .tasks
            .iter()
            .enumerate()
            .map(|(i, task)| {
                let c = task.effective_wcet().unwrap_or(task.wcet.worst());
                let (kernel, working_set, work, percent) = match &task.body {
                    Some(body) => (
                        body.kernel,
                        body.working_set.unwrap_or(task.memory).0,
                        body.work.unwrap_or(Work::Target(c)),
                        crate::calibrate::memory_percent(body.kernel, body.memory_percent),
                    ),
                    None => (Kernel::Compute, 0, Work::Target(c), 0),
                };
                let working_set = if kernel == Kernel::Compute {
                    0
                } else {
                    working_set
                };
                let fifo = u32::from(TOP_TASK_PRIORITY)
                    .saturating_sub(ranks[i].saturating_sub(1))
                    .max(1);
                TaskSpec {
                    name: task.name.clone(),
                    cpus: task.core.map(|c| vec![c]),
                    policy: Policy::Fifo(fifo as u8),
                    deadline_ns: Some(task.deadline.0),
                    offset_ns: 0,
                    phases: vec![Phase {
                        name: "main".into(),
                        loops: None,
                        steps: vec![Step::Kernel {
                            kernel,
                            memory_percent: percent,
                            work,
                        }],
                        timer: Some(Timer {
                            period_ns: task.period.0,
                            absolute: true,
                        }),
                    }],
                    loops: None,
                    working_set,
                    partitions: task.partitions.map(|s| s.to_vec()).unwrap_or_default(),
                    bound: bounds.as_ref().and_then(|b| b.get(i).copied()),
                }
            })
            .collect();
        RunSpec {
            source: source.to_string(),
            tasks,
            duration_ns,
            lock_memory: true,
            platform_partitions: Some(set.platform.partitions),
            calibration_cpu: None,
            compute_ns_per_iteration: None,
        }
    }

    /// The same spec with every task under SCHED_OTHER (`--no-rt`).
    pub fn without_rt(mut self) -> RunSpec {
        for t in &mut self.tasks {
            t.policy = Policy::Other;
        }
        self
    }

    /// True if some task asks for SCHED_FIFO.
    pub fn needs_rt(&self) -> bool {
        self.tasks
            .iter()
            .any(|t| matches!(t.policy, Policy::Fifo(_)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tinct_core::units::Nanos;

    const SET: &str = r#"
[platform]
cores = 2
partitions = 4
memory = "64MiB"
refill = "10us"

[[task]]
name = "fast"
period = "100ms"
memory = "1MiB"
wcet = { 1 = "2ms" }
core = 0
partitions = [1]
body = { kernel = "chase", working_set = "256KiB", target = "1ms" }

[[task]]
name = "slow"
period = "200ms"
deadline = "150ms"
memory = "1MiB"
wcet = { 1 = "3ms" }
core = 1
partitions = [2, 3]
"#;

    #[test]
    fn a_plan_becomes_pinned_fifo_threads_by_rank() {
        let set =
            tinct_core::format::parse(SET, "t.toml", tinct_core::format::Syntax::Toml).unwrap();
        let spec = RunSpec::from_task_set(&set, "t.toml", 1_000_000_000, None);
        let fast = &spec.tasks[0];
        let slow = &spec.tasks[1];
        assert_eq!(fast.policy, Policy::Fifo(TOP_TASK_PRIORITY));
        assert_eq!(slow.policy, Policy::Fifo(TOP_TASK_PRIORITY - 1));
        assert_eq!(fast.cpus, Some(vec![0]));
        assert_eq!(slow.cpus, Some(vec![1]));
        assert_eq!(fast.working_set, 256 * 1024);
        assert_eq!(slow.working_set, 0, "no body: compute needs no working set");
        assert_eq!(slow.partitions, vec![2, 3]);
        assert_eq!(slow.deadline_of(&slow.phases[0]), Some(150_000_000));
        assert_eq!(
            slow.phases[0].steps[0],
            Step::Kernel {
                kernel: Kernel::Compute,
                memory_percent: 0,
                work: Work::Target(Nanos(3_000_000))
            }
        );
        assert!(spec.needs_rt());
        assert!(!spec.without_rt().needs_rt());
    }

    #[test]
    fn log_capacity_covers_every_release_of_the_run() {
        let set =
            tinct_core::format::parse(SET, "t.toml", tinct_core::format::Syntax::Toml).unwrap();
        let spec = RunSpec::from_task_set(&set, "t.toml", 1_000_000_000, None);
        // 1 s at T = 100 ms: releases at 0, 100, ..., 900 ms = 10 jobs.
        assert!(spec.tasks[0].max_jobs(spec.duration_ns, 1) >= 10);
        assert!(spec.tasks[0].max_jobs(spec.duration_ns, 1) <= 30);
    }
}
