//! The stall sentinel: one thread per CPU of a run, above every task,
//! that notices the gaps in its own progress.
//!
//! Why a thread and not steal time alone: the steal time a hypervisor
//! reports (`/proc/stat`) counts in USER_HZ ticks (10 ms) and says how much
//! was stolen, never when, so it cannot tell which job a stall hit; and
//! reading it around every job would put a file read on the tasks' path.
//! A sentinel wakes every [`SentinelOptions::period_ns`] on an absolute
//! grid (`clock_nanosleep`, CLOCK_MONOTONIC) at SCHED_FIFO 99, pinned to its
//! CPU. At that priority nothing in the run can keep it from running but a
//! SCHED_DEADLINE thread (a reservation's job, or from Linux 6.12 the fair
//! server), which the kernel runs above every SCHED_FIFO one: the time the
//! sentinel waited runnable behind one is its run delay, which [`watch`]
//! takes off. So a wake-up still later than
//! [`SentinelOptions::threshold_ns`] means its CPU did not run guest code
//! at all: the host took the vCPU away (or the whole process was stopped;
//! RT throttling, which keeps the sentinel queued, is run delay too and
//! taken off where the run delay is read). Where the run delay
//! cannot be read (a kernel without `CONFIG_SCHED_INFO`), a CPU where a
//! SCHED_DEADLINE task may run is left unwatched rather than blame its
//! jobs on stalls.
//! The interval from the planned wake to the actual one is recorded as a
//! stall on that CPU: a lower bound of the stall (it may have begun up to
//! one period earlier), never more than what was lost. Steal time is read
//! once before and once after the run (outside it) as a cross-check of the
//! stalls' total: it is what says the stalls were the host's.
//!
//! What it costs: one wake-up per period and CPU — a timer interrupt, two
//! context switches, a few clock reads and one `pread` of its schedstat
//! (about 0.4 µs here), no memory beyond one record per stall. Each run reports the sentinel's own CPU time and wake-ups
//! ([`CpuWatch`]); `cargo bench -p tinct-rt --bench sentinel_cost` measures
//! what a busy task loses to it, beside the same task without it.
//!
//! The stalls are kept in a [`StallLog`] in memory shared with a forked
//! child (like the job log), so a supervisor reads them even after the
//! run's process died. Recording is a few atomic stores into a fixed
//! block: no allocation, no I/O while tasks run.

use crate::clock::{now_ns, sleep_until, thread_cpu_ns};
use crate::{Result, RtError};
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use tinct_sys::shared_memory::SharedWords;

/// The sentinel's default period: 1 ms (one wake-up per ms and CPU).
pub const DEFAULT_PERIOD_NS: u64 = 1_000_000;
/// The default threshold: a wake-up 200 µs late is a stall (the release
/// latency of a SCHED_FIFO thread on the 2-vCPU development VM has a p99
/// of about 40 µs).
pub const DEFAULT_THRESHOLD_NS: u64 = 200_000;
/// SCHED_FIFO priority of the sentinels: the watchdog's, above every task.
pub const SENTINEL_PRIORITY: u8 = crate::spec::WATCHDOG_PRIORITY;

/// How the sentinel watches.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SentinelOptions {
    /// Wake-up period on each CPU, ns.
    pub period_ns: u64,
    /// A wake-up at least this late is a stall, ns.
    pub threshold_ns: u64,
}

impl Default for SentinelOptions {
    fn default() -> Self {
        SentinelOptions {
            period_ns: DEFAULT_PERIOD_NS,
            threshold_ns: DEFAULT_THRESHOLD_NS,
        }
    }
}

/// One stall: the sentinel of `cpu` was due at `start_ns` and ran only at
/// `end_ns` (CLOCK_MONOTONIC; in the run's outputs, relative to the common
/// release).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stall {
    /// When the sentinel was due.
    pub start_ns: u64,
    /// When its CPU ran guest code again: the wake-up less the time the
    /// sentinel then waited runnable (its run delay).
    pub end_ns: u64,
}

impl Stall {
    /// Its length, ns.
    pub fn len_ns(&self) -> u64 {
        self.end_ns.saturating_sub(self.start_ns)
    }
}

/// What the sentinel of one CPU saw.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuWatch {
    /// The CPU.
    pub cpu: u32,
    /// True if it ran at SCHED_FIFO [`SENTINEL_PRIORITY`], above every
    /// task; false under SCHED_OTHER (`--no-rt`), where a late wake-up may
    /// be the tasks' doing and proves no stall.
    pub top_priority: bool,
    /// Wake-ups.
    pub wakes: u64,
    /// Its own thread CPU time, ns (`None` if its process died first).
    pub cpu_time_ns: Option<u64>,
    /// The stalls kept, in order.
    pub stalls: Vec<Stall>,
    /// Stalls seen after the log was full: counted, not kept.
    pub dropped: u64,
    /// Their total length, ns.
    pub dropped_ns: u64,
    /// Steal time the kernel counted on this CPU during the watch, ns, in
    /// USER_HZ ticks (`None`: not read).
    pub steal_ns: Option<u64>,
}

impl CpuWatch {
    /// The total length of the stalls, kept and dropped, ns.
    pub fn stalled_ns(&self) -> u64 {
        self.stalls
            .iter()
            .map(Stall::len_ns)
            .fold(self.dropped_ns, u64::saturating_add)
    }

    /// The longest stall kept, ns.
    pub fn longest_ns(&self) -> u64 {
        self.stalls.iter().map(Stall::len_ns).max().unwrap_or(0)
    }
}

/// What the sentinels of a run saw.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SentinelReport {
    /// How they watched.
    pub options: SentinelOptions,
    /// One per CPU watched.
    pub cpus: Vec<CpuWatch>,
}

impl SentinelReport {
    /// The time within `[from, to]` during which any of `cpus` stalled
    /// (the union of their stalls, so a stall of the whole machine counts
    /// once), ns.
    pub fn stalled_within(&self, cpus: &[u32], from: u64, to: u64) -> u64 {
        let mut pieces: Vec<(u64, u64)> = self
            .cpus
            .iter()
            .filter(|w| cpus.contains(&w.cpu))
            .flat_map(|w| &w.stalls)
            .filter_map(|s| {
                let (a, b) = (s.start_ns.max(from), s.end_ns.min(to));
                (a < b).then_some((a, b))
            })
            .collect();
        pieces.sort_unstable();
        let mut total = 0u64;
        let mut current: Option<(u64, u64)> = None;
        for (a, b) in pieces {
            current = match current {
                Some((ca, cb)) if a <= cb => Some((ca, cb.max(b))),
                Some((ca, cb)) => {
                    total = total.saturating_add(cb - ca);
                    Some((a, b))
                }
                None => Some((a, b)),
            };
        }
        if let Some((a, b)) = current {
            total = total.saturating_add(b - a);
        }
        total
    }

    /// True if the stalls were measured at top priority on every CPU.
    pub fn top_priority(&self) -> bool {
        self.cpus.iter().all(|c| c.top_priority)
    }
}

// Per-CPU header words of the stall log.
const CPU: usize = 0;
const WAKES: usize = 1;
const COUNT: usize = 2;
const DROPPED: usize = 3;
const DROPPED_NS: usize = 4;
const CPU_TIME: usize = 5;
/// 1 + whether it runs at top priority (0: not started).
const STARTED: usize = 6;
const HEADER_WORDS: usize = 8;

/// The stalls of every watched CPU, in memory shared with forked children.
#[derive(Debug)]
pub struct StallLog {
    words: SharedWords,
    cpus: Vec<u32>,
    capacity: usize,
}

impl StallLog {
    /// Room for `capacity` stalls on each of `cpus`.
    pub fn new(cpus: &[u32], capacity: usize) -> Result<StallLog> {
        let block = capacity
            .checked_mul(2)
            .and_then(|w| w.checked_add(HEADER_WORDS))
            .ok_or_else(|| too_big(cpus, capacity))?;
        let len = block
            .checked_mul(cpus.len().max(1))
            .ok_or_else(|| too_big(cpus, capacity))?;
        let words = SharedWords::new(len).map_err(RtError::Sys)?;
        for (i, &cpu) in cpus.iter().enumerate() {
            words.words()[i * block + CPU].store(u64::from(cpu), Ordering::Relaxed);
        }
        Ok(StallLog {
            words,
            cpus: cpus.to_vec(),
            capacity,
        })
    }

    /// The stalls a run of `duration_ns` keeps per CPU: one per 16
    /// periods, at least 1024 and at most 65 536 (1 MiB per CPU).
    pub fn capacity_for(duration_ns: u64, options: &SentinelOptions) -> usize {
        let periods = duration_ns / options.period_ns.max(1);
        (periods / 16).clamp(1024, 65_536) as usize
    }

    /// The CPUs watched.
    pub fn cpus(&self) -> &[u32] {
        &self.cpus
    }

    fn block(&self, index: usize) -> &[AtomicU64] {
        let size = HEADER_WORDS + 2 * self.capacity;
        &self.words.words()[index * size..(index + 1) * size]
    }

    /// The writer of the `index`-th CPU's block (one writer at a time).
    pub fn writer(&self, index: usize) -> StallWriter<'_> {
        StallWriter {
            block: self.block(index),
            capacity: self.capacity,
        }
    }

    /// What was recorded, with `options` (steal time not read).
    pub fn report(&self, options: SentinelOptions) -> SentinelReport {
        let cpus = (0..self.cpus.len())
            .map(|i| {
                let block = self.block(i);
                let w = |k: usize| block[k].load(Ordering::Acquire);
                let count = (w(COUNT) as usize).min(self.capacity);
                let stalls = (0..count)
                    .map(|s| Stall {
                        start_ns: w(HEADER_WORDS + 2 * s),
                        end_ns: w(HEADER_WORDS + 2 * s + 1),
                    })
                    .collect();
                CpuWatch {
                    cpu: w(CPU) as u32,
                    top_priority: w(STARTED) == 2,
                    wakes: w(WAKES),
                    cpu_time_ns: Some(w(CPU_TIME)).filter(|&t| t > 0),
                    stalls,
                    dropped: w(DROPPED),
                    dropped_ns: w(DROPPED_NS),
                    steal_ns: None,
                }
            })
            .collect();
        SentinelReport { options, cpus }
    }
}

fn too_big(cpus: &[u32], capacity: usize) -> RtError {
    RtError::Task {
        task: "sentinel".into(),
        message: format!(
            "a stall log of {capacity} stalls for {} CPUs does not fit the address space",
            cpus.len()
        ),
    }
}

/// One CPU's block of the stall log.
#[derive(Debug)]
pub struct StallWriter<'a> {
    block: &'a [AtomicU64],
    capacity: usize,
}

impl StallWriter<'_> {
    /// The CPU this block is for.
    pub fn cpu(&self) -> u32 {
        self.block[CPU].load(Ordering::Relaxed) as u32
    }

    /// Notes that the sentinel started, at top priority or not.
    pub fn started(&self, top_priority: bool) {
        self.block[STARTED].store(1 + u64::from(top_priority), Ordering::Release);
    }

    /// Counts a wake-up.
    pub fn woke(&self) {
        self.block[WAKES].fetch_add(1, Ordering::Relaxed);
    }

    /// Records a stall (counted and summed, not kept, once the block is full).
    pub fn record(&self, stall: Stall) {
        let count = self.block[COUNT].load(Ordering::Relaxed) as usize;
        if count >= self.capacity {
            self.block[DROPPED].fetch_add(1, Ordering::Relaxed);
            self.block[DROPPED_NS].fetch_add(stall.len_ns(), Ordering::Relaxed);
            return;
        }
        self.block[HEADER_WORDS + 2 * count].store(stall.start_ns, Ordering::Relaxed);
        self.block[HEADER_WORDS + 2 * count + 1].store(stall.end_ns, Ordering::Relaxed);
        self.block[COUNT].store(count as u64 + 1, Ordering::Release);
    }

    /// Notes the sentinel's own CPU time at its end.
    pub fn finished(&self, cpu_time_ns: u64) {
        self.block[CPU_TIME].store(cpu_time_ns.max(1), Ordering::Release);
    }
}

/// Pins the calling thread to `cpu` and, if `realtime`, raises it to
/// SCHED_FIFO [`SENTINEL_PRIORITY`]; true if it runs at that priority.
pub fn prepare_thread(cpu: u32, realtime: bool) -> bool {
    if tinct_sys::sched::set_affinity(&[cpu]).is_err() {
        return false;
    }
    realtime
        && tinct_sys::sched::set_scheduling(&tinct_sys::sched::Scheduling::of(
            tinct_sys::sched::Policy::Fifo(SENTINEL_PRIORITY),
        ))
        .is_ok()
}

/// The sentinel's loop on the calling thread (already prepared): wakes on
/// the grid `first + k × period` until `done()`, records every wake-up at
/// least `threshold` late as a stall from the due instant, and skips the
/// grid points a stall swallowed.
///
/// `waited` gives the sentinel's own run delay so far
/// ([`tinct_sys::usage::RunDelay`]), where it is known: the time it waited
/// runnable behind a thread above it (a SCHED_DEADLINE job, which the
/// kernel runs before SCHED_FIFO 99) since its previous wake-up is not the
/// host's, so it comes off the end of the stall. A host stall while it so
/// waited comes off too: the stall stays a lower bound.
pub fn watch(
    writer: &StallWriter<'_>,
    options: SentinelOptions,
    first_ns: u64,
    done: &dyn Fn() -> bool,
    mut waited: Option<&mut dyn FnMut() -> u64>,
) {
    let period = options.period_ns.max(1);
    let mut due = first_ns;
    let mut waited_before = waited.as_mut().map_or(0, |w| w());
    while !done() {
        sleep_until(due);
        let woke = now_ns();
        writer.woke();
        let late = woke.saturating_sub(due);
        let queued = waited.as_mut().map_or(0, |w| {
            let now = w();
            let queued = now.saturating_sub(waited_before);
            waited_before = now;
            queued.min(late)
        });
        if late - queued >= options.threshold_ns {
            writer.record(Stall {
                start_ns: due,
                end_ns: woke - queued,
            });
        }
        // The next grid point after the wake-up (exact: woke ≥ due).
        let missed = woke.saturating_sub(due) / period;
        due = due.saturating_add(period.saturating_mul(missed.saturating_add(1)));
    }
    writer.finished(thread_cpu_ns());
}

/// Sentinels outside a run (benchmarks, tests): one thread per CPU until
/// [`Sentinel::stop`].
#[derive(Debug)]
pub struct Sentinel {
    log: std::sync::Arc<StallLog>,
    options: SentinelOptions,
    stop: std::sync::Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
    steal_before: Option<tinct_sys::system::StealTime>,
}

impl Sentinel {
    /// Starts one sentinel on each of `cpus` (SCHED_FIFO 99 if `realtime`
    /// and allowed), keeping up to `capacity` stalls per CPU.
    pub fn start(
        cpus: &[u32],
        options: SentinelOptions,
        realtime: bool,
        capacity: usize,
    ) -> Result<Sentinel> {
        let log = std::sync::Arc::new(StallLog::new(cpus, capacity)?);
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let steal_before = tinct_sys::system::StealTime::read(&tinct_sys::SysRoot::live()).ok();
        let first = now_ns().saturating_add(options.period_ns);
        let threads = (0..cpus.len())
            .map(|i| {
                let (log, stop) = (log.clone(), stop.clone());
                let cpu = cpus[i];
                std::thread::Builder::new()
                    .name(format!("tinct-sentinel-{cpu}"))
                    .spawn(move || {
                        let writer = log.writer(i);
                        writer.started(prepare_thread(cpu, realtime));
                        watch(
                            &writer,
                            options,
                            first,
                            &|| stop.load(Ordering::Relaxed),
                            None,
                        );
                    })
                    .map_err(|e| RtError::Task {
                        task: "sentinel".into(),
                        message: e.to_string(),
                    })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Sentinel {
            log,
            options,
            stop,
            threads,
            steal_before,
        })
    }

    /// Stops the sentinels and returns what they saw.
    pub fn stop(self) -> SentinelReport {
        self.stop.store(true, Ordering::Relaxed);
        for thread in self.threads {
            let _ = thread.join();
        }
        let mut report = self.log.report(self.options);
        add_steal(&mut report, self.steal_before.as_ref());
        report
    }
}

/// Fills in each CPU's steal time since `before` (read now).
pub fn add_steal(report: &mut SentinelReport, before: Option<&tinct_sys::system::StealTime>) {
    let Some(before) = before else {
        return;
    };
    let Ok(after) = tinct_sys::system::StealTime::read(&tinct_sys::SysRoot::live()) else {
        return;
    };
    for watch in &mut report.cpus {
        watch.steal_ns = Some(after.since(before, watch.cpu));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(stalls: &[(u32, u64, u64)]) -> SentinelReport {
        let mut cpus: Vec<CpuWatch> = Vec::new();
        for &(cpu, start_ns, end_ns) in stalls {
            if !cpus.iter().any(|c| c.cpu == cpu) {
                cpus.push(CpuWatch {
                    cpu,
                    top_priority: true,
                    wakes: 0,
                    cpu_time_ns: None,
                    stalls: Vec::new(),
                    dropped: 0,
                    dropped_ns: 0,
                    steal_ns: None,
                });
            }
            let watch = cpus.iter_mut().find(|c| c.cpu == cpu).unwrap();
            watch.stalls.push(Stall { start_ns, end_ns });
        }
        SentinelReport {
            options: SentinelOptions::default(),
            cpus,
        }
    }

    #[test]
    fn stalled_time_is_clipped_to_the_window_and_counted_once_across_cpus() {
        let r = report(&[(0, 100, 200), (0, 300, 400), (1, 150, 250), (2, 0, 1000)]);
        assert_eq!(r.stalled_within(&[0], 0, 1000), 200);
        assert_eq!(r.stalled_within(&[0], 150, 350), 100, "clipped");
        assert_eq!(
            r.stalled_within(&[0, 1], 0, 1000),
            250,
            "100-250 and 300-400: the overlap counted once"
        );
        assert_eq!(r.stalled_within(&[1], 300, 1000), 0);
        assert_eq!(r.stalled_within(&[5], 0, 1000), 0, "a CPU not watched");
    }

    #[test]
    fn the_log_keeps_what_fits_and_counts_the_rest() {
        let log = StallLog::new(&[3, 7], 2).unwrap();
        let w = log.writer(1);
        assert_eq!(w.cpu(), 7);
        w.started(true);
        for k in 0..3 {
            w.woke();
            w.record(Stall {
                start_ns: 10 * k,
                end_ns: 10 * k + 4,
            });
        }
        w.finished(55);
        let r = log.report(SentinelOptions::default());
        assert_eq!(r.cpus.len(), 2);
        let (idle, busy) = (&r.cpus[0], &r.cpus[1]);
        assert_eq!((idle.cpu, idle.wakes, idle.top_priority), (3, 0, false));
        assert_eq!(idle.cpu_time_ns, None);
        assert_eq!((busy.cpu, busy.wakes, busy.cpu_time_ns), (7, 3, Some(55)));
        assert_eq!(busy.stalls.len(), 2);
        assert_eq!((busy.dropped, busy.dropped_ns), (1, 4));
        assert_eq!(busy.stalled_ns(), 12);
        assert!(!r.top_priority());
    }

    /// One round of the loop on this thread, due 5 ms ago (so its one
    /// wake-up is 5 ms late), with `waited` as the run delay: the due
    /// instant and what was recorded.
    fn one_wake_up_5ms_late(waited: Option<&mut dyn FnMut() -> u64>) -> (u64, SentinelReport) {
        let log = StallLog::new(&[0], 4).unwrap();
        let w = log.writer(0);
        let due = now_ns().saturating_sub(5_000_000);
        let rounds = std::cell::Cell::new(0);
        let done = || {
            rounds.set(rounds.get() + 1);
            rounds.get() > 1
        };
        watch(&w, SentinelOptions::default(), due, &done, waited);
        (due, log.report(SentinelOptions::default()))
    }

    #[test]
    fn a_late_wake_up_is_a_stall_and_the_grid_skips_what_it_swallowed() {
        let (due, r) = one_wake_up_5ms_late(None);
        let stalls = &r.cpus[0].stalls;
        assert_eq!(stalls.len(), 1, "{stalls:?}");
        assert_eq!(stalls[0].start_ns, due);
        assert!(stalls[0].len_ns() >= 5_000_000);
        assert_eq!(r.cpus[0].wakes, 1);
        assert!(r.cpus[0].cpu_time_ns.is_some());
    }

    /// The time the sentinel waited runnable since its previous wake-up
    /// comes off the end of the lateness: all of it, no stall; part of
    /// it, a shorter stall from the due instant.
    #[test]
    fn time_waited_behind_a_thread_above_is_no_stall() {
        for (queued, stalls) in [(5_000_000u64, 0usize), (1_000_000, 1)] {
            let mut readings = [0, queued].into_iter();
            let mut waited = || readings.next().unwrap_or(queued);
            let (due, r) = one_wake_up_5ms_late(Some(&mut waited));
            let recorded = &r.cpus[0].stalls;
            assert_eq!(recorded.len(), stalls, "{queued}: {recorded:?}");
            if let Some(stall) = recorded.first() {
                assert_eq!(stall.start_ns, due);
                assert!(stall.len_ns() >= 4_000_000, "{stall:?}");
            }
        }
    }

    #[test]
    fn capacity_grows_with_the_run_within_limits() {
        let o = SentinelOptions::default();
        assert_eq!(StallLog::capacity_for(1_000_000_000, &o), 1024);
        assert_eq!(StallLog::capacity_for(100_000_000_000, &o), 6250);
        assert_eq!(StallLog::capacity_for(u64::MAX, &o), 65_536);
    }
}
