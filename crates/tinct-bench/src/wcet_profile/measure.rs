//! Measuring `tinct bench wcet-profile`: every (p, condition) launched
//! `reps` times in a seeded interleaved order, co-runners started around the
//! launches that need them; then each (p, condition)'s jobs summarized, fitted
//! (EVT) and reduced to the chosen statistic.

use super::co_runners::{CoRunnerJob, CoRunnerReport, CoRunners};
use super::launch::{self, Launch};
use super::plan::Plan;
use super::statistic::Statistic;
use super::worker::WorkerReport;
use super::{CoRunnerTotals, ConditionPoint, Placement, ProfilePoint, WorkerCommand};
use crate::harness::{Durations, Interleaved, Progress};
use crate::{Error, Result};
use std::path::Path;
use tinct_report::stats::evt::{self, EvtOptions};
use tinct_report::stats::nearest_rank_ppm;

/// The launches of one (p, condition), in the order they ran.
#[derive(Debug, Default)]
pub(super) struct CellLaunches {
    pub workers: Vec<WorkerReport>,
    pub co_runners: Vec<CoRunnerReport>,
    /// Bytes each co-runner swept and whether it was coloured (co-run only).
    pub co_runner_memory: Option<(u64, bool)>,
}

/// Every launch, by p index then condition index.
#[derive(Debug)]
pub(super) struct Launches {
    pub cells: Vec<Vec<CellLaunches>>,
}

impl Launches {
    /// True when no launch was kept (stopped before the first round).
    pub fn is_empty(&self) -> bool {
        self.reports().next().is_none()
    }

    /// Every worker report.
    pub fn reports(&self) -> impl Iterator<Item = &WorkerReport> {
        self.cells.iter().flatten().flat_map(|c| c.workers.iter())
    }
}

/// Runs every launch, `reps` per (p, condition), interleaved.
pub(super) fn launch_all(
    plan: &Plan,
    worker: &WorkerCommand,
    reps: u32,
    seed: u64,
    progress: &dyn Progress,
) -> Result<Launches> {
    let conditions = plan.conditions.len();
    let names = plan.ps.iter().flat_map(|p| {
        plan.conditions
            .iter()
            .map(move |c| format!("p={p} {}", c.name()))
    });
    let runner = Interleaved::new(names, reps).seed(seed);
    progress.start(runner.calls(), "wcet-profile");
    let mut cells: Vec<Vec<CellLaunches>> = (0..plan.ps.len())
        .map(|_| (0..conditions).map(|_| CellLaunches::default()).collect())
        .collect();
    let samples = runner.run_cut_by_stop::<Error>(progress, |index| {
        let (pi, ci) = (index / conditions, index % conditions);
        let condition = plan.conditions[ci];
        progress.set_message(&format!("p = {} {}", plan.ps[pi], condition.name()));
        let cell = &mut cells[pi][ci];
        let co_runners = match &plan.co_runners {
            Some(setup) if condition.co_runners() => {
                let (job, shim) = co_runner_job(plan, setup, pi);
                cell.co_runner_memory = Some((job.bytes_per_cpu, shim.is_some()));
                match CoRunners::start(worker, &job, shim) {
                    Ok(co_runners) => Some(co_runners),
                    // Ended by the Ctrl-C as they started: the cut launch.
                    Err(_) if progress.stop_requested() => return Ok(None),
                    Err(e) => return Err(e),
                }
            }
            _ => None,
        };
        let launch = Launch {
            worker,
            body: &plan.body,
            jobs: plan.jobs,
            seed,
            cpu: plan.cpu,
            fifo: plan.fifo,
            colors: &plan.color_sets[pi],
            total_colors: plan.colors,
            preload: plan.preload.as_deref(),
            cold: condition.cold(),
        };
        let report = launch.run_with_retry();
        // Stop the co-runners whatever the worker did.
        let co_report = co_runners.map(CoRunners::stop).transpose();
        // A terminal's Ctrl-C reaches the worker and the co-runners too
        // (one process group): a launch it ended is the launch the stop
        // cut, its round dropped, not a failed bench.
        let cut = progress.stop_requested();
        let report = match report {
            Ok(Some(report)) => report,
            Ok(None) if cut => return Ok(None),
            Ok(None) => {
                return Err(Error::Measurement(format!(
                    "the worker for p = {} was ended by SIGINT or SIGTERM, not by the bench's stop",
                    plan.ps[pi]
                )));
            }
            Err(e) => return Err(e),
        };
        match co_report {
            Ok(co) => cell.co_runners.extend(co),
            Err(_) if cut => return Ok(None),
            Err(e) => return Err(e),
        }
        let max = report.job_ns.iter().copied().max().unwrap_or(0);
        cell.workers.push(report);
        Ok(Some(max))
    })?;
    progress.finish();
    if samples.interrupted {
        // Ctrl-C: the launches of the whole rounds, a half round dropped
        // (none at all when the stop came before the first round ended).
        let rounds = samples.rounds_completed as usize;
        for cell in cells.iter_mut().flatten() {
            cell.workers.truncate(rounds);
            cell.co_runners.truncate(rounds);
        }
    }
    Ok(Launches { cells })
}

/// The co-runner job at p index `pi`, and the shim with its configuration
/// when the co-runners are coloured: the colours of the partitions the task does not
/// use, each aggressor sweeping twice their share of the cache; uncoloured
/// (twice the whole cache) when colouring is not used or no partition is
/// left (p = N_P).
fn co_runner_job<'a>(
    plan: &'a Plan,
    setup: &super::CoRunnerSetup,
    pi: usize,
) -> (CoRunnerJob, Option<(&'a Path, tinct_mem::ShimConfig)>) {
    let others = &plan.other_color_sets[pi];
    if let (true, false, Some(shim)) = (setup.colored, others.is_empty(), plan.preload.as_deref()) {
        let share = setup.llc_bytes * others.len() as u64 / u64::from(plan.colors.max(1));
        let bytes = (share * 2).max(1 << 20);
        let total = bytes * setup.cpus.len() as u64;
        let job = CoRunnerJob {
            cpus: setup.cpus.clone(),
            bytes_per_cpu: bytes,
            expect_colors: Some(tinct_sys::format_cpu_list(others)),
        };
        (
            job,
            Some((shim, launch::shim_config(others, plan.colors, total, 1))),
        )
    } else {
        let job = CoRunnerJob {
            cpus: setup.cpus.clone(),
            bytes_per_cpu: setup.uncolored_bytes_per_cpu,
            expect_colors: None,
        };
        (job, None)
    }
}

/// C^p at each p from its launches: per condition the jobs' order
/// statistics, the EVT fit and the statistic; per p the worst condition.
pub(super) fn profile_points(
    plan: &Plan,
    launches: &Launches,
    evt_options: &EvtOptions,
    statistic: &Statistic,
) -> Result<Vec<ProfilePoint>> {
    plan.ps
        .iter()
        .zip(&plan.color_sets)
        .zip(&launches.cells)
        .map(|((&p, colors), cells)| {
            let conditions = plan
                .conditions
                .iter()
                .zip(cells)
                .map(|(&condition, cell)| {
                    condition_point(p, condition, cell, evt_options, statistic)
                })
                .collect::<Result<Vec<_>>>()?;
            let worst = conditions
                .iter()
                .map(|c| c.statistic_ns.map(|ns| (ns, c.condition)))
                .collect::<Option<Vec<_>>>()
                .and_then(|all| all.into_iter().max_by_key(|(ns, _)| *ns));
            Ok(ProfilePoint {
                p,
                colors: colors.clone(),
                statistic_ns: worst.map(|w| w.0),
                worst_condition: worst.map(|w| w.1),
                table_ns: None,
                conditions,
            })
        })
        .collect()
}

fn condition_point(
    p: u32,
    condition: super::condition::Condition,
    cell: &CellLaunches,
    evt_options: &EvtOptions,
    statistic: &Statistic,
) -> Result<ConditionPoint> {
    let job_ns: Vec<u64> = cell
        .workers
        .iter()
        .flat_map(|r| r.job_ns.iter().copied())
        .collect();
    let jobs = Durations::of(&job_ns)
        .ok_or_else(|| Error::Measurement(format!("no jobs ran at p = {p} ({condition})")))?;
    let mut sorted = job_ns.clone();
    sorted.sort_unstable();
    let evt = evt::fit(&job_ns, evt_options)
        .map_err(|e| Error::InvalidInput(format!("EVT options: {e}")))?;
    let (statistic_ns, statistic_missing) = match statistic.of(&sorted, &evt) {
        Ok(ns) => (Some(ns), None),
        Err(why) => (None, Some(why)),
    };
    let co_runners = cell
        .co_runner_memory
        .map(|(bytes_per_cpu, colored)| CoRunnerTotals {
            colored,
            bytes_per_cpu,
            sweeps: cell.co_runners.iter().flat_map(|c| &c.sweeps).sum(),
            pages_checked: cell.co_runners.iter().map(|c| c.pages_checked).sum(),
            pages_in_colors: cell.co_runners.iter().map(|c| c.pages_in_colors).sum(),
        });
    Ok(ConditionPoint {
        condition,
        p999_ns: nearest_rank_ppm(&sorted, 999_000).unwrap_or(jobs.max),
        jobs,
        evt,
        statistic_ns,
        statistic_missing,
        llc_misses_max: cell
            .workers
            .iter()
            .filter_map(|r| r.llc_misses.as_ref())
            .flatten()
            .copied()
            .max(),
        pages_checked: cell.workers.iter().map(|r| r.pages_checked).sum(),
        pages_in_colors: cell.workers.iter().map(|r| r.pages_in_colors).sum(),
        co_runners,
        job_ns,
    })
}

/// Where the working sets lay, and what that means for the table.
pub(super) fn placement(plan: &Plan, points: &[ProfilePoint], launches: &Launches) -> Placement {
    let conditions = || points.iter().flat_map(|p| &p.conditions);
    let checked: u64 = conditions().map(|c| c.pages_checked).sum();
    let in_colors: u64 = conditions().map(|c| c.pages_in_colors).sum();
    let unchecked = launches.reports().find_map(|r| r.unchecked_reason.clone());
    let preload = &plan.preload;
    Placement {
        colored: preload.is_some(),
        preload: preload.as_ref().map(|p| p.display().to_string()),
        colors: plan.colors,
        pages_in_colors_ratio: (checked > 0).then(|| in_colors as f64 / checked as f64),
        note: match (preload, checked, unchecked) {
            (None, _, _) => "--uncolored: the working set came from the ordinary heap; partitions were NOT enforced, \
                             every p saw the whole cache, so the table is NOT a safe C^p for p < N_P"
                .into(),
            (Some(_), 0, reason) => format!(
                "served by the shim, but the placement could not be checked: {}",
                reason.unwrap_or_else(|| "unknown reason".into())
            ),
            (Some(_), _, _) => format!(
                "served by the shim from the colors of partitions 1..=p; {in_colors} of {checked} working-set pages \
                 checked in those colors"
            ),
        },
    }
}
