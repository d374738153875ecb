//! Samples the counters of every thread of a process and of the processes
//! it started (its descendants): threads are found in `/proc/PID/task` of
//! every process of the tree at every sample (a thread or process that
//! lives shorter than one sampling period is not seen, nor one whose
//! parent ended first), each gets its own [`Counters`] (tinct-sys,
//! one atomic read per group), and each sample is the difference to the
//! thread's previous reading, scaled by the interval's own enabled and
//! running times.

use super::sample::Sample;
use super::threads;
use tinct_sys::perf::{Availability, Count, CounterEvent, Counters, Target};

/// One watched thread.
struct Watched {
    /// Its process.
    pid: i32,
    tid: i32,
    name: String,
    counters: Counters,
    /// The previous reading (zeros when the counters were just opened).
    last: Vec<Option<Count>>,
    now: Vec<Option<Count>>,
}

/// The sampler of one process.
pub struct Sampler {
    pid: i32,
    per_thread: bool,
    events: Vec<CounterEvent>,
    watched: Vec<Watched>,
    /// Availability of each event on the first thread opened.
    availability: Option<Vec<Availability>>,
    /// Threads seen in total.
    threads_seen: usize,
}

impl Sampler {
    /// A sampler of process `pid`: one row per thread per sample with
    /// `per_thread`, else one row per sample summed over the threads.
    pub fn new(pid: i32, per_thread: bool, events: Vec<CounterEvent>) -> Sampler {
        Sampler {
            pid,
            per_thread,
            events,
            watched: Vec::new(),
            availability: None,
            threads_seen: 0,
        }
    }

    /// The events sampled.
    pub fn events(&self) -> &[CounterEvent] {
        &self.events
    }

    /// Whether each event counts (as seen on the first thread), or `None`
    /// before any thread was opened.
    pub fn availability(&self) -> Option<&[Availability]> {
        self.availability.as_deref()
    }

    /// The name of a watched thread (`tid` as text if it is not watched).
    pub fn name_of(&self, tid: i32) -> String {
        self.watched
            .iter()
            .find(|w| w.tid == tid)
            .map_or_else(|| tid.to_string(), |w| w.name.clone())
    }

    /// Threads seen so far.
    pub fn threads_seen(&self) -> usize {
        self.threads_seen
    }

    /// Opens counters on threads of the process and its descendants that
    /// appeared since the last call; the thread ids it started watching.
    pub fn discover(&mut self) -> Vec<i32> {
        let mut new = Vec::new();
        for pid in threads::process_tree(self.pid) {
            for tid in threads::threads_of(pid) {
                if self.watched.iter().any(|w| w.tid == tid) {
                    continue;
                }
                if self.watch_in(pid, tid) {
                    new.push(tid);
                }
            }
        }
        new
    }

    /// Opens counters on thread `tid` of the process (if not watched yet);
    /// false if it was watched already or is gone.
    pub fn watch(&mut self, tid: i32) -> bool {
        self.watch_in(self.pid, tid)
    }

    /// Opens counters on thread `tid` of process `pid`; false if it was
    /// watched already or has exited (a thread of a zombie is still listed,
    /// and its counters would read "unavailable: ESRCH").
    fn watch_in(&mut self, pid: i32, tid: i32) -> bool {
        if self.watched.iter().any(|w| w.tid == tid) {
            return false;
        }
        let mut counters = Counters::open(&self.events, Target::Thread(tid));
        if !counters.any() && !threads::thread_alive(pid, tid) {
            return false; // gone before it could be watched
        }
        // A thread that exits between open and enable reads as no count.
        let _ = counters.enable();
        self.availability
            .get_or_insert_with(|| counters.availability().to_vec());
        let zero = Some(Count {
            value: 0,
            time_enabled_ns: 0,
            time_running_ns: 0,
        });
        let last = counters
            .availability()
            .iter()
            .map(|a| if a.is_counting() { zero } else { None })
            .collect();
        self.threads_seen += 1;
        self.watched.push(Watched {
            pid,
            tid,
            name: threads::thread_name(pid, tid),
            counters,
            last,
            now: vec![None; self.events.len()],
        });
        true
    }

    /// Reads every watched thread and returns the rows of the interval that
    /// ends at `t_ns` (ns since monitoring started) and lasted `interval_ns`.
    /// Threads that have exited give their last counts and are dropped.
    pub fn sample(&mut self, t_ns: u64, interval_ns: u64) -> Vec<Sample> {
        let mut live = Vec::new();
        for pid in self.watched.iter().map(|w| w.pid) {
            if !live.iter().any(|(p, _)| *p == pid) {
                live.push((pid, threads::threads_of(pid)));
            }
        }
        let is_live = |w: &Watched| {
            live.iter()
                .any(|(pid, tids)| *pid == w.pid && tids.contains(&w.tid))
        };
        let mut rows = Vec::with_capacity(self.watched.len());
        for w in &mut self.watched {
            // A thread's counters stay readable after it exits (final counts).
            if w.counters.read_into(&mut w.now).is_err() {
                w.now.iter_mut().for_each(|c| *c = None);
            }
            let counts = w
                .now
                .iter()
                .zip(&w.last)
                .map(|(now, last)| {
                    let (now, last) = ((*now)?, (*last)?);
                    now.since(&last)?.scaled().value()
                })
                .collect();
            std::mem::swap(&mut w.last, &mut w.now);
            if is_live(w) {
                // A new thread's first name may be its creator's (before exec).
                w.name = threads::thread_name(w.pid, w.tid);
            }
            rows.push(Sample {
                t_ns,
                interval_ns,
                tid: w.tid,
                thread: w.name.clone(),
                counts,
            });
        }
        self.watched.retain(|w| is_live(w));
        if self.per_thread || rows.is_empty() {
            return rows;
        }
        vec![sum(self.pid, t_ns, interval_ns, &rows)]
    }
}

/// The all-threads row: per event the sum over the threads, `None` if any
/// thread has no count for it.
fn sum(pid: i32, t_ns: u64, interval_ns: u64, rows: &[Sample]) -> Sample {
    let events = rows[0].counts.len();
    let counts = (0..events)
        .map(|i| {
            rows.iter()
                .try_fold(0u64, |total, r| total.checked_add(r.counts[i]?))
        })
        .collect();
    Sample {
        t_ns,
        interval_ns,
        tid: pid,
        thread: "all threads".into(),
        counts,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tinct_sys::perf::PerfEvent;

    #[test]
    fn the_all_threads_row_sums_and_keeps_missing_counts_missing() {
        let row = |tid, counts| Sample {
            t_ns: 5,
            interval_ns: 5,
            tid,
            thread: tid.to_string(),
            counts,
        };
        let total = sum(
            7,
            5,
            5,
            &[row(1, vec![Some(2), None]), row(2, vec![Some(3), Some(4)])],
        );
        assert_eq!(total.counts, vec![Some(5), None]);
        assert_eq!((total.tid, total.thread.as_str()), (7, "all threads"));
    }

    #[test]
    fn a_process_that_ended_before_it_was_watched_is_not_watched() {
        if !tinct_sys::testing::privileged_or_skip("counting another process's events") {
            return;
        }
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id() as i32;
        // Not reaped: a zombie still lists its thread. 30 s is a hang guard.
        let started = std::time::Instant::now();
        while threads::alive(pid) && started.elapsed().as_secs() < 30 {
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        assert!(!threads::alive(pid), "`true` never ended");
        assert_eq!(
            threads::threads_of(pid),
            vec![pid],
            "the zombie lists its thread"
        );
        let events: Vec<CounterEvent> = PerfEvent::SOFTWARE.iter().map(|&e| e.into()).collect();
        let mut sampler = Sampler::new(pid, false, events);
        let watched = sampler.discover();
        child.wait().unwrap();
        assert_eq!(watched, Vec::<i32>::new());
        assert_eq!(sampler.threads_seen(), 0);
        assert!(
            sampler.availability().is_none(),
            "no availability from a thread that had exited: {:?}",
            sampler.availability()
        );
    }

    #[test]
    fn a_thread_of_this_process_is_sampled() {
        if !tinct_sys::testing::privileged_or_skip("counting another thread's kernel events") {
            return;
        }
        let events: Vec<CounterEvent> = PerfEvent::SOFTWARE.iter().map(|&e| e.into()).collect();
        let pid = std::process::id() as i32;
        let mut sampler = Sampler::new(pid, true, events);
        sampler.discover();
        assert!(sampler.threads_seen() >= 1);
        std::thread::sleep(std::time::Duration::from_millis(5));
        let rows = sampler.sample(5_000_000, 5_000_000);
        let me = tinct_sys::sched::gettid();
        let mine = rows
            .iter()
            .find(|r| r.tid == me)
            .expect("this thread is sampled");
        assert!(mine.counts.iter().all(Option::is_some), "{mine:?}");
        assert!(
            mine.counts[1].unwrap() >= 1,
            "slept: at least one switch: {mine:?}"
        );
    }
}
