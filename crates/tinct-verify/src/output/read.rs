//! A run directory read back: what `tinct report` and the run's own
//! figures are drawn from.
//!
//! [`RunFiles::read`] reads `summary.json`, `jobs.csv` and, when present,
//! `analysis.json` (the analysis of the plan the run came from) and
//! `machine.json`, each into the type that writes it: [`Summary`],
//! [`JobRow`], [`Analysis`] and [`Machine`]; tests write, read back and
//! compare. Those ignore keys they do not know, so a key a newer tinct
//! added does not stop the read (a value they do not know, such as a new
//! scheduling policy or cause, does). Every key they write is required
//! when read, with no default for files of an older format (none is in
//! use): a summary without its late jobs' attribution is refused rather
//! than read as "none unexplained", a bound without its B_i rather than
//! read as "no blocking". Only an optional value that is absent when not
//! known (a sentinel that did not run, pages not checked) reads as absent.
//! A file that does not read is bad input naming the file, the line and
//! what was expected. `tinct run` draws its figures from what it wrote,
//! held in memory, so a completed run never fails on reading itself.

use super::jobs_csv::JobRow;
use super::summary::Summary;
use std::path::{Path, PathBuf};
use tinct_base::InputError;
use tinct_core::analysis::{Analysis, TaskReport};
use tinct_rt::{Result, RtError};
use tinct_sys::machine::Machine;

/// A run directory as read back.
#[derive(Clone, Debug)]
pub struct RunFiles {
    /// The directory.
    pub dir: PathBuf,
    /// `summary.json`.
    pub summary: Summary,
    /// `summary.json` whole, as written (with any key a newer tinct added).
    pub summary_raw: serde_json::Value,
    /// `jobs.csv`, in file order.
    pub jobs: Vec<JobRow>,
    /// `analysis.json`, when the run came from an analysed plan.
    pub analysis: Option<Analysis>,
    /// `machine.json`, when present.
    pub machine: Option<Machine>,
}

/// The field of the errors of a run directory's files.
const RUN_FILE: &str = "run directory file";

fn bad(path: &Path, line: Option<usize>, field: &str, expected: &str, found: String) -> RtError {
    RtError::Input(InputError {
        file: path.display().to_string(),
        line,
        field: field.into(),
        expected: expected.into(),
        found,
    })
}

/// The largest run-directory file `tinct report` reads (summary.json,
/// jobs.csv): far above a run's (a million jobs' jobs.csv is ~110 MB),
/// and a device or an endless file is refused, not read without end.
pub const MAX_RUN_FILE_BYTES: u64 = 512 << 20;

fn read_text(path: &Path, field: &str, expected: &str) -> Result<String> {
    tinct_core::format::read_text(path, MAX_RUN_FILE_BYTES, field)
        .map_err(|e| bad(path, None, field, expected, e.found))
}

/// The JSON file `path` read as a `T`; bad input naming the file, the line
/// (of a value that does not read), `field` and what was `expected` if it
/// does not read.
pub fn json_file<T: serde::de::DeserializeOwned>(
    path: &Path,
    field: &str,
    expected: &str,
) -> Result<T> {
    let text = read_text(path, field, expected)?;
    serde_json::from_str(&text)
        .map_err(|e| bad(path, Some(e.line()), field, expected, e.to_string()))
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path, expected: &str) -> Result<T> {
    json_file(path, RUN_FILE, expected)
}

fn read_jobs(path: &Path) -> Result<Vec<JobRow>> {
    const EXPECTED: &str = "jobs.csv as `tinct run` writes it (a header, then one row per job)";
    let text = read_text(path, RUN_FILE, EXPECTED)?;
    csv::Reader::from_reader(text.as_bytes())
        .deserialize::<JobRow>()
        .map(|row| {
            row.map_err(|e| {
                let line = e.position().and_then(|p| usize::try_from(p.line()).ok());
                bad(path, line, RUN_FILE, EXPECTED, e.to_string())
            })
        })
        .collect()
}

/// Checks that `jobs` (read from `path`) hold the jobs `summary` counts,
/// task by task and outcome by outcome: a directory whose files disagree
/// (an emptied or truncated jobs.csv beside its summary, files of two runs)
/// is bad input, never a report of the summary alone (an empty jobs.csv
/// once read CLEAN).
fn agree(path: &Path, summary: &Summary, jobs: &[JobRow]) -> Result<()> {
    use tinct_rt::record::{Accounting, Outcome};
    let mut counted: std::collections::BTreeMap<&str, Accounting> = Default::default();
    for row in jobs {
        let a = counted.entry(row.task.as_str()).or_default();
        a.released += 1;
        match row.outcome {
            Outcome::Completed => a.completed += 1,
            Outcome::Missed => a.missed += 1,
            Outcome::Aborted => a.aborted += 1,
        }
    }
    let words = |a: &Accounting| {
        format!(
            "{} released ({} completed, {} missed, {} aborted)",
            a.released, a.completed, a.missed, a.aborted
        )
    };
    for task in &summary.tasks {
        let rows = counted.remove(task.name.as_str()).unwrap_or_default();
        if rows != task.jobs {
            return Err(bad(
                path,
                None,
                RUN_FILE,
                &format!(
                    "the jobs summary.json beside it counts for task '{}': {}",
                    task.name,
                    words(&task.jobs)
                ),
                format!("{} rows: the run directory is inconsistent", words(&rows)),
            ));
        }
    }
    if let Some((task, rows)) = counted.first_key_value() {
        return Err(bad(
            path,
            None,
            RUN_FILE,
            "only the tasks of summary.json beside it",
            format!(
                "task '{task}' ({}), which summary.json does not have: the run directory is \
                 inconsistent",
                words(rows)
            ),
        ));
    }
    Ok(())
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
        let summary: Summary = read_json(&summary_path, SUMMARY)?;
        let summary_raw: serde_json::Value = read_json(&summary_path, SUMMARY)?;
        let jobs_path = dir.join("jobs.csv");
        let jobs = read_jobs(&jobs_path)?;
        agree(&jobs_path, &summary, &jobs)?;
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
    pub fn analysed(&self, task: &str) -> Option<&TaskReport> {
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

    /// `value` as the run directory writes it.
    fn pretty<T: serde::Serialize>(value: &T) -> String {
        serde_json::to_string_pretty(value).unwrap() + "\n"
    }

    /// The file `name` of `dir` equals `value` written again.
    fn assert_same_bytes<T: serde::Serialize>(dir: &Path, name: &str, value: &T) {
        let file = std::fs::read_to_string(dir.join(name)).unwrap();
        assert!(file == pretty(value), "{name} reads back to other bytes");
    }

    /// A jobs.csv that does not hold the jobs the summary
    /// counts (emptied to its header, a row lost, a task the summary does
    /// not have) is bad input naming jobs.csv, never read as a clean run.
    #[test]
    fn a_jobs_csv_that_disagrees_with_the_summary_is_refused() {
        let (dir, _) = written();
        let path = dir.path().join("jobs.csv");
        let text = std::fs::read_to_string(&path).unwrap();
        let header = text.lines().next().unwrap().to_string();
        let lines: Vec<&str> = text.lines().collect();
        let one_lost = lines[..lines.len() - 1].join("\n") + "\n";
        let stranger = text.clone() + &lines[1].replacen("a,", "zz,", 1) + "\n";
        for (what, jobs) in [
            ("empty", header + "\n"),
            ("a row lost", one_lost),
            ("a task not in the summary", stranger),
        ] {
            std::fs::write(&path, jobs).unwrap();
            match RunFiles::read(dir.path()) {
                Err(RtError::Input(InputError {
                    file,
                    expected,
                    found,
                    ..
                })) => {
                    assert_eq!(file, path.display().to_string(), "{what}");
                    assert!(found.contains("inconsistent"), "{what}: {found}");
                    assert!(expected.contains("summary.json"), "{what}: {expected}");
                }
                other => panic!("{what}: expected bad input, got {other:?}"),
            }
        }
        std::fs::write(&path, text).unwrap();
        assert!(
            RunFiles::read(dir.path()).is_ok(),
            "the written file agrees"
        );
    }

    #[test]
    fn what_the_writers_wrote_reads_back() {
        let (_dir, files) = written();
        let r = result();
        let s = summarize("x.toml", 400, &r);
        let (read, task) = (&files.summary, &files.summary.tasks[0]);
        assert_eq!(
            (
                read.source.as_str(),
                read.misses,
                read.balanced,
                read.realtime
            ),
            (s.source.as_str(), s.misses, s.balanced, s.realtime)
        );
        assert_eq!(read.bound_exceeded, s.bound_exceeded);
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
        assert_eq!(task.policy, tinct_rt::spec::Policy::Fifo(90));
        assert_eq!(files.jobs.len(), 4);
        assert_eq!(files.jobs[2].response_ns, Some(150));
        assert_eq!(files.jobs[3].outcome, tinct_rt::record::Outcome::Aborted);
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
    fn summary_and_analysis_json_read_back_equal_and_write_the_same_bytes() {
        let (dir, files) = written();
        assert_eq!(files.summary, summarize("x.toml", 400, &result()));
        assert_eq!(files.analysis, Some(analysis()));
        assert_same_bytes(dir.path(), "summary.json", &files.summary);
        assert_same_bytes(dir.path(), "analysis.json", &analysis());
        assert_same_bytes(dir.path(), "machine.json", &files.machine);
        let again = RunFiles::read(dir.path()).unwrap();
        assert_eq!(again.summary, files.summary);

        // The parts the fixture leaves at their defaults, set.
        use super::super::summary::{SentinelCpu, SentinelSummary};
        use crate::attribution::Colouring;
        use tinct_rt::spec::WatchdogMode;
        use tinct_rt::watchdog::StopReason;
        let r = result();
        let mut s = summarize("x.toml", 400, &r);
        s.stop = StopReason::Overrun {
            task: "a".into(),
            job: 2,
            deadline_ns: 100,
            factor: 2.5,
        };
        s.stop_description = s.stop.describe();
        s.watchdog = WatchdogMode::All;
        s.notes = vec!["a note".into()];
        s.colored_pages_moved = Some(3);
        s.colored_pages_absent = Some(1);
        s.colouring = Colouring::Effective;
        s.sentinel = Some(SentinelSummary {
            period_ns: 1_000_000,
            threshold_ns: 200_000,
            top_priority: true,
            cpus: vec![SentinelCpu {
                cpu: 1,
                wakes: 400,
                cpu_time_ns: Some(12_345),
                cpu_share: Some(12_345.0 / 400.0),
                stalls: 2,
                stalled_ns: 700_000,
                longest_ns: 500_000,
                steal_ns: None,
            }],
        });
        s.tasks[0].placement = tinct_rt::memory::Placement::Uncolored {
            bytes: 4096,
            partitions_requested: vec![1, 2],
            reason: "frame numbers unreadable".into(),
        };
        s.tasks[0].llc_misses = tinct_report::Counts::of(&[3, 5, 8]);
        s.tasks[0].counters_unavailable = None;
        s.tasks[0].error = Some("a setup error".into());
        let (dir, files) = crate::output::fixture::write(&s, &r, None);
        assert_eq!(files.summary, s);
        assert_eq!(files.analysis, None);
        assert_same_bytes(dir.path(), "summary.json", &s);
    }

    /// Removes `keys` from the object `value`.
    fn remove(value: &mut serde_json::Value, keys: &[&str]) {
        let object = value.as_object_mut().unwrap();
        for key in keys {
            assert!(object.remove(*key).is_some(), "{key} was written");
        }
    }

    /// Every key a summary.json is written with is required when read
    /// (no file of an older format is in use): a missing one is refused,
    /// naming the file and the key, never read as a default. A missing
    /// B_i above all is not the 0 of "no blocking".
    #[test]
    fn a_summary_missing_a_key_is_refused_naming_it() {
        // (JSON pointer of the object, its keys)
        let cases: [(&str, &[&str]); 3] = [
            ("", &["watchdog", "notes", "colouring", "isolation"]),
            ("/tasks/0", &["scheduling", "phases", "blocking"]),
            (
                "/tasks/0/bound",
                &["blocking_ns", "blocking_shows", "wcrt_ns"],
            ),
        ];
        for (at, keys) in cases {
            for key in keys {
                let (dir, files) = written();
                let mut raw = files.summary_raw.clone();
                remove(raw.pointer_mut(at).unwrap(), &[key]);
                std::fs::write(dir.path().join("summary.json"), raw.to_string()).unwrap();
                let e = RunFiles::read(dir.path()).unwrap_err().to_string();
                assert!(
                    e.contains("summary.json") && e.contains(&format!("missing field `{key}`")),
                    "{at}/{key}: {e}"
                );
            }
        }
    }

    /// A summary.json without the late jobs' attribution was never
    /// attributed: reading it as "0 unexplained" would claim it was, so it
    /// is refused, naming the file and the key.
    #[test]
    fn a_summary_without_its_attribution_is_refused() {
        for key in ["unexplained", "causes"] {
            let (dir, files) = written();
            let mut raw = files.summary_raw.clone();
            remove(&mut raw, &[key]);
            std::fs::write(dir.path().join("summary.json"), raw.to_string()).unwrap();
            let e = RunFiles::read(dir.path()).unwrap_err().to_string();
            assert!(
                e.contains("summary.json") && e.contains(&format!("missing field `{key}`")),
                "{e}"
            );
        }
    }

    #[test]
    fn the_isolation_proof_reads_back_as_written() {
        use crate::isolation::{IsolationStatus, LlcModel, TaskMemory, prove_with};
        use tinct_rt::memory::Placement;
        let placement = Placement::Colored {
            bytes: 2 * 4096,
            partitions: vec![1],
            colors: "0-1".into(),
            color_count: 2,
            machine_colors: 32,
            pages: 2,
            stack_bytes: 0,
            stack_frames: Vec::new(),
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
            program: false,
        };
        // Code on frame 1 (colour 1, the task's): the residue's fields
        // are written and read back too.
        let footprint = tinct_sys::footprint::Footprint {
            page_size: 4096,
            kinds: vec![(
                tinct_sys::footprint::MappingKind::Code,
                tinct_sys::footprint::ResidentPages {
                    pages: 1,
                    frames: vec![33],
                },
            )],
        };
        let proof = prove_with(&[task], Ok(&model), Some("a rule".into()), Ok(&footprint));
        assert_eq!(proof.run.status, IsolationStatus::IsolatedExcept);
        let r = result();
        let mut s = summarize("x.toml", 400, &r);
        s.attach_isolation(proof.clone());
        let (dir, files) = crate::output::fixture::write(&s, &r, None);
        assert_eq!(files.summary.isolation, proof.run);
        assert_eq!(files.summary.tasks[0].isolation, proof.tasks[0]);
        assert_eq!(files.summary_raw["tasks"][0]["isolation"]["sets"], 128);
        // The frames stay out of the file; everything else reads back.
        assert_same_bytes(dir.path(), "summary.json", &s);
        let mut without_frames = s.clone();
        if let Placement::Colored { frames, .. } = &mut without_frames.tasks[0].placement {
            frames.clear();
        }
        assert_eq!(files.summary, without_frames);
    }

    #[test]
    fn a_broken_file_is_bad_input_naming_it_and_its_line() {
        let (dir, _) = written();
        let jobs = dir.path().join("jobs.csv");
        let mut text = std::fs::read_to_string(&jobs).unwrap();
        text.push_str("a,not-a-number\n");
        std::fs::write(&jobs, text).unwrap();
        match RunFiles::read(dir.path()) {
            Err(RtError::Input(InputError { file, line, .. })) => {
                assert!(file.ends_with("jobs.csv"));
                assert_eq!(line, Some(6));
            }
            other => panic!("expected bad input, got {other:?}"),
        }
        std::fs::write(dir.path().join("summary.json"), "{\n\"source\": 1\n}").unwrap();
        match RunFiles::read(dir.path()) {
            Err(RtError::Input(InputError {
                file, line, found, ..
            })) => {
                assert!(file.ends_with("summary.json"));
                assert_eq!(line, Some(2), "the line of the bad value: {found}");
            }
            other => panic!("expected bad input, got {other:?}"),
        }
    }
}
