//! Running a few pinned threads that start together and timing them.
//!
//! The interference benches (coherence, banks, isolation) all need the same
//! thing: N threads, each pinned to its CPUs, released at the same instant
//! by a barrier, each doing its work on its own input, and the wall time
//! from the first start to the last end.

use crate::{Error, Result};
use std::sync::Barrier;
use std::time::Instant;

/// One thread of a [`run_together`] call.
#[derive(Debug)]
pub struct Job<T> {
    /// CPUs the thread is pinned to (empty: inherit the caller's affinity).
    pub cpus: Vec<u32>,
    /// What the thread works on.
    pub input: T,
}

/// Timings and results of a [`run_together`] call.
#[derive(Debug)]
pub struct Timed<R> {
    /// From the earliest start to the latest end over all threads (ns).
    pub elapsed_ns: u64,
    /// Each thread's own time from its start to its end (ns).
    pub per_thread_ns: Vec<u64>,
    /// Each thread's result, in job order.
    pub outputs: Vec<R>,
}

/// Spawns one thread per job, pins it (and puts it under SCHED_FIFO with
/// `fifo` priority if given), waits until all are ready, then runs
/// `work(index, input)` in each and times them.
pub fn run_together<T: Send, R: Send>(
    jobs: Vec<Job<T>>,
    fifo: Option<u8>,
    work: impl Fn(usize, T) -> R + Sync,
) -> Result<Timed<R>> {
    let barrier = Barrier::new(jobs.len());
    let work = &work;
    let barrier = &barrier;
    let results: Vec<std::thread::Result<Result<(Instant, Instant, R)>>> =
        std::thread::scope(|scope| {
            let handles: Vec<_> = jobs
                .into_iter()
                .enumerate()
                .map(|(index, job)| {
                    scope.spawn(move || {
                        let pinned = if job.cpus.is_empty() {
                            Ok(())
                        } else {
                            tinct_sys::sched::set_affinity(&job.cpus).map_err(Error::from)
                        }
                        .and_then(|()| match fifo {
                            Some(priority) => {
                                tinct_sys::sched::set_fifo(priority).map_err(Error::from)
                            }
                            None => Ok(()),
                        });
                        // Everybody waits, even a thread that failed to pin,
                        // so nobody is left at the barrier.
                        barrier.wait();
                        pinned?;
                        let start = Instant::now();
                        let output = work(index, job.input);
                        Ok((start, Instant::now(), output))
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join()).collect()
        });
    let mut spans = Vec::with_capacity(results.len());
    let mut outputs = Vec::with_capacity(results.len());
    for (index, result) in results.into_iter().enumerate() {
        let (start, end, output) = result
            .map_err(|_| Error::Measurement(format!("measuring thread {index} panicked")))??;
        spans.push((start, end));
        outputs.push(output);
    }
    let first = spans.iter().map(|s| s.0).min();
    let last = spans.iter().map(|s| s.1).max();
    let elapsed_ns = match (first, last) {
        (Some(first), Some(last)) => nanos(last - first),
        _ => 0,
    };
    Ok(Timed {
        elapsed_ns,
        per_thread_ns: spans.iter().map(|(s, e)| nanos(*e - *s)).collect(),
        outputs,
    })
}

/// A duration in whole nanoseconds (saturating).
pub fn nanos(duration: std::time::Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_job_runs_once_with_its_input_and_the_span_covers_all() {
        let cpus = tinct_sys::sched::affinity().unwrap();
        let jobs = vec![
            Job {
                cpus: vec![cpus[0]],
                input: 3u64,
            },
            Job {
                cpus: Vec::new(),
                input: 4u64,
            },
        ];
        let timed = run_together(jobs, None, |index, input| {
            std::thread::sleep(std::time::Duration::from_millis(1));
            (index, input * 10, tinct_sys::sched::affinity().unwrap())
        })
        .unwrap();
        assert_eq!(timed.outputs[0].0, 0);
        assert_eq!(timed.outputs[0].1, 30);
        assert_eq!(timed.outputs[0].2, vec![cpus[0]], "job 0 runs pinned");
        assert_eq!(timed.outputs[1].1, 40);
        assert_eq!(
            timed.outputs[1].2, cpus,
            "job 1 keeps the caller's affinity"
        );
        let longest = *timed.per_thread_ns.iter().max().unwrap();
        assert!(longest >= 1_000_000, "each job slept 1 ms: {longest}");
        assert!(timed.elapsed_ns >= longest);
    }

    #[test]
    fn a_bad_cpu_is_an_error_not_a_hang() {
        let jobs = vec![
            Job {
                cpus: vec![100_000],
                input: (),
            },
            Job {
                cpus: Vec::new(),
                input: (),
            },
        ];
        assert!(run_together(jobs, None, |_, ()| ()).is_err());
    }
}
