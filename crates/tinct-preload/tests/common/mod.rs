//! Helpers of the shim's integration tests: build and find the shim, run a
//! program under it, and check every heap page it was handed through
//! `/proc/<pid>/pagemap` while the program is still alive (stopped by the
//! shim at exit, see `TINCT_PAGE_REPORT`).
//!
//! The check is independent of the shim: the colors come from tinct-sys'
//! cache geometry (not from tinct-mem's mapping), and the frames are read
//! by this process, not reported by the shim. The shim's own reading (its
//! summary and the `NOW` frames of its page report, taken at one moment)
//! is checked against them: it must agree, except for pages the kernel
//! migrated after it.

#![allow(dead_code)]

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use tinct_sys::pagemap::Pagemap;
use tinct_sys::topology::PageColors;

/// `libtinct_preload.so` of this test's profile, built if needed: the
/// integration tests of a cdylib crate cannot link it, and `cargo test -p
/// tinct-cli` alone would not build it.
pub(crate) fn shim() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let exe = std::env::current_exe().unwrap();
            let profile_dir = exe.parent().unwrap().parent().unwrap().to_path_buf();
            let release = profile_dir.file_name().is_some_and(|n| n == "release");
            let path = profile_dir.join("libtinct_preload.so");
            if is_newer_than_sources(&path) {
                return path;
            }
            let mut cargo = Command::new(env!("CARGO"));
            cargo.args(["build", "--quiet", "-p", "tinct-preload"]);
            if release {
                cargo.arg("--release");
            }
            let status = cargo.status().expect("run cargo build -p tinct-preload");
            assert!(status.success(), "cargo build -p tinct-preload failed");
            assert!(path.is_file(), "{} missing after building", path.display());
            path
        })
        .clone()
}

/// True if `library` exists and is newer than every source file of the
/// crates it is built from (then `cargo build` would be a no-op, and
/// skipping it avoids waiting for the build lock).
fn is_newer_than_sources(library: &Path) -> bool {
    let Ok(built) = std::fs::metadata(library).and_then(|m| m.modified()) else {
        return false;
    };
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut pending: Vec<PathBuf> = ["tinct-preload", "tinct-mem", "tinct-sys", "tinct-core"]
        .iter()
        .flat_map(|c| {
            [
                crates.join(c).join("src"),
                crates.join(c).join("Cargo.toml"),
            ]
        })
        .collect();
    while let Some(path) = pending.pop() {
        let Ok(meta) = std::fs::metadata(&path) else {
            continue;
        };
        if meta.is_dir() {
            if let Ok(entries) = std::fs::read_dir(&path) {
                pending.extend(entries.flatten().map(|e| e.path()));
            }
        } else if meta.modified().is_ok_and(|m| m > built) {
            return false;
        }
    }
    true
}

/// The page colors these tests give the shim (`TINCT_COLOR_BITS`, see
/// [`COLOR_BITS`]), computed by tinct-base's geometry from the bits alone: the
/// mechanism is tested alike on every machine, one whose LLC colour bits
/// cannot be derived included.
pub(crate) fn llc_colors() -> PageColors {
    PageColors::of_bits(
        &tinct_sys::testing::mechanism_color_bits(),
        rustix_page_size(),
    )
    .expect("the mechanism's colour bits start at the page offset")
}

/// `TINCT_COLOR_BITS` of every program these tests run under the shim.
pub(crate) const COLOR_BITS: (&str, &str) = (
    "TINCT_COLOR_BITS",
    tinct_sys::testing::MECHANISM_COLOR_BITS_TEXT,
);

fn rustix_page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    (unsafe { libc::sysconf(libc::_SC_PAGESIZE) }) as u64
}

/// Half of the LLC colors: the even ones (`0-510:2` here). Interleaved
/// rather than the lower half, because the free memory of a running system
/// can be skewed towards some high color bits for a while, and kim2013's
/// round robin can hand out only as many pages per color as the scarcest
/// requested color has.
pub(crate) fn half_of_the_colors() -> (String, Vec<u64>) {
    let colors = llc_colors().colors;
    (
        format!("0-{}:2", colors - 2),
        (0..colors).step_by(2).collect(),
    )
}

/// A program run under the shim, with its page check.
#[derive(Debug)]
pub(crate) struct Checked {
    /// The program's stdout.
    pub stdout: Vec<u8>,
    /// The program's stderr (with the shim's summary).
    pub stderr: String,
    /// Heap pages translated and found in the requested colors.
    pub pages_in_colors: usize,
    /// Area pages not present at exit.
    pub pages_absent: usize,
    /// Pages of the program's own mappings (`mapped_page` lines) translated and
    /// found in the requested colors.
    pub mapped_in_colors: usize,
    /// Area pages found outside the colors that still have the frame
    /// they entered the area with: placed wrongly by the shim. (address,
    /// frame, color).
    pub outside: Vec<(usize, u64, u64)>,
    /// Area pages whose frame changed after they entered the area in a
    /// requested colour (copied on write after fork, or migrated by the
    /// kernel), wherever they are now: (address, frame now, its color).
    pub moved: Vec<(usize, u64, u64)>,
    /// Pages the kernel migrated, system-wide, while the program ran
    /// (`pgmigrate_success` of /proc/vmstat).
    pub kernel_migrations: u64,
    /// Heap pages whose frame in the shim's exit reading (the report's
    /// `NOW`, which its summary is made of) differs from their entry frame.
    pub moved_in_report: usize,
    /// Heap pages whose frame now differs from the shim's exit reading:
    /// moved after the summary was made. (address, frame in the report,
    /// frame now).
    pub moved_since_report: Vec<(usize, Option<u64>, Option<u64>)>,
    /// Pages the kernel migrated, system-wide, between the shim's exit
    /// reading and this process's (`kernel_migrations` of the report).
    pub migrations_since_report: u64,
    /// The pid of the program (its summary lines say `tinct-preload[pid]`).
    pub pid: u32,
    /// The report's counters (`fallbacks`, `failures`, ...).
    pub counters: Vec<(String, u64)>,
    /// Physical frame number of every translated heap page except the
    /// moved ones.
    pub frames: Vec<u64>,
}

/// Pages the kernel has migrated since boot (`pgmigrate_success`).
pub(crate) fn kernel_migrations() -> u64 {
    std::fs::read_to_string("/proc/vmstat")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("pgmigrate_success "))
        .map_or(0, |v| v.trim().parse().unwrap())
}

impl Checked {
    /// A counter from the shim's report.
    pub(crate) fn counter(&self, name: &str) -> u64 {
        self.counters
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| *v)
            .unwrap_or_else(|| panic!("no counter {name} in the report"))
    }
}

/// Runs `command` under the shim with `colors` (strict, stats, page
/// report), waits until it has written its page report and stopped,
/// translates every page it was handed through /proc/<pid>/pagemap,
/// resumes it and collects its output. Panics if a page lies outside
/// `colors` or the program fails.
pub(crate) fn run_under_shim(
    command: Command,
    stdin: Option<&Path>,
    colors: &(String, Vec<u64>),
    pool: &str,
) -> Checked {
    let checked = run_with_page_report(command, stdin, colors, pool, &[]);
    checked.assert_in_colors("");
    checked
}

impl Checked {
    /// The program's own summary lines (a child's would name its pid).
    fn summary_lines(&self) -> impl Iterator<Item = &str> {
        let prefix = format!("tinct-preload[{}]: ", self.pid);
        self.stderr
            .lines()
            .filter_map(move |line| line.strip_prefix(&prefix))
    }

    /// The area pages the summary says have another frame than when they
    /// entered the area (0 when it says nothing of them).
    pub(crate) fn summary_moved(&self) -> usize {
        self.summary_lines()
            .find(|line| line.contains("have another frame than when they entered the area"))
            .map_or(0, |line| {
                let count = line.split(' ').next().unwrap();
                count
                    .parse()
                    .unwrap_or_else(|_| panic!("a page count in {line:?}"))
            })
    }

    /// Every heap page lies in the requested colours, except pages the
    /// kernel migrated while the program ran (never more than it migrated
    /// system-wide in that time), and the shim's own summary agrees: with
    /// the frames its page report lists (taken at the same moment) exactly,
    /// and with pagemap now except for pages the kernel migrated since.
    pub(crate) fn assert_in_colors(&self, what: &str) {
        assert!(
            self.outside.is_empty(),
            "{what}: {} heap pages outside the colors with the frame they entered with \
             (address, frame, color): {:?}",
            self.outside.len(),
            &self.outside[..self.outside.len().min(10)]
        );
        assert!(
            self.moved.len() as u64 <= self.kernel_migrations,
            "{what}: {} heap pages left their colours, but the kernel migrated only {} pages \
             meanwhile: {:?}",
            self.moved.len(),
            self.kernel_migrations,
            &self.moved[..self.moved.len().min(10)]
        );
        assert!(
            self.moved_since_report.len() as u64 <= self.migrations_since_report,
            "{what}: {} heap pages are not on the frame the shim's page report (and summary) \
             says, but the kernel migrated only {} pages since it was written (address, frame \
             in the report, frame now): {:?}",
            self.moved_since_report.len(),
            self.migrations_since_report,
            &self.moved_since_report[..self.moved_since_report.len().min(10)]
        );
        assert_eq!(
            self.summary_moved(),
            self.moved_in_report,
            "{what}: the shim's own summary disagrees with its page report on the pages that \
             have another frame than when they entered the area (the test finds {} now):\n{}",
            self.moved.len(),
            self.stderr
        );
        if self.moved_in_report == 0 {
            assert!(
                self.summary_lines()
                    .any(|line| line == "pages in use outside the requested colors: none"),
                "{what}: no page moved, yet the shim's summary finds pages outside the \
                 colours:\n{}",
                self.stderr
            );
        }
    }
}

/// [`run_under_shim`] with `env` added, returning the pages found outside
/// the colors instead of failing on them (the program must still succeed).
pub(crate) fn run_with_page_report(
    mut command: Command,
    stdin: Option<&Path>,
    colors: &(String, Vec<u64>),
    pool: &str,
    env: &[(&str, &str)],
) -> Checked {
    let scratch = tempfile::tempdir().unwrap();
    let report = scratch.path().join("pages");
    let stdout_path = scratch.path().join("stdout");
    let stderr_path = scratch.path().join("stderr");
    command
        .env("LD_PRELOAD", shim())
        .env(COLOR_BITS.0, COLOR_BITS.1)
        .env("TINCT_COLORS", &colors.0)
        .env("TINCT_POOL", pool)
        .env("TINCT_STRICT", "1")
        .env("TINCT_STATS", "1")
        .env("TINCT_PAGE_REPORT", &report)
        .env("PYTHONMALLOC", "malloc")
        .envs(env.iter().copied())
        .stdout(std::fs::File::create(&stdout_path).unwrap())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .stdin(match stdin {
            Some(path) => Stdio::from(std::fs::File::open(path).unwrap()),
            None => Stdio::null(),
        });
    let migrations_before = kernel_migrations();
    let mut child = command.spawn().expect("spawn the program");
    let pid = child.id();
    let report_file = scratch.path().join(format!("pages.{pid}"));
    let started = Instant::now();
    loop {
        if report_file.exists() {
            break;
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!(
                "{command:?} ended ({status}) without a page report; stderr:\n{}",
                std::fs::read_to_string(&stderr_path).unwrap_or_default()
            );
        }
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "no page report after 300 s"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let text = std::fs::read_to_string(&report_file).unwrap();
    let mut checked = check_report(pid, &text, &colors.1);
    // After reading pagemap: every migration before that is counted.
    let migrations_now = kernel_migrations();
    checked.kernel_migrations = migrations_now - migrations_before;
    checked.migrations_since_report = migrations_now - checked.counter("kernel_migrations");
    // SAFETY: `pid` is our own stopped child; SIGCONT resumes it.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGCONT) }, 0);
    let status = child.wait().unwrap();
    let stdout = std::fs::read(&stdout_path).unwrap();
    let stderr = std::fs::read_to_string(&stderr_path).unwrap();
    assert!(
        status.success(),
        "{command:?} failed ({status}); stderr:\n{stderr}"
    );
    Checked {
        stdout,
        stderr,
        ..checked
    }
}

/// Translates every `page 0x...` (and `mapped_page 0x...`) of a report through
/// /proc/<pid>/pagemap.
fn check_report(pid: u32, report: &str, colors: &[u64]) -> Checked {
    let geometry = llc_colors();
    let pagemap = Pagemap::open(&format!("/proc/{pid}/pagemap")).unwrap();
    let mut counters = Vec::new();
    let (mut inside, mut absent, mut mapped_inside) = (0, 0, 0);
    let mut outside = Vec::new();
    let mut moved = Vec::new();
    let mut frames = Vec::new();
    let (mut moved_in_report, mut moved_since_report) = (0, Vec::new());
    let hex = |field: &str| u64::from_str_radix(field.trim_start_matches("0x"), 16).unwrap();
    for line in report.lines() {
        let mut fields = line.split(' ');
        let key = fields.next().unwrap();
        let value = fields.next().unwrap_or_default();
        if key == "page" || key == "mapped_page" {
            let address = hex(value) as usize;
            let entry = pagemap.entries(address, 1).unwrap()[0];
            let mut entered_with = None;
            if key == "page" {
                // `page ADDRESS ENTRY NOW` (NOW `-`: not present).
                let entry_frame = hex(fields.next().expect("the entry frame"));
                let in_report = match fields.next().expect("the frame at exit") {
                    "-" => None,
                    frame => Some(hex(frame)),
                };
                entered_with = Some(entry_frame);
                moved_in_report += usize::from(in_report.is_some_and(|f| f != entry_frame));
                if in_report != entry.frame() {
                    moved_since_report.push((address, in_report, entry.frame()));
                }
            }
            match entry.frame() {
                Some(0) => panic!("PFN 0 at {address:#x}: frame numbers hidden (not root?)"),
                Some(frame) => {
                    let color_of =
                        |frame: u64| geometry.color_of(frame * geometry.page_bytes).unwrap();
                    let color = color_of(frame);
                    let in_colors = colors.contains(&color);
                    if key == "mapped_page" {
                        mapped_inside += usize::from(in_colors);
                        continue;
                    }
                    inside += usize::from(in_colors);
                    match entered_with {
                        // Placed right, moved since: wherever it is now.
                        Some(e) if e != frame && colors.contains(&color_of(e)) => {
                            moved.push((address, frame, color));
                        }
                        _ => {
                            frames.push(frame);
                            if !in_colors {
                                outside.push((address, frame, color));
                            }
                        }
                    }
                }
                None => absent += usize::from(key == "page"),
            }
        } else if let Ok(number) = value.parse::<u64>() {
            counters.push((key.to_string(), number));
        }
    }
    let checked = Checked {
        stdout: Vec::new(),
        stderr: String::new(),
        pages_in_colors: inside,
        pages_absent: absent,
        mapped_in_colors: mapped_inside,
        outside,
        moved,
        kernel_migrations: 0,
        moved_in_report,
        moved_since_report,
        migrations_since_report: 0,
        pid,
        counters,
        frames,
    };
    assert_eq!(checked.counter("uncolored"), 0, "the pool ran uncolored");
    assert_eq!(
        checked.counter("fallbacks"),
        0,
        "uncolored fallbacks happened"
    );
    checked
}

/// Runs `command` without the shim.
pub(crate) fn run_plain(mut command: Command, stdin: Option<&Path>) -> Output {
    command.env_remove("LD_PRELOAD").stdin(match stdin {
        Some(path) => Stdio::from(std::fs::File::open(path).unwrap()),
        None => Stdio::null(),
    });
    let output = command.output().expect("run the program");
    assert!(
        output.status.success(),
        "{command:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// The real Python 3 interpreter (pyenv shims are shell scripts that fork).
pub(crate) fn python() -> PathBuf {
    let output = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("python3 is needed for this test (apt-get install python3)");
    PathBuf::from(String::from_utf8(output.stdout).unwrap().trim())
}

/// Compiles `tests/c/<name>.c` with pthreads into `dir` (`-O1`).
pub(crate) fn compile_c(name: &str, dir: &Path) -> PathBuf {
    compile_c_at(name, dir, "-O1")
}

/// Compiles `tests/c/<name>.c` with pthreads into `dir` at the optimization
/// level `optimization` (`-O2`, ...), every warning an error.
pub(crate) fn compile_c_at(name: &str, dir: &Path, optimization: &str) -> PathBuf {
    compile_c_with(name, dir, optimization, &[])
}

/// [`compile_c_at`] with `extra` arguments for the compiler (`-z
/// execstack`, ...).
pub(crate) fn compile_c_with(
    name: &str,
    dir: &Path,
    optimization: &str,
    extra: &[&str],
) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/c/{name}.c"));
    let binary = dir.join(name);
    let mut cc = Command::new("cc");
    cc.args([
        "-std=gnu11",
        optimization,
        "-Wall",
        "-Wextra",
        "-Werror",
        "-pthread",
    ])
    .args(extra)
    .arg("-o")
    .arg(&binary)
    .arg(&source);
    let output = run_limited(cc, COMPILE_LIMIT);
    assert!(
        output.status.success(),
        "cc {} failed (a C compiler `cc` is needed: apt-get install gcc): {}",
        source.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    binary
}

/// How long a compiler may run for a test before it is killed.
pub(crate) const COMPILE_LIMIT: Duration = Duration::from_secs(180);

/// Compiles `tests/rust/<name>.rs` (one file, no crates) with the `rustc`
/// of the toolchain running the tests into `dir`.
pub(crate) fn compile_rust(name: &str, dir: &Path) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/rust/{name}.rs"));
    let binary = dir.join(name);
    // Beside cargo (rustup's proxies, or a toolchain's bin), else on PATH.
    let beside_cargo = Path::new(env!("CARGO")).with_file_name("rustc");
    let rustc = if beside_cargo.is_file() {
        beside_cargo
    } else {
        PathBuf::from("rustc")
    };
    let mut command = Command::new(rustc);
    command
        .args(["--edition", "2021", "-O", "-o"])
        .arg(&binary)
        .arg(&source);
    let output = run_limited(command, COMPILE_LIMIT);
    assert!(
        output.status.success(),
        "rustc {} failed: {}",
        source.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    binary
}

/// A command running `program` with `args`: each run of a test's program
/// (plain and under the shim) gets a fresh one.
pub(crate) fn with_args(program: impl AsRef<OsStr>, args: &[&str]) -> Command {
    let mut command = Command::new(program);
    command.args(args);
    command
}

/// A deterministic text of about `bytes` bytes: lines of pseudo-random words.
pub(crate) fn text_file(path: &Path, bytes: usize) {
    pseudo_random_text(path, bytes, |state| {
        let words = 1 + state % 6;
        (0..words)
            .map(|w| {
                let word = state.rotate_left(w as u32 * 11) % 1_000_003;
                format!("{word:x}{}", if w + 1 < words { ' ' } else { '\n' })
            })
            .collect()
    });
}

/// Writes to `path` a deterministic text of at least `bytes` bytes (and
/// less than one more line): the lines `line` makes of the successive
/// states of a fixed xorshift generator.
pub(crate) fn pseudo_random_text(path: &Path, bytes: usize, line: impl Fn(u64) -> String) {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut text = String::with_capacity(bytes + 64);
    while text.len() < bytes {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        text.push_str(&line(state));
    }
    std::fs::write(path, text).unwrap();
}

/// Runs `command` to its end, its output collected, or kills it and fails
/// after `limit` (a program that hangs fails the test instead of hanging it).
pub(crate) fn run_limited(mut command: Command, limit: Duration) -> Output {
    let scratch = tempfile::tempdir().unwrap();
    let (stdout_path, stderr_path) = (scratch.path().join("out"), scratch.path().join("err"));
    let mut child = command
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&stdout_path).unwrap())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {command:?}: {e}"));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > limit {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!(
                "{command:?} still running after {limit:?}; stderr:\n{}",
                std::fs::read_to_string(&stderr_path).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Output {
        status,
        stdout: std::fs::read(&stdout_path).unwrap(),
        stderr: std::fs::read(&stderr_path).unwrap(),
    }
}

/// Runs `command` as [`run_limited`] does and fails the test unless it
/// exited 0 (naming the command, its status and its stderr); returns its
/// stdout and stderr as text.
pub(crate) fn run_ok(command: Command, limit: Duration) -> (String, String) {
    let described = format!("{command:?}");
    let output = run_limited(command, limit);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        output.status.success(),
        "{described}: {}\n{stderr}",
        output.status
    );
    (String::from_utf8_lossy(&output.stdout).into_owned(), stderr)
}

/// `command` under the shim with `env` added to the colour bits and half
/// of the colours, uncoloured where frame numbers are unreadable (not
/// root: what is tested does not depend on placement), not strict.
pub(crate) fn under_shim(mut command: Command, env: &[(&str, &str)]) -> Command {
    command
        .env("LD_PRELOAD", shim())
        .env(COLOR_BITS.0, COLOR_BITS.1)
        .env("TINCT_COLORS", half_of_the_colors().0)
        .env("TINCT_ALLOW_UNCOLORED", "1")
        .env_remove("TINCT_STRICT")
        .env_remove("TINCT_STATS")
        .envs(env.iter().copied());
    command
}
