//! The charts of a run, drawn from its directory ([`RunFiles`]) with
//! tinct-report's chart module: kim2013 Fig. 8 and Fig. 10, which the run
//! directory keeps as SVG files, and the distributions the HTML report
//! shows beside them.
//!
//! - [`response_times`]: kim2013 Fig. 8 — the observed response time of
//!   every job of a task (x: job number) with the WCRT without (NoCInt,
//!   classic RTA) and with (CInt, Eq. 2) cache interference as lines.
//! - [`utilization`]: kim2013 Fig. 10 — per core, the predicted
//!   utilization Σ C_i/T_i (NoCInt) and Eq. (1) Σ (C_i + ω_{i,n} +
//!   γ_{i,n})/T_i (CInt) beside the observed worst case Σ max(e_i)/T_i and
//!   average Σ mean(e_i)/T_i, e_i the measured execution times, with the
//!   Liu-Layland bound as a line.
//! - [`response_cdf`] and [`exec_histogram`]: the distributions.

use super::read::RunFiles;
use super::summary::TaskVerdict;
use tinct_base::units::{ms_f64, ms_with_unit};
use tinct_core::analysis::CoreReport;
use tinct_report::stats::{Histogram, empirical_cdf};
use tinct_report::{BarChart, BarSeries, LineChart, Series, SeriesStyle};
use tinct_rt::record::Outcome;

/// kim2013 Fig. 8 for `task`: per-job response times against both bounds.
pub fn response_times(files: &RunFiles, task: &TaskVerdict) -> LineChart {
    let wcrt = task.bound.and_then(|b| b.wcrt_ns).unwrap_or(u64::MAX);
    // (job, response, a miss or above the WCRT: drawn even when thinned)
    let finished: Vec<(u64, u64, bool)> = files
        .jobs_of(&task.name)
        .filter_map(|r| {
            let response = r.response_ns?;
            Some((
                r.job,
                response,
                r.outcome == Outcome::Missed || response > wcrt,
            ))
        })
        .collect();
    let (first, last) = (
        finished.first().map_or(0, |p| p.0),
        finished.last().map_or(1, |p| p.0),
    );
    let level = |name: &str, ns: u64| {
        Series::new(
            name,
            SeriesStyle::Dashed,
            vec![(first as f64, ms_f64(ns)), (last as f64, ms_f64(ns))],
        )
    };
    let observed = Series::new(
        "observed",
        SeriesStyle::Markers,
        finished
            .iter()
            .map(|&(j, r, _)| (j as f64, ms_f64(r)))
            .collect(),
    )
    .with_labels(
        finished
            .iter()
            .map(|&(j, r, _)| format!("{} job {j}: {}", task.name, ms_with_unit(r)))
            .collect(),
    )
    .with_kept(
        finished.iter().map(|&(_, _, late)| late).collect(),
        "every miss and every job above the WCRT",
    );
    let mut chart = LineChart::new(
        format!("{}: response time per job (kim2013 Fig. 8)", task.name),
        "job",
        "response time (ms)",
    )
    .add_series(observed);
    // As in the paper, the y axis spans the observations and the bounds
    // (not from 0), so the distance between them shows.
    chart.y_from_zero = false;
    let bound = task.bound;
    if let Some(ns) = bound.and_then(|b| b.wcrt_nocint_ns) {
        chart = chart.add_series(level("WCRT NoCInt", ns));
    }
    if let Some(ns) = bound.and_then(|b| b.wcrt_ns) {
        chart = chart.add_series(level("WCRT CInt (Eq. 2)", ns));
    }
    chart
}

/// kim2013 Fig. 10: predicted and observed utilization per core; `None`
/// when the run did not come from an analysed plan (no periods, no Eq. 1).
pub fn utilization(files: &RunFiles) -> Option<BarChart> {
    let analysis = files.analysis.as_ref()?;
    let observed = |core: u32, pick: &dyn Fn(&TaskVerdict) -> f64| -> f64 {
        analysis
            .tasks
            .iter()
            .filter(|t| t.core == core && t.period_ns > 0)
            .filter_map(|t| {
                let run = files.summary.tasks.iter().find(|r| r.name == t.name)?;
                Some(pick(run) / t.period_ns as f64)
            })
            .sum()
    };
    let cores = &analysis.cores;
    let values =
        |f: &dyn Fn(&CoreReport) -> f64| cores.iter().map(|c| Some(f(c))).collect::<Vec<_>>();
    Some(
        BarChart::new(
            "Utilization per core, predicted and observed (kim2013 Fig. 10)",
            "core",
            "utilization",
            cores.iter().map(|c| format!("core {}", c.core)).collect(),
        )
        .with_series(BarSeries::new(
            "predicted NoCInt",
            values(&|c| c.utilization_nocint),
        ))
        .with_series(BarSeries::new(
            "predicted CInt (Eq. 1)",
            values(&|c| c.utilization),
        ))
        .with_series(BarSeries::new(
            "observed worst case",
            values(&|c| observed(c.core, &|t| t.exec.max as f64)),
        ))
        .with_series(BarSeries::new(
            "observed average",
            values(&|c| observed(c.core, &|t| t.exec.mean)),
        ))
        .with_limits(
            "Liu-Layland bound",
            cores.iter().map(|c| Some(c.utilization_bound)).collect(),
        ),
    )
}

/// The empirical CDF of the response times of `tasks` (one step line each).
pub fn response_cdf(files: &RunFiles, tasks: &[&TaskVerdict]) -> LineChart {
    let mut chart = LineChart::new(
        "Response times, cumulative distribution",
        "response time (ms)",
        "fraction of finished jobs",
    )
    .with_y_range(0.0, 1.0);
    for task in tasks {
        let samples: Vec<u64> = files
            .jobs_of(&task.name)
            .filter_map(|r| r.response_ns)
            .collect();
        let mut points: Vec<(f64, f64)> = vec![];
        for (value, fraction) in empirical_cdf(&samples) {
            if points.is_empty() {
                points.push((ms_f64(value), 0.0));
            }
            points.push((ms_f64(value), fraction));
        }
        chart = chart.add_series(Series::new(task.name.clone(), SeriesStyle::Steps, points));
    }
    chart
}

/// The histogram of `task`'s execution times (finished jobs), with its C
/// from the analysis as a marker when known.
pub fn exec_histogram(files: &RunFiles, task: &TaskVerdict) -> LineChart {
    let samples: Vec<u64> = files
        .jobs_of(&task.name)
        .filter(|r| r.response_ns.is_some())
        .map(|r| r.exec_ns)
        .collect();
    let points: Vec<(f64, f64)> = Histogram::of(&samples, 30)
        .map(|h| {
            let mut p: Vec<(f64, f64)> = vec![(ms_f64(h.low), 0.0)];
            p.extend(
                h.step_points()
                    .into_iter()
                    .map(|(x, c)| (ms_f64(x), c as f64)),
            );
            if let Some(&(x, _)) = p.last() {
                p.push((x, 0.0));
            }
            p
        })
        .unwrap_or_default();
    let mut chart = LineChart::new(
        format!("{}: execution time", task.name),
        "execution time (ms)",
        "jobs",
    )
    .add_series(Series::new("jobs per bin", SeriesStyle::Steps, points));
    if let Some(b) = task.bound {
        chart.x_markers = vec![(
            ms_f64(b.wcet_ns),
            format!("C = {}", ms_with_unit(b.wcet_ns)),
        )];
        if let Some((low, high)) = chart_x_range(&chart) {
            chart = chart.with_x_range(
                low.min(ms_f64(b.wcet_ns)),
                high.max(ms_f64(b.wcet_ns)) * 1.02,
            );
        }
    }
    chart
}

/// The x range of a chart's data, if it has any point.
fn chart_x_range(chart: &LineChart) -> Option<(f64, f64)> {
    let xs = chart
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0));
    let (low, high) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), x| {
        (l.min(x), h.max(x))
    });
    (low.is_finite() && high.is_finite()).then_some((low, high))
}

/// A file name for `task`'s figure: letters, digits, `-`, `_` and `.`
/// kept, anything else `_`.
pub fn file_stem(task: &str) -> String {
    task.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The SVG files a run directory keeps: `fig8-response-<task>.svg` for
/// every task with a bound, and `fig10-utilization.svg` for a run of an
/// analysed plan. Names are unique (a `-<k>` suffix on a collision).
pub fn run_dir_figures(files: &RunFiles) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for task in files.summary.tasks.iter().filter(|t| t.bound.is_some()) {
        let mut name = format!("fig8-response-{}.svg", file_stem(&task.name));
        let mut k = 1;
        while out.iter().any(|(n, _)| *n == name) {
            k += 1;
            name = format!("fig8-response-{}-{k}.svg", file_stem(&task.name));
        }
        out.push((name, response_times(files, task).to_svg()));
    }
    if let Some(chart) = utilization(files) {
        out.push(("fig10-utilization.svg".into(), chart.to_svg()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::fixture::{analysis, written as files};

    #[test]
    fn fig8_has_every_finished_job_and_both_bounds() {
        let (_dir, files) = files(false);
        let chart = response_times(&files, &files.summary.tasks[0]);
        let names: Vec<&str> = chart.series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["observed", "WCRT NoCInt", "WCRT CInt (Eq. 2)"]);
        let jobs: Vec<f64> = chart.series[0].points.iter().map(|p| p.0).collect();
        assert_eq!(
            jobs,
            [0.0, 1.0, 2.0],
            "the aborted job has no response time"
        );
        assert_eq!(chart.series[1].points[0].1, 20e-6);
        assert_eq!(chart.series[2].points[0].1, 30e-6);
        assert!(utilization(&files).is_none(), "no analysis, no Eq. (1)");
    }

    #[test]
    fn fig10_sets_observed_beside_predicted_utilization_per_core() {
        let (dir, files) = files(true);
        let chart = utilization(&files).unwrap();
        assert_eq!(chart.categories, ["core 0", "core 1"]);
        let a = analysis();
        let series = |k: usize| chart.series[k].values.clone();
        assert_eq!(series(0)[1], Some(a.cores[1].utilization_nocint));
        assert_eq!(series(1)[1], Some(a.cores[1].utilization));
        // Observed on core 1: max exec 149 ns (job 2) over T = 100 ns; mean of 10, 24, 149.
        assert_eq!(series(2)[1], Some(149.0 / 100.0));
        let mean = (10.0 + 24.0 + 149.0) / 3.0 / 100.0;
        assert!((series(3)[1].unwrap() - mean).abs() < 1e-12);
        assert_eq!(series(2)[0], Some(0.0), "no task on core 0");
        let on_disk = std::fs::read_to_string(dir.path().join("fig10-utilization.svg")).unwrap();
        assert_eq!(
            on_disk,
            chart.to_svg(),
            "the run directory holds the same figure"
        );
    }

    #[test]
    fn cdf_ends_at_one_and_histogram_counts_every_finished_job() {
        let (_dir, files) = files(false);
        let task = &files.summary.tasks[0];
        let cdf = response_cdf(&files, &[task]);
        assert_eq!(cdf.series[0].points.last().map(|p| p.1), Some(1.0));
        let h = exec_histogram(&files, task);
        let total: f64 = h.series[0]
            .points
            .windows(2)
            .filter(|w| w[0].0 != w[1].0)
            .map(|w| w[0].1)
            .sum();
        assert_eq!(total, 3.0);
        assert_eq!(file_stem("a b/c.d"), "a_b_c.d");
    }
}
