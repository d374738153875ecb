//! The release latency of tinct's periodic threads on this machine: actual
//! start − planned release of every job of a run with one SCHED_FIFO thread
//! per CPU, pinned, memory locked, jobs of no work at a fixed period,
//! /dev/cpu_dma_latency held at 0 µs (as cyclictest does).
//!
//! Both the release-latency benchmark (`benches/release_latency.rs`, beside
//! cyclictest) and the machine calibration (`tinct bench calibrate` and
//! `tinct bench overheads`, which store it as the release jitter the
//! analysis charges) measure through [`measure`].

use crate::error::{Result, RtError};
use crate::runtime::{RunOptions, run_until};
use crate::spec::RunSpec;
use crate::testing::{TaskBuilder, run_spec};
use std::io::Write;
use tinct_core::model::{JobProtocol, Kernel, Work};
use tinct_sys::signals::StopFlag;

/// How to measure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LatencyRun {
    /// One thread pinned to each of these CPUs.
    pub cpus: Vec<u32>,
    /// SCHED_FIFO priority of the threads.
    pub priority: u8,
    /// The period of every thread, ns.
    pub period_ns: u64,
    /// Jobs per thread.
    pub jobs: u64,
    /// Release thread i at i·T/n instead of all at the same instant
    /// (cyclictest's threads are offset by their start times).
    pub staggered: bool,
    /// A program run beside each thread as a task of its own: same CPU,
    /// priority and period, released half a period after the thread, its
    /// jobs in [`Latencies::program`] (a program's release
    /// latency against tinct's own threads in the same run).
    pub beside: Option<Beside>,
}

/// The program of [`LatencyRun::beside`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Beside {
    /// Its command (a resolved path and its arguments).
    pub command: Vec<String>,
    /// How its jobs are asked for. Under `lines` a job's start is tinct's
    /// thread's (the program cannot say when it woke): compare the
    /// responses of jobs of nothing, which include the pipe both ways.
    pub protocol: JobProtocol,
}

/// Release latencies of one run, ns.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Latencies {
    /// Jobs whose thread slept until the release: the platform's wake-up
    /// latency (what cyclictest counts).
    pub woke: Vec<u64>,
    /// Every job, including those released while the task's previous job
    /// still ran (after a stall), as `tinct run` reports them.
    pub all: Vec<u64>,
    /// True if the caller's stop ended the run early: the jobs released
    /// until then.
    pub stopped: bool,
    /// Response times (release to end) of the threads' completed jobs.
    pub responses: Vec<u64>,
    /// The threads' released jobs, started or not.
    pub released: u64,
    /// The programs' jobs ([`LatencyRun::beside`]), counted as the
    /// threads' are; empty without programs.
    pub program: Series,
}

/// Release latencies of one kind of task, ns.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Series {
    /// Jobs whose task slept until the release.
    pub woke: Vec<u64>,
    /// Every job.
    pub all: Vec<u64>,
    /// Response times (release to end) of its completed jobs.
    pub responses: Vec<u64>,
    /// Its released jobs, started or not.
    pub released: u64,
}

/// Holds /dev/cpu_dma_latency at 0 µs while alive (what cyclictest does):
/// no deep C-state adds its exit time to a wake-up.
pub fn hold_dma_latency() -> Option<std::fs::File> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/cpu_dma_latency")
        .ok()?;
    f.write_all(&0i32.to_ne_bytes()).ok()?;
    Some(f)
}

/// Runs the threads and returns their release latencies. Needs SCHED_FIFO
/// and mlockall (root or CAP_SYS_NICE and CAP_IPC_LOCK). Raising `stop`
/// ends the run at once with the latencies of the jobs released until then
/// ([`Latencies::stopped`]); a run that does not complete otherwise (a
/// thread failed, the watchdog) is an error.
pub fn measure(setup: &LatencyRun, stop: &StopFlag) -> Result<Latencies> {
    let n = setup.cpus.len().max(1) as u64;
    let tasks = setup
        .cpus
        .iter()
        .enumerate()
        .flat_map(|(i, &cpu)| {
            let offset = if setup.staggered {
                i as u64 * setup.period_ns / n
            } else {
                0
            };
            let thread = TaskBuilder::periodic(&format!("latency-{cpu}"), setup.period_ns)
                .cpu(cpu)
                .fifo(setup.priority)
                .offset(offset)
                .kernel(Kernel::Compute, Work::Iterations(0))
                .jobs(setup.jobs)
                .build();
            // Half a period later on the same CPU: neither delays the
            // other, and a stall of the CPU falls on both alike.
            let program = setup.beside.as_ref().map(|beside| {
                TaskBuilder::periodic(&format!("{PROGRAM_PREFIX}{cpu}"), setup.period_ns)
                    .cpu(cpu)
                    .fifo(setup.priority)
                    .offset(offset + setup.period_ns / 2)
                    .program(beside.command.clone(), beside.protocol)
                    .jobs(setup.jobs)
                    .build()
            });
            std::iter::once(thread).chain(program)
        })
        .collect();
    // The last release (a program's, half a period late) and its job.
    let duration = setup
        .period_ns
        .checked_mul(setup.jobs)
        .and_then(|d| d.checked_add(setup.period_ns)?.checked_add(setup.period_ns))
        .ok_or_else(|| RtError::Task {
            task: "release-latency".into(),
            message: format!(
                "{} jobs of {} ns do not fit in a u64 of nanoseconds",
                setup.jobs, setup.period_ns
            ),
        })?;
    let spec = RunSpec {
        source: "release-latency measurement".into(),
        ..run_spec(tasks, duration)
    };
    let _dma = hold_dma_latency();
    let result = run_until(
        &spec,
        RunOptions {
            handle_signals: false,
            // A latency measurement reports overruns in its maximum; it must
            // not be stopped by the watchdog on a noisy machine.
            watchdog_factor: 1000.0,
            // The sentinel would wake at the top priority on every CPU
            // measured, between the releases: the latency is measured
            // without it, as cyclictest's is.
            sentinel: None,
            ..RunOptions::default()
        },
        stop,
    )?;
    let stopped = stop.is_raised() && result.stop == crate::watchdog::StopReason::Signal;
    if !result.stop.is_completed() && !stopped {
        return Err(RtError::Task {
            task: "release-latency".into(),
            message: result.stop.describe(),
        });
    }
    let mut latencies = Latencies {
        stopped,
        ..Latencies::default()
    };
    for task in &result.tasks {
        let (woke, all, responses, released) = if task.spec.name.starts_with(PROGRAM_PREFIX) {
            let p = &mut latencies.program;
            (&mut p.woke, &mut p.all, &mut p.responses, &mut p.released)
        } else {
            (
                &mut latencies.woke,
                &mut latencies.all,
                &mut latencies.responses,
                &mut latencies.released,
            )
        };
        *released += task.records.len() as u64;
        let mut previous_finish = 0;
        for r in &task.records {
            responses.extend(r.response_ns());
            let Some(latency) = r.latency_ns() else {
                continue;
            };
            all.push(latency);
            // cyclictest skips periods it overslept; count only jobs whose
            // thread actually slept until the release, as it does.
            if r.release_ns >= previous_finish {
                woke.push(latency);
            }
            previous_finish = r.finish_ns.unwrap_or(u64::MAX);
        }
    }
    Ok(latencies)
}

/// The names of the program tasks ([`LatencyRun::beside`]): this and the
/// CPU.
const PROGRAM_PREFIX: &str = "program-";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_release_is_measured_once() {
        if !tinct_sys::testing::privileged_or_skip("release latency (SCHED_FIFO, mlockall)") {
            return;
        }
        let cpus = tinct_sys::sched::affinity().unwrap();
        let setup = LatencyRun {
            cpus: cpus.clone(),
            priority: 90,
            period_ns: 1_000_000,
            jobs: 50,
            staggered: true,
            beside: None,
        };
        let latencies = measure(&setup, &StopFlag::new()).unwrap();
        assert_eq!(latencies.all.len() as u64, 50 * cpus.len() as u64);
        assert!(latencies.woke.len() <= latencies.all.len());
        assert!(!latencies.woke.is_empty() && !latencies.stopped);
        let overflow = LatencyRun {
            jobs: u64::MAX,
            ..setup.clone()
        };
        assert!(measure(&overflow, &StopFlag::new()).is_err());
    }

    #[test]
    fn a_raised_stop_ends_the_measurement_and_keeps_its_jobs() {
        if !tinct_sys::testing::privileged_or_skip("release latency (SCHED_FIFO, mlockall)") {
            return;
        }
        // A minute of jobs, stopped after half a second (or before the
        // release, on a slow setup: a stop seen during setup still
        // releases each thread's first job, as a SIGINT there does).
        let setup = LatencyRun {
            cpus: tinct_sys::sched::affinity().unwrap(),
            priority: 90,
            period_ns: 1_000_000,
            jobs: 60_000,
            staggered: false,
            beside: None,
        };
        let stop = StopFlag::new();
        let latencies = std::thread::scope(|scope| {
            let stopper = stop.clone();
            scope.spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(500));
                stopper.raise();
            });
            measure(&setup, &stop).unwrap()
        });
        assert!(latencies.stopped);
        assert!(
            latencies.all.len() < 60_000 * setup.cpus.len(),
            "{} jobs: the run went on to its end",
            latencies.all.len()
        );
        assert!(latencies.woke.len() <= latencies.all.len());
    }
}
