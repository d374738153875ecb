//! The preempting task: a second thread pinned to the victim's CPU that
//! runs only when the victim hands the CPU over, so every handoff is one
//! context switch in each direction (Sebek 2002 Section 3.4: a preemption
//! is two context switches).

use crate::calibrate::stream::read_pass;
use crate::{Error, Result};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::thread::JoinHandle;
use std::time::Instant;

/// What the partner does when it gets the CPU.
#[derive(Debug)]
enum Job {
    /// Note when the switch arrived (`sent` was stamped by the victim just
    /// before it gave up the CPU); then read wipe buffer `wipe` if any.
    Switch { sent: Instant, wipe: Option<usize> },
    /// Read wipe buffer `.0` (the preempter wiping a cache level), or
    /// nothing if `None` (an empty preempting task).
    Preempt(Option<usize>),
}

/// The partner thread.
#[derive(Debug)]
pub struct Partner {
    jobs: Option<Sender<Job>>,
    replies: Receiver<u64>,
    thread: Option<JoinHandle<()>>,
}

impl Partner {
    /// Starts the partner on `cpu` with the given wipe buffer sizes (bytes),
    /// under SCHED_FIFO `fifo` if given.
    pub fn start(cpu: u32, wipe_bytes: &[u64], fifo: Option<u8>) -> Result<Self> {
        let (job_tx, job_rx) = channel::<Job>();
        let (reply_tx, reply_rx) = channel::<u64>();
        let (ready_tx, ready_rx) = channel::<Result<()>>();
        let sizes = wipe_bytes.to_vec();
        let thread = std::thread::Builder::new()
            .name("tinct-preempter".into())
            .spawn(move || {
                let setup = || -> Result<Vec<Vec<u64>>> {
                    tinct_sys::sched::set_affinity(&[cpu])?;
                    if let Some(priority) = fifo {
                        tinct_sys::sched::set_fifo(priority)?;
                    }
                    Ok(sizes
                        .iter()
                        .map(|&b| vec![1u64; (b / 8).max(1) as usize])
                        .collect())
                };
                let wipes = match setup() {
                    Ok(w) => {
                        let _ = ready_tx.send(Ok(()));
                        w
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                for job in job_rx {
                    let reply = match job {
                        Job::Switch { sent, wipe } => {
                            let latency = sent.elapsed().as_nanos() as u64;
                            if let Some(i) = wipe {
                                read_pass(&wipes[i]);
                            }
                            latency
                        }
                        Job::Preempt(wipe) => {
                            let start = Instant::now();
                            if let Some(i) = wipe {
                                read_pass(&wipes[i]);
                            }
                            start.elapsed().as_nanos() as u64
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

    fn call(&self, job: Job) -> Result<u64> {
        self.jobs
            .as_ref()
            .and_then(|jobs| jobs.send(job).ok())
            .ok_or_else(|| Error::Measurement("the preempting thread is gone".into()))?;
        self.replies
            .recv()
            .map_err(|_| Error::Measurement("the preempting thread is gone".into()))
    }

    /// One context switch to the partner; returns its latency in ns (from
    /// just before the victim blocks to the partner running). With `wipe`,
    /// the partner then reads that wipe buffer before handing back, so the
    /// next switch finds the caches cold (Sebek's worst case).
    pub fn switch(&self, wipe: Option<usize>) -> Result<u64> {
        self.call(Job::Switch {
            sent: Instant::now(),
            wipe,
        })
    }

    /// A preemption: the partner runs (wiping buffer `wipe`, or doing nothing)
    /// and hands the CPU back. Returns the partner's own run time in ns.
    pub fn preempt(&self, wipe: Option<usize>) -> Result<u64> {
        self.call(Job::Preempt(wipe))
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
        let partner = Partner::start(cpu, &[4096], None).unwrap();
        for _ in 0..3 {
            partner.switch(None).unwrap();
            partner.switch(Some(0)).unwrap();
            partner.preempt(Some(0)).unwrap();
            partner.preempt(None).unwrap();
        }
    }

    #[test]
    fn a_bad_cpu_is_reported_at_start() {
        let err = Partner::start(100_000, &[], None).unwrap_err().to_string();
        assert!(err.contains("100000") || err.contains("CPU"), "{err}");
    }
}
