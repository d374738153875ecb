//! A program body's heap on its task's cache partitions (kim2013 Section
//! III-C, cache reservation without changing the program).
//!
//! A synthetic task's working set comes from tinct's own coloured pool
//! ([`crate::memory`]); a program's memory is the program's, so it is
//! coloured the way `tinct exec` colours one: the LD_PRELOAD shim
//! (`libtinct_preload.so`) serves its heap from the colours of its
//! partitions S(i), under the run's colour rule ([`ColorLayout`]) and the
//! same even split of colours over partitions as the working sets
//! ([`PartitionColors::even`]). The shim runs strict (a request it cannot
//! serve from those colours fails rather than falls back to any page), and
//! at the program's exit it writes the frames its heap could use; after the
//! run [`ProgramHeap::placement`] reads them back and checks each frame's
//! colour, so the placement the run reports is read, not assumed, and the
//! isolation proof covers the program like any working set.
//!
//! What cannot be coloured is refused before anything starts, naming the
//! file, line and field (a statically linked or set-ID program, which the
//! dynamic loader will not give the shim; unknown colour bits; unreadable
//! frame numbers), unless the run accepts uncoloured memory
//! (`--uncolored`, or `--no-rt` for unknown colour bits): the placement is
//! then [`Placement::Uncolored`] with the reason, in every output.

use crate::memory::{ColorLayout, Placement};
use crate::spec::{RunSpec, TaskSpec};
use crate::{Result, RtError};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use tinct_base::InputError;
use tinct_mem::{AddressMapping, PartitionColors, ShimConfig, read_frame_reports};
use tinct_sys::color_source::ColorSourceError;

/// How one program task's heap is placed.
#[derive(Clone, Debug)]
pub enum ProgramHeap {
    /// Served by the shim from the colours of S(i).
    Colored(Box<ColoredHeap>),
    /// Not coloured (accepted with `--uncolored`), and why.
    Uncolored {
        /// The partitions the plan asked for, not enforced.
        partitions: Vec<u32>,
        /// Why the heap is not coloured.
        reason: String,
    },
}

/// A heap the shim serves from the colours of a task's partitions.
#[derive(Clone, Debug)]
pub struct ColoredHeap {
    /// S(i), the partitions (1-based).
    pub partitions: Vec<u32>,
    /// The shim's settings: the colours, the colour bits, strict.
    pub config: ShimConfig,
    /// The colour functions the frames are checked against.
    pub mapping: AddressMapping,
    /// The shim itself.
    pub library: PathBuf,
}

/// The shim's variables: a program gets only those its heap is given
/// ([`ProgramHeap::env`]), none inherited from tinct's environment (a
/// `TINCT_PAGE_REPORT` or `TINCT_BANKS` there would change what its shim
/// does).
pub fn shim_variables() -> Vec<&'static str> {
    let mut names = tinct_mem::shim_config::VARIABLES.to_vec();
    names.push(tinct_mem::shim_config::report_request::REPORT_SOCKET);
    names
}

/// The bytes of a task's heap pool: the shim's default, unless `TINCT_POOL`
/// in tinct's environment says otherwise (read by [`heaps_of`]).
const POOL_VAR: &str = tinct_mem::shim_config::POOL;

/// Each task's program heap (`None` for a task that is no program or has
/// no partitions), decided before anything starts: the colours of its
/// partitions under the run's colour rule, the shim `library` (needed only
/// when a heap is coloured). `uncolored` accepts a heap that cannot be
/// coloured (`--uncolored`); `uncolored_if_unknown` accepts unknown colour
/// bits (`--uncolored`, `--no-rt`), as for the working sets.
pub fn heaps_of(
    spec: &RunSpec,
    library: Option<&Path>,
    uncolored: bool,
    uncolored_if_unknown: bool,
) -> Result<Vec<Option<ProgramHeap>>> {
    let wanted = |t: &TaskSpec| t.program.is_some() && !t.partitions.is_empty();
    if !spec.colours_programs() {
        return Ok(vec![None; spec.tasks.len()]);
    }
    let layout = match ColorLayout::of_spec(spec) {
        Ok(layout) => Ok(layout),
        Err(RtError::Colors(ColorSourceError::Unknown { why })) if uncolored_if_unknown => {
            Err(format!("the page-colour bits are unknown ({why})"))
        }
        Err(e) => return Err(e),
    };
    let frames_unreadable = frames_unreadable();
    let pool_bytes = pool_bytes()?;
    spec.tasks
        .iter()
        .map(|task| {
            if !wanted(task) {
                return Ok(None);
            }
            let uncolored_because = |reason: String| ProgramHeap::Uncolored {
                partitions: task.partitions.clone(),
                reason,
            };
            if let Some(ignored) = task
                .program
                .as_ref()
                .and_then(|p| p.command.first())
                .and_then(|program| crate::loader::preload_ignored(std::ffi::OsStr::new(program)))
            {
                if uncolored {
                    return Ok(Some(uncolored_because(format!(
                        "the shim cannot colour it: {ignored}"
                    ))));
                }
                return Err(RtError::Input(InputError {
                    file: spec.source.clone(),
                    line: task.line,
                    field: format!("task '{}' body.command", task.name),
                    expected: "a dynamically linked program, whose heap the LD_PRELOAD shim \
                               can serve from its partitions' colours (or --uncolored to run \
                               it on any pages, S(i) NOT enforced)"
                        .into(),
                    found: ignored.to_string(),
                }));
            }
            let layout = match &layout {
                Ok(layout) => layout,
                Err(reason) => return Ok(Some(uncolored_because(reason.clone()))),
            };
            if let Some(reason) = &frames_unreadable {
                if !uncolored {
                    return Err(RtError::Privilege {
                        what: format!(
                            "task '{}''s program heap must come from its partitions' page \
                             colors, but physical frame numbers are unreadable ({reason})",
                            task.name
                        ),
                        fix: "run as root (reading frames in /proc/self/pagemap needs \
                              CAP_SYS_ADMIN), or pass --uncolored to run the program on any \
                              pages (every output says so)"
                            .into(),
                    });
                }
                return Ok(Some(uncolored_because(format!(
                    "physical frame numbers are unreadable ({reason})"
                ))));
            }
            let partitions = crate::memory::platform_partitions(spec)?;
            let split = PartitionColors::even(layout.mapping.colors(), partitions)
                .and_then(|split| split.colors_of_all(&task.partitions))
                .map_err(|e| {
                    RtError::Input(InputError {
                        file: spec.source.clone(),
                        line: task.line,
                        field: format!("task '{}' partitions", task.name),
                        expected: format!(
                            "partitions of the platform's {partitions} ({})",
                            layout.rule
                        ),
                        found: e.to_string(),
                    })
                })?;
            let mut colors = split;
            colors.sort_unstable();
            colors.dedup();
            let Some(library) = library else {
                let missing = format!(
                    "its heap is coloured by {}, which was not found",
                    tinct_mem::shim_config::PRELOAD_LIB
                );
                if uncolored {
                    return Ok(Some(uncolored_because(missing)));
                }
                return Err(RtError::Task {
                    task: task.name.clone(),
                    message: missing,
                });
            };
            let config = ShimConfig {
                color_bits: Some(layout.bits.clone()),
                pool_bytes,
                // Exact or refused: a request the colours cannot serve
                // fails instead of landing on any page.
                strict: true,
                // Its summary at exit, in the program's stderr file.
                stats: true,
                mmap: task.program.as_ref().is_some_and(|p| p.mmap),
                ..ShimConfig::colored(colors)
            };
            config.validate().map_err(|e| RtError::Task {
                task: task.name.clone(),
                message: e.to_string(),
            })?;
            Ok(Some(ProgramHeap::Colored(Box::new(ColoredHeap {
                partitions: task.partitions.clone(),
                config,
                mapping: layout.mapping.clone(),
                library: library.to_path_buf(),
            }))))
        })
        .collect()
}

/// `TINCT_POOL` of tinct's environment, else the shim's default.
fn pool_bytes() -> Result<u64> {
    let Ok(text) = std::env::var(POOL_VAR) else {
        return Ok(tinct_mem::shim_config::DEFAULT_POOL);
    };
    tinct_core::units::parse_size(&text)
        .ok()
        .map(|bytes| bytes.0)
        .filter(|&bytes| bytes >= tinct_mem::shim_config::MIN_POOL)
        .ok_or_else(|| {
            RtError::Input(InputError {
                file: "the environment".into(),
                line: None,
                field: POOL_VAR.into(),
                expected: "a size of at least 1MiB such as 512MiB".into(),
                found: format!("{text:?}"),
            })
        })
}

/// Why frame numbers cannot be read here, if they cannot (a page of this
/// process translated through pagemap).
fn frames_unreadable() -> Option<String> {
    let page = vec![1u8; rustix::param::page_size()];
    let address = std::hint::black_box(page.as_ptr()) as usize;
    match tinct_sys::pagemap::Pagemap::open_self().and_then(|map| map.frame_of(address)) {
        Ok(Some(_)) => None,
        Ok(None) => Some("a page just written is not present".into()),
        Err(e) => Some(e.to_string()),
    }
}

impl ProgramHeap {
    /// The variables the program is started with (the shim preloaded and
    /// its settings, frame reports under `frames`); none for an uncoloured
    /// heap.
    pub fn env(&self, frames: &Path) -> Vec<(OsString, OsString)> {
        match self {
            ProgramHeap::Uncolored { .. } => Vec::new(),
            ProgramHeap::Colored(heap) => {
                let config = ShimConfig {
                    frame_report: Some(frames.to_path_buf()),
                    ..heap.config.clone()
                };
                program_env(
                    &config,
                    &heap.library,
                    std::env::var_os("LD_PRELOAD"),
                    std::env::var_os("PYTHONMALLOC").is_some(),
                )
            }
        }
    }

    /// Where the heap was, once the program has ended: read back from the
    /// frame reports its processes wrote under `frames` (those that ended
    /// before the first release were set aside by
    /// [`set_aside_startup_reports`]: they held no page during a job), each
    /// frame's colour checked against S(i)'s; with notes on what was left
    /// out. The frames are unknown (no colour claimed, the isolation proof
    /// refuses to prove anything) unless the program itself (`ended`: its
    /// pid, and whether it had to be killed) exited and wrote its report.
    pub fn placement(&self, frames: &Path, ended: Option<(u32, bool)>) -> (Placement, Vec<String>) {
        let heap = match self {
            ProgramHeap::Uncolored { partitions, reason } => {
                let placement = Placement::Uncolored {
                    bytes: 0,
                    partitions_requested: partitions.clone(),
                    reason: reason.clone(),
                };
                return (placement, Vec::new());
            }
            ProgramHeap::Colored(heap) => heap,
        };
        let mut notes = Vec::new();
        let mut read = |path: &Path| match read_frame_reports(path) {
            Ok(reports) => reports,
            Err(e) => {
                notes.push(format!("its heap's frame reports are unreadable: {e}"));
                Vec::new()
            }
        };
        let startup = read(&startup_path(frames));
        let reports = read(frames);
        if !startup.is_empty() {
            let mut commands: Vec<&str> = startup.iter().map(|r| r.command.as_str()).collect();
            commands.sort_unstable();
            commands.dedup();
            notes.push(format!(
                "{} process(es) of its program ({}) ended before the first release; their \
                 heaps held no page during a job and are left out of its placement",
                startup.len(),
                commands.join(", ")
            ));
        }
        let own = ended
            .filter(|&(_, killed)| !killed)
            .is_some_and(|(pid, _)| {
                reports
                    .iter()
                    .any(|r| r.pid == pid && r.page_size == heap.mapping.page_size)
            });
        if !own {
            notes.push(
                "its program wrote no frame report of its own heap (it was killed, never \
                 exited, or its page size is not the run's), so its placement is not checked"
                    .into(),
            );
            return (heap.placement(&[], false), notes);
        }
        (heap.placement(&reports, true), notes)
    }
}

/// Moves the frame reports already written under `frames` (by processes
/// of the program that ended before the first release, such as the
/// wrapper scripts of a Python launcher) aside to `<frames>-startup`, so
/// that the placement counts only the processes alive during its jobs.
/// Called by the task's thread right before its first release.
pub fn set_aside_startup_reports(frames: &Path) {
    let Some(dir) = frames.parent() else {
        return;
    };
    let Some(name) = frames.file_name().map(|n| n.to_string_lossy().into_owned()) else {
        return;
    };
    let startup = startup_path(frames);
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let file = entry.file_name().to_string_lossy().into_owned();
        if let Some(pid) = file
            .strip_prefix(&name)
            .and_then(|rest| rest.strip_prefix('.'))
            .filter(|pid| pid.bytes().all(|b| b.is_ascii_digit()))
        {
            let _ = std::fs::rename(entry.path(), format!("{}.{pid}", startup.display()));
        }
    }
}

/// Where [`set_aside_startup_reports`] puts the reports of `frames`.
fn startup_path(frames: &Path) -> PathBuf {
    let mut path = frames.as_os_str().to_os_string();
    path.push("-startup");
    PathBuf::from(path)
}

impl ColoredHeap {
    /// The placement the frames of `reports` show (`checked`: they are the
    /// program's own, read at its exit; else unknown).
    fn placement(&self, reports: &[tinct_mem::FrameReport], checked: bool) -> Placement {
        let heap = self;
        if let Some(report) = reports.iter().find(|r| r.uncolored) {
            return Placement::Uncolored {
                bytes: 0,
                partitions_requested: heap.partitions.clone(),
                reason: format!(
                    "the shim in process {} found frame numbers unreadable",
                    report.pid
                ),
            };
        }
        let page = heap.mapping.page_size;
        let frames: Vec<u64> = reports
            .iter()
            .filter(|r| r.page_size == page)
            .flat_map(|r| r.frames.clone())
            .collect();
        let outside = frames
            .iter()
            .filter(|&&f| {
                !heap
                    .config
                    .colors
                    .contains(&heap.mapping.classify_frame(f).color)
            })
            .count() as u64;
        Placement::Colored {
            bytes: (frames.len() as u64).saturating_mul(page),
            partitions: heap.partitions.clone(),
            colors: tinct_sys::format_cpu_list(&heap.config.colors),
            color_count: heap.config.colors.len() as u32,
            machine_colors: heap.mapping.colors(),
            pages: frames.len() as u64,
            // The program's threads run on the stacks its threads library
            // gives them, not coloured ones.
            stack_bytes: 0,
            stack_frames: Vec::new(),
            pages_outside_colors: checked.then_some(outside),
            frame_drift: None,
            frames,
        }
    }
}

/// The variables the program is started with: the shim's `TINCT_*`
/// settings, `LD_PRELOAD` with the shim (`library`) before whatever
/// `existing_preload` held, and `PYTHONMALLOC=malloc` unless
/// `python_malloc_set` (CPython allocates small objects from its own
/// mmap'd arenas, which no malloc shim sees; this routes them through
/// malloc).
pub fn program_env(
    config: &ShimConfig,
    library: &Path,
    existing_preload: Option<OsString>,
    python_malloc_set: bool,
) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = config
        .to_env()
        .into_iter()
        .map(|(name, value)| (name.into(), value.into()))
        .collect();
    env.push((
        "LD_PRELOAD".into(),
        preload_value(library, existing_preload),
    ));
    if !python_malloc_set {
        env.push(("PYTHONMALLOC".into(), "malloc".into()));
    }
    env
}

/// The shim first, then whatever was preloaded already.
fn preload_value(shim: &Path, existing: Option<OsString>) -> OsString {
    let mut value = shim.as_os_str().to_os_string();
    if let Some(existing) = existing.filter(|e| !e.is_empty()) {
        value.push(":");
        value.push(existing);
    }
    value
}

/// A private directory for the frame reports (`--stats`), and the path
/// prefix the shim writes `<prefix>.<pid>` to (the shim's
/// `TINCT_FRAME_REPORT`). Remove the prefix's parent when done.
pub fn frame_report_path() -> std::io::Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let dir = std::env::temp_dir().join(format!("tinct-exec-{}-{nanos:x}", std::process::id()));
    std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
    Ok(dir.join("frames"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shim_goes_first_in_ld_preload() {
        let shim = Path::new("/x/libtinct_preload.so");
        assert_eq!(preload_value(shim, None), "/x/libtinct_preload.so");
        assert_eq!(
            preload_value(shim, Some("".into())),
            "/x/libtinct_preload.so"
        );
        assert_eq!(
            preload_value(shim, Some("/y/other.so".into())),
            "/x/libtinct_preload.so:/y/other.so"
        );
    }

    #[test]
    fn the_program_env_carries_the_contract_and_python_malloc_only_when_unset() {
        let config = ShimConfig::colored(vec![1, 2]);
        let library = Path::new("/x/libtinct_preload.so");
        let env = program_env(&config, library, None, false);
        let value = |name: &str| env.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone());
        assert_eq!(value("LD_PRELOAD"), Some("/x/libtinct_preload.so".into()));
        assert_eq!(value("PYTHONMALLOC"), Some("malloc".into()));
        for (name, text) in config.to_env() {
            assert_eq!(value(name), Some(text.into()), "{name}");
        }
        let env = program_env(&config, library, None, true);
        assert!(env.iter().all(|(n, _)| n != "PYTHONMALLOC"));
    }
}
