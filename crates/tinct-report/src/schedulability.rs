//! The files of `tinct experiment random` (and of merged shards): the same
//! bytes whether the counts come from one run or from merged shards.
//!
//! - `params.json`: everything that determines the results;
//! - `results.csv`: per utilization point, sets, counts and ratios per
//!   algorithm, and how many sets hit the search budget;
//! - `schedulability.svg`: the ratios as a [`LineChart`];
//! - `shard-I-of-N.json`: what one shard computed, for merging.

use crate::{LineChart, ReportError};
use std::path::{Path, PathBuf};
use tinct_core::experiment::random::{Params, Point, Shard, ShardFile, ratio};

fn write(path: &Path, text: &str) -> Result<(), ReportError> {
    std::fs::write(path, text).map_err(|source| ReportError::Write {
        path: path.display().to_string(),
        source,
    })
}

fn create(dir: &Path) -> Result<(), ReportError> {
    std::fs::create_dir_all(dir).map_err(|source| ReportError::Write {
        path: dir.display().to_string(),
        source,
    })
}

/// Pretty JSON with a final newline (these types always serialize).
fn json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default() + "\n"
}

/// `results.csv`: one row per utilization point.
pub fn results_csv(params: &Params, points: &[Point]) -> String {
    let mut csv = csv::Writer::from_writer(Vec::new());
    let mut header = vec![
        "utilization".to_string(),
        "sets".to_string(),
        "not_generated".to_string(),
    ];
    header.extend(params.algorithms.iter().cloned());
    header.extend(params.algorithms.iter().map(|a| format!("{a}_ratio")));
    header.push("budget_hit".to_string());
    // Writing records into a Vec cannot fail.
    let _ = csv.write_record(&header);
    for p in points {
        let mut record = vec![
            format!("{}", p.utilization),
            p.sets.to_string(),
            p.not_generated.to_string(),
        ];
        let counts: Vec<u64> = params
            .algorithms
            .iter()
            .map(|a| p.schedulable.get(a).copied().unwrap_or(0))
            .collect();
        record.extend(counts.iter().map(|c| c.to_string()));
        record.extend(counts.iter().map(|&c| format!("{:.4}", ratio(c, p.sets))));
        record.push(p.budget_hit.to_string());
        let _ = csv.write_record(&record);
    }
    let bytes = csv.into_inner().unwrap_or_default();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The schedulability ratio of every algorithm against utilization.
pub fn schedulability_chart(params: &Params, points: &[Point]) -> LineChart {
    let g = &params.generator;
    let mut chart = LineChart::new(
        format!(
            "Schedulable task sets: n = {}, N_C = {}, N_P = {}, {} sets/point, seed {}",
            g.tasks, g.cores, g.partitions, params.sets_per_point, params.seed
        ),
        "total utilization Σ C(p_min)/T",
        "fraction schedulable",
    )
    .with_y_range(0.0, 1.0);
    for a in &params.algorithms {
        let series = points
            .iter()
            .map(|p| {
                (
                    p.utilization,
                    ratio(p.schedulable.get(a).copied().unwrap_or(0), p.sets),
                )
            })
            .collect();
        chart = chart.with_series(a.to_uppercase(), series);
    }
    chart
}

/// Writes `params.json`, `results.csv` and `schedulability.svg` into `out`
/// (created).
pub fn write_results(out: &Path, params: &Params, points: &[Point]) -> Result<(), ReportError> {
    create(out)?;
    write(&out.join("params.json"), &json(params))?;
    write(&out.join("results.csv"), &results_csv(params, points))?;
    schedulability_chart(params, points).write(&out.join("schedulability.svg"))
}

/// Writes `shard-I-of-N.json` into `out` (created) and returns its path.
pub fn write_shard(out: &Path, file: &ShardFile) -> Result<PathBuf, ReportError> {
    create(out)?;
    let path = out.join(format!("shard-{}-of-{}.json", file.shard, file.shards));
    write(&path, &json(file))?;
    Ok(path)
}

/// Writes what one run of the study computed into `out`: with `shard`
/// (`--shard I/N`), that shard's file for merging ([`write_shard`]), else
/// the results ([`write_results`]). Says what was written, in one line.
pub fn write_study(
    out: &Path,
    params: &Params,
    shard: Option<Shard>,
    points: &[Point],
) -> Result<String, ReportError> {
    match shard {
        Some(Shard { index, count }) => {
            let file = ShardFile {
                params: params.clone(),
                shard: index,
                shards: count,
                points: points.to_vec(),
            };
            let path = write_shard(out, &file)?;
            Ok(format!(
                "shard {index}/{count} written to {} (join the shards with `tinct experiment merge`)",
                path.display()
            ))
        }
        None => {
            write_results(out, params, points)?;
            Ok(format!(
                "results written to {} (results.csv, schedulability.svg, params.json)",
                out.display()
            ))
        }
    }
}
