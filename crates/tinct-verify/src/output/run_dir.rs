//! The run directory: `summary.json`, `jobs.csv`, `trace.perfetto-trace`,
//! `trace.json`, `machine.json`, `stalls.csv` (with a sentinel),
//! `analysis.json` (a run of an analysed plan) and the figures of kim2013 (`fig8-response-<task>.svg` per task
//! with a bound, `fig10-utilization.svg`), drawn from the files just
//! written ([`super::figures`]) so they equal what `tinct report` draws.
//!
//! Nothing a run recorded may be lost:
//!
//! - [`RunDir::prepare`], called before the first release, creates the
//!   directory and writes (then removes) a probe file, so a directory that
//!   cannot be written refuses the run at once as bad input instead of
//!   losing it at the end;
//! - [`RunDir::write`] writes each file atomically (a temporary file in the
//!   same directory, renamed over the name): a reader never sees half a file;
//! - if writing there fails all the same (the disk filled, the directory
//!   went away), the files already written there are removed (a directory
//!   holding `summary.json` and `jobs.csv` looks complete when it is not)
//!   and every file goes to a fallback directory under the system's
//!   temporary directory; [`Written`] says where and why.

use super::figures::run_dir_figures;
use super::jobs_csv::{job_rows, write_rows, write_stalls_csv};
use super::read::RunFiles;
use super::rtapp_log;
use super::summary::Summary;
use super::trace::trace_run;
use std::io::Write;
use std::path::{Path, PathBuf};
use tinct_base::InputError;
use tinct_core::analysis::Analysis;
use tinct_rt::runtime::RunResult;
use tinct_rt::{Result, RtError};
use tinct_sys::machine::Machine;

/// The files every run directory has (plus `analysis.json` and the
/// figures, see the module documentation).
pub const FILES: [&str; 5] = [
    "summary.json",
    "jobs.csv",
    "trace.perfetto-trace",
    "trace.json",
    "machine.json",
];

/// The run directory's subdirectory of the program bodies' stderr files
/// (`programs/<task>.stderr`).
pub const PROGRAMS_DIR: &str = "programs";

/// The file of task `name`'s program stderr in [`PROGRAMS_DIR`]
/// ([`program_file_name`] with `stderr`).
pub fn program_stderr_name(name: &str) -> String {
    program_file_name(name, "stderr")
}

/// A file of task `name`'s program in [`PROGRAMS_DIR`], `<name>.<kind>`:
/// the name with `/` as `_` and a leading `.` as `_`, so that it stays in
/// that directory whatever the name (`../x` included).
pub fn program_file_name(name: &str, kind: &str) -> String {
    let mut file = name.replace('/', "_");
    if file.starts_with('.') {
        file.replace_range(..1, "_");
    }
    format!("{file}.{kind}")
}

/// What the run directory records beside the jobs.
#[derive(Clone, Debug)]
pub struct RunContext<'a> {
    /// The analysis of the plan the run came from, if any (`analysis.json`).
    pub analysis: Option<&'a Analysis>,
    /// The machine it ran on (`machine.json`).
    pub machine: Machine,
}

/// A run directory that was created and written to before the run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunDir {
    path: PathBuf,
    /// The outermost directory [`RunDir::prepare`] created (`None`: the
    /// run directory was there already).
    created: Option<PathBuf>,
}

/// Where the files of a run went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Written {
    /// The directory holding the files.
    pub dir: PathBuf,
    /// Set when they are in a fallback directory: why the run directory
    /// could not be written.
    pub fallback_because: Option<String>,
    /// Files of an earlier run in the directory that could not be removed,
    /// each with the cause (the run's own files are all written).
    pub stale_kept: Vec<String>,
}

impl RunDir {
    /// Creates `path` (and its parents) and writes a probe file in it.
    /// A path that cannot be a writable directory (a file, a read-only
    /// place, no permission) is bad input naming it.
    pub fn prepare(path: &Path) -> Result<RunDir> {
        let created = path
            .ancestors()
            .take_while(|a| !a.as_os_str().is_empty() && !a.exists())
            .last()
            .map(Path::to_path_buf);
        tinct_report::output_path::prepare_dir(path).map_err(|e| {
            RtError::Input(InputError {
                field: "run directory (--out)".into(),
                expected: format!("{}, checked before the first release", e.expected),
                ..e
            })
        })?;
        Ok(RunDir {
            path: path.to_path_buf(),
            created,
        })
    }

    /// Removes what [`RunDir::prepare`] created, when the run ends before
    /// it recorded anything: empty directories only (`remove_dir` refuses
    /// any other), from the run directory up to the outermost created.
    pub fn abandon(self) {
        let Some(outermost) = self.created else {
            return;
        };
        for dir in self.path.ancestors() {
            if std::fs::remove_dir(dir).is_err() || dir == outermost {
                break;
            }
        }
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes the run's files here or, failing that, to a fallback
    /// directory (`<temp>/tinct-run-<pid>-<name>`). An error only if both fail.
    pub fn write(
        &self,
        summary: &Summary,
        result: &RunResult,
        context: &RunContext,
    ) -> Result<Written> {
        let earlier = earlier_run_files(&self.path);
        let mut here = FileWriter {
            dir: &self.path,
            written: Vec::new(),
        };
        let first = match write_files(&mut here, summary, result, context) {
            Ok(()) => {
                return Ok(Written {
                    dir: self.path.clone(),
                    fallback_because: None,
                    stale_kept: remove_stale(&self.path, &earlier, &here.written),
                });
            }
            Err(e) => e,
        };
        let fallback = self.fallback_dir();
        let because = format!("{first}; {}", remove_partial(&self.path, &here.written));
        let mut there = FileWriter {
            dir: &fallback,
            written: Vec::new(),
        };
        std::fs::create_dir_all(&fallback)
            .map_err(|e| write_error(&fallback, e))
            .and_then(|()| write_files(&mut there, summary, result, context))
            .map_err(|second| RtError::Task {
                task: "run directory".into(),
                message: format!(
                    "the run's files could not all be written, in {} ({because}; written \
                     there: {}) nor in the fallback {} ({second}; written there: {})",
                    self.path.display(),
                    here.written_list(),
                    fallback.display(),
                    there.written_list()
                ),
            })?;
        Ok(Written {
            dir: fallback,
            fallback_because: Some(because),
            stale_kept: Vec::new(),
        })
    }

    /// `<temp>/tinct-run-<pid>-<last component of the run directory>`.
    fn fallback_dir(&self) -> PathBuf {
        let name = self
            .path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("run");
        std::env::temp_dir().join(format!("tinct-run-{}-{name}", std::process::id()))
    }
}

/// Removes the files a failed write left in the run directory, so that
/// all of the run is in one place; says what was done (and names any file
/// that could not be removed).
fn remove_partial(dir: &Path, partial: &[String]) -> String {
    let kept: Vec<String> = partial
        .iter()
        .map(|name| dir.join(name))
        .filter(|path| std::fs::remove_file(path).is_err())
        .map(|path| path.display().to_string())
        .collect();
    if kept.is_empty() {
        format!(
            "the {} file(s) written there before the failure were removed, so every file is in \
             the fallback",
            partial.len()
        )
    } else {
        format!(
            "INCOMPLETE there: {} could not be removed; every file is in the fallback",
            kept.join(", ")
        )
    }
}

/// Removes the files of an earlier run (`earlier`) this run did not write
/// again, so that what is left in the directory is this run's; returns
/// those that could not be removed, with the cause.
fn remove_stale(dir: &Path, earlier: &[String], written: &[String]) -> Vec<String> {
    earlier
        .iter()
        .filter(|name| !written.contains(name))
        .filter_map(|name| {
            let path = dir.join(name);
            std::fs::remove_file(&path)
                .err()
                .map(|e| format!("{} ({e})", path.display()))
        })
        .collect()
}

fn write_error(path: &Path, source: std::io::Error) -> RtError {
    RtError::Write {
        path: path.display().to_string(),
        source,
    }
}

/// The files of one run being written into a directory, each atomically,
/// and the names written so far (for an honest message when one fails).
struct FileWriter<'a> {
    dir: &'a Path,
    written: Vec<String>,
}

impl FileWriter<'_> {
    /// Writes file `name` of the directory with `fill`, atomically.
    fn file(
        &mut self,
        name: &str,
        fill: impl FnOnce(&mut std::io::BufWriter<&std::fs::File>) -> std::io::Result<()>,
    ) -> Result<()> {
        atomically(&self.dir.join(name), fill)?;
        self.written.push(name.to_string());
        Ok(())
    }

    /// Writes `value` as pretty JSON to `name`.
    fn json(&mut self, name: &str, value: &impl serde::Serialize) -> Result<()> {
        self.file(name, |out| {
            serde_json::to_writer_pretty(&mut *out, value)?;
            out.write_all(b"\n")
        })
    }

    /// "a, b" or "nothing": what was written, for a message.
    fn written_list(&self) -> String {
        if self.written.is_empty() {
            "nothing".into()
        } else {
            self.written.join(", ")
        }
    }
}

/// The files into `out.dir`, each atomically.
fn write_files(
    out: &mut FileWriter<'_>,
    summary: &Summary,
    result: &RunResult,
    context: &RunContext,
) -> Result<()> {
    out.json("summary.json", summary)?;
    let jobs = job_rows(result);
    out.file("jobs.csv", |out| {
        write_rows(out, &jobs).map_err(std::io::Error::from)
    })?;
    if let Some(report) = &result.sentinel {
        out.file("stalls.csv", |out| {
            write_stalls_csv(out, result, report).map_err(std::io::Error::from)
        })?;
    }
    let trace = trace_run(&summary.source, result);
    out.file("trace.json", |out| {
        tinct_report::trace::write_chrome_json(&trace, out).map_err(Into::into)
    })?;
    out.file("trace.perfetto-trace", |out| {
        let bytes = tinct_report::trace::perfetto_trace(&trace).map_err(std::io::Error::other)?;
        out.write_all(&bytes)
    })?;
    out.json("machine.json", &context.machine)?;
    if let Some(analysis) = context.analysis {
        out.json("analysis.json", analysis)?;
    }
    // The figures are drawn from what was just written, held in memory:
    // a completed run never fails on reading its own files back.
    let files = RunFiles {
        dir: out.dir.to_path_buf(),
        summary: summary.clone(),
        summary_raw: serde_json::to_value(summary)
            .map_err(|e| write_error(&out.dir.join("summary.json"), e.into()))?,
        jobs,
        analysis: context.analysis.cloned(),
        machine: Some(context.machine.clone()),
    };
    for (name, svg) in run_dir_figures(&files) {
        out.file(&name, |out| out.write_all(svg.as_bytes()))?;
    }
    if let Some(basename) = &result.rtapp_log {
        for (index, task) in result.tasks.iter().enumerate() {
            out.file(&rtapp_log::log_name(basename, &task.spec.name), |out| {
                rtapp_log::write_thread_log(out, result, index)
            })?;
        }
    }
    Ok(())
}

/// The files a run of tinct writes in its directory, whatever the run
/// (`FILES`, `analysis.json`, `stalls.csv`, the figures) and `report.html`
/// (`tinct report`'s page of it): those an earlier run may have left.
pub fn is_run_file(name: &str) -> bool {
    FILES.contains(&name)
        || matches!(
            name,
            "analysis.json" | "stalls.csv" | "report.html" | "fig10-utilization.svg"
        )
        || (name.starts_with("fig8-response-") && name.ends_with(".svg"))
}

/// The names of the files of an earlier run in `dir` that this run does
/// not write again: its [`is_run_file`]s, and the rt-app logs of the tasks
/// its `summary.json` names (`<basename>-<task>.log` with rt-app's header:
/// logs of a plain rt-app run, without tinct's summary, are left alone).
/// Only when `dir` holds a run of tinct (a `summary.json` that reads as
/// one, and `jobs.csv`): elsewhere a file named like tinct's is the
/// user's. Read before this run writes its own summary.
fn earlier_run_files(dir: &Path) -> Vec<String> {
    if !RunFiles::is_run_dir(dir) {
        return Vec::new();
    }
    let Ok(earlier) = super::read::json_file::<Summary>(
        &dir.join("summary.json"),
        "summary.json",
        "a run's summary",
    ) else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|name| {
            is_run_file(name)
                || earlier.tasks.iter().any(|task| {
                    name.ends_with(&format!("-{}.log", task.name))
                        && rtapp_log::is_thread_log(&dir.join(name))
                })
        })
        .collect()
}

/// Writes `path` through a temporary file in the same directory that
/// replaces it by a rename once complete and synced.
fn atomically(
    path: &Path,
    fill: impl FnOnce(&mut std::io::BufWriter<&std::fs::File>) -> std::io::Result<()>,
) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let file = tempfile::Builder::new()
        .prefix(".tinct-")
        .tempfile_in(dir)
        .map_err(|e| write_error(path, e))?;
    let mut out = std::io::BufWriter::new(file.as_file());
    fill(&mut out)
        .and_then(|()| out.flush())
        .map_err(|e| write_error(path, e))?;
    drop(out);
    file.as_file()
        .sync_all()
        .map_err(|e| write_error(path, e))?;
    file.persist(path).map_err(|e| write_error(path, e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_programs_stderr_file_stays_in_its_directory_whatever_the_task_name() {
        assert_eq!(program_stderr_name("filter"), "filter.stderr");
        assert_eq!(program_stderr_name("../x"), "_._x.stderr");
        assert_eq!(program_stderr_name("a/b"), "a_b.stderr");
        assert_eq!(program_stderr_name(".hidden"), "_hidden.stderr");
    }

    use super::*;
    use crate::output::fixture::{analysis, context, result};
    use crate::output::summarize;
    use serde_json::Value;

    fn entries(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn the_run_directory_has_all_its_files_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let run_dir = RunDir::prepare(&dir.path().join("a/b")).unwrap();
        assert!(entries(run_dir.path()).is_empty(), "the probe is gone");
        let r = result();
        let s = summarize("x.toml", 400, &r);
        let a = analysis();
        let written = run_dir.write(&s, &r, &context(Some(&a))).unwrap();
        assert_eq!(written.dir, run_dir.path());
        assert_eq!(written.fallback_because, None);
        assert_eq!(
            entries(run_dir.path()),
            [
                "analysis.json",
                "fig10-utilization.svg",
                "fig8-response-a.svg",
                "jobs.csv",
                "machine.json",
                "summary.json",
                "trace.json",
                "trace.perfetto-trace"
            ],
            "no temporary file is left"
        );
        let csv = std::fs::read_to_string(run_dir.path().join("jobs.csv")).unwrap();
        assert_eq!(csv.lines().count(), 5, "{csv}");
        let summary: Value = serde_json::from_str(
            &std::fs::read_to_string(run_dir.path().join("summary.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(summary["tasks"][0]["jobs"]["released"], 4);
        let _: Value = serde_json::from_str(
            &std::fs::read_to_string(run_dir.path().join("trace.json")).unwrap(),
        )
        .unwrap();
        let perfetto = std::fs::read(run_dir.path().join("trace.perfetto-trace")).unwrap();
        let decoded = tinct_report::trace::check::decode_perfetto(&perfetto).unwrap();
        assert_eq!(decoded.slices.len(), 3, "a slice per started job");
    }

    #[test]
    fn a_path_that_cannot_be_a_directory_is_refused_as_bad_input() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("plain-file");
        std::fs::write(&file, "x").unwrap();
        for path in [file.clone(), file.join("below")] {
            match RunDir::prepare(&path) {
                Err(RtError::Input(InputError { file, field, .. })) => {
                    assert_eq!(file, path.display().to_string());
                    assert!(field.contains("--out"), "{field}");
                }
                other => panic!("{}: expected bad input, got {other:?}", path.display()),
            }
        }
    }

    /// Runs `program args` to its end, killed after 30 s (a hang guard);
    /// true when it succeeded.
    fn run_bounded(program: &str, args: &[&str]) -> bool {
        let mut child = std::process::Command::new(program)
            .args(args)
            .spawn()
            .unwrap_or_else(|e| panic!("{program}: {e}"));
        let started = std::time::Instant::now();
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                return status.success();
            }
            if started.elapsed() > std::time::Duration::from_secs(30) {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{program} {args:?} did not end within 30 s");
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    /// A tmpfs of `bytes` mounted on a new temporary directory, unmounted
    /// when dropped (a failing test included).
    struct SmallTmpfs {
        dir: tempfile::TempDir,
    }

    impl SmallTmpfs {
        fn mount(bytes: u64) -> SmallTmpfs {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().to_str().unwrap();
            let size = format!("size={bytes}");
            assert!(run_bounded(
                "mount",
                &["-t", "tmpfs", "-o", &size, "tinct-test", path]
            ));
            SmallTmpfs { dir }
        }

        fn path(&self) -> &Path {
            self.dir.path()
        }
    }

    impl Drop for SmallTmpfs {
        fn drop(&mut self) {
            let _ = run_bounded("umount", &[self.dir.path().to_str().unwrap()]);
        }
    }

    /// The disk fills while the files are written (room for
    /// `summary.json` and `jobs.csv`, not for the traces): nothing is left
    /// in the run directory that looks like a complete run; every file is
    /// in the fallback, and the reason says the partial ones were removed.
    #[test]
    fn a_full_disk_leaves_no_partial_run_directory() {
        let Some(_serial) = tinct_sys::testing::privileged_serial("mounting a tmpfs") else {
            return;
        };
        const PAGE: u64 = 4096;
        let r = result();
        let s = summarize("x.toml", 400, &r);
        // The sizes of the first two files, from a write elsewhere.
        let reference = tempfile::tempdir().unwrap();
        let mut reference_files = FileWriter {
            dir: reference.path(),
            written: Vec::new(),
        };
        write_files(&mut reference_files, &s, &r, &context(None)).unwrap();
        let pages = |name: &str| {
            std::fs::metadata(reference.path().join(name))
                .unwrap()
                .len()
                .div_ceil(PAGE)
        };
        let room = pages("summary.json") + pages("jobs.csv");
        let disk = SmallTmpfs::mount(64 * PAGE);
        // A name of its own: the fallback (`tinct-run-<pid>-<name>`) is
        // shared by the tests of this process that use one name.
        let run_dir = RunDir::prepare(&disk.path().join("full-disk-run")).unwrap();
        let free = rustix::fs::statvfs(disk.path()).unwrap().f_bavail;
        let filler = (free - room) * PAGE;
        std::fs::write(disk.path().join("filler"), vec![1u8; filler as usize]).unwrap();
        let written = run_dir.write(&s, &r, &context(None)).unwrap();
        assert_ne!(written.dir, run_dir.path(), "the disk was full");
        let because = written.fallback_because.clone().unwrap();
        assert!(because.contains("were removed"), "{because}");
        assert!(
            entries(run_dir.path()).is_empty(),
            "left in the run directory: {:?}",
            entries(run_dir.path())
        );
        assert!(
            entries(&written.dir)
                .iter()
                .any(|n| n == "summary.json" || n == "jobs.csv")
        );
        assert_eq!(entries(&written.dir), entries(reference.path()));
        std::fs::remove_dir_all(&written.dir).unwrap();
    }

    /// When a file fails in both directories, the message says
    /// what was written where (it used to say the files "could be written
    /// neither" here nor there although most of them were).
    #[test]
    fn a_file_that_fails_in_both_directories_is_reported_with_what_was_written() {
        let dir = tempfile::tempdir().unwrap();
        let run_dir = RunDir::prepare(&dir.path().join("both-fail-run")).unwrap();
        let mut r = result();
        // A log name longer than any file name: it fails everywhere.
        r.rtapp_log = Some("x".repeat(300));
        let message = match run_dir.write(&summarize("x.json", 400, &r), &r, &context(None)) {
            Err(e) => e.to_string(),
            Ok(w) => panic!("written: {w:?}"),
        };
        assert!(
            message.contains("could not all be written")
                && message
                    .matches("written there: summary.json, jobs.csv")
                    .count()
                    == 2,
            "{message}"
        );
        let fallback = run_dir.fallback_dir();
        assert!(fallback.join("summary.json").is_file(), "{message}");
        std::fs::remove_dir_all(&fallback).unwrap();
    }

    /// A run into a directory holding an earlier run leaves only
    /// its own files there: the earlier run's analysis, figures, page and
    /// rt-app logs of its tasks go; files tinct does not write stay.
    #[test]
    fn a_run_replaces_every_file_of_an_earlier_run_in_its_directory() {
        let dir = tempfile::tempdir().unwrap();
        let earlier = RunDir::prepare(dir.path()).unwrap();
        let mut r = result();
        r.rtapp_log = Some("old".into());
        let a = analysis();
        earlier
            .write(&summarize("plan.toml", 400, &r), &r, &context(Some(&a)))
            .unwrap();
        std::fs::write(dir.path().join("report.html"), "the earlier run's page").unwrap();
        std::fs::write(dir.path().join("notes.txt"), "the user's").unwrap();
        std::fs::write(dir.path().join("other-a.log"), "not a thread log").unwrap();
        // A directory without a run of tinct keeps files named like tinct's.
        let elsewhere = tempfile::tempdir().unwrap();
        std::fs::write(elsewhere.path().join("analysis.json"), "the user's").unwrap();
        RunDir::prepare(elsewhere.path())
            .unwrap()
            .write(&summarize("x.json", 400, &r), &r, &context(None))
            .unwrap();
        assert!(elsewhere.path().join("analysis.json").is_file());
        // The later run: other task names, no analysis, no rt-app logs.
        let mut later = result();
        later.tasks[0].spec.name = "b".into();
        let written = RunDir::prepare(dir.path())
            .unwrap()
            .write(&summarize("x.json", 400, &later), &later, &context(None))
            .unwrap();
        assert!(written.stale_kept.is_empty(), "{written:?}");
        assert_eq!(
            entries(dir.path()),
            [
                "fig8-response-b.svg",
                "jobs.csv",
                "machine.json",
                "notes.txt",
                "other-a.log",
                "summary.json",
                "trace.json",
                "trace.perfetto-trace"
            ]
        );
    }

    #[test]
    fn a_directory_that_went_away_sends_the_files_to_the_fallback_and_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("vanishing");
        let run_dir = RunDir::prepare(&path).unwrap();
        // After the probe, the directory is replaced by a file.
        std::fs::remove_dir(&path).unwrap();
        std::fs::write(&path, "in the way").unwrap();
        let r = result();
        let written = run_dir
            .write(&summarize("x.toml", 400, &r), &r, &context(None))
            .unwrap();
        assert_ne!(written.dir, path);
        assert!(written.dir.starts_with(std::env::temp_dir()));
        assert!(written.fallback_because.is_some());
        assert_eq!(
            entries(&written.dir),
            [
                "fig8-response-a.svg",
                "jobs.csv",
                "machine.json",
                "summary.json",
                "trace.json",
                "trace.perfetto-trace"
            ]
        );
        std::fs::remove_dir_all(&written.dir).unwrap();
    }
}
