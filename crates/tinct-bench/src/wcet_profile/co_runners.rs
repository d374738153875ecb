//! Co-runners for the `co-run` conditions: one process (`tinct bench
//! wcet-corunner`, the same binary) with an aggressor thread pinned to each
//! other CPU of the run, each sweeping its own buffer with read-modify-writes
//! of one word per cache line (isolation's aggressor kernel,
//! [`crate::harness::memory_pass::aggress`]), from before
//! the worker starts until after it ends.
//!
//! Where page colouring partitions the last-level cache (the colour probe
//! of tinct-sys says so), the co-runners run under the LD_PRELOAD shim on
//! the colours of the partitions the profiled task does not use — other
//! tasks in their own partitions, as kim2013 allocates them — and each
//! buffer is twice those partitions' share of the cache. Where colouring is
//! not effective (or the task itself is uncoloured), the co-runners are
//! uncoloured and each sweeps twice the whole last-level cache: colours
//! isolate nothing there, so nothing stops them from evicting the task.
//!
//! The protocol: the parent passes one [`CoRunnerJob`] as a JSON argument,
//! reads one `ready` line once every aggressor sweeps, and closes the
//! child's stdin to stop it; the child then prints one [`CoRunnerReport`]
//! JSON line.

use super::worker::WorkerCommand;
use super::worker::check_colors;
use crate::harness::memory_pass::aggress;
use crate::{Error, Result};
use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, Ordering};
use tinct_mem::ShimConfig;

/// Whether co-runners run on coloured memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CoRunnerChoice {
    /// Coloured when the task is and the colour probe finds colouring
    /// effective; uncoloured otherwise.
    #[default]
    Auto,
    /// Always in the partitions the task does not use (when the task is coloured).
    Colored,
    /// Always on the ordinary heap.
    Uncolored,
}

impl std::str::FromStr for CoRunnerChoice {
    type Err = Error;

    /// `auto`, `colored` or `uncolored`.
    fn from_str(text: &str) -> Result<Self> {
        match text {
            "auto" => Ok(Self::Auto),
            "colored" => Ok(Self::Colored),
            "uncolored" => Ok(Self::Uncolored),
            other => Err(Error::option(
                "--co-runners",
                "auto, colored or uncolored",
                format!("`{other}`"),
            )),
        }
    }
}

/// The line a co-runner prints once every aggressor runs.
pub const READY: &str = "ready";

/// What one co-runner process runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CoRunnerJob {
    /// One aggressor thread pinned to each of these CPUs.
    pub cpus: Vec<u32>,
    /// Bytes each aggressor sweeps.
    pub bytes_per_cpu: u64,
    /// The page colours the buffers should lie in (a list like `16-511`),
    /// checked through pagemap; `None` when uncoloured.
    pub expect_colors: Option<String>,
}

/// What a co-runner did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CoRunnerReport {
    /// Sweeps over its buffer per aggressor thread.
    pub sweeps: Vec<u64>,
    /// Pages of the buffers whose frame was read.
    pub pages_checked: u64,
    /// Of those, pages in the expected colours.
    pub pages_in_colors: u64,
}

/// The co-runner process's whole life: reads the job from `arg`, starts
/// the aggressors, writes [`READY`] to `out` once all of them sweep, runs
/// until `input` ends (the parent closed it) and returns the report line.
pub fn main(arg: &str, out: &mut dyn Write, input: &mut dyn Read) -> Result<String> {
    let job: CoRunnerJob = serde_json::from_str(arg).map_err(|e| {
        Error::option(
            "wcet-corunner",
            "a job as JSON (internal command)",
            format!("{arg:?}: {e}"),
        )
    })?;
    if job.cpus.is_empty() {
        return Err(Error::option("wcet-corunner", "at least one CPU", "none"));
    }
    let stop = AtomicBool::new(false);
    let failed = AtomicBool::new(false);
    let started = Barrier::new(job.cpus.len() + 1);
    let words = usize::try_from(job.bytes_per_cpu / 8)
        .unwrap_or(usize::MAX)
        .max(8);
    let outcome = std::thread::scope(|scope| -> Result<Vec<(u64, u64, u64)>> {
        let threads: Vec<_> = job
            .cpus
            .iter()
            .map(|&cpu| {
                let (stop, failed, started) = (&stop, &failed, &started);
                let expect = &job.expect_colors;
                scope.spawn(move || -> Result<(u64, u64, u64)> {
                    let setup = (|| {
                        tinct_sys::sched::set_affinity(&[cpu])?;
                        let buffer = vec![1u64; words];
                        let placement = match expect {
                            Some(list) => {
                                let (start, bytes) = (buffer.as_ptr() as usize, buffer.len() * 8);
                                let (checked, in_colors, _) = check_colors(start, bytes, list)?;
                                (checked, in_colors)
                            }
                            None => (0, 0),
                        };
                        Ok::<_, Error>((buffer, placement))
                    })();
                    if setup.is_err() {
                        failed.store(true, Ordering::Relaxed);
                    }
                    started.wait();
                    let (mut buffer, (checked, in_colors)) = setup?;
                    let sweeps = aggress(&mut [buffer.as_mut_slice()], stop);
                    Ok((sweeps, checked, in_colors))
                })
            })
            .collect();
        started.wait();
        // Every thread has set up (or failed); the aggressors sweep now.
        // Ready is only announced when all of them do.
        if !failed.load(Ordering::Relaxed)
            && writeln!(out, "{READY}").and_then(|()| out.flush()).is_ok()
        {
            let mut rest = Vec::new();
            let _ = input.read_to_end(&mut rest);
        }
        stop.store(true, Ordering::Relaxed);
        threads
            .into_iter()
            .map(|t| {
                t.join()
                    .map_err(|_| Error::Measurement("a co-runner thread panicked".into()))?
            })
            .collect()
    })?;
    let report = CoRunnerReport {
        sweeps: outcome.iter().map(|o| o.0).collect(),
        pages_checked: outcome.iter().map(|o| o.1).sum(),
        pages_in_colors: outcome.iter().map(|o| o.2).sum(),
    };
    serde_json::to_string(&report).map_err(|source| Error::Json {
        what: "co-runner report".into(),
        source,
    })
}

/// A running co-runner process (stopped and reaped on drop).
pub(super) struct CoRunners {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl CoRunners {
    /// Starts the co-runners and waits until they sweep. `shim` is the
    /// LD_PRELOAD shim and its configuration when they are coloured.
    pub fn start(
        command: &WorkerCommand,
        job: &CoRunnerJob,
        shim: Option<(&Path, ShimConfig)>,
    ) -> Result<Self> {
        let mut process = Command::new(&command.program);
        process
            .args(&command.co_runner_prefix)
            .arg(serde_json::to_string(job).map_err(|source| Error::Json {
                what: "co-runner job".into(),
                source,
            })?)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some((path, config)) = shim {
            process
                .envs(config.to_env())
                .env("LD_PRELOAD", path)
                .env("RUST_BACKTRACE", "0");
        }
        let mut child = process.spawn().map_err(|e| {
            Error::Measurement(format!(
                "cannot start the co-runners {}: {e}",
                command.program.display()
            ))
        })?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(Error::Measurement("the co-runners have no pipes".into()));
        };
        let mut running = Self {
            child,
            stdin: Some(stdin),
            stdout: BufReader::new(stdout),
        };
        let mut line = String::new();
        let _ = running.stdout.read_line(&mut line);
        if line.trim() != READY {
            let why = running.failure();
            return Err(Error::Measurement(format!(
                "the co-runners did not start: {why}"
            )));
        }
        Ok(running)
    }

    /// Stops the co-runners and returns what they did.
    pub fn stop(mut self) -> Result<CoRunnerReport> {
        drop(self.stdin.take());
        let mut line = String::new();
        let _ = self.stdout.read_line(&mut line);
        match serde_json::from_str(line.trim()) {
            Ok(report) => {
                let _ = self.child.wait();
                Ok(report)
            }
            Err(_) => Err(Error::Measurement(format!(
                "the co-runners failed: {}",
                self.failure()
            ))),
        }
    }

    /// Ends the child and says how it ended, with its stderr.
    fn failure(&mut self) -> String {
        drop(self.stdin.take());
        let _ = self.child.kill();
        let status = self.child.wait();
        let mut stderr = String::new();
        if let Some(mut pipe) = self.child.stderr.take() {
            let _ = pipe.read_to_string(&mut stderr);
        }
        format!(
            "{} {}",
            status.map_or_else(|e| e.to_string(), |s| s.to_string()),
            stderr.trim()
        )
    }
}

impl Drop for CoRunners {
    fn drop(&mut self) {
        drop(self.stdin.take());
        // Normally reaped already; after an error, make sure nothing keeps sweeping.
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_co_runner_sweeps_until_its_input_ends() {
        let cpu = tinct_sys::sched::current_cpu();
        let job = CoRunnerJob {
            cpus: vec![cpu, cpu],
            bytes_per_cpu: 64 << 10,
            expect_colors: None,
        };
        let mut out = Vec::new();
        let line = main(
            &serde_json::to_string(&job).unwrap(),
            &mut out,
            &mut std::io::empty(),
        )
        .unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), format!("{READY}\n"));
        let report: CoRunnerReport = serde_json::from_str(&line).unwrap();
        assert_eq!(report.sweeps.len(), 2);
        assert!(report.sweeps.iter().all(|&s| s >= 1));
        assert_eq!((report.pages_checked, report.pages_in_colors), (0, 0));
    }

    #[test]
    fn co_runner_choices_parse_and_unknown_ones_are_input_errors() {
        assert_eq!(
            "colored".parse::<CoRunnerChoice>().unwrap(),
            CoRunnerChoice::Colored
        );
        assert_eq!(
            "auto".parse::<CoRunnerChoice>().unwrap(),
            CoRunnerChoice::Auto
        );
        assert_eq!(
            "uncolored".parse::<CoRunnerChoice>().unwrap(),
            CoRunnerChoice::Uncolored
        );
        let error = "coloured".parse::<CoRunnerChoice>().unwrap_err();
        assert!(matches!(error, Error::Input(_)), "{error}");
    }

    #[test]
    fn bad_jobs_are_refused() {
        let mut out = Vec::new();
        for arg in [
            "{",
            r#"{"cpus": [], "bytes_per_cpu": 1, "expect_colors": null}"#,
        ] {
            let err = main(arg, &mut out, &mut std::io::empty()).unwrap_err();
            assert!(matches!(err, Error::Input(_)), "{err}");
        }
        assert!(out.is_empty());
    }
}
