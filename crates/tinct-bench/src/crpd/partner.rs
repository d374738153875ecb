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
//! The hand-over is a bare futex ([`Slot`]): the victim posts the job in
//! atomics and wakes the partner with one `FUTEX_WAKE`, the partner sleeps
//! in `FUTEX_WAIT` and answers the same way. No channel: its user-space
//! work (queues, wakers, a receiver that spins and yields before it
//! sleeps) would sit inside the interrupt, which Sebek's kernel probes
//! did not time, and a tinct task is woken by its timer, not by a queue.
//!
//! A partner at the victim's own priority is woken without preempting it
//! ([`Partner::wake`]): the victim's `FUTEX_WAKE` returns once the partner
//! is queued, and its duration is the hand-off's wake-up alone, which every
//! interrupt also pays before its switch (see `switch.rs`).

use crate::harness::memory_pass::read_pass;
use crate::{Error, Result};
use rustix::thread::futex;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::thread::JoinHandle;
use tinct_rt::clock::now_ns;
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

impl Wipe {
    /// The wipe as one word of the slot: kind in the high half, index in the low.
    fn encode(self) -> u64 {
        match self {
            Wipe::Nothing => 0,
            Wipe::Data(i) => 1 << 32 | i as u64,
            Wipe::Code(i) => 2 << 32 | i as u64,
        }
    }

    fn decode(word: u64) -> Wipe {
        let index = (word & u64::from(u32::MAX)) as usize;
        match word >> 32 {
            1 => Wipe::Data(index),
            2 => Wipe::Code(index),
            _ => Wipe::Nothing,
        }
    }
}

/// One measured preemption: its two context switches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SwitchTimes {
    /// From the victim's stamp before waking the partner to the partner running.
    pub interrupt_ns: u64,
    /// From the partner's stamp before handing back to the victim running.
    pub resume_ns: u64,
}

/// The slot's word: the partner answered (or has nothing to do yet).
const ANSWERED: u32 = 0;
/// The slot's word: the partner is about to sleep, or asleep.
const ASLEEP: u32 = 1;
/// The slot's word: the victim posted a job.
const POSTED: u32 = 2;
/// The slot's word: the partner should end.
const STOP: u32 = 3;

/// The futex hand-over between the victim and the partner: the job in,
/// the answer out, and the word both sleep on.
#[derive(Debug, Default)]
struct Slot {
    word: AtomicU32,
    /// The posted wipe ([`Wipe::encode`]).
    wipe: AtomicU64,
    /// The victim's stamp just before the wake (CLOCK_MONOTONIC, ns).
    posted_ns: AtomicU64,
    /// The partner's first stamp after it woke.
    woke_ns: AtomicU64,
    /// The partner's stamp just before it answered.
    answered_ns: AtomicU64,
}

/// Futex waits and wakes within this process.
const PRIVATE: futex::Flags = futex::Flags::PRIVATE;

/// Attempts at a job that must wake the partner from its sleep before the
/// call gives up (a wake finds nobody asleep when it falls between the
/// partner's last look at the word and its `FUTEX_WAIT`).
const ATTEMPTS: u32 = 100;

/// The partner thread.
#[derive(Debug)]
pub struct Partner {
    slot: Arc<Slot>,
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
        let slot = Arc::new(Slot::default());
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<()>>();
        let wipers = wipers.clone();
        let shared = Arc::clone(&slot);
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
                serve(&shared, wipe);
            })
            .map_err(|e| Error::Measurement(format!("cannot start the preempting thread: {e}")))?;
        let partner = Self {
            slot,
            thread: Some(thread),
        };
        ready_rx
            .recv()
            .map_err(|_| Error::Measurement("the preempting thread died while starting".into()))?
            .map(|()| partner)
    }

    /// Posts `wipe` and wakes the partner from its sleep (posting again
    /// while a wake finds it awake), then sleeps until it answered.
    /// Returns the victim's stamp right after its `FUTEX_WAKE` returned,
    /// and whether the partner had run by then.
    fn hand_over(&self, wipe: Wipe) -> Result<(u64, bool)> {
        let slot = &*self.slot;
        for _ in 0..ATTEMPTS {
            // The partner must be asleep for the wake to be a wake-up. It
            // is, under SCHED_FIFO (it ran on until it slept); under
            // SCHED_OTHER the victim may be back first, and lets it on.
            while slot.word.load(Ordering::Acquire) != ASLEEP {
                if self.thread.as_ref().is_none_or(|t| t.is_finished()) {
                    return Err(Error::Measurement("the preempting thread is gone".into()));
                }
                std::thread::yield_now();
            }
            slot.wipe.store(wipe.encode(), Ordering::Relaxed);
            slot.posted_ns.store(now_ns(), Ordering::Relaxed);
            slot.word.store(POSTED, Ordering::Release);
            let woken = futex::wake(&slot.word, PRIVATE, 1);
            let returned_ns = now_ns();
            let ran = slot.word.load(Ordering::Acquire) != POSTED;
            let woken = woken.map_err(|e| {
                Error::Measurement(format!("futex wake of the preempting thread: {e}"))
            })?;
            while slot.word.load(Ordering::Acquire) == POSTED {
                let _ = futex::wait(&slot.word, PRIVATE, POSTED, None);
            }
            if woken == 1 {
                return Ok((returned_ns, ran));
            }
        }
        Err(Error::Measurement(format!(
            "the preempting thread was awake at {ATTEMPTS} hand-overs in a row: it does not sleep \
             between jobs"
        )))
    }

    /// One preemption by the partner, timed in its two context switches.
    /// With `wipe`, the partner wipes before handing back, so the resume
    /// runs from cold caches (Sebek's worst case).
    pub fn switch(&self, wipe: Wipe) -> Result<SwitchTimes> {
        let (returned_ns, ran) = self.hand_over(wipe)?;
        // Preempted by the wake, the victim is back when the wake returns;
        // not preempted (SCHED_OTHER), when its sleep for the answer ended.
        let back_ns = if ran { returned_ns } else { now_ns() };
        let slot = &*self.slot;
        let posted = slot.posted_ns.load(Ordering::Relaxed);
        Ok(SwitchTimes {
            interrupt_ns: slot.woke_ns.load(Ordering::Relaxed).saturating_sub(posted),
            resume_ns: back_ns.saturating_sub(slot.answered_ns.load(Ordering::Relaxed)),
        })
    }

    /// A preemption: the partner runs (wiping, or doing nothing) and hands
    /// the CPU back. Returns the partner's own run time in ns.
    pub fn preempt(&self, wipe: Wipe) -> Result<u64> {
        self.hand_over(wipe)?;
        let slot = &*self.slot;
        Ok(slot
            .answered_ns
            .load(Ordering::Relaxed)
            .saturating_sub(slot.woke_ns.load(Ordering::Relaxed)))
    }

    /// The hand-off's wake-up alone, in ns: the victim's stamps around its
    /// `FUTEX_WAKE` of the sleeping partner, which must not preempt it (a
    /// partner at the victim's own SCHED_FIFO priority on its CPU is
    /// queued, not run). An error if the partner ran before the wake
    /// returned: then the wake held a switch.
    pub fn wake(&self) -> Result<u64> {
        let (returned_ns, ran) = self.hand_over(Wipe::Nothing)?;
        if ran {
            return Err(Error::Measurement(
                "the woken thread ran before its wake returned: it preempted the victim, so the \
                 wake-up alone needs a thread of the victim's own priority"
                    .into(),
            ));
        }
        Ok(returned_ns.saturating_sub(self.slot.posted_ns.load(Ordering::Relaxed)))
    }
}

/// The partner's loop: says it is going to sleep and sleeps on the slot's
/// word until a job is posted, then stamps, wipes, stamps and answers;
/// ends at [`STOP`].
fn serve(slot: &Slot, wipe: impl Fn(Wipe)) {
    loop {
        match slot.word.load(Ordering::Acquire) {
            POSTED => {
                slot.woke_ns.store(now_ns(), Ordering::Relaxed);
                wipe(Wipe::decode(slot.wipe.load(Ordering::Relaxed)));
                slot.answered_ns.store(now_ns(), Ordering::Relaxed);
                slot.word.store(ANSWERED, Ordering::Release);
                let _ = futex::wake(&slot.word, PRIVATE, 1);
            }
            ANSWERED => {
                // Only the victim posts, and only once it reads ASLEEP.
                let _ = slot.word.compare_exchange(
                    ANSWERED,
                    ASLEEP,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                );
            }
            STOP => return,
            asleep => {
                // Returns when woken, or at once if the word moved on.
                let _ = futex::wait(&slot.word, PRIVATE, asleep, None);
            }
        }
    }
}

impl Drop for Partner {
    fn drop(&mut self) {
        self.slot.word.store(STOP, Ordering::Release);
        let _ = futex::wake(&self.slot.word, PRIVATE, 1);
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

    /// A partner of the victim's own priority is woken from its sleep at
    /// every wake and does not run before the wake returns (`wake` fails
    /// otherwise), and one a level above does preempt: `wake` refuses it.
    /// Needs SCHED_FIFO: skipped with the reason without CAP_SYS_NICE,
    /// failed there where privileged tests are required.
    #[test]
    fn a_partner_of_the_victims_priority_is_woken_without_preempting() {
        if !tinct_sys::testing::capable_or_skip(
            "a SCHED_FIFO victim and its partners",
            tinct_sys::privilege::Capability::SysNice,
        ) {
            return;
        }
        let _serial = tinct_sys::testing::serial();
        let cpu = tinct_sys::sched::current_cpu();
        let _pin = crate::harness::pin::PinGuard::pin(cpu).unwrap();
        let priority = 10;
        tinct_sys::sched::set_fifo(priority).unwrap();
        let beside = Partner::start(cpu, &Wipers::default(), Some(priority))
            .and_then(|p| (0..50).map(|_| p.wake()).collect::<Result<Vec<u64>>>());
        let above = Partner::start(cpu, &Wipers::default(), Some(priority + 1))
            .and_then(|p| Ok((p.wake(), p.switch(Wipe::Nothing)?)));
        tinct_sys::sched::set_other().unwrap();
        assert_eq!(beside.unwrap().len(), 50);
        let (refused, switched) = above.unwrap();
        let refused = refused.unwrap_err().to_string();
        assert!(refused.contains("preempted the victim"), "{refused}");
        assert!(switched.interrupt_ns > 0 && switched.resume_ns > 0);
    }

    #[test]
    fn a_bad_cpu_is_reported_at_start() {
        let err = Partner::start(100_000, &Wipers::default(), None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("100000") || err.contains("CPU"), "{err}");
    }
}
