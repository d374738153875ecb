//! Pipelines from the command line (issue 13): `tinct bench pipeline
//! --quick` runs and its outputs validate (the JSON reads back into the
//! bench's report and writes out unchanged, the same samples under every
//! policy, ordered distributions, the files there and well formed); `tinct
//! run --placement` runs examples/pipeline.toml and its jobs.csv accounts
//! for every sample. Never an absolute time.

mod common;

use common::{Exits, bad_input, example, no_cpu_pmu, read_json, run_completes, stdout, tinct};
use std::path::Path;
use tinct_bench::harness::as_written;
use tinct_bench::pipeline::{Report, with_figures};
use tinct_sys::testing::privileged_serial;
use tinct_verify::output::jobs_csv::JobRow;

/// The rows of the jobs.csv in the run directory `dir`.
fn job_rows(dir: &Path) -> Vec<JobRow> {
    let mut reader = csv::Reader::from_path(dir.join("jobs.csv")).unwrap();
    reader.deserialize().map(Result::unwrap).collect()
}

#[test]
fn bench_pipeline_quick_outputs_validate() {
    let Some(_serial) = privileged_serial("SCHED_FIFO pipeline bench") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let stdout = stdout(
        &tinct()
            .args([
                "bench",
                "pipeline",
                "--quick",
                "--samples",
                "300",
                "--background",
                "1",
                "--no-progress",
                "--out",
            ])
            .arg(dir.path())
            .exits(0),
    );
    assert!(
        stdout.contains("Table I") && stdout.contains("affinity"),
        "{stdout}"
    );
    let json = read_json(&dir.path().join("pipeline.json"));
    let report: Report = serde_json::from_value(json.clone()).expect("reads back");
    assert_eq!(
        serde_json::to_value(as_written(&report)).unwrap(),
        json,
        "written again unchanged"
    );
    assert_eq!(report.background, 1);
    let names: Vec<&str> = report.policies.iter().map(|p| p.policy.as_str()).collect();
    assert_eq!(names, ["os", "affinity", "static"]);
    for (p, figures) in with_figures(&report.policies) {
        assert_eq!(p.samples, 300, "{}: the same samples per policy", p.policy);
        assert_eq!(
            p.production.count,
            300 - u64::from(report.header.reps),
            "{}",
            p.policy
        );
        assert!(
            p.production.is_ordered(),
            "{}: {:?}",
            p.policy,
            p.production
        );
        assert!(figures.production_rate_hz > 0.0 && p.overall_ns > 0);
        assert_eq!(p.tasks.len(), 7, "4 waves and 3 mixers");
        for t in &p.tasks {
            assert_eq!(t.exec.count, 300, "{} {}", p.policy, t.name);
            assert!(!t.map.is_empty());
        }
        // Fig. 4: a load and a store miss rate, or the kernel's reason
        // (this VM has no PMU: unavailable, never a zero).
        for rate in [&p.load_miss_rate, &p.store_miss_rate] {
            assert!(
                rate.rate.is_some() != rate.unavailable.is_some(),
                "a miss rate or the reason there is none: {rate:?}"
            );
            if no_cpu_pmu() {
                let why = rate.unavailable.as_deref().unwrap_or("");
                assert!(
                    why.starts_with("unavailable: LLC-") && why.contains("ENOENT"),
                    "{}: {why}",
                    p.policy
                );
            }
        }
        assert_eq!(p.store_miss_rate.accesses_event, "LLC-stores");
        assert!(figures.rho_gain_over_os.is_some(), "{}", p.policy);
    }
    // Table I's gains are written, derived from the distributions.
    let os = &json["policies"][0];
    assert!((os["rho_gain_over_os"].as_f64().unwrap() - 1.0).abs() < 1e-12);
    let affinity = &report.policies[1];
    assert!(
        affinity.moves.is_some(),
        "the affinity policy moved its mixers"
    );
    let pinned = &report.policies[2];
    assert!(pinned.moves.is_none());
    assert!(
        pinned.tasks.iter().all(|t| t.migrations == 0),
        "static: no task migrates: {:?}",
        pinned.tasks
    );
    for name in [
        "table1.csv",
        "tasks.csv",
        "counters.csv",
        "migrations.txt",
        "exec.svg",
        "migrations.svg",
        "map-os.svg",
        "map-affinity.svg",
        "map-static.svg",
        "ecdf.svg",
    ] {
        let text = std::fs::read_to_string(dir.path().join(name)).unwrap();
        if name.ends_with(".svg") {
            assert!(text.starts_with("<svg") && !text.contains("NaN"), "{name}");
        } else {
            assert!(text.lines().count() >= 2, "{name}: {text}");
        }
    }
    let table = std::fs::read_to_string(dir.path().join("table1.csv")).unwrap();
    assert_eq!(table.lines().count(), 4, "a header and a row per policy");
    let header: Vec<&str> = table.lines().next().unwrap().split(',').collect();
    let store = header
        .iter()
        .position(|&c| c == "llc_store_miss_rate")
        .expect("a store miss rate column");
    if no_cpu_pmu() {
        for row in table.lines().skip(1) {
            let cell = row.split(',').nth(store).unwrap();
            assert!(cell.starts_with("unavailable: LLC-stores: ENOENT"), "{row}");
        }
        assert!(stdout.contains("LLC store miss") && stdout.contains("unavailable: LLC-stores"));
    }
}

#[test]
fn bench_pipeline_refuses_levels_that_do_not_end_in_one_mixer() {
    let stderr = bad_input([
        "bench",
        "pipeline",
        "--waves",
        "8",
        "--levels",
        "2",
        "--no-progress",
    ]);
    assert!(stderr.contains("--levels"), "{stderr}");
}

#[test]
fn run_placement_affinity_accounts_for_every_sample_in_jobs_csv() {
    let Some(_serial) = privileged_serial("SCHED_FIFO pipeline run") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let pipeline = example("pipeline.toml");
    run_completes(
        &[
            "run",
            pipeline.to_str().unwrap(),
            "--placement",
            "affinity",
            "--duration",
            "300ms",
        ],
        dir.path(),
    );
    let rows = job_rows(dir.path());
    let of = |task: &'static str| rows.iter().filter(move |r| r.task == task);
    for (producer, consumer) in [("wave1", "mixer1"), ("mixer1", "final")] {
        let produced = of(producer).filter(|r| r.sample.is_some()).count() as u64;
        let lost: u64 = of(producer).map(|r| u64::from(r.lost)).sum();
        let taken = of(consumer).filter(|r| r.producer_cpu.is_some()).count() as u64;
        assert!(produced >= 20, "{producer}: {produced}");
        let pending = produced - lost - taken;
        assert!(
            pending <= 1,
            "{producer}→{consumer}: {produced} = {lost} + {taken} + {pending}"
        );
    }
    assert!(
        of("final").any(|r| r.move_ns.is_some()),
        "affinity moved the final mixer"
    );
}

#[test]
fn the_same_pipeline_runs_from_an_rt_app_file() {
    let Some(_serial) = privileged_serial("an rt-app pipeline under SCHED_FIFO") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = example("rt-app/pipeline.json");
    run_completes(
        &[
            "run",
            "--rt-app",
            file.to_str().unwrap(),
            "--duration",
            "500ms",
        ],
        dir.path(),
    );
    let rows = job_rows(dir.path());
    let finished = |task: &str| -> Vec<u64> {
        rows.iter()
            .filter(|r| r.task == task)
            .filter_map(|r| r.finish_ns)
            .collect()
    };
    let waves = finished("wave1");
    let mixer = finished("mixer1");
    let last = finished("final");
    assert!(waves.len() >= 20, "{} wave jobs", waves.len());
    // A barrier hand-over: a consumer's k-th job ends after its producers'
    // k-th hand-over, so it never runs ahead of them, and lags by at most
    // the one packet in flight.
    for (name, jobs) in [("mixer1", &mixer), ("final", &last)] {
        assert!(
            jobs.len() <= waves.len() && waves.len() <= jobs.len() + 1,
            "{name}: {} jobs for {} wave jobs",
            jobs.len(),
            waves.len()
        );
    }
    for (k, (m, w)) in mixer.iter().zip(&finished("wave2")).enumerate() {
        assert!(
            m > w || k + 1 == mixer.len(),
            "mixer1 job {k} ended at {m} before wave2's at {w}"
        );
    }
    assert!(
        last.windows(2).all(|w| w[1] > w[0]),
        "production times increase"
    );
}
