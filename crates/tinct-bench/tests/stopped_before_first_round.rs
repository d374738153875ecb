//! A bench stopped (Ctrl-C) before its first whole round still writes its
//! header: parameters, platform, `interrupted: true`, `rounds_completed:
//! 0`, no measurements; the JSON reads back into the bench's result type
//! and the summary says the run stopped before its first round finished;
//! `tinct report` makes its page.

use serde::de::DeserializeOwned;
use serde_json::Value;
use std::path::Path;
use tinct_bench::harness::{BenchOptions, Finished, StopAfter};

/// Quick options writing into `dir`.
fn options(dir: &Path) -> BenchOptions {
    BenchOptions {
        quick: true,
        out: Some(dir.to_path_buf()),
        color_bits: Some(tinct_sys::testing::MECHANISM_COLOR_BITS_TEXT.into()),
        ..BenchOptions::default()
    }
}

/// Asked to stop before any step is done.
fn at_once() -> StopAfter {
    StopAfter::new(0)
}

/// Checks what a bench stopped at once wrote into `dir` as `<name>.json`
/// and returned, and returns the JSON.
fn header_only<R: DeserializeOwned>(
    name: &str,
    dir: &Path,
    finished: tinct_bench::Result<Finished<R>>,
) -> Value {
    let finished = finished.unwrap_or_else(|e| panic!("{name}: stopped at once failed: {e}"));
    let path = dir.join(format!("{name}.json"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{} not written: {e}", path.display()));
    let json: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(json["bench"], name, "{json}");
    assert_eq!(json["interrupted"], true, "{json}");
    assert_eq!(json["rounds_completed"], 0, "{json}");
    assert!(json["machine"].is_object(), "the platform: {json}");
    let _: R = serde_json::from_value(json.clone())
        .unwrap_or_else(|e| panic!("{name}.json reads back: {e}\n{json}"));
    // The report page shows a header-only directory as any bench's.
    let page = tinct_report::bench_page::bench_page(dir)
        .unwrap_or_else(|e| panic!("{name}: the report page refuses it: {e}"));
    assert!(
        page.to_html().contains(&format!("tinct bench {name}")),
        "{name}: the page names the bench"
    );
    let said = &finished.summary.interrupted_note();
    assert!(
        said.contains("stopped before the first round finished"),
        "{name}: {said}"
    );
    json
}

fn privileged(what: &str) -> bool {
    tinct_sys::testing::privileged_or_skip(what)
}

/// Each measurement named is absent, null or an empty list.
fn nothing_measured(json: &Value, fields: &[&str]) {
    for field in fields {
        assert!(
            json.get(field)
                .is_none_or(|v| v.is_null() || v.as_array().is_some_and(Vec::is_empty)),
            "{field} measured after a stop at once: {json}"
        );
    }
}

/// A test that `tinct bench <name>` (module `$module`, result `$result`),
/// quick and stopped at once, writes its header and none of `fields`.
macro_rules! stopped_at_once {
    ($test:ident, $module:ident, $result:ty, $name:literal, [$($field:literal),+]) => {
        #[test]
        fn $test() {
            if !privileged($name) {
                return;
            }
            let dir = tempfile::tempdir().unwrap();
            let params = tinct_bench::$module::Params {
                common: options(dir.path()),
                ..Default::default()
            };
            let json = header_only::<$result>(
                $name,
                dir.path(),
                tinct_bench::$module::run(&params, &at_once()),
            );
            nothing_measured(&json, &[$($field),+]);
        }
    };
}

stopped_at_once!(
    crpd_stopped_at_once_writes_its_header,
    crpd,
    tinct_bench::crpd::CrpdResult,
    "crpd",
    ["switch", "levels"]
);
stopped_at_once!(
    calibrate_stopped_at_once_writes_its_header,
    calibrate,
    tinct_bench::calibrate::CalibrateResult,
    "calibrate",
    ["latency", "levels", "bandwidth", "refill", "overheads"]
);
stopped_at_once!(
    coherence_stopped_at_once_writes_its_header,
    coherence,
    tinct_bench::coherence::Report,
    "coherence",
    ["sizes", "false_sharing"]
);
stopped_at_once!(
    banks_stopped_at_once_writes_its_header,
    banks,
    tinct_bench::banks::Report,
    "banks",
    ["kernels", "composite"]
);
stopped_at_once!(
    isolation_stopped_at_once_writes_its_header,
    isolation,
    tinct_bench::isolation::Report,
    "isolation",
    ["conditions", "inflation_reserved", "inflation_unreserved"]
);
stopped_at_once!(
    pipeline_stopped_at_once_writes_its_header,
    pipeline,
    tinct_bench::pipeline::Report,
    "pipeline",
    ["policies"]
);

#[test]
fn wcet_profile_stopped_at_once_writes_its_header() {
    if !privileged("wcet-profile") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let params = tinct_bench::wcet_profile::Params {
        common: options(dir.path()),
        uncolored: true,
        ..Default::default()
    };
    // Never started: the stop comes before the first launch.
    let worker = tinct_bench::wcet_profile::WorkerCommand {
        program: "/nonexistent/tinct".into(),
        prefix: Vec::new(),
        co_runner_prefix: Vec::new(),
    };
    let json = header_only::<tinct_bench::wcet_profile::WcetProfileResult>(
        "wcet-profile",
        dir.path(),
        tinct_bench::wcet_profile::run(&params, &worker, &at_once()),
    );
    nothing_measured(&json, &["points", "refill", "wcet_line", "taskset"]);
}

#[test]
fn overheads_stopped_at_once_measure_nothing_and_store_nothing() {
    if !privileged("overheads (SCHED_FIFO)") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let calibration = dir.path().join("calibration.json");
    let before = r#"{"refill": {"partitions": 16, "refill_ns": 90600}}"#;
    std::fs::write(&calibration, before).unwrap();
    let params = tinct_bench::overheads::Params {
        common: options(&dir.path().join("out")),
        seconds: Some(1),
        calibration: Some(calibration.clone()),
    };
    let finished = tinct_bench::overheads::run(&params, &at_once()).unwrap();
    let overheads = &finished.result.measured.overheads;
    for name in ["context_switch", "release_latency", "tick"] {
        assert!(
            overheads.unmeasured.contains_key(name),
            "{name} not measured after the stop: {overheads:?}"
        );
    }
    assert!(
        overheads.unmeasured["tick"].contains("interrupted"),
        "{:?}",
        overheads.unmeasured
    );
    assert!(finished.result.measured.release_latency.is_none());
    assert!(finished.result.measured.busy_loop.is_none());
    assert!(finished.result.header.interrupted);
    assert_eq!(finished.result.stored_in, None);
    assert_eq!(
        std::fs::read_to_string(&calibration).unwrap(),
        before,
        "an interrupted run is never stored"
    );
    assert!(
        finished
            .summary
            .notes
            .iter()
            .any(|n| n.contains("NOT stored")),
        "{:?}",
        finished.summary.notes
    );
    let json = header_only::<tinct_bench::overheads::OverheadsResult>(
        "overheads",
        &dir.path().join("out"),
        Ok(finished),
    );
    assert!(json["context_switch"].is_null(), "{json}");
}
