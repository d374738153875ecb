//! The attribution's tests: runs of a few tasks on one CPU (a
//! [`Scenario`]) and the cause each late job gets.

use super::*;
use tinct_rt::memory::Placement;
use tinct_rt::record::{JobRecord, Outcome};
use tinct_rt::runtime::{RunResult, TaskRun};
use tinct_rt::sentinel::{CpuWatch, SentinelOptions, SentinelReport, Stall};
use tinct_rt::spec::{Bound, Scheduling};
use tinct_rt::testing::TaskBuilder;
use tinct_rt::watchdog::StopReason;
use tinct_sys::sched::Policy;

const MS: u64 = 1_000_000;
const US: u64 = MS / 1000;
const T0: u64 = 1_000 * MS;

/// A completed job on CPU 1 under SCHED_FIFO 50, times in ns from T0,
/// its deadline 100 ms after its release.
fn job(job: u64, release: u64, start: u64, finish: u64, exec: u64) -> JobRecord {
    JobRecord {
        start_ns: T0 + start,
        finish_ns: Some(T0 + finish),
        exec_ns: exec,
        cpu: 1,
        cpu_end: 1,
        policy: Policy::Fifo(50),
        outcome: Outcome::Completed,
        ..JobRecord::never_started(job, 0, T0 + release, T0 + release + 100 * MS)
    }
}

/// A coloured task on CPU 1 at FIFO `prio`, period and deadline 100 ms,
/// with the analysis' C and WCRT (`None`: the analysis found none).
fn task(name: &str, prio: u8, c: u64, wcrt: Option<u64>, records: Vec<JobRecord>) -> TaskRun {
    TaskRun {
        spec: TaskBuilder::periodic(name, 100 * MS)
            .cpu(1)
            .fifo(prio)
            .deadline(100 * MS)
            .steps(vec![])
            .bound(Bound {
                wcet_ns: c,
                wcrt_ns: wcrt,
                wcrt_nocint_ns: wcrt,
                blocking_ns: Some(0),
                blocking_shows: tinct_rt::spec::BlockingShows::Nowhere,
            })
            .build(),
        tid: 1,
        records,
        placement: Placement::Colored {
            bytes: 4096,
            partitions: vec![1],
            colors: "0-15".into(),
            color_count: 16,
            machine_colors: 512,
            pages: 1,
            stack_bytes: 0,
            stack_frames: Vec::new(),
            pages_outside_colors: Some(0),
            frame_drift: None,
            frames: vec![],
        },
        rates: None,
        work: vec![],
        scheduling: Scheduling::of(Policy::Fifo(prio)),
        counters_unavailable: None,
        error: None,
        program: None,
    }
}

/// A task with a WCRT whose jobs are `records`.
fn bounded(name: &str, prio: u8, c: u64, wcrt: u64, records: Vec<JobRecord>) -> TaskRun {
    task(name, prio, c, Some(wcrt), records)
}

/// Asserts that `late`'s explanation says `text` (and shows it if not).
#[track_caller]
fn assert_explains(late: &LateJob, text: &str) {
    assert!(late.explanation.contains(text), "{}", late.explanation);
}

/// A run of `tasks` and the evidence the attribution is given: the
/// fixture of every test here.
struct Scenario {
    result: RunResult,
    stalls: Option<SentinelReport>,
    colouring: Colouring,
    llc_domains: Vec<Vec<u32>>,
}

impl Scenario {
    fn of(tasks: Vec<TaskRun>) -> Scenario {
        Scenario {
            result: RunResult {
                start_ns: T0,
                end_ns: T0 + 1000 * MS,
                stop: StopReason::Completed,
                realtime: true,
                memory_locked: true,
                rt_throttling: String::new(),
                watchdog_factor: 3.0,
                watchdog: tinct_rt::spec::WatchdogMode::Realtime,
                rtapp_log: None,
                notes: vec![],
                tasks,
                sentinel: None,
                llc_domains: vec![],
                colouring: Colouring::Unknown,
                mutexes: vec![],
                footprint: Err("not read".into()),
            },
            stalls: None,
            colouring: Colouring::Unknown,
            llc_domains: vec![],
        }
    }

    /// Task `a` alone (FIFO 50, C 4 ms, WCRT 5 ms) with these jobs.
    fn a(jobs: Vec<JobRecord>) -> Scenario {
        Scenario::of(vec![bounded("a", 50, 4 * MS, 5 * MS, jobs)])
    }

    /// Task `a`: job 0 within its bound, job 1 at 20 ms late by 10 ms
    /// with an execution of 4 ms.
    fn late() -> Scenario {
        Scenario::a(vec![
            job(0, 0, 0, 4 * MS, 4 * MS),
            job(1, 100 * MS, 100 * MS, 115 * MS, 4 * MS),
        ])
    }

    /// With `task` first (the tests give it a higher priority).
    fn above(mut self, task: TaskRun) -> Scenario {
        self.result.tasks.insert(0, task);
        self
    }

    /// With `task` last.
    fn below(mut self, task: TaskRun) -> Scenario {
        self.result.tasks.push(task);
        self
    }

    /// With a top-priority sentinel on CPU 1 that saw these stalls
    /// (ns from T0).
    fn stalls(mut self, stalls: &[(u64, u64)]) -> Scenario {
        self.stalls = Some(SentinelReport {
            options: SentinelOptions::default(),
            cpus: vec![CpuWatch {
                cpu: 1,
                top_priority: true,
                wakes: 100,
                cpu_time_ns: Some(1),
                stalls: stalls
                    .iter()
                    .map(|&(a, b)| Stall {
                        start_ns: T0 + a,
                        end_ns: T0 + b,
                    })
                    .collect(),
                dropped: 0,
                dropped_ns: 0,
                steal_ns: None,
            }],
        });
        self
    }

    fn colouring(mut self, colouring: Colouring) -> Scenario {
        self.colouring = colouring;
        self
    }

    fn attribute(&self) -> Attribution {
        attribute(
            &self.result,
            &Evidence {
                sentinel: self.stalls.as_ref(),
                colouring: self.colouring,
                llc_domains: &self.llc_domains,
            },
        )
    }

    /// The one late job of the one task.
    fn only_late(&self) -> LateJob {
        let a = self.attribute();
        assert_eq!(a.late.len(), 1);
        assert_eq!(a.late[0].len(), 1, "{:?}", a.late);
        a.late[0][0].clone()
    }
}

#[test]
fn a_stall_as_long_as_the_exceedance_explains_the_job() {
    let a = Scenario::late()
        .stalls(&[(104 * MS, 115 * MS), (MS, 3 * MS)])
        .attribute();
    let late = &a.late[0][0];
    assert_eq!(a.late[0].len(), 1);
    assert_eq!(late.cause, Cause::HostStall);
    assert_eq!((late.exceedance_ns, late.stall_ns), (10 * MS, 11 * MS));
    assert_eq!(late.explanation, "host stall of 11.00 ms");
    assert_eq!(
        a.stall_ns[0],
        vec![2 * MS, 11 * MS],
        "every job's stall time"
    );
    assert_eq!(a.bound_ns[0], vec![Some(5 * MS); 2]);
    assert_eq!(a.cause[0], vec![None, Some(Cause::HostStall)]);
}

#[test]
fn a_short_stall_does_not_explain_it_and_the_next_cause_is_tried() {
    let short = Scenario::late()
        .stalls(&[(104 * MS, 110 * MS)])
        .colouring(Colouring::Effective);
    let late = short.only_late();
    assert_eq!(late.cause, Cause::Unexplained);
    assert!(
        late.explanation.ends_with("also a host stall of 6.00 ms"),
        "{}",
        late.explanation
    );

    // Not at top priority (SCHED_OTHER sentinel): its gaps prove nothing.
    let mut weak = Scenario::late()
        .stalls(&[(100 * MS, 120 * MS)])
        .colouring(Colouring::Effective);
    weak.stalls.as_mut().unwrap().cpus[0].top_priority = false;
    assert_eq!(weak.only_late().cause, Cause::Unexplained);
}

#[test]
fn execution_above_c_is_blamed_before_colouring() {
    // 10 ms late; executed 15 ms against C = 4 ms: 11 ms above C
    // covers the 10 ms.
    let mut scenario = Scenario::late();
    scenario.result.tasks[0].records[1].exec_ns = 15 * MS;
    let late = scenario.only_late();
    assert_eq!(late.cause, Cause::ExecAboveC);
    assert_eq!(
        late.explanation,
        "execution time above the modelled C (11.00 ms above C in all; the most: 15.00 ms > C 4.00 ms)"
    );
    // 2 ms above C cannot explain 10 ms of lateness: unexplained, with
    // the excess named beside it.
    scenario.result.tasks[0].records[1].exec_ns = 6 * MS;
    let late = scenario.only_late();
    assert_eq!(late.cause, Cause::Unexplained);
    assert!(
        late.explanation
            .ends_with("also execution above C by 2.00 ms"),
        "{}",
        late.explanation
    );
}

#[test]
fn a_higher_priority_job_above_its_c_in_the_busy_window_is_named() {
    // `hi` (C 2 ms) ran 98-111 ms with 13 ms of execution (11 ms above
    // C); `a`'s job 1, released at 100 ms inside that stretch, is 10 ms
    // late.
    let a = Scenario::late()
        .above(bounded(
            "hi",
            60,
            2 * MS,
            2 * MS,
            vec![job(7, 98 * MS, 98 * MS, 111 * MS, 13 * MS)],
        ))
        .attribute();
    let hi_late = &a.late[0][0];
    assert_eq!(hi_late.cause, Cause::ExecAboveC);
    let late = &a.late[1][0];
    assert_eq!(late.cause, Cause::ExecAboveC);
    assert_explains(late, "higher-priority 'hi' job 7: 13.00 ms > C 2.00 ms");
}

#[test]
fn an_earlier_job_of_its_own_task_running_over_c_delays_the_next() {
    // Job 1 ran 100-190 ms (90 ms of execution, C 4 ms); job 2,
    // released at 180 ms, waited for it: both are late, both above C
    // (job 2 through job 1).
    let a = Scenario::a(vec![
        job(1, 100 * MS, 100 * MS, 190 * MS, 90 * MS),
        job(2, 180 * MS, 190 * MS, 194 * MS, 4 * MS),
    ])
    .attribute();
    assert_eq!(a.late[0].len(), 2);
    assert!(a.late[0].iter().all(|j| j.cause == Cause::ExecAboveC));
    assert_explains(&a.late[0][1], "earlier 'a' job 1: 90.00 ms > C 4.00 ms");
}

#[test]
fn the_busy_window_reaches_back_over_a_higher_priority_stretch() {
    // `hi` ran 90-101 ms and a stall 92-99 ms hit it; `a` released at
    // 100 ms finished at 115 ms (10 ms late, so the 7 ms stall alone
    // does not cover it), but a stall before its release counts.
    let stalls = [(92 * MS, 99 * MS), (105 * MS, 108 * MS)];
    let other = |name: &str, prio: u8| {
        bounded(
            name,
            prio,
            20 * MS,
            20 * MS,
            vec![job(0, 90 * MS, 90 * MS, 101 * MS, 4 * MS)],
        )
    };
    let a = Scenario::late()
        .above(other("hi", 60))
        .stalls(&stalls)
        .attribute();
    let late = &a.late[1][0];
    assert_eq!(
        late.stall_ns,
        10 * MS,
        "7 ms before the release, 3 ms after"
    );
    assert_eq!(late.cause, Cause::HostStall);
    // A lower-priority stretch before the release does not count.
    let a = Scenario::late()
        .below(other("lo", 10))
        .stalls(&stalls)
        .attribute();
    assert_eq!(a.late[0][0].stall_ns, 3 * MS);
}

#[test]
fn a_stall_that_kept_the_previous_job_from_starting_delays_this_one() {
    // A stall 18-44 ms: job 1 (released 20 ms) starts only at 44 ms and
    // ends at 48; job 2, released at 40 ms while job 1 was pending,
    // runs 48-52 ms: 7 ms late, and its own window (40-52 ms) holds
    // only 4 ms of the stall. The level-i busy period began at job 1's
    // release, so 24 ms of the stall count and explain it.
    let a = Scenario::a(vec![
        job(0, 0, 0, 4 * MS, 4 * MS),
        job(1, 20 * MS, 44 * MS, 48 * MS, 4 * MS),
        job(2, 40 * MS, 48 * MS, 52 * MS, 4 * MS),
    ])
    .stalls(&[(18 * MS, 44 * MS)])
    .attribute();
    assert_eq!(a.stall_ns[0], vec![0, 24 * MS, 24 * MS]);
    assert_eq!(
        a.cause[0],
        vec![None, Some(Cause::HostStall), Some(Cause::HostStall)]
    );
}

/// Task `a`'s job 1 (released at 100 ms, C 4 ms, WCRT 5 ms) runs 1 ms, is
/// stopped with its process 101-150 ms, and ends 3 ms after `h`'s jobs,
/// after the jobs of `h` (FIFO 60, 1 ms each) released at `releases`,
/// which ran back to back from 150 ms once the process was continued.
fn stopped_with_a_backlog(releases: &[u64]) -> Attribution {
    let backlog: Vec<JobRecord> = releases
        .iter()
        .enumerate()
        .map(|(k, &release)| {
            let start = 150 * MS + k as u64 * MS;
            job(k as u64, release, start, start + MS, MS)
        })
        .collect();
    let finish = 150 * MS + releases.len() as u64 * MS + 3 * MS;
    Scenario::a(vec![
        job(0, 0, 0, 4 * MS, 4 * MS),
        job(1, 100 * MS, 100 * MS, finish, 4 * MS),
    ])
    .above(bounded("h", 60, MS, 2 * MS, backlog))
    .stalls(&[(101 * MS, 150 * MS)])
    .colouring(Colouring::Effective)
    .attribute()
}

#[test]
fn the_backlog_a_stall_let_in_ahead_of_a_job_counts_with_the_stall() {
    // 49 ms of stall against 51 ms late (ends at 156 ms): the 3 ms of `h` released during
    // the stop, after a's bound had passed (105 ms), ran first because a
    // was still running; without the stop a would have ended by 105 ms.
    let a = stopped_with_a_backlog(&[110 * MS, 120 * MS, 130 * MS]);
    let late = &a.late[1][0];
    assert_eq!(
        (late.job, late.exceedance_ns, late.stall_ns),
        (1, 51 * MS, 49 * MS)
    );
    assert_eq!(late.cause, Cause::HostStall, "{}", late.explanation);
    assert_eq!(
        late.explanation,
        "host stall of 49.00 ms, then 3.00 ms of higher-priority jobs released after its bound \
         had passed ran ahead of it (the stall's backlog)"
    );
    // Every job of `h` is late by its part of the stop, and only by it.
    assert!(
        a.cause[0].iter().all(|c| *c == Some(Cause::HostStall)),
        "{:?}",
        a.late[0]
    );

    // Released before a's bound (103, 104 ms), `h`'s jobs are interference
    // the WCRT already bounds: they do not count, 50 ms do not cover 51.
    let a = stopped_with_a_backlog(&[103 * MS, 104 * MS, 110 * MS]);
    let late = &a.late[1][0];
    assert_eq!(late.exceedance_ns, 51 * MS);
    assert_eq!(late.cause, Cause::Unexplained, "{}", late.explanation);
    assert!(
        late.explanation.ends_with("also a host stall of 49.00 ms"),
        "{}",
        late.explanation
    );
}

#[test]
fn a_job_ready_but_not_dispatched_is_blamed_on_platform_overhead() {
    // WCRT 4.1 ms; released at 100 ms, started 150 µs later with nothing
    // else on its CPU, 4 ms of execution (= C): 50 µs late, covered by
    // the 150 µs it waited to be dispatched.
    let lone = |start: u64| {
        Scenario::of(vec![bounded(
            "a",
            50,
            4 * MS,
            4 * MS + 100 * US,
            vec![job(1, 100 * MS, start, start + 4 * MS, 4 * MS)],
        )])
    };
    let late = lone(100 * MS + 150 * US).only_late();
    assert_eq!(late.cause, Cause::PlatformOverhead);
    assert_explains(&late, "overhead: 0.15 ms of its response");
    // 3 ms not dispatched is beyond platform latency (the sentinel's
    // stall threshold) and no stall was seen: something unknown ran.
    assert_eq!(lone(103 * MS).only_late().cause, Cause::Unexplained);
    // The same 150 µs spent running a higher-priority job (within its
    // C) is interference the analysis models: unexplained.
    let a = lone(100 * MS + 150 * US)
        .above(bounded(
            "hi",
            60,
            MS,
            MS,
            vec![job(0, 100 * MS, 100 * MS, 100 * MS + 150 * US, 150 * US)],
        ))
        .attribute();
    assert_eq!(a.late[1][0].cause, Cause::Unexplained);
}

#[test]
fn colouring_explains_a_shared_cache_only_when_the_probe_says_it_is_absent() {
    let shared = |colouring| {
        Scenario::late()
            .below(bounded("b", 40, 4 * MS, 50 * MS, vec![]))
            .colouring(colouring)
    };
    let with = |colouring| shared(colouring).attribute().late[0][0].clone();
    let late = with(Colouring::NotEffective);
    assert_eq!(late.cause, Cause::ColouringNotEffective);
    assert_explains(&late, "shares the last-level cache with b");
    assert_eq!(
        with(Colouring::Inconclusive).cause,
        Cause::ColouringNotEffective
    );
    assert_eq!(with(Colouring::Effective).cause, Cause::Unexplained);
    let unknown = with(Colouring::Unknown);
    assert_eq!(unknown.cause, Cause::Unexplained);
    assert_explains(&unknown, "--probe-colors");
    // Another cache: nothing shared.
    let mut separate = shared(Colouring::NotEffective);
    separate.llc_domains = vec![vec![0], vec![1]];
    assert_eq!(
        separate.attribute().late[0][0].cause,
        Cause::ColouringNotEffective,
        "b is on CPU 1 too"
    );
    separate.result.tasks[1].spec.cpus = Some(vec![0]);
    assert_eq!(separate.attribute().late[0][0].cause, Cause::Unexplained);
}

#[test]
fn without_real_time_scheduling_the_bound_does_not_apply() {
    let mut scenario = Scenario::late().stalls(&[(100 * MS, 120 * MS)]);
    scenario.result.realtime = false;
    scenario.result.tasks[0].records[1].policy = Policy::Other;
    let late = scenario.only_late();
    assert_eq!(late.cause, Cause::NotRealTime);
    assert_explains(&late, "--no-rt");
}

#[test]
fn without_a_wcrt_the_deadline_is_the_bound_and_aborted_jobs_are_skipped() {
    let mut scenario = Scenario::late();
    let task = &mut scenario.result.tasks[0];
    task.spec.bound = None;
    task.records[1].finish_ns = Some(T0 + 230 * MS);
    task.records
        .push(JobRecord::never_started(2, 0, T0 + 200 * MS, T0 + 300 * MS));
    let a = scenario.attribute();
    assert_eq!(a.late[0].len(), 1);
    let late = &a.late[0][0];
    assert_eq!(
        (late.bound, late.bound_ns, late.exceedance_ns),
        (BoundKind::Deadline, 100 * MS, 30 * MS)
    );
    assert_eq!(late.wcet_ns, None);
    assert_eq!(a.stall_ns[0].len(), 3);
    // No analysis to contradict: a result, not an unexplained
    // exceedance of the analysis' bound.
    assert_eq!(late.cause, Cause::NoAnalysis);
    assert_explains(late, "'a'");
    let counts = CauseCounts::of(&a.late[0]);
    assert_eq!((counts.no_analysis, counts.total()), (1, 1));
    assert_eq!(counts.unexplained, 0);
    assert_eq!(counts.describe(), "no analysis 1");
}

/// `a` (FIFO 50) has a WCRT of 5 ms and is 10 ms late with nothing to
/// explain it; `p` (FIFO 40) has none (the analysis diverged past its
/// deadline of 100 ms) and misses it by 30 ms.
fn unexplained_and_predicted() -> Scenario {
    Scenario::late().colouring(Colouring::Effective).below(task(
        "p",
        40,
        4 * MS,
        None,
        vec![job(0, 300 * MS, 300 * MS, 430 * MS, 4 * MS)],
    ))
}

#[test]
fn a_miss_the_analysis_predicted_is_not_unexplained() {
    let a = unexplained_and_predicted().attribute();
    let predicted = &a.late[1][0];
    assert_eq!(a.late[1].len(), 1);
    assert_eq!(
        (predicted.bound, predicted.bound_ns, predicted.exceedance_ns),
        (BoundKind::Deadline, 100 * MS, 30 * MS)
    );
    assert_eq!(predicted.cause, Cause::Predicted);
    assert_eq!(
        predicted.explanation,
        "predicted: the analysis finds no WCRT for 'p' within its deadline D 100.00 ms \
         (its response-time iteration passed D): it said this task can miss"
    );
    assert_eq!(a.cause[1], vec![Some(Cause::Predicted)]);
    // A cause with evidence still comes first.
    let stalled = unexplained_and_predicted()
        .stalls(&[(310 * MS, 345 * MS)])
        .attribute();
    assert_eq!(stalled.late[1][0].cause, Cause::HostStall);
}

#[test]
fn the_unexplained_count_is_the_unexplained_rows_of_jobs_csv() {
    let result = unexplained_and_predicted().result;
    let mut csv = Vec::new();
    crate::output::write_jobs_csv(&mut csv, &result).unwrap();
    let mut reader = csv::Reader::from_reader(csv.as_slice());
    let column = reader
        .headers()
        .unwrap()
        .iter()
        .position(|h| h == "cause")
        .unwrap();
    let causes: Vec<String> = reader
        .records()
        .map(|row| row.unwrap()[column].to_string())
        .collect();
    let rows = |cause: Cause| causes.iter().filter(|c| *c == cause.name()).count() as u64;
    assert_eq!((rows(Cause::Unexplained), rows(Cause::Predicted)), (1, 1));
    let summary = crate::output::summarize("x.toml", 1000 * MS, &result);
    assert_eq!(summary.unexplained, rows(Cause::Unexplained));
    assert_eq!(summary.causes.unexplained, rows(Cause::Unexplained));
    assert_eq!(summary.causes.predicted, rows(Cause::Predicted));
    assert_eq!(summary.causes.total(), 2);
}

/// A completed job like [`job`] that started on `cpu` and ended on
/// `cpu_end` (times from T0).
pub(super) fn job_on(
    number: u64,
    release: u64,
    start: u64,
    finish: u64,
    exec: u64,
    cpu: u32,
    cpu_end: u32,
) -> JobRecord {
    JobRecord {
        cpu,
        cpu_end,
        ..job(number, release, start, finish, exec)
    }
}

/// A run of tasks `t0`, `t1`, … at the given FIFO priorities with these
/// jobs, each with the analysis' C `c`.
pub(super) fn run_of(tasks: Vec<(u8, Vec<JobRecord>)>, c: u64) -> RunResult {
    let tasks = tasks
        .into_iter()
        .enumerate()
        .map(|(i, (prio, records))| bounded(&format!("t{i}"), prio, c, 100 * MS, records))
        .collect();
    Scenario::of(tasks).result
}

/// A program body's memory is not coloured, so it can evict any
/// coloured working set: the run's isolation cannot be proven, and a
/// coloured task's late job sees the program among those sharing its cache.
#[test]
fn a_program_task_voids_the_isolation_proof_and_shares_the_cache() {
    let colored = task("colored", 50, 10 * MS, Some(20 * MS), vec![]);
    let mut program = task("filter", 40, 10 * MS, Some(20 * MS), vec![]);
    program.placement = Placement::None;
    program.spec.program = Some(tinct_rt::spec::ProgramSpec {
        command: vec!["./filter".into()],
        protocol: tinct_core::model::JobProtocol::Lines,
        stderr: None,
        frames: None,
        mmap: false,
        env: Vec::new(),
    });
    let tasks = [colored, program];
    let spec = tinct_rt::testing::run_spec(tasks.iter().map(|t| t.spec.clone()).collect(), MS);
    let proof = crate::isolation::prove(&spec, &tasks, Err("not read".into()));
    assert_eq!(
        proof.run.status,
        crate::isolation::IsolationStatus::Unavailable
    );
    assert!(
        proof
            .run
            .reason
            .as_deref()
            .is_some_and(|r| r.contains("task 'filter' runs a program")),
        "{:?}",
        proof.run.reason
    );
    let mut result = run_of(vec![], MS);
    result.tasks = tasks.to_vec();
    assert_eq!(
        super::cache_sharing::shares_cache(&result, 0, &[]),
        vec!["filter".to_string()]
    );
}

/// A reservation (runtime 5 ms, period 100 ms) with the analysis' C 4 ms
/// and bound 8 ms.
fn reservation_task(records: Vec<JobRecord>) -> TaskRun {
    let reservation = Scheduling {
        deadline: Some(tinct_sys::sched::DeadlineParams {
            runtime_ns: 5 * MS,
            deadline_ns: 100 * MS,
            period_ns: 100 * MS,
        }),
        ..Scheduling::of(Policy::Deadline)
    };
    let mut run = bounded("dl", 50, 4 * MS, 8 * MS, records);
    run.spec.scheduling = reservation;
    run.scheduling = reservation;
    run
}

/// `job(...)` under SCHED_DEADLINE.
fn dl_job(n: u64, release: u64, start: u64, finish: u64, exec: u64) -> JobRecord {
    JobRecord {
        policy: Policy::Deadline,
        ..job(n, release, start, finish, exec)
    }
}

/// Job 1 executed 6 ms, past its runtime, and ended 105 ms after its
/// release, after the replenishment one period on: the CBS throttled it.
/// Job 2 executed 4.5 ms, within its runtime and 0.5 ms above C, and ended
/// 0.4 ms past its bound: execution above C.
#[test]
fn a_reservation_job_past_its_runtime_is_a_cbs_throttle() {
    let a = Scenario::of(vec![reservation_task(vec![
        dl_job(0, 0, 0, 4 * MS, 4 * MS),
        dl_job(1, 100 * MS, 100 * MS, 205 * MS, 6 * MS),
        dl_job(2, 300 * MS, 300 * MS, 308 * MS + 400 * US, 9 * MS / 2),
    ])])
    .attribute();
    let causes: Vec<Cause> = a.late[0].iter().map(|l| l.cause).collect();
    assert_eq!(causes, [Cause::CbsThrottle, Cause::ExecAboveC]);
    assert_explains(
        &a.late[0][0],
        "executed 1.00 ms past its SCHED_DEADLINE runtime 5.00 ms",
    );
    assert_eq!(CauseCounts::of(&a.late[0]).cbs_throttle, 1);
}

/// A job within its runtime, released while the job before it (which
/// overran) still ran, waited for the same replenishment; one not queued
/// behind it did not.
#[test]
fn a_job_queued_behind_its_tasks_overrun_is_a_cbs_throttle_too() {
    let a = Scenario::of(vec![reservation_task(vec![
        dl_job(1, 100 * MS, 100 * MS, 205 * MS, 6 * MS),
        dl_job(2, 200 * MS, 205 * MS, 209 * MS, 4 * MS),
        dl_job(3, 300 * MS, 300 * MS, 309 * MS, 4 * MS),
    ])])
    .attribute();
    let causes: Vec<Cause> = a.late[0].iter().map(|l| l.cause).collect();
    assert_eq!(causes[..2], [Cause::CbsThrottle, Cause::CbsThrottle]);
    assert_explains(
        &a.late[0][1],
        "job 1 of its task, earlier in its busy window",
    );
    assert_ne!(
        causes[2],
        Cause::CbsThrottle,
        "job 3 was not queued behind job 1"
    );
}

/// No throttle is claimed where none can have been: a job that finished
/// before the replenishment, one that slept (a fresh budget at its
/// wake-up), one under GRUB reclaiming, one not run under SCHED_DEADLINE.
#[test]
fn an_overrun_that_cannot_have_waited_for_a_replenishment_is_no_cbs_throttle() {
    let early = dl_job(1, 100 * MS, 100 * MS, 140 * MS, 6 * MS);
    let slept = JobRecord {
        voluntary_switches: 1,
        ..dl_job(1, 100 * MS, 100 * MS, 205 * MS, 6 * MS)
    };
    let fifo = JobRecord {
        policy: Policy::Fifo(50),
        ..dl_job(1, 100 * MS, 100 * MS, 205 * MS, 6 * MS)
    };
    for record in [early, slept, fifo] {
        let late = Scenario::of(vec![reservation_task(vec![record])]).only_late();
        assert_ne!(late.cause, Cause::CbsThrottle, "{record:?}");
    }
    let mut reclaiming = reservation_task(vec![dl_job(1, 100 * MS, 100 * MS, 205 * MS, 6 * MS)]);
    reclaiming.spec.scheduling.reclaim = true;
    let late = Scenario::of(vec![reclaiming]).only_late();
    assert_ne!(late.cause, Cause::CbsThrottle);
}
