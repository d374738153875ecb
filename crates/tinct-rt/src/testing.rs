//! Helpers for tests: a [`TaskSpec`] from a name and a period plus only
//! what a test cares about, a [`RunSpec`] around tasks, the child
//! processes of a process (a supervised run's child) and the states of
//! their threads (running, stopped).
//!
//! ```
//! use tinct_core::model::{Kernel, Work};
//! use tinct_rt::testing::{TaskBuilder, run_spec};
//!
//! let chase = TaskBuilder::periodic("chase", 10_000_000)
//!     .cpu(0)
//!     .fifo(80)
//!     .kernel(Kernel::Chase, Work::Iterations(20_000))
//!     .working_set(256 * 1024)
//!     .build();
//! let spec = run_spec(vec![chase], 500_000_000);
//! assert!(spec.check_limits().is_ok());
//! ```

use crate::kernels::memory_percent;
use crate::record::JobRecord;
use crate::runtime::RunResult;
use crate::spec::{
    Bound, OWN_TIMER, Phase, Policy, ProgramSpec, RunSpec, Scheduling, Step, TaskSpec,
};
use tinct_core::model::{JobProtocol, Kernel, Work};

/// Builds a [`TaskSpec`]: one phase `main` released by an absolute timer,
/// whose job is one kernel step. Defaults: unpinned, SCHED_OTHER, a
/// `compute` kernel of one iteration, no working set, no partitions, the
/// deadline of the period, unbounded loops.
#[derive(Clone, Debug)]
pub struct TaskBuilder {
    spec: TaskSpec,
}

impl TaskBuilder {
    /// A periodic task `name` with period `period_ns`.
    pub fn periodic(name: &str, period_ns: u64) -> TaskBuilder {
        TaskBuilder {
            spec: TaskSpec::new(
                name,
                Scheduling::other(),
                vec![Phase::periodic(
                    Kernel::Compute,
                    0,
                    Work::Iterations(1),
                    period_ns,
                )],
            ),
        }
    }

    /// Pinned to `cpu`.
    pub fn cpu(mut self, cpu: u32) -> TaskBuilder {
        self.spec.cpus = Some(vec![cpu]);
        self
    }

    /// SCHED_FIFO at `priority`.
    pub fn fifo(mut self, priority: u8) -> TaskBuilder {
        self.spec.scheduling = Scheduling::of(Policy::Fifo(priority));
        self
    }

    /// The job is one step of `kernel` doing `work` (the kernel's default
    /// memory share).
    pub fn kernel(self, kernel: Kernel, work: Work) -> TaskBuilder {
        self.steps(vec![Step::Kernel {
            kernel,
            memory_percent: memory_percent(kernel, None),
            work,
        }])
    }

    /// Any scheduling (policy, nice, deadline reservation, clamps).
    pub fn scheduling(mut self, scheduling: Scheduling) -> TaskBuilder {
        self.spec.scheduling = scheduling;
        self
    }

    /// The job is these steps (the task's own timer still releases it).
    pub fn steps(mut self, mut steps: Vec<Step>) -> TaskBuilder {
        if let Some(timer) = self.spec.phases[0]
            .release_timer()
            .map(|(_, period_ns)| Step::Timer {
                timer: OWN_TIMER,
                period_ns,
            })
        {
            steps.push(timer);
        }
        self.spec.phases[0].steps = steps;
        self
    }

    /// The job is one job of the program `command` (resolved, with its
    /// arguments) over `protocol`, started once before the first release.
    pub fn program(mut self, command: Vec<String>, protocol: JobProtocol) -> TaskBuilder {
        self.spec.program = Some(ProgramSpec {
            command,
            protocol,
            stderr: None,
            frames: None,
            mmap: false,
            env: Vec::new(),
        });
        self.steps(vec![Step::Program])
    }

    /// Release jitter: each job starts up to `jitter_ns` after its release.
    pub fn jitter(mut self, jitter_ns: u64) -> TaskBuilder {
        self.spec.jitter_ns = jitter_ns;
        self
    }

    /// `bytes` of working set.
    pub fn working_set(mut self, bytes: u64) -> TaskBuilder {
        self.spec.working_set = bytes;
        self
    }

    /// The working set from these cache partitions (1-based).
    pub fn partitions(mut self, partitions: Vec<u32>) -> TaskBuilder {
        self.spec.partitions = partitions;
        self
    }

    /// Relative deadline `deadline_ns` instead of the period.
    pub fn deadline(mut self, deadline_ns: u64) -> TaskBuilder {
        self.spec.deadline_ns = Some(deadline_ns);
        self
    }

    /// The analysis' bound shown next to what is observed.
    pub fn bound(mut self, bound: Bound) -> TaskBuilder {
        self.spec.bound = Some(bound);
        self
    }

    /// First release `offset_ns` after the common release.
    pub fn offset(mut self, offset_ns: u64) -> TaskBuilder {
        self.spec.offset_ns = offset_ns;
        self
    }

    /// Exactly `jobs` jobs, then the task ends.
    pub fn jobs(mut self, jobs: u64) -> TaskBuilder {
        self.spec.phases[0].loops = Some(jobs);
        self.spec.loops = Some(1);
        self
    }

    /// No timer: each job is released when the previous one ends.
    pub fn without_timer(mut self) -> TaskBuilder {
        self.spec.phases[0]
            .steps
            .retain(|s| !matches!(s, Step::Timer { .. }));
        self
    }

    /// The task.
    pub fn build(self) -> TaskSpec {
        self.spec
    }
}

/// Run options for tests: the defaults, without taking over SIGINT and
/// SIGTERM (the test harness keeps them), and with a watchdog that stops
/// only a job 100 times its deadline late: a host stall of tens of
/// milliseconds must not end a test's run of millisecond deadlines (tests
/// of the watchdog set their own factor).
pub fn test_options() -> crate::runtime::RunOptions {
    crate::runtime::RunOptions {
        handle_signals: false,
        watchdog_factor: 100.0,
        ..crate::runtime::RunOptions::default()
    }
}

/// A run of one task `tick`, released every 5 ms and busy 0.2 ms per job,
/// for `duration_ns`: a steady, light run for tests of how a run stops.
pub fn ticking_run(duration_ns: u64) -> RunSpec {
    let task = TaskBuilder::periodic("tick", 5_000_000)
        .steps(vec![Step::Busy {
            duration_ns: 200_000,
        }])
        .build();
    run_spec(vec![task], duration_ns)
}

/// A run of `tasks` for `duration_ns`, from source `"test"`, memory locked,
/// no platform partitions, per-task calibration.
pub fn run_spec(tasks: Vec<TaskSpec>, duration_ns: u64) -> RunSpec {
    RunSpec::new("test", tasks, duration_ns)
}

/// The job records of the task `name` of a run (the failure names it).
pub fn records<'a>(result: &'a RunResult, name: &str) -> &'a [JobRecord] {
    &result
        .tasks
        .iter()
        .find(|t| t.spec.name == name)
        .unwrap_or_else(|| panic!("no task {name}"))
        .records
}

/// The process ids of the children of process `parent` (from `/proc`).
pub fn child_processes(parent: u32) -> Vec<i32> {
    let parent = parent.to_string();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let pid: i32 = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            // pid (comm) state ppid ...: the ppid follows the last ')'.
            let ppid = stat.rsplit_once(')')?.1.split_whitespace().nth(1)?;
            (ppid == parent).then_some(pid)
        })
        .collect()
}

/// The first child process of this process, once there is one (polling
/// `/proc` every `poll`): the supervised child of a run started on another
/// thread.
pub fn first_child(poll: std::time::Duration) -> i32 {
    loop {
        if let Some(&pid) = child_processes(std::process::id()).first() {
            return pid;
        }
        std::thread::sleep(poll);
    }
}

/// The state letter of `/proc/<pid>/task/<tid>/stat` (`R`, `S`, `T`, ...;
/// it follows the parenthesised command name), `None` once it is gone.
fn thread_state(task: &std::path::Path) -> Option<char> {
    let stat = std::fs::read_to_string(task.join("stat")).ok()?;
    stat.rsplit_once(") ")?.1.chars().next()
}

/// The thread id of the thread named `comm` in process `pid`, once it has
/// just started a job of a real-time task, polling every half millisecond:
/// running (state `R`) under SCHED_FIFO, SCHED_RR or SCHED_DEADLINE after
/// it gave up the CPU at least three times since it took that policy (the
/// runtime switches policy after setup and calibration; then the start
/// barriers, the wait for the common release and the end of each job
/// sleep), so past setup and calibration whatever they take: in the first
/// job at the earliest.
///
/// Only a wake-up it saw is taken: the thread not running at one look,
/// running at the next and still running `still_running` later, at most
/// [`JOB_START_WINDOW`] after the look that found it not running. So the
/// job found started at most that long ago, and a caller that stops the
/// process lands inside it, not after it (a thread merely seen running
/// may be at the end of its job). Staying runnable tells a job from the
/// runtime's look at its stop flag ([`crate::clock::STOP_POLL_NS`]): a
/// thread waiting for a release wakes for that, for microseconds; a
/// higher-priority job at that moment keeps it runnable as long as that
/// job runs, so a caller whose task has such jobs asks for longer (and
/// shorter than its own jobs).
///
/// # Panics
///
/// When process `pid` is gone or a zombie (its run ended first): a test
/// fails there instead of waiting forever.
pub fn thread_running_a_job(pid: i32, comm: &str, still_running: std::time::Duration) -> i32 {
    let process = std::path::PathBuf::from(format!("/proc/{pid}"));
    let mut sleeps_at_policy: Option<(i32, u64)> = None;
    // The last look that found the thread not running.
    let mut idle_look: Option<std::time::Instant> = None;
    // Since it was found running: that idle look and the first running one.
    let mut woke: Option<(std::time::Instant, std::time::Instant)> = None;
    loop {
        let Ok(found) = rt_thread(&process, comm) else {
            panic!("process {pid} ended before its thread {comm} started a job")
        };
        if let Some((tid, dir, sleeps)) = found {
            match sleeps_at_policy {
                Some((seen, at)) if seen == tid => {
                    // The instant before the read: a look delayed after it
                    // (the poller preempted) must not make an old
                    // "not running" seem recent.
                    let looked = std::time::Instant::now();
                    if thread_state(&dir) != Some('R') {
                        idle_look = Some(looked);
                        woke = None;
                    } else {
                        if let Some(idle) = idle_look.take() {
                            woke = Some((idle, looked));
                        }
                        if let Some((idle, first_running)) = woke
                            && sleeps >= at + 3
                            && looked.duration_since(first_running) >= still_running
                        {
                            if idle.elapsed() <= JOB_START_WINDOW {
                                return tid;
                            }
                            // Found too late (the poller held back): wait
                            // for the next job.
                            woke = None;
                        }
                    }
                }
                _ => {
                    sleeps_at_policy = Some((tid, sleeps));
                    idle_look = None;
                    woke = None;
                }
            }
        }
        std::thread::sleep(std::time::Duration::from_micros(500));
    }
}

/// How long before a thread is taken as starting a job
/// [`thread_running_a_job`] must have seen it not running: the most its
/// job may have run when it is found.
pub const JOB_START_WINDOW: std::time::Duration = std::time::Duration::from_millis(4);

/// The thread id of the thread named `comm` in process `pid` once it is
/// releasing jobs: under SCHED_FIFO, SCHED_RR or SCHED_DEADLINE, and since
/// it was first seen so, given up the CPU at least three times (the start
/// barriers, the wait for the common release and the end of a job: a
/// barrier it reached last costs none, so this alone may come before the
/// release) and had at least `work` of CPU time (only jobs take that
/// long: everything between its policy switch and the common release
/// takes microseconds; not asked where the kernel keeps no schedstat
/// counts). Polls every millisecond; `None` once the process
/// has ended (its run refused or over), so the caller can say why.
///
/// No timing window is involved: a loaded poller finds the thread late,
/// never not at all (unlike [`thread_running_a_job`], which must land
/// inside a job).
pub fn thread_releasing_jobs(pid: i32, comm: &str, work: std::time::Duration) -> Option<i32> {
    let process = std::path::PathBuf::from(format!("/proc/{pid}"));
    let work = u64::try_from(work.as_nanos()).unwrap_or(u64::MAX);
    // (tid, voluntary switches, CPU time) when first seen at its policy.
    let mut at_policy: Option<(i32, u64, Option<u64>)> = None;
    loop {
        let found = rt_thread(&process, comm).ok()?;
        if let Some((tid, dir, sleeps)) = found {
            // Without schedstat counts (no file, or zeros) CPU time is not
            // asked for.
            let cpu = thread_cpu_ns(&dir).filter(|&ns| ns > 0);
            match at_policy {
                Some((seen, sleeps_then, cpu_then)) if seen == tid => {
                    let worked = match (cpu, cpu_then) {
                        (Some(now), Some(then)) => now >= then.saturating_add(work),
                        _ => true,
                    };
                    if sleeps >= sleeps_then + 3 && worked {
                        return Some(tid);
                    }
                }
                _ => at_policy = Some((tid, sleeps, cpu)),
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// The thread named `comm` of `process` (its `/proc/<pid>` directory)
/// while it runs under SCHED_FIFO, SCHED_RR or SCHED_DEADLINE: its id,
/// its `/proc` directory and how many times it gave up the CPU. `Err`
/// once the process has ended (gone or a zombie).
fn rt_thread(
    process: &std::path::Path,
    comm: &str,
) -> std::result::Result<Option<(i32, std::path::PathBuf, u64)>, ()> {
    let tasks = match std::fs::read_dir(process.join("task")) {
        Ok(tasks) if !matches!(thread_state(process), Some('Z' | 'X') | None) => tasks,
        _ => return Err(()),
    };
    for task in tasks.flatten() {
        let dir = task.path();
        let name = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
        if name.trim() != comm {
            continue;
        }
        let tid: i32 = task.file_name().to_string_lossy().parse().unwrap_or(0);
        if let (Some(1 | 2 | 6), Some(sleeps)) = (thread_policy(&dir), voluntary_switches(&dir)) {
            return Ok(Some((tid, dir, sleeps)));
        }
    }
    Ok(None)
}

/// The scheduling policy of a thread (field 41 of its `stat`: 0 other,
/// 1 FIFO, 2 RR, 6 DEADLINE).
fn thread_policy(task: &std::path::Path) -> Option<u32> {
    let stat = std::fs::read_to_string(task.join("stat")).ok()?;
    // Fields from the state (field 3) on follow the command name.
    stat.rsplit_once(") ")?
        .1
        .split_whitespace()
        .nth(41 - 3)?
        .parse()
        .ok()
}

/// The CPU time a thread has had (the first field of its `schedstat`), ns.
fn thread_cpu_ns(task: &std::path::Path) -> Option<u64> {
    std::fs::read_to_string(task.join("schedstat"))
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// How many times a thread gave up the CPU (`voluntary_ctxt_switches` of
/// its `status`).
fn voluntary_switches(task: &std::path::Path) -> Option<u64> {
    let status = std::fs::read_to_string(task.join("status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))?
        .trim()
        .parse()
        .ok()
}

/// Waits until every thread of process `pid` is stopped (state `T` or
/// `t`; a thread that ended meanwhile, gone or a zombie, counts), polling
/// every 100 µs.
///
/// A SIGSTOP stops a process only once the one thread the kernel woke for
/// it (the main thread, often a SCHED_OTHER one) runs and stops the
/// others: on a loaded machine that can be milliseconds after `kill`
/// returned, while the real-time threads keep running. A test that times
/// a stop counts from here, not from the `kill`.
pub fn wait_until_stopped(pid: i32) {
    loop {
        let all_stopped = std::fs::read_dir(format!("/proc/{pid}/task"))
            .map(|tasks| {
                tasks.flatten().all(|task| {
                    matches!(
                        thread_state(&task.path()),
                        Some('T' | 't' | 'Z' | 'X') | None
                    )
                })
            })
            .unwrap_or(true);
        if all_stopped {
            return;
        }
        std::thread::sleep(std::time::Duration::from_micros(100));
    }
}

/// In a thread: waits for the first child process of this one (a
/// supervised run), then, when its thread `comm` starts a job, stops the
/// whole process (SIGSTOP sent to that running thread starts the group
/// stop at once; sent to the process it would go to the main thread,
/// which may run only after the job), keeps it stopped for `stall` and
/// continues it. Returns the thread; joined, it gives the instant
/// (`clock::now_ns`) all the process's threads were stopped.
pub fn stop_during_a_job(
    comm: &'static str,
    stall: std::time::Duration,
) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        let child = first_child(std::time::Duration::from_millis(2));
        // Longer than a higher-priority job of a millisecond: the stall
        // tests' tasks have one, and jobs of 15 ms and more of their own.
        let tid = thread_running_a_job(child, comm, std::time::Duration::from_micros(1_500));
        // `tid` is a thread of process `child`, our child (not reaped, so
        // neither id is reused).
        tinct_sys::supervise::signal_thread(child, tid, libc::SIGSTOP).unwrap();
        wait_until_stopped(child);
        let stopped_at = crate::clock::now_ns();
        std::thread::sleep(stall);
        tinct_sys::supervise::ChildProcess::adopt(child as u32)
            .signal(libc::SIGCONT)
            .unwrap();
        stopped_at
    })
}

/// A topology fixture with several cache domains: four CPUs, private L1d
/// each, an L2 per pair (0-1, 2-3) and one L3 for all (the shape of
/// demarchi's machine B with two cores per L2).
pub fn four_cpus_two_l2() -> tinct_sys::topology::Topology {
    use tinct_sys::topology::{Cache, CacheType, Cpu, Topology};
    let cache = |level: u8, kind: CacheType, size_bytes: u64, shared_cpus: Vec<u32>| Cache {
        level,
        kind,
        id: None,
        size_bytes,
        ways: Some(8),
        sets: None,
        line_bytes: Some(64),
        shared_cpus,
    };
    let mut caches: Vec<Cache> = (0..4)
        .map(|cpu| cache(1, CacheType::Data, 32 << 10, vec![cpu]))
        .collect();
    caches.extend((0..4).map(|cpu| cache(1, CacheType::Instruction, 32 << 10, vec![cpu])));
    caches.push(cache(2, CacheType::Unified, 1 << 20, vec![0, 1]));
    caches.push(cache(2, CacheType::Unified, 1 << 20, vec![2, 3]));
    caches.push(cache(3, CacheType::Unified, 8 << 20, vec![0, 1, 2, 3]));
    Topology {
        online_cpus: vec![0, 1, 2, 3],
        cpus: (0..4)
            .map(|id| Cpu {
                id,
                package_id: Some(0),
                die_id: Some(0),
                core_id: Some(id),
                thread_siblings: vec![id],
            })
            .collect(),
        numa_nodes: vec![],
        caches,
    }
}

/// A planned task set for blocking tests: `high` (T = 5 ms)
/// and `low` (T = 10 ms) share the resource `bus` (sections of 200 µs and
/// 600 µs, so B_high = 600 µs), `free` (T = 20 ms) locks nothing; every
/// task on `core` of a platform with `core + 1` cores, Δ = 0 (no cache
/// term: the tasks have no partitions); `protocol` is
/// `pcp`, `pip` or `none`.
pub fn shared_resource_set(protocol: &str, core: u32) -> String {
    let task = |name: &str, period: &str, wcet: &str, section: Option<&str>| {
        let section = section.map_or(String::new(), |length| {
            format!("critical_sections = [{{ resource = \"bus\", length = \"{length}\" }}]\n")
        });
        format!(
            "\n[[task]]\nname = \"{name}\"\nperiod = \"{period}\"\nmemory = \"1MiB\"\n\
             wcet = \"{wcet}\"\ncore = {core}\n{section}"
        )
    };
    format!(
        "[platform]\ncores = {cores}\npartitions = 4\nmemory = \"64MiB\"\nrefill = \"0ns\"\n\n\
         [[resource]]\nname = \"bus\"\nprotocol = \"{protocol}\"\n{high}{low}{free}",
        cores = core.saturating_add(1),
        high = task("high", "5ms", "500us", Some("200us")),
        low = task("low", "10ms", "1ms", Some("600us")),
        free = task("free", "20ms", "300us", None),
    )
}

#[cfg(test)]
mod tests {
    /// A process that ended is reported, not waited for: both polls run in
    /// a thread, and each must end well within 10 s (one by its panic, one
    /// with `None`).
    #[test]
    fn waiting_for_a_thread_of_a_process_that_ended_fails() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id() as i32;
        child.wait().unwrap();
        let (sender, receiver) = std::sync::mpsc::channel();
        let poll = std::thread::spawn(move || {
            let _ = sender.send(super::thread_running_a_job(
                pid,
                "tinct-never",
                std::time::Duration::from_micros(500),
            ));
        });
        let outcome = receiver.recv_timeout(std::time::Duration::from_secs(10));
        assert_eq!(
            outcome,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected),
            "still polling the /proc of process {pid}, gone"
        );
        assert!(poll.join().is_err(), "it panicked");
        let (sender, receiver) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = sender.send(super::thread_releasing_jobs(
                pid,
                "tinct-never",
                std::time::Duration::from_millis(1),
            ));
        });
        assert_eq!(
            receiver.recv_timeout(std::time::Duration::from_secs(10)),
            Ok(None),
            "a gone process has no thread releasing jobs"
        );
    }
}
