//! What is recorded of each job ([`JobRecord`], kept in the preallocated
//! [`crate::shared_log::SharedLog`] while tasks run) and the job counts of
//! a task ([`Accounting`]: released = completed + missed + aborted).

use crate::counters::CounterSample;
use serde::{Deserialize, Serialize};
use tinct_sys::sched::Policy;

/// How a released job ended.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// Finished by its deadline.
    Completed,
    /// Finished after its deadline.
    Missed,
    /// Released but stopped (watchdog, signal, crash) before it finished,
    /// or never started because the run stopped.
    Aborted,
}

/// One job, times in CLOCK_MONOTONIC nanoseconds: plain data, the per-job
/// record every output (jobs.csv, traces, summaries, rt-app logs) is made
/// from. The task and thread are those of the [`crate::runtime::TaskRun`]
/// holding it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub struct JobRecord {
    /// Job number within its task, from 0.
    pub job: u64,
    /// Index of the phase (rt-app phases; 0 for plans).
    pub phase: u32,
    /// Planned release.
    pub release_ns: u64,
    /// Release jitter of this job: it was let start this long after its
    /// release (0 without `jitter`).
    pub jitter_ns: u64,
    /// Absolute deadline (`u64::MAX` for a task without deadline).
    pub deadline_ns: u64,
    /// Actual start (0 if the job never started): the first clock read
    /// after the thread woke for the release (as cyclictest counts a
    /// wake-up), or, for a job released while the previous one still ran,
    /// the first clock read once that one had ended.
    pub start_ns: u64,
    /// Finish; `None` for a job that did not finish (aborted).
    pub finish_ns: Option<u64>,
    /// Thread CPU time of the job.
    pub exec_ns: u64,
    /// Wall-clock time spent in `run` and `runtime` steps.
    pub run_ns: u64,
    /// Time left before the next tick when the job's last timer was reached
    /// (negative: late), rt-app's slack; 0 without a timer.
    pub slack_ns: i64,
    /// CPU at the start.
    pub cpu: u32,
    /// CPU at the finish (or where it was stopped).
    pub cpu_end: u32,
    /// The policy in force at the job's start, as the kernel reported it.
    pub policy: Policy,
    /// The nice value in force (SCHED_OTHER, SCHED_BATCH).
    pub nice: i8,
    /// Involuntary context switches during the job (preemptions).
    pub preemptions: u32,
    /// Voluntary context switches during the job (sleeps, waits).
    pub voluntary_switches: u32,
    /// Counter differences over the job (hardware where available, the
    /// kernel's context switches and migrations everywhere).
    pub counters: CounterSample,
    /// The job's packets, for a task of a pipeline ([`crate::pipeline`]).
    pub flow: Flow,
    /// How it ended.
    pub outcome: Outcome,
}

/// What a job handed over or took in a pipeline ([`crate::spec::Step::Send`],
/// [`crate::spec::Step::Receive`]; empty for other tasks), and how long it
/// waited at locks.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Flow {
    /// The number (from 1) of the sample this job handed over last, or,
    /// for a job that sends nothing, of the one it took last.
    pub sample: Option<u64>,
    /// Untaken samples this job's hand-overs replaced (overwriting
    /// buffers only): lost, never consumed.
    pub lost: u32,
    /// For a data-triggered job: the CPU its releasing producer ran on
    /// when it handed over (the last input to arrive).
    pub producer_cpu: Option<u32>,
    /// For a data-triggered job moved under the `affinity` placement: how
    /// long the moves took, ns (`None` when nothing moved): the
    /// `sched_setaffinity` calls of the producers that placed it while it
    /// waited for its inputs (off this job's response), and its own move
    /// and its program's, when it had to make them (it was still in a job
    /// at the hand-over, or was pinned elsewhere since).
    pub move_ns: Option<u64>,
    /// Time the job waited to lock mutexes (a task set's critical sections,
    /// rt-app `lock`): the blocking it met at the lock. Under the priority
    /// ceiling protocol a job is blocked before it starts instead (its
    /// release latency), never at the lock.
    pub blocked_ns: u64,
}

impl JobRecord {
    /// A job that was released but never started.
    pub fn never_started(job: u64, phase: u32, release_ns: u64, deadline_ns: u64) -> JobRecord {
        JobRecord {
            job,
            phase,
            release_ns,
            jitter_ns: 0,
            deadline_ns,
            start_ns: 0,
            finish_ns: None,
            exec_ns: 0,
            run_ns: 0,
            slack_ns: 0,
            cpu: 0,
            cpu_end: 0,
            policy: Policy::Other,
            nice: 0,
            preemptions: 0,
            voluntary_switches: 0,
            counters: CounterSample::default(),
            flow: Flow::default(),
            outcome: Outcome::Aborted,
        }
    }

    /// True if the job started.
    pub fn started(&self) -> bool {
        self.start_ns != 0
    }

    /// Response time: finish − release (only for finished jobs).
    pub fn response_ns(&self) -> Option<u64> {
        if self.outcome == Outcome::Aborted {
            return None;
        }
        self.finish_ns.map(|f| f.saturating_sub(self.release_ns))
    }

    /// Release latency: start − planned release (for started jobs).
    pub fn latency_ns(&self) -> Option<u64> {
        self.started()
            .then(|| self.start_ns.saturating_sub(self.release_ns))
    }

    /// 1 if the job ended on another CPU than it started on.
    pub fn migrations(&self) -> u32 {
        u32::from(self.started() && self.cpu != self.cpu_end)
    }

    /// The policy in force, in words (`SCHED_FIFO 20`, `SCHED_OTHER nice -5`).
    pub fn policy_text(&self) -> String {
        tinct_sys::sched::Scheduling {
            nice: self.nice,
            ..tinct_sys::sched::Scheduling::of(self.policy)
        }
        .describe()
    }

    /// The last instant the job was seen alive: its finish, else its start,
    /// else its release.
    pub fn last_seen_ns(&self) -> u64 {
        self.finish_ns.unwrap_or(self.start_ns).max(self.release_ns)
    }
}

/// Job counts of one task: `released = completed + missed + aborted`.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Accounting {
    /// Jobs whose release instant came during the run.
    pub released: u64,
    /// Finished by the deadline.
    pub completed: u64,
    /// Finished late.
    pub missed: u64,
    /// Stopped or never started.
    pub aborted: u64,
}

impl Accounting {
    /// Counts the records of one task.
    pub fn of(records: &[JobRecord]) -> Accounting {
        let mut a = Accounting {
            released: records.len() as u64,
            ..Accounting::default()
        };
        for r in records {
            match r.outcome {
                Outcome::Completed => a.completed += 1,
                Outcome::Missed => a.missed += 1,
                Outcome::Aborted => a.aborted += 1,
            }
        }
        a
    }

    /// The invariant every run must keep.
    pub fn balances(&self) -> bool {
        self.released == self.completed + self.missed + self.aborted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accounting_counts_each_outcome() {
        let mut late = JobRecord::never_started(1, 0, 10, 20);
        late.start_ns = 11;
        late.finish_ns = Some(25);
        late.outcome = Outcome::Missed;
        let mut ok = late;
        ok.finish_ns = Some(15);
        ok.outcome = Outcome::Completed;
        let records = [ok, late, JobRecord::never_started(2, 0, 30, 40)];
        let a = Accounting::of(&records);
        assert_eq!((a.released, a.completed, a.missed, a.aborted), (3, 1, 1, 1));
        assert!(a.balances());
        assert_eq!(ok.response_ns(), Some(5));
        assert_eq!(late.latency_ns(), Some(1));
        assert_eq!(records[2].response_ns(), None);
    }
}
