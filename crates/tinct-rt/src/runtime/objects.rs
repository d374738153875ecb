//! The run's named objects while it runs (built from
//! [`crate::spec::Resources`] before the release): mutexes with their
//! protocol, condition variables, barriers, timers, fork gates and the I/O
//! device. Every wait here is bounded so that a waiter notices the end of
//! the run ([`Until`]); nothing here allocates after construction.

use crate::clock::{STOP_POLL_NS, now_ns};
use crate::pipeline::{CacheNeighbours, Placement};
use crate::spec::{Protocol, Resources, RunSpec};
use crate::{Result, RtError};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use tinct_base::InputError;
use tinct_sys::sync::{CondVar, RtMutex, Waited};

/// When a blocking step gives up: the run was stopped, or it reached its
/// end (threads blocked on each other are released then, as rt-app's
/// shutdown wakes every waiter).
#[derive(Copy, Clone)]
pub(super) struct Until<'a> {
    pub(super) stop: &'a AtomicBool,
    pub(super) ending: &'a AtomicBool,
}

impl Until<'_> {
    pub(super) fn reached(&self) -> bool {
        self.stop.load(Ordering::Relaxed) || self.ending.load(Ordering::Relaxed)
    }

    fn next_look() -> u64 {
        now_ns().saturating_add(STOP_POLL_NS)
    }
}

/// How a blocking step ended.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum Blocked {
    /// It got what it waited for.
    Done,
    /// The run stopped or ended first.
    GaveUp,
    /// The system refused (a workload error, e.g. unlocking a mutex not held).
    Failed(&'static str),
    /// A write of `iorun` to the I/O device failed with this errno (0: it
    /// wrote nothing); [`Objects::io_failure`] words it.
    IoFailed(i32),
}

/// A barrier: `parties` arrivals release everyone (rt-app `barrier`).
struct Barrier {
    mutex: RtMutex,
    cond: CondVar,
    parties: u64,
    arrived: AtomicU64,
    generation: AtomicU64,
}

/// A timer's next tick (0: not started yet).
struct Timer {
    next_ns: AtomicU64,
    absolute: bool,
}

/// Threads waiting to be forked: `granted` of them may start.
pub(super) struct ForkGate {
    pub(super) granted: AtomicU64,
    pub(super) slots: u64,
    /// When each slot was forked (0: not yet), in slot order.
    pub(super) forked_at: Vec<AtomicU64>,
}

/// A one-packet buffer ([`crate::spec::ChannelSpec`]); the fields change
/// only under its mutex.
struct Channel {
    mutex: RtMutex,
    /// Wakes the consumer (a packet came) and a blocked producer (taken).
    cond: CondVar,
    blocking: bool,
    /// A packet waits to be taken.
    full: AtomicBool,
    /// Number of the last sample handed over (from 1).
    sent: AtomicU64,
    /// When it was handed over, and the producer's CPU then.
    handed_at: AtomicU64,
    producer_cpu: AtomicU32,
    /// The packet: written by the producer at each hand-over, read by the
    /// consumer when it takes it (the data whose cache locality the
    /// placements are about).
    packet: Vec<AtomicU64>,
    /// Sum of the words the consumer read last (so that the reads happen).
    checksum: AtomicU64,
    /// The task that takes its packets (`None`: no task receives).
    consumer: Option<usize>,
    /// Under the `affinity` placement, the CPU the producer of the last
    /// packet placed the consumer on before handing it over, plus one (0:
    /// not placed).
    placed_on: AtomicU32,
}

impl Channel {
    /// Locks the buffer once `ready(full)` holds, waiting on its condition
    /// (the lock is held on `Ok`); gives up, unlocked, when the run ends.
    fn lock_when(
        &self,
        until: Until<'_>,
        ready: impl Fn(bool) -> bool,
    ) -> std::result::Result<(), Blocked> {
        match Objects::lock_or_give_up(&self.mutex, until) {
            Blocked::Done => {}
            other => return Err(other),
        }
        while !ready(self.full.load(Ordering::Relaxed)) {
            let failed = if until.reached() {
                Some(Blocked::GaveUp)
            } else {
                self.cond
                    .wait_until(&self.mutex, Until::next_look())
                    .is_err()
                    .then_some(Blocked::Failed("a buffer's wait was refused"))
            };
            if let Some(blocked) = failed {
                let _ = self.mutex.unlock();
                return Err(blocked);
            }
        }
        Ok(())
    }
}

/// A data-triggered job's inputs, taken.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) struct Handover {
    /// The last hand-over among the inputs: the job's release.
    pub(super) at_ns: u64,
    /// The CPU of that producer when it handed over.
    pub(super) producer_cpu: u32,
    /// The number of the sample taken from the last input.
    pub(super) sample: u64,
    /// The CPU that producer placed the consumer on before the hand-over
    /// (the `affinity` placement).
    pub(super) placed: Option<u32>,
}

/// Every named object of a run.
pub(super) struct Objects {
    mutexes: Vec<RtMutex>,
    conds: Vec<CondVar>,
    barriers: Vec<Barrier>,
    timers: Vec<Timer>,
    pub(super) forks: Vec<ForkGate>,
    channels: Vec<Channel>,
    /// Per task: the CPU its latest job started on, plus one (0: none yet);
    /// the `affinity` placement counts the run's tasks per CPU with it.
    task_cpus: Vec<AtomicU32>,
    /// Per task: its thread's id (0: not started yet), for a producer to
    /// place it before a hand-over.
    task_threads: Vec<std::sync::atomic::AtomicI32>,
    /// Per task: the CPU the `affinity` placement pinned it to, plus one
    /// (0: not, or pinned elsewhere since), changed only under
    /// `task_pin_lock` with the kernel's mask.
    task_pinned: Vec<AtomicU32>,
    /// Per task: held while its pinning changes (a producer tries it and
    /// gives up when busy; the task itself waits for it).
    task_pin_lock: Vec<AtomicBool>,
    /// Per task: what its producers' moves of it took since it last
    /// looked, ns.
    task_moved_ns: Vec<AtomicU64>,
    /// Per task: it waits for its inputs (between jobs), so placing it
    /// moves no job of its.
    task_waiting: Vec<AtomicBool>,
    /// Under the `affinity` placement: each CPU's cache neighbours.
    neighbours: Option<CacheNeighbours>,
    /// The compute rate of the run's threads, measured once per CPU set.
    pub(super) compute_rates: crate::calibrate::SharedComputeRates,
    /// rt-app's `io_device`, open (only when an `iorun` writes to it), and
    /// its path for messages.
    io: Option<(std::fs::File, String)>,
}

fn sys_error(what: &str, e: tinct_sys::Error) -> RtError {
    RtError::Task {
        task: what.into(),
        message: e.to_string(),
    }
}

impl Objects {
    /// Creates every object of `spec` (and opens the I/O device if a task
    /// writes to it).
    pub(super) fn new(spec: &RunSpec) -> Result<Objects> {
        let r: &Resources = &spec.resources;
        let mutexes = r
            .mutexes
            .iter()
            .map(|m| {
                RtMutex::new(m.protocol).map_err(|e| sys_error(&format!("mutex '{}'", m.name), e))
            })
            .collect::<Result<Vec<_>>>()?;
        let conds = r
            .conds
            .iter()
            .map(|c| CondVar::new().map_err(|e| sys_error(&format!("condition '{c}'"), e)))
            .collect::<Result<Vec<_>>>()?;
        let barriers = r
            .barriers
            .iter()
            .map(|b| {
                let what = format!("barrier '{}'", b.name);
                Ok(Barrier {
                    mutex: RtMutex::new(Protocol::None).map_err(|e| sys_error(&what, e))?,
                    cond: CondVar::new().map_err(|e| sys_error(&what, e))?,
                    parties: b.parties.max(1),
                    arrived: AtomicU64::new(0),
                    generation: AtomicU64::new(0),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let timers = r
            .timers
            .iter()
            .map(|t| Timer {
                next_ns: AtomicU64::new(0),
                absolute: t.absolute,
            })
            .collect();
        let forks = r
            .forks
            .iter()
            .map(|f| ForkGate {
                granted: AtomicU64::new(0),
                slots: f.slots.len() as u64,
                forked_at: f.slots.iter().map(|_| AtomicU64::new(0)).collect(),
            })
            .collect();
        let channels = r
            .channels
            .iter()
            .enumerate()
            .map(|(index, c)| {
                let what = format!("buffer '{}'", c.name);
                Ok(Channel {
                    mutex: RtMutex::new(Protocol::Inherit).map_err(|e| sys_error(&what, e))?,
                    cond: CondVar::new().map_err(|e| sys_error(&what, e))?,
                    blocking: c.blocking,
                    full: AtomicBool::new(false),
                    sent: AtomicU64::new(0),
                    handed_at: AtomicU64::new(0),
                    producer_cpu: AtomicU32::new(0),
                    // Within limits::MAX_PACKET_BYTES: fits a usize.
                    packet: (0..usize::try_from(c.bytes / 8).unwrap_or(0))
                        .map(|_| AtomicU64::new(0))
                        .collect(),
                    checksum: AtomicU64::new(0),
                    consumer: spec.tasks.iter().position(|t| {
                        t.phases
                            .iter()
                            .any(|p| p.inputs().any(|input| input == index))
                    }),
                    placed_on: AtomicU32::new(0),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let task_cpus = spec.tasks.iter().map(|_| AtomicU32::new(0)).collect();
        let task_threads = spec
            .tasks
            .iter()
            .map(|_| std::sync::atomic::AtomicI32::new(0))
            .collect();
        let task_pinned = spec.tasks.iter().map(|_| AtomicU32::new(0)).collect();
        let task_pin_lock = spec.tasks.iter().map(|_| AtomicBool::new(false)).collect();
        let task_moved_ns = spec.tasks.iter().map(|_| AtomicU64::new(0)).collect();
        let task_waiting = spec.tasks.iter().map(|_| AtomicBool::new(false)).collect();
        let writes_io = spec.tasks.iter().any(|t| {
            t.phases
                .iter()
                .flat_map(|p| &p.steps)
                .any(|s| matches!(s, crate::spec::Step::IoRun { .. }))
        });
        let io = if writes_io {
            Some((open_io_device(spec)?, spec.io_device.clone()))
        } else {
            None
        };
        Ok(Objects {
            mutexes,
            conds,
            barriers,
            timers,
            forks,
            channels,
            task_cpus,
            task_threads,
            task_pinned,
            task_pin_lock,
            task_moved_ns,
            task_waiting,
            compute_rates: Default::default(),
            neighbours: match &spec.placement {
                Placement::Pinned => None,
                Placement::Affinity(neighbours) => Some(neighbours.clone()),
            },
            io,
        })
    }

    /// Locks `mutex`, giving up when the run ends.
    fn lock_or_give_up(mutex: &RtMutex, until: Until<'_>) -> Blocked {
        loop {
            match mutex.lock_until(Until::next_look()) {
                Ok(Waited::Done) => return Blocked::Done,
                Ok(Waited::TimedOut) if until.reached() => return Blocked::GaveUp,
                Ok(Waited::TimedOut) => {}
                Err(_) => return Blocked::Failed("a buffer's lock was refused"),
            }
        }
    }

    /// Hands a packet over on channel `c` from `cpu`: a blocking channel
    /// first waits until the previous one was taken. Returns the sample's
    /// number and whether an untaken sample was replaced (lost).
    pub(super) fn send(
        &self,
        c: usize,
        cpu: u32,
        until: Until<'_>,
    ) -> std::result::Result<(u64, bool), Blocked> {
        let channel = &self.channels[c];
        channel.lock_when(until, |full| !(channel.blocking && full))?;
        // Under the buffer's lock: a consumer waiting now cannot take this
        // packet, and so start its job, before it is placed.
        let placed = self.place_consumer(channel, cpu);
        channel.placed_on.store(
            placed.map_or(0, |cpu| cpu.saturating_add(1)),
            Ordering::Relaxed,
        );
        let replaced = channel.full.swap(true, Ordering::Relaxed);
        // One more per hand-over: far below 2^64.
        let sample = channel.sent.load(Ordering::Relaxed) + 1;
        for (i, word) in channel.packet.iter().enumerate() {
            word.store(sample ^ i as u64, Ordering::Relaxed);
        }
        channel.sent.store(sample, Ordering::Relaxed);
        channel.handed_at.store(now_ns(), Ordering::Relaxed);
        channel.producer_cpu.store(cpu, Ordering::Relaxed);
        channel.cond.broadcast();
        let _ = channel.mutex.unlock();
        Ok((sample, replaced))
    }

    /// Waits until every channel of `inputs` holds a packet, then takes
    /// them all (only this thread consumes them, so a packet that came
    /// stays until taken). Nothing is taken when the run ends first.
    pub(super) fn receive(
        &self,
        task: usize,
        inputs: impl Iterator<Item = usize> + Clone,
        until: Until<'_>,
    ) -> std::result::Result<Handover, Blocked> {
        // A producer may place this thread while it waits here.
        self.task_waiting[task].store(true, Ordering::SeqCst);
        let waited: std::result::Result<(), Blocked> = inputs.clone().try_for_each(|c| {
            let channel = &self.channels[c];
            channel.lock_when(until, |full| full)?;
            let _ = channel.mutex.unlock();
            Ok(())
        });
        self.task_waiting[task].store(false, Ordering::SeqCst);
        waited?;
        let mut handover = Handover {
            at_ns: 0,
            producer_cpu: 0,
            sample: 0,
            placed: None,
        };
        for c in inputs {
            let channel = &self.channels[c];
            // Full and ours: this lock only waits for a producer that is
            // replacing the packet (an overwriting buffer).
            static NEVER: AtomicBool = AtomicBool::new(false);
            let to_the_end = Until {
                stop: &NEVER,
                ending: &NEVER,
            };
            match Self::lock_or_give_up(&channel.mutex, to_the_end) {
                Blocked::Done => {}
                other => return Err(other),
            }
            channel.full.store(false, Ordering::Relaxed);
            let sum = channel
                .packet
                .iter()
                .fold(0u64, |sum, w| sum.wrapping_add(w.load(Ordering::Relaxed)));
            channel.checksum.store(sum, Ordering::Relaxed);
            let at = channel.handed_at.load(Ordering::Relaxed);
            if at >= handover.at_ns {
                handover.at_ns = at;
                handover.producer_cpu = channel.producer_cpu.load(Ordering::Relaxed);
                handover.placed = channel.placed_on.load(Ordering::Relaxed).checked_sub(1);
            }
            handover.sample = channel.sent.load(Ordering::Relaxed);
            channel.cond.broadcast();
            let _ = channel.mutex.unlock();
        }
        Ok(handover)
    }

    /// Notes that thread `tid` runs task `task` (a producer may place it).
    pub(super) fn note_thread(&self, task: usize, tid: i32) {
        self.task_threads[task].store(tid, Ordering::Relaxed);
    }

    /// Under the `affinity` placement, places the consumer of `channel`
    /// on the CPU it is to run on after a hand-over from `cpu`, before the
    /// hand-over wakes it (demarchi places the consumer at its wake-up, so
    /// no migration falls in its response): the CPU, or `None` without
    /// that placement, a consumer thread, a consumer waiting for its
    /// inputs, or the pinning lock (another producer holds it), or when
    /// the call is refused (the consumer then moves itself, and a refusal
    /// there stops the run). No allocation unless refused.
    fn place_consumer(&self, channel: &Channel, cpu: u32) -> Option<u32> {
        let consumer = channel.consumer?;
        let tid = self.task_threads[consumer].load(Ordering::Relaxed);
        if tid == 0 || !self.task_waiting[consumer].load(Ordering::SeqCst) {
            // Not started, or in a job: it moves itself at its next.
            return None;
        }
        let target = self.affinity_target(cpu, consumer)?;
        let lock = &self.task_pin_lock[consumer];
        if lock
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return None;
        }
        let mark = target.saturating_add(1);
        let mut placed = Some(target);
        if self.task_pinned[consumer].load(Ordering::Relaxed) != mark {
            let started = now_ns();
            if tinct_sys::sched::set_thread_affinity(tid, &[target]).is_ok() {
                self.task_pinned[consumer].store(mark, Ordering::Relaxed);
                self.task_moved_ns[consumer]
                    .fetch_add(now_ns().saturating_sub(started), Ordering::Relaxed);
            } else {
                placed = None;
            }
        }
        lock.store(false, Ordering::Release);
        placed
    }

    /// Holds task `task`'s pinning lock for `f`, waiting for a producer
    /// that is placing it.
    fn with_pin_lock<R>(&self, task: usize, f: impl FnOnce() -> R) -> R {
        let lock = &self.task_pin_lock[task];
        while lock
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            std::hint::spin_loop();
        }
        let result = f();
        lock.store(false, Ordering::Release);
        result
    }

    /// Task `task` (the calling thread) pins itself to `target`, unless it
    /// is there already: whether it moved; `Err` if the kernel refused.
    pub(super) fn pin_self(&self, task: usize, target: u32) -> std::result::Result<bool, ()> {
        let mark = target.saturating_add(1);
        self.with_pin_lock(task, || {
            if self.task_pinned[task].load(Ordering::Relaxed) == mark {
                Ok(false)
            } else if tinct_sys::sched::set_affinity(&[target]).is_ok() {
                self.task_pinned[task].store(mark, Ordering::Relaxed);
                Ok(true)
            } else {
                Err(())
            }
        })
    }

    /// Task `task`'s CPUs were set otherwise (a phase's `cpus`): it is not
    /// pinned by the placement any more.
    pub(super) fn unpinned(&self, task: usize) {
        self.with_pin_lock(task, || self.task_pinned[task].store(0, Ordering::Relaxed));
    }

    /// What its producers' moves of task `task` took since it last asked,
    /// ns (0: none moved it).
    pub(super) fn take_moved_ns(&self, task: usize) -> u64 {
        self.task_moved_ns[task].swap(0, Ordering::Relaxed)
    }

    /// Notes that task `task` runs on `cpu` now.
    pub(super) fn note_cpu(&self, task: usize, cpu: u32) {
        self.task_cpus[task].store(cpu.saturating_add(1), Ordering::Relaxed);
    }

    /// Under the `affinity` placement, the CPU task `task` moves to after
    /// a hand-over from `producer_cpu` ([`CacheNeighbours::choose`]).
    pub(super) fn affinity_target(&self, producer_cpu: u32, task: usize) -> Option<u32> {
        self.neighbours
            .as_ref()?
            .choose(producer_cpu, |cpu| self.tasks_on(cpu, task))
    }

    /// How many of the run's tasks other than `task` last ran on `cpu`.
    fn tasks_on(&self, cpu: u32, task: usize) -> u32 {
        let mark = cpu.saturating_add(1);
        self.task_cpus
            .iter()
            .enumerate()
            .filter(|(i, c)| *i != task && c.load(Ordering::Relaxed) == mark)
            .count() as u32
    }

    /// Locks mutex `m`, giving up when the run ends.
    pub(super) fn lock(&self, m: usize, until: Until<'_>) -> Blocked {
        loop {
            match self.mutexes[m].lock_until(Until::next_look()) {
                Ok(Waited::Done) => return Blocked::Done,
                Ok(Waited::TimedOut) if until.reached() => return Blocked::GaveUp,
                Ok(Waited::TimedOut) => {}
                Err(_) => {
                    return Blocked::Failed(
                        "lock refused (already held, or a priority above the ceiling)",
                    );
                }
            }
        }
    }

    /// Locks mutex `m` if it is free now: a deadline already past (POSIX
    /// never times out a lock that can be taken at once). False when held
    /// by another thread (or refused: [`Objects::lock`] then says why).
    pub(super) fn try_lock(&self, m: usize) -> bool {
        matches!(self.mutexes[m].lock_until(0), Ok(Waited::Done))
    }

    /// Unlocks mutex `m`.
    pub(super) fn unlock(&self, m: usize) -> Blocked {
        match self.mutexes[m].unlock() {
            Ok(()) => Blocked::Done,
            Err(_) => Blocked::Failed("unlock of a mutex this thread does not hold"),
        }
    }

    /// Waits on condition `c` with mutex `m` held, until a signal or the end.
    pub(super) fn wait(&self, c: usize, m: usize, until: Until<'_>) -> Blocked {
        loop {
            match self.conds[c].wait_until(&self.mutexes[m], Until::next_look()) {
                Ok(Waited::Done) => return Blocked::Done,
                Ok(Waited::TimedOut) if until.reached() => return Blocked::GaveUp,
                Ok(Waited::TimedOut) => {}
                Err(_) => return Blocked::Failed("wait without holding its mutex"),
            }
        }
    }

    /// Wakes one waiter of condition `c`.
    pub(super) fn signal(&self, c: usize) {
        self.conds[c].signal();
    }

    /// Wakes every waiter of condition `c`.
    pub(super) fn broadcast(&self, c: usize) {
        self.conds[c].broadcast();
    }

    /// Arrives at barrier `b` and waits until every party did.
    pub(super) fn barrier(&self, b: usize, until: Until<'_>) -> Blocked {
        let barrier = &self.barriers[b];
        loop {
            match barrier.mutex.lock_until(Until::next_look()) {
                Ok(Waited::Done) => break,
                Ok(Waited::TimedOut) if until.reached() => return Blocked::GaveUp,
                Ok(Waited::TimedOut) => {}
                Err(_) => return Blocked::Failed("barrier lock refused"),
            }
        }
        // Under the barrier's mutex: the counters change only here.
        let generation = barrier.generation.load(Ordering::Relaxed);
        let arrived = barrier.arrived.load(Ordering::Relaxed) + 1;
        let mut outcome = Blocked::Done;
        if arrived >= barrier.parties {
            barrier.arrived.store(0, Ordering::Relaxed);
            barrier.generation.store(generation + 1, Ordering::Relaxed);
            barrier.cond.broadcast();
        } else {
            barrier.arrived.store(arrived, Ordering::Relaxed);
            while barrier.generation.load(Ordering::Relaxed) == generation {
                if until.reached() {
                    // Leave: the others no longer count on this arrival.
                    let now = barrier.arrived.load(Ordering::Relaxed);
                    barrier
                        .arrived
                        .store(now.saturating_sub(1), Ordering::Relaxed);
                    outcome = Blocked::GaveUp;
                    break;
                }
                if barrier
                    .cond
                    .wait_until(&barrier.mutex, Until::next_look())
                    .is_err()
                {
                    outcome = Blocked::Failed("barrier wait refused");
                    break;
                }
            }
        }
        let _ = barrier.mutex.unlock();
        outcome
    }

    /// Uses timer `t` once: `t_next += period` (starting from `first_ns`
    /// at its first use); a relative timer already past restarts from now.
    /// Returns the tick to wait for and the slack (tick − now, negative
    /// when late), as rt-app computes them.
    pub(super) fn tick(&self, t: usize, period_ns: u64, first_ns: u64) -> (u64, i64) {
        let timer = &self.timers[t];
        let _ = timer
            .next_ns
            .compare_exchange(0, first_ns, Ordering::AcqRel, Ordering::Acquire);
        // Times within crate::limits: the sum cannot wrap; saturating all the same.
        let previous = timer
            .next_ns
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                Some(n.saturating_add(period_ns))
            })
            .unwrap_or(first_ns);
        let mut next = previous.saturating_add(period_ns);
        let now = now_ns();
        let slack = i64::try_from(next as i128 - now as i128).unwrap_or(i64::MIN);
        if now >= next && !timer.absolute {
            // Relative mode: the reference becomes now (the next use adds
            // its period to this instant).
            let _ = timer
                .next_ns
                .compare_exchange(next, now, Ordering::AcqRel, Ordering::Acquire);
            next = now;
        }
        (next, slack)
    }

    /// True if timer `t` keeps an absolute grid.
    pub(super) fn timer_is_absolute(&self, t: usize) -> bool {
        self.timers[t].absolute
    }

    /// Forks one waiting thread of gate `f`; false when none is left.
    pub(super) fn fork(&self, f: usize) -> bool {
        let gate = &self.forks[f];
        let slot = gate.granted.fetch_add(1, Ordering::AcqRel);
        if slot >= gate.slots {
            return false;
        }
        gate.forked_at[slot as usize].store(now_ns(), Ordering::Release);
        true
    }

    /// Writes `bytes` of `buffer` to the I/O device, in buffer-sized chunks
    /// (rt-app `iorun`). The one step that does I/O: the workload asks for it.
    pub(super) fn io_write(&self, buffer: &[u8], mut bytes: u64) -> Blocked {
        use std::io::Write;
        let (Some((mut file, _)), false) =
            (self.io.as_ref().map(|(f, p)| (f, p)), buffer.is_empty())
        else {
            return Blocked::Failed("iorun without an I/O device or a buffer");
        };
        while bytes > 0 {
            let chunk = usize::try_from(bytes)
                .unwrap_or(usize::MAX)
                .min(buffer.len());
            match file.write(&buffer[..chunk]) {
                Ok(0) => return Blocked::IoFailed(0),
                Err(e) => return Blocked::IoFailed(e.raw_os_error().unwrap_or(0)),
                Ok(n) => bytes = bytes.saturating_sub(n as u64),
            }
        }
        Blocked::Done
    }

    /// What a [`Blocked::IoFailed`] with `errno` says: the device and the
    /// cause.
    pub(super) fn io_failure(&self, errno: i32) -> String {
        let device = self.io.as_ref().map_or("", |(_, path)| path.as_str());
        let cause = match errno {
            0 => "it took no byte".to_string(),
            errno => std::io::Error::from_raw_os_error(errno).to_string(),
        };
        format!("iorun: the write to the I/O device {device} (global.io_device) failed: {cause}")
    }
}

/// Opens rt-app's `io_device` for the `iorun` events' writes. Opened
/// non-blocking, so that a FIFO nobody reads is refused at once (ENXIO)
/// instead of blocking tinct in `open` before the first release; then
/// made blocking again, as rt-app writes.
fn open_io_device(spec: &RunSpec) -> Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let refuse = |found: String| {
        RtError::Input(InputError {
            file: spec.source.clone(),
            line: spec.io_device_line,
            field: "global.io_device".into(),
            expected: "a file tinct can open for writing (iorun writes to it); a FIFO needs a \
                   reader already"
                .into(),
            found: format!("{}: {found}", spec.io_device),
        })
    };
    let file = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(false)
        .custom_flags(libc::O_NONBLOCK)
        .open(&spec.io_device)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ENXIO) => refuse("a FIFO with no reader (ENXIO)".into()),
            _ => refuse(e.to_string()),
        })?;
    let flags = rustix::fs::fcntl_getfl(&file).map_err(|e| refuse(e.to_string()))?;
    rustix::fs::fcntl_setfl(&file, flags - rustix::fs::OFlags::NONBLOCK)
        .map_err(|e| refuse(e.to_string()))?;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::PlacementPolicy;

    const SET: &str = "[platform]\ncores = 2\npartitions = 4\nmemory = \"64MiB\"\nrefill = \"0ns\"\n\n\
        [[task]]\nname = \"producer\"\nperiod = \"4ms\"\nmemory = \"1MiB\"\nwcet = \"300us\"\n\n\
        [[task]]\nname = \"consumer\"\ntrigger = \"data\"\nmemory = \"1MiB\"\nwcet = \"300us\"\n\n\
        [[edge]]\nfrom = \"producer\"\nto = \"consumer\"\nbuffer = \"4KiB\"\n";

    static NEVER: AtomicBool = AtomicBool::new(false);
    const UNTIL: Until<'static> = Until {
        stop: &NEVER,
        ending: &NEVER,
    };

    /// Under the `affinity` placement a producer pins the consumer that
    /// waits for its packet to the CPU it is to run on before handing the
    /// packet over (demarchi: placed at its wake-up, no migration in its
    /// response), and the consumer learns it from the hand-over; one not
    /// waiting (in a job) is left to move itself.
    #[test]
    fn a_producer_places_the_waiting_consumer_before_the_hand_over() {
        let set =
            tinct_core::format::parse(SET, "t.toml", tinct_core::format::Syntax::Toml).unwrap();
        let mut spec =
            RunSpec::from_placed(&set, None, "t.toml", 1_000_000_000, PlacementPolicy::Os).unwrap();
        // A topology of no shared cache (no /sys needed): each CPU is its
        // own neighbourhood, so the target is the producer's CPU.
        let mut topology = crate::testing::four_cpus_two_l2();
        topology.caches.clear();
        let allowed = tinct_sys::sched::affinity().unwrap();
        spec.placement = Placement::Affinity(CacheNeighbours::from_topology(&topology, &allowed));
        let objects = Objects::new(&spec).unwrap();
        let (producer, consumer) = (0, 1);
        let channel = spec.tasks[consumer].phases[0].inputs().next().unwrap();
        let cpu = *allowed.last().unwrap();
        let target = objects.affinity_target(cpu, consumer).unwrap();
        assert_eq!(target, cpu);
        std::thread::scope(|scope| {
            let waiting = scope.spawn(|| {
                objects.note_thread(consumer, tinct_sys::sched::gettid());
                let handover = objects.receive(consumer, std::iter::once(channel), UNTIL);
                (handover, tinct_sys::sched::affinity().unwrap())
            });
            while !objects.task_waiting[consumer].load(Ordering::SeqCst) {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            objects.note_thread(producer, tinct_sys::sched::gettid());
            objects.send(channel, cpu, UNTIL).unwrap();
            let (handover, affinity) = waiting.join().unwrap();
            let handover = handover.unwrap();
            assert_eq!(handover.placed, Some(target));
            assert_eq!(affinity, vec![target], "it woke pinned there");
        });
        assert!(
            objects.take_moved_ns(consumer) > 0,
            "the producer's move is counted for the consumer"
        );
        assert_eq!(objects.take_moved_ns(consumer), 0, "taken once");
        // Not waiting now: the next hand-over places nothing.
        objects.send(channel, cpu, UNTIL).unwrap();
        let handover = objects
            .receive(consumer, std::iter::once(channel), UNTIL)
            .unwrap();
        assert_eq!(handover.placed, None);
    }
}
