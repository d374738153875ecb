//! Small safe wrappers for scheduling: CPU affinity, every Linux policy of
//! the calling thread (SCHED_OTHER with nice and custom slice, FIFO, RR,
//! BATCH, IDLE, DEADLINE; utilization clamps), read back with
//! `sched_getattr`, `sched_yield`, `mlockall`, `gettid`.
//!
//! rustix covers affinity, `mlockall` and `gettid`; it deliberately has no
//! `sched_setscheduler` nor `sched_setattr`, so those go through `libc`
//! (`sched_setattr`/`sched_getattr` as raw syscalls: glibc has no wrapper).
//!
//! Platform facts a caller must know about SCHED_DEADLINE: the kernel's
//! admission control refuses (EBUSY) a reservation that does not fit the
//! free real-time bandwidth; a deadline thread whose CPU affinity is not
//! its whole root domain is refused (EPERM), so it cannot be pinned to one
//! CPU on a stock system; and a deadline thread cannot create threads
//! (EAGAIN from `clone`): create every thread before switching.

use crate::error::{Error, Result};

/// The kernel thread id of the calling thread.
pub fn gettid() -> i32 {
    rustix::thread::gettid().as_raw_nonzero().get()
}

/// Pins the calling thread to `cpus`.
pub fn set_affinity(cpus: &[u32]) -> Result<()> {
    pin(None, cpus)
}

/// Pins thread `tid` (of any process this one may control) to `cpus`: a
/// thread asleep wakes on one of them, one running is moved at once. No
/// allocation unless refused.
pub fn set_thread_affinity(tid: i32, cpus: &[u32]) -> Result<()> {
    let pid = rustix::process::Pid::from_raw(tid)
        .ok_or_else(|| Error::InvalidArgument(format!("thread id {tid}")))?;
    pin(Some(pid), cpus)
}

fn pin(thread: Option<rustix::process::Pid>, cpus: &[u32]) -> Result<()> {
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
    rustix::thread::sched_setaffinity(thread, &set).map_err(|e| {
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
    cpus_of(None)
}

/// The CPUs thread `tid` may run on.
pub fn thread_affinity(tid: i32) -> Result<Vec<u32>> {
    let pid = rustix::process::Pid::from_raw(tid)
        .ok_or_else(|| Error::InvalidArgument(format!("thread id {tid}")))?;
    cpus_of(Some(pid))
}

fn cpus_of(thread: Option<rustix::process::Pid>) -> Result<Vec<u32>> {
    let set = rustix::thread::sched_getaffinity(thread)
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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(tag = "policy", content = "priority"))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
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

/// The kernel's number of SCHED_DEADLINE (not in every libc).
const SCHED_DEADLINE: u32 = 6;
/// `sched_attr.sched_flags` bits (include/uapi/linux/sched.h).
const SCHED_FLAG_RECLAIM: u64 = 0x02;
const SCHED_FLAG_UTIL_CLAMP_MIN: u64 = 0x20;
const SCHED_FLAG_UTIL_CLAMP_MAX: u64 = 0x40;
/// The largest utilization clamp (the kernel's SCHED_CAPACITY_SCALE).
pub const UTIL_CLAMP_MAX: u32 = 1024;

impl Policy {
    /// True for the real-time policies (FIFO, RR, DEADLINE), the ones a
    /// runaway thread can starve a CPU with.
    pub fn is_realtime(&self) -> bool {
        matches!(
            self,
            Policy::Fifo(_) | Policy::RoundRobin(_) | Policy::Deadline
        )
    }

    /// The kernel's name of the policy (`SCHED_FIFO`, ...).
    pub fn kernel_name(&self) -> String {
        match self {
            Policy::Other => "SCHED_OTHER".into(),
            Policy::Fifo(_) => "SCHED_FIFO".into(),
            Policy::RoundRobin(_) => "SCHED_RR".into(),
            Policy::Batch => "SCHED_BATCH".into(),
            Policy::Idle => "SCHED_IDLE".into(),
            Policy::Deadline => "SCHED_DEADLINE".into(),
            Policy::Unknown(n) => format!("policy {n}"),
        }
    }

    fn number(&self) -> Option<u32> {
        Some(match self {
            Policy::Other => libc::SCHED_OTHER as u32,
            Policy::Fifo(_) => libc::SCHED_FIFO as u32,
            Policy::RoundRobin(_) => libc::SCHED_RR as u32,
            Policy::Batch => libc::SCHED_BATCH as u32,
            Policy::Idle => libc::SCHED_IDLE as u32,
            Policy::Deadline => SCHED_DEADLINE,
            Policy::Unknown(_) => return None,
        })
    }

    fn rt_priority(&self) -> u32 {
        match self {
            Policy::Fifo(p) | Policy::RoundRobin(p) => u32::from(*p),
            _ => 0,
        }
    }

    fn from_number(number: u32, priority: u32) -> Policy {
        let priority = u8::try_from(priority).unwrap_or(0);
        match number {
            n if n == libc::SCHED_OTHER as u32 => Policy::Other,
            n if n == libc::SCHED_FIFO as u32 => Policy::Fifo(priority),
            n if n == libc::SCHED_RR as u32 => Policy::RoundRobin(priority),
            n if n == libc::SCHED_BATCH as u32 => Policy::Batch,
            n if n == libc::SCHED_IDLE as u32 => Policy::Idle,
            SCHED_DEADLINE => Policy::Deadline,
            other => Policy::Unknown(i32::try_from(other).unwrap_or(-1)),
        }
    }
}

/// The least runtime the kernel gives a SCHED_DEADLINE reservation
/// (`1 << DL_SCALE` ns; `sched_setattr` refuses less with EINVAL).
pub const MIN_DEADLINE_RUNTIME_NS: u64 = 1 << 10;

/// The reservation of a SCHED_DEADLINE thread, in nanoseconds
/// (runtime ≤ deadline ≤ period, as the kernel requires).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct DeadlineParams {
    /// Budget per period.
    pub runtime_ns: u64,
    /// Relative deadline.
    pub deadline_ns: u64,
    /// Period.
    pub period_ns: u64,
}

/// Everything `sched_setattr` sets for a thread, and what `sched_getattr`
/// reads back: the policy, the nice value (SCHED_OTHER, SCHED_BATCH), the
/// deadline reservation, GRUB reclaiming, utilization clamps (0..=1024,
/// kernels with CONFIG_UCLAMP_TASK) and the custom slice of a fair thread
/// (EEVDF's `sched_runtime`, kernels from 6.12).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Scheduling {
    /// Policy and real-time priority.
    pub policy: Policy,
    /// Nice value, -20..=19 (SCHED_OTHER and SCHED_BATCH; 0 otherwise).
    pub nice: i8,
    /// The reservation, for [`Policy::Deadline`].
    pub deadline: Option<DeadlineParams>,
    /// SCHED_FLAG_RECLAIM (GRUB) for a deadline thread.
    pub reclaim: bool,
    /// Minimum utilization clamp.
    pub util_min: Option<u32>,
    /// Maximum utilization clamp.
    pub util_max: Option<u32>,
    /// Custom slice of a fair (SCHED_OTHER/BATCH) thread, in nanoseconds.
    pub slice_ns: Option<u64>,
}

impl Scheduling {
    /// `policy` with every other field at its default.
    pub fn of(policy: Policy) -> Scheduling {
        Scheduling {
            policy,
            nice: 0,
            deadline: None,
            reclaim: false,
            util_min: None,
            util_max: None,
            slice_ns: None,
        }
    }

    /// SCHED_OTHER at nice 0, the default of every thread.
    pub fn other() -> Scheduling {
        Scheduling::of(Policy::Other)
    }

    /// The policy in words: `SCHED_FIFO 20`, `SCHED_OTHER nice -5`,
    /// `SCHED_DEADLINE 10ms/30ms/30ms` (runtime/deadline/period).
    pub fn describe(&self) -> String {
        let mut text = self.policy.kernel_name();
        match self.policy {
            Policy::Fifo(p) | Policy::RoundRobin(p) => text.push_str(&format!(" {p}")),
            Policy::Other | Policy::Batch if self.nice != 0 => {
                text.push_str(&format!(" nice {}", self.nice))
            }
            Policy::Deadline => {
                if let Some(d) = self.deadline {
                    text.push_str(&format!(
                        " {}us/{}us/{}us",
                        d.runtime_ns / 1000,
                        d.deadline_ns / 1000,
                        d.period_ns / 1000
                    ));
                }
            }
            _ => {}
        }
        text
    }

    fn to_attr(self) -> Result<SchedAttr> {
        let policy = self.policy.number().ok_or_else(|| {
            Error::InvalidArgument(format!("cannot set {}", self.policy.kernel_name()))
        })?;
        if let Policy::Fifo(p) | Policy::RoundRobin(p) = self.policy
            && !(1..=99).contains(&p)
        {
            return Err(Error::InvalidArgument(format!(
                "{} priority must be 1..=99, got {p}",
                self.policy.kernel_name()
            )));
        }
        if !(-20..=19).contains(&self.nice) {
            return Err(Error::InvalidArgument(format!(
                "nice must be -20..=19, got {}",
                self.nice
            )));
        }
        let mut flags = 0u64;
        let (mut runtime, mut deadline, mut period) = (0, 0, 0);
        if self.policy == Policy::Deadline {
            let d = self.deadline.ok_or_else(|| {
                Error::InvalidArgument("SCHED_DEADLINE needs runtime, deadline and period".into())
            })?;
            (runtime, deadline, period) = (d.runtime_ns, d.deadline_ns, d.period_ns);
            if self.reclaim {
                flags |= SCHED_FLAG_RECLAIM;
            }
        } else if let Some(slice) = self.slice_ns {
            runtime = slice;
        }
        let mut util = [0u32; 2];
        for (i, (clamp, flag)) in [
            (self.util_min, SCHED_FLAG_UTIL_CLAMP_MIN),
            (self.util_max, SCHED_FLAG_UTIL_CLAMP_MAX),
        ]
        .into_iter()
        .enumerate()
        {
            if let Some(value) = clamp {
                if value > UTIL_CLAMP_MAX {
                    return Err(Error::InvalidArgument(format!(
                        "utilization clamps are 0..={UTIL_CLAMP_MAX}, got {value}"
                    )));
                }
                util[i] = value;
                flags |= flag;
            }
        }
        Ok(SchedAttr {
            size: std::mem::size_of::<SchedAttr>() as u32,
            sched_policy: policy,
            sched_flags: flags,
            sched_nice: i32::from(self.nice),
            sched_priority: self.policy.rt_priority(),
            sched_runtime: runtime,
            sched_deadline: deadline,
            sched_period: period,
            sched_util_min: util[0],
            sched_util_max: util[1],
        })
    }
}

/// The kernel's `struct sched_attr` (SCHED_ATTR_SIZE_VER1, 56 bytes).
/// A [`Scheduling`] made ready to set with one system call, for a child
/// between `fork` and `exec` (nothing to allocate or convert there).
#[derive(Debug, Clone, Copy)]
pub struct PreparedScheduling(SchedAttr);

impl PreparedScheduling {
    /// `scheduling` checked and converted now.
    pub fn new(scheduling: &Scheduling) -> Result<Self> {
        scheduling.to_attr().map(PreparedScheduling)
    }

    /// Sets it on the calling thread: one `sched_setattr` system call,
    /// async-signal-safe (for a `pre_exec` hook).
    pub fn set_on_caller(&self) -> std::io::Result<()> {
        // SAFETY: as in `set_scheduling`: a valid `sched_attr` whose size
        // the kernel reads; pid 0 names the calling thread.
        let status = unsafe {
            libc::syscall(
                libc::SYS_sched_setattr,
                0 as libc::pid_t,
                &self.0 as *const SchedAttr,
                0 as libc::c_uint,
            )
        };
        if status == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    }
}

#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
struct SchedAttr {
    size: u32,
    sched_policy: u32,
    sched_flags: u64,
    sched_nice: i32,
    sched_priority: u32,
    sched_runtime: u64,
    sched_deadline: u64,
    sched_period: u64,
    sched_util_min: u32,
    sched_util_max: u32,
}

/// Applies `scheduling` to the calling thread with `sched_setattr`.
/// Errors name the call and the kernel's reason (EPERM without privileges
/// or for a pinned deadline thread, EBUSY when admission control refuses a
/// reservation, EOPNOTSUPP for clamps on a kernel without them).
pub fn set_scheduling(scheduling: &Scheduling) -> Result<()> {
    let attr = scheduling.to_attr()?;
    // SAFETY: `attr` is a valid, initialized `struct sched_attr` whose `size`
    // field says how many bytes the kernel may read; it outlives the call and
    // the kernel does not keep the pointer; pid 0 names the calling thread.
    let status = unsafe {
        libc::syscall(
            libc::SYS_sched_setattr,
            0 as libc::pid_t,
            &attr as *const SchedAttr,
            0 as libc::c_uint,
        )
    };
    if status == 0 {
        Ok(())
    } else {
        Err(Error::syscall(
            format!("sched_setattr({})", scheduling.describe()),
            std::io::Error::last_os_error(),
        ))
    }
}

/// The calling thread's scheduling as the kernel reports it
/// (`sched_getattr`): what is in force, not what was asked for.
pub fn scheduling() -> Result<Scheduling> {
    let mut attr = SchedAttr::default();
    // SAFETY: `attr` is a valid, writable `struct sched_attr` of the size
    // passed, which outlives the call; pid 0 names the calling thread; flags
    // must be 0.
    let status = unsafe {
        libc::syscall(
            libc::SYS_sched_getattr,
            0 as libc::pid_t,
            &mut attr as *mut SchedAttr,
            std::mem::size_of::<SchedAttr>() as libc::c_uint,
            0 as libc::c_uint,
        )
    };
    if status != 0 {
        return Err(Error::syscall(
            "sched_getattr",
            std::io::Error::last_os_error(),
        ));
    }
    let policy = Policy::from_number(attr.sched_policy, attr.sched_priority);
    let fair = matches!(policy, Policy::Other | Policy::Batch);
    let clamps = attr.sched_flags & (SCHED_FLAG_UTIL_CLAMP_MIN | SCHED_FLAG_UTIL_CLAMP_MAX) != 0;
    Ok(Scheduling {
        policy,
        // The kernel keeps a thread's nice value under the other policies,
        // where it does not apply: reported only where it does.
        nice: if fair {
            i8::try_from(attr.sched_nice).unwrap_or(0)
        } else {
            0
        },
        deadline: (policy == Policy::Deadline).then_some(DeadlineParams {
            runtime_ns: attr.sched_runtime,
            deadline_ns: attr.sched_deadline,
            period_ns: attr.sched_period,
        }),
        reclaim: attr.sched_flags & SCHED_FLAG_RECLAIM != 0,
        util_min: clamps.then_some(attr.sched_util_min),
        util_max: clamps.then_some(attr.sched_util_max),
        slice_ns: (fair && attr.sched_runtime != 0).then_some(attr.sched_runtime),
    })
}

/// True if the kernel clamps utilization (CONFIG_UCLAMP_TASK: it then has
/// `/proc/sys/kernel/sched_util_clamp_min`); without it, `sched_setattr`
/// with clamps fails with EOPNOTSUPP.
pub fn util_clamp_supported() -> bool {
    std::path::Path::new("/proc/sys/kernel/sched_util_clamp_min").exists()
}

/// Gives up the CPU (`sched_yield`); for a SCHED_DEADLINE thread, gives up
/// the rest of its budget until its next period.
pub fn yield_now() {
    // SAFETY: sched_yield takes no arguments and touches no memory.
    unsafe {
        libc::sched_yield();
    }
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

    /// Sets `scheduling` on a fresh thread and returns what the kernel
    /// reports back.
    fn round_trip(asked: Scheduling) -> Result<Scheduling> {
        std::thread::spawn(move || {
            set_scheduling(&asked)?;
            scheduling()
        })
        .join()
        .unwrap()
    }

    /// Another thread's affinity is set and read back while it sleeps.
    #[test]
    fn a_sleeping_threads_affinity_is_set_from_another() {
        let cpus = affinity().unwrap();
        let (sender, receiver) = std::sync::mpsc::channel();
        let (go_on, wait) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            sender.send(gettid()).unwrap();
            wait.recv().unwrap();
            affinity().unwrap()
        });
        let tid = receiver.recv().unwrap();
        let last = *cpus.last().unwrap();
        set_thread_affinity(tid, &[last]).unwrap();
        assert_eq!(thread_affinity(tid).unwrap(), vec![last]);
        go_on.send(()).unwrap();
        assert_eq!(thread.join().unwrap(), vec![last], "as the thread sees it");
        assert!(set_thread_affinity(tid, &[]).is_err());
    }

    #[test]
    fn every_policy_reads_back_as_set() {
        if !crate::testing::privileged_or_skip("setting real-time and deadline policies") {
            return;
        }
        let mut nice = Scheduling::other();
        nice.nice = -5;
        let cases = [
            nice,
            Scheduling::of(Policy::Batch),
            Scheduling::of(Policy::Idle),
            Scheduling::of(Policy::Fifo(7)),
            Scheduling::of(Policy::RoundRobin(9)),
        ];
        for asked in cases {
            let got = round_trip(asked).unwrap();
            assert_eq!(got.policy, asked.policy, "{}", asked.describe());
            assert_eq!(got.nice, asked.nice, "{}", asked.describe());
        }
        let deadline = Scheduling {
            deadline: Some(DeadlineParams {
                runtime_ns: 1_000_000,
                deadline_ns: 10_000_000,
                period_ns: 10_000_000,
            }),
            reclaim: true,
            ..Scheduling::of(Policy::Deadline)
        };
        let got = round_trip(deadline).unwrap();
        assert_eq!(got.policy, Policy::Deadline);
        assert_eq!(got.deadline, deadline.deadline);
        assert!(got.reclaim);
        assert_eq!(got.describe(), "SCHED_DEADLINE 1000us/10000us/10000us");
    }

    #[test]
    fn a_pinned_deadline_thread_is_refused_by_the_kernel() {
        if !crate::testing::privileged_or_skip("setting SCHED_DEADLINE") {
            return;
        }
        let cpus = affinity().unwrap();
        if cpus.len() < 2 {
            return; // one CPU: pinning is the whole root domain
        }
        let refused = std::thread::spawn(move || {
            set_affinity(&cpus[..1]).unwrap();
            set_scheduling(&Scheduling {
                deadline: Some(DeadlineParams {
                    runtime_ns: 1_000_000,
                    deadline_ns: 10_000_000,
                    period_ns: 10_000_000,
                }),
                ..Scheduling::of(Policy::Deadline)
            })
        })
        .join()
        .unwrap();
        let message = refused
            .expect_err("the kernel refuses a pinned deadline thread")
            .to_string();
        assert!(
            message.contains("sched_setattr(SCHED_DEADLINE"),
            "{message}"
        );
    }

    #[test]
    fn bad_settings_are_refused_before_the_syscall() {
        let mut s = Scheduling::of(Policy::Fifo(0));
        assert!(matches!(set_scheduling(&s), Err(Error::InvalidArgument(_))));
        s = Scheduling::other();
        s.nice = 20;
        assert!(matches!(set_scheduling(&s), Err(Error::InvalidArgument(_))));
        s = Scheduling::of(Policy::Deadline);
        assert!(matches!(set_scheduling(&s), Err(Error::InvalidArgument(_))));
        s = Scheduling::other();
        s.util_max = Some(2000);
        assert!(matches!(set_scheduling(&s), Err(Error::InvalidArgument(_))));
        assert!(Policy::RoundRobin(3).is_realtime() && !Policy::Batch.is_realtime());
    }
}
