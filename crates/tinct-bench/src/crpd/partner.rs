//! The preempting task: a second thread pinned to the victim's CPU that
//! runs only when the victim hands it work, so every call is one
//! preemption — two context switches (Sebek 2002 Section 3.4).
//!
//! Under SCHED_FIFO the partner may run one priority above the victim:
//! the victim's wake-up of the partner then preempts the victim on the
//! spot (Sebek's *interrupt*: the OS switches from the running task to the
//! higher-priority one), and the partner's blocking again hands the CPU
//! back (Sebek's *resume*: the high-priority task yields to the lower one).
//!
//! A [`Wakee`] at the victim's own SCHED_FIFO priority is woken without
//! preempting it: the victim's futex wake then returns once the wakee is
//! queued, and its duration is the hand-off's wake-up alone, which every
//! interrupt also pays before its switch (see `switch.rs`).

use crate::harness::memory_pass::read_pass;
use crate::{Error, Result};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::thread::JoinHandle;
use std::time::Instant;
use tinct_sys::jump_chain::{JumpChain, Layout};

/// What the partner does to the caches when it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wipe {
    /// Nothing: an empty preempting task.
    Nothing,
    /// Reads data buffer `.0` (evicts data and unified caches).
    Data(usize),
    /// Executes jump chain `.0` (evicts instruction and unified caches).
    Code(usize),
}

/// What the partner does when it gets the CPU.
#[derive(Debug)]
enum Job {
    /// Note when the switch arrived (`sent` was stamped by the victim just
    /// before it woke the partner), wipe, and stamp just before handing
    /// the CPU back.
    Switch { sent: Instant, wipe: Wipe },
    /// Wipe and report how long that took.
    Preempt(Wipe),
}

/// The partner's answer.
#[derive(Debug)]
struct Reply {
    /// Victim's stamp to the partner running (switch only).
    interrupt_ns: u64,
    /// Stamped by the partner just before it handed the CPU back.
    replied_at: Instant,
    /// How long the partner's own work took.
    ran_ns: u64,
}

/// One measured preemption: its two context switches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SwitchTimes {
    /// From the victim's stamp before waking the partner to the partner running.
    pub interrupt_ns: u64,
    /// From the partner's stamp before handing back to the victim running.
    pub resume_ns: u64,
}

/// The partner thread.
#[derive(Debug)]
pub struct Partner {
    jobs: Option<Sender<Job>>,
    replies: Receiver<Reply>,
    thread: Option<JoinHandle<()>>,
}

/// What the partner holds to wipe with.
#[derive(Debug, Default, Clone)]
pub struct Wipers {
    /// Data buffers, in bytes.
    pub data_bytes: Vec<u64>,
    /// Jump chains to execute.
    pub chains: Vec<Layout>,
}

impl Partner {
    /// Starts the partner on `cpu` with its wipe buffers and chains, under
    /// SCHED_FIFO `fifo` if given.
    pub fn start(cpu: u32, wipers: &Wipers, fifo: Option<u8>) -> Result<Self> {
        let (job_tx, job_rx) = channel::<Job>();
        let (reply_tx, reply_rx) = channel::<Reply>();
        let (ready_tx, ready_rx) = channel::<Result<()>>();
        let wipers = wipers.clone();
        let thread = std::thread::Builder::new()
            .name("tinct-preempter".into())
            .spawn(move || {
                let setup = || -> Result<(Vec<Vec<u64>>, Vec<JumpChain>)> {
                    tinct_sys::sched::set_affinity(&[cpu])?;
                    if let Some(priority) = fifo {
                        tinct_sys::sched::set_fifo(priority)?;
                    }
                    let data = wipers
                        .data_bytes
                        .iter()
                        .map(|&b| vec![1u64; (b / 8).max(1) as usize])
                        .collect();
                    let chains = wipers
                        .chains
                        .into_iter()
                        .map(JumpChain::new)
                        .collect::<tinct_sys::Result<_>>()?;
                    Ok((data, chains))
                };
                let (data, chains) = match setup() {
                    Ok(w) => {
                        let _ = ready_tx.send(Ok(()));
                        w
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                let wipe = |wipe: Wipe| match wipe {
                    Wipe::Nothing => {}
                    Wipe::Data(i) => {
                        read_pass(&data[i]);
                    }
                    Wipe::Code(i) => chains[i].run(1),
                };
                for job in job_rx {
                    let reply = match job {
                        Job::Switch { sent, wipe: w } => {
                            let interrupt_ns = crate::pinned_threads::nanos(sent.elapsed());
                            let start = Instant::now();
                            wipe(w);
                            let ran_ns = crate::pinned_threads::nanos(start.elapsed());
                            Reply {
                                interrupt_ns,
                                replied_at: Instant::now(),
                                ran_ns,
                            }
                        }
                        Job::Preempt(w) => {
                            let start = Instant::now();
                            wipe(w);
                            Reply {
                                interrupt_ns: 0,
                                ran_ns: crate::pinned_threads::nanos(start.elapsed()),
                                replied_at: Instant::now(),
                            }
                        }
                    };
                    if reply_tx.send(reply).is_err() {
                        return;
                    }
                }
            })
            .map_err(|e| Error::Measurement(format!("cannot start the preempting thread: {e}")))?;
        let started = ready_rx
            .recv()
            .map_err(|_| Error::Measurement("the preempting thread died while starting".into()))?;
        let partner = Self {
            jobs: Some(job_tx),
            replies: reply_rx,
            thread: Some(thread),
        };
        started.map(|()| partner)
    }

    fn call(&self, job: Job) -> Result<Reply> {
        self.jobs
            .as_ref()
            .and_then(|jobs| jobs.send(job).ok())
            .ok_or_else(|| Error::Measurement("the preempting thread is gone".into()))?;
        self.replies
            .recv()
            .map_err(|_| Error::Measurement("the preempting thread is gone".into()))
    }

    /// One preemption by the partner, timed in its two context switches.
    /// With `wipe`, the partner wipes before handing back, so the resume
    /// runs from cold caches (Sebek's worst case).
    pub fn switch(&self, wipe: Wipe) -> Result<SwitchTimes> {
        let reply = self.call(Job::Switch {
            sent: Instant::now(),
            wipe,
        })?;
        Ok(SwitchTimes {
            interrupt_ns: reply.interrupt_ns,
            resume_ns: crate::pinned_threads::nanos(reply.replied_at.elapsed()),
        })
    }

    /// A preemption: the partner runs (wiping, or doing nothing) and hands
    /// the CPU back. Returns the partner's own run time in ns.
    pub fn preempt(&self, wipe: Wipe) -> Result<u64> {
        self.call(Job::Preempt(wipe)).map(|r| r.ran_ns)
    }
}

impl Drop for Partner {
    fn drop(&mut self) {
        self.jobs.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A thread on the victim's CPU at the victim's own SCHED_FIFO priority,
/// asleep on a futex until the victim wakes it. Being of equal priority it
/// does not preempt the victim: the victim's wake returns as soon as the
/// kernel has queued it, so the wake's duration is the hand-off's wake-up
/// without the switch. It speaks a bare futex protocol, not a channel: a
/// channel's receiver spins and yields before it sleeps, and a yield to
/// the equal-priority victim would let the next wake find it still
/// running, when nothing is woken.
#[derive(Debug)]
pub struct Wakee {
    word: std::sync::Arc<std::sync::atomic::AtomicU32>,
    thread: Option<JoinHandle<()>>,
}

/// [`Wakee`] word: the victim handed over a job.
const WAKEE_JOB: u32 = 1;
/// [`Wakee`] word: the wakee answered (and is about to sleep).
const WAKEE_ANSWERED: u32 = 2;
/// [`Wakee`] word: the wakee should end.
const WAKEE_STOP: u32 = 3;

/// Futex waits and wakes within this process.
const FUTEX_PRIVATE: futex::Flags = futex::Flags::PRIVATE;

use rustix::thread::futex;
use std::sync::atomic::{AtomicU32, Ordering};

impl Wakee {
    /// Starts the wakee on `cpu` under SCHED_FIFO `priority` (the victim's own).
    pub fn start(cpu: u32, priority: u8) -> Result<Self> {
        let word = std::sync::Arc::new(AtomicU32::new(WAKEE_ANSWERED));
        let (ready_tx, ready_rx) = channel::<Result<()>>();
        let shared = std::sync::Arc::clone(&word);
        let thread = std::thread::Builder::new()
            .name("tinct-wakee".into())
            .spawn(move || {
                let setup = tinct_sys::sched::set_affinity(&[cpu])
                    .and_then(|()| tinct_sys::sched::set_fifo(priority))
                    .map_err(Error::from);
                let failed = setup.is_err();
                let _ = ready_tx.send(setup);
                if failed {
                    return;
                }
                loop {
                    match shared.load(Ordering::Acquire) {
                        WAKEE_JOB => {
                            shared.store(WAKEE_ANSWERED, Ordering::Release);
                            let _ = futex::wake(&shared, FUTEX_PRIVATE, 1);
                        }
                        WAKEE_STOP => return,
                        seen => {
                            // Returns when woken, or at once if the word moved on.
                            let _ = futex::wait(&shared, FUTEX_PRIVATE, seen, None);
                        }
                    }
                }
            })
            .map_err(|e| Error::Measurement(format!("cannot start the woken thread: {e}")))?;
        let wakee = Self {
            word,
            thread: Some(thread),
        };
        ready_rx
            .recv()
            .map_err(|_| Error::Measurement("the woken thread died while starting".into()))?
            .map(|()| wakee)
    }

    /// One hand-off's wake-up, in ns: the victim's time stamps around its
    /// futex wake of the sleeping wakee. Then it sleeps until the wakee has
    /// answered (not timed). A wake that found the wakee awake woke nobody
    /// and is not a sample: it is made again, up to a few times.
    pub fn wake(&self) -> Result<u64> {
        for _ in 0..8 {
            let handed = Instant::now();
            self.word.store(WAKEE_JOB, Ordering::Release);
            let woken = futex::wake(&self.word, FUTEX_PRIVATE, 1);
            let wake_ns = crate::pinned_threads::nanos(handed.elapsed());
            while self.word.load(Ordering::Acquire) == WAKEE_JOB {
                let _ = futex::wait(&self.word, FUTEX_PRIVATE, WAKEE_JOB, None);
            }
            match woken {
                Ok(1) => return Ok(wake_ns),
                Ok(_) => continue,
                Err(e) => {
                    return Err(Error::Measurement(format!(
                        "futex wake of the woken thread: {e}"
                    )));
                }
            }
        }
        Err(Error::Measurement(
            "the woken thread was awake at 8 wakes in a row: it does not sleep between them".into(),
        ))
    }
}

impl Drop for Wakee {
    fn drop(&mut self) {
        self.word.store(WAKEE_STOP, Ordering::Release);
        let _ = futex::wake(&self.word, FUTEX_PRIVATE, 1);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn switches_and_preemptions_come_back() {
        let cpu = tinct_sys::sched::current_cpu();
        let wipers = Wipers {
            data_bytes: vec![4096],
            chains: if cfg!(target_arch = "x86_64") {
                vec![Layout {
                    lines: 64,
                    line_bytes: 64,
                    words_per_line: vec![1],
                    order: Vec::new(),
                }]
            } else {
                Vec::new()
            },
        };
        let partner = Partner::start(cpu, &wipers, None).unwrap();
        for _ in 0..3 {
            partner.switch(Wipe::Nothing).unwrap();
            partner.switch(Wipe::Data(0)).unwrap();
            partner.preempt(Wipe::Data(0)).unwrap();
            partner.preempt(Wipe::Nothing).unwrap();
            if cfg!(target_arch = "x86_64") {
                partner.preempt(Wipe::Code(0)).unwrap();
            }
        }
    }

    /// The wakee answers every wake and each wake woke it from its sleep
    /// (`wake` refuses a wake that woke nobody). Needs SCHED_FIFO: skipped
    /// with the reason without CAP_SYS_NICE, failed there where privileged
    /// tests are required.
    #[test]
    fn a_wakee_of_the_victims_priority_is_woken_from_sleep_every_time() {
        let cpu = tinct_sys::sched::current_cpu();
        let _pin = crate::harness::pin::PinGuard::pin(cpu).unwrap();
        let priority = 10;
        if !tinct_sys::testing::capable_or_skip(
            "a SCHED_FIFO victim and wakee",
            tinct_sys::privilege::Capability::SysNice,
        ) {
            return;
        }
        tinct_sys::sched::set_fifo(priority).unwrap();
        let measured = Wakee::start(cpu, priority)
            .map(|wakee| (0..50).map(|_| wakee.wake()).collect::<Result<Vec<u64>>>());
        tinct_sys::sched::set_other().unwrap();
        let wakes = measured.unwrap().unwrap();
        assert_eq!(wakes.len(), 50);
        assert!(wakes.iter().all(|&ns| ns > 0));
    }

    #[test]
    fn a_bad_cpu_is_reported_at_start() {
        let err = Partner::start(100_000, &Wipers::default(), None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("100000") || err.contains("CPU"), "{err}");
    }
}
