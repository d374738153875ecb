//! Resource usage of the calling thread: its context switches and minor
//! page faults (`getrusage(RUSAGE_THREAD)`, which rustix does not wrap) and the time
//! it waited runnable for a CPU (`/proc/thread-self/schedstat`).

use std::os::unix::fs::FileExt;

/// Voluntary and involuntary context switches of one thread so far.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Switches {
    /// The thread gave up the CPU (slept, blocked).
    pub voluntary: u64,
    /// The thread was preempted.
    pub involuntary: u64,
}

/// The calling thread's context-switch counts. One system call, no
/// allocation: cheap enough to read at the start and end of every job.
pub fn thread_switches() -> crate::Result<Switches> {
    let usage = thread_rusage()?;
    Ok(Switches {
        voluntary: usage.ru_nvcsw as u64,
        involuntary: usage.ru_nivcsw as u64,
    })
}

/// The calling thread's minor page faults so far (faults served without
/// I/O: a fresh anonymous page's first touch is one).
pub fn thread_minor_faults() -> crate::Result<u64> {
    thread_rusage().map(|usage| usage.ru_minflt as u64)
}

/// `getrusage(RUSAGE_THREAD)`.
fn thread_rusage() -> crate::Result<libc::rusage> {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `usage` points to writable memory of the size of `rusage`,
    // zero-initialised (a valid `rusage`); RUSAGE_THREAD names the calling
    // thread; the kernel does not keep the pointer after the call.
    let status = unsafe { libc::getrusage(libc::RUSAGE_THREAD, usage.as_mut_ptr()) };
    if status != 0 {
        return Err(crate::Error::syscall(
            "getrusage(RUSAGE_THREAD)",
            std::io::Error::last_os_error(),
        ));
    }
    // SAFETY: zero-initialised above and, on success, filled by the kernel.
    Ok(unsafe { usage.assume_init() })
}

/// The time one thread has waited on a run queue so far, runnable but not
/// running (the second field of its `/proc/<pid>/task/<tid>/schedstat`,
/// ns, kept by the kernel's `CONFIG_SCHED_INFO`). A real-time thread that
/// wakes late because a thread above it held the CPU has waited that
/// long; one that wakes late because the host did not run the vCPU has
/// not (its timer fired only when the vCPU ran again).
#[derive(Debug)]
pub struct RunDelay(std::fs::File);

impl RunDelay {
    /// The calling thread's (the file is opened here, for the thread that
    /// opens it; any thread may then read it). `None` where the kernel
    /// keeps no such counts: no file, or one whose count of times on a CPU
    /// (the third field) reads 0 although the calling thread runs (before
    /// Linux 5.14 without SCHEDSTATS and with `nodelayacct`). The first
    /// field cannot tell: the kernel brings a running thread's CPU time up
    /// to date only when it is switched or ticked, so a new thread reads 0.
    /// No heap allocation, not even on failure.
    pub fn of_current_thread() -> Option<RunDelay> {
        let delay = RunDelay(std::fs::File::open("/proc/thread-self/schedstat").ok()?);
        let scheduled = delay.field(2)?;
        (scheduled > 0).then_some(delay)
    }

    /// The time waited so far, ns: one `pread`, no allocation. `None` if
    /// the read fails (the thread ended).
    pub fn read_ns(&self) -> Option<u64> {
        self.field(1)
    }

    /// Field `index` of the line (`<on CPU> <waited> <slices>`).
    fn field(&self, index: usize) -> Option<u64> {
        let mut buffer = [0u8; 96];
        let read = self.0.read_at(&mut buffer, 0).ok()?;
        parse_field(&buffer[..read], index)
    }
}

/// Field `index` of a `schedstat` line, a decimal number.
fn parse_field(line: &[u8], index: usize) -> Option<u64> {
    let field = line
        .split(|b| b.is_ascii_whitespace())
        .filter(|f| !f.is_empty())
        .nth(index)?;
    let mut value = 0u64;
    for &digit in field {
        if !digit.is_ascii_digit() {
            return None;
        }
        value = value
            .checked_mul(10)?
            .checked_add(u64::from(digit - b'0'))?;
    }
    Some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sleeping_counts_a_voluntary_switch() {
        let before = thread_switches().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let after = thread_switches().unwrap();
        assert!(
            after.voluntary > before.voluntary,
            "{before:?} -> {after:?}"
        );
        assert!(after.involuntary >= before.involuntary);
    }

    #[test]
    fn the_run_delay_is_the_second_schedstat_field() {
        let run_delay = |line: &[u8]| parse_field(line, 1);
        assert_eq!(run_delay(b"1477501 320883 2\n"), Some(320_883));
        assert_eq!(parse_field(b"1477501 320883 2\n", 0), Some(1_477_501));
        assert_eq!(run_delay(b"0 0 0"), Some(0));
        assert_eq!(run_delay(b"1477501"), None);
        assert_eq!(run_delay(b"1 -3 2"), None);
        assert_eq!(run_delay(b"1 99999999999999999999999 2"), None);
    }

    /// A thread kept off the CPU by a busier one of higher priority waits
    /// on the run queue: its run delay grows by about what it was kept
    /// waiting. On one CPU, a SCHED_FIFO 20 hog wakes at T and spins 30
    /// ms of its CPU time; a SCHED_FIFO 10 thread's timer fires at T + 5
    /// ms, and it waits behind the hog. T is 20 ms after both are set up
    /// (a delay past it only shortens the wait; the assertion asks 10 ms
    /// of the 25 expected).
    #[test]
    fn waiting_behind_a_higher_priority_thread_is_run_delay() {
        if !crate::testing::privileged_or_skip("SCHED_FIFO threads on one CPU") {
            return;
        }
        if RunDelay::of_current_thread().is_none() {
            eprintln!("skipped: this kernel keeps no run delay (/proc/thread-self/schedstat)");
            return;
        }
        use rustix::time::{ClockId, Timespec, clock_gettime};
        let ns = |t: Timespec| t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64;
        let sleep_until = |at: u64| {
            let at = Timespec {
                tv_sec: (at / 1_000_000_000) as i64,
                tv_nsec: (at % 1_000_000_000) as _,
            };
            while rustix::thread::clock_nanosleep_absolute(rustix::thread::ClockId::Monotonic, &at)
                .is_err()
            {}
        };
        let cpu = *crate::sched::affinity().unwrap().last().unwrap();
        // T is chosen once both threads are pinned at their priorities and
        // the waiter has read its delay, then published through `at`.
        let ready = std::sync::Arc::new(std::sync::Barrier::new(3));
        let at = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let chosen = std::sync::Arc::new(std::sync::Barrier::new(3));
        let hog = {
            let (ready, chosen, at) = (ready.clone(), chosen.clone(), at.clone());
            std::thread::spawn(move || {
                crate::sched::set_affinity(&[cpu]).unwrap();
                crate::sched::set_fifo(20).unwrap();
                ready.wait();
                chosen.wait();
                sleep_until(at.load(std::sync::atomic::Ordering::SeqCst));
                let start = ns(clock_gettime(ClockId::ThreadCPUTime));
                while ns(clock_gettime(ClockId::ThreadCPUTime)) < start + 30_000_000 {}
            })
        };
        let waiter = {
            let (ready, chosen, at) = (ready.clone(), chosen.clone(), at.clone());
            std::thread::spawn(move || {
                crate::sched::set_affinity(&[cpu]).unwrap();
                crate::sched::set_fifo(10).unwrap();
                let delay = RunDelay::of_current_thread().expect("schedstat counts");
                ready.wait();
                chosen.wait();
                let before = delay.read_ns().unwrap();
                sleep_until(at.load(std::sync::atomic::Ordering::SeqCst) + 5_000_000);
                let after = delay.read_ns().unwrap();
                (before, after)
            })
        };
        ready.wait();
        at.store(
            ns(clock_gettime(ClockId::Monotonic)) + 20_000_000,
            std::sync::atomic::Ordering::SeqCst,
        );
        chosen.wait();
        hog.join().unwrap();
        let (before, after) = waiter.join().unwrap();
        assert!(
            after - before >= 10_000_000,
            "waited {} ns behind a hog of 30 ms",
            after - before
        );
    }
}
