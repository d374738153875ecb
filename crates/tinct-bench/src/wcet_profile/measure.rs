//! Measuring `tinct bench wcet-profile`: every (p, condition) launched
//! `reps` times in a seeded interleaved order, co-runners started around the
//! launches that need them; then each (p, condition)'s jobs summarized, fitted
//! (EVT) and reduced to the chosen statistic; then Δ, unless given.

use super::co_runners::{CoRunnerJob, CoRunnerReport, CoRunners};
use super::launch::{self, Launch};
use super::plan::Plan;
use super::statistic::Statistic;
use super::worker::WorkerReport;
use super::{CoRunnerTotals, ConditionPoint, ProfilePoint, WorkerCommand};
use crate::calibrate::{self, RefillSetup};
use crate::harness::{Durations, Interleaved, Progress, RunHeader};
use crate::{Error, Result};
use std::path::Path;
use tinct_core::units::Nanos;
use tinct_report::stats::evt::{self, EvtOptions};
use tinct_report::stats::nearest_rank_ppm;

/// What [`measure`] found.
pub struct Measured {
    /// Every launch kept.
    pub launches: Launches,
    /// C^p at each p, before the table is made non-increasing (none when
    /// stopped before the first round ended).
    pub points: Vec<ProfilePoint>,
    /// Δ for the written task set and where it came from (`None` when
    /// stopped before it was measured).
    pub refill: Option<(Nanos, String)>,
}

/// Runs every launch, reduces each (p, condition)'s jobs and, unless the
/// plan has it or the run was stopped, measures Δ.
pub(super) fn measure(
    plan: &Plan,
    worker: &WorkerCommand,
    progress: &dyn Progress,
) -> Result<Measured> {
    let launches = launch_all(plan, worker, progress)?;
    if launches.is_empty() {
        return Ok(Measured {
            launches,
            points: Vec::new(),
            refill: None,
        });
    }
    let points = profile_points(plan, &launches, &plan.evt, &plan.statistic)?;
    // After Ctrl-C Δ is not measured (seconds): the partial profile then
    // has its wcet line but no task-set file.
    let refill = match &plan.refill {
        Some(given) => Some(given.clone()),
        None if progress.stop_requested() => None,
        None => Some(measure_refill(
            &plan.header,
            plan.partitions,
            plan.header.seed,
        )?),
    };
    Ok(Measured {
        launches,
        points,
        refill,
    })
}

/// The launches of one (p, condition), in the order they ran.
#[derive(Debug, Default)]
pub struct CellLaunches {
    pub workers: Vec<WorkerReport>,
    pub co_runners: Vec<CoRunnerReport>,
    /// Bytes each co-runner swept and whether it was coloured (co-run only).
    pub co_runner_memory: Option<(u64, bool)>,
}

/// Every launch, by p index then condition index.
#[derive(Debug)]
pub struct Launches {
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
fn launch_all(plan: &Plan, worker: &WorkerCommand, progress: &dyn Progress) -> Result<Launches> {
    let (reps, seed) = (plan.header.reps, plan.header.seed);
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
            color_bits: &plan.color_bits,
            preload: plan.preload.as_deref(),
            cold: condition.cold(),
            llc_bytes: plan.header.machine.llc().map_or(8 << 20, |c| c.size_bytes),
            stop: progress.stop_flag(),
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
            // A program body's launch that failed as the stop came: the
            // launch the stop cut.
            Err(_) if cut => return Ok(None),
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
            Some((
                shim,
                launch::shim_config(others, &plan.color_bits, plan.colors, total, 1),
            )),
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
fn profile_points(
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
    let evt = evt::fit(&job_ns, evt_options).map_err(|e| {
        Error::option(
            "--block-size, --exceedance",
            "EVT options a fit accepts",
            e.to_string(),
        )
    })?;
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

/// Δ for the written task set, measured here as `tinct bench calibrate`
/// does.
fn measure_refill(header: &RunHeader, partitions: u32, seed: u64) -> Result<(Nanos, String)> {
    let geometry = calibrate::Geometry::of(header);
    let wipe = vec![1u64; ((geometry.llc * 2).max(16 << 20) / 8) as usize];
    let refill = calibrate::measure_refill(
        &RefillSetup {
            llc_bytes: geometry.llc,
            partitions,
            page_bytes: geometry.page,
            reps: if header.quick { 5 } else { 21 },
            seed,
        },
        &wipe,
        &crate::harness::NoProgress,
    )?;
    Ok((
        Nanos(refill.delta.refill_ns.div_ceil(100) * 100),
        "measured here as `tinct bench calibrate` does".into(),
    ))
}
