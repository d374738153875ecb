//! POSIX mutexes with a priority protocol and condition variables on
//! CLOCK_MONOTONIC, for threads that lock in one step and unlock in a later
//! one (rt-app's `lock`/`unlock` events, critical sections of a job).
//!
//! - [`RtMutex`]: a `pthread_mutex_t` of type ERRORCHECK (unlocking a mutex
//!   the caller does not hold is an error, never undefined behaviour) with
//!   the protocol [`Protocol::Inherit`] (PTHREAD_PRIO_INHERIT: the holder
//!   runs at the priority of its highest waiter, futex PI in the kernel),
//!   [`Protocol::Protect`] (PTHREAD_PRIO_PROTECT: the immediate priority
//!   ceiling protocol, the holder runs at the ceiling) or none. Locking has
//!   a timeout so that a waiter can look at a stop flag.
//! - [`CondVar`]: a `pthread_cond_t` waited on with an absolute
//!   CLOCK_MONOTONIC timeout, again so that waiters can look at a stop flag.
//!
//! glibc caches a thread's priority at its first ceiling lock (it reads it
//! once with `sched_getparam`): a thread must have its final real-time
//! priority before it first locks a [`Protocol::Protect`] mutex.
//!
//! Both live in a `Box` (a pthread object must never move once
//! initialised) and never allocate after construction.

use crate::error::{Error, Result};
use std::cell::UnsafeCell;

/// The priority protocol of an [`RtMutex`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(tag = "protocol", content = "ceiling"))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum Protocol {
    /// A plain mutex (no priority protocol: unbounded priority inversion).
    None,
    /// Priority inheritance (PTHREAD_PRIO_INHERIT).
    Inherit,
    /// The immediate priority ceiling protocol at this SCHED_FIFO priority
    /// (PTHREAD_PRIO_PROTECT). Only real-time threads may lock it.
    Protect(u8),
}

/// What a bounded wait ended with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waited {
    /// Locked, or woken by a signal (possibly spuriously, as POSIX allows).
    Done,
    /// The timeout passed first.
    TimedOut,
}

unsafe extern "C" {
    // glibc has it; the libc crate does not declare it for Linux.
    fn pthread_mutexattr_setprioceiling(
        attr: *mut libc::pthread_mutexattr_t,
        prioceiling: libc::c_int,
    ) -> libc::c_int;
}

fn check(call: &str, status: libc::c_int) -> Result<()> {
    if status == 0 {
        Ok(())
    } else {
        Err(Error::syscall(
            call.to_string(),
            std::io::Error::from_raw_os_error(status),
        ))
    }
}

fn timespec(ns: u64) -> libc::timespec {
    libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    }
}

fn realtime_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Realtime);
    (t.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(t.tv_nsec as u64)
}

fn monotonic_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    (t.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(t.tv_nsec as u64)
}

/// A POSIX mutex with a priority protocol (see the module docs).
pub struct RtMutex {
    inner: Box<UnsafeCell<libc::pthread_mutex_t>>,
    protocol: Protocol,
}

// SAFETY: a pthread mutex is made to be shared between threads; every
// access goes through the pthread functions, which synchronise.
unsafe impl Send for RtMutex {}
// SAFETY: as above.
unsafe impl Sync for RtMutex {}

impl RtMutex {
    /// A new unlocked mutex with `protocol`.
    pub fn new(protocol: Protocol) -> Result<RtMutex> {
        // SAFETY: an all-zero pthread_mutexattr_t is valid storage for
        // pthread_mutexattr_init, which initialises it.
        let mut attr: libc::pthread_mutexattr_t = unsafe { std::mem::zeroed() };
        // SAFETY: `attr` is valid, writable storage.
        check("pthread_mutexattr_init", unsafe {
            libc::pthread_mutexattr_init(&mut attr)
        })?;
        let configured = (|| {
            // SAFETY: `attr` was initialised above.
            check("pthread_mutexattr_settype(ERRORCHECK)", unsafe {
                libc::pthread_mutexattr_settype(&mut attr, libc::PTHREAD_MUTEX_ERRORCHECK)
            })?;
            let kind = match protocol {
                Protocol::None => libc::PTHREAD_PRIO_NONE,
                Protocol::Inherit => libc::PTHREAD_PRIO_INHERIT,
                Protocol::Protect(_) => libc::PTHREAD_PRIO_PROTECT,
            };
            // SAFETY: `attr` was initialised above.
            check("pthread_mutexattr_setprotocol", unsafe {
                libc::pthread_mutexattr_setprotocol(&mut attr, kind)
            })?;
            if let Protocol::Protect(ceiling) = protocol {
                // SAFETY: `attr` was initialised above; glibc checks the value.
                check("pthread_mutexattr_setprioceiling", unsafe {
                    pthread_mutexattr_setprioceiling(&mut attr, libc::c_int::from(ceiling))
                })?;
            }
            Ok(())
        })();
        // SAFETY: an all-zero pthread_mutex_t is valid storage for
        // pthread_mutex_init.
        let inner = Box::new(UnsafeCell::new(unsafe { std::mem::zeroed() }));
        let initialised = configured.and_then(|()| {
            // SAFETY: `inner` is boxed (it never moves again) and `attr` is
            // initialised; the mutex copies what it needs from `attr`.
            check("pthread_mutex_init", unsafe {
                libc::pthread_mutex_init(inner.get(), &attr)
            })
        });
        // SAFETY: `attr` was initialised and is no longer used.
        unsafe { libc::pthread_mutexattr_destroy(&mut attr) };
        initialised?;
        Ok(RtMutex { inner, protocol })
    }

    /// Its protocol.
    pub fn protocol(&self) -> Protocol {
        self.protocol
    }

    /// Locks, waiting at most until `until_monotonic_ns` (CLOCK_MONOTONIC).
    /// Errors: EDEADLK if the caller already holds it, EINVAL for a ceiling
    /// below the caller's priority or a non-real-time caller of a
    /// [`Protocol::Protect`] mutex.
    pub fn lock_until(&self, until_monotonic_ns: u64) -> Result<Waited> {
        // pthread_mutex_timedlock measures on CLOCK_REALTIME: convert the
        // remaining time (a clock step only makes one look early or late).
        let left = until_monotonic_ns.saturating_sub(monotonic_ns());
        let abstime = timespec(realtime_ns().saturating_add(left));
        // SAFETY: the mutex is initialised and pinned in its box; `abstime`
        // is valid for the call.
        let status = unsafe { libc::pthread_mutex_timedlock(self.inner.get(), &abstime) };
        match status {
            0 => Ok(Waited::Done),
            libc::ETIMEDOUT => Ok(Waited::TimedOut),
            other => check("pthread_mutex_timedlock", other).map(|()| Waited::Done),
        }
    }

    /// Unlocks. EPERM if the calling thread does not hold it.
    pub fn unlock(&self) -> Result<()> {
        // SAFETY: the mutex is initialised; ERRORCHECK makes an unlock by a
        // thread that does not hold it an EPERM error, not undefined behaviour.
        check("pthread_mutex_unlock", unsafe {
            libc::pthread_mutex_unlock(self.inner.get())
        })
    }
}

impl Drop for RtMutex {
    fn drop(&mut self) {
        // SAFETY: the mutex is initialised and, with `&mut self`, no thread
        // can be using it; destroying a locked mutex returns EBUSY, harmless.
        unsafe { libc::pthread_mutex_destroy(self.inner.get()) };
    }
}

/// A POSIX condition variable on CLOCK_MONOTONIC (see the module docs).
pub struct CondVar {
    inner: Box<UnsafeCell<libc::pthread_cond_t>>,
}

// SAFETY: a pthread condition variable is made to be shared between
// threads; every access goes through the pthread functions.
unsafe impl Send for CondVar {}
// SAFETY: as above.
unsafe impl Sync for CondVar {}

impl CondVar {
    /// A new condition variable whose timeouts are CLOCK_MONOTONIC instants.
    pub fn new() -> Result<CondVar> {
        // SAFETY: all-zero storage is valid for pthread_condattr_init.
        let mut attr: libc::pthread_condattr_t = unsafe { std::mem::zeroed() };
        // SAFETY: `attr` is valid, writable storage.
        check("pthread_condattr_init", unsafe {
            libc::pthread_condattr_init(&mut attr)
        })?;
        // SAFETY: `attr` was initialised above.
        let clock = check("pthread_condattr_setclock", unsafe {
            libc::pthread_condattr_setclock(&mut attr, libc::CLOCK_MONOTONIC)
        });
        // SAFETY: all-zero storage is valid for pthread_cond_init.
        let inner = Box::new(UnsafeCell::new(unsafe { std::mem::zeroed() }));
        let initialised = clock.and_then(|()| {
            // SAFETY: `inner` is boxed (never moves again), `attr` initialised.
            check("pthread_cond_init", unsafe {
                libc::pthread_cond_init(inner.get(), &attr)
            })
        });
        // SAFETY: `attr` was initialised and is no longer used.
        unsafe { libc::pthread_condattr_destroy(&mut attr) };
        initialised?;
        Ok(CondVar { inner })
    }

    /// Waits for a signal with `mutex` held by the caller (released while
    /// waiting, held again on return, whatever the outcome), at most until
    /// `until_monotonic_ns`. EPERM if the caller does not hold `mutex`.
    pub fn wait_until(&self, mutex: &RtMutex, until_monotonic_ns: u64) -> Result<Waited> {
        let abstime = timespec(until_monotonic_ns);
        // SAFETY: both objects are initialised and pinned; ERRORCHECK makes
        // a wait without holding the mutex an EPERM error.
        let status =
            unsafe { libc::pthread_cond_timedwait(self.inner.get(), mutex.inner.get(), &abstime) };
        match status {
            0 => Ok(Waited::Done),
            libc::ETIMEDOUT => Ok(Waited::TimedOut),
            other => check("pthread_cond_timedwait", other).map(|()| Waited::Done),
        }
    }

    /// Wakes one waiter, if any (a signal nobody waits for is lost).
    pub fn signal(&self) {
        // SAFETY: the condition variable is initialised and pinned.
        unsafe { libc::pthread_cond_signal(self.inner.get()) };
    }

    /// Wakes every waiter.
    pub fn broadcast(&self) {
        // SAFETY: the condition variable is initialised and pinned.
        unsafe { libc::pthread_cond_broadcast(self.inner.get()) };
    }
}

impl Drop for CondVar {
    fn drop(&mut self) {
        // SAFETY: initialised; `&mut self` means no thread waits on it.
        unsafe { libc::pthread_cond_destroy(self.inner.get()) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    fn soon(ms: u64) -> u64 {
        monotonic_ns() + ms * 1_000_000
    }

    #[test]
    fn a_held_mutex_times_out_for_others_and_errors_for_a_non_owner() {
        let m = Arc::new(RtMutex::new(Protocol::Inherit).unwrap());
        assert_eq!(m.lock_until(soon(100)).unwrap(), Waited::Done);
        assert!(m.lock_until(soon(10)).is_err(), "EDEADLK: already held");
        let other = m.clone();
        let (timed_out, unlock) =
            std::thread::spawn(move || (other.lock_until(soon(20)).unwrap(), other.unlock()))
                .join()
                .unwrap();
        assert_eq!(timed_out, Waited::TimedOut);
        assert!(unlock.is_err(), "EPERM: not the owner");
        m.unlock().unwrap();
        assert!(m.unlock().is_err(), "EPERM: no longer held");
    }

    #[test]
    fn a_signal_wakes_a_waiter_and_a_wait_without_the_mutex_is_an_error() {
        let m = Arc::new(RtMutex::new(Protocol::None).unwrap());
        let c = Arc::new(CondVar::new().unwrap());
        assert!(c.wait_until(&m, soon(5)).is_err(), "EPERM: mutex not held");
        let ready = Arc::new(AtomicBool::new(false));
        let (m2, c2, ready2) = (m.clone(), c.clone(), ready.clone());
        let waiter = std::thread::spawn(move || {
            m2.lock_until(soon(1000)).unwrap();
            ready2.store(true, Ordering::SeqCst);
            let mut woken = false;
            for _ in 0..500 {
                if c2.wait_until(&m2, soon(10)).unwrap() == Waited::Done {
                    woken = true;
                    break;
                }
            }
            m2.unlock().unwrap();
            woken
        });
        while !ready.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
        // The waiter holds the mutex until it waits: taking it here means
        // it is waiting now.
        m.lock_until(soon(1000)).unwrap();
        c.signal();
        m.unlock().unwrap();
        assert!(waiter.join().unwrap(), "the signal woke the waiter");
        m.lock_until(soon(100)).unwrap();
        assert_eq!(c.wait_until(&m, soon(5)).unwrap(), Waited::TimedOut);
        m.unlock().unwrap();
    }

    #[test]
    fn a_ceiling_mutex_is_refused_to_a_thread_above_its_ceiling() {
        if !crate::testing::privileged_or_skip("SCHED_FIFO for the priority ceiling") {
            return;
        }
        let m = Arc::new(RtMutex::new(Protocol::Protect(20)).unwrap());
        assert_eq!(m.protocol(), Protocol::Protect(20));
        let m2 = m.clone();
        let below = std::thread::spawn(move || {
            crate::sched::set_fifo(10).unwrap();
            let locked = m2.lock_until(soon(100));
            let during = crate::sched::policy().unwrap();
            m2.unlock().unwrap();
            locked.map(|_| during)
        })
        .join()
        .unwrap();
        // glibc caches a thread's priority at its first ceiling lock: a
        // thread must have its final priority before it locks one.
        let m3 = m.clone();
        let above = std::thread::spawn(move || {
            crate::sched::set_fifo(30).unwrap();
            m3.lock_until(soon(100))
        })
        .join()
        .unwrap();
        assert_eq!(
            below.unwrap(),
            crate::sched::Policy::Fifo(20),
            "the holder runs at the ceiling"
        );
        assert!(above.is_err(), "EINVAL: the caller is above the ceiling");
    }
}
