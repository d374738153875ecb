//! Release latency (actual start − planned release) of tinct's periodic
//! threads next to cyclictest (Debian package rt-tests), run the same way in
//! the same session: one SCHED_FIFO 95 thread per CPU, pinned, memory
//! locked, 1 ms absolute-time period, /dev/cpu_dma_latency held at 0 (as
//! cyclictest does), the same number of periods. Both are reported at
//! microsecond resolution (cyclictest's), as p50 / p99 / max, and the p99
//! ratio tinct / cyclictest.
//!
//! ```sh
//! sudo apt-get install rt-tests          # provides cyclictest
//! cargo bench -p tinct-rt --bench release_latency
//! TINCT_LATENCY_SECONDS=10 cargo bench -p tinct-rt --bench release_latency
//! ```
//!
//! cyclictest skips the periods it overslept, so tinct's figures are taken
//! the same way: only jobs whose thread slept until the release count
//! (a fourth row adds the backlogged jobs after a stall, as `tinct run`
//! reports every job).
//!
//! Needs root (SCHED_FIFO, mlockall). Four runs alternate in rounds of
//! 4 s — tinct with a common release of all threads (as `tinct run` does),
//! cyclictest, tinct with thread i released i·T/n later (cyclictest's
//! threads are offset by their start times), and tinct's threads with a
//! program of the `futex` protocol beside each — and each series' samples
//! are pooled, so slow drifts of the shared machine favour none of them.
//!
//! The program (issue 26: a program's release latency against tinct's own
//! threads in the same run) is this binary started with
//! `--tinct-futex-jobs`: it ends each job as soon as it has it
//! (`tinct_job::Jobs`), so what it measures is the release's path alone.
//! It runs as a task of its own on each thread's CPU, at the same priority
//! and period, released half a period after the thread: neither delays
//! the other, and a stall of the CPU falls on both alike. Its p99 is
//! compared with the p99 of the threads of the same rounds.

use std::process::Command;
use tinct_report::stats::nearest_rank;
use tinct_rt::release_latency::{self, LatencyRun};

const PRIORITY: u8 = 95;
const INTERVAL_US: u64 = 1000;
const HISTOGRAM_US: u64 = 20_000;

struct Row {
    p50: u64,
    p99: u64,
    max: u64,
    samples: u64,
}

fn row(mut us: Vec<u64>) -> Row {
    us.sort_unstable();
    Row {
        p50: nearest_rank(&us, 50).unwrap_or(0),
        p99: nearest_rank(&us, 99).unwrap_or(0),
        max: us.last().copied().unwrap_or(0),
        samples: us.len() as u64,
    }
}

/// The argument that makes this binary the `futex` program.
const AS_PROGRAM: &str = "--tinct-futex-jobs";

/// tinct's release latencies (tinct-rt's one measurement), in µs; with
/// `beside`, this binary as a `futex` program beside each thread.
fn tinct_latencies(cpus: &[u32], seconds: u64, staggered: bool, beside: bool) -> Latencies {
    let program = beside.then(|| {
        let exe = std::env::current_exe().expect("this bench's path");
        vec![exe.display().to_string(), AS_PROGRAM.to_string()]
    });
    let measured = release_latency::measure(
        &LatencyRun {
            cpus: cpus.to_vec(),
            priority: PRIORITY,
            period_ns: INTERVAL_US * 1000,
            jobs: seconds * 1_000_000 / INTERVAL_US,
            staggered,
            beside: program,
        },
        &tinct_sys::signals::StopFlag::new(),
    )
    .expect("tinct run");
    let us = |ns: Vec<u64>| ns.into_iter().map(|n| n / 1000).collect();
    Latencies {
        woke: us(measured.woke),
        all: us(measured.all),
        program: us(measured.program.woke),
        program_all: us(measured.program.all),
    }
}

/// Release latencies of a tinct run, in µs.
struct Latencies {
    /// Jobs whose thread slept until the release (what cyclictest counts).
    woke: Vec<u64>,
    /// Every job, including those released while the previous one still ran.
    all: Vec<u64>,
    /// The programs' jobs that found them waiting (empty without them).
    program: Vec<u64>,
    /// Every job of the programs.
    program_all: Vec<u64>,
}

/// The `futex` program: each job ended as soon as it is had.
fn be_the_program() {
    let jobs = tinct_job::Jobs::from_env().expect("started by tinct with protocol = \"futex\"");
    for _job in jobs {}
}

fn cyclictest_latencies(seconds: u64) -> Result<Vec<u64>, String> {
    let hist = std::env::temp_dir().join(format!("tinct-cyclictest-{}.txt", std::process::id()));
    let status = Command::new("cyclictest")
        .args([
            "-m",
            "-S",
            "-q",
            "-p",
            &PRIORITY.to_string(),
            "-i",
            &INTERVAL_US.to_string(),
        ])
        .args([
            "-l",
            &(seconds * 1_000_000 / INTERVAL_US).to_string(),
            "-h",
            &HISTOGRAM_US.to_string(),
        ])
        .arg(format!("--histfile={}", hist.display()))
        .stdout(std::process::Stdio::null())
        .status()
        .map_err(|e| {
            format!("cannot start cyclictest ({e}): install the Debian package rt-tests")
        })?;
    if !status.success() {
        return Err(format!("cyclictest failed: {status}"));
    }
    let text = std::fs::read_to_string(&hist).map_err(|e| e.to_string())?;
    let _ = std::fs::remove_file(&hist);
    let mut samples = Vec::new();
    let mut overflow_max = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# Max Latencies:") {
            overflow_max = rest
                .split_whitespace()
                .filter_map(|v| v.parse::<u64>().ok())
                .collect();
        }
        if line.starts_with('#') {
            continue;
        }
        let mut fields = line.split_whitespace().map(|v| v.parse::<u64>());
        let Some(Ok(us)) = fields.next() else {
            continue;
        };
        for count in fields.flatten() {
            samples.extend(std::iter::repeat_n(us, count as usize));
        }
    }
    let overflows = text
        .lines()
        .find_map(|l| l.strip_prefix("# Histogram Overflows:"))
        .map(|r| {
            r.split_whitespace()
                .filter_map(|v| v.parse::<u64>().ok())
                .sum::<u64>()
        })
        .unwrap_or(0);
    // Samples beyond the histogram count at the largest max latency.
    let worst = overflow_max.iter().copied().max().unwrap_or(HISTOGRAM_US);
    samples.extend(std::iter::repeat_n(worst, overflows as usize));
    Ok(samples)
}

fn main() {
    if std::env::args().any(|a| a == AS_PROGRAM) {
        return be_the_program();
    }
    if !rustix::process::geteuid().is_root() {
        assert!(
            !tinct_sys::testing::privileges_required(),
            "release_latency: needs root (SCHED_FIFO, mlockall), and {}=1 forbids skipping",
            tinct_sys::testing::REQUIRE_PRIVILEGED_VAR
        );
        eprintln!("release_latency: needs root (SCHED_FIFO, mlockall); not run");
        return;
    }
    let seconds: u64 = std::env::var("TINCT_LATENCY_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(8);
    let cpus = tinct_sys::sched::affinity().expect("affinity");
    // `cargo bench` passes --bench; `cargo test --all-targets` runs this
    // binary without it: then a one-second smoke run of tinct's side only
    // (cyclictest is a benchmark peer, not a test dependency).
    if !std::env::args().any(|a| a == "--bench") {
        let smoke = tinct_latencies(&cpus, 1, false, true);
        assert!(!smoke.all.is_empty(), "no release was recorded");
        // Every program job is accounted, one per thread job.
        assert_eq!(
            smoke.program_all.len(),
            smoke.all.len(),
            "the programs beside the threads ran a job per release"
        );
        let (r, p) = (row(smoke.all), row(smoke.program_all));
        println!(
            "release_latency smoke run: {} releases, p50 {} µs, p99 {} µs; futex programs beside them: p50 {} µs, p99 {} µs (run `cargo bench -p tinct-rt --bench release_latency` for the comparison with cyclictest)",
            r.samples, r.p50, r.p99, p.p50, p.p99
        );
        return;
    }
    let mut together = Vec::new();
    let mut together_all = Vec::new();
    let mut staggered = Vec::new();
    let mut cyclic = Vec::new();
    let mut beside_threads = Vec::new();
    let mut programs = Vec::new();
    let mut round_ratios = Vec::new();
    let per_round = 4;
    for _ in 0..seconds.div_ceil(per_round) {
        let t = tinct_latencies(&cpus, per_round, false, false);
        together.extend(t.woke);
        together_all.extend(t.all);
        match cyclictest_latencies(per_round) {
            Ok(s) => cyclic.extend(s),
            Err(e) => {
                eprintln!("release_latency: {e}");
                std::process::exit(1);
            }
        }
        staggered.extend(tinct_latencies(&cpus, per_round, true, false).woke);
        let b = tinct_latencies(&cpus, per_round, false, true);
        round_ratios
            .push(row(b.program.clone()).p99 as f64 / row(b.woke.clone()).p99.max(1) as f64);
        beside_threads.extend(b.woke);
        programs.extend(b.program);
    }
    let rows = [
        ("tinct, common release", row(together)),
        ("tinct, staggered", row(staggered)),
        ("cyclictest", row(cyclic)),
        ("tinct, every release", row(together_all)),
    ];
    println!(
        "release latency: {} SCHED_FIFO {PRIORITY} thread(s), pinned, mlockall, {INTERVAL_US} µs period, {} s each in rounds of {per_round} s",
        cpus.len(),
        seconds.div_ceil(per_round) * per_round
    );
    println!(
        "{:<24} {:>8} {:>8} {:>8} {:>9} {:>10}",
        "", "p50 µs", "p99 µs", "max µs", "samples", "p99 ratio"
    );
    let reference = rows[2].1.p99.max(1) as f64;
    for (name, r) in &rows {
        println!(
            "{name:<24} {:>8} {:>8} {:>8} {:>9} {:>10.2}",
            r.p50,
            r.p99,
            r.max,
            r.samples,
            r.p99 as f64 / reference
        );
    }
    println!(
        "p99 ratio = p99 / cyclictest's p99 (aim ≤ 1.1). \"common release\" wakes every thread at the same instant \
         (kim2013's setting, tinct run's default); \"staggered\" offsets thread i by i·T/n, as cyclictest's threads \
         are offset by their start times. Like cyclictest, these count the wake-ups of threads that slept until \
         the release; \"every release\" also counts jobs released while the previous job of the task still ran \
         (after a stall), as `tinct run` reports them."
    );
    let (threads, program) = (row(beside_threads), row(programs));
    round_ratios.sort_by(f64::total_cmp);
    println!();
    println!(
        "a futex program beside each thread (same CPU and priority, released T/2 later), same runs:"
    );
    println!(
        "{:<24} {:>8} {:>8} {:>8} {:>9} {:>10}",
        "", "p50 µs", "p99 µs", "max µs", "samples", "p99 ratio"
    );
    for (name, r) in [("tinct's threads", &threads), ("futex program", &program)] {
        println!(
            "{name:<24} {:>8} {:>8} {:>8} {:>9} {:>10.2}",
            r.p50,
            r.p99,
            r.max,
            r.samples,
            r.p99 as f64 / threads.p99.max(1) as f64
        );
    }
    println!(
        "p99 ratio = p99 / the threads' p99 of the same runs (issue 26's aim ≤ 1.2); per round of {per_round} s: \
         median {:.2}, from {:.2} to {:.2}. A program's latency is its own wake-up, futex included.",
        round_ratios[round_ratios.len() / 2],
        round_ratios[0],
        round_ratios[round_ratios.len() - 1]
    );
}
