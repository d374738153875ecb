//! One profiling launch of a program body: the program itself
//! is the worker. It starts pinned to the task's CPU, at the workers'
//! SCHED_FIFO priority, under the shim with the colours of p partitions
//! (as `tinct run` starts it, [`tinct_rt::program_heap::program_env`]),
//! and is asked for one warm-up job and then `jobs` measured ones over its
//! protocol (`lines` or `futex`, [`tinct_sys::program`]). A job's time is
//! the wall-clock time from the request to its end, as a kernel worker
//! times its jobs (alone on its CPU at SCHED_FIFO it bounds the program's
//! CPU time in the job). A `cold` job follows a sweep, on the program's
//! CPU, over twice the last-level cache: the program's lines are evicted
//! from every level. At the end the frames its heap used are read back
//! from the shim's frame reports and checked against the colours.

use super::launch::{Launch, shim_config};
use super::report::ProfiledProgram;
use super::worker::WorkerReport;
use crate::{Error, Result};
use std::time::{Duration, Instant};
use tinct_core::model::JobProtocol;
use tinct_mem::{AddressMapping, XorFunctions, read_frame_reports};
use tinct_sys::program::{Channel, Program, ProgramStart, Reply};
use tinct_sys::sched::{Policy, Scheduling};

/// The longest a job may take before the launch fails (a hang guard).
const JOB_LIMIT: Duration = Duration::from_secs(30);
/// How long the program may take to exit once asked.
const EXIT_GRACE: Duration = Duration::from_secs(2);
/// How often a wait looks at the clock.
const LOOK: Duration = Duration::from_millis(20);

/// Runs the launch: one warm-up job, then `launch.jobs` measured ones.
/// This thread (pinned to the program's CPU) runs one SCHED_FIFO level
/// above the program meanwhile, so that a program spinning at its
/// priority cannot keep it from its time limits; it sleeps while a job
/// runs. `None`: the bench's stop ([`Launch::stop`]) came first; the
/// program was ended.
pub(super) fn run(
    launch: &Launch<'_>,
    program: &ProfiledProgram,
    pool_factor: u64,
) -> Result<Option<WorkerReport>> {
    let raised = launch.fifo.is_some_and(|p| {
        tinct_sys::sched::set_scheduling(&Scheduling::of(Policy::Fifo(p.saturating_add(1)))).is_ok()
    });
    let result = run_raised(launch, program, pool_factor);
    if raised {
        let _ = tinct_sys::sched::set_scheduling(&Scheduling::other());
    }
    result
}

fn run_raised(
    launch: &Launch<'_>,
    program: &ProfiledProgram,
    pool_factor: u64,
) -> Result<Option<WorkerReport>> {
    let failed = |what: String| Error::Measurement(format!("{}: {what}", program.command[0]));
    let dir = tempfile::tempdir().map_err(|e| failed(format!("a temporary directory: {e}")))?;
    let frames = dir.path().join("frames");
    let env = match launch.preload {
        Some(shim) => {
            let mut config = shim_config(
                launch.colors,
                launch.color_bits,
                launch.total_colors,
                launch.body.working_set_bytes,
                pool_factor,
            );
            config.frame_report = Some(frames.clone());
            config.mmap = program.mmap;
            tinct_rt::program_heap::program_env(
                &config,
                shim,
                std::env::var_os("LD_PRELOAD"),
                std::env::var_os("PYTHONMALLOC").is_some(),
            )
        }
        None => Vec::new(),
    };
    let stderr_path = dir.path().join("stderr");
    let stderr =
        std::fs::File::create(&stderr_path).map_err(|e| failed(format!("its stderr file: {e}")))?;
    let command: Vec<std::ffi::OsString> = program.command.iter().map(Into::into).collect();
    let scheduling = launch.fifo.map(|p| Scheduling::of(Policy::Fifo(p)));
    let mut running = Program::start(ProgramStart {
        channel: match program.protocol {
            JobProtocol::Lines => Channel::Lines,
            JobProtocol::Futex => Channel::Futex,
        },
        command: &command,
        env_remove: &tinct_rt::program_heap::shim_variables(),
        env: &env,
        cpus: Some(&[launch.cpu]),
        scheduling: scheduling.as_ref(),
        stderr,
    })
    .map_err(|e| failed(format!("cannot start it: {e}")))?;
    let mut sweep = launch
        .cold
        .then(|| vec![0u8; usize::try_from(launch.llc_bytes.saturating_mul(2)).unwrap_or(0)]);
    let mut job_ns = Vec::with_capacity(launch.jobs as usize);
    let stderr_tail = || {
        let text = std::fs::read_to_string(&stderr_path).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(5).collect();
        tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
    };
    let stopped = || launch.stop.as_ref().is_some_and(|s| s.is_raised());
    for job in 0..=u64::from(launch.jobs) {
        if stopped() {
            let _ = running.finish(Duration::ZERO);
            return Ok(None);
        }
        if let Some(sweep) = sweep.as_mut() {
            // This thread is pinned to the program's CPU: the sweep
            // evicts the program's lines from every level there.
            for line in sweep.chunks_mut(64) {
                line[0] = line[0].wrapping_add(1);
            }
            std::hint::black_box(&sweep);
        }
        if running.unasked_output() {
            let _ = running.finish(Duration::ZERO);
            return Err(failed(
                "it wrote to its stdout before it was asked for a job (the lines protocol: one \
                 line per job, diagnostics on stderr)"
                    .into(),
            ));
        }
        let asked = Instant::now();
        if let Err(e) = running.ask_job(job) {
            let _ = running.finish(Duration::ZERO);
            return Err(failed(format!(
                "it no longer reads its jobs ({e}); its stderr: {}",
                stderr_tail()
            )));
        }
        let reply = running.wait_reply(&|| asked.elapsed() > JOB_LIMIT || stopped(), LOOK);
        let took = asked.elapsed();
        let problem = match reply {
            Reply::Done => None,
            Reply::GaveUp if stopped() => {
                let _ = running.finish(Duration::ZERO);
                return Ok(None);
            }
            Reply::GaveUp => Some(format!(
                "job {job} did not end within {} s",
                JOB_LIMIT.as_secs()
            )),
            Reply::Closed => Some(format!("it exited during job {job}")),
            Reply::TooLong => Some("it wrote more than 64 KiB without a newline".into()),
        };
        if let Some(problem) = problem {
            let (status, _) = running.finish(Duration::ZERO);
            let status = status.map_or_else(|| "not known".into(), |s| s.to_string());
            let memory = if stderr_tail().contains("strict") {
                " (out of memory in the requested colours)"
            } else {
                ""
            };
            return Err(failed(format!(
                "{problem}{memory}; exit {status}; its stderr: {}",
                stderr_tail()
            )));
        }
        // Job 0 warms up (its start-up, the shim's first pages).
        if job > 0 {
            job_ns.push(u64::try_from(took.as_nanos()).unwrap_or(u64::MAX));
        }
    }
    let pid = running.pid();
    let (status, killed) = running.finish(EXIT_GRACE);
    let (pages_checked, pages_in_colors, unchecked_reason) = match launch.preload {
        None => (0, 0, Some("uncoloured (--uncolored)".to_string())),
        Some(_) if killed => (
            0,
            0,
            Some("it did not exit when asked, so it wrote no frame report".to_string()),
        ),
        Some(_) => check_frames(launch, &frames, pid, status),
    };
    Ok(Some(WorkerReport {
        job_ns,
        pages_checked,
        pages_in_colors,
        unchecked_reason,
        llc_misses: None,
        counters_note: Some("a program's misses are not counted".into()),
    }))
}

/// Pages the program reported (the process started, `pid`, through its
/// `exec`s: a launcher's wrapper processes that ended before the jobs are
/// not the program's heap), and of those in the launch's colours; or why
/// none could be checked.
fn check_frames(
    launch: &Launch<'_>,
    frames: &std::path::Path,
    pid: u32,
    status: Option<std::process::ExitStatus>,
) -> (u64, u64, Option<String>) {
    let own = read_frame_reports(frames).map(|reports| {
        reports
            .into_iter()
            .filter(|r| r.pid == pid)
            .collect::<Vec<_>>()
    });
    let reports = match own {
        Ok(reports) if !reports.is_empty() => reports,
        Ok(_) => {
            return (
                0,
                0,
                Some(format!(
                    "it wrote no frame report (exit {})",
                    status.map_or_else(|| "not known".into(), |s| s.to_string())
                )),
            );
        }
        Err(e) => return (0, 0, Some(e)),
    };
    if reports.iter().any(|r| r.uncolored) {
        return (0, 0, Some("the shim found frame numbers unreadable".into()));
    }
    let mapping = XorFunctions::from_bits(launch.color_bits).and_then(|colors| {
        AddressMapping::new(
            reports[0].page_size,
            colors,
            XorFunctions::none(),
            XorFunctions::none(),
        )
    });
    let mapping = match mapping {
        Ok(mapping) => mapping,
        Err(e) => return (0, 0, Some(e.to_string())),
    };
    let frames: Vec<u64> = reports.iter().flat_map(|r| r.frames.clone()).collect();
    let inside = frames
        .iter()
        .filter(|&&f| launch.colors.contains(&mapping.classify_frame(f).color))
        .count() as u64;
    (frames.len() as u64, inside, None)
}
