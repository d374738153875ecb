//! What the supervised child hands its parent: the run's result without
//! the records (they are in the shared log), or the error that refused it.

use super::result::{Measured, ProgramRun, RunOptions, RunResult, TaskRun, WorkNote};
use crate::RtError;
use crate::calibrate::Rates;
use crate::kernels::JobWork;
use crate::memory::Placement;
use crate::shared_log::SharedLog;
use crate::spec::{RunSpec, Scheduling};
use crate::watchdog::StopReason;
use serde::{Deserialize, Serialize};
use tinct_core::format::InputError;

/// A [`Placement`] with its frames (which its own serialization leaves out).
#[derive(Serialize, Deserialize)]
pub(super) struct WirePlacement {
    placement: Placement,
    frames: Vec<u64>,
    stack_frames: Vec<u64>,
}

impl WirePlacement {
    pub(super) fn of(placement: &Placement) -> WirePlacement {
        WirePlacement {
            frames: placement.frames().to_vec(),
            stack_frames: placement.stack_frames().to_vec(),
            placement: placement.clone(),
        }
    }

    pub(super) fn into_placement(self) -> Placement {
        let mut placement = self.placement;
        placement.set_frames(self.frames, self.stack_frames);
        placement
    }
}

/// What the child leaves for the parent.
#[derive(Serialize, Deserialize)]
pub(super) enum Report {
    /// The run happened (the records are in the shared log).
    Ran(ChildReport),
    /// The run was refused before any release.
    Refused(WireError),
}

/// A run's result without its records.
#[derive(Serialize, Deserialize)]
pub(super) struct ChildReport {
    start_ns: u64,
    end_ns: u64,
    stop: StopReason,
    memory_locked: bool,
    rt_throttling: String,
    notes: Vec<String>,
    tasks: Vec<ChildTask>,
    /// The child's footprint outside the tasks' placed memory.
    footprint: Result<tinct_sys::footprint::Footprint, String>,
}

/// One task's result without its records.
#[derive(Serialize, Deserialize)]
pub(super) struct ChildTask {
    placement: WirePlacement,
    rates: Option<Rates>,
    work: Vec<WireNote>,
    scheduling: Scheduling,
    counters_unavailable: Option<String>,
    error: Option<String>,
    program: Option<ProgramRun>,
}

/// A [`WorkNote`] on the wire.
#[derive(Serialize, Deserialize)]
pub(super) struct WireNote {
    phase: String,
    calibrated: bool,
    target_ns: Option<u64>,
    work: JobWork,
}

impl ChildReport {
    pub(super) fn of(result: &RunResult) -> ChildReport {
        ChildReport {
            start_ns: result.start_ns,
            end_ns: result.end_ns,
            stop: result.stop.clone(),
            memory_locked: result.memory_locked,
            rt_throttling: result.rt_throttling.clone(),
            notes: result.notes.clone(),
            footprint: result.footprint.clone(),
            tasks: result
                .tasks
                .iter()
                .map(|t| ChildTask {
                    placement: WirePlacement::of(&t.placement),
                    rates: t.rates,
                    work: t
                        .work
                        .iter()
                        .map(|n| WireNote {
                            phase: n.phase.clone(),
                            calibrated: n.mode == "calibrated",
                            target_ns: n.target_ns,
                            work: n.work,
                        })
                        .collect(),
                    scheduling: t.scheduling,
                    counters_unavailable: t.counters_unavailable.clone(),
                    error: t.error.clone(),
                    program: t.program.clone(),
                })
                .collect(),
        }
    }

    pub(super) fn into_result(
        self,
        spec: &RunSpec,
        options: &RunOptions,
        log: &SharedLog,
    ) -> RunResult {
        let tasks = spec
            .tasks
            .iter()
            .zip(self.tasks)
            .enumerate()
            .map(|(i, (task, wire))| TaskRun {
                spec: task.clone(),
                tid: log.tid(i),
                records: log.records(i),
                placement: wire.placement.into_placement(),
                rates: wire.rates,
                work: wire
                    .work
                    .into_iter()
                    .map(|n| WorkNote {
                        phase: n.phase,
                        mode: if n.calibrated { "calibrated" } else { "fixed" }.into(),
                        target_ns: n.target_ns,
                        work: n.work,
                    })
                    .collect(),
                scheduling: wire.scheduling,
                counters_unavailable: wire.counters_unavailable,
                error: wire.error,
                program: wire.program,
            })
            .collect();
        let measured = Measured {
            start_ns: self.start_ns,
            end_ns: self.end_ns,
            stop: self.stop,
            memory_locked: self.memory_locked,
            rt_throttling: self.rt_throttling,
            notes: self.notes,
            tasks,
        };
        RunResult {
            footprint: self.footprint,
            ..RunResult::assemble(spec, options, measured)
        }
    }
}

/// An [`RtError`] on the wire (the kinds the caller tells apart).
#[derive(Serialize, Deserialize)]
pub(super) enum WireError {
    /// [`RtError::Input`]: the [`InputError`] it wraps.
    Input(InputError),
    Privilege {
        what: String,
        fix: String,
    },
    Task {
        task: String,
        message: String,
    },
    Other {
        message: String,
    },
}

impl WireError {
    pub(super) fn of(error: RtError) -> WireError {
        match error {
            RtError::Input(input) => WireError::Input(input),
            RtError::Privilege { what, fix } => WireError::Privilege { what, fix },
            RtError::Task { task, message } => WireError::Task { task, message },
            other => WireError::Other {
                message: other.to_string(),
            },
        }
    }

    pub(super) fn into_error(self) -> RtError {
        match self {
            WireError::Input(input) => input.into(),
            WireError::Privilege { what, fix } => RtError::Privilege { what, fix },
            WireError::Task { task, message } => RtError::Task { task, message },
            WireError::Other { message } => RtError::Task {
                task: "setup".into(),
                message,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Through JSON, as the supervised child sends it.
    fn across_the_wire(error: RtError) -> RtError {
        let bytes = serde_json::to_vec(&WireError::of(error)).unwrap();
        serde_json::from_slice::<WireError>(&bytes)
            .unwrap()
            .into_error()
    }

    #[test]
    fn an_input_error_crosses_the_wire_with_every_field() {
        let error = across_the_wire(RtError::Input(InputError {
            file: "plan.toml".into(),
            line: Some(7),
            field: "task 'a' field `period`".into(),
            expected: "a duration".into(),
            found: "\"soon\"".into(),
        }));
        assert_eq!(
            error.to_string(),
            "plan.toml:7: task 'a' field `period`: expected a duration, found \"soon\""
        );
        assert!(matches!(
            error,
            RtError::Input(InputError { line: Some(7), .. })
        ));
    }
}
