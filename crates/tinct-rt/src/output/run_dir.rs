//! The run directory: `summary.json`, `jobs.csv`, `trace.perfetto-trace`,
//! `trace.json`, `machine.json`, `stalls.csv` (with a sentinel),
//! `analysis.json` (a run of an analysed plan) and the figures of kim2013 (`fig8-response-<task>.svg` per task
//! with a bound, `fig10-utilization.svg`), drawn from the files just
//! written ([`super::figures`]) so they equal what `tinct report` draws.
//!
//! Nothing a run recorded may be lost (issue 10 item 4):
//!
//! - [`RunDir::prepare`], called before the first release, creates the
//!   directory and writes (then removes) a probe file, so a directory that
//!   cannot be written refuses the run at once as bad input instead of
//!   losing it at the end;
//! - [`RunDir::write`] writes each file atomically (a temporary file in the
//!   same directory, renamed over the name): a reader never sees half a file;
//! - if writing there fails all the same (the disk filled, the directory
//!   went away), the files already written there are removed (a directory
//!   holding `summary.json` and `jobs.csv` looks complete when it is not,
//!   issue 27) and every file goes to a fallback directory under the
//!   system's temporary directory; [`Written`] says where and why.

use super::figures::run_dir_figures;
use super::jobs_csv::{job_rows, write_rows, write_stalls_csv};
use super::read::RunFiles;
use super::rtapp_log;
use super::summary::Summary;
use super::trace::trace_run;
use crate::runtime::RunResult;
use crate::{Result, RtError};
use std::io::Write;
use std::path::{Path, PathBuf};
use tinct_core::analysis::Analysis;
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
        tinct_report::output_path::prepare_dir(path).map_err(|e| RtError::Input {
            file: path.display().to_string(),
            line: None,
            field: "run directory (--out)".into(),
            expected: format!("{}, checked before the first release", e.expected),
            found: e.found,
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
        let mut partial = Vec::new();
        let first = match write_files(&self.path, summary, result, context, &mut partial) {
            Ok(()) => {
                return Ok(Written {
                    dir: self.path.clone(),
                    fallback_because: None,
                });
            }
            Err(e) => e,
        };
        let fallback = self.fallback_dir();
        let because = format!("{first}; {}", remove_partial(&partial));
        std::fs::create_dir_all(&fallback)
            .map_err(|e| write_error(&fallback, e))
            .and_then(|()| write_files(&fallback, summary, result, context, &mut Vec::new()))
            .map_err(|second| RtError::Task {
                task: "run directory".into(),
                message: format!(
                    "the run's files could be written neither to {} ({because}) nor to the \
                     fallback {} ({second})",
                    self.path.display(),
                    fallback.display()
                ),
            })?;
        Ok(Written {
            dir: fallback,
            fallback_because: Some(because),
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
fn remove_partial(partial: &[PathBuf]) -> String {
    let kept: Vec<String> = partial
        .iter()
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

fn write_error(path: &Path, source: std::io::Error) -> RtError {
    RtError::Write {
        path: path.display().to_string(),
        source,
    }
}

/// The files into `dir`, each atomically; `written` gets the path of each
/// file once it is in place.
fn write_files(
    dir: &Path,
    summary: &Summary,
    result: &RunResult,
    context: &RunContext,
    written: &mut Vec<PathBuf>,
) -> Result<()> {
    let mut files = Files { dir, written };
    files.write("summary.json", |out| {
        serde_json::to_writer_pretty(&mut *out, summary)?;
        out.write_all(b"\n")
    })?;
    let jobs = job_rows(result);
    files.write("jobs.csv", |out| {
        write_rows(out, &jobs).map_err(std::io::Error::from)
    })?;
    if let Some(report) = &result.sentinel {
        files.write("stalls.csv", |out| {
            write_stalls_csv(out, result, report).map_err(std::io::Error::from)
        })?;
    }
    let trace = trace_run(&summary.source, result);
    files.write("trace.json", |out| {
        tinct_report::trace::write_chrome_json(&trace, out).map_err(Into::into)
    })?;
    files.write("trace.perfetto-trace", |out| {
        let bytes = tinct_report::trace::perfetto_trace(&trace).map_err(std::io::Error::other)?;
        out.write_all(&bytes)
    })?;
    files.write("machine.json", |out| {
        serde_json::to_writer_pretty(&mut *out, &context.machine)?;
        out.write_all(b"\n")
    })?;
    if let Some(analysis) = context.analysis {
        files.write("analysis.json", |out| {
            serde_json::to_writer_pretty(&mut *out, analysis)?;
            out.write_all(b"\n")
        })?;
    }
    // The figures are drawn from what was just written, held in memory:
    // a completed run never fails on reading its own files back.
    let run_files = RunFiles {
        dir: dir.to_path_buf(),
        summary: summary.clone(),
        summary_raw: serde_json::to_value(summary)
            .map_err(|e| write_error(&dir.join("summary.json"), e.into()))?,
        jobs,
        analysis: context.analysis.cloned(),
        machine: Some(context.machine.clone()),
    };
    for (name, svg) in run_dir_figures(&run_files) {
        files.write(&name, |out| out.write_all(svg.as_bytes()))?;
    }
    if let Some(basename) = &result.rtapp_log {
        for (index, task) in result.tasks.iter().enumerate() {
            files.write(&rtapp_log::log_name(basename, &task.spec.name), |out| {
                rtapp_log::write_thread_log(out, result, index)
            })?;
        }
    }
    Ok(())
}

/// The files of one directory as they are written, each remembered once
/// in place (to be removed if a later one fails).
struct Files<'a> {
    dir: &'a Path,
    written: &'a mut Vec<PathBuf>,
}

impl Files<'_> {
    /// Writes file `name` of the directory atomically.
    fn write(
        &mut self,
        name: &str,
        fill: impl FnOnce(&mut std::io::BufWriter<&std::fs::File>) -> std::io::Result<()>,
    ) -> Result<()> {
        let path = self.dir.join(name);
        atomically(&path, fill)?;
        self.written.push(path);
        Ok(())
    }
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
                Err(RtError::Input { file, field, .. }) => {
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

    /// Issue 27: the disk fills while the files are written (room for
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
        write_files(reference.path(), &s, &r, &context(None), &mut Vec::new()).unwrap();
        let pages = |name: &str| {
            std::fs::metadata(reference.path().join(name))
                .unwrap()
                .len()
                .div_ceil(PAGE)
        };
        let room = pages("summary.json") + pages("jobs.csv");
        let disk = SmallTmpfs::mount(64 * PAGE);
        let run_dir = RunDir::prepare(&disk.path().join("run")).unwrap();
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
