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
//! The programs (issue 26: a program's release latency against tinct's
//! own threads in the same run) are this binary, started with
//! `--tinct-futex-jobs` or `--tinct-lines-jobs`: each job ended as soon as
//! it is had (jobs of nothing), so what they measure is the release's
//! path alone. A program runs as a task of its own on each thread's CPU,
//! at the same priority and period, released half a period after the
//! thread: neither delays the other, and a stall of the CPU falls on both
//! alike. A `futex` program's release latency is its own wake-up's; a
//! `lines` program cannot say when it woke (its job starts with tinct's
//! thread), so both are also compared by the response of their jobs of
//! nothing, release to end, which for `lines` includes the pipe both ways.

use std::process::Command;
use tinct_core::model::JobProtocol;
use tinct_report::stats::nearest_rank;
use tinct_rt::release_latency::{self, Beside, LatencyRun};

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

/// The median of sorted `values` (the mean of the middle two for an even
/// count).
fn median(values: &[f64]) -> f64 {
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// The arguments that make this binary a program of each protocol.
const AS_FUTEX_PROGRAM: &str = "--tinct-futex-jobs";
const AS_LINES_PROGRAM: &str = "--tinct-lines-jobs";

/// tinct's release latencies (tinct-rt's one measurement), in µs; with
/// `beside`, this binary as a program of that protocol beside each thread.
fn tinct_latencies(
    cpus: &[u32],
    seconds: u64,
    staggered: bool,
    beside: Option<JobProtocol>,
) -> Latencies {
    let beside = beside.map(|protocol| {
        let exe = std::env::current_exe().expect("this bench's path");
        let argument = match protocol {
            JobProtocol::Futex => AS_FUTEX_PROGRAM,
            JobProtocol::Lines => AS_LINES_PROGRAM,
        };
        Beside {
            command: vec![exe.display().to_string(), argument.to_string()],
            protocol,
        }
    });
    let measured = release_latency::measure(
        &LatencyRun {
            cpus: cpus.to_vec(),
            priority: PRIORITY,
            period_ns: INTERVAL_US * 1000,
            jobs: seconds * 1_000_000 / INTERVAL_US,
            staggered,
            beside,
        },
        &tinct_sys::signals::StopFlag::new(),
    )
    .expect("tinct run");
    let us = |ns: Vec<u64>| ns.into_iter().map(|n| n / 1000).collect();
    Latencies {
        woke: us(measured.woke),
        all: us(measured.all),
        responses: us(measured.responses),
        program: us(measured.program.woke),
        program_all: us(measured.program.all),
        program_responses: us(measured.program.responses),
        released: (measured.released, measured.program.released),
    }
}

/// Release latencies of a tinct run, in µs.
struct Latencies {
    /// Jobs whose thread slept until the release (what cyclictest counts).
    woke: Vec<u64>,
    /// Every job, including those released while the previous one still ran.
    all: Vec<u64>,
    /// The threads' responses (release to end).
    responses: Vec<u64>,
    /// The programs' jobs that found them waiting (empty without them).
    program: Vec<u64>,
    /// Every job of the programs.
    program_all: Vec<u64>,
    /// The programs' responses.
    program_responses: Vec<u64>,
    /// Jobs released to the threads and to the programs.
    released: (u64, u64),
}

/// This binary as a program of the `futex` protocol: each job ended as
/// soon as it is had.
fn be_a_futex_program() {
    let jobs = tinct_job::Jobs::from_env().expect("started by tinct with protocol = \"futex\"");
    for _job in jobs {}
}

/// This binary as a program of the `lines` protocol: a line back for each
/// line, at once.
fn be_a_lines_program() {
    use std::io::{BufRead, Write};
    let mut out = std::io::stdout().lock();
    for line in std::io::stdin().lock().lines() {
        let Ok(job) = line else { return };
        if writeln!(out, "done {job}")
            .and_then(|()| out.flush())
            .is_err()
        {
            return;
        }
    }
}

/// The rows of programs beside threads: the threads', the programs' and
/// the p99 ratios of each round.
#[derive(Default)]
struct BesideRows {
    threads: Vec<u64>,
    thread_responses: Vec<u64>,
    programs: Vec<u64>,
    program_responses: Vec<u64>,
    round_ratios: Vec<f64>,
}

impl BesideRows {
    fn add(&mut self, run: Latencies) {
        let ratio = row(run.program.clone()).p99 as f64 / row(run.woke.clone()).p99.max(1) as f64;
        self.round_ratios.push(ratio);
        self.threads.extend(run.woke);
        self.thread_responses.extend(run.responses);
        self.programs.extend(run.program);
        self.program_responses.extend(run.program_responses);
    }

    fn print(self, protocol: &str) {
        let (threads, program) = (row(self.threads), row(self.programs));
        let (thread_r, program_r) = (row(self.thread_responses), row(self.program_responses));
        let mut ratios = self.round_ratios;
        ratios.sort_by(f64::total_cmp);
        for (name, latency, response) in [
            ("tinct's threads", &threads, &thread_r),
            (protocol, &program, &program_r),
        ] {
            println!(
                "{name:<24} {:>8} {:>8} {:>8} {:>10.2} {:>9} {:>9} {:>9}",
                latency.p50,
                latency.p99,
                latency.max,
                latency.p99 as f64 / threads.p99.max(1) as f64,
                response.p50,
                response.p99,
                latency.samples,
            );
        }
        if let (Some(first), Some(last)) = (ratios.first(), ratios.last()) {
            println!(
                "{:<24} p99 ratio per round: median {:.2}, from {first:.2} to {last:.2}",
                "",
                median(&ratios)
            );
        }
    }
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

/// What a job of tinct pays after its start instant (the first clock
/// read after its wake-up, where its release latency ends) and before its
/// body: each step of the job loop, timed here in a loop of its own on
/// this thread (median of 31 batches of 2000 calls). The release latency
/// above has none of them; the job's response has all.
fn print_job_entry_costs() {
    fn per_call(step: &mut dyn FnMut()) -> u64 {
        let mut batches: Vec<u64> = (0..31)
            .map(|_| {
                let start = tinct_rt::clock::now_ns();
                for _ in 0..2000 {
                    step();
                }
                (tinct_rt::clock::now_ns() - start) / 2000
            })
            .collect();
        batches.sort_unstable();
        batches[batches.len() / 2]
    }
    let steps: [(&str, &mut dyn FnMut()); 5] = [
        ("start instant (clock_gettime MONOTONIC, vDSO)", &mut || {
            std::hint::black_box(tinct_rt::clock::now_ns());
        }),
        ("the thread's scheduling (sched_getattr)", &mut || {
            let _ = std::hint::black_box(tinct_sys::sched::scheduling());
        }),
        ("its CPU (getcpu)", &mut || {
            std::hint::black_box(tinct_rt::clock::current_cpu());
        }),
        ("its CPU time (clock_gettime THREAD_CPUTIME)", &mut || {
            std::hint::black_box(tinct_rt::clock::thread_cpu_ns());
        }),
        ("its context switches (getrusage THREAD)", &mut || {
            std::hint::black_box(tinct_rt::clock::thread_switches());
        }),
    ];
    println!(
        "after the start instant, before the body: each step per job, ns (median, this thread)"
    );
    let mut total = 0;
    for (name, step) in steps {
        let ns = per_call(step);
        total += ns;
        println!("  {name:<52} {ns:>6}");
    }
    println!(
        "  {:<52} {total:>6}  (plus the job log's and the watchdog's stores; a job with counters reads them too)",
        "sum"
    );
}

fn main() {
    if std::env::args().any(|a| a == AS_FUTEX_PROGRAM) {
        return be_a_futex_program();
    }
    if std::env::args().any(|a| a == AS_LINES_PROGRAM) {
        return be_a_lines_program();
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
        let smoke = tinct_latencies(&cpus, 1, false, Some(JobProtocol::Futex));
        assert!(!smoke.all.is_empty(), "no release was recorded");
        // The programs beside the threads were released as often (a
        // job a host stall left unstarted is released all the same).
        let expected = 1_000_000 / INTERVAL_US * cpus.len() as u64;
        assert_eq!(
            smoke.released,
            (expected, expected),
            "threads and futex programs: a job per period each"
        );
        assert!(
            !smoke.program_all.is_empty(),
            "no futex program job started"
        );
        let lines = tinct_latencies(&cpus, 1, false, Some(JobProtocol::Lines));
        assert_eq!(
            lines.released,
            (expected, expected),
            "threads and lines programs: a job per period each"
        );
        assert!(
            !lines.program_responses.is_empty(),
            "no lines program job completed"
        );
        let (r, p, l) = (
            row(smoke.all),
            row(smoke.program_all),
            row(lines.program_responses),
        );
        println!(
            "release_latency smoke run: {} releases, p50 {} µs, p99 {} µs; futex programs beside them: p50 {} µs, p99 {} µs; lines programs' responses p50 {} µs (run `cargo bench -p tinct-rt --bench release_latency` for the comparison with cyclictest)",
            r.samples, r.p50, r.p99, p.p50, p.p99, l.p50
        );
        return;
    }
    let mut together = Vec::new();
    let mut together_all = Vec::new();
    let mut staggered = Vec::new();
    let mut cyclic = Vec::new();
    let mut futex = BesideRows::default();
    let mut lines = BesideRows::default();
    // Each round's p99 / the p99 of cyclictest's run of the same round:
    // runs seconds apart share the host's mood, so the median of these is
    // steadier than the ratio of the pooled series.
    let (mut common_ratios, mut staggered_ratios) = (Vec::new(), Vec::new());
    let per_round = 4;
    for _ in 0..seconds.div_ceil(per_round) {
        let t = tinct_latencies(&cpus, per_round, false, None);
        let c = match cyclictest_latencies(per_round) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("release_latency: {e}");
                std::process::exit(1);
            }
        };
        let st = tinct_latencies(&cpus, per_round, true, None).woke;
        let reference = row(c.clone()).p99.max(1) as f64;
        common_ratios.push(row(t.woke.clone()).p99 as f64 / reference);
        staggered_ratios.push(row(st.clone()).p99 as f64 / reference);
        together.extend(t.woke);
        together_all.extend(t.all);
        cyclic.extend(c);
        staggered.extend(st);
        futex.add(tinct_latencies(
            &cpus,
            per_round,
            false,
            Some(JobProtocol::Futex),
        ));
        lines.add(tinct_latencies(
            &cpus,
            per_round,
            false,
            Some(JobProtocol::Lines),
        ));
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
    for (name, ratios) in [
        ("common release", &mut common_ratios),
        ("staggered", &mut staggered_ratios),
    ] {
        ratios.sort_by(f64::total_cmp);
        if let (Some(first), Some(last)) = (ratios.first(), ratios.last()) {
            println!(
                "{name:<24} p99 ratio per round (next to cyclictest's run of the round): median {:.2} of {} rounds, from {first:.2} to {last:.2}",
                median(ratios),
                ratios.len()
            );
        }
    }
    println!(
        "p99 ratio = p99 / cyclictest's p99 (aim ≤ 1.05). \"common release\" wakes every thread at the same instant \
         (kim2013's setting, tinct run's default); \"staggered\" offsets thread i by i·T/n, as cyclictest's threads \
         are offset by their start times. Like cyclictest, these count the wake-ups of threads that slept until \
         the release; \"every release\" also counts jobs released while the previous job of the task still ran \
         (after a stall), as `tinct run` reports them."
    );
    println!();
    println!(
        "programs of this binary beside each thread (same CPU and priority, released T/2 later), jobs of nothing, same runs:"
    );
    println!(
        "{:<24} {:>8} {:>8} {:>8} {:>10} {:>9} {:>9} {:>9}",
        "", "p50 µs", "p99 µs", "max µs", "p99 ratio", "R p50 µs", "R p99 µs", "samples"
    );
    futex.print("futex program");
    lines.print("lines program");
    println!(
        "p99 ratio = release latency p99 / that of the threads of the same runs (issue 26's aim for futex: ≤ 1.2); \
         R = response, release to end. A futex program's latency is its own wake-up's; a lines program's start is \
         tinct's thread's, its response includes the pipe both ways."
    );
    println!();
    print_job_entry_costs();
}
