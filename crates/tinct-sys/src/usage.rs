//! Resource usage of the calling thread (`getrusage(RUSAGE_THREAD)`),
//! which rustix does not wrap.

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
    let usage = unsafe { usage.assume_init() };
    Ok(Switches {
        voluntary: usage.ru_nvcsw as u64,
        involuntary: usage.ru_nivcsw as u64,
    })
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
}
