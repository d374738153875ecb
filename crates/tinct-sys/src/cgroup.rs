//! cgroup v2 task groups for one run: created before the run, threads moved
//! into them, removed afterwards (rt-app's `taskgroup`).
//!
//! A [`RunGroups`] creates one domain cgroup for the run,
//! `<the process's cgroup>/tinct-run-<pid>`, moves the whole process into
//! it, and creates each task group as a *threaded* cgroup below it (nested
//! groups `/a/b` nest), so that single threads can be placed with
//! `cgroup.threads`. The CPU controller is enabled for the subtree where
//! the hierarchy offers it ([`RunGroups::cpu_controller`] says whether it
//! did: without it the groups exist but do not change CPU shares). Drop (or
//! [`RunGroups::remove`]) moves the process back and removes every
//! directory, deepest first. [`remove_leftovers`] cleans up after a process
//! that died before it could.

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};
use tinct_base::InputError;

/// Where cgroup v2 is mounted, from `/proc/self/mounts`.
pub fn mount_point() -> Result<PathBuf> {
    find_mount(
        |kind, _| kind == "cgroup2",
        "a cgroup2 mount",
        "none (this system has no cgroup v2 hierarchy)",
    )
}

/// The first mount of `/proc/self/mounts` whose file-system type and
/// options `wanted` accepts; else a parse error saying `expected` and
/// `found` (the cgroup v2 hierarchy, a v1 controller's).
pub fn find_mount(
    wanted: impl Fn(&str, &str) -> bool,
    expected: &str,
    found: &str,
) -> Result<PathBuf> {
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
            wanted(kind, options).then(|| PathBuf::from(mount))
        })
        .ok_or_else(|| {
            Error::Input(InputError::new(
                path.display().to_string(),
                "",
                expected,
                format!("{found:?}"),
            ))
        })
}

/// Moves the calling thread into the cgroup whose thread file (`cgroup.threads`
/// of v2, `tasks` of v1) is `file`, open for writing: its thread id written
/// from a stack buffer, so a real-time thread can call it without
/// allocating.
pub fn join_thread(file: &std::fs::File) -> std::io::Result<()> {
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
    let mut file: &std::fs::File = file;
    file.write_all(&digits[at..])
}

/// The calling process's cgroup v2 path (the `0::` line of /proc/self/cgroup).
pub fn own_group() -> Result<String> {
    let path = Path::new("/proc/self/cgroup");
    let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
        path: path.into(),
        source,
    })?;
    text.lines()
        .find_map(|line| line.strip_prefix("0::").map(str::to_string))
        .ok_or_else(|| {
            Error::Input(InputError::new(
                path.display().to_string(),
                "",
                "a `0::` (cgroup v2) line",
                format!("{:?}", text.trim()),
            ))
        })
}

/// The prefixes of the interface files the kernel puts in every cgroup v2
/// directory: `cgroup.*` and those of its controllers and pressure files
/// (`cpu.max`, `memory.pressure`, `io.stat`, …). A group named like one
/// would be a control file.
pub const INTERFACE_PREFIXES: [&str; 11] = [
    "cgroup", "cpu", "cpuset", "io", "irq", "memory", "hugetlb", "pids", "rdma", "misc", "dmem",
];

/// Why the task group `group` (an rt-app name such as `/tg1/tg11`, see
/// [`RunGroups::create`]) cannot be a nest of cgroup directories below
/// the run's, or `None`: it must start with `/`; each component must be a
/// directory name of at most 255 bytes, neither `.` nor `..`, without a
/// control character, and not named like a cgroup interface file
/// (`cgroup.procs`, `cpu.max`: see [`INTERFACE_PREFIXES`]).
pub fn group_name_problem(group: &str) -> Option<String> {
    if !group.starts_with('/') {
        return Some("no leading `/`".into());
    }
    for part in group.split('/').filter(|p| !p.is_empty()) {
        let problem = if part == "." || part == ".." {
            "a `.` or `..` component"
        } else if part.len() > 255 {
            "a component longer than 255 bytes"
        } else if part.chars().any(char::is_control) {
            "a control character"
        } else if part
            .split_once('.')
            .is_some_and(|(prefix, _)| INTERFACE_PREFIXES.contains(&prefix))
        {
            "a component named like a cgroup interface file (`cgroup.*`, `cpu.*`, …)"
        } else {
            continue;
        };
        return Some(format!("{problem}: \"{part}\""));
    }
    None
}

fn write(path: &Path, value: &str) -> Result<()> {
    std::fs::write(path, value).map_err(|source| Error::Io {
        path: path.into(),
        source,
    })
}

/// The task groups of one run (see the module docs).
#[derive(Debug)]
pub struct RunGroups {
    /// The process's cgroup before the run (absolute directory).
    original: PathBuf,
    /// The run's domain cgroup.
    root: PathBuf,
    /// Every group directory created, parents before children.
    created: Vec<PathBuf>,
    cpu_controller: bool,
    removed: bool,
}

impl RunGroups {
    /// Creates the run's cgroup, moves this process into it and creates
    /// `groups` (rt-app names: `/a`, `/a/b`; `/` is the run's cgroup itself).
    pub fn create(groups: &[String]) -> Result<RunGroups> {
        let mount = mount_point()?;
        let own = own_group()?;
        let original = mount.join(own.trim_start_matches('/'));
        let root = original.join(format!("tinct-run-{}", std::process::id()));
        std::fs::create_dir(&root).map_err(|source| Error::Io {
            path: root.clone(),
            source,
        })?;
        let mut run = RunGroups {
            original,
            root: root.clone(),
            created: vec![root.clone()],
            cpu_controller: false,
            removed: false,
        };
        write(&root.join("cgroup.procs"), &std::process::id().to_string())?;
        // The CPU controller where the parent hierarchy has it (optional).
        run.cpu_controller = std::fs::read_to_string(root.join("cgroup.controllers"))
            .is_ok_and(|c| c.split_whitespace().any(|name| name == "cpu"))
            && write(&root.join("cgroup.subtree_control"), "+cpu").is_ok();
        for group in groups {
            let mut dir = root.clone();
            for part in group.split('/').filter(|p| !p.is_empty()) {
                dir.push(part);
                if !run.created.contains(&dir) {
                    std::fs::create_dir(&dir).map_err(|source| Error::Io {
                        path: dir.clone(),
                        source,
                    })?;
                    run.created.push(dir.clone());
                    write(&dir.join("cgroup.type"), "threaded")?;
                    if run.cpu_controller {
                        let _ = write(&dir.join("cgroup.subtree_control"), "+cpu");
                    }
                }
            }
        }
        Ok(run)
    }

    /// True if the groups control CPU shares (the cgroup v2 CPU controller
    /// was available and enabled for them).
    pub fn cpu_controller(&self) -> bool {
        self.cpu_controller
    }

    /// The run's cgroup directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The directory of group `group` (rt-app name).
    pub fn dir_of(&self, group: &str) -> PathBuf {
        let mut dir = self.root.clone();
        for part in group.split('/').filter(|p| !p.is_empty()) {
            dir.push(part);
        }
        dir
    }

    /// Moves thread `tid` into `group`.
    pub fn place(&self, group: &str, tid: i32) -> Result<()> {
        write(&self.dir_of(group).join("cgroup.threads"), &tid.to_string())
    }

    /// Moves the process back where it was and removes every group.
    pub fn remove(&mut self) -> Result<()> {
        if self.removed {
            return Ok(());
        }
        self.removed = true;
        let back = write(
            &self.original.join("cgroup.procs"),
            &std::process::id().to_string(),
        );
        let mut first_error = back.err();
        for dir in self.created.iter().rev() {
            if let Err(source) = std::fs::remove_dir(dir) {
                first_error.get_or_insert(Error::Io {
                    path: dir.clone(),
                    source,
                });
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}

impl Drop for RunGroups {
    fn drop(&mut self) {
        let _ = self.remove();
    }
}

/// Removes the groups a run of process `pid` left behind (the process died
/// before it could), deepest first; a group still holding a live thread
/// stays. Returns the directories removed.
pub fn remove_leftovers(pid: u32) -> Vec<PathBuf> {
    let Ok(mount) = mount_point() else {
        return Vec::new();
    };
    let Ok(own) = own_group() else {
        return Vec::new();
    };
    let root = mount
        .join(own.trim_start_matches('/'))
        .join(format!("tinct-run-{pid}"));
    let mut dirs = Vec::new();
    collect_dirs(&root, &mut dirs);
    dirs.iter()
        .rev()
        .filter(|dir| std::fs::remove_dir(dir).is_ok())
        .cloned()
        .collect()
}

fn collect_dirs(dir: &Path, out: &mut Vec<PathBuf>) {
    if !dir.is_dir() {
        return;
    }
    out.push(dir.to_path_buf());
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                collect_dirs(&entry.path(), out);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_names_are_directories_below_the_run_and_never_control_files() {
        for good in [
            "/",
            "/tg1",
            "/tg1/tg11",
            "//a//b/",
            "/my.group",
            "/cpu",
            "/cpux.max",
        ] {
            assert_eq!(group_name_problem(good), None, "{good}");
        }
        for (bad, why) in [
            ("tg1", "leading"),
            ("/a/../b", "`..`"),
            ("/.", "`.`"),
            ("/cgroup.procs", "interface file"),
            ("/a/cpu.max", "interface file"),
            ("/memory.pressure", "interface file"),
            ("/a\nb", "control"),
        ] {
            let problem = group_name_problem(bad).unwrap_or_else(|| panic!("{bad:?} accepted"));
            assert!(problem.contains(why), "{bad:?}: {problem}");
        }
        assert!(group_name_problem(&format!("/{}", "x".repeat(256))).is_some());
    }

    #[test]
    fn groups_hold_threads_and_are_removed() {
        if !crate::testing::privileged_or_skip("creating cgroup v2 groups") {
            return;
        }
        // Moves this whole test process for a moment (and back).
        let mut groups =
            RunGroups::create(&["/tg1".into(), "/tg1/tg11".into(), "/".into()]).unwrap();
        let dir = groups.dir_of("/tg1/tg11");
        assert_eq!(
            std::fs::read_to_string(dir.join("cgroup.type"))
                .unwrap()
                .trim(),
            "threaded"
        );
        let (tid, placed) = std::thread::scope(|s| {
            s.spawn(|| {
                let tid = crate::sched::gettid();
                groups.place("/tg1/tg11", tid).unwrap();
                let threads = std::fs::read_to_string(dir.join("cgroup.threads")).unwrap();
                (tid, threads)
            })
            .join()
            .unwrap()
        });
        assert!(placed.lines().any(|l| l == tid.to_string()), "{placed}");
        let root = groups.root().to_path_buf();
        groups.remove().unwrap();
        assert!(!root.exists(), "every group removed");
        assert!(!own_group().unwrap().contains("tinct-run"));
    }
}
