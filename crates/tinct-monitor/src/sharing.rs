//! Which tasks of a tinct run share cache lines (gracioli Section IV), on
//! any machine: each task's per-job address stream is rebuilt as a run
//! lays its memory out and replayed through tinct-sim's sharing analysis.
//!
//! A job of task *i* touches:
//! - its job kernel's working set, every line once per pass (loads for
//!   `chase`, `read` and `mixed`, stores for `write`, both for `rmw`,
//!   nothing for `compute`) — the task's own pages, which tinct-mem never
//!   gives to two tasks, so they are modelled as disjoint ranges;
//! - the watchdog's monitor of the task (job number, release, deadline),
//!   written at the job's start and end, in the run's real `Vec` of monitors;
//! - the job log: the in-flight words, its record slot and count, and the
//!   heartbeat every task updates ([`SharedLog::job_writes`], in a real log
//!   of the run's capacities);
//! - the run's stop flag, read between chunks.
//!
//! The watchdog thread reads every monitor. Pairs of tasks pinned to the
//! same CPU share an L1, so their shared lines cost no coherence traffic:
//! the report says which pairs run on different CPUs.

use serde::{Deserialize, Serialize};
use tinct_rt::Result;
use tinct_rt::kernels::Kernel;
use tinct_rt::shared_log::SharedLog;
use tinct_rt::spec::RunSpec;
use tinct_rt::watchdog::{Monitor, Shared};
use tinct_sim::sharing::{
    Access, HitmLine, SharingKind, SharingPair, SharingReport, TaskAccesses, shared_lines,
};

/// Line size of the check (the x86-64 and arm64 cache line).
pub const LINE_BYTES: u64 = 64;
/// Name of the watchdog's pseudo-task.
pub const WATCHDOG: &str = "(watchdog)";

/// A named range of the modelled memory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Region {
    /// What it is.
    pub name: String,
    /// First byte.
    pub start: u64,
    /// Bytes.
    pub bytes: u64,
}

/// A shared written line, named.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NamedLine {
    /// Line address.
    pub line: u64,
    /// The region it lies in.
    pub region: String,
    /// `true`, `false` or `read-only` sharing.
    pub kind: tinct_sim::sharing::SharingKind,
    /// The tasks that touch it.
    pub tasks: Vec<String>,
}

/// The sharing check of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SharingCheck {
    /// The run's file.
    pub source: String,
    /// The analysis of the tasks' per-job streams.
    pub report: SharingReport,
    /// Every shared line with its region.
    pub lines: Vec<NamedLine>,
    /// Pairs of tasks that share a written line and are pinned to
    /// different CPUs (or not pinned): these pay coherence traffic.
    pub cross_cpu_pairs: Vec<(String, String)>,
    /// The modelled memory.
    pub regions: Vec<Region>,
    /// Tasks whose body is a program of the user's: only
    /// tinct's bookkeeping of their jobs is modelled, not the program's
    /// own accesses, which no file describes (`tinct monitor --sharing`
    /// samples them on a machine that can).
    #[serde(default)]
    pub unmodelled: Vec<String>,
}

impl SharingCheck {
    /// The pairs of [`SharingCheck::cross_cpu_pairs`] with their counts.
    pub fn cross_cpu(&self) -> impl Iterator<Item = &SharingPair> {
        self.cross_cpu_pairs
            .iter()
            .filter_map(|(a, b)| self.report.pairs.iter().find(|p| &p.a == a && &p.b == b))
    }

    /// The shared lines some task writes (true or false sharing).
    pub fn written_lines(&self) -> impl Iterator<Item = &NamedLine> {
        self.lines
            .iter()
            .filter(|l| l.kind != SharingKind::ReadOnly)
    }

    /// How many shared lines lie in the tasks' working sets.
    pub fn working_set_lines(&self) -> usize {
        self.lines
            .iter()
            .filter(|l| l.region.starts_with("working set"))
            .count()
    }
}

/// `sharing.json` of a monitored process (`tinct monitor --sharing`): the
/// pairs and HITM lines the CPU's precise memory samples show, or why the
/// CPU cannot sample.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SampledSharing {
    /// The sampling mechanism (Intel HITM, AMD IBS), if there is one.
    pub mechanism: Option<String>,
    /// Why the CPU's samples are unavailable, if they are.
    pub unavailable: Option<String>,
    /// Memory samples recorded.
    pub samples: usize,
    /// The sharing the samples show (with a mechanism that worked).
    pub report: Option<SharingReport>,
    /// Lines whose loads hit another core's modified copy, most first.
    pub hitm_lines: Vec<HitmLine>,
}

impl SampledSharing {
    /// The sharing of `recording`, made with `params`; `unavailable` says
    /// why sampling could not start, if it could not (a failure during the
    /// recording is taken from it).
    pub fn of_recording(
        params: &super::Params,
        recording: &super::Recording,
        unavailable: Option<String>,
    ) -> std::result::Result<SampledSharing, tinct_sim::SimError> {
        let unavailable = unavailable.or_else(|| recording.memory_sampling_failed.clone());
        let mut out = SampledSharing {
            mechanism: params
                .memory_sampling
                .as_ref()
                .map(|m| m.name().to_string()),
            unavailable,
            samples: recording.memory_samples.len(),
            report: None,
            hitm_lines: Vec::new(),
        };
        if params.memory_sampling.is_some() && out.unavailable.is_none() {
            let (report, hitm) =
                tinct_sim::sharing::from_memory_samples(&recording.memory_samples, LINE_BYTES)?;
            out.report = Some(report);
            out.hitm_lines = hitm;
        }
        Ok(out)
    }
}

/// Synthetic, page-aligned, disjoint base of task `i`'s working set: above
/// 2^57, beyond any user-space address (even with 5-level page tables), so
/// it cannot alias the log or the monitors.
fn working_set_base(i: usize) -> u64 {
    (1u64 << 57) + ((i as u64) << 40)
}

/// The per-job streams of `spec`'s tasks and the watchdog, with the regions.
pub fn job_streams(spec: &RunSpec) -> Result<(Vec<TaskAccesses>, Vec<Region>)> {
    let log = SharedLog::new(&spec.log_capacities())?;
    let names: Vec<String> = spec.tasks.iter().map(|t| t.name.clone()).collect();
    let shared = Shared::new(names.clone());
    let monitor_bytes = std::mem::size_of::<Monitor>();
    let monitor_address = |i: usize| &shared.monitors[i] as *const Monitor as u64;
    let stop = std::sync::Arc::as_ptr(&shared.stop) as u64;
    let words = log.shared_words().words();
    let mut regions = vec![
        Region {
            name: "job log".into(),
            start: words.as_ptr() as u64,
            bytes: (words.len() * 8) as u64,
        },
        Region {
            name: "watchdog monitors".into(),
            start: monitor_address(0),
            bytes: (monitor_bytes * names.len()) as u64,
        },
        Region {
            name: "stop flag".into(),
            start: stop,
            bytes: 1,
        },
    ];
    let mut streams = Vec::with_capacity(names.len() + 1);
    for (i, task) in spec.tasks.iter().enumerate() {
        let mut accesses = vec![
            Access::write(monitor_address(i), monitor_bytes as u32),
            Access::read(stop, 1),
        ];
        for (address, bytes) in log.job_writes(i, 1) {
            accesses.push(Access::read(address as u64, bytes as u32));
            accesses.push(Access::write(address as u64, bytes as u32));
        }
        let base = working_set_base(i);
        let lines = task.working_set / LINE_BYTES;
        if lines > 0 {
            regions.push(Region {
                name: format!("working set of {}", task.name),
                start: base,
                bytes: task.working_set,
            });
        }
        let (read, write) = match task.kernel() {
            Some(Kernel::Chase | Kernel::Read | Kernel::Mixed) => (true, false),
            Some(Kernel::Write) => (false, true),
            Some(Kernel::Rmw) => (true, true),
            Some(Kernel::Compute) | None => (false, false),
        };
        for line in 0..lines {
            let address = base + line * LINE_BYTES;
            if read {
                accesses.push(Access::read(address, 8));
            }
            if write {
                accesses.push(Access::write(address, 8));
            }
        }
        streams.push(TaskAccesses {
            name: task.name.clone(),
            accesses,
        });
    }
    streams.push(TaskAccesses {
        name: WATCHDOG.into(),
        accesses: (0..names.len())
            .map(|i| Access::read(monitor_address(i), monitor_bytes as u32))
            .collect(),
    });
    Ok((streams, regions))
}

/// Replays `spec`'s per-job streams and names what is shared.
pub fn check(spec: &RunSpec) -> Result<SharingCheck> {
    let (streams, regions) = job_streams(spec)?;
    let report = shared_lines(&streams, LINE_BYTES).map_err(|e| tinct_rt::RtError::Task {
        task: "sharing check".into(),
        message: e.to_string(),
    })?;
    let region_of = |line: u64| {
        regions
            .iter()
            .find(|r| line + LINE_BYTES > r.start && line < r.start + r.bytes)
            .map_or_else(|| "unknown".to_string(), |r| r.name.clone())
    };
    let lines = report
        .lines
        .iter()
        .map(|l| NamedLine {
            line: l.line,
            region: region_of(l.line),
            kind: l.kind,
            tasks: l.tasks.iter().map(|u| u.task.clone()).collect(),
        })
        .collect();
    let cpus_of = |name: &str| {
        spec.tasks
            .iter()
            .find(|t| t.name == name)
            .and_then(|t| t.cpus.clone())
    };
    let cross_cpu_pairs = report
        .contended_pairs()
        .filter(|p| match (cpus_of(&p.a), cpus_of(&p.b)) {
            (Some(a), Some(b)) => !(a.len() == 1 && a == b),
            _ => true,
        })
        .map(|p| (p.a.clone(), p.b.clone()))
        .collect();
    let unmodelled = spec
        .tasks
        .iter()
        .filter(|t| t.program.is_some())
        .map(|t| t.name.clone())
        .collect();
    Ok(SharingCheck {
        source: spec.source.clone(),
        report,
        lines,
        cross_cpu_pairs,
        regions,
        unmodelled,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tinct_core::model::Work;
    use tinct_rt::testing::{TaskBuilder, run_spec};
    use tinct_sim::sharing::SharingKind;

    fn spec() -> RunSpec {
        let task = |name: &str, cpu, kernel| {
            TaskBuilder::periodic(name, 10_000_000)
                .cpu(cpu)
                .kernel(kernel, Work::Iterations(100))
                .working_set(64 * 1024)
                .build()
        };
        run_spec(
            vec![
                task("a", 0, Kernel::Chase),
                task("b", 1, Kernel::Rmw),
                task("c", 1, Kernel::Write),
            ],
            100_000_000,
        )
    }

    #[test]
    fn the_runtimes_own_shared_words_are_found_and_working_sets_are_not() {
        let check = check(&spec()).unwrap();
        // Every task updates the log's heartbeat: true sharing between all.
        let heartbeat = check
            .lines
            .iter()
            .find(|l| l.region == "job log" && l.kind == SharingKind::True)
            .expect("the heartbeat line is truly shared");
        for task in ["a", "b", "c"] {
            assert!(heartbeat.tasks.iter().any(|t| t == task), "{heartbeat:?}");
        }
        // Working sets are private: no shared line lies in one.
        assert!(
            check
                .lines
                .iter()
                .all(|l| !l.region.starts_with("working set")),
            "{:?}",
            check.lines
        );
        // a (CPU 0) with b or c (CPU 1) pays coherence; b and c share CPU 1.
        let pairs = &check.cross_cpu_pairs;
        assert!(pairs.contains(&("a".into(), "b".into())), "{pairs:?}");
        assert!(!pairs.contains(&("b".into(), "c".into())), "{pairs:?}");
        // The helpers the CLI prints agree with the fields.
        assert_eq!(check.working_set_lines(), 0);
        let cross: Vec<(&str, &str)> = check
            .cross_cpu()
            .map(|p| (p.a.as_str(), p.b.as_str()))
            .collect();
        assert_eq!(
            cross.len(),
            pairs.len(),
            "every cross-CPU pair has its counts"
        );
        assert!(cross.contains(&("a", "b")), "{cross:?}");
        assert!(check.written_lines().any(|l| l.line == heartbeat.line));
        assert!(
            check
                .written_lines()
                .all(|l| l.kind != SharingKind::ReadOnly)
        );
        // The watchdog reads every monitor.
        assert!(
            check
                .report
                .pairs
                .iter()
                .any(|p| p.b == WATCHDOG || p.a == WATCHDOG)
        );
    }

    #[test]
    fn streams_follow_each_kernels_loads_and_stores() {
        let (streams, _) = job_streams(&spec()).unwrap();
        let in_working_set = |s: &TaskAccesses| -> (usize, usize) {
            let ws = s.accesses.iter().filter(|a| a.address >= 1 << 57);
            ws.fold(
                (0, 0),
                |(r, w), a| if a.write { (r, w + 1) } else { (r + 1, w) },
            )
        };
        assert_eq!(
            in_working_set(&streams[0]),
            (1024, 0),
            "chase: loads of 1024 lines"
        );
        assert_eq!(in_working_set(&streams[1]), (1024, 1024), "rmw: both");
        assert_eq!(in_working_set(&streams[2]), (0, 1024), "write: stores");
        assert_eq!(streams[3].name, WATCHDOG);
    }
}
