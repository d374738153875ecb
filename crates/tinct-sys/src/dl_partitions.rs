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
//! their threads have ended and restores load balancing.
//! [`remove_leftovers`] does the same for a run process that died: the
//! run supervisor calls it with the value it read before the run
//! ([`root_load_balance`]).
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
    /// `cpuset.sched_load_balance` of the root before, to put back.
    balanced_before: bool,
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
        let mems = read(&root.join("cpuset.mems"))?;
        let mut partitions = DeadlinePartitions {
            root: root.to_path_buf(),
            cpusets: Vec::with_capacity(cpus.len()),
            balanced_before: root_load_balance(root)?,
            removed: false,
        };
        // The children first, then the root's balancing off: the domains
        // are rebuilt once, with every CPU of the run already in place.
        for &cpu in cpus {
            let dir = root.join(format!("{}{cpu}", prefix(pid)));
            std::fs::create_dir(&dir).map_err(|source| Error::Io {
                path: dir.clone(),
                source,
            })?;
            partitions.cpusets.push((cpu, dir.clone()));
            write(&dir.join("cpuset.cpus"), &cpu.to_string())?;
            write(&dir.join("cpuset.mems"), &mems)?;
            write(&dir.join("cpuset.sched_load_balance"), "1")?;
        }
        if partitions.balanced_before {
            write(&root.join("cpuset.sched_load_balance"), "0")?;
        }
        Ok(partitions)
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

    /// Removes the cpusets and puts the root's load balancing back. A
    /// cpuset still holding a thread (one that has not ended yet) is
    /// retried for up to a second.
    pub fn remove(&mut self) -> Result<()> {
        if self.removed {
            return Ok(());
        }
        self.removed = true;
        let mut first_error = None;
        for (_, dir) in &self.cpusets {
            if let Err(e) = remove_cpuset(dir) {
                first_error.get_or_insert(e);
            }
        }
        if self.balanced_before
            && let Err(e) = write(&self.root.join("cpuset.sched_load_balance"), "1")
        {
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
/// hierarchy at `root` (it died before it could) and, if the root's load
/// balancing was on before the run (`balanced_before`, read by the caller
/// before it started the run) and no other run's partitions remain, turns
/// it back on. Returns the directories removed.
pub fn remove_leftovers(root: &Path, pid: u32, balanced_before: bool) -> Vec<PathBuf> {
    let ours = prefix(pid);
    let mut removed = Vec::new();
    let mut others = false;
    if let Ok(entries) = std::fs::read_dir(root) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with(&ours) && entry.path().is_dir() {
                if remove_cpuset(&entry.path()).is_ok() {
                    removed.push(entry.path());
                }
            } else if name.starts_with("tinct-dl-") {
                others = true;
            }
        }
    }
    if balanced_before && !others && !removed.is_empty() {
        let _ = write(&root.join("cpuset.sched_load_balance"), "1");
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory that stands for a cpuset root: in a plain file system,
    /// `mkdir` makes no interface files, so writes create them.
    fn fake_root(balanced: &str) -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("cpuset.mems"), "0-1\n").unwrap();
        std::fs::write(root.path().join("cpuset.sched_load_balance"), balanced).unwrap();
        root
    }

    fn remove_files(dir: &Path) {
        // cgroupfs removes a cpuset with its interface files; a plain
        // directory must be emptied first.
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            std::fs::remove_file(entry.path()).unwrap();
        }
    }

    #[test]
    fn each_cpu_gets_a_balanced_cpuset_of_its_own_and_the_root_stops_balancing() {
        let root = fake_root("1\n");
        let mut partitions = DeadlinePartitions::create_in(root.path(), &[1, 3], 42).unwrap();
        for cpu in [1, 3] {
            let dir = root.path().join(format!("tinct-dl-42-cpu{cpu}"));
            assert_eq!(partitions.dir_of(cpu), Some(dir.as_path()));
            assert_eq!(read(&dir.join("cpuset.cpus")).unwrap(), cpu.to_string());
            assert_eq!(read(&dir.join("cpuset.mems")).unwrap(), "0-1");
            assert_eq!(read(&dir.join("cpuset.sched_load_balance")).unwrap(), "1");
            remove_files(&dir);
        }
        assert_eq!(partitions.dir_of(2), None);
        assert!(!root_load_balance(root.path()).unwrap());
        partitions.remove().unwrap();
        assert!(root_load_balance(root.path()).unwrap());
        assert!(!root.path().join("tinct-dl-42-cpu1").exists());
    }

    #[test]
    fn a_root_that_was_not_balancing_is_left_so() {
        let root = fake_root("0\n");
        let mut partitions = DeadlinePartitions::create_in(root.path(), &[0], 7).unwrap();
        remove_files(&root.path().join("tinct-dl-7-cpu0"));
        partitions.remove().unwrap();
        assert!(!root_load_balance(root.path()).unwrap());
    }

    #[test]
    fn a_failed_creation_undoes_what_it_made() {
        let root = fake_root("1\n");
        std::fs::create_dir(root.path().join("tinct-dl-9-cpu2")).unwrap();
        // CPU 1 is made, CPU 2's directory is in the way.
        let error = DeadlinePartitions::create_in(root.path(), &[1, 2], 9).unwrap_err();
        assert!(error.to_string().contains("tinct-dl-9-cpu2"), "{error}");
        // The dropped half-made partitions removed nothing they could not:
        // cpu1's directory still has its files in a plain file system, but
        // the root's balancing was never turned off.
        assert!(root_load_balance(root.path()).unwrap());
    }

    #[test]
    fn leftovers_of_a_dead_run_are_removed_and_balancing_restored_once_no_run_remains() {
        let root = fake_root("0\n");
        for name in ["tinct-dl-5-cpu0", "tinct-dl-5-cpu1", "tinct-dl-6-cpu1"] {
            std::fs::create_dir(root.path().join(name)).unwrap();
        }
        let removed = remove_leftovers(root.path(), 5, true);
        assert_eq!(removed.len(), 2);
        assert!(root.path().join("tinct-dl-6-cpu1").exists());
        // Run 6 still holds its partition: balancing stays off.
        assert!(!root_load_balance(root.path()).unwrap());
        assert_eq!(remove_leftovers(root.path(), 6, true).len(), 1);
        assert!(root_load_balance(root.path()).unwrap());
        // A root that was not balancing before is left as it is.
        std::fs::write(root.path().join("cpuset.sched_load_balance"), "0").unwrap();
        std::fs::create_dir(root.path().join("tinct-dl-8-cpu0")).unwrap();
        assert_eq!(remove_leftovers(root.path(), 8, false).len(), 1);
        assert!(!root_load_balance(root.path()).unwrap());
    }
}
