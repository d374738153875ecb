//! Benchmark: programs under the shim vs glibc malloc,
//! measured alternately in the same run, as medians and ratios.
//!
//! ```text
//! cargo bench -p tinct-preload --bench shim_vs_glibc     # as root
//! TINCT_BENCH_RUNS=9 cargo bench -p tinct-preload --bench shim_vs_glibc
//! ```
//!
//! Workloads: the start-up cost (a program that
//! allocates once), a 4-thread allocation stress (the whole malloc family,
//! random sizes up to 512 KiB) on half of the colours and on one colour,
//! `sort` of an 8 MB text on half of the colours, consecutive (`0-255` of
//! 512) and every other colour, `xz -1`, Python building and sorting lists
//! and dicts (with `PYTHONMALLOC=malloc` on both sides, as `tinct exec`
//! runs it; and with Python's own allocator on both sides, the shim
//! colouring its arenas through `TINCT_MMAP=1`), and a shell script that
//! forks 200 short processes. Every shim row uses `TINCT_POOL=512MiB` (the
//! default: the most the shim populates; it starts with at most 2 MiB) and the
//! colour bits in `TINCT_COLOR_BITS`, as `tinct exec` sets them.
//!
//! The floor: the shim cannot read a page's frame before the page exists,
//! so it populates every page it considers, all colours, where glibc
//! touches only what the program uses. A third run per round (untimed,
//! `TINCT_STATS=1`) sums from every process's summary the time the kernel
//! took populating (mapping and clearing pages; a child of `fork` counts
//! only its own). The floor is glibc's time plus the share of that spent
//! on the other colours' pages, which no colouring allocator can use
//! (the requested colours' pages may be ones glibc would have cleared
//! too): `shim / floor`, and a row within 1.2x of its floor says `of the
//! floor`.

#[path = "../tests/common/mod.rs"]
mod common;

use common::{compile_c_at, pseudo_random_text, python, shim};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;
use tinct_mem::shim_config::populating_ns_in;

const POOL: &str = "512MiB";
/// The ratio aimed for.
const AIM: f64 = 1.2;

/// One row: its name, the shim's colours, extra shim variables, and the
/// command (`true` for the shim side).
struct Workload {
    name: &'static str,
    colors: String,
    shim_env: Vec<(&'static str, &'static str)>,
    command: Box<dyn Fn(bool) -> Command>,
}

fn main() {
    if !is_root() {
        eprintln!("shim_vs_glibc: needs root (the shim reads frame numbers); nothing measured");
        if tinct_sys::testing::privileges_required() {
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
    let threads = compile_c_at("threads", scratch.path(), "-O2");
    let text = scratch.path().join("input.txt");
    // Lines of two hexadecimal numbers.
    pseudo_random_text(&text, 8 << 20, |state| {
        format!("{:x} {:x}\n", state % 1_000_003, state >> 40)
    });
    let script = scratch.path().join("work.py");
    std::fs::write(&script, PYTHON).unwrap();
    let python = python();
    // The colour bits as `tinct exec` hands them to every process:
    // TINCT_COLOR_BITS, else the derived rule; a machine with neither is
    // said and skipped, not a panic.
    let derived = || {
        let geometry = tinct_mem::machine_color_geometry(4096).map_err(|e| e.to_string())?;
        let bits: Vec<u32> = geometry
            .colors
            .color_bits()
            .map_err(|e| e.to_string())?
            .collect();
        Ok::<_, String>(tinct_sys::format_cpu_list(&bits))
    };
    let color_bits = match std::env::var("TINCT_COLOR_BITS") {
        Ok(given) if !given.trim().is_empty() => given,
        _ => match derived() {
            Ok(bits) => bits,
            Err(e) => {
                eprintln!(
                    "shim_vs_glibc: skipped, the colour bits are unknown here ({e}): set TINCT_COLOR_BITS=12-16"
                );
                return;
            }
        },
    };
    let colors = match tinct_sys::parse_cpu_list(&color_bits) {
        Ok(bits) if (1..=16).contains(&bits.len()) => 1u32 << bits.len(),
        _ => {
            eprintln!(
                "shim_vs_glibc: skipped, TINCT_COLOR_BITS={color_bits:?}: expected 1 to 16 colour \
                 bits such as 12-15"
            );
            return;
        }
    };
    let (half, every_other) = half_of_the_colors(colors);
    let workloads = workloads(
        &threads,
        &text,
        &python,
        &script,
        &half,
        &every_other,
        smoke,
    );
    println!(
        "shim vs glibc malloc, {runs} alternating runs each, medians; TINCT_POOL={POOL}; \
         colours {half} (half, consecutive), {every_other} (every other), 0 (one); load \
         average {}",
        load_average()
    );
    println!(
        "populating: the kernel's time to populate the segments the shim grew (zeroed frames: \
         the shim must have a page to read its frame), from a third run per round with \
         TINCT_STATS=1; floor = glibc + populating x share of the other colours"
    );
    println!(
        "| workload | colours | glibc (ms) | shim (ms) | ratio | populating (ms) | shim / floor | \
         within {AIM}x |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let measured = if smoke { 2 } else { workloads.len() };
    for workload in &workloads[..measured] {
        let (mut glibc, mut shimmed, mut populating) = (Vec::new(), Vec::new(), Vec::new());
        for run in 0..runs {
            // Alternate the order so drift favours neither side.
            let order = if run % 2 == 0 {
                [Side::Glibc, Side::Shim]
            } else {
                [Side::Shim, Side::Glibc]
            };
            for side in order.into_iter().chain([Side::ShimStats]) {
                let mut command = (workload.command)(side != Side::Glibc);
                command.env("LC_ALL", "C").stdout(Stdio::null()).stderr(
                    if side == Side::ShimStats {
                        Stdio::piped()
                    } else {
                        Stdio::null()
                    },
                );
                if side != Side::Glibc {
                    command
                        .env("LD_PRELOAD", &shim)
                        .env("TINCT_COLORS", &workload.colors)
                        .env("TINCT_POOL", POOL)
                        .env("TINCT_COLOR_BITS", &color_bits)
                        .envs(workload.shim_env.iter().copied());
                }
                if side == Side::ShimStats {
                    command.env("TINCT_STATS", "1");
                }
                let started = Instant::now();
                let output = command.output().unwrap();
                let ms = started.elapsed().as_secs_f64() * 1e3;
                assert!(
                    output.status.success(),
                    "{} failed ({side:?}): {}",
                    workload.name,
                    output.status
                );
                match side {
                    Side::Glibc => glibc.push(ms),
                    Side::Shim => shimmed.push(ms),
                    Side::ShimStats => {
                        let summaries = String::from_utf8_lossy(&output.stderr);
                        let total = populating_ns_in(&summaries)
                            .unwrap_or_else(|e| panic!("{}: {e}", workload.name))
                            .unwrap_or_else(|| {
                                panic!(
                                    "{}: no shim summary with the populating time on \
                                     stderr:\n{summaries}",
                                    workload.name
                                )
                            });
                        populating.push(total as f64 / 1e6);
                    }
                }
            }
        }
        let (g, t, p) = (median(glibc), median(shimmed), median(populating));
        // A list this bench wrote; a misreading would make the floor wrong.
        let requested = tinct_sys::parse_cpu_list(&workload.colors)
            .unwrap_or_else(|e| panic!("{}: colours {:?}: {e}", workload.name, workload.colors))
            .len() as f64;
        let floor = g + p * (1.0 - requested / f64::from(colors));
        let within = if t / g <= AIM {
            "yes"
        } else if t / floor <= AIM {
            "of the floor"
        } else {
            "no"
        };
        println!(
            "| {} | {} | {g:.1} | {t:.1} | {:.2} | {p:.1} | {:.2} | {within} |",
            workload.name,
            if workload.colors.len() > 12 {
                "every other"
            } else {
                &workload.colors
            },
            t / g,
            t / floor,
        );
    }
}

/// One run of a row: glibc, the shim timed, or the shim with its summary
/// (`TINCT_STATS=1`, not timed) for the populating time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Glibc,
    Shim,
    ShimStats,
}

#[allow(clippy::too_many_arguments)]
fn workloads(
    threads: &Path,
    text: &Path,
    python: &Path,
    script: &Path,
    half: &str,
    every_other: &str,
    smoke: bool,
) -> Vec<Workload> {
    let plain = |program: PathBuf, args: Vec<String>| -> Box<dyn Fn(bool) -> Command> {
        Box::new(move |_| {
            let mut c = Command::new(&program);
            c.args(&args);
            c
        })
    };
    let s = |x: &str| x.to_string();
    let text = text.display().to_string();
    let stress_ops = if smoke { "2000" } else { "20000" };
    let python_with = |malloc: &'static str| -> Box<dyn Fn(bool) -> Command> {
        let (python, script) = (python.to_path_buf(), script.to_path_buf());
        Box::new(move |_| {
            let mut c = Command::new(&python);
            c.arg(&script).env("PYTHONMALLOC", malloc);
            c
        })
    };
    vec![
        Workload {
            name: "start-up (one malloc)",
            colors: half.into(),
            shim_env: Vec::new(),
            command: plain(threads.into(), vec![s("1"), s("0"), s("1"), s("1")]),
        },
        Workload {
            name: "4-thread allocation stress",
            colors: half.into(),
            shim_env: Vec::new(),
            command: plain(threads.into(), vec![s("4"), s(stress_ops), s("1"), s("3")]),
        },
        Workload {
            name: "4-thread allocation stress, one colour",
            colors: "0".into(),
            shim_env: Vec::new(),
            command: plain(threads.into(), vec![s("4"), s(stress_ops), s("1"), s("3")]),
        },
        Workload {
            name: "sort 8 MB (-S 64M)",
            colors: half.into(),
            shim_env: Vec::new(),
            command: plain("sort".into(), vec![s("-S"), s("64M"), text.clone()]),
        },
        Workload {
            name: "sort 8 MB (-S 64M), every other colour",
            colors: every_other.into(),
            shim_env: Vec::new(),
            command: plain("sort".into(), vec![s("-S"), s("64M"), text.clone()]),
        },
        Workload {
            name: "xz -1 8 MB",
            colors: half.into(),
            shim_env: Vec::new(),
            command: plain("xz".into(), vec![s("-1"), s("-T1"), s("-c"), text.clone()]),
        },
        Workload {
            name: "python lists+dicts (PYTHONMALLOC=malloc)",
            colors: half.into(),
            shim_env: Vec::new(),
            command: python_with("malloc"),
        },
        Workload {
            name: "python lists+dicts (pymalloc; shim: TINCT_MMAP=1)",
            colors: half.into(),
            shim_env: vec![("TINCT_MMAP", "1")],
            command: python_with("pymalloc"),
        },
        Workload {
            name: "shell script forking 200 processes",
            colors: half.into(),
            shim_env: Vec::new(),
            command: plain(
                "sh".into(),
                vec![
                    s("-c"),
                    s("for i in $(seq 200); do echo \"$i\" | sed s/1/x/ >/dev/null; done"),
                ],
            ),
        },
    ]
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().nth(1).map(|e| e == "0"))
        .unwrap_or(false)
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Half of the LLC colors two ways: consecutive (`0-255` of 512: one
/// contiguous partition, as kim2013's partitions and
/// `PartitionColors::even` are) and every other color (`0-510:2`).
fn half_of_the_colors(colors: u32) -> (String, String) {
    (
        format!("0-{}", colors / 2 - 1),
        format!("0-{}:2", colors - 2),
    )
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
