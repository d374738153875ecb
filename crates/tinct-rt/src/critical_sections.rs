//! Shared resources in a tinct task set, run for real: each task's job runs
//! its critical sections — lock the resource's mutex, run the section's
//! length of the task's own kernel, unlock — with the task set's protocol:
//!
//! - `pcp`: the immediate priority ceiling protocol, a POSIX mutex with
//!   PTHREAD_PRIO_PROTECT at the resource's ceiling, the highest SCHED_FIFO
//!   priority among the tasks that use it (so a task holding it cannot be
//!   preempted by any other user, the assumption behind the blocking term
//!   B_i of the response-time analysis);
//! - `pip`: priority inheritance, PTHREAD_PRIO_INHERIT;
//! - `none`: a plain mutex (unbounded priority inversion).
//!
//! A task's `jitter` (J_i) becomes its release jitter: each job starts a
//! seeded random offset in `[0, J_i]` after its release, recorded per job.
//!
//! The job's order: the part of its work outside every section first, then
//! each section in the order given. With a calibrated body of C, the part
//! outside is C − Σ lengths (a task whose sections exceed C is refused).
//!
//! [`Synchronization`] is plain data, so that it can be built from the task
//! set's `[[resource]]` tables and the tasks' `critical_sections` and
//! `jitter` ([`RunSpec::with_synchronization`]).

use crate::spec::{MutexSpec, Policy, Protocol, RunSpec, Step};
use crate::{Result, RtError};
use tinct_base::InputError;
use tinct_core::limits::Limit;
use tinct_core::model::{Protocol as SetProtocol, TaskSet, Work};
use tinct_core::units::Nanos;

/// How a resource's holder is protected from priority inversion.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ResourceProtocol {
    /// The immediate priority ceiling protocol (PTHREAD_PRIO_PROTECT).
    Pcp,
    /// Priority inheritance (PTHREAD_PRIO_INHERIT).
    Pip,
    /// No protocol.
    None,
}

/// A shared resource of a task set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resource {
    /// Unique name.
    pub name: String,
    /// Its protocol.
    pub protocol: ResourceProtocol,
}

/// One critical section of a job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CriticalSection {
    /// The resource locked.
    pub resource: String,
    /// How long the section runs (the task's kernel, calibrated).
    pub length_ns: u64,
}

/// What one task of the set does with resources, and its release jitter.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TaskSynchronization {
    /// The task (by name).
    pub task: String,
    /// Its critical sections, in the order a job runs them.
    pub sections: Vec<CriticalSection>,
    /// Release jitter J_i.
    pub jitter_ns: u64,
}

/// The resources of a task set and how each task uses them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Synchronization {
    /// The resources.
    pub resources: Vec<Resource>,
    /// Per task (tasks not listed use no resource and have no jitter).
    pub tasks: Vec<TaskSynchronization>,
}

impl Synchronization {
    /// The resources, critical sections and release jitter of a task set
    /// (its `[[resource]]` tables, each task's `critical_sections` and
    /// `jitter`), for [`RunSpec::with_synchronization`].
    pub fn of_set(set: &TaskSet) -> Synchronization {
        Synchronization {
            resources: set
                .resources
                .iter()
                .map(|r| Resource {
                    name: r.name.clone(),
                    protocol: match r.protocol {
                        SetProtocol::Pcp => ResourceProtocol::Pcp,
                        SetProtocol::Pip => ResourceProtocol::Pip,
                        SetProtocol::None => ResourceProtocol::None,
                    },
                })
                .collect(),
            tasks: set
                .tasks
                .iter()
                .filter(|t| !t.critical_sections.is_empty() || t.jitter > Nanos::ZERO)
                .map(|t| TaskSynchronization {
                    task: t.name.clone(),
                    sections: t
                        .critical_sections
                        .iter()
                        .map(|s| CriticalSection {
                            resource: set.resources[s.resource].name.clone(),
                            length_ns: s.length.0,
                        })
                        .collect(),
                    jitter_ns: t.jitter.0,
                })
                .collect(),
        }
    }
}

impl RunSpec {
    /// This run with `sync` applied (see the module docs). Bad input,
    /// naming the task: an unknown task or resource, sections longer than
    /// the job's calibrated work, a `pcp` resource used by a task that is
    /// not SCHED_FIFO (a ceiling needs a real-time priority).
    pub fn with_synchronization(mut self, sync: &Synchronization) -> Result<RunSpec> {
        let lines: Vec<(String, Option<usize>)> = self
            .tasks
            .iter()
            .map(|t| (t.name.clone(), t.line))
            .collect();
        let source = self.source.clone();
        let bad = |task: &str, field: &str, expected: String, found: String| {
            RtError::Input(InputError {
                file: source.clone(),
                line: lines.iter().find(|(n, _)| n == task).and_then(|(_, l)| *l),
                field: format!("task '{task}' {field}"),
                expected,
                found,
            })
        };
        let mut mutexes = Vec::with_capacity(sync.resources.len());
        for resource in &sync.resources {
            let users: Vec<&TaskSynchronization> = sync
                .tasks
                .iter()
                .filter(|t| t.sections.iter().any(|s| s.resource == resource.name))
                .collect();
            let protocol = match resource.protocol {
                ResourceProtocol::None => Protocol::None,
                ResourceProtocol::Pip => Protocol::Inherit,
                ResourceProtocol::Pcp => {
                    let mut ceiling = 1u8;
                    for user in &users {
                        let priority = self
                            .tasks
                            .iter()
                            .find(|t| t.name == user.task)
                            .map(|t| t.scheduling.policy);
                        match priority {
                            Some(Policy::Fifo(p)) => ceiling = ceiling.max(p),
                            other => {
                                return Err(bad(
                                    &user.task,
                                    "critical_sections",
                                    format!(
                                        "a SCHED_FIFO task to use the pcp resource '{}' (its \
                                         ceiling is a real-time priority)",
                                        resource.name
                                    ),
                                    format!("{other:?}"),
                                ));
                            }
                        }
                    }
                    Protocol::Protect(ceiling)
                }
            };
            mutexes.push(MutexSpec {
                name: resource.name.clone(),
                protocol,
            });
        }
        let first_mutex = self.resources.mutexes.len();
        for task_sync in &sync.tasks {
            let Some(task) = self.tasks.iter_mut().find(|t| t.name == task_sync.task) else {
                return Err(bad(
                    &task_sync.task,
                    "critical_sections",
                    "a task of the set".into(),
                    format!("no task named '{}'", task_sync.task),
                ));
            };
            task.jitter_ns = task_sync.jitter_ns;
            if task_sync.sections.is_empty() {
                continue;
            }
            let phase = &mut task.phases[0];
            // The job's work: its first kernel step (a data-triggered job's
            // receives come before it).
            let Some((at, kernel, memory_percent, work)) =
                phase.steps.iter().enumerate().find_map(|(at, s)| match *s {
                    Step::Kernel {
                        kernel,
                        memory_percent,
                        work,
                    } => Some((at, kernel, memory_percent, work)),
                    _ => None,
                })
            else {
                continue;
            };
            let total = task_sync
                .sections
                .iter()
                .try_fold(0u64, |sum, s| sum.checked_add(s.length_ns));
            let outside = match (work, total) {
                (Work::Target(c), Some(total)) if total <= c.0 => Work::Target(Nanos(c.0 - total)),
                (Work::Target(c), _) => {
                    return Err(RtError::Input(InputError {
                        file: self.source.clone(),
                        line: task.line,
                        field: format!("task '{}' critical_sections", task.name),
                        expected: Limit::SectionsInBody(c).expected(),
                        found: format!(
                            "Σ lengths = {} ns",
                            task_sync
                                .sections
                                .iter()
                                .map(|s| u128::from(s.length_ns))
                                .sum::<u128>()
                        ),
                    }));
                }
                (iterations, _) => iterations,
            };
            let mut steps = phase.steps[..at].to_vec();
            steps.push(Step::Kernel {
                kernel,
                memory_percent,
                work: outside,
            });
            for section in &task_sync.sections {
                let Some(index) = sync
                    .resources
                    .iter()
                    .position(|r| r.name == section.resource)
                else {
                    return Err(RtError::Input(InputError {
                        file: self.source.clone(),
                        line: task.line,
                        field: format!("task '{}' critical_sections.resource", task.name),
                        expected: "a resource of the set's [[resource]] tables".into(),
                        found: format!("'{}'", section.resource),
                    }));
                };
                let mutex = first_mutex + index;
                steps.push(Step::Lock { mutex });
                steps.push(Step::Kernel {
                    kernel,
                    memory_percent,
                    work: Work::Target(Nanos(section.length_ns)),
                });
                steps.push(Step::Unlock { mutex });
            }
            steps.extend(phase.steps.iter().skip(at + 1).copied());
            phase.steps = steps;
        }
        self.resources.mutexes.extend(mutexes);
        self.check_limits()?;
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{TaskBuilder, run_spec};
    use tinct_core::model::Kernel;
    use tinct_sys::testing::serial;

    const MS: u64 = 1_000_000;

    fn set() -> RunSpec {
        let task = |name: &str, priority: u8| {
            TaskBuilder::periodic(name, 10 * MS)
                .cpu(0)
                .fifo(priority)
                .kernel(Kernel::Compute, Work::Target(Nanos(2 * MS)))
                .build()
        };
        run_spec(
            vec![task("high", 80), task("low", 60), task("free", 70)],
            200 * MS,
        )
    }

    fn sync(protocol: ResourceProtocol, length_ns: u64) -> Synchronization {
        let section = |resource: &str| CriticalSection {
            resource: resource.into(),
            length_ns,
        };
        Synchronization {
            resources: vec![Resource {
                name: "bus".into(),
                protocol,
            }],
            tasks: vec![
                TaskSynchronization {
                    task: "high".into(),
                    sections: vec![section("bus")],
                    jitter_ns: 0,
                },
                TaskSynchronization {
                    task: "low".into(),
                    sections: vec![section("bus")],
                    jitter_ns: 300_000,
                },
            ],
        }
    }

    #[test]
    fn pcp_locks_at_the_users_ceiling_and_sections_split_the_work() {
        let spec = set()
            .with_synchronization(&sync(ResourceProtocol::Pcp, MS / 2))
            .unwrap();
        assert_eq!(spec.resources.mutexes.len(), 1);
        assert_eq!(
            spec.resources.mutexes[0].protocol,
            Protocol::Protect(80),
            "the highest priority among its users, not the free task's"
        );
        let low = &spec.tasks[1];
        assert_eq!(low.jitter_ns, 300_000);
        let body = low.phases[0].body();
        assert_eq!(body.len(), 4, "{body:?}");
        assert_eq!(
            body[0],
            Step::Kernel {
                kernel: Kernel::Compute,
                memory_percent: 0,
                work: Work::Target(Nanos(2 * MS - MS / 2))
            }
        );
        assert_eq!(body[1], Step::Lock { mutex: 0 });
        assert_eq!(body[3], Step::Unlock { mutex: 0 });
        assert!(low.phases[0].release_timer().is_some(), "still periodic");
        assert_eq!(spec.tasks[2].phases[0].body().len(), 1, "no sections");
        let pip = set()
            .with_synchronization(&sync(ResourceProtocol::Pip, MS))
            .unwrap();
        assert_eq!(pip.resources.mutexes[0].protocol, Protocol::Inherit);
    }

    #[test]
    fn sections_beyond_c_unknown_names_and_non_fifo_ceiling_users_are_refused() {
        let e = set()
            .with_synchronization(&sync(ResourceProtocol::Pcp, 3 * MS))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("task 'high'")
                && e.contains(&Limit::SectionsInBody(Nanos(2 * MS)).expected())
                && e.contains("Σ lengths = 3000000 ns"),
            "{e}"
        );
        let mut unknown = sync(ResourceProtocol::Pip, MS);
        unknown.tasks[0].sections[0].resource = "nope".into();
        let e = set()
            .with_synchronization(&unknown)
            .unwrap_err()
            .to_string();
        assert!(e.contains("'nope'"), "{e}");
        let mut other = set();
        other.tasks[1].scheduling = tinct_sys::sched::Scheduling::other();
        let e = other
            .with_synchronization(&sync(ResourceProtocol::Pcp, MS))
            .unwrap_err()
            .to_string();
        assert!(e.contains("task 'low'") && e.contains("SCHED_FIFO"), "{e}");
    }

    /// `low` wakes `high` from inside its section on `bus` (a condition
    /// variable of their own, signalled with the lock held), so every job
    /// of `high` is released while `low` holds the lock and wants it 1.5 ms
    /// later: the worst case B_i bounds, on every job, whatever the host's
    /// timing. Returns high's finished jobs and those blocked at the lock.
    fn blocked_at_the_lock(protocol: ResourceProtocol) -> (usize, usize) {
        let _serial = serial();
        let mut spec = set().with_synchronization(&sync(protocol, MS / 2)).unwrap();
        let wake = spec.resources.mutexes.len();
        spec.resources.mutexes.push(MutexSpec {
            name: "wake".into(),
            protocol: Protocol::Inherit,
        });
        let released = spec.resources.conds.len();
        spec.resources.conds.push("released".into());
        let high = &mut spec.tasks[0].phases[0].steps;
        assert!(matches!(high.pop(), Some(Step::Timer { .. })), "{high:?}");
        high.splice(
            0..0,
            [
                Step::Lock { mutex: wake },
                Step::Wait {
                    cond: released,
                    mutex: wake,
                },
                Step::Unlock { mutex: wake },
            ],
        );
        let low = &mut spec.tasks[1].phases[0].steps;
        let section = 1 + low
            .iter()
            .position(|s| matches!(s, Step::Lock { .. }))
            .unwrap();
        low.splice(
            section..section,
            [
                Step::Lock { mutex: wake },
                Step::Signal { cond: released },
                Step::Unlock { mutex: wake },
            ],
        );
        spec.tasks[2].offset_ns = 5 * MS; // `free` out of the way
        let result = crate::runtime::run(&spec, crate::testing::test_options()).unwrap();
        assert!(result.stop.is_completed(), "{}", result.stop.describe());
        let high = &result.tasks[0].records;
        let done = high.iter().filter(|r| r.finish_ns.is_some()).count();
        let blocked = high.iter().filter(|r| r.flow.blocked_ns > 0).count();
        (done, blocked)
    }

    #[test]
    fn pip_blocks_at_the_lock_and_the_ceiling_never_does() {
        if !tinct_sys::testing::privileged_or_skip("SCHED_FIFO and priority inheritance") {
            return;
        }
        let (done, blocked) = blocked_at_the_lock(ResourceProtocol::Pip);
        assert!(done >= 15, "{done}");
        assert_eq!(
            blocked, done,
            "pip: high preempts the holder and meets the lock it holds, on every job"
        );
        let (done, blocked) = blocked_at_the_lock(ResourceProtocol::Pcp);
        assert!(done >= 15, "{done}");
        assert_eq!(
            blocked, 0,
            "pcp: the holder runs at the ceiling, so a job is blocked before it starts, never at the lock"
        );
    }

    #[test]
    fn a_set_with_a_ceiling_resource_runs_and_every_job_balances() {
        if !tinct_sys::testing::privileged_or_skip("SCHED_FIFO and priority ceilings") {
            return;
        }
        let _serial = serial();
        let spec = set()
            .with_synchronization(&sync(ResourceProtocol::Pcp, MS / 2))
            .unwrap();
        let result = crate::runtime::run(&spec, crate::testing::test_options()).unwrap();
        assert!(result.stop.is_completed(), "{}", result.stop.describe());
        for task in &result.tasks {
            let a = crate::record::Accounting::of(&task.records);
            // 20 releases each; a host stall may make a few late or cut the
            // last one, so the count asked of the run is not its timing.
            assert!(
                a.balances() && a.completed + a.missed >= 10,
                "{}: {a:?}",
                task.spec.name
            );
            assert!(task.error.is_none(), "{:?}", task.error);
        }
        let low = &result.tasks[1].records;
        assert!(low.iter().all(|r| r.jitter_ns <= 300_000));
        assert!(low.iter().any(|r| r.jitter_ns > 0));
    }
}
