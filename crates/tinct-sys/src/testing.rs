//! Helpers for tests: privileged tests that must not silently skip in CI,
//! one test at a time where runs would disturb each other, special files,
//! the colour bits tests of the colouring mechanism give, and the fixture
//! trees of real machines.

/// tinct-sys' fixture tree `name`: `tests/fixtures/<name>` of this crate's
/// source, a copied or generated `/sys` and `/proc` of a real machine
/// (`kvm-epyc`, `intel-2node`, `pmu-intel-icx`, `machines/<name>`, ...),
/// shared by the tests of every crate that reads a machine.
pub fn fixture_path(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// [`fixture_path`] as the root readers take.
pub fn fixture_tree(name: &str) -> crate::SysRoot {
    crate::SysRoot::at(fixture_path(name))
}

/// Colour bits for tests of the colouring *mechanism* (pools, the shim,
/// coloured runs, the isolation proof): 12-20, 512 colours, given
/// explicitly so that such a test runs alike on every machine whose frame
/// numbers are readable, whatever its last-level cache — one whose colour
/// bits cannot be derived included. Tests of a claim about the machine
/// (does colouring partition its cache) follow the colour probe instead.
pub const MECHANISM_COLOR_BITS: std::ops::RangeInclusive<u32> = 12..=20;

/// [`MECHANISM_COLOR_BITS`] as `--color-bits` and `TINCT_COLOR_BITS` take them.
pub const MECHANISM_COLOR_BITS_TEXT: &str = "12-20";

/// [`MECHANISM_COLOR_BITS`] as a list.
pub fn mechanism_color_bits() -> Vec<u32> {
    MECHANISM_COLOR_BITS.collect()
}

/// The environment variable that turns a would-be skip into a failure (CI sets it).
pub const REQUIRE_PRIVILEGED_VAR: &str = "TINCT_REQUIRE_PRIVILEGED";

/// Returns true if the process is root; otherwise prints a skip note naming
/// `what` and returns false — unless `TINCT_REQUIRE_PRIVILEGED=1`, in which
/// case it panics so the test fails instead of silently skipping.
///
/// ```no_run
/// if !tinct_sys::testing::privileged_or_skip("reading PFNs") {
///     return;
/// }
/// ```
pub fn privileged_or_skip(what: &str) -> bool {
    decide(
        rustix::process::geteuid().is_root(),
        privileges_required(),
        what,
    )
}

/// True when [`REQUIRE_PRIVILEGED_VAR`] is `1`: a test (or bench) that
/// lacks a privilege must fail instead of skipping.
pub fn privileges_required() -> bool {
    std::env::var(REQUIRE_PRIVILEGED_VAR).is_ok_and(|v| v == "1")
}

/// Like [`privileged_or_skip`], but also runs when the process is not root
/// and has `capability` in its effective set (e.g. a binary given
/// `cap_sys_nice` with `setcap`).
pub fn capable_or_skip(what: &str, capability: crate::privilege::Capability) -> bool {
    let capable = crate::privilege::Privileges::read(&crate::SysRoot::live())
        .is_ok_and(|p| p.is_root() || p.has(capability));
    decide(capable, privileges_required(), what)
}

/// One test at a time in this test process: for tests whose runs take the
/// CPUs under SCHED_FIFO, pin threads, time memory or watch a global
/// record, which would disturb each other (cargo runs the test binaries
/// themselves one after another). The guard of a test that panicked still
/// serves the next.
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// For a test that needs root for `what`: its [`serial`] guard, or `None`
/// when it skips ([`privileged_or_skip`]: a failure under
/// `TINCT_REQUIRE_PRIVILEGED=1`).
///
/// ```no_run
/// let Some(_serial) = tinct_sys::testing::privileged_serial("SCHED_FIFO threads") else {
///     return;
/// };
/// ```
pub fn privileged_serial(what: &str) -> Option<std::sync::MutexGuard<'static, ()>> {
    privileged_or_skip(what).then(serial)
}

/// Creates a FIFO at `path` (mode 0600), for tests of readers that must
/// refuse one instead of blocking on it.
pub fn make_fifo(path: &std::path::Path) -> std::io::Result<()> {
    rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .map_err(std::io::Error::from)
}

fn decide(privileged: bool, required: bool, what: &str) -> bool {
    if privileged {
        return true;
    }
    if required {
        panic!(
            "{what} needs root, and {REQUIRE_PRIVILEGED_VAR}=1 forbids skipping: \
             run the tests as root (CI does) or unset {REQUIRE_PRIVILEGED_VAR}"
        );
    }
    eprintln!("skipped: {what} needs root (set {REQUIRE_PRIVILEGED_VAR}=1 to make this a failure)");
    false
}

/// Writes under `dir` the sysfs and procfs files of a machine with one
/// last-level cache of `size_kib` KiB and `ways` ways shared by CPUs 0-1,
/// 64-byte lines, and `/proc/cpuinfo` saying `cpuinfo` (e.g. an Intel
/// family 6 model 26 with `flags: fpu`: an unsliced cache): a tree for
/// `TINCT_TOPOLOGY_ROOT` or `SysRoot::at`, so that a test of the colour
/// rule or the isolation proof gives its own cache.
pub fn write_llc_tree(
    dir: &std::path::Path,
    size_kib: u64,
    ways: u32,
    cpuinfo: &str,
) -> std::io::Result<()> {
    let cpu = dir.join("sys/devices/system/cpu");
    for id in 0..2 {
        let index = cpu.join(format!("cpu{id}/cache/index3"));
        std::fs::create_dir_all(&index)?;
        for (file, text) in [
            ("level", "3".to_string()),
            ("type", "Unified".into()),
            ("size", format!("{size_kib}K")),
            ("ways_of_associativity", ways.to_string()),
            ("coherency_line_size", "64".into()),
            ("shared_cpu_list", "0-1".into()),
        ] {
            std::fs::write(index.join(file), text)?;
        }
        let topology = cpu.join(format!("cpu{id}/topology"));
        std::fs::create_dir_all(&topology)?;
        std::fs::write(topology.join("core_id"), id.to_string())?;
        std::fs::write(topology.join("physical_package_id"), "0")?;
        std::fs::write(topology.join("thread_siblings_list"), id.to_string())?;
    }
    std::fs::write(cpu.join("online"), "0-1")?;
    std::fs::create_dir_all(dir.join("proc"))?;
    std::fs::write(dir.join("proc/cpuinfo"), cpuinfo)
}

/// `/proc/cpuinfo` of an Intel Nehalem (family 6, model 26), whose LLC is
/// not sliced: the way-size rule, for [`write_llc_tree`].
pub const UNSLICED_CPUINFO: &str =
    "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 26\nflags\t\t: fpu\n";

/// Waits for `child` to end, at most `limit` (a hang guard, not a timing
/// assertion): past it the child is killed and the test fails, saying
/// `what` it was waiting for.
pub fn wait_within(
    child: &mut std::process::Child,
    limit: std::time::Duration,
    what: &str,
) -> std::process::ExitStatus {
    let started = std::time::Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait for the child") {
            return status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: still running after {limit:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// Waits (at most `limit`) until process `pid` has taken the SIGINT sent
/// to it: no longer pending in `/proc/PID/status` (`ShdPnd`, where a
/// signal sent to a process waits for one of its threads), or the process
/// is gone. A second SIGINT sent before the first is taken merges into it
/// (standard signals do not queue), so a test of a second Ctrl-C waits for
/// the first with this. Past `limit` the test fails.
pub fn wait_until_sigint_taken(pid: u32, limit: std::time::Duration) {
    let started = std::time::Instant::now();
    let status = format!("/proc/{pid}/status");
    while let Ok(text) = std::fs::read_to_string(&status) {
        let pending = text
            .lines()
            .find_map(|line| line.strip_prefix("ShdPnd:"))
            .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
            .expect("ShdPnd in /proc/PID/status");
        // Signal n is bit n - 1.
        if pending & (1 << (libc::SIGINT - 1)) == 0 {
            return;
        }
        assert!(
            started.elapsed() < limit,
            "process {pid} has not taken its SIGINT after {limit:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sigint_is_waited_for_while_pending_and_seen_once_taken() {
        use std::os::unix::process::ExitStatusExt;
        use std::time::{Duration, Instant};
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id();
        let send = |signal| {
            // SAFETY: kill(2) on our own child, not yet waited for.
            assert_eq!(unsafe { libc::kill(pid as i32, signal) }, 0);
        };
        // Stopped, the child cannot take a SIGINT: it stays pending.
        send(libc::SIGSTOP);
        let started = Instant::now();
        while !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap()
            .contains(") T ")
        {
            assert!(started.elapsed() < Duration::from_secs(10), "never stopped");
            std::thread::sleep(Duration::from_millis(1));
        }
        send(libc::SIGINT);
        let still_pending = std::panic::catch_unwind(|| {
            wait_until_sigint_taken(pid, Duration::from_millis(200));
        });
        assert!(still_pending.is_err(), "a stopped process took a SIGINT");
        // Continued, it takes the SIGINT (and dies of it).
        send(libc::SIGCONT);
        wait_until_sigint_taken(pid, Duration::from_secs(10));
        assert_eq!(child.wait().unwrap().signal(), Some(libc::SIGINT));
    }

    #[test]
    fn privileged_runs_and_unprivileged_skips() {
        assert!(decide(true, true, "x"));
        assert!(decide(true, false, "x"));
        assert!(!decide(false, false, "x"));
    }

    #[test]
    #[should_panic(expected = "forbids skipping")]
    fn unprivileged_with_the_requirement_fails() {
        decide(false, true, "reading PFNs");
    }
}
