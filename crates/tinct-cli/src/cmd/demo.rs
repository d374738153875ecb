//! `tinct demo`: the whole loop on the shipped kim2013 example, scaled to
//! this machine — analyze, plan (CATA, kim2013 Algorithm 3), run for a few
//! seconds, and print predicted against observed response times, as
//! kim2013 Section IV does on its own machine (Table II, Figures 7-10).

use crate::cmd::run::{execute, exit_code, rt_error};
use crate::error::CliError;
use crate::output::{ms, table};
use std::path::PathBuf;
use std::process::ExitCode;
use tinct_core::alloc::{self, Algorithm, SearchOptions};
use tinct_core::model::{Body, Kernel, TaskSet, WcetTable, Work};
use tinct_core::units::{Bytes, Nanos, parse_duration};
use tinct_rt::output::Summary;
use tinct_rt::runtime::RunOptions;
use tinct_rt::spec::RunSpec;

/// kim2013 Table I (unassigned), shipped with tinct.
const KIM2013: &str = include_str!("../../../../examples/kim2013.toml");
/// kim2013 Table II (all tasks on one core), the fallback plan.
const KIM2013_TABLE2: &str = include_str!("../../../../examples/kim2013-table2.toml");

/// Arguments of `tinct demo`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// How long to run.
    #[arg(long, default_value = "3s", value_parser = parse_nanos)]
    pub duration: Nanos,
    /// Time scale applied to periods, deadlines, WCETs and Δ of the paper's
    /// task set (utilization is unchanged; a smaller scale releases more jobs).
    #[arg(long, default_value_t = 0.25, value_parser = parse_scale)]
    pub scale: f64,
    /// Share of C each job's body is calibrated to (C is a worst case, the
    /// calibration a median on this machine).
    #[arg(long, default_value_t = 0.8, value_parser = parse_scale)]
    pub body_share: f64,
    /// Run directory.
    #[arg(long, short = 'o', default_value = "runs/demo")]
    pub out: PathBuf,
    /// Run under SCHED_OTHER (no real-time privileges needed, no guarantees).
    #[arg(long)]
    pub no_rt: bool,
}

fn parse_nanos(text: &str) -> Result<Nanos, String> {
    parse_duration(text).map_err(|e| e.to_string())
}

fn parse_scale(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(f) if f > 0.0 && f <= 1.0 => Ok(f),
        _ => Err(format!("expected a number in (0, 1], found {text:?}")),
    }
}

fn scaled(d: Nanos, scale: f64) -> Nanos {
    Nanos(((d.0 as f64) * scale).round().max(1.0) as u64)
}

/// The paper's task set with times scaled and a job body per task: a
/// `mixed` kernel (half pointer chase, half compute) over a working set of
/// M_i/16 (at most 4 MiB); targets are set after planning.
fn scale_set(mut set: TaskSet, cores: u32, scale: f64) -> TaskSet {
    set.platform.cores = cores;
    set.platform.refill = scaled(set.platform.refill, scale);
    for task in &mut set.tasks {
        task.period = scaled(task.period, scale);
        task.deadline = scaled(task.deadline, scale);
        task.wcet = WcetTable::new(
            task.wcet
                .listed()
                .iter()
                .map(|(&p, &c)| (p, scaled(c, scale)))
                .collect(),
        );
        task.body = Some(Body {
            kernel: Kernel::Mixed,
            working_set: Some(Bytes((task.memory.0 / 16).min(4 << 20))),
            work: None,
            memory_percent: Some(50),
        });
    }
    set
}

/// Sets every body's target to `share` × C at the task's partitions.
fn set_targets(set: &mut TaskSet, share: f64) {
    for task in &mut set.tasks {
        let c = task.effective_wcet().unwrap_or(task.wcet.worst());
        if let Some(body) = &mut task.body {
            body.work = Some(Work::Target(scaled(c, share)));
        }
    }
}

/// Plans with CATA (kim2013 Algorithm 3 and its leftover step); `None` if
/// it cannot place every task.
fn plan(set: &TaskSet) -> Option<TaskSet> {
    let options = alloc::PlanOptions {
        search: SearchOptions::budget(200_000),
        ..alloc::PlanOptions::default()
    };
    let plan = alloc::plan(set, Algorithm::Cata, &options);
    plan.unplaced.is_empty().then_some(plan.planned).flatten()
}

/// Runs the demo. Exit status 0 when the run completed, 1 when it was stopped.
pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let cpus = tinct_sys::sched::affinity().map_err(|e| CliError::Failed(e.into()))?;
    let cores = (cpus.len() as u32).clamp(1, 4);
    let paper = tinct_core::format::parse(
        KIM2013,
        "examples/kim2013.toml",
        tinct_core::format::Syntax::Toml,
    )?;
    let unplanned = scale_set(paper, cores, args.scale);
    println!(
        "tinct demo: kim2013 Table I on this machine ({cores} core(s)), times × {}, bodies calibrated to {:.0} % of C",
        args.scale,
        args.body_share * 100.0
    );
    let (mut planned, how) = match plan(&unplanned) {
        Some(planned) => (planned, "CATA (kim2013 Algorithm 3)".to_string()),
        None => {
            let table2 = tinct_core::format::parse(
                KIM2013_TABLE2,
                "examples/kim2013-table2.toml",
                tinct_core::format::Syntax::Toml,
            )?;
            (
                scale_set(table2, cores, args.scale),
                "kim2013 Table II's assignment (CATA found no plan)".to_string(),
            )
        }
    };
    // A plan uses cores 0..N; this machine's CPUs may be numbered otherwise.
    for task in &mut planned.tasks {
        task.core = task.core.map(|c| cpus[c as usize % cpus.len()]);
    }
    planned.platform.cores = planned
        .tasks
        .iter()
        .filter_map(|t| t.core)
        .max()
        .map_or(1, |c| c + 1);
    set_targets(&mut planned, args.body_share);
    println!("\n1-2. analyze and plan: {how}");
    std::fs::create_dir_all(&args.out)?;
    let plan_path = args.out.join("plan.toml");
    let header = vec![format!(
        "Planned by `tinct demo` ({how}) from kim2013 Table I, times × {}.",
        args.scale
    )];
    std::fs::write(&plan_path, tinct_core::format::to_toml(&planned, &header))?;
    let analysis = tinct_core::analysis::analyze(&planned).ok();
    let spec = RunSpec::from_plan(
        &planned,
        analysis.as_ref(),
        &plan_path.display().to_string(),
        args.duration.0,
    )
    .map_err(rt_error)?;
    println!(
        "   plan written to {} (re-run it with `tinct run {}`)",
        plan_path.display(),
        plan_path.display()
    );
    println!("\n3. run");
    let options = RunOptions {
        realtime: !args.no_rt,
        supervise: true,
        ..RunOptions::default()
    };
    let recorded = execute(&spec, analysis.as_ref(), options, &args.out, false)?;
    print_comparison(&planned, &recorded.summary);
    Ok(exit_code(&recorded))
}

/// Predicted (analysis) against observed (run), per task.
fn print_comparison(planned: &TaskSet, summary: &Summary) {
    println!("\n4. predicted vs observed [{}]", summary.scheduling);
    let mut t = table(&[
        "task",
        "core",
        "S(i)",
        "C (ms)",
        "WCRT NoCInt",
        "WCRT CInt",
        "observed R max",
        "R p99",
        "ρ(R)",
        "misses",
        "verdict",
    ]);
    for (task, verdict) in planned.tasks.iter().zip(&summary.tasks) {
        let bound = verdict.bound;
        let opt = |v: Option<u64>| v.map_or("> D".to_string(), ms);
        let word = if verdict.exceeds_bound {
            "EXCEEDS BOUND"
        } else if verdict.jobs.missed > 0 {
            "MISSED"
        } else if verdict.response.count == 0 {
            "no job finished"
        } else {
            "within bound"
        };
        t.add_row(vec![
            task.name.clone(),
            task.core.map_or("-".into(), |c| c.to_string()),
            task.partitions.map_or("-".into(), |s| s.to_string()),
            bound.map_or("-".into(), |b| ms(b.wcet_ns)),
            opt(bound.and_then(|b| b.wcrt_nocint_ns)),
            opt(bound.and_then(|b| b.wcrt_ns)),
            ms(verdict.response.max),
            ms(verdict.response.p99),
            format!("{:.2}", verdict.response.rho / 1e6),
            verdict.jobs.missed.to_string(),
            word.into(),
        ]);
    }
    println!("{t}");
    println!(
        "note: each working set was allocated from its partitions' colors and every page checked; but in a VM\n\
         guest-physical colors need not be host cache colors (see `tinct doctor --probe-colors`), so here the\n\
         observation checks the runtime and the timing model, not cache isolation."
    );
}
