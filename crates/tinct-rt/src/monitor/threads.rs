//! The threads of a process, from `/proc/PID/task`.

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

/// True while process `pid` exists and is not a zombie.
pub fn alive(pid: i32) -> bool {
    match SysRoot::live().read_optional(&format!("/proc/{pid}/stat")) {
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
    }
}
