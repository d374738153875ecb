//! SCHED_DEADLINE threads of a run: the root domain each enters before
//! `sched_setattr`, and the kernel's refusals in words.
//!
//! A thread pinned to one CPU enters that CPU's partition (a root domain
//! of its own, [`tinct_sys::dl_partitions`], made for the run when
//! [`RunSpec::deadline_cpus`] names CPUs); any other deadline thread gets
//! every CPU of the run back, since the kernel admits a reservation only
//! for a thread whose affinity covers its root domain.

use crate::spec::RunSpec;
use crate::{Result, RtError};
use std::fs::File;
use tinct_base::InputError;
use tinct_sys::cgroup::join_thread;
use tinct_sys::dl_partitions::DeadlinePartitions;
use tinct_sys::sched::{Policy, Scheduling};

/// The open cpuset `tasks` file of each partitioned CPU.
pub(super) type PartitionFiles = Vec<(u32, File)>;

/// The run's partitions (none when no deadline thread is pinned to one
/// CPU, or when the run is not real-time) with a note for the result.
pub(super) fn partitions(
    spec: &RunSpec,
    realtime: bool,
) -> Result<(Option<DeadlinePartitions>, PartitionFiles, Vec<String>)> {
    let cpus = spec.deadline_cpus();
    if cpus.is_empty() || !realtime {
        return Ok((None, Vec::new(), Vec::new()));
    }
    check_partitioned(spec)?;
    let list = tinct_sys::format_cpu_list(&cpus);
    let refused = |e: tinct_sys::Error| RtError::Privilege {
        what: format!(
            "SCHED_DEADLINE threads pinned to CPUs {list} need each CPU as a root domain of \
             its own (the kernel refuses a reservation whose affinity is narrower than its \
             root domain), made with cpusets: {e}"
        ),
        fix: "run as root on a system with the cpuset controller on cgroup v1 (mount -t \
              cgroup -o cpuset cpuset /sys/fs/cgroup/cpuset); an EINVAL on cpu_exclusive or \
              cpus means another exclusive cpuset (docker, libvirt, another run) holds the CPU"
            .into(),
    };
    let partitions = DeadlinePartitions::create(&cpus).map_err(refused)?;
    let files = cpus
        .iter()
        .map(|&cpu| partitions.tasks_file(cpu).map(|file| (cpu, file)))
        .collect::<tinct_sys::Result<PartitionFiles>>()
        .map_err(refused)?;
    let note = format!(
        "CPUs {list} were root domains of their own for the run's SCHED_DEADLINE threads \
         (cpusets under {}, load balancing of the root cpuset off for the run and restored)",
        partitions
            .dir_of(cpus[0])
            .and_then(|d| d.parent())
            .map_or_else(String::new, |d| d.display().to_string())
    );
    Ok((Some(partitions), files, vec![note]))
}

/// Refuses a run with partitions whose deadline threads cannot all live
/// in them: a thread in a partition must keep its CPU and SCHED_DEADLINE
/// in every phase (nothing moves a thread out of its root domain), and a
/// deadline thread not pinned to one CPU would be admitted into whichever
/// partition its CPU is in, beside reservations that did not count it.
fn check_partitioned(spec: &RunSpec) -> Result<()> {
    for task in &spec.tasks {
        let placements = task.phase_placements();
        let deadline = |s: &Scheduling| s.policy == Policy::Deadline;
        let partitioned = placements.iter().find_map(|(s, cpus)| match *cpus {
            Some(&[cpu]) if deadline(s) => Some(cpu),
            _ => None,
        });
        let problem = match partitioned {
            Some(cpu) => placements
                .iter()
                .any(|(s, cpus)| !deadline(s) || *cpus != Some(&[cpu][..]))
                .then(|| {
                    (
                        format!(
                            "SCHED_DEADLINE on CPU {cpu} in every phase: a thread in a CPU's \
                             root domain of its own (partitioned EDF) cannot leave it"
                        ),
                        "a phase with another policy or other CPUs".to_string(),
                    )
                }),
            None => placements.iter().any(|(s, _)| deadline(s)).then(|| {
                (
                    "one CPU for every SCHED_DEADLINE thread when some run pinned to one \
                     (partitioned EDF): an unpinned one would be admitted into a partition \
                     beside reservations that did not count it"
                        .to_string(),
                    "a SCHED_DEADLINE thread with no `cpus` or several".to_string(),
                )
            }),
        };
        if let Some((expected, found)) = problem {
            return Err(RtError::Input(InputError {
                file: spec.source.clone(),
                line: task.line,
                field: format!("`cpus` and policy of task '{}'", task.name),
                expected,
                found,
            }));
        }
    }
    Ok(())
}

/// Sets `scheduling` on the calling thread, whose CPUs are `cpus` (`None`:
/// unpinned). A deadline thread first enters its root domain: its CPU's
/// partition, or every CPU of the run. Errors are in words, with what to
/// change.
pub(super) fn switch_policy(
    scheduling: &Scheduling,
    cpus: Option<&[u32]>,
    partitions: &[(u32, File)],
    all_cpus: &[u32],
) -> std::result::Result<(), String> {
    if scheduling.policy == Policy::Deadline {
        let partition = match cpus {
            Some(&[cpu]) => partitions.iter().find(|(c, _)| *c == cpu),
            _ => None,
        };
        match partition {
            Some((cpu, tasks)) => join_thread(tasks)
                .map_err(|e| format!("entering the root domain of CPU {cpu} failed: {e}"))?,
            None => tinct_sys::sched::set_affinity(all_cpus).map_err(|e| {
                format!("a SCHED_DEADLINE thread needs every CPU of its root domain: {e}")
            })?,
        }
    }
    tinct_sys::sched::set_scheduling(scheduling).map_err(|e| explain(scheduling, &e))
}

/// `sched_setattr`'s refusal of `scheduling` in words.
fn explain(scheduling: &Scheduling, error: &tinct_sys::Error) -> String {
    let errno = match error {
        tinct_sys::Error::Syscall { source, .. } => source.raw_os_error(),
        _ => None,
    };
    if scheduling.policy != Policy::Deadline {
        return error.to_string();
    }
    let why = match errno {
        Some(libc::EBUSY) => "the kernel's admission control refused the reservation: the \
             reservations of its root domain would exceed sched_rt_runtime_us / \
             sched_rt_period_us of its CPUs (`tinct analyze` reports a core over that limit)"
            .to_string(),
        Some(libc::EPERM) => "the thread's CPUs are not a whole root domain (a pinned \
             reservation needs its CPU partitioned), or the process lacks CAP_SYS_NICE"
            .to_string(),
        Some(libc::EINVAL) => {
            let sysctl = |name: &str| {
                std::fs::read_to_string(format!("/proc/sys/kernel/{name}"))
                    .map_or_else(|_| "?".into(), |v| v.trim().to_string())
            };
            format!(
                "the kernel refused the parameters: it wants 1024 ns ≤ runtime ≤ deadline ≤ \
                 period, and a period within sched_deadline_period_min_us ({} µs) .. \
                 sched_deadline_period_max_us ({} µs)",
                sysctl("sched_deadline_period_min_us"),
                sysctl("sched_deadline_period_max_us")
            )
        }
        _ => return error.to_string(),
    };
    format!("{error}: {why}")
}

#[cfg(test)]
mod tests {
    use super::explain;
    use tinct_sys::sched::{DeadlineParams, Policy, Scheduling};

    fn refused(errno: i32) -> tinct_sys::Error {
        tinct_sys::Error::Syscall {
            call: "sched_setattr(SCHED_DEADLINE)".into(),
            source: std::io::Error::from_raw_os_error(errno),
        }
    }

    /// Each refusal of a reservation says what the kernel checked and what
    /// to change, after the errno itself; other policies keep the errno.
    #[test]
    fn a_refused_reservation_is_explained_by_its_errno() {
        let reservation = Scheduling {
            deadline: Some(DeadlineParams {
                runtime_ns: 1_000_000,
                deadline_ns: 5_000_000,
                period_ns: 10_000_000,
            }),
            ..Scheduling::of(Policy::Deadline)
        };
        let said = |errno| explain(&reservation, &refused(errno));
        let busy = said(libc::EBUSY);
        assert!(
            busy.starts_with("sched_setattr(SCHED_DEADLINE)")
                && busy.contains("admission control")
                && busy.contains("sched_rt_runtime_us"),
            "{busy}"
        );
        let perm = said(libc::EPERM);
        assert!(
            perm.contains("not a whole root domain") && perm.contains("CAP_SYS_NICE"),
            "{perm}"
        );
        let inval = said(libc::EINVAL);
        assert!(
            inval.contains("1024 ns ≤ runtime ≤ deadline ≤ period")
                && inval.contains("sched_deadline_period_min_us (")
                && inval.contains("sched_deadline_period_max_us ("),
            "{inval}"
        );
        let other = said(libc::ENOMEM);
        assert_eq!(other, refused(libc::ENOMEM).to_string());
        let fifo = explain(&Scheduling::of(Policy::Fifo(10)), &refused(libc::EBUSY));
        assert_eq!(fifo, refused(libc::EBUSY).to_string());
    }
}
