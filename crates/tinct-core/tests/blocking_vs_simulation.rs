//! The jitter- and blocking-aware analysis against a brute-force simulation
//! of fixed-priority preemptive scheduling with locks (issue 12):
//!
//! - the synchronous critical instant with jitter: the task under analysis
//!   and every higher-priority task released at 0, later jobs of each hp
//!   task at their worst jitter offsets k·T_j − J_j, and the lower-priority
//!   task whose section gives B_i holding its resource at 0 — the simulated
//!   response time equals the bound when the cores's resources all use the
//!   ceiling protocol (the scenario the bound is exact for);
//! - random schedules (release offsets, per-job jitter in [0, J], sections
//!   anywhere in the job) under PCP and PIP, simulated with the protocols'
//!   own rules: no job's response time exceeds its bound.
//!
//! Time is in ticks of 1 µs; the analysis sees the same numbers in ns.

mod common;

use proptest::prelude::*;
use tinct_core::analysis::analyze;
use tinct_core::model::{CriticalSection, Protocol, Resource, Task, TaskSet};
use tinct_core::units::Nanos;

const TICK_NS: u64 = 1_000;
const PERIODS: [u64; 8] = [20, 24, 30, 40, 60, 80, 120, 240];

#[derive(Clone, Debug)]
struct SimTask {
    wcet: u64,
    period: u64,
    deadline: u64,
    jitter: u64,
    /// (resource, length, offset into the job where the section starts).
    sections: Vec<(usize, u64, u64)>,
}

#[derive(Clone, Debug)]
struct Core {
    /// Highest priority first.
    tasks: Vec<SimTask>,
    protocols: Vec<Protocol>,
}

fn task_set(core: &Core) -> TaskSet {
    let mut set = common::one_core_set(common::platform(1), &core.tasks, |i, t| Task {
        deadline: Nanos(t.deadline * TICK_NS),
        jitter: Nanos(t.jitter * TICK_NS),
        critical_sections: t
            .sections
            .iter()
            .map(|&(resource, length, _)| CriticalSection {
                resource,
                length: Nanos(length * TICK_NS),
            })
            .collect(),
        ..common::numbered_task(i, Nanos(t.period * TICK_NS), Nanos(t.wcet * TICK_NS))
    });
    set.resources = core
        .protocols
        .iter()
        .enumerate()
        .map(|(r, &protocol)| Resource {
            name: format!("r{r}"),
            protocol,
        })
        .collect();
    set
}

/// One job in the simulation.
#[derive(Clone, Debug)]
struct Job {
    task: usize,
    /// Nominal release (response times count from here).
    nominal: i64,
    release: i64,
    done: u64,
    /// The job's sections: (resource, start offset, length).
    sections: Vec<(usize, u64, u64)>,
    /// A job already inside a section at time 0 (the critical instant's holder).
    held_from_start: Option<usize>,
    finish: Option<i64>,
}

impl Job {
    /// The section the job is in or about to enter at its progress, if any.
    fn section_at(&self, progress: u64) -> Option<(usize, bool)> {
        if let Some(r) = self.held_from_start {
            return Some((r, false));
        }
        self.sections
            .iter()
            .find(|&&(_, start, length)| progress >= start && progress < start + length)
            .map(|&(r, start, _)| (r, progress == start))
    }

    fn remaining(&self, wcet: u64) -> u64 {
        wcet - self.done
    }
}

/// Simulates until every job in `jobs` finished or `until`; returns the
/// jobs with their finish times. Priorities: index 0 highest.
fn simulate(core: &Core, mut jobs: Vec<Job>, until: i64) -> Vec<Job> {
    let n = core.tasks.len();
    let mut ceiling = vec![usize::MAX; core.protocols.len()];
    for (i, t) in core.tasks.iter().enumerate() {
        for &(r, _, _) in &t.sections {
            ceiling[r] = ceiling[r].min(i);
        }
    }
    let wcet = |job: &Job| {
        if job.held_from_start.is_some() {
            job.sections.first().map_or(0, |s| s.2)
        } else {
            core.tasks[job.task].wcet
        }
    };
    // Which job holds each resource.
    let mut holder: Vec<Option<usize>> = vec![None; core.protocols.len()];
    for (k, job) in jobs.iter().enumerate() {
        if let Some(r) = job.held_from_start {
            holder[r] = Some(k);
        }
    }
    let mut now: i64 = jobs.iter().map(|j| j.release).min().unwrap_or(0).min(0);
    while now < until {
        // Ready: released, unfinished, the oldest unfinished job of its task.
        let mut oldest = vec![None; n];
        for (k, job) in jobs.iter().enumerate() {
            if job.finish.is_none() && job.release <= now {
                let slot: &mut Option<usize> = &mut oldest[job.task];
                if slot.is_none_or(|o| jobs[o].release > job.release) {
                    *slot = Some(k);
                }
            }
        }
        // Effective priorities (smaller wins) and who is blocked.
        let mut effective: Vec<(usize, usize)> = Vec::new(); // (priority, job)
        let mut blocked_on: Vec<(usize, usize)> = Vec::new(); // (job, holder job)
        let mut waiting_on_ceiling: Vec<usize> = Vec::new(); // priorities of PCP jobs that wait
        for &k in oldest.iter().flatten() {
            let job = &jobs[k];
            let mut priority = job.task;
            if let Some((r, entering)) = job.section_at(job.done) {
                let held_by_other = holder[r].is_some_and(|h| h != k);
                match (core.protocols[r], entering, held_by_other) {
                    (_, false, true) => panic!("a job inside a section it does not hold"),
                    // A lock is taken when the job runs its first tick of
                    // the section: until then it competes at its own priority.
                    (Protocol::Pcp, true, true) => {
                        waiting_on_ceiling.push(job.task);
                        continue;
                    }
                    (_, true, true) => {
                        blocked_on.push((k, holder[r].unwrap_or(k)));
                        continue;
                    }
                    (Protocol::Pcp, false, false) => priority = priority.min(ceiling[r]),
                    _ => {}
                }
            }
            effective.push((priority, k));
        }
        // Inheritance: a holder runs at the priority of what it blocks.
        for &(blocked, h) in &blocked_on {
            if let Some(e) = effective.iter_mut().find(|(_, k)| *k == h) {
                e.0 = e.0.min(jobs[blocked].task);
            }
        }
        // Under the ceiling protocol a job never finds its lock taken when
        // it is the one to run: the holder runs at a ceiling at least as high.
        if let (Some(&waiting), Some(&(winner, _))) =
            (waiting_on_ceiling.iter().min(), effective.iter().min())
        {
            assert!(
                winner <= waiting,
                "PCP: a lock was taken when its job should run"
            );
        }
        let Some(&(_, k)) = effective.iter().min() else {
            now += 1;
            continue;
        };
        // Run one tick.
        if let Some((r, _)) = jobs[k].section_at(jobs[k].done) {
            holder[r] = Some(k);
        }
        jobs[k].done += 1;
        let progress = jobs[k].done;
        let still_in = jobs[k].held_from_start.is_some() && progress < wcet(&jobs[k])
            || jobs[k]
                .sections
                .iter()
                .any(|&(_, start, length)| progress > start && progress < start + length);
        if !still_in {
            for h in holder.iter_mut() {
                if *h == Some(k) {
                    *h = None;
                }
            }
        }
        now += 1;
        if jobs[k].remaining(wcet(&jobs[k])) == 0 {
            jobs[k].finish = Some(now);
        }
    }
    jobs
}

fn job(core: &Core, task: usize, nominal: i64, release: i64) -> Job {
    Job {
        task,
        nominal,
        release,
        done: 0,
        sections: core.tasks[task]
            .sections
            .iter()
            .map(|&(r, length, start)| (r, start, length))
            .collect(),
        held_from_start: None,
        finish: None,
    }
}

/// The critical instant of task `i` with `holder` (task, resource, length)
/// in its section at 0.
fn critical_instant(core: &Core, i: usize, holder: Option<(usize, usize, u64)>) -> Option<u64> {
    let mut jobs = Vec::new();
    let horizon = core.tasks[i].deadline as i64 * 4 + 10;
    for (j, t) in core.tasks.iter().enumerate().take(i) {
        let (period, jitter) = (t.period as i64, t.jitter as i64);
        let mut k = 0;
        loop {
            let nominal = k * period - jitter;
            if nominal > horizon {
                break;
            }
            jobs.push(job(core, j, nominal, nominal.max(0)));
            k += 1;
        }
    }
    let jitter_i = core.tasks[i].jitter as i64;
    let mut own = job(core, i, -jitter_i, 0);
    // Sections first in the job: blocked, if at all, at once.
    let mut offset = 0;
    for s in own.sections.iter_mut() {
        s.1 = offset;
        offset += s.2;
    }
    let own_index = jobs.len();
    jobs.push(own);
    if let Some((l, r, length)) = holder {
        jobs.push(Job {
            held_from_start: Some(r),
            sections: vec![(r, 0, length)],
            ..job(core, l, 0, 0)
        });
    }
    let done = simulate(core, jobs, horizon);
    done[own_index]
        .finish
        .map(|f| (f - done[own_index].nominal) as u64)
}

fn core_strategy() -> impl Strategy<Value = Core> {
    let task = (
        0..PERIODS.len(),
        2u64..=100,
        prop_oneof![1 => Just(0u64), 1 => 0u64..=60],
        prop::collection::vec((0usize..2, 1u64..=40, 0u64..=100), 0..=2),
    );
    (
        prop::collection::vec(task, 1..=5),
        prop::sample::select(vec![Protocol::Pcp, Protocol::Pip]),
        prop::sample::select(vec![Protocol::Pcp, Protocol::Pip]),
    )
        .prop_map(|(raw, p0, p1)| {
            let mut tasks: Vec<SimTask> = raw
                .into_iter()
                .map(|(p, c_pct, j_pct, sections)| {
                    let period = PERIODS[p];
                    let wcet = (period * c_pct / 400).max(1);
                    // Sections fit in the job, one after the other.
                    let mut used = 0;
                    let sections = sections
                        .into_iter()
                        .filter_map(|(r, len_pct, at_pct)| {
                            let length = (wcet * len_pct / 100).max(1);
                            let room = wcet - used;
                            (length <= room).then(|| {
                                let start = used + (room - length) * at_pct / 100;
                                used = start + length;
                                (r, length, start)
                            })
                        })
                        .collect();
                    SimTask {
                        wcet,
                        period,
                        deadline: period,
                        jitter: period * j_pct / 100,
                        sections,
                    }
                })
                .collect();
            tasks.sort_by_key(|t| t.deadline);
            Core {
                tasks,
                protocols: vec![p0, p1],
            }
        })
}

/// The section of a lower-priority task that gives B_i under the ceiling
/// protocol: the longest one on a resource of ceiling ≥ prio(i).
fn longest_blocking_section(core: &Core, i: usize) -> Option<(usize, usize, u64)> {
    let mut ceiling = vec![usize::MAX; core.protocols.len()];
    for (k, t) in core.tasks.iter().enumerate() {
        for &(r, _, _) in &t.sections {
            ceiling[r] = ceiling[r].min(k);
        }
    }
    core.tasks
        .iter()
        .enumerate()
        .skip(i + 1)
        .flat_map(|(l, t)| t.sections.iter().map(move |&(r, length, _)| (l, r, length)))
        .filter(|&(_, r, _)| ceiling[r] <= i)
        .max_by_key(|&(_, _, length)| length)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    /// At the critical instant the bound is reached exactly (ceiling
    /// protocol), and never exceeded (inheritance).
    #[test]
    fn the_critical_instant_reaches_the_bound(core in core_strategy()) {
        let analysis = analyze(&task_set(&core)).unwrap();
        let all_pcp = core.protocols.iter().all(|&p| p == Protocol::Pcp);
        for (i, report) in analysis.tasks.iter().enumerate() {
            let holder = if all_pcp { longest_blocking_section(&core, i) } else { None };
            if all_pcp {
                let expected = holder.map_or(0, |h| h.2 * TICK_NS);
                prop_assert_eq!(report.blocking_ns, Some(expected), "task {}", i);
            }
            let simulated = critical_instant(&core, i, holder);
            match report.wcrt_ns {
                Some(bound) => {
                    let simulated = simulated.expect("finishes within its bound");
                    prop_assert!(simulated * TICK_NS <= bound, "task {}: {} above {}", i, simulated, bound);
                    if all_pcp {
                        prop_assert_eq!(simulated * TICK_NS, bound, "task {} not exact", i);
                    }
                }
                None => {
                    if all_pcp {
                        prop_assert!(
                            simulated.is_none_or(|s| s > core.tasks[i].deadline),
                            "task {}: analysis says miss, simulation {:?}", i, simulated
                        );
                    }
                }
            }
        }
    }

    /// Random offsets, jitter and section positions under PCP and PIP: no
    /// job of a task the analysis bounds takes longer than its bound.
    #[test]
    fn random_schedules_stay_within_the_bounds(
        core in core_strategy(),
        seed in any::<u64>(),
    ) {
        let analysis = analyze(&task_set(&core)).unwrap();
        let mut state = seed | 1;
        let mut next = |m: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % m.max(1)
        };
        let horizon: i64 = 480;
        let mut jobs = Vec::new();
        for (i, t) in core.tasks.iter().enumerate() {
            let phase = next(t.period) as i64;
            let mut nominal = phase;
            while nominal < horizon {
                let delay = next(t.jitter + 1) as i64;
                jobs.push(job(&core, i, nominal, nominal + delay));
                nominal += t.period as i64;
            }
        }
        let done = simulate(&core, jobs, horizon + 400);
        for job in &done {
            let Some(bound) = analysis.tasks[job.task].wcrt_ns else { continue };
            if let Some(finish) = job.finish {
                let response = (finish - job.nominal) as u64 * TICK_NS;
                prop_assert!(response <= bound, "task {}: {} above {}", job.task, response, bound);
            } else {
                prop_assert!(false, "task {}: a job released at {} never finished", job.task, job.release);
            }
        }
    }
}
