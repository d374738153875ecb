//! What a trace draws, independent of its file format: per thread, lanes of
//! slices that nest properly, instant events and counter tracks.
//!
//! A thread's slices are its jobs (start to finish; a job stopped before it
//! finished ends at the run's end) and, for a thread pinned to one CPU, the
//! jobs of other threads pinned to the same CPU that ran entirely inside one
//! of its jobs without either migrating: while they ran, this job did not
//! (one CPU), so they are drawn nested in it as "preempted by B #k" (or
//! "off CPU: B #k" when the job counted no involuntary switch, e.g. it
//! slept). [`lay_out`] packs the slices into lanes in which any two slices
//! are disjoint or nested: lane 0 is the thread's own track; a slice that
//! would partially overlap goes to the next lane that takes it (an extra
//! child track), so no track ever holds a partial overlap and nothing is
//! dropped.

use super::{JobOutcome, TraceJob, TraceRun, ValueUnit};

/// A named argument of a slice or instant.
#[derive(Clone, Debug, PartialEq)]
pub enum ArgValue {
    /// An unsigned integer.
    Uint(u64),
    /// Text.
    Text(String),
}

/// A slice: an interval on one lane of a thread.
#[derive(Clone, Debug, PartialEq)]
pub struct Slice {
    /// Begin, ns from the common release.
    pub start_ns: u64,
    /// End (≥ begin).
    pub end_ns: u64,
    /// Title.
    pub name: String,
    /// `job` or `preemption`.
    pub category: &'static str,
    /// Details shown on selection.
    pub args: Vec<(String, ArgValue)>,
}

/// An instant event on a thread's track.
#[derive(Clone, Debug, PartialEq)]
pub struct Instant {
    /// When, ns from the common release.
    pub ts_ns: u64,
    /// Title.
    pub name: String,
    /// `release`, `deadline-miss` or `migration`.
    pub category: &'static str,
    /// Details.
    pub args: Vec<(String, ArgValue)>,
}

/// A per-job value over time: one point per job that has it.
#[derive(Clone, Debug, PartialEq)]
pub struct Counter {
    /// Track name.
    pub name: String,
    /// Unit.
    pub unit: ValueUnit,
    /// `(when, value)`: at the job's start (its release if it never started).
    pub points: Vec<(u64, u64)>,
}

/// Everything drawn for one thread.
#[derive(Clone, Debug, PartialEq)]
pub struct ThreadLayout {
    /// Thread name.
    pub name: String,
    /// Lane 0 is the thread's track, further lanes its overlap tracks; in
    /// each lane slices are sorted by (start, longest first) and any two are
    /// disjoint or nested.
    pub lanes: Vec<Vec<Slice>>,
    /// Releases, deadline misses and migrations.
    pub instants: Vec<Instant>,
    /// Per-job values, in order of first appearance.
    pub counters: Vec<Counter>,
}

/// A started job's interval: its start to its finish, or to the run's end
/// when it was stopped (never before its start).
fn interval(job: &TraceJob, run_end: u64) -> Option<(u64, u64)> {
    let start = job.start_ns?;
    let end = job.finish_ns.unwrap_or(run_end).max(start);
    Some((start, end))
}

/// The slice title of a job: `name #k`, with what went wrong and the CPUs
/// of a migration.
fn job_title(thread: &str, job: &TraceJob) -> String {
    let mut title = format!("{thread} #{}", job.job);
    match job.outcome {
        JobOutcome::Completed => {}
        JobOutcome::Missed => title.push_str(" MISSED"),
        JobOutcome::Aborted => title.push_str(" ABORTED"),
    }
    if let (Some(a), Some(b)) = (job.cpu_start, job.cpu_end)
        && a != b
    {
        title.push_str(&format!(" [CPU {a}→{b}]"));
    }
    title
}

fn job_args(job: &TraceJob) -> Vec<(String, ArgValue)> {
    let mut args = vec![
        ("job".to_string(), ArgValue::Uint(job.job)),
        ("phase".to_string(), ArgValue::Uint(u64::from(job.phase))),
        (
            "outcome".to_string(),
            ArgValue::Text(job.outcome.word().to_string()),
        ),
        ("release_ns".to_string(), ArgValue::Uint(job.release_ns)),
    ];
    let optional = [
        ("deadline_ns", job.deadline_ns),
        ("finish_ns", job.finish_ns),
        ("cpu_start", job.cpu_start.map(u64::from)),
        ("cpu_end", job.cpu_end.map(u64::from)),
    ];
    for (name, value) in optional {
        if let Some(v) = value {
            args.push((name.to_string(), ArgValue::Uint(v)));
        }
    }
    args.push((
        "preemptions".to_string(),
        ArgValue::Uint(u64::from(job.preemptions)),
    ));
    for v in &job.values {
        args.push((v.name.clone(), ArgValue::Uint(v.value)));
    }
    args
}

/// A job of a pinned thread that stayed on its CPU: a candidate preempter.
#[derive(Clone, Copy)]
struct PinnedJob {
    start: u64,
    end: u64,
    thread: usize,
    job: usize,
}

/// Per CPU, the pinned jobs that started and ended on it, sorted by start.
fn pinned_jobs_by_cpu(run: &TraceRun) -> std::collections::BTreeMap<u32, Vec<PinnedJob>> {
    let mut by_cpu: std::collections::BTreeMap<u32, Vec<PinnedJob>> = Default::default();
    for (t, thread) in run.threads.iter().enumerate() {
        let Some(cpu) = thread.pinned_cpu else {
            continue;
        };
        for (j, job) in thread.jobs.iter().enumerate() {
            let stayed = job.cpu_start == Some(cpu) && job.cpu_end == Some(cpu);
            if let (true, Some((start, end))) = (stayed, interval(job, run.end_ns)) {
                by_cpu.entry(cpu).or_default().push(PinnedJob {
                    start,
                    end,
                    thread: t,
                    job: j,
                });
            }
        }
    }
    for jobs in by_cpu.values_mut() {
        jobs.sort_by_key(|p| (p.start, std::cmp::Reverse(p.end)));
    }
    by_cpu
}

/// The slices of the jobs of other threads that ran on `cpu` strictly
/// within `(start, end)` of a job of thread `me`.
fn displaced_by(
    run: &TraceRun,
    on_cpu: &[PinnedJob],
    me: usize,
    (start, end): (u64, u64),
    preempted: bool,
) -> Vec<Slice> {
    let first = on_cpu.partition_point(|p| p.start < start);
    on_cpu[first..]
        .iter()
        .take_while(|p| p.start <= end)
        .filter(|p| p.thread != me && p.end <= end && (p.start, p.end) != (start, end))
        .map(|p| {
            let other = &run.threads[p.thread];
            let job = &other.jobs[p.job];
            let who = format!("{} #{}", other.name, job.job);
            Slice {
                start_ns: p.start,
                end_ns: p.end,
                name: if preempted {
                    format!("preempted by {who}")
                } else {
                    format!("off CPU: {who}")
                },
                category: "preemption",
                args: vec![
                    ("thread".to_string(), ArgValue::Text(other.name.clone())),
                    ("job".to_string(), ArgValue::Uint(job.job)),
                    (
                        "inferred".to_string(),
                        ArgValue::Text(
                            "both threads are pinned to this CPU and neither job migrated"
                                .to_string(),
                        ),
                    ),
                ],
            }
        })
        .collect()
}

/// Packs slices into lanes in which any two are disjoint or nested.
/// Greedy over slices sorted by (start, longest first): each goes to the
/// first lane whose innermost open slice (after closing those that ended
/// by its start) contains it, or that has none open.
pub fn pack_lanes(mut slices: Vec<Slice>) -> Vec<Vec<Slice>> {
    slices.sort_by_key(|s| (s.start_ns, std::cmp::Reverse(s.end_ns)));
    let mut lanes: Vec<Vec<Slice>> = Vec::new();
    let mut open: Vec<Vec<u64>> = Vec::new(); // per lane, ends of open slices
    for slice in slices {
        let mut placed = false;
        for (lane, ends) in open.iter_mut().enumerate() {
            while ends.last().is_some_and(|&end| end <= slice.start_ns) {
                ends.pop();
            }
            if ends.last().is_none_or(|&end| end >= slice.end_ns) {
                ends.push(slice.end_ns);
                lanes[lane].push(slice.clone());
                placed = true;
                break;
            }
        }
        if !placed {
            open.push(vec![slice.end_ns]);
            lanes.push(vec![slice]);
        }
    }
    if lanes.is_empty() {
        lanes.push(Vec::new());
    }
    lanes
}

/// Lays out every thread of `run`.
pub fn lay_out(run: &TraceRun) -> Vec<ThreadLayout> {
    let by_cpu = pinned_jobs_by_cpu(run);
    run.threads
        .iter()
        .enumerate()
        .map(|(t, thread)| {
            let mut slices = Vec::new();
            let mut instants = Vec::new();
            let mut counters: Vec<super::layout::Counter> = Vec::new();
            for job in &thread.jobs {
                instants.push(Instant {
                    ts_ns: job.release_ns,
                    name: format!("release #{}", job.job),
                    category: "release",
                    args: vec![("job".to_string(), ArgValue::Uint(job.job))],
                });
                if let (JobOutcome::Missed, Some(deadline)) = (job.outcome, job.deadline_ns) {
                    instants.push(Instant {
                        ts_ns: deadline,
                        name: format!("deadline miss #{}", job.job),
                        category: "deadline-miss",
                        args: vec![("job".to_string(), ArgValue::Uint(job.job))],
                    });
                }
                let when = job.start_ns.unwrap_or(job.release_ns);
                for value in &job.values {
                    match counters.iter_mut().find(|c| c.name == value.name) {
                        Some(c) => c.points.push((when, value.value)),
                        None => counters.push(Counter {
                            name: value.name.clone(),
                            unit: value.unit,
                            points: vec![(when, value.value)],
                        }),
                    }
                }
                let Some(span) = interval(job, run.end_ns) else {
                    continue;
                };
                if let (Some(a), Some(b)) = (job.cpu_start, job.cpu_end)
                    && a != b
                {
                    instants.push(Instant {
                        ts_ns: span.1,
                        name: format!("migrated CPU {a}→{b} #{}", job.job),
                        category: "migration",
                        args: vec![(
                            "seen".to_string(),
                            ArgValue::Text(
                                "at the job's end; it happened at some instant of the job"
                                    .to_string(),
                            ),
                        )],
                    });
                }
                slices.push(Slice {
                    start_ns: span.0,
                    end_ns: span.1,
                    name: job_title(&thread.name, job),
                    category: "job",
                    args: job_args(job),
                });
                let pinned = thread
                    .pinned_cpu
                    .filter(|&c| job.cpu_start == Some(c) && job.cpu_end == Some(c));
                if let Some(on_cpu) = pinned.and_then(|c| by_cpu.get(&c)) {
                    slices.extend(displaced_by(run, on_cpu, t, span, job.preemptions > 0));
                }
            }
            for c in &mut counters {
                c.points.sort_by_key(|p| p.0);
            }
            instants.sort_by_key(|i| i.ts_ns);
            ThreadLayout {
                name: thread.name.clone(),
                lanes: pack_lanes(slices),
                instants,
                counters,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::check::{TrackSlice, partial_overlaps};
    use crate::trace::fixture::run;

    fn slice(start: u64, end: u64) -> Slice {
        Slice {
            start_ns: start,
            end_ns: end,
            name: format!("{start}-{end}"),
            category: "job",
            args: vec![],
        }
    }

    fn no_partial_overlap(lanes: &[Vec<Slice>]) -> bool {
        let slices: Vec<TrackSlice> = lanes
            .iter()
            .enumerate()
            .flat_map(|(lane, s)| {
                s.iter().map(move |s| TrackSlice {
                    track: lane.to_string(),
                    start_ns: s.start_ns,
                    end_ns: s.end_ns,
                    name: s.name.clone(),
                    category: s.category.to_string(),
                })
            })
            .collect();
        partial_overlaps(&slices).is_empty()
    }

    #[test]
    fn partially_overlapping_slices_go_to_another_lane_nested_ones_stay() {
        let lanes = pack_lanes(vec![slice(0, 10), slice(2, 5), slice(5, 12), slice(12, 20)]);
        assert_eq!(lanes.len(), 2);
        let names = |l: &Vec<Slice>| l.iter().map(|s| s.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(&lanes[0]), ["0-10", "2-5", "12-20"]);
        assert_eq!(names(&lanes[1]), ["5-12"]);
        assert!(no_partial_overlap(&lanes));
        assert_eq!(pack_lanes(vec![]).len(), 1, "a thread always has its track");
    }

    #[test]
    fn pinned_preemptions_nest_inside_the_preempted_job() {
        let layout = lay_out(&run());
        let lo = &layout[1];
        assert_eq!(lo.lanes.len(), 1);
        let names: Vec<&str> = lo.lanes[0].iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["lo #0", "preempted by hi #0"]);
        // hi's job 1 on CPU 0 holds nothing of lo (lo's job 1 never started).
        assert_eq!(layout[0].lanes[0].len(), 2);
        // The unpinned thread infers nothing and marks its migration.
        let free = &layout[2];
        let names: Vec<&str> = free.lanes[0].iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["free #0", "free #1 [CPU 1→0]", "free #2 ABORTED"]);
        assert_eq!(
            free.lanes[0][2].end_ns, 300,
            "an aborted job ends at the run's end"
        );
        let migration = free.instants.iter().find(|i| i.category == "migration");
        assert_eq!(migration.map(|i| i.ts_ns), Some(150));
        for t in &layout {
            assert!(no_partial_overlap(&t.lanes), "{}", t.name);
        }
    }

    #[test]
    fn releases_misses_and_values_become_instants_and_counters() {
        let mut r = run();
        r.threads[0].jobs[1].outcome = JobOutcome::Missed;
        let layout = lay_out(&r);
        let hi = &layout[0];
        let count = |cat: &str| hi.instants.iter().filter(|i| i.category == cat).count();
        assert_eq!((count("release"), count("deadline-miss")), (2, 1));
        assert!(hi.lanes[0][1].name.ends_with("MISSED"));
        assert_eq!(hi.counters.len(), 1);
        assert_eq!(hi.counters[0].points, vec![(20, 30), (100, 80)]);
        // The job that never started has a release but no slice and no value.
        let lo = &layout[1];
        assert_eq!(
            lo.instants
                .iter()
                .filter(|i| i.category == "release")
                .count(),
            2
        );
        assert_eq!(lo.counters[0].points.len(), 1);
    }
}
