//! Starting the worker processes of `tinct bench wcet-profile`: finding
//! the shim, and one launch per p with its colours.

use super::worker::{WorkerJob, WorkerReport};
use super::{Params, ProfiledBody, WorkerCommand};
use crate::{Error, Result};
use std::path::{Path, PathBuf};
use std::process::Command;
use tinct_mem::ShimConfig;
use tinct_mem::shim_config::{PRELOAD_LIB, PRELOAD_LIB_VAR, locate_shim, shim_candidates};

/// The shim to use: `--preload`, else `$TINCT_PRELOAD_LIB`, else beside the
/// program (`tinct bench` passes the shim it found, embedded copy included).
pub(super) fn find_preload(params: &Params, worker: &WorkerCommand) -> Result<PathBuf> {
    if let Some(path) = params.preload.clone() {
        return if path.is_file() {
            Ok(path)
        } else {
            Err(Error::option(
                "--preload",
                format!("the path of {PRELOAD_LIB}"),
                format!("no file at {}", path.display()),
            ))
        };
    }
    let dir = worker.program.parent().unwrap_or(Path::new("."));
    locate_shim(dir)
        .map_err(Error::Input)?.ok_or_else(|| {
        let [beside, lib] = shim_candidates(dir);
        Error::Measurement(format!(
            "{PRELOAD_LIB} not found (looked in {} and {}): build it with `cargo build -p tinct-preload`, \
             name it with --preload or {PRELOAD_LIB_VAR}, or run with --uncolored (partitions not enforced)",
            beside.display(),
            lib.display()
        ))
    })
}

/// Colored memory needs physical frame numbers (root or CAP_SYS_ADMIN).
pub(super) fn require_frame_numbers() -> Result<()> {
    use tinct_sys::privilege::{Capability, Privileges};
    let readable = Privileges::read(&tinct_sys::SysRoot::live())
        .is_ok_and(|p| p.is_root() || p.has(Capability::SysAdmin));
    if readable {
        Ok(())
    } else {
        Err(Error::Measurement(
            "profiling on colored memory needs physical frame numbers from /proc/self/pagemap, \
             which only root or CAP_SYS_ADMIN may read: run as root, or with --uncolored \
             (working set from the ordinary heap, partitions NOT enforced)"
                .into(),
        ))
    }
}

/// One worker launch.
pub(super) struct Launch<'a> {
    pub worker: &'a WorkerCommand,
    pub body: &'a ProfiledBody,
    pub jobs: u32,
    pub seed: u64,
    pub cpu: u32,
    pub fifo: Option<u8>,
    pub colors: &'a [u32],
    pub total_colors: u32,
    /// The colours' physical address bits, for the shim.
    pub color_bits: &'a [u32],
    pub preload: Option<&'a Path>,
    /// Flush the working set before each job.
    pub cold: bool,
    /// Bytes of the last-level cache (a program's `cold` jobs follow a
    /// sweep of twice as much on its CPU).
    pub llc_bytes: u64,
    /// The bench's stop (Ctrl-C), when the caller has one: a program body
    /// leads a process group of its own, so a terminal's Ctrl-C does not
    /// reach it, and its launch looks at this instead.
    pub stop: Option<tinct_sys::signals::StopFlag>,
}

/// The shim's configuration for a process whose heap must hold `bytes` in
/// `colors` (of `total_colors`): strict, with a pool large enough that its
/// share of those colours holds the bytes, times `pool_factor`.
pub(super) fn shim_config(
    colors: &[u32],
    color_bits: &[u32],
    total_colors: u32,
    bytes: u64,
    pool_factor: u64,
) -> ShimConfig {
    // The pool maps every color and keeps the requested ones: it must
    // be large enough that its share of those colors holds the working set.
    let share = f64::from(total_colors) / colors.len().max(1) as f64;
    let pool = ((bytes as f64 * share * 4.0) as u64 + (64 << 20)).saturating_mul(pool_factor);
    let mut config = ShimConfig::colored(colors.to_vec());
    config.color_bits = Some(color_bits.to_vec());
    config.pool_bytes = pool.div_ceil(1 << 20).saturating_mul(1 << 20);
    config.strict = true;
    config
}

impl Launch<'_> {
    /// Runs the worker. Under the shim a launch can fail for want of
    /// memory in the requested colors (physical frames need not spread
    /// evenly over colors, and strict mode refuses uncolored fallbacks even
    /// for the worker's own small allocations): it is retried with a pool
    /// twice and then four times as large before the bench gives up.
    /// `None`: the worker was ended by SIGINT or SIGTERM (a terminal's
    /// Ctrl-C reaches it with the bench, in the same process group), or a
    /// program body's launch saw the bench's stop.
    pub fn run_with_retry(&self) -> Result<Option<WorkerReport>> {
        let mut failures: Vec<String> = Vec::new();
        for factor in [1, 2, 4] {
            match self.run(factor) {
                Ok(report) => return Ok(report),
                Err(Error::Measurement(message))
                    if self.preload.is_some() && message.contains("memory") =>
                {
                    if !failures.contains(&message) {
                        failures.push(message);
                    }
                }
                Err(other) => return Err(other),
            }
        }
        Err(Error::Measurement(format!(
            "{} (also with a pool four times as large)",
            failures.join("; then: ")
        )))
    }

    fn run(&self, pool_factor: u64) -> Result<Option<WorkerReport>> {
        if let Some(program) = &self.body.program {
            return super::program_launch::run(self, program, pool_factor);
        }
        let mut command = Command::new(&self.worker.program);
        command.args(&self.worker.prefix);
        let color_list = tinct_sys::format_cpu_list(self.colors);
        let job = WorkerJob {
            kernel: self.body.kernel.clone(),
            working_set: self.body.working_set_bytes,
            memory_iterations: self.body.memory_iterations,
            compute_iterations: self.body.compute_iterations,
            jobs: self.jobs,
            seed: self.seed,
            cpu: self.cpu,
            fifo: self.fifo,
            expect_colors: self.preload.map(|_| color_list.clone()),
            cold: self.cold,
        };
        command.arg(job.to_arg()?);
        if let Some(shim) = self.preload {
            let shim_config = shim_config(
                self.colors,
                self.color_bits,
                self.total_colors,
                self.body.working_set_bytes,
                pool_factor,
            );
            command
                .envs(shim_config.to_env())
                .env("LD_PRELOAD", shim)
                .env("RUST_BACKTRACE", "0");
        }
        let output = command.output().map_err(|e| {
            Error::Measurement(format!(
                "cannot start the worker {}: {e}",
                self.worker.program.display()
            ))
        })?;
        if ended_by_stop_signal(&output.status) {
            return Ok(None);
        }
        if !output.status.success() {
            return Err(Error::Measurement(format!(
                "the worker for colors {color_list} failed ({}): {}",
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            )));
        }
        let stdout = String::from_utf8_lossy(&output.stdout);
        let line = stdout
            .lines()
            .rev()
            .find(|l| l.starts_with('{'))
            .unwrap_or("");
        WorkerReport::from_line(line).map(Some).map_err(|e| {
            Error::Measurement(format!(
                "the worker printed no report ({e}): stdout {stdout:?}"
            ))
        })
    }
}

/// True if a child ended by SIGINT or SIGTERM (the signals that stop a
/// bench).
pub(super) fn ended_by_stop_signal(status: &std::process::ExitStatus) -> bool {
    use rustix::process::Signal;
    use std::os::unix::process::ExitStatusExt;
    status
        .signal()
        .is_some_and(|s| s == Signal::INT.as_raw() || s == Signal::TERM.as_raw())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    #[test]
    fn only_sigint_and_sigterm_are_the_stop() {
        // A wait status: the signal number in the low bits, exit code << 8.
        assert!(ended_by_stop_signal(&ExitStatusExt::from_raw(2)));
        assert!(ended_by_stop_signal(&ExitStatusExt::from_raw(15)));
        assert!(
            !ended_by_stop_signal(&ExitStatusExt::from_raw(9)),
            "SIGKILL"
        );
        assert!(
            !ended_by_stop_signal(&ExitStatusExt::from_raw(11)),
            "SIGSEGV"
        );
        assert!(
            !ended_by_stop_signal(&ExitStatusExt::from_raw(1 << 8)),
            "exit 1"
        );
    }
}
