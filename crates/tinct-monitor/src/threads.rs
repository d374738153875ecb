//! The threads of a process, from `/proc/PID/task`, and the processes it
//! started (its descendants, from each thread's `children` file).

use tinct_sys::SysRoot;

/// The thread ids of process `pid` (empty once it is gone).
pub fn threads_of(pid: i32) -> Vec<i32> {
    SysRoot::live()
        .list_dir(&format!("/proc/{pid}/task"))
        .unwrap_or_default()
        .iter()
        .filter_map(|name| name.parse().ok())
        .collect()
}

/// The name of thread `tid` of `pid` (`comm`), or `tid` as text.
pub fn thread_name(pid: i32, tid: i32) -> String {
    SysRoot::live()
        .read_line_optional(&format!("/proc/{pid}/task/{tid}/comm"))
        .ok()
        .flatten()
        .map(|name| name.trim().to_string())
        .unwrap_or_else(|| tid.to_string())
}

/// Process `pid` and its descendants alive now, parents first: the
/// children of every thread (`/proc/PID/task/TID/children`, Linux 3.5),
/// and theirs. A process whose parent has ended was adopted elsewhere and
/// is no longer found.
pub fn process_tree(pid: i32) -> Vec<i32> {
    let mut tree = vec![pid];
    let mut next = 0;
    while let Some(&parent) = tree.get(next) {
        next += 1;
        for tid in threads_of(parent) {
            let children = SysRoot::live()
                .read_optional(&format!("/proc/{parent}/task/{tid}/children"))
                .ok()
                .flatten()
                .unwrap_or_default();
            for child in children.split_whitespace().filter_map(|c| c.parse().ok()) {
                if !tree.contains(&child) {
                    tree.push(child);
                }
            }
        }
    }
    tree
}

/// True while process `pid` exists and is not a zombie.
pub fn alive(pid: i32) -> bool {
    state_is_alive(&format!("/proc/{pid}/stat"))
}

/// True while thread `tid` of process `pid` exists and has not exited (a
/// thread of a zombie is listed until its parent reaps it).
pub fn thread_alive(pid: i32, tid: i32) -> bool {
    state_is_alive(&format!("/proc/{pid}/task/{tid}/stat"))
}

/// True if the `stat` file at `path` exists and its state is neither
/// zombie nor dead.
fn state_is_alive(path: &str) -> bool {
    match SysRoot::live().read_optional(path) {
        Ok(Some(stat)) => {
            // The state follows the command name, which is in parentheses.
            let state = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.trim().chars().next());
            !matches!(state, Some('Z' | 'X') | None)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_has_this_thread() {
        let pid = std::process::id() as i32;
        let tid = tinct_sys::sched::gettid();
        assert!(threads_of(pid).contains(&tid));
        assert!(alive(pid));
        assert!(!thread_name(pid, tid).is_empty());
        assert!(threads_of(-1).is_empty());
        assert!(!alive(i32::MAX));
        assert!(thread_alive(pid, tid));
    }

    #[test]
    fn the_tree_holds_children_and_grandchildren() {
        let mut child = std::process::Command::new("sh")
            .args(["-c", "sleep 30 & wait"])
            .spawn()
            .unwrap();
        let shell = child.id() as i32;
        // The shell starts its sleep at once; 30 s is a hang guard.
        let started = std::time::Instant::now();
        let tree = loop {
            let tree = process_tree(shell);
            if tree.len() >= 2 || started.elapsed().as_secs() > 30 {
                break tree;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        };
        let whole = process_tree(std::process::id() as i32);
        for pid in tree.iter().rev() {
            let _ = rustix::process::kill_process(
                rustix::process::Pid::from_raw(*pid).unwrap(),
                rustix::process::Signal::KILL,
            );
        }
        let _ = child.wait();
        assert_eq!(tree.len(), 2, "the shell and its sleep: {tree:?}");
        assert_eq!(tree[0], shell);
        assert!(
            tree.iter().all(|p| whole.contains(p)),
            "{whole:?} holds {tree:?}"
        );
        assert_eq!(whole[0], std::process::id() as i32);
    }
}
