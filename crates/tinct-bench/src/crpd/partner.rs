//! The preempting task: a second thread pinned to the victim's CPU that
//! runs only when the victim hands it work, so every call is one
//! preemption — two context switches (Sebek 2002 Section 3.4).
//!
//! Under SCHED_FIFO the partner may run one priority above the victim:
//! the victim's wake-up of the partner then preempts the victim on the
//! spot (Sebek's *interrupt*: the OS switches from the running task to the
//! higher-priority one), and the partner's blocking again hands the CPU
//! back (Sebek's *resume*: the high-priority task yields to the lower one).

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

    #[test]
    fn a_bad_cpu_is_reported_at_start() {
        let err = Partner::start(100_000, &Wipers::default(), None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("100000") || err.contains("CPU"), "{err}");
    }
}
