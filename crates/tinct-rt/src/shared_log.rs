//! The job logs of a run, in memory that survives the run's process.
//!
//! Every task records its jobs into a fixed block of a
//! [`SharedWords`] mapping (`MAP_SHARED`, allocated before the run, locked
//! with the rest of the process): recording a job is a few word stores and
//! one release store of the count — no allocation and no I/O while tasks
//! run. Because the mapping is shared with a forked child, a supervising
//! parent can read every job recorded so far even after the child died of
//! a signal, together with the job each task was running at that moment
//! ([`InFlight`]), the thread ids of the tasks and the fatal signal noted by
//! [`tinct_sys::supervise::record_fatal_signals`].
//!
//! The log also keeps the run's last sign of life, a heartbeat: the latest
//! instant any task started or recorded a job, or the watchdog looked.
//! After the run's process died, jobs are counted up to that instant and
//! never beyond it (a supervisor notices a death late, and a stopped
//! process releases nothing).
//!
//! Layout, in 64-bit words: a header ([`FATAL_WORD`], the common release,
//! the end of the run, the heartbeat), then per task a header (thread id, records written,
//! in-flight job) and `capacity` records of [`RECORD_WORDS`] words.

use crate::counters::CounterSample;
use crate::record::{Flow, JobRecord, Outcome};
use crate::{Result, RtError};
use std::sync::atomic::{AtomicU64, Ordering};
use tinct_sys::sched::Policy;
use tinct_sys::shared_memory::SharedWords;
use tinct_sys::supervise::FatalSignal;

/// Word of the header where the fatal-signal handler notes a crash.
pub const FATAL_WORD: usize = 0;
const START_WORD: usize = 1;
const END_WORD: usize = 2;
const HEARTBEAT_WORD: usize = 3;
const HEADER_WORDS: usize = 4;

const TID: usize = 0;
const COUNT: usize = 1;
/// In-flight job number + 1 (0: no job running).
const FLIGHT_JOB: usize = 2;
const FLIGHT_PHASE: usize = 3;
const FLIGHT_RELEASE: usize = 4;
const FLIGHT_DEADLINE: usize = 5;
const FLIGHT_START: usize = 6;
const TASK_HEADER_WORDS: usize = 8;

/// Words of one encoded [`JobRecord`].
pub const RECORD_WORDS: usize = 23;

/// The job a task was running, as last published.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct InFlight {
    /// Job number.
    pub job: u64,
    /// Phase index.
    pub phase: u32,
    /// Planned release.
    pub release_ns: u64,
    /// Absolute deadline.
    pub deadline_ns: u64,
    /// Actual start.
    pub start_ns: u64,
}

/// Job logs of every task of a run, shared with forked children.
#[derive(Debug)]
pub struct SharedLog {
    words: SharedWords,
    /// First word of each task's block, and its capacity in records.
    blocks: Vec<(usize, usize)>,
}

impl SharedLog {
    /// Logs holding `capacities[i]` jobs for task `i`.
    pub fn new(capacities: &[usize]) -> Result<SharedLog> {
        let mut blocks = Vec::with_capacity(capacities.len());
        let mut next = HEADER_WORDS;
        for &capacity in capacities {
            blocks.push((next, capacity));
            next = capacity
                .checked_mul(RECORD_WORDS)
                .and_then(|words| words.checked_add(TASK_HEADER_WORDS))
                .and_then(|words| words.checked_add(next))
                .ok_or_else(|| RtError::Task {
                    task: "job log".into(),
                    message: format!("logs of {capacities:?} jobs do not fit the address space"),
                })?;
        }
        let words = SharedWords::new(next).map_err(RtError::Sys)?;
        Ok(SharedLog { words, blocks })
    }

    /// The mapping (to install the fatal-signal recorder on [`FATAL_WORD`]).
    pub fn shared_words(&self) -> &SharedWords {
        &self.words
    }

    /// Number of task logs.
    pub fn tasks(&self) -> usize {
        self.blocks.len()
    }

    /// Publishes the common release and the end of the run.
    pub fn set_window(&self, start_ns: u64, end_ns: u64) {
        self.words.words()[END_WORD].store(end_ns, Ordering::Relaxed);
        self.words.words()[START_WORD].store(start_ns, Ordering::Release);
    }

    /// The common release and end of the run, once published.
    pub fn window(&self) -> Option<(u64, u64)> {
        let start = self.words.words()[START_WORD].load(Ordering::Acquire);
        (start != 0).then(|| (start, self.words.words()[END_WORD].load(Ordering::Relaxed)))
    }

    /// Notes that the run was alive at `now_ns` (the heartbeat only grows).
    pub fn beat(&self, now_ns: u64) {
        self.words.words()[HEARTBEAT_WORD].fetch_max(now_ns, Ordering::Release);
    }

    /// The run's last sign of life, if it gave one.
    pub fn heartbeat(&self) -> Option<u64> {
        let beat = self.words.words()[HEARTBEAT_WORD].load(Ordering::Acquire);
        (beat != 0).then_some(beat)
    }

    /// The fatal signal noted by the handler, if any.
    pub fn fatal_signal(&self) -> Option<FatalSignal> {
        FatalSignal::decode(self.words.words()[FATAL_WORD].load(Ordering::SeqCst))
    }

    fn block(&self, task: usize) -> (&[AtomicU64], &[AtomicU64], usize) {
        let (first, capacity) = self.blocks[task];
        let words = self.words.words();
        let header = &words[first..first + TASK_HEADER_WORDS];
        let records =
            &words[first + TASK_HEADER_WORDS..first + TASK_HEADER_WORDS + capacity * RECORD_WORDS];
        (header, records, capacity)
    }

    /// The writer of task `task`'s log. One writer per task at a time: it
    /// starts after the records already there.
    pub fn writer(&self, task: usize) -> TaskLog<'_> {
        let (header, records, capacity) = self.block(task);
        TaskLog {
            len: header[COUNT].load(Ordering::Acquire) as usize,
            heartbeat: &self.words.words()[HEARTBEAT_WORD],
            header,
            records,
            capacity,
            full: false,
        }
    }

    /// The jobs task `task` recorded so far, in order.
    pub fn records(&self, task: usize) -> Vec<JobRecord> {
        let (header, records, capacity) = self.block(task);
        let count = (header[COUNT].load(Ordering::Acquire) as usize).min(capacity);
        (0..count)
            .map(|i| decode(&records[i * RECORD_WORDS..(i + 1) * RECORD_WORDS]))
            .collect()
    }

    /// The job task `task` was running when last looked at.
    pub fn in_flight(&self, task: usize) -> Option<InFlight> {
        let (header, _, _) = self.block(task);
        let job = header[FLIGHT_JOB].load(Ordering::Acquire);
        (job != 0).then(|| InFlight {
            job: job - 1,
            phase: header[FLIGHT_PHASE].load(Ordering::Relaxed) as u32,
            release_ns: header[FLIGHT_RELEASE].load(Ordering::Relaxed),
            deadline_ns: header[FLIGHT_DEADLINE].load(Ordering::Relaxed),
            start_ns: header[FLIGHT_START].load(Ordering::Relaxed),
        })
    }

    /// The memory the runtime writes for job `job` of task `task`, as
    /// (address, bytes): the in-flight words ([`TaskLog::begin_job`],
    /// [`TaskLog::end_job`]), the record slot and the count
    /// ([`TaskLog::push`]), and the common heartbeat every task updates.
    /// The model the sharing check replays (tinct-sim's `sharing`).
    pub fn job_writes(&self, task: usize, job: usize) -> Vec<(usize, usize)> {
        let (header, records, capacity) = self.block(task);
        let address = |word: &AtomicU64| word.as_ptr() as usize;
        let mut writes = vec![
            (address(&self.words.words()[HEARTBEAT_WORD]), 8),
            (
                address(&header[FLIGHT_JOB]),
                8 * (FLIGHT_START - FLIGHT_JOB + 1),
            ),
            (address(&header[COUNT]), 8),
        ];
        if capacity > 0 {
            let slot = job.min(capacity - 1) * RECORD_WORDS;
            writes.push((address(&records[slot]), 8 * RECORD_WORDS));
        }
        writes
    }

    /// The thread id task `task` ran in (0 before it started).
    pub fn tid(&self, task: usize) -> i32 {
        self.block(task).0[TID].load(Ordering::Relaxed) as i32
    }
}

/// One task's log writer: a fixed capacity, never grows.
#[derive(Debug)]
pub struct TaskLog<'a> {
    header: &'a [AtomicU64],
    heartbeat: &'a AtomicU64,
    records: &'a [AtomicU64],
    capacity: usize,
    len: usize,
    full: bool,
}

impl TaskLog<'_> {
    /// Jobs the log can hold.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// True once full or once a push was refused.
    pub fn is_full(&self) -> bool {
        self.full || self.len == self.capacity
    }

    /// Notes the calling thread as the task's thread.
    pub fn set_thread(&self, tid: i32) {
        self.header[TID].store(tid as u64, Ordering::Relaxed);
    }

    /// Appends a record without allocating; false (record left out) when full.
    pub fn push(&mut self, record: JobRecord) -> bool {
        if self.len == self.capacity {
            self.full = true;
            return false;
        }
        let slot = &self.records[self.len * RECORD_WORDS..(self.len + 1) * RECORD_WORDS];
        for (word, value) in slot.iter().zip(encode(&record)) {
            word.store(value, Ordering::Relaxed);
        }
        self.len += 1;
        self.header[COUNT].store(self.len as u64, Ordering::Release);
        // A job is recorded once it finished (or, never started, once its
        // release came): the run was alive then.
        let alive = record.last_seen_ns();
        self.heartbeat.fetch_max(alive, Ordering::Release);
        true
    }

    /// Publishes the job now running (read by a supervisor after a crash).
    pub fn begin_job(&self, job: &InFlight) {
        self.header[FLIGHT_PHASE].store(u64::from(job.phase), Ordering::Relaxed);
        self.header[FLIGHT_RELEASE].store(job.release_ns, Ordering::Relaxed);
        self.header[FLIGHT_DEADLINE].store(job.deadline_ns, Ordering::Relaxed);
        self.header[FLIGHT_START].store(job.start_ns, Ordering::Relaxed);
        self.header[FLIGHT_JOB].store(job.job + 1, Ordering::Release);
        self.heartbeat.fetch_max(job.start_ns, Ordering::Release);
    }

    /// No job is running any more.
    pub fn end_job(&self) {
        self.header[FLIGHT_JOB].store(0, Ordering::Release);
    }
}

const OUTCOME_BITS: u64 = 0xff;

/// A policy in 16 bits: its number and its priority.
fn encode_policy(policy: Policy) -> u64 {
    let (number, priority): (u64, u8) = match policy {
        Policy::Other => (0, 0),
        Policy::Fifo(p) => (1, p),
        Policy::RoundRobin(p) => (2, p),
        Policy::Batch => (3, 0),
        Policy::Idle => (5, 0),
        Policy::Deadline => (6, 0),
        Policy::Unknown(_) => (0xff, 0),
    };
    number | u64::from(priority) << 8
}

fn decode_policy(bits: u64) -> Policy {
    let priority = (bits >> 8) as u8;
    match bits & 0xff {
        0 => Policy::Other,
        1 => Policy::Fifo(priority),
        2 => Policy::RoundRobin(priority),
        3 => Policy::Batch,
        5 => Policy::Idle,
        6 => Policy::Deadline,
        other => Policy::Unknown(other as i32),
    }
}

fn encode(r: &JobRecord) -> [u64; RECORD_WORDS] {
    let c = &r.counters;
    let counters = [
        c.cycles,
        c.instructions,
        c.llc_references,
        c.llc_misses,
        c.context_switches,
        c.cpu_migrations,
    ];
    let present = counters
        .iter()
        .enumerate()
        .fold(0u64, |mask, (i, v)| mask | (u64::from(v.is_some()) << i));
    let outcome = match r.outcome {
        Outcome::Completed => 0,
        Outcome::Missed => 1,
        Outcome::Aborted => 2,
    };
    [
        r.job,
        u64::from(r.phase),
        r.release_ns,
        r.deadline_ns,
        r.start_ns,
        // 0 is no finish: a finish is a CLOCK_MONOTONIC reading, never 0.
        r.finish_ns.unwrap_or(0),
        r.exec_ns,
        u64::from(r.cpu) | u64::from(r.cpu_end) << 32,
        u64::from(r.preemptions) | u64::from(r.voluntary_switches) << 32,
        // An absent counter's word is unused: its bit in `present` is 0.
        counters[0].unwrap_or(0),
        counters[1].unwrap_or(0),
        counters[2].unwrap_or(0),
        counters[3].unwrap_or(0),
        counters[4].unwrap_or(0),
        counters[5].unwrap_or(0),
        // Bits 0-7 outcome, 8-13 counters present, 16-31 policy, 32-39 nice.
        outcome | present << 8 | encode_policy(r.policy) << 16 | u64::from(r.nice as u8) << 32,
        r.jitter_ns,
        r.run_ns,
        r.slack_ns as u64,
        // Flow: 0 is "none" (samples count from 1; CPUs and times are
        // stored plus one, a move time of u64::MAX cannot happen).
        r.flow.sample.unwrap_or(0),
        u64::from(r.flow.lost) | r.flow.producer_cpu.map_or(0, |c| u64::from(c) + 1) << 32,
        r.flow.move_ns.map_or(0, |m| m.saturating_add(1)),
        r.flow.blocked_ns,
    ]
}

fn decode(words: &[AtomicU64]) -> JobRecord {
    let w = |i: usize| words[i].load(Ordering::Relaxed);
    let flags = w(15);
    let counter = |i: usize| (flags >> (8 + i) & 1 == 1).then(|| w(9 + i));
    JobRecord {
        job: w(0),
        phase: w(1) as u32,
        release_ns: w(2),
        jitter_ns: w(16),
        deadline_ns: w(3),
        start_ns: w(4),
        finish_ns: Some(w(5)).filter(|&f| f != 0),
        exec_ns: w(6),
        run_ns: w(17),
        slack_ns: w(18) as i64,
        cpu: w(7) as u32,
        cpu_end: (w(7) >> 32) as u32,
        policy: decode_policy(flags >> 16 & 0xffff),
        nice: (flags >> 32) as u8 as i8,
        preemptions: w(8) as u32,
        voluntary_switches: (w(8) >> 32) as u32,
        counters: CounterSample {
            cycles: counter(0),
            instructions: counter(1),
            llc_references: counter(2),
            llc_misses: counter(3),
            context_switches: counter(4),
            cpu_migrations: counter(5),
        },
        flow: Flow {
            sample: Some(w(19)).filter(|&s| s != 0),
            lost: w(20) as u32,
            producer_cpu: Some(w(20) >> 32)
                .filter(|&c| c != 0)
                .map(|c| (c - 1) as u32),
            move_ns: Some(w(21)).filter(|&m| m != 0).map(|m| m - 1),
            blocked_ns: w(22),
        },
        outcome: match flags & OUTCOME_BITS {
            0 => Outcome::Completed,
            1 => Outcome::Missed,
            _ => Outcome::Aborted,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(job: u64, outcome: Outcome) -> JobRecord {
        JobRecord {
            job,
            phase: 2,
            release_ns: 10 + job,
            jitter_ns: 4,
            deadline_ns: u64::MAX,
            start_ns: 11,
            finish_ns: (outcome != Outcome::Aborted).then_some(15),
            exec_ns: 3,
            run_ns: 2,
            slack_ns: -7,
            cpu: 1,
            cpu_end: 7,
            policy: if job.is_multiple_of(2) {
                Policy::RoundRobin(42)
            } else {
                Policy::Other
            },
            nice: -19,
            preemptions: 4,
            voluntary_switches: u32::MAX,
            counters: CounterSample {
                cycles: Some(99),
                instructions: None,
                llc_references: Some(0),
                llc_misses: None,
                context_switches: Some(u64::MAX),
                cpu_migrations: None,
            },
            flow: Flow {
                sample: (job > 0).then_some(job),
                lost: 3,
                producer_cpu: Some(0),
                move_ns: Some(0),
                blocked_ns: 5,
            },
            outcome,
        }
    }

    #[test]
    fn records_round_trip_and_a_full_log_refuses() {
        let log = SharedLog::new(&[2, 3]).unwrap();
        let mut first = log.writer(0);
        let mut second = log.writer(1);
        assert!(first.push(record(0, Outcome::Completed)));
        assert!(second.push(record(5, Outcome::Aborted)));
        assert!(first.push(record(1, Outcome::Missed)));
        assert!(first.is_full());
        assert!(!first.push(record(2, Outcome::Completed)));
        assert_eq!(
            log.records(0),
            vec![record(0, Outcome::Completed), record(1, Outcome::Missed)]
        );
        assert_eq!(log.records(1), vec![record(5, Outcome::Aborted)]);
        // A new writer continues after what is there.
        let mut again = log.writer(1);
        assert!(again.push(record(6, Outcome::Completed)));
        assert_eq!(log.records(1).len(), 2);
    }

    #[test]
    fn the_in_flight_job_and_the_window_are_published() {
        let log = SharedLog::new(&[1]).unwrap();
        assert_eq!(log.window(), None);
        log.set_window(100, 200);
        assert_eq!(log.window(), Some((100, 200)));
        let writer = log.writer(0);
        assert_eq!(log.in_flight(0), None);
        let job = InFlight {
            job: 0,
            phase: 1,
            release_ns: 5,
            deadline_ns: 9,
            start_ns: 6,
        };
        writer.begin_job(&job);
        assert_eq!(log.in_flight(0), Some(job));
        writer.end_job();
        assert_eq!(log.in_flight(0), None);
        writer.set_thread(1234);
        assert_eq!(log.tid(0), 1234);
        assert_eq!(log.fatal_signal(), None);
    }

    #[test]
    fn job_writes_lie_in_the_log_and_only_the_heartbeat_is_common() {
        let log = SharedLog::new(&[3, 3]).unwrap();
        let words = log.shared_words().words();
        let (start, end) = (
            words.as_ptr() as usize,
            words.as_ptr() as usize + words.len() * 8,
        );
        let a = log.job_writes(0, 1);
        let b = log.job_writes(1, 1);
        for &(address, bytes) in a.iter().chain(&b) {
            assert!(address >= start && address + bytes <= end);
        }
        assert_eq!(a[0], b[0], "the heartbeat word");
        let overlap = |x: &(usize, usize), y: &(usize, usize)| x.0 < y.0 + y.1 && y.0 < x.0 + x.1;
        for x in &a[1..] {
            assert!(b[1..].iter().all(|y| !overlap(x, y)), "{x:?} vs {b:?}");
        }
    }

    #[test]
    fn the_heartbeat_is_the_latest_sign_of_life() {
        let log = SharedLog::new(&[4]).unwrap();
        assert_eq!(log.heartbeat(), None);
        let mut writer = log.writer(0);
        writer.begin_job(&InFlight {
            job: 0,
            phase: 0,
            release_ns: 5,
            deadline_ns: 9,
            start_ns: 6,
        });
        assert_eq!(log.heartbeat(), Some(6));
        assert!(writer.push(record(0, Outcome::Completed))); // finish 15
        assert_eq!(log.heartbeat(), Some(15));
        log.beat(12);
        assert_eq!(log.heartbeat(), Some(15), "a beat never goes back");
        log.beat(40);
        assert_eq!(log.heartbeat(), Some(40));
    }
}
