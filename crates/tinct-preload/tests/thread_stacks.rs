//! `tinct exec`: the program's own threads run on stacks of its colours.
//! Each thread's stack is checked through /proc/<pid>/pagemap by this test
//! while the thread waits (root); stacks are given back after a join or
//! once a detached thread has ended, are never smaller than asked for, and
//! a thread with a stack of its own keeps it.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{OnceLock, mpsc};
use std::time::{Duration, Instant};

use common::{
    COLOR_BITS, compile_c, compile_c_with, compile_rust, half_of_the_colors, llc_colors, shim,
    under_shim, with_args,
};
use tinct_sys::pagemap::Pagemap;
use tinct_sys::testing::privileged_or_skip;

/// The shim's `thread stacks:` summary line of the program (not of a
/// child such as `timeout`'s), or a panic naming the output.
fn stacks_line(stderr: &str) -> &str {
    stderr
        .lines()
        .find(|l| l.contains("]: thread stacks: ") && !l.contains(": 0 with a coloured top"))
        .or_else(|| stderr.lines().find(|l| l.contains("]: thread stacks: ")))
        .unwrap_or_else(|| panic!("no thread stacks line in:\n{stderr}"))
}

/// The number right before `word` in `line`.
fn number_before(line: &str, word: &str) -> u64 {
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = words
        .iter()
        .position(|w| w.trim_start_matches('(') == word)
        .unwrap_or_else(|| panic!("no {word:?} in {line:?}"));
    words[at - 1]
        .trim_start_matches('(')
        .parse()
        .unwrap_or_else(|_| panic!("a number before {word:?} in {line:?}"))
}

/// The `stacks` test program (tests/c/stacks.c), compiled once for all
/// the tests of this file, in a directory of theirs under Cargo's
/// temporary directory.
fn stacks_program() -> &'static Path {
    static PROGRAM: OnceLock<PathBuf> = OnceLock::new();
    PROGRAM.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("thread_stacks");
        std::fs::create_dir_all(&dir).unwrap();
        compile_c("stacks", &dir)
    })
}

/// The time limit of one run of a test program.
const LIMIT: Duration = Duration::from_secs(120);

/// The shim's settings of most runs here: its summary, a 512 MiB pool.
const STATS_AND_POOL: [(&str, &str); 2] = [("TINCT_STATS", "1"), ("TINCT_POOL", "512MiB")];

/// Runs `binary args` under the shim with `env` (bounded by `limit`),
/// fails the test unless it exited 0, and returns its stdout and stderr.
fn run_ok(binary: &Path, args: &[&str], env: &[(&str, &str)], limit: Duration) -> (String, String) {
    common::run_ok(under_shim(with_args(binary, args), env), limit)
}

/// A program under the shim that talks with the test on its stdin and
/// stdout, every wait bounded by one time limit; killed if the test ends
/// (or panics) while it still runs.
struct Talking {
    child: std::process::Child,
    lines: mpsc::Receiver<String>,
    started: Instant,
    limit: Duration,
}

impl Drop for Talking {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

impl Talking {
    /// Starts `binary args` under the shim (`colors`, 512 MiB pool,
    /// stats) with `env` added.
    fn start(binary: &Path, args: &[&str], colors: &str, env: &[(&str, &str)]) -> Self {
        let mut child = Command::new(binary)
            .args(args)
            .env("LD_PRELOAD", shim())
            .env(COLOR_BITS.0, COLOR_BITS.1)
            .env("TINCT_COLORS", colors)
            .env("TINCT_POOL", "512MiB")
            .env("TINCT_STATS", "1")
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn the stacks program");
        let stdout = child.stdout.take().unwrap();
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                if sender.send(line.unwrap()).is_err() {
                    break;
                }
            }
        });
        Self {
            child,
            lines,
            started: Instant::now(),
            limit: Duration::from_secs(120),
        }
    }

    /// The lines before `marker` (the program is killed and the test
    /// fails should it not come in time).
    fn lines_until(&mut self, marker: &str) -> Vec<String> {
        let mut before = Vec::new();
        loop {
            let left = self.limit.saturating_sub(self.started.elapsed());
            let Ok(line) = self.lines.recv_timeout(left) else {
                let _ = self.child.kill();
                panic!(
                    "no {marker:?} from the stacks program within {:?}",
                    self.limit
                );
            };
            if line == marker {
                return before;
            }
            before.push(line);
        }
    }

    /// The `stack 0x...` addresses before `marker`.
    fn stacks_until(&mut self, marker: &str) -> Vec<usize> {
        self.lines_until(marker)
            .iter()
            .map(|line| {
                line.strip_prefix("stack 0x")
                    .and_then(|hex| usize::from_str_radix(hex, 16).ok())
                    .unwrap_or_else(|| panic!("expected `stack 0x...`, found {line:?}"))
            })
            .collect()
    }

    /// Writes a line to the program.
    fn send(&mut self) {
        let stdin = self.child.stdin.as_mut().unwrap();
        stdin.write_all(b"go\n").unwrap();
        stdin.flush().unwrap();
    }

    /// Waits for the program's end (it must succeed): its remaining
    /// stdout lines and its stderr.
    fn finish(mut self) -> (Vec<String>, String) {
        drop(self.child.stdin.take());
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if self.started.elapsed() > self.limit {
                let _ = self.child.kill();
                panic!("the stacks program still runs after {:?}", self.limit);
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut self.child.stderr.take().unwrap(), &mut stderr).unwrap();
        assert!(status.success(), "{status}; stderr:\n{stderr}");
        // The reader ends with the program's stdout.
        let rest = self.lines.iter().collect();
        (rest, stderr)
    }

    /// The frame under each page of `[address, address + bytes)` now.
    fn frames(&self, address: usize, bytes: usize) -> Vec<(usize, u64)> {
        let pagemap = Pagemap::open(&format!("/proc/{}/pagemap", self.child.id())).unwrap();
        (address & !4095..address + bytes)
            .step_by(4096)
            .map(|page| {
                let frame = pagemap.entries(page, 1).unwrap()[0]
                    .frame()
                    .unwrap_or_else(|| panic!("the stack page at {page:#x} is not present"));
                assert_ne!(frame, 0, "PFN 0: frame numbers hidden");
                (page, frame)
            })
            .collect()
    }

    /// True if the page holding `address` is not populated.
    fn absent(&self, address: usize) -> bool {
        let pagemap = Pagemap::open(&format!("/proc/{}/pagemap", self.child.id())).unwrap();
        pagemap.entries(address & !4095, 1).unwrap()[0]
            .frame()
            .is_none()
    }
}

#[test]
fn every_thread_stack_lies_in_the_requested_colours() {
    if !privileged_or_skip("reading thread stacks' frames through pagemap") || !dontunmap_or_skip()
    {
        return;
    }
    let binary = stacks_program();
    let colors = half_of_the_colors();
    let (joinable, detached) = (6, 4);
    let mut program = Talking::start(
        binary,
        &["wait", &joinable.to_string(), &detached.to_string()],
        &colors.0,
        &[],
    );
    let addresses = program.stacks_until("ready");
    assert_eq!(addresses.len(), joinable + detached);
    // While every thread waits: the frames under each one's 8 KiB local
    // (written), near its stack's top.
    let geometry = llc_colors();
    let mut found = Vec::new();
    for &address in &addresses {
        for (page, frame) in program.frames(address, 8192) {
            let color = geometry.color_of(frame * geometry.page_bytes).unwrap();
            found.push((page, frame, color));
        }
        // 1 MiB below, past the coloured top (256 KiB): still the
        // thread's stack, never touched, so not populated (ordinary
        // memory, faulted in when used).
        assert!(
            program.absent(address - (1 << 20)),
            "the stack 1 MiB below {address:#x} is populated"
        );
    }
    program.send();
    let (rest, stderr) = program.finish();
    assert_eq!(rest, ["done"], "{stderr}");
    let outside: Vec<_> = found
        .iter()
        .filter(|(_, _, color)| !colors.1.contains(color))
        .collect();
    assert!(
        outside.is_empty(),
        "thread stacks outside the colours {} (address, frame, colour): {outside:?}",
        colors.0
    );
    // Distinct stacks, one per thread.
    let mut pages: Vec<usize> = addresses.iter().map(|a| a >> 12).collect();
    pages.sort_unstable();
    pages.dedup();
    assert_eq!(pages.len(), addresses.len(), "{addresses:x?}");
    let line = stacks_line(&stderr);
    assert_eq!(
        number_before(line, "with"),
        (joinable + detached) as u64,
        "{line}"
    );
    assert_eq!(number_before(line, "budget"), 0, "{line}");
    // Joined ones are given back at their join; the detached ones once
    // they ended, which a later call finds (none came): in use at exit.
    assert!(
        number_before(line, "given") >= joinable as u64,
        "the joined threads' stacks go back: {line}"
    );
}

#[test]
fn a_parent_s_stacks_keep_their_frames_across_fork_with_fork_keep() {
    if !privileged_or_skip("reading thread stacks' frames through pagemap") || !dontunmap_or_skip()
    {
        return;
    }
    let binary = stacks_program();
    let colors = half_of_the_colors();
    // Frames under each thread's local before the fork, and after the
    // threads wrote their locals again while the child still shares them.
    let run = |env: &[(&str, &str)]| {
        let mut program = Talking::start(binary, &["forkwait", "4"], &colors.0, env);
        let addresses = program.stacks_until("ready");
        assert_eq!(addresses.len(), 4);
        let before: Vec<_> = addresses
            .iter()
            .flat_map(|&a| program.frames(a, 8192))
            .collect();
        program.send();
        assert!(program.lines_until("written").is_empty());
        let after: Vec<_> = addresses
            .iter()
            .flat_map(|&a| program.frames(a, 8192))
            .collect();
        program.send();
        let (rest, stderr) = program.finish();
        assert_eq!(rest, ["done"], "{stderr}");
        (before, after, stderr)
    };
    // The child takes the copies: the parent's stack tops keep their frames.
    let (before, after, stderr) = run(&[("TINCT_FORK_KEEP", "1")]);
    assert_eq!(before, after, "TINCT_FORK_KEEP=1: {stderr}");
    // Without it the parent's writes copy its pages to new frames: the
    // check above can fail.
    let (before, after, stderr) = run(&[]);
    assert_ne!(before, after, "without TINCT_FORK_KEEP: {stderr}");
}

#[test]
fn threads_created_and_joined_in_a_loop_reuse_their_stacks() {
    if !dontunmap_or_skip() {
        return;
    }
    let binary = stacks_program();
    let rounds: u64 = 2000;
    let (stdout, stderr) = run_ok(
        binary,
        &["loop", &rounds.to_string()],
        &STATS_AND_POOL,
        Duration::from_secs(300),
    );
    assert_eq!(stdout, format!("loop {rounds}\n"));
    let line = stacks_line(&stderr);
    // Every round's thread, 11 more every 50 rounds.
    let threads = rounds + 11 * rounds.div_ceil(50);
    assert_eq!(number_before(line, "with"), threads, "{line}");
    assert_eq!(number_before(line, "budget"), 0, "{line}");
    // All of them given back (after each kind of join, or once detached
    // and ended) but the last batch of detached threads, which no later
    // call found ended.
    let given_back = number_before(line, "given");
    assert!(given_back + 11 >= threads, "{line}");
    // The area holds a few stacks' tops at a time, not one per thread
    // (2000 tops of 256 KiB would be 500 MiB, beyond what the 512 MiB
    // pool gives half of the colours).
    let pid = line
        .split(']')
        .next()
        .and_then(|p| p.strip_prefix("tinct-preload["))
        .unwrap();
    let area = stderr
        .lines()
        .find(|l| l.starts_with(&format!("tinct-preload[{pid}]: colors ")))
        .unwrap();
    let area_pages = number_before(area, "pages");
    assert!(
        area_pages * 4096 <= 32 << 20,
        "the area grew to {area_pages} pages for stacks that come and go: {area}"
    );
}

#[test]
fn a_coloured_stack_is_full_size() {
    if !dontunmap_or_skip() {
        return;
    }
    let binary = stacks_program();
    // The program sets the default stack size to 8 MiB
    // (pthread_setattr_default_np; glibc's own is RLIMIT_STACK, or 2 MiB
    // when that is unlimited): 6 MiB of frames below the top fit only in
    // a full stack.
    let (stdout, stderr) = run_ok(binary, &["deep", "6144"], &STATS_AND_POOL, LIMIT);
    assert!(stdout.starts_with("deep 6144 "), "{stderr}");
    assert_eq!(number_before(stacks_line(&stderr), "with"), 1);
    // A size asked for in the attributes is given too.
    let (stdout, stderr) = run_ok(binary, &["size", "20000"], &STATS_AND_POOL, LIMIT);
    assert_eq!(stdout, "size ok\n");
    assert_eq!(number_before(stacks_line(&stderr), "with"), 1);
}

#[test]
fn a_thread_with_its_own_stack_keeps_it_and_a_spent_budget_leaves_glibc_s() {
    let binary = stacks_program();
    let (stdout, stderr) = run_ok(binary, &["own"], &[("TINCT_STATS", "1")], LIMIT);
    assert_eq!(stdout, "own ok\n");
    let line = stacks_line(&stderr);
    assert_eq!(number_before(line, "with"), 0, "{line}");
    assert_eq!(number_before(line, "their"), 1, "{line}");
    // A 4 MiB pool cannot colour the whole of an 8 MiB stack (the size
    // `deep 6144` sets as the default): glibc's,
    // counted, and the program runs as it would without the shim.
    let (_, stderr) = run_ok(
        binary,
        &["deep", "6144"],
        &[
            ("TINCT_STATS", "1"),
            ("TINCT_POOL", "4MiB"),
            ("TINCT_STACK_COLORED", "64MiB"),
        ],
        LIMIT,
    );
    let line = stacks_line(&stderr);
    assert_eq!(number_before(line, "with"), 0, "{line}");
    assert_eq!(number_before(line, "budget"), 1, "{line}");
    // TINCT_STACK_COLORED=0: glibc's stacks, none counted as coloured.
    let (_, stderr) = run_ok(
        binary,
        &["loop", "3"],
        &[("TINCT_STATS", "1"), ("TINCT_STACK_COLORED", "0")],
        LIMIT,
    );
    assert!(
        stderr.contains("TINCT_STACK_COLORED=0: none coloured"),
        "{stderr}"
    );
}

#[test]
fn the_exit_reports_agree_with_pagemap_while_stacks_are_lent() {
    if !privileged_or_skip("checking heap pages through pagemap") || !dontunmap_or_skip() {
        return;
    }
    let binary = stacks_program();
    let dir = tempfile::tempdir().unwrap();
    let go = dir.path().join("go");
    std::fs::write(&go, "go\n").unwrap();
    // Detached threads may not have ended when the program exits: their
    // tops are still lent (not present at their area addresses), which
    // the page report and the summary must say alike.
    let checked = common::run_with_page_report(
        with_args(binary, &["wait", "4", "4"]),
        Some(&go),
        &half_of_the_colors(),
        "256MiB",
        &[],
    );
    checked.assert_in_colors("threads on coloured stacks");
    assert!(
        String::from_utf8_lossy(&checked.stdout).ends_with("ready\ndone\n"),
        "{}",
        checked.stderr
    );
    assert_eq!(number_before(stacks_line(&checked.stderr), "with"), 8);
}

#[test]
fn a_rust_program_s_threads_start_on_coloured_stacks() {
    // Rust's std asks glibc for each new thread's guard
    // (`pthread_getattr_np`) and panics, aborting, when it reports none,
    // as glibc does for a stack its caller gave (fixed: the shim reports
    // the guard of its stacks).
    if !dontunmap_or_skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let binary = compile_rust("spawn", dir.path());
    let (stdout, stderr) = run_ok(&binary, &[], &STATS_AND_POOL, LIMIT);
    assert_eq!(stdout, "spawn 114689\n");
    let line = stacks_line(&stderr);
    assert_eq!(number_before(line, "with"), 9, "{line}");
    assert_eq!(number_before(line, "given"), 9, "{line}");
}

#[test]
fn a_child_of_fork_from_a_coloured_thread_keeps_the_stack_it_runs_on() {
    // The forking thread is detached: the child's first create (and its
    // exit reports) must not take its stack for that of an ended thread
    // (every thread of the parent is unknown to the child's kernel ids).
    if !dontunmap_or_skip() {
        return;
    }
    let binary = stacks_program();
    let (stdout, stderr) = run_ok(binary, &["forkthread"], &STATS_AND_POOL, LIMIT);
    assert_eq!(stdout, "forkthread ok\n");
    // The child's summary (the first one: it exits first) says nothing
    // was given back but the thread it joined.
    let child = stderr
        .lines()
        .find(|l| l.contains("]: thread stacks: "))
        .unwrap();
    assert_eq!(number_before(child, "given"), 1, "{stderr}");
}

#[test]
fn a_vfork_child_that_calls_exit_leaves_its_parent_s_stacks_alone() {
    // The child shares the parent's memory and runs the exit reports
    // there: it must not take the parent's live detached thread for an
    // ended one (before the fix: that thread's stack was unmapped, and
    // the parent died of SIGSEGV when the thread ran on).
    if !dontunmap_or_skip() {
        return;
    }
    let binary = stacks_program();
    let (stdout, stderr) = run_ok(binary, &["vfork"], &STATS_AND_POOL, LIMIT);
    assert!(stdout.ends_with("vfork ok\n"), "{stderr}");
}

#[test]
fn a_read_only_page_in_a_stack_top_does_not_kill_a_fork_keep_child() {
    if !dontunmap_or_skip() {
        return;
    }
    let binary = stacks_program();
    let (stdout, _) = run_ok(
        binary,
        &["protfork"],
        &[
            STATS_AND_POOL[0],
            STATS_AND_POOL[1],
            ("TINCT_FORK_KEEP", "1"),
        ],
        LIMIT,
    );
    assert_eq!(stdout, "protfork ok\n");
}

#[test]
fn an_executable_stack_is_left_to_glibc() {
    // A program linked with an executable stack (PT_GNU_STACK with PF_X):
    // glibc maps its thread stacks executable, the shim's would not be.
    let dir = tempfile::tempdir().unwrap();
    let binary = compile_c_with("stacks", dir.path(), "-O1", &["-Wl,-z,execstack"]);
    let (_, stderr) = run_ok(&binary, &["loop", "3"], &STATS_AND_POOL, LIMIT);
    let line = stacks_line(&stderr);
    assert_eq!(number_before(line, "with"), 0, "{line}");
    assert_eq!(number_before(line, "executable"), 3 + 11, "{line}");
}

#[test]
fn a_thread_without_attributes_gets_the_process_defaults_and_sees_its_guard() {
    // pthread_setattr_default_np's stack size and guard hold for a
    // coloured stack, and pthread_getattr_np says the guard (glibc alone
    // would say 0 for a stack it was given).
    if !dontunmap_or_skip() {
        return;
    }
    let binary = stacks_program();
    let (stdout, stderr) = run_ok(binary, &["defaults"], &STATS_AND_POOL, LIMIT);
    assert_eq!(stdout, "defaults ok\n");
    assert_eq!(number_before(stacks_line(&stderr), "with"), 1, "{stderr}");
}

#[test]
fn exit_from_a_signal_handler_inside_a_create_or_join_does_not_hang() {
    // A SIGALRM handler calls _exit, whose exit reports must not wait for
    // the stack registry's lock the interrupted create or join holds
    // (before the fix about one run in four hung). Each run is bounded;
    // the timer fires at a different moment each time.
    if !dontunmap_or_skip() {
        return;
    }
    let binary = stacks_program();
    for run in 0..30u32 {
        let delay = (20_000 + run * 731).to_string();
        // run_ok fails the test, naming the delay, should a run not end
        // well within its limit.
        run_ok(
            binary,
            &["alarm", &delay],
            &STATS_AND_POOL,
            Duration::from_secs(30),
        );
    }
}

#[test]
fn a_page_that_cannot_come_back_is_the_only_one_lost() {
    // The thread unmaps a page of its stack's top. Before Linux 6.17 that
    // page cannot move back into the area at the join: only it is lost
    // (before the fix: the whole top, 64 pages, its area range partly
    // unmapped). From 6.17 on the kernel moves the top in one call,
    // skipping the hole, whose area page keeps its empty mapping: none
    // lost. Either way the area's pages are all where the page report
    // says, and the next thread reuses them.
    if !privileged_or_skip("checking heap pages through pagemap") || !dontunmap_or_skip() {
        return;
    }
    let binary = stacks_program();
    let checked = common::run_with_page_report(
        with_args(binary, &["holey"]),
        None,
        &half_of_the_colors(),
        "256MiB",
        &[],
    );
    checked.assert_in_colors("a thread stack with a hole");
    assert_eq!(
        String::from_utf8_lossy(&checked.stdout),
        "holey ok\n",
        "{}",
        checked.stderr
    );
    assert!(checked.counter("lost_pages") <= 1, "{}", checked.stderr);
    let line = stacks_line(&checked.stderr);
    assert_eq!(number_before(line, "given"), 2, "{line}");
}

/// True if the kernel moves pages with `MREMAP_DONTUNMAP` (Linux 5.7),
/// which coloured stacks need; else says the test is skipped and returns
/// false — or fails under `TINCT_REQUIRE_PRIVILEGED=1`.
fn dontunmap_or_skip() -> bool {
    const MREMAP_DONTUNMAP: libc::c_int = 4;
    // As the shim moves them: the system call, to a fixed address (glibc
    // 2.36's `mremap` wrapper gives EINVAL for DONTUNMAP without FIXED).
    // SAFETY: two private anonymous pages of our own, the first moved
    // over the second, all unmapped here and nowhere else.
    let moved = unsafe {
        let pages = libc::mmap(
            std::ptr::null_mut(),
            8192,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        assert_ne!(pages, libc::MAP_FAILED);
        let target = pages as usize + 4096;
        let flags = libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED | MREMAP_DONTUNMAP;
        let to = libc::syscall(libc::SYS_mremap, pages, 4096, 4096, flags, target);
        libc::munmap(pages, 8192);
        to == target as libc::c_long
    };
    if !moved {
        let why = "the kernel refuses mremap(MREMAP_DONTUNMAP) (Linux < 5.7): no coloured stacks";
        assert!(
            std::env::var("TINCT_REQUIRE_PRIVILEGED").as_deref() != Ok("1"),
            "{why} (TINCT_REQUIRE_PRIVILEGED=1)"
        );
        eprintln!("skipped: {why}");
    }
    moved
}
