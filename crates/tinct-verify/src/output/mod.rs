//! The verdict of a run and the run directory: `summary.json`, `jobs.csv`,
//! and the traces `trace.perfetto-trace` (Perfetto's protobuf) and
//! `trace.json` (Chrome trace events), one track per task.
//!
//! All three are written after the threads have been joined (at the end of
//! the run, after a watchdog stop, or after SIGINT/SIGTERM), from the
//! records in memory. Times in the files are nanoseconds relative to the
//! common release (`trace.json` uses microseconds, as its format requires).

//!
//! Modules: [`summary`] (the verdict), [`jobs_csv`], [`trace`] (the
//! records handed to tinct-report's trace writers), [`rtapp_log`]
//! (rt-app-style per-thread logs when `log_basename` is given),
//! [`run_dir`] (the directory: checked before the first release, written
//! atomically, with a fallback), [`read`] (a run directory read back),
//! [`figures`] (kim2013 Fig. 8 and 10 and the distributions, drawn from
//! the files), [`page`] (the HTML report of a run directory) and
//! [`verdict_text()`] (the verdict as `tinct run` prints it).

pub mod figures;
pub mod jobs_csv;
pub mod page;
pub mod read;
pub mod rtapp_log;
pub mod run_dir;
pub mod summary;
pub mod trace;
pub mod verdict_text;

pub use jobs_csv::{JobRow, write_jobs_csv};
pub use read::RunFiles;
pub use run_dir::{
    PROGRAMS_DIR, RunContext, RunDir, Written, program_file_name, program_stderr_name,
};
pub use summary::{Summary, TaskVerdict, scheduling_note, summarize, verdict_word};
pub use trace::trace_run;
pub use verdict_text::{UNEXPLAINED_EXIT, verdict_alarms, verdict_text};

/// `t − t0`, or 0 before `t0` (a job never started has no instants).
fn relative(t: u64, t0: u64) -> u64 {
    t.saturating_sub(t0)
}

/// A run of one task with every kind of job, for the tests of the writers.
#[cfg(test)]
pub(crate) mod fixture {
    use tinct_rt::memory::Placement;
    use tinct_rt::record::{JobRecord, Outcome};
    use tinct_rt::runtime::{RunResult, TaskRun};
    use tinct_rt::spec::{Bound, Policy, Scheduling, WatchdogMode};
    use tinct_rt::testing::TaskBuilder;
    use tinct_rt::watchdog::StopReason;

    fn record(
        job: u64,
        release: u64,
        start: u64,
        finish: u64,
        deadline: u64,
        outcome: Outcome,
    ) -> JobRecord {
        JobRecord {
            job,
            phase: 0,
            release_ns: release,
            jitter_ns: 0,
            deadline_ns: deadline,
            start_ns: start,
            finish_ns: Some(finish),
            exec_ns: finish - start,
            run_ns: finish - start,
            slack_ns: 0,
            cpu: 1,
            cpu_end: 1,
            policy: Policy::Fifo(90),
            nice: 0,
            preemptions: 0,
            voluntary_switches: 0,
            counters: Default::default(),
            flow: Default::default(),
            outcome,
        }
    }

    /// The analysis of a plan with the fixture's task `a` (T = 100 ns,
    /// C = 10 ns, core 1).
    pub(crate) fn analysis() -> tinct_core::analysis::Analysis {
        let set = tinct_core::format::parse(
            include_str!("../../tests/fixtures/one_task_plan.toml"),
            "fixture.toml",
            tinct_core::format::Syntax::Toml,
        )
        .unwrap();
        tinct_core::analysis::analyze(&set).unwrap()
    }

    /// What the fixture's run directory records beside the jobs.
    pub(crate) fn context(
        analysis: Option<&tinct_core::analysis::Analysis>,
    ) -> crate::output::RunContext<'_> {
        crate::output::RunContext {
            analysis,
            machine: tinct_sys::machine::Machine::describe(),
        }
    }

    /// The fixture's run directory, written and read back.
    pub(crate) fn written(with_analysis: bool) -> (tempfile::TempDir, crate::output::RunFiles) {
        let r = result();
        let a = analysis();
        write(
            &crate::output::summarize("x.toml", 400, &r),
            &r,
            with_analysis.then_some(&a),
        )
    }

    /// The run directory of `summary`, `result` and `analysis`, written
    /// to a new temporary directory and read back.
    pub(crate) fn write(
        summary: &crate::output::Summary,
        result: &RunResult,
        analysis: Option<&tinct_core::analysis::Analysis>,
    ) -> (tempfile::TempDir, crate::output::RunFiles) {
        let dir = tempfile::tempdir().unwrap();
        crate::output::RunDir::prepare(dir.path())
            .unwrap()
            .write(summary, result, &context(analysis))
            .unwrap();
        let files = crate::output::RunFiles::read(dir.path()).unwrap();
        (dir, files)
    }

    pub(crate) fn result() -> RunResult {
        let spec = TaskBuilder::periodic("a", 100)
            .cpu(1)
            .fifo(90)
            .deadline(100)
            .steps(vec![])
            .bound(Bound {
                wcet_ns: 10,
                wcrt_ns: Some(30),
                wcrt_nocint_ns: Some(20),
                blocking_ns: Some(0),
                blocking_shows: tinct_rt::spec::BlockingShows::Nowhere,
            })
            .build();
        RunResult {
            start_ns: 1000,
            end_ns: 1400,
            stop: StopReason::Signal,
            realtime: true,
            memory_locked: true,
            rt_throttling: "950000 µs per 1000000 µs".into(),
            watchdog_factor: 3.0,
            watchdog: WatchdogMode::Realtime,
            rtapp_log: None,
            notes: vec![],
            sentinel: None,
            llc_domains: vec![],
            colouring: Default::default(),
            mutexes: vec![],
            footprint: Err("not read".into()),
            tasks: vec![TaskRun {
                spec,
                tid: 4242,
                records: vec![
                    record(0, 1000, 1002, 1012, 1100, Outcome::Completed),
                    JobRecord {
                        policy: Policy::Other,
                        nice: -3,
                        ..record(1, 1100, 1101, 1125, 1200, Outcome::Completed)
                    },
                    record(2, 1200, 1201, 1350, 1300, Outcome::Missed),
                    JobRecord::never_started(3, 0, 1300, 1400),
                ],
                placement: Placement::None,
                rates: None,
                work: vec![],
                scheduling: Scheduling::of(Policy::Fifo(90)),
                counters_unavailable: None,
                error: None,
                program: None,
            }],
        }
    }
}
