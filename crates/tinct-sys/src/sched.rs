//! Small safe wrappers for scheduling: CPU affinity, SCHED_FIFO / SCHED_OTHER
//! for the calling thread, `mlockall`, `gettid`.
//!
//! rustix covers affinity, `mlockall` and `gettid`; it deliberately has no
//! `sched_setscheduler`, so that one goes through `libc`.

use crate::error::{Error, Result};
use serde::Serialize;

/// The kernel thread id of the calling thread.
pub fn gettid() -> i32 {
    rustix::thread::gettid().as_raw_nonzero().get()
}

/// Pins the calling thread to `cpus`.
pub fn set_affinity(cpus: &[u32]) -> Result<()> {
    if cpus.is_empty() {
        return Err(Error::InvalidArgument(
            "an empty CPU set cannot be used as affinity".into(),
        ));
    }
    let mut set = rustix::thread::CpuSet::new();
    for &cpu in cpus {
        if cpu as usize >= rustix::thread::CpuSet::MAX_CPU {
            return Err(Error::InvalidArgument(format!(
                "CPU {cpu} is beyond the largest CPU set ({})",
                rustix::thread::CpuSet::MAX_CPU
            )));
        }
        set.set(cpu as usize);
    }
    rustix::thread::sched_setaffinity(None, &set).map_err(|e| {
        Error::syscall(
            format!(
                "sched_setaffinity({})",
                crate::cpulist::format_cpu_list(cpus)
            ),
            e.into(),
        )
    })
}

/// The CPUs the calling thread may run on.
pub fn affinity() -> Result<Vec<u32>> {
    let set = rustix::thread::sched_getaffinity(None)
        .map_err(|e| Error::syscall("sched_getaffinity", e.into()))?;
    Ok((0..rustix::thread::CpuSet::MAX_CPU)
        .filter(|&cpu| set.is_set(cpu))
        .map(|cpu| cpu as u32)
        .collect())
}

/// The CPU the calling thread is running on right now.
pub fn current_cpu() -> u32 {
    rustix::thread::sched_getcpu() as u32
}

/// A scheduling policy with its priority where it has one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "policy", content = "priority", rename_all = "snake_case")]
pub enum Policy {
    /// `SCHED_OTHER` (CFS/EEVDF).
    Other,
    /// `SCHED_FIFO` with priority 1..=99 (higher wins).
    Fifo(u8),
    /// `SCHED_RR` with priority 1..=99.
    RoundRobin(u8),
    /// `SCHED_BATCH`.
    Batch,
    /// `SCHED_IDLE`.
    Idle,
    /// `SCHED_DEADLINE`.
    Deadline,
    /// A policy number this wrapper does not know.
    Unknown(i32),
}

fn set_scheduler(policy: libc::c_int, priority: libc::c_int, call: String) -> Result<()> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: `param` is a valid, initialized `sched_param` that lives for the
    // duration of the call; pid 0 names the calling thread; the call does not
    // retain the pointer.
    let status = unsafe { libc::sched_setscheduler(0, policy, &param) };
    if status == 0 {
        Ok(())
    } else {
        Err(Error::syscall(call, std::io::Error::last_os_error()))
    }
}

/// Puts the calling thread under `SCHED_FIFO` with `priority` (1..=99, higher wins).
/// Needs root or `CAP_SYS_NICE` (or a sufficient `RLIMIT_RTPRIO`).
pub fn set_fifo(priority: u8) -> Result<()> {
    if !(1..=99).contains(&priority) {
        return Err(Error::InvalidArgument(format!(
            "SCHED_FIFO priority must be 1..=99, got {priority}"
        )));
    }
    set_scheduler(
        libc::SCHED_FIFO,
        priority.into(),
        format!("sched_setscheduler(SCHED_FIFO, {priority})"),
    )
}

/// Puts the calling thread back under `SCHED_OTHER`.
pub fn set_other() -> Result<()> {
    set_scheduler(
        libc::SCHED_OTHER,
        0,
        "sched_setscheduler(SCHED_OTHER, 0)".into(),
    )
}

/// The calling thread's policy and priority.
pub fn policy() -> Result<Policy> {
    // SAFETY: sched_getscheduler takes a pid by value and touches no memory;
    // pid 0 names the calling thread.
    let policy = unsafe { libc::sched_getscheduler(0) };
    if policy < 0 {
        return Err(Error::syscall(
            "sched_getscheduler",
            std::io::Error::last_os_error(),
        ));
    }
    let mut param = libc::sched_param { sched_priority: 0 };
    // SAFETY: `param` is a valid, writable `sched_param` that outlives the call.
    let status = unsafe { libc::sched_getparam(0, &mut param) };
    if status != 0 {
        return Err(Error::syscall(
            "sched_getparam",
            std::io::Error::last_os_error(),
        ));
    }
    let priority = u8::try_from(param.sched_priority).unwrap_or(0);
    Ok(match policy & !libc::SCHED_RESET_ON_FORK {
        libc::SCHED_OTHER => Policy::Other,
        libc::SCHED_FIFO => Policy::Fifo(priority),
        libc::SCHED_RR => Policy::RoundRobin(priority),
        libc::SCHED_BATCH => Policy::Batch,
        libc::SCHED_IDLE => Policy::Idle,
        6 => Policy::Deadline,
        other => Policy::Unknown(other),
    })
}

/// Locks all current (and, with `future`, all future) pages of the process
/// in RAM. Needs `CAP_IPC_LOCK` or a large enough `RLIMIT_MEMLOCK`.
pub fn mlockall(future: bool) -> Result<()> {
    use rustix::mm::MlockAllFlags;
    let flags = if future {
        MlockAllFlags::CURRENT | MlockAllFlags::FUTURE
    } else {
        MlockAllFlags::CURRENT
    };
    rustix::mm::mlockall(flags).map_err(|e| Error::syscall("mlockall", e.into()))
}

/// Undoes [`mlockall`].
pub fn munlockall() -> Result<()> {
    rustix::mm::munlockall().map_err(|e| Error::syscall("munlockall", e.into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_arguments_are_refused_before_any_syscall() {
        assert!(matches!(set_affinity(&[]), Err(Error::InvalidArgument(_))));
        assert!(matches!(set_fifo(0), Err(Error::InvalidArgument(_))));
        assert!(matches!(set_fifo(100), Err(Error::InvalidArgument(_))));
    }

    #[test]
    fn affinity_round_trips_on_a_thread() {
        std::thread::spawn(|| {
            let original = affinity().unwrap();
            assert!(!original.is_empty());
            let first = original[0];
            set_affinity(&[first]).unwrap();
            assert_eq!(affinity().unwrap(), vec![first]);
            assert_eq!(current_cpu(), first);
            set_affinity(&original).unwrap();
            assert_eq!(affinity().unwrap(), original);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn gettid_differs_between_threads() {
        let main = gettid();
        let other = std::thread::spawn(gettid).join().unwrap();
        assert!(main > 0 && other > 0);
        assert_ne!(main, other);
    }
}
