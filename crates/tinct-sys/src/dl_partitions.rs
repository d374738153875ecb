//! One root domain per CPU for partitioned SCHED_DEADLINE (cpuset v1).
//!
//! The kernel admits a SCHED_DEADLINE thread only if its affinity covers
//! the whole root domain of its CPU (`sched_setattr` fails with EPERM, and
//! `sched_setaffinity` of a deadline thread with EBUSY, otherwise), and it
//! checks admission (Σ runtime/period ≤ `sched_rt_runtime_us` /
//! `sched_rt_period_us` times the CPUs) per root domain. A thread pinned
//! to one CPU, as a partitioned EDF plan wants, therefore needs that CPU to
//! be a root domain of its own. The kernel's documentation
//! (`Documentation/scheduler/sched-deadline.rst`, "partitioned scheduling")
//! does it with cpusets, and so does [`DeadlinePartitions`]:
//!
//! - the root cpuset's `cpuset.sched_load_balance` is set to 0 (the value
//!   it had is put back afterwards);
//! - one child cpuset `tinct-dl-<pid>-cpu<N>` per CPU, with `cpuset.cpus`
//!   = N, the root's memory nodes and load balancing on: each is a root
//!   domain of one CPU;
//! - a thread enters its CPU's cpuset ([`DeadlinePartitions::join`], which
//!   also pins it there) before it becomes a deadline thread.
//!
//! Dropping (or [`DeadlinePartitions::remove`]) removes the cpusets once
//! their threads have ended; [`remove_leftovers`] does it for a run
//! process that died (the run supervisor calls it).
//!
//! Several runs may hold partitions at once, so the root's load balancing
//! is shared state, kept in the hierarchy itself under `flock` of the
//! root directory (as pqos locks resctrl): the run that turns balancing
//! off makes an empty cpuset `tinct-dl-balance-off`, and whoever removes
//! the last run's cpusets turns it back on and removes that marker. A
//! root that was not balancing before is left so. Every creation and
//! removal also sweeps the cpusets of runs whose process is gone (killed
//! without its supervisor), so nothing stays off for good.
//!
//! While partitions exist, the CPUs outside them share one root domain
//! without load balancing: the machine's other fair threads stay on the
//! CPUs they are on. That is the price of partitioned EDF on Linux, paid
//! for the run only. cgroup v2's `cpuset.cpus.partition` is not used: it
//! cannot hold single threads of one process in different partitions.

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

/// The empty cpuset that says a tinct run turned the root's load
/// balancing off (module documentation).
const BALANCE_OFF_MARKER: &str = "tinct-dl-balance-off";

/// A run's identity in its cpusets' names: its process and that process's
/// start time, so that a pid the kernel gave to another process since does
/// not keep a dead run's cpusets.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct RunId {
    pid: u32,
    /// Field 22 of `/proc/<pid>/stat` (clock ticks after boot); 0 when it
    /// cannot be read.
    start: u64,
}

impl RunId {
    fn of(pid: u32) -> RunId {
        RunId {
            pid,
            start: start_time(pid).unwrap_or(0),
        }
    }

    /// Whether the process that made the run still runs.
    fn alive(self) -> bool {
        start_time(self.pid) == Some(self.start)
    }
}

/// The start time of process `pid` (field 22 of its `stat`).
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields from the state (field 3) on follow the command name.
    stat.rsplit_once(") ")?
        .1
        .split_whitespace()
        .nth(22 - 3)?
        .parse()
        .ok()
}

/// Instances of [`DeadlinePartitions`] made by this process so far: two at
/// once (a library running two runs) name their cpusets apart.
static INSTANCES: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// `tinct-dl-<pid>-<start>-<instance>-cpu<N>`.
fn cpuset_name(run: RunId, instance: u32, cpu: u32) -> String {
    format!("tinct-dl-{}-{}-{instance}-cpu{cpu}", run.pid, run.start)
}

/// The run that made the cpuset `name`, if it is one.
fn run_of(name: &str) -> Option<RunId> {
    let mut parts = name.strip_prefix("tinct-dl-")?.split('-');
    let pid = parts.next()?.parse().ok()?;
    let start = parts.next()?.parse().ok()?;
    parts.next()?.parse::<u32>().ok()?;
    parts.next()?.strip_prefix("cpu")?.parse::<u32>().ok()?;
    parts.next().is_none().then_some(RunId { pid, start })
}

/// The shared state's lock: `flock(LOCK_EX)` of the cpuset root, held
/// while the returned file lives (retried when a signal interrupts it).
fn lock(root: &Path) -> Result<std::fs::File> {
    let directory = std::fs::File::open(root).map_err(|source| Error::Io {
        path: root.into(),
        source,
    })?;
    loop {
        match rustix::fs::flock(&directory, rustix::fs::FlockOperation::LockExclusive) {
            Ok(()) => return Ok(directory),
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => {
                return Err(Error::syscall(
                    format!("flock({}, LOCK_EX)", root.display()),
                    e.into(),
                ));
            }
        }
    }
}

/// Under the lock: removes the cpusets of the runs of process `dead`
/// (when given) and of every run whose process is gone (once each: one
/// still holding a thread stays, as a run's), then, when no run's cpuset
/// is left and a run turned balancing off, turns it back on. Returns the
/// cpusets removed. A directory that cannot be read is an error, and
/// balancing is then left as it is.
fn sweep(root: &Path, dead: Option<u32>) -> Result<Vec<PathBuf>> {
    let unreadable = |source| Error::Io {
        path: root.into(),
        source,
    };
    let mut removed = Vec::new();
    let mut runs_left = false;
    for entry in std::fs::read_dir(root).map_err(unreadable)? {
        let entry = entry.map_err(unreadable)?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(run) = run_of(&name) else {
            continue;
        };
        let gone = Some(run.pid) == dead || !run.alive();
        if gone && std::fs::remove_dir(entry.path()).is_ok() {
            removed.push(entry.path());
        } else {
            runs_left = true;
        }
    }
    let marker = root.join(BALANCE_OFF_MARKER);
    if !runs_left && marker.is_dir() {
        write(&root.join("cpuset.sched_load_balance"), "1")?;
        std::fs::remove_dir(&marker).map_err(|source| Error::Io {
            path: marker.clone(),
            source,
        })?;
    }
    Ok(removed)
}

/// Where the cpuset controller's cgroup v1 hierarchy is mounted, from
/// `/proc/self/mounts`.
pub fn v1_mount_point() -> Result<PathBuf> {
    crate::cgroup::find_mount(
        |kind, options| kind == "cgroup" && options.split(',').any(|o| o == "cpuset"),
        "a cgroup v1 hierarchy with the cpuset controller",
        "none (the cpuset controller is on cgroup v2 or not mounted): partitioned \
         SCHED_DEADLINE needs `mount -t cgroup -o cpuset cpuset <dir>`",
    )
}

fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path)
        .map(|text| text.trim().to_string())
        .map_err(|source| Error::Io {
            path: path.into(),
            source,
        })
}

fn write(path: &Path, value: &str) -> Result<()> {
    std::fs::write(path, value).map_err(|source| Error::Io {
        path: path.into(),
        source,
    })
}

/// The root cpuset's `cpuset.sched_load_balance` (`true` for 1) under the
/// cpuset hierarchy mounted at `root`.
pub fn root_load_balance(root: &Path) -> Result<bool> {
    Ok(read(&root.join("cpuset.sched_load_balance"))? != "0")
}

/// A root domain of one CPU for each of a run's partitioned deadline
/// CPUs (see the module docs).
#[derive(Debug)]
pub struct DeadlinePartitions {
    root: PathBuf,
    /// Each CPU with its cpuset, in the order asked.
    cpusets: Vec<(u32, PathBuf)>,
    /// Set while nothing is left to remove (before the cpusets are made,
    /// and after they are removed).
    removed: bool,
}

impl DeadlinePartitions {
    /// Makes `cpus` root domains of one CPU each, for this process, under
    /// the machine's cpuset hierarchy.
    pub fn create(cpus: &[u32]) -> Result<DeadlinePartitions> {
        DeadlinePartitions::create_in(&v1_mount_point()?, cpus, std::process::id())
    }

    /// [`DeadlinePartitions::create`] under the cpuset hierarchy at `root`,
    /// naming the cpusets after process `pid` (a test gives a directory of
    /// its own). On an error, what was made so far is undone.
    pub fn create_in(root: &Path, cpus: &[u32], pid: u32) -> Result<DeadlinePartitions> {
        let _lock = lock(root)?;
        // Runs that died without their supervisor leave nothing behind.
        let _ = sweep(root, None);
        let mems = read(&root.join("cpuset.mems"))?;
        // `removed` until made: a panic in `make` must not lock again.
        let mut partitions = DeadlinePartitions {
            root: root.to_path_buf(),
            cpusets: Vec::with_capacity(cpus.len()),
            removed: true,
        };
        let instance = INSTANCES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if let Err(e) = partitions.make(RunId::of(pid), instance, cpus, &mems) {
            // Empty still (no thread joined): removed at once, and the
            // balancing put back if this run turned it off alone.
            for (_, dir) in &partitions.cpusets {
                let _ = std::fs::remove_dir(dir);
            }
            let _ = sweep(root, None);
            return Err(e);
        }
        partitions.removed = false;
        Ok(partitions)
    }

    /// The cpusets, then the root's balancing off: the domains are rebuilt
    /// once, with every CPU of the run already in place. Exclusive
    /// cpusets, so that one overlapping another balanced cpuset (which
    /// would merge their domains) fails here rather than at
    /// `sched_setattr`.
    fn make(&mut self, run: RunId, instance: u32, cpus: &[u32], mems: &str) -> Result<()> {
        for &cpu in cpus {
            let dir = self.root.join(cpuset_name(run, instance, cpu));
            std::fs::create_dir(&dir).map_err(|source| Error::Io {
                path: dir.clone(),
                source,
            })?;
            self.cpusets.push((cpu, dir.clone()));
            write(&dir.join("cpuset.cpus"), &cpu.to_string())?;
            write(&dir.join("cpuset.mems"), mems)?;
            write(&dir.join("cpuset.cpu_exclusive"), "1")?;
            write(&dir.join("cpuset.sched_load_balance"), "1")?;
        }
        if root_load_balance(&self.root)? {
            let marker = self.root.join(BALANCE_OFF_MARKER);
            match std::fs::create_dir(&marker) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(source) => {
                    return Err(Error::Io {
                        path: marker,
                        source,
                    });
                }
            }
            write(&self.root.join("cpuset.sched_load_balance"), "0")?;
        }
        Ok(())
    }

    /// The cpuset of `cpu`, if it is one of the partitions.
    pub fn dir_of(&self, cpu: u32) -> Option<&Path> {
        self.cpusets
            .iter()
            .find(|(c, _)| *c == cpu)
            .map(|(_, dir)| dir.as_path())
    }

    /// The cpuset `tasks` file of `cpu`, opened for writing, for
    /// [`crate::cgroup::join_thread`] from a thread that must not allocate.
    pub fn tasks_file(&self, cpu: u32) -> Result<std::fs::File> {
        let dir = self.dir_of(cpu).ok_or_else(|| {
            Error::InvalidArgument(format!("CPU {cpu} is not a deadline partition"))
        })?;
        let path = dir.join("tasks");
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .map_err(|source| Error::Io { path, source })
    }

    /// Moves the calling thread into the partition of `cpu` (which pins
    /// it to `cpu`).
    pub fn join(&self, cpu: u32) -> Result<()> {
        let file = self.tasks_file(cpu)?;
        crate::cgroup::join_thread(&file).map_err(|source| Error::Io {
            path: self.dir_of(cpu).unwrap_or(&self.root).join("tasks"),
            source,
        })
    }

    /// Removes the cpusets (a cpuset still holding a thread that has not
    /// ended yet is retried for up to a second, before the shared lock is
    /// taken) and, if no other run holds partitions, puts the root's load
    /// balancing back.
    pub fn remove(&mut self) -> Result<()> {
        if self.removed {
            return Ok(());
        }
        let mut first_error = None;
        for (_, dir) in &self.cpusets {
            if let Err(e) = remove_cpuset(dir) {
                first_error.get_or_insert(e);
            }
        }
        let _lock = lock(&self.root)?;
        self.removed = true;
        if let Err(e) = sweep(&self.root, None) {
            first_error.get_or_insert(e);
        }
        first_error.map_or(Ok(()), Err)
    }
}

impl Drop for DeadlinePartitions {
    fn drop(&mut self) {
        let _ = self.remove();
    }
}

/// Removes one cpuset directory, retrying while threads still leave it.
fn remove_cpuset(dir: &Path) -> Result<()> {
    let mut tries = 0;
    loop {
        match std::fs::remove_dir(dir) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) && tries < 100 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            Err(source) => {
                return Err(Error::Io {
                    path: dir.into(),
                    source,
                });
            }
        }
    }
}

/// Removes the partitions a run of process `pid` left under the cpuset
/// hierarchy at `root` (it died before it could), and those of any other
/// run whose process is gone; restores the root's load balancing when no
/// run holds partitions any more and a run had turned it off. Returns the
/// cpusets removed.
pub fn remove_leftovers(root: &Path, pid: u32) -> Vec<PathBuf> {
    let Ok(_lock) = lock(root) else {
        return Vec::new();
    };
    sweep(root, Some(pid)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run no process can have made (its pid above the kernel's largest
    /// pid_max).
    const DEAD: RunId = RunId {
        pid: 4_194_305,
        start: 1,
    };

    /// A directory that stands for a cpuset root: in a plain file system,
    /// `mkdir` makes no interface files, so writes create them.
    fn fake_root(balanced: &str) -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("cpuset.mems"), "0-1\n").unwrap();
        std::fs::write(root.path().join("cpuset.sched_load_balance"), balanced).unwrap();
        root
    }

    /// Empties the cpusets under `root` of their files: cgroupfs removes a
    /// cpuset with its interface files, a plain directory must be empty.
    fn empty_cpusets(root: &Path) {
        for dir in std::fs::read_dir(root).unwrap().flatten() {
            if dir.path().is_dir() {
                for file in std::fs::read_dir(dir.path()).unwrap().flatten() {
                    std::fs::remove_file(file.path()).unwrap();
                }
            }
        }
    }

    /// The directories under `root`, sorted.
    fn names(root: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(root)
            .unwrap()
            .flatten()
            .filter(|e| e.path().is_dir())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn each_cpu_gets_an_exclusive_balanced_cpuset_and_the_root_stops_balancing() {
        let root = fake_root("1\n");
        let mut partitions =
            DeadlinePartitions::create_in(root.path(), &[1, 3], std::process::id()).unwrap();
        for cpu in [1, 3] {
            let dir = partitions.dir_of(cpu).unwrap().to_path_buf();
            let name = dir.file_name().unwrap().to_string_lossy().into_owned();
            assert_eq!(run_of(&name), Some(RunId::of(std::process::id())), "{name}");
            assert!(name.ends_with(&format!("-cpu{cpu}")), "{name}");
            assert_eq!(read(&dir.join("cpuset.cpus")).unwrap(), cpu.to_string());
            assert_eq!(read(&dir.join("cpuset.mems")).unwrap(), "0-1");
            assert_eq!(read(&dir.join("cpuset.cpu_exclusive")).unwrap(), "1");
            assert_eq!(read(&dir.join("cpuset.sched_load_balance")).unwrap(), "1");
        }
        assert_eq!(partitions.dir_of(2), None);
        assert!(!root_load_balance(root.path()).unwrap());
        assert!(root.path().join(BALANCE_OFF_MARKER).is_dir());
        empty_cpusets(root.path());
        partitions.remove().unwrap();
        assert!(root_load_balance(root.path()).unwrap());
        assert_eq!(names(root.path()), Vec::<String>::new());
    }

    #[test]
    fn a_root_that_was_not_balancing_is_left_so() {
        let root = fake_root("0\n");
        let mut partitions =
            DeadlinePartitions::create_in(root.path(), &[0], std::process::id()).unwrap();
        assert!(!root.path().join(BALANCE_OFF_MARKER).exists());
        empty_cpusets(root.path());
        partitions.remove().unwrap();
        assert!(!root_load_balance(root.path()).unwrap());
    }

    #[test]
    fn a_failed_creation_leaves_balancing_alone() {
        let root = fake_root("1\n");
        // The same CPU twice: the second cpuset is in the first one's way,
        // after the first was made (turning balancing off comes last).
        let error =
            DeadlinePartitions::create_in(root.path(), &[1, 1], std::process::id()).unwrap_err();
        assert!(error.to_string().contains("-cpu1"), "{error}");
        assert!(root_load_balance(root.path()).unwrap());
        assert!(!root.path().join(BALANCE_OFF_MARKER).exists());
        // The first cpuset keeps the files a plain directory cannot drop by
        // itself (cgroupfs removes it whole); nothing else was made.
        assert_eq!(names(root.path()).len(), 1);
    }

    #[test]
    fn two_runs_of_one_process_keep_apart_and_the_last_out_restores() {
        let root = fake_root("1\n");
        let me = std::process::id();
        // Run A turns balancing off; run B, of the same process (a library
        // running two runs), comes while A runs, on the same CPU number.
        let mut a = DeadlinePartitions::create_in(root.path(), &[0], me).unwrap();
        let mut b = DeadlinePartitions::create_in(root.path(), &[0], me).unwrap();
        assert_ne!(a.dir_of(0), b.dir_of(0));
        empty_cpusets(root.path());
        a.remove().unwrap();
        assert!(
            b.dir_of(0).unwrap().is_dir(),
            "A's removal leaves B's cpuset"
        );
        assert!(
            !root_load_balance(root.path()).unwrap(),
            "B still runs: balancing stays off"
        );
        b.remove().unwrap();
        assert!(
            root_load_balance(root.path()).unwrap(),
            "the last run out restores"
        );
        assert_eq!(names(root.path()), Vec::<String>::new());
    }

    #[test]
    fn a_dead_runs_leftovers_are_swept_and_balancing_restored() {
        let root = fake_root("0\n");
        let live = RunId::of(std::process::id());
        // A pid reused since: the run's start time is not its process's.
        let reused = RunId {
            start: live.start + 1,
            ..live
        };
        for name in [
            cpuset_name(DEAD, 0, 0),
            cpuset_name(DEAD, 0, 1),
            cpuset_name(live, 9, 1),
            BALANCE_OFF_MARKER.to_string(),
        ] {
            std::fs::create_dir(root.path().join(name)).unwrap();
        }
        // The dead run's cpusets go; the live one's stays, and so does the
        // balancing it needs off.
        assert_eq!(remove_leftovers(root.path(), DEAD.pid).len(), 2);
        assert!(!root_load_balance(root.path()).unwrap());
        assert_eq!(remove_leftovers(root.path(), live.pid).len(), 1);
        assert!(root_load_balance(root.path()).unwrap());
        assert_eq!(names(root.path()), Vec::<String>::new());
        // A creation sweeps the cpusets of a run whose process is gone,
        // its pid reused or not.
        std::fs::create_dir(root.path().join(cpuset_name(DEAD, 0, 0))).unwrap();
        std::fs::create_dir(root.path().join(cpuset_name(reused, 0, 1))).unwrap();
        let partitions = DeadlinePartitions::create_in(root.path(), &[0], live.pid).unwrap();
        let left = names(root.path());
        assert_eq!(left.len(), 2, "{left:?}");
        assert!(left.contains(&BALANCE_OFF_MARKER.to_string()), "{left:?}");
        drop(partitions);
    }

    #[test]
    fn only_run_cpusets_are_named_as_runs() {
        let run = RunId { pid: 42, start: 7 };
        assert_eq!(run_of(&cpuset_name(run, 3, 5)), Some(run));
        assert_eq!(run_of(BALANCE_OFF_MARKER), None);
        assert_eq!(run_of("tinct-dl-42-7-3-cpux"), None);
        assert_eq!(run_of("tinct-dl-42-7-3-cpu5-x"), None);
        assert_eq!(run_of("docker"), None);
    }
}
