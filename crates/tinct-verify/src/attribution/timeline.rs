//! The finished one-CPU jobs of one CPU at one priority floor, indexed so
//! that a job's busy window and what ran in it are found in O(log n + k),
//! k the jobs in progress at an instant (at most one per task), instead of
//! by passes over every job of the run (such passes made attribution cubic
//! in back-to-back jobs and held a 2 s run for minutes).
//!
//! A [`Level`] holds the jobs of the tasks of priority ≥ its floor that
//! started and finished on its CPU, in release order (for the busy
//! stretches) and in start order (prefix sums and [`MaxTree`]s for what
//! ran in a window).

use tinct_rt::record::JobRecord;
use tinct_rt::runtime::RunResult;

use super::busy_window::{BUSY_GAP_NS, priority};

/// A finished job that started and ended on one CPU: (cpu, start, finish).
pub(super) fn on_one_cpu(r: &JobRecord) -> Option<(u32, u64, u64)> {
    let finish = r.finish_ns?;
    (r.started() && r.cpu == r.cpu_end).then_some((r.cpu, r.start_ns, finish))
}

/// One job of a level.
#[derive(Clone, Copy, Debug)]
pub(super) struct Entry {
    /// Its task (index into the run's tasks) and job number.
    pub task: usize,
    pub job: u64,
    pub release: u64,
    pub start: u64,
    pub finish: u64,
    pub exec: u64,
    /// Its CPU time here ([`Entry::on_cpu`]) above its task's modelled C
    /// (0 without C or within it).
    pub excess: u64,
    /// Its task's priority is above the level's floor.
    pub higher: bool,
}

impl Entry {
    /// Its CPU time on the level's CPU: its execution, at most its span
    /// (a program's threads may have run on other CPUs meanwhile; only
    /// its span on this CPU can delay another job here).
    fn on_cpu(&self) -> u64 {
        self.within(self.start, self.finish)
    }

    /// Its CPU time within `[from, to)`, at most its wall time there.
    fn within(&self, from: u64, to: u64) -> u64 {
        let overlap = self.finish.min(to).saturating_sub(self.start.max(from));
        self.exec.min(overlap)
    }
}

/// A segment tree of the largest value over index ranges (ties: the lower
/// index), and of every index in a range whose value passes a threshold.
#[derive(Debug)]
pub(super) struct MaxTree {
    size: usize,
    /// Node → (value, index); leaves at `size..2 size`.
    nodes: Vec<(u64, usize)>,
}

impl MaxTree {
    fn new(values: impl ExactSizeIterator<Item = u64>) -> MaxTree {
        let size = values.len().next_power_of_two().max(1);
        let mut nodes = vec![(0, usize::MAX); 2 * size];
        for (i, v) in values.enumerate() {
            nodes[size + i] = (v, i);
        }
        for n in (1..size).rev() {
            nodes[n] = Self::better(nodes[2 * n], nodes[2 * n + 1]);
        }
        MaxTree { size, nodes }
    }

    fn better(a: (u64, usize), b: (u64, usize)) -> (u64, usize) {
        if b.0 > a.0 || (b.0 == a.0 && b.1 < a.1) {
            b
        } else {
            a
        }
    }

    /// The largest value in `range` and its index (`None`: empty range).
    pub(super) fn max(&self, range: std::ops::Range<usize>) -> Option<(u64, usize)> {
        let (mut lo, mut hi) = (range.start + self.size, range.end + self.size);
        let mut best: Option<(u64, usize)> = None;
        while lo < hi {
            if lo & 1 == 1 {
                best = Some(best.map_or(self.nodes[lo], |b| Self::better(b, self.nodes[lo])));
                lo += 1;
            }
            if hi & 1 == 1 {
                hi -= 1;
                best = Some(best.map_or(self.nodes[hi], |b| Self::better(b, self.nodes[hi])));
            }
            lo /= 2;
            hi /= 2;
        }
        best.filter(|&(_, i)| i != usize::MAX)
    }

    /// Every index in `range` whose value is above `threshold`, in order.
    pub(super) fn above(&self, range: std::ops::Range<usize>, threshold: u64) -> Vec<usize> {
        let mut out = Vec::new();
        self.collect(1, 0, self.size, &range, threshold, &mut out);
        out
    }

    fn collect(
        &self,
        node: usize,
        lo: usize,
        hi: usize,
        range: &std::ops::Range<usize>,
        threshold: u64,
        out: &mut Vec<usize>,
    ) {
        if hi <= range.start || range.end <= lo || self.nodes[node].0 <= threshold {
            return;
        }
        if hi - lo == 1 {
            out.push(lo);
            return;
        }
        let mid = (lo + hi) / 2;
        self.collect(2 * node, lo, mid, range, threshold, out);
        self.collect(2 * node + 1, mid, hi, range, threshold, out);
    }
}

/// The jobs of one task within a level, in start order.
#[derive(Debug)]
struct TaskJobs {
    starts: Vec<u64>,
    /// Positions in [`Level::entries`].
    positions: Vec<usize>,
    excess_prefix: Vec<u128>,
    excess: MaxTree,
}

/// The jobs of priority ≥ `floor` on one CPU.
#[derive(Debug)]
pub(super) struct Level {
    floor: u8,
    /// Releases in order, and per position the start of the busy stretch
    /// it belongs to and the latest finish of that stretch so far.
    releases: Vec<u64>,
    stretch_start: Vec<u64>,
    stretch_reach: Vec<u64>,
    /// The jobs in start order.
    pub entries: Vec<Entry>,
    starts: Vec<u64>,
    finishes: MaxTree,
    /// Prefix sums over `entries` of `within` their own span, and of the
    /// jobs with a span (finish > start).
    inside_prefix: Vec<u128>,
    spans_prefix: Vec<u64>,
    /// Excess of the jobs of tasks above the floor (0 for the floor's).
    higher_prefix: Vec<u128>,
    higher: MaxTree,
    /// Per task (index into the run's tasks) at the floor, its jobs.
    at_floor: std::collections::HashMap<usize, TaskJobs>,
    /// The jobs of tasks above the floor in release order.
    above_floor: AboveFloor,
}

/// The jobs of the tasks above a level's floor, in release order: what a
/// job at the floor can meet that was released after a given instant.
#[derive(Debug)]
struct AboveFloor {
    releases: Vec<u64>,
    /// Positions in [`Level::entries`].
    positions: Vec<usize>,
    /// Prefix sums of each job's CPU time within its own span.
    inside_prefix: Vec<u128>,
    finishes: MaxTree,
}

fn prefix<T: Copy + Into<u128>>(values: impl Iterator<Item = T>) -> Vec<u128> {
    let mut out = vec![0u128];
    for v in values {
        out.push(out[out.len() - 1] + v.into());
    }
    out
}

fn sum(prefix: &[u128], range: std::ops::Range<usize>) -> u128 {
    prefix[range.end] - prefix[range.start]
}

impl Level {
    /// The level of `cpu` at priority `floor` in `result`.
    pub(super) fn new(result: &RunResult, cpu: u32, floor: u8) -> Level {
        let mut entries: Vec<Entry> = Vec::new();
        for (task, t) in result.tasks.iter().enumerate() {
            if priority(t) < floor {
                continue;
            }
            let c = t.spec.bound.map(|b| b.wcet_ns);
            for r in &t.records {
                let Some((on, start, finish)) = on_one_cpu(r) else {
                    continue;
                };
                if on != cpu {
                    continue;
                }
                let mut entry = Entry {
                    task,
                    job: r.job,
                    release: r.release_ns,
                    start,
                    finish,
                    exec: r.exec_ns,
                    excess: 0,
                    higher: priority(t) > floor,
                };
                entry.excess = c.map_or(0, |c| entry.on_cpu().saturating_sub(c));
                entries.push(entry);
            }
        }
        let mut by_release: Vec<(u64, u64)> =
            entries.iter().map(|e| (e.release, e.finish)).collect();
        by_release.sort_unstable();
        let (mut stretch_start, mut stretch_reach) = (Vec::new(), Vec::new());
        let mut current: Option<(u64, u64)> = None;
        for &(release, finish) in &by_release {
            current = Some(match current {
                Some((start, reach)) if reach.saturating_add(BUSY_GAP_NS) >= release => {
                    (start, reach.max(finish))
                }
                _ => (release, finish),
            });
            let (start, reach) = current.unwrap_or((release, finish));
            stretch_start.push(start);
            stretch_reach.push(reach);
        }
        entries.sort_unstable_by_key(|e| (e.start, e.task, e.job));
        let higher_excess = |e: &Entry| if e.higher { e.excess } else { 0 };
        let mut at_floor: std::collections::HashMap<usize, Vec<usize>> = Default::default();
        for (position, e) in entries.iter().enumerate() {
            if !e.higher {
                at_floor.entry(e.task).or_default().push(position);
            }
        }
        let at_floor = at_floor
            .into_iter()
            .map(|(task, positions)| {
                let jobs = TaskJobs {
                    starts: positions.iter().map(|&p| entries[p].start).collect(),
                    excess_prefix: prefix(positions.iter().map(|&p| entries[p].excess)),
                    excess: MaxTree::new(positions.iter().map(|&p| entries[p].excess)),
                    positions,
                };
                (task, jobs)
            })
            .collect();
        let mut above: Vec<usize> = (0..entries.len()).filter(|&p| entries[p].higher).collect();
        above.sort_unstable_by_key(|&p| entries[p].release);
        let above_floor = AboveFloor {
            releases: above.iter().map(|&p| entries[p].release).collect(),
            inside_prefix: prefix(above.iter().map(|&p| entries[p].on_cpu())),
            finishes: MaxTree::new(above.iter().map(|&p| entries[p].finish)),
            positions: above,
        };
        Level {
            floor,
            above_floor,
            releases: by_release.iter().map(|&(r, _)| r).collect(),
            stretch_start,
            stretch_reach,
            starts: entries.iter().map(|e| e.start).collect(),
            finishes: MaxTree::new(entries.iter().map(|e| e.finish)),
            inside_prefix: prefix(entries.iter().map(Entry::on_cpu)),
            spans_prefix: {
                let mut out = vec![0u64];
                for e in &entries {
                    out.push(out[out.len() - 1] + u64::from(e.finish > e.start));
                }
                out
            },
            higher_prefix: prefix(entries.iter().map(higher_excess)),
            higher: MaxTree::new(entries.iter().map(higher_excess)),
            at_floor,
            entries,
        }
    }

    /// The priority floor.
    pub(super) fn floor(&self) -> u8 {
        self.floor
    }

    /// The start of the busy window of a job released at `release`: the
    /// start of the stretch of jobs released before it, each released
    /// within [`BUSY_GAP_NS`] of the latest finish before it, that reaches
    /// `release`; else `release` itself.
    pub(super) fn window_start(&self, release: u64) -> u64 {
        let before = self.releases.partition_point(|&r| r < release);
        match before.checked_sub(1) {
            Some(last) if self.stretch_reach[last].saturating_add(BUSY_GAP_NS) >= release => {
                self.stretch_start[last]
            }
            _ => release,
        }
    }

    /// The positions of the jobs started before `instant` and finished
    /// after it (at most one per task).
    fn running_at(&self, instant: u64) -> Vec<usize> {
        let started = self.starts.partition_point(|&s| s < instant);
        self.finishes.above(0..started, instant)
    }

    /// The positions of the jobs started in `[from, to)`.
    fn started_in(&self, from: u64, to: u64) -> std::ops::Range<usize> {
        self.starts.partition_point(|&s| s < from)..self.starts.partition_point(|&s| s < to)
    }

    /// Σ of the CPU time within `[from, to)` of the jobs other than `own`
    /// (a position, if the job is in the level), and how many such jobs
    /// ran there.
    pub(super) fn busy_within(&self, from: u64, to: u64, own: Option<usize>) -> (u128, u64) {
        let range = self.started_in(from, to);
        // Each job started inside overlaps it iff it has a span; those
        // ending after `to` ran only part of it.
        let mut busy = sum(&self.inside_prefix, range.clone());
        let mut count = self.spans_prefix[range.end] - self.spans_prefix[range.start];
        for p in self.finishes.above(range.clone(), to) {
            let e = &self.entries[p];
            busy = busy - u128::from(e.on_cpu()) + u128::from(e.within(from, to));
        }
        if let Some(p) = own.filter(|p| range.contains(p)) {
            let e = &self.entries[p];
            busy -= u128::from(e.within(from, to));
            count -= u64::from(e.finish > e.start);
        }
        // Jobs started before `from` and still running then.
        for p in self
            .running_at(from)
            .into_iter()
            .filter(|&p| Some(p) != own)
        {
            let e = &self.entries[p];
            busy += u128::from(e.within(from, to));
            count += u64::from(e.finish.min(to) > from);
        }
        (busy, count)
    }

    /// Σ of the CPU time within `[from, to)` of the jobs of tasks above the
    /// floor released in `[released_from, to)` (and not before `from`).
    /// For a job at the floor finishing at `to` and bounded by
    /// `released_from − release`, these are the jobs that met it only
    /// because it was still running past its bound.
    pub(super) fn above_released_within(&self, released_from: u64, from: u64, to: u64) -> u128 {
        let above = &self.above_floor;
        let first = released_from.max(from);
        if first >= to {
            return 0;
        }
        let range = above.releases.partition_point(|&r| r < first)
            ..above.releases.partition_point(|&r| r < to);
        // Released at or after `from`, each started there: whole, unless
        // it ran past `to` (at most the few pending when the job ended).
        let mut total = sum(&above.inside_prefix, range.clone());
        for i in above.finishes.above(range, to) {
            let e = &self.entries[above.positions[i]];
            total = total - u128::from(e.on_cpu()) + u128::from(e.within(from, to));
        }
        total
    }

    /// The position of the job of `task` numbered `job`, if in the level.
    pub(super) fn position(&self, task: usize, job: u64, start: u64) -> Option<usize> {
        let first = self.starts.partition_point(|&s| s < start);
        (first..self.entries.len())
            .take_while(|&p| self.entries[p].start == start)
            .find(|&p| self.entries[p].task == task && self.entries[p].job == job)
    }

    /// The excess above C of the jobs in `[from, to)` that can delay a job
    /// of `task` (at the floor): those of tasks above the floor and the
    /// other jobs of `task` (not `own`, a position): the total and the
    /// position of the largest (ties: the earliest).
    pub(super) fn excess_within(
        &self,
        task: usize,
        own: Option<usize>,
        from: u64,
        to: u64,
    ) -> (u128, Option<(u64, usize)>) {
        let range = self.started_in(from, to);
        let mut total = sum(&self.higher_prefix, range.clone());
        let mut largest = self.higher.max(range.clone()).filter(|&(v, _)| v > 0);
        let mut consider = |value: u64, position: usize| {
            if value > 0 && largest.is_none_or(|(l, at)| value > l || (value == l && position < at))
            {
                largest = Some((value, position));
            }
        };
        if let Some(jobs) = self.at_floor.get(&task) {
            let lo = jobs.starts.partition_point(|&s| s < from);
            let hi = jobs.starts.partition_point(|&s| s < to);
            // Positions rise with starts: found by bisection, not a scan
            // of a busy period that may hold every job of the run.
            let skip = own.and_then(|p| jobs.positions[lo..hi].binary_search(&p).ok());
            let parts = match skip {
                Some(i) => [lo..lo + i, lo + i + 1..hi],
                None => [lo..hi, hi..hi],
            };
            for part in parts {
                total += sum(&jobs.excess_prefix, part.clone());
                if let Some((value, i)) = jobs.excess.max(part) {
                    consider(value, jobs.positions[i]);
                }
            }
        }
        // Jobs started before `from` and still running then.
        for p in self.running_at(from) {
            let e = &self.entries[p];
            let counts = if e.task == task {
                Some(p) != own
            } else {
                e.higher
            };
            if counts {
                total += u128::from(e.excess);
                consider(e.excess, p);
            }
        }
        (total, largest)
    }
}

#[cfg(test)]
mod tests {
    //! The level's answers equal those of a pass over every job (the
    //! attribution before the index) on random runs of a few tasks on two
    //! CPUs, jobs overlapping, preempted, migrated and back to back.

    use super::*;
    use crate::attribution::tests::{job_on, run_of};
    use proptest::prelude::*;

    /// The jobs of priority ≥ `prio` on `cpu`: (task, record).
    fn jobs(result: &RunResult, cpu: u32, prio: u8) -> Vec<(usize, &JobRecord)> {
        result
            .tasks
            .iter()
            .enumerate()
            .filter(|(_, t)| priority(t) >= prio)
            .flat_map(|(i, t)| t.records.iter().map(move |r| (i, r)))
            .filter(|(_, r)| on_one_cpu(r).is_some_and(|(c, _, _)| c == cpu))
            .collect()
    }

    fn naive_window_start(result: &RunResult, r: &JobRecord, prio: u8) -> u64 {
        let intervals: Vec<(u64, u64)> = jobs(result, r.cpu, prio)
            .into_iter()
            .filter(|(_, o)| o.release_ns < r.release_ns)
            .map(|(_, o)| (o.release_ns, o.finish_ns.unwrap()))
            .collect();
        let mut begin = r.release_ns;
        let mut changed = true;
        while changed {
            changed = false;
            for &(start, finish) in &intervals {
                if start < begin && finish.saturating_add(BUSY_GAP_NS) >= begin {
                    begin = start;
                    changed = true;
                }
            }
        }
        begin
    }

    fn naive_busy(result: &RunResult, r: &JobRecord, prio: u8) -> (u128, u64) {
        let finish = r.finish_ns.unwrap();
        let (mut busy, mut count) = (0u128, 0u64);
        for (_, o) in jobs(result, r.cpu, prio) {
            if std::ptr::eq(o, r) {
                continue;
            }
            let end = o.finish_ns.unwrap();
            let overlap = end.min(finish).saturating_sub(o.start_ns.max(r.release_ns));
            if overlap > 0 {
                busy += u128::from(o.exec_ns.min(overlap));
                count += 1;
            }
        }
        (busy, count)
    }

    fn naive_excess(
        result: &RunResult,
        task: usize,
        r: &JobRecord,
        from: u64,
        finish: u64,
    ) -> (u128, u64) {
        let prio = priority(&result.tasks[task]);
        let (mut total, mut largest) = (0u128, 0u64);
        for (i, o) in jobs(result, r.cpu, prio) {
            let t = &result.tasks[i];
            let counts = if i == task {
                o.job != r.job
            } else {
                priority(t) > prio
            };
            let end = o.finish_ns.unwrap();
            let c = t.spec.bound.unwrap().wcet_ns;
            let on_cpu = o.exec_ns.min(end - o.start_ns);
            if counts && o.start_ns < finish && end > from && on_cpu > c {
                total += u128::from(on_cpu - c);
                largest = largest.max(on_cpu - c);
            }
        }
        (total, largest)
    }

    fn naive_above_released(
        result: &RunResult,
        r: &JobRecord,
        prio: u8,
        released_from: u64,
        from: u64,
    ) -> u128 {
        let finish = r.finish_ns.unwrap();
        jobs(result, r.cpu, prio)
            .into_iter()
            .filter(|(i, o)| {
                priority(&result.tasks[*i]) > prio
                    && o.release_ns >= released_from.max(from)
                    && o.release_ns < finish
            })
            .map(|(_, o)| {
                let overlap = o
                    .finish_ns
                    .unwrap()
                    .min(finish)
                    .saturating_sub(o.start_ns.max(from));
                u128::from(o.exec_ns.min(overlap))
            })
            .sum()
    }

    /// (priority, [(release, start offset, length, exec, cpu, cpu_end)]).
    type Drawn = Vec<(u8, Vec<(u64, u64, u64, u64, u32, u32)>)>;

    fn drawn() -> impl Strategy<Value = Drawn> {
        let job = (0u64..400, 0u64..60, 0u64..80, 0u64..90, 0u32..2, 0u32..2);
        prop::collection::vec((1u8..4, prop::collection::vec(job, 0..12)), 1..5)
    }

    /// The property: every answer of the level equals the pass's.
    fn answers_as_a_pass(drawn: &Drawn) -> Result<(), TestCaseError> {
        // Times in 10 µs steps, so that the 100 µs gap matters.
        const STEP: u64 = 10_000;
        let tasks: Vec<(u8, Vec<JobRecord>)> = drawn
            .iter()
            .map(|(prio, js)| {
                let records = js
                    .iter()
                    .enumerate()
                    .map(|(k, &(release, offset, length, exec, cpu, cpu_end))| {
                        let start = (release + offset) * STEP;
                        job_on(
                            k as u64,
                            release * STEP,
                            start,
                            start + length * STEP,
                            exec * STEP,
                            cpu,
                            cpu_end,
                        )
                    })
                    .collect();
                (*prio, records)
            })
            .collect();
        let result = run_of(tasks, 30 * STEP);
        for (index, t) in result.tasks.iter().enumerate() {
            let prio = priority(t);
            for cpu in 0..2 {
                let level = Level::new(&result, cpu, prio);
                for r in t.records.iter().filter(|r| r.cpu == cpu) {
                    let from = level.window_start(r.release_ns);
                    prop_assert_eq!(from, naive_window_start(&result, r, prio));
                    let own = on_one_cpu(r).and_then(|_| level.position(index, r.job, r.start_ns));
                    let finish = r.finish_ns.unwrap();
                    prop_assert_eq!(
                        level.busy_within(r.release_ns, finish, own),
                        naive_busy(&result, r, prio)
                    );
                    let (total, largest) = level.excess_within(index, own, from, finish);
                    let (naive_total, naive_largest) =
                        naive_excess(&result, index, r, from, finish);
                    prop_assert_eq!(total, naive_total);
                    prop_assert_eq!(largest.map_or(0, |(v, _)| v), naive_largest);
                    for bound in [0, 5 * STEP, 40 * STEP] {
                        let after = r.release_ns + bound;
                        prop_assert_eq!(
                            level.above_released_within(after, from, finish),
                            naive_above_released(&result, r, prio, after, from)
                        );
                    }
                }
            }
        }
        Ok(())
    }

    /// A record whose execution exceeds its span (a program's threads on
    /// other CPUs, counted in its CPU time), of no span at the start of
    /// another job's busy window: its excess here is 0, not its execution
    /// above C (a random case that once failed).
    #[test]
    fn a_job_executing_beyond_its_span_delays_only_its_span() {
        let drawn: Drawn = vec![
            (1, vec![(3, 0, 1, 0, 0, 0)]),
            (2, vec![(0, 0, 0, 31, 0, 0)]),
        ];
        answers_as_a_pass(&drawn).unwrap();
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        #[test]
        fn the_level_answers_as_a_pass_over_every_job(drawn in drawn()) {
            answers_as_a_pass(&drawn)?;
        }
    }
}
