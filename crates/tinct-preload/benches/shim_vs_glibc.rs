//! Benchmark (issue 5): programs under the shim vs glibc malloc, measured
//! alternately in the same run, as medians and ratios.
//!
//! ```text
//! cargo bench -p tinct-preload --bench shim_vs_glibc     # as root
//! TINCT_BENCH_RUNS=9 cargo bench -p tinct-preload --bench shim_vs_glibc
//! ```
//!
//! Workloads: a malloc-heavy C program (1 and 2 threads, the whole malloc
//! family, random sizes up to 512 KiB), `sort` (on half of the colors,
//! consecutive, and again on every other color: the worst case for
//! multi-page blocks) and `xz -1` on an 8 MB text,
//! and a Python script building and sorting lists and dicts (under the shim
//! with PYTHONMALLOC=malloc, as `tinct exec` runs it; glibc with Python's
//! own allocator, as it normally runs). "startup" is a program that
//! allocates once: the fixed cost of building the pool (mapping,
//! populating and translating TINCT_POOL bytes), which every other row
//! includes.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

const POOL: &str = "256MiB";

fn main() {
    if !rustix_is_root() {
        eprintln!("shim_vs_glibc: needs root (the pool reads frame numbers); nothing measured");
        if std::env::var("TINCT_REQUIRE_PRIVILEGED").is_ok_and(|v| v == "1") {
            std::process::exit(1);
        }
        return;
    }
    // `cargo bench` passes --bench; `cargo test --all-targets` does not:
    // then one run of the two shortest workloads checks that it works.
    let smoke = !std::env::args().any(|a| a == "--bench");
    let runs: usize = if smoke {
        1
    } else {
        std::env::var("TINCT_BENCH_RUNS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(5)
    };
    let shim = shim();
    let scratch = tempfile::tempdir().unwrap();
    let threads = compile(scratch.path(), "threads");
    let text = scratch.path().join("input.txt");
    write_text(&text, 8 << 20);
    let script = scratch.path().join("work.py");
    std::fs::write(&script, PYTHON).unwrap();
    let python = &python();
    let (colors, every_other) = half_of_the_colors();
    type Make = Box<dyn Fn(bool) -> Command>;
    let plain = |program: PathBuf, args: Vec<String>| -> Make {
        Box::new(move |_| {
            let mut c = Command::new(&program);
            c.args(&args);
            c
        })
    };
    let s = |x: &str| x.to_string();
    let workloads: Vec<(&str, Make)> = vec![
        (
            "startup (one malloc)",
            plain(threads.clone(), vec![s("1"), s("0"), s("1"), s("1")]),
        ),
        (
            "malloc-heavy C, 1 thread",
            plain(
                threads.clone(),
                vec![
                    s("1"),
                    s(if smoke { "3000" } else { "300000" }),
                    s("1"),
                    s("3"),
                ],
            ),
        ),
        (
            "malloc-heavy C, 2 threads",
            plain(threads.clone(), vec![s("2"), s("150000"), s("1"), s("3")]),
        ),
        (
            "sort 8 MB",
            plain(
                PathBuf::from("sort"),
                vec![s("-S"), s("64M"), text.display().to_string()],
            ),
        ),
        (
            "sort 8 MB, every other color",
            plain(
                PathBuf::from("sort"),
                vec![s("-S"), s("64M"), text.display().to_string()],
            ),
        ),
        (
            "xz -1 8 MB",
            plain(
                PathBuf::from("xz"),
                vec![s("-1"), s("-T1"), s("-c"), text.display().to_string()],
            ),
        ),
        (
            "python lists+dicts (glibc: pymalloc)",
            python_run(python, &script, false),
        ),
        (
            "python lists+dicts (both PYTHONMALLOC=malloc)",
            python_run(python, &script, true),
        ),
    ];
    println!(
        "shim vs glibc malloc, {runs} alternating runs each, medians; pool {POOL}, colors \
         {colors} (\"every other color\": {every_other})"
    );
    println!(
        "| workload | glibc (ms) | shim (ms) | ratio | shim − startup (ms) | ratio without startup |"
    );
    println!("|---|---|---|---|---|---|");
    let mut startup = 0.0;
    let measured = if smoke { 2 } else { workloads.len() };
    for (name, make) in &workloads[..measured] {
        let mut glibc = Vec::new();
        let mut shimmed = Vec::new();
        for run in 0..runs {
            // Alternate the order so drift favours neither side.
            for side in if run % 2 == 0 {
                [false, true]
            } else {
                [true, false]
            } {
                let mut command = make(side);
                command
                    .env("LC_ALL", "C")
                    .stdout(Stdio::null())
                    .stderr(Stdio::null());
                if side {
                    let colors = if name.contains("every other color") {
                        &every_other
                    } else {
                        &colors
                    };
                    command
                        .env("LD_PRELOAD", &shim)
                        .env("TINCT_COLORS", colors)
                        .env("TINCT_POOL", POOL);
                }
                let started = Instant::now();
                let status = command.status().unwrap();
                let ms = started.elapsed().as_secs_f64() * 1e3;
                assert!(
                    status.success(),
                    "{name} failed ({}): {status}",
                    if side { "shim" } else { "glibc" }
                );
                if side {
                    shimmed.push(ms)
                } else {
                    glibc.push(ms)
                }
            }
        }
        let (g, t) = (median(glibc), median(shimmed));
        if startup == 0.0 {
            startup = t - g;
        }
        let steady = (t - startup).max(0.0);
        println!(
            "| {name} | {g:.1} | {t:.1} | {:.2} | {steady:.1} | {:.2} |",
            t / g,
            steady / g
        );
    }
}

/// The Python script; under the shim always with PYTHONMALLOC=malloc (as
/// `tinct exec` runs it), with glibc too if `malloc_on_both`.
fn python_run(python: &Path, script: &Path, malloc_on_both: bool) -> Box<dyn Fn(bool) -> Command> {
    let (python, script) = (python.to_path_buf(), script.to_path_buf());
    Box::new(move |shimmed| {
        let mut c = Command::new(&python);
        c.arg(&script);
        if shimmed || malloc_on_both {
            c.env("PYTHONMALLOC", "malloc");
        }
        c
    })
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn rustix_is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().nth(1).map(|e| e == "0"))
        .unwrap_or(false)
}

/// libtinct_preload.so of this (release) profile, built if missing.
fn shim() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().parent().unwrap();
    let path = dir.join("libtinct_preload.so");
    if !path.is_file() {
        let status = Command::new(env!("CARGO"))
            .args(["build", "--release", "-p", "tinct-preload"])
            .status()
            .unwrap();
        assert!(status.success());
    }
    path
}

fn compile(dir: &Path, name: &str) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/c/{name}.c"));
    let binary = dir.join(name);
    let status = Command::new("cc")
        .args(["-std=gnu11", "-O2", "-pthread", "-o"])
        .arg(&binary)
        .arg(&source)
        .status()
        .expect("cc");
    assert!(status.success());
    binary
}

fn python() -> PathBuf {
    let output = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("python3");
    PathBuf::from(String::from_utf8(output.stdout).unwrap().trim())
}

/// Half of the LLC colors two ways: consecutive (`0-255` of 512: one
/// contiguous partition, as kim2013's partitions and
/// `PartitionColors::even` are; pages of consecutive colors are mostly
/// virtually adjacent in the pool, so multi-page blocks move in long runs)
/// and every other color (`0-510:2`: no two pages of a block adjacent,
/// the worst case, one mremap per page).
fn half_of_the_colors() -> (String, String) {
    let topology = tinct_sys::topology::Topology::read(&tinct_sys::SysRoot::live()).unwrap();
    let colors = topology.last_level_caches()[0]
        .page_colors(4096)
        .unwrap()
        .colors;
    (
        format!("0-{}", colors / 2 - 1),
        format!("0-{}:2", colors - 2),
    )
}

fn write_text(path: &Path, bytes: usize) {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut text = String::with_capacity(bytes + 64);
    while text.len() < bytes {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        text.push_str(&format!("{:x} {:x}\n", state % 1_000_003, state >> 40));
    }
    std::fs::write(path, text).unwrap();
}

const PYTHON: &str = r#"
import random
random.seed(7)
numbers = [random.randint(0, 10**9) for _ in range(600000)]
numbers.sort()
table = {"k%d" % random.randint(0, 10**8): i for i in range(300000)}
items = sorted(table.items())
print(len(numbers), len(items), numbers[len(numbers) // 2])
"#;
