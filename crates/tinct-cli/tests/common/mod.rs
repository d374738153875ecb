//! Helpers shared by the CLI's integration tests: the binary, the
//! repository's examples and fixtures, exit statuses and JSON outputs, the
//! shim, one run at a time, and the bench results read back.
#![allow(dead_code)]

use assert_cmd::Command;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;
use tinct_bench::harness::{Bench, Durations, as_written};

/// A file of the repository's `examples/`.
pub(crate) fn example(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
}

/// A file of this crate's `tests/fixtures/`.
pub(crate) fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// The `tinct` binary under test, with the colour bits of the colouring
/// mechanism's tests (`tinct_sys::testing::MECHANISM_COLOR_BITS`) in a
/// machine file of their own ([`mechanism_machine_file`]) and a cache of
/// its own ([`mechanism_env`]), so that a test runs alike on every machine,
/// one whose colour bits cannot be derived included, while a task set's
/// `color_bits`, `TINCT_COLOR_BITS` and `--color-bits` still come first.
/// [`tinct_on_unknown_machine`] is the other case.
pub(crate) fn tinct() -> Command {
    let mut command = Command::cargo_bin("tinct").expect("binary built");
    command.envs(mechanism_env());
    command
}

/// [`tinct`] as a `std::process::Command` (for tests that spawn, signal
/// or copy the binary).
pub(crate) fn tinct_process() -> std::process::Command {
    let mut command = std::process::Command::new(assert_cmd::cargo::cargo_bin("tinct"));
    command.envs(mechanism_env());
    command
}

/// The environment [`tinct`] sets: the machine file of the mechanism's
/// colour bits, no `TINCT_COLOR_BITS` from the caller's environment, and
/// the cache of [`unsliced_machine`] for the colour rule and the isolation
/// proof's model, so that a proof comes out alike on every host.
pub(crate) fn mechanism_env() -> [(&'static str, String); 3] {
    [
        ("TINCT_COLOR_BITS", String::new()),
        (
            "TINCT_MACHINE_FILE",
            mechanism_machine_file().display().to_string(),
        ),
        (
            "TINCT_TOPOLOGY_ROOT",
            unsliced_machine().display().to_string(),
        ),
    ]
}

/// A machine file holding the mechanism's colour bits, written once per
/// test binary (atomically, so binaries running at once agree).
pub(crate) fn mechanism_machine_file() -> &'static Path {
    static FILE: OnceLock<PathBuf> = OnceLock::new();
    FILE.get_or_init(|| {
        let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("tinct-tests-machine.toml");
        tinct_sys::machine_file::save_colors(
            &path,
            tinct_sys::testing::MECHANISM_COLOR_BITS_TEXT,
            "the colouring mechanism's tests",
        )
        .expect("write the tests' machine file");
        path
    })
}

/// A machine file that does not exist: none is read.
pub(crate) const NO_MACHINE_FILE: &str = "/nonexistent/tinct-tests/machine.toml";

/// tinct-sys's fixture of a KVM guest of an Intel Xeon (Emerald Rapids,
/// L3 300 MiB 20-way: a 15 MiB way, so the colour bits cannot be derived).
pub(crate) fn unknown_colours_machine() -> PathBuf {
    tinct_sys::testing::fixture_path("machines/kvm-xeon-emr")
}

/// A machine whose colour rule derives bits 12-20 on any host: an
/// unsliced (Nehalem) 32 MiB 16-way L3, written once per test binary
/// (`tinct_sys::testing::write_llc_tree`), for `TINCT_TOPOLOGY_ROOT` in
/// tests of the isolation proof, whose model follows the machine's rule.
pub(crate) fn unsliced_machine() -> &'static Path {
    static TREE: OnceLock<PathBuf> = OnceLock::new();
    TREE.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("unsliced-32mib-{}", std::process::id()));
        tinct_sys::testing::write_llc_tree(
            &dir,
            32 << 10,
            16,
            tinct_sys::testing::UNSLICED_CPUINFO,
        )
        .expect("write the unsliced machine's tree");
        dir
    })
}

/// The `tinct` binary as on a machine whose colour bits cannot be derived
/// (its cache topology read from [`unknown_colours_machine`]), with no
/// bits given and no machine file: what a user of such a machine gets.
pub(crate) fn tinct_on_unknown_machine() -> Command {
    let mut command = Command::cargo_bin("tinct").expect("binary built");
    command
        .env_remove("TINCT_COLOR_BITS")
        .env("TINCT_TOPOLOGY_ROOT", unknown_colours_machine())
        .env("TINCT_MACHINE_FILE", NO_MACHINE_FILE);
    command
}

/// Runs a command and checks its exit status; on another status the
/// failure shows the command, its status, stdout and stderr (assert_cmd's
/// report).
pub(crate) trait Exits {
    /// The output of a run that must exit with `code`.
    fn exits(&mut self, code: i32) -> Output;
}

impl Exits for Command {
    fn exits(&mut self, code: i32) -> Output {
        self.assert().code(code).get_output().clone()
    }
}

/// stdout as text.
pub(crate) fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// stderr as text.
pub(crate) fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `tinct ARGS`, which must be refused as bad input (exit status 2; the
/// failure shows the arguments, stdout and stderr): its stderr.
pub(crate) fn bad_input<I, S>(args: I) -> String
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let args: Vec<std::ffi::OsString> = args.into_iter().map(|a| a.as_ref().into()).collect();
    let output = tinct().args(&args).output().unwrap();
    assert_eq!(
        output.status.code(),
        Some(2),
        "tinct {args:?}\nstdout:\n{}\nstderr:\n{}",
        stdout(&output),
        stderr(&output)
    );
    stderr(&output)
}

/// Checks that a command exited with `code` and said `expected` on stderr;
/// the failure shows the status, stdout and stderr. Returns stderr.
pub(crate) fn assert_exits_saying(output: &Output, code: i32, expected: &str) -> String {
    let (out, err) = (stdout(output), stderr(output));
    assert!(
        output.status.code() == Some(code) && err.contains(expected),
        "expected exit status {code} and {expected:?} on stderr, found {}\nstdout:\n{out}\nstderr:\n{err}",
        output.status
    );
    err
}

/// stdout parsed as JSON (the failure shows the text).
pub(crate) fn json_stdout(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", stdout(out)))
}

/// A JSON file, parsed (the failure names the file).
pub(crate) fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `tinct analyze --json` of `file` with `extra` arguments (no calibration
/// from the environment), which must exit 0.
pub(crate) fn analyze_json(file: &Path, extra: &[&str]) -> Value {
    let out = tinct()
        .args(["analyze", "--json"])
        .args(extra)
        .arg(file)
        .env_remove("TINCT_CALIBRATION")
        .exits(0);
    json_stdout(&out)
}

/// This machine has no CPU PMU (a VM without counters): hardware events
/// cannot count (they answer ENOENT).
pub(crate) fn no_cpu_pmu() -> bool {
    tinct_sys::perf::EventSources::read(&tinct_sys::SysRoot::live())
        .unwrap()
        .cpu_pmus
        .is_empty()
}

/// A task's job counts in summary.json, `[released, completed, missed,
/// aborted]`, checked to balance: released = completed + missed + aborted.
pub(crate) fn balanced_job_counts(task: &Value) -> [u64; 4] {
    let jobs = &task["jobs"];
    let n = |k: &str| jobs[k].as_u64().unwrap();
    let counts = [n("released"), n("completed"), n("missed"), n("aborted")];
    assert_eq!(
        counts[0],
        counts[1] + counts[2] + counts[3],
        "{}: {jobs}",
        task["name"]
    );
    counts
}

/// Writes `text` to `dir/name` and returns the path.
pub(crate) fn write(dir: &Path, name: &str, text: impl AsRef<[u8]>) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    path
}

/// A finished `tinct run`: its output, and its run directory `run` in a
/// temporary directory that lives as long as this.
pub(crate) struct RunOutcome {
    dir: tempfile::TempDir,
    /// The command's output.
    pub output: Output,
}

impl RunOutcome {
    /// The run directory.
    pub(crate) fn run_dir(&self) -> PathBuf {
        self.dir.path().join("run")
    }

    /// The temporary directory holding the plan and the run directory.
    pub(crate) fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// stdout as text.
    pub(crate) fn stdout(&self) -> String {
        stdout(&self.output)
    }

    /// stderr as text.
    pub(crate) fn stderr(&self) -> String {
        stderr(&self.output)
    }

    /// The run directory's summary.json.
    pub(crate) fn summary(&self) -> Value {
        read_json(&self.run_dir().join("summary.json"))
    }

    /// Checks that the run completed ([`assert_completed`]).
    pub(crate) fn completes(&self) -> &RunOutcome {
        assert_completed(&self.output);
        self
    }

    /// Checks the exit status; the failure shows stdout and stderr.
    pub(crate) fn exits(&self, code: i32) -> &RunOutcome {
        assert_eq!(
            self.output.status.code(),
            Some(code),
            "stdout:\n{}\nstderr:\n{}",
            self.stdout(),
            self.stderr()
        );
        self
    }
}

/// Checks that a `tinct run` completed: exit 0, or 3 when a job exceeded
/// its bound with no cause found (a host's noise can do that to any real
/// run; the attribution itself is tested on its own).
pub(crate) fn assert_completed(output: &Output) {
    assert!(
        matches!(output.status.code(), Some(0 | 3)),
        "exit status {:?}\nstdout:\n{}\nstderr:\n{}",
        output.status.code(),
        stdout(output),
        stderr(output)
    );
}

/// `tinct ARGS --watchdog-factor 100 --out OUT` for ARGS of a `tinct run`,
/// which must complete ([`assert_completed`]): its stdout.
pub(crate) fn run_completes(args: &[&str], out: &Path) -> String {
    let output = tinct()
        .args(args)
        .args(["--watchdog-factor", TEST_WATCHDOG_FACTOR, "--out"])
        .arg(out)
        .output()
        .unwrap();
    assert_completed(&output);
    stdout(&output)
}

/// `tinct run FILE ARGS --out DIR/run` in a new temporary directory DIR.
pub(crate) fn run_file(file: &Path, args: &[&str]) -> RunOutcome {
    run_in(tempfile::tempdir().unwrap(), file, args)
}

/// `tinct run` of the task set `text`, written to `plan.toml` in a new
/// temporary directory, with `args` (see [`run_file`]).
pub(crate) fn run_plan_text(text: &str, args: &[&str]) -> RunOutcome {
    let dir = tempfile::tempdir().unwrap();
    let plan = write(dir.path(), "plan.toml", text);
    run_in(dir, &plan, args)
}

/// The watchdog factor of test runs unless a test gives its own: a job is
/// stopped only 100 deadlines late, so that a host stall of tens of
/// milliseconds does not end a run of millisecond deadlines (exit 1).
pub(crate) const TEST_WATCHDOG_FACTOR: &str = "100";

fn run_in(dir: tempfile::TempDir, file: &Path, args: &[&str]) -> RunOutcome {
    let watchdog: &[&str] = if args.contains(&"--watchdog-factor") {
        &[]
    } else {
        &["--watchdog-factor", TEST_WATCHDOG_FACTOR]
    };
    let output = tinct()
        .arg("run")
        .arg(file)
        .args(args)
        .args(watchdog)
        .arg("--out")
        .arg(dir.path().join("run"))
        .output()
        .unwrap();
    RunOutcome { dir, output }
}

/// A directory user nobody can use, holding a copy of the `tinct` binary
/// and of the task set `plan` (as `light.toml`): for runs without
/// privileges (`runuser -u nobody`). Returns the directory, the binary and
/// the plan.
pub(crate) fn nobody_dir(plan: &Path) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .unwrap();
    let binary = dir.path().join("tinct");
    std::fs::copy(assert_cmd::cargo::cargo_bin("tinct"), &binary).unwrap();
    let copy = dir.path().join("light.toml");
    std::fs::copy(plan, &copy).unwrap();
    (dir, binary, copy)
}

/// `runuser -u nobody -- BINARY run PLAN ARGS --out OUT` (a [`nobody_dir`]'s
/// binary and plan): `tinct run` without privileges.
pub(crate) fn run_as_nobody(binary: &Path, plan: &Path, args: &[&str], out: &Path) -> Output {
    std::process::Command::new("runuser")
        .envs(mechanism_env())
        // In the environment rather than a file user nobody may not reach.
        .env(
            "TINCT_COLOR_BITS",
            tinct_sys::testing::MECHANISM_COLOR_BITS_TEXT,
        )
        .args(["-u", "nobody", "--"])
        .arg(binary)
        .arg("run")
        .arg(plan)
        .args(args)
        .arg("--out")
        .arg(out)
        .output()
        .expect("runuser (util-linux) runs a command as another user")
}

/// libtinct_preload.so next to the `tinct` binary of this profile, built
/// once per test binary (`cargo test -p tinct-cli` alone does not build the
/// cdylib).
pub(crate) fn shim() -> PathBuf {
    static SHIM: OnceLock<PathBuf> = OnceLock::new();
    SHIM.get_or_init(|| {
        let tinct = assert_cmd::cargo::cargo_bin("tinct");
        let dir = tinct.parent().unwrap().to_path_buf();
        let mut cargo = std::process::Command::new(env!("CARGO"));
        cargo.args(["build", "--quiet", "-p", "tinct-preload"]);
        if dir.file_name().is_some_and(|n| n == "release") {
            cargo.arg("--release");
        }
        assert!(
            cargo.status().unwrap().success(),
            "cargo build -p tinct-preload failed"
        );
        let shim = dir.join("libtinct_preload.so");
        assert!(shim.is_file(), "{} missing", shim.display());
        shim
    })
    .clone()
}

/// The element of the JSON array `list` whose `key` is `value` (a task of
/// summary.json by its name, a doctor finding by its subject); the failure
/// shows the array.
pub(crate) fn find_by<'a>(list: &'a Value, key: &str, value: &str) -> &'a Value {
    list.as_array()
        .unwrap_or_else(|| panic!("not an array: {list}"))
        .iter()
        .find(|item| item[key] == value)
        .unwrap_or_else(|| panic!("no {key} {value:?} in {list}"))
}

/// A JSON number as an unsigned integer (the failure shows the value).
pub(crate) fn u(value: &Value) -> u64 {
    value
        .as_u64()
        .unwrap_or_else(|| panic!("not an unsigned integer: {value}"))
}

/// A JSON number as a float (the failure shows the value).
pub(crate) fn f(value: &Value) -> f64 {
    value
        .as_f64()
        .unwrap_or_else(|| panic!("not a number: {value}"))
}

/// A bench's JSON read back into its result type `T` (serde refuses a
/// missing or mistyped field) and written again unchanged (nothing dropped
/// or renamed). `distributions` lists the result's distributions, which
/// must be there (non-empty) and ordered (count ≥ 1, min ≤ median ≤ p99 ≤
/// max); every file the result lists in `files`, where it has that field,
/// exists.
pub(crate) fn check_bench_json<T: DeserializeOwned + Bench>(
    json: &Value,
    distributions: fn(&T) -> Vec<&Durations>,
) -> T {
    let result: T = serde_json::from_value(json.clone())
        .unwrap_or_else(|e| panic!("the JSON does not read back into its result type: {e}"));
    assert_eq!(
        &serde_json::to_value(as_written(&result)).unwrap(),
        json,
        "written again, the result differs from the file"
    );
    let all = distributions(&result);
    assert!(!all.is_empty(), "no distribution at all");
    for (i, d) in all.into_iter().enumerate() {
        assert!(d.is_ordered(), "distribution {i} is not ordered: {d:?}");
    }
    if let Some(files) = json.get("files") {
        for file in files.as_array().unwrap() {
            let path = file.as_str().unwrap();
            assert!(
                Path::new(path).is_file(),
                "listed file {path} does not exist"
            );
        }
    }
    result
}
