//! The analysis of an rt-app file whose threads are SCHED_DEADLINE
//! reservations: when every thread is a periodic reservation pinned to one
//! CPU, the file is the task set of partitioned EDF that `tinct analyze`
//! takes, and its jobs get bounds.
//!
//! The mapping: a thread with `dl-runtime` Q, `dl-deadline` D and
//! `dl-period` T, `cpus` of one CPU and one phase whose events compute and
//! end with a `timer` of period T is a reservation on that core with
//! C = Q (the budget the CBS grants each job: a job within it is what the
//! bound holds for, and one past it is a CBS throttle), deadline D, period
//! T and no cache partitions (rt-app files say nothing of the cache).
//! What the analysis cannot model is said by name, and the run goes
//! without bounds: a thread not under SCHED_DEADLINE, unpinned or pinned
//! to several CPUs (global EDF), with several phases or a phase's own
//! policy, a release period other than its reservation's, release jitter,
//! an event that suspends or synchronises it (`sleep`, `lock`, `wait`,
//! `barrier`, `suspend`, `fork`, …), or a timer shared with other
//! threads.

use crate::spec::{BlockingShows, Bound, Policy, RunSpec, Step, TaskSpec, TimerSpec};
use tinct_core::analysis::{Analysis, analyze};
use tinct_core::model::{Overheads, Platform, Task, TaskPolicy, TaskSet, WcetTable};
use tinct_core::units::{Bytes, Nanos};

/// The file's threads as a task set of reservations and its analysis, or
/// why the file is not one (in words, naming the thread).
pub fn analyze_reservations(spec: &RunSpec) -> Result<(TaskSet, Analysis), String> {
    let mut tasks = Vec::with_capacity(spec.tasks.len());
    let mut cores = 0u32;
    for task in &spec.tasks {
        let (cpu, reservation) = reservation_of(task, &spec.resources.timers)
            .map_err(|why| format!("thread '{}' {why}", task.name))?;
        cores = cores.max(cpu.saturating_add(1));
        tasks.push(reservation);
    }
    if tasks.is_empty() {
        return Err("no thread".into());
    }
    let platform = Platform {
        cores,
        partitions: 1,
        memory: Bytes(1 << 30),
        refill: Nanos::ZERO,
        overheads: Overheads::default(),
        cache_domains: None,
        color_bits: None,
        dram_map: None,
    };
    let set = TaskSet::new(platform, tasks);
    let analysis = analyze(&set).map_err(|e| format!("the analysis refuses it: {e}"))?;
    Ok((set, analysis))
}

/// Task `task` as a reservation on its CPU, or what keeps it from being one.
fn reservation_of(task: &TaskSpec, timers: &[TimerSpec]) -> Result<(u32, Task), String> {
    if task.scheduling.policy != Policy::Deadline {
        return Err(format!(
            "runs under {}, not SCHED_DEADLINE",
            task.scheduling.policy.kernel_name()
        ));
    }
    let Some(params) = task.scheduling.deadline else {
        return Err("has no reservation parameters".into());
    };
    let cpu = match task.cpus.as_deref() {
        Some(&[cpu]) => cpu,
        Some(_) => return Err("is pinned to several CPUs (global EDF is not analysed)".into()),
        None => return Err("is not pinned to one CPU (global EDF is not analysed)".into()),
    };
    if task.forked_by.is_some() || task.program.is_some() {
        return Err("is forked or runs a program".into());
    }
    if task.jitter_ns != 0 {
        return Err("has release jitter".into());
    }
    let [phase] = task.phases.as_slice() else {
        return Err(format!(
            "has {} phases (one periodic phase is analysed)",
            task.phases.len()
        ));
    };
    if phase.scheduling.is_some() || phase.cpus.is_some() {
        return Err(format!(
            "changes its policy or CPUs in phase '{}'",
            phase.name
        ));
    }
    let mut period = None;
    for (k, step) in phase.steps.iter().enumerate() {
        match step {
            Step::Kernel { .. } | Step::Busy { .. } | Step::Mem { .. } => {}
            Step::Timer { timer, period_ns } if k + 1 == phase.steps.len() => {
                // A timer shared by several threads advances once per user:
                // each thread's period is then a multiple of this one.
                if timers.get(*timer).is_some_and(|t| t.users > 1) {
                    return Err(
                        "shares its timer with other threads (give each its own, or \
                         `unique`): its release period is not the timer's"
                            .into(),
                    );
                }
                period = Some(*period_ns);
            }
            other => {
                return Err(format!(
                    "has a `{}` event in phase '{}' (only computing events and a final timer \
                     are analysed)",
                    event_name(other),
                    phase.name
                ));
            }
        }
    }
    match period {
        Some(p) if p == params.period_ns => {}
        Some(p) => {
            return Err(format!(
                "is released every {} by its timer but its reservation's period is {}",
                Nanos(p),
                Nanos(params.period_ns)
            ));
        }
        None => return Err("has no final `timer` (no period to analyse)".into()),
    }
    let reservation = Task {
        deadline: Nanos(params.deadline_ns),
        core: Some(cpu),
        policy: TaskPolicy::Deadline,
        runtime: Some(Nanos(params.runtime_ns)),
        ..Task::periodic(
            task.name.clone(),
            Nanos(params.period_ns),
            Bytes(0),
            WcetTable::constant(Nanos(params.runtime_ns)),
        )
    };
    Ok((cpu, reservation))
}

/// The rt-app event a step comes from, for messages.
fn event_name(step: &Step) -> &'static str {
    match step {
        Step::Sleep { .. } => "sleep",
        Step::Timer { .. } => "timer",
        Step::Lock { .. } | Step::Unlock { .. } => "lock",
        Step::Wait { .. } | Step::SignalWait { .. } => "wait",
        Step::Signal { .. } => "signal",
        Step::Broadcast { .. } => "broad",
        Step::Suspend { .. } => "suspend",
        Step::Resume { .. } => "resume",
        Step::Barrier { .. } => "barrier",
        Step::Yield => "yield",
        Step::Fork { .. } => "fork",
        Step::IoRun { .. } => "iorun",
        Step::Send { .. } | Step::Receive { .. } => "pipeline",
        Step::Program => "program",
        Step::Kernel { .. } | Step::Busy { .. } | Step::Mem { .. } => "run",
    }
}

/// Gives every task of `spec` its bound from `analysis` (of the set
/// [`analyze_reservations`] made of it: the same tasks in the same order).
pub fn attach_bounds(spec: &mut RunSpec, analysis: &Analysis) {
    for (task, report) in spec.tasks.iter_mut().zip(&analysis.tasks) {
        task.bound = Some(Bound {
            wcet_ns: report.wcet_ns,
            wcrt_ns: report.wcrt_ns,
            wcrt_nocint_ns: report.wcrt_nocint_ns,
            blocking_ns: report.blocking_ns,
            blocking_shows: BlockingShows::Nowhere,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn parsed(tasks: &str) -> RunSpec {
        crate::rtapp::parse(
            &format!(r#"{{ "tasks": {{ {tasks} }} }}"#),
            "t.json",
            100 * MS,
        )
        .unwrap()
        .spec
    }

    const PINNED: &str = r#""a": { "policy": "SCHED_DEADLINE", "dl-runtime": 2000,
        "dl-period": 10000, "dl-deadline": 5000, "cpus": [0], "run": 1000,
        "timer": { "ref": "ta", "period": 10000 } },
        "b": { "policy": "SCHED_DEADLINE", "dl-runtime": 4000,
        "dl-period": 20000, "cpus": [1], "run": 3000,
        "timer": { "ref": "tb", "period": 20000 } }"#;

    #[test]
    fn pinned_periodic_reservations_are_analysed_with_their_runtime_as_c() {
        let mut spec = parsed(PINNED);
        let (set, analysis) = analyze_reservations(&spec).unwrap();
        assert_eq!(set.platform.cores, 2);
        let a = &set.tasks[0];
        assert_eq!(
            (a.core, a.period, a.deadline, a.runtime),
            (Some(0), Nanos(10 * MS), Nanos(5 * MS), Some(Nanos(2 * MS)))
        );
        assert_eq!(a.effective_wcet(), Some(Nanos(2 * MS)));
        assert!(analysis.schedulable);
        attach_bounds(&mut spec, &analysis);
        // Alone on its core, a reservation's job ends within its runtime.
        assert_eq!(spec.tasks[0].bound.unwrap().wcrt_ns, Some(2 * MS));
        assert_eq!(spec.tasks[1].bound.unwrap().wcrt_ns, Some(4 * MS));
    }

    #[test]
    fn what_the_analysis_cannot_model_is_named() {
        for (tasks, why) in [
            (
                r#""a": { "policy": "SCHED_FIFO", "run": 1000, "timer": { "ref": "t", "period": 10000 } }"#,
                "thread 'a' runs under SCHED_FIFO",
            ),
            (
                r#""a": { "policy": "SCHED_DEADLINE", "dl-runtime": 2000, "dl-period": 10000, "run": 1000, "timer": { "ref": "t", "period": 10000 } }"#,
                "thread 'a' is not pinned to one CPU",
            ),
            (
                r#""a": { "policy": "SCHED_DEADLINE", "dl-runtime": 2000, "dl-period": 10000, "cpus": [0], "run": 1000, "timer": { "ref": "t", "period": 20000 } }"#,
                "released every 20ms by its timer but its reservation's period is 10ms",
            ),
            (
                r#""a": { "policy": "SCHED_DEADLINE", "dl-runtime": 2000, "dl-period": 10000, "cpus": [0], "run": 1000, "sleep": 1000, "timer": { "ref": "t", "period": 10000 } }"#,
                "has a `sleep` event",
            ),
            (
                r#""a": { "policy": "SCHED_DEADLINE", "dl-runtime": 2000, "dl-period": 10000, "cpus": [0], "run": 1000 }"#,
                "has no final `timer`",
            ),
            (
                r#""a": { "policy": "SCHED_DEADLINE", "dl-runtime": 2000, "dl-period": 10000, "cpus": [0], "run": 1000, "timer": { "ref": "shared", "period": 10000 } },
                   "b": { "policy": "SCHED_DEADLINE", "dl-runtime": 2000, "dl-period": 10000, "cpus": [1], "run": 1000, "timer": { "ref": "shared", "period": 10000 } }"#,
                "shares its timer with other threads",
            ),
        ] {
            let error = analyze_reservations(&parsed(tasks)).unwrap_err();
            assert!(error.contains(why), "{error}");
        }
    }

    #[test]
    fn an_overloaded_core_is_analysed_and_not_schedulable() {
        // 6 + 5 ms every 10 ms on one CPU: above the supply.
        let spec = parsed(
            r#""a": { "policy": "SCHED_DEADLINE", "dl-runtime": 6000, "dl-period": 10000,
            "cpus": [0], "run": 1000, "timer": { "ref": "ta", "period": 10000 } },
            "b": { "policy": "SCHED_DEADLINE", "dl-runtime": 5000, "dl-period": 10000,
            "cpus": [0], "run": 1000, "timer": { "ref": "tb", "period": 10000 } }"#,
        );
        let (_, analysis) = analyze_reservations(&spec).unwrap();
        assert!(!analysis.schedulable);
        let edf = analysis.cores[0].edf.as_ref().unwrap();
        assert!(!edf.schedulable && !edf.reasons.is_empty(), "{edf:?}");
    }
}
