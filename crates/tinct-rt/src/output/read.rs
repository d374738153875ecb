//! A run directory read back: what `tinct report` and the run's own
//! figures are drawn from.
//!
//! [`RunFiles::read`] reads `summary.json`, `jobs.csv` and, when present,
//! `analysis.json` (the analysis of the plan the run came from) and
//! `machine.json`. The summary and the analysis are read into views of the
//! fields a report needs ([`SummaryFile`], [`AnalysisFile`]), which ignore
//! fields they do not know, so a directory written by a newer tinct still
//! reads; a test keeps each view equal to what the writer wrote. A file
//! that does not read is bad input naming the file, the line and what was
//! expected.

use super::jobs_csv::JobRow;
use crate::isolation::{RunIsolation, TaskIsolation};
use crate::{Result, RtError};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use tinct_report::{Counts, Durations};
use tinct_sys::machine::Machine;

/// Job counts of a task.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct JobCounts {
    /// Released.
    pub released: u64,
    /// Finished by the deadline.
    pub completed: u64,
    /// Finished late.
    pub missed: u64,
    /// Stopped or never started.
    pub aborted: u64,
}

/// The analysis' bound of a task, as `summary.json` holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
pub struct BoundFile {
    /// C at the task's partitions.
    pub wcet_ns: u64,
    /// WCRT with cache interference (kim2013 Eq. 2).
    pub wcrt_ns: Option<u64>,
    /// WCRT without cache interference (classic RTA).
    pub wcrt_nocint_ns: Option<u64>,
}

/// One task of `summary.json`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct TaskFile {
    /// Task name.
    pub name: String,
    /// CPUs it was pinned to.
    pub cpus: Option<Vec<u32>>,
    /// The policy it ran under, as written (e.g. `{"policy":"fifo","priority":90}`).
    pub policy: serde_json::Value,
    /// Relative deadline.
    pub deadline_ns: Option<u64>,
    /// Job counts.
    pub jobs: JobCounts,
    /// Response times of finished jobs.
    pub response: Durations,
    /// Execution times of finished jobs.
    pub exec: Durations,
    /// Release latencies of started jobs.
    pub latency: Durations,
    /// Preemptions over all jobs.
    pub preemptions: u64,
    /// Jobs that ended on another CPU.
    pub migrations: u64,
    /// The analysis' bound, if any.
    pub bound: Option<BoundFile>,
    /// Observed max response time > WCRT CInt.
    pub exceeds_bound: bool,
    /// Observed max response time > WCRT NoCInt.
    pub exceeds_bound_nocint: bool,
    /// Where the working set lived, as written.
    pub placement: serde_json::Value,
    /// The proof that its working set is isolated (absent in run
    /// directories of older versions).
    #[serde(default)]
    pub isolation: Option<TaskIsolation>,
    /// LLC misses per finished job, when counted.
    pub llc_misses: Option<Counts>,
    /// Instructions per finished job, when counted.
    pub instructions: Option<Counts>,
    /// Why counters are missing.
    pub counters_unavailable: Option<String>,
    /// Setup error or panic.
    pub error: Option<String>,
}

/// `summary.json`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct SummaryFile {
    /// Workload file.
    pub source: String,
    /// Scheduling, said plainly.
    pub scheduling: String,
    /// True under real-time policies.
    pub realtime: bool,
    /// Planned duration.
    pub duration_ns: u64,
    /// From the common release to the last finish.
    pub observed_ns: u64,
    /// Why the run ended, in words.
    pub stop_description: String,
    /// `mlockall` succeeded.
    pub memory_locked: bool,
    /// RT throttling as found.
    pub rt_throttling: String,
    /// Watchdog factor.
    pub watchdog_factor: f64,
    /// Per task.
    pub tasks: Vec<TaskFile>,
    /// Tasks whose observed response time exceeded their bound.
    pub bound_exceeded: Vec<String>,
    /// Deadline misses.
    pub misses: u64,
    /// Every task's counts balance.
    pub balanced: bool,
    /// The proof that the colouring isolates (not checked in run
    /// directories of older versions).
    #[serde(default = "RunIsolation::not_checked")]
    pub isolation: RunIsolation,
}

/// One task of `analysis.json` (tinct-core's analysis of the plan).
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct AnalysedTask {
    /// Task name.
    pub name: String,
    /// Core.
    pub core: u32,
    /// Priority rank (1 = highest).
    pub priority: u32,
    /// S(i), 1-based.
    pub partitions: Vec<u32>,
    /// T_i.
    pub period_ns: u64,
    /// D_i.
    pub deadline_ns: u64,
    /// C_i at |S(i)|.
    pub wcet_ns: u64,
    /// ω_{i,n}.
    pub warmup_ns: u64,
    /// WCRT with cache interference (Eq. 2), if within D.
    pub wcrt_ns: Option<u64>,
    /// WCRT without, if within D.
    pub wcrt_nocint_ns: Option<u64>,
    /// Eq. (2) meets the deadline.
    pub schedulable: bool,
    /// Notes of the analysis.
    #[serde(default)]
    pub notes: Vec<String>,
}

/// One core of `analysis.json`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct AnalysedCore {
    /// Core number.
    pub core: u32,
    /// Its tasks, highest priority first.
    pub tasks: Vec<String>,
    /// Partitions used on it.
    pub partitions: Vec<u32>,
    /// Eq. (1): Σ (C_i + ω_{i,n} + γ_{i,n}) / T_i.
    pub utilization: f64,
    /// Σ C_i / T_i.
    pub utilization_nocint: f64,
    /// Liu-Layland bound.
    pub utilization_bound: f64,
    /// Every task meets its deadline and memory is feasible.
    pub schedulable: bool,
    /// Why not.
    #[serde(default)]
    pub reasons: Vec<String>,
}

/// `analysis.json`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct AnalysisFile {
    /// The verdict of the analysis.
    pub schedulable: bool,
    /// Δ, ns.
    pub refill_ns: u64,
    /// Per task.
    pub tasks: Vec<AnalysedTask>,
    /// Per core.
    pub cores: Vec<AnalysedCore>,
    /// Why not schedulable.
    #[serde(default)]
    pub reasons: Vec<String>,
}

/// A run directory as read back.
#[derive(Clone, Debug)]
pub struct RunFiles {
    /// The directory.
    pub dir: PathBuf,
    /// `summary.json`.
    pub summary: SummaryFile,
    /// `summary.json` whole, for what the view leaves out.
    pub summary_raw: serde_json::Value,
    /// `jobs.csv`, in file order.
    pub jobs: Vec<JobRow>,
    /// `analysis.json`, when the run came from an analysed plan.
    pub analysis: Option<AnalysisFile>,
    /// `machine.json`, when present.
    pub machine: Option<Machine>,
}

fn bad(path: &Path, line: Option<usize>, expected: &str, found: String) -> RtError {
    RtError::Input {
        file: path.display().to_string(),
        line,
        field: "run directory file".into(),
        expected: expected.into(),
        found,
    }
}

fn read_text(path: &Path, expected: &str) -> Result<String> {
    std::fs::read_to_string(path).map_err(|e| bad(path, None, expected, e.to_string()))
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path, expected: &str) -> Result<T> {
    let text = read_text(path, expected)?;
    serde_json::from_str(&text).map_err(|e| bad(path, Some(e.line()), expected, e.to_string()))
}

fn read_jobs(path: &Path) -> Result<Vec<JobRow>> {
    const EXPECTED: &str = "jobs.csv as `tinct run` writes it (a header, then one row per job)";
    let text = read_text(path, EXPECTED)?;
    csv::Reader::from_reader(text.as_bytes())
        .deserialize::<JobRow>()
        .map(|row| {
            row.map_err(|e| {
                let line = e.position().and_then(|p| usize::try_from(p.line()).ok());
                bad(path, line, EXPECTED, e.to_string())
            })
        })
        .collect()
}

impl RunFiles {
    /// True if `dir` looks like a run directory (it has `summary.json`
    /// and `jobs.csv`).
    pub fn is_run_dir(dir: &Path) -> bool {
        dir.join("summary.json").is_file() && dir.join("jobs.csv").is_file()
    }

    /// Reads the run directory `dir`.
    pub fn read(dir: &Path) -> Result<RunFiles> {
        let summary_path = dir.join("summary.json");
        const SUMMARY: &str = "summary.json as `tinct run` writes it";
        let summary: SummaryFile = read_json(&summary_path, SUMMARY)?;
        let summary_raw: serde_json::Value = read_json(&summary_path, SUMMARY)?;
        let jobs = read_jobs(&dir.join("jobs.csv"))?;
        let optional = |name: &str| {
            let path = dir.join(name);
            path.is_file().then_some(path)
        };
        let analysis = optional("analysis.json")
            .map(|p| read_json(&p, "analysis.json as `tinct analyze --json` writes it"))
            .transpose()?;
        let machine = optional("machine.json")
            .map(|p| read_json(&p, "machine.json (tinct's machine description)"))
            .transpose()?;
        Ok(RunFiles {
            dir: dir.to_path_buf(),
            summary,
            summary_raw,
            jobs,
            analysis,
            machine,
        })
    }

    /// The rows of `task`'s jobs.
    pub fn jobs_of<'a>(&'a self, task: &'a str) -> impl Iterator<Item = &'a JobRow> + 'a {
        self.jobs.iter().filter(move |r| r.task == task)
    }

    /// The analysis of `task`, if the run had one.
    pub fn analysed(&self, task: &str) -> Option<&AnalysedTask> {
        self.analysis
            .as_ref()
            .and_then(|a| a.tasks.iter().find(|t| t.name == task))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::fixture::{analysis, result};
    use crate::output::summarize;

    fn written() -> (tempfile::TempDir, RunFiles) {
        crate::output::fixture::written(true)
    }

    #[test]
    fn the_views_read_back_what_the_writers_wrote() {
        let (_dir, files) = written();
        let r = result();
        let s = summarize("x.toml", 400, &r);
        let (view, task) = (&files.summary, &files.summary.tasks[0]);
        assert_eq!(
            (
                view.source.as_str(),
                view.misses,
                view.balanced,
                view.realtime
            ),
            (s.source.as_str(), s.misses, s.balanced, s.realtime)
        );
        assert_eq!(view.bound_exceeded, s.bound_exceeded);
        let written = &s.tasks[0];
        assert_eq!(task.response, written.response);
        assert_eq!(task.exec, written.exec);
        assert_eq!(
            (task.jobs.released, task.jobs.missed, task.jobs.aborted),
            (4, 1, 1)
        );
        let bound = task.bound.unwrap();
        assert_eq!(
            (bound.wcet_ns, bound.wcrt_ns, bound.wcrt_nocint_ns),
            (10, Some(30), Some(20))
        );
        assert_eq!(task.policy["policy"], "fifo");
        assert_eq!(files.jobs.len(), 4);
        assert_eq!(files.jobs[2].response_ns, Some(150));
        assert_eq!(files.jobs[3].outcome, crate::record::Outcome::Aborted);
        let a = files.analysis.as_ref().unwrap();
        let original = analysis();
        assert_eq!(a.tasks[0].period_ns, original.tasks[0].period_ns);
        assert_eq!(a.tasks[0].wcrt_ns, original.tasks[0].wcrt_ns);
        assert_eq!(a.cores[1].utilization, original.cores[1].utilization);
        assert_eq!(files.analysed("a").map(|t| t.core), Some(1));
        assert!(
            files
                .machine
                .as_ref()
                .is_some_and(|m| !m.online_cpus.is_empty())
        );
        assert!(RunFiles::is_run_dir(&files.dir));
    }

    #[test]
    fn the_isolation_proof_reads_back_as_written() {
        use crate::isolation::{IsolationStatus, LlcModel, TaskMemory, prove_with};
        use crate::memory::Placement;
        let placement = Placement::Colored {
            bytes: 2 * 4096,
            partitions: vec![1],
            colors: "0-1".into(),
            color_count: 2,
            machine_colors: 32,
            pages: 2,
            pages_outside_colors: Some(0),
            frame_drift: None,
            frames: vec![0, 1],
        };
        let model = LlcModel {
            name: "L2 1 MiB 8-way".into(),
            geometry: tinct_sim::CacheGeometry::new(1 << 20, 8, 64).unwrap(),
            page_size: 4096,
        };
        let task = TaskMemory {
            name: "a",
            cpu: Some(1),
            partitions: &[1],
            placement: &placement,
        };
        let proof = prove_with(&[task], Ok(&model), Some("a rule".into()));
        assert_eq!(proof.run.status, IsolationStatus::Isolated);
        let r = result();
        let mut s = summarize("x.toml", 400, &r);
        s.attach_isolation(proof.clone());
        let dir = tempfile::tempdir().unwrap();
        crate::output::RunDir::prepare(dir.path())
            .unwrap()
            .write(&s, &r, &crate::output::fixture::context(None))
            .unwrap();
        let files = RunFiles::read(dir.path()).unwrap();
        assert_eq!(files.summary.isolation, proof.run);
        assert_eq!(files.summary.tasks[0].isolation, proof.tasks[0]);
        assert_eq!(files.summary_raw["tasks"][0]["isolation"]["sets"], 128);

        // A run directory of an older tinct, without the proof, still reads.
        let path = dir.path().join("summary.json");
        let mut raw = files.summary_raw.clone();
        raw.as_object_mut().unwrap().remove("isolation");
        raw["tasks"][0].as_object_mut().unwrap().remove("isolation");
        std::fs::write(&path, raw.to_string()).unwrap();
        let old = RunFiles::read(dir.path()).unwrap();
        assert_eq!(old.summary.isolation.status, IsolationStatus::Unavailable);
        assert_eq!(old.summary.tasks[0].isolation, None);
    }

    #[test]
    fn a_broken_file_is_bad_input_naming_it_and_its_line() {
        let (dir, _) = written();
        let jobs = dir.path().join("jobs.csv");
        let mut text = std::fs::read_to_string(&jobs).unwrap();
        text.push_str("a,not-a-number\n");
        std::fs::write(&jobs, text).unwrap();
        match RunFiles::read(dir.path()) {
            Err(RtError::Input { file, line, .. }) => {
                assert!(file.ends_with("jobs.csv"));
                assert_eq!(line, Some(6));
            }
            other => panic!("expected bad input, got {other:?}"),
        }
        std::fs::write(dir.path().join("summary.json"), "{\n\"source\": 1\n}").unwrap();
        match RunFiles::read(dir.path()) {
            Err(RtError::Input {
                file, line, found, ..
            }) => {
                assert!(file.ends_with("summary.json"));
                assert_eq!(line, Some(2), "the line of the bad value: {found}");
            }
            other => panic!("expected bad input, got {other:?}"),
        }
    }
}
