//! A program of the user's as a task (issue 26): a task-set body
//! `{ command = [...] }` runs the program once, asks it for one job per
//! release over the `lines` protocol, and accounts every job as tinct's
//! own tasks' are (released = completed + missed + aborted), with the
//! program's own CPU time per job. A program that never answers, or exits
//! in the middle, ends the run on time and is named.
//!
//! Real-time where the machine allows it (root); under SCHED_OTHER
//! otherwise, which the protocol does not depend on.

use std::path::Path;
use std::time::{Duration, Instant};
use tinct_core::format::{Syntax, parse};
use tinct_rt::runtime::RunOptions;
use tinct_rt::spec::RunSpec;
use tinct_verify::output::summarize;
use tinct_verify::run_in_dir::{PROGRAMS_DIR, run_in_dir};

const MS: u64 = 1_000_000;

/// A set of one task `filter` (T = `period`) whose body is `command`,
/// written to `dir/set.toml`, as a run spec of `duration_ns`.
fn program_task(dir: &Path, command: &str, period: &str, duration_ns: u64) -> RunSpec {
    let text = format!(
        "[platform]\ncores = 1\npartitions = 4\nmemory = \"16MiB\"\nrefill = \"10us\"\n\n\
         [[task]]\nname = \"filter\"\nperiod = \"{period}\"\nmemory = \"1MiB\"\nwcet = \"5ms\"\n\
         core = 0\nbody = {{ command = {command} }}\n"
    );
    let path = dir.join("set.toml");
    std::fs::write(&path, &text).unwrap();
    let set = parse(&text, &path.display().to_string(), Syntax::Toml).unwrap();
    RunSpec::from_plan(&set, None, &path.display().to_string(), duration_ns).unwrap()
}

/// Runs `spec` (100 releases) into `out`: it must complete, every job
/// accounted, at least 95 of them completed.
fn run_all_jobs(spec: &RunSpec, out: &Path) -> tinct_verify::run_in_dir::Recorded {
    let recorded = run_in_dir(spec, None, options(), out).unwrap();
    let task = &recorded.summary.tasks[0];
    let stop = &recorded.summary.stop_description;
    assert!(recorded.summary.stop.is_completed(), "{stop}");
    assert!(task.balanced, "{:?}", task.jobs);
    assert!(
        task.jobs.completed >= 95,
        "at least 95 of 100 jobs completed: {:?} ({stop})",
        task.jobs
    );
    recorded
}

/// An executable script `dir/name` of `text`.
fn script(dir: &Path, name: &str, text: &str) {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
}

/// Options for a run: real time when privileged (a claim about this
/// machine, said when it does not hold), in-process.
fn options() -> RunOptions {
    let realtime = tinct_sys::privilege::probe_sched_fifo().is_ok();
    if !realtime && tinct_sys::testing::privileges_required() {
        panic!("SCHED_FIFO refused where privileged tests are required");
    }
    if !realtime {
        eprintln!("SCHED_FIFO refused here: the program runs under SCHED_OTHER");
    }
    RunOptions {
        realtime,
        ..tinct_rt::testing::test_options()
    }
}

#[test]
fn a_program_answering_lines_runs_every_job_and_is_accounted() {
    let dir = tempfile::tempdir().unwrap();
    // A job: read the job's line, do a little work, answer.
    script(
        dir.path(),
        "filter.sh",
        "#!/bin/sh\necho starting >&2\nwhile read job; do i=0; while [ $i -lt 200 ]; do \
         i=$((i+1)); done; echo \"done $job\"; done\necho ended >&2\n",
    );
    let spec = program_task(dir.path(), "[\"./filter.sh\"]", "20ms", 2_000 * MS);
    let out = dir.path().join("run");
    let recorded = run_all_jobs(&spec, &out);
    let task = &recorded.summary.tasks[0];
    // Every finished job has a response and its program's CPU time.
    let records = &recorded.result.tasks[0].records;
    let finished: Vec<_> = records.iter().filter(|r| r.finish_ns.is_some()).collect();
    assert!(
        finished
            .iter()
            .all(|r| r.exec_ns > 0 && r.response_ns().is_some()),
        "{finished:?}"
    );
    // The program: as started, its end, its stderr in the run directory.
    let program = task.program.as_ref().expect("the program's record");
    assert!(program.command[0].ends_with("filter.sh"), "{program:?}");
    assert_eq!(program.ended, "exit status 0", "{program:?}");
    assert!(!program.killed, "end of file ends it: {program:?}");
    let stderr = std::fs::read_to_string(out.join(PROGRAMS_DIR).join("filter.stderr")).unwrap();
    assert_eq!(stderr, "starting\nended\n");
    let summary_json = std::fs::read_to_string(out.join("summary.json")).unwrap();
    assert!(summary_json.contains("\"program\""), "{summary_json}");
}

#[test]
fn a_program_that_never_answers_ends_the_run_on_time() {
    let dir = tempfile::tempdir().unwrap();
    // `sleep` never reads its stdin nor writes a line.
    let spec = program_task(dir.path(), "[\"sleep\", \"60\"]", "20ms", 500 * MS);
    let began = Instant::now();
    let recorded = run_in_dir(&spec, None, options(), &dir.path().join("run")).unwrap();
    let took = began.elapsed();
    let task = &recorded.summary.tasks[0];
    assert!(task.balanced, "{:?}", task.jobs);
    assert_eq!(task.jobs.completed, 0, "{:?}", task.jobs);
    assert!(task.jobs.released >= 1, "{:?}", task.jobs);
    let program = task.program.as_ref().expect("the program's record");
    assert!(program.killed, "it had to be killed: {program:?}");
    // A hang guard, far above the 0.5 s run (setup, a second's grace).
    assert!(took < Duration::from_secs(30), "{took:?}");
}

#[test]
fn a_program_that_exits_in_the_middle_stops_the_run_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    // Three jobs, then it exits 3.
    let spec = program_task(
        dir.path(),
        "[\"sh\", \"-c\", \"for j in 1 2 3; do read job; echo ok; done; exit 3\"]",
        "20ms",
        2_000 * MS,
    );
    let recorded = run_in_dir(&spec, None, options(), &dir.path().join("run")).unwrap();
    let summary = summarize(&spec.source, spec.duration_ns, &recorded.result);
    let task = &summary.tasks[0];
    let stop = summary.stop_description.clone();
    assert!(!summary.stop.is_completed(), "{stop}");
    assert!(stop.contains("filter"), "{stop}");
    // It exited after its third job: the next one's line finds its stdin
    // closed, or, written before it exited, no answer comes.
    assert!(
        stop.contains("its program no longer reads its stdin")
            || stop.contains("its program closed its stdout"),
        "{stop}"
    );
    assert!(task.balanced, "{:?}", task.jobs);
    assert!(task.jobs.completed >= 3, "{:?}", task.jobs);
    let program = task.program.as_ref().expect("the program's record");
    assert_eq!(program.ended, "exit status 3", "{program:?}");
}

#[test]
fn a_program_that_is_not_there_is_bad_input_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let text = "[platform]\ncores = 1\npartitions = 4\nmemory = \"16MiB\"\nrefill = \"10us\"\n\n\
                [[task]]\nname = \"filter\"\nperiod = \"20ms\"\nmemory = \"1MiB\"\nwcet = \"5ms\"\n\
                core = 0\nbody = { command = [\"./missing\"] }\n";
    let path = dir.path().join("set.toml");
    let set = parse(text, &path.display().to_string(), Syntax::Toml).unwrap();
    let error = RunSpec::from_plan(&set, None, &path.display().to_string(), 500 * MS)
        .unwrap_err()
        .to_string();
    assert!(error.contains("set.toml:7"), "{error}");
    assert!(
        error.contains("task 'filter' field `body.command`"),
        "{error}"
    );
    assert!(error.contains("missing\": no such file"), "{error}");
}

/// A program that spins in a job without ever blocking is killed once
/// the run has ended (its job aborted), and the run ends. Under
/// SCHED_OTHER here: at the task's SCHED_FIFO priority it would hold its
/// core from every other test running beside it; that the watchdog kills
/// a program that keeps its thread off the CPU is the watchdog's unit
/// test.
#[test]
fn a_program_spinning_in_a_job_is_killed_at_the_end_and_the_run_ends() {
    let dir = tempfile::tempdir().unwrap();
    let spec = program_task(
        dir.path(),
        "[\"sh\", \"-c\", \"read job; while :; do :; done\"]",
        "20ms",
        300 * MS,
    );
    let options = RunOptions {
        realtime: false,
        ..tinct_rt::testing::test_options()
    };
    let began = Instant::now();
    let recorded = run_in_dir(&spec, None, options, &dir.path().join("run")).unwrap();
    let took = began.elapsed();
    let task = &recorded.summary.tasks[0];
    assert!(task.balanced, "{:?}", task.jobs);
    assert_eq!(task.jobs.completed, 0, "{:?}", task.jobs);
    assert!(task.jobs.aborted >= 1, "{:?}", task.jobs);
    let program = task.program.as_ref().expect("the program's record");
    assert_eq!(program.ended, "killed by SIGKILL", "{program:?}");
    // A hang guard: the run is 0.3 s, the kill comes 0.1 s after its end.
    assert!(took < Duration::from_secs(30), "{took:?}");
}

/// A line the program writes before it is asked (a banner on stdout)
/// would be taken for the next job's answer: the run stops, saying so.
#[test]
fn output_before_a_job_was_asked_for_stops_the_run_saying_so() {
    let dir = tempfile::tempdir().unwrap();
    let spec = program_task(
        dir.path(),
        "[\"sh\", \"-c\", \"echo banner; while read job; do echo done; done\"]",
        "20ms",
        2_000 * MS,
    );
    let recorded = run_in_dir(&spec, None, options(), &dir.path().join("run")).unwrap();
    let stop = recorded.summary.stop_description.clone();
    assert!(
        stop.contains("its program wrote to its stdout before it was asked for a job"),
        "{stop}"
    );
    assert!(recorded.summary.tasks[0].balanced, "{stop}");
}

/// `./prog` in a task set read by a relative name stays a path (taken from
/// the set's directory), never a name looked up in PATH.
#[test]
fn a_relative_program_of_a_relatively_named_set_stays_a_path() {
    let text = "[platform]\ncores = 1\npartitions = 4\nmemory = \"16MiB\"\nrefill = \"10us\"\n\n\
                [[task]]\nname = \"filter\"\nperiod = \"20ms\"\nmemory = \"1MiB\"\nwcet = \"5ms\"\n\
                core = 0\nbody = { command = [\"./no-such-filter\"] }\n";
    let set = parse(text, "set.toml", Syntax::Toml).unwrap();
    let error = RunSpec::from_plan(&set, None, "set.toml", 500 * MS)
        .unwrap_err()
        .to_string();
    let here = std::env::current_dir().unwrap();
    assert!(
        error.contains(&format!(
            "{}/no-such-filter\": no such file",
            here.display()
        )),
        "{error}"
    );
}

/// libtinct_job.so and its header: built once per test binary (`cargo
/// test -p tinct-rt` alone does not build the cdylib), in this profile's
/// target directory.
fn job_library() -> (std::path::PathBuf, std::path::PathBuf) {
    static BUILT: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    let dir = BUILT
        .get_or_init(|| {
            // target/<profile>/deps/<this test> → target/<profile>.
            let exe = std::env::current_exe().unwrap();
            let dir = exe.parent().unwrap().parent().unwrap().to_path_buf();
            let mut cargo = std::process::Command::new(env!("CARGO"));
            cargo.args(["build", "--quiet", "-p", "tinct-job"]);
            if dir.file_name().is_some_and(|n| n == "release") {
                cargo.arg("--release");
            }
            assert!(
                cargo.status().unwrap().success(),
                "cargo build -p tinct-job"
            );
            assert!(dir.join("libtinct_job.so").is_file(), "{}", dir.display());
            dir
        })
        .clone();
    let include = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tinct-job/include");
    (dir, include)
}

/// Compiles the C program `source` into `out`, linked with
/// libtinct_job.so.
fn compile_with_job_library(source: &Path, out: &Path) {
    let (library, include) = job_library();
    let status = std::process::Command::new("cc")
        .arg("-O1")
        .arg(format!("-I{}", include.display()))
        .arg(source)
        .arg(format!("-L{}", library.display()))
        .arg("-ltinct_job")
        .arg(format!("-Wl,-rpath,{}", library.display()))
        .arg("-o")
        .arg(out)
        .status()
        .expect("a C compiler `cc`");
    assert!(status.success(), "cc {}", source.display());
}

/// The task of [`program_task`] whose body is the C program `source`
/// (compiled into `dir/program`, linked with libtinct_job.so) on the
/// `futex` protocol.
fn futex_c_task(dir: &Path, source: &str, period: &str, duration_ns: u64) -> RunSpec {
    let path = dir.join("program.c");
    std::fs::write(&path, source).unwrap();
    compile_with_job_library(&path, &dir.join("program"));
    program_task(
        dir,
        "[\"./program\"], protocol = \"futex\"",
        period,
        duration_ns,
    )
}

/// Issue 26: a `futex` program is released ahead of each release and
/// sleeps until the instant on its own timer (FUTEX_WAIT_BITSET with an
/// absolute timeout, as a periodic thread's clock_nanosleep), so nothing
/// of tinct lies between the timer and its wake-up. Seen from outside:
/// between jobs its current system call (`/proc/<pid>/syscall`) is a
/// futex wait of op 9 with a timeout, which a program woken by tinct's
/// FUTEX_WAKE (op 0, no timeout) never shows.
#[test]
fn a_futex_program_sleeps_until_its_release_on_its_own_timer() {
    let dir = tempfile::tempdir().unwrap();
    let spec = futex_c_task(
        dir.path(),
        "#include <tinct_job.h>\nint main(void) { while (tinct_job_wait() >= 0) tinct_job_done(); return 0; }\n",
        "10ms",
        1_000 * MS,
    );
    let out = dir.path().join("run");
    let ended = std::sync::atomic::AtomicBool::new(false);
    let seen = std::thread::scope(|scope| {
        let watcher = scope.spawn(|| {
            // Until the run ended (or, should it panic, a minute).
            let since = Instant::now();
            while !ended.load(std::sync::atomic::Ordering::Relaxed)
                && since.elapsed() < Duration::from_secs(60)
            {
                for pid in tinct_rt::testing::child_processes(std::process::id()) {
                    let call = match std::fs::read_to_string(format!("/proc/{pid}/syscall")) {
                        Ok(call) => call,
                        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                            return Err(format!("/proc/{pid}/syscall: {e}"));
                        }
                        Err(_) => continue, // ended meanwhile
                    };
                    // nr, then the arguments: address, op, value, timeout.
                    let fields: Vec<&str> = call.split_whitespace().collect();
                    if fields.len() > 4
                        && fields[0] == libc::SYS_futex.to_string()
                        && fields[2] == "0x9"
                        && fields[4] != "0x0"
                    {
                        return Ok(Some(call));
                    }
                }
                std::thread::sleep(Duration::from_micros(500));
            }
            Ok(None)
        });
        run_all_jobs(&spec, &out);
        ended.store(true, std::sync::atomic::Ordering::Relaxed);
        watcher.join().unwrap()
    });
    match seen {
        Ok(seen) => assert!(
            seen.is_some(),
            "the program was never seen sleeping on its own timer between jobs"
        ),
        // A claim about this machine: its current system call cannot be
        // read here (ptrace_scope, a container).
        Err(why) if !tinct_sys::testing::privileges_required() => {
            eprintln!("skipped: {why}");
        }
        Err(why) => panic!("{why}, where privileged tests are required"),
    }
}

/// Issue 26: a job released ahead is recorded as started exactly when the
/// program ran it. A program that overruns every job (15 ms of sleep at
/// T = 10 ms) logs each job it takes; at the run's end the job under way
/// is cut, and one released ahead and not yet taken is taken back: no job
/// the program ran is recorded as never started, and none recorded as
/// started was never run.
#[test]
fn jobs_cut_at_the_end_are_started_exactly_when_the_program_ran_them() {
    let dir = tempfile::tempdir().unwrap();
    let spec = futex_c_task(
        dir.path(),
        "#include <stdio.h>\n#include <unistd.h>\n#include <tinct_job.h>\n\
         int main(void) { long long job; setvbuf(stderr, NULL, _IONBF, 0);\n\
         while ((job = tinct_job_wait()) >= 0) { fprintf(stderr, \"took %lld\\n\", job); \
         usleep(15000); tinct_job_done(); } return 0; }\n",
        "10ms",
        500 * MS,
    );
    let out = dir.path().join("run");
    let recorded = run_in_dir(&spec, None, options(), &out).unwrap();
    let task = &recorded.summary.tasks[0];
    assert!(task.balanced, "{:?}", task.jobs);
    let stderr = std::fs::read_to_string(out.join(PROGRAMS_DIR).join("filter.stderr")).unwrap();
    let ran: std::collections::BTreeSet<u64> = stderr
        .lines()
        .filter_map(|l| l.strip_prefix("took ")?.parse().ok())
        .collect();
    assert!(
        ran.len() >= 10,
        "the program ran {} jobs: {stderr}",
        ran.len()
    );
    started_exactly_when_run(&recorded.result.tasks[0].records, &ran);
}

/// Every job the program ran has a record with a start, and every record
/// with a start is of a job it ran.
fn started_exactly_when_run(
    records: &[tinct_rt::record::JobRecord],
    ran: &std::collections::BTreeSet<u64>,
) {
    for r in records {
        assert_eq!(
            r.start_ns != 0,
            ran.contains(&r.job),
            "job {}: recorded start {} but the program {} it",
            r.job,
            r.start_ns,
            if ran.contains(&r.job) {
                "ran"
            } else {
                "never ran"
            }
        );
    }
    for job in ran {
        assert!(
            records.iter().any(|r| r.job == *job),
            "the program ran job {job}, which has no record"
        );
    }
}

/// Issue 26: a run stopped while a job released ahead waits for its
/// instant takes the job back: the program never runs it (T = 100 ms, a
/// stop 250 ms in, while job 3 waits for 300 ms), and it is not recorded
/// as started.
#[test]
fn a_stop_before_the_instant_takes_the_job_back() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("took.log");
    let spec = futex_c_task(
        dir.path(),
        &format!(
            "#include <stdio.h>\n#include <tinct_job.h>\n\
             int main(void) {{ long long job; FILE *log = fopen(\"{}\", \"w\"); setvbuf(log, NULL, _IONBF, 0);\n\
             while ((job = tinct_job_wait()) >= 0) {{ fprintf(log, \"took %lld\\n\", job); tinct_job_done(); }} return 0; }}\n",
            log.display()
        ),
        "100ms",
        5_000 * MS,
    );
    let stop = tinct_sys::signals::StopFlag::new();
    let result = std::thread::scope(|scope| {
        let stopper = stop.clone();
        scope.spawn(move || {
            std::thread::sleep(Duration::from_millis(250));
            stopper.raise();
        });
        tinct_rt::runtime::run_until(&spec, options(), &stop).unwrap()
    });
    let ran: std::collections::BTreeSet<u64> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix("took ")?.parse().ok())
        .collect();
    let records = &result.tasks[0].records;
    assert!(
        records.len() < 10,
        "stopped early: {} records",
        records.len()
    );
    started_exactly_when_run(records, &ran);
}

/// Issue 26: the shipped C example on the `futex` protocol
/// (examples/programs/smooth.c, linked with libtinct_job.so) runs every
/// job, with its own CPU time per job, and exits when the run ends (the
/// page's stop, no kill).
#[test]
fn the_c_example_on_the_futex_protocol_runs_every_job_and_exits_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/programs/smooth.c");
    compile_with_job_library(&example, &dir.path().join("smooth"));
    let spec = program_task(
        dir.path(),
        "[\"./smooth\"], protocol = \"futex\"",
        "10ms",
        1_000 * MS,
    );
    let out = dir.path().join("run");
    let recorded = run_all_jobs(&spec, &out);
    let task = &recorded.summary.tasks[0];
    let records = &recorded.result.tasks[0].records;
    assert!(
        records
            .iter()
            .filter(|r| r.finish_ns.is_some())
            .all(|r| r.exec_ns > 0),
        "every finished job has its CPU time"
    );
    // The program's own start and end bound each job (tinct's clock).
    assert!(
        records
            .iter()
            .filter_map(|r| r.finish_ns.map(|f| (r, f)))
            .all(|(r, finish)| r.release_ns <= r.start_ns && r.start_ns <= finish),
        "every job starts after its release and ends after its start"
    );
    let program = task.program.as_ref().expect("the program's record");
    assert!(!program.killed, "the page's stop ends it: {program:?}");
    assert_eq!(program.ended, "exit status 0", "{program:?}");
    let stderr = std::fs::read_to_string(out.join(PROGRAMS_DIR).join("filter.stderr")).unwrap();
    assert!(
        stderr.contains("smooth: ready") && stderr.contains("after the last job"),
        "{stderr}"
    );
}

/// Issue 26: a program's start-up (here half a second before it reads its
/// stdin) is waited for before the first release: the summary says when
/// it was ready, and job 0 does not pay for the start-up (its response is
/// well below it).
#[test]
fn a_slow_start_up_is_waited_for_before_the_first_release() {
    let dir = tempfile::tempdir().unwrap();
    script(
        dir.path(),
        "slow.sh",
        "#!/bin/sh\nsleep 0.5\nwhile read job; do echo \"done $job\"; done\n",
    );
    let spec = program_task(dir.path(), "[\"./slow.sh\"]", "200ms", 1_000 * MS);
    let recorded = run_in_dir(&spec, None, options(), &dir.path().join("run")).unwrap();
    let task = &recorded.summary.tasks[0];
    let program = task.program.as_ref().expect("the program's record");
    let ready_ms: f64 = program
        .ready
        .strip_prefix("ready ")
        .and_then(|rest| rest.split_once(" ms"))
        .and_then(|(ms, _)| ms.parse().ok())
        .unwrap_or_else(|| panic!("not seen ready: {program:?}"));
    assert!(
        ready_ms >= 500.0,
        "the sleep is part of its start-up: {program:?}"
    );
    // Job 0 did not pay for the start-up: its response is well below the
    // start-up it would have waited through (two readings of one run).
    let first = &recorded.result.tasks[0].records[0];
    let response_ms = first
        .response_ns()
        .unwrap_or_else(|| panic!("job 0 finished: {first:?}")) as f64
        / 1e6;
    assert!(
        response_ms < ready_ms / 2.0,
        "job 0 took {response_ms} ms of a {ready_ms} ms start-up: {first:?}"
    );
}
