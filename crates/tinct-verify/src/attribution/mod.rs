//! Every late job explained: each job whose response time exceeds its
//! bound — the analysis' WCRT (kim2013 Eq. 2) or, without one, its
//! deadline — gets one cause, the first of these that holds:
//!
//! 1. [`Cause::NotRealTime`]: the job did not run under the real-time
//!    policy the bound assumes (`--no-rt`): the bound does not apply.
//! 2. [`Cause::HostStall`]: the [`tinct_rt::sentinel`] of its CPU measured
//!    stalls within the job's busy window at least as long as the
//!    exceedance; without them the job would have met its bound. The busy
//!    window starts at the job's release, or earlier at the start of the
//!    stretch during which this task's or higher-priority jobs were pending
//!    on its CPU without a pause ([`BUSY_GAP_NS`]): the level-i busy
//!    period, since a stall there delays the job as well. The
//!    higher-priority jobs released after the job's bound had passed that
//!    ran before it finished count with the stall: they met the job only
//!    because the stall held it past its bound (a stopped process, on
//!    SIGCONT, runs the backlog of releases that came during the stop
//!    first). Were the stall gone, the job would have ended by its bound,
//!    before they were released.
//! 3. [`Cause::CbsThrottle`]: a SCHED_DEADLINE job executed past its
//!    runtime Q, so the kernel's CBS throttled it until the reservation's
//!    next replenishment; the bound assumes a job within Q (the runtime
//!    the analysis derives covers C and its overheads). How long it waited
//!    is not measured: the overrun is what is named.
//! 4. [`Cause::ExecAboveC`]: its own execution time, and those of the
//!    earlier and higher-priority jobs in its busy window, exceeded their
//!    modelled C by at least the exceedance (with the stall time, if any):
//!    without the excess it would have met its bound.
//! 5. [`Cause::PlatformOverhead`]: the part of its response during which
//!    its CPU ran none of the run's jobs of its priority or above (release
//!    latency, context switches, the kernel's own work; at most the
//!    sentinel's stall threshold per dispatch in the window, since a
//!    longer gap that the top-priority sentinel did not see as a stall
//!    means something the analysis does not know ran above the job), with any stall and
//!    execution above C, covers the exceedance: the analysis did not charge
//!    (enough) platform overhead (`tinct analyze --overheads measured`).
//! 6. [`Cause::ColouringNotEffective`]: the task's working set was meant to
//!    be isolated by page colouring, shares the last-level cache with
//!    another task of the run, and the isolation is absent: the colour
//!    probe finds colouring not effective (or cannot tell), or the working
//!    set was not coloured at all (`--uncolored`).
//! 7. None of these, by what the bound is:
//!    - [`Cause::Predicted`]: the analysis found no WCRT for the task (its
//!      response-time iteration passed the deadline), so the deadline is
//!      the bound and the analysis itself said a job can miss it;
//!    - [`Cause::NoAnalysis`]: no analysis bounds the task (an rt-app file,
//!      a task set run without analysis): the deadline is the bound and
//!      there is no prediction to contradict;
//!    - [`Cause::Unexplained`]: the bound is the analysis' WCRT, so the
//!      analysis or its inputs are wrong, and `tinct run` makes it loud
//!      (see [`crate::output::Summary::unexplained`], which counts exactly
//!      these jobs).
//!
//! A stall shorter than the exceedance is still reported beside another
//! cause. Aborted jobs have no response time and are not attributed.
//!
//! The modules: `cause` (the causes), `late_jobs` (what the
//! attribution finds: each late job explained, the counts per cause),
//! `busy_window` (a job's busy window on its CPU and what ran in it),
//! `timeline` (a CPU's jobs at a priority floor, indexed for those
//! queries),
//! `cache_sharing` (who shares a job's last-level cache, and why
//! colouring does not keep them out), `explain` (the first cause that
//! holds, for every late job).

mod busy_window;
mod cache_sharing;
mod cause;
mod explain;
mod late_jobs;
#[cfg(test)]
mod tests;
mod timeline;

pub use busy_window::BUSY_GAP_NS;
pub use cause::Cause;
pub use explain::{Evidence, attribute};
pub use late_jobs::{Attribution, BoundKind, CauseCounts, LateJob};
pub use tinct_rt::colouring::Colouring;
