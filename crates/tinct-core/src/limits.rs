//! The limits of a task set and of a run: each one's value and the one
//! sentence that states it ([`Limit::expected`]), used by every check that
//! refuses it — tinct-core's validation of a file (with its line) and
//! tinct-rt's checks of specs built without a file (rt-app, benches) — so a
//! user reads the same words whichever path refused.

use crate::model::Kernel;
use crate::units::{Bytes, Nanos};

/// The longest time a task's `body.target` may name, and the longest time
/// `tinct run` takes in any field (366 days): inside it every instant of a
/// run fits in 64-bit nanoseconds. (Periods and deadlines are not limited
/// by the format: the analysis decides them exactly up to 2^64 ns; `tinct
/// run` refuses them beyond this, naming the task's line.)
pub const MAX_RUN_TIME_NS: u64 = 366 * 24 * 3600 * 1_000_000_000;

/// The smallest working set of a memory kernel (chase, read, write, rmw,
/// mixed): one cache line of 64 B, since one memory iteration touches one
/// line.
pub const MIN_WORKING_SET_BYTES: u64 = 64;

/// The largest `[[edge]] buffer` (one packet, allocated before a run's
/// release): 64 MiB.
pub const MAX_BUFFER_BYTES: u64 = 64 << 20;

/// The most tasks in one task set (the analysis is quadratic in the tasks
/// of a core). `tinct run` starts a thread per task and takes at most
/// [`MAX_RUN_THREADS`] of them; a larger set stays analyzable, as periods
/// beyond a run's 366 days do.
pub const MAX_TASKS: usize = 10_000;

/// The most threads one run may start (tasks, rt-app instances included).
pub const MAX_RUN_THREADS: usize = 1024;

/// A limit a file or a run spec can break.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Limit {
    /// A time in a run (a body's target, a period, a deadline, an offset, a
    /// step): at most [`MAX_RUN_TIME_NS`].
    RunTime,
    /// A run's duration: above zero and at most [`MAX_RUN_TIME_NS`].
    RunDuration,
    /// A period (or timer period): above zero.
    PeriodAboveZero,
    /// The working set of a memory kernel: at least [`MIN_WORKING_SET_BYTES`].
    WorkingSet(Kernel),
    /// An edge's buffer (one packet): at most [`MAX_BUFFER_BYTES`].
    Buffer,
    /// The critical sections of a job: Σ lengths within the body's target,
    /// the work a job does.
    SectionsInBody(Nanos),
    /// Tasks in one task set: at most [`MAX_TASKS`].
    SetTasks,
    /// Threads in one run: 1 to [`MAX_RUN_THREADS`].
    RunThreads,
}

impl Limit {
    /// What the limit allows, as the `expected` of a refusal.
    pub fn expected(self) -> String {
        match self {
            Limit::RunTime => format!(
                "at most {} (the limit of times in a run)",
                Nanos(MAX_RUN_TIME_NS)
            ),
            Limit::RunDuration => format!(
                "a run duration longer than 0 and at most {} (the limit of times in a run)",
                Nanos(MAX_RUN_TIME_NS)
            ),
            Limit::PeriodAboveZero => "a period above zero".into(),
            Limit::WorkingSet(kernel) => format!(
                "a working set of at least {} for the {kernel} kernel (one cache line: each \
                 memory iteration touches one line)",
                Bytes(MIN_WORKING_SET_BYTES)
            ),
            Limit::Buffer => format!(
                "a packet of at most {} (allocated before the run's release)",
                Bytes(MAX_BUFFER_BYTES)
            ),
            Limit::SectionsInBody(target) => format!(
                "critical sections that fit in the body's work: Σ lengths ≤ body.target = {target}"
            ),
            Limit::SetTasks => format!("at most {MAX_TASKS} tasks"),
            Limit::RunThreads => {
                format!("1 to {MAX_RUN_THREADS} threads (the limit of threads in one run)")
            }
        }
    }
}

/// The smallest SCHED_DEADLINE runtime the kernel accepts (2^DL_SCALE ns,
/// `__checkparam_dl` in kernel/sched/deadline.c).
pub const MIN_DEADLINE_RUNTIME: Nanos = Nanos(1 << 10);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_limit_states_its_value() {
        assert_eq!(
            Limit::RunTime.expected(),
            "at most 31622400s (the limit of times in a run)"
        );
        assert_eq!(
            Limit::WorkingSet(Kernel::Chase).expected(),
            "a working set of at least 64B for the chase kernel (one cache line: each memory \
             iteration touches one line)"
        );
        assert_eq!(
            Limit::Buffer.expected(),
            "a packet of at most 64MiB (allocated before the run's release)"
        );
        assert_eq!(
            Limit::SectionsInBody(Nanos(1_000)).expected(),
            "critical sections that fit in the body's work: Σ lengths ≤ body.target = 1us"
        );
        assert_eq!(Limit::SetTasks.expected(), "at most 10000 tasks");
        assert_eq!(
            Limit::RunThreads.expected(),
            "1 to 1024 threads (the limit of threads in one run)"
        );
    }
}
