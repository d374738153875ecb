//! Running a [`RunSpec`]: one thread per task, a common release, periodic
//! jobs, the watchdog and clean stops.
//!
//! As in kim2013 Section IV, every task is released at one common instant
//! (here with absolute-time `clock_nanosleep` on CLOCK_MONOTONIC rather than
//! hrtimers in the kernel) and each job's response time is measured from
//! its planned release.
//!
//! Order of a run: check privileges → allocate the shared job logs
//! ([`crate::shared_log`]) → (supervised: fork, the rest runs in the child)
//! → `mlockall` → the colored page pool and every task's working set from
//! its partitions' colors ([`crate::memory`]) → per task thread: pin, touch
//! the working set, calibrate, switch to its policy → barrier → common
//! release at `t0` → jobs → join → translate every working-set page again
//! and report its placement → `munlockall`. Setup failures and panics in a
//! task stop the whole run; the records already taken are kept. A crash
//! (a fatal signal) ends the run's process: under supervision
//! ([`RunOptions::supervise`], see `runtime/supervised.rs`) the parent
//! still reports every recorded job.
//!
//! Test hook: the environment variable `TINCT_TEST_CRASH=TASK:JOB`, read
//! once when a task is set up, makes task `TASK` raise SIGSEGV at the start
//! of its job number `JOB` (from 0), to test crash handling.

//!
//! Private modules, each with one job: `result` (options and results),
//! `threads` (an in-process run: the task threads, the watchdog, signals,
//! task groups), `deadline` (the root domain of a SCHED_DEADLINE thread
//! and the kernel's refusals), `task` (one task thread's setup), `jobs` (its job loop:
//! the event engine), `objects` (the run's mutexes, condition variables,
//! barriers, timers and fork gates while it runs), `supervised`
//! (the forked child and its supervisor) and `wire` (what the child hands
//! its parent).

mod deadline;
mod jobs;
mod objects;
mod result;
mod supervised;
mod task;
mod threads;
mod wire;

pub use result::{ProgramRun, RunOptions, RunResult, TaskRun, WorkNote};
pub use supervised::STOP_GRACE_NS;
pub use task::TEST_CRASH_VAR;

use crate::calibrate;
use crate::kernels::{Kernel, KernelState};
use crate::sentinel::StallLog;
use crate::shared_log::SharedLog;
use crate::spec::RunSpec;
use crate::{Result, RtError};
use tinct_base::InputError;
use tinct_sys::signals::StopFlag;

/// Where a run records: the job log and, with a sentinel, the stall log
/// (both shared with a forked child).
#[derive(Copy, Clone, Debug)]
pub(crate) struct Logs<'a> {
    /// Every task's jobs.
    pub(crate) jobs: &'a SharedLog,
    /// Every watched CPU's stalls.
    pub(crate) stalls: Option<&'a StallLog>,
}

/// Checks, before anything starts, that the run is inside the limits
/// ([`RunSpec::check_limits`]), that it may use SCHED_FIFO if it asks for
/// it, and that every CPU a task or one of its phases is pinned to is one
/// this process may use.
pub fn check_can_run(spec: &RunSpec, options: &RunOptions) -> Result<()> {
    spec.check_limits()?;
    crate::memory::check_colors(spec, options.uncolored || !options.realtime)?;
    crate::program_heap::heaps_of(
        spec,
        spec.preload_library.as_deref(),
        options.uncolored,
        options.uncolored || !options.realtime,
    )?;
    if options.realtime
        && spec.needs_rt()
        && let tinct_sys::privilege::Probe::Failed { message, .. } =
            tinct_sys::privilege::probe_sched_fifo()
    {
        return Err(RtError::Privilege {
            what: format!(
                "SCHED_FIFO is not allowed for this process ({message}); the workload asks for \
                 real-time scheduling or a negative nice"
            ),
            fix: "run as root, or give the binary CAP_SYS_NICE and CAP_IPC_LOCK \
                  (sudo setcap cap_sys_nice,cap_ipc_lock+ep $(command -v tinct)), \
                  or raise RLIMIT_RTPRIO (ulimit -r 99); or pass --no-rt to run under \
                  SCHED_OTHER without real-time guarantees"
                .into(),
        });
    }
    let allowed = tinct_sys::sched::affinity()?;
    for task in &spec.tasks {
        let pinned = std::iter::once((task.cpus.as_ref(), task.line, String::new())).chain(
            task.phases.iter().map(|phase| {
                (
                    phase.cpus.as_ref(),
                    phase.line,
                    format!(" phase '{}'", phase.name),
                )
            }),
        );
        for (cpus, line, phase) in pinned {
            if let Some(cpu) = cpus.into_iter().flatten().find(|c| !allowed.contains(c)) {
                return Err(RtError::Input(InputError {
                    file: spec.source.clone(),
                    line,
                    field: format!("task '{}'{phase} core/cpus", task.name),
                    expected: format!(
                        "a CPU this process may use ({})",
                        tinct_sys::format_cpu_list(&allowed)
                    ),
                    found: format!("CPU {cpu}"),
                }));
            }
        }
    }
    Ok(())
}

/// Runs `spec` and returns every job record. Errors only before the
/// common release (privileges, bad CPUs, memory); later failures end the
/// run with a [`crate::watchdog::StopReason`] and keep the records.
pub fn run(spec: &RunSpec, options: RunOptions) -> Result<RunResult> {
    run_until(spec, options, &StopFlag::new())
}

/// [`run`], also ended by `stop`: raising it, from any thread, ends the run
/// as a SIGINT does ([`crate::watchdog::StopReason::Signal`], the records
/// so far kept; a supervised run's process is sent SIGTERM). For a caller
/// that owns the process's signals, such as a bench stopping on Ctrl-C
/// inside a measurement.
pub fn run_until(spec: &RunSpec, options: RunOptions, stop: &StopFlag) -> Result<RunResult> {
    check_can_run(spec, &options)?;
    let mut spec = if options.realtime {
        spec.clone()
    } else {
        spec.clone().without_rt()
    };
    if let (Some(cpu), None) = (spec.calibration_cpu, spec.compute_ns_per_iteration) {
        spec.compute_ns_per_iteration = Some(compute_rate_on(cpu, &spec.source)?);
    }
    let no_clamps = !tinct_sys::sched::util_clamp_supported() && spec.without_util_clamps();
    let heaps = crate::program_heap::heaps_of(
        &spec,
        spec.preload_library.as_deref(),
        options.uncolored,
        options.uncolored || !options.realtime,
    )?;
    let (heap_frames, _private) = program_frames(&mut spec, &heaps)?;
    let log = SharedLog::new(&spec.log_capacities())?;
    let stalls = match options.sentinel {
        Some(sentinel) => {
            let cpus = spec.cpus_used(&tinct_sys::sched::affinity()?);
            let capacity = StallLog::capacity_for(spec.duration_ns, &sentinel);
            Some(StallLog::new(&cpus, capacity)?)
        }
        None => None,
    };
    let logs = Logs {
        jobs: &log,
        stalls: stalls.as_ref(),
    };
    let steal_before = tinct_sys::system::StealTime::read(&tinct_sys::SysRoot::live()).ok();
    let mut result = if options.supervise {
        supervised::run(&spec, &options, &logs, stop)
    } else {
        threads::run_here(&spec, &options, &logs, stop, &|_| {})
    }?;
    result.colouring = options.colouring;
    result.llc_domains = result::llc_domains();
    result.sentinel = match (&stalls, options.sentinel) {
        (Some(stalls), Some(sentinel)) => {
            let mut report = stalls.report(sentinel);
            crate::sentinel::add_steal(&mut report, steal_before.as_ref());
            Some(report)
        }
        _ => None,
    };
    for ((task, heap), frames) in result.tasks.iter_mut().zip(&heaps).zip(&heap_frames) {
        if let (Some(heap), Some(frames)) = (heap, frames) {
            let (placement, notes) =
                heap.placement(frames, task.program.as_ref().map(|p| (p.pid, p.killed)));
            task.placement = placement;
            for note in notes {
                result
                    .notes
                    .push(format!("task '{}': {note}", task.spec.name));
            }
        }
    }
    if no_clamps {
        result.notes.push(
            "util_min/util_max: this kernel has no utilization clamping (CONFIG_UCLAMP_TASK); \
             the clamps were not applied (they steer CPU frequency and placement, not the \
             scheduling of a thread)"
                .into(),
        );
    }
    Ok(result)
}

/// Where each coloured program heap's frame reports go (the run
/// directory's, else a private temporary directory, returned to be
/// removed once read), with its program's variables set in `spec`.
fn program_frames(
    spec: &mut RunSpec,
    heaps: &[Option<crate::program_heap::ProgramHeap>],
) -> Result<(Vec<Option<std::path::PathBuf>>, Option<PrivateDir>)> {
    let mut private: Option<PrivateDir> = None;
    let mut frames = Vec::with_capacity(heaps.len());
    for (index, (task, heap)) in spec.tasks.iter_mut().zip(heaps).enumerate() {
        let (Some(program), Some(heap)) = (task.program.as_mut(), heap) else {
            frames.push(None);
            continue;
        };
        let path = match &program.frames {
            // Absolute: a program that changes its directory still writes
            // its report here.
            Some(path) => std::path::absolute(path).map_err(|e| RtError::Task {
                task: task.name.clone(),
                message: format!("{}: {e}", path.display()),
            })?,
            None => {
                if private.is_none() {
                    let prefix =
                        crate::program_heap::frame_report_path().map_err(|e| RtError::Task {
                            task: task.name.clone(),
                            message: format!("cannot make a directory for its heap's frames: {e}"),
                        })?;
                    private = Some(PrivateDir(
                        prefix.parent().map(Into::into).unwrap_or(prefix),
                    ));
                }
                let dir = private.as_ref().map(|p| p.0.clone()).unwrap_or_default();
                dir.join(format!("task-{index}.frames"))
            }
        };
        program.env = heap.env(&path);
        program.frames = Some(path.clone());
        frames.push(Some(path));
    }
    Ok((frames, private))
}

/// A directory removed with everything in it when dropped.
struct PrivateDir(std::path::PathBuf);

impl Drop for PrivateDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Nanoseconds per compute iteration measured on `cpu` (rt-app
/// `calibration: "CPUn"`: one rate for every task).
fn compute_rate_on(cpu: u32, source: &str) -> Result<f64> {
    let measured = std::thread::spawn(move || {
        tinct_sys::sched::set_affinity(&[cpu]).map_err(|e| e.to_string())?;
        let mut state =
            KernelState::new(Kernel::Compute, crate::working_set::WorkingSet::empty(), 1);
        Ok::<f64, String>(calibrate::measure(&mut state).compute_ns)
    })
    .join()
    .unwrap_or_else(|_| Err("the calibration thread panicked".into()));
    measured.map_err(|found| {
        RtError::Input(InputError {
            file: source.to_string(),
            line: None,
            field: "global.calibration".into(),
            expected: format!("a CPU to calibrate on (CPU{cpu})"),
            found,
        })
    })
}
