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

/// The name prefix of the cpusets a run of process `pid` creates.
fn prefix(pid: u32) -> String {
    format!("tinct-dl-{pid}-cpu")
}

/// The empty cpuset that says a tinct run turned the root's load
/// balancing off (module documentation).
const BALANCE_OFF_MARKER: &str = "tinct-dl-balance-off";

/// The process whose run made the cpuset `name`, if it is one.
fn run_of(name: &str) -> Option<u32> {
    let (pid, cpu) = name.strip_prefix("tinct-dl-")?.split_once("-cpu")?;
    cpu.parse::<u32>().ok()?;
    pid.parse().ok()
}

/// Whether process `pid` exists.
fn alive(pid: u32) -> bool {
    Path::new("/proc").join(pid.to_string()).exists()
}

/// The shared state's lock: `flock(LOCK_EX)` of the cpuset root, held
/// while the returned file lives.
fn lock(root: &Path) -> Result<std::fs::File> {
    let directory = std::fs::File::open(root).map_err(|source| Error::Io {
        path: root.into(),
        source,
    })?;
    rustix::fs::flock(&directory, rustix::fs::FlockOperation::LockExclusive)
        .map_err(|e| Error::syscall(format!("flock({}, LOCK_EX)", root.display()), e.into()))?;
    Ok(directory)
}

/// Under the lock: removes the cpusets of `pid`'s run (when given) and of
/// every run whose process is gone, then, when no run's cpuset is left and
/// a run turned balancing off, turns it back on. Returns the cpusets
/// removed; the first error of the restore.
fn sweep(root: &Path, pid: Option<u32>) -> (Vec<PathBuf>, Result<()>) {
    let mut removed = Vec::new();
    let mut runs_left = false;
    if let Ok(entries) = std::fs::read_dir(root) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(run) = run_of(&name) else {
                continue;
            };
            if (Some(run) == pid || !alive(run)) && remove_cpuset(&entry.path()).is_ok() {
                removed.push(entry.path());
            } else {
                runs_left = true;
            }
        }
    }
    let marker = root.join(BALANCE_OFF_MARKER);
    if runs_left || !marker.is_dir() {
        return (removed, Ok(()));
    }
    let restored = write(&root.join("cpuset.sched_load_balance"), "1").and_then(|()| {
        std::fs::remove_dir(&marker).map_err(|source| Error::Io {
            path: marker.clone(),
            source,
        })
    });
    (removed, restored)
}

/// Where the cpuset controller's cgroup v1 hierarchy is mounted, from
/// `/proc/self/mounts`.
pub fn v1_mount_point() -> Result<PathBuf> {
    let path = Path::new("/proc/self/mounts");
    let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
        path: path.into(),
        source,
    })?;
    text.lines()
        .find_map(|line| {
            let mut fields = line.split_whitespace();
            let (_, mount, kind, options) = (
                fields.next()?,
                fields.next()?,
                fields.next()?,
                fields.next()?,
            );
            (kind == "cgroup" && options.split(',').any(|o| o == "cpuset"))
                .then(|| PathBuf::from(mount))
        })
        .ok_or_else(|| Error::Parse {
            path: path.into(),
            line: 0,
            expected: "a cgroup v1 hierarchy with the cpuset controller".into(),
            found: "none (the cpuset controller is on cgroup v2 or not mounted): \
                    partitioned SCHED_DEADLINE needs `mount -t cgroup -o cpuset cpuset <dir>`"
                .into(),
        })
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
    /// The process the cpusets are named after.
    pid: u32,
    removed: bool,
}

impl DeadlinePartitions {
    /// Makes `cpus` root domains of one CPU each, for this process, under
    /// the machine's cpuset hierarchy.
    pub fn create(cpus: &[u32]) -> Result<DeadlinePartitions> {
        DeadlinePartitions::create_in(&v1_mount_point()?, cpus, std::process::id())
    }

    /// [`DeadlinePartitions::create`] under the cpuset hierarchy at `root`,
    /// naming the cpusets after `pid` (a test gives a directory of its own).
    /// On an error, what was made so far is undone.
    pub fn create_in(root: &Path, cpus: &[u32], pid: u32) -> Result<DeadlinePartitions> {
        let _lock = lock(root)?;
        // Runs that died without their supervisor leave nothing behind.
        let _ = sweep(root, None);
        let mems = read(&root.join("cpuset.mems"))?;
        let mut partitions = DeadlinePartitions {
            root: root.to_path_buf(),
            cpusets: Vec::with_capacity(cpus.len()),
            pid,
            removed: false,
        };
        let made = partitions.make(cpus, &mems);
        if let Err(e) = made {
            partitions.removed = true;
            let _ = sweep(root, Some(pid));
            return Err(e);
        }
        Ok(partitions)
    }

    /// The cpusets, then the root's balancing off: the domains are rebuilt
    /// once, with every CPU of the run already in place. Exclusive
    /// cpusets, so that one overlapping another balanced cpuset (which
    /// would merge their domains) fails here rather than at
    /// `sched_setattr`.
    fn make(&mut self, cpus: &[u32], mems: &str) -> Result<()> {
        for &cpu in cpus {
            let dir = self.root.join(format!("{}{cpu}", prefix(self.pid)));
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
    /// [`join_cpuset`] from a thread that must not allocate.
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
        join_cpuset(&file).map_err(|source| Error::Io {
            path: self.dir_of(cpu).unwrap_or(&self.root).join("tasks"),
            source,
        })
    }

    /// Removes the cpusets (a cpuset still holding a thread that has not
    /// ended yet is retried for up to a second) and, if no other run holds
    /// partitions, puts the root's load balancing back.
    pub fn remove(&mut self) -> Result<()> {
        if self.removed {
            return Ok(());
        }
        self.removed = true;
        let _lock = lock(&self.root)?;
        let mut first_error = None;
        for (_, dir) in &self.cpusets {
            if let Err(e) = remove_cpuset(dir) {
                first_error.get_or_insert(e);
            }
        }
        if let (_, Err(e)) = sweep(&self.root, Some(self.pid)) {
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

/// Writes the calling thread's id to an open cpuset `tasks` file (from a
/// stack buffer: no allocation).
pub fn join_cpuset(tasks: &std::fs::File) -> std::io::Result<()> {
    use std::io::Write;
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut tid = u64::from(crate::sched::gettid().unsigned_abs());
    loop {
        at -= 1;
        digits[at] = b'0' + (tid % 10) as u8;
        tid /= 10;
        if tid == 0 {
            break;
        }
    }
    let mut file: &std::fs::File = tasks;
    file.write_all(&digits[at..])
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
    sweep(root, Some(pid)).0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pid no process can have (above the kernel's largest pid_max).
    const DEAD: u32 = 4_194_305;

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
        let pid = std::process::id();
        let mut partitions = DeadlinePartitions::create_in(root.path(), &[1, 3], pid).unwrap();
        for cpu in [1, 3] {
            let dir = root.path().join(format!("tinct-dl-{pid}-cpu{cpu}"));
            assert_eq!(partitions.dir_of(cpu), Some(dir.as_path()));
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
        let pid = std::process::id();
        let mut partitions = DeadlinePartitions::create_in(root.path(), &[0], pid).unwrap();
        assert!(!root.path().join(BALANCE_OFF_MARKER).exists());
        empty_cpusets(root.path());
        partitions.remove().unwrap();
        assert!(!root_load_balance(root.path()).unwrap());
    }

    #[test]
    fn a_failed_creation_leaves_balancing_alone() {
        let root = fake_root("1\n");
        let pid = std::process::id();
        // CPU 2's cpuset is in the way; CPU 1's is made first.
        let in_the_way = root.path().join(format!("tinct-dl-{pid}-cpu2"));
        std::fs::create_dir(&in_the_way).unwrap();
        let error = DeadlinePartitions::create_in(root.path(), &[1, 2], pid).unwrap_err();
        assert!(
            error.to_string().contains(&format!("tinct-dl-{pid}-cpu2")),
            "{error}"
        );
        assert!(root_load_balance(root.path()).unwrap());
        assert!(!root.path().join(BALANCE_OFF_MARKER).exists());
        // The undo removed what it could: the empty cpu2 directory (cpu1's
        // keeps the files a plain directory cannot drop by itself).
        assert!(!in_the_way.exists());
    }

    #[test]
    fn balancing_comes_back_when_the_last_run_leaves_whichever_it_is() {
        let root = fake_root("1\n");
        // Run A (this process) turns balancing off; run B (this process's
        // parent, alive too) comes while A runs.
        let me = std::process::id();
        let parent = std::os::unix::process::parent_id();
        let mut a = DeadlinePartitions::create_in(root.path(), &[0], me).unwrap();
        let mut b = DeadlinePartitions::create_in(root.path(), &[1], parent).unwrap();
        empty_cpusets(root.path());
        a.remove().unwrap();
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
        let me = std::process::id();
        for name in [
            format!("tinct-dl-{DEAD}-cpu0"),
            format!("tinct-dl-{DEAD}-cpu1"),
            format!("tinct-dl-{me}-cpu1"),
            BALANCE_OFF_MARKER.to_string(),
        ] {
            std::fs::create_dir(root.path().join(name)).unwrap();
        }
        // The dead run's cpusets go; this live one's stays, and so does
        // the balancing it needs off.
        assert_eq!(remove_leftovers(root.path(), DEAD).len(), 2);
        assert!(!root_load_balance(root.path()).unwrap());
        assert_eq!(remove_leftovers(root.path(), me).len(), 1);
        assert!(root_load_balance(root.path()).unwrap());
        assert_eq!(names(root.path()), Vec::<String>::new());
        // A creation sweeps a dead run's cpusets too (one killed without
        // its supervisor).
        std::fs::create_dir(root.path().join(format!("tinct-dl-{DEAD}-cpu0"))).unwrap();
        let partitions = DeadlinePartitions::create_in(root.path(), &[0], me).unwrap();
        assert_eq!(
            names(root.path()),
            [
                format!("tinct-dl-{me}-cpu0"),
                BALANCE_OFF_MARKER.to_string()
            ]
        );
        drop(partitions);
    }

    #[test]
    fn only_run_cpusets_are_named_as_runs() {
        assert_eq!(run_of("tinct-dl-42-cpu3"), Some(42));
        assert_eq!(run_of(BALANCE_OFF_MARKER), None);
        assert_eq!(run_of("tinct-dl-42-cpux"), None);
        assert_eq!(run_of("docker"), None);
    }
}
